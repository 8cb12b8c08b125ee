// SPDX-License-Identifier: Apache-2.0
// The fusion partitioner loaded as a plugin by the real host: small graphs built with the IR,
// bound, partitioned through nnergy::run_partitioner, and their kernels checked node by node.
// Expected kernels follow from the rules in configs/fusion/default.toml (docs/fusion-rules.md);
// each case says which rule or constraint decides it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/graph.hpp>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/registry.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path k_source_dir = NNERGY_TEST_SOURCE_DIR;
const fs::path k_default_rules = k_source_dir / "configs" / "fusion" / "default.toml";
const fs::path k_eager_rules = k_source_dir / "configs" / "fusion" / "pytorch-eager.toml";
const fs::path k_llama_block = k_source_dir / "configs" / "models" / "llama_block.json";
const fs::path k_bad_rules_dir = k_source_dir / "tests" / "data" / "fusion";

/// Builds a graph by tensor names; tensors that only nodes mention get their shapes inferred.
class model {
public:
    model& input(const std::string& name, std::vector<int64_t> shape) {
        g_.inputs.push_back(add(name, NNERGY_DTYPE_FLOAT32, std::move(shape)));
        return *this;
    }
    model& weight(const std::string& name, std::vector<int64_t> shape) {
        g_.tensors[add(name, NNERGY_DTYPE_FLOAT32, std::move(shape))].is_initializer = true;
        return *this;
    }
    /// An int64 constant with values (shape targets, indices, axes).
    model& ints(const std::string& name, std::vector<int64_t> shape, std::vector<int64_t> values) {
        nnergy::tensor& t = g_.tensors[add(name, NNERGY_DTYPE_INT64, std::move(shape))];
        t.is_initializer = true;
        t.int_values = std::move(values);
        return *this;
    }
    /// BatchNormalization `name` over `channels`, with its four weights named `name.scale`,
    /// `name.bias`, `name.mean` and `name.var`.
    model& batchnorm(const std::string& name, const std::string& in, const std::string& out,
                     int64_t channels) {
        std::vector<std::string> inputs{in};
        for (const char* w : {".scale", ".bias", ".mean", ".var"}) {
            weight(name + w, {channels});
            inputs.push_back(name + w);
        }
        return op(name, "BatchNormalization", inputs, {out});
    }
    model& op(const std::string& name, const std::string& op_type,
              const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
              std::vector<nnergy::attribute> attributes = {}, const std::string& domain = "") {
        nnergy::node n;
        n.name = name;
        n.op_type = op_type;
        n.domain = domain;
        for (const std::string& i : inputs)
            n.inputs.push_back(i.empty() ? NNERGY_NO_TENSOR : find_or_add(i));
        for (const std::string& o : outputs) n.outputs.push_back(find_or_add(o));
        n.attributes = std::move(attributes);
        g_.add_node(std::move(n));
        return *this;
    }
    model& output(const std::string& name) {
        g_.outputs.push_back(find_or_add(name));
        return *this;
    }
    /// Declares the shape and type of a tensor (outputs of ops the host does not know).
    model& declare(const std::string& name, std::vector<int64_t> shape) {
        nnergy::tensor& t = g_.tensors[find_or_add(name)];
        t.dtype = NNERGY_DTYPE_FLOAT32;
        t.shape = dims(std::move(shape));
        return *this;
    }
    const nnergy::bound_graph& bind() {
        g_.finalize();
        bound_ = nnergy::bind(g_, {});
        return *bound_;
    }
    const nnergy::graph& graph() const { return g_; }

private:
    static std::vector<nnergy::dim> dims(std::vector<int64_t> shape) {
        std::vector<nnergy::dim> d;
        for (int64_t v : shape) d.push_back(nnergy::dim::of(v));
        return d;
    }
    uint32_t add(const std::string& name, nnergy_dtype dtype, std::vector<int64_t> shape) {
        nnergy::tensor t;
        t.name = name;
        t.dtype = dtype;
        t.shape = dims(std::move(shape));
        return g_.add_tensor(std::move(t));
    }
    uint32_t find_or_add(const std::string& name) {
        if (auto t = g_.find_tensor(name)) return *t;
        nnergy::tensor t;
        t.name = name;
        return g_.add_tensor(std::move(t));
    }

    nnergy::graph g_;
    std::optional<nnergy::bound_graph> bound_;
};

nnergy::attribute attr(std::string name, int64_t v) { return {std::move(name), v}; }
nnergy::attribute attr(std::string name, std::vector<int64_t> v) {
    return {std::move(name), std::move(v)};
}

nnergy::config_value string_value(std::string name, std::string value, uint32_t line) {
    nnergy::config_value v;
    v.name = std::move(name);
    v.kind = NNERGY_VALUE_STRING;
    v.string_value = std::move(value);
    v.file = "pipeline.toml";
    v.line = line;
    return v;
}

nnergy::config_value bool_value(std::string name, bool value, uint32_t line) {
    nnergy::config_value v;
    v.name = std::move(name);
    v.kind = NNERGY_VALUE_BOOL;
    v.bool_value = value;
    v.file = "pipeline.toml";
    v.line = line;
    return v;
}

nnergy::config_values rules_config(const fs::path& rules) {
    return {string_value("rules", rules.string(), 2)};
}

/// The plugin library as the host loads it.
class fusion_plugin {
public:
    fusion_plugin() {
        REQUIRE(registry_.load(NNERGY_FUSION_PLUGIN));
        entry_ = registry_.find(NNERGY_KIND_PARTITIONER, "nnergy.partitioner.fusion");
        REQUIRE(entry_ != nullptr);
    }
    nnergy::partition run(const nnergy::bound_graph& g, nnergy::config_values config) {
        nnergy::component_instance instance(*entry_, std::move(config));
        return nnergy::run_partitioner(instance, g);
    }
    nnergy::partition run(const nnergy::bound_graph& g) {
        return run(g, rules_config(k_default_rules));
    }
    /// The message of the error that creating an instance with `config` raises.
    std::string create_error(nnergy::config_values config) {
        try {
            nnergy::component_instance instance(*entry_, std::move(config));
        } catch (const nnergy::error& e) {
            return e.what();
        }
        FAIL("creating the partitioner succeeded, an error was expected");
        return {};
    }

private:
    nnergy::registry registry_;
    const nnergy::component_entry* entry_ = nullptr;
};

/// Kernels as "pattern: node,node,..." with member names sorted, the list sorted: the
/// comparison does not depend on the host's kernel order.
std::vector<std::string> describe(const nnergy::graph& g, const nnergy::partition& p) {
    std::vector<std::string> out;
    for (const nnergy::kernel& k : p.kernels) {
        std::vector<std::string> names;
        for (uint32_t n : k.nodes) names.push_back(g.nodes[n].name);
        std::sort(names.begin(), names.end());
        std::string s = k.pattern + ":";
        for (size_t i = 0; i < names.size(); ++i) s += (i ? "," : " ") + names[i];
        out.push_back(s);
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
}

/// "pattern: a,b,c" with the member names sorted, as describe() writes a kernel.
std::string kernel_of(const std::string& pattern, std::vector<std::string> members) {
    std::sort(members.begin(), members.end());
    std::string s = pattern + ":";
    for (size_t i = 0; i < members.size(); ++i) s += (i ? "," : " ") + members[i];
    return s;
}

const nnergy::kernel& kernel_with(const nnergy::graph& g, const nnergy::partition& p,
                                  const std::string& node_name) {
    for (const nnergy::kernel& k : p.kernels)
        for (uint32_t n : k.nodes)
            if (g.nodes[n].name == node_name) return k;
    FAIL("no kernel holds node " << node_name);
    throw std::logic_error("unreachable");
}

/// conv1 -> bn1 -> relu1 on a 1x3x8x8 input; `bn_is_output` also makes bn1's result a graph
/// output.
model conv_bn_relu(bool bn_is_output = false) {
    model m;
    m.input("x", {1, 3, 8, 8})
        .weight("w", {4, 3, 3, 3})
        .op("conv1", "Conv", {"x", "w"}, {"c"},
            {attr("kernel_shape", std::vector<int64_t>{3, 3}),
             attr("pads", std::vector<int64_t>{1, 1, 1, 1})})
        .batchnorm("bn1", "c", "b", 4)
        .op("relu1", "Relu", {"b"}, {"y"})
        .output("y");
    if (bn_is_output) m.output("b");
    return m;
}

}  // namespace

TEST_CASE("conv + batchnorm + relu fuse into one kernel named after the conv", "[fusion]") {
    fusion_plugin plugin;
    model m = conv_bn_relu();
    const auto p = plugin.run(m.bind());
    // conv_bn_act matches all three: each intermediate is read only by the next node.
    CHECK(describe(m.graph(), p) == std::vector<std::string>{"conv_bn_act: bn1,conv1,relu1"});
    REQUIRE(p.kernels.size() == 1);
    CHECK(p.kernels[0].name == "conv1");
}

TEST_CASE("a conv output read by two nodes is not fused with the batchnorm", "[fusion]") {
    fusion_plugin plugin;
    model m;
    m.input("x", {1, 3, 8, 8})
        .weight("w", {4, 3, 3, 3})
        .op("conv1", "Conv", {"x", "w"}, {"c"})
        .batchnorm("bn1", "c", "b", 4)
        .op("relu1", "Relu", {"b"}, {"y1"})
        .op("relu2", "Relu", {"c"}, {"y2"})
        .output("y1")
        .output("y2");
    const auto p = plugin.run(m.bind());
    // Fusing conv1 with bn1 would hide c from relu2 (or copy conv1 into two kernels), so conv1
    // stays alone; bn1 + relu1 still fuse (bn_act); relu2 is a kernel of its own.
    CHECK(describe(m.graph(), p) == sorted({"conv: conv1", "bn_act: bn1,relu1", "relu: relu2"}));
}

TEST_CASE("a graph output in the middle of a chain stops the fusion there", "[fusion]") {
    fusion_plugin plugin;
    model m = conv_bn_relu(/*bn_is_output=*/true);
    const auto p = plugin.run(m.bind());
    // b must be written out for the user, so bn1 can only end a kernel: conv_bn_act matches
    // conv1 + bn1 with its optional activation absent, and relu1 runs alone.
    CHECK(describe(m.graph(), p) == sorted({"conv_bn_act: bn1,conv1", "relu: relu1"}));
}

TEST_CASE("conv + batchnorm + residual add + relu fuse", "[fusion]") {
    fusion_plugin plugin;
    model m;
    m.input("x", {1, 4, 8, 8})
        .weight("w", {4, 4, 3, 3})
        .op("conv1", "Conv", {"x", "w"}, {"c"}, {attr("pads", std::vector<int64_t>{1, 1, 1, 1})})
        .batchnorm("bn1", "c", "b", 4)
        .op("add1", "Add", {"b", "x"}, {"a"})
        .op("relu1", "Relu", {"a"}, {"y"})
        .output("y");
    const auto p = plugin.run(m.bind());
    // x is read by conv1 and add1, but x comes from outside the kernel: only tensors produced
    // inside must stay inside.
    CHECK(describe(m.graph(), p) == std::vector<std::string>{"conv_add_act: add1,bn1,conv1,relu1"});
}

TEST_CASE("a bias behind an Identity is a weight; an activation behind one is not", "[fusion]") {
    // The classic ONNX exporter passes a shared Linear bias through an Identity. Eager PyTorch
    // runs the Linear as one addmm: the pytorch-eager rules' linear chain (Add with weights)
    // must take it; a residual Add behind an Identity stays a kernel of its own.
    fusion_plugin plugin;
    SECTION("bias through Identity") {
        model m;
        m.input("x", {2, 16})
            .weight("w", {16, 32})
            .weight("b", {32})
            .op("bias", "Identity", {"b"}, {"bi"})
            .op("mm", "MatMul", {"x", "w"}, {"m"})
            .op("add", "Add", {"m", "bi"}, {"y"})
            .output("y");
        const auto p = plugin.run(m.bind(), rules_config(k_eager_rules));
        CHECK(describe(m.graph(), p) == std::vector<std::string>{"linear: add,bias,mm"});
    }
    SECTION("activation through Identity") {
        model m;
        m.input("x", {2, 16})
            .input("r", {2, 32})
            .weight("w", {16, 32})
            .op("res", "Identity", {"r"}, {"ri"})
            .op("mm", "MatMul", {"x", "w"}, {"m"})
            .op("add", "Add", {"m", "ri"}, {"y"})
            .output("y");
        const auto p = plugin.run(m.bind(), rules_config(k_eager_rules));
        CHECK(describe(m.graph(), p) == sorted({"add: add,res", "matmul: mm"}));
    }
}

TEST_CASE("matmul + bias add + relu fuse; so do gemm + relu", "[fusion]") {
    fusion_plugin plugin;
    SECTION("MatMul, Add, Relu") {
        model m;
        m.input("x", {2, 16})
            .weight("w", {16, 32})
            .weight("b", {32})
            .op("mm", "MatMul", {"x", "w"}, {"m"})
            .op("add", "Add", {"m", "b"}, {"a"})
            .op("relu", "Relu", {"a"}, {"y"})
            .output("y");
        const auto p = plugin.run(m.bind());
        CHECK(describe(m.graph(), p) == std::vector<std::string>{"gemm_bias_act: add,mm,relu"});
        CHECK(p.kernels.at(0).name == "mm");
    }
    SECTION("Gemm, Tanh") {
        model m;
        m.input("x", {2, 16})
            .weight("w", {16, 32})
            .weight("b", {32})
            .op("fc", "Gemm", {"x", "w", "b"}, {"g"})
            .op("act", "Tanh", {"g"}, {"y"})
            .output("y");
        const auto p = plugin.run(m.bind());
        // The optional Add position is skipped; the activation set holds Tanh.
        CHECK(describe(m.graph(), p) == std::vector<std::string>{"gemm_bias_act: act,fc"});
    }
}

TEST_CASE("the attention chain becomes one kernel, with the K transpose absorbed", "[fusion]") {
    fusion_plugin plugin;
    SECTION("scale and mask") {
        model m;
        m.input("q", {1, 2, 4, 8})
            .input("k", {1, 2, 4, 8})
            .input("v", {1, 2, 4, 8})
            .input("bias", {1, 1, 4, 4})
            .weight("root_d", {})
            .op("kt", "Transpose", {"k"}, {"k_t"}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})})
            .op("scores", "MatMul", {"q", "k_t"}, {"s"})
            .op("scale", "Div", {"s", "root_d"}, {"s_scaled"})
            .op("mask", "Add", {"s_scaled", "bias"}, {"s_masked"})
            .op("softmax", "Softmax", {"s_masked"}, {"probs"}, {attr("axis", int64_t{-1})})
            .op("context", "MatMul", {"probs", "v"}, {"o"})
            .output("o");
        const auto p = plugin.run(m.bind());
        // The chain rule takes scores..context; the Transpose feeds a kernel whose core holds a
        // MatMul, so the absorb entry for Transpose moves it in.
        CHECK(describe(m.graph(), p) ==
              std::vector<std::string>{"attention: context,kt,mask,scale,scores,softmax"});
        CHECK(p.kernels.at(0).name == "scores");
    }
    SECTION("no scale, no mask") {
        model m;
        m.input("q", {1, 2, 4, 8})
            .input("kt", {1, 2, 8, 4})
            .input("v", {1, 2, 4, 8})
            .op("scores", "MatMul", {"q", "kt"}, {"s"})
            .op("softmax", "Softmax", {"s"}, {"probs"}, {attr("axis", int64_t{-1})})
            .op("context", "MatMul", {"probs", "v"}, {"o"})
            .output("o");
        const auto p = plugin.run(m.bind());
        CHECK(describe(m.graph(), p) ==
              std::vector<std::string>{"attention: context,scores,softmax"});
    }
    SECTION("probabilities feeding the second MatMul's slot 1 do not match attention") {
        model m;
        m.input("q", {1, 2, 4, 8})
            .input("kt", {1, 2, 8, 4})
            .input("vt", {1, 2, 8, 4})
            .op("scores", "MatMul", {"q", "kt"}, {"s"})
            .op("softmax", "Softmax", {"s"}, {"probs"}, {attr("axis", int64_t{-1})})
            .op("context", "MatMul", {"vt", "probs"}, {"o"})
            .output("o");
        const auto p = plugin.run(m.bind());
        // The rule's last position has input = 0. No rule fuses MatMul -> Softmax, so every node
        // is alone.
        CHECK(describe(m.graph(), p) ==
              sorted({"matmul: scores", "softmax: softmax", "matmul: context"}));
    }
}

TEST_CASE("layer normalization: the ONNX op and the decomposed form", "[fusion]") {
    fusion_plugin plugin;
    SECTION("LayerNormalization op") {
        model m;
        m.input("x", {2, 8, 16})
            .weight("gamma", {16})
            .weight("beta", {16})
            .op("ln", "LayerNormalization", {"x", "gamma", "beta"}, {"y"},
                {attr("axis", int64_t{-1})})
            .output("y");
        const auto p = plugin.run(m.bind());
        // A one-position rule with min_nodes = 1 names the single op's kernel.
        CHECK(describe(m.graph(), p) == std::vector<std::string>{"layernorm: ln"});
    }
    SECTION("residual Add + LayerNormalization, only when the norm alone reads the sum") {
        model m;
        m.input("x", {2, 8, 16})
            .input("h", {2, 8, 16})
            .weight("gamma", {16})
            .weight("beta", {16})
            .op("res", "Add", {"x", "h"}, {"s"})
            .op("ln", "LayerNormalization", {"s", "gamma", "beta"}, {"y"})
            .output("y");
        SECTION("post-norm: fused") {
            const auto p = plugin.run(m.bind());
            CHECK(describe(m.graph(), p) == std::vector<std::string>{"add_layernorm: ln,res"});
            CHECK(p.kernels.at(0).name == "res");
        }
        SECTION("the sum also feeds the next residual: not fused") {
            m.op("res2", "Add", {"s", "y"}, {"z"}).output("z");
            const auto p = plugin.run(m.bind());
            CHECK(describe(m.graph(), p) == sorted({"add: res", "layernorm: ln", "add: res2"}));
        }
    }
    SECTION("ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add") {
        model m;
        const auto axes = attr("axes", std::vector<int64_t>{-1});
        m.input("x", {2, 8, 16})
            .weight("two", {})
            .weight("eps", {})
            .weight("gamma", {16})
            .weight("beta", {16})
            .op("mean", "ReduceMean", {"x"}, {"mu"}, {axes})
            .op("sub", "Sub", {"x", "mu"}, {"d"})
            .op("pow", "Pow", {"d", "two"}, {"d2"})
            .op("var", "ReduceMean", {"d2"}, {"v"}, {axes})
            .op("add_eps", "Add", {"v", "eps"}, {"ve"})
            .op("sqrt", "Sqrt", {"ve"}, {"sd"})
            .op("div", "Div", {"d", "sd"}, {"n"})
            .op("mul", "Mul", {"n", "gamma"}, {"ng"})
            .op("add_beta", "Add", {"ng", "beta"}, {"y"})
            .output("y");
        const auto p = plugin.run(m.bind());
        // d is read by pow and div: both are in the chain, so the kernel keeps d inside.
        CHECK(
            describe(m.graph(), p) ==
            std::vector<std::string>{"layernorm: add_beta,add_eps,div,mean,mul,pow,sqrt,sub,var"});
        CHECK(p.kernels.at(0).name == "mean");
    }
    SECTION("the decomposed form whose difference is also read elsewhere does not fuse") {
        model m;
        const auto axes = attr("axes", std::vector<int64_t>{-1});
        m.input("x", {2, 8, 16})
            .weight("two", {})
            .weight("eps", {})
            .op("mean", "ReduceMean", {"x"}, {"mu"}, {axes})
            .op("sub", "Sub", {"x", "mu"}, {"d"})
            .op("pow", "Pow", {"d", "two"}, {"d2"})
            .op("var", "ReduceMean", {"d2"}, {"v"}, {axes})
            .op("add_eps", "Add", {"v", "eps"}, {"ve"})
            .op("sqrt", "Sqrt", {"ve"}, {"sd"})
            .op("div", "Div", {"d", "sd"}, {"n"})
            .op("other", "Neg", {"d"}, {"nd"})
            .output("n")
            .output("nd");
        const auto p = plugin.run(m.bind());
        // d has a reader (other) outside any layernorm match, so the layernorm rule cannot hold
        // sub as an inner node, and no other default rule matches here: eight single-node
        // kernels.
        CHECK(describe(m.graph(), p) ==
              sorted({"reducemean: mean", "sub: sub", "pow: pow", "reducemean: var", "add: add_eps",
                      "sqrt: sqrt", "div: div", "neg: other"}));
    }
}

TEST_CASE("fuse = false puts every node in its own kernel", "[fusion]") {
    fusion_plugin plugin;
    model m = conv_bn_relu();
    const auto& g = m.bind();
    const std::vector<std::string> expected =
        sorted({"conv: conv1", "batchnormalization: bn1", "relu: relu1"});
    SECTION("with a rules file") {
        auto config = rules_config(k_default_rules);
        config.push_back(bool_value("fuse", false, 3));
        CHECK(describe(m.graph(), plugin.run(g, config)) == expected);
    }
    SECTION("without a rules file") {
        CHECK(describe(m.graph(), plugin.run(g, {bool_value("fuse", false, 3)})) == expected);
    }
    SECTION("fuse = true is the default") {
        auto config = rules_config(k_default_rules);
        config.push_back(bool_value("fuse", true, 3));
        CHECK(describe(m.graph(), plugin.run(g, config)) ==
              std::vector<std::string>{"conv_bn_act: bn1,conv1,relu1"});
    }
}

TEST_CASE("layout ops join the kernel that reads them", "[fusion]") {
    fusion_plugin plugin;
    SECTION("Flatten before Gemm") {
        model m;
        m.input("x", {2, 3, 4, 4})
            .weight("w", {48, 10})
            .weight("b", {10})
            .op("flat", "Flatten", {"x"}, {"f"})
            .op("fc", "Gemm", {"f", "w", "b"}, {"y"})
            .output("y");
        const auto p = plugin.run(m.bind());
        // fc matches no chain (gemm_bias_act needs two nodes), so it is a "gemm" kernel; the
        // Flatten joins it and does not rename it.
        CHECK(describe(m.graph(), p) == std::vector<std::string>{"gemm: fc,flat"});
        CHECK(p.kernels.at(0).name == "fc");
    }
    SECTION("shape arithmetic folded by binding joins the Reshape's consumer") {
        model m;
        m.input("x", {2, 4, 8})
            .weight("w", {32, 5})
            .ints("zero", {}, {0})
            .ints("axes0", {1}, {0})
            .ints("minus_one", {1}, {-1})
            .op("shape", "Shape", {"x"}, {"s"})
            .op("batch", "Gather", {"s", "zero"}, {"n"})
            .op("unsq", "Unsqueeze", {"n", "axes0"}, {"n1"})
            .op("cat", "Concat", {"n1", "minus_one"}, {"target"}, {attr("axis", int64_t{0})})
            .op("rs", "Reshape", {"x", "target"}, {"r"})
            .op("mm", "MatMul", {"r", "w"}, {"y"})
            .output("y");
        const auto& g = m.bind();
        const uint32_t target = *m.graph().find_tensor("target");
        REQUIRE(g.int_values.at(target).has_value());  // the host folded [2, -1]
        const auto p = plugin.run(g);
        // Reverse order: rs (always) joins mm's kernel, then cat and batch (constant outputs),
        // unsq and shape (always).
        CHECK(describe(m.graph(), p) ==
              std::vector<std::string>{"matmul: batch,cat,mm,rs,shape,unsq"});
        CHECK(p.kernels.at(0).name == "mm");
    }
    SECTION("a Reshape read by two kernels keeps its own kernel") {
        model m;
        m.input("x", {2, 16})
            .ints("shape", {2}, {4, 8})
            .op("r", "Reshape", {"x", "shape"}, {"rr"})
            .op("relu", "Relu", {"rr"}, {"ya"})
            .op("sig", "Sigmoid", {"rr"}, {"yb"})
            .output("ya")
            .output("yb");
        const auto p = plugin.run(m.bind());
        CHECK(describe(m.graph(), p) == sorted({"reshape: r", "relu: relu", "sigmoid: sig"}));
    }
    SECTION("a Transpose not feeding a matrix multiply is a real copy") {
        model m;
        m.input("x", {2, 3})
            .op("t", "Transpose", {"x"}, {"xt"})
            .op("relu", "Relu", {"xt"}, {"y"})
            .output("y");
        const auto p = plugin.run(m.bind());
        CHECK(describe(m.graph(), p) == sorted({"transpose: t", "relu: relu"}));
    }
    SECTION("layout ops no single kernel reads form a layout kernel") {
        model m;
        m.input("x", {2, 16})
            .ints("shape", {2}, {4, 8})
            .op("r", "Reshape", {"x", "shape"}, {"rr"})
            .op("t", "Transpose", {"rr"}, {"tt"})
            .op("relu", "Relu", {"tt"}, {"ya"})
            .op("sig", "Sigmoid", {"tt"}, {"yb"})
            .output("ya")
            .output("yb");
        const auto p = plugin.run(m.bind());
        // t is read by two kernels and stays; r is read only by t's kernel and joins it.
        CHECK(describe(m.graph(), p) == sorted({"layout: r,t", "relu: relu", "sigmoid: sig"}));
        CHECK(kernel_with(m.graph(), p, "r").name == "t");
    }
    SECTION("a layout op whose output is a graph output stays visible") {
        model m;
        m.input("x", {2, 3, 4, 4})
            .weight("w", {48, 10})
            .op("flat", "Flatten", {"x"}, {"f"})
            .op("mm", "MatMul", {"f", "w"}, {"y"})
            .output("y")
            .output("f");
        const auto p = plugin.run(m.bind());
        CHECK(describe(m.graph(), p) == sorted({"flatten: flat", "matmul: mm"}));
    }
}

TEST_CASE("rules read from a custom file: input slots, domains, min_nodes", "[fusion]") {
    const fs::path dir = fs::temp_directory_path() / "nnergy_fusion_test_rules";
    fs::create_directories(dir);
    const fs::path rules = dir / "custom.toml";
    {
        std::ofstream f(rules);
        f << "schema = \"nnergy.fusion/1\"\n"
             "[[rules]]\n"
             "name = \"relu_sub\"\n"
             "chain = [\"Relu\", { op = \"Sub\", input = 1 }]\n"
             "[[rules]]\n"
             "name = \"custom_act\"\n"
             "chain = [\"com.example:Fancy\", \"Relu|Tanh\"]\n";
    }
    fusion_plugin plugin;
    SECTION("the previous output must feed the named slot") {
        model m;
        m.input("x", {4})
            .input("y", {4})
            .op("r1", "Relu", {"x"}, {"a"})
            .op("s1", "Sub", {"a", "y"}, {"o1"})  // a in slot 0: no match
            .op("r2", "Relu", {"x"}, {"b"})
            .op("s2", "Sub", {"y", "b"}, {"o2"})  // b in slot 1: match
            .output("o1")
            .output("o2");
        const auto p = plugin.run(m.bind(), rules_config(rules));
        CHECK(describe(m.graph(), p) == sorted({"relu: r1", "sub: s1", "relu_sub: r2,s2"}));
    }
    SECTION("ops of other domains are written domain:Op") {
        model m;
        m.input("x", {4})
            .op("f", "Fancy", {"x"}, {"a"}, {}, "com.example")
            .op("act", "Tanh", {"a"}, {"y"})
            .declare("a", {4})
            .output("y");
        const auto p = plugin.run(m.bind(), rules_config(rules));
        CHECK(describe(m.graph(), p) == std::vector<std::string>{"custom_act: act,f"});
    }
    fs::remove_all(dir);
}

TEST_CASE("partitioning is deterministic and scales to large graphs", "[fusion]") {
    fusion_plugin plugin;
    // 4000 blocks of MatMul -> Add -> Relu: 12000 nodes, 4000 gemm_bias_act kernels.
    constexpr int blocks = 4000;
    model m;
    m.input("x0", {1, 8});
    for (int i = 0; i < blocks; ++i) {
        const std::string s = std::to_string(i);
        m.weight("w" + s, {8, 8})
            .weight("b" + s, {8})
            .op("mm" + s, "MatMul", {"x" + s, "w" + s}, {"m" + s})
            .op("add" + s, "Add", {"m" + s, "b" + s}, {"a" + s})
            .op("relu" + s, "Relu", {"a" + s}, {"x" + std::to_string(i + 1)});
    }
    m.output("x" + std::to_string(blocks));
    const auto& g = m.bind();
    const auto start = std::chrono::steady_clock::now();
    const auto p1 = plugin.run(g);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO("partitioned " << 3 * blocks << " nodes in " << seconds << " s");
    REQUIRE(p1.kernels.size() == blocks);
    for (const nnergy::kernel& k : p1.kernels) {
        CHECK(k.pattern == "gemm_bias_act");
        CHECK(k.nodes.size() == 3);
    }
    const auto p2 = plugin.run(g);
    CHECK(describe(m.graph(), p1) == describe(m.graph(), p2));
    std::vector<std::string> names1, names2;
    for (const auto& k : p1.kernels) names1.push_back(k.name);
    for (const auto& k : p2.kernels) names2.push_back(k.name);
    CHECK(names1 == names2);
}

TEST_CASE("configuration errors are named", "[fusion][errors]") {
    fusion_plugin plugin;
    SECTION("no rules file") {
        const std::string e = plugin.create_error({});
        CHECK_THAT(e, Catch::Contains("missing 'rules'"));
    }
    SECTION("unknown key in the partitioner table") {
        auto config = rules_config(k_default_rules);
        config.push_back(string_value("rule", "x.toml", 4));
        const std::string e = plugin.create_error(config);
        CHECK_THAT(e, Catch::Contains("pipeline.toml:4") && Catch::Contains("'rule'"));
    }
    SECTION("fuse is not a bool") {
        const std::string e = plugin.create_error(
            {string_value("rules", k_default_rules.string(), 2), string_value("fuse", "no", 3)});
        CHECK_THAT(e, Catch::Contains("pipeline.toml:3") && Catch::Contains("true or false"));
    }
    SECTION("a rules file that does not exist") {
        const std::string e = plugin.create_error(rules_config(k_bad_rules_dir / "absent.toml"));
        CHECK_THAT(e, Catch::Contains("absent.toml"));
    }
}

TEST_CASE("bad rules files: the error names the file, the line and what was expected",
          "[fusion][errors]") {
    struct bad_file {
        const char* file;
        int line;  // 0: the error names the file only (nothing in it has a line to show)
        const char* expected;
    };
    // Line numbers count from the SPDX comment on line 1 of each file.
    const bad_file cases[] = {
        {"unknown_key.toml", 7, "'rules[0].chain[1].optinal': unknown key"},
        {"bad_type.toml", 7, "'rules[0].chain[1].optional': must be true or false"},
        {"empty_chain.toml", 6, "missing or empty 'chain'"},
        {"unknown_op.toml", 7, "unknown op type 'BatchNorm'"},
        {"unknown_set.toml", 10, "unknown set '@acts' (defined: @activation)"},
        {"bad_schema.toml", 3, "unsupported schema 'nnergy.fusion/2'"},
        {"missing_schema.toml", 0, "missing schema = \"nnergy.fusion/1\""},
        {"bad_min_nodes.toml", 8, "must be between 1 and the chain length (2)"},
        {"bad_when.toml", 7, "must be \"always\" or \"constant\""},
        {"bad_input.toml", 8, "the first position has no previous node"},
        {"unknown_table.toml", 6, "'rule[0].name': unknown key"},
        {"missing_name.toml", 6, "rules[0]: missing 'name'"},
        {"invalid_toml.toml", 6, "invalid TOML"},
        {"bad_with_key.toml", 7, "'rules[0].chain[2].with[0].input': unknown key (a producer"},
        {"bad_with_op.toml", 7, "unknown op type 'Slise'"},
        {"bad_with_type.toml", 7, "with must be an array of producers"},
        {"bad_weights.toml", 8, "no previous node for 'weights'"},
        {"bad_weights_after_optional.toml", 10, "a match can start here with no previous node"},
        {"bad_shares_input.toml", 8, "no previous node for 'shares_input'"},
        {"bad_shared.toml", 7, "must be \"keep\" or \"producer\", not 'consumer'"},
    };
    fusion_plugin plugin;
    for (const bad_file& c : cases) {
        const fs::path path = k_bad_rules_dir / c.file;
        INFO(path.string());
        REQUIRE(fs::exists(path));
        const std::string e = plugin.create_error(rules_config(path));
        INFO(e);
        const std::string where =
            c.line ? path.string() + ":" + std::to_string(c.line) + ":" : path.string() + ":";
        CHECK_THAT(e, Catch::Contains(where));
        CHECK_THAT(e, Catch::Contains(c.expected));
    }
}

namespace {

/// configs/models/llama_block.json read through the JSON-graph frontend and bound at batch 1,
/// seq 16. Its shapes: hidden 256, 8 query heads and 2 key/value heads of 32, SwiGLU width 512.
class llama_block {
public:
    llama_block() {
        REQUIRE(registry_.load(NNERGY_JSON_GRAPH_PLUGIN));
        const nnergy::component_entry* entry =
            registry_.find(NNERGY_KIND_FRONTEND, "nnergy.frontend.json_graph");
        REQUIRE(entry != nullptr);
        nnergy::component_instance frontend(*entry, {});
        graph_ = nnergy::load_model(frontend, k_llama_block);
        bound_ = nnergy::bind(graph_, {{"batch", 1}, {"seq", 16}});
    }
    const nnergy::graph& graph() const { return graph_; }
    const nnergy::bound_graph& bound() const { return *bound_; }

private:
    nnergy::registry registry_;
    nnergy::graph graph_;
    std::optional<nnergy::bound_graph> bound_;
};

double total_macs(const nnergy::partition& p) {
    double macs = 0;
    for (const nnergy::kernel& k : p.kernels) macs += k.stats.macs;
    return macs;
}

/// rotate_half as HF Llama writes it: x * cos + concat(-x[..., 4:], x[..., :4]) * sin, on
/// x [1, 2, 4, 8]. The cos product comes first in topological order, as the exporter writes it.
model rotary_graph(bool cos_product_is_output) {
    model m;
    m.input("x", {1, 2, 4, 8})
        .input("cos", {1, 1, 4, 8})
        .input("sin", {1, 1, 4, 8})
        .ints("zero", {1}, {0})
        .ints("half", {1}, {4})
        .ints("full", {1}, {8})
        .ints("last", {1}, {-1})
        .op("mul_cos", "Mul", {"x", "cos"}, {"x_cos"})
        .op("slice_lo", "Slice", {"x", "zero", "half", "last"}, {"x1"})
        .op("slice_hi", "Slice", {"x", "half", "full", "last"}, {"x2"})
        .op("neg", "Neg", {"x2"}, {"neg_x2"})
        .op("cat", "Concat", {"neg_x2", "x1"}, {"rot"}, {attr("axis", int64_t{-1})})
        .op("mul_sin", "Mul", {"rot", "sin"}, {"rot_sin"})
        .op("add", "Add", {"x_cos", "rot_sin"}, {"y"})
        .output("y");
    if (cos_product_is_output) m.output("x_cos");
    return m;
}

}  // namespace

TEST_CASE("a Llama decoder layer: RMSNorm, rotary, attention and SwiGLU fuse", "[fusion][llama]") {
    fusion_plugin plugin;
    llama_block layer;
    const auto p = plugin.run(layer.bound());
    const auto norm = [](const std::string& n) {
        return kernel_of("rmsnorm", {n + ".pow", n + ".mean", n + ".add_eps", n + ".sqrt",
                                     n + ".reciprocal", n + ".mul", n + ".mul_weight"});
    };
    const auto rotary = [](const std::string& r) {
        return kernel_of("rotary", {r + ".mul_cos", r + ".slice_lo", r + ".slice_hi", r + ".neg",
                                    r + ".cat", r + ".mul_sin", r + ".add"});
    };
    // Each expected kernel and the rule that makes it (configs/fusion/default.toml):
    CHECK(describe(layer.graph(), p) ==
          sorted({
              // rmsnorm: Pow .. Reciprocal -> Mul(x, .) -> Mul(weight, .); x is read by the
              // Pow and the first Mul, both inside.
              norm("input_norm"),
              norm("post_norm"),
              // Bias-free projections: a MatMul alone (no rule of one MatMul).
              kernel_of("matmul", {"attn.q.matmul"}),
              kernel_of("matmul", {"attn.k.matmul"}),
              kernel_of("matmul", {"attn.v.matmul"}),
              // The q and k head split feeds three rotary nodes: the Transpose joins only a
              // kernel holding a MatMul, so it stays, with the Reshape before it.
              kernel_of("layout", {"attn.q.reshape", "attn.q.transpose"}),
              kernel_of("layout", {"attn.k.reshape", "attn.k.transpose"}),
              // cos and sin are read by both rotary kernels.
              kernel_of("unsqueeze", {"rope.cos_unsqueeze"}),
              kernel_of("unsqueeze", {"rope.sin_unsqueeze"}),
              // rotary: the chain runs slice_hi -> neg -> cat -> mul_sin -> add; slice_lo and
              // mul_cos (visited before the chain's head) join as producers.
              rotary("rope.q"),
              rotary("rope.k"),
              // attention: the sqrt(scale) products of q and k^T join as producers of the
              // scores; k^T, repeat_kv of k and v (Unsqueeze, Expand, Reshape) and the v head
              // split are absorbed: the kernel reads the two shared key/value heads.
              kernel_of("attention",
                        {"attn.q_scale", "attn.k_scale", "attn.k_transpose", "attn.scores",
                         "attn.mask", "attn.softmax", "attn.context", "attn.repeat_k.unsqueeze",
                         "attn.repeat_k.expand", "attn.repeat_k.reshape", "attn.repeat_v.unsqueeze",
                         "attn.repeat_v.expand", "attn.repeat_v.reshape", "attn.v.reshape",
                         "attn.v.transpose"}),
              // gemm_bias_act: the output projection takes the residual Add as its epilogue,
              // and the head merge (Transpose, Reshape) as its operand.
              kernel_of("gemm_bias_act", {"attn.merge_transpose", "attn.merge_reshape",
                                          "attn.o.matmul", "attn.residual"}),
              // gemm_silu: gate GEMM, x * sigmoid(x), times the up projection (SwiGLU).
              kernel_of("gemm_silu",
                        {"mlp.gate.matmul", "mlp.act.sigmoid", "mlp.act.mul", "mlp.gate_up"}),
              kernel_of("matmul", {"mlp.up.matmul"}),
              kernel_of("gemm_bias_act", {"mlp.down.matmul", "mlp.residual"}),
          }));

    // MACs at batch 1, seq 16 (hidden 256, 8 query heads, 2 key/value heads, head dim 32):
    //   q, o projections   2 x 16 x 256 x 256            = 2,097,152
    //   k, v projections   2 x 16 x 256 x 64             =   524,288
    //   Q.K^T, P.V         2 x (1 x 8 x 16 x 16 x 32)    =   131,072  (all 8 query heads)
    //   gate, up, down     3 x 16 x 256 x 512            = 6,291,456
    //   total                                            = 9,043,968
    CHECK(total_macs(p) == 9043968.0);
    const nnergy::kernel& attention = kernel_with(layer.graph(), p, "attn.scores");
    CHECK(attention.stats.macs == 131072.0);
    // Grouped-query attention fused: the kernel reads q (1x8x16x32), the two shared key and
    // value heads (1x2x16x32 each, not their copies to 8 heads) and the mask (1x1x16x16), all
    // float32, and writes the context (1x8x16x32).
    CHECK(attention.stats.input_bytes == 4.0 * (8 * 16 * 32 + 2 * 2 * 16 * 32 + 16 * 16));
    CHECK(attention.stats.output_bytes == 4.0 * 8 * 16 * 32);
}

TEST_CASE("the Llama decoder layer under the eager PyTorch rules", "[fusion][llama]") {
    fusion_plugin plugin;
    llama_block layer;
    const auto p = plugin.run(layer.bound(), rules_config(k_eager_rules));
    const auto norm = [](const std::string& n) {
        // HF LlamaRMSNorm in eager: pow, mean, add, rsqrt, mul, mul.
        return std::vector<std::string>{
            kernel_of("pow", {n + ".pow"}),
            kernel_of("reducemean", {n + ".mean"}),
            kernel_of("add", {n + ".add_eps"}),
            kernel_of("rsqrt", {n + ".sqrt", n + ".reciprocal"}),
            kernel_of("mul", {n + ".mul"}),
            kernel_of("mul", {n + ".mul_weight"}),
        };
    };
    const auto rotary = [](const std::string& r) {
        // x * cos, neg, cat, * sin, add; the slices are views read by neg and cat.
        return std::vector<std::string>{
            kernel_of("mul", {r + ".mul_cos"}),
            kernel_of("neg", {r + ".slice_hi", r + ".neg"}),
            kernel_of("concat", {r + ".slice_lo", r + ".cat"}),
            kernel_of("mul", {r + ".mul_sin"}),
            kernel_of("add", {r + ".add"}),
        };
    };
    std::vector<std::string> expected{
        // q's and k's head split are views read by three rotary kernels: they join the
        // projection that produced the tensor (shared = "producer").
        kernel_of("matmul", {"attn.q.matmul", "attn.q.reshape", "attn.q.transpose"}),
        kernel_of("matmul", {"attn.k.matmul", "attn.k.reshape", "attn.k.transpose"}),
        kernel_of("matmul", {"attn.v.matmul"}),
        // Views of graph inputs have no producing kernel to join.
        kernel_of("unsqueeze", {"rope.cos_unsqueeze"}),
        kernel_of("unsqueeze", {"rope.sin_unsqueeze"}),
        // repeat_kv: reshape of a non-contiguous expand copies k and v to the 8 query heads.
        kernel_of("expand", {"attn.repeat_k.unsqueeze", "attn.repeat_k.expand"}),
        kernel_of("expand", {"attn.v.reshape", "attn.v.transpose", "attn.repeat_v.unsqueeze",
                             "attn.repeat_v.expand"}),
        // One SDPA kernel, with both sqrt(scale) products; the Reshape after each Expand and
        // the k^T are views it reads.
        kernel_of("attention", {"attn.q_scale", "attn.k_scale", "attn.k_transpose",
                                "attn.repeat_k.reshape", "attn.repeat_v.reshape", "attn.scores",
                                "attn.mask", "attn.softmax", "attn.context"}),
        // Bias-free Linear layers: the residual Adds are kernels of their own.
        kernel_of("matmul", {"attn.merge_transpose", "attn.merge_reshape", "attn.o.matmul"}),
        kernel_of("add", {"attn.residual"}),
        kernel_of("matmul", {"mlp.gate.matmul"}),
        // nn.SiLU: one aten::silu kernel; the product with the up projection is another.
        kernel_of("silu", {"mlp.act.sigmoid", "mlp.act.mul"}),
        kernel_of("matmul", {"mlp.up.matmul"}),
        kernel_of("mul", {"mlp.gate_up"}),
        kernel_of("matmul", {"mlp.down.matmul"}),
        kernel_of("add", {"mlp.residual"}),
    };
    for (const auto& list :
         {norm("input_norm"), norm("post_norm"), rotary("rope.q"), rotary("rope.k")})
        expected.insert(expected.end(), list.begin(), list.end());
    CHECK(describe(layer.graph(), p) == sorted(expected));

    // The same products: attention still multiplies over all 8 query heads.
    CHECK(total_macs(p) == 9043968.0);
    // The copy repeat_kv makes: read 1x2x16x32, write 1x8x16x32 float32 values.
    const nnergy::kernel& copy = kernel_with(layer.graph(), p, "attn.repeat_k.expand");
    CHECK(copy.stats.input_bytes == 4.0 * 2 * 16 * 32);
    CHECK(copy.stats.output_bytes == 4.0 * 8 * 16 * 32);
}

TEST_CASE("producers ('with') join a chain only when the chain node alone reads them",
          "[fusion][llama]") {
    fusion_plugin plugin;
    SECTION("rotate_half: one rotary kernel, producers visited before the chain's head") {
        model m = rotary_graph(false);
        const auto p = plugin.run(m.bind());
        CHECK(describe(m.graph(), p) ==
              std::vector<std::string>{kernel_of(
                  "rotary", {"mul_cos", "slice_lo", "slice_hi", "neg", "cat", "mul_sin", "add"})});
        // Named after the chain's head, the first node the rule matched.
        CHECK(p.kernels.at(0).name == "slice_hi");
    }
    SECTION("a required producer read elsewhere stops the match") {
        model m = rotary_graph(true);
        const auto p = plugin.run(m.bind());
        // x_cos is a graph output, so mul_cos cannot hide inside the kernel; the rotary rule
        // requires it, and no other default rule matches these ops: every node alone.
        CHECK(describe(m.graph(), p) ==
              sorted({"mul: mul_cos", "slice: slice_lo", "slice: slice_hi", "neg: neg",
                      "concat: cat", "mul: mul_sin", "add: add"}));
    }
    SECTION("an optional producer read elsewhere is left out") {
        model m;
        m.input("q", {1, 2, 4, 8})
            .input("kt", {1, 2, 8, 4})
            .input("v", {1, 2, 4, 8})
            .weight("root_scale", {})
            .op("q_scale", "Mul", {"q", "root_scale"}, {"qs"})
            .op("kt_scale", "Mul", {"kt", "root_scale"}, {"kts"})
            .op("scores", "MatMul", {"qs", "kts"}, {"s"})
            .op("softmax", "Softmax", {"s"}, {"probs"}, {attr("axis", int64_t{-1})})
            .op("context", "MatMul", {"probs", "v"}, {"o"})
            .output("o")
            .output("qs");
        const auto p = plugin.run(m.bind());
        CHECK(describe(m.graph(), p) ==
              sorted({"mul: q_scale",
                      kernel_of("attention", {"kt_scale", "scores", "softmax", "context"})}));
    }
}

TEST_CASE("RMSNorm with casts to float32 and back is one kernel", "[fusion][llama]") {
    fusion_plugin plugin;
    model m;
    const auto to_float = attr("to", int64_t{1});
    m.input("x", {1, 4, 16})
        .weight("two", {})
        .weight("eps", {})
        .weight("w", {16})
        .op("cast_in", "Cast", {"x"}, {"xf"}, {to_float})
        .op("pow", "Pow", {"xf", "two"}, {"sq"})
        .op("mean", "ReduceMean", {"sq"}, {"var"},
            {attr("axes", std::vector<int64_t>{-1}), attr("keepdims", int64_t{1})})
        .op("add_eps", "Add", {"var", "eps"}, {"ve"})
        .op("sqrt", "Sqrt", {"ve"}, {"sd"})
        .op("reciprocal", "Reciprocal", {"sd"}, {"inv"})
        .op("mul", "Mul", {"xf", "inv"}, {"n"})
        .op("cast_out", "Cast", {"n"}, {"nc"}, {to_float})
        .op("mul_weight", "Mul", {"w", "nc"}, {"y"})
        .output("y");
    const auto p = plugin.run(m.bind());
    // xf is read by pow and mul, both in the chain.
    CHECK(describe(m.graph(), p) ==
          std::vector<std::string>{
              kernel_of("rmsnorm", {"cast_in", "pow", "mean", "add_eps", "sqrt", "reciprocal",
                                    "mul", "cast_out", "mul_weight"})});
    CHECK(p.kernels.at(0).name == "cast_in");
}

TEST_CASE("GELU in tanh form (GPT-2's gelu_new) fuses, into its GEMM when it can", "[fusion]") {
    fusion_plugin plugin;
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in the dynamo exporter's order.
    const auto gelu = [](model& m, const std::string& x) {
        m.weight("half", {})
            .weight("three", {})
            .weight("c", {})
            .weight("root", {})
            .weight("one", {})
            .op("mul_half", "Mul", {x, "half"}, {"hx"})
            .op("pow", "Pow", {x, "three"}, {"x3"})
            .op("mul_c", "Mul", {"x3", "c"}, {"cx3"})
            .op("add_x", "Add", {x, "cx3"}, {"inner"})
            .op("mul_root", "Mul", {"inner", "root"}, {"arg"})
            .op("tanh", "Tanh", {"arg"}, {"t"})
            .op("add_one", "Add", {"t", "one"}, {"t1"})
            .op("mul_out", "Mul", {"hx", "t1"}, {"y"})
            .output("y");
    };
    const std::vector<std::string> gelu_nodes{"mul_half", "pow",  "mul_c",   "add_x",
                                              "mul_root", "tanh", "add_one", "mul_out"};
    SECTION("Gemm -> Reshape -> GELU: one gemm_gelu kernel") {
        model m;
        m.input("a", {16, 32})
            .weight("w", {32, 64})
            .ints("shape", {3}, {1, 16, 64})
            .op("fc", "Gemm", {"a", "w"}, {"g"})
            .op("view", "Reshape", {"g", "shape"}, {"x"});
        gelu(m, "x");
        const auto p = plugin.run(m.bind());
        std::vector<std::string> members = gelu_nodes;
        members.push_back("fc");
        members.push_back("view");
        CHECK(describe(m.graph(), p) == std::vector<std::string>{kernel_of("gemm_gelu", members)});
    }
    SECTION("on a graph input: one gelu kernel") {
        model m;
        m.input("x", {1, 16, 64});
        gelu(m, "x");
        const auto p = plugin.run(m.bind());
        CHECK(describe(m.graph(), p) == std::vector<std::string>{kernel_of("gelu", gelu_nodes)});
    }
}

TEST_CASE("a GEMM viewed back to 3-D takes the residual add as its epilogue", "[fusion]") {
    fusion_plugin plugin;
    // GPT-2's Conv1D from the dynamo exporter: x [1, 16, 64] viewed as [16, 64], Gemm, viewed
    // back as [1, 16, 64], plus the residual.
    model m;
    m.input("x", {1, 16, 64})
        .weight("w", {64, 64})
        .ints("rows", {2}, {-1, 64})
        .ints("back", {3}, {1, -1, 64})
        .op("flat", "Reshape", {"x", "rows"}, {"x2"})
        .op("fc", "Gemm", {"x2", "w"}, {"g"})
        .op("view", "Reshape", {"g", "back"}, {"g3"})
        .op("residual", "Add", {"g3", "x"}, {"y"})
        .output("y");
    const auto p = plugin.run(m.bind());
    // The chain takes fc, view, residual; the Reshape before the Gemm is absorbed into it.
    CHECK(describe(m.graph(), p) ==
          std::vector<std::string>{kernel_of("gemm_bias_act", {"flat", "fc", "view", "residual"})});
}

TEST_CASE("shared = \"producer\": a view several kernels read joins the kernel producing it",
          "[fusion]") {
    const fs::path dir = fs::temp_directory_path() / "nnergy_fusion_test_shared";
    fs::create_directories(dir);
    const fs::path rules = dir / "shared.toml";
    {
        std::ofstream f(rules);
        f << "schema = \"nnergy.fusion/1\"\n"
             "[[absorb]]\n"
             "ops = [\"Reshape\", \"Transpose\"]\n"
             "shared = \"producer\"\n";
    }
    fusion_plugin plugin;
    SECTION("a run of views moves whole into the producer") {
        model m;
        m.input("x", {4, 8})
            .weight("w", {8, 8})
            .ints("shape", {3}, {4, 2, 4})
            .op("mm", "MatMul", {"x", "w"}, {"y"})
            .op("view", "Reshape", {"y", "shape"}, {"v"})
            .op("perm", "Transpose", {"v"}, {"t"}, {attr("perm", std::vector<int64_t>{1, 0, 2})})
            .op("a", "Relu", {"t"}, {"ra"})
            .op("b", "Tanh", {"t"}, {"rb"})
            .output("ra")
            .output("rb");
        const auto p = plugin.run(m.bind(), rules_config(rules));
        // Reverse absorption folds view into perm's kernel (perm reads all of it); perm is read
        // by two kernels, so that kernel joins mm, which produces what it reads.
        CHECK(describe(m.graph(), p) == sorted({"matmul: mm,perm,view", "relu: a", "tanh: b"}));
        // The merged kernel writes the viewed tensor: 2 x 4 x 4 float32 values.
        CHECK(kernel_with(m.graph(), p, "mm").stats.output_bytes == 4.0 * 32);
    }
    SECTION("a view of a graph input has no producing kernel and stays") {
        model m;
        m.input("x", {4, 8})
            .ints("shape", {3}, {4, 2, 4})
            .op("view", "Reshape", {"x", "shape"}, {"v"})
            .op("a", "Relu", {"v"}, {"ra"})
            .op("b", "Tanh", {"v"}, {"rb"})
            .output("ra")
            .output("rb");
        const auto p = plugin.run(m.bind(), rules_config(rules));
        CHECK(describe(m.graph(), p) == sorted({"reshape: view", "relu: a", "tanh: b"}));
    }
    fs::remove_all(dir);
}

TEST_CASE("eager rules: x * sigmoid(x) is one silu kernel, a sigmoid gate is two", "[fusion]") {
    fusion_plugin plugin;
    model m;
    m.input("x", {2, 8})
        .input("a", {2, 8})
        .input("b", {2, 8})
        .op("sig_x", "Sigmoid", {"x"}, {"sx"})
        .op("silu_mul", "Mul", {"x", "sx"}, {"y1"})
        .op("sig_a", "Sigmoid", {"a"}, {"sa"})
        .op("gate_mul", "Mul", {"sa", "b"}, {"y2"})
        .output("y1")
        .output("y2");
    const auto p = plugin.run(m.bind(), rules_config(k_eager_rules));
    // silu_mul reads x, which sig_x reads too (shares_input); gate_mul reads b, which sig_a
    // does not.
    CHECK(describe(m.graph(), p) ==
          sorted({kernel_of("silu", {"sig_x", "silu_mul"}), "sigmoid: sig_a", "mul: gate_mul"}));
}
