// SPDX-License-Identifier: Apache-2.0
// The JSON-graph frontend plugin: reads a "nnergy.graph/1" file into the host's graph builder.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>
#include <nnergy/sdk.hpp>
#include <string>
#include <system_error>
#include <utility>

#include "json_graph_parser.hpp"

namespace {

namespace jg = nnergy::json_graph;

/// Reads up to `n` bytes into `to`, fewer only at the end of the file; returns how many.
std::size_t read_up_to(int fd, char* to, std::size_t n, const std::string& path) {
    std::size_t done = 0;
    while (done < n) {
        const ssize_t got = ::read(fd, to + done, n - done);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            throw nnergy::sdk::error(path + ": read error: " + std::strerror(errno),
                                     NNERGY_CODE_IO_ERROR);
        if (got == 0) break;
        done += static_cast<std::size_t>(got);
    }
    return done;
}

/// The whole file, which the parser reads in place.
std::string read_file(const std::string& path) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(st))
        throw nnergy::sdk::error(path + ": no such file", NNERGY_CODE_NOT_FOUND);
    if (std::filesystem::is_directory(st))
        throw nnergy::sdk::error(path + ": is a directory, not a JSON graph file",
                                 NNERGY_CODE_INVALID_ARGUMENT);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw nnergy::sdk::error(path + ": cannot open: " + std::strerror(errno),
                                 NNERGY_CODE_IO_ERROR);
    struct fd_closer {
        int fd;
        ~fd_closer() { ::close(fd); }
    } closer{fd};
    struct stat info {};
    if (::fstat(fd, &info) != 0)
        throw nnergy::sdk::error(path + ": cannot read: " + std::strerror(errno),
                                 NNERGY_CODE_IO_ERROR);
    // A regular file at the size it has now; then whatever follows (a file that grew, or one
    // whose size is not known in advance: a pipe, a device).
    const std::size_t expected = S_ISREG(info.st_mode) ? static_cast<std::size_t>(info.st_size) : 0;
    std::string text;
    try {
        text.resize(expected);
    } catch (const std::bad_alloc&) {
        throw nnergy::sdk::error(path + ": not enough memory to read it", NNERGY_CODE_IO_ERROR);
    }
    text.resize(read_up_to(fd, text.data(), expected, path));
    char chunk[65536];
    while (const std::size_t got = read_up_to(fd, chunk, sizeof chunk, path)) {
        text.append(chunk, got);
        if (got < sizeof chunk) break;
    }
    return text;
}

class json_graph_frontend final : public nnergy::sdk::frontend {
public:
    // Options it does not read would be ignored silently (input shapes among them: the file
    // declares its own).
    explicit json_graph_frontend(const nnergy::sdk::context& ctx) : frontend(ctx) {
        ctx.config().expect_only({}, "nnergy.frontend.json_graph");
    }

    void load(std::string_view path, nnergy::sdk::graph_builder& out) override {
        const std::string file(path);
        try {
            const std::string text = read_file(file);
            // A file without "name" is named after itself, as the host would do.
            const std::string stem = std::filesystem::path(file).stem().string();
            jg::read_graph(text, file, stem, out);
        } catch (const jg::parse_error& e) {
            throw nnergy::sdk::error(e.what(), e.code());
        }
    }
};

}  // namespace

NNERGY_PLUGIN_DEFINE("nnergy_frontend_json_graph", "0.1.0", "nnergy", "Apache-2.0",
                     "Reads nnergy.graph/1 JSON model files",
                     nnergy::sdk::frontend_component<json_graph_frontend>(
                         "nnergy.frontend.json_graph",
                         "JSON graph files (schema nnergy.graph/1, docs/json-graph.md)", ".json"))
