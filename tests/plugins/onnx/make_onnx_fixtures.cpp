// SPDX-License-Identifier: Apache-2.0
// make_onnx_fixtures DIR: writes the test models of onnx_fixture_models.hpp into DIR (the
// build tree), one DIR/<name>.onnx each, for the integration tests.
#include <cstdio>
#include <filesystem>
#include <string>

#include "onnx_fixture_models.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_onnx_fixtures DIR\n");
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    int failures = 0;
    for (const auto& [name, model] : nnergy::onnx_fixtures::all_fixtures()) {
        const std::string path = (dir / (name + ".onnx")).string();
        if (!model.write(path)) {
            std::fprintf(stderr, "cannot write %s\n", path.c_str());
            ++failures;
        }
    }
    return failures == 0 ? 0 : 1;
}
