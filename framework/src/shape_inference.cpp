// SPDX-License-Identifier: Apache-2.0
// bind(): symbols to values, shape inference in topological order, and per-node counts.
#include <algorithm>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <set>
#include <string>

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

// "[batch=8, 3, ?]": a declared shape as written, with the values symbols are bound to.
std::string declared_string(const std::vector<dim>& dims, const dim_bindings& bindings) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i) s += ", ";
        const dim& d = dims[i];
        if (d.is_symbolic()) {
            s += d.symbol;
            if (auto it = bindings.find(d.symbol); it != bindings.end())
                s += "=" + std::to_string(it->second);
        } else if (d.value >= 0) {
            s += std::to_string(d.value);
        } else {
            s += "?";
        }
    }
    return s + "]";
}

/// The declared dims with symbols replaced; NNERGY_DIM_UNKNOWN where unknown.
/// Every symbol is bound (checked before).
std::vector<int64_t> bind_dims(const std::vector<dim>& dims, const dim_bindings& bindings) {
    std::vector<int64_t> out(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
        const dim& d = dims[i];
        out[i] = d.is_symbolic() ? bindings.find(d.symbol)->second
                                 : (d.value >= 0 ? d.value : NNERGY_DIM_UNKNOWN);
    }
    return out;
}

bool complete(const std::vector<int64_t>& s) {
    return std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; });
}

// Compares a declared shape with an inferred one without allocating: unknown dims match all.
bool agrees(const std::vector<dim>& declared, const std::vector<int64_t>& inferred,
            const dim_bindings& bindings) {
    if (declared.size() != inferred.size()) return false;
    for (size_t i = 0; i < declared.size(); ++i) {
        const dim& d = declared[i];
        int64_t v = d.value;
        if (d.is_symbolic()) v = bindings.find(d.symbol)->second;
        if (v >= 0 && v != inferred[i]) return false;
    }
    return true;
}

}  // namespace

double bound_graph::tensor_elements(uint32_t t) const {
    double n = 1;
    for (int64_t d : shapes[t]) n *= static_cast<double>(d);
    return n;
}

double bound_graph::tensor_bytes(uint32_t t) const {
    return tensor_elements(t) * dtype_bits(dtypes[t]) / 8.0;
}

std::vector<std::string> symbols_of(const graph& g) {
    std::set<std::string> names;
    for (const tensor& t : g.tensors)
        if (t.shape)
            for (const dim& d : *t.shape)
                if (d.is_symbolic()) names.insert(d.symbol);
    return {names.begin(), names.end()};
}

bound_graph bind(const graph& g, const dim_bindings& bindings) {
    const std::string file = where(g);
    if (!g.finalized())
        throw error(file + ": the graph must be finalized before binding", exit_code::internal);

    // Compact per-tensor flags, read in random order below where the large tensor structs
    // would miss the cache on big graphs.
    const size_t tensor_count = g.tensors.size();
    enum : uint8_t { initializer = 1, declared = 2, graph_input = 4 };
    std::vector<uint8_t> flags(tensor_count, 0);

    // Every symbol, listed at once, so one run tells the user all they must bind.
    {
        std::set<std::string_view> unbound;
        for (size_t i = 0; i < tensor_count; ++i) {
            const tensor& t = g.tensors[i];
            flags[i] = static_cast<uint8_t>((t.is_initializer ? initializer : 0) |
                                            (t.shape ? declared : 0));
            if (t.shape)
                for (const dim& d : *t.shape)
                    if (d.is_symbolic() && bindings.find(d.symbol) == bindings.end())
                        unbound.insert(d.symbol);
        }
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
    for (uint32_t t : g.inputs) flags[t] |= graph_input;
    for (uint32_t t = 0; t < tensor_count; ++t) {
        if (!(flags[t] & (graph_input | initializer))) continue;
        const tensor& x = g.tensors[t];
        const char* kind = x.is_initializer ? "initializer" : "graph input";
        if (!x.shape)
            throw error(file + ": " + kind + " '" + x.name + "' has no shape (" + kind +
                        "s need one; use a symbol such as 'batch' for a free dimension)");
        b.shapes[t] = bind_dims(*x.shape, bindings);
        for (size_t i = 0; i < b.shapes[t].size(); ++i)
            if (b.shapes[t][i] < 0)
                throw error(file + ": " + kind + " '" + x.name + "' " +
                            declared_string(*x.shape, bindings) + ": dimension " +
                            std::to_string(i) + " is unknown; give it a value or a symbol");
        if (x.int_values) {
            const double n = b.tensor_elements(t);
            if (static_cast<double>(x.int_values->size()) != n)
                throw error(file + ": initializer '" + x.name + "' has " +
                            std::to_string(x.int_values->size()) + " values but its shape " +
                            declared_string(*x.shape, bindings) + " holds " +
                            std::to_string(static_cast<int64_t>(n)));
            b.int_values[t] = x.int_values;
        }
    }

    std::vector<uint8_t> params_claimed(tensor_count, 0);
    b.read_bytes.reserve(node_count * 3);
    for (uint32_t i = 0; i < node_count; ++i) {
        const node& n = g.nodes[i];
        const detail::op_info* op = detail::find_op(n.op_type, n.domain);
        const detail::node_ctx ctx(g, b, i);

        std::string reason;
        bool inferred = false;
        if (op) {
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
            if (inferred && !(flags[o] & declared) && b.dtypes[o] != NNERGY_DTYPE_UNDEFINED)
                continue;  // nothing declared to check against
            const tensor& x = g.tensors[o];
            if (!inferred) {
                // Fall back on the declared shape; the model must then give all of them.
                std::vector<int64_t> s;
                if (x.shape) s = bind_dims(*x.shape, bindings);
                if (!x.shape || !complete(s))
                    ctx.fail(reason + "; declare the full shape of output '" + x.name +
                             "' to go on");
                b.shapes[o] = std::move(s);
            } else if (x.shape && !agrees(*x.shape, b.shapes[o], bindings)) {
                ctx.fail("output '" + x.name + "' is declared " +
                         declared_string(*x.shape, bindings) + " but inferred " +
                         detail::shape_string(b.shapes[o]));
            }
            if (b.dtypes[o] == NNERGY_DTYPE_UNDEFINED)
                ctx.fail((op ? std::string("the element type of output '") + x.name +
                                   "' cannot be inferred"
                             : reason) +
                         "; declare the element type of output '" + x.name + "'");
        }

        // Counting: work from the op's rule, bytes and parameters from its operands.
        op_counts& cnt = b.counts[i];
        if (op) {
            detail::count_work(*op, ctx, cnt);
            // Shape arithmetic whose every result is known now runs on the host (or is folded
            // by a compiler): no device work. A graph output is still computed.
            for (uint32_t o : n.outputs) {
                if (o == NNERGY_NO_TENSOR) continue;
                cnt.folded = b.int_values[o].has_value() && !(flags[o] & initializer) &&
                             std::find(g.outputs.begin(), g.outputs.end(), o) == g.outputs.end();
                if (!cnt.folded) break;
            }
            if (cnt.folded) cnt.macs = cnt.flops = 0;
        } else {
            cnt.counted = false;
            b.unknown_nodes.push_back(i);
        }
        b.read_offset[i] = b.read_bytes.size();
        for (size_t k = 0; k < n.inputs.size(); ++k) {
            const uint32_t t = n.inputs[k];
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
                    const bool param = !(op && in_mask(op->not_params, k)) &&
                                       b.dtypes[t] != NNERGY_DTYPE_INT64 &&
                                       !g.tensors[t].is_constant;
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
    return b;
}

}  // namespace nnergy
