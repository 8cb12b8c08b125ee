// SPDX-License-Identifier: Apache-2.0
/// \file shape_inference.hpp
/// \brief Binding symbolic dimensions, inferring every tensor's shape and counting every node.
///
/// Counting conventions are documented in docs/counting.md.
#pragma once

#include <cstdint>
#include <map>
#include <nnergy/framework/graph.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy {

/// Symbol values, e.g. {"batch": 8, "seq": 512}.
using dim_bindings = std::map<std::string, int64_t, std::less<>>;

/// Per-node counts (see docs/counting.md).
struct op_counts {
    double macs = 0;
    double flops = 0;
    double input_bytes = 0;   ///< activation bytes read (initializers excluded)
    double output_bytes = 0;  ///< activation bytes written
    double weight_bytes = 0;  ///< initializer bytes read
    double params =
        0;  ///< elements of initializers first read by this node (each counted once per graph)
    bool counted = true;  ///< false when the op is unknown to the counter
    /// Every output is known once the model is bound (computed only from shapes and constants
    /// of the model's code: shape arithmetic, a causal mask) and none is a graph output: host
    /// work (or folded by a compiler), no MACs or FLOPs.
    bool folded = false;
};

/// A declared shape (a node output's, or value_info's) that disagrees with the inferred one.
struct shape_disagreement {
    uint32_t tensor = 0;
    uint32_t node = 0;  ///< the producing node
    /// "file: node 'fc' (MatMul): output 'y' is declared [batch=2, 5] but inferred [2, 4]"
    std::string message;
};

/// How bind() treats what it can check but need not stop at.
struct bind_options {
    /// A declared shape that disagrees with the inferred one is an error (exit_code::strict)
    /// instead of an entry in bound_graph::disagreements.
    bool strict = false;
};

/// A graph with all dimensions concrete, and its counts. Cheap to rebuild for new bindings.
struct bound_graph {
    const graph* source = nullptr;
    dim_bindings bindings;
    std::vector<std::vector<int64_t>> shapes;  ///< per tensor
    std::vector<nnergy_dtype> dtypes;          ///< per tensor (declared or inferred)
    std::vector<op_counts> counts;             ///< per node
    /// Integer values known after constant folding (shape sub-graphs), per tensor; empty
    /// optional where unknown. Initializer values are copied here too.
    std::vector<std::optional<std::vector<int64_t>>> int_values;
    std::vector<uint32_t> unknown_nodes;  ///< nodes whose op cannot be counted or inferred
    /// Declared shapes that disagree with inferred ones (warnings; empty under strict, which
    /// throws instead), in node order.
    std::vector<shape_disagreement> disagreements;
    double total_params = 0;
    /// Bytes node n reads through its input i, at read_bytes[read_offset[n] + i]: 0 for an
    /// omitted input and for a control operand (Reshape's target shape, Slice's bounds, ...:
    /// docs/counting.md), the part actually read for Gather and Slice data, else the whole
    /// tensor. read_offset has one entry per node plus a final one.
    std::vector<size_t> read_offset;
    std::vector<double> read_bytes;
    double input_read_bytes(uint32_t node, size_t input) const {
        return read_bytes[read_offset[node] + input];
    }

    double tensor_bytes(uint32_t t) const;
    double tensor_elements(uint32_t t) const;
    /// What plugins key caches on (docs/abi.md §9): set by bind(), never reused; 0 for a bound
    /// graph built otherwise. Nothing changes a bound graph once it has one.
    uint64_t identity = 0;
};

/// A number no earlier call in this process returned (never 0): the identity of a bound graph
/// or partition.
uint64_t new_identity() noexcept;

/// Binds symbols and infers shapes and dtypes of every tensor, then counts every node.
///
/// Only symbols on graph inputs and initializers are the caller's to bind (symbols_of()); the
/// error lists every one left unbound. The declared shapes of other tensors are cross-checks
/// (docs/counting.md, "Shapes the counts rest on"): a dim that is a bound symbol, or an
/// arithmetic expression of bound symbols (`seq + 1`, `Max(1, seq)`, `floor(seq/2)`), is
/// compared with the inferred one; any other symbol (`Gemm2311_dim_0`) stands for the first
/// value inferred for it, and a later tensor declaring it with another value disagrees.
/// Disagreements are listed in `disagreements`, or thrown under `options.strict`.
///
/// Throws nnergy::error listing unbound symbols, naming a tensor whose element count does not
/// fit in 64 bits, or naming the node whose inputs have incompatible shapes. Ops unknown to
/// inference make their outputs' shapes come from the declared shapes when present; otherwise
/// the error names the node. Unknown ops are recorded in unknown_nodes and counted as
/// `counted = false`, never silently as zero. Requires graph.finalized().
bound_graph bind(const graph& g, const dim_bindings& bindings, const bind_options& options = {});

/// The symbols a caller must bind: those of graph inputs' and initializers' declared shapes
/// (for a dim written as an expression, `2*seq`, the names in it), sorted. Symbols other tensors
/// declare are checked or unified, never asked for.
std::vector<std::string> symbols_of(const graph& g);

/// Value of a dimension expression as ONNX exporters write them in dim_param: integers, names
/// looked up in `bindings`, + - * / // % ** and parentheses, and Max, Min, floor, ceiling,
/// FloorToInt, CeilToInt, TruncToInt, Abs, FloorDiv, CleanDiv, Mod, PythonMod. nullopt when
/// the text is not such an expression, names an unbound symbol, divides by zero, overflows 64
/// bits or is not an integer.
std::optional<int64_t> evaluate_dim_expression(std::string_view text, const dim_bindings& bindings);

/// True when shape inference and counting know `op_type` (default ONNX domain).
bool is_known_op(std::string_view op_type) noexcept;

/// All op types shape inference and counting know, sorted.
std::vector<std::string> known_ops();

/// Oldest and newest default-domain opsets whose operator versions the host implements.
inline constexpr int64_t oldest_supported_opset = 7;
inline constexpr int64_t newest_supported_opset = 22;

/// One known op's versions: the default-domain opsets in which it got a new version (its
/// since_versions, ascending, through newest_supported_opset) and the opset that removed it
/// from the default domain (0: never). A graph's metadata `opset` selects, per node, the
/// largest since_version <= opset; an op introduced later or removed is an error naming the
/// node (graph::finalize).
struct op_versions {
    std::string name;
    std::vector<int> since;
    int removed_in = 0;
};

/// The versions of every op known_ops() lists, in the same order.
std::vector<op_versions> known_op_versions();

}  // namespace nnergy
