// SPDX-License-Identifier: Apache-2.0
// The JSON-graph frontend plugin: reads a "nnergy.graph/1" file into the host's graph builder.
#include <filesystem>
#include <nnergy/reading/file_bytes.hpp>
#include <nnergy/sdk.hpp>
#include <string>

#include "json_graph_parser.hpp"

namespace {

namespace jg = nnergy::json_graph;

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
            const nnergy::reading::file_bytes text(file, "a JSON graph file");
            // A file without "name" is named after itself, as the host would do.
            const std::string stem = std::filesystem::path(file).stem().string();
            jg::read_graph(text.view(), file, stem, out);
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
