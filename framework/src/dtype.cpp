// SPDX-License-Identifier: Apache-2.0
// Element type helpers: sizes, canonical names and the aliases users type on command lines.
#include <array>
#include <cctype>
#include <nnergy/dtype.hpp>
#include <nnergy/framework/graph.hpp>

namespace nnergy {

int dtype_bits(nnergy_dtype t) noexcept { return sdk::dtype_bits(t); }

std::string_view dtype_name(nnergy_dtype t) noexcept { return sdk::dtype_name(t); }

namespace {

struct alias {
    std::string_view name;
    nnergy_dtype type;
};

// Lower-case spellings accepted besides the canonical names: framework names (torch, numpy),
// the short forms of hardware datasheets, and ONNX TensorProto names.
constexpr alias aliases[] = {
    {"fp32", NNERGY_DTYPE_FLOAT32},
    {"f32", NNERGY_DTYPE_FLOAT32},
    {"float", NNERGY_DTYPE_FLOAT32},
    {"single", NNERGY_DTYPE_FLOAT32},
    {"fp16", NNERGY_DTYPE_FLOAT16},
    {"f16", NNERGY_DTYPE_FLOAT16},
    {"half", NNERGY_DTYPE_FLOAT16},
    {"bf16", NNERGY_DTYPE_BFLOAT16},
    {"fp64", NNERGY_DTYPE_FLOAT64},
    {"f64", NNERGY_DTYPE_FLOAT64},
    {"double", NNERGY_DTYPE_FLOAT64},
    {"tf32", NNERGY_DTYPE_TFLOAT32},
    {"fp8", NNERGY_DTYPE_FLOAT8_E4M3},
    {"fp8_e4m3", NNERGY_DTYPE_FLOAT8_E4M3},
    {"e4m3", NNERGY_DTYPE_FLOAT8_E4M3},
    {"float8e4m3fn", NNERGY_DTYPE_FLOAT8_E4M3},
    {"float8_e4m3fn", NNERGY_DTYPE_FLOAT8_E4M3},
    {"fp8_e5m2", NNERGY_DTYPE_FLOAT8_E5M2},
    {"e5m2", NNERGY_DTYPE_FLOAT8_E5M2},
    {"float8e5m2", NNERGY_DTYPE_FLOAT8_E5M2},
    {"i8", NNERGY_DTYPE_INT8},
    {"u8", NNERGY_DTYPE_UINT8},
    {"i16", NNERGY_DTYPE_INT16},
    {"u16", NNERGY_DTYPE_UINT16},
    {"i32", NNERGY_DTYPE_INT32},
    {"u32", NNERGY_DTYPE_UINT32},
    {"i64", NNERGY_DTYPE_INT64},
    {"u64", NNERGY_DTYPE_UINT64},
    {"i4", NNERGY_DTYPE_INT4},
    {"u4", NNERGY_DTYPE_UINT4},
    {"boolean", NNERGY_DTYPE_BOOL},
    {"long", NNERGY_DTYPE_INT64},
    {"int", NNERGY_DTYPE_INT32},
    {"short", NNERGY_DTYPE_INT16},
    {"tensorfloat32", NNERGY_DTYPE_TFLOAT32},
    {"float8", NNERGY_DTYPE_FLOAT8_E4M3},
    {"bfloat", NNERGY_DTYPE_BFLOAT16},
    {"float8_e4m3fnuz", NNERGY_DTYPE_FLOAT8_E4M3},
    {"float8_e5m2fnuz", NNERGY_DTYPE_FLOAT8_E5M2},
    {"float8e4m3fnuz", NNERGY_DTYPE_FLOAT8_E4M3},
    {"float8e5m2fnuz", NNERGY_DTYPE_FLOAT8_E5M2},
    {"char", NNERGY_DTYPE_INT8},
    {"byte", NNERGY_DTYPE_UINT8},
};

}  // namespace

std::optional<nnergy_dtype> dtype_from_name(std::string_view name) noexcept {
    // Case-insensitive, so "FLOAT16" (ONNX) and "Float16" parse as well.
    std::array<char, 32> buf{};
    if (name.empty() || name.size() > buf.size()) return std::nullopt;
    for (size_t i = 0; i < name.size(); ++i)
        buf[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
    const std::string_view lower(buf.data(), name.size());
    if (auto t = sdk::dtype_from_canonical_name(lower); t && *t != NNERGY_DTYPE_STRING) return t;
    for (const alias& a : aliases)
        if (a.name == lower) return a.type;
    return std::nullopt;
}

const std::vector<std::string>& precision_names() {
    static const std::vector<std::string> names{"float32",  "tfloat32",    "float16",
                                                "bfloat16", "float8_e4m3", "float8_e5m2",
                                                "int8",     "int4",        "float64"};
    return names;
}

}  // namespace nnergy
