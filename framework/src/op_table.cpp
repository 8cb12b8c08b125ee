// SPDX-License-Identifier: Apache-2.0
// The ops the host knows: operand roles, arity and element-type rules.
#include <algorithm>
#include <array>
#include <nnergy/dtype.hpp>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "op_rules.hpp"

namespace nnergy::detail {

namespace {

constexpr uint32_t bit(unsigned i) { return 1u << i; }

// Positional so that every field is always spelled out or defaulted in one place.
constexpr op_info make(std::string_view name, op_id id, uint8_t min_in, uint8_t max_in,
                       uint8_t min_out = 1, uint8_t max_out = 1, uint32_t control = 0,
                       uint32_t integer = 0, uint32_t same = 0,
                       dtype_rule rule = dtype_rule::like_input, uint8_t from = 0,
                       uint32_t not_params = 0) {
    return op_info{name,    id,   min_in,     max_in, min_out, max_out, control,
                   integer, same, not_params, rule,   from,    {},      0};
}

op_info unary(std::string_view name, op_id id) { return make(name, id, 1, 1); }
op_info binary(std::string_view name, op_id id) {
    return make(name, id, 2, 2, 1, 1, 0, 0, bit(0) | bit(1));
}
op_info compare(std::string_view name, op_id id) {
    return make(name, id, 2, 2, 1, 1, 0, 0, bit(0) | bit(1), dtype_rule::boolean);
}
op_info variadic(std::string_view name, op_id id) {
    return make(name, id, 1, any_count, 1, 1, 0, 0, all_inputs);
}
// Ops whose input 1 is an optional list of axes (opset 13+ / 18+ form of an attribute).
op_info with_axes(std::string_view name, op_id id) {
    return make(name, id, 1, 2, 1, 1, bit(1), bit(1));
}

// Every version of every known op, from the ONNX operator changelog (docs/Changelog.md of
// onnx/onnx): the opsets in which the op got a new version, through newest_opset, and the
// opset that removed it from the default domain. docs/onnx.md lists this table, and a unit
// test checks that the two agree.
struct version_entry {
    std::string_view name;
    std::array<uint8_t, 8> since;
    uint8_t removed_in = 0;
};

const version_entry version_table[] = {
    {"Abs", {1, 6, 13}},
    {"Acos", {7, 22}},
    {"Acosh", {9, 22}},
    {"Add", {1, 6, 7, 13, 14}},
    {"AffineGrid", {20}},
    {"And", {1, 7}},
    {"ArgMax", {1, 11, 12, 13}},
    {"ArgMin", {1, 11, 12, 13}},
    {"Asin", {7, 22}},
    {"Asinh", {9, 22}},
    {"Atan", {7, 22}},
    {"Atanh", {9, 22}},
    {"AveragePool", {1, 7, 10, 11, 19, 22}},
    {"BatchNormalization", {1, 6, 7, 9, 14, 15}},
    {"BitShift", {11}},
    {"BitwiseAnd", {18}},
    {"BitwiseNot", {18}},
    {"BitwiseOr", {18}},
    {"BitwiseXor", {18}},
    {"Cast", {1, 6, 9, 13, 19, 21}},
    {"CastLike", {15, 19, 21}},
    {"Ceil", {1, 6, 13}},
    {"Celu", {12}},
    {"CenterCropPad", {18}},
    {"Clip", {1, 6, 11, 12, 13}},
    {"Col2Im", {18}},
    {"Concat", {1, 4, 11, 13}},
    {"Constant", {1, 9, 11, 12, 13, 19, 21}},
    {"ConstantOfShape", {9, 20, 21}},
    {"Conv", {1, 11, 22}},
    {"ConvInteger", {10}},
    {"ConvTranspose", {1, 11, 22}},
    {"Cos", {7, 22}},
    {"Cosh", {9, 22}},
    {"CumSum", {11, 14}},
    {"DFT", {17, 20}},
    {"DeformConv", {19, 22}},
    {"DepthToSpace", {1, 11, 13}},
    {"DequantizeLinear", {10, 13, 19, 21}},
    {"Div", {1, 6, 7, 13, 14}},
    {"Dropout", {1, 6, 7, 10, 12, 13, 22}},
    {"DynamicQuantizeLinear", {11}},
    {"Einsum", {12}},
    {"Elu", {1, 6, 22}},
    {"Equal", {1, 7, 11, 13, 19}},
    {"Erf", {9, 13}},
    {"Exp", {1, 6, 13}},
    {"Expand", {8, 13}},
    {"EyeLike", {9, 22}},
    {"Flatten", {1, 9, 11, 13, 21}},
    {"Floor", {1, 6, 13}},
    {"Gather", {1, 11, 13}},
    {"GatherElements", {11, 13}},
    {"GatherND", {11, 12, 13}},
    {"Gelu", {20}},
    {"Gemm", {1, 6, 7, 9, 11, 13}},
    {"GlobalAveragePool", {1, 22}},
    {"GlobalLpPool", {1, 2, 22}},
    {"GlobalMaxPool", {1, 22}},
    {"Greater", {1, 7, 9, 13}},
    {"GreaterOrEqual", {12, 16}},
    {"GridSample", {16, 20, 22}},
    {"GroupNormalization", {18, 21}},
    {"HardSigmoid", {1, 6, 22}},
    {"HardSwish", {14, 22}},
    {"Hardmax", {1, 11, 13}},
    {"Identity", {1, 13, 14, 16, 19, 21}},
    {"InstanceNormalization", {1, 6, 22}},
    {"IsInf", {10, 20}},
    {"IsNaN", {9, 13, 20}},
    {"LRN", {1, 13}},
    {"LayerNormalization", {17}},
    {"LeakyRelu", {1, 6, 16}},
    {"Less", {1, 7, 9, 13}},
    {"LessOrEqual", {12, 16}},
    {"Log", {1, 6, 13}},
    {"LogSoftmax", {1, 11, 13}},
    {"LpNormalization", {1, 22}},
    {"LpPool", {1, 2, 11, 18, 22}},
    {"MatMul", {1, 9, 13}},
    {"MatMulInteger", {10}},
    {"Max", {1, 6, 8, 12, 13}},
    {"MaxPool", {1, 8, 10, 11, 12, 22}},
    {"Mean", {1, 6, 8, 13}},
    {"MeanVarianceNormalization", {9, 13}},
    {"Min", {1, 6, 8, 12, 13}},
    {"Mish", {18, 22}},
    {"Mod", {10, 13}},
    {"Mul", {1, 6, 7, 13, 14}},
    {"Neg", {1, 6, 13}},
    {"NonZero", {9, 13}},
    {"Not", {1}},
    {"OneHot", {9, 11}},
    {"Or", {1, 7}},
    {"PRelu", {1, 6, 7, 9, 16}},
    {"Pad", {1, 2, 11, 13, 18, 19, 21}},
    {"Pow", {1, 7, 12, 13, 15}},
    {"QLinearConv", {10}},
    {"QLinearMatMul", {10, 21}},
    {"QuantizeLinear", {10, 13, 19, 21}},
    {"Range", {11}},
    {"Reciprocal", {1, 6, 13}},
    {"ReduceL1", {1, 11, 13, 18}},
    {"ReduceL2", {1, 11, 13, 18}},
    {"ReduceLogSum", {1, 11, 13, 18}},
    {"ReduceLogSumExp", {1, 11, 13, 18}},
    {"ReduceMax", {1, 11, 12, 13, 18, 20}},
    {"ReduceMean", {1, 11, 13, 18}},
    {"ReduceMin", {1, 11, 12, 13, 18, 20}},
    {"ReduceProd", {1, 11, 13, 18}},
    {"ReduceSum", {1, 11, 13}},
    {"ReduceSumSquare", {1, 11, 13, 18}},
    {"Relu", {1, 6, 13, 14}},
    {"Reshape", {1, 5, 13, 14, 19, 21}},
    {"Resize", {10, 11, 13, 18, 19}},
    {"ReverseSequence", {10}},
    {"Round", {11, 22}},
    {"ScatterElements", {11, 13, 16, 18}},
    {"ScatterND", {11, 13, 16, 18}},
    {"Selu", {1, 6, 22}},
    {"Shape", {1, 13, 15, 19, 21}},
    {"Shrink", {9}},
    {"Sigmoid", {1, 6, 13}},
    {"Sign", {9, 13}},
    {"Sin", {7, 22}},
    {"Sinh", {9, 22}},
    {"Size", {1, 13, 19, 21}},
    {"Slice", {1, 10, 11, 13}},
    {"Softmax", {1, 11, 13}},
    {"Softplus", {1, 22}},
    {"Softsign", {1, 22}},
    {"SpaceToDepth", {1, 13}},
    {"Split", {1, 2, 11, 13, 18}},
    {"Sqrt", {1, 6, 13}},
    {"Squeeze", {1, 11, 13, 21}},
    {"Sub", {1, 6, 7, 13, 14}},
    {"Sum", {1, 6, 8, 13}},
    {"Tan", {7, 22}},
    {"Tanh", {1, 6, 13}},
    {"ThresholdedRelu", {10, 22}},
    {"Tile", {1, 6, 13}},
    {"TopK", {1, 10, 11}},
    {"Transpose", {1, 13, 21}},
    {"Trilu", {14}},
    {"Unsqueeze", {1, 11, 13, 21}},
    {"Upsample", {1, 7, 9}, 10},
    {"Where", {9, 16}},
    {"Xor", {1, 7}},
};

std::vector<op_info> build_table() {
    using r = dtype_rule;
    std::vector<op_info> t{
        unary("Abs", op_id::Abs),
        binary("Add", op_id::Add),
        unary("AveragePool", op_id::AveragePool),
        // scale, bias, mean and var may have their own types (opset 15); mean/var are
        // running statistics, not parameters.
        make("BatchNormalization", op_id::BatchNormalization, 5, 5, 1, 5, 0, 0, 0, r::like_input, 0,
             bit(3) | bit(4)),
        make("Cast", op_id::Cast, 1, 1, 1, 1, 0, 0, 0, r::cast_to),
        unary("Ceil", op_id::Ceil),
        make("Clip", op_id::Clip, 1, 3, 1, 1, bit(1) | bit(2), 0, bit(0) | bit(1) | bit(2)),
        variadic("Concat", op_id::Concat),
        make("Constant", op_id::Constant, 0, 0, 1, 1, 0, 0, 0, r::constant_attr),
        make("ConstantOfShape", op_id::ConstantOfShape, 1, 1, 1, 1, bit(0), bit(0), 0,
             r::float_default),
        make("Conv", op_id::Conv, 2, 3, 1, 1, 0, 0, bit(0) | bit(1) | bit(2)),
        make("ConvTranspose", op_id::ConvTranspose, 2, 3, 1, 1, 0, 0, bit(0) | bit(1) | bit(2)),
        binary("Div", op_id::Div),
        // ratio and training_mode (opset 12+) are scalars that steer the op.
        make("Dropout", op_id::Dropout, 1, 3, 1, 2, bit(1) | bit(2)),
        unary("Elu", op_id::Elu),
        compare("Equal", op_id::Equal),
        unary("Erf", op_id::Erf),
        unary("Exp", op_id::Exp),
        make("Expand", op_id::Expand, 2, 2, 1, 1, bit(1), bit(1)),
        unary("Flatten", op_id::Flatten),
        unary("Floor", op_id::Floor),
        make("Gather", op_id::Gather, 2, 2, 1, 1, 0, bit(1)),
        unary("Gelu", op_id::Gelu),
        make("Gemm", op_id::Gemm, 2, 3, 1, 1, 0, 0, bit(0) | bit(1) | bit(2)),
        unary("GlobalAveragePool", op_id::GlobalAveragePool),
        unary("GlobalMaxPool", op_id::GlobalMaxPool),
        compare("Greater", op_id::Greater),
        unary("HardSigmoid", op_id::HardSigmoid),
        unary("HardSwish", op_id::HardSwish),
        unary("Identity", op_id::Identity),
        make("LayerNormalization", op_id::LayerNormalization, 2, 3, 1, 3, 0, 0,
             bit(0) | bit(1) | bit(2)),
        unary("LeakyRelu", op_id::LeakyRelu),
        compare("Less", op_id::Less),
        unary("Log", op_id::Log),
        unary("LogSoftmax", op_id::LogSoftmax),
        binary("MatMul", op_id::MatMul),
        variadic("Max", op_id::Max),
        make("MaxPool", op_id::MaxPool, 1, 1, 1, 2),
        variadic("Mean", op_id::Mean),
        variadic("Min", op_id::Min),
        binary("Mul", op_id::Mul),
        unary("Neg", op_id::Neg),
        make("Not", op_id::Not, 1, 1, 1, 1, 0, 0, 0, r::boolean),
        binary("PRelu", op_id::PRelu),
        // pads, constant_value and axes steer the op; data and constant_value share a type.
        make("Pad", op_id::Pad, 1, 4, 1, 1, bit(1) | bit(2) | bit(3), bit(1) | bit(3),
             bit(0) | bit(2)),
        make("Pow", op_id::Pow, 2, 2),
        make("Range", op_id::Range, 3, 3, 1, 1, 0, 0, bit(0) | bit(1) | bit(2)),
        unary("Reciprocal", op_id::Reciprocal),
        with_axes("ReduceMax", op_id::ReduceMax),
        with_axes("ReduceMean", op_id::ReduceMean),
        with_axes("ReduceMin", op_id::ReduceMin),
        with_axes("ReduceSum", op_id::ReduceSum),
        unary("Relu", op_id::Relu),
        make("Reshape", op_id::Reshape, 1, 2, 1, 1, bit(1), bit(1)),
        // Shape reads only the metadata of its input.
        make("Shape", op_id::Shape, 1, 1, 1, 1, bit(0), 0, 0, r::int64),
        unary("Sigmoid", op_id::Sigmoid),
        make("Slice", op_id::Slice, 1, 5, 1, 1, bit(1) | bit(2) | bit(3) | bit(4),
             bit(1) | bit(2) | bit(3) | bit(4)),
        unary("Softmax", op_id::Softmax),
        unary("Softplus", op_id::Softplus),
        make("Split", op_id::Split, 1, 2, 1, any_count, bit(1), bit(1)),
        unary("Sqrt", op_id::Sqrt),
        with_axes("Squeeze", op_id::Squeeze),
        binary("Sub", op_id::Sub),
        variadic("Sum", op_id::Sum),
        unary("Tanh", op_id::Tanh),
        make("Tile", op_id::Tile, 2, 2, 1, 1, bit(1), bit(1)),
        unary("Transpose", op_id::Transpose),
        with_axes("Unsqueeze", op_id::Unsqueeze),
        make("Where", op_id::Where, 3, 3, 1, 1, 0, 0, bit(1) | bit(2), r::like_input, 1),
        // Trigonometric and other elementwise math.
        unary("Acos", op_id::Acos),
        unary("Acosh", op_id::Acosh),
        unary("Asin", op_id::Asin),
        unary("Asinh", op_id::Asinh),
        unary("Atan", op_id::Atan),
        unary("Atanh", op_id::Atanh),
        unary("Cos", op_id::Cos),
        unary("Cosh", op_id::Cosh),
        unary("Sin", op_id::Sin),
        unary("Sinh", op_id::Sinh),
        unary("Tan", op_id::Tan),
        unary("Round", op_id::Round),
        unary("Sign", op_id::Sign),
        unary("BitwiseNot", op_id::BitwiseNot),
        make("IsInf", op_id::IsInf, 1, 1, 1, 1, 0, 0, 0, r::boolean),
        make("IsNaN", op_id::IsNaN, 1, 1, 1, 1, 0, 0, 0, r::boolean),
        binary("Mod", op_id::Mod),
        binary("BitShift", op_id::BitShift),
        binary("BitwiseAnd", op_id::BitwiseAnd),
        binary("BitwiseOr", op_id::BitwiseOr),
        binary("BitwiseXor", op_id::BitwiseXor),
        compare("LessOrEqual", op_id::LessOrEqual),
        compare("GreaterOrEqual", op_id::GreaterOrEqual),
        compare("And", op_id::And),
        compare("Or", op_id::Or),
        compare("Xor", op_id::Xor),
        // Activations.
        unary("Selu", op_id::Selu),
        unary("Celu", op_id::Celu),
        unary("Softsign", op_id::Softsign),
        unary("Mish", op_id::Mish),
        unary("ThresholdedRelu", op_id::ThresholdedRelu),
        unary("Shrink", op_id::Shrink),
        unary("Hardmax", op_id::Hardmax),
        // Only the element type of input 1 is read.
        make("CastLike", op_id::CastLike, 2, 2, 1, 1, bit(1), 0, 0, r::like_input, 1),
        // Reductions and index-returning reductions.
        with_axes("ReduceL1", op_id::ReduceL1),
        with_axes("ReduceL2", op_id::ReduceL2),
        with_axes("ReduceLogSum", op_id::ReduceLogSum),
        with_axes("ReduceLogSumExp", op_id::ReduceLogSumExp),
        with_axes("ReduceProd", op_id::ReduceProd),
        with_axes("ReduceSumSquare", op_id::ReduceSumSquare),
        make("ArgMax", op_id::ArgMax, 1, 1, 1, 1, 0, 0, 0, r::int64),
        make("ArgMin", op_id::ArgMin, 1, 1, 1, 1, 0, 0, 0, r::int64),
        make("TopK", op_id::TopK, 1, 2, 2, 2, bit(1), bit(1)),
        make("CumSum", op_id::CumSum, 2, 2, 1, 1, bit(1), bit(1)),
        // Size reads only the metadata of its input; NonZero reads the data.
        make("Size", op_id::Size, 1, 1, 1, 1, bit(0), 0, 0, r::int64),
        make("NonZero", op_id::NonZero, 1, 1, 1, 1, 0, 0, 0, r::int64),
        // Contractions and normalizations.
        make("Einsum", op_id::Einsum, 1, any_count, 1, 1, 0, 0, all_inputs),
        make("InstanceNormalization", op_id::InstanceNormalization, 3, 3, 1, 1, 0, 0,
             bit(0) | bit(1) | bit(2)),
        make("GroupNormalization", op_id::GroupNormalization, 3, 3, 1, 1, 0, 0,
             bit(0) | bit(1) | bit(2)),
        unary("LpNormalization", op_id::LpNormalization),
        unary("MeanVarianceNormalization", op_id::MeanVarianceNormalization),
        unary("LRN", op_id::LRN),
        unary("LpPool", op_id::LpPool),
        unary("GlobalLpPool", op_id::GlobalLpPool),
        // Resampling: roi, scales and sizes steer the op.
        make("Resize", op_id::Resize, 1, 4, 1, 1, bit(1) | bit(2) | bit(3), bit(3)),
        make("Upsample", op_id::Upsample, 1, 2, 1, 1, bit(1)),
        // Indexing and layout.
        make("GatherElements", op_id::GatherElements, 2, 2, 1, 1, 0, bit(1)),
        make("GatherND", op_id::GatherND, 2, 2, 1, 1, 0, bit(1)),
        make("ScatterElements", op_id::ScatterElements, 3, 3, 1, 1, 0, bit(1), bit(0) | bit(2)),
        make("ScatterND", op_id::ScatterND, 3, 3, 1, 1, 0, bit(1), bit(0) | bit(2)),
        // depth steers the op; the output takes the type of `values`.
        make("OneHot", op_id::OneHot, 3, 3, 1, 1, bit(1), 0, 0, r::like_input, 2),
        unary("DepthToSpace", op_id::DepthToSpace),
        unary("SpaceToDepth", op_id::SpaceToDepth),
        make("Trilu", op_id::Trilu, 1, 2, 1, 1, bit(1), bit(1)),
        make("ReverseSequence", op_id::ReverseSequence, 2, 2, 1, 1, 0, bit(1)),
        make("EyeLike", op_id::EyeLike, 1, 1, 1, 1, bit(0), 0, 0, r::dtype_attr),
        // Quantized ops: scales and zero points are small parameters of their own types.
        make("MatMulInteger", op_id::MatMulInteger, 2, 4, 1, 1, 0, 0, 0, r::int32),
        make("ConvInteger", op_id::ConvInteger, 2, 4, 1, 1, 0, 0, 0, r::int32),
        make("QLinearMatMul", op_id::QLinearMatMul, 8, 8, 1, 1, 0, 0, 0, r::like_input, 7),
        make("QLinearConv", op_id::QLinearConv, 8, 9, 1, 1, 0, 0, 0, r::like_input, 7),
        make("QuantizeLinear", op_id::QuantizeLinear, 2, 3, 1, 1, 0, 0, 0, r::quantized, 2),
        make("DequantizeLinear", op_id::DequantizeLinear, 2, 3, 1, 1, 0, 0, 0, r::like_input, 1),
        make("DynamicQuantizeLinear", op_id::DynamicQuantizeLinear, 1, 1, 3, 3, 0, 0, 0, r::uint8),
        // Spatial transforms (opset 18-20).
        make("Col2Im", op_id::Col2Im, 3, 3, 1, 1, bit(1) | bit(2), bit(1) | bit(2)),
        make("CenterCropPad", op_id::CenterCropPad, 2, 2, 1, 1, bit(1), bit(1)),
        make("DeformConv", op_id::DeformConv, 3, 5, 1, 1, 0, 0,
             bit(0) | bit(1) | bit(2) | bit(3) | bit(4)),
        // theta and size; the grid takes theta's type.
        make("AffineGrid", op_id::AffineGrid, 2, 2, 1, 1, bit(1), bit(1)),
        make("GridSample", op_id::GridSample, 2, 2),
        // dft_length and (DFT-20) axis steer the op.
        make("DFT", op_id::DFT, 1, 3, 1, 1, bit(1) | bit(2), bit(1) | bit(2)),
    };
    std::sort(t.begin(), t.end(),
              [](const op_info& a, const op_info& b) { return a.name < b.name; });
    for (op_info& op : t) {
        const version_entry* e = nullptr;
        for (const version_entry& v : version_table)
            if (v.name == op.name) e = &v;
        // A known op without versions is a bug in this file; the unit tests build the table.
        if (!e) throw std::logic_error("op '" + std::string(op.name) + "' has no version entry");
        op.since = e->since;
        op.removed_in = e->removed_in;
    }
    return t;
}

bool in_mask(uint32_t mask, size_t slot) {
    if (mask == all_inputs) return true;
    return slot < 32 && ((mask >> slot) & 1u) != 0;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

const std::vector<op_info>& op_table() {
    static const std::vector<op_info> table = build_table();
    return table;
}

const op_info* find_op(std::string_view op_type, std::string_view domain) noexcept {
    if (domain == host_domain) {
        // Version 1 whatever opset the model imports: the domain has one version.
        const auto version_1 = [](op_info op) {
            op.since = {1};
            return op;
        };
        static const op_info host_ops[] = {
            version_1(unary("AdaptiveAveragePool", op_id::AdaptiveAveragePool)),
            version_1(unary("AdaptiveMaxPool", op_id::AdaptiveMaxPool)),
        };
        for (const op_info& op : host_ops)
            if (op.name == op_type) return &op;
        return nullptr;
    }
    if (!domain.empty() && domain != "ai.onnx") return nullptr;
    static const std::unordered_map<std::string_view, const op_info*> index = [] {
        std::unordered_map<std::string_view, const op_info*> m;
        for (const op_info& op : op_table()) m.emplace(op.name, &op);
        return m;
    }();
    auto it = index.find(op_type);
    return it == index.end() ? nullptr : it->second;
}

uint8_t resolve_version(const op_info& op, int64_t opset) noexcept {
    // Without a declared opset every op is accepted at its newest version, removed ones too.
    if (opset <= 0)
        opset = newest_opset;
    else if (op.removed_in != 0 && opset >= op.removed_in)
        return 0;
    uint8_t v = 0;
    for (uint8_t s : op.since)
        if (s != 0 && s <= opset) v = s;
    return v;
}

std::string versions_string(const op_info& op) {
    std::string s;
    for (uint8_t v : op.since) {
        if (v == 0) continue;
        if (!s.empty()) s += ", ";
        s += std::to_string(v);
    }
    return s;
}

bool is_integer(nnergy_dtype t) noexcept { return sdk::is_integer_dtype(t); }

std::optional<nnergy_dtype> dtype_from_onnx(int64_t onnx_type) noexcept {
    return sdk::dtype_from_onnx(onnx_type);
}

namespace {

void check_arity(const graph& g, uint32_t index, const op_info& op) {
    const node& n = g.nodes[index];
    const auto range = [](uint8_t lo, uint8_t hi) {
        if (hi == any_count) return "at least " + std::to_string(lo);
        if (lo == hi) return std::to_string(lo);
        return std::to_string(lo) + " to " + std::to_string(hi);
    };
    if (n.inputs.size() < op.min_inputs ||
        (op.max_inputs != any_count && n.inputs.size() > op.max_inputs))
        throw error(g.describe_node(index) + ": has " + std::to_string(n.inputs.size()) +
                    " inputs, " + std::string(op.name) + " takes " +
                    range(op.min_inputs, op.max_inputs));
    if (n.outputs.size() < op.min_outputs ||
        (op.max_outputs != any_count && n.outputs.size() > op.max_outputs))
        throw error(g.describe_node(index) + ": has " + std::to_string(n.outputs.size()) +
                    " outputs, " + std::string(op.name) + " yields " +
                    range(op.min_outputs, op.max_outputs));
    // Required operands are the leading ones (all of them for variadic ops); only optional
    // ones may be omitted.
    const size_t required = op.max_inputs == any_count ? n.inputs.size() : op.min_inputs;
    for (size_t i = 0; i < required; ++i)
        if (n.inputs[i] == NNERGY_NO_TENSOR)
            throw error(g.describe_node(index) + ": required input " + std::to_string(i) +
                        " is missing");
    if (op.min_outputs > 0 && n.outputs[0] == NNERGY_NO_TENSOR)
        throw error(g.describe_node(index) + ": its first output is missing");
}

nnergy_dtype stash_type(const graph& g, uint32_t index) {
    const int64_t v = g.nodes[index].attr_int("stash_type").value_or(1);
    auto t = dtype_from_onnx(v);
    if (!t)
        throw error(g.describe_node(index) + ": stash_type " + std::to_string(v) +
                    " is not an ONNX element type nnergy knows");
    return *t;
}

}  // namespace

std::vector<nnergy_dtype> infer_dtypes(const graph& g, std::vector<uint8_t>* versions) {
    std::vector<nnergy_dtype> dt(g.tensors.size());
    if (versions) versions->assign(g.nodes.size(), 0);
    const int64_t opset = g.opset();
    for (size_t t = 0; t < g.tensors.size(); ++t) dt[t] = g.tensors[t].dtype;
    const auto tname = [&](uint32_t t) { return quoted(g.tensors[t].name); };

    for (uint32_t i = 0; i < g.nodes.size(); ++i) {
        const node& n = g.nodes[i];
        const op_info* op = find_op(n.op_type, n.domain);
        if (!op) continue;  // unknown ops keep their declared output types
        if (versions) {
            const uint8_t v = resolve_version(*op, opset);
            if (v == 0) {
                const std::string m = std::to_string(opset);
                if (op->removed_in != 0 && opset >= op->removed_in)
                    throw error(g.describe_node(i) + ": " + std::string(op->name) +
                                " was removed from the default ONNX domain in opset " +
                                std::to_string(op->removed_in) +
                                (op->id == op_id::Upsample ? " (use Resize)" : "") +
                                "; this model imports opset " + m);
                throw error(g.describe_node(i) + ": " + std::string(op->name) +
                            " was introduced in opset " + std::to_string(op->since[0]) +
                            "; this model imports opset " + m);
            }
            (*versions)[i] = v;
        }
        check_arity(g, i, *op);

        nnergy_dtype group = NNERGY_DTYPE_UNDEFINED;
        uint32_t group_tensor = NNERGY_NO_TENSOR;
        for (size_t k = 0; k < n.inputs.size(); ++k) {
            const uint32_t t = n.inputs[k];
            if (t == NNERGY_NO_TENSOR || dt[t] == NNERGY_DTYPE_UNDEFINED) continue;
            if (in_mask(op->integer_inputs, k) && !is_integer(dt[t]))
                throw error(g.describe_node(i) + ": input " + tname(t) + " is " +
                            std::string(dtype_name(dt[t])) + ", but " + std::string(op->name) +
                            " needs integers there (int64 or int32)");
            if (!in_mask(op->same_dtype, k)) continue;
            if (group == NNERGY_DTYPE_UNDEFINED) {
                group = dt[t];
                group_tensor = t;
            } else if (dt[t] != group) {
                throw error(g.describe_node(i) + ": input " + tname(t) + " is " +
                            std::string(dtype_name(dt[t])) + " but input " + tname(group_tensor) +
                            " is " + std::string(dtype_name(group)) + " (" + std::string(op->name) +
                            " needs one element type; insert a Cast to mix them)");
            }
        }
        if ((op->id == op_id::Where || op->id == op_id::Not) &&
            dt[n.inputs[0]] != NNERGY_DTYPE_UNDEFINED && dt[n.inputs[0]] != NNERGY_DTYPE_BOOL)
            throw error(g.describe_node(i) + ": input " + tname(n.inputs[0]) + " is " +
                        std::string(dtype_name(dt[n.inputs[0]])) + ", but " +
                        std::string(op->name) + " needs bool there");

        nnergy_dtype first = NNERGY_DTYPE_UNDEFINED;
        switch (op->rule) {
            case dtype_rule::like_input: {
                const size_t k = op->dtype_from;
                if (k < n.inputs.size() && n.inputs[k] != NNERGY_NO_TENSOR) first = dt[n.inputs[k]];
                if (first == NNERGY_DTYPE_UNDEFINED && in_mask(op->same_dtype, k)) first = group;
                break;
            }
            case dtype_rule::int64:
                first = NNERGY_DTYPE_INT64;
                break;
            case dtype_rule::boolean:
                first = NNERGY_DTYPE_BOOL;
                break;
            case dtype_rule::cast_to: {
                if (auto to = n.attr_int("to")) {
                    auto t = dtype_from_onnx(*to);
                    if (!t)
                        throw error(g.describe_node(i) + ": 'to' = " + std::to_string(*to) +
                                    " is not an ONNX element type nnergy knows");
                    first = *t;
                } else if (const std::string* s = n.attr_string("to")) {
                    auto t = dtype_from_name(*s);
                    if (!t)
                        throw error(g.describe_node(i) + ": 'to' = '" + *s +
                                    "' is not an element type name");
                    first = *t;
                } else {
                    throw error(g.describe_node(i) + ": Cast needs a 'to' attribute");
                }
                break;
            }
            case dtype_rule::constant_attr:
                if (n.attr_int("value_int") || n.attr_ints("value_ints")) {
                    first = NNERGY_DTYPE_INT64;
                } else if (n.find_attribute("value_float") || n.find_attribute("value_floats")) {
                    first = NNERGY_DTYPE_FLOAT32;
                }
                break;
            case dtype_rule::int32:
                first = NNERGY_DTYPE_INT32;
                break;
            case dtype_rule::uint8:
                first = NNERGY_DTYPE_UINT8;
                break;
            case dtype_rule::quantized:
            case dtype_rule::dtype_attr: {
                const size_t k = op->dtype_from;
                if (op->rule == dtype_rule::quantized && k < n.inputs.size() &&
                    n.inputs[k] != NNERGY_NO_TENSOR && dt[n.inputs[k]] != NNERGY_DTYPE_UNDEFINED) {
                    first = dt[n.inputs[k]];
                    break;
                }
                const char* attr = op->rule == dtype_rule::quantized ? "output_dtype" : "dtype";
                const int64_t v = n.attr_int(attr).value_or(0);
                if (v != 0) {
                    auto t = dtype_from_onnx(v);
                    if (!t)
                        throw error(g.describe_node(i) + ": '" + attr + "' = " + std::to_string(v) +
                                    " is not an ONNX element type nnergy knows");
                    first = *t;
                } else {
                    // QuantizeLinear defaults to uint8; EyeLike to its input's type.
                    first =
                        op->rule == dtype_rule::quantized ? NNERGY_DTYPE_UINT8 : dt[n.inputs[0]];
                }
                break;
            }
            case dtype_rule::float_default:
                // An integer fill value ("value": 1) makes an int64 tensor, as its ONNX
                // tensor attribute would.
                first = dt[n.outputs[0]] != NNERGY_DTYPE_UNDEFINED      ? dt[n.outputs[0]]
                        : (n.attr_int("value") || n.attr_ints("value")) ? NNERGY_DTYPE_INT64
                                                                        : NNERGY_DTYPE_FLOAT32;
                break;
        }

        for (size_t k = 0; k < n.outputs.size(); ++k) {
            const uint32_t o = n.outputs[k];
            if (o == NNERGY_NO_TENSOR) continue;
            nnergy_dtype d = first;
            if (k > 0) {
                switch (op->id) {
                    case op_id::MaxPool:
                        d = NNERGY_DTYPE_INT64;  // indices
                        break;
                    case op_id::Dropout:
                        d = NNERGY_DTYPE_BOOL;  // mask
                        break;
                    case op_id::LayerNormalization:
                        d = stash_type(g, i);  // mean and inverse standard deviation
                        break;
                    case op_id::BatchNormalization:
                        d = dt[n.inputs[3]];  // running mean / variance
                        break;
                    case op_id::TopK:
                        d = NNERGY_DTYPE_INT64;  // indices
                        break;
                    case op_id::DynamicQuantizeLinear:  // scale, zero point
                        d = k == 1 ? NNERGY_DTYPE_FLOAT32 : NNERGY_DTYPE_UINT8;
                        break;
                    default:
                        break;
                }
            }
            const nnergy_dtype declared = dt[o];  // still the declared type: one producer
            if (d == NNERGY_DTYPE_UNDEFINED) continue;
            if (declared != NNERGY_DTYPE_UNDEFINED && declared != d)
                throw error(g.describe_node(i) + ": output " + tname(o) + " is declared " +
                            std::string(dtype_name(declared)) + " but " + std::string(op->name) +
                            " yields " + std::string(dtype_name(d)) + " here");
            dt[o] = d;
        }
    }
    return dt;
}

}  // namespace nnergy::detail

namespace nnergy {

bool is_known_op(std::string_view op_type) noexcept {
    return detail::find_op(op_type, {}) != nullptr;
}

std::vector<std::string> known_ops() {
    std::vector<std::string> names;
    for (const detail::op_info& op : detail::op_table()) names.emplace_back(op.name);
    return names;  // the table is sorted by name
}

std::vector<op_versions> known_op_versions() {
    std::vector<op_versions> out;
    for (const detail::op_info& op : detail::op_table()) {
        op_versions v;
        v.name = op.name;
        for (uint8_t s : op.since)
            if (s != 0) v.since.push_back(s);
        v.removed_in = op.removed_in;
        out.push_back(std::move(v));
    }
    return out;
}

}  // namespace nnergy
