// SPDX-License-Identifier: Apache-2.0
// One-op graphs of the microbenchmark harness's op runs (tools/microbench/ops.py describes what
// each name calls; the shapes here follow it).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/op_runs.hpp>
#include <set>

namespace nnergy {
namespace {

using json = nlohmann::json;

const std::set<std::string>& note_keys() {
    static const std::set<std::string> keys = {"source",      "out_hw",       "kernels",
                                               "eager_bytes", "for_class",    "m",
                                               "op",          "reuse_output", "stride_from"};
    return keys;
}

/// Reads the parameters of one run, naming it in every message.
class params_reader {
public:
    params_reader(const std::string& name, const std::string& op_class, const std::string& text)
        : what_(fmt::format("op run '{}' (class {})", name, op_class.empty() ? "-" : op_class)) {
        try {
            p_ = text.empty() ? json::object() : json::parse(text);
        } catch (const json::exception&) {
            throw error(what_ + ": 'params' is not a JSON object");
        }
        if (!p_.is_object()) throw error(what_ + ": 'params' is not a JSON object");
    }

    int64_t integer(const char* key) const {
        const auto it = p_.find(key);
        if (it == p_.end()) throw error(fmt::format("{}: params has no '{}'", what_, key));
        if (!it->is_number_integer() || it->get<int64_t>() < 1)
            throw error(fmt::format("{}: params '{}' must be an integer >= 1, got {}", what_, key,
                                    it->dump()));
        return it->get<int64_t>();
    }
    int64_t integer_or(const char* key, int64_t fallback) const {
        return p_.contains(key) ? integer(key) : fallback;
    }
    int64_t non_negative_or(const char* key, int64_t fallback) const {
        const auto it = p_.find(key);
        if (it == p_.end()) return fallback;
        if (!it->is_number_integer() || it->get<int64_t>() < 0)
            throw error(fmt::format("{}: params '{}' must be an integer >= 0, got {}", what_, key,
                                    it->dump()));
        return it->get<int64_t>();
    }
    bool flag_or(const char* key, bool fallback) const {
        const auto it = p_.find(key);
        if (it == p_.end()) return fallback;
        if (!it->is_boolean())
            throw error(fmt::format("{}: params '{}' must be true or false, got {}", what_, key,
                                    it->dump()));
        return it->get<bool>();
    }
    std::string text_or(const char* key, const std::string& fallback) const {
        const auto it = p_.find(key);
        if (it == p_.end()) return fallback;
        if (!it->is_string())
            throw error(
                fmt::format("{}: params '{}' must be a string, got {}", what_, key, it->dump()));
        return it->get<std::string>();
    }
    std::vector<std::string> texts(const char* key) const {
        const auto it = p_.find(key);
        if (it == p_.end()) throw error(fmt::format("{}: params has no '{}'", what_, key));
        std::vector<std::string> out;
        if (it->is_array())
            for (const json& v : *it)
                if (v.is_string()) out.push_back(v.get<std::string>());
        if (out.empty() || out.size() != it->size())
            throw error(fmt::format("{}: params '{}' must be a non-empty list of op names, got {}",
                                    what_, key, it->dump()));
        return out;
    }
    const std::string& what() const { return what_; }

private:
    std::string what_;
    json p_;
};

/// Builds a graph node by node; every floating-point tensor of one storage type.
class builder {
public:
    builder(std::string name, nnergy_dtype storage) : storage_(storage) {
        g_.name = std::move(name);
    }

    uint32_t input(const std::string& name, std::vector<int64_t> shape) {
        const uint32_t t = add(name, shape, false);
        g_.inputs.push_back(t);
        return t;
    }
    uint32_t weight(const std::string& name, std::vector<int64_t> shape) {
        return add(name, shape, true);
    }
    /// A constant of the op's code (a scale, a mask): no parameter.
    uint32_t constant(const std::string& name, std::vector<int64_t> shape) {
        const uint32_t t = add(name, shape, true);
        g_.tensors[t].is_constant = true;
        return t;
    }
    uint32_t op(const std::string& op_type, std::vector<uint32_t> inputs,
                std::vector<attribute> attributes = {}) {
        tensor out;
        out.name = fmt::format("t{}", g_.tensors.size());
        out.dtype = storage_;
        const uint32_t o = g_.add_tensor(std::move(out));
        node n;
        n.name = fmt::format("{}_{}", op_type, g_.nodes.size());
        n.op_type = op_type;
        n.inputs = std::move(inputs);
        n.outputs = {o};
        n.attributes = std::move(attributes);
        g_.add_node(std::move(n));
        return o;
    }
    /// An int64 constant with its values (a shape).
    uint32_t int_constant(const std::string& name, std::vector<int64_t> values) {
        tensor t;
        t.name = name;
        t.dtype = NNERGY_DTYPE_INT64;
        t.shape = std::vector<dim>{dim::of(static_cast<int64_t>(values.size()))};
        t.is_initializer = true;
        t.is_constant = true;
        t.int_values = std::move(values);
        return g_.add_tensor(std::move(t));
    }
    /// A result the program keeps in memory beside the graph's output (eager ops called one
    /// by one each write theirs): a graph output, so no kernel can keep it on chip.
    void materialize(uint32_t t) { kept_.push_back(t); }
    graph finish(uint32_t output) {
        g_.outputs = {output};
        g_.outputs.insert(g_.outputs.end(), kept_.begin(), kept_.end());
        g_.metadata.emplace_back("opset", "20");
        g_.finalize();
        return std::move(g_);
    }

private:
    uint32_t add(const std::string& name, const std::vector<int64_t>& shape, bool init) {
        tensor t;
        t.name = name;
        t.dtype = storage_;
        std::vector<dim> dims;
        for (int64_t d : shape) dims.push_back(dim::of(d));
        t.shape = std::move(dims);
        t.is_initializer = init;
        return g_.add_tensor(std::move(t));
    }
    graph g_;
    nnergy_dtype storage_;
    std::vector<uint32_t> kept_;
};

using ints = std::vector<int64_t>;

uint32_t conv2d(builder& b, const params_reader& p, int64_t batch) {
    const int64_t cin = p.integer("cin"), cout = p.integer("cout"), hw = p.integer("hw"),
                  k = p.integer("k"), stride = p.integer_or("stride", 1),
                  groups = p.integer_or("groups", 1), pad = p.non_negative_or("pad", k / 2);
    if (cin % groups || cout % groups)
        throw error(fmt::format("{}: groups {} does not divide cin {} and cout {}", p.what(),
                                groups, cin, cout));
    const uint32_t x = b.input("x", {batch, cin, hw, hw});
    const uint32_t w = b.weight("w", {cout, cin / groups, k, k});
    return b.op("Conv", {x, w},
                {{"kernel_shape", ints{k, k}},
                 {"strides", ints{stride, stride}},
                 {"pads", ints{pad, pad, pad, pad}},
                 {"group", groups}});
}

uint32_t linear(builder& b, const params_reader& p, int64_t batch) {
    const int64_t k = p.integer("k"), n = p.integer("n"), seq = p.integer_or("seq", 1);
    const uint32_t x = b.input("x", {batch * seq, k});
    const uint32_t w = b.weight("w", {n, k});
    std::vector<uint32_t> in{x, w};
    if (p.flag_or("bias", true)) in.push_back(b.weight("b", {n}));
    return b.op("Gemm", std::move(in), {{"transB", int64_t{1}}});
}

uint32_t matmul(builder& b, const params_reader& p, int64_t batch) {
    const int64_t m = p.integer("m"), n = p.integer("n"), k = p.integer("k");
    const uint32_t a = batch > 1 ? b.input("a", {batch, m, k}) : b.input("a", {m, k});
    const uint32_t c = b.input("b", {k, n});
    return b.op("MatMul", {a, c});
}

uint32_t attention(builder& b, const params_reader& p, int64_t batch) {
    const int64_t sq = p.integer("seq"), heads = p.integer("heads"), d = p.integer("head_dim");
    const int64_t skv = p.integer_or("seq_kv", sq);
    const bool causal = p.flag_or("causal", false) && sq > 1;
    const uint32_t q = b.input("q", {batch, heads, sq, d});
    const uint32_t k = b.input("k", {batch, heads, skv, d});
    const uint32_t v = b.input("v", {batch, heads, skv, d});
    // impl "math" is the harness calling matmul, the scale, the mask and softmax one by one
    // (tools/microbench/ops.py): each writes its result, and each is a kernel of its own. impl
    // "sdpa" is one fused call.
    const bool math = p.text_or("impl", "math") == "math";
    const auto kept = [&](uint32_t t) {
        if (math) b.materialize(t);
        return t;
    };
    const uint32_t kt = b.op("Transpose", {k}, {{"perm", ints{0, 1, 3, 2}}});
    uint32_t s = kept(b.op("MatMul", {q, kt}));
    s = kept(b.op("Mul", {s, b.constant("scale", {})}));
    if (causal) s = kept(b.op("Add", {s, b.constant("mask", {sq, skv})}));
    s = kept(b.op("Softmax", {s}, {{"axis", int64_t{-1}}}));
    return b.op("MatMul", {s, v});
}

uint32_t batch_norm(builder& b, const params_reader& p, int64_t batch) {
    const int64_t c = p.integer("c"), hw = p.integer("hw");
    const uint32_t x = b.input("x", {batch, c, hw, hw});
    std::vector<uint32_t> in{x};
    for (const char* s : {"scale", "bias", "mean", "var"}) in.push_back(b.weight(s, {c}));
    return b.op("BatchNormalization", std::move(in));
}

uint32_t layer_norm(builder& b, const params_reader& p, int64_t batch) {
    const int64_t seq = p.integer("seq"), d = p.integer("d");
    const uint32_t x = b.input("x", {batch, seq, d});
    return b.op("LayerNormalization", {x, b.weight("scale", {d}), b.weight("bias", {d})},
                {{"axis", int64_t{-1}}});
}

uint32_t max_pool2d(builder& b, const params_reader& p, int64_t batch) {
    const int64_t c = p.integer("c"), hw = p.integer("hw"), k = p.integer("k"),
                  stride = p.integer_or("stride", k), pad = p.non_negative_or("pad", 0);
    const uint32_t x = b.input("x", {batch, c, hw, hw});
    return b.op("MaxPool", {x},
                {{"kernel_shape", ints{k, k}},
                 {"strides", ints{stride, stride}},
                 {"pads", ints{pad, pad, pad, pad}}});
}

uint32_t global_avg_pool(builder& b, const params_reader& p, int64_t batch) {
    const uint32_t x = b.input("x", {batch, p.integer("c"), p.integer("hw"), p.integer("hw")});
    return b.op("GlobalAveragePool", {x});
}

uint32_t softmax(builder& b, const params_reader& p, int64_t batch) {
    const uint32_t x = b.input("x", {batch * p.integer("rows"), p.integer("cols")});
    return b.op("Softmax", {x}, {{"axis", int64_t{-1}}});
}

/// One op of an elementwise chain on t; `other` is the shared second operand.
uint32_t elementwise_op(builder& b, const params_reader& p, const std::string& op, uint32_t t,
                        uint32_t other) {
    if (op == "add") return b.op("Add", {t, other});
    if (op == "mul") return b.op("Mul", {t, other});
    if (op == "add_scalar") return b.op("Add", {t, b.constant(fmt::format("one{}", t), {})});
    if (op == "relu") return b.op("Relu", {t});
    // torch.clamp(x, lo, hi) (ReLU6, hardtanh): Clip with both bounds.
    if (op == "clamp")
        return b.op("Clip", {t, b.constant(fmt::format("lo{}", t), {}),
                             b.constant(fmt::format("hi{}", t), {})});
    if (op == "gelu") return b.op("Gelu", {t});
    if (op == "sigmoid") return b.op("Sigmoid", {t});
    if (op == "tanh") return b.op("Tanh", {t});
    if (op == "hardswish") return b.op("HardSwish", {t});
    // SiLU as an exporter writes it: x * sigmoid(x), one kernel in eager PyTorch (fusion rule
    // "silu").
    if (op == "silu") return b.op("Mul", {t, b.op("Sigmoid", {t})});
    throw error(
        fmt::format("{}: unknown elementwise op '{}' (known: add, mul, add_scalar, relu, "
                    "clamp, gelu, sigmoid, tanh, hardswish, silu)",
                    p.what(), op));
}

uint32_t elementwise(builder& b, const params_reader& p, int64_t batch) {
    const std::vector<std::string> ops = p.texts("ops");
    const int64_t n = batch * p.integer("numel");
    const uint32_t x = b.input("x", {n});
    const bool binary = std::any_of(ops.begin(), ops.end(),
                                    [](const std::string& o) { return o == "add" || o == "mul"; });
    const uint32_t other = binary ? b.input("other", {n}) : NNERGY_NO_TENSOR;
    uint32_t t = x;
    for (const std::string& op : ops) t = elementwise_op(b, p, op, t, other);
    return t;
}

uint32_t squeeze_excitation(builder& b, const params_reader& p, int64_t batch) {
    const int64_t c = p.integer("c"), sq = p.integer("squeeze"), hw = p.integer("hw");
    const std::string act = p.text_or("act", "relu"), gate = p.text_or("gate", "sigmoid");
    const uint32_t x = b.input("x", {batch, c, hw, hw});
    const std::vector<attribute> one_by_one = {{"kernel_shape", ints{1, 1}}};
    uint32_t s = b.op("GlobalAveragePool", {x});
    s = b.op("Conv", {s, b.weight("w1", {sq, c, 1, 1}), b.weight("b1", {sq})}, one_by_one);
    if (act == "relu")
        s = b.op("Relu", {s});
    else if (act == "silu")
        s = b.op("Mul", {s, b.op("Sigmoid", {s})});
    else
        throw error(fmt::format("{}: params 'act' must be \"relu\" or \"silu\", got \"{}\"",
                                p.what(), act));
    s = b.op("Conv", {s, b.weight("w2", {c, sq, 1, 1}), b.weight("b2", {c})}, one_by_one);
    if (gate == "sigmoid")
        s = b.op("Sigmoid", {s});
    else if (gate == "hardsigmoid")
        s = b.op("HardSigmoid", {s}, {{"alpha", 1.0 / 6}, {"beta", 0.5}});
    else
        throw error(
            fmt::format("{}: params 'gate' must be \"sigmoid\" or \"hardsigmoid\", got \"{}\"",
                        p.what(), gate));
    return b.op("Mul", {x, s});
}

/// The data-movement ops of the dispatch class.
uint32_t data_movement(builder& b, const std::string& op, const params_reader& p) {
    if (op == "view") {
        const uint32_t x = b.input("x", {2, 4});
        return b.op("Reshape", {x, b.int_constant("shape", {8})});
    }
    if (op == "transpose_contiguous") {
        const uint32_t x = b.input("x", {8, 8});
        return b.op("Transpose", {x}, {{"perm", ints{1, 0}}});
    }
    if (op == "cat") {
        const uint32_t a = b.input("a", {1}), c = b.input("b", {1});
        return b.op("Concat", {a, c}, {{"axis", int64_t{0}}});
    }
    throw error(fmt::format("{}: unknown dispatch op '{}'", p.what(), op));
}

using op_builder = uint32_t (*)(builder&, const params_reader&, int64_t);

struct named_builder {
    const char* name;
    op_builder build;
};

constexpr named_builder k_builders[] = {
    {"conv2d", conv2d},         {"linear", linear},
    {"matmul", matmul},         {"attention", attention},
    {"batch_norm", batch_norm}, {"layer_norm", layer_norm},
    {"max_pool2d", max_pool2d}, {"global_avg_pool", global_avg_pool},
    {"softmax", softmax},       {"squeeze_excitation", squeeze_excitation},
};

}  // namespace

const std::vector<std::string>& op_run_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const named_builder& nb : k_builders) v.emplace_back(nb.name);
        v.emplace_back("elementwise chains (ops = [...])");
        v.emplace_back("the dispatch class (op = ...)");
        return v;
    }();
    return names;
}

std::string op_run_label(const std::string& name, const std::string& params_json) {
    json p;
    try {
        p = params_json.empty() ? json::object() : json::parse(params_json);
    } catch (const json::exception&) {
        return name;
    }
    std::string args;
    if (p.is_object())
        for (const auto& [key, value] : p.items()) {
            // A linear's m is batch x seq, derived; a matmul's is its own.
            if (note_keys().count(key) && !(key == "m" && name != "linear")) continue;
            std::string v;
            if (value.is_string())
                v = value.get<std::string>();
            else if (value.is_array()) {
                for (const json& e : value)
                    v += (v.empty() ? "" : "+") + (e.is_string() ? e.get<std::string>() : e.dump());
            } else {
                v = value.dump();
            }
            args += fmt::format("{}{}={}", args.empty() ? "" : ",", key, v);
        }
    std::string label = args.empty() ? name : fmt::format("{}({})", name, args);
    // The layer a shape was taken from: two layers of one shape are two measurements.
    if (p.is_object() && p.contains("source") && p["source"].is_string())
        label += " [" + p["source"].get<std::string>() + "]";
    return label;
}

graph op_run_graph(const std::string& name, const std::string& op_class,
                   const std::string& params_json, int64_t batch, nnergy_dtype storage) {
    const params_reader p(name, op_class, params_json);
    builder b(op_run_label(name, params_json), storage);
    if (batch < 1) throw error(fmt::format("{}: batch must be >= 1", p.what()));
    // The dispatch class runs tiny shapes of the other builders, named by params.op.
    std::string op = name;
    if (op_class == "dispatch") {
        op = p.text_or("op", name);
        if (op == "view" || op == "transpose_contiguous" || op == "cat")
            return b.finish(data_movement(b, op, p));
        if (op == "conv2d_depthwise") op = "conv2d";
    }
    if (op_class == "elementwise" ||
        (op_class == "dispatch" && p.text_or("for_class", "") == "elementwise"))
        return b.finish(elementwise(b, p, batch));
    for (const named_builder& nb : k_builders)
        if (op == nb.name) return b.finish(nb.build(b, p, batch));
    std::string known;
    for (const std::string& n : op_run_names()) known += (known.empty() ? "" : ", ") + n;
    throw error(fmt::format("{}: no graph for this op (known: {})", p.what(), known));
}

}  // namespace nnergy
