// SPDX-License-Identifier: Apache-2.0
#include "shape_scalars.hpp"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/csrc/jit/runtime/symbolic_shape_registry.h>
#include <torch/script.h>

#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace nnergy::torchscript {
namespace {

// 128-bit integers (a GCC and Clang extension) for products of an archive's own numbers.
__extension__ typedef __int128 wide;

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

/// Every node executed, over all runs: a loop that does not end is an evaluation failure.
constexpr size_t max_steps = 20'000'000;

struct evaluation_failed {
    std::string why;
};

/// What the runs saw of one value.
struct observation {
    c10::IValue value;
    unsigned runs = 0;   ///< bit r: computed in run r
    bool usable = true;  ///< always the same, and never from data
};

bool contains_tensor(const c10::TypePtr& t) {
    if (t->cast<c10::TensorType>()) return true;
    for (const c10::TypePtr& inner : t->containedTypes())
        if (contains_tensor(inner)) return true;
    return false;
}

c10::Symbol sym(const char* qualified) { return c10::Symbol::fromQualString(qualified); }

/// Ops that read a tensor's metadata, never its data. Its device is read too (a tensor made on
/// it is not data), but what is computed from a device is not folded (below): the
/// evaluation's tensors are on the meta device, the model's are not.
bool reads_metadata(c10::Symbol k) {
    static const std::unordered_set<c10::Symbol> ops = [] {
        std::unordered_set<c10::Symbol> s;
        for (const char* name : {"aten::size",          "aten::sym_size",
                                 "aten::dim",           "aten::numel",
                                 "aten::len",           "aten::stride",
                                 "aten::element_size",  "aten::is_floating_point",
                                 "aten::is_complex",    "aten::__is__",
                                 "aten::__isnot__",     "prim::device",
                                 "prim::dtype",         "prim::layout",
                                 "prim::is_sparse",     "prim::is_quantized",
                                 "prim::is_mkldnn",     "prim::is_nested",
                                 "prim::requires_grad", "prim::isinstance"})
            s.insert(sym(name));
        return s;
    }();
    return ops.count(k) > 0;
}

/// Ops that only move values in and out of lists, tuples and dicts.
bool structural(c10::Symbol k) {
    static const std::unordered_set<c10::Symbol> ops = [] {
        std::unordered_set<c10::Symbol> s;
        for (const char* name :
             {"prim::ListConstruct", "prim::TupleConstruct", "prim::DictConstruct",
              "prim::ListUnpack", "prim::TupleUnpack", "prim::TupleIndex", "prim::unchecked_cast",
              "aten::__getitem__", "aten::copy", "aten::list", "aten::keys", "aten::values",
              "aten::items", "aten::get"})
            s.insert(sym(name));
        return s;
    }();
    return ops.count(k) > 0;
}

/// Ops whose output shape depends on the data of their input.
bool shape_from_data(const Node& n, const std::vector<c10::IValue>& inputs) {
    static const std::unordered_set<c10::Symbol> ops = [] {
        std::unordered_set<c10::Symbol> s;
        for (const char* name :
             {"aten::nonzero", "aten::nonzero_numpy", "aten::argwhere", "aten::masked_select",
              "aten::unique", "aten::_unique", "aten::_unique2", "aten::unique_dim",
              "aten::unique_consecutive", "aten::unique_dim_consecutive", "aten::repeat_interleave",
              "aten::bincount", "aten::tolist"})
            s.insert(sym(name));
        return s;
    }();
    if (ops.count(n.kind())) return true;
    if (n.kind() == c10::aten::where && n.inputs().size() == 1) return true;
    // Indexing with a boolean mask keeps as many elements as the mask has true ones.
    if (n.kind() == c10::aten::index || n.kind() == c10::aten::index_put_ ||
        n.kind() == c10::aten::index_put)
        for (const c10::IValue& v : inputs)
            if (v.isList())
                for (const c10::IValue& e : v.toListRef())
                    if (e.isTensor() && (e.toTensor().scalar_type() == c10::ScalarType::Bool ||
                                         e.toTensor().scalar_type() == c10::ScalarType::Byte))
                        return true;
    return false;
}

/// Ops that change a list or dict, or a tensor's shape, in place.
bool changes_in_place(c10::Symbol k) {
    static const std::unordered_set<c10::Symbol> ops = [] {
        std::unordered_set<c10::Symbol> s;
        for (const char* name :
             {"aten::_set_item",   "aten::append",      "aten::insert",     "aten::extend",
              "aten::pop",         "aten::remove",      "aten::clear",      "aten::reverse",
              "aten::sort",        "aten::update",      "aten::setdefault", "aten::popitem",
              "aten::__setitem__", "aten::__delitem__", "aten::resize_",    "aten::resize_as_",
              "aten::squeeze_",    "aten::unsqueeze_",  "aten::transpose_", "aten::t_",
              "aten::set_",        "aten::as_strided_"})
            s.insert(sym(name));
        return s;
    }();
    return ops.count(k) > 0;
}

/// The first op in `b` (or a block in it) that changes a list, dict or shape in place.
const Node* first_change(Block* b) {
    for (Node* n : b->nodes()) {
        if (changes_in_place(n->kind())) return n;
        for (Block* inner : n->blocks())
            if (const Node* found = first_change(inner)) return found;
    }
    return nullptr;
}

bool same(const c10::IValue& a, const c10::IValue& b) {
    if (a.isInt() && b.isInt()) return a.toInt() == b.toInt();
    if (a.isBool() && b.isBool()) return a.toBool() == b.toBool();
    if (a.isDouble() && b.isDouble()) {
        const double x = a.toDouble(), y = b.toDouble();
        return std::memcmp(&x, &y, sizeof x) == 0;
    }
    if (a.isString() && b.isString()) return a.toStringRef() == b.toStringRef();
    return false;
}

/// The first line of a libtorch error's message (the rest is libtorch's own context).
std::string message(const c10::Error& e) {
    std::string m = e.what_without_backtrace();
    if (const size_t nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
    return m;
}

std::string where(const Node& n) {
    std::string s = n.kind().toQualString();
    if (const auto range = n.sourceRange().file_line_col()) {
        const auto& [file, line, column] = *range;
        (void)column;
        s += " (" + file + ":" + std::to_string(line) + ")";
    }
    return s;
}

struct shape_function {
    std::unique_ptr<torch::jit::Code> code;
    size_t arguments = 0;
};

/// What the runs share.
struct evaluation_state {
    std::unordered_map<const Value*, observation> seen;
    size_t steps = 0;
    std::unordered_map<const c10::FunctionSchema*, shape_function> shape_code;
    std::unordered_set<const c10::FunctionSchema*> no_kernel;  ///< failed on these tensors
};

/// One run of the graph, noting what it sees in the shared state.
class run {
public:
    run(evaluation_state& state, unsigned index) : state_(state), bit_(1u << index) {}

    void bind(const Value* v, c10::IValue x, bool from_data) {
        note(v, x, from_data);
        env_[v] = slot{std::move(x), from_data};
    }

    void block(Block* b, bool on_data) {
        for (Node* n : b->nodes()) node(n, on_data);
    }

    const c10::IValue& value(const Value* v) const {
        const auto it = env_.find(v);
        if (it == env_.end())
            throw evaluation_failed{"value '" + v->debugName() + "' is read before it is set"};
        return it->second.value;
    }
    bool from_data(const Value* v) const {
        const auto it = env_.find(v);
        return it == env_.end() || it->second.from_data;
    }

private:
    struct slot {
        c10::IValue value;
        bool from_data = false;
    };

    void note(const Value* v, const c10::IValue& x, bool from_data) {
        const c10::TypeKind kind = v->type()->kind();
        if (kind != c10::TypeKind::IntType && kind != c10::TypeKind::FloatType &&
            kind != c10::TypeKind::BoolType && kind != c10::TypeKind::StringType)
            return;
        observation& o = state_.seen[v];
        if (!o.usable) return;
        if (from_data || !(x.isInt() || x.isBool() || x.isDouble() || x.isString()) ||
            (o.runs != 0 && !same(o.value, x))) {
            o.usable = false;
            o.value = c10::IValue();
            return;
        }
        if (o.runs == 0) o.value = x;
        o.runs |= bit_;
    }

    void node(Node* n, bool on_data) {
        if (++state_.steps > max_steps)
            throw evaluation_failed{"it runs too long (a loop on data?)"};
        const c10::Symbol k = n->kind();
        if (k == c10::prim::Constant) {
            bind(n->output(), *torch::jit::toIValue(n->output()), false);
            return;
        }
        if (k == c10::prim::If) {
            const bool cond_from_data = on_data || from_data(n->input(0));
            if (cond_from_data) refuse_changes_on_data(*n);
            Block* taken = n->blocks()[value(n->input(0)).toBool() ? 0 : 1];
            block(taken, cond_from_data);
            for (size_t i = 0; i < n->outputs().size(); ++i)
                bind(n->output(i), value(taken->outputs()[i]),
                     cond_from_data || from_data(taken->outputs()[i]));
            return;
        }
        if (k == c10::prim::Loop) return loop(n, on_data);

        std::vector<c10::IValue> inputs;
        inputs.reserve(n->inputs().size());
        bool input_from_data = on_data;
        bool reads_tensor = false;
        bool reads_device = false;
        for (Value* v : n->inputs()) {
            inputs.push_back(value(v));
            input_from_data = input_from_data || from_data(v);
            reads_tensor = reads_tensor || contains_tensor(v->type());
            reads_device = reads_device || v->type()->kind() == c10::TypeKind::DeviceObjType;
        }
        if (changes_in_place(k) && input_from_data)
            throw evaluation_failed{where(*n) + " changes a list or shape on tensor data"};
        // Some ops have no kernel for the meta device (convolutions, norms and roll in libtorch
        // 1.13): each is tried once, then its outputs' sizes are found another way.
        std::vector<c10::IValue> outputs;
        const c10::FunctionSchema* schema = n->maybeSchema();
        const bool kernel_missing = schema && state_.no_kernel.count(schema) > 0;
        std::string error;
        if (!kernel_missing) {
            try {
                outputs = execute(*n, inputs);
            } catch (const c10::Error& e) {
                error = message(e);
                if (schema) state_.no_kernel.insert(schema);
            }
        }
        if (kernel_missing || !error.empty()) outputs = without_kernel(*n, inputs, error);
        // A number read from a tensor other than through its metadata is data; so is one
        // computed from a device (the evaluation's is not the model's).
        const bool reads_data =
            (reads_tensor && !reads_metadata(k) && !structural(k)) || reads_device;
        const bool shape_data = shape_from_data(*n, inputs);
        for (size_t i = 0; i < outputs.size(); ++i) {
            Value* out = n->output(i);
            const bool tensor = contains_tensor(out->type());
            bind(out, std::move(outputs[i]), input_from_data || (tensor ? shape_data : reads_data));
        }
    }

    /// A branch or loop taken on data that changes a list or shape in place: what the list
    /// holds afterwards depends on the data whichever way this run went.
    static void refuse_changes_on_data(Node& n) {
        for (Block* b : n.blocks())
            if (const Node* change = first_change(b))
                throw evaluation_failed{
                    where(*change) + " changes a list or shape in a branch taken on tensor data"};
    }

    /// prim::Loop: inputs (trip count, condition, carried...), body inputs (iteration,
    /// carried...), body outputs (condition, carried...), outputs (carried...).
    void loop(Node* n, bool on_data) {
        Block* body = n->blocks()[0];
        const int64_t trips = value(n->input(0)).toInt();
        bool go_on = value(n->input(1)).toBool();
        bool loop_on_data = on_data || from_data(n->input(0)) || from_data(n->input(1));
        if (loop_on_data) refuse_changes_on_data(*n);
        const size_t carried = n->inputs().size() - 2;
        std::vector<c10::IValue> values(carried);
        std::vector<bool> data(carried);
        for (size_t j = 0; j < carried; ++j) {
            values[j] = value(n->input(2 + j));
            data[j] = from_data(n->input(2 + j));
        }
        for (int64_t i = 0; go_on && i < trips; ++i) {
            bind(body->inputs()[0], c10::IValue(i), loop_on_data);
            for (size_t j = 0; j < carried; ++j)
                bind(body->inputs()[1 + j], values[j], loop_on_data || data[j]);
            block(body, loop_on_data);
            go_on = value(body->outputs()[0]).toBool();
            if (!loop_on_data && from_data(body->outputs()[0])) {
                loop_on_data = true;
                refuse_changes_on_data(*n);
            }
            for (size_t j = 0; j < carried; ++j) {
                values[j] = value(body->outputs()[1 + j]);
                data[j] = from_data(body->outputs()[1 + j]);
            }
        }
        for (size_t j = 0; j < carried; ++j) bind(n->output(j), values[j], loop_on_data || data[j]);
    }

    std::vector<c10::IValue> execute(Node& n, std::vector<c10::IValue>& inputs) {
        const c10::Symbol k = n.kind();
        if (k == c10::prim::ListConstruct) {
            c10::impl::GenericList list(
                n.output()->type()->expectRef<c10::ListType>().getElementType());
            list.reserve(inputs.size());
            for (c10::IValue& v : inputs) list.push_back(std::move(v));
            return {c10::IValue(std::move(list))};
        }
        if (k == c10::prim::TupleConstruct)
            return {c10::IValue(c10::ivalue::Tuple::create(std::move(inputs)))};
        if (k == c10::prim::ListUnpack || k == c10::prim::TupleUnpack) {
            std::vector<c10::IValue> elements;
            if (inputs.at(0).isTuple()) {
                const auto& e = inputs[0].toTupleRef().elements();
                elements.assign(e.begin(), e.end());
            } else {
                const auto e = inputs.at(0).toListRef();
                elements.assign(e.begin(), e.end());
            }
            if (elements.size() != n.outputs().size())
                throw evaluation_failed{"an unpacking of " + std::to_string(elements.size()) +
                                        " values into " + std::to_string(n.outputs().size())};
            return elements;
        }
        if (k == c10::prim::TupleIndex) {
            const auto& e = inputs.at(0).toTupleRef().elements();
            int64_t i = inputs.at(1).toInt();
            if (i < 0) i += static_cast<int64_t>(e.size());
            return {e.at(static_cast<size_t>(i))};
        }
        if (k == c10::prim::unchecked_cast) return {inputs.at(0)};
        if (k == c10::prim::Uninitialized) return {c10::IValue()};
        if (k == c10::prim::GetAttr) {
            const c10::IValue& object = inputs.at(0);
            const std::string& name = n.s(c10::attr::name);
            if (!object.isObject() || !object.toObjectRef().type()->hasAttribute(name))
                throw evaluation_failed{"attribute '" + name + "' is not readable"};
            return {object.toObjectRef().getAttr(name)};
        }
        // Warnings the interpreter itself prints (GoogLeNet's on its auxiliary outputs).
        if (k == c10::aten::warn) return {};
        if (k == c10::prim::RaiseException)
            throw evaluation_failed{"the model raises an exception on these input shapes"};
        if (!n.maybeOperator())
            throw evaluation_failed{std::string(k.toQualString()) + " cannot be run here"};
        torch::jit::Stack stack(inputs.begin(), inputs.end());
        n.getOperation()(stack);
        if (stack.size() != n.outputs().size())
            throw evaluation_failed{std::string(k.toQualString()) + " left " +
                                    std::to_string(stack.size()) + " values for " +
                                    std::to_string(n.outputs().size()) + " outputs"};
        return std::vector<c10::IValue>(std::make_move_iterator(stack.begin()),
                                        std::make_move_iterator(stack.end()));
    }

    /// Tensors of the sizes libtorch's shape function for `n` gives, of its first tensor
    /// input's type and device; nothing where `n` has none or an output is no tensor.
    std::optional<std::vector<c10::IValue>> from_shape_function(
        const Node& n, const std::vector<c10::IValue>& inputs) {
        const c10::FunctionSchema* schema = n.maybeSchema();
        if (!schema) return std::nullopt;
        for (const Value* out : n.outputs())
            if (!out->type()->cast<c10::TensorType>()) return std::nullopt;
        auto code = state_.shape_code.find(schema);
        if (code == state_.shape_code.end()) {
            const c10::optional<std::shared_ptr<torch::jit::Graph>> graph =
                torch::jit::shapeComputeGraphForSchema(*schema);
            if (!graph) return std::nullopt;
            code = state_.shape_code
                       .emplace(schema,
                                shape_function{std::make_unique<torch::jit::Code>(*graph, "shape"),
                                               (*graph)->inputs().size()})
                       .first;
        }
        // A shape function takes the op's leading arguments (a unary op's only its input).
        if (code->second.arguments > inputs.size()) return std::nullopt;
        torch::jit::Stack stack;
        std::optional<at::Tensor> first;
        const auto sizes = [](const at::Tensor& t) { return c10::IValue(t.sizes().vec()); };
        for (size_t i = 0; i < code->second.arguments; ++i) {
            const c10::IValue& v = inputs[i];
            if (v.isTensor()) {
                if (!first) first = v.toTensor();
                stack.push_back(sizes(v.toTensor()));
            } else if (v.isTensorList()) {
                c10::List<std::vector<int64_t>> lists;
                for (const at::Tensor& t : v.toTensorVector()) lists.push_back(t.sizes().vec());
                stack.push_back(c10::IValue(std::move(lists)));
            } else {
                stack.push_back(v);
            }
        }
        if (!first) return std::nullopt;
        torch::jit::InterpreterState(*code->second.code).run(stack);
        if (stack.size() != 1) return std::nullopt;
        std::vector<c10::IValue> shapes;
        if (stack[0].isTuple()) {
            const auto& e = stack[0].toTupleRef().elements();
            shapes.assign(e.begin(), e.end());
        } else {
            shapes.push_back(stack[0]);
        }
        if (shapes.size() != n.outputs().size()) return std::nullopt;
        std::vector<c10::IValue> outputs;
        for (const c10::IValue& s : shapes) {
            if (!s.isIntList()) return std::nullopt;
            outputs.emplace_back(at::empty(s.toIntVector(), first->options()));
        }
        return outputs;
    }

    /// The outputs of an op that did not run on these tensors (`error`: why, where it was
    /// tried): from what is known of its kind, else libtorch's shape function for it (last:
    /// the first use compiles all of them, about a quarter of a second), else the op run on
    /// small zero-filled CPU tensors.
    std::vector<c10::IValue> without_kernel(const Node& n, const std::vector<c10::IValue>& inputs,
                                            const std::string& error) {
        try {
            std::optional<std::vector<c10::IValue>> shaped = convolution_output(n, inputs);
            if (!shaped) shaped = like_first_input(n, inputs);
            if (!shaped) shaped = attention_output(n, inputs);
            if (!shaped) shaped = from_shape_function(n, inputs);
            if (!shaped) shaped = on_zeros(n, inputs);
            if (shaped) return std::move(*shaped);
        } catch (const c10::Error& e) {
            throw evaluation_failed{where(n) + ": " + message(e)};
        }
        throw evaluation_failed{where(n) + ": " +
                                (error.empty() ? "it has no kernel for these tensors" : error)};
    }

    /// A convolution's output (conv1d/2d/3d, convolution, _convolution; transposed too).
    static std::optional<std::vector<c10::IValue>> convolution_output(
        const Node& n, const std::vector<c10::IValue>& in) {
        const c10::Symbol k = n.kind();
        const bool full = k == c10::aten::_convolution || k == c10::aten::convolution;
        if (!full && k != c10::aten::conv1d && k != c10::aten::conv2d && k != c10::aten::conv3d)
            return std::nullopt;
        if (in.size() < (full ? 9u : 7u) || !in[0].isTensor() || !in[1].isTensor())
            return std::nullopt;
        const at::Tensor& x = in[0].toTensor();
        const at::Tensor& w = in[1].toTensor();
        if (w.dim() < 3) return std::nullopt;
        const size_t spatial = static_cast<size_t>(w.dim() - 2);
        const bool batched = static_cast<size_t>(x.dim()) == spatial + 2;
        if (!batched && static_cast<size_t>(x.dim()) != spatial + 1) return std::nullopt;
        const auto per_dim = [&](const c10::IValue& v) -> std::optional<std::vector<int64_t>> {
            std::vector<int64_t> d;
            if (v.isIntList())
                d = v.toIntVector();
            else if (v.isInt())
                d.push_back(v.toInt());
            else
                return std::nullopt;
            if (d.size() == 1) d.assign(spatial, d[0]);
            if (d.size() != spatial) return std::nullopt;
            return d;
        };
        const auto stride = per_dim(in[3]);
        const auto dilation = per_dim(in[5]);
        const bool transposed = full && in[6].isBool() && in[6].toBool();
        const auto output_padding =
            full ? per_dim(in[7])
                 : std::optional<std::vector<int64_t>>(std::vector<int64_t>(spatial));
        const c10::IValue& groups_value = in[full ? 8 : 6];
        if (!stride || !dilation || !output_padding || !groups_value.isInt()) return std::nullopt;
        const int64_t groups = groups_value.toInt();
        std::optional<std::vector<int64_t>> padding;
        bool same = false;
        if (in[4].isString()) {
            same = in[4].toStringRef() == "same";
            if (!same && in[4].toStringRef() != "valid") return std::nullopt;
            padding = std::vector<int64_t>(spatial);
        } else {
            padding = per_dim(in[4]);
        }
        if (!padding) return std::nullopt;
        std::vector<int64_t> sizes;
        if (batched) sizes.push_back(x.size(0));
        sizes.push_back(transposed ? w.size(1) * groups : w.size(0));
        for (size_t d = 0; d < spatial; ++d) {
            // In 128 bits: the archive's strides, paddings and dilations are its own numbers,
            // and a product of two of them may not fit 64 (nothing is answered then).
            const wide input = x.size(static_cast<int64_t>(x.dim() - spatial + d));
            const wide kernel = w.size(static_cast<int64_t>(2 + d));
            const wide stride_d = (*stride)[d], padding_d = (*padding)[d];
            const wide extent = wide{(*dilation)[d]} * (kernel - 1) + 1;
            if (stride_d <= 0) return std::nullopt;
            wide out = 0;
            if (same)
                out = input;  // PyTorch takes "same" with stride 1 only
            else if (transposed)
                out = (input - 1) * stride_d - 2 * padding_d + extent + (*output_padding)[d];
            else
                out = (input + 2 * padding_d - extent) / stride_d + 1;
            if (out < 0 || out > std::numeric_limits<int64_t>::max()) return std::nullopt;
            sizes.push_back(static_cast<int64_t>(out));
        }
        return std::vector<c10::IValue>{c10::IValue(at::empty(sizes, x.options()))};
    }

    /// nn.MultiheadAttention's fused inference op: the query's shape, and the attention
    /// weights (averaged over heads or not) where they are asked for.
    static std::optional<std::vector<c10::IValue>> attention_output(
        const Node& n, const std::vector<c10::IValue>& in) {
        if (n.kind() != sym("aten::_native_multi_head_attention") || in.size() < 12 ||
            !in[0].isTensor() || !in[1].isTensor() || !in[4].isInt() || !in[10].isBool() ||
            !in[11].isBool())
            return std::nullopt;
        const at::Tensor& query = in[0].toTensor();
        const at::Tensor& key = in[1].toTensor();
        if (query.dim() < 2 || key.dim() < 2) return std::nullopt;
        std::vector<c10::IValue> out{c10::IValue(at::empty(query.sizes(), query.options()))};
        if (!in[10].toBool()) {
            out.emplace_back(at::Tensor());
            return out;
        }
        std::vector<int64_t> weights(query.sizes().begin(), query.sizes().end() - 2);
        if (!in[11].toBool()) weights.push_back(in[4].toInt());
        weights.push_back(query.size(-2));
        weights.push_back(key.size(-2));
        out.emplace_back(at::empty(weights, query.options()));
        return out;
    }

    /// The output of an op that moves or accumulates elements within its input's shape.
    static std::optional<std::vector<c10::IValue>> like_first_input(
        const Node& n, const std::vector<c10::IValue>& inputs) {
        static const std::unordered_set<c10::Symbol> ops = [] {
            std::unordered_set<c10::Symbol> s;
            for (const char* name :
                 {"aten::roll", "aten::flip", "aten::fliplr", "aten::flipud", "aten::cumsum",
                  "aten::cumprod", "aten::tril", "aten::triu", "aten::batch_norm",
                  "aten::instance_norm", "aten::layer_norm", "aten::group_norm", "aten::relu",
                  "aten::relu_", "aten::relu6", "aten::hardtanh", "aten::hardtanh_",
                  "aten::hardswish", "aten::hardswish_", "aten::hardsigmoid", "aten::silu",
                  "aten::silu_", "aten::gelu", "aten::sigmoid", "aten::tanh", "aten::dropout",
                  "aten::clamp", "aten::clamp_min", "aten::clamp_max",
                  // nn.TransformerEncoderLayer's fused inference op: src's shape.
                  "aten::_transformer_encoder_layer_fwd"})
                s.insert(sym(name));
            return s;
        }();
        if (!ops.count(n.kind()) || n.outputs().size() != 1 || inputs.empty() ||
            !inputs[0].isTensor())
            return std::nullopt;
        const at::Tensor& x = inputs[0].toTensor();
        return std::vector<c10::IValue>{c10::IValue(at::empty(x.sizes(), x.options()))};
    }

    /// `n` run on zero-filled CPU tensors of its meta inputs' sizes, its tensor outputs made
    /// meta tensors again; nothing where its inputs hold more than 2^24 elements together.
    static std::optional<std::vector<c10::IValue>> on_zeros(const Node& n,
                                                            std::vector<c10::IValue> inputs) {
        int64_t elements = 0;
        bool meta = false;
        const auto to_cpu = [&](const at::Tensor& t) {
            if (!t.defined() || !t.is_meta()) return t;
            meta = true;
            elements += t.numel();
            return at::zeros(t.sizes(), t.options().device(c10::kCPU));
        };
        for (c10::IValue& v : inputs) {
            if (v.isTensor()) {
                v = to_cpu(v.toTensor());
            } else if (v.isTensorList()) {
                std::vector<at::Tensor> list = v.toTensorVector();
                for (at::Tensor& t : list) t = to_cpu(t);
                v = c10::IValue(list);
            } else if (v.isList() && v.toListRef().size() > 0 && v.toListRef()[0].isTensor()) {
                // Optional tensors (aten::index's indices)
                c10::List<c10::optional<at::Tensor>> list;
                for (const c10::IValue& e : v.toListRef())
                    list.push_back(e.isTensor() ? c10::optional<at::Tensor>(to_cpu(e.toTensor()))
                                                : c10::nullopt);
                v = c10::IValue(list);
            }
        }
        if (!meta || elements > (int64_t{1} << 24)) return std::nullopt;
        torch::jit::Stack stack(inputs.begin(), inputs.end());
        n.getOperation()(stack);
        if (stack.size() != n.outputs().size()) return std::nullopt;
        for (c10::IValue& v : stack)
            if (v.isTensor() && v.toTensor().defined())  // an output not asked for is undefined
                v = at::empty(v.toTensor().sizes(), v.toTensor().options().device(c10::kMeta));
        return std::vector<c10::IValue>(stack.begin(), stack.end());
    }

    evaluation_state& state_;
    unsigned bit_;
    std::unordered_map<const Value*, slot> env_;
};

void collect_nodes(Block* block, std::vector<Node*>& out) {
    for (Node* n : block->nodes()) {
        out.push_back(n);
        for (Block* b : n->blocks()) collect_nodes(b, out);
    }
}

}  // namespace

shape_scalar_folding fold_shape_scalars(const std::shared_ptr<torch::jit::Graph>& graph,
                                        const c10::IValue& self,
                                        const std::vector<evaluation_input>& inputs,
                                        c10::Device device) {
    shape_scalar_folding result;
    evaluation_state state;
    const int64_t symbolic[3] = {1, 2, device.is_meta() ? 1031 : 3};
    try {
        torch::NoGradGuard no_grad;
        for (unsigned r = 0; r < 3; ++r) {
            run one(state, r);
            one.bind(graph->inputs()[0], self, false);
            for (const evaluation_input& in : inputs) {
                std::vector<int64_t> sizes = in.sizes;
                for (int64_t& d : sizes)
                    if (d < 0) d = symbolic[r];
                one.bind(in.value,
                         at::zeros(sizes, at::TensorOptions().dtype(in.dtype).device(device)),
                         false);
            }
            one.block(graph->block(), false);
        }
    } catch (const evaluation_failed& e) {
        result.reason = e.why;
        return result;
    } catch (const c10::Error& e) {
        result.reason = message(e);
        return result;
    } catch (const std::exception& e) {
        result.reason = e.what();
        return result;
    }
    // In the graph's order, so that the constants' names do not depend on where values live.
    std::vector<Node*> nodes;
    collect_nodes(graph->block(), nodes);
    for (Node* n : nodes) {
        if (n->kind() == c10::prim::Constant) continue;
        for (Value* v : n->outputs()) {
            const auto o = state.seen.find(v);
            if (o == state.seen.end() || !o->second.usable || o->second.runs != 7u) continue;
            Value* constant = nullptr;
            {
                torch::jit::WithInsertPoint here(n);
                constant = graph->insertConstant(o->second.value);
            }
            v->replaceAllUsesWith(constant);
            ++result.folded;
        }
    }
    return result;
}

}  // namespace nnergy::torchscript
