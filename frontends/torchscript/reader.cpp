// SPDX-License-Identifier: Apache-2.0
// The TorchScript reader: loads a traced or scripted archive with libtorch, freezes it (the
// training flags and every attribute but the parameters and buffers become constants, so
// scripted control flow on them folds away), and maps each aten op the forward pass reaches
// onto the IR's ONNX-named ops (docs/torchscript.md). Shapes are not taken from the archive
// (it keeps none): the host infers them from the input shapes, the batch dim symbolic.
//
// Compiled as C++17: libtorch 1.13's headers do not build as C++20 with clang 14.
#include <c10/util/Logging.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/lower_tuples.h>
#include <torch/csrc/jit/passes/shape_analysis.h>
#include <torch/script.h>
#include <torch/version.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <nnergy/dtype.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pickle_check.hpp"
#include "reader_api.h"
#include "shape_scalars.hpp"

namespace {

namespace sdk = nnergy::sdk;
using torch::jit::Node;
using torch::jit::Value;
using dims = std::vector<sdk::graph_builder::dim>;

sdk::error fail(const std::string& message,
                nnergy_status_code code = NNERGY_CODE_INVALID_ARGUMENT) {
    return sdk::error(message, code);
}

/// The first line of a libtorch message (the rest is a C++ stack or a TorchScript trace),
/// without the "[enforce fail at file:line] . " of its checks.
std::string first_line(const char* what) {
    std::string s(what ? what : "");
    const size_t nl = s.find('\n');
    if (nl != std::string::npos) s.resize(nl);
    if (s.rfind("[enforce fail at ", 0) == 0) {
        size_t end = s.find("] ");
        if (end != std::string::npos) {
            end += 2;
            if (s.compare(end, 2, ". ") == 0) end += 2;
            s.erase(0, end);
        }
    }
    return s;
}

// ------------------------------------------------------------------------------------------
// Input shapes: "[NAME=]D0xD1x..." with integers or symbols (batch, seq)
// ------------------------------------------------------------------------------------------

struct input_shape {
    std::string name;  ///< empty: by position
    dims shape;
};

bool is_symbol(const std::string& t) {
    if (t.empty() || !(std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_')) return false;
    return std::all_of(t.begin(), t.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
}

input_shape parse_input_shape(const std::string& text) {
    input_shape s;
    std::string body = text;
    const size_t eq = text.find('=');
    if (eq != std::string::npos) {
        s.name = text.substr(0, eq);
        body = text.substr(eq + 1);
    }
    const auto bad = [&](const std::string& why) {
        return fail("input shape '" + text + "': " + why +
                    " (expected [NAME=]D0xD1x..., each D a positive integer or a symbol such as "
                    "batch or seq: \"batchx3x224x224\")");
    };
    if (body.empty()) throw bad("no dimensions");
    // Split on 'x' between dims (symbols are written without an x: batch, seq) or on ','.
    std::vector<std::string> tokens;
    std::string current;
    for (size_t i = 0; i < body.size(); ++i) {
        const char c = body[i];
        const bool split =
            c == ',' ||
            (c == 'x' && !current.empty() &&
             (std::isdigit(static_cast<unsigned char>(current.back())) || current == "batch" ||
              current == "seq" ||
              (i + 1 < body.size() && std::isdigit(static_cast<unsigned char>(body[i + 1])))));
        if (split) {
            tokens.push_back(current);
            current.clear();
        } else if (!std::isspace(static_cast<unsigned char>(c))) {
            current += c;
        }
    }
    tokens.push_back(current);
    for (const std::string& t : tokens) {
        sdk::graph_builder::dim d;
        if (!t.empty() && std::all_of(t.begin(), t.end(), [](char c) {
                return std::isdigit(static_cast<unsigned char>(c));
            })) {
            if (t.size() > 12) throw bad("dimension '" + t + "' is too large");
            d.value = std::stoll(t);
            if (d.value <= 0) throw bad("dimension '" + t + "' is not positive");
        } else if (is_symbol(t)) {
            d.symbol = t;
        } else {
            throw bad("'" + t + "' is neither a positive integer nor a symbol");
        }
        s.shape.push_back(std::move(d));
    }
    return s;
}

std::string shape_text(const dims& d) {
    std::string s;
    for (size_t i = 0; i < d.size(); ++i) {
        if (i) s += 'x';
        s += d[i].symbol.empty() ? std::to_string(d[i].value) : d[i].symbol;
    }
    return s;
}

nnergy_dtype dtype_of(c10::ScalarType t) {
    switch (t) {
        case c10::ScalarType::Float:
            return NNERGY_DTYPE_FLOAT32;
        case c10::ScalarType::Half:
            return NNERGY_DTYPE_FLOAT16;
        case c10::ScalarType::BFloat16:
            return NNERGY_DTYPE_BFLOAT16;
        case c10::ScalarType::Double:
            return NNERGY_DTYPE_FLOAT64;
        case c10::ScalarType::Char:
            return NNERGY_DTYPE_INT8;
        case c10::ScalarType::Byte:
            return NNERGY_DTYPE_UINT8;
        case c10::ScalarType::Short:
            return NNERGY_DTYPE_INT16;
        case c10::ScalarType::Int:
            return NNERGY_DTYPE_INT32;
        case c10::ScalarType::Long:
            return NNERGY_DTYPE_INT64;
        case c10::ScalarType::Bool:
            return NNERGY_DTYPE_BOOL;
        default:
            return NNERGY_DTYPE_UNDEFINED;
    }
}

// ------------------------------------------------------------------------------------------
// The converter
// ------------------------------------------------------------------------------------------

class converter {
public:
    converter(std::string file, sdk::graph_builder& out) : file_(std::move(file)), out_(out) {}

    /// `parameters`: every parameter of the model as loaded, before freezing; `device`: where
    /// its tensors are (the meta device, unless freezing needed their data).
    void run(const torch::jit::Module& module, const std::vector<input_shape>& shapes,
             const std::vector<std::pair<std::string, at::Tensor>>& parameters,
             c10::Device device) {
        std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph();
        const auto inputs = graph->inputs();
        if (inputs.empty()) throw fail(file_ + ": forward() takes no self argument");
        objects_[inputs[0]] = module._ivalue();
        declare_inputs(*graph, shapes);
        // Only branches make questions worth answering (a traced graph has none).
        const bool branches = has_branches(graph->block());
        if (branches) specialize(graph);
        // Branches on sizes (padded window counts): the numbers the given shapes fix.
        if (branches && has_branches(graph->block())) {
            const nnergy::torchscript::shape_scalar_folding folding =
                nnergy::torchscript::fold_shape_scalars(graph, module._ivalue(), evaluation_inputs_,
                                                        device);
            if (folding.folded > 0) {
                torch::jit::ConstantPropagation(graph);
                torch::jit::LowerSimpleTuples(graph);
                torch::jit::EliminateDeadCode(graph);
                specialize(graph);
            }
            unevaluated_ = folding.reason;
        }
        // In order; where an op asks the rank of a value converted before it, the answer is a
        // constant and the branches on it fold before going on (ranks the shape analysis
        // lost are known here, from the ops converted).
        std::unordered_set<const Node*> converted;
        for (bool folded = true; folded;) {
            folded = false;
            live_.clear();
            collect_live(*graph);
            for (Node* n : graph->nodes()) {
                if (converted.count(n) || !live_.count(n)) continue;
                if (branches && (unpack_appended(n) || fold_answer(graph, n))) {
                    folded = true;
                    break;
                }
                convert(n);
                converted.insert(n);
                follow_dtype(*n);
            }
        }
        if (!unsupported_.empty()) {
            std::string m = file_ + ": " + std::to_string(unsupported_count_) +
                            " op(s) of the forward pass have no mapping onto the IR";
            if (downstream_count_ > 0) {
                m += " (";
                m += std::to_string(downstream_count_);
                m += " more after them read their outputs)";
            }
            m += "; nothing was guessed (docs/torchscript.md lists what is read):";
            for (const auto& [what, where] : unsupported_) m += "\n  " + what + " at " + where;
            if (!unevaluated_.empty())
                m += "\n(the numbers its code computes from the input shapes could not be "
                     "evaluated: " +
                     unevaluated_ + ")";
            throw fail(m, NNERGY_CODE_UNIMPLEMENTED);
        }
        declare_outputs(*graph);
        add_unread_parameters(parameters);
        out_.metadata("producer", "torchscript");
        out_.metadata("opset", "20");  // Gelu
    }

private:
    // ---- specialization: scripted code asks what the inputs are (their rank, type and device,
    // whether gradients or autocast are on) and branches on the answers; those are known here
    // (an inference run on the input shapes given), so the questions become constants and
    // libtorch folds the branches that depend on them, as it folds those on training flags.
    void specialize(std::shared_ptr<torch::jit::Graph>& graph) {
        for (int round = 0; round < 8; ++round) {
            follow_shapes(graph);
            std::vector<Node*> nodes;
            collect_nodes(graph->block(), nodes);
            bool changed = false;
            for (Node* n : nodes) {
                std::optional<c10::IValue> known = answer(*n);
                if (!known || n->outputs().size() != 1) continue;
                Value* constant = nullptr;
                {
                    torch::jit::WithInsertPoint here(n);
                    constant = graph->insertConstant(*known);
                }
                n->output()->replaceAllUsesWith(constant);
                changed = true;
            }
            if (!changed) break;
            torch::jit::ConstantPropagation(graph);
            // A branch folded away can leave a tuple built and indexed at once.
            torch::jit::LowerSimpleTuples(graph);
            torch::jit::EliminateDeadCode(graph);
        }
        // The conversion reads no shape from the archive's types.
        torch::jit::EraseShapeInformation(graph);
    }

    /// Ranks and element types of the graph's values, from libtorch's shape analysis on a copy
    /// of the graph whose inputs, parameters and buffers have their shapes (a symbolic dim
    /// taken as 2: only ranks and element types are read from it, which do not depend on it).
    void follow_shapes(const std::shared_ptr<torch::jit::Graph>& graph) const {
        torch::jit::EraseShapeInformation(graph);
        const std::shared_ptr<torch::jit::Graph> copy = graph->copy();
        std::vector<Node*> original, copied;
        collect_nodes(graph->block(), original);
        collect_nodes(copy->block(), copied);
        if (original.size() != copied.size()) return;
        for (size_t i = 0; i < graph->inputs().size(); ++i) {
            const auto shape = input_sizes_.find(graph->inputs()[i]);
            if (shape == input_sizes_.end()) continue;
            const auto dtype = input_dtypes_.at(graph->inputs()[i]) == NNERGY_DTYPE_INT64
                                   ? c10::ScalarType::Long
                                   : c10::ScalarType::Float;
            copy->inputs()[i]->setType(
                c10::TensorType::createContiguous(dtype, c10::Device(c10::kCPU), shape->second));
        }
        // The analysis types an attribute read as a tensor of unknown shape: there, parameters
        // and buffers become inputs of the copy with their shapes.
        for (size_t k = 0; k < original.size(); ++k) {
            if (original[k]->kind() != c10::prim::GetAttr) continue;
            const std::optional<at::Tensor> held = attribute_tensor(original[k]->output());
            if (!held) continue;
            Value* in = copy->addInput();
            in->setType(c10::TensorType::createContiguous(held->scalar_type(),
                                                          c10::Device(c10::kCPU), held->sizes()));
            copied[k]->output()->replaceAllUsesWith(in);
        }
        try {
            torch::jit::PropagateInputShapes(copy);
        } catch (const c10::Error&) {
            return;  // values keep no rank, and their questions stay open
        }
        for (size_t k = 0; k < original.size(); ++k) {
            if (original[k]->kind() == c10::prim::GetAttr ||
                original[k]->outputs().size() != copied[k]->outputs().size())
                continue;
            for (size_t j = 0; j < original[k]->outputs().size(); ++j)
                if (const auto t = copied[k]->output(j)->type()->cast<c10::TensorType>())
                    if (original[k]->output(j)->type()->cast<c10::TensorType>())
                        original[k]->output(j)->setType(t);
        }
    }

    static bool has_branches(torch::jit::Block* block) {
        for (Node* n : block->nodes()) {
            if (n->kind() == c10::prim::If) return true;
            for (torch::jit::Block* b : n->blocks())
                if (has_branches(b)) return true;
        }
        return false;
    }

    static void collect_nodes(torch::jit::Block* block, std::vector<Node*>& out) {
        for (Node* n : block->nodes()) {
            out.push_back(n);
            for (torch::jit::Block* b : n->blocks()) collect_nodes(b, out);
        }
    }

    /// What `n` evaluates to on this run, where that is known before it runs.
    std::optional<c10::IValue> answer(const Node& n) const {
        const c10::Symbol k = n.kind();
        // Inference: no gradients, no autocast (the host prices precisions itself).
        if (n.inputs().empty() &&
            (k == c10::Symbol::fromQualString("aten::is_grad_enabled") ||
             k == c10::Symbol::fromQualString("aten::is_autocast_enabled") ||
             k == c10::Symbol::fromQualString("aten::is_autocast_cpu_enabled")))
            return c10::IValue(false);
        // Identity of tensors: scripted code asks whether arguments are one (self-attention
        // passes the same tensor as query, key and value). Values that ops returning their
        // input (dropout in eval, contiguous) lead back to one value are one tensor; values
        // of different producers are different tensors.
        if ((k == c10::aten::__is__ || k == c10::aten::__isnot__) && n.inputs().size() == 2 &&
            n.input(0)->type()->cast<c10::TensorType>() &&
            n.input(1)->type()->cast<c10::TensorType>())
            return c10::IValue((identity(n.input(0)) == identity(n.input(1))) ==
                               (k == c10::aten::__is__));
        // Messages (the reasons a fast path is not taken) made of constants: libtorch's constant
        // propagation leaves variadic ops alone.
        if (k == c10::aten::format && !n.inputs().empty()) return format_constants(n);
        // all() / any() of a list of known flags built by appends (fast-path checks).
        if ((k == c10::aten::all || k == c10::aten::any) && n.inputs().size() == 1)
            return fold_flag_list(n, k == c10::aten::all);
        if (n.inputs().empty()) return std::nullopt;
        Value* x = n.input(0);
        if (!x->type()->cast<c10::TensorType>()) return std::nullopt;
        // Every tensor of an inference run lives on the inputs' device and needs no gradient.
        static const c10::Symbol never[] = {
            c10::prim::is_cuda,
            c10::prim::requires_grad,
            c10::Symbol::fromQualString("prim::is_sparse"),
            c10::Symbol::fromQualString("prim::is_quantized"),
            c10::Symbol::fromQualString("prim::is_mkldnn"),
            c10::Symbol::fromQualString("prim::is_meta"),
            c10::Symbol::fromQualString("prim::is_nested"),
        };
        if (std::find(std::begin(never), std::end(never), k) != std::end(never))
            return c10::IValue(false);
        if (k == c10::prim::device) return c10::IValue(c10::Device(c10::kCPU));
        // Its rank and element type: an input's as given, a parameter's as held, any other's as
        // libtorch's shape analysis follows them from the inputs.
        std::optional<int64_t> rank;
        std::optional<c10::ScalarType> type;
        if (const auto declared = input_dtypes_.find(x); declared != input_dtypes_.end()) {
            rank = ranks_.at(x);
            type = declared->second == NNERGY_DTYPE_INT64 ? c10::ScalarType::Long
                                                          : c10::ScalarType::Float;
        } else if (const std::optional<at::Tensor> held = attribute_tensor(x)) {
            rank = held->dim();
            type = held->scalar_type();
        } else {
            const auto t = x->type()->expect<c10::TensorType>();
            if (t->dim()) rank = static_cast<int64_t>(*t->dim());
            if (t->scalarType()) type = *t->scalarType();
        }
        if (k == c10::aten::dim && n.inputs().size() == 1 && rank) return c10::IValue(*rank);
        if (k == c10::prim::dtype && type) return c10::IValue(static_cast<int64_t>(*type));
        if (k == c10::aten::is_floating_point && type)
            return c10::IValue(c10::isFloatingType(*type));
        return std::nullopt;
    }

    /// The element type of a value converted before, where the ops that made it keep their
    /// first input's (norms, activations, products, layout changes): parameters' as held,
    /// inputs' as declared.
    void follow_dtype(Node& n) {
        if (n.kind() == c10::prim::GetAttr) {
            if (const std::optional<at::Tensor> held = attribute_tensor(n.output()))
                dtypes_[n.output()] = held->scalar_type();
            return;
        }
        static const std::unordered_set<c10::Symbol> keeps = [] {
            std::unordered_set<c10::Symbol> k;
            for (const char* name : {"aten::layer_norm",
                                     "aten::group_norm",
                                     "aten::batch_norm",
                                     "aten::dropout",
                                     "aten::relu",
                                     "aten::gelu",
                                     "aten::silu",
                                     "aten::sigmoid",
                                     "aten::tanh",
                                     "aten::softmax",
                                     "aten::log_softmax",
                                     "aten::hardswish",
                                     "aten::contiguous",
                                     "aten::clone",
                                     "aten::detach",
                                     "aten::transpose",
                                     "aten::permute",
                                     "aten::reshape",
                                     "aten::view",
                                     "aten::flatten",
                                     "aten::unsqueeze",
                                     "aten::squeeze",
                                     "aten::expand",
                                     "aten::select",
                                     "aten::slice",
                                     "aten::linear",
                                     "aten::matmul",
                                     "aten::mm",
                                     "aten::bmm",
                                     "aten::conv1d",
                                     "aten::conv2d",
                                     "aten::conv3d",
                                     "aten::_convolution",
                                     "aten::add",
                                     "aten::sub",
                                     "aten::mul",
                                     "aten::div",
                                     "aten::neg",
                                     "aten::masked_fill",
                                     "aten::mean",
                                     "aten::_native_multi_head_attention",
                                     "aten::scaled_dot_product_attention",
                                     "aten::max_pool2d",
                                     "aten::avg_pool2d",
                                     "aten::adaptive_avg_pool2d"})
                k.insert(c10::Symbol::fromQualString(name));
            return k;
        }();
        if (n.inputs().empty()) return;
        Value* first = n.input(0);
        // cat and stack: their list's first tensor's.
        if ((n.kind() == c10::aten::cat || n.kind() == c10::aten::stack) &&
            first->node()->kind() == c10::prim::ListConstruct && first->node()->inputs().size() > 0)
            first = first->node()->input(0);
        else if (!keeps.count(n.kind()))
            return;
        const auto from = dtypes_.find(first);
        if (from == dtypes_.end()) return;
        for (Value* out : n.outputs())
            if (out->type()->cast<c10::TensorType>()) dtypes_[out] = from->second;
    }

    /// A question `n` asks that has an answer now (answer(), or the rank or element type of a
    /// value converted before it): replaced by the answer, and what depends on it folded. False
    /// when `n` is no such question.
    bool fold_answer(std::shared_ptr<torch::jit::Graph>& graph, Node* n) {
        if (n->outputs().size() != 1) return false;
        for (Value* v : n->inputs())
            if (poisoned_.count(v)) return false;
        c10::IValue answer;
        if (std::optional<c10::IValue> known = this->answer(*n)) {
            answer = std::move(*known);
        } else if (n->inputs().size() != 1) {
            return false;
        } else if (n->kind() == c10::aten::dim) {
            const auto known = ranks_.find(n->input(0));
            if (known == ranks_.end() || known->second < 0) return false;
            answer = int64_t{known->second};
        } else if (n->kind() == c10::prim::dtype) {
            const auto known = dtypes_.find(n->input(0));
            if (known == dtypes_.end()) return false;
            answer = static_cast<int64_t>(known->second);
        } else {
            return false;
        }
        Value* rank = nullptr;
        {
            // The insertion point is given back before `n` goes.
            torch::jit::WithInsertPoint here(n);
            rank = graph->insertConstant(answer);
        }
        n->output()->replaceAllUsesWith(rank);
        n->destroy();
        // No dead-code pass here: the values converted so far must stay where they are.
        torch::jit::ConstantPropagation(graph);
        torch::jit::LowerSimpleTuples(graph);
        return true;
    }

    /// prim::ListUnpack of a list made empty and filled by appends before it (a list
    /// comprehension): its outputs are the values appended. True when `n` was one.
    static bool unpack_appended(Node* n) {
        if (n->kind() != c10::prim::ListUnpack || n->inputs().size() != 1) return false;
        Value* list = n->input(0);
        const Node* made = list->node();
        if (made->kind() != c10::prim::ListConstruct || !made->inputs().empty()) return false;
        std::vector<Node*> appends;
        for (const torch::jit::Use& u : list->uses()) {
            if (u.user == n) continue;
            if (u.user->kind() != c10::aten::append || u.offset != 0 ||
                u.user->owningBlock() != n->owningBlock() || !u.user->isBefore(n))
                return false;
            appends.push_back(u.user);
        }
        if (appends.size() != n->outputs().size()) return false;
        std::sort(appends.begin(), appends.end(),
                  [](const Node* a, const Node* b) { return a->isBefore(b); });
        for (size_t i = 0; i < appends.size(); ++i)
            n->output(i)->replaceAllUsesWith(appends[i]->input(1));
        return true;
    }

    /// The value whose tensor `v` is: through ops that may return their input itself.
    static const Value* identity(const Value* v) {
        for (;;) {
            const Node* p = v->node();
            const c10::Symbol k = p->kind();
            if ((k == c10::aten::dropout || k == c10::aten::feature_dropout ||
                 k == c10::aten::alpha_dropout || k == c10::aten::contiguous) &&
                !p->inputs().empty()) {
                v = p->input(0);
                continue;
            }
            return v;
        }
    }

    /// aten::format of constants: each "{}" of the first, in turn, replaced by the next.
    static std::optional<c10::IValue> format_constants(const Node& n) {
        const std::optional<c10::IValue> pattern = torch::jit::toIValue(n.input(0));
        if (!pattern || !pattern->isString()) return std::nullopt;
        const std::string text = pattern->toStringRef();
        std::string out;
        size_t next = 1, from = 0;
        for (size_t at = text.find("{}"); at != std::string::npos; at = text.find("{}", from)) {
            if (next >= n.inputs().size()) return std::nullopt;
            const std::optional<c10::IValue> v = torch::jit::toIValue(n.input(next++));
            if (!v) return std::nullopt;
            std::ostringstream printed;
            printed << *v;
            out += text.substr(from, at - from) + printed.str();
            from = at + 2;
        }
        return c10::IValue(out + text.substr(from));
    }

    /// The tensor a chain of prim::GetAttr from the module reads, if `v` is one.
    std::optional<at::Tensor> attribute_tensor(Value* v) const {
        std::vector<std::string> names;
        while (v->node()->kind() == c10::prim::GetAttr) {
            names.push_back(v->node()->s(c10::attr::name));
            v = v->node()->input(0);
        }
        const auto root = objects_.find(v);
        if (names.empty() || root == objects_.end()) return std::nullopt;
        c10::IValue value = root->second;
        for (auto name = names.rbegin(); name != names.rend(); ++name) {
            if (!value.isObject() || !value.toObject()->type()->hasAttribute(*name))
                return std::nullopt;
            value = value.toObject()->getAttr(*name);
        }
        if (!value.isTensor()) return std::nullopt;
        return value.toTensor();
    }

    /// all() / any() of a list made empty and filled by appends of constants only, before it.
    static std::optional<c10::IValue> fold_flag_list(const Node& n, bool all) {
        Value* list = n.input(0);
        const Node* made = list->node();
        if (made->kind() != c10::prim::ListConstruct || !made->inputs().empty())
            return std::nullopt;
        bool result = all;
        for (const torch::jit::Use& u : list->uses()) {
            if (u.user == &n) continue;
            if (u.user->kind() != c10::aten::append || u.offset != 0 ||
                u.user->owningBlock() != n.owningBlock() || !u.user->isBefore(&n))
                return std::nullopt;
            const std::optional<c10::IValue> flag = torch::jit::toIValue(u.user->input(1));
            if (!flag || !flag->isBool()) return std::nullopt;
            result = all ? (result && flag->toBool()) : (result || flag->toBool());
        }
        return c10::IValue(result);
    }

    // ---- liveness: only what the outputs need is converted (assertions and shape checks of
    // scripted code are not)
    void collect_live(torch::jit::Graph& graph) {
        std::vector<Node*> work;
        const auto mark_value = [&](Value* v) {
            Node* p = v->node();
            if (p->kind() != c10::prim::Param && live_.insert(p).second) work.push_back(p);
        };
        for (Value* v : graph.outputs()) mark_value(v);
        while (!work.empty()) {
            Node* n = work.back();
            work.pop_back();
            for (Value* v : n->inputs()) mark_value(v);
            for (torch::jit::Block* b : n->blocks())
                for (Node* inner : b->nodes())
                    for (Value* v : inner->inputs()) mark_value(v);
        }
    }

    // ---- where a node came from, for messages
    std::string where(const Node* n) const {
        std::string s = "node '" +
                        (n->outputs().empty() ? std::string(n->kind().toQualString())
                                              : n->output(0)->debugName()) +
                        "'";
        const auto range = n->sourceRange();
        if (range.source()) {
            if (auto loc = range.file_line_col()) {
                const auto& [file, line, col] = *loc;
                (void)col;
                if (!file.empty()) s += " (" + file + ":" + std::to_string(line) + ")";
            }
        }
        return s;
    }

    std::string unique(const std::string& base) {
        std::string name = base.empty() ? "t" : base;
        if (names_.insert(name).second) return name;
        for (int i = 1;; ++i) {
            std::string candidate = name + "_" + std::to_string(i);
            if (names_.insert(candidate).second) return candidate;
        }
    }

    uint32_t new_tensor(const std::string& base, nnergy_dtype dtype = NNERGY_DTYPE_UNDEFINED) {
        return out_.add_tensor(unique(base), dtype, std::nullopt);
    }

    // ---- inputs and outputs
    void declare_inputs(torch::jit::Graph& graph, const std::vector<input_shape>& shapes) {
        std::vector<Value*> tensor_inputs;
        for (size_t i = 1; i < graph.inputs().size(); ++i) {
            Value* v = graph.inputs()[i];
            if (v->uses().empty()) continue;
            if (!v->type()->cast<c10::TensorType>())
                throw fail(file_ + ": forward() input '" + v->debugName() + "' is a " +
                               v->type()->str() + "; only tensor inputs can be given shapes",
                           NNERGY_CODE_UNIMPLEMENTED);
            tensor_inputs.push_back(v);
        }
        const auto base_name = [](Value* v) {
            std::string n = v->debugName();
            const size_t dot = n.rfind('.');
            if (dot != std::string::npos && dot + 1 < n.size() &&
                std::all_of(n.begin() + static_cast<std::ptrdiff_t>(dot) + 1, n.end(),
                            [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
                n.resize(dot);
            return n;
        };
        std::string names;
        for (Value* v : tensor_inputs) names += (names.empty() ? "'" : ", '") + base_name(v) + "'";
        const std::string how =
            " (--input-shape, or [model] input_shapes in a pipeline: one \"[NAME=]D0xD1x...\" "
            "per input, such as batchx3x224x224)";
        // Shapes by name first, then the unnamed ones in order; a shape left over is reported
        // before an input left without one (a misspelt name causes both).
        std::vector<const input_shape*> shape_of(tensor_inputs.size(), nullptr);
        std::vector<bool> used(shapes.size(), false);
        for (size_t i = 0; i < tensor_inputs.size(); ++i)
            for (size_t k = 0; k < shapes.size() && !shape_of[i]; ++k)
                if (!used[k] && shapes[k].name == base_name(tensor_inputs[i])) {
                    shape_of[i] = &shapes[k];
                    used[k] = true;
                }
        size_t positional = 0;
        for (size_t i = 0; i < tensor_inputs.size(); ++i) {
            while (positional < shapes.size() &&
                   (used[positional] || !shapes[positional].name.empty()))
                ++positional;
            if (!shape_of[i] && positional < shapes.size()) {
                shape_of[i] = &shapes[positional];
                used[positional] = true;
            }
        }
        for (size_t k = 0; k < shapes.size(); ++k)
            if (!used[k])
                throw fail(file_ + ": input shape '" +
                               (shapes[k].name.empty() ? "" : shapes[k].name + "=") +
                               shape_text(shapes[k].shape) +
                               "' matches no input; forward() takes " +
                               std::to_string(tensor_inputs.size()) + " tensor input(s): " + names,
                           NNERGY_CODE_INVALID_ARGUMENT);
        for (size_t i = 0; i < tensor_inputs.size(); ++i) {
            Value* v = tensor_inputs[i];
            const std::string name = base_name(v);
            if (!shape_of[i])
                throw fail(file_ + ": input '" + name + "' has no shape: the archive keeps none; " +
                               "forward() takes " + std::to_string(tensor_inputs.size()) +
                               " tensor input(s): " + names + how,
                           NNERGY_CODE_INVALID_ARGUMENT);
            // Token ids feed embeddings: they are integers.
            nnergy_dtype dtype = NNERGY_DTYPE_FLOAT32;
            for (const torch::jit::Use& u : v->uses())
                if (u.user->kind() == c10::aten::embedding && u.offset == 1)
                    dtype = NNERGY_DTYPE_INT64;
            const uint32_t t = out_.add_tensor(unique(name), dtype, shape_of[i]->shape);
            out_.add_input(t);
            tensors_[v] = t;
            ranks_[v] = static_cast<int>(shape_of[i]->shape.size());
            input_dtypes_[v] = dtype;
            dtypes_[v] =
                dtype == NNERGY_DTYPE_INT64 ? c10::ScalarType::Long : c10::ScalarType::Float;
            std::vector<int64_t>& sizes = input_sizes_[v];
            for (const sdk::graph_builder::dim& d : shape_of[i]->shape)
                sizes.push_back(d.value > 0 ? d.value : 2);
            // The leading dimension becomes the symbol batch even where a number was given.
            nnergy::torchscript::evaluation_input& e = evaluation_inputs_.emplace_back();
            e.value = v;
            e.dtype = dtypes_[v];
            for (size_t d = 0; d < shape_of[i]->shape.size(); ++d)
                e.sizes.push_back(
                    d == 0 || shape_of[i]->shape[d].value <= 0 ? -1 : shape_of[i]->shape[d].value);
        }
    }

    void declare_outputs(torch::jit::Graph& graph) {
        // Tuples, lists and dicts of outputs are flattened, in order.
        std::vector<Value*> outs;
        std::deque<Value*> work(graph.outputs().begin(), graph.outputs().end());
        while (!work.empty()) {
            Value* v = work.front();
            work.pop_front();
            Node* p = v->node();
            if (p->kind() == c10::prim::TupleConstruct || p->kind() == c10::prim::ListConstruct) {
                for (size_t i = p->inputs().size(); i-- > 0;) work.push_front(p->input(i));
                continue;
            }
            if (p->kind() == c10::prim::DictConstruct) {
                for (size_t i = 1; i < p->inputs().size(); i += 2) work.push_back(p->input(i));
                continue;
            }
            // An absent optional output (GoogLeNet's aux logits outside training) is None.
            if (v->type()->kind() == c10::TypeKind::NoneType) continue;
            if (const std::optional<c10::IValue> c = constant(v); c && c->isNone()) continue;
            outs.push_back(v);
        }
        std::set<uint32_t> seen;
        for (Value* v : outs) {
            auto it = tensors_.find(v);
            if (it == tensors_.end())
                throw fail(file_ + ": forward() returns '" + v->debugName() +
                           "', which is not a tensor the model computes");
            if (seen.insert(it->second).second) out_.add_output(it->second);
        }
    }

    // ---- constants and attributes
    std::optional<c10::IValue> constant(Value* v) {
        if (auto it = objects_.find(v); it != objects_.end()) return it->second;
        Node* n = v->node();
        if (n->kind() == c10::prim::Constant) return torch::jit::toIValue(v);
        if (n->kind() == c10::prim::ListConstruct) {
            // A list of constant ints or floats (kernel sizes, strides, reshape targets).
            std::vector<int64_t> ints;
            std::vector<double> doubles;
            bool all_int = true;
            for (Value* in : n->inputs()) {
                const std::optional<c10::IValue> c = constant(in);
                if (!c || !(c->isInt() || c->isDouble())) return std::nullopt;
                if (c->isInt()) {
                    ints.push_back(c->toInt());
                    doubles.push_back(static_cast<double>(c->toInt()));
                } else {
                    all_int = false;
                    doubles.push_back(c->toDouble());
                }
            }
            if (all_int) return c10::IValue(ints);
            return c10::IValue(doubles);
        }
        return std::nullopt;
    }

    std::optional<int64_t> const_int(Value* v) {
        const std::optional<c10::IValue> c = constant(v);
        if (c && c->isInt()) return c->toInt();
        if (c && c->isBool()) return c->toBool() ? 1 : 0;
        return std::nullopt;
    }
    std::optional<double> const_number(Value* v) {
        const std::optional<c10::IValue> c = constant(v);
        if (c && c->isDouble()) return c->toDouble();
        if (c && c->isInt()) return static_cast<double>(c->toInt());
        if (c && c->isBool()) return c->toBool() ? 1.0 : 0.0;
        return std::nullopt;
    }
    std::optional<std::vector<int64_t>> const_ints(Value* v) {
        const std::optional<c10::IValue> c = constant(v);
        if (!c) return std::nullopt;
        if (c->isIntList()) return c->toIntVector();
        if (c->isInt()) return std::vector<int64_t>{c->toInt()};
        return std::nullopt;
    }
    bool is_none(Value* v) {
        const std::optional<c10::IValue> c = constant(v);
        return c && c->isNone();
    }

    int64_t need_int(Node* n, size_t i, const char* what) {
        if (const auto x = const_int(n->input(i))) return *x;
        throw unsupported_arg(n, what);
    }
    double need_number(Node* n, size_t i, const char* what) {
        if (const auto x = const_number(n->input(i))) return *x;
        throw unsupported_arg(n, what);
    }
    std::vector<int64_t> need_ints(Node* n, size_t i, const char* what) {
        if (auto x = const_ints(n->input(i))) return *x;
        throw unsupported_arg(n, what);
    }
    bool need_bool(Node* n, size_t i, const char* what) { return need_int(n, i, what) != 0; }

    struct skip_node {
        std::string why;
    };
    skip_node dim_out_of_range(Node* n, int64_t dim, int rank) {
        return skip_node{std::string(n->kind().toQualString()) + " with dim " +
                         std::to_string(dim) + ", out of range for a tensor of rank " +
                         std::to_string(rank)};
    }
    skip_node unsupported_arg(Node* n, const char* what) {
        return skip_node{std::string(n->kind().toQualString()) + " with a " + what +
                         " only known when the model runs"};
    }

    /// prim::GetAttr on a module object: the object, or a tensor (parameter or buffer) named by
    /// its path from the model.
    void get_attr(Node* n) {
        Value* owner = n->input(0);
        auto it = objects_.find(owner);
        if (it == objects_.end() || !it->second.isObject())
            throw skip_node{"prim::GetAttr on a value that is not a module"};
        const c10::intrusive_ptr<c10::ivalue::Object> obj = it->second.toObject();
        const std::string name = n->s(c10::attr::name);
        const c10::IValue value = obj->getAttr(name);
        const std::string path = paths_.count(owner) ? paths_[owner] + "." + name : name;
        paths_[n->output()] = path;
        // Tensors become initializers where an op reads them: nn.Linear's weight is read
        // transposed, and one never read is not part of the forward pass.
        objects_[n->output()] = value;
    }

    /// Parameters the forward pass never reads (GoogLeNet's auxiliary heads outside training)
    /// are still the model's: initializers no node reads, which the host counts as parameters.
    void add_unread_parameters(const std::vector<std::pair<std::string, at::Tensor>>& all) {
        for (const auto& [name, value] : all) {
            if (initializer_of_.count(value.unsafeGetTensorImpl())) continue;
            dims d;
            for (int64_t s : value.sizes()) {
                sdk::graph_builder::dim x;
                x.value = s;
                d.push_back(x);
            }
            const uint32_t id = out_.add_tensor(unique(name), dtype_of(value.scalar_type()), d);
            out_.set_initializer(id);
            initializer_of_[value.unsafeGetTensorImpl()] = id;
        }
    }

    /// A tensor known before the model runs: a parameter, a buffer or a constant.
    uint32_t initializer(Value* v, const at::Tensor& t, const std::string& name, bool constant) {
        const std::string& key = name;
        if (auto it = initializer_of_.find(t.unsafeGetTensorImpl()); it != initializer_of_.end()) {
            tensors_[v] = it->second;
            ranks_[v] = static_cast<int>(t.dim());
            return it->second;
        }
        dims d;
        for (int64_t s : t.sizes()) {
            sdk::graph_builder::dim x;
            x.value = s;
            d.push_back(x);
        }
        // A 0-d constant takes the other operand's type, as in PyTorch's promotion: a float64
        // scalar does not make a float32 tensor float64, and the int64 tensor a trace records
        // for `x.half() * 2` multiplies in float16. Integers keep their type (and values) for
        // the shape arithmetic they may be part of; the CastLike passes values through.
        const bool scalar =
            t.dim() == 0 && (t.is_floating_point() ||
                             (c10::isIntegralType(t.scalar_type(), /*includeBool=*/false)));
        const nnergy_dtype dtype =
            scalar && t.is_floating_point() ? NNERGY_DTYPE_FLOAT32 : dtype_of(t.scalar_type());
        const uint32_t id = out_.add_tensor(unique(key), dtype, d);
        out_.set_initializer(id);
        if (constant) out_.set_constant(id);
        // Integer constants may be shape arithmetic: their values are cheap and needed.
        if (t.scalar_type() == c10::ScalarType::Long && t.numel() <= 64 && !t.is_meta()) {
            const at::Tensor c = t.contiguous();
            out_.set_initializer_values(
                id, std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()));
        }
        initializer_of_[t.unsafeGetTensorImpl()] = id;
        if (scalar) scalars_.insert(id);
        tensors_[v] = id;
        ranks_[v] = static_cast<int>(t.dim());
        return id;
    }

    /// A scalar or small vector the mapping itself needs (Clip bounds, Reshape targets, ...).
    uint32_t const_tensor(const std::vector<int64_t>& values, bool scalar = false) {
        dims d;
        if (!scalar) {
            sdk::graph_builder::dim x;
            x.value = static_cast<int64_t>(values.size());
            d.push_back(x);
        }
        const uint32_t id = out_.add_tensor(unique("const"), NNERGY_DTYPE_INT64, d);
        out_.set_initializer(id);
        out_.set_constant(id);
        out_.set_initializer_values(id, values);
        return id;
    }
    /// A number operand of a tensor op: 0-d, cast to the other operand's type (typed_like). Its
    /// value is not kept: no count depends on it.
    uint32_t scalar_operand() {
        const uint32_t id = out_.add_tensor(unique("scalar"), NNERGY_DTYPE_FLOAT32, dims{});
        out_.set_initializer(id);
        out_.set_constant(id);
        scalars_.insert(id);
        return id;
    }
    /// The inputs of an elementwise op with a scalar operand cast to the other's type
    /// (CastLike of a constant folds when the model is bound).
    std::vector<uint32_t> typed_like(std::vector<uint32_t> inputs) {
        uint32_t typed = NNERGY_NO_TENSOR;
        for (uint32_t t : inputs)
            if (t != NNERGY_NO_TENSOR && !scalars_.count(t)) typed = t;
        if (typed == NNERGY_NO_TENSOR) return inputs;
        for (uint32_t& t : inputs)
            if (scalars_.count(t)) t = emit_inner("scalar_cast", "CastLike", {t, typed});
        return inputs;
    }

    /// The IR tensor of a value; a number (constant or computed) is a 0-d scalar, cast to the
    /// other operand's type where it meets a tensor.
    uint32_t tensor(Value* v) {
        const uint32_t id = tensor_of(v);
        if (!v->type()->cast<c10::TensorType>()) scalars_.insert(id);
        if (v->type()->kind() == c10::TypeKind::IntType) int_scalars_.insert(id);
        return id;
    }
    uint32_t tensor_of(Value* v) {
        if (auto it = tensors_.find(v); it != tensors_.end()) return it->second;
        const std::optional<c10::IValue> c = constant(v);
        if (c && c->isTensor()) {
            if (auto p = paths_.find(v); p != paths_.end())
                return initializer(v, c->toTensor(), p->second, !is_parameter(v));
            return initializer(v, c->toTensor(), "constant", true);
        }
        if (c && (c->isInt() || c->isBool())) {
            // An int of shape arithmetic: its value is needed.
            const uint32_t id =
                const_tensor({c->isInt() ? c->toInt() : int64_t{c->toBool()}}, true);
            tensors_[v] = id;
            ranks_[v] = 0;
            return id;
        }
        if (c && c->isDouble()) {
            const uint32_t id = scalar_operand();
            tensors_[v] = id;
            ranks_[v] = 0;
            return id;
        }
        throw skip_node{"an input '" + v->debugName() + "' that is not a tensor"};
    }

    int rank(Value* v) const {
        auto it = ranks_.find(v);
        return it == ranks_.end() ? -1 : it->second;
    }

    // ---- emitting nodes
    uint32_t emit(Node* n, const std::string& op, const std::vector<uint32_t>& inputs, int out_rank,
                  size_t output_index = 0) {
        Value* v = n->output(output_index);
        const uint32_t out = new_tensor(v->debugName());
        const std::vector<uint32_t> typed = typed_like(inputs);
        last_node_ = out_.add_node(unique(v->debugName() + "/" + op), op, "", typed,
                                   std::vector<uint32_t>{out});
        tensors_[v] = out;
        ranks_[v] = out_rank;
        return out;
    }
    /// A node whose output is an intermediate of the mapping (no torch value).
    uint32_t emit_inner(const std::string& base, const std::string& op,
                        const std::vector<uint32_t>& inputs) {
        const uint32_t out = new_tensor(base);
        const std::vector<uint32_t> typed = op == "CastLike" ? inputs : typed_like(inputs);
        last_node_ =
            out_.add_node(unique(base + "/" + op), op, "", typed, std::vector<uint32_t>{out});
        return out;
    }
    void alias(Node* n, Value* from) {
        tensors_[n->output()] = tensor(from);
        ranks_[n->output()] = rank(from);
    }

    void convert(Node* n) {
        // Downstream of an op without a mapping nothing can be read: one message per cause.
        const auto poison = [&] {
            for (Value* v : n->outputs()) poisoned_.insert(v);
        };
        for (Value* v : n->inputs())
            if (poisoned_.count(v)) {
                ++downstream_count_;
                return poison();
            }
        try {
            convert_node(n);
        } catch (const skip_node& s) {
            ++unsupported_count_;
            if (unsupported_.size() < 40) unsupported_.emplace_back(s.why, where(n));
            poison();
        } catch (const c10::Error& e) {
            ++unsupported_count_;
            if (unsupported_.size() < 40)
                unsupported_.emplace_back(
                    std::string(n->kind().toQualString()) + ": " + first_line(e.what()), where(n));
            poison();
        }
    }

    void convert_node(Node* n) {
        using namespace c10;
        const Symbol k = n->kind();
        const std::string name = k.toQualString();
        const auto in = [&](size_t i) { return n->input(i); };
        const auto r0 = [&] { return rank(in(0)); };

        if (k == prim::Constant || k == prim::ListConstruct || k == prim::TupleConstruct ||
            k == prim::DictConstruct)
            return;  // read where used
        if (k == prim::GetAttr) return get_attr(n);
        // A tensor's device, dtype or layout: read by the op that takes it (arange, zeros).
        if (k == prim::device || k == prim::dtype || k == prim::layout) return;
        if (k == prim::ListUnpack || k == prim::TupleUnpack) {
            Node* p = in(0)->node();
            if (p->kind() == prim::ListConstruct || p->kind() == prim::TupleConstruct) {
                for (size_t i = 0; i < n->outputs().size() && i < p->inputs().size(); ++i) {
                    if (auto it = tensors_.find(p->input(i)); it != tensors_.end()) {
                        tensors_[n->output(i)] = it->second;
                        ranks_[n->output(i)] = rank(p->input(i));
                    }
                }
                return;
            }
            if (auto it = tensors_.find(in(0)); it != tensors_.end()) {
                // A shape the model reads (b, s, w = x.shape): one element each.
                for (size_t i = 0; i < n->outputs().size(); ++i) {
                    emit(n, "Gather", {it->second, const_tensor({static_cast<int64_t>(i)}, true)},
                         0, i);
                    out_.attr(last_node_, "axis", int64_t{0});
                }
                return;
            }
            if (auto it = split_outputs_.find(in(0)); it != split_outputs_.end()) {
                for (size_t i = 0; i < n->outputs().size() && i < it->second.size(); ++i) {
                    tensors_[n->output(i)] = it->second[i];
                    ranks_[n->output(i)] = rank(in(0));
                }
                return;
            }
            throw skip_node{name + " of a list the model computes"};
        }
        if (k == prim::NumToTensor || k == aten::Int || k == aten::Float ||
            k == aten::ScalarImplicit || k == aten::contiguous || k == aten::detach ||
            k == aten::clone || k == aten::dropout || k == aten::dropout_ ||
            k == aten::feature_dropout || k == aten::alpha_dropout || k == aten::lift_fresh)
            return alias(n, in(0));
        if (k == aten::to || k == aten::type_as) return convert_to(n);

        // Shape arithmetic of traced code (x.size(0) feeding a view) stays symbolic: the host
        // evaluates Shape, Gather and Concat once the model is bound.
        if (k == aten::dim) {
            if (rank(in(0)) < 0) throw skip_node{"aten::dim of a tensor of unknown rank"};
            tensors_[n->output()] = const_tensor({rank(in(0))}, true);
            ranks_[n->output()] = 0;
            return;
        }
        if (k == aten::__getitem__ && tensors_.count(in(0))) {
            // An element of a shape the model reads (x.shape[0]).
            emit(n, "Gather", {tensors_[in(0)], const_tensor({need_int(n, 1, "index")}, true)}, 0);
            out_.attr(last_node_, "axis", int64_t{0});
            return;
        }
        if (k == aten::size && n->inputs().size() == 1) {
            emit(n, "Shape", {tensor(in(0))}, 1);
            return;
        }
        if (k == aten::size && n->inputs().size() == 2) {
            const uint32_t shape = emit_inner(n->output()->debugName(), "Shape", {tensor(in(0))});
            const int64_t d = need_int(n, 1, "dimension");
            emit(n, "Gather", {shape, const_tensor({d}, true)}, 0);
            out_.attr(last_node_, "axis", int64_t{0});
            return;
        }

        // Convolutions
        if (k == aten::_convolution || k == aten::conv1d || k == aten::conv2d ||
            k == aten::conv3d || k == aten::convolution) {
            const bool full = k == aten::_convolution || k == aten::convolution;
            const bool transposed = full && need_bool(n, 6, "transposed flag");
            const int64_t groups = need_int(n, full ? 8 : 6, "group count");
            const uint32_t w = tensor(in(1));
            const int wr = rank(in(1));
            std::vector<uint32_t> inputs{tensor(in(0)), w};
            if (!is_none(in(2))) inputs.push_back(tensor(in(2)));
            emit(n, transposed ? "ConvTranspose" : "Conv", inputs, r0());
            const size_t spatial = wr > 2 ? static_cast<size_t>(wr - 2) : 2;
            const auto expand = [&](std::vector<int64_t> v) {
                if (v.size() == 1) v.assign(spatial, v[0]);
                return v;
            };
            out_.attr(last_node_, "strides", expand(need_ints(n, 3, "stride")));
            const std::optional<c10::IValue> pad = constant(in(4));
            if (pad && pad->isString()) {
                out_.attr(last_node_, "auto_pad",
                          std::string_view(pad->toStringRef() == "same" ? "SAME_UPPER" : "VALID"));
            } else {
                std::vector<int64_t> p = expand(need_ints(n, 4, "padding"));
                std::vector<int64_t> pads = p;
                pads.insert(pads.end(), p.begin(), p.end());
                out_.attr(last_node_, "pads", pads);
            }
            out_.attr(last_node_, "dilations", expand(need_ints(n, 5, "dilation")));
            out_.attr(last_node_, "group", groups);
            if (const std::optional<at::Tensor> wt = weight_of(in(1))) {
                std::vector<int64_t> ks(wt->sizes().begin() + 2, wt->sizes().end());
                out_.attr(last_node_, "kernel_shape", ks);
            }
            if (transposed) {
                std::vector<int64_t> op = expand(need_ints(n, 7, "output padding"));
                if (std::any_of(op.begin(), op.end(), [](int64_t x) { return x != 0; }))
                    out_.attr(last_node_, "output_padding", op);
            }
            return;
        }
        if (k == aten::batch_norm || k == aten::instance_norm) {
            const bool batch = k == aten::batch_norm;
            if (batch && need_bool(n, 5, "training flag"))
                throw skip_node{
                    "aten::batch_norm in training mode (save the model after "
                    "model.eval())"};
            if (!batch) throw skip_node{name};
            const int64_t channels = channels_of(in(3), in(1));
            std::vector<uint32_t> inputs{tensor(in(0))};
            for (size_t i : {size_t{1}, size_t{2}})
                inputs.push_back(is_none(in(i)) ? filler(channels) : tensor(in(i)));
            inputs.push_back(is_none(in(3)) ? filler(channels) : tensor(in(3)));
            inputs.push_back(is_none(in(4)) ? filler(channels) : tensor(in(4)));
            emit(n, "BatchNormalization", inputs, r0());
            out_.attr(last_node_, "epsilon", need_number(n, 7, "epsilon"));
            return;
        }
        if (k == aten::layer_norm) {
            const std::vector<int64_t> shape = need_ints(n, 1, "normalized shape");
            int64_t features = 1;
            for (int64_t s : shape) features *= s;
            std::vector<uint32_t> inputs{tensor(in(0))};
            inputs.push_back(is_none(in(2)) ? filler(features) : tensor(in(2)));
            if (!is_none(in(3))) inputs.push_back(tensor(in(3)));
            emit(n, "LayerNormalization", inputs, r0());
            out_.attr(last_node_, "axis", -static_cast<int64_t>(shape.size()));
            out_.attr(last_node_, "epsilon", need_number(n, 4, "epsilon"));
            return;
        }
        if (k == aten::group_norm) {
            const int64_t groups = need_int(n, 1, "group count");
            if (is_none(in(2))) throw skip_node{"aten::group_norm without affine weights"};
            std::vector<uint32_t> inputs{tensor(in(0)), tensor(in(2)),
                                         is_none(in(3)) ? tensor(in(2)) : tensor(in(3))};
            emit(n, "GroupNormalization", inputs, r0());
            out_.attr(last_node_, "num_groups", groups);
            out_.attr(last_node_, "epsilon", need_number(n, 4, "epsilon"));
            return;
        }

        // Matrix products
        if (k == aten::linear) {
            const uint32_t wt = transposed_weight(in(1));
            const uint32_t x = tensor(in(0));
            if (is_none(in(2))) {
                emit(n, "MatMul", {x, wt}, r0());
            } else {
                const uint32_t y =
                    emit_inner(n->output()->debugName() + "_matmul", "MatMul", {x, wt});
                emit(n, "Add", {y, tensor(in(2))}, r0());
            }
            return;
        }
        if (k == aten::addmm) {
            emit(n, "Gemm", {tensor(in(1)), tensor(in(2)), tensor(in(0))}, 2);
            out_.attr(last_node_, "beta", const_number(in(3)).value_or(1.0));
            out_.attr(last_node_, "alpha", const_number(in(4)).value_or(1.0));
            return;
        }
        if (k == aten::matmul || k == aten::mm || k == aten::bmm) {
            emit(n, "MatMul", {tensor(in(0)), tensor(in(1))}, std::max(rank(in(0)), rank(in(1))));
            return;
        }
        if (k == aten::t) {
            emit(n, "Transpose", {tensor(in(0))}, 2);
            out_.attr(last_node_, "perm", std::vector<int64_t>{1, 0});
            return;
        }
        // Public from PyTorch 2.0 (q, k, v, mask, dropout, is_causal, scale); 1.13's private
        // form returns the weights too (q, k, v, mask, dropout, need_weights, is_causal).
        if (name == "aten::scaled_dot_product_attention" ||
            name == "aten::_scaled_dot_product_attention")
            return attention(n);
        if (name == "aten::_native_multi_head_attention") return multi_head_attention(n);
        if (name == "aten::_transformer_encoder_layer_fwd") return encoder_layer(n);
        if (k == aten::embedding) {
            emit(n, "Gather", {tensor(in(0)), tensor(in(1))}, rank(in(1)) + 1);
            out_.attr(last_node_, "axis", int64_t{0});
            return;
        }

        // Elementwise arithmetic (a scalar operand becomes a constant)
        static const std::map<std::string, std::string> binary = {
            {"aten::add", "Add"},          {"aten::add_", "Add"},
            {"aten::sub", "Sub"},          {"aten::sub_", "Sub"},
            {"aten::mul", "Mul"},          {"aten::mul_", "Mul"},
            {"aten::div", "Div"},          {"aten::div_", "Div"},
            {"aten::pow", "Pow"},          {"aten::maximum", "Max"},
            {"aten::minimum", "Min"},      {"aten::eq", "Equal"},
            {"aten::gt", "Greater"},       {"aten::lt", "Less"},
            {"aten::floor_divide", "Div"}, {"aten::floordiv", "Div"},
            {"aten::where", "Where"},      {"aten::masked_fill", "Where"},
            {"aten::rsub", "Sub"},         {"aten::remainder", "Mod"},
            {"aten::fmod", "Mod"},         {"aten::ge", "GreaterOrEqual"},
            {"aten::le", "LessOrEqual"},   {"aten::ne", "Equal"}};
        if (auto b = binary.find(name); b != binary.end()) {
            if (!in(0)->type()->cast<c10::TensorType>() && !tensors_.count(in(0)))
                return int_arithmetic(n, b->second);
            if ((k == aten::add || k == aten::add_ || k == aten::sub || k == aten::sub_ ||
                 k == aten::rsub) &&
                n->inputs().size() > 2) {
                const std::optional<double> alpha = const_number(in(2));
                if (!alpha || *alpha != 1.0) throw skip_node{name + " with alpha other than 1"};
            }
            // A rounding mode: integer division as is (shape arithmetic such as embed_dim //
            // heads), a floating-point quotient rounded by Floor after it.
            bool round_after = false;
            if (k == aten::div && n->inputs().size() > 2 && !is_none(in(2))) {
                const std::optional<c10::IValue> mode = constant(in(2));
                if (!mode || !mode->isString() ||
                    (mode->toStringRef() != "floor" && mode->toStringRef() != "trunc"))
                    throw unsupported_arg(n, "rounding mode");
                const auto type = in(0)->type()->cast<c10::TensorType>();
                round_after =
                    type && type->scalarType() && c10::isFloatingType(*type->scalarType());
            }
            if (k == aten::where) {
                emit(n, "Where", {tensor(in(0)), tensor(in(1)), tensor(in(2))},
                     std::max({rank(in(0)), rank(in(1)), rank(in(2))}));
                return;
            }
            if (k == aten::masked_fill) {
                emit(n, "Where", {tensor(in(1)), tensor(in(2)), tensor(in(0))},
                     std::max(rank(in(0)), rank(in(1))));
                return;
            }
            // A number beside a tensor is a scalar of the tensor's type (x * 2, x + 1).
            const bool tensor_op =
                in(0)->type()->cast<c10::TensorType>() || in(1)->type()->cast<c10::TensorType>();
            // An int beside an integer tensor (a size made a tensor by traced code: W % 7)
            // stays an int64 constant.
            const auto integral = [](Value* v) {
                const auto t = v->type()->cast<c10::TensorType>();
                return t && t->scalarType() && c10::isIntegralType(*t->scalarType(), false);
            };
            const auto operand = [&](Value* v, Value* other) {
                if (tensor_op && !tensors_.count(v) && !v->type()->cast<c10::TensorType>()) {
                    if (const_int(v) && (integral(other) || (tensors_.count(other) &&
                                                             int_scalars_.count(tensors_[other]))))
                        return tensor(v);
                    if (const_number(v)) return scalar_operand();
                }
                return tensor(v);
            };
            std::vector<uint32_t> inputs{operand(in(0), in(1)), operand(in(1), in(0))};
            if (k == aten::rsub) std::swap(inputs[0], inputs[1]);
            emit(n, b->second, inputs, std::max(rank(in(0)), rank(in(1))));
            // Arithmetic on numbers alone (head_dim ** -0.5) is a number: where it meets a
            // tensor it takes the tensor's type, as a 0-d operand does in PyTorch.
            if (scalars_.count(inputs[0]) && scalars_.count(inputs[1]))
                scalars_.insert(tensors_[n->output()]);
            if (k == aten::ne)  // not equal: Equal, then Not
                tensors_[n->output()] =
                    emit_inner(n->output()->debugName() + "_not", "Not", {tensors_[n->output()]});
            if (k == aten::fmod || k == aten::remainder) {
                // Mod's fmod = 1 (the dividend's sign) is what fmod computes, and what ONNX
                // asks of floating-point operands; remainder on integers takes the divisor's.
                const auto type = in(0)->type()->cast<c10::TensorType>();
                const bool floating =
                    type && type->scalarType() && c10::isFloatingType(*type->scalarType());
                if (k == aten::fmod || floating) out_.attr(last_node_, "fmod", int64_t{1});
            }
            if (round_after)
                tensors_[n->output()] = emit_inner(n->output()->debugName() + "_rounded", "Floor",
                                                   {tensors_[n->output()]});
            return;
        }
        static const std::map<std::string, std::string> unary = {{"aten::relu", "Relu"},
                                                                 {"aten::relu_", "Relu"},
                                                                 {"aten::sigmoid", "Sigmoid"},
                                                                 {"aten::sigmoid_", "Sigmoid"},
                                                                 {"aten::tanh", "Tanh"},
                                                                 {"aten::tanh_", "Tanh"},
                                                                 {"aten::exp", "Exp"},
                                                                 {"aten::log", "Log"},
                                                                 {"aten::sqrt", "Sqrt"},
                                                                 {"aten::rsqrt", "Sqrt"},
                                                                 {"aten::neg", "Neg"},
                                                                 {"aten::abs", "Abs"},
                                                                 {"aten::erf", "Erf"},
                                                                 {"aten::hardswish", "HardSwish"},
                                                                 {"aten::hardswish_", "HardSwish"},
                                                                 {"aten::mish", "Mish"},
                                                                 {"aten::softplus", "Softplus"},
                                                                 {"aten::elu", "Elu"},
                                                                 {"aten::reciprocal", "Reciprocal"},
                                                                 {"aten::sin", "Sin"},
                                                                 {"aten::cos", "Cos"},
                                                                 {"aten::floor", "Floor"},
                                                                 {"aten::ceil", "Ceil"}};
        if (auto u = unary.find(name); u != unary.end()) {
            emit(n, u->second, {tensor(in(0))}, r0());
            return;
        }
        if (k == aten::silu || k == aten::silu_) {
            const uint32_t x = tensor(in(0));
            const uint32_t s = emit_inner(n->output()->debugName() + "_sigmoid", "Sigmoid", {x});
            emit(n, "Mul", {x, s}, r0());
            return;
        }
        if (k == aten::gelu) {
            emit(n, "Gelu", {tensor(in(0))}, r0());
            if (n->inputs().size() > 1)
                if (const std::optional<c10::IValue> a = constant(in(1)); a && a->isString())
                    out_.attr(last_node_, "approximate", std::string_view(a->toStringRef()));
            return;
        }
        if (k == aten::hardsigmoid || k == aten::hardsigmoid_) {
            emit(n, "HardSigmoid", {tensor(in(0))}, r0());
            out_.attr(last_node_, "alpha", 1.0 / 6.0);
            out_.attr(last_node_, "beta", 0.5);
            return;
        }
        if (k == aten::leaky_relu || k == aten::leaky_relu_) {
            emit(n, "LeakyRelu", {tensor(in(0))}, r0());
            out_.attr(last_node_, "alpha",
                      n->inputs().size() > 1 ? need_number(n, 1, "slope") : 0.01);
            return;
        }
        if (k == aten::hardtanh || k == aten::hardtanh_ || k == aten::clamp || k == aten::clamp_ ||
            k == aten::relu6) {
            std::vector<uint32_t> inputs{tensor(in(0))};
            for (size_t i : {size_t{1}, size_t{2}}) {
                if (k == aten::relu6) {
                    inputs.push_back(scalar_operand());
                } else if (i >= n->inputs().size() || is_none(in(i))) {
                    inputs.push_back(NNERGY_NO_TENSOR);
                } else {
                    need_number(n, i, "bound");  // a bound computed when the model runs is not read
                    inputs.push_back(scalar_operand());
                }
            }
            emit(n, "Clip", inputs, r0());
            return;
        }
        if (k == aten::clamp_min || k == aten::clamp_max) {
            need_number(n, 1, "bound");
            const uint32_t bound = scalar_operand();
            emit(n, "Clip",
                 k == aten::clamp_min
                     ? std::vector<uint32_t>{tensor(in(0)), bound, NNERGY_NO_TENSOR}
                     : std::vector<uint32_t>{tensor(in(0)), NNERGY_NO_TENSOR, bound},
                 r0());
            return;
        }
        if (k == aten::softmax || k == aten::log_softmax || k == aten::_softmax) {
            emit(n, k == aten::log_softmax ? "LogSoftmax" : "Softmax", {tensor(in(0))}, r0());
            out_.attr(last_node_, "axis", need_int(n, 1, "axis"));
            return;
        }

        // Pooling
        if (k == aten::max_pool1d || k == aten::max_pool2d || k == aten::max_pool3d ||
            k == aten::avg_pool1d || k == aten::avg_pool2d || k == aten::avg_pool3d) {
            const bool max =
                k == aten::max_pool1d || k == aten::max_pool2d || k == aten::max_pool3d;
            std::vector<int64_t> kernel = need_ints(n, 1, "window");
            const size_t spatial = k == aten::max_pool1d || k == aten::avg_pool1d   ? 1
                                   : k == aten::max_pool3d || k == aten::avg_pool3d ? 3
                                                                                    : 2;
            const auto expand = [&](std::vector<int64_t> v) {
                if (v.size() == 1) v.assign(spatial, v[0]);
                return v;
            };
            kernel = expand(kernel);
            std::vector<int64_t> stride = need_ints(n, 2, "stride");
            stride = stride.empty() ? kernel : expand(stride);
            const std::vector<int64_t> p = expand(need_ints(n, 3, "padding"));
            std::vector<int64_t> pads = p;
            pads.insert(pads.end(), p.begin(), p.end());
            emit(n, max ? "MaxPool" : "AveragePool", {tensor(in(0))}, r0());
            out_.attr(last_node_, "kernel_shape", kernel);
            out_.attr(last_node_, "strides", stride);
            out_.attr(last_node_, "pads", pads);
            if (max) {
                out_.attr(last_node_, "dilations", expand(need_ints(n, 4, "dilation")));
                out_.attr(last_node_, "ceil_mode", int64_t{need_bool(n, 5, "ceil mode")});
            } else {
                out_.attr(last_node_, "ceil_mode", int64_t{need_bool(n, 4, "ceil mode")});
                if (n->inputs().size() > 5)
                    out_.attr(last_node_, "count_include_pad",
                              int64_t{need_bool(n, 5, "count_include_pad")});
            }
            return;
        }
        if (k == aten::adaptive_avg_pool1d || k == aten::adaptive_avg_pool2d ||
            k == aten::adaptive_avg_pool3d || k == aten::adaptive_max_pool1d ||
            k == aten::adaptive_max_pool2d || k == aten::adaptive_max_pool3d) {
            const bool max = k == aten::adaptive_max_pool1d || k == aten::adaptive_max_pool2d ||
                             k == aten::adaptive_max_pool3d;
            const std::vector<int64_t> size = need_ints(n, 1, "output size");
            if (std::all_of(size.begin(), size.end(), [](int64_t s) { return s == 1; })) {
                emit(n, max ? "GlobalMaxPool" : "GlobalAveragePool", {tensor(in(0))}, r0());
                return;
            }
            adaptive_pool(n, size, max);
            return;
        }
        if (k == aten::mean || k == aten::sum || k == aten::amax) {
            if (n->inputs().size() < 3) throw skip_node{name + " over every element"};
            std::vector<int64_t> axes = need_ints(n, 1, "axes");
            const int64_t keep = need_int(n, 2, "keepdim flag");
            const char* op = k == aten::mean  ? "ReduceMean"
                             : k == aten::sum ? "ReduceSum"
                                              : "ReduceMax";
            emit(n, op, {tensor(in(0)), const_tensor(axes)},
                 keep ? r0() : (r0() < 0 ? -1 : r0() - static_cast<int>(axes.size())));
            out_.attr(last_node_, "keepdims", keep);
            return;
        }
        // Vector norms over dims (F.normalize, Swin V2's cosine attention): p = 1 or 2.
        if ((k == aten::norm && n->inputs().size() >= 4) ||
            (k == aten::linalg_vector_norm && n->inputs().size() >= 4)) {
            const double p = need_number(n, 1, "order p");
            if (p != 1.0 && p != 2.0) throw skip_node{name + " of order other than 1 or 2"};
            if (is_none(in(2))) throw skip_node{name + " over every element"};
            std::vector<int64_t> axes = need_ints(n, 2, "axes");
            const int64_t keep = need_int(n, 3, "keepdim flag");
            emit(n, p == 1.0 ? "ReduceL1" : "ReduceL2", {tensor(in(0)), const_tensor(axes)},
                 keep ? r0() : (r0() < 0 ? -1 : r0() - static_cast<int>(axes.size())));
            out_.attr(last_node_, "keepdims", keep);
            return;
        }

        // Layout
        if (k == aten::flatten) {
            const int64_t start = need_int(n, 1, "start dim");
            const int64_t end = need_int(n, 2, "end dim");
            const int r = r0();
            if (end != -1 && !(r > 0 && end == r - 1))
                throw skip_node{"aten::flatten that ends before the last dim"};
            const int64_t axis = start < 0 && r > 0 ? start + r : start;
            if (r > 0 && (axis < 0 || axis >= r)) throw dim_out_of_range(n, start, r);
            emit(n, "Flatten", {tensor(in(0))}, r > 0 ? static_cast<int>(axis) + 1 : -1);
            out_.attr(last_node_, "axis", axis);
            return;
        }
        if (k == aten::view || k == aten::reshape || k == aten::_reshape_alias) {
            const uint32_t target = int_list(n, in(1));
            emit(n, "Reshape", {tensor(in(0)), target}, list_length(in(1)));
            return;
        }
        if (k == aten::permute) {
            const std::vector<int64_t> perm = need_ints(n, 1, "permutation");
            emit(n, "Transpose", {tensor(in(0))}, static_cast<int>(perm.size()));
            out_.attr(last_node_, "perm", normalize(perm, static_cast<int>(perm.size())));
            return;
        }
        if (k == aten::transpose || k == aten::transpose_) {
            const int r = r0();
            if (r < 0) throw skip_node{"aten::transpose of a tensor of unknown rank"};
            const int64_t written_a = need_int(n, 1, "dim"), written_b = need_int(n, 2, "dim");
            const int64_t a = written_a < 0 ? written_a + r : written_a;
            const int64_t b = written_b < 0 ? written_b + r : written_b;
            // Indexes the permutation below: one beyond the rank is the model's error, not
            // something to map.
            if (a < 0 || a >= r) throw dim_out_of_range(n, written_a, r);
            if (b < 0 || b >= r) throw dim_out_of_range(n, written_b, r);
            std::vector<int64_t> perm(static_cast<size_t>(r));
            for (int i = 0; i < r; ++i) perm[static_cast<size_t>(i)] = i;
            std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
            emit(n, "Transpose", {tensor(in(0))}, r);
            out_.attr(last_node_, "perm", perm);
            return;
        }
        if (k == aten::unsqueeze || k == aten::unsqueeze_) {
            emit(n, "Unsqueeze", {tensor(in(0)), const_tensor({need_int(n, 1, "dim")})},
                 r0() < 0 ? -1 : r0() + 1);
            return;
        }
        if (k == aten::squeeze || k == aten::squeeze_) {
            if (n->inputs().size() < 2) throw skip_node{"aten::squeeze of every unit dim"};
            emit(n, "Squeeze", {tensor(in(0)), const_tensor({need_int(n, 1, "dim")})},
                 r0() < 0 ? -1 : r0() - 1);
            return;
        }
        if (k == aten::cat || k == aten::concat || k == aten::stack) {
            Node* list = in(0)->node();
            if (list->kind() != prim::ListConstruct)
                throw skip_node{name + " of a list the model computes"};
            const int64_t dim = need_int(n, 1, "dim");
            std::vector<uint32_t> inputs;
            int r = -1;
            for (Value* v : list->inputs()) {
                r = std::max(r, rank(v));
                if (k == aten::stack)
                    inputs.push_back(emit_inner(v->debugName() + "_unsqueezed", "Unsqueeze",
                                                {tensor(v), const_tensor({dim})}));
                else
                    inputs.push_back(tensor(v));
            }
            emit(n, "Concat", inputs, k == aten::stack && r >= 0 ? r + 1 : r);
            out_.attr(last_node_, "axis", dim);
            return;
        }
        if (k == aten::chunk || k == aten::split || k == aten::unbind ||
            k == aten::split_with_sizes) {
            return split(n);
        }
        if (k == aten::slice) {
            // Bounds constant or computed (x[:, :H] after padding to windows).
            const int64_t dim = need_int(n, 1, "dim");
            const auto bound = [&](size_t i, int64_t otherwise) {
                if (is_none(in(i))) return const_tensor({otherwise});
                if (const std::optional<int64_t> c = const_int(in(i))) return const_tensor({*c});
                return emit_inner(in(i)->debugName() + "_dim", "Unsqueeze",
                                  {tensor(in(i)), const_tensor({0})});
            };
            const uint32_t start = bound(2, 0);
            const uint32_t end = bound(3, std::numeric_limits<int64_t>::max());
            const int64_t step = need_int(n, 4, "step");
            emit(n, "Slice", {tensor(in(0)), start, end, const_tensor({dim}), const_tensor({step})},
                 r0());
            return;
        }
        if (k == aten::roll) {
            // Each shift s along its dim: the last s elements, then the others (Slice, Concat).
            const std::vector<int64_t> shifts = need_ints(n, 1, "shifts");
            const std::vector<int64_t> dims_ = need_ints(n, 2, "dims");
            if (dims_.empty() || dims_.size() != shifts.size())
                throw skip_node{name + " of the flattened tensor"};
            uint32_t x = tensor(in(0));
            const std::string base = n->output()->debugName();
            for (size_t i = 0; i < shifts.size(); ++i) {
                if (shifts[i] == 0) continue;
                const uint32_t axis = const_tensor({dims_[i]});
                const uint32_t tail =
                    emit_inner(base + "_tail", "Slice",
                               {x, const_tensor({-shifts[i]}),
                                const_tensor({std::numeric_limits<int64_t>::max()}), axis});
                const uint32_t head =
                    emit_inner(base + "_head", "Slice",
                               {x, const_tensor({0}), const_tensor({-shifts[i]}), axis});
                x = emit_inner(base + "_rolled", "Concat", {tail, head});
                out_.attr(last_node_, "axis", dims_[i]);
            }
            tensors_[n->output()] = x;
            ranks_[n->output()] = r0();
            return;
        }
        if (k == aten::pad || k == aten::constant_pad_nd) {
            // PyTorch lists (begin, end) pairs from the last dim backwards; ONNX Pad takes every
            // begin, then every end, of the axes it is given.
            const int r = r0();
            std::string mode = "constant";
            if (k == aten::pad && n->inputs().size() > 2) {
                const std::optional<c10::IValue> m = constant(in(2));
                if (!m || !m->isString()) throw unsupported_arg(n, "mode");
                const std::string& t = m->toStringRef();
                mode = t == "replicate" ? "edge" : t == "circular" ? "wrap" : t;
                if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
                    throw skip_node{name + " in mode '" + t + "'"};
            }
            std::vector<Value*> pairs;
            Node* list = in(1)->node();
            std::vector<int64_t> constants;
            if (const auto c = const_ints(in(1))) {
                constants = *c;
            } else if (list->kind() == prim::ListConstruct) {
                pairs.assign(list->inputs().begin(), list->inputs().end());
            } else {
                throw unsupported_arg(n, "padding");
            }
            const size_t count = constants.empty() ? pairs.size() : constants.size();
            if (count % 2 != 0 || (r >= 0 && static_cast<int>(count / 2) > r))
                throw skip_node{name + " with " + std::to_string(count) + " padding values"};
            const auto element = [&](size_t i) {
                if (!constants.empty()) return const_tensor({constants[i]});
                if (const std::optional<int64_t> c = const_int(pairs[i])) return const_tensor({*c});
                return emit_inner(pairs[i]->debugName() + "_pad", "Unsqueeze",
                                  {tensor(pairs[i]), const_tensor({0})});
            };
            std::vector<uint32_t> parts;
            std::vector<int64_t> axes;
            for (size_t j = 0; j < count / 2; ++j) {
                parts.push_back(element(2 * j));
                axes.push_back(-1 - static_cast<int64_t>(j));
            }
            for (size_t j = 0; j < count / 2; ++j) parts.push_back(element(2 * j + 1));
            const uint32_t pads = emit_inner(n->output()->debugName() + "_pads", "Concat", parts);
            out_.attr(last_node_, "axis", int64_t{0});
            std::vector<uint32_t> inputs{tensor(in(0)), pads};
            const size_t value_at = k == aten::pad ? 3 : 2;
            inputs.push_back(n->inputs().size() > value_at && !is_none(in(value_at))
                                 ? scalar_operand()
                                 : NNERGY_NO_TENSOR);
            inputs.push_back(const_tensor(axes));
            emit(n, "Pad", inputs, r);
            out_.attr(last_node_, "mode", std::string_view(mode));
            return;
        }
        if (k == aten::select) {
            const int64_t dim = need_int(n, 1, "dim");
            emit(n, "Gather", {tensor(in(0)), const_tensor({need_int(n, 2, "index")}, true)},
                 r0() < 0 ? -1 : r0() - 1);
            out_.attr(last_node_, "axis", dim);
            return;
        }
        if (k == aten::expand || k == aten::expand_as || k == aten::repeat) {
            if (k == aten::expand_as) {
                const uint32_t shape =
                    emit_inner(n->output()->debugName() + "_shape", "Shape", {tensor(in(1))});
                emit(n, "Expand", {tensor(in(0)), shape}, rank(in(1)));
                return;
            }
            const uint32_t target = int_list(n, in(1), k == aten::expand);
            emit(n, k == aten::repeat ? "Tile" : "Expand", {tensor(in(0)), target},
                 list_length(in(1)));
            return;
        }

        if (k == aten::index) {
            // x[idx] and x[:, idx] with one tensor of indices (Swin's relative position bias
            // table): Gather on that axis. Boolean masks select as many elements as are true,
            // known only when the model runs.
            Node* list = in(1)->node();
            if (list->kind() != prim::ListConstruct)
                throw skip_node{name + " with indices the model computes as a list"};
            Value* index = nullptr;
            int64_t axis = 0;
            for (size_t i = 0; i < list->inputs().size(); ++i) {
                if (is_none(list->input(i))) continue;
                if (index) throw skip_node{name + " with more than one index tensor"};
                index = list->input(i);
                axis = static_cast<int64_t>(i);
            }
            if (!index) return alias(n, in(0));
            const std::optional<c10::IValue> c = constant(index);
            const auto type = index->type()->cast<c10::TensorType>();
            if ((c && c->isTensor() && c->toTensor().scalar_type() == c10::ScalarType::Bool) ||
                (type && type->scalarType() == c10::ScalarType::Bool))
                throw skip_node{name +
                                " with a boolean mask (it selects as many elements as are "
                                "true, known only when the model runs)"};
            const int ri = rank(index);
            emit(n, "Gather", {tensor(in(0)), tensor(index)},
                 r0() < 0 || ri < 0 ? -1 : r0() - 1 + ri);
            out_.attr(last_node_, "axis", axis);
            return;
        }

        // Tensors made from sizes (position ids, token types, masks): a Range, or one value
        // broadcast to a shape. Only the element type and the shape matter to the counts.
        if (k == aten::arange) {
            // arange(end, dtype, layout, device, pin) / (start, end, ...) / (start, end, step,
            // ...): the trailing four are options.
            const size_t numbers = n->inputs().size() >= 4 ? n->inputs().size() - 4 : 0;
            if (numbers < 1 || numbers > 3)
                throw skip_node{name + " with " + std::to_string(n->inputs().size()) +
                                " arguments"};
            for (size_t i = 0; i < numbers; ++i)
                if (in(i)->type()->kind() == c10::TypeKind::FloatType)
                    throw skip_node{name + " of non-integer bounds"};
            const std::optional<nnergy_dtype> cast = dtype_option(n, numbers);
            const uint32_t start = numbers >= 2 ? tensor(in(0)) : const_tensor({0}, true);
            const uint32_t limit = tensor(in(numbers >= 2 ? 1 : 0));
            const uint32_t step = numbers == 3 ? tensor(in(2)) : const_tensor({1}, true);
            emit(n, "Range", {start, limit, step}, 1);
            return cast_output(n, cast);
        }
        if (k == aten::zeros_like || k == aten::ones_like || k == aten::full_like ||
            k == aten::empty_like) {
            // (self, [fill,] dtype, layout, device, pin, memory_format)
            const std::optional<nnergy_dtype> cast = dtype_option(n, k == aten::full_like ? 2 : 1);
            const uint32_t self = tensor(in(0));
            const uint32_t value = emit_inner(n->output()->debugName() + "_value", "CastLike",
                                              {const_tensor({0}, true), self});
            const uint32_t shape = emit_inner(n->output()->debugName() + "_shape", "Shape", {self});
            emit(n, "Expand", {value, shape}, r0());
            return cast_output(n, cast);
        }
        if (k == aten::zeros || k == aten::ones || k == aten::empty || k == aten::full ||
            k == aten::new_zeros || k == aten::new_ones || k == aten::new_empty ||
            k == aten::new_full) {
            // ([self,] size, [fill,] dtype, layout, device, pin): float32 (new_*: self's type)
            // unless a dtype is given.
            const bool like = k == aten::new_zeros || k == aten::new_ones || k == aten::new_empty ||
                              k == aten::new_full;
            const size_t at = like ? 1 : 0;
            const std::optional<nnergy_dtype> cast =
                dtype_option(n, at + (k == aten::full || k == aten::new_full ? 2 : 1));
            uint32_t value = out_.add_tensor(unique("fill"), NNERGY_DTYPE_FLOAT32, dims{});
            out_.set_initializer(value);
            out_.set_constant(value);
            if (like && !cast)
                value = emit_inner(n->output()->debugName() + "_value", "CastLike",
                                   {value, tensor(in(0))});
            // A typed fill, not a scalar operand: Expand keeps its type.
            emit(n, "Expand", {value, int_list(n, in(at))}, list_length(in(at)));
            return cast_output(n, cast);
        }

        if (k == prim::If || k == prim::Loop)
            throw skip_node{name +
                            " on a value known only when the model runs (tensor data, or a size "
                            "left symbolic such as the batch)"};
        throw skip_node{name};
    }

    // ---- helpers of the mapping

    /// Adaptive pooling to an output size other than 1: the host's own op (domain ai.nnergy,
    /// docs/onnx.md), which reads PyTorch's windows exactly, overlapping ones included (a 7x7
    /// map pooled to 3x3), whatever input size the model is bound with.
    void adaptive_pool(Node* n, const std::vector<int64_t>& size, bool max) {
        const int r = rank(n->input(0));
        const int s = static_cast<int>(size.size());
        if (r < 0 || r < s + 1)
            throw skip_node{std::string(n->kind().toQualString()) + " of a tensor of rank " +
                            (r < 0 ? std::string("unknown") : std::to_string(r))};
        Value* v = n->output(0);
        const uint32_t out = new_tensor(v->debugName());
        const char* op = max ? "AdaptiveMaxPool" : "AdaptiveAveragePool";
        last_node_ =
            out_.add_node(unique(v->debugName() + "/" + op), op, "ai.nnergy",
                          std::vector<uint32_t>{tensor(n->input(0))}, std::vector<uint32_t>{out});
        out_.attr(last_node_, "output_size", size);
        tensors_[v] = out;
        ranks_[v] = r;
    }

    /// x.to(dtype), x.float(), x.half(): a Cast; x.type_as(y), x.to(y): a CastLike, which the
    /// host resolves when the model is bound. A device or memory format alone changes nothing
    /// the estimate sees. The archive records no element types of intermediate values, so a
    /// Cast to the type a value already has (where PyTorch makes no copy) is counted as a copy:
    /// said once per model.
    void convert_to(Node* n) {
        Value* x = n->input(0);
        if (n->kind() == c10::aten::type_as ||
            (n->inputs().size() > 1 && n->input(1)->type()->cast<c10::TensorType>())) {
            Value* v = n->output();
            const uint32_t out = new_tensor(v->debugName());
            last_node_ = out_.add_node(unique(v->debugName() + "/CastLike"), "CastLike", "",
                                       std::vector<uint32_t>{tensor(x), tensor(n->input(1))},
                                       std::vector<uint32_t>{out});
            tensors_[v] = out;
            ranks_[v] = rank(x);
            return;
        }
        std::optional<nnergy_dtype> target;
        if (const auto at = n->schema().argumentIndexWithName("dtype"))
            target = dtype_option(n, static_cast<size_t>(*at));
        if (!target) return alias(n, x);
        if (!warned_cast_) {
            warned_cast_ = true;
            const std::string message =
                file_ + ": " + where(n) + ": " + n->kind().toQualString() + " to " +
                std::string(sdk::dtype_name(*target)) +
                " is read as a Cast; the archive records no element types, so where a value "
                "already has the type (PyTorch makes no copy) the estimate counts one";
            sdk::host().log(nullptr, NNERGY_LOG_WARN, sdk::to_sv(message));
        }
        emit(n, "Cast", {tensor(x)}, rank(x));
        out_.attr(last_node_, "to", sdk::dtype_name(*target));
    }

    /// The element type a dtype option asks for (input i), or nothing when it is None.
    std::optional<nnergy_dtype> dtype_option(Node* n, size_t i) {
        if (i >= n->inputs().size() || is_none(n->input(i))) return std::nullopt;
        const std::optional<int64_t> code = const_int(n->input(i));
        const nnergy_dtype t =
            code ? dtype_of(static_cast<c10::ScalarType>(*code)) : NNERGY_DTYPE_UNDEFINED;
        if (t == NNERGY_DTYPE_UNDEFINED) throw unsupported_arg(n, "dtype");
        return t;
    }
    /// The node's output cast to `to`, when a dtype option asked for one.
    void cast_output(Node* n, std::optional<nnergy_dtype> to) {
        if (!to) return;
        Value* v = n->output();
        tensors_[v] = emit_inner(v->debugName() + "_cast", "Cast", {tensors_[v]});
        out_.attr(last_node_, "to", sdk::dtype_name(*to));
    }

    /// The tensor of a parameter, buffer or constant (a convolution's window is its shape).
    std::optional<at::Tensor> weight_of(Value* v) {
        if (const std::optional<c10::IValue> c = constant(v); c && c->isTensor())
            return c->toTensor();
        return std::nullopt;
    }

    int64_t channels_of(Value* stat, Value* weight) {
        if (const std::optional<at::Tensor> t = weight_of(stat)) return t->numel();
        if (const std::optional<at::Tensor> t = weight_of(weight)) return t->numel();
        throw skip_node{"aten::batch_norm without running statistics"};
    }

    /// A constant of `count` elements standing for an absent affine weight (not a parameter).
    uint32_t filler(int64_t count) {
        sdk::graph_builder::dim d;
        d.value = count;
        const uint32_t id = out_.add_tensor(unique("ones"), NNERGY_DTYPE_FLOAT32, dims{d});
        out_.set_initializer(id);
        out_.set_constant(id);
        return id;
    }

    /// nn.Linear's weight [out, in] as the [in, out] right operand of MatMul: the parameter
    /// itself the first time (counted once), a constant after (tied weights).
    uint32_t transposed_weight(Value* v) {
        const std::optional<at::Tensor> w = weight_of(v);
        if (!w || w->dim() != 2) {
            // A computed weight: transpose it in the graph.
            const uint32_t t = emit_inner(v->debugName() + "_t", "Transpose", {tensor(v)});
            out_.attr(last_node_, "perm", std::vector<int64_t>{1, 0});
            return t;
        }
        const c10::TensorImpl* impl = w->unsafeGetTensorImpl();
        if (auto it = transposed_.find(impl); it != transposed_.end()) return it->second;
        dims d(2);
        d[0].value = w->size(1);
        d[1].value = w->size(0);
        const bool first = !initializer_of_.count(impl);
        std::string base = paths_.count(v) ? paths_[v] : v->debugName();
        const uint32_t id = out_.add_tensor(unique(base), dtype_of(w->scalar_type()), d);
        out_.set_initializer(id);
        if (!first || !is_parameter(v)) out_.set_constant(id);
        // Claimed: a later untransposed use (a tied embedding) is then a constant.
        initializer_of_.emplace(impl, id);
        transposed_[impl] = id;
        return id;
    }

    bool is_parameter(Value* v) {
        Node* n = v->node();
        if (n->kind() != c10::prim::GetAttr) return false;
        auto it = objects_.find(n->input(0));
        if (it == objects_.end() || !it->second.isObject()) return false;
        const c10::ClassTypePtr type = it->second.toObject()->type();
        const auto slot = type->findAttributeSlot(n->s(c10::attr::name));
        return slot && type->is_parameter(*slot);
    }

    static std::vector<int64_t> normalize(std::vector<int64_t> dims_in, int rank) {
        for (int64_t& d : dims_in)
            if (d < 0) d += rank;
        return dims_in;
    }

    int list_length(Value* v) {
        Node* p = v->node();
        if (p->kind() == c10::prim::ListConstruct) return static_cast<int>(p->inputs().size());
        if (const auto c = const_ints(v)) return static_cast<int>(c->size());
        return -1;
    }

    /// An int[] argument as an int64 tensor: constant values, or (traced shape arithmetic) a
    /// Concat of the elements the model computes.
    uint32_t int_list(Node* n, Value* v, bool expand = false) {
        if (auto c = const_ints(v)) {
            // expand's -1 keeps the input's dim: ONNX Expand's 1 does (it broadcasts).
            if (expand)
                for (int64_t& x : *c)
                    if (x == -1) x = 1;
            return const_tensor(*c);
        }
        Node* p = v->node();
        if (p->kind() != c10::prim::ListConstruct) {
            if (tensors_.count(v)) return tensors_[v];  // a shape the model computes
            throw unsupported_arg(n, "shape");
        }
        std::vector<uint32_t> parts;
        for (Value* e : p->inputs()) {
            if (const auto c = const_int(e)) {
                parts.push_back(const_tensor({expand && *c == -1 ? 1 : *c}));
            } else {
                parts.push_back(emit_inner(e->debugName() + "_dim", "Unsqueeze",
                                           {tensor(e), const_tensor({0})}));
            }
        }
        const uint32_t out = emit_inner(v->debugName() + "_shape", "Concat", parts);
        out_.attr(last_node_, "axis", int64_t{0});
        return out;
    }

    /// int arithmetic of traced shape code (x.size(1) // heads) on 0-d int64 tensors.
    void int_arithmetic(Node* n, const std::string& op) {
        emit(n, op, {tensor(n->input(0)), tensor(n->input(1))}, 0);
    }

    void split(Node* n) {
        using namespace c10;
        const Symbol k = n->kind();
        Value* list = n->output();
        const int r = rank(n->input(0));
        int64_t dim = 0;
        std::vector<uint32_t> outs;
        size_t count = 0;
        // The outputs are read through prim::ListUnpack.
        for (const torch::jit::Use& u : list->uses())
            if (u.user->kind() == prim::ListUnpack) count = u.user->outputs().size();
        if (count == 0)
            throw skip_node{std::string(k.toQualString()) + " not unpacked into values"};
        std::vector<int64_t> sizes;
        uint32_t computed = NNERGY_NO_TENSOR;
        if (k == aten::unbind) {
            dim = need_int(n, 1, "dim");
        } else if (k == aten::chunk) {
            dim = need_int(n, 2, "dim");
        } else {
            dim = need_int(n, 2, "dim");
            if (const auto c = const_ints(n->input(1))) {
                sizes = *c;
                if (sizes.size() == 1) sizes.clear();  // equal parts
            } else if (list_length(n->input(1)) > 1) {
                // Sizes the model computes (w.split([E, E * 2]) in traced attention).
                computed = int_list(n, n->input(1));
            } else if (!n->input(1)->type()->cast<c10::IntType>()) {
                throw unsupported_arg(n, "split size");
            }  // else one computed size: equal parts, as many as are unpacked
        }
        for (size_t i = 0; i < count; ++i)
            outs.push_back(new_tensor(list->debugName() + "_" + std::to_string(i)));
        std::vector<uint32_t> inputs{tensor(n->input(0))};
        if (!sizes.empty()) inputs.push_back(const_tensor(sizes));
        if (computed != NNERGY_NO_TENSOR) inputs.push_back(computed);
        last_node_ = out_.add_node(unique(list->debugName() + "/Split"), "Split", "", inputs, outs);
        out_.attr(last_node_, "axis", dim);
        if (sizes.empty() && computed == NNERGY_NO_TENSOR)
            out_.attr(last_node_, "num_outputs", static_cast<int64_t>(count));
        if (k == aten::unbind) {
            for (uint32_t& o : outs) {
                o = emit_inner("unbound", "Squeeze", {o, const_tensor({dim})});
            }
        }
        split_outputs_[list] = outs;
        ranks_[list] = k == aten::unbind && r > 0 ? r - 1 : r;
    }

    /// nn.MultiheadAttention's inference path, _native_multi_head_attention(query, key, value,
    /// embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, mask, ...), for
    /// self-attention on [batch, seq, embed]: the products it computes, written out. ONNX
    /// Reshape's 0 (copy the input's dim) keeps batch and sequence symbolic.
    void multi_head_attention(Node* n) {
        Value* q = n->input(0);
        if (n->input(1) != q || n->input(2) != q)
            throw skip_node{
                "aten::_native_multi_head_attention with keys or values other than "
                "the queries (cross-attention)"};
        if (rank(q) != 3)
            throw skip_node{"aten::_native_multi_head_attention of an input of rank other than 3"};
        const int64_t embed = need_int(n, 3, "embedding width");
        const int64_t heads = need_int(n, 4, "head count");
        tensors_[n->output(0)] =
            self_attention(n, n->output(0)->debugName(), tensor(q), embed, heads, n->input(5),
                           n->input(6), n->input(7), n->input(8), n->input(9));
        ranks_[n->output(0)] = 3;
    }

    /// nn.TransformerEncoderLayer's inference op, _transformer_encoder_layer_fwd(src, embed_dim,
    /// num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu, norm_first, eps,
    /// norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1,
    /// ffn_weight_2, ffn_bias_2, mask, mask_type): self-attention, the feed-forward block, two
    /// residual adds and two layer norms (before each block with norm_first, after otherwise).
    void encoder_layer(Node* n) {
        const std::string name = n->kind().toQualString();
        Value* src = n->input(0);
        if (rank(src) != 3) throw skip_node{name + " of an input of rank other than 3"};
        if (n->inputs().size() > 18 && !is_none(n->input(18)))
            throw skip_node{name + " with a mask"};
        const int64_t embed = need_int(n, 1, "embedding width");
        const int64_t heads = need_int(n, 2, "head count");
        const bool gelu = need_bool(n, 7, "activation flag");
        const bool norm_first = need_bool(n, 8, "norm_first flag");
        const double eps = need_number(n, 9, "epsilon");
        const std::string base = n->output()->debugName();
        const auto norm = [&](uint32_t x, size_t weight) {
            const uint32_t y =
                emit_inner(base + "_norm", "LayerNormalization",
                           {x, tensor(n->input(weight)), tensor(n->input(weight + 1))});
            out_.attr(last_node_, "axis", int64_t{-1});
            out_.attr(last_node_, "epsilon", eps);
            return y;
        };
        const auto feed_forward = [&](uint32_t x) {
            uint32_t h = emit_inner(base + "_ffn1", "MatMul", {x, transposed_weight(n->input(14))});
            h = emit_inner(base + "_ffn1_bias", "Add", {h, tensor(n->input(15))});
            h = emit_inner(base + "_ffn_act", gelu ? "Gelu" : "Relu", {h});
            h = emit_inner(base + "_ffn2", "MatMul", {h, transposed_weight(n->input(16))});
            return emit_inner(base + "_ffn2_bias", "Add", {h, tensor(n->input(17))});
        };
        const auto attend = [&](uint32_t x) {
            return self_attention(n, base, x, embed, heads, n->input(3), n->input(4), n->input(5),
                                  n->input(6), nullptr);
        };
        uint32_t x = tensor(src);
        if (norm_first) {
            x = emit_inner(base + "_residual1", "Add", {x, attend(norm(x, 10))});
            x = emit_inner(base + "_residual2", "Add", {x, feed_forward(norm(x, 12))});
        } else {
            x = norm(emit_inner(base + "_residual1", "Add", {x, attend(x)}), 10);
            x = norm(emit_inner(base + "_residual2", "Add", {x, feed_forward(x)}), 12);
        }
        tensors_[n->output()] = x;
        ranks_[n->output()] = 3;
    }

    /// Multi-head self-attention on [batch, seq, embed] with packed in-projection weights: the
    /// products it computes, written out. ONNX Reshape's 0 (copy the input's dim) keeps batch
    /// and sequence symbolic. `mask` may be null.
    uint32_t self_attention(Node* n, const std::string& base, uint32_t x, int64_t embed,
                            int64_t heads, Value* qkv_weight, Value* qkv_bias, Value* proj_weight,
                            Value* proj_bias, Value* mask) {
        if (heads <= 0 || embed % heads != 0)
            throw skip_node{std::string(n->kind().toQualString()) +
                            " with a width not divisible by the head count"};
        uint32_t qkv = emit_inner(base + "_qkv", "MatMul", {x, transposed_weight(qkv_weight)});
        if (!is_none(qkv_bias))
            qkv = emit_inner(base + "_qkv_bias", "Add", {qkv, tensor(qkv_bias)});
        qkv = emit_inner(base + "_qkv_heads", "Reshape",
                         {qkv, const_tensor({0, 0, 3, heads, embed / heads})});
        qkv = emit_inner(base + "_qkv_t", "Transpose", {qkv});
        out_.attr(last_node_, "perm", std::vector<int64_t>{2, 0, 3, 1, 4});
        std::vector<uint32_t> parts{new_tensor(base + "_q"), new_tensor(base + "_k"),
                                    new_tensor(base + "_v")};
        last_node_ = out_.add_node(unique(base + "/Split"), "Split", "", {qkv}, parts);
        out_.attr(last_node_, "axis", int64_t{0});
        out_.attr(last_node_, "num_outputs", int64_t{3});
        for (uint32_t& part : parts)
            part = emit_inner(base + "_head", "Squeeze", {part, const_tensor({0})});
        const uint32_t kt = emit_inner(base + "_kT", "Transpose", {parts[1]});
        out_.attr(last_node_, "perm", std::vector<int64_t>{0, 1, 3, 2});
        uint32_t scores = emit_inner(base + "_scores", "MatMul", {parts[0], kt});
        scores = emit_inner(base + "_scaled", "Mul", {scores, scalar_operand()});
        if (mask && !is_none(mask))
            scores = emit_inner(base + "_masked", "Add", {scores, tensor(mask)});
        const uint32_t p = emit_inner(base + "_probs", "Softmax", {scores});
        out_.attr(last_node_, "axis", int64_t{-1});
        uint32_t y = emit_inner(base + "_context", "MatMul", {p, parts[2]});
        y = emit_inner(base + "_context_t", "Transpose", {y});
        out_.attr(last_node_, "perm", std::vector<int64_t>{0, 2, 1, 3});
        y = emit_inner(base + "_merged", "Reshape", {y, const_tensor({0, 0, embed})});
        y = emit_inner(base + "_proj", "MatMul", {y, transposed_weight(proj_weight)});
        if (!is_none(proj_bias)) y = emit_inner(base + "_proj_bias", "Add", {y, tensor(proj_bias)});
        return y;
    }

    /// scaled_dot_product_attention(q, k, v, mask, dropout, is_causal): the products and the
    /// softmax it computes, as the math implementation does.
    void attention(Node* n) {
        const int r = rank(n->input(0));
        if (r < 2) throw skip_node{"aten::scaled_dot_product_attention of unknown rank"};
        std::vector<int64_t> perm(static_cast<size_t>(r));
        for (int i = 0; i < r; ++i) perm[static_cast<size_t>(i)] = i;
        std::swap(perm[static_cast<size_t>(r - 1)], perm[static_cast<size_t>(r - 2)]);
        const std::string base = n->output()->debugName();
        const uint32_t kt = emit_inner(base + "_kT", "Transpose", {tensor(n->input(1))});
        out_.attr(last_node_, "perm", perm);
        uint32_t scores = emit_inner(base + "_scores", "MatMul", {tensor(n->input(0)), kt});
        scores = emit_inner(base + "_scaled", "Mul", {scores, scalar_operand()});
        if (!is_none(n->input(3)))
            scores = emit_inner(base + "_masked", "Add", {scores, tensor(n->input(3))});
        const uint32_t p = emit_inner(base + "_probs", "Softmax", {scores});
        out_.attr(last_node_, "axis", int64_t{-1});
        emit(n, "MatMul", {p, tensor(n->input(2))}, r);
    }

    std::string file_;
    sdk::graph_builder& out_;
    std::unordered_set<const Node*> live_;
    std::unordered_map<const Value*, uint32_t> tensors_;
    std::unordered_map<const Value*, int> ranks_;
    std::unordered_map<const Value*, nnergy_dtype> input_dtypes_;         ///< inputs given shapes
    std::unordered_map<const Value*, std::vector<int64_t>> input_sizes_;  ///< symbols as 2
    std::vector<nnergy::torchscript::evaluation_input> evaluation_inputs_;
    std::string unevaluated_;  ///< why the sizes' numbers could not be folded, if they could not
    std::unordered_map<const Value*, c10::ScalarType> dtypes_;  ///< follow_dtype()
    std::unordered_map<const Value*, c10::IValue> objects_;
    std::unordered_map<const Value*, std::string> paths_;
    std::unordered_map<const Value*, std::vector<uint32_t>> split_outputs_;
    std::unordered_map<const c10::TensorImpl*, uint32_t> initializer_of_;
    std::unordered_map<const c10::TensorImpl*, uint32_t> transposed_;
    std::set<std::string> names_;
    std::set<uint32_t> scalars_;      ///< 0-d float constants, typed like the other operand
    std::set<uint32_t> int_scalars_;  ///< ints of shape arithmetic made tensors (0-d int64)
    std::vector<std::pair<std::string, std::string>> unsupported_;
    size_t unsupported_count_ = 0;
    size_t downstream_count_ = 0;
    std::unordered_set<const Value*> poisoned_;
    uint32_t last_node_ = 0;
    bool warned_cast_ = false;
};

// ------------------------------------------------------------------------------------------
// Loading
// ------------------------------------------------------------------------------------------

/// Walks the pickle `record` (throwing where it is damaged) and returns the tensor storages it
/// names: libtorch's unpickler trusts what it reads.
std::vector<nnergy::torchscript::storage_ref> check_pickle(
    caffe2::serialize::PyTorchStreamReader& reader, const std::string& file,
    const std::string& record) {
    const auto [data, size] = reader.getRecord(record);
    std::vector<nnergy::torchscript::storage_ref> storages;
    if (const std::optional<std::string> problem = nnergy::torchscript::pickle_problem(
            static_cast<const unsigned char*>(data.get()), size, &storages))
        throw fail(file + ": " + record + " is not a well-formed pickle (" + *problem +
                   "): the archive is damaged; save the model again with torch.jit.save");
    return storages;
}

/// The storages `pickle` names (torch.<Type>Storage and an element count) against the data
/// records in `folder` that fill them: libtorch 1.13 makes a storage of the pickle's size
/// around a record of whatever size it finds, so a short record is read past its end.
void check_storage_sizes(caffe2::serialize::PyTorchStreamReader& reader, const std::string& file,
                         const std::string& pickle, const std::string& folder) {
    if (!reader.hasRecord(pickle)) return;
    for (const nnergy::torchscript::storage_ref& s : check_pickle(reader, file, pickle)) {
        const std::size_t element = nnergy::torchscript::storage_element_size(s.type);
        const std::string record = folder + s.key;
        if (element == 0 || !reader.hasRecord(record)) continue;  // libtorch names these
        const std::size_t held = std::get<1>(reader.getRecord(record));
        if (s.elements > held / element)
            throw fail(file + ": " + record + " holds " + std::to_string(held) + " bytes, " +
                       pickle + " says " + std::to_string(s.elements) + " elements of " + s.type +
                       " (" + std::to_string(element) +
                       " bytes each): the archive is damaged; save the model again with "
                       "torch.jit.save");
    }
}

void check_archive(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw fail(file + ": cannot open: " + std::strerror(errno), NNERGY_CODE_NOT_FOUND);
    char magic[4] = {0, 0, 0, 0};
    in.read(magic, 4);
    if (in.gcount() < 4 || std::memcmp(magic, "PK\x03\x04", 4) != 0)
        throw fail(file +
                   ": not a TorchScript archive: TorchScript files are zip archives written by "
                   "torch.jit.save (this file does not start with a zip header; a state_dict "
                   "saved by torch.save or an ONNX file is not one)");
    in.close();
    uint64_t version = 0;
    try {
        caffe2::serialize::PyTorchStreamReader reader(file);
        if (!reader.hasRecord("constants.pkl") && !reader.hasRecord("code/__torch__.py") &&
            !reader.hasRecord("data.pkl"))
            throw fail(file +
                       ": a zip archive, but not a TorchScript one (no data.pkl, "
                       "constants.pkl or code/): write it with torch.jit.save");
        if (!reader.hasRecord("constants.pkl"))
            throw fail(file +
                       ": a PyTorch zip archive without TorchScript code (a model or state_dict "
                       "saved by torch.save): trace or script the model and save it with "
                       "torch.jit.save");
        version = reader.version();
        // Every pickle libtorch will unpickle, checked first: its unpickler trusts them. The
        // constants' data is small, so their records are checked too (the weights' only when
        // they are read).
        for (const std::string& record : reader.getAllRecords()) {
            const bool pickle =
                (record.size() > 4 && record.compare(record.size() - 4, 4, ".pkl") == 0) ||
                (record.size() > 9 && record.compare(record.size() - 9, 9, "debug_pkl") == 0);
            if (record == "constants.pkl")
                check_storage_sizes(reader, file, record, "constants/");
            else if (pickle)
                check_pickle(reader, file, record);
        }
    } catch (const sdk::error&) {
        throw;
    } catch (const c10::Error& e) {
        // The reader checks the archive's file-format version when it opens it.
        const std::string m = first_line(e.what_without_backtrace());
        const std::string tag = "read a PyTorch file with version ";
        if (const size_t at = m.find(tag); at != std::string::npos) {
            size_t end = at + tag.size();
            while (end < m.size() && std::isdigit(static_cast<unsigned char>(m[end]))) ++end;
            version = std::stoull("0" + m.substr(at + tag.size(), end - at - tag.size()));
        } else {
            throw fail(file + ": not a TorchScript archive: " + m);
        }
    }
    if (version > caffe2::serialize::kMaxSupportedFileFormatVersion)
        throw fail(file + ": written in TorchScript file-format version " +
                       std::to_string(version) + ", newer than the " +
                       std::to_string(caffe2::serialize::kMaxSupportedFileFormatVersion) +
                       " this build's libtorch (" TORCH_VERSION
                       ") reads: save it with an older "
                       "PyTorch, or export it to ONNX",
                   NNERGY_CODE_UNSUPPORTED_VERSION);
}

/// libtorch 1.13 takes a loaded tensor's sizes, strides and offset from the archive's pickle
/// without checking them against the storage its data record fills: a damaged archive makes
/// every later read of the tensor (freezing's constant folding, the reader's own) run past the
/// storage. Each tensor the module holds or its code names as a constant is checked first.
void check_tensor_extent(const at::Tensor& t, const std::string& file, const std::string& what) {
    if (!t.defined() || !t.has_storage()) return;
    // The furthest element, from sizes and strides, in 64 bits with overflow caught.
    int64_t last = t.storage_offset();
    bool ok = last >= 0;
    for (int64_t d = 0; ok && d < t.dim(); ++d) {
        if (t.size(d) == 0) return;  // no element is ever read
        int64_t step = 0;
        ok = t.size(d) > 0 && t.stride(d) >= 0 &&
             !__builtin_mul_overflow(t.size(d) - 1, t.stride(d), &step) &&
             !__builtin_add_overflow(last, step, &last);
    }
    int64_t bytes = 0;
    ok = ok && !__builtin_add_overflow(last, int64_t{1}, &last) &&
         !__builtin_mul_overflow(last, static_cast<int64_t>(t.element_size()), &bytes) &&
         static_cast<uint64_t>(bytes) <= t.storage().nbytes();
    if (!ok)
        throw fail(file + ": tensor " + what + " of shape " + c10::str(t.sizes()) +
                   " reaches beyond the " + std::to_string(t.storage().nbytes()) +
                   " bytes of its storage: the archive is damaged; save the model again with "
                   "torch.jit.save");
}

void check_tensor_extents(const torch::jit::Module& module, const std::string& file) {
    for (const auto& a : module.named_attributes(/*recurse=*/true))
        if (a.value.isTensor()) check_tensor_extent(a.value.toTensor(), file, "'" + a.name + "'");
    std::vector<torch::jit::Block*> blocks;
    for (const torch::jit::Module& m : module.modules())
        for (const torch::jit::Method& method : m.get_methods())
            blocks.push_back(method.graph()->block());
    while (!blocks.empty()) {
        torch::jit::Block* b = blocks.back();
        blocks.pop_back();
        for (Node* n : b->nodes()) {
            for (torch::jit::Block* inner : n->blocks()) blocks.push_back(inner);
            if (n->kind() != c10::prim::Constant || n->outputs().size() != 1) continue;
            if (!n->output()->type()->cast<c10::TensorType>()) continue;
            if (const std::optional<c10::IValue> v = torch::jit::toIValue(n->output());
                v && v->isTensor())
                check_tensor_extent(v->toTensor(), file,
                                    "constant '" + n->output()->debugName() + "'");
        }
    }
}

void read(const std::string& file, const std::vector<std::string>& shape_texts,
          sdk::graph_builder& out) {
    // libtorch's errors carry a symbolized backtrace, which costs tens of milliseconds each; the
    // reader reports only their messages, and meets some on purpose (an op without a meta
    // kernel, an archive that freezes only on the CPU).
    static const bool no_backtraces = [] {
        c10::SetStackTraceFetcher([] { return std::string(); });
        return true;
    }();
    (void)no_backtraces;
    std::vector<input_shape> shapes;
    for (const std::string& s : shape_texts) {
        try {
            shapes.push_back(parse_input_shape(s));
        } catch (const sdk::error& e) {
            throw fail(file + ": " + e.what(), e.code());
        }
    }
    check_archive(file);
    torch::jit::Module module;
    std::vector<std::pair<std::string, at::Tensor>> parameters;
    c10::Device device(c10::kCPU);
    try {
        torch::NoGradGuard no_grad;
        // Every attribute but parameters and buffers becomes a constant: the training flags
        // fold, and with them the branches of scripted code.
        const auto load = [&](c10::Device on) {
            device = on;
            module = torch::jit::load(file, on);
            check_tensor_extents(module, file);
            module.eval();
            // Freezing drops what the forward pass does not read, unread parameters included.
            parameters.clear();
            for (const auto& p : module.named_parameters(/*recurse=*/true))
                parameters.emplace_back(p.name, p.value);
            torch::jit::freeze_module_inplace(&module, {}, true, /*preserveParameters=*/true);
        };
        try {
            // On the meta device the tensors keep their shapes and types, not their data: a
            // third faster, and the weights never occupy memory.
            load(c10::Device(c10::kMeta));
        } catch (const c10::Error&) {
            // Freezing folds some ops (aten::equal) the meta device cannot run. On the CPU
            // the weights are read, so their records must hold what the pickle says.
            {
                caffe2::serialize::PyTorchStreamReader reader(file);
                check_storage_sizes(reader, file, "data.pkl", "data/");
            }
            load(c10::Device(c10::kCPU));
        }
    } catch (const sdk::error&) {
        throw;
    } catch (const c10::Error& e) {
        throw fail(file + ": libtorch cannot load it: " + first_line(e.what_without_backtrace()));
    } catch (const std::exception& e) {
        throw fail(file + ": libtorch cannot load it: " + first_line(e.what()));
    }
    converter c(file, out);
    try {
        c.run(module, shapes, parameters, device);
    } catch (const sdk::error&) {
        throw;
    } catch (const c10::Error& e) {
        throw fail(file + ": " + first_line(e.what_without_backtrace()), NNERGY_CODE_INTERNAL);
    }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int nnergy_torchscript_read(
    const nnergy_host_api* host, const char* path, const char* const* input_shapes,
    size_t shape_count, nnergy_graph_builder* builder, char* message, size_t message_size) {
    const auto say = [&](const std::string& m) {
        if (message && message_size) {
            const size_t n = std::min(m.size(), message_size - 1);
            std::memcpy(message, m.data(), n);
            message[n] = '\0';
        }
    };
    if (!host || !path || !builder || (shape_count && !input_shapes)) {
        say("nnergy_torchscript_read: a required argument is NULL");
        return NNERGY_CODE_INVALID_ARGUMENT;
    }
    try {
        sdk::detail::api_slot() = host;
        std::vector<std::string> shapes;
        for (size_t i = 0; i < shape_count; ++i)
            shapes.emplace_back(input_shapes[i] ? input_shapes[i] : "");
        sdk::graph_builder out(builder);
        read(path, shapes, out);
        return NNERGY_CODE_OK;
    } catch (const sdk::error& e) {
        say(e.what());
        return e.code();
    } catch (const std::exception& e) {
        say(std::string(path) + ": " + e.what());
        return NNERGY_CODE_INTERNAL;
    } catch (...) {
        say(std::string(path) + ": unknown error while reading the TorchScript archive");
        return NNERGY_CODE_INTERNAL;
    }
}
