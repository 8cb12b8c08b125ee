// SPDX-License-Identifier: Apache-2.0
// The ONNX frontend plugin: reads an .onnx ModelProto into the host's graph builder.
#include <filesystem>
#include <nnergy/sdk.hpp>
#include <string>

#include "onnx_reader.hpp"

namespace {

namespace ox = nnergy::onnx_frontend;

class onnx_frontend final : public nnergy::sdk::frontend {
public:
    // Options it does not read would be ignored silently (input shapes among them: the file
    // declares its own).
    explicit onnx_frontend(const nnergy::sdk::context& ctx) : frontend(ctx) {
        ctx.config().expect_only({}, "nnergy.frontend.onnx");
    }

    void load(std::string_view path, nnergy::sdk::graph_builder& out) override {
        const std::string file(path);
        try {
            const ox::model_data model = ox::read_model_file(file);
            const std::string stem = std::filesystem::path(file).stem().string();
            ox::build_graph(model, file, stem, out,
                            [this, &file](const std::string& m) { ctx().info(file + ": " + m); });
        } catch (const ox::read_error& e) {
            throw nnergy::sdk::error(e.what(), e.code());
        }
    }
};

}  // namespace

NNERGY_PLUGIN_DEFINE("nnergy_frontend_onnx", "0.1.0", "nnergy", "Apache-2.0",
                     "Reads ONNX model files",
                     nnergy::sdk::frontend_component<onnx_frontend>(
                         "nnergy.frontend.onnx",
                         "ONNX models (ModelProto, opsets 7 to 22, docs/onnx.md)", ".onnx"))
