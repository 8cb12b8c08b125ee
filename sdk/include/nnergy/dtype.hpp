// SPDX-License-Identifier: Apache-2.0
/// \file dtype.hpp
/// \brief Facts about nnergy_dtype values: canonical names, storage bits, integer-ness, and the
/// ONNX TensorProto.DataType numbering. Header-only C++17, shared by the host and plugins so the
/// table exists once.
#ifndef NNERGY_DTYPE_HPP
#define NNERGY_DTYPE_HPP

#include <nnergy/plugin.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace nnergy::sdk {
inline namespace v1 {

struct dtype_info {
    nnergy_dtype dtype;
    std::string_view name;  ///< canonical lower-case name (docs/json-graph.md, pipelines)
    int bits;               ///< storage bits per element; tf32 is stored in 32-bit words
    bool is_integer;
};

/// Every dtype except UNDEFINED, in enum order.
inline constexpr dtype_info k_dtypes[] = {
    {NNERGY_DTYPE_FLOAT32, "float32", 32, false},
    {NNERGY_DTYPE_FLOAT16, "float16", 16, false},
    {NNERGY_DTYPE_BFLOAT16, "bfloat16", 16, false},
    {NNERGY_DTYPE_FLOAT64, "float64", 64, false},
    {NNERGY_DTYPE_INT8, "int8", 8, true},
    {NNERGY_DTYPE_UINT8, "uint8", 8, true},
    {NNERGY_DTYPE_INT16, "int16", 16, true},
    {NNERGY_DTYPE_UINT16, "uint16", 16, true},
    {NNERGY_DTYPE_INT32, "int32", 32, true},
    {NNERGY_DTYPE_UINT32, "uint32", 32, true},
    {NNERGY_DTYPE_INT64, "int64", 64, true},
    {NNERGY_DTYPE_UINT64, "uint64", 64, true},
    {NNERGY_DTYPE_BOOL, "bool", 8, false},  // one byte per element, as ONNX stores it
    {NNERGY_DTYPE_FLOAT8_E4M3, "float8_e4m3", 8, false},
    {NNERGY_DTYPE_FLOAT8_E5M2, "float8_e5m2", 8, false},
    {NNERGY_DTYPE_INT4, "int4", 4, true},
    {NNERGY_DTYPE_UINT4, "uint4", 4, true},
    {NNERGY_DTYPE_TFLOAT32, "tfloat32", 32, false},  // a compute precision, never a tensor type
    {NNERGY_DTYPE_STRING, "string", 0, false},
};

/// The entry of `t`, or null for UNDEFINED and values this header does not know.
constexpr const dtype_info* find_dtype(nnergy_dtype t) noexcept {
    for (const dtype_info& d : k_dtypes)
        if (d.dtype == t) return &d;
    return nullptr;
}

/// Canonical name; "undefined" for UNDEFINED and unknown values.
constexpr std::string_view dtype_name(nnergy_dtype t) noexcept {
    const dtype_info* d = find_dtype(t);
    return d ? d->name : std::string_view("undefined");
}

/// Storage bits per element; 0 for UNDEFINED and string.
constexpr int dtype_bits(nnergy_dtype t) noexcept {
    const dtype_info* d = find_dtype(t);
    return d ? d->bits : 0;
}

constexpr bool is_integer_dtype(nnergy_dtype t) noexcept {
    const dtype_info* d = find_dtype(t);
    return d && d->is_integer;
}

/// The dtype of a canonical name (no aliases).
constexpr std::optional<nnergy_dtype> dtype_from_canonical_name(std::string_view name) noexcept {
    for (const dtype_info& d : k_dtypes)
        if (d.name == name) return d.dtype;
    return std::nullopt;
}

/// The dtype of an ONNX TensorProto.DataType value. The float8 FNUZ variants map to the float8
/// type of the same width: nnergy counts storage and arithmetic, which they share. Complex and
/// unknown values have no dtype.
constexpr std::optional<nnergy_dtype> dtype_from_onnx(int64_t onnx_type) noexcept {
    switch (onnx_type) {
        case 1:
            return NNERGY_DTYPE_FLOAT32;
        case 2:
            return NNERGY_DTYPE_UINT8;
        case 3:
            return NNERGY_DTYPE_INT8;
        case 4:
            return NNERGY_DTYPE_UINT16;
        case 5:
            return NNERGY_DTYPE_INT16;
        case 6:
            return NNERGY_DTYPE_INT32;
        case 7:
            return NNERGY_DTYPE_INT64;
        case 8:
            return NNERGY_DTYPE_STRING;
        case 9:
            return NNERGY_DTYPE_BOOL;
        case 10:
            return NNERGY_DTYPE_FLOAT16;
        case 11:
            return NNERGY_DTYPE_FLOAT64;
        case 12:
            return NNERGY_DTYPE_UINT32;
        case 13:
            return NNERGY_DTYPE_UINT64;
        case 16:
            return NNERGY_DTYPE_BFLOAT16;
        case 17:  // FLOAT8E4M3FN
        case 18:  // FLOAT8E4M3FNUZ
            return NNERGY_DTYPE_FLOAT8_E4M3;
        case 19:  // FLOAT8E5M2
        case 20:  // FLOAT8E5M2FNUZ
            return NNERGY_DTYPE_FLOAT8_E5M2;
        case 21:
            return NNERGY_DTYPE_UINT4;
        case 22:
            return NNERGY_DTYPE_INT4;
        default:
            return std::nullopt;
    }
}

}  // namespace v1
}  // namespace nnergy::sdk

#endif  // NNERGY_DTYPE_HPP
