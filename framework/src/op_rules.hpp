// SPDX-License-Identifier: Apache-2.0
// Internal to the framework: the ops shape inference and counting know, their operand roles
// and type rules, and the per-node context the inference and counting rules work on.
#pragma once

#include <array>
#include <cstdint>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/graph.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy::detail {

enum class op_id : uint8_t {
    Abs,
    Acos,
    Acosh,
    Add,
    AffineGrid,
    And,
    ArgMax,
    ArgMin,
    Asin,
    Asinh,
    Atan,
    Atanh,
    AveragePool,
    BatchNormalization,
    BitShift,
    BitwiseAnd,
    BitwiseNot,
    BitwiseOr,
    BitwiseXor,
    Cast,
    CastLike,
    Ceil,
    Celu,
    CenterCropPad,
    Clip,
    Col2Im,
    Concat,
    Constant,
    ConstantOfShape,
    Conv,
    ConvInteger,
    ConvTranspose,
    Cos,
    Cosh,
    CumSum,
    DFT,
    DeformConv,
    DepthToSpace,
    DequantizeLinear,
    Div,
    Dropout,
    DynamicQuantizeLinear,
    Einsum,
    Elu,
    Equal,
    Erf,
    Exp,
    Expand,
    EyeLike,
    Flatten,
    Floor,
    Gather,
    GatherElements,
    GatherND,
    Gelu,
    Gemm,
    GlobalAveragePool,
    GlobalLpPool,
    GlobalMaxPool,
    Greater,
    GreaterOrEqual,
    GridSample,
    GroupNormalization,
    HardSigmoid,
    HardSwish,
    Hardmax,
    Identity,
    InstanceNormalization,
    IsInf,
    IsNaN,
    LRN,
    LayerNormalization,
    LeakyRelu,
    Less,
    LessOrEqual,
    Log,
    LogSoftmax,
    LpNormalization,
    LpPool,
    MatMul,
    MatMulInteger,
    Max,
    MaxPool,
    Mean,
    MeanVarianceNormalization,
    Min,
    Mish,
    Mod,
    Mul,
    Neg,
    NonZero,
    Not,
    OneHot,
    Or,
    PRelu,
    Pad,
    Pow,
    QLinearConv,
    QLinearMatMul,
    QuantizeLinear,
    Range,
    Reciprocal,
    ReduceL1,
    ReduceL2,
    ReduceLogSum,
    ReduceLogSumExp,
    ReduceMax,
    ReduceMean,
    ReduceMin,
    ReduceProd,
    ReduceSum,
    ReduceSumSquare,
    Relu,
    Reshape,
    Resize,
    ReverseSequence,
    Round,
    ScatterElements,
    ScatterND,
    Selu,
    Shape,
    Shrink,
    Sigmoid,
    Sign,
    Sin,
    Sinh,
    Size,
    Slice,
    Softmax,
    Softplus,
    Softsign,
    SpaceToDepth,
    Split,
    Sqrt,
    Squeeze,
    Sub,
    Sum,
    Tan,
    Tanh,
    ThresholdedRelu,
    Tile,
    TopK,
    Transpose,
    Trilu,
    Unsqueeze,
    Upsample,
    Where,
    Xor,
    // Ops of the host's own domain (host_domain): what ONNX has no op for.
    AdaptiveAveragePool,
    AdaptiveMaxPool,
};

/// How the first output's element type follows from the node.
enum class dtype_rule : uint8_t {
    like_input,     ///< the type of input `dtype_from`
    int64,          ///< Shape
    boolean,        ///< comparisons
    cast_to,        ///< the `to` attribute (Cast)
    constant_attr,  ///< which value_* attribute is set (Constant)
    float_default,  ///< declared, else float32 (ConstantOfShape's default value is float32)
    int32,          ///< integer matrix products (MatMulInteger, ConvInteger)
    uint8,          ///< DynamicQuantizeLinear
    quantized,      ///< input `dtype_from` when given, else `output_dtype`, else uint8
    dtype_attr,     ///< the `dtype` attribute, else input `dtype_from` (EyeLike)
};

inline constexpr uint8_t any_count = 255;
/// `same_dtype` bit meaning "every input, however many" (variadic ops).
inline constexpr uint32_t all_inputs = 0xFFFFFFFFu;

struct op_info {
    std::string_view name;
    op_id id;
    uint8_t min_inputs;
    uint8_t max_inputs;  ///< any_count: variadic
    uint8_t min_outputs;
    uint8_t max_outputs;
    /// Inputs read as metadata (shapes, axes, bounds, ratios), not as tensor data: they add no
    /// bytes and no parameters (docs/counting.md, "control operands").
    uint32_t control_inputs;
    /// Inputs that must hold integers (indices, shapes, axes).
    uint32_t integer_inputs;
    /// Inputs that must share one element type (the first of them gives it).
    uint32_t same_dtype;
    /// Initializer inputs that hold statistics, not parameters (BatchNormalization mean/var).
    uint32_t not_params;
    dtype_rule rule;
    uint8_t dtype_from;
    /// Default-domain opsets in which the op got a new version (its since_versions), ascending,
    /// up to newest_opset; unused entries are 0.
    std::array<uint8_t, 8> since{};
    /// Opset from which the op is no longer in the default domain (0: never removed).
    uint8_t removed_in = 0;
};

/// Newest default-domain opset whose operator versions the host implements.
inline constexpr int64_t newest_opset = newest_supported_opset;

/// The version of `op` a model importing default-domain `opset` uses: the largest since_version
/// <= opset; 0 when the op does not exist at that opset (introduced later, or removed).
/// opset 0 (not declared) resolves to the newest version, of a removed op too.
uint8_t resolve_version(const op_info& op, int64_t opset) noexcept;

/// "1, 11, 13, 18" (the since_versions of `op`, for docs and messages).
std::string versions_string(const op_info& op);

/// The op of a node, or nullptr when shape inference and counting do not know it.
/// The default ONNX domain ("" or "ai.onnx") and host_domain are known; other domains have no
/// ops here (their nodes are unknown ops).
const op_info* find_op(std::string_view op_type, std::string_view domain) noexcept;

/// The domain of the ops the host defines beyond ONNX (docs/onnx.md, "Host ops"): PyTorch's
/// adaptive pools, whose windows overlap where the output size does not divide the input.
inline constexpr std::string_view host_domain = "ai.nnergy";

/// The known ops, in name order.
const std::vector<op_info>& op_table();

/// Element types of every tensor (declared, else inferred). Throws nnergy::error naming the node
/// when declared types contradict an op. `g.nodes` must already be in topological order.
/// When `versions` is given it receives each node's resolved op version (resolve_version
/// against g.opset(); 0 for ops the host does not know), and a known op that does not exist
/// at the model's opset is an error naming the node.
std::vector<nnergy_dtype> infer_dtypes(const graph& g, std::vector<uint8_t>* versions = nullptr);

/// ONNX TensorProto.DataType number to nnergy_dtype (Cast's `to`); nullopt for unsupported.
std::optional<nnergy_dtype> dtype_from_onnx(int64_t onnx_type) noexcept;

bool is_integer(nnergy_dtype t) noexcept;

/// Thrown by an inference rule that needs values it cannot fold (a computed Reshape target):
/// the driver then falls back on the declared output shapes, or reports `reason`.
struct needs_declared {
    std::string reason;
};

/// "[1, 3, 224, 224]".
std::string shape_string(const std::vector<int64_t>& s);

/// The view of one node that inference and counting rules work on.
class node_ctx {
public:
    node_ctx(const graph& g, bound_graph& b, uint32_t index) noexcept
        : g_(g), b_(b), n_(g.nodes[index]), index_(index) {}

    const node& n() const noexcept { return n_; }
    uint32_t index() const noexcept { return index_; }
    const graph& g() const noexcept { return g_; }
    bound_graph& b() const noexcept { return b_; }
    /// The op version this node follows (a since_version, e.g. 18 for ReduceMean at opset 20),
    /// resolved once when the graph was finalized.
    int version() const noexcept {
        const auto& v = g_.op_versions();
        return index_ < v.size() ? v[index_] : 0;
    }
    /// Whether the model declares its default-domain opset. Without one (a JSON graph without
    /// `metadata.opset`) every form of an op is accepted and version() is the newest.
    bool versioned() const noexcept { return g_.opset() != 0; }
    /// "ReduceMean-18" for messages.
    std::string op_version_name() const;

    size_t input_count() const noexcept { return n_.inputs.size(); }
    size_t output_count() const noexcept { return n_.outputs.size(); }
    bool has_input(size_t i) const noexcept {
        return i < n_.inputs.size() && n_.inputs[i] != NNERGY_NO_TENSOR;
    }
    bool has_output(size_t i) const noexcept {
        return i < n_.outputs.size() && n_.outputs[i] != NNERGY_NO_TENSOR;
    }
    const std::vector<int64_t>& shape(size_t i) const noexcept { return b_.shapes[n_.inputs[i]]; }
    int64_t rank(size_t i) const noexcept { return static_cast<int64_t>(shape(i).size()); }
    nnergy_dtype dtype(size_t i) const noexcept { return b_.dtypes[n_.inputs[i]]; }
    const std::optional<std::vector<int64_t>>& values(size_t i) const noexcept {
        return b_.int_values[n_.inputs[i]];
    }
    const std::vector<int64_t>& out_shape(size_t i) const noexcept {
        return b_.shapes[n_.outputs[i]];
    }
    nnergy_dtype out_dtype(size_t i) const noexcept { return b_.dtypes[n_.outputs[i]]; }

    /// Sets output `i`'s shape when the node has that output.
    void set_shape(size_t i, std::vector<int64_t> s) const {
        if (has_output(i)) b_.shapes[n_.outputs[i]] = std::move(s);
    }
    /// Records folded integer values of output `i` (small integer tensors only).
    void set_values(size_t i, std::vector<int64_t> v) const;

    /// "input 'x' [1, 3, 224, 224]"
    std::string describe_input(size_t i) const;

    [[noreturn]] void fail(const std::string& message) const;
    /// Values of input `i` that the rule needs to be known constants.
    const std::vector<int64_t>& need_values(size_t i, std::string_view what) const;

    int64_t attr_int(std::string_view name, int64_t fallback) const noexcept {
        return n_.attr_int(name).value_or(fallback);
    }
    double attr_float(std::string_view name, double fallback) const noexcept {
        return n_.attr_float(name).value_or(fallback);
    }
    /// An ints attribute of exactly `count` entries, `fallback` repeated when absent.
    std::vector<int64_t> attr_ints(std::string_view name, size_t count, int64_t fallback) const;
    /// `axis` in [-rank, rank-1] made non-negative; fails naming `what` otherwise.
    int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view what) const;

private:
    const graph& g_;
    bound_graph& b_;
    const node& n_;
    uint32_t index_;
};

/// Infers the shapes (and folds the integer values) of a node's outputs. Output element types
/// are already in b.dtypes. Throws nnergy::error or needs_declared.
void infer_shapes(const op_info& op, const node_ctx& ctx);

/// MACs and FLOPs of a node whose shapes are known (docs/counting.md).
void count_work(const op_info& op, const node_ctx& ctx, op_counts& out);

/// An Einsum equation resolved against the operand shapes: every label (letters, and one
/// label per broadcast ellipsis dim) with its extent, the labels of each operand (repeats
/// removed) and of the output.
struct einsum_spec {
    std::vector<int64_t> extent;  ///< per label
    std::vector<std::vector<int>> operands;
    std::vector<int> output;
};

/// Parses the `equation` attribute; fails through `ctx` naming the problem.
einsum_spec parse_einsum(const node_ctx& ctx);

/// DFT: the transformed axis (non-negative) and the signal length (dft_length, else the axis
/// dimension, else for the inverse of a one-sided transform 2 x (dim - 1)).
struct dft_params {
    size_t axis;
    int64_t length;
    bool real;  ///< real signal (input or output): half the work of a complex one
};
dft_params read_dft(const node_ctx& ctx);

/// Largest integer tensor whose values constant folding keeps.
inline constexpr size_t max_folded_elements = 4096;

/// Product of dims; fails through `ctx` on overflow.
int64_t checked_elements(const std::vector<int64_t>& s, const node_ctx& ctx);

}  // namespace nnergy::detail
