// SPDX-License-Identifier: Apache-2.0
// Test scaffolding shared by unit tests: an environment variable set for a scope, a fresh
// temporary directory removed with the object, and a file's bytes.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace nnergy::test {

/// Sets an environment variable for the scope, then restores it.
struct scoped_env {
    std::string name;
    std::optional<std::string> old;
    scoped_env(std::string n, const std::string& value) : name(std::move(n)) {
        if (const char* v = std::getenv(name.c_str())) old = v;
        ::setenv(name.c_str(), value.c_str(), 1);
    }
    ~scoped_env() {
        if (old)
            ::setenv(name.c_str(), old->c_str(), 1);
        else
            ::unsetenv(name.c_str());
    }
};

/// A fresh temporary directory, removed with the object (made writable first, for tests that
/// take permissions away).
struct temp_dir {
    std::filesystem::path path;
    temp_dir() {
        static int counter = 0;
        path = std::filesystem::temp_directory_path() /
               ("nnergy-unit-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::create_directories(path);
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::permissions(path, std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::add, ec);
        std::filesystem::remove_all(path, ec);
    }
};

/// The bytes of a file; throws (failing the test) when it cannot be opened.
inline std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + p.string());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace nnergy::test
