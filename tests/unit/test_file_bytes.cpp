// SPDX-License-Identifier: Apache-2.0
// The SDK's file reader for frontends (nnergy/reading/file_bytes.hpp): mapped and read files
// hold the same bytes, each followed by a readable NUL, and failures name the file.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nnergy/reading/file_bytes.hpp>
#include <string>
#include <thread>

#include "scoped_test_state.hpp"

using nnergy::reading::file_bytes;
using nnergy::test::temp_dir;

namespace {

std::string write_file(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
}

std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 26);
    return s;
}

}  // namespace

TEST_CASE("file_bytes maps a regular file and ends it with a readable NUL", "[file_bytes]") {
    temp_dir dir;
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    // A size that ends on a page boundary has no spare byte in the file's last page.
    for (const std::size_t size : {std::size_t{1}, page - 1, page, 3 * page, 3 * page + 17}) {
        const std::string bytes = pattern(size);
        const std::string path = write_file(dir.path / "model.json", bytes);
        const file_bytes file(path);
        CHECK(file.mapped());
        REQUIRE(file.view().size() == size);
        CHECK(file.view() == bytes);
        CHECK(file.view().data()[size] == '\0');
    }
}

TEST_CASE("file_bytes reads an empty file and a pipe", "[file_bytes]") {
    temp_dir dir;
    const file_bytes empty(write_file(dir.path / "empty.json", ""));
    CHECK(empty.view().empty());
    CHECK(empty.view().data()[0] == '\0');

    // A pipe has no size to map: it is read to its end, in more than one chunk.
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const std::string bytes = pattern(200000);
    std::thread writer([&] {
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::write(fds[1], bytes.data() + done, bytes.size() - done);
            if (n <= 0) break;
            done += static_cast<std::size_t>(n);
        }
        ::close(fds[1]);
    });
    const file_bytes piped(fds[0], "<pipe>");
    writer.join();
    ::close(fds[0]);
    CHECK_FALSE(piped.mapped());
    CHECK(piped.view() == bytes);
    CHECK(piped.view().data()[bytes.size()] == '\0');
}

TEST_CASE("file_bytes moves its mapping", "[file_bytes]") {
    temp_dir dir;
    const std::string bytes = pattern(10000);
    file_bytes a(write_file(dir.path / "a.json", bytes));
    file_bytes b(std::move(a));
    CHECK(b.view() == bytes);
    file_bytes c(write_file(dir.path / "c.json", "{}"));
    c = std::move(b);
    CHECK(c.view() == bytes);
}

TEST_CASE("file_bytes names the file it cannot read", "[file_bytes]") {
    temp_dir dir;
    const std::string missing = (dir.path / "missing.json").string();
    try {
        file_bytes f(missing);
        FAIL("a missing file was read");
    } catch (const nnergy::sdk::error& e) {
        CHECK(e.code() == NNERGY_CODE_NOT_FOUND);
        CHECK(std::string(e.what()) == missing + ": no such file");
    }
    try {
        file_bytes f(dir.path.string(), "a JSON graph file");
        FAIL("a directory was read");
    } catch (const nnergy::sdk::error& e) {
        CHECK(e.code() == NNERGY_CODE_INVALID_ARGUMENT);
        CHECK(std::string(e.what()) ==
              dir.path.string() + ": is a directory, not a JSON graph file");
    }
}
