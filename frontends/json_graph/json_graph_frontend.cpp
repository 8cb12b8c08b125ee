// SPDX-License-Identifier: Apache-2.0
// The JSON-graph frontend plugin: reads a "nnergy.graph/1" file into the host's graph builder.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nnergy/sdk.hpp>
#include <string>
#include <system_error>

#include "json_graph_parser.hpp"

namespace {

namespace jg = nnergy::json_graph;

/// The whole file in one read, into the padded buffer the parser reads in place.
simdjson::padded_string read_file(const std::string& path) {
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
    // A regular file is read at its size; anything else (a pipe, a device) until its end.
    std::size_t capacity = S_ISREG(info.st_mode) ? static_cast<std::size_t>(info.st_size) : 0;
    std::string grown;  // only for files whose size is not known in advance
    simdjson::padded_string text(capacity);
    if (capacity > 0 && text.data() == nullptr)
        throw nnergy::sdk::error(path + ": not enough memory to read it", NNERGY_CODE_IO_ERROR);
    std::size_t size = 0;
    for (;;) {
        char chunk[65536];
        const bool into_text = size < capacity;
        char* to = into_text ? text.data() + size : chunk;
        const std::size_t room = into_text ? capacity - size : sizeof chunk;
        const ssize_t n = ::read(fd, to, room);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw nnergy::sdk::error(path + ": read error: " + std::strerror(errno),
                                     NNERGY_CODE_IO_ERROR);
        }
        if (n == 0) break;
        if (into_text)
            size += static_cast<std::size_t>(n);
        else
            grown.append(chunk, static_cast<std::size_t>(n));
    }
    if (!grown.empty()) {  // it grew while being read, or its size was not known
        std::string all(text.data(), size);
        all += grown;
        return simdjson::padded_string(all);
    }
    if (size == capacity) return text;
    return simdjson::padded_string(text.data(), size);  // it shrank while being read
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
            const simdjson::padded_string text = read_file(file);
            const jg::graph_spec spec = jg::parse_graph_in_place(text, file);
            // A file without "name" is named after itself, as the host would do.
            const std::string stem = std::filesystem::path(file).stem().string();
            jg::build_graph(spec, file, stem, out);
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
