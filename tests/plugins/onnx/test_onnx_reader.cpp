// SPDX-License-Identifier: Apache-2.0
// The ONNX reader: element types, data-size checks, streaming initializer scans, and graph
// building into a builder that records every call. Expected values come from the models that
// tools/make_onnx_test_models.py writes (each one described there) or from models built here.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "onnx_fixture_models.hpp"
#include "onnx_reader.hpp"

namespace {

namespace ox = nnergy::onnx_frontend;

/// Records what a frontend builds, with the interface of nnergy::sdk::graph_builder.
struct recording_builder {
    struct dim {
        int64_t value = NNERGY_DIM_UNKNOWN;
        std::string symbol;
    };
    struct tensor {
        std::string name;
        nnergy_dtype dtype = NNERGY_DTYPE_UNDEFINED;
        std::optional<std::vector<dim>> shape;
        bool initializer = false;
        bool constant = false;
        std::optional<std::vector<int64_t>> values;
    };
    struct node {
        std::string name, op, domain;
        std::vector<uint32_t> inputs, outputs;
        std::map<std::string, int64_t> ints;
        std::map<std::string, double> floats;
        std::map<std::string, std::string> strings;
        std::map<std::string, std::vector<int64_t>> int_lists;
        std::map<std::string, std::vector<double>> float_lists;
    };
    std::vector<tensor> tensors;
    std::vector<node> nodes;
    std::vector<uint32_t> inputs, outputs;
    std::map<std::string, std::string> metadata_;
    std::size_t reserved_tensors = 0, reserved_nodes = 0;

    void reserve(std::size_t t, std::size_t n) {
        reserved_tensors = t;
        reserved_nodes = n;
    }
    uint32_t add_tensor(std::string_view name, nnergy_dtype dtype,
                        const std::optional<std::vector<dim>>& shape) {
        tensors.push_back({std::string(name), dtype, shape, false, false, std::nullopt});
        return static_cast<uint32_t>(tensors.size() - 1);
    }
    void set_initializer(uint32_t t) { tensors.at(t).initializer = true; }
    void set_constant(uint32_t t) { tensors.at(t).constant = true; }
    void set_initializer_values(uint32_t t, const std::vector<int64_t>& v) {
        tensors.at(t).values = v;
    }
    void add_input(uint32_t t) { inputs.push_back(t); }
    void add_output(uint32_t t) { outputs.push_back(t); }
    uint32_t add_node(std::string_view name, std::string_view op, std::string_view domain,
                      const std::vector<uint32_t>& in, const std::vector<uint32_t>& out) {
        node n;
        n.name = name;
        n.op = op;
        n.domain = domain;
        n.inputs = in;
        n.outputs = out;
        nodes.push_back(n);
        return static_cast<uint32_t>(nodes.size() - 1);
    }
    void attr(uint32_t n, std::string_view k, int64_t v) { nodes.at(n).ints[std::string(k)] = v; }
    void attr(uint32_t n, std::string_view k, double v) { nodes.at(n).floats[std::string(k)] = v; }
    void attr(uint32_t n, std::string_view k, std::string_view v) {
        nodes.at(n).strings[std::string(k)] = std::string(v);
    }
    void attr(uint32_t n, std::string_view k, const std::vector<int64_t>& v) {
        nodes.at(n).int_lists[std::string(k)] = v;
    }
    void attr(uint32_t n, std::string_view k, const std::vector<double>& v) {
        nodes.at(n).float_lists[std::string(k)] = v;
    }
    void metadata(std::string_view k, std::string_view v) {
        metadata_[std::string(k)] = std::string(v);
    }

    const tensor& find_tensor(const std::string& name) const {
        for (const tensor& t : tensors)
            if (t.name == name) return t;
        FAIL("no tensor " << name);
        throw;
    }
    const node& find_node(const std::string& name) const {
        for (const node& n : nodes)
            if (n.name == name) return n;
        FAIL("no node " << name);
        throw;
    }
};

std::string data_file(const std::string& name) {
    return std::string(NNERGY_TEST_SOURCE_DIR) + "/tests/data/onnx/" + name;
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

ox::model_data read_bytes_as_model(const std::string& bytes, const std::string& name = "mem") {
    return ox::read_model(bytes, name);
}

// The reader's storage hint (ABI 1.6) bounds what it then adds.
void check_reserved(const recording_builder& b) {
    CHECK(b.tensors.size() <= b.reserved_tensors);
    CHECK(b.nodes.size() <= b.reserved_nodes);
}

recording_builder build(const ox::model_data& m, std::vector<std::string>* notes = nullptr) {
    recording_builder b;
    ox::build_graph(m, "model.onnx", "fallback", b, [&](const std::string& s) {
        if (notes) notes->push_back(s);
    });
    check_reserved(b);
    return b;
}

/// A one-node model: y = MatMul(x, w) with w an initializer the caller fills.
onnx::ModelProto matmul_model(const onnx::TensorProto& w, int64_t opset = 13) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    auto* g = m.mutable_graph();
    g->set_name("g");
    auto* x = g->add_input();
    x->set_name("x");
    x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* shape = x->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->add_dim()->set_dim_param("batch");
    shape->add_dim()->set_dim_value(4);
    shape->add_dim();  // neither value nor param: unknown
    *g->add_initializer() = w;
    auto* n = g->add_node();
    n->set_name("mm");
    n->set_op_type("MatMul");
    n->add_input("x");
    n->add_input(w.name());
    n->add_output("y");
    g->add_output()->set_name("y");
    return m;
}

}  // namespace

TEST_CASE("ONNX element types map onto nnergy dtypes", "[onnx]") {
    CHECK(ox::dtype_from_onnx(1) == NNERGY_DTYPE_FLOAT32);
    CHECK(ox::dtype_from_onnx(10) == NNERGY_DTYPE_FLOAT16);
    CHECK(ox::dtype_from_onnx(16) == NNERGY_DTYPE_BFLOAT16);
    CHECK(ox::dtype_from_onnx(7) == NNERGY_DTYPE_INT64);
    CHECK(ox::dtype_from_onnx(9) == NNERGY_DTYPE_BOOL);
    CHECK(ox::dtype_from_onnx(18) == NNERGY_DTYPE_FLOAT8_E4M3);  // FNUZ: same width
    CHECK(ox::dtype_from_onnx(14) == NNERGY_DTYPE_UNDEFINED);    // COMPLEX64: no nnergy type
    CHECK(ox::dtype_from_onnx(99) == NNERGY_DTYPE_UNDEFINED);
}

TEST_CASE("embedded tensor data must match the dims", "[onnx]") {
    ox::tensor_summary t;
    t.data_type = 1;  // FLOAT: 4 bytes per element
    t.dims = {2, 3};  // 6 elements
    t.has_raw = true;
    t.raw_size = 24;
    CHECK(ox::check_tensor_data(t).empty());
    t.raw_size = 20;
    CHECK(ox::check_tensor_data(t) == "dims [2, 3] of FLOAT need 24 bytes but raw_data holds 20");
    t.external = true;  // data elsewhere: nothing embedded to compare
    CHECK(ox::check_tensor_data(t).empty());

    ox::tensor_summary i;
    i.data_type = 7;  // INT64 in int64_data
    i.dims = {2, 3};
    i.typed_counts[7] = 5;
    CHECK(ox::check_tensor_data(i) == "dims [2, 3] mean 6 elements but 5 are stored");
    i.typed_counts[7] = 6;
    CHECK(ox::check_tensor_data(i).empty());

    ox::tensor_summary n;
    n.dims = {-1, 2};
    CHECK(ox::check_tensor_data(n) == "dims [-1, 2] are negative or too large");
    CHECK_FALSE(ox::element_count({INT64_MAX, INT64_MAX}).has_value());
    CHECK(ox::element_count({}) == 1u);  // a scalar
}

TEST_CASE("initializers are scanned without their weights; small integers keep values", "[onnx]") {
    onnx::TensorProto w;
    w.set_name("w");
    w.set_data_type(onnx::TensorProto::FLOAT);
    w.add_dims(4);
    w.add_dims(256);
    w.set_raw_data(std::string(4 * 256 * 4, '\0'));
    onnx::ModelProto m = matmul_model(w);
    // Two shape constants: int64 in raw_data (little endian, one negative), int32 in int32_data.
    auto* s64 = m.mutable_graph()->add_initializer();
    s64->set_name("s64");
    s64->set_data_type(onnx::TensorProto::INT64);
    s64->add_dims(3);
    std::string raw;
    for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{32}})
        for (int b = 0; b < 8; ++b)
            raw.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * b)) & 0xFF));
    s64->set_raw_data(raw);
    auto* s32 = m.mutable_graph()->add_initializer();
    s32->set_name("s32");
    s32->set_data_type(onnx::TensorProto::INT32);
    s32->add_dims(2);
    s32->add_int32_data(-7);
    s32->add_int32_data(5);

    const ox::model_data d = read_bytes_as_model(m.SerializeAsString());
    REQUIRE(d.initializers.size() == 3);
    CHECK(d.initializers[0].name == "w");
    CHECK(d.initializers[0].dims == std::vector<int64_t>{4, 256});
    CHECK(d.initializers[0].raw_size == 4096u);
    CHECK_FALSE(d.initializers[0].values_complete);

    const recording_builder b = build(d);
    CHECK(b.find_tensor("s64").values == std::vector<int64_t>{0, -1, 32});
    CHECK(b.find_tensor("s32").values == std::vector<int64_t>{-7, 5});
    CHECK(b.find_tensor("w").initializer);
    CHECK_FALSE(b.find_tensor("w").values.has_value());
    const auto& x = b.find_tensor("x");
    REQUIRE(x.shape.has_value());
    REQUIRE(x.shape->size() == 3);
    CHECK((*x.shape)[0].symbol == "batch");
    CHECK((*x.shape)[1].value == 4);
    CHECK((*x.shape)[2].value == NNERGY_DIM_UNKNOWN);
    CHECK((*x.shape)[2].symbol.empty());
    CHECK(b.metadata_.at("name") == "g");
    CHECK(b.metadata_.at("opset") == "13");
}

TEST_CASE("an initializer whose data disagrees with its dims names the initializer", "[onnx]") {
    onnx::TensorProto w;
    w.set_name("w");
    w.set_data_type(onnx::TensorProto::FLOAT);
    w.add_dims(3);
    w.add_float_data(1.0f);
    w.add_float_data(2.0f);
    const ox::model_data d = read_bytes_as_model(matmul_model(w).SerializeAsString());
    recording_builder b;
    CHECK_THROWS_WITH(ox::build_graph(d, "m.onnx", "m", b, [](const std::string&) {}),
                      "m.onnx: initializer 'w': dims [3] mean 3 elements but 2 are stored");
}

TEST_CASE("opsets outside 7..22 are refused; other domains are recorded", "[onnx]") {
    onnx::TensorProto w;
    w.set_name("w");
    w.set_data_type(onnx::TensorProto::FLOAT);
    w.add_dims(1);
    for (int64_t opset : {18, 20, 22}) {
        const recording_builder b =
            build(read_bytes_as_model(matmul_model(w, opset).SerializeAsString()));
        CHECK(b.metadata_.at("opset") == std::to_string(opset));
    }
    for (int64_t opset : {6, 23}) {
        const ox::model_data d = read_bytes_as_model(matmul_model(w, opset).SerializeAsString());
        recording_builder b;
        CHECK_THROWS_AS(ox::build_graph(d, "m.onnx", "m", b, [](const std::string&) {}),
                        ox::read_error);
    }
    onnx::ModelProto m = matmul_model(w, 7);
    auto* o = m.add_opset_import();
    o->set_domain("com.microsoft");
    o->set_version(1);
    const recording_builder b = build(read_bytes_as_model(m.SerializeAsString()));
    CHECK(b.metadata_.at("opset") == "7");
    CHECK(b.metadata_.at("opset.com.microsoft") == "1");
}

TEST_CASE("conv_bn_relu.onnx: inputs, initializers, nodes and attributes", "[onnx]") {
    const recording_builder b = build(ox::read_model_file(data_file("conv_bn_relu.onnx")));
    REQUIRE(b.inputs.size() == 1);
    CHECK(b.tensors[b.inputs[0]].name == "x");
    // Six initializers: conv weight and bias, four BatchNormalization vectors.
    int inits = 0;
    for (const auto& t : b.tensors) inits += t.initializer ? 1 : 0;
    CHECK(inits == 6);
    REQUIRE(b.nodes.size() == 3);
    const auto& conv = b.find_node("conv");
    CHECK(conv.op == "Conv");
    CHECK(conv.domain.empty());
    CHECK(conv.int_lists.at("kernel_shape") == std::vector<int64_t>{3, 3});
    CHECK(conv.int_lists.at("pads") == std::vector<int64_t>{1, 1, 1, 1});
    CHECK(b.find_node("bn").floats.at("epsilon") == Approx(1e-5));
    // value_info gives "c" its shape; "n" has none and is left to inference.
    CHECK(b.find_tensor("c").shape.has_value());
    CHECK_FALSE(b.find_tensor("n").shape.has_value());
    CHECK(b.metadata_.at("producer") == "nnergy-tests");
}

TEST_CASE("transformer_block.onnx: a Constant tensor becomes an initializer with values",
          "[onnx]") {
    const recording_builder b = build(ox::read_model_file(data_file("transformer_block.onnx")));
    CHECK(b.nodes.size() == 17);  // 18 nodes in the file, the Constant among them
    for (const auto& n : b.nodes) CHECK(n.op != "Constant");
    const auto& heads = b.find_tensor("heads");
    CHECK(heads.initializer);
    CHECK(heads.constant);  // the model's code, not a parameter
    CHECK(heads.values == std::vector<int64_t>{4, 8});
    CHECK_FALSE(b.find_tensor("wq").constant);
    CHECK(b.find_tensor("idx1").values == std::vector<int64_t>{1});  // a scalar: one value
    CHECK(b.find_tensor("merge").values == std::vector<int64_t>{0, 0, 32});
    CHECK_FALSE(b.find_tensor("wq").values.has_value());
}

TEST_CASE("if_node.onnx: control flow is kept, its graphs are noted, not read", "[onnx]") {
    std::vector<std::string> notes;
    const recording_builder b = build(ox::read_model_file(data_file("if_node.onnx")), &notes);
    CHECK(b.find_node("branch").op == "If");
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].find("branch.then_branch (GRAPH)") != std::string::npos);
    CHECK(b.metadata_.at("onnx.skipped_attributes") ==
          "branch.else_branch (GRAPH), branch.then_branch (GRAPH)");
}

TEST_CASE("external_data.onnx: external weights need no data file", "[onnx]") {
    const recording_builder b = build(ox::read_model_file(data_file("external_data.onnx")));
    const auto& w = b.find_tensor("w");
    CHECK(w.initializer);
    REQUIRE(w.shape.has_value());
    CHECK((*w.shape)[0].value == 256);
    CHECK((*w.shape)[1].value == 512);
}

TEST_CASE(
    "every prefix and every corrupted byte of a model is an error or a model, never a "
    "crash",
    "[onnx]") {
    const std::string bytes = read_bytes(data_file("conv_bn_relu.onnx"));
    REQUIRE(bytes.size() > 200);
    // The graph field spans all but the first and last few dozen bytes (ir_version and the
    // producer come before it, opset_import after), so a cut inside it is always truncated.
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        const std::string cut = bytes.substr(0, n);
        bool failed = false;
        try {
            build(read_bytes_as_model(cut));
        } catch (const ox::read_error&) {
            failed = true;
        }
        if (n >= 40 && n + 20 <= bytes.size()) CHECK(failed);
    }
    // Flipping bytes: any outcome but an escape of another exception type, or a crash.
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
        std::string bad = bytes;
        bad[i] = static_cast<char>(bad[i] ^ 0x5A);
        try {
            build(read_bytes_as_model(bad));
        } catch (const ox::read_error&) {
        }
    }
}

// ---- model-local functions (tests/plugins/onnx/onnx_fixture_models.hpp) ----------------------

namespace {

namespace fx = nnergy::onnx_fixtures;

recording_builder build_fixture(const fx::model_writer& w, const std::string& name = "m.onnx") {
    recording_builder b;
    ox::build_graph(read_bytes_as_model(w.model().SerializeAsString(), name), name, "m", b,
                    [](const std::string&) {});
    check_reserved(b);
    return b;
}

std::string build_error(const fx::model_writer& w, const std::string& name = "m.onnx") {
    try {
        build_fixture(w, name);
    } catch (const ox::read_error& e) {
        return e.what();
    }
    return "(no error)";
}

std::vector<std::string> tensor_names(const recording_builder& b,
                                      const std::vector<uint32_t>& ids) {
    std::vector<std::string> v;
    for (uint32_t id : ids) v.push_back(id == NNERGY_NO_TENSOR ? "" : b.tensors.at(id).name);
    return v;
}

}  // namespace

TEST_CASE("functions are inlined under the caller's name, across custom domains", "[onnx]") {
    const recording_builder b = build_fixture(fx::fn_inline());
    std::vector<std::string> names;
    for (const auto& n : b.nodes) {
        names.push_back(n.name);
        CHECK(n.domain.empty());  // no function-domain node is left
    }
    // The body's Constant became an initializer, not a node.
    CHECK(names == std::vector<std::string>{"block/lin1/gemm", "block/relu", "block/scale",
                                            "block/lin2/gemm", "head/gemm"});
    const auto& g1 = b.find_node("block/lin1/gemm");
    CHECK(tensor_names(b, g1.inputs) == std::vector<std::string>{"x", "w1"});
    CHECK(tensor_names(b, g1.outputs) == std::vector<std::string>{"block/h"});
    CHECK(g1.ints.at("transB") == 1);             // from the calling node
    CHECK(g1.floats.at("alpha") == Approx(1.0));  // the function's default
    CHECK(tensor_names(b, b.find_node("block/lin2/gemm").outputs) ==
          std::vector<std::string>{"b"});  // the formal output is the caller's
    CHECK(tensor_names(b, b.find_node("head/gemm").inputs) == std::vector<std::string>{"b", "w3"});
    const auto& c = b.find_tensor("block/c");
    CHECK(c.initializer);
    CHECK(c.constant);
    // The function's value_info declares the body's tensor under its new name.
    const auto& h = b.find_tensor("block/h");
    REQUIRE(h.shape.has_value());
    REQUIRE(h.shape->size() == 2);
    CHECK((*h.shape)[0].symbol == "batch");
    CHECK((*h.shape)[1].value == 32);
}

TEST_CASE("function attributes: the caller's, else the default, else omitted", "[onnx]") {
    fx::model_writer w = fx::fn_inline();
    auto& g = w.graph();
    g.clear_node();
    // Two calls of Linear: one gives alpha and omits transB, one gives neither.
    fx::attr_float(w.node("Linear", "a", {"x", "w1"}, {"t"}, fx::torch_lib), "alpha", 2.0f);
    w.node("Linear", "a", {"t", "w2"}, {"y"}, fx::torch_lib);
    const recording_builder b = build_fixture(w);
    REQUIRE(b.nodes.size() == 2);
    CHECK(b.nodes[0].name == "a/gemm");
    CHECK(b.nodes[0].floats.at("alpha") == Approx(2.0));
    CHECK(b.nodes[0].ints.count("transB") == 0);
    // Two call sites of one name still get distinct prefixes.
    CHECK(b.nodes[1].name == "a#2/gemm");
    CHECK(b.nodes[1].floats.at("alpha") == Approx(1.0));
}

TEST_CASE("function overloads, omitted outputs and optional inputs", "[onnx]") {
    fx::model_writer w(18);
    w.import_domain("pkg.test", 1);
    w.input("x", {"batch", 4});
    auto& fa = w.function("pkg.test", "F", {"X", "B"}, {"Y", "Z"}, 18);
    fx::set_overload(fa, "relu");
    fx::add_node(fa, "Relu", "act", {"X"}, {"Y"});
    fx::add_node(fa, "Neg", "neg", {"Y"}, {"Z"});
    auto& fb = w.function("pkg.test", "F", {"X"}, {"Y"}, 18);
    fx::set_overload(fb, "sigmoid");
    fx::add_node(fb, "Sigmoid", "act", {"X"}, {"Y"});
    fx::set_overload(w.node("F", "first", {"x"}, {"t"}, "pkg.test"), "relu");
    fx::set_overload(w.node("F", "second", {"t"}, {"y"}, "pkg.test"), "sigmoid");
    w.output("y");
    const recording_builder b = build_fixture(w);
    REQUIRE(b.nodes.size() == 3);
    CHECK(b.find_node("first/act").op == "Relu");
    CHECK(b.find_node("second/act").op == "Sigmoid");
    // The output the caller left out keeps a private name inside the call.
    CHECK(tensor_names(b, b.find_node("first/neg").outputs) == std::vector<std::string>{"first/Z"});
    // A node naming no overload calls no overloaded function: a missing body.
    w.node("F", "third", {"y"}, {"z"}, "pkg.test");
    CHECK_THAT(build_error(w), Catch::Contains("node 'third' (pkg.test.F): domain 'pkg.test' "
                                               "holds the model's functions, but none is named "
                                               "'F'"));
}

TEST_CASE("bad functions are errors naming the file, the node and the function", "[onnx]") {
    using Catch::Contains;
    CHECK_THAT(build_error(fx::fn_recursive(), "r.onnx"),
               Contains("r.onnx: node 'outer/g_call/f_call' (pkg.test.F, in function "
                        "pkg.test::F -> pkg.test::G): calls function 'pkg.test::F' recursively "
                        "(function chain pkg.test::F -> pkg.test::G -> pkg.test::F)"));
    CHECK_THAT(build_error(fx::fn_missing_body()),
               Contains("m.onnx: node 'b' (pkg.test.Gone): domain 'pkg.test' holds the model's "
                        "functions, but none is named 'Gone'"));
    CHECK_THAT(build_error(fx::fn_undefined_attribute()),
               Contains("node 'call/leaky' (LeakyRelu, in function pkg.test::F): attribute "
                        "'alpha' refers to 'slope', which function 'pkg.test::F' does not "
                        "declare"));
    CHECK_THAT(build_error(fx::fn_too_many_inputs()),
               Contains("node 'call' (pkg.test.F): calls function 'pkg.test::F' with 2 inputs "
                        "and 1 outputs, but it declares 1 and 1"));
    CHECK_THAT(build_error(fx::fn_duplicate()),
               Contains("m.onnx: function 'pkg.test::F' is defined twice"));
    CHECK_THAT(build_error(fx::fn_blowup()),
               Contains("m.onnx: inlining the model's functions makes more than 250000 nodes "
                        "and calls (at node 'call', a call of 'pkg.test::F30')"));
    CHECK_THAT(build_error(fx::fn_opset_mismatch()),
               Contains("function 'pkg.test::F' imports opset 17 of the default ONNX domain "
                        "but the model imports 18"));
    // Nesting is bounded, also where the chain's lower part was measured first, and a chain
    // far deeper than the stack allows is refused, not followed.
    CHECK(build_error(fx::fn_deep(64)) == "(no error)");
    CHECK_THAT(build_error(fx::fn_deep(65)),
               Contains("m.onnx: functions nest more than 64 calls deep"));
    CHECK_THAT(build_error(fx::fn_deep(20'000)),
               Contains("m.onnx: functions nest more than 64 calls deep"));
    CHECK_THAT(build_error(fx::relu_at(23)),
               Contains("opset 23 of the default ONNX domain is newer than the newest "
                        "supported (22)"));
}

TEST_CASE("a node of a domain without functions stays an unknown op", "[onnx]") {
    fx::model_writer w(18);
    w.import_domain("com.microsoft", 1);
    w.input("x", {"batch", 4});
    w.node("FastGelu", "fast_gelu", {"x"}, {"y"}, "com.microsoft");
    w.output("y");
    const recording_builder b = build_fixture(w);
    REQUIRE(b.nodes.size() == 1);
    CHECK(b.nodes[0].domain == "com.microsoft");
}

TEST_CASE("modern exports: float initializers hold the parameters the README states", "[onnx]") {
    // Summed from the file with the protobuf classes alone, then through the reader.
    const std::vector<std::pair<std::string, uint64_t>> files = {
        {"vit_b_16_classic_opset17.onnx", 86'495'464},
        {"resnet50_dynamo_opset20.onnx", 25'503'912},
        {"gpt2_dynamo_opset20.onnx", 124'320'008}};
    for (const auto& [file, expected] : files) {
        const std::string path = data_file("modern/" + file);
        onnx::ModelProto m;
        std::ifstream in(path, std::ios::binary);
        REQUIRE(m.ParseFromIstream(&in));
        uint64_t floats = 0;
        for (const auto& t : m.graph().initializer()) {
            const int32_t dt = t.data_type();
            if (dt != onnx::TensorProto::FLOAT && dt != onnx::TensorProto::FLOAT16 &&
                dt != onnx::TensorProto::BFLOAT16 && dt != onnx::TensorProto::DOUBLE)
                continue;
            uint64_t n = 1;
            for (int64_t d : t.dims()) n *= static_cast<uint64_t>(d);
            floats += n;
        }
        CHECK(floats == expected);

        const recording_builder b = build(ox::read_model_file(path));
        uint64_t read = 0;
        for (const auto& t : b.tensors) {
            if (!t.initializer || t.constant || !t.shape) continue;
            if (t.dtype != NNERGY_DTYPE_FLOAT32 && t.dtype != NNERGY_DTYPE_FLOAT16 &&
                t.dtype != NNERGY_DTYPE_BFLOAT16 && t.dtype != NNERGY_DTYPE_FLOAT64)
                continue;
            uint64_t n = 1;
            for (const auto& d : *t.shape) n *= static_cast<uint64_t>(d.value);
            read += n;
        }
        CHECK(read == expected);
    }
}

// ---- the reader's own decoding against protobuf's generated classes --------------------------

namespace {

/// Compares what the reader decoded with what the ONNX protobuf classes parse from the same
/// bytes, field by field, for every part of a model the reader keeps.
struct decoded_against_protobuf {
    std::string file;

    void type(const onnx::TypeProto& want, const ox::proto::type_proto& got,
              const std::string& where) const {
        INFO(file << ": " << where);
        REQUIRE(got.tensor == want.has_tensor_type());
        if (!got.tensor) return;
        const auto& t = want.tensor_type();
        CHECK(got.elem_type == t.elem_type());
        REQUIRE(got.has_shape == t.has_shape());
        REQUIRE(got.dims.size() == static_cast<std::size_t>(t.shape().dim_size()));
        for (int i = 0; i < t.shape().dim_size(); ++i) {
            const auto& d = t.shape().dim(i);
            const auto& g = got.dims[static_cast<std::size_t>(i)];
            CHECK(g.value.has_value() == d.has_dim_value());
            if (g.value) CHECK(*g.value == d.dim_value());
            CHECK(g.param.has_value() == d.has_dim_param());
            if (g.param) CHECK(*g.param == d.dim_param());
        }
    }
    void value_infos(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& want,
                     const std::vector<ox::proto::value_info>& got, const std::string& what) const {
        REQUIRE(got.size() == static_cast<std::size_t>(want.size()));
        for (int i = 0; i < want.size(); ++i) {
            CHECK(got[static_cast<std::size_t>(i)].name == want[i].name());
            type(want[i].type(), got[static_cast<std::size_t>(i)].type,
                 what + " " + want[i].name());
        }
    }
    void tensor(const onnx::TensorProto& want, const ox::proto::tensor& got) const {
        INFO(file << ": tensor " << want.name());
        CHECK(got.name == want.name());
        CHECK(got.data_type == want.data_type());
        CHECK(got.dims == std::vector<int64_t>(want.dims().begin(), want.dims().end()));
        CHECK(got.has_raw == want.has_raw_data());
        CHECK(got.raw_size == want.raw_data().size());
        if (want.raw_data().size() <= ox::proto::tensor::max_kept_raw)
            CHECK(got.raw == want.raw_data());
        CHECK(got.external == (want.data_location() == onnx::TensorProto::EXTERNAL ||
                               want.external_data_size() > 0));
        auto count = [&](int field) {
            auto it = got.typed_counts.find(field);
            return it == got.typed_counts.end() ? 0 : static_cast<int>(it->second);
        };
        CHECK(count(4) == want.float_data_size());
        CHECK(count(5) == want.int32_data_size());
        CHECK(count(6) == want.string_data_size());
        CHECK(count(7) == want.int64_data_size());
        CHECK(count(10) == want.double_data_size());
        CHECK(count(11) == want.uint64_data_size());
        if (want.float_data_size() > 0) CHECK(got.first_float == want.float_data(0));
        if (want.double_data_size() > 0) CHECK(got.first_double == want.double_data(0));
    }
    void node(const onnx::NodeProto& want, const ox::proto::node& got) const {
        INFO(file << ": node " << want.name() << " (" << want.op_type() << ")");
        CHECK(got.name == want.name());
        CHECK(got.op_type == want.op_type());
        CHECK(got.domain == want.domain());
        CHECK(got.input == std::vector<std::string>(want.input().begin(), want.input().end()));
        CHECK(got.output == std::vector<std::string>(want.output().begin(), want.output().end()));
        REQUIRE(got.attributes.size() == static_cast<std::size_t>(want.attribute_size()));
        for (int i = 0; i < want.attribute_size(); ++i) {
            const onnx::AttributeProto& a = want.attribute(i);
            const ox::proto::attribute& b = got.attributes[static_cast<std::size_t>(i)];
            INFO("attribute " << a.name());
            CHECK(b.name == a.name());
            CHECK(b.ref_attr_name == a.ref_attr_name());
            CHECK(b.type == static_cast<int32_t>(a.type()));
            CHECK(ox::proto::attribute_type_name(b.type) ==
                  onnx::AttributeProto::AttributeType_Name(a.type()));
            CHECK(b.i == a.i());
            CHECK(b.f == a.f());
            CHECK(b.s == a.s());
            CHECK(b.ints == std::vector<int64_t>(a.ints().begin(), a.ints().end()));
            CHECK(b.floats == std::vector<float>(a.floats().begin(), a.floats().end()));
            REQUIRE(b.t.has_value() == a.has_t());
            if (b.t) tensor(a.t(), *b.t);
        }
    }
    void model(const onnx::ModelProto& want, const ox::model_data& got) const {
        INFO(file);
        CHECK(got.model.ir_version == want.ir_version());
        REQUIRE(got.model.opset_import.size() ==
                static_cast<std::size_t>(want.opset_import_size()));
        for (int i = 0; i < want.opset_import_size(); ++i) {
            CHECK(got.model.opset_import[static_cast<std::size_t>(i)].domain ==
                  want.opset_import(i).domain());
            CHECK(got.model.opset_import[static_cast<std::size_t>(i)].version ==
                  want.opset_import(i).version());
        }
        CHECK(got.model.producer_name == want.producer_name());
        CHECK(got.model.producer_version == want.producer_version());
        REQUIRE(got.model.functions.size() == static_cast<std::size_t>(want.functions_size()));
        for (int i = 0; i < want.functions_size(); ++i) {
            const onnx::FunctionProto& f = want.functions(i);
            const ox::proto::function& h = got.model.functions[static_cast<std::size_t>(i)];
            CHECK(h.name == f.name());
            CHECK(h.domain == f.domain());
            CHECK(h.input == std::vector<std::string>(f.input().begin(), f.input().end()));
            CHECK(h.output == std::vector<std::string>(f.output().begin(), f.output().end()));
            CHECK(h.attribute ==
                  std::vector<std::string>(f.attribute().begin(), f.attribute().end()));
            REQUIRE(h.nodes.size() == static_cast<std::size_t>(f.node_size()));
            for (int j = 0; j < f.node_size(); ++j)
                node(f.node(j), h.nodes[static_cast<std::size_t>(j)]);
        }
        const onnx::GraphProto& g = want.graph();
        CHECK(got.graph.name == g.name());
        REQUIRE(got.graph.nodes.size() == static_cast<std::size_t>(g.node_size()));
        for (int i = 0; i < g.node_size(); ++i)
            node(g.node(i), got.graph.nodes[static_cast<std::size_t>(i)]);
        value_infos(g.input(), got.graph.inputs, "input");
        value_infos(g.output(), got.graph.outputs, "output");
        value_infos(g.value_info(), got.graph.value_infos, "value_info");
        REQUIRE(got.initializers.size() == static_cast<std::size_t>(g.initializer_size()));
        for (int i = 0; i < g.initializer_size(); ++i) {
            const onnx::TensorProto& t = g.initializer(i);
            const ox::tensor_summary& s = got.initializers[static_cast<std::size_t>(i)];
            INFO("initializer " << t.name());
            CHECK(s.name == t.name());
            CHECK(s.data_type == t.data_type());
            CHECK(s.dims == std::vector<int64_t>(t.dims().begin(), t.dims().end()));
            CHECK(s.raw_size == t.raw_data().size());
        }
        REQUIRE(got.graph.sparse_initializers.size() ==
                static_cast<std::size_t>(g.sparse_initializer_size()));
        for (int i = 0; i < g.sparse_initializer_size(); ++i) {
            const auto& s = g.sparse_initializer(i);
            tensor(s.values(), got.graph.sparse_initializers[static_cast<std::size_t>(i)].values);
            CHECK(got.graph.sparse_initializers[static_cast<std::size_t>(i)].dims ==
                  std::vector<int64_t>(s.dims().begin(), s.dims().end()));
        }
    }
};

std::vector<std::string> onnx_test_files() {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(
             std::string(NNERGY_TEST_SOURCE_DIR) + "/tests/data/onnx"))
        if (e.is_regular_file() && e.path().extension() == ".onnx")
            files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

TEST_CASE("the reader decodes every test model as protobuf's generated classes do", "[onnx]") {
    std::size_t compared = 0;
    for (const std::string& path : onnx_test_files()) {
        const std::string bytes = read_bytes(path);
        onnx::ModelProto want;
        const bool parsed = want.ParseFromString(bytes);
        std::optional<ox::model_data> got;
        std::string error;
        try {
            got.emplace(ox::read_model(bytes, path));
        } catch (const ox::read_error& e) {
            error = e.what();
        }
        INFO(path << ": " << error);
        if (!parsed) {
            CHECK_FALSE(got.has_value());  // what protobuf refuses, the reader refuses too
            continue;
        }
        if (!want.has_ir_version() || !want.has_graph()) {
            CHECK_FALSE(got.has_value());
            continue;
        }
        REQUIRE(got.has_value());
        decoded_against_protobuf{path}.model(want, *got);
        ++compared;
    }
    CHECK(compared >= 20);
    // The models written for the function tests, whose IR 10 fields the linked classes keep
    // among their unknown fields.
    const fx::model_writer w = fx::fn_inline();
    const std::string bytes = w.model().SerializeAsString();
    decoded_against_protobuf{"fn_inline"}.model(w.model(), ox::read_model(bytes, "m"));
}

TEST_CASE("protobuf's encoding rules: packed or not, repeated, merged, unknown, malformed",
          "[onnx]") {
    namespace pb = ox::proto;
    auto varint = [](uint64_t v) {
        std::string s;
        do {
            s += static_cast<char>((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
            v >>= 7;
        } while (v);
        return s;
    };
    auto tag = [&](uint32_t field, uint32_t wire) { return varint(uint64_t{field} << 3 | wire); };
    auto bytes_field = [&](uint32_t field, const std::string& b) {
        return tag(field, 2) + varint(b.size()) + b;
    };

    // AttributeProto: ints unpacked and packed in one message, a later i replacing an earlier,
    // an unknown field of every wire type (a group included), a float.
    pb::attribute a;
    std::string f32(4, '\0');
    const float half = 0.5f;
    std::memcpy(f32.data(), &half, 4);
    const std::string attr =
        bytes_field(1, "axes") + tag(8, 0) + varint(3) + bytes_field(8, varint(1) + varint(300)) +
        tag(3, 0) + varint(7) + tag(3, 0) + varint(static_cast<uint64_t>(-2)) + tag(99, 0) +
        varint(1) + tag(98, 1) + std::string(8, 'x') + tag(97, 5) + std::string(4, 'y') +
        tag(96, 3) + tag(1, 0) + varint(5) + tag(96, 4) + tag(2, 5) + f32 + tag(20, 0) + varint(7);
    pb::decode(attr, a);
    CHECK(a.name == "axes");
    CHECK(a.ints == std::vector<int64_t>{3, 1, 300});
    CHECK(a.i == -2);
    CHECK(a.f == 0.5f);
    CHECK(a.type == pb::attr_ints);
    // An enum value onnx.proto does not define leaves the type unset.
    pb::attribute unknown_type;
    pb::decode(tag(20, 0) + varint(99), unknown_type);
    CHECK(unknown_type.type == pb::attr_undefined);
    // A field of the wrong wire type is an unknown field, skipped.
    pb::attribute wrong_wire;
    pb::decode(tag(1, 0) + varint(5) + bytes_field(1, "kept"), wrong_wire);
    CHECK(wrong_wire.name == "kept");

    // A singular message that repeats is merged: the dims of both halves of a tensor type.
    pb::type_proto t;
    const std::string dim4 = bytes_field(1, tag(1, 0) + varint(4));
    const std::string batch = bytes_field(1, bytes_field(2, "batch"));
    pb::decode(bytes_field(1, tag(1, 0) + varint(1) + bytes_field(2, dim4)) +
                   bytes_field(1, bytes_field(2, batch)),
               t);
    REQUIRE(t.tensor);
    CHECK(t.elem_type == 1);
    REQUIRE(t.dims.size() == 2);
    CHECK(*t.dims[0].value == 4);
    CHECK(*t.dims[1].param == "batch");
    // A oneof keeps the member set last.
    pb::type_proto seq;
    pb::decode(bytes_field(1, tag(1, 0) + varint(1)) + bytes_field(4, ""), seq);
    CHECK_FALSE(seq.tensor);

    // Malformed: a length past the end, a varint of eleven bytes, field number 0, wire type 7,
    // an end tag with no group, a group closed by another field's end tag.
    for (const std::string& bad :
         {bytes_field(1, "abc").substr(0, 4), tag(3, 0) + std::string(10, '\xFF') + "\x01",
          tag(0, 0) + varint(1), std::string(1, static_cast<char>(1 << 3 | 7)), tag(5, 4),
          tag(9, 3) + tag(8, 4), tag(8, 2) + varint(5) + varint(300)}) {
        pb::attribute x;
        CHECK_THROWS_AS(pb::decode(bad, x), pb::malformed);
    }
}

namespace {

/// Writes `bytes` to a temporary file and reads it through the file path of the reader: no
/// whole-file read, a window of `window` bytes, initializers above `large_tensor` bytes read
/// field by field.
ox::model_data read_through_window(const std::string& bytes, std::size_t window,
                                   std::size_t large_tensor) {
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("nnergy-onnx-window-" + std::to_string(::getpid()) + ".onnx"))
                                 .string();
    {
        std::ofstream out(path, std::ios::binary);
        out << bytes;
    }
    struct remover {
        std::string path;
        int fd;
        ~remover() {
            if (fd >= 0) ::close(fd);
            std::filesystem::remove(path);
        }
    } const cleanup{path, ::open(path.c_str(), O_RDONLY)};
    REQUIRE(cleanup.fd >= 0);
    ox::detail::byte_source source(cleanup.fd, bytes.size(), path, 0, window);
    return ox::read_model(source, path, large_tensor);
}

void check_same_initializers(const ox::model_data& a, const ox::model_data& b) {
    REQUIRE(a.initializers.size() == b.initializers.size());
    for (std::size_t i = 0; i < a.initializers.size(); ++i) {
        const ox::tensor_summary& x = a.initializers[i];
        const ox::tensor_summary& y = b.initializers[i];
        INFO("initializer " << x.name);
        CHECK(x.name == y.name);
        CHECK(x.data_type == y.data_type);
        CHECK(x.dims == y.dims);
        CHECK(x.external == y.external);
        CHECK(x.has_raw == y.has_raw);
        CHECK(x.raw_size == y.raw_size);
        CHECK(x.values_complete == y.values_complete);
        if (x.values_complete) CHECK(x.small_values == y.small_values);
        for (int field : {4, 5, 6, 7, 10, 11}) {
            auto count = [field](const ox::tensor_summary& t) {
                auto it = t.typed_counts.find(field);
                return it == t.typed_counts.end() ? uint64_t{0} : it->second;
            };
            CHECK(count(x) == count(y));
        }
    }
}

}  // namespace

TEST_CASE("a file read through a window reads as the same bytes held whole", "[onnx]") {
    // Initializers of every data layout, large and small.
    onnx::TensorProto w;
    w.set_name("w");
    w.set_data_type(onnx::TensorProto::FLOAT);
    w.add_dims(4);
    w.add_dims(1000);
    w.set_raw_data(std::string(16000, '\x01'));
    onnx::ModelProto m = matmul_model(w);
    auto* g = m.mutable_graph();
    auto* floats = g->add_initializer();
    floats->set_name("floats");
    floats->set_data_type(onnx::TensorProto::FLOAT);
    floats->add_dims(3000);
    for (int i = 0; i < 3000; ++i) floats->add_float_data(static_cast<float>(i));
    auto* longs = g->add_initializer();
    longs->set_name("longs");
    longs->set_data_type(onnx::TensorProto::INT64);
    longs->add_dims(2000);
    for (int i = 0; i < 2000; ++i) longs->add_int64_data(-i);
    auto* doubles = g->add_initializer();
    doubles->set_name("doubles");
    doubles->set_data_type(onnx::TensorProto::DOUBLE);
    doubles->add_dims(500);
    for (int i = 0; i < 500; ++i) doubles->add_double_data(i * 0.5);
    auto* shape = g->add_initializer();
    shape->set_name("shape");
    shape->set_data_type(onnx::TensorProto::INT64);
    shape->add_dims(3);
    for (int64_t v : {1, -1, 64}) shape->add_int64_data(v);

    std::vector<std::string> models{m.SerializeAsString()};
    for (const std::string& path : onnx_test_files()) models.push_back(read_bytes(path));
    std::size_t compared = 0;
    for (const std::string& bytes : models) {
        std::optional<ox::model_data> whole;
        try {
            whole.emplace(ox::read_model(bytes, "whole"));
        } catch (const ox::read_error&) {
        }
        for (std::size_t window : {16, 100, 4096}) {
            INFO("window " << window << ", " << bytes.size() << " bytes");
            std::optional<ox::model_data> windowed;
            try {
                windowed.emplace(read_through_window(bytes, window, 256));
            } catch (const ox::read_error&) {
            }
            REQUIRE(windowed.has_value() == whole.has_value());
            if (!whole) continue;
            check_same_initializers(*whole, *windowed);
            // The same graph, or the same error building it (some test files are bad).
            auto outcome = [](const ox::model_data& d) {
                try {
                    return std::to_string(build(d).nodes.size()) + " nodes";
                } catch (const ox::read_error& e) {
                    return std::string(e.what());
                }
            };
            CHECK(outcome(*whole) == outcome(*windowed));
            ++compared;
        }
    }
    CHECK(compared >= 60);

    // Every prefix of a model with large initializers fails through the window as held whole.
    const std::string& bytes = models.front();
    for (std::size_t n = 0; n < bytes.size(); n += 97) {
        const std::string cut = bytes.substr(0, n);
        bool whole_failed = false, windowed_failed = false;
        try {
            ox::read_model(cut, "whole");
        } catch (const ox::read_error&) {
            whole_failed = true;
        }
        try {
            read_through_window(cut, 100, 256);
        } catch (const ox::read_error&) {
            windowed_failed = true;
        }
        INFO("cut at " << n);
        CHECK(whole_failed == windowed_failed);
    }
}
