// SPDX-License-Identifier: Apache-2.0
// Writes ONNX files shaped the way PyTorch 2.x writes them, for the issue-13 validation tests and
// the load benchmark: no binary is committed, nothing is downloaded.
//
//   nnergy_modern_models OUT_DIR [MODEL...]      (no MODEL: all of them)
//
// Two exporter styles:
//  * dynamo (`torch.onnx.export(..., dynamo=True)`): IR 10, opset 18-20, value_info on every
//    tensor (with symbolic `batch`/`seq` and exporter expressions such as `seq + 1`), small
//    constants as initializers named val_N, shapes computed once from Shape(start, end) slices;
//  * classic (`dynamo=False`): IR 8, opset 17, no value_info, every shape constant a `Constant`
//    node, every reshape target computed by Shape -> Gather -> Unsqueeze -> Concat chains, and
//    the graph output's dims named by the exporter (`Gemm3511_dim_0`).
// Weights are EXTERNAL (data_location and location/offset/length entries) and absent, as in
// ../shared/validation/onnx-modern; tensors under 1 KiB are written inline (zeros), as
// onnx.save's size threshold does.
//
// Beside each MODEL.onnx the generator writes MODEL.expected.toml: params (the float
// initializers' elements, from the model's formula below, checked against what was written) and
// MACs at batch=1, seq=128 from a hand formula, independent of nnergy's counting.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

using dims = std::vector<std::string>;
using onnx::TensorProto;

std::string s(int64_t v) { return std::to_string(v); }

enum class style { dynamo, classic };

/// The counts a test checks, with how they were derived.
struct expected {
    int64_t params = 0;
    int64_t macs = 0;
    std::string derivation;
};

class writer {
public:
    writer(style st, int opset, std::string data_file) : st_(st), data_file_(std::move(data_file)) {
        model_.set_ir_version(st == style::dynamo ? 10 : 8);
        model_.set_producer_name("pytorch");
        model_.set_producer_version(st == style::dynamo ? "2.11.0+cpu" : "2.11.0");
        auto* o = model_.add_opset_import();
        o->set_domain("");
        o->set_version(opset);
        g_ = model_.mutable_graph();
        g_->set_name("main_graph");
        nodes_ = g_->mutable_node();
    }

    style st() const { return st_; }
    int64_t float_elements() const { return float_elements_; }
    int nodes() const { return g_->node_size(); }
    onnx::ModelProto& model() { return model_; }
    void set_scope(std::string scope) { scope_ = std::move(scope); }

    void input(const std::string& name, int elem, const dims& d) {
        set_shape(g_->add_input(), name, elem, d);
    }
    void output(const std::string& name, int elem, const dims& d) {
        set_shape(g_->add_output(), name, elem, d);
    }

    /// One node; its outputs get value_info (dynamo, outside functions) with the given shapes.
    onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& in,
                          const std::vector<std::string>& out) {
        auto* n = nodes_->Add();
        n->set_op_type(op);
        n->set_name(st_ == style::dynamo ? "node_" + op + "_" + s(uid_++)
                                         : scope_ + "/" + op + "_" + s(uid_++));
        for (const auto& i : in) n->add_input(i);
        for (const auto& o : out) n->add_output(o);
        return n;
    }

    /// A single-output node with a fresh output name; `d` is its shape for value_info.
    std::string op(const std::string& op_type, const std::vector<std::string>& in, const dims& d,
                   int elem = TensorProto::FLOAT,
                   const std::function<void(onnx::NodeProto*)>& attrs = {}) {
        const std::string out = fresh(op_type);
        auto* n = node(op_type, in, {out});
        if (attrs) attrs(n);
        annotate(out, elem, d);
        return out;
    }

    std::string fresh(const std::string& op_type) {
        if (st_ == style::dynamo) return lower(op_type) + "_" + s(uid_++);
        return scope_ + "/" + op_type + "_" + s(uid_++) + "_output_0";
    }

    void annotate(const std::string& name, int elem, const dims& d) {
        if (st_ == style::dynamo && !in_function_) set_shape(g_->add_value_info(), name, elem, d);
    }

    /// A float weight: external and absent from 1 KiB up, inline zeros below.
    std::string weight(const std::string& name, const std::vector<int64_t>& shape) {
        auto* t = g_->add_initializer();
        t->set_name(name);
        t->set_data_type(TensorProto::FLOAT);
        int64_t n = 1;
        for (auto v : shape) {
            t->add_dims(v);
            n *= v;
        }
        float_elements_ += n;
        place(t, n * 4);
        dims d;
        for (auto v : shape) d.push_back(s(v));
        annotate(name, TensorProto::FLOAT, d);
        return name;
    }

    /// An int64 buffer whose values nnergy does not need (an index table): external.
    std::string index_buffer(const std::string& name, const std::vector<int64_t>& shape) {
        auto* t = g_->add_initializer();
        t->set_name(name);
        t->set_data_type(TensorProto::INT64);
        int64_t n = 1;
        for (auto v : shape) {
            t->add_dims(v);
            n *= v;
        }
        place(t, n * 8);
        return name;
    }

    /// A float scalar of the model's code: a dynamo initializer (a float initializer, so a
    /// parameter), a classic Constant node (not one).
    std::string scalar(float v) {
        if (st_ == style::classic || in_function_) {
            const std::string out = fresh("Constant");
            auto* n = node("Constant", {}, {out});
            auto* a = n->add_attribute();
            a->set_name("value");
            a->set_type(onnx::AttributeProto::TENSOR);
            a->mutable_t()->set_data_type(TensorProto::FLOAT);
            a->mutable_t()->add_float_data(v);
            return out;
        }
        const std::string name = "val_" + s(uid_++);
        auto* t = g_->add_initializer();
        t->set_name(name);
        t->set_data_type(TensorProto::FLOAT);
        t->add_float_data(v);
        float_elements_ += 1;
        annotate(name, TensorProto::FLOAT, {});
        return name;
    }

    /// An int64 constant (shape, axes, index): a dynamo initializer or a classic Constant node;
    /// `scalar_shape` writes a 0-d tensor.
    std::string ints(const std::vector<int64_t>& v, bool scalar_shape = false) {
        TensorProto t;
        t.set_data_type(TensorProto::INT64);
        if (!scalar_shape) t.add_dims(static_cast<int64_t>(v.size()));
        for (auto x : v) t.add_int64_data(x);
        if (st_ == style::classic || in_function_) {
            const std::string out = fresh("Constant");
            auto* n = node("Constant", {}, {out});
            auto* a = n->add_attribute();
            a->set_name("value");
            a->set_type(onnx::AttributeProto::TENSOR);
            *a->mutable_t() = t;
            return out;
        }
        const std::string name = "val_" + s(uid_++);
        t.set_name(name);
        *g_->add_initializer() = t;
        annotate(name, TensorProto::INT64, scalar_shape ? dims{} : dims{s(v.size())});
        return name;
    }

    /// Builds a model-local function; nodes added inside `body` go to it.
    void function(const std::string& domain, const std::string& name,
                  const std::vector<std::string>& in, const std::vector<std::string>& out,
                  int opset, const std::function<void()>& body) {
        auto* f = model_.add_functions();
        f->set_domain(domain);
        f->set_name(name);
        for (const auto& i : in) f->add_input(i);
        for (const auto& o : out) f->add_output(o);
        auto* o = f->add_opset_import();
        o->set_domain("");
        o->set_version(opset);
        auto* saved = nodes_;
        nodes_ = f->mutable_node();
        in_function_ = true;
        body();
        in_function_ = false;
        nodes_ = saved;
    }

    void import_domain(const std::string& domain, int version) {
        auto* o = model_.add_opset_import();
        o->set_domain(domain);
        o->set_version(version);
    }

    void save(const fs::path& file) {
        std::ofstream f(file, std::ios::binary | std::ios::trunc);
        if (!f || !model_.SerializeToOstream(&f))
            throw std::runtime_error("cannot write " + file.string());
    }

private:
    static std::string lower(std::string v) {
        for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return v;
    }

    void place(TensorProto* t, int64_t bytes) {
        if (bytes < 1024) {
            t->set_raw_data(std::string(static_cast<size_t>(bytes), '\0'));
            return;
        }
        t->set_data_location(TensorProto::EXTERNAL);
        auto add = [&](const char* k, const std::string& v) {
            auto* e = t->add_external_data();
            e->set_key(k);
            e->set_value(v);
        };
        add("location", data_file_);
        add("offset", s(offset_));
        add("length", s(bytes));
        offset_ += bytes;
    }

    static void set_shape(onnx::ValueInfoProto* v, const std::string& name, int elem,
                          const dims& d) {
        v->set_name(name);
        auto* t = v->mutable_type()->mutable_tensor_type();
        t->set_elem_type(elem);
        auto* sh = t->mutable_shape();
        for (const auto& x : d) {
            auto* dim = sh->add_dim();
            const bool number =
                !x.empty() && x.find_first_not_of("0123456789") == std::string::npos;
            if (number)
                dim->set_dim_value(std::stoll(x));
            else
                dim->set_dim_param(x);
        }
    }

    style st_;
    std::string data_file_;
    onnx::ModelProto model_;
    onnx::GraphProto* g_ = nullptr;
    google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes_ = nullptr;
    std::string scope_;
    int64_t offset_ = 0;
    int64_t float_elements_ = 0;
    int uid_ = 0;
    bool in_function_ = false;
};

void attr_i(onnx::NodeProto* n, const char* name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
}
void attr_f(onnx::NodeProto* n, const char* name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
}
void attr_ints(onnx::NodeProto* n, const char* name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
}
std::function<void(onnx::NodeProto*)> with_i(const char* name, int64_t v) {
    return [=](onnx::NodeProto* n) { attr_i(n, name, v); };
}
std::function<void(onnx::NodeProto*)> with_ints(const char* name, std::vector<int64_t> v) {
    return [=](onnx::NodeProto* n) { attr_ints(n, name, v); };
}

constexpr int f32 = TensorProto::FLOAT;
constexpr int i64 = TensorProto::INT64;
constexpr int boolean = TensorProto::BOOL;
constexpr int64_t int64_max = std::numeric_limits<int64_t>::max();

// --------------------------------------------------------------------------------------------
// Llama-style decoder, dynamo exporter (transformers' LlamaForCausalLM, eager attention).

struct llama_config {
    int64_t layers, hidden, heads, kv_heads, ffn, vocab;
    bool tied;
    bool functions;  // each RMSNorm a model-local function in domain pkg.custom (older exporter)
};

expected llama(writer& w, const llama_config& c) {
    const int64_t H = c.hidden, hq = c.heads, hkv = c.kv_heads, d = H / hq, F = c.ffn, V = c.vocab,
                  L = c.layers, rep = hq / hkv;
    const std::string hs = s(H);
    w.input("input_ids", i64, {"batch", "seq"});

    // Scalars shared by every layer, as the exporter deduplicates them.
    std::string two, eps;
    if (!c.functions) {
        two = w.scalar(2.0f);
        eps = w.scalar(1e-5f);
    }
    const std::string sqrt_scale = w.scalar(static_cast<float>(std::pow(d, -0.25)));
    const std::string rope_scaling = w.scalar(1.0f);
    const std::string zero = w.scalar(0.0f);
    const std::string neg_inf = w.scalar(-std::numeric_limits<float>::infinity());

    if (c.functions) {
        w.import_domain("pkg.custom", 1);
        w.function("pkg.custom", "LlamaRMSNorm", {"x", "weight"}, {"y"}, 18, [&] {
            const std::string t = w.scalar(2.0f), e = w.scalar(1e-5f);
            const std::string axes = w.ints({-1});
            w.node("Pow", {"x", t}, {"pow"});
            attr_i(w.node("ReduceMean", {"pow", axes}, {"mean"}), "keepdims", 1);
            w.node("Add", {"mean", e}, {"add"});
            w.node("Sqrt", {"add"}, {"sqrt"});
            w.node("Reciprocal", {"sqrt"}, {"rsqrt"});
            w.node("Mul", {"x", "rsqrt"}, {"normed"});
            w.node("Mul", {"weight", "normed"}, {"y"});
        });
    }
    const dims bsh = {"batch", "seq", hs};
    const std::string axes_last = w.ints({-1});
    auto rms_norm = [&](const std::string& x, const std::string& weight_name) {
        const std::string wt = w.weight(weight_name, {H});
        if (c.functions) {
            const std::string out = w.fresh("LlamaRMSNorm");
            w.node("LlamaRMSNorm", {x, wt}, {out})->set_domain("pkg.custom");
            w.annotate(out, f32, bsh);
            return out;
        }
        const std::string p = w.op("Pow", {x, two}, bsh);
        const std::string m =
            w.op("ReduceMean", {p, axes_last}, {"batch", "seq", "1"}, f32, with_i("keepdims", 1));
        const std::string a = w.op("Add", {m, eps}, {"batch", "seq", "1"});
        const std::string r =
            w.op("Reciprocal", {w.op("Sqrt", {a}, {"batch", "seq", "1"})}, {"batch", "seq", "1"});
        return w.op("Mul", {wt, w.op("Mul", {x, r}, bsh)}, bsh);
    };

    // Embedding, sizes, positions.
    const std::string embed = w.weight("model.embed_tokens.weight", {V, H});
    std::string x = w.op("Gather", {embed, "input_ids"}, bsh, f32, with_i("axis", 0));
    const std::string batch_1d = w.op("Shape", {"input_ids"}, {"1"}, i64, [](auto* n) {
        attr_i(n, "start", 0);
        attr_i(n, "end", 1);
    });
    const std::string seq_1d = w.op("Shape", {"input_ids"}, {"1"}, i64, [](auto* n) {
        attr_i(n, "start", 1);
        attr_i(n, "end", 2);
    });
    const std::string seq_0d = w.op("Squeeze", {seq_1d}, {}, i64);
    const std::string arange =
        w.op("Range", {w.ints({0}, true), seq_0d, w.ints({1}, true)}, {"seq"}, i64);
    const std::string position_ids = w.op("Unsqueeze", {arange, w.ints({0})}, {"1", "seq"}, i64);

    // Rotary tables: inv_freq[None, :, None] @ position_ids[:, None, :], then cos and sin.
    const std::string inv_freq = w.weight("model.rotary_emb.inv_freq", {d / 2});
    const std::string inv_u = w.op("Unsqueeze", {inv_freq, w.ints({0, 2})}, {"1", s(d / 2), "1"});
    const std::string pos_f =
        w.op("Cast", {position_ids}, {"1", "seq"}, f32, with_i("to", TensorProto::FLOAT));
    const std::string pos_u = w.op("Unsqueeze", {pos_f, w.ints({1})}, {"1", "1", "seq"});
    const std::string freqs = w.op("MatMul", {inv_u, pos_u}, {"1", s(d / 2), "seq"});
    const std::string freqs_t =
        w.op("Transpose", {freqs}, {"1", "seq", s(d / 2)}, f32, with_ints("perm", {0, 2, 1}));
    const std::string emb =
        w.op("Concat", {freqs_t, freqs_t}, {"1", "seq", s(d)}, f32, with_i("axis", -1));
    const std::string cos =
        w.op("Mul", {w.op("Cos", {emb}, {"1", "seq", s(d)}), rope_scaling}, {"1", "seq", s(d)});
    const std::string sin =
        w.op("Mul", {w.op("Sin", {emb}, {"1", "seq", s(d)}), rope_scaling}, {"1", "seq", s(d)});

    // Causal mask from the positions: kv_idx <= q_idx, expanded to the batch, 0 or -inf.
    const std::string q_idx = w.op("Unsqueeze", {arange, w.ints({1})}, {"seq", "1"}, i64);
    const std::string kv_idx = w.op("Unsqueeze", {arange, w.ints({0})}, {"1", "seq"}, i64);
    const std::string allowed = w.op("LessOrEqual", {kv_idx, q_idx}, {"seq", "seq"}, boolean);
    const std::string allowed4 =
        w.op("Unsqueeze", {allowed, w.ints({0, 1})}, {"1", "1", "seq", "seq"}, boolean);
    const std::string mask_shape =
        w.op("Concat", {batch_1d, w.ints({1}), seq_1d, seq_1d}, {"4"}, i64, with_i("axis", 0));
    const std::string allowed_b =
        w.op("Expand", {allowed4, mask_shape}, {"batch", "1", "seq", "seq"}, boolean);
    const std::string mask =
        w.op("Where", {allowed_b, zero, neg_inf}, {"batch", "1", "seq", "seq"});
    const std::string seq_end = seq_1d;

    const std::string half = s(d / 2);
    auto rotate = [&](const std::string& t, int64_t heads, const std::string& cos_u,
                      const std::string& sin_u) {
        const dims full = {"batch", s(heads), "seq", s(d)};
        const dims halfd = {"batch", s(heads), "seq", half};
        const std::string x1 =
            w.op("Slice", {t, w.ints({0}), w.ints({d / 2}), w.ints({3}), w.ints({1})}, halfd);
        const std::string x2 = w.op(
            "Slice", {t, w.ints({d / 2}), w.ints({int64_max}), w.ints({3}), w.ints({1})}, halfd);
        const std::string rot =
            w.op("Concat", {w.op("Neg", {x2}, halfd), x1}, full, f32, with_i("axis", -1));
        return w.op("Add", {w.op("Mul", {t, cos_u}, full), w.op("Mul", {rot, sin_u}, full)}, full);
    };

    for (int64_t l = 0; l < L; ++l) {
        const std::string p = "model.layers." + s(l) + ".";
        const std::string h = rms_norm(x, p + "input_layernorm.weight");
        auto proj = [&](const std::string& name, int64_t heads) {
            const std::string wt = w.weight(p + "self_attn." + name + ".weight", {H, heads * d});
            const std::string y = w.op("MatMul", {h, wt}, {"batch", "seq", s(heads * d)});
            const std::string shape =
                w.op("Concat", {batch_1d, seq_1d, w.ints({heads}), w.ints({d})}, {"4"}, i64,
                     with_i("axis", 0));
            const std::string r = w.op("Reshape", {y, shape}, {"batch", "seq", s(heads), s(d)}, f32,
                                       with_i("allowzero", 1));
            return w.op("Transpose", {r}, {"batch", s(heads), "seq", s(d)}, f32,
                        with_ints("perm", {0, 2, 1, 3}));
        };
        std::string q = proj("q_proj", hq), k = proj("k_proj", hkv), v = proj("v_proj", hkv);
        const std::string cos_u = w.op("Unsqueeze", {cos, w.ints({1})}, {"1", "1", "seq", s(d)});
        const std::string sin_u = w.op("Unsqueeze", {sin, w.ints({1})}, {"1", "1", "seq", s(d)});
        q = rotate(q, hq, cos_u, sin_u);
        k = rotate(k, hkv, cos_u, sin_u);
        // repeat_kv: [b, kv, s, d] -> [b, kv, rep, s, d] -> [b, heads, s, d].
        auto repeat_kv = [&](const std::string& t) {
            const std::string u =
                w.op("Unsqueeze", {t, w.ints({2})}, {"batch", s(hkv), "1", "seq", s(d)});
            const std::string eshape =
                w.op("Concat", {batch_1d, w.ints({hkv, rep}), seq_1d, w.ints({d})}, {"5"}, i64,
                     with_i("axis", 0));
            const std::string e =
                w.op("Expand", {u, eshape}, {"batch", s(hkv), s(rep), "seq", s(d)});
            const std::string rshape = w.op("Concat", {batch_1d, w.ints({hq}), seq_1d, w.ints({d})},
                                            {"4"}, i64, with_i("axis", 0));
            return w.op("Reshape", {e, rshape}, {"batch", s(hq), "seq", s(d)}, f32,
                        with_i("allowzero", 1));
        };
        k = repeat_kv(k);
        v = repeat_kv(v);
        // Scaled dot-product attention as the exporter decomposes it: q and k^T each scaled by
        // scale^(1/2), the mask sliced to the key length and added.
        const dims qd = {"batch", s(hq), "seq", s(d)};
        const std::string qs = w.op("Mul", {q, sqrt_scale}, qd);
        const std::string kt = w.op("Transpose", {k}, {"batch", s(hq), s(d), "seq"}, f32,
                                    with_ints("perm", {0, 1, 3, 2}));
        const std::string ks = w.op("Mul", {kt, sqrt_scale}, {"batch", s(hq), s(d), "seq"});
        const dims sd = {"batch", s(hq), "seq", "seq"};
        const std::string scores = w.op("MatMul", {qs, ks}, sd);
        const std::string m = w.op("Slice", {mask, w.ints({0}), seq_end, w.ints({3}), w.ints({1})},
                                   {"batch", "1", "seq", "seq"});
        const std::string probs =
            w.op("Softmax", {w.op("Add", {scores, m}, sd)}, sd, f32, with_i("axis", -1));
        const std::string ctx = w.op("MatMul", {probs, v}, qd);
        const std::string ctx_t = w.op("Transpose", {ctx}, {"batch", "seq", s(hq), s(d)}, f32,
                                       with_ints("perm", {0, 2, 1, 3}));
        const std::string oshape =
            w.op("Concat", {batch_1d, seq_1d, w.ints({hq * d})}, {"3"}, i64, with_i("axis", 0));
        const std::string merged = w.op("Reshape", {ctx_t, oshape}, {"batch", "seq", s(hq * d)},
                                        f32, with_i("allowzero", 1));
        const std::string o =
            w.op("MatMul", {merged, w.weight(p + "self_attn.o_proj.weight", {hq * d, H})}, bsh);
        x = w.op("Add", {x, o}, bsh);
        // SwiGLU MLP.
        const std::string h2 = rms_norm(x, p + "post_attention_layernorm.weight");
        const dims fd = {"batch", "seq", s(F)};
        const std::string gate =
            w.op("MatMul", {h2, w.weight(p + "mlp.gate_proj.weight", {H, F})}, fd);
        const std::string silu = w.op("Mul", {gate, w.op("Sigmoid", {gate}, fd)}, fd);
        const std::string up = w.op("MatMul", {h2, w.weight(p + "mlp.up_proj.weight", {H, F})}, fd);
        const std::string down =
            w.op("MatMul",
                 {w.op("Mul", {silu, up}, fd), w.weight(p + "mlp.down_proj.weight", {F, H})}, bsh);
        x = w.op("Add", {x, down}, bsh);
    }
    x = rms_norm(x, "model.norm.weight");
    std::string head;
    if (c.tied)  // lm_head shares the embedding: the exporter transposes it in the graph
        head = w.op("Transpose", {embed}, {hs, s(V)}, f32, with_ints("perm", {1, 0}));
    else
        head = w.weight("lm_head.weight", {H, V});
    const std::string logits = w.op("MatMul", {x, head}, {"batch", "seq", s(V)});
    w.output(logits, f32, {"batch", "seq", s(V)});

    const int64_t S = 128;
    expected e;
    const int64_t scalars = c.functions ? 4 : 6;
    const int64_t per_layer = 2 * H + H * hq * d + 2 * H * hkv * d + hq * d * H + 3 * H * F;
    e.params = V * H * (c.tied ? 1 : 2) + L * per_layer + H + d / 2 + scalars;
    const int64_t layer_macs =
        S * H * hq * d + 2 * S * H * hkv * d + S * hq * d * H + 3 * S * H * F + 2 * hq * S * S * d;
    e.macs = L * layer_macs + S * H * V + (d / 2) * S;
    e.derivation =
        "params = V*H" + std::string(c.tied ? " (tied lm_head)" : "*2") +
        " + L*(2H + H*Hq*d + 2*H*Hkv*d + Hq*d*H + 3*H*F) + H (final norm) + d/2 (inv_freq) + " +
        s(scalars) +
        " float scalar initializers\nmacs (batch 1, seq S=128) = L*(S*H*Hq*d + 2*S*H*Hkv*d + "
        "S*Hq*d*H + 3*S*H*F + 2*Hq*S*S*d) + S*H*V (lm_head) + d/2*S (rotary inv_freq @ "
        "positions)";
    return e;
}

// --------------------------------------------------------------------------------------------
// GPT-2-style decoder, dynamo exporter (LayerNormalization, fused qkv Gemm, Split with
// num_outputs, gelu-tanh written out).

struct gpt_config {
    int64_t layers, hidden, heads, ffn, vocab, positions;
};

expected gpt(writer& w, const gpt_config& c) {
    const int64_t H = c.hidden, h = c.heads, d = H / h, F = c.ffn, L = c.layers;
    const std::string hs = s(H);
    w.input("ids", i64, {"batch", "seq"});
    const std::string scale = w.scalar(static_cast<float>(1.0 / std::sqrt(double(d))));
    const std::string zero = w.scalar(0.0f), neg_inf = w.scalar(-1e30f);
    const std::string half = w.scalar(0.5f), three = w.scalar(3.0f), k044 = w.scalar(0.044715f),
                      sqrt2pi = w.scalar(0.7978845608f), one = w.scalar(1.0f);
    const dims bsh = {"batch", "seq", hs};

    const std::string wte = w.weight("m.wte.weight", {c.vocab, H});
    const std::string wpe = w.weight("m.wpe.weight", {c.positions, H});
    const std::string batch_1d = w.op("Shape", {"ids"}, {"1"}, i64, [](auto* n) {
        attr_i(n, "start", 0);
        attr_i(n, "end", 1);
    });
    const std::string seq_1d = w.op("Shape", {"ids"}, {"1"}, i64, [](auto* n) {
        attr_i(n, "start", 1);
        attr_i(n, "end", 2);
    });
    const std::string seq_0d = w.op("Squeeze", {seq_1d}, {}, i64);
    const std::string arange =
        w.op("Range", {w.ints({0}, true), seq_0d, w.ints({1}, true)}, {"seq"}, i64);
    const std::string pos = w.op("Unsqueeze", {arange, w.ints({0})}, {"1", "seq"}, i64);
    std::string x = w.op("Add",
                         {w.op("Gather", {wte, "ids"}, bsh, f32, with_i("axis", 0)),
                          w.op("Gather", {wpe, pos}, {"1", "seq", hs}, f32, with_i("axis", 0))},
                         bsh);
    // The mask as transformers builds it: positions shifted by one (a `seq + 1` tensor), the
    // segment ids by CumSum, causal and same-segment tests joined by And, then Where.
    const std::string one_i = w.ints({1}, true);
    const std::string first =
        w.op("Slice", {pos, w.ints({0}), w.ints({1}), w.ints({1})}, {"1", "1"}, i64);
    const std::string cat = w.op("Concat", {w.op("Sub", {first, one_i}, {"1", "1"}, i64), pos},
                                 {"1", "seq + 1"}, i64, with_i("axis", -1));
    const std::string prev =
        w.op("Slice", {cat, w.ints({0}), w.ints({-1}), w.ints({1})}, {"1", "seq"}, i64);
    const std::string next =
        w.op("Slice", {cat, w.ints({1}), w.ints({int64_max}), w.ints({1})}, {"1", "seq"}, i64);
    const std::string step = w.op("Sub", {next, prev}, {"1", "seq"}, i64);
    const std::string jump =
        w.op("Not", {w.op("Equal", {step, one_i}, {"1", "seq"}, boolean)}, {"1", "seq"}, boolean);
    const std::string segment =
        w.op("CumSum",
             {w.op("Cast", {jump}, {"1", "seq"}, i64, with_i("to", TensorProto::INT64)),
              w.ints({1}, true)},
             {"1", "seq"}, i64);
    const std::string causal = w.op("LessOrEqual",
                                    {w.op("Unsqueeze", {arange, w.ints({0})}, {"1", "seq"}, i64),
                                     w.op("Unsqueeze", {arange, w.ints({1})}, {"seq", "1"}, i64)},
                                    {"seq", "seq"}, boolean);
    const std::string same =
        w.op("Equal",
             {w.op("Unsqueeze", {segment, w.ints({2})}, {"1", "seq", "1"}, i64),
              w.op("Unsqueeze", {segment, w.ints({1})}, {"1", "1", "seq"}, i64)},
             {"1", "seq", "seq"}, boolean);
    const std::string allowed =
        w.op("Unsqueeze", {w.op("And", {causal, same}, {"1", "seq", "seq"}, boolean), w.ints({1})},
             {"1", "1", "seq", "seq"}, boolean);
    const std::string mask = w.op("Where", {allowed, zero, neg_inf}, {"1", "1", "seq", "seq"});

    const std::map<int64_t, std::string> to_2d = {{H, w.ints({-1, H})}, {F, w.ints({-1, F})}};
    const std::string shape_3h =
        w.op("Concat", {batch_1d, seq_1d, w.ints({3 * H})}, {"3"}, i64, with_i("axis", 0));
    const std::string shape_h =
        w.op("Concat", {batch_1d, seq_1d, w.ints({H})}, {"3"}, i64, with_i("axis", 0));
    const std::string shape_f =
        w.op("Concat", {batch_1d, seq_1d, w.ints({F})}, {"3"}, i64, with_i("axis", 0));
    const std::string shape_heads =
        w.op("Concat", {batch_1d, seq_1d, w.ints({h, d})}, {"4"}, i64, with_i("axis", 0));
    auto layer_norm = [&](const std::string& t, const std::string& name) {
        return w.op("LayerNormalization",
                    {t, w.weight(name + ".weight", {H}), w.weight(name + ".bias", {H})}, bsh, f32,
                    [](auto* n) {
                        attr_i(n, "axis", -1);
                        attr_f(n, "epsilon", 1e-5f);
                        attr_i(n, "stash_type", 1);
                    });
    };
    auto gemm = [&](const std::string& t, const std::string& name, int64_t in, int64_t out,
                    const std::string& shape3, const dims& d3) {
        const std::string t2 =
            w.op("Reshape", {t, to_2d.at(in)}, {"batch*seq", s(in)}, f32, with_i("allowzero", 1));
        const std::string y = w.op(
            "Gemm", {t2, w.weight(name + ".weight", {in, out}), w.weight(name + ".bias", {out})},
            {"batch*seq", s(out)});
        return w.op("Reshape", {y, shape3}, d3, f32, with_i("allowzero", 1));
    };
    for (int64_t l = 0; l < L; ++l) {
        const std::string p = "m.h." + s(l) + ".";
        const std::string a = layer_norm(x, p + "ln_1");
        const std::string qkv =
            gemm(a, p + "attn.c_attn", H, 3 * H, shape_3h, {"batch", "seq", s(3 * H)});
        auto* split =
            w.node("Split", {qkv}, {w.fresh("split"), w.fresh("split"), w.fresh("split")});
        attr_i(split, "axis", 2);
        attr_i(split, "num_outputs", 3);
        for (int i = 0; i < 3; ++i) w.annotate(split->output(i), f32, bsh);
        const dims heads4 = {"batch", "seq", s(h), s(d)};
        auto heads = [&](int i, std::vector<int64_t> perm, const dims& out) {
            const std::string r = w.op("Reshape", {split->output(i), shape_heads}, heads4, f32,
                                       with_i("allowzero", 1));
            return w.op("Transpose", {r}, out, f32, with_ints("perm", perm));
        };
        const std::string q = heads(0, {0, 2, 1, 3}, {"batch", s(h), "seq", s(d)});
        const std::string kt = heads(1, {0, 2, 3, 1}, {"batch", s(h), s(d), "seq"});
        const std::string v = heads(2, {0, 2, 1, 3}, {"batch", s(h), "seq", s(d)});
        const dims sd = {"batch", s(h), "seq", "seq"};
        const std::string scores =
            w.op("Add", {w.op("Mul", {w.op("MatMul", {q, kt}, sd), scale}, sd), mask}, sd);
        const std::string probs = w.op("Softmax", {scores}, sd, f32, with_i("axis", -1));
        const std::string ctx =
            w.op("Transpose", {w.op("MatMul", {probs, v}, {"batch", s(h), "seq", s(d)})}, heads4,
                 f32, with_ints("perm", {0, 2, 1, 3}));
        const std::string merged =
            w.op("Reshape", {ctx, shape_h}, bsh, f32, with_i("allowzero", 1));
        x = w.op("Add", {gemm(merged, p + "attn.c_proj", H, H, shape_h, bsh), x}, bsh);
        const std::string m = layer_norm(x, p + "ln_2");
        const dims fd = {"batch", "seq", s(F)};
        const std::string fc = gemm(m, p + "mlp.c_fc", H, F, shape_f, fd);
        // gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        const std::string inner = w.op(
            "Mul",
            {w.op("Add", {fc, w.op("Mul", {w.op("Pow", {fc, three}, fd), k044}, fd)}, fd), sqrt2pi},
            fd);
        const std::string gelu = w.op(
            "Mul", {w.op("Mul", {fc, half}, fd), w.op("Add", {w.op("Tanh", {inner}, fd), one}, fd)},
            fd);
        x = w.op("Add", {x, gemm(gelu, p + "mlp.c_proj", F, H, shape_h, bsh)}, bsh);
    }
    x = layer_norm(x, "m.ln_f");
    w.output(x, f32, bsh);

    const int64_t S = 128;
    expected e;
    e.params = c.vocab * H + c.positions * H +
               L * (2 * H + H * 3 * H + 3 * H + H * H + H + 2 * H + H * F + F + F * H + H) + 2 * H +
               8;
    e.macs = L * (S * H * 3 * H + 2 * S * S * H + S * H * H + 2 * S * H * F);
    e.derivation =
        "params = V*H + P*H + L*(2H + 3H^2+3H + H^2+H + 2H + H*F+F + F*H+H) + 2H (ln_f) + 8 "
        "float scalar initializers\nmacs (batch 1, S=128) = L*(3*S*H^2 + 2*S^2*H + S*H^2 + "
        "2*S*H*F)";
    return e;
}

// --------------------------------------------------------------------------------------------
// A small CNN, dynamo exporter: Conv+Relu, MaxPool, ReduceMean with axes as an input, Gemm.

expected cnn(writer& w) {
    w.input("x", f32, {"batch", "3", "64", "64"});
    struct stage {
        int64_t cin, cout, size;
        bool pool;
    };
    const std::vector<stage> stages = {{3, 16, 64, true}, {16, 32, 32, true}, {32, 64, 16, false}};
    std::string x = "x";
    int i = 0;
    for (const auto& st : stages) {
        const std::string p = "features." + s(2 * i++) + ".";
        const dims out = {"batch", s(st.cout), s(st.size), s(st.size)};
        x = w.op(
            "Conv",
            {x, w.weight(p + "weight", {st.cout, st.cin, 3, 3}), w.weight(p + "bias", {st.cout})},
            out, f32, [](auto* n) {
                attr_ints(n, "kernel_shape", {3, 3});
                attr_ints(n, "pads", {1, 1, 1, 1});
                attr_ints(n, "strides", {1, 1});
                attr_ints(n, "dilations", {1, 1});
                attr_i(n, "group", 1);
            });
        x = w.op("Relu", {x}, out);
        if (st.pool)
            x = w.op("MaxPool", {x}, {"batch", s(st.cout), s(st.size / 2), s(st.size / 2)}, f32,
                     [](auto* n) {
                         attr_ints(n, "kernel_shape", {2, 2});
                         attr_ints(n, "strides", {2, 2});
                         attr_ints(n, "pads", {0, 0, 0, 0});
                         attr_i(n, "ceil_mode", 0);
                     });
    }
    x = w.op("ReduceMean", {x, w.ints({2, 3})}, {"batch", "64"}, f32, with_i("keepdims", 0));
    const std::string y =
        w.op("Gemm", {x, w.weight("fc.weight", {10, 64}), w.weight("fc.bias", {10})},
             {"batch", "10"}, f32, with_i("transB", 1));
    w.output(y, f32, {"batch", "10"});
    expected e;
    e.params = (16 * 3 * 9 + 16) + (32 * 16 * 9 + 32) + (64 * 32 * 9 + 64) + (10 * 64 + 10);
    e.macs = 16 * 64 * 64 * (3 * 9) + 32 * 32 * 32 * (16 * 9) + 64 * 16 * 16 * (32 * 9) + 64 * 10;
    e.derivation =
        "params = sum over convs of Cout*Cin*3*3 + Cout, plus the Gemm's 10*64 + 10\n"
        "macs (batch 1) = sum over convs of Cout*Hout*Wout*Cin*9 + 64*10";
    return e;
}

// --------------------------------------------------------------------------------------------
// Classic exporter helpers: shape values from Shape -> Gather, lists by Unsqueeze -> Concat.

struct classic {
    writer& w;
    /// `t.shape[i]` as the tracer records it: a fresh Shape, an index Constant, a Gather.
    std::string dim(const std::string& t, int64_t i) {
        const std::string sh = w.op("Shape", {t}, {}, i64);
        return w.op("Gather", {sh, w.ints({i}, true)}, {}, i64, with_i("axis", 0));
    }
    std::string unsq(const std::string& scalar) {
        return w.op("Unsqueeze", {scalar, w.ints({0})}, {}, i64);
    }
    /// A reshape whose target list mixes traced values (names) and literals (numbers).
    std::string reshape(const std::string& t, const std::vector<std::string>& parts) {
        std::vector<std::string> in;
        for (const auto& p : parts) {
            const bool literal = p.find_first_not_of("-0123456789") == std::string::npos;
            in.push_back(literal ? w.ints({std::stoll(p)}) : unsq(p));
        }
        const std::string shape = w.op("Concat", in, {}, i64, with_i("axis", 0));
        return w.op("Reshape", {t, shape}, {}, f32, with_i("allowzero", 0));
    }
    std::string linear(const std::string& t, const std::string& name, int64_t in, int64_t out,
                       bool bias = true) {
        // The classic exporter stores the transposed weight as onnx::MatMul_N.
        std::string y = w.op("MatMul", {t, w.weight("onnx::MatMul_" + name, {in, out})}, {});
        if (bias) y = w.op("Add", {w.weight(name + ".bias", {out}), y}, {});
        return y;
    }
    std::string layer_norm(const std::string& t, const std::string& name, int64_t c, float eps) {
        return w.op("LayerNormalization",
                    {t, w.weight(name + ".weight", {c}), w.weight(name + ".bias", {c})}, {}, f32,
                    [=](auto* n) {
                        attr_i(n, "axis", -1);
                        attr_f(n, "epsilon", eps);
                    });
    }
    /// GELU at opset 17: x * 0.5 * (1 + erf(x / sqrt 2)).
    std::string gelu(const std::string& t) {
        const std::string e = w.op("Erf", {w.op("Div", {t, w.scalar(1.4142135f)}, {})}, {});
        const std::string m = w.op("Mul", {t, w.op("Add", {e, w.scalar(1.0f)}, {})}, {});
        return w.op("Mul", {m, w.scalar(0.5f)}, {});
    }
    std::string slice(const std::string& t, int64_t axis, const std::string& start,
                      const std::string& end, int64_t step = 1) {
        std::vector<std::string> in = {t, start, end, w.ints({axis})};
        if (step != 1) in.push_back(w.ints({step}));
        return w.op("Slice", in, {});
    }
    /// torch.roll(t, shift, axis) for shift in (-size, size): two Slices and a Concat.
    std::string roll(const std::string& t, int64_t shift, int64_t axis) {
        const std::string cut = w.ints({-shift});
        const std::string tail = slice(t, axis, cut, w.ints({int64_max}));
        const std::string head = slice(t, axis, w.ints({0}), cut);
        return w.op("Concat", {tail, head}, {}, f32, with_i("axis", axis));
    }
};

/// torchvision's shifted-window mask, built in the forward pass from the padded size as the
/// classic exporter records it: zeros of [pH, pW], nine region assignments (each a ScatterND
/// over Range-built indices), windows, pairwise differences, then -100 where they differ.
std::string shift_mask(classic& k, const std::string& pH, const std::string& pW, int64_t ws,
                       int64_t shift, int64_t nW) {
    writer& w = k.w;
    const std::string size = w.op("Concat", {k.unsq(pH), k.unsq(pW)}, {}, i64, with_i("axis", 0));
    std::string mask = w.op("ConstantOfShape", {size}, {}, f32, [](auto* n) {
        auto* a = n->add_attribute();
        a->set_name("value");
        a->set_type(onnx::AttributeProto::TENSOR);
        a->mutable_t()->set_data_type(TensorProto::FLOAT);
        a->mutable_t()->add_dims(1);
        a->mutable_t()->add_float_data(0.0f);
    });
    // Slice bounds (0, -ws), (-ws, -shift), (-shift, end) of each axis; negative ones are
    // offsets from the traced size.
    auto bound = [&](const std::string& extent, int64_t v, bool end) {
        if (end && v == 0) return extent;
        if (v >= 0) return w.ints({v}, true);
        return w.op("Add", {extent, w.ints({v}, true)}, {}, i64);
    };
    const std::vector<std::pair<int64_t, int64_t>> slices = {{0, -ws}, {-ws, -shift}, {-shift, 0}};
    int count = 0;
    for (auto [h0, h1] : slices)
        for (auto [c0, c1] : slices) {
            const std::string rows = w.op(
                "Range", {bound(pH, h0, false), bound(pH, h1, true), w.ints({1}, true)}, {}, i64);
            const std::string cols = w.op(
                "Range", {bound(pW, c0, false), bound(pW, c1, true), w.ints({1}, true)}, {}, i64);
            const std::string shape =
                w.op("Concat", {w.op("Shape", {rows}, {}, i64), w.op("Shape", {cols}, {}, i64)}, {},
                     i64, with_i("axis", 0));
            const std::string r =
                w.op("Expand", {w.op("Unsqueeze", {rows, w.ints({1})}, {}, i64), shape}, {}, i64);
            const std::string c =
                w.op("Expand", {w.op("Unsqueeze", {cols, w.ints({0})}, {}, i64), shape}, {}, i64);
            const std::string idx = w.op("Concat",
                                         {w.op("Unsqueeze", {r, w.ints({2})}, {}, i64),
                                          w.op("Unsqueeze", {c, w.ints({2})}, {}, i64)},
                                         {}, i64, with_i("axis", 2));
            const std::string upd =
                w.op("Expand", {w.scalar(static_cast<float>(count++)), shape}, {}, f32);
            mask = w.op("ScatterND", {mask, idx, upd}, {});
        }
    const std::string nh = w.op("Div", {pH, w.ints({ws}, true)}, {}, i64);
    const std::string nw = w.op("Div", {pW, w.ints({ws}, true)}, {}, i64);
    mask = k.reshape(mask, {nh, s(ws), nw, s(ws)});
    mask = w.op("Transpose", {mask}, {}, f32, with_ints("perm", {0, 2, 1, 3}));
    mask = k.reshape(mask, {s(nW), s(ws * ws)});
    mask = w.op(
        "Sub",
        {w.op("Unsqueeze", {mask, w.ints({1})}, {}), w.op("Unsqueeze", {mask, w.ints({2})}, {})},
        {});
    const std::string differ =
        w.op("Not", {w.op("Equal", {mask, w.scalar(0.0f)}, {}, boolean)}, {}, boolean);
    mask = w.op("Where", {differ, w.scalar(-100.0f), mask}, {});
    const std::string same = w.op("Equal", {mask, w.scalar(0.0f)}, {}, boolean);
    return w.op("Where", {same, w.scalar(0.0f), mask}, {});
}

// --------------------------------------------------------------------------------------------
// Swin-T-style classifier, classic exporter (torchvision's swin_t at 224x224).

struct swin_config {
    std::vector<int64_t> depths, heads;
    int64_t embed = 96, window = 7, classes = 1000, image = 224;
};

expected swin(writer& w, const swin_config& c) {
    classic k{w};
    w.input("input", f32, {"batch", "3", s(c.image), s(c.image)});
    w.set_scope("/features/features.0/features.0.0");
    const int64_t ws = c.window, n_win = ws * ws, table = (2 * ws - 1) * (2 * ws - 1);
    std::string x = w.op("Conv",
                         {"input", w.weight("features.0.0.weight", {c.embed, 3, 4, 4}),
                          w.weight("features.0.0.bias", {c.embed})},
                         {}, f32, [](auto* n) {
                             attr_ints(n, "kernel_shape", {4, 4});
                             attr_ints(n, "strides", {4, 4});
                             attr_ints(n, "pads", {0, 0, 0, 0});
                             attr_ints(n, "dilations", {1, 1});
                             attr_i(n, "group", 1);
                         });
    x = w.op("Transpose", {x}, {}, f32, with_ints("perm", {0, 2, 3, 1}));
    x = k.layer_norm(x, "features.0.2", c.embed, 1e-5f);

    int64_t C = c.embed, R = c.image / 4;
    int64_t params = c.embed * 3 * 16 + c.embed + 2 * c.embed;
    int64_t macs = (R * R * c.embed) * (3 * 16);
    std::string derivation =
        "params = patch Conv 96*3*4*4+96, LN 2*96; per block 2C + (3C^2+3C) + 169*heads + "
        "(C^2+C) + 2C + (4C^2+4C) + (4C^2+C); per merge 2*4C + 4C*2C; final LN 2*768; head "
        "768*1000+1000\nmacs (batch 1) = Conv N0*96*48 with N0=56*56; per block with N=R^2 "
        "tokens: 12*N*C^2 + 2*N*49*C (windowed QK^T and AV); per merge (R/2)^2*4C*2C; head "
        "768*1000";
    int block_index = 0;
    for (size_t stage = 0; stage < c.depths.size(); ++stage) {
        const int64_t h = c.heads[stage], d = C / h, nW = (R / ws) * (R / ws);
        for (int64_t b = 0; b < c.depths[stage]; ++b, ++block_index) {
            const std::string p = "features." + s(1 + 2 * stage) + "." + s(b) + ".";
            w.set_scope("/features/features." + s(1 + 2 * stage) + "/features." + s(1 + 2 * stage) +
                        "." + s(b));
            // torchvision: no shift where the window covers the whole map.
            const int64_t shift = (b % 2 == 1 && ws < R) ? ws / 2 : 0;
            const std::string y0 = k.layer_norm(x, p + "norm1", C, 1e-5f);
            // B, H, W, C = x.shape; pad to multiples of the window (zero pads here).
            const std::string B = k.dim(y0, 0), Hh = k.dim(y0, 1), Ww = k.dim(y0, 2);
            auto pad_of = [&](const std::string& size) {
                const std::string m = w.op("Mod", {size, w.ints({ws}, true)}, {}, i64);
                const std::string r = w.op("Sub", {w.ints({ws}, true), m}, {}, i64);
                return w.op("Mod", {r, w.ints({ws}, true)}, {}, i64);
            };
            const std::string pad_r = pad_of(Ww), pad_b = pad_of(Hh);
            const std::string pads =
                w.op("Concat", {w.ints({0, 0, 0, 0, 0}), k.unsq(pad_b), k.unsq(pad_r), w.ints({0})},
                     {}, i64, with_i("axis", 0));
            std::string y = w.op("Pad", {y0, pads, w.scalar(0.0f)}, {}, f32, [](auto* n) {
                auto* a = n->add_attribute();
                a->set_name("mode");
                a->set_type(onnx::AttributeProto::STRING);
                a->set_s("constant");
            });
            const std::string pH = k.dim(y, 1), pW = k.dim(y, 2);
            if (shift) y = k.roll(k.roll(y, -shift, 1), -shift, 2);
            // Window partition.
            const std::string nh = w.op("Div", {pH, w.ints({ws}, true)}, {}, i64);
            const std::string nw = w.op("Div", {pW, w.ints({ws}, true)}, {}, i64);
            y = k.reshape(y, {B, nh, s(ws), nw, s(ws), k.dim(y, 3)});
            y = w.op("Transpose", {y}, {}, f32, with_ints("perm", {0, 1, 3, 2, 4, 5}));
            const std::string bw = w.op("Mul", {B, w.op("Mul", {nh, nw}, {}, i64)}, {}, i64);
            y = k.reshape(y, {bw, s(n_win), s(C)});
            // Attention in windows.
            std::string qkv = k.linear(y, p + "attn.qkv", C, 3 * C);
            qkv = k.reshape(qkv, {k.dim(y, 0), k.dim(y, 1), "3", s(h), s(d)});
            qkv = w.op("Transpose", {qkv}, {}, f32, with_ints("perm", {2, 0, 3, 1, 4}));
            auto part = [&](int64_t i) {
                return w.op("Gather", {qkv, w.ints({i}, true)}, {}, f32, with_i("axis", 0));
            };
            const std::string q = w.op(
                "Mul", {part(0), w.scalar(static_cast<float>(1.0 / std::sqrt(double(d))))}, {});
            const std::string kt =
                w.op("Transpose", {part(1)}, {}, f32, with_ints("perm", {0, 1, 3, 2}));
            const std::string v = part(2);
            std::string attn = w.op("MatMul", {q, kt}, {});
            const std::string index =
                w.index_buffer(p + "attn.relative_position_index", {n_win * n_win});
            std::string bias = w.op(
                "Gather", {w.weight(p + "attn.relative_position_bias_table", {table, h}), index},
                {}, f32, with_i("axis", 0));
            bias = w.op("Reshape", {bias, w.ints({n_win, n_win, -1})}, {}, f32);
            bias = w.op("Transpose", {bias}, {}, f32, with_ints("perm", {2, 0, 1}));
            bias = w.op("Unsqueeze", {bias, w.ints({0})}, {}, f32);
            attn = w.op("Add", {attn, bias}, {});
            if (shift) {
                const std::string per_image =
                    w.op("Div", {k.dim(attn, 0), w.ints({nW}, true)}, {}, i64);
                attn = k.reshape(attn, {per_image, s(nW), s(h), s(n_win), s(n_win)});
                const std::string m = w.op(
                    "Unsqueeze",
                    {w.op("Unsqueeze", {shift_mask(k, pH, pW, ws, shift, nW), w.ints({1})}, {}),
                     w.ints({0})},
                    {});
                attn = w.op("Add", {attn, m}, {});
                attn = k.reshape(attn, {"-1", s(h), s(n_win), s(n_win)});
            }
            attn = w.op("Softmax", {attn}, {}, f32, with_i("axis", -1));
            std::string o = w.op("MatMul", {attn, v}, {});
            o = w.op("Transpose", {o}, {}, f32, with_ints("perm", {0, 2, 1, 3}));
            o = k.reshape(o, {k.dim(o, 0), k.dim(o, 1), s(C)});
            o = k.linear(o, p + "attn.proj", C, C);
            // Window reverse, unshift, crop.
            o = k.reshape(o, {B, nh, nw, s(ws), s(ws), s(C)});
            o = w.op("Transpose", {o}, {}, f32, with_ints("perm", {0, 1, 3, 2, 4, 5}));
            o = k.reshape(o, {B, pH, pW, s(C)});
            if (shift) o = k.roll(k.roll(o, shift, 1), shift, 2);
            o = k.slice(o, 1, w.ints({0}), k.unsq(Hh));
            o = k.slice(o, 2, w.ints({0}), k.unsq(Ww));
            x = w.op("Add", {x, o}, {});
            // MLP.
            std::string m = k.layer_norm(x, p + "norm2", C, 1e-5f);
            m = k.linear(k.gelu(k.linear(m, p + "mlp.0", C, 4 * C)), p + "mlp.3", 4 * C, C);
            x = w.op("Add", {x, m}, {});

            params += 2 * C + (3 * C * C + 3 * C) + table * h + (C * C + C) + 2 * C +
                      (4 * C * C + 4 * C) + (4 * C * C + C);
            macs += 12 * R * R * C * C + 2 * R * R * n_win * C;
        }
        if (stage + 1 < c.depths.size()) {
            // Patch merging: pad to even, four strided slices, concat, norm, reduction.
            const std::string p = "features." + s(2 + 2 * stage) + ".";
            w.set_scope("/features/features." + s(2 + 2 * stage));
            const std::string Hh = k.dim(x, 1), Ww = k.dim(x, 2);
            auto odd = [&](const std::string& v) {
                return k.unsq(w.op("Mod", {v, w.ints({2}, true)}, {}, i64));
            };
            const std::string pads =
                w.op("Concat", {w.ints({0, 0, 0, 0, 0}), odd(Hh), odd(Ww), w.ints({0})}, {}, i64,
                     with_i("axis", 0));
            const std::string y = w.op("Pad", {x, pads, w.scalar(0.0f)}, {}, f32);
            std::vector<std::string> quarters;
            for (auto [r0, c0] :
                 std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 0}, {0, 1}, {1, 1}}) {
                const std::string rows = k.slice(y, 1, w.ints({r0}), w.ints({int64_max}), 2);
                quarters.push_back(k.slice(rows, 2, w.ints({c0}), w.ints({int64_max}), 2));
            }
            x = w.op("Concat", quarters, {}, f32, with_i("axis", -1));
            x = k.layer_norm(x, p + "norm", 4 * C, 1e-5f);
            x = k.linear(x, p + "reduction", 4 * C, 2 * C, false);
            params += 2 * 4 * C + 4 * C * 2 * C;
            macs += (R / 2) * (R / 2) * 4 * C * 2 * C;
            C *= 2;
            R /= 2;
        }
    }
    w.set_scope("");
    x = k.layer_norm(x, "norm", C, 1e-5f);
    x = w.op("Transpose", {x}, {}, f32, with_ints("perm", {0, 3, 1, 2}));
    x = w.op("GlobalAveragePool", {x}, {});
    x = w.op("Flatten", {x}, {}, f32, with_i("axis", 1));
    const std::string out = "3511";
    auto* n = w.node(
        "Gemm", {x, w.weight("head.weight", {c.classes, C}), w.weight("head.bias", {c.classes})},
        {out});
    n->set_name("/head/Gemm");
    attr_f(n, "alpha", 1.0f);
    attr_f(n, "beta", 1.0f);
    attr_i(n, "transB", 1);
    w.output(out, f32, {"Gemm3511_dim_0", s(c.classes)});
    params += 2 * C + C * c.classes + c.classes;
    macs += C * c.classes;
    return {params, macs, derivation};
}

// --------------------------------------------------------------------------------------------
// BERT-style encoder, classic exporter (attention mask input, Erf GELU, LayerNormalization).

struct bert_config {
    int64_t layers, hidden, heads, ffn, vocab, positions;
};

expected bert(writer& w, const bert_config& c) {
    classic k{w};
    const int64_t H = c.hidden, h = c.heads, d = H / h, F = c.ffn, L = c.layers;
    w.input("input_ids", i64, {"batch", "seq"});
    w.input("attention_mask", i64, {"batch", "seq"});
    w.set_scope("/embeddings");
    const std::string seq = k.dim("input_ids", 1);
    // position_ids[:, :seq] from the registered buffer.
    const std::string pos_ids = k.slice(w.index_buffer("embeddings.position_ids", {1, c.positions}),
                                        1, w.ints({0}), k.unsq(seq));
    std::string x = w.op(
        "Add",
        {w.op("Gather", {w.weight("embeddings.word_embeddings.weight", {c.vocab, H}), "input_ids"},
              {}),
         w.op("Gather",
              {w.weight("embeddings.position_embeddings.weight", {c.positions, H}), pos_ids}, {})},
        {});
    x = k.layer_norm(x, "embeddings.LayerNorm", H, 1e-12f);
    // Extended mask: (1 - mask[:, None, None, :]) * finfo.min.
    w.set_scope("");
    std::string m = w.op("Unsqueeze", {"attention_mask", w.ints({1, 2})}, {}, i64);
    m = w.op("Cast", {m}, {}, f32, with_i("to", TensorProto::FLOAT));
    m = w.op("Mul", {w.op("Sub", {w.scalar(1.0f), m}, {}), w.scalar(-3.4028e38f)}, {});
    for (int64_t l = 0; l < L; ++l) {
        const std::string p = "encoder.layer." + s(l) + ".";
        w.set_scope("/encoder/layer." + s(l) + "/attention/self");
        auto heads = [&](const std::string& name, bool transpose_k) {
            const std::string t = k.linear(x, p + "attention.self." + name, H, H);
            const std::string r = k.reshape(t, {k.dim(t, 0), k.dim(t, 1), s(h), s(d)});
            return w.op("Transpose", {r}, {}, f32,
                        with_ints("perm", transpose_k ? std::vector<int64_t>{0, 2, 3, 1}
                                                      : std::vector<int64_t>{0, 2, 1, 3}));
        };
        const std::string q = heads("query", false), kt = heads("key", true),
                          v = heads("value", false);
        std::string sc = w.op("MatMul", {q, kt}, {});
        sc = w.op("Div", {sc, w.scalar(static_cast<float>(std::sqrt(double(d))))}, {});
        sc = w.op("Softmax", {w.op("Add", {sc, m}, {})}, {}, f32, with_i("axis", -1));
        std::string ctx = w.op("Transpose", {w.op("MatMul", {sc, v}, {})}, {}, f32,
                               with_ints("perm", {0, 2, 1, 3}));
        ctx = k.reshape(ctx, {k.dim(ctx, 0), k.dim(ctx, 1), s(H)});
        w.set_scope("/encoder/layer." + s(l) + "/attention/output");
        x = k.layer_norm(w.op("Add", {k.linear(ctx, p + "attention.output.dense", H, H), x}, {}),
                         p + "attention.output.LayerNorm", H, 1e-12f);
        w.set_scope("/encoder/layer." + s(l) + "/intermediate");
        const std::string inter = k.gelu(k.linear(x, p + "intermediate.dense", H, F));
        w.set_scope("/encoder/layer." + s(l) + "/output");
        x = k.layer_norm(w.op("Add", {k.linear(inter, p + "output.dense", F, H), x}, {}),
                         p + "output.LayerNorm", H, 1e-12f);
    }
    w.output(x, f32, {"LayerNormalization1417_dim_0", "LayerNormalization1417_dim_1", s(H)});
    const int64_t S = 128;
    expected e;
    e.params = c.vocab * H + c.positions * H + 2 * H +
               L * (4 * (H * H + H) + 2 * H + (H * F + F) + (F * H + H) + 2 * H);
    e.macs = L * (4 * S * H * H + 2 * S * S * H + 2 * S * H * F);
    e.derivation =
        "params = V*H + P*H + 2H + L*(4(H^2+H) + 2H + H*F+F + F*H+H + 2H)\n"
        "macs (batch 1, S=128) = L*(4*S*H^2 + 2*S^2*H + 2*S*H*F)";
    return e;
}

// --------------------------------------------------------------------------------------------

struct model_spec {
    const char* name;
    style st;
    int opset;
    std::function<expected(writer&)> build;
};

const std::vector<model_spec>& specs() {
    static const std::vector<model_spec> all = {
        // Llama-3.2-1B's shape: hidden 2048, 16 layers, 32 heads, 8 KV heads, FFN 8192,
        // vocab 128256, tied embeddings.
        {"llama_1b_dynamo", style::dynamo, 20,
         [](writer& w) {
             return llama(w, {16, 2048, 32, 8, 8192, 128256, true, false});
         }},
        {"llama_1b_functions", style::dynamo, 18,
         [](writer& w) {
             return llama(w, {16, 2048, 32, 8, 8192, 128256, true, true});
         }},
        {"llama_small_untied", style::dynamo, 18,
         [](writer& w) {
             return llama(w, {2, 256, 8, 2, 688, 1000, false, false});
         }},
        {"gpt_small_dynamo", style::dynamo, 20,
         [](writer& w) {
             return gpt(w, {4, 256, 4, 1024, 5000, 256});
         }},
        {"cnn_dynamo", style::dynamo, 20, [](writer& w) { return cnn(w); }},
        {"bert_small_classic", style::classic, 17,
         [](writer& w) {
             return bert(w, {4, 256, 4, 1024, 3000, 512});
         }},
        // torchvision swin_t: embed 96, depths 2-2-6-2, heads 3-6-12-24, window 7.
        {"swin_t_classic", style::classic, 17,
         [](writer& w) {
             return swin(w, {{2, 2, 6, 2}, {3, 6, 12, 24}});
         }},
        // torchvision swin_s: as swin_t with 18 blocks in the third stage.
        {"swin_s_classic", style::classic, 17,
         [](writer& w) {
             return swin(w, {{2, 2, 18, 2}, {3, 6, 12, 24}});
         }},
    };
    return all;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: nnergy_modern_models OUT_DIR [MODEL...]\n");
        return 2;
    }
    try {
        const fs::path out = argv[1];
        fs::create_directories(out);
        std::vector<std::string> wanted(argv + 2, argv + argc);
        int written = 0;
        for (const auto& spec : specs()) {
            if (!wanted.empty() &&
                std::find(wanted.begin(), wanted.end(), spec.name) == wanted.end())
                continue;
            writer w(spec.st, spec.opset, std::string(spec.name) + ".onnx.data");
            const expected e = spec.build(w);
            // The formula and the file must agree: a formula that misses a tensor fails here.
            if (e.params != w.float_elements())
                throw std::runtime_error(std::string(spec.name) + ": the params formula gives " +
                                         std::to_string(e.params) + " but " +
                                         std::to_string(w.float_elements()) +
                                         " float elements were written");
            w.save(out / (std::string(spec.name) + ".onnx"));
            std::ofstream f(out / (std::string(spec.name) + ".expected.toml"), std::ios::trunc);
            std::string derivation = e.derivation;
            for (size_t i = 0; (i = derivation.find('\n', i)) != std::string::npos; i += 3)
                derivation.replace(i, 1, "\n# ");
            f << "# " << spec.name << ": written by nnergy_modern_models (tests/bench)\n# "
              << derivation << "\nparams = " << e.params << "\nmacs = " << e.macs
              << "\nnodes = " << w.nodes() << "\n";
            std::printf("%-22s %6d nodes  params %lld  macs %lld\n", spec.name, w.nodes(),
                        static_cast<long long>(e.params), static_cast<long long>(e.macs));
            ++written;
        }
        if (written == 0) throw std::runtime_error("no model matches the names given");
    } catch (const std::exception& ex) {
        std::fprintf(stderr, "nnergy_modern_models: %s\n", ex.what());
        return 1;
    }
    return 0;
}
