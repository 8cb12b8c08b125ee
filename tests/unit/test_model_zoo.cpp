// SPDX-License-Identifier: Apache-2.0
// The bundled models: every index entry has its graph and its source, lookups by name and by
// zoo:NAME, files winning over names, and misspelt names answered with the closest ones.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/model_zoo.hpp>
#include <string>
#include <vector>

namespace {

const std::filesystem::path source_dir(NNERGY_TEST_SOURCE_DIR);
const std::filesystem::path zoo_dir = source_dir / "configs" / "models" / "zoo";
const nnergy::source_location where{"model", 0};

std::string error_of(const std::string& ref) {
    try {
        nnergy::resolve_model(ref, {}, where);
    } catch (const nnergy::error& e) {
        CHECK(e.code() == nnergy::exit_code::invalid_input);
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("the zoo lists every indexed graph and the example graphs, by name", "[zoo]") {
    const std::vector<nnergy::zoo_model> zoo = nnergy::model_zoo();
    std::vector<std::string> names;
    for (const auto& m : zoo) names.push_back(m.name);
    CHECK(std::is_sorted(names.begin(), names.end()));
    CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
    for (const char* n : {"resnet50", "bert_base", "gpt2", "vit_b_16", "cnn_block"})
        CHECK(std::find(names.begin(), names.end(), n) != names.end());

    size_t indexed = 0;
    for (const auto& m : zoo) {
        INFO(m.name);
        CHECK(std::filesystem::is_regular_file(m.file));
        if (m.file.parent_path().filename() != "zoo") continue;
        ++indexed;
        // Converted graphs name their ONNX source, which is in the repository.
        CHECK(!m.description.empty());
        CHECK(std::filesystem::is_regular_file(source_dir / m.source));
    }
    CHECK(indexed >= 15);
}

TEST_CASE("the zoo's graphs carry shapes only: a few MB in all", "[zoo]") {
    uintmax_t total = 0;
    for (const auto& e : std::filesystem::directory_iterator(zoo_dir))
        if (e.path().extension() == ".json") total += e.file_size();
    INFO(total << " bytes");
    CHECK(total > 0);
    CHECK(total < 8'000'000);
}

TEST_CASE("a model reference is a file, a zoo:NAME or a bare name", "[zoo]") {
    const auto resnet = nnergy::resolve_model("resnet50", {}, where);
    CHECK(resnet.filename() == "resnet50.json");
    CHECK(resnet.parent_path().filename() == "zoo");
    CHECK(nnergy::resolve_model("zoo:resnet50", {}, where) == resnet);
    CHECK(nnergy::resolve_model("cnn_block", {}, where).filename() == "cnn_block.json");

    // An existing file wins over a bundled name; relative paths resolve against base_dir.
    const auto example = source_dir / "configs" / "models" / "cnn_block.json";
    CHECK(nnergy::resolve_model(example.string(), {}, where) == example);
    CHECK(nnergy::resolve_model("configs/models/cnn_block.json", source_dir, where) == example);

    // Something that looks like a path is left to the frontend, which says it is missing.
    CHECK(nnergy::resolve_model("nope.onnx", {}, where) == "nope.onnx");
    CHECK(nnergy::resolve_model("models/nope", {}, where) == "models/nope");
}

TEST_CASE("an unknown model name suggests the closest bundled ones", "[zoo]") {
    CHECK_THAT(error_of("resnt50"),
               Catch::Contains("model: 'resnt50' is neither a model file nor a bundled model") &&
                   Catch::Contains("did you mean resnet50") &&
                   Catch::Contains("nnergy models lists them"));
    CHECK_THAT(error_of("zoo:bert-base"),
               Catch::Contains("'zoo:bert-base' is not a bundled model") &&
                   Catch::Contains("did you mean bert_base"));
    CHECK_THAT(error_of("zoo:nothing_like_it"), !Catch::Contains("did you mean"));
}
