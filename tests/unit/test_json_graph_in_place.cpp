// SPDX-License-Identifier: Apache-2.0
// The JSON-graph reader reads each tensor and node in place when it can, and as JSON values
// when it cannot (json_graph_parser.hpp). Both ways must read every document alike: the same
// graph, or the same error. These tests read the bundled graphs, the test documents and
// mutations of them both ways and compare.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../../frontends/json_graph/json_graph_parser.hpp"
#include "scoped_test_state.hpp"

namespace {

namespace jg = nnergy::json_graph;

const std::filesystem::path source_dir = NNERGY_TEST_SOURCE_DIR;

using nnergy::test::read_text;

struct outcome {
    bool read = false;
    jg::graph_spec graph;
    std::string error;
};

outcome read_graph(const std::string& text, bool in_place) {
    outcome o;
    try {
        o.graph = jg::parse_graph(text, "doc.json", in_place);
        o.read = true;
    } catch (const std::exception& e) {
        o.error = e.what();
    }
    return o;
}

/// Reads `text` both ways; returns whether the in-place way read it (the check's own coverage).
bool both_ways_agree(const std::string& text) {
    const outcome in_place = read_graph(text, true);
    const outcome values = read_graph(text, false);
    INFO(text);
    REQUIRE(in_place.read == values.read);
    CHECK(in_place.error == values.error);
    CHECK(in_place.graph == values.graph);
    return in_place.read;
}

std::vector<std::filesystem::path> graph_files() {
    std::vector<std::filesystem::path> files;
    for (const auto& dir :
         {source_dir / "configs" / "models", source_dir / "tests" / "data" / "json"})
        for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
            if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

/// Every form the reader knows, in place and not: escapes, numbers with fractions and
/// exponents, typed attributes, values, symbols, expressions, unknown dims, booleans, omitted
/// inputs, metadata and a domain.
const char* const every_form = R"({
  "schema": "nnergy.graph/1",
  "name": "every_form",
  "metadata": {"producer": "test"},
  "inputs": ["x"],
  "outputs": ["y", "s"],
  "tensors": [
    {"name": "x", "dtype": "float32", "shape": ["batch", 3, 8, null]},
    {"name": "w\u0031", "dtype": "float16", "shape": [4, 3, 3, 3], "initializer": true},
    {"name": "shape", "dtype": "int64", "shape": [2], "initializer": true, "constant": true,
     "values": [1, -1]},
    {"name": "h", "dtype": "float32", "shape": ["batch", 4, "seq + 1", 8], "initializer": false},
    {"name": "b", "dtype": "float32", "shape": [4], "initializer": true, "constant": false}
  ],
  "nodes": [
    {"name": "conv", "op": "Conv", "domain": "", "inputs": ["x", "w1", "b"], "outputs": ["h"],
     "attributes": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "group": 1,
                    "dilations": {"ints": [1, 1]}}},
    {"name": "scale", "op": "Mul", "inputs": ["h", "h"], "outputs": ["m"],
     "attributes": {"alpha": 0.5, "beta": 1e-3, "gamma": -2, "mode": "linear",
                    "list": [1, 2.5, -3E2], "f": {"float": 2}}},
    {"name": "r\u00e9shape", "op": "Reshape", "inputs": ["m", "shape"], "outputs": ["y"]},
    {"name": "shape_of", "op": "Shape", "inputs": ["", "y"], "outputs": ["s"],
     "attributes": {}}
  ]
})";

/// Bytes a mutation puts in: JSON's structure, number and literal bytes, escapes, blanks, a
/// control character and a byte that is not UTF-8 on its own.
constexpr std::string_view mutation_bytes = "{}[],:\"\\ \n\t-+.0123456789eEtfnrulsa_x\x01\xc3";

std::string mutated(const std::string& text, std::mt19937& random) {
    std::string out = text;
    const std::size_t at = std::uniform_int_distribution<std::size_t>(0, out.size() - 1)(random);
    const char byte = mutation_bytes[std::uniform_int_distribution<std::size_t>(
        0, mutation_bytes.size() - 1)(random)];
    switch (std::uniform_int_distribution<int>(0, 5)(random)) {
        case 4:
            // Another digit: a document that stays valid more often than not.
            for (std::size_t k = at; k < out.size(); ++k)
                if (out[k] >= '0' && out[k] <= '9') {
                    out[k] = static_cast<char>('0' + (out[k] - '0' + 1 + at % 9) % 10);
                    break;
                }
            break;
        case 5:
            // A blank after a structural byte.
            for (std::size_t k = at; k < out.size(); ++k)
                if (std::string_view("{}[],:").find(out[k]) != std::string_view::npos) {
                    out.insert(k + 1, 1, byte == '\n' ? '\n' : ' ');
                    break;
                }
            break;
        case 0:
            out.erase(at, 1);
            break;
        case 1:
            out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), byte);
            break;
        case 2:
            out[at] = byte;
            break;
        default: {
            // A copy of a few bytes from elsewhere: a repeated key, member or element.
            const std::size_t from =
                std::uniform_int_distribution<std::size_t>(0, out.size() - 1)(random);
            const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 24)(random);
            out.insert(at, out.substr(from, n));
        }
    }
    return out;
}

}  // namespace

TEST_CASE("json graph: the bundled graphs and test documents read the same in place and as values",
          "[json_graph]") {
    std::size_t in_place = 0, files = 0;
    for (const auto& file : graph_files()) {
        INFO(file.string());
        in_place += both_ways_agree(read_text(file));
        ++files;
    }
    CHECK(files > 30);
    // The bundled models are read in place; most test documents hold an error, told the same.
    CHECK(in_place > files / 2);
}

TEST_CASE("json graph: mutated documents read the same in place and as values", "[json_graph]") {
    std::mt19937 random(20261207);
    std::vector<std::string> bases{every_form};
    for (const auto& file : graph_files())
        if (std::filesystem::file_size(file) < 4096) bases.push_back(read_text(file));
    REQUIRE(both_ways_agree(every_form));
    std::size_t read = 0, refused = 0;
    for (const std::string& base : bases)
        for (int k = 0; k < 400; ++k) {
            // One to three mutations: some documents stay valid, most fail somewhere.
            std::string text = base;
            const int n = std::uniform_int_distribution<int>(1, 3)(random);
            for (int m = 0; m < n; ++m) text = mutated(text, random);
            (both_ways_agree(text) ? read : refused) += 1;
        }
    // Both outcomes are exercised, many times over.
    CHECK(read > 800);
    CHECK(refused > 1000);
}
