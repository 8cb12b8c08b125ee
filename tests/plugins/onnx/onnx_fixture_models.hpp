// SPDX-License-Identifier: Apache-2.0
// The ONNX test models that are written at test time (not committed): model-local functions,
// custom domains, opsets 18 to 23 and the bad inputs of the paths these open. Each is described
// where it is built; the unit tests read them in memory and tests/integration/onnx runs the
// real nnergy on the files make_onnx_fixtures writes.
#ifndef NNERGY_TESTS_ONNX_FIXTURE_MODELS_HPP
#define NNERGY_TESTS_ONNX_FIXTURE_MODELS_HPP

#include <string>
#include <utility>
#include <vector>

#include "onnx_fixture_writer.hpp"

namespace nnergy::onnx_fixtures {

inline constexpr const char* torch_lib = "pkg.onnxscript.torch_lib";
/// A domain named after a module path, as the dynamo exporter names module functions.
inline constexpr const char* module_domain = "torch.nn.modules.container.Sequential";

/// fn_inline: y = Linear(Block(x)) through two function domains, with attribute references.
///   torch_lib::Linear(X, W) -> Y: Gemm(X, W), transB and alpha from the caller (alpha has the
///     default 1.0, transB none: a call that omits transB gets a Gemm without it);
///   module_domain::Block(X, W1, W2) -> Y: Linear(X, W1, transB=1) -> h, Relu, a Constant
///     scalar 0.5 (a body Constant: an initializer marked constant), Mul, Linear(., W2,
///     transB=1). Its value_info declares h as [batch, 32].
/// x [batch, 16]; w1 [32, 16], w2 [8, 32], w3 [4, 8] (external, absent).
/// Params 32·16 + 8·32 + 4·8 = 800. MACs per sample 16·32 + 32·8 + 8·4 = 800.
/// Were transB not resolved, the first Gemm ([b,16]·[32,16]) would not infer.
inline model_writer fn_inline() {
    model_writer w(18);
    w.import_domain(torch_lib, 1);
    w.import_domain(module_domain, 1);
    w.input("x", {"batch", 16});
    w.weight("w1", {32, 16});
    w.weight("w2", {8, 32});
    w.weight("w3", {4, 8});
    auto& lin = w.function(torch_lib, "Linear", {"X", "W"}, {"Y"}, 18);
    lin.add_attribute("transB");
    add_attribute_default(lin, float_attribute("alpha", 1.0f));
    auto& gemm = add_node(lin, "Gemm", "gemm", {"X", "W"}, {"Y"});
    attr_ref(gemm, "transB", "transB", onnx::AttributeProto::INT);
    attr_ref(gemm, "alpha", "alpha", onnx::AttributeProto::FLOAT);

    auto& block = w.function(module_domain, "Block", {"X", "W1", "W2"}, {"Y"}, 18);
    attr_int(add_node(block, "Linear", "lin1", {"X", "W1"}, {"h"}, torch_lib), "transB", 1);
    add_node(block, "Relu", "relu", {"h"}, {"r"});
    attr_float_tensor(add_node(block, "Constant", "half", {}, {"c"}), "value", {}, {0.5f});
    add_node(block, "Mul", "scale", {"r", "c"}, {"s"});
    attr_int(add_node(block, "Linear", "lin2", {"s", "W2"}, {"Y"}, torch_lib), "transB", 1);
    add_function_value_info(block, value_info("h", onnx::TensorProto::FLOAT, {"batch", 32}));

    w.node("Block", "block", {"x", "w1", "w2"}, {"b"}, module_domain);
    attr_int(w.node("Linear", "head", {"b", "w3"}, {"y"}, torch_lib), "transB", 1);
    w.output("y");
    return w;
}

/// fn_recursive: F calls G, which calls F again.
inline model_writer fn_recursive() {
    model_writer w(18);
    w.import_domain("pkg.test", 1);
    w.input("x", {"batch", 4});
    auto& f = w.function("pkg.test", "F", {"X"}, {"Y"}, 18);
    add_node(f, "G", "g_call", {"X"}, {"Y"}, "pkg.test");
    auto& g = w.function("pkg.test", "G", {"X"}, {"Y"}, 18);
    add_node(g, "Relu", "relu", {"X"}, {"t"});
    add_node(g, "F", "f_call", {"t"}, {"Y"}, "pkg.test");
    w.node("F", "outer", {"x"}, {"y"}, "pkg.test");
    w.output("y");
    return w;
}

/// fn_deep: F0 calls F1, ..., F(depth-1) is a Relu: functions nested `depth` calls deep. The
/// graph calls F(depth-1) first, so the chain's depth is first measured from its bottom part.
inline model_writer fn_deep(int depth) {
    model_writer w(18);
    w.import_domain("pkg.test", 1);
    w.input("x", {"batch", 4});
    for (int i = 0; i < depth; ++i) {
        auto& f = w.function("pkg.test", "F" + std::to_string(i), {"X"}, {"Y"}, 18);
        if (i + 1 < depth)
            add_node(f, "F" + std::to_string(i + 1), "call", {"X"}, {"Y"}, "pkg.test");
        else
            add_node(f, "Relu", "relu", {"X"}, {"Y"});
    }
    w.node("F" + std::to_string(depth - 1), "bottom", {"x"}, {"t"}, "pkg.test");
    w.node("F0", "top", {"t"}, {"y"}, "pkg.test");
    w.output("y");
    return w;
}

/// fn_missing_body: domain pkg.test holds function F, but node 'b' calls pkg.test::Gone.
inline model_writer fn_missing_body() {
    model_writer w(18);
    w.import_domain("pkg.test", 1);
    w.input("x", {"batch", 4});
    auto& f = w.function("pkg.test", "F", {"X"}, {"Y"}, 18);
    add_node(f, "Relu", "relu", {"X"}, {"Y"});
    w.node("F", "a", {"x"}, {"t"}, "pkg.test");
    w.node("Gone", "b", {"t"}, {"y"}, "pkg.test");
    w.output("y");
    return w;
}

/// fn_undefined_attribute: a body node refers to attribute 'slope'; F declares only 'alpha'.
inline model_writer fn_undefined_attribute() {
    model_writer w(18);
    w.import_domain("pkg.test", 1);
    w.input("x", {"batch", 4});
    auto& f = w.function("pkg.test", "F", {"X"}, {"Y"}, 18);
    f.add_attribute("alpha");
    attr_ref(add_node(f, "LeakyRelu", "leaky", {"X"}, {"Y"}), "alpha", "slope",
             onnx::AttributeProto::FLOAT);
    attr_float(w.node("F", "call", {"x"}, {"y"}, "pkg.test"), "alpha", 0.1f);
    w.output("y");
    return w;
}

/// fn_too_many_inputs: F(X) -> Y called with two inputs.
inline model_writer fn_too_many_inputs() {
    model_writer w(18);
    w.import_domain("pkg.test", 1);
    w.input("x", {"batch", 4});
    auto& f = w.function("pkg.test", "F", {"X"}, {"Y"}, 18);
    add_node(f, "Relu", "relu", {"X"}, {"Y"});
    w.node("F", "call", {"x", "x"}, {"y"}, "pkg.test");
    w.output("y");
    return w;
}

/// fn_duplicate: pkg.test::F defined twice.
inline model_writer fn_duplicate() {
    model_writer w(18);
    w.import_domain("pkg.test", 1);
    w.input("x", {"batch", 4});
    for (int i = 0; i < 2; ++i)
        add_node(w.function("pkg.test", "F", {"X"}, {"Y"}, 18), "Relu", "relu", {"X"}, {"Y"});
    w.node("F", "call", {"x"}, {"y"}, "pkg.test");
    w.output("y");
    return w;
}

/// fn_blowup: F0 is a Relu, F(k) calls F(k-1) twice; the graph calls F30: 2^30 Relus.
inline model_writer fn_blowup() {
    model_writer w(18);
    w.import_domain("pkg.test", 1);
    w.input("x", {"batch", 4});
    add_node(w.function("pkg.test", "F0", {"X"}, {"Y"}, 18), "Relu", "relu", {"X"}, {"Y"});
    for (int k = 1; k <= 30; ++k) {
        const std::string inner = "F" + std::to_string(k - 1);
        auto& f = w.function("pkg.test", "F" + std::to_string(k), {"X"}, {"Y"}, 18);
        add_node(f, inner, "first", {"X"}, {"t"}, "pkg.test");
        add_node(f, inner, "second", {"t"}, {"Y"}, "pkg.test");
    }
    w.node("F30", "call", {"x"}, {"y"}, "pkg.test");
    w.output("y");
    return w;
}

/// fn_opset_mismatch: a function importing opset 17 of the default domain in an opset-18 model.
inline model_writer fn_opset_mismatch() {
    model_writer w(18);
    w.import_domain("pkg.test", 1);
    w.input("x", {"batch", 4});
    add_node(w.function("pkg.test", "F", {"X"}, {"Y"}, 17), "Relu", "relu", {"X"}, {"Y"});
    w.node("F", "call", {"x"}, {"y"}, "pkg.test");
    w.output("y");
    return w;
}

/// opset22 and opset23: one Relu; 22 is the newest opset read, 23 is refused.
inline model_writer relu_at(int64_t opset) {
    model_writer w(opset);
    w.input("x", {"batch", 4});
    w.node("Relu", "relu", {"x"}, {"y"});
    w.output("y");
    return w;
}

/// split18_num_outputs: Split-18 with num_outputs 3 but two outputs (x [2, 12], axis 1).
inline model_writer split18_num_outputs() {
    model_writer w(18);
    w.input("x", {2, 12});
    auto& s = w.node("Split", "split", {"x"}, {"a", "b"});
    attr_int(s, "axis", 1);
    attr_int(s, "num_outputs", 3);
    w.node("Add", "add", {"a", "b"}, {"y"});
    w.output("y");
    return w;
}

/// reducemean18_axes: ReduceMean-18 with axes as an input: x [batch, 8, 16], axes [1],
/// keepdims 0 -> [batch, 16]; then MatMul with w [16, 4]. MACs per sample 16·4 = 64, params 64.
/// Were the axes input ignored (every axis reduced), the MatMul would not infer.
inline model_writer reducemean18_axes(int64_t axis = 1) {
    model_writer w(18);
    w.input("x", {"batch", 8, 16});
    w.int64s("axes", {axis});
    w.weight("w", {16, 4});
    attr_int(w.node("ReduceMean", "reduce", {"x", "axes"}, {"r"}), "keepdims", 0);
    w.node("MatMul", "proj", {"r", "w"}, {"y"});
    w.output("y");
    return w;
}

/// softmax_axis_out_of_range: Softmax axis 3 on a rank-3 tensor (valid: -3 to 2).
inline model_writer softmax_axis_out_of_range() {
    model_writer w(18);
    w.input("x", {"batch", 8, 16});
    attr_int(w.node("Softmax", "softmax", {"x"}, {"y"}), "axis", 3);
    w.output("y");
    return w;
}

/// element_count_overflow: x [2^40, 2^40, 2^20] holds 2^100 elements.
inline model_writer element_count_overflow() {
    model_writer w(18);
    w.input("x", {int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 20});
    w.node("Relu", "relu", {"x"}, {"y"});
    w.output("y");
    return w;
}

/// gelu_opset17 (Gelu exists from opset 20), gelu_opset20 (it does), groupnorm_opset17
/// (GroupNormalization exists from opset 18).
inline model_writer gelu_at(int64_t opset) {
    model_writer w(opset);
    w.input("x", {"batch", 8});
    w.node("Gelu", "gelu", {"x"}, {"y"});
    w.output("y");
    return w;
}
inline model_writer groupnorm_opset17() {
    model_writer w(17);
    w.input("x", {"batch", 8, 4, 4});
    w.weight("scale", {2});
    w.weight("bias", {2});
    attr_int(w.node("GroupNormalization", "groupnorm", {"x", "scale", "bias"}, {"y"}), "num_groups",
             2);
    w.output("y");
    return w;
}

/// Every fixture, by file stem.
inline std::vector<std::pair<std::string, model_writer>> all_fixtures() {
    std::vector<std::pair<std::string, model_writer>> v;
    v.emplace_back("fn_inline", fn_inline());
    v.emplace_back("fn_recursive", fn_recursive());
    v.emplace_back("fn_missing_body", fn_missing_body());
    v.emplace_back("fn_undefined_attribute", fn_undefined_attribute());
    v.emplace_back("fn_too_many_inputs", fn_too_many_inputs());
    v.emplace_back("fn_duplicate", fn_duplicate());
    v.emplace_back("fn_blowup", fn_blowup());
    v.emplace_back("fn_opset_mismatch", fn_opset_mismatch());
    v.emplace_back("opset22", relu_at(22));
    v.emplace_back("opset23", relu_at(23));
    v.emplace_back("split18_num_outputs", split18_num_outputs());
    v.emplace_back("reducemean18_axes", reducemean18_axes());
    v.emplace_back("reducemean18_axes_out_of_range", reducemean18_axes(3));
    v.emplace_back("softmax_axis_out_of_range", softmax_axis_out_of_range());
    v.emplace_back("element_count_overflow", element_count_overflow());
    v.emplace_back("gelu_opset17", gelu_at(17));
    v.emplace_back("gelu_opset20", gelu_at(20));
    v.emplace_back("groupnorm_opset17", groupnorm_opset17());
    return v;
}

}  // namespace nnergy::onnx_fixtures

#endif  // NNERGY_TESTS_ONNX_FIXTURE_MODELS_HPP
