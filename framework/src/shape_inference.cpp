// SPDX-License-Identifier: Apache-2.0
// bind(): symbols to values, shape inference in topological order, and per-node counts.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <numeric>
#include <set>
#include <string>
#include <unordered_map>

#include "op_rules.hpp"

namespace nnergy {

namespace {

std::string where(const graph& g) {
    if (!g.source_path.empty()) return g.source_path;
    return g.name.empty() ? std::string("<model>") : g.name;
}

bool in_mask(uint32_t mask, size_t slot) {
    if (mask == detail::all_inputs) return true;
    return slot < 32 && ((mask >> slot) & 1u) != 0;
}

// ---- dimension expressions ----------------------------------------------------------------
// Exporters write derived dims as sympy text ("seq + 1", "Max(1, s0)", "floor(s0/2)"). They are
// evaluated exactly over rationals with 64-bit overflow checks; anything else is not a value.

struct rational {
    int64_t num = 0;
    int64_t den = 1;  // > 0, lowest terms
};

std::optional<rational> make_rational(int64_t num, int64_t den) {
    if (den == 0 || num == INT64_MIN || den == INT64_MIN) return std::nullopt;
    if (den < 0) num = -num, den = -den;
    const int64_t g = std::gcd(num < 0 ? -num : num, den);
    return rational{num / g, den / g};
}

std::optional<rational> add(rational a, rational b) {
    int64_t x, y, d;
    if (__builtin_mul_overflow(a.num, b.den, &x) || __builtin_mul_overflow(b.num, a.den, &y) ||
        __builtin_add_overflow(x, y, &x) || __builtin_mul_overflow(a.den, b.den, &d))
        return std::nullopt;
    return make_rational(x, d);
}

std::optional<rational> multiply(rational a, rational b) {
    int64_t n, d;
    if (__builtin_mul_overflow(a.num, b.num, &n) || __builtin_mul_overflow(a.den, b.den, &d))
        return std::nullopt;
    return make_rational(n, d);
}

std::optional<rational> divide(rational a, rational b) {
    if (b.num == 0) return std::nullopt;
    int64_t n, d;
    if (__builtin_mul_overflow(a.num, b.den, &n) || __builtin_mul_overflow(a.den, b.num, &d))
        return std::nullopt;
    return make_rational(n, d);
}

int64_t floor_of(rational a) {
    const int64_t q = a.num / a.den;
    return (a.num % a.den != 0 && a.num < 0) ? q - 1 : q;
}

int64_t ceiling_of(rational a) {
    const int64_t q = a.num / a.den;
    return (a.num % a.den != 0 && a.num > 0) ? q + 1 : q;
}

__extension__ typedef __int128 wide_int;

// a < b, exactly: the denominators are positive.
bool less(rational a, rational b) {
    return static_cast<wide_int>(a.num) * b.den < static_cast<wide_int>(b.num) * a.den;
}

/// Recursive descent over one dim text. Names are looked up in `bindings`; a name with no
/// binding makes the value unknown but the parse goes on, so `names` lists all of them.
class dim_expression_parser {
public:
    dim_expression_parser(std::string_view text, const dim_bindings& bindings,
                          std::vector<std::string_view>* names)
        : text_(text), bindings_(bindings), names_(names) {}

    struct result {
        bool valid = false;  ///< the text is an expression (or a single name)
        std::optional<int64_t> value;
    };

    result run() {
        result r;
        std::optional<rational> v = sum();
        skip_space();
        if (broken_ || pos_ != text_.size()) return r;
        r.valid = true;
        if (v && v->den == 1) r.value = v->num;
        return r;
    }

private:
    using value = std::optional<rational>;
    static constexpr int max_depth = 64;  // malformed files must not exhaust the stack

    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
    }
    bool eat(std::string_view token) {
        skip_space();
        if (text_.substr(pos_, token.size()) != token) return false;
        pos_ += token.size();
        return true;
    }
    char peek() {
        skip_space();
        return pos_ < text_.size() ? text_[pos_] : '\0';
    }

    value sum() {
        value v = product();
        for (;;) {
            if (eat("+")) {
                value r = product();
                v = v && r ? add(*v, *r) : std::nullopt;
            } else if (eat("-")) {
                value r = product();
                v = v && r && r->num != INT64_MIN ? add(*v, {-r->num, r->den}) : std::nullopt;
            } else {
                return v;
            }
        }
    }

    value product() {
        value v = unary();
        for (;;) {
            int op;
            if (eat("//"))
                op = 0;
            else if (peek() == '*' && text_.substr(pos_, 2) != "**" && eat("*"))
                op = 1;
            else if (eat("/"))
                op = 2;
            else if (eat("%"))
                op = 3;
            else
                return v;
            value r = unary();
            if (!v || !r) {
                v = std::nullopt;
                continue;
            }
            if (op == 0)
                v = floor_divide(*v, *r);
            else if (op == 1)
                v = multiply(*v, *r);
            else if (op == 2)
                v = divide(*v, *r);
            else
                v = python_mod(*v, *r);
        }
    }

    value unary() {
        if (++depth_ > max_depth) {
            broken_ = true;
            return std::nullopt;
        }
        value v;
        if (eat("-")) {
            v = unary();
            if (v && v->num != INT64_MIN)
                v->num = -v->num;
            else
                v = std::nullopt;
        } else if (eat("+")) {
            v = unary();
        } else {
            v = power();
        }
        --depth_;
        return v;
    }

    // Python's ** binds tighter than a unary minus on its left and is right-associative.
    value power() {
        value base = primary();
        if (!eat("**")) return base;
        value exponent = unary();
        if (!base || !exponent || exponent->den != 1 || exponent->num < 0 || exponent->num > 64)
            return std::nullopt;
        value v = rational{1, 1};
        for (int64_t i = 0; v && i < exponent->num; ++i) v = multiply(*v, *base);
        return v;
    }

    value primary() {
        skip_space();
        if (pos_ >= text_.size()) {
            broken_ = true;
            return std::nullopt;
        }
        const char c = text_[pos_];
        if (c == '(') {
            ++pos_;
            value v = sum();
            if (!eat(")")) broken_ = true;
            return v;
        }
        if (c >= '0' && c <= '9') {
            int64_t n = 0;
            bool overflow = false;
            while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
                overflow = overflow || __builtin_mul_overflow(n, 10, &n) ||
                           __builtin_add_overflow(n, text_[pos_] - '0', &n);
                ++pos_;
            }
            if (overflow) return std::nullopt;
            return rational{n, 1};
        }
        if (!is_name_start(c)) {
            broken_ = true;
            return std::nullopt;
        }
        const size_t start = pos_;
        while (pos_ < text_.size() &&
               (is_name_start(text_[pos_]) || (text_[pos_] >= '0' && text_[pos_] <= '9')))
            ++pos_;
        const std::string_view name = text_.substr(start, pos_ - start);
        if (peek() == '(') return call(name);
        if (names_ && std::find(names_->begin(), names_->end(), name) == names_->end())
            names_->push_back(name);
        auto it = bindings_.find(name);
        if (it == bindings_.end()) return std::nullopt;
        return rational{it->second, 1};
    }

    static bool is_name_start(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    }

    // sympy and torch.fx symbolic-shape functions.
    value call(std::string_view name) {
        eat("(");
        std::vector<value> args;
        if (!eat(")")) {
            do args.push_back(sum());
            while (eat(","));
            if (!eat(")")) {
                broken_ = true;
                return std::nullopt;
            }
        }
        for (const value& a : args)
            if (!a) return std::nullopt;
        const auto one = [&]() -> const rational* {
            return args.size() == 1 ? &*args[0] : nullptr;
        };
        const auto two = [&]() { return args.size() == 2; };
        if (name == "Max" || name == "Min") {
            if (args.empty()) return std::nullopt;
            rational best = *args[0];
            for (const value& a : args)
                if (name == "Max" ? less(best, *a) : less(*a, best)) best = *a;
            return best;
        }
        if (name == "floor" || name == "FloorToInt") {
            if (const rational* a = one()) return rational{floor_of(*a), 1};
        } else if (name == "ceiling" || name == "ceil" || name == "CeilToInt") {
            if (const rational* a = one()) return rational{ceiling_of(*a), 1};
        } else if (name == "TruncToInt") {
            if (const rational* a = one()) return rational{a->num / a->den, 1};
        } else if (name == "Abs") {
            if (const rational* a = one())
                return a->num == INT64_MIN ? std::nullopt
                                           : value(rational{a->num < 0 ? -a->num : a->num, a->den});
        } else if (name == "FloorDiv") {
            if (two()) return floor_divide(*args[0], *args[1]);
        } else if (name == "CleanDiv" || name == "IntTrueDiv") {
            if (two()) return divide(*args[0], *args[1]);
        } else if (name == "Mod" || name == "PythonMod") {
            if (two()) return python_mod(*args[0], *args[1]);
        } else {
            broken_ = true;  // an unknown function: not an expression this parser reads
        }
        return std::nullopt;
    }

    static value floor_divide(rational a, rational b) {
        value q = divide(a, b);
        if (!q) return std::nullopt;
        return rational{floor_of(*q), 1};
    }
    // a - b * floor(a / b): the result takes the sign of b, as in Python.
    static value python_mod(rational a, rational b) {
        value q = floor_divide(a, b);
        if (!q) return std::nullopt;
        value m = multiply(b, *q);
        if (!m || m->num == INT64_MIN) return std::nullopt;
        return add(a, {-m->num, m->den});
    }

    std::string_view text_;
    const dim_bindings& bindings_;
    std::vector<std::string_view>* names_;
    size_t pos_ = 0;
    int depth_ = 0;
    bool broken_ = false;
};

/// What one symbol stands for in this binding: a value (bound, or an expression of bound
/// symbols), or a unification variable whose value is the first one inferred for it.
struct symbol_slot {
    int64_t value = NNERGY_DIM_UNKNOWN;
    bool known = false;
    bool unified = false;  ///< a unification variable (its value, once known, came from inference)
};

/// Symbols met while binding, classified once per distinct text (not per dim).
class symbol_table {
public:
    explicit symbol_table(const dim_bindings& bindings) : bindings_(bindings) {}

    symbol_slot& get(std::string_view symbol) {
        auto [it, inserted] = slots_.try_emplace(std::string_view(symbol));
        if (inserted) {
            if (auto b = bindings_.find(symbol); b != bindings_.end()) {
                it->second.value = b->second;
                it->second.known = true;
            } else if (auto v = dim_expression_parser(symbol, bindings_, nullptr).run().value) {
                it->second.value = *v;
                it->second.known = true;
            } else {
                it->second.unified = true;
            }
        }
        return it->second;
    }
    const dim_bindings& bindings() const noexcept { return bindings_; }

private:
    const dim_bindings& bindings_;
    // Node-based: references stay valid as symbols are added.
    std::unordered_map<std::string_view, symbol_slot> slots_;
};

// "[batch=8, 3, ?]": a declared shape as written, with the values its symbols stand for.
std::string declared_string(const std::vector<dim>& dims, symbol_table& symbols) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i) s += ", ";
        const dim& d = dims[i];
        if (d.is_symbolic()) {
            s += d.symbol;
            if (const symbol_slot& slot = symbols.get(d.symbol); slot.known) {
                s += '=';
                s += std::to_string(slot.value);
            }
        } else if (d.value >= 0) {
            s += std::to_string(d.value);
        } else {
            s += "?";
        }
    }
    return s + "]";
}

/// The declared dims with symbols replaced; NNERGY_DIM_UNKNOWN where unknown (an unknown dim,
/// a unification variable no tensor has given a value yet).
std::vector<int64_t> bind_dims(const std::vector<dim>& dims, symbol_table& symbols) {
    std::vector<int64_t> out(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
        const dim& d = dims[i];
        if (d.is_symbolic()) {
            const symbol_slot& slot = symbols.get(d.symbol);
            out[i] = slot.known ? slot.value : NNERGY_DIM_UNKNOWN;
        } else {
            out[i] = d.value >= 0 ? d.value : NNERGY_DIM_UNKNOWN;
        }
    }
    return out;
}

bool complete(const std::vector<int64_t>& s) {
    return std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; });
}

/// True when the element count of `s` fits in int64 (dims are non-negative).
bool fits_int64(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s)
        if (__builtin_mul_overflow(n, d, &n)) return false;
    return true;
}

// Compares a declared shape with an inferred one without allocating: unknown dims match all, a
// unification variable seen for the first time takes the inferred value.
bool agrees(const std::vector<dim>& declared, const std::vector<int64_t>& inferred,
            symbol_table& symbols) {
    if (declared.size() != inferred.size()) return false;
    bool same = true;
    for (size_t i = 0; i < declared.size(); ++i) {
        const dim& d = declared[i];
        if (d.is_symbolic()) {
            symbol_slot& slot = symbols.get(d.symbol);
            if (!slot.known) {
                slot.value = inferred[i];
                slot.known = inferred[i] >= 0;
            } else if (slot.value != inferred[i]) {
                same = false;
            }
        } else if (d.value >= 0 && d.value != inferred[i]) {
            same = false;
        }
    }
    return same;
}

}  // namespace

double bound_graph::tensor_elements(uint32_t t) const {
    // A dim still unknown (a host-only tensor whose shape the model leaves partly open)
    // holds nothing on the device.
    double n = 1;
    for (int64_t d : shapes[t]) n *= d >= 0 ? static_cast<double>(d) : 0.0;
    return n;
}

double bound_graph::tensor_bytes(uint32_t t) const {
    return tensor_elements(t) * dtype_bits(dtypes[t]) / 8.0;
}

namespace {

/// The names a user must bind for one dim of a graph input or initializer: the names in an
/// expression, or the text itself when it is no expression (any text is a symbol in ONNX).
void user_names(std::string_view symbol, const dim_bindings& bindings,
                std::vector<std::string_view>& names) {
    const size_t before = names.size();
    if (!dim_expression_parser(symbol, bindings, &names).run().valid) {
        names.resize(before);
        names.push_back(symbol);
    }
}

bool is_user_tensor(const graph& g, uint32_t t) {
    return g.tensors[t].is_initializer ||
           std::find(g.inputs.begin(), g.inputs.end(), t) != g.inputs.end();
}

}  // namespace

std::optional<int64_t> evaluate_dim_expression(std::string_view text,
                                               const dim_bindings& bindings) {
    return dim_expression_parser(text, bindings, nullptr).run().value;
}

std::vector<std::string> symbols_of(const graph& g) {
    std::vector<std::string_view> names;
    const dim_bindings none;
    for (uint32_t t = 0; t < g.tensors.size(); ++t)
        if (g.tensors[t].shape && is_user_tensor(g, t))
            for (const dim& d : *g.tensors[t].shape)
                if (d.is_symbolic()) user_names(d.symbol, none, names);
    std::set<std::string, std::less<>> sorted(names.begin(), names.end());
    return {sorted.begin(), sorted.end()};
}

bound_graph bind(const graph& g, const dim_bindings& bindings, const bind_options& options) {
    const std::string file = where(g);
    if (!g.finalized())
        throw error(file + ": the graph must be finalized before binding", exit_code::internal);

    // Compact per-tensor flags, read in random order below where the large tensor structs
    // would miss the cache on big graphs.
    const size_t tensor_count = g.tensors.size();
    enum : uint8_t {
        initializer = 1,
        declared = 2,
        graph_input = 4,
        graph_output = 8,
        known = 16,    ///< computed from shapes and code constants only: host work
        partial = 32,  ///< a host-only tensor whose shape is known only in part
        read = 64,     ///< some node reads it (an unread parameter still counts)
    };
    std::vector<uint8_t> flags(tensor_count, 0);
    for (size_t i = 0; i < tensor_count; ++i) {
        const tensor& t = g.tensors[i];
        flags[i] =
            static_cast<uint8_t>((t.is_initializer ? initializer : 0) | (t.shape ? declared : 0));
    }
    for (uint32_t t : g.inputs) flags[t] |= graph_input;
    for (uint32_t t : g.outputs) flags[t] |= graph_output;

    // Only graph inputs' and initializers' symbols are the user's; every unbound one is listed
    // at once, so one run tells the user all they must bind.
    symbol_table symbols(bindings);
    {
        std::vector<std::string_view> names;
        for (size_t i = 0; i < tensor_count; ++i) {
            if (!(flags[i] & (graph_input | initializer)) || !g.tensors[i].shape) continue;
            for (const dim& d : *g.tensors[i].shape)
                if (d.is_symbolic() && !symbols.get(d.symbol).known)
                    user_names(d.symbol, bindings, names);
        }
        std::set<std::string_view> unbound;
        for (std::string_view n : names)
            if (bindings.find(n) == bindings.end()) unbound.insert(n);
        if (!unbound.empty()) {
            std::string list;
            for (std::string_view s : unbound) list += (list.empty() ? "" : ", ") + std::string(s);
            throw error(file + ": unbound dimension symbols: " + list +
                        " (bind them with --dim NAME=VALUE or [model] dims)");
        }
        for (const auto& [name, value] : bindings)
            if (value < 1)
                throw error(file + ": dimension symbol '" + name + "' is bound to " +
                            std::to_string(value) + "; expected a positive integer");
    }

    const size_t node_count = g.nodes.size();
    bound_graph b;
    b.source = &g;
    b.bindings = bindings;
    b.shapes.resize(tensor_count);
    b.dtypes = g.dtypes();
    b.int_values.resize(tensor_count);
    b.counts.resize(node_count);
    b.read_offset.resize(node_count + 1);

    // Graph inputs and initializers: their shapes are given, never inferred.
    for (uint32_t t = 0; t < tensor_count; ++t) {
        if (!(flags[t] & (graph_input | initializer))) continue;
        const tensor& x = g.tensors[t];
        const char* kind = x.is_initializer ? "initializer" : "graph input";
        if (!x.shape)
            throw error(file + ": " + kind + " '" + x.name + "' has no shape (" + kind +
                        "s need one; use a symbol such as 'batch' for a free dimension)");
        b.shapes[t] = bind_dims(*x.shape, symbols);
        for (size_t i = 0; i < b.shapes[t].size(); ++i) {
            if (b.shapes[t][i] >= 0) continue;
            const dim& d = (*x.shape)[i];
            throw error(file + ": " + kind + " '" + x.name + "' " +
                        declared_string(*x.shape, symbols) + ": dimension " + std::to_string(i) +
                        (d.is_symbolic() ? " ('" + std::string(d.symbol.view()) +
                                               "') is not a non-negative integer with the "
                                               "bindings given"
                                         : std::string(" is unknown; give it a value or a "
                                                       "symbol")));
        }
        if (!fits_int64(b.shapes[t]))
            throw error(file + ": " + kind + " '" + x.name + "' " +
                        declared_string(*x.shape, symbols) +
                        " has more elements than a 64-bit count holds");
        if (x.int_values) {
            const double n = b.tensor_elements(t);
            if (static_cast<double>(x.int_values->size()) != n)
                throw error(file + ": initializer '" + x.name + "' has " +
                            std::to_string(x.int_values->size()) + " values but its shape " +
                            declared_string(*x.shape, symbols) + " holds " +
                            std::to_string(static_cast<int64_t>(n)));
            b.int_values[t] = *x.int_values;
        }
        // Values of the model's code (a Constant node's, a shape constant) are known now; a
        // trained weight is not, even where a compiler might fold an expression of it. An
        // int64 or bool initializer is code (indices, axes, shapes, a mask's fill) even when its
        // values sit in external data that is absent; narrower integers can be quantized weights
        // and biases.
        if (x.int_values || x.is_constant || b.dtypes[t] == NNERGY_DTYPE_INT64 ||
            b.dtypes[t] == NNERGY_DTYPE_BOOL)
            flags[t] |= known;
    }

    std::vector<uint8_t> params_claimed(tensor_count, 0);
    b.read_bytes.reserve(node_count * 3);
    for (uint32_t i = 0; i < node_count; ++i) {
        const node& n = g.nodes[i];
        const detail::op_info* op = detail::find_op(n.op_type, n.domain);
        const detail::node_ctx ctx(g, b, i);

        // Known at bind time: what reads only metadata (Shape, Size), or a deterministic op
        // all of whose inputs are known. Dropout may draw random numbers.
        bool outputs_known = false;
        bool partial_input = false;
        if (op) {
            outputs_known = op->id == detail::op_id::Shape || op->id == detail::op_id::Size;
            bool all_known = op->id != detail::op_id::Dropout;
            for (size_t k = 0; k < n.inputs.size(); ++k) {
                const uint32_t t = n.inputs[k];
                if (t == NNERGY_NO_TENSOR) continue;
                // CastLike reads only its second input's element type: a constant cast to an
                // activation's type (a TorchScript `x * 2.0`) is still a constant, folded.
                const bool type_only = op->id == detail::op_id::CastLike && k == 1;
                if (!type_only && !(flags[t] & known)) all_known = false;
                if (flags[t] & partial) partial_input = true;
            }
            outputs_known = outputs_known || all_known;
        }

        std::string reason;
        bool inferred = false;
        if (op && partial_input) {
            for (uint32_t t : n.inputs)
                if (t != NNERGY_NO_TENSOR && (flags[t] & partial)) {
                    reason = "the shape of input '" + g.tensors[t].name + "' is known only in part";
                    break;
                }
        } else if (op) {
            try {
                detail::infer_shapes(*op, ctx);
                inferred = true;
            } catch (const detail::needs_declared& e) {
                reason = e.reason;
            }
        } else {
            reason = "op type '" + n.op_type + "'" +
                     (n.domain.empty() ? std::string() : " of domain '" + n.domain + "'") +
                     " is unknown to shape inference";
        }
        for (size_t k = 0; k < n.outputs.size(); ++k) {
            const uint32_t o = n.outputs[k];
            if (o == NNERGY_NO_TENSOR) continue;
            if (inferred && !(flags[o] & declared) && b.dtypes[o] != NNERGY_DTYPE_UNDEFINED) {
                // Nothing declared to check against.
                if (!fits_int64(b.shapes[o]))
                    ctx.fail("output '" + g.tensors[o].name + "' " +
                             detail::shape_string(b.shapes[o]) +
                             " has more elements than a 64-bit count holds");
                continue;
            }
            const tensor& x = g.tensors[o];
            if (!inferred) {
                // Fall back on the declared shape; the model must then give all of it, unless
                // the tensor is host work (computed from shapes and code constants, as the
                // index tensors of a causal mask are): its rank suffices until a node doing
                // device work needs its size.
                std::vector<int64_t> s;
                if (x.shape) s = bind_dims(*x.shape, symbols);
                if (!x.shape || (!complete(s) && (!outputs_known || (flags[o] & graph_output))))
                    ctx.fail(reason + "; declare the full shape of output '" + x.name +
                             "' to go on");
                if (!complete(s)) flags[o] |= partial;
                b.shapes[o] = std::move(s);
            } else if (x.shape && !agrees(*x.shape, b.shapes[o], symbols)) {
                // A cross-check of the exporter's shape, not an input of the counts.
                b.disagreements.push_back(
                    {o, i,
                     g.describe_node(i) + ": output '" + x.name + "' is declared " +
                         declared_string(*x.shape, symbols) + " but inferred " +
                         detail::shape_string(b.shapes[o])});
            }
            if (!(flags[o] & partial) && !fits_int64(b.shapes[o]))
                ctx.fail("output '" + x.name + "' " + detail::shape_string(b.shapes[o]) +
                         " has more elements than a 64-bit count holds");
            if (b.dtypes[o] == NNERGY_DTYPE_UNDEFINED)
                ctx.fail((op ? std::string("the element type of output '") + x.name +
                                   "' cannot be inferred"
                             : reason) +
                         "; declare the element type of output '" + x.name + "'");
        }

        // Counting: work from the op's rule, bytes and parameters from its operands.
        op_counts& cnt = b.counts[i];
        if (op) {
            bool partial_output = false;
            for (uint32_t o : n.outputs)
                if (o != NNERGY_NO_TENSOR && (flags[o] & partial)) partial_output = true;
            // A shape known only in part cannot be counted; only host work may have one.
            if (partial_input || partial_output) {
                if (!outputs_known) ctx.fail(reason + "; its work cannot be counted");
            } else {
                detail::count_work(*op, ctx, cnt);
            }
            // Work whose every result is known runs on the host (or is folded by a compiler):
            // no device work. A graph output is still computed.
            bool any = false;
            cnt.folded = true;
            for (uint32_t o : n.outputs) {
                if (o == NNERGY_NO_TENSOR) continue;
                any = true;
                if (outputs_known || b.int_values[o]) flags[o] |= known;
                if (!(flags[o] & known) || (flags[o] & (initializer | graph_output)))
                    cnt.folded = false;
            }
            cnt.folded = cnt.folded && any;
            if (cnt.folded) cnt.macs = cnt.flops = 0;
        } else {
            cnt.counted = false;
            b.unknown_nodes.push_back(i);
        }
        b.read_offset[i] = b.read_bytes.size();
        for (size_t k = 0; k < n.inputs.size(); ++k) {
            const uint32_t t = n.inputs[k];
            if (t != NNERGY_NO_TENSOR) flags[t] |= read;
            double bytes = 0;
            bool data = t != NNERGY_NO_TENSOR && !(op && in_mask(op->control_inputs, k));
            for (size_t j = 0; data && j < k; ++j)  // a tensor read twice is read once
                data = n.inputs[j] != t || (op && in_mask(op->control_inputs, j));
            if (data) {
                bytes = b.tensor_bytes(t);
                if (op && k == 0 &&
                    (op->id == detail::op_id::Gather || op->id == detail::op_id::Slice ||
                     op->id == detail::op_id::GatherElements || op->id == detail::op_id::GatherND))
                    bytes = std::min(
                        bytes, b.tensor_elements(n.outputs[0]) * dtype_bits(b.dtypes[t]) / 8.0);
                if (flags[t] & initializer) {
                    cnt.weight_bytes += bytes;
                    // Index, shape and flag initializers are code, not trained parameters.
                    const bool param =
                        !(op && in_mask(op->not_params, k)) && b.dtypes[t] != NNERGY_DTYPE_INT64 &&
                        b.dtypes[t] != NNERGY_DTYPE_BOOL && !g.tensors[t].is_constant;
                    if (param && !params_claimed[t]) {
                        params_claimed[t] = 1;
                        cnt.params += b.tensor_elements(t);
                    }
                } else {
                    cnt.input_bytes += bytes;
                }
            }
            b.read_bytes.push_back(bytes);
        }
        for (uint32_t o : n.outputs)
            if (o != NNERGY_NO_TENSOR) cnt.output_bytes += b.tensor_bytes(o);
        b.total_params += cnt.params;
    }
    b.read_offset[node_count] = b.read_bytes.size();

    // A parameter the model holds but no node reads (an auxiliary head only training runs) is
    // still one of its parameters, as PyTorch counts them; it moves no bytes.
    for (uint32_t t = 0; t < tensor_count; ++t)
        if ((flags[t] & (initializer | read)) == initializer && !g.tensors[t].is_constant &&
            b.dtypes[t] != NNERGY_DTYPE_INT64 && b.dtypes[t] != NNERGY_DTYPE_BOOL)
            b.total_params += b.tensor_elements(t);

    if (options.strict && !b.disagreements.empty()) {
        std::string message = b.disagreements.front().message;
        if (b.disagreements.size() > 1)
            message += " (and " + std::to_string(b.disagreements.size() - 1) +
                       " more declared shapes that disagree with inferred ones)";
        throw error(message, exit_code::strict);
    }
    b.identity = new_identity();
    return b;
}

uint64_t new_identity() noexcept {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace nnergy
