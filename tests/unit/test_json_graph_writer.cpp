// SPDX-License-Identifier: Apache-2.0
// The JSON-graph writer and reader (docs/json-graph.md): exact output for a hand-built graph,
// attribute typing, round trips through the host's real graph builder, and rejection of bad
// documents with the file and line named.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/graph.hpp>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/host_objects.hpp>
#include <nnergy/framework/json_graph_writer.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <nnergy/sdk.hpp>
#include <sstream>
#include <string>
#include <vector>

// The frontend's reader is header-only so that it can be tested here without loading the plugin.
#include "../../frontends/json_graph/json_graph_parser.hpp"
#include "scoped_test_state.hpp"

namespace {

namespace jg = nnergy::json_graph;
using nnergy::dim;

const std::filesystem::path source_dir = NNERGY_TEST_SOURCE_DIR;

using nnergy::test::read_text;

// What the plugin does, minus loading the library: read straight into the host's own builder
// (nnergy_host_api, the functions a plugin calls), then finalize as load_model does.
nnergy::graph load_text(const std::string& text, const std::string& file = "test.json") {
    nnergy::sdk::detail::api_slot() = nnergy::host_api();
    nnergy::graph g;
    g.source_path = file;
    nnergy_graph_builder b;
    b.target = &g;
    b.file = file;
    nnergy::sdk::graph_builder builder(&b);
    jg::read_graph(text, file, std::filesystem::path(file).stem().string(), builder);
    g.finalize();
    return g;
}

// Expects the document to be rejected with a message containing every fragment.
void expect_rejected(const std::string& text, const std::vector<std::string>& fragments) {
    try {
        load_text(text, "bad.json");
    } catch (const jg::parse_error& e) {
        INFO(e.what());
        for (const std::string& f : fragments)
            CHECK(std::string(e.what()).find(f) != std::string::npos);
        return;
    }
    FAIL("document accepted: " << text);
}

// A small graph covering every feature of the schema, built by hand.
nnergy::graph hand_built() {
    nnergy::graph g;
    g.name = "tiny";
    // The ABI names a graph through metadata "name"; a loaded graph always has it first.
    g.metadata = {{"name", "tiny"}, {"producer", "hand"}};
    auto add = [&](std::string name, nnergy_dtype dt, std::optional<std::vector<dim>> shape,
                   bool init = false, std::optional<std::vector<int64_t>> values = {}) {
        nnergy::tensor t;
        t.name = std::move(name);
        t.dtype = dt;
        t.shape = std::move(shape);
        t.is_initializer = init;
        t.int_values = std::move(values);
        return g.add_tensor(std::move(t));
    };
    uint32_t x = add("x", NNERGY_DTYPE_FLOAT32,
                     std::vector<dim>{dim::named("batch"), dim::of(3), dim::of(4), dim::of(4)});
    uint32_t w = add("w", NNERGY_DTYPE_FLOAT32,
                     std::vector<dim>{dim::of(8), dim::of(3), dim::of(3), dim::of(3)}, true);
    uint32_t shape = add("shape", NNERGY_DTYPE_INT64, std::vector<dim>{dim::of(2)}, true,
                         std::vector<int64_t>{0, -1});
    uint32_t y = add("y", NNERGY_DTYPE_UNDEFINED, std::nullopt);
    uint32_t z = add("z", NNERGY_DTYPE_UNDEFINED, std::nullopt);
    uint32_t out = add("out", NNERGY_DTYPE_FLOAT32,
                       std::vector<dim>{dim::named("batch"), dim{}});  // second dim unknown
    g.inputs = {x};
    g.outputs = {out};

    nnergy::node conv;
    conv.name = "conv";
    conv.op_type = "Conv";
    conv.inputs = {x, w, NNERGY_NO_TENSOR};  // bias omitted
    conv.outputs = {y};
    conv.attributes = {{"kernel_shape", std::vector<int64_t>{3, 3}},
                       {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                       {"auto_pad", std::string("NOTSET")}};
    g.add_node(conv);

    nnergy::node reshape;
    reshape.name = "reshape";
    reshape.op_type = "Reshape";
    reshape.inputs = {y, shape};
    reshape.outputs = {z};
    g.add_node(reshape);

    nnergy::node custom;
    custom.name = "scale";
    custom.op_type = "Scale";
    custom.domain = "com.example";
    custom.inputs = {z};
    custom.outputs = {out};
    custom.attributes = {
        {"alpha", 0.5},                                // float
        {"whole", 2.0},                                // float that happens to be whole
        {"count", int64_t{2}},                         // int
        {"big", std::numeric_limits<int64_t>::max()},  // int64 extremes
        {"small", std::numeric_limits<int64_t>::min()},
        {"tiny", 1e-20},                                     // exponent form
        {"limit", std::numeric_limits<double>::infinity()},  // needs the typed form
        {"weights", std::vector<double>{1.0, 2.5}},          // float list of whole numbers
        {"bounds", std::vector<double>{-std::numeric_limits<double>::infinity(), 0.25}},
        {"no_floats", std::vector<double>{}},  // empty lists need the typed form
        {"no_ints", std::vector<int64_t>{}},
        {"label", std::string("a \"quoted\"\nline")}};
    g.add_node(custom);
    return g;
}

// The document hand_built() must produce, written by hand from docs/json-graph.md: fixed key
// order, every tensor declared in index order, one tensor per line, typed forms only where a
// plain JSON value would read back as another type.
const char* const expected_document = R"({
  "schema": "nnergy.graph/1",
  "name": "tiny",
  "metadata": {
    "producer": "hand"
  },
  "inputs": ["x"],
  "outputs": ["out"],
  "tensors": [
    {"name": "x", "dtype": "float32", "shape": ["batch", 3, 4, 4]},
    {"name": "w", "dtype": "float32", "shape": [8, 3, 3, 3], "initializer": true},
    {"name": "shape", "dtype": "int64", "shape": [2], "initializer": true, "values": [0, -1]},
    {"name": "y"},
    {"name": "z"},
    {"name": "out", "dtype": "float32", "shape": ["batch", null]}
  ],
  "nodes": [
    {
      "name": "conv",
      "op": "Conv",
      "inputs": ["x", "w", ""],
      "outputs": ["y"],
      "attributes": {
        "kernel_shape": [3, 3],
        "pads": [1, 1, 1, 1],
        "auto_pad": "NOTSET"
      }
    },
    {
      "name": "reshape",
      "op": "Reshape",
      "inputs": ["y", "shape"],
      "outputs": ["z"]
    },
    {
      "name": "scale",
      "op": "Scale",
      "domain": "com.example",
      "inputs": ["z"],
      "outputs": ["out"],
      "attributes": {
        "alpha": 0.5,
        "whole": 2.0,
        "count": 2,
        "big": 9223372036854775807,
        "small": -9223372036854775808,
        "tiny": 1e-20,
        "limit": {"float": "inf"},
        "weights": [1.0, 2.5],
        "bounds": {"floats": ["-inf", 0.25]},
        "no_floats": {"floats": []},
        "no_ints": {"ints": []},
        "label": "a \"quoted\"\nline"
      }
    }
  ]
}
)";

}  // namespace

TEST_CASE("json graph writer: exact document for a hand-built graph", "[json_graph]") {
    nnergy::graph g = hand_built();
    g.finalize();
    CHECK(nnergy::to_json_graph(g) == expected_document);
    std::ostringstream s;
    nnergy::write_json_graph(g, s);
    CHECK(s.str() == expected_document);
}

TEST_CASE("json graph writer: the document reads back into an equal graph", "[json_graph]") {
    nnergy::graph g = hand_built();
    g.finalize();
    const std::string text = nnergy::to_json_graph(g);
    nnergy::graph back = load_text(text, "tiny.json");
    CHECK(back == g);
    CHECK(back.name == "tiny");
    // Attribute types survive: the whole float stays a float, empty lists keep their type.
    const nnergy::node& scale = back.nodes[2];
    REQUIRE(scale.find_attribute("whole"));
    CHECK(std::holds_alternative<double>(scale.find_attribute("whole")->value));
    CHECK(std::holds_alternative<int64_t>(scale.find_attribute("count")->value));
    CHECK(std::holds_alternative<std::vector<double>>(scale.find_attribute("no_floats")->value));
    CHECK(std::holds_alternative<std::vector<int64_t>>(scale.find_attribute("no_ints")->value));
    CHECK(std::holds_alternative<std::vector<double>>(scale.find_attribute("weights")->value));
    CHECK(std::get<double>(scale.find_attribute("limit")->value) ==
          std::numeric_limits<double>::infinity());
    // Source lines are recorded: "conv" opens on line 18 of expected_document.
    CHECK(back.nodes[0].source_line == 18);
    // And writing again gives the same bytes.
    CHECK(nnergy::to_json_graph(back) == text);
}

TEST_CASE("json graph reader: dimension expressions as exporters write them", "[json_graph]") {
    // What `nnergy convert` writes for an ONNX value_info dim such as GPT-2's `seq + 1` reads
    // back, and binding evaluates it against the bound symbols: no disagreement here.
    const std::string text = R"json({"schema": "nnergy.graph/1", "inputs": ["x"],
"outputs": ["z"],
"tensors": [{"name": "x", "dtype": "float32", "shape": ["batch", "seq"]},
            {"name": "y", "shape": ["batch", "Max(1, seq)"]},
            {"name": "z", "shape": ["batch", "seq + 1 - 1"]}],
"nodes": [{"name": "r", "op": "Relu", "inputs": ["x"], "outputs": ["y"]},
          {"name": "i", "op": "Identity", "inputs": ["y"], "outputs": ["z"]}]})json";
    const nnergy::graph g = load_text(text);
    REQUIRE(g.tensors[1].shape);
    CHECK((*g.tensors[1].shape)[1].symbol == "Max(1, seq)");
    CHECK((*g.tensors[2].shape)[1].symbol == "seq + 1 - 1");
    const nnergy::bound_graph b = nnergy::bind(g, {{"batch", 2}, {"seq", 4}}, {true});
    CHECK(b.disagreements.empty());
}

TEST_CASE("json graph writer: floats round-trip exactly", "[json_graph]") {
    // Values whose shortest decimal form needs all 17 digits, or that sit at the range limits.
    const std::vector<double> values = {0.1,
                                        1.0 / 3.0,
                                        -2.2250738585072014e-308,
                                        std::numeric_limits<double>::denorm_min(),
                                        std::numeric_limits<double>::max(),
                                        -0.0,
                                        123456789.0,
                                        1e300};
    nnergy::graph g = hand_built();
    g.nodes[2].attributes = {{"values", values}, {"one", values[1]}};
    g.finalize();
    nnergy::graph back = load_text(nnergy::to_json_graph(g));
    const auto& got = std::get<std::vector<double>>(back.nodes[2].attributes[0].value);
    REQUIRE(got.size() == values.size());
    for (size_t i = 0; i < values.size(); ++i) {
        CHECK(got[i] == values[i]);
        CHECK(std::signbit(got[i]) == std::signbit(values[i]));
    }
    CHECK(std::get<double>(back.nodes[2].attributes[1].value) == values[1]);
}

TEST_CASE("json graph writer: what the schema cannot carry is an error", "[json_graph]") {
    nnergy::graph g = hand_built();
    g.nodes[2].attributes = {{"names", std::vector<std::string>{"a", "b"}}};
    std::ostringstream s;
    CHECK_THROWS_AS(nnergy::write_json_graph(g, s), nnergy::error);
    CHECK(s.str().empty());  // nothing half-written

    nnergy::graph dangling = hand_built();
    dangling.nodes[0].inputs[0] = 99;
    CHECK_THROWS_WITH(nnergy::to_json_graph(dangling), Catch::Contains("tensor index 99"));

    nnergy::graph bad_utf8 = hand_built();
    bad_utf8.tensors[0].name = "x\xff";
    CHECK_THROWS_WITH(nnergy::to_json_graph(bad_utf8), Catch::Contains("not valid UTF-8"));
}

TEST_CASE("json graph reader: dtype names match the host's", "[json_graph]") {
    // Every tensor type the schema documents (docs/json-graph.md), spelled as the host names it.
    const char* const documented[] = {
        "float32", "float16",     "bfloat16",    "float64", "int8",  "uint8",
        "int16",   "uint16",      "int32",       "uint32",  "int64", "uint64",
        "bool",    "float8_e4m3", "float8_e5m2", "int4",    "uint4", "string"};
    for (const char* name : documented) {
        auto t = jg::dtype_from_schema_name(name);
        REQUIRE(t);
        CHECK(nnergy::dtype_name(*t) == name);
    }
    for (const nnergy::sdk::dtype_info& e : nnergy::sdk::k_dtypes)
        if (e.dtype != NNERGY_DTYPE_TFLOAT32)
            CHECK(jg::dtype_from_schema_name(nnergy::dtype_name(e.dtype)) == e.dtype);
    // tfloat32 is a compute precision, never a tensor type.
    CHECK_FALSE(jg::dtype_from_schema_name("tfloat32"));
}

TEST_CASE("json graph reader: attribute typing", "[json_graph]") {
    auto attrs_of = [](const std::string& attributes) {
        const std::string text = R"({"schema": "nnergy.graph/1", "inputs": ["x"], "outputs": ["y"],
            "tensors": [{"name": "x", "dtype": "float32", "shape": [1]}],
            "nodes": [{"name": "n", "op": "Foo", "inputs": ["x"], "outputs": ["y"],
                       "attributes": )" +
                                 attributes + "}]}";
        return jg::parse_graph(text, "a.json").nodes.at(0).attributes;
    };
    auto a = attrs_of(R"({"i": 3, "f": 3.0, "e": 3e0, "s": "3", "li": [1, 2], "lf": [1, 2.5],
                          "ti": {"ints": []}, "tf": {"floats": [1, 2]}, "one": {"int": 7},
                          "fl": {"float": 2}, "ni": {"float": "-inf"}, "st": {"string": "x"}})");
    REQUIRE(a.size() == 12);
    CHECK(std::get<int64_t>(a[0].value) == 3);
    CHECK(std::get<double>(a[1].value) == 3.0);
    CHECK(std::get<double>(a[2].value) == 3.0);
    CHECK(std::get<std::string>(a[3].value) == "3");
    CHECK(std::get<std::vector<int64_t>>(a[4].value) == std::vector<int64_t>{1, 2});
    CHECK(std::get<std::vector<double>>(a[5].value) == std::vector<double>{1.0, 2.5});
    CHECK(std::get<std::vector<int64_t>>(a[6].value).empty());
    CHECK(std::get<std::vector<double>>(a[7].value) == std::vector<double>{1.0, 2.0});
    CHECK(std::get<int64_t>(a[8].value) == 7);
    CHECK(std::get<double>(a[9].value) == 2.0);
    CHECK(std::get<double>(a[10].value) == -std::numeric_limits<double>::infinity());
    CHECK(std::get<std::string>(a[11].value) == "x");
    // File order is kept (attributes are compared in order).
    CHECK(a[0].name == "i");
    CHECK(a[11].name == "st");

    CHECK_THROWS_WITH(attrs_of(R"({"e": []})"), Catch::Contains("ambiguous"));
    CHECK_THROWS_WITH(attrs_of(R"({"b": true})"), Catch::Contains("attribute 'b' is true"));
    CHECK_THROWS_WITH(attrs_of(R"({"n": null})"), Catch::Contains("attribute 'n' is null"));
    CHECK_THROWS_WITH(attrs_of(R"({"m": [1, "a"]})"), Catch::Contains("mixes strings and numbers"));
    CHECK_THROWS_WITH(attrs_of(R"({"s": ["a", "b"]})"), Catch::Contains("list of strings"));
    CHECK_THROWS_WITH(attrs_of(R"({"nest": [[1]]})"), Catch::Contains("element 0 is an array"));
    CHECK_THROWS_WITH(attrs_of(R"({"big": 9223372036854775808})"),
                      Catch::Contains("out of the 64-bit integer range"));
    CHECK_THROWS_WITH(attrs_of(R"({"huge": 123456789012345678901234567890})"),
                      Catch::Contains("out of the 64-bit integer range"));
    CHECK_THROWS_WITH(attrs_of(R"({"t": {"ints": [1.5]}})"), Catch::Contains("must be an integer"));
    CHECK_THROWS_WITH(attrs_of(R"({"t": {"int": 1, "float": 2.0}})"),
                      Catch::Contains("exactly one key"));
    CHECK_THROWS_WITH(attrs_of(R"({"t": {"double": 1}})"),
                      Catch::Contains("unknown type 'double'"));
    CHECK_THROWS_WITH(attrs_of(R"({"t": {"float": "infinity"}})"),
                      Catch::Contains("must be a number"));
}

TEST_CASE("json graph reader: errors name the file, the line and the culprit", "[json_graph]") {
    const std::string head = R"({"schema": "nnergy.graph/1", "inputs": ["x"], "outputs": ["y"],
"tensors": [{"name": "x", "dtype": "float32", "shape": ["batch", 4]}],
"nodes": [
)";
    // Syntax errors: line and column of the offending byte.
    expect_rejected("{\n  \"schema\": \"nnergy.graph/1\",\n  \"nodes\": [\n",
                    {"bad.json:4:1: invalid JSON", "unexpected end of input"});
    expect_rejected(
        "{\"schema\": \"nnergy.graph/1\" \"nodes\": []}",
        {"bad.json:1:29: invalid JSON", "unexpected string literal; expected ',' or '}'"});
    expect_rejected("\n[\"x\xff\"]", {"bad.json:2:4: invalid JSON", "\\xff"});
    expect_rejected("[1e999]", {"bad.json:1:2: number out of range"});
    expect_rejected("", {"bad.json:1:1: invalid JSON"});
    expect_rejected(std::string(200, '[') + std::string(200, ']'),
                    {"bad.json:1:65: nesting deeper than 64 levels"});
    // Deeper than the JSON library's own limit: still our message, at the 65th bracket.
    expect_rejected("\n" + std::string(5000, '[') + std::string(5000, ']'),
                    {"bad.json:2:65: nesting deeper than 64 levels"});
    expect_rejected("{\"a\" 1}", {"bad.json:1:6: invalid JSON: unexpected number; expected ':'"});
    expect_rejected("{\"a\": [1, 2,]}",
                    {"bad.json:1:13: invalid JSON: unexpected ']'; expected a value"});
    expect_rejected("{\"a\": 1,}",
                    {"bad.json:1:9: invalid JSON: unexpected '}'; expected a string key"});
    expect_rejected("{}\n  x", {"bad.json:2:3: invalid JSON: unexpected literal 'x'",
                                "expected nothing after the top-level value"});
    expect_rejected("[tru]", {"bad.json:1:2: invalid JSON: invalid literal 'tru'"});
    expect_rejected("[1.]", {"bad.json:1:2: invalid JSON: invalid number '1.'"});
    expect_rejected("{\n\"a\": \"never closed",
                    {"bad.json:2:19: invalid JSON: unexpected end of input inside the string at "
                     "line 2, column 6"});
    expect_rejected("[\"tab\there\"]",
                    {"bad.json:1:6: invalid JSON: control character byte \\x09 inside a string"});
    expect_rejected("  \n ", {"bad.json:2:2: invalid JSON: unexpected end of input"});
    // Inside the node and tensor lists (read element by element): the same messages.
    expect_rejected(
        head + "  {\"name\": \"r\", \"op\": \"Relu\" \"outputs\": [\"y\"]}\n]}",
        {"bad.json:4:30: invalid JSON: unexpected string literal; expected ',' or '}'"});
    expect_rejected(head + "  {\"name\": \"r\", \"op\": \"Relu\", \"op\": \"Relu\"}\n]}",
                    {"bad.json:4:31: duplicate key 'op' (first at line 4)"});
    expect_rejected(head + "  {\"name\": \"r\", \"op\": \"Relu\", \"outputs\": [\"y\"]},\n]}",
                    {"bad.json:5:1: invalid JSON: unexpected ']'; expected a value"});
    expect_rejected(head + "  {\"name\": \"r\", \"op\": \"Relu\", \"outputs\": [\"y\"",
                    {"bad.json:4:46: invalid JSON: unexpected end of input"});
    expect_rejected(head + "  {\"name\": \"r\", \"op\": \"Relu\", \"outputs\": [\"y\"]}\n]} extra",
                    {"bad.json:5:4: invalid JSON: unexpected literal 'extra'; expected nothing "
                     "after the top-level value"});
    // Keys may be spelled with escapes, the streamed lists' keys too.
    CHECK(jg::parse_graph(R"({"schema": "nnergy.graph/1", "outputs": ["y"],
        "t\u0065nsors": [{"name": "x", "dtype": "float32", "shape": [2]}], "inputs": ["x"],
        "n\u006fdes": [{"name": "r", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}]})",
                          "esc.json")
              .nodes.size() == 1);
    // A UTF-8 byte order mark is skipped; positions still count it as bytes of line 1.
    expect_rejected("\xEF\xBB\xBF{\"schema\": 1}",
                    {"bad.json:1: 'schema' must be a string, not an integer"});
    // Document-level rules.
    expect_rejected("[]", {"bad.json:1: expected a JSON object"});
    expect_rejected(R"({"nodes": []})", {"bad.json:1: missing \"schema\""});
    expect_rejected(R"({"schema": "nnergy.graph/2", "nodes": [], "outputs": []})",
                    {"bad.json:1: unsupported schema version 'nnergy.graph/2'"});
    expect_rejected(R"({"schema": "onnx", "nodes": [], "outputs": []})", {"not 'nnergy.graph/1'"});
    expect_rejected("{\"schema\": \"nnergy.graph/1\",\n \"nodse\": []}",
                    {"bad.json:2: unknown key 'nodse' (did you mean 'nodes'?)"});
    expect_rejected("{\"schema\": \"nnergy.graph/1\",\n \"nodes\": [],\n \"nodes\": []}",
                    {"bad.json:3:2: duplicate key 'nodes' (first at line 2)"});
    expect_rejected(
        R"({"schema": "nnergy.graph/1", "metadata": {"name": "x"}, "nodes": [], "outputs": []})",
        {"top-level 'name'"});
    expect_rejected(
        R"({"schema": "nnergy.graph/1", "metadata": {"k": 1}, "nodes": [], "outputs": []})",
        {"metadata: value of 'k' must be a string, not an integer"});
    // Tensors.
    expect_rejected(head + R"({"name": "n", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}],
"tensors2": []})",
                    {"bad.json:5: unknown key 'tensors2'"});
    auto with_tensor = [&](const std::string& tensor) {
        return R"({"schema": "nnergy.graph/1", "inputs": ["x"], "outputs": ["y"],
"tensors": [{"name": "x", "dtype": "float32", "shape": [4]},
)" + tensor + R"(],
"nodes": [{"name": "n", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}]})";
    };
    expect_rejected(with_tensor(R"({"name": "w", "dtype": "float23", "shape": [1]})"),
                    {"bad.json:3: tensor 'w' (index 1 of 'tensors'): unknown dtype 'float23'"});
    expect_rejected(with_tensor(R"({"name": "w", "shape": [-1]})"),
                    {"bad.json:3: tensor 'w'", "dimension 0 of 'shape' is -1"});
    expect_rejected(with_tensor(R"({"name": "w", "shape": ["3"]})"),
                    {"dimension 0 of 'shape' is '3'"});
    // A dimension expression needs a name in it, and no surrounding spaces.
    expect_rejected(with_tensor(R"({"name": "w", "shape": ["3 + 1"]})"),
                    {"dimension 0 of 'shape' is '3 + 1'", "names a symbol"});
    expect_rejected(with_tensor(R"({"name": "w", "shape": [" seq"]})"),
                    {"dimension 0 of 'shape' is ' seq'"});
    expect_rejected(with_tensor(R"({"name": "w", "shape": ["seq ; 1"]})"),
                    {"dimension 0 of 'shape' is 'seq ; 1'"});
    expect_rejected(with_tensor(R"({"name": "w", "shape": [2.0]})"), {"must be an integer"});
    expect_rejected(with_tensor(R"({"name": "w", "shape": [1e30]})"), {"must be an integer"});
    expect_rejected(with_tensor(R"({"name": "w", "shape": [99999999999999999999]})"),
                    {"out of the 64-bit integer range"});
    expect_rejected(with_tensor(R"({"name": "w", "shape": [true]})"), {"not true"});
    expect_rejected(with_tensor(R"({"name": "w", "dtype": "float32", "initializer": true})"),
                    {"an initializer needs a 'shape'"});
    expect_rejected(with_tensor(R"({"name": "w", "shape": [1], "initializer": true})"),
                    {"an initializer needs a 'dtype'"});
    expect_rejected(
        with_tensor(R"({"name": "w", "dtype": "int64", "shape": [2], "values": [1, 2]})"),
        {"'values' requires \"initializer\": true"});
    auto constant = [&](const std::string& dtype, const std::string& shape,
                        const std::string& values) {
        return with_tensor(R"({"name": "w", "dtype": ")" + dtype + R"(", "shape": )" + shape +
                           R"(, "initializer": true, "values": )" + values + "}");
    };
    expect_rejected(constant("float32", "[2]", "[1, 2]"), {"only for integer dtypes"});
    expect_rejected(constant("int64", "[3]", "[1, 2]"),
                    {"'values' has 2 elements but 'shape' has 3"});
    expect_rejected(constant("int64", "[\"n\"]", "[1]"), {"fully concrete 'shape'"});
    expect_rejected(constant("int64", "[4294967296, 4294967296]", "[1]"), {"too many elements"});
    expect_rejected(constant("int64", "[2]", "[1, 2.5]"),
                    {"element 1 of 'values' must be an integer"});
    CHECK(jg::parse_graph(constant("int32", "[2]", "[1, -2]"), "ok.json").tensors[1].values ==
          std::vector<int64_t>{1, -2});
    expect_rejected(with_tensor(R"({"name": "x", "dtype": "float32", "shape": [4]})"),
                    {"bad.json:3: tensor 'x' (index 1 of 'tensors'): duplicate tensor name (first "
                     "declared at line 2)"});
    expect_rejected(with_tensor(R"({"name": "w", "size": 3})"), {"unknown key 'size'"});
    expect_rejected(with_tensor(R"({"name": ""})"), {"'name' must not be empty"});
    expect_rejected(with_tensor(R"("w")"), {"tensor at index 1 of 'tensors': must be an object"});
    // Nodes.
    expect_rejected(
        head + R"({"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["t"]},
{"name": "conv1", "op": "Relu", "inputs": "t", "outputs": ["y"]}]})",
        {"bad.json:5: node 'conv1' (index 1): 'inputs' must be an array of tensor names"});
    expect_rejected(head + R"({"name": "a", "op": "Relu", "inputs": ["q"], "outputs": ["y"]}]})",
                    {"bad.json:4: node 'a' (index 0): input 'q' is not declared in 'tensors' and "
                     "no node produces it"});
    expect_rejected(head + R"({"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["y"]},
{"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["z"]}]})",
                    {"bad.json:5: node 'a' (index 1): duplicate node name (first at line 4)"});
    expect_rejected(
        head + R"({"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["y"]},
{"name": "b", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}]})",
        {"bad.json:5: node 'b' (index 1): output 'y' is already produced by node 'a' (line 4)"});
    expect_rejected(
        head + R"({"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["y"], "attrs": {}}]})",
        {"bad.json:4: node 'a' (index 0): unknown key 'attrs' (did you mean 'attributes'?)"});
    expect_rejected(head + R"({"name": "a", "inputs": ["x"], "outputs": ["y"]}]})",
                    {"missing 'op'"});
    expect_rejected(head + R"({"name": "a", "op": "Relu", "inputs": ["x"], "outputs": []}]})",
                    {"at least one tensor"});
    expect_rejected(head + R"({"name": "a", "op": "Relu", "inputs": ["x"], "outputs": [""]}]})",
                    {"output names must not be empty"});
    expect_rejected(head + R"({"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["x"]}]})",
                    {"graph input 'x'", "is also produced by node 'a'"});
    expect_rejected(head + R"({"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["t"]}]})",
                    {"graph output 'y'", "neither declared in 'tensors' nor produced by a node"});
    expect_rejected(head + R"({"name": "a", "op": "Add", "inputs": ["x", "u"], "outputs": ["y"]},
{"name": "b", "op": "Relu", "inputs": ["y"], "outputs": ["v"]},
{"name": "c", "op": "Relu", "inputs": ["v"], "outputs": ["u"]}]})",
                    {"bad.json:4: the nodes form a cycle: 'a' (line 4) -> 'b' (line 5) -> 'c' "
                     "(line 6) -> 'a'"});
    expect_rejected(R"({"schema": "nnergy.graph/1", "inputs": ["x"], "outputs": ["y"],
"tensors": [{"name": "x", "dtype": "float32"}],
"nodes": [{"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}]})",
                    {"graph input 'x': needs a 'shape'"});
    expect_rejected(R"({"schema": "nnergy.graph/1", "inputs": ["x"], "outputs": ["y"],
"tensors": [{"name": "x", "shape": [1]}],
"nodes": [{"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}]})",
                    {"graph input 'x': needs a 'dtype'"});
    expect_rejected(R"({"schema": "nnergy.graph/1", "inputs": [], "outputs": ["y"],
"tensors": [{"name": "x", "dtype": "float32", "shape": [1]}],
"nodes": [{"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}]})",
                    {"input 'x' is neither a graph input, an initializer, nor produced by a node"});
}

TEST_CASE("the host takes a frontend's storage hint, and ignores one beyond any model",
          "[json_graph][abi]") {
    nnergy::sdk::detail::api_slot() = nnergy::host_api();
    nnergy::graph g;
    nnergy_graph_builder b;
    b.target = &g;
    nnergy::sdk::graph_builder builder(&b);
    builder.reserve(std::size_t{1} << 40, std::size_t{1} << 40);  // no error, no allocation
    CHECK(g.tensors.capacity() == 0);
    builder.reserve(300, 100);
    CHECK(g.tensors.capacity() >= 300);
    CHECK(g.nodes.capacity() >= 100);
    // The reader's hint: the declared tensors and one per node (its output), and the nodes.
    const std::string text = R"({"schema": "nnergy.graph/1", "inputs": ["x"], "outputs": ["z"],
      "tensors": [{"name": "x", "dtype": "float32", "shape": [2]}],
      "nodes": [{"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["y"]},
                {"name": "b", "op": "Relu", "inputs": ["y"], "outputs": ["z"]}]})";
    const nnergy::graph loaded = load_text(text);
    CHECK(loaded.tensors.capacity() == 3);
    CHECK(loaded.nodes.capacity() == 2);
}

TEST_CASE("json graph reader: undeclared tensors are declared where first used", "[json_graph]") {
    // "t" is used by "b" before "a" (later in the file) produces it: both are legal, and the
    // implicit tensors get indices after the declared ones, in order of first mention.
    const std::string text = R"({"schema": "nnergy.graph/1", "name": "order",
      "inputs": ["x"], "outputs": ["y"],
      "tensors": [{"name": "x", "dtype": "float32", "shape": [2]}],
      "nodes": [{"name": "b", "op": "Relu", "inputs": ["t"], "outputs": ["y"]},
                {"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["t"]}]})";
    jg::graph_spec spec = jg::parse_graph(text, "order.json");
    REQUIRE(spec.tensors.size() == 3);
    CHECK(spec.tensors[1].name == "t");
    CHECK(spec.tensors[2].name == "y");
    CHECK_FALSE(spec.tensors[1].declared);
    nnergy::graph g = load_text(text, "order.json");
    // finalize sorts the nodes: "a" must run first.
    CHECK(g.nodes[0].name == "a");
    CHECK(g.nodes[1].name == "b");
    CHECK(g.nodes[0].source_line == 5);
    CHECK(g.nodes[1].source_line == 4);
    CHECK(g.name == "order");
    // Without a "name" the graph is named after the file.
    nnergy::graph unnamed = load_text(
        R"({"schema": "nnergy.graph/1", "inputs": ["x"], "outputs": ["y"],
            "tensors": [{"name": "x", "dtype": "float32", "shape": [2]}],
            "nodes": [{"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}]})",
        "dir/my_model.json");
    CHECK(unnamed.name == "my_model");
}

TEST_CASE("json graph reader: the name table finds every name, and refuses none it holds",
          "[json_graph]") {
    jg::detail::name_map names;
    // Grows from empty (no reserve); names that differ in their last byte, share a size, are
    // empty, or are prefixes of one another.
    std::vector<std::string> held;
    for (int i = 0; i < 20000; ++i) held.push_back("layer." + std::to_string(i) + ".weight");
    held.push_back("");
    held.push_back("layer.1");
    held.push_back("layer.1.weigh");
    for (std::size_t i = 0; i < held.size(); ++i) {
        const auto [value, fresh] = names.emplace(held[i], static_cast<uint32_t>(i));
        REQUIRE(fresh);
        REQUIRE(value == i);
    }
    for (std::size_t i = 0; i < held.size(); ++i) {
        const uint32_t* v = names.find(held[i]);
        REQUIRE(v);
        REQUIRE(*v == i);
        CHECK_FALSE(names.emplace(held[i], 7).second);  // the first value stays
    }
    CHECK(*names.find(held[5]) == 5);
    for (const char* absent : {"layer.20000.weight", "layer.1.weights", "layer.", " "})
        CHECK(names.find(absent) == nullptr);
    CHECK(names.find(std::string(jg::detail::name_map::longest_name + 1, 'a')) == nullptr);
}

TEST_CASE("json graph reader: a duplicate name far from the first, or near it, names both lines",
          "[json_graph]") {
    // The reader adds declared tensors and node names to its tables some names late: a
    // duplicate must be caught wherever it falls, in the list and at its end.
    const auto graph_text = [](std::size_t tensors, std::size_t repeat_tensor, std::size_t nodes,
                               std::size_t repeat_node) {
        // Line 1: the head; line 2: "tensors"; line 3 + t: tensor t; then "nodes", then one
        // line per node.
        std::string text = R"({"schema": "nnergy.graph/1", "inputs": ["x"], "outputs": ["y"],)";
        text += "\n\"tensors\": [\n";
        for (std::size_t t = 0; t < tensors; ++t) {
            const std::size_t named = t == repeat_tensor ? 3 : t;
            text += t == 0 ? R"({"name": "x", "dtype": "float32", "shape": [4]})"
                           : R"({"name": "w)" + std::to_string(named) +
                                 R"(", "dtype": "float32", "shape": [4], "initializer": true})";
            text += t + 1 < tensors ? ",\n" : "],\n";
        }
        text += "\"nodes\": [\n";
        for (std::size_t n = 0; n < nodes; ++n) {
            const std::size_t named = n == repeat_node ? 2 : n;
            const std::string in = n == 0 ? "x" : "t" + std::to_string(n - 1);
            const std::string out = n + 1 == nodes ? "y" : "t" + std::to_string(n);
            text += R"({"name": "n)" + std::to_string(named) + R"(", "op": "Relu", "inputs": [")" +
                    in + R"("], "outputs": [")" + out + R"("]})";
            text += n + 1 < nodes ? ",\n" : "]}\n";
        }
        return text;
    };
    const std::size_t none = SIZE_MAX;
    CHECK(load_text(graph_text(60, none, 50, none), "ok.json").nodes.size() == 50);
    for (std::size_t repeat : {4, 18, 40, 59})  // next to tensor 3, past the delay, the last
        expect_rejected(graph_text(60, repeat, 50, none),
                        {"bad.json:" + std::to_string(repeat + 3) + ": tensor 'w3' (index " +
                         std::to_string(repeat) +
                         " of 'tensors'): duplicate tensor name (first declared at line 6)"});
    for (std::size_t repeat : {3, 19, 30, 49})  // line of node n: 64 + n with 60 tensors
        expect_rejected(graph_text(60, none, 50, repeat),
                        {"bad.json:" + std::to_string(64 + repeat) + ": node 'n2' (index " +
                         std::to_string(repeat) + "): duplicate node name (first at line 66)"});
}

TEST_CASE("json graph reader: names longer than the tables hold are refused", "[json_graph]") {
    const std::string too_long(jg::detail::name_map::longest_name + 1, 'a');
    expect_rejected(R"({"schema": "nnergy.graph/1", "outputs": ["y"], "tensors": [{"name": ")" +
                        too_long + R"(", "dtype": "float32", "shape": [1]}], "nodes": []})",
                    {"bad.json:1: tensor at index 0 of 'tensors': 'name' is 16777216 bytes long; "
                     "names are at most 16777215 bytes"});
    expect_rejected(R"({"schema": "nnergy.graph/1", "outputs": ["y"], "nodes": [
        {"name": "r", "op": "Relu", "inputs": [")" +
                        too_long + R"("], "outputs": ["y"]}]})",
                    {"bad.json:2: node 'r' (index 0): element 0 of 'inputs' is 16777216 bytes "
                     "long"});
}

TEST_CASE("json graph reader: the tensor list may follow the nodes", "[json_graph]") {
    // Declared tensors are read first wherever their list stands: the same graph, the same
    // indices, and errors still point at the right lines.
    const std::string nodes =
        R"("nodes": [{"name": "b", "op": "Relu", "inputs": ["t"], "outputs": ["y"]},
                {"name": "a", "op": "Relu", "inputs": ["x"], "outputs": ["t"]}])";
    const std::string tensors = R"("tensors": [{"name": "x", "dtype": "float32", "shape": [2]}])";
    const std::string head = R"({"schema": "nnergy.graph/1", "inputs": ["x"], "outputs": ["y"],)";
    const jg::graph_spec first =
        jg::parse_graph(head + "\n" + tensors + ",\n" + nodes + "}", "a.json");
    const jg::graph_spec last =
        jg::parse_graph(head + "\n" + nodes + ",\n" + tensors + "}", "b.json");
    REQUIRE(last.tensors.size() == 3);
    for (std::size_t t = 0; t < 3; ++t) CHECK(last.tensors[t].name == first.tensors[t].name);
    CHECK(last.tensors[0].line == 4);
    REQUIRE(last.nodes.size() == 2);
    CHECK(last.nodes[0].inputs == first.nodes[0].inputs);
    CHECK(last.nodes[1].outputs == first.nodes[1].outputs);
    CHECK(last.nodes[1].line == 3);
    expect_rejected(head + "\n" + nodes + ",\n" +
                        R"("tensors": [{"name": "x", "dtype": "float32", "shape": [2]},
                                       {"name": "x", "dtype": "float32", "shape": [2]}]})",
                    {"bad.json:5: tensor 'x' (index 1 of 'tensors'): duplicate tensor name "
                     "(first declared at line 4)"});
}

TEST_CASE("json graph reader: never crashes on damaged input", "[json_graph]") {
    // Every prefix, and every byte replaced by a few troublesome ones, of a valid document:
    // each must load or be rejected with parse_error (or the host's nnergy::error from
    // finalize), never anything else.
    const std::string text = nnergy::to_json_graph([] {
        nnergy::graph g = hand_built();
        g.finalize();
        return g;
    }());
    size_t accepted = 0, rejected = 0;
    auto attempt = [&](const std::string& doc) {
        try {
            load_text(doc, "fuzz.json");
            ++accepted;
        } catch (const jg::parse_error& e) {
            ++rejected;
            if (std::string(e.what()).rfind("fuzz.json", 0) != 0)
                FAIL("message without file: " << e.what());
        } catch (const nnergy::error&) {
            ++rejected;
        }
    };
    for (size_t n = 0; n < text.size(); ++n) attempt(text.substr(0, n));
    const char replacements[] = {'"', '{', ']', '0', '-', ',', '\xff', '\0'};
    for (size_t i = 0; i < text.size(); ++i)
        for (char c : replacements) {
            std::string doc = text;
            doc[i] = c;
            attempt(doc);
        }
    CHECK(rejected > 0);
    CHECK(accepted > 0);  // some replacements are harmless (inside names)
}

TEST_CASE("json graph reader: bundled models load and re-write byte-stably", "[json_graph]") {
    for (const char* name : {"hybrid_cnn_transformer", "cnn_block", "transformer_encoder"}) {
        INFO(name);
        const std::filesystem::path file =
            source_dir / "configs" / "models" / (std::string(name) + ".json");
        nnergy::graph g = load_text(read_text(file), file.string());
        CHECK(g.name == name);
        const std::string once = nnergy::to_json_graph(g);
        nnergy::graph back = load_text(once, std::string(name) + ".rt.json");
        CHECK(back == g);
        CHECK(nnergy::to_json_graph(back) == once);
    }
}

TEST_CASE("json graph reader: every bad-input file is rejected with its file and line",
          "[json_graph]") {
    // tests/data/json/<file>: the fragments its message must contain.
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"truncated.json", {"truncated.json:11:1: invalid JSON", "unexpected end of input"}},
        {"not_json.json", {"not_json.json:1:1: invalid JSON"}},
        {"wrong_schema_version.json",
         {"wrong_schema_version.json:2: unsupported schema version 'nnergy.graph/2'"}},
        {"missing_input_tensor.json",
         {"missing_input_tensor.json:",
          "node 'fc' (index 1): input 'hidden_typo' is not declared"}},
        {"wrong_attribute_type.json",
         {"wrong_attribute_type.json:", "node 'fc' (index 0): attribute 'transB' is true"}},
        {"attribute_mixed_list.json",
         {"attribute_mixed_list.json:",
          "node 'conv' (index 0): attribute 'pads' mixes strings and numbers"}},
        {"duplicate_tensor.json",
         {"duplicate_tensor.json:",
          "tensor 'w' (index 2 of 'tensors'): duplicate tensor name (first declared at line"}},
        {"duplicate_output.json",
         {"duplicate_output.json:11:", "node 'relu' (index 0): output 'y' is named twice"}},
        {"cycle.json", {"cycle.json:", "the nodes form a cycle"}},
        {"unknown_key.json",
         {"unknown_key.json:",
          "node 'relu' (index 0): unknown key 'ouputs' (did you mean 'outputs'?)"}},
        {"unknown_top_level_key.json",
         {"unknown_top_level_key.json:", "unknown key 'tensor' (did you mean 'tensors'?)"}},
        {"negative_dim.json", {"negative_dim.json:", "tensor 'x'", "dimension 0 of 'shape' is -1"}},
        {"duplicate_key.json", {"duplicate_key.json:10:", "duplicate key 'op' (first at line 10)"}},
        {"invalid_utf8.json", {"invalid_utf8.json:6:", "invalid JSON", "ill-formed UTF-8"}},
    };
    for (const auto& [file, fragments] : cases) {
        INFO(file);
        const std::filesystem::path path = source_dir / "tests" / "data" / "json" / file;
        try {
            load_text(read_text(path), path.string());
            FAIL("accepted: " << file);
        } catch (const jg::parse_error& e) {
            INFO(e.what());
            for (const std::string& f : fragments)
                CHECK(std::string(e.what()).find(f) != std::string::npos);
        }
    }
}

TEST_CASE("json graph: bundled models have their hand-derived sizes", "[json_graph]") {
    // Derivations in docs/json-graph.md ("Bundled models"). Parameters: the elements of every
    // initializer except shape constants and BatchNormalization running mean/variance; MACs:
    // Conv, MatMul and Gemm only.
    struct expected {
        const char* name;
        nnergy::dim_bindings dims;
        double params;
        double macs;
    };
    const std::vector<expected> models = {
        {"hybrid_cnn_transformer", {{"batch", 1}}, 89483, 13550208},
        {"hybrid_cnn_transformer", {{"batch", 8}}, 89483, 8.0 * 13550208},
        {"cnn_block", {{"batch", 1}}, 230144, 179830784},
        {"transformer_encoder", {{"batch", 1}, {"seq", 128}}, 789764, 109051904},
        {"transformer_encoder",
         {{"batch", 2}, {"seq", 384}},
         789764,
         786432.0 * 2 * 384 + 512.0 * 2 * 384 * 384},
    };
    for (const expected& m : models) {
        INFO(m.name);
        const std::filesystem::path file =
            source_dir / "configs" / "models" / (std::string(m.name) + ".json");
        nnergy::graph g = load_text(read_text(file), file.string());
        nnergy::bound_graph b = nnergy::bind(g, m.dims);
        CHECK(b.unknown_nodes.empty());
        double macs = 0;
        for (const nnergy::op_counts& c : b.counts) macs += c.macs;
        CHECK(b.total_params == m.params);
        CHECK(macs == m.macs);
    }
}

TEST_CASE("json graph: an unknown op without a declared output shape fails at binding",
          "[json_graph]") {
    // The reader accepts unknown ops (they are listed, not guessed); shape inference cannot go
    // past one whose output has no declared shape, and must say so, naming the file and node.
    const std::filesystem::path file =
        source_dir / "tests" / "data" / "json" / "unknown_op_no_shape.json";
    nnergy::graph g = load_text(read_text(file), file.string());
    CHECK_THROWS_WITH(nnergy::bind(g, {{"batch", 1}}),
                      Catch::Contains("unknown_op_no_shape.json") && Catch::Contains("mystery"));
}

TEST_CASE("json graph: the example in docs/json-graph.md loads and counts as stated",
          "[json_graph]") {
    const std::string doc = read_text(source_dir / "docs" / "json-graph.md");
    const std::string open = "```json\n";
    const size_t begin = doc.find(open);
    REQUIRE(begin != std::string::npos);
    const size_t end = doc.find("```", begin + open.size());
    REQUIRE(end != std::string::npos);
    const std::string example = doc.substr(begin + open.size(), end - begin - open.size());
    nnergy::graph g = load_text(example, "tiny_mlp.json");
    CHECK(g.name == "tiny_mlp");
    nnergy::bound_graph b = nnergy::bind(g, {{"batch", 1}});
    // fc1 784 x 128 + 128, fc2 128 x 10 + 10; the shape constant is not a parameter.
    CHECK(b.total_params == 784 * 128 + 128 + 128 * 10 + 10);
    double macs = 0;
    for (const nnergy::op_counts& c : b.counts) macs += c.macs;
    CHECK(macs == 784 * 128 + 128 * 10);
    // Undeclared tensors got their shapes from inference.
    const auto h = g.find_tensor("h");
    REQUIRE(h);
    CHECK(b.shapes[*h] == std::vector<int64_t>{1, 128});
}

TEST_CASE("json graph: constants of the model's code are initializers but not parameters",
          "[json_graph]") {
    const std::string text = R"({"schema": "nnergy.graph/1", "inputs": ["x"], "outputs": ["y"],
"tensors": [
  {"name": "x", "dtype": "float32", "shape": [2, 4]},
  {"name": "w", "dtype": "float32", "shape": [4], "initializer": true},
  {"name": "half", "dtype": "float32", "shape": [], "initializer": true, "constant": true}
],
"nodes": [
  {"name": "scale", "op": "Mul", "inputs": ["x", "w"], "outputs": ["h"]},
  {"name": "halve", "op": "Mul", "inputs": ["h", "half"], "outputs": ["y"]}
]})";
    nnergy::graph g = load_text(text, "const.json");
    CHECK_FALSE(g.tensors[*g.find_tensor("w")].is_constant);
    CHECK(g.tensors[*g.find_tensor("half")].is_constant);
    const nnergy::bound_graph b = nnergy::bind(g, {});
    CHECK(b.total_params == 4);  // w's four elements; the constant is not a parameter
    // The flag survives a round trip through the writer.
    const std::string out = nnergy::to_json_graph(g);
    CHECK(
        out.find(
            R"("name": "half", "dtype": "float32", "shape": [], "initializer": true, "constant": true)") !=
        std::string::npos);
    CHECK(load_text(out, "const.rt.json") == g);
    expect_rejected(R"({"schema": "nnergy.graph/1", "outputs": ["c"],
"tensors": [{"name": "c", "dtype": "float32", "shape": [1], "constant": true}], "nodes": []})",
                    {"bad.json:2: tensor 'c' (index 0 of 'tensors'): 'constant' requires "
                     "\"initializer\": true"});
}
