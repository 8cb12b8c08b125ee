// SPDX-License-Identifier: Apache-2.0
// The JSON-graph frontend plugin: reads a "nnergy.graph/1" file into the host's graph builder.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nnergy/sdk.hpp>
#include <string>
#include <system_error>

#include "json_graph_parser.hpp"

namespace {

namespace jg = nnergy::json_graph;

std::string read_file(const std::string& path) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(st))
        throw nnergy::sdk::error(path + ": no such file", NNERGY_CODE_NOT_FOUND);
    if (std::filesystem::is_directory(st))
        throw nnergy::sdk::error(path + ": is a directory, not a JSON graph file",
                                 NNERGY_CODE_INVALID_ARGUMENT);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw nnergy::sdk::error(path + ": cannot open: " + std::strerror(errno),
                                 NNERGY_CODE_IO_ERROR);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw nnergy::sdk::error(path + ": read error", NNERGY_CODE_IO_ERROR);
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
            const jg::graph_spec spec = jg::parse_graph(text, file);
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
