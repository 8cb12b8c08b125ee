// SPDX-License-Identifier: Apache-2.0
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nnergy/framework/host.hpp>
#include <optional>
#include <string>
#include <vector>

#include "../../framework/src/config_cache.hpp"
#include "scoped_test_state.hpp"

namespace fs = std::filesystem;
namespace cache = nnergy::config_cache;

using nnergy::test::scoped_env;
using nnergy::test::temp_dir;

namespace {

nnergy::config_values sample_values() {
    nnergy::config_value a;
    a.name = "memory.dram.bandwidth";
    a.kind = NNERGY_VALUE_FLOAT;
    a.float_value = 3.35e12;
    a.file = "/somewhere/hw.toml";
    a.line = 7;
    a.source = "datasheet";
    a.unit = "TB/s";
    a.written_value = 3.35;
    nnergy::config_value b;
    b.name = "name";
    b.kind = NNERGY_VALUE_STRING;
    b.string_value = std::string("with\0nul", 8);
    b.line = 1;
    nnergy::config_value c;
    c.name = "count";
    c.kind = NNERGY_VALUE_INT;
    c.int_value = -42;
    c.float_value = -42;
    nnergy::config_value d;
    d.name = "flag";
    d.kind = NNERGY_VALUE_BOOL;
    d.bool_value = true;
    return {a, b, c, d};
}

void require_same(const nnergy::config_values& x, const nnergy::config_values& y) {
    REQUIRE(x.size() == y.size());
    for (size_t i = 0; i < x.size(); ++i) {
        CHECK(x[i].name == y[i].name);
        CHECK(x[i].kind == y[i].kind);
        CHECK(x[i].bool_value == y[i].bool_value);
        CHECK(x[i].int_value == y[i].int_value);
        CHECK(x[i].float_value == y[i].float_value);
        CHECK(x[i].string_value == y[i].string_value);
        CHECK(x[i].file == y[i].file);
        CHECK(x[i].line == y[i].line);
        CHECK(x[i].source == y[i].source);
        CHECK(x[i].unit == y[i].unit);
        CHECK(x[i].written_value == y[i].written_value);
    }
}

size_t entries_in(const fs::path& dir) {
    std::error_code ec;
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir, ec)) n += e.is_regular_file();
    return n;
}

}  // namespace

TEST_CASE("a cache entry gives back every field of what was stored", "[config][cache]") {
    temp_dir dir;
    scoped_env env("NNERGY_CONFIG_CACHE", dir.path.string());
    const fs::path file = "/somewhere/hw.toml";
    const std::string bytes = "schema = \"x\"\n";
    CHECK_FALSE(cache::load("nnergy.hardware/1", file, bytes));
    cache::store("nnergy.hardware/1", file, bytes, sample_values());
    CHECK(entries_in(dir.path) == 1);
    auto back = cache::load("nnergy.hardware/1", file, bytes);
    REQUIRE(back);
    require_same(*back, sample_values());
}

TEST_CASE("a cache entry is used only for the same bytes, schema and path", "[config][cache]") {
    temp_dir dir;
    scoped_env env("NNERGY_CONFIG_CACHE", dir.path.string());
    const fs::path file = "/somewhere/hw.toml";
    const std::string bytes = "schema = \"x\"\n";
    cache::store("nnergy.hardware/1", file, bytes, sample_values());
    CHECK_FALSE(cache::load("nnergy.hardware/1", file, "schema = \"y\"\n"));
    CHECK_FALSE(cache::load("nnergy.hardware/1", file, bytes + " "));
    CHECK_FALSE(cache::load("nnergy.runtime/1", file, bytes));
    CHECK_FALSE(cache::load("nnergy.hardware/1", "/elsewhere/hw.toml", bytes));
    CHECK(cache::load("nnergy.hardware/1", file, bytes));
}

TEST_CASE("a damaged cache entry is ignored, never trusted", "[config][cache]") {
    temp_dir dir;
    scoped_env env("NNERGY_CONFIG_CACHE", dir.path.string());
    const fs::path file = "/somewhere/hw.toml";
    const std::string bytes = "schema = \"x\"\n";
    cache::store("", file, bytes, sample_values());
    REQUIRE(entries_in(dir.path) == 1);
    const fs::path entry = fs::directory_iterator(dir.path)->path();
    const auto size = fs::file_size(entry);
    for (auto cut : {size - 1, size / 2, uintmax_t{10}, uintmax_t{0}}) {
        fs::resize_file(entry, cut);
        CHECK_FALSE(cache::load("", file, bytes));
    }
    { std::ofstream(entry, std::ios::binary) << "not an entry at all"; }
    CHECK_FALSE(cache::load("", file, bytes));
}

TEST_CASE("the cache keeps at most max_entries, dropping those written longest ago",
          "[config][cache]") {
    temp_dir dir;
    scoped_env env("NNERGY_CONFIG_CACHE", dir.path.string());
    const std::string bytes = "a = 1\n";
    auto file = [](size_t i) {
        return fs::path("/generated/candidate-" + std::to_string(i) + ".toml");
    };
    auto only_entry_but = [&](const fs::path& known) {
        fs::path found;
        for (const auto& e : fs::directory_iterator(dir.path))
            if (e.path() != known) found = e.path();
        return found;
    };
    cache::store("", file(0), bytes, sample_values());
    const fs::path first = only_entry_but({});
    cache::store("", file(1), bytes, sample_values());
    const fs::path second = only_entry_but(first);
    const size_t below = cache::max_entries - 1;
    for (size_t i = 2; i < below; ++i) cache::store("", file(i), bytes, sample_values());
    REQUIRE(entries_in(dir.path) == below);  // below the bound: nothing goes

    // Entry 0 written longest ago, entry 1 most recently, the others in between.
    const auto now = fs::file_time_type::clock::now();
    for (const auto& e : fs::directory_iterator(dir.path))
        fs::last_write_time(e.path(), now - std::chrono::hours(1));
    fs::last_write_time(first, now - std::chrono::hours(2));
    fs::last_write_time(second, now);

    // One more fits; the one after passes the bound, and three quarters remain.
    cache::store("", file(below), bytes, sample_values());
    CHECK(entries_in(dir.path) == cache::max_entries);
    cache::store("", file(below + 1), bytes, sample_values());
    CHECK(entries_in(dir.path) == cache::max_entries * 3 / 4);
    CHECK(cache::load("", file(below + 1), bytes));  // just written
    CHECK(cache::load("", file(below), bytes));      // written after the others
    CHECK(cache::load("", file(1), bytes));          // the newest of the older ones
    CHECK_FALSE(cache::load("", file(0), bytes));    // the oldest
}

TEST_CASE("NNERGY_CONFIG_CACHE=off keeps no entries", "[config][cache]") {
    scoped_env env("NNERGY_CONFIG_CACHE", "off");
    CHECK(cache::directory().empty());
    cache::store("", "/somewhere/hw.toml", "a = 1\n", sample_values());
    CHECK_FALSE(cache::load("", "/somewhere/hw.toml", "a = 1\n"));
}

TEST_CASE("reading a TOML file goes through the cache and follows the file's bytes",
          "[config][cache]") {
    temp_dir dir, files;
    scoped_env env("NNERGY_CONFIG_CACHE", dir.path.string());
    const fs::path file = files.path / "rules.toml";
    std::ofstream(file) << "answer = 41\n";
    const nnergy::config_values first = nnergy::read_toml_file(file);
    REQUIRE(first.size() == 1);
    CHECK(first[0].int_value == 41);
    CHECK(entries_in(dir.path) == 1);

    // An entry for these very bytes is what a second read returns: it is the cache that answers.
    nnergy::config_values planted = first;
    planted[0].int_value = 7;
    cache::store("", file, "answer = 41\n", planted);
    CHECK(nnergy::read_toml_file(file)[0].int_value == 7);

    // New bytes are parsed again, and replace the entry.
    std::ofstream(file) << "answer = 42\n";
    CHECK(nnergy::read_toml_file(file)[0].int_value == 42);
    CHECK(nnergy::read_toml_file(file)[0].int_value == 42);
    CHECK(entries_in(dir.path) == 1);
}

TEST_CASE("a file that does not parse leaves no entry and still fails", "[config][cache]") {
    temp_dir dir, files;
    scoped_env env("NNERGY_CONFIG_CACHE", dir.path.string());
    const fs::path file = files.path / "bad.toml";
    std::ofstream(file) << "answer = \n";
    CHECK_THROWS(nnergy::read_toml_file(file));
    CHECK_THROWS(nnergy::read_toml_file(file));
    CHECK(entries_in(dir.path) == 0);
}
