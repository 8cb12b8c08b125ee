// SPDX-License-Identifier: Apache-2.0
// Reads an ONNX ModelProto into a graph builder (docs/onnx.md).
//
// Initializers are scanned field by field straight from the file: only their name, element type,
// dims and element counts are kept, and weight bytes are skipped, so memory stays bounded by the
// graph structure, not by the size of the weights. Everything else in the file is small and is
// parsed with the ONNX protobuf classes.
#ifndef NNERGY_FRONTENDS_ONNX_READER_HPP
#define NNERGY_FRONTENDS_ONNX_READER_HPP

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <nnergy/plugin.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <nnergy/dtype.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace nnergy::onnx_frontend {

/// Oldest and newest default-domain opsets read. ONNX 1.12 (Debian 12) defines opsets up to 17,
/// but the file format of opsets 18 to 22 is the same: only operator versions changed, and the
/// host implements those from the specification. The oldest, 7, is where the ops the host knows
/// took the semantics it counts.
inline constexpr int64_t min_opset = 7;
inline constexpr int64_t max_opset = 22;
/// Integer initializers with at most this many elements pass their values (shape constants).
inline constexpr uint64_t max_value_elements = 64;

/// A failure with the status code the host should report.
class read_error : public std::runtime_error {
public:
    explicit read_error(const std::string& m, nnergy_status_code c = NNERGY_CODE_INVALID_ARGUMENT)
        : std::runtime_error(m), code_(c) {}
    nnergy_status_code code() const noexcept { return code_; }

private:
    nnergy_status_code code_;
};

// ---- element types ------------------------------------------------------------------------

/// nnergy element type of an ONNX TensorProto.DataType value; UNDEFINED for the ones nnergy has
/// no type for (complex numbers, the float8 "FNUZ" variants) and for unknown values.
inline nnergy_dtype dtype_from_onnx(int32_t t) noexcept {
    return sdk::dtype_from_onnx(t).value_or(NNERGY_DTYPE_UNDEFINED);
}

/// Name of an ONNX data type value, for messages.
inline std::string onnx_type_name(int32_t t) {
    static const char* const names[] = {
        "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",   "INT16",
        "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",  "DOUBLE",
        "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
        "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4"};
    if (t >= 0 && static_cast<std::size_t>(t) < sizeof names / sizeof names[0]) return names[t];
    return "data type " + std::to_string(t);
}

/// Bits per element of raw_data for an ONNX data type; 0 where raw_data is not used (STRING)
/// or the type is unknown.
inline uint64_t raw_bits(int32_t t) noexcept {
    switch (t) {
        case 1:
        case 6:
        case 12:
            return 32;
        case 2:
        case 3:
        case 9:
        case 17:
        case 18:
        case 19:
        case 20:
            return 8;
        case 4:
        case 5:
        case 10:
        case 16:
            return 16;
        case 7:
        case 11:
        case 13:
        case 14:
            return 64;
        case 15:
            return 128;
        case 21:
        case 22:
            return 4;
        default:
            return 0;
    }
}

// ---- initializer summaries ----------------------------------------------------------------

/// Which typed TensorProto field holds the elements of a data type (the field number), and how
/// many entries of it one element takes (complex numbers take two).
struct typed_field {
    int field = 0;
    uint64_t per_element = 1;
};
inline typed_field typed_field_of(int32_t t) noexcept {
    switch (t) {
        case 1:
            return {4, 1};
        case 14:
            return {4, 2};
        case 7:
            return {7, 1};
        case 8:
            return {6, 1};
        case 11:
            return {10, 1};
        case 15:
            return {10, 2};
        case 12:
        case 13:
            return {11, 1};
        case 21:
        case 22:
            return {0, 1};  // packed two per entry: not checked
        default:
            return {5, 1};  // the int32_data family
    }
}

/// What is kept of a tensor: its shape and type, and the values of small integer tensors.
struct tensor_summary {
    std::string name;
    int32_t data_type = 0;
    std::vector<int64_t> dims;
    bool external = false;  ///< data_location EXTERNAL or external_data entries present
    bool has_raw = false;
    uint64_t raw_size = 0;
    /// Entries seen in each typed field (by field number 4, 5, 6, 7, 10, 11).
    std::map<int, uint64_t> typed_counts;
    /// Values of an int32/int64 tensor of at most max_value_elements entries, when present.
    std::vector<int64_t> small_values;
    bool values_complete = false;
};

/// Number of elements, or nullopt when a dim is negative or the product overflows.
inline std::optional<uint64_t> element_count(const std::vector<int64_t>& dims) noexcept {
    uint64_t n = 1;
    for (int64_t d : dims) {
        if (d < 0) return std::nullopt;
        const auto u = static_cast<uint64_t>(d);
        if (u != 0 && n > UINT64_MAX / u) return std::nullopt;
        n *= u;
    }
    return n;
}

inline std::string dims_text(const std::vector<int64_t>& dims) {
    std::string s = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
}

/// Checks that the data embedded in a tensor agrees with its dims; returns what is wrong, or
/// an empty string. A tensor with no embedded data (external, or stripped of its weights) has
/// nothing to check.
inline std::string check_tensor_data(const tensor_summary& t) {
    const std::optional<uint64_t> n = element_count(t.dims);
    if (!n) return "dims " + dims_text(t.dims) + " are negative or too large";
    if (t.external) return {};
    const typed_field tf = typed_field_of(t.data_type);
    for (const auto& [field, count] : t.typed_counts) {
        if (count == 0) continue;
        if (field != tf.field && tf.field != 0)
            return "holds " + onnx_type_name(t.data_type) + " elements in the wrong field (" +
                   std::to_string(field) + ")";
        if (tf.field != 0 && count != *n * tf.per_element)
            return "dims " + dims_text(t.dims) + " mean " + std::to_string(*n) + " elements but " +
                   std::to_string(count / tf.per_element) + " are stored";
    }
    if (t.has_raw) {
        const uint64_t bits = raw_bits(t.data_type);
        if (bits == 0) return "raw_data is not allowed for " + onnx_type_name(t.data_type);
        const uint64_t want = (*n * bits + 7) / 8;
        if (*n > UINT64_MAX / bits || t.raw_size != want)
            return "dims " + dims_text(t.dims) + " of " + onnx_type_name(t.data_type) + " need " +
                   std::to_string(want) + " bytes but raw_data holds " + std::to_string(t.raw_size);
    }
    return {};
}

/// Decodes little-endian int32/int64 raw bytes into values.
inline std::vector<int64_t> decode_raw_ints(const std::string& raw, int32_t data_type) {
    std::vector<int64_t> v;
    const std::size_t width = data_type == 7 ? 8 : 4;
    for (std::size_t at = 0; at + width <= raw.size(); at += width) {
        uint64_t u = 0;
        for (std::size_t b = 0; b < width; ++b)
            u |= static_cast<uint64_t>(static_cast<unsigned char>(raw[at + b])) << (8 * b);
        v.push_back(width == 8 ? static_cast<int64_t>(u)
                               : static_cast<int64_t>(
                                     static_cast<int32_t>(static_cast<uint32_t>(u & 0xFFFFFFFFu))));
    }
    return v;
}

/// The value of a one-element tensor attribute (ConstantOfShape's fill value), when it is an
/// integer or a float32/float64 nnergy can read; nullopt otherwise.
inline std::optional<std::variant<int64_t, double>> scalar_value(const onnx::TensorProto& t) {
    for (int64_t d : t.dims())
        if (d != 1) return std::nullopt;
    const std::string& raw = t.raw_data();
    auto raw_unsigned = [&](std::size_t width) -> std::optional<uint64_t> {
        if (raw.size() != width) return std::nullopt;
        uint64_t u = 0;
        for (std::size_t b = 0; b < width; ++b)
            u |= static_cast<uint64_t>(static_cast<unsigned char>(raw[b])) << (8 * b);
        return u;
    };
    switch (t.data_type()) {
        case onnx::TensorProto::INT64:
            if (t.has_raw_data()) {
                if (auto u = raw_unsigned(8)) return static_cast<int64_t>(*u);
                return std::nullopt;
            }
            if (t.int64_data_size() == 1) return static_cast<int64_t>(t.int64_data(0));
            return std::nullopt;
        case onnx::TensorProto::INT32:
        case onnx::TensorProto::INT16:
        case onnx::TensorProto::INT8:
        case onnx::TensorProto::UINT16:
        case onnx::TensorProto::UINT8:
        case onnx::TensorProto::BOOL: {
            const int32_t type = t.data_type();
            const std::size_t width =
                type == onnx::TensorProto::INT32                                        ? 4
                : type == onnx::TensorProto::INT16 || type == onnx::TensorProto::UINT16 ? 2
                                                                                        : 1;
            if (t.has_raw_data()) {
                auto u = raw_unsigned(width);
                if (!u) return std::nullopt;
                const bool is_signed = type == onnx::TensorProto::INT32 ||
                                       type == onnx::TensorProto::INT16 ||
                                       type == onnx::TensorProto::INT8;
                const int shift = static_cast<int>(64 - 8 * width);
                return is_signed ? static_cast<int64_t>(*u << shift) >> shift
                                 : static_cast<int64_t>(*u);
            }
            if (t.int32_data_size() == 1) return static_cast<int64_t>(t.int32_data(0));
            return std::nullopt;
        }
        case onnx::TensorProto::FLOAT:
            if (t.has_raw_data()) {
                auto u = raw_unsigned(4);
                if (!u) return std::nullopt;
                float f;
                const auto bits = static_cast<uint32_t>(*u);
                std::memcpy(&f, &bits, sizeof f);
                return static_cast<double>(f);
            }
            if (t.float_data_size() == 1) return static_cast<double>(t.float_data(0));
            return std::nullopt;
        case onnx::TensorProto::DOUBLE:
            if (t.has_raw_data()) {
                auto u = raw_unsigned(8);
                if (!u) return std::nullopt;
                double f;
                std::memcpy(&f, &*u, sizeof f);
                return f;
            }
            if (t.double_data_size() == 1) return t.double_data(0);
            return std::nullopt;
        default:
            return std::nullopt;
    }
}

/// Summary of a parsed TensorProto (Constant `value` attributes; these are small).
inline tensor_summary summarize(const onnx::TensorProto& t) {
    tensor_summary s;
    s.name = t.name();
    s.data_type = t.data_type();
    s.dims.assign(t.dims().begin(), t.dims().end());
    s.external = t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0;
    s.has_raw = t.has_raw_data();
    s.raw_size = t.raw_data().size();
    s.typed_counts[4] = static_cast<uint64_t>(t.float_data_size());
    s.typed_counts[5] = static_cast<uint64_t>(t.int32_data_size());
    s.typed_counts[6] = static_cast<uint64_t>(t.string_data_size());
    s.typed_counts[7] = static_cast<uint64_t>(t.int64_data_size());
    s.typed_counts[10] = static_cast<uint64_t>(t.double_data_size());
    s.typed_counts[11] = static_cast<uint64_t>(t.uint64_data_size());
    if (s.data_type == 6 || s.data_type == 7) {
        std::vector<int64_t> v;
        if (s.has_raw)
            v = decode_raw_ints(t.raw_data(), s.data_type);
        else if (s.data_type == 7)
            v.assign(t.int64_data().begin(), t.int64_data().end());
        else
            v.assign(t.int32_data().begin(), t.int32_data().end());
        if (v.size() <= max_value_elements) {
            s.small_values = std::move(v);
            s.values_complete = true;
        }
    }
    return s;
}

// ---- streaming protobuf reading -------------------------------------------------------------

namespace detail {

namespace pio = google::protobuf::io;

enum wire : uint32_t {
    varint = 0,
    fixed64 = 1,
    length = 2,
    group_start = 3,
    group_end = 4,
    fixed32 = 5
};

/// Reading position and the failure messages of one file.
struct stream {
    pio::CodedInputStream& in;
    std::string file;
    uint64_t file_size;

    uint64_t remaining() const {
        const auto pos = static_cast<uint64_t>(in.CurrentPosition());
        return pos < file_size ? file_size - pos : 0;
    }
    [[noreturn]] void truncated(std::string_view where) const {
        throw read_error(file + ": truncated ONNX file: it ends inside " + std::string(where) +
                         " (at byte " + std::to_string(in.CurrentPosition()) + " of " +
                         std::to_string(file_size) + ")");
    }
    [[noreturn]] void invalid(std::string_view where) const {
        throw read_error(file + ": not an ONNX model: invalid protobuf data in " +
                         std::string(where) + " at byte " + std::to_string(in.CurrentPosition()));
    }
    /// A length prefix, checked against what is left of the file and of the enclosing message.
    uint32_t length_prefix(std::string_view where) {
        uint32_t n = 0;
        if (!in.ReadVarint32(&n)) {
            if (remaining() == 0) truncated(where);
            invalid(where);
        }
        if (n > remaining())
            throw read_error(file + ": truncated ONNX file: " + std::string(where) + " (" +
                             std::to_string(n) + " bytes from byte " +
                             std::to_string(in.CurrentPosition()) + ") runs past its end (" +
                             std::to_string(file_size) + " bytes)");
        if (static_cast<int64_t>(n) > in.BytesUntilLimit() && in.BytesUntilLimit() >= 0)
            invalid(where);
        return n;
    }
    void skip(uint32_t n, std::string_view where) {
        if (!in.Skip(static_cast<int>(n))) truncated(where);
    }
    uint64_t read_varint(std::string_view where) {
        uint64_t v = 0;
        if (!in.ReadVarint64(&v)) {
            if (remaining() == 0) truncated(where);
            invalid(where);
        }
        return v;
    }
    /// Copies one field (tag already read) into `out`, for the generated parser to read later.
    void copy_field(uint32_t tag, pio::CodedOutputStream& out, std::string_view where) {
        out.WriteVarint32(tag);
        switch (tag & 7u) {
            case varint:
                out.WriteVarint64(read_varint(where));
                return;
            case fixed64: {
                uint64_t v = 0;
                if (!in.ReadLittleEndian64(&v)) truncated(where);
                out.WriteLittleEndian64(v);
                return;
            }
            case fixed32: {
                uint32_t v = 0;
                if (!in.ReadLittleEndian32(&v)) truncated(where);
                out.WriteLittleEndian32(v);
                return;
            }
            case length: {
                const uint32_t n = length_prefix(where);
                std::string bytes;
                if (!in.ReadString(&bytes, static_cast<int>(n))) truncated(where);
                out.WriteVarint32(n);
                out.WriteString(bytes);
                return;
            }
            default:
                invalid(where);
        }
    }
    /// Skips one field (tag already read).
    void skip_field(uint32_t tag, std::string_view where) {
        switch (tag & 7u) {
            case varint:
                read_varint(where);
                return;
            case fixed64:
                skip(8, where);
                return;
            case fixed32:
                skip(4, where);
                return;
            case length:
                skip(length_prefix(where), where);
                return;
            default:
                invalid(where);
        }
    }
    /// Reads tags of the current message until its end; false at the end. A tag of 0 before the
    /// end of the file or message is corrupt data.
    bool next_tag(uint32_t& tag, std::string_view where) {
        tag = in.ReadTag();
        if (tag != 0) return true;
        if (in.BytesUntilLimit() > 0 && remaining() == 0) truncated(where);
        if (in.BytesUntilLimit() == -1 ? remaining() != 0 : in.BytesUntilLimit() != 0)
            invalid(where);
        return false;
    }
};

/// Reads a repeated scalar field, packed or not, counting its entries and calling `value` with
/// each integer (varint fields) while `want_values` holds.
template <class F>
uint64_t read_repeated(stream& s, uint32_t tag, bool is_varint, uint32_t fixed_width,
                       std::string_view where, F&& value) {
    const uint32_t wt = tag & 7u;
    if (wt == length) {
        const uint32_t n = s.length_prefix(where);
        if (!is_varint) {
            if (n % fixed_width != 0) s.invalid(where);
            s.skip(n, where);
            return n / fixed_width;
        }
        const int limit = s.in.PushLimit(static_cast<int>(n));
        uint64_t count = 0;
        while (s.in.BytesUntilLimit() > 0) {
            value(s.read_varint(where));
            ++count;
        }
        s.in.PopLimit(limit);
        return count;
    }
    if (is_varint && wt == varint) {
        value(s.read_varint(where));
        return 1;
    }
    if (!is_varint &&
        ((fixed_width == 4 && wt == fixed32) || (fixed_width == 8 && wt == fixed64))) {
        s.skip(fixed_width, where);
        return 1;
    }
    s.invalid(where);
}

/// Scans one TensorProto (the stream limited to it) without keeping its data.
inline tensor_summary scan_tensor(stream& s, std::size_t index) {
    tensor_summary t;
    std::vector<int64_t> ints;  // int32_data / int64_data values, kept while few
    bool too_many = false;
    std::string raw_small;
    const std::string where = "initializer " + std::to_string(index);
    auto keep = [&](int64_t v) {
        if (ints.size() < max_value_elements)
            ints.push_back(v);
        else
            too_many = true;
    };
    uint32_t tag = 0;
    while (s.next_tag(tag, where)) {
        const uint32_t field = tag >> 3;
        switch (field) {
            case 1:  // dims
                read_repeated(s, tag, true, 0, where,
                              [&](uint64_t v) { t.dims.push_back(static_cast<int64_t>(v)); });
                break;
            case 2:  // data_type
                if ((tag & 7u) != varint) s.invalid(where);
                t.data_type = static_cast<int32_t>(s.read_varint(where));
                break;
            case 4:
                t.typed_counts[4] += read_repeated(s, tag, false, 4, where, [](uint64_t) {});
                break;
            case 10:
                t.typed_counts[10] += read_repeated(s, tag, false, 8, where, [](uint64_t) {});
                break;
            case 5:  // int32_data: int32 values are stored sign-extended as 64-bit varints
                t.typed_counts[5] += read_repeated(s, tag, true, 0, where, [&](uint64_t v) {
                    keep(static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v))));
                });
                break;
            case 7:
                t.typed_counts[7] += read_repeated(
                    s, tag, true, 0, where, [&](uint64_t v) { keep(static_cast<int64_t>(v)); });
                break;
            case 11:
                t.typed_counts[11] += read_repeated(s, tag, true, 0, where, [](uint64_t) {});
                break;
            case 6:  // string_data
                if ((tag & 7u) != length) s.invalid(where);
                s.skip(s.length_prefix(where), where);
                ++t.typed_counts[6];
                break;
            case 8: {  // name
                if ((tag & 7u) != length) s.invalid(where);
                const uint32_t n = s.length_prefix(where);
                if (!s.in.ReadString(&t.name, static_cast<int>(n))) s.truncated(where);
                break;
            }
            case 9: {  // raw_data: only a small one is read, for shape constants
                if ((tag & 7u) != length) s.invalid(where);
                const uint32_t n = s.length_prefix(where);
                t.has_raw = true;
                t.raw_size = n;
                if (n <= max_value_elements * 8) {
                    if (!s.in.ReadString(&raw_small, static_cast<int>(n))) s.truncated(where);
                } else {
                    raw_small.clear();
                    s.skip(n, where);
                }
                break;
            }
            case 13:  // external_data
                t.external = true;
                s.skip_field(tag, where);
                break;
            case 14:  // data_location
                if ((tag & 7u) != varint) s.invalid(where);
                if (s.read_varint(where) == 1) t.external = true;
                break;
            default:
                s.skip_field(tag, where);
        }
    }
    if (t.data_type == 6 || t.data_type == 7) {
        if (t.has_raw && t.raw_size <= max_value_elements * 8) {
            t.small_values = decode_raw_ints(raw_small, t.data_type);
            t.values_complete = true;
        } else if (!t.has_raw && !too_many) {
            t.small_values = std::move(ints);
            t.values_complete = true;
        }
    }
    return t;
}

}  // namespace detail

/// A model as read: every part except the initializers' data.
struct model_data {
    onnx::ModelProto model;  ///< without its graph
    onnx::GraphProto graph;  ///< without its initializers
    std::vector<tensor_summary> initializers;
    bool has_graph = false;
};

/// Reads a model from a stream over a file of `file_size` bytes. `file` names it in messages.
inline model_data read_model(google::protobuf::io::ZeroCopyInputStream& raw, uint64_t file_size,
                             const std::string& file) {
    namespace pio = google::protobuf::io;
    if (file_size > static_cast<uint64_t>(INT_MAX))
        throw read_error(file + ": " + std::to_string(file_size) +
                         " bytes is more than the 2 GiB a protobuf file can hold (ONNX keeps "
                         "larger weights in external data files)");
    pio::CodedInputStream in(&raw);
    in.SetTotalBytesLimit(INT_MAX);
    detail::stream s{in, file, file_size};
    model_data m;
    std::string model_rest, graph_rest;
    {
        pio::StringOutputStream model_sink(&model_rest);
        pio::CodedOutputStream model_out(&model_sink);
        uint32_t tag = 0;
        while (s.next_tag(tag, "the model")) {
            if ((tag >> 3) != 7) {
                s.copy_field(tag, model_out, "the model");
                continue;
            }
            if ((tag & 7u) != detail::length) s.invalid("the model");
            if (m.has_graph) s.invalid("the model (a second graph)");
            m.has_graph = true;
            const uint32_t n = s.length_prefix("the graph");
            const int limit = in.PushLimit(static_cast<int>(n));
            pio::StringOutputStream graph_sink(&graph_rest);
            pio::CodedOutputStream graph_out(&graph_sink);
            uint32_t gtag = 0;
            while (s.next_tag(gtag, "the graph")) {
                if ((gtag >> 3) == 5 && (gtag & 7u) == detail::length) {
                    const std::size_t index = m.initializers.size();
                    const uint32_t len = s.length_prefix("initializer " + std::to_string(index));
                    const int tl = in.PushLimit(static_cast<int>(len));
                    m.initializers.push_back(detail::scan_tensor(s, index));
                    in.PopLimit(tl);
                } else {
                    s.copy_field(gtag, graph_out, "the graph");
                }
            }
            in.PopLimit(limit);
        }
    }
    if (static_cast<uint64_t>(in.CurrentPosition()) != file_size) s.invalid("the model");
    if (!m.model.ParseFromString(model_rest) ||
        (m.has_graph && !m.graph.ParseFromString(graph_rest)))
        throw read_error(file + ": not an ONNX model: its fields do not match onnx.ModelProto");
    if (!m.model.has_ir_version() || !m.has_graph)
        throw read_error(file + ": not an ONNX model: no " +
                         std::string(m.model.has_ir_version() ? "graph" : "ir_version") +
                         " field (is it a different protobuf message?)");
    return m;
}

/// Reads a model file.
inline model_data read_model_file(const std::string& file) {
    std::error_code ec;
    const auto st = std::filesystem::status(file, ec);
    if (ec || !std::filesystem::exists(st))
        throw read_error(file + ": no such file", NNERGY_CODE_NOT_FOUND);
    if (std::filesystem::is_directory(st))
        throw read_error(file + ": is a directory, not an ONNX file");
    const std::uintmax_t size = std::filesystem::file_size(file, ec);
    if (ec)
        throw read_error(file + ": cannot read its size: " + ec.message(), NNERGY_CODE_IO_ERROR);
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw read_error(file + ": cannot open: " + std::strerror(errno), NNERGY_CODE_IO_ERROR);
    google::protobuf::io::FileInputStream raw(fd);
    raw.SetCloseOnDelete(true);
    model_data m = read_model(raw, size, file);
    if (raw.GetErrno() != 0)
        throw read_error(file + ": read error: " + std::strerror(raw.GetErrno()),
                         NNERGY_CODE_IO_ERROR);
    return m;
}

// ---- building the graph ---------------------------------------------------------------------

/// "" for the default ONNX domain, whichever way it is spelled.
inline std::string_view normalize_domain(std::string_view d) noexcept {
    return d == "ai.onnx" ? std::string_view() : d;
}

inline std::string quote_name(std::string_view s) { return "'" + std::string(s) + "'"; }

// ---- model-local functions ------------------------------------------------------------------

/// Most nodes (and function calls) that inlining the model's functions may produce: a chain of
/// functions that each call the next twice doubles the graph at every level, and a file of a
/// few kilobytes could otherwise ask for billions of nodes.
inline constexpr std::size_t max_inlined_nodes = 250'000;
/// Deepest chain of functions calling functions that is inlined: each level costs stack and
/// lengthens every name inside it, and exporters nest a module path a few levels deep.
inline constexpr std::size_t max_function_depth = 64;

namespace detail {

/// Calls `f` with the bytes of every length-delimited entry of field `number`, whether the
/// linked ONNX classes know the field (newer ONNX) or keep it among the unknown fields (ONNX
/// 1.12 predates FunctionProto.attribute_proto, value_info and overload, NodeProto.overload).
template <class F>
void for_each_extra_field(const google::protobuf::Message& m, int number, F&& f) {
    const auto* field = m.GetDescriptor()->FindFieldByNumber(number);
    const auto* reflection = m.GetReflection();
    if (field) {
        if (field->is_repeated()) {
            for (int i = 0; i < reflection->FieldSize(m, field); ++i)
                f(field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE
                      ? reflection->GetRepeatedMessage(m, field, i).SerializeAsString()
                      : reflection->GetRepeatedString(m, field, i));
        } else if (reflection->HasField(m, field)) {
            f(reflection->GetString(m, field));
        }
        return;
    }
    const google::protobuf::UnknownFieldSet& unknown = reflection->GetUnknownFields(m);
    for (int i = 0; i < unknown.field_count(); ++i) {
        const google::protobuf::UnknownField& u = unknown.field(i);
        if (u.number() == number &&
            u.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
            f(u.length_delimited());
    }
}

/// The last value of a string field that the linked ONNX classes may not know.
inline std::string extra_string(const google::protobuf::Message& m, int number) {
    std::string s;
    for_each_extra_field(m, number, [&](const std::string& v) { s = v; });
    return s;
}

}  // namespace detail

/// FunctionProto.overload and NodeProto.overload (IR 10).
inline std::string function_overload(const onnx::FunctionProto& f) {
    return detail::extra_string(f, 13);
}
inline std::string node_overload(const onnx::NodeProto& n) { return detail::extra_string(n, 8); }

/// "domain::name" or "domain::name:overload", for messages.
inline std::string function_label(std::string_view domain, std::string_view name,
                                  std::string_view overload) {
    std::string s = std::string(domain.empty() ? "ai.onnx" : domain) + "::" + std::string(name);
    if (!overload.empty()) s += ":" + std::string(overload);
    return s;
}

/// The graph's nodes with every call of a model-local function replaced by the function's body.
struct inlined_graph {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    /// Declared types of the tensors inside function bodies (FunctionProto.value_info, IR 10),
    /// under their names after inlining.
    std::vector<onnx::ValueInfoProto> value_info;
};

/// Expands the model's functions (ModelProto.functions) into the nodes of its graph:
/// formal inputs and outputs become the caller's tensors, every other tensor and every node of
/// a body is prefixed with the calling node's name ("call/inner"), attribute references take
/// the caller's attribute or the function's default (and are omitted when neither is given, as
/// ONNX specifies), and calls inside bodies are expanded in turn. `opset` is the model's
/// default-domain opset, which a function's own import must equal.
class function_inliner {
public:
    function_inliner(const onnx::ModelProto& model, const std::string& file,
                     std::optional<int64_t> opset)
        : file_(file) {
        for (const onnx::FunctionProto& f : model.functions()) {
            const std::string overload = function_overload(f);
            const std::string label =
                function_label(normalize_domain(f.domain()), f.name(), overload);
            if (f.name().empty())
                throw read_error(file + ": a function of domain '" + f.domain() + "' has no name");
            if (!functions_
                     .emplace(key{std::string(normalize_domain(f.domain())), f.name(), overload},
                              &f)
                     .second)
                throw read_error(file + ": function " + quote_name(label) +
                                 " is defined twice (ONNX requires (domain, name, overload) to "
                                 "be unique)");
            domains_.insert(std::string(normalize_domain(f.domain())));
            for (const auto& o : f.opset_import())
                if (normalize_domain(o.domain()).empty() && opset && o.version() != *opset)
                    throw read_error(file + ": function " + quote_name(label) + " imports opset " +
                                     std::to_string(o.version()) +
                                     " of the default ONNX domain but the model imports " +
                                     std::to_string(*opset) +
                                     " (its operators would be read at the model's versions)");
        }
    }

    /// Whether the model holds functions at all.
    bool empty() const noexcept { return functions_.empty(); }

    inlined_graph run(const onnx::GraphProto& g) {
        inlined_graph out;
        out_ = &out;
        // The size of the result is known before anything is copied: a blow-up is refused at
        // once, naming the call that causes it.
        std::size_t total = 0;
        for (int i = 0; i < g.node_size(); ++i) {
            const onnx::NodeProto& n = g.node(i);
            const onnx::FunctionProto* f = find(n);
            const std::size_t size = f ? 1 + expanded_size(*f) : 1;
            total = std::min(total + size, max_inlined_nodes + 1);
            if (total > max_inlined_nodes)
                throw read_error(file_ + ": inlining the model's functions makes more than " +
                                 std::to_string(max_inlined_nodes) + " nodes and calls (at node " +
                                 quote_name(n.name().empty() ? n.op_type() : n.name()) +
                                 (f ? ", a call of " + quote_name(function_label(
                                                           normalize_domain(f->domain()), f->name(),
                                                           function_overload(*f)))
                                    : std::string()) +
                                 "): the functions call each other too often");
        }
        for (int i = 0; i < g.node_size(); ++i) {
            const onnx::NodeProto& n = g.node(i);
            std::string name = n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
            if (const onnx::FunctionProto* f = find(n)) {
                expand(n, name, *f);
                continue;
            }
            check_not_missing(n, name);
            onnx::NodeProto* copy = add_node();
            *copy = n;
            copy->set_name(name);
        }
        out_ = nullptr;
        return out;
    }

private:
    struct key {
        std::string domain, name, overload;
        bool operator<(const key& o) const {
            return std::tie(domain, name, overload) < std::tie(o.domain, o.name, o.overload);
        }
    };

    /// Nodes and calls that one call of `f` expands into, at most max_inlined_nodes + 1. A
    /// recursive call counts as one: expanding it is refused with the function chain.
    std::size_t expanded_size(const onnx::FunctionProto& f) {
        auto known = sizes_.find(&f);
        if (known != sizes_.end()) return known->second;
        sizes_[&f] = 1;  // while in progress: a recursive call
        depths_[&f] = 1;
        std::size_t size = 0, depth = 1;
        // The descent is bounded too: a chain thousands of functions deep would exhaust the stack
        // before its depth is known.
        if (++descent_ > max_function_depth) depth = max_function_depth + 1;
        for (const onnx::NodeProto& b : f.node()) {
            if (depth > max_function_depth) break;
            const onnx::FunctionProto* inner = find(b);
            size = std::min(size + 1 + (inner ? expanded_size(*inner) : 0), max_inlined_nodes + 1);
            if (inner) depth = std::max(depth, depths_[inner] + 1);
        }
        --descent_;
        // The depth is kept per function, so a chain measured in parts is still measured whole.
        if (depth > max_function_depth)
            throw read_error(file_ + ": functions nest more than " +
                             std::to_string(max_function_depth) + " calls deep (function " +
                             quote_name(function_label(normalize_domain(f.domain()), f.name(),
                                                       function_overload(f))) +
                             " calls functions " + std::to_string(depth - 1) + " levels deep)");
        depths_[&f] = depth;
        sizes_[&f] = size;
        return size;
    }

    const onnx::FunctionProto* find(const onnx::NodeProto& n) const {
        if (functions_.empty()) return nullptr;
        auto it = functions_.find(
            key{std::string(normalize_domain(n.domain())), n.op_type(), node_overload(n)});
        return it == functions_.end() ? nullptr : it->second;
    }

    std::string chain_text(const onnx::FunctionProto* last = nullptr) const {
        std::string s;
        for (const onnx::FunctionProto* f : chain_)
            s += (s.empty() ? "" : " -> ") +
                 function_label(normalize_domain(f->domain()), f->name(), function_overload(*f));
        if (last)
            s += (s.empty() ? "" : " -> ") + function_label(normalize_domain(last->domain()),
                                                            last->name(), function_overload(*last));
        return s;
    }
    std::string where(const std::string& node_name, const onnx::NodeProto& n) const {
        std::string s = file_ + ": node " + quote_name(node_name) + " (" +
                        (n.domain().empty() ? "" : n.domain() + ".") + n.op_type();
        if (!chain_.empty()) s += ", in function " + chain_text();
        return s + ")";
    }

    /// A node of a domain that holds the model's functions must name one of them: an exporter's
    /// function domain has no operators of its own, so the node could not be counted.
    void check_not_missing(const onnx::NodeProto& n, const std::string& name) const {
        const std::string_view d = normalize_domain(n.domain());
        if (d.empty() || !domains_.count(std::string(d))) return;
        const std::string overload = node_overload(n);
        throw read_error(where(name, n) + ": domain '" + n.domain() +
                         "' holds the model's functions, but none is named " +
                         quote_name(n.op_type()) +
                         (overload.empty() ? "" : " with overload " + quote_name(overload)) +
                         " (the function body is missing)");
    }

    onnx::NodeProto* add_node() {
        if (++work_ > max_inlined_nodes) throw_too_large();
        return out_->nodes.Add();
    }
    [[noreturn]] void throw_too_large() const {
        throw read_error(file_ + ": inlining the model's functions makes more than " +
                         std::to_string(max_inlined_nodes) + " nodes and calls (function chain " +
                         chain_text() + "): the functions call each other too often");
    }

    /// Replaces `call` (already renamed into its caller's scope, named `call_name`) by the body
    /// of `f`.
    void expand(const onnx::NodeProto& call, const std::string& call_name,
                const onnx::FunctionProto& f) {
        for (const onnx::FunctionProto* c : chain_)
            if (c == &f)
                throw read_error(where(call_name, call) + ": calls function " +
                                 quote_name(function_label(normalize_domain(f.domain()), f.name(),
                                                           function_overload(f))) +
                                 " recursively (function chain " + chain_text(&f) + ")");
        if (++work_ > max_inlined_nodes) throw_too_large();
        const std::string label =
            function_label(normalize_domain(f.domain()), f.name(), function_overload(f));
        if (call.input_size() > f.input_size() || call.output_size() > f.output_size())
            throw read_error(where(call_name, call) + ": calls function " + quote_name(label) +
                             " with " + std::to_string(call.input_size()) + " inputs and " +
                             std::to_string(call.output_size()) + " outputs, but it declares " +
                             std::to_string(f.input_size()) + " and " +
                             std::to_string(f.output_size()));

        // A unique prefix per call site, even where two nodes share a name.
        std::string prefix = call_name;
        for (int k = 2; !prefixes_.insert(prefix).second; ++k)
            prefix = call_name + "#" + std::to_string(k);
        prefix += "/";

        std::map<std::string, std::string, std::less<>> formal;
        for (int i = 0; i < f.input_size(); ++i)
            formal[f.input(i)] = i < call.input_size() ? call.input(i) : std::string();
        for (int i = 0; i < f.output_size(); ++i) {
            // An output the caller omits is still computed inside: it keeps a private name.
            const bool bound = i < call.output_size() && !call.output(i).empty();
            formal[f.output(i)] = bound ? call.output(i) : prefix + f.output(i);
        }
        auto rename = [&](const std::string& t) {
            if (t.empty()) return t;
            auto it = formal.find(t);
            return it != formal.end() ? it->second : prefix + t;
        };

        // Attribute parameters: without a default (attribute) and with one (attribute_proto).
        std::set<std::string, std::less<>> declared(f.attribute().begin(), f.attribute().end());
        std::map<std::string, onnx::AttributeProto, std::less<>> defaults;
        detail::for_each_extra_field(f, 11, [&](const std::string& bytes) {
            onnx::AttributeProto a;
            if (!a.ParseFromString(bytes))
                throw read_error(file_ + ": function " + quote_name(label) +
                                 ": an attribute default is not a valid AttributeProto");
            declared.insert(a.name());
            defaults[a.name()] = std::move(a);
        });

        chain_.push_back(&f);
        for (int j = 0; j < f.node_size(); ++j) {
            const onnx::NodeProto& b = f.node(j);
            // A copy keeps every field (domain, overload) but the ones renamed below.
            onnx::NodeProto n = b;
            n.clear_input();
            n.clear_output();
            n.clear_attribute();
            n.set_name(prefix +
                       (b.name().empty() ? b.op_type() + "_" + std::to_string(j) : b.name()));
            for (const std::string& t : b.input()) n.add_input(rename(t));
            for (const std::string& t : b.output()) n.add_output(rename(t));
            for (const onnx::AttributeProto& a : b.attribute()) {
                if (a.ref_attr_name().empty()) {
                    *n.add_attribute() = a;
                    continue;
                }
                if (!declared.count(a.ref_attr_name()))
                    throw read_error(where(n.name(), b) + ": attribute " + quote_name(a.name()) +
                                     " refers to " + quote_name(a.ref_attr_name()) +
                                     ", which function " + quote_name(label) + " does not declare");
                const onnx::AttributeProto* value = nullptr;
                for (const onnx::AttributeProto& c : call.attribute())
                    if (c.name() == a.ref_attr_name()) value = &c;
                if (!value) {
                    auto d = defaults.find(a.ref_attr_name());
                    if (d != defaults.end()) value = &d->second;
                }
                if (!value) continue;  // neither given nor defaulted: omitted (ONNX IR)
                onnx::AttributeProto* copy = n.add_attribute();
                *copy = *value;
                copy->set_name(a.name());
            }
            if (const onnx::FunctionProto* inner = find(n)) {
                expand(n, n.name(), *inner);
                continue;
            }
            check_not_missing(n, n.name());
            *add_node() = std::move(n);
        }
        // Declared types inside the body; the formal parameters' types are the caller's.
        detail::for_each_extra_field(f, 12, [&](const std::string& bytes) {
            onnx::ValueInfoProto v;
            if (!v.ParseFromString(bytes) || formal.count(v.name())) return;
            v.set_name(prefix + v.name());
            out_->value_info.push_back(std::move(v));
        });
        chain_.pop_back();
    }

    const std::string& file_;
    std::map<key, const onnx::FunctionProto*> functions_;
    std::set<std::string, std::less<>> domains_;
    std::set<std::string, std::less<>> prefixes_;
    std::vector<const onnx::FunctionProto*> chain_;
    inlined_graph* out_ = nullptr;
    std::size_t work_ = 0;
    std::map<const onnx::FunctionProto*, std::size_t> sizes_;
    std::map<const onnx::FunctionProto*, std::size_t> depths_;
    std::size_t descent_ = 0;
};

/// Feeds a model into a builder with the interface of nnergy::sdk::graph_builder. `fallback_name`
/// names a graph without a name; `note` receives one line per part of the model that is skipped.
template <class Builder, class Note>
void build_graph(const model_data& m, const std::string& file, std::string_view fallback_name,
                 Builder& b, Note&& note) {
    using dim_type = typename Builder::dim;
    const onnx::GraphProto& g = m.graph;

    // Opsets first: a newer default domain than supported is refused before anything else.
    std::optional<int64_t> opset;
    std::vector<std::pair<std::string, int64_t>> other_opsets;
    for (const auto& o : m.model.opset_import()) {
        if (normalize_domain(o.domain()).empty())
            opset = o.version();
        else
            other_opsets.emplace_back(o.domain(), o.version());
    }
    if (opset && *opset > max_opset)
        throw read_error(file + ": opset " + std::to_string(*opset) +
                         " of the default ONNX domain is newer than the newest supported (" +
                         std::to_string(max_opset) + ")");
    if (opset && *opset < min_opset)
        throw read_error(file + ": opset " + std::to_string(*opset) +
                         " of the default ONNX domain is older than the oldest supported (" +
                         std::to_string(min_opset) + "; convert the model to a newer opset)");

    // Calls of the model's functions are replaced by their bodies; a file without functions
    // keeps its own node list (no copy).
    inlined_graph inlined;
    const google::protobuf::RepeatedPtrField<onnx::NodeProto>* graph_nodes = &g.node();
    if (m.model.functions_size() > 0) {
        function_inliner inliner(m.model, file, opset);
        inlined = inliner.run(g);
        graph_nodes = &inlined.nodes;
    }
    const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes = *graph_nodes;

    if (!opset) {
        for (const auto& n : nodes)
            if (normalize_domain(n.domain()).empty())
                throw read_error(file +
                                 ": the model imports no opset of the default ONNX domain "
                                 "but its node " +
                                 quote_name(n.name()) + " (" + n.op_type() + ") is of that domain");
    }

    // Every tensor is a graph input, an initializer (dense or sparse) or a node's output: a
    // bound the host sizes its storage by.
    std::size_t tensor_bound = static_cast<std::size_t>(g.input_size()) + m.initializers.size() +
                               static_cast<std::size_t>(g.sparse_initializer_size());
    for (const auto& n : nodes) tensor_bound += static_cast<std::size_t>(n.output_size());
    b.reserve(tensor_bound, static_cast<std::size_t>(nodes.size()));

    b.metadata("name", g.name().empty() ? fallback_name : std::string_view(g.name()));
    if (opset) b.metadata("opset", std::to_string(*opset));
    for (const auto& [d, v] : other_opsets) b.metadata("opset." + d, std::to_string(v));
    b.metadata("ir_version", std::to_string(m.model.ir_version()));
    if (!m.model.producer_name().empty()) b.metadata("producer", m.model.producer_name());
    if (!m.model.producer_version().empty())
        b.metadata("producer_version", m.model.producer_version());

    // Declared types: graph inputs and outputs first, then value_info.
    // Hashed: exporters' tensor names share long prefixes ("/encoder/layers/..."), which
    // ordered maps compare again and again.
    std::unordered_map<std::string, const onnx::TypeProto*> declared;
    declared.reserve(
        static_cast<std::size_t>(g.input_size() + g.output_size() + g.value_info_size()) +
        inlined.value_info.size());
    for (const auto& v : g.input()) declared.emplace(v.name(), &v.type());
    for (const auto& v : g.output()) declared.emplace(v.name(), &v.type());
    for (const auto& v : g.value_info()) declared.emplace(v.name(), &v.type());
    for (const auto& v : inlined.value_info) declared.emplace(v.name(), &v.type());

    auto shape_of = [](const onnx::TypeProto& t) {
        std::optional<std::vector<dim_type>> shape;
        if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return shape;
        shape.emplace();
        for (const auto& d : t.tensor_type().shape().dim()) {
            dim_type x;
            if (d.has_dim_value() && d.dim_value() >= 0)
                x.value = d.dim_value();
            else if (d.has_dim_param() && !d.dim_param().empty())
                x.symbol = d.dim_param();
            shape->push_back(std::move(x));
        }
        return shape;
    };
    auto dtype_checked = [&](int32_t t, std::string_view what, std::string_view name) {
        const nnergy_dtype d = dtype_from_onnx(t);
        if (d == NNERGY_DTYPE_UNDEFINED && t != 0)
            throw read_error(file + ": " + std::string(what) + " " + quote_name(name) +
                             ": element type " + onnx_type_name(t) + " is not supported");
        return d;
    };

    std::unordered_map<std::string, uint32_t> ids;
    ids.reserve(m.initializers.size() + static_cast<std::size_t>(g.input_size()) +
                2 * static_cast<std::size_t>(nodes.size()));
    auto add_declared = [&](const std::string& name, std::string_view what,
                            nnergy_dtype d = NNERGY_DTYPE_UNDEFINED) {
        auto it = declared.find(name);
        std::optional<std::vector<dim_type>> shape;
        if (it != declared.end() && it->second->has_tensor_type()) {
            d = dtype_checked(it->second->tensor_type().elem_type(), what, name);
            shape = shape_of(*it->second);
        }
        const uint32_t id = b.add_tensor(name, d, shape);
        ids.emplace(name, id);
        return id;
    };
    auto add_constant = [&](const tensor_summary& t, std::string_view what) {
        const std::string problem = check_tensor_data(t);
        if (!problem.empty())
            throw read_error(file + ": " + std::string(what) + " " + quote_name(t.name) + ": " +
                             problem);
        std::vector<dim_type> shape(t.dims.size());
        for (std::size_t i = 0; i < t.dims.size(); ++i) shape[i].value = t.dims[i];
        const uint32_t id =
            b.add_tensor(t.name, dtype_checked(t.data_type, what, t.name), std::optional(shape));
        b.set_initializer(id);
        // A Constant node's value is part of the model's code, not a trained parameter.
        if (what == "constant") b.set_constant(id);
        const std::optional<uint64_t> n = element_count(t.dims);
        if (t.values_complete && n && *n == t.small_values.size() && *n <= max_value_elements)
            b.set_initializer_values(id, t.small_values);
        ids.emplace(t.name, id);
    };

    // Graph inputs, then initializers. Before IR 4 every initializer was also listed as an
    // input: such an input is the initializer, not an input.
    std::unordered_set<std::string> initializer_names;
    for (const tensor_summary& t : m.initializers) initializer_names.insert(t.name);
    for (const auto& s : g.sparse_initializer()) initializer_names.insert(s.values().name());
    for (const auto& v : g.input()) {
        if (initializer_names.count(v.name())) continue;
        if (!v.type().has_tensor_type())
            throw read_error(file + ": graph input " + quote_name(v.name()) +
                             ": only tensor inputs are supported (not sequences, maps or "
                             "optionals)");
        if (ids.count(v.name()))
            throw read_error(file + ": graph input " + quote_name(v.name()) + " is listed twice");
        b.add_input(add_declared(v.name(), "graph input"));
    }
    for (std::size_t i = 0; i < m.initializers.size(); ++i) {
        const tensor_summary& t = m.initializers[i];
        if (t.name.empty())
            throw read_error(file + ": initializer " + std::to_string(i) + " has no name");
        if (ids.count(t.name))
            throw read_error(file + ": initializer " + quote_name(t.name) + " is declared twice");
        add_constant(t, "initializer");
    }
    for (const auto& s : g.sparse_initializer()) {
        tensor_summary t;
        t.name = s.values().name();
        t.data_type = s.values().data_type();
        t.dims.assign(s.dims().begin(), s.dims().end());
        t.external = true;  // the values tensor holds the non-zeros only: nothing to check
        if (ids.count(t.name))
            throw read_error(file + ": sparse initializer " + quote_name(t.name) +
                             " is declared twice");
        add_constant(t, "sparse initializer");
    }

    // Node names (generated where missing), and every tensor a node produces.
    std::vector<std::string> names(static_cast<std::size_t>(nodes.size()));
    std::unordered_set<std::string> produced;
    for (int i = 0; i < nodes.size(); ++i) {
        const auto& n = nodes[i];
        names[static_cast<std::size_t>(i)] =
            n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
        for (const auto& o : n.output())
            if (!o.empty()) produced.insert(o);
    }
    auto node_where = [&](int i) {
        const auto& n = nodes[i];
        return file + ": node " + quote_name(names[static_cast<std::size_t>(i)]) + " (index " +
               std::to_string(i) + ", " + (n.domain().empty() ? "" : n.domain() + ".") +
               n.op_type() + ")";
    };
    for (int i = 0; i < nodes.size(); ++i) {
        for (const auto& in : nodes[i].input()) {
            if (in.empty() || ids.count(in) || produced.count(in)) continue;
            throw read_error(node_where(i) + ": input " + quote_name(in) +
                             " is not a graph input, an initializer or the output of any node");
        }
    }

    // A Constant holding a tensor becomes an initializer: the ABI has no tensor attributes,
    // and an initializer carries the shape (and the values of small integer tensors).
    auto is_tensor_constant = [](const onnx::NodeProto& n) {
        return normalize_domain(n.domain()).empty() && n.op_type() == "Constant" &&
               n.attribute_size() == 1 && n.attribute(0).name() == "value" &&
               n.attribute(0).has_t() && n.output_size() == 1 && !n.output(0).empty();
    };
    // Every node's outputs get their tensors before any node is added, so that a file whose
    // nodes are out of topological order still reads (the host orders them).
    for (int i = 0; i < nodes.size(); ++i) {
        const auto& n = nodes[i];
        try {
            if (is_tensor_constant(n)) {
                tensor_summary t = summarize(n.attribute(0).t());
                t.name = n.output(0);
                if (ids.count(t.name))
                    throw read_error("output " + quote_name(t.name) + " is already declared");
                add_constant(t, "constant");
                continue;
            }
            // ConstantOfShape's output has its fill value's element type (the ONNX rule), which
            // the host cannot see: the ABI has no tensor attributes.
            nnergy_dtype fill_type = NNERGY_DTYPE_UNDEFINED;
            if (normalize_domain(n.domain()).empty() && n.op_type() == "ConstantOfShape")
                for (const auto& a : n.attribute())
                    if (a.name() == "value" && a.has_t())
                        fill_type = dtype_checked(a.t().data_type(), "fill value of", n.name());
            for (const auto& o : n.output())
                if (!o.empty() && !ids.count(o)) add_declared(o, "tensor", fill_type);
        } catch (const read_error& e) {
            throw read_error(node_where(i) + ": " + e.what(), e.code());
        }
    }

    std::vector<uint32_t> inputs, outputs;
    std::vector<std::string> skipped;
    for (int i = 0; i < nodes.size(); ++i) {
        const auto& n = nodes[i];
        if (is_tensor_constant(n)) continue;
        const std::string& name = names[static_cast<std::size_t>(i)];
        try {
            inputs.clear();
            outputs.clear();
            for (const auto& in : n.input())
                inputs.push_back(in.empty() ? NNERGY_NO_TENSOR : ids.at(in));
            for (const auto& o : n.output())
                outputs.push_back(o.empty() ? NNERGY_NO_TENSOR : ids.at(o));
            const uint32_t id =
                b.add_node(name, n.op_type(), normalize_domain(n.domain()), inputs, outputs);
            for (const auto& a : n.attribute()) {
                switch (a.type()) {
                    case onnx::AttributeProto::INT:
                        b.attr(id, a.name(), static_cast<int64_t>(a.i()));
                        break;
                    case onnx::AttributeProto::FLOAT:
                        b.attr(id, a.name(), static_cast<double>(a.f()));
                        break;
                    case onnx::AttributeProto::STRING:
                        b.attr(id, a.name(), std::string_view(a.s()));
                        break;
                    case onnx::AttributeProto::INTS:
                        b.attr(id, a.name(),
                               std::vector<int64_t>(a.ints().begin(), a.ints().end()));
                        break;
                    case onnx::AttributeProto::FLOATS:
                        b.attr(id, a.name(),
                               std::vector<double>(a.floats().begin(), a.floats().end()));
                        break;
                    case onnx::AttributeProto::TENSOR:
                        // A one-element tensor (ConstantOfShape's fill) passes as a number.
                        if (auto v = scalar_value(a.t())) {
                            std::visit([&](auto x) { b.attr(id, a.name(), x); }, *v);
                            break;
                        }
                        [[fallthrough]];
                    default:
                        skipped.push_back(name + "." + a.name() + " (" +
                                          onnx::AttributeProto::AttributeType_Name(a.type()) + ")");
                }
            }
        } catch (const read_error& e) {
            throw read_error(node_where(i) + ": " + e.what(), e.code());
        } catch (const std::exception& e) {
            throw read_error(node_where(i) + ": " + e.what());
        }
    }
    for (const auto& v : g.output()) {
        auto it = ids.find(v.name());
        if (it == ids.end())
            throw read_error(file + ": graph output " + quote_name(v.name()) +
                             " is not produced by any node, not a graph input and not an "
                             "initializer");
        b.add_output(it->second);
    }
    if (!skipped.empty()) {
        std::string list;
        for (const std::string& s : skipped) list += (list.empty() ? "" : ", ") + s;
        b.metadata("onnx.skipped_attributes", list);
        note(
            "attributes not read (tensor, graph and string-list attributes have no place in "
            "the graph; control flow ops are listed as unknown): " +
            list);
    }
}

}  // namespace nnergy::onnx_frontend

#endif  // NNERGY_FRONTENDS_ONNX_READER_HPP
