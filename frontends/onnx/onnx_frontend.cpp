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
    using frontend::frontend;

    void load(std::string_view path, nnergy::sdk::graph_builder& out) override {
        const std::string file(path);
        if (const nnergy_named_value* v = ctx().config().find("input_shapes[0]"))
            throw nnergy::sdk::error(nnergy::sdk::config_view::where(*v) + ": " + file +
                                         ": input shapes are for TorchScript models; ONNX files "
                                         "declare their inputs' shapes (bind their symbols "
                                         "with --dim NAME=N)",
                                     NNERGY_CODE_INVALID_ARGUMENT);
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
