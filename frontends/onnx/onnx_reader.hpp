// SPDX-License-Identifier: Apache-2.0
// Reads an ONNX ModelProto into a graph builder (docs/onnx.md).
//
// The file is decoded by onnx_proto.hpp. Of the initializers only the name, element type, dims
// and element counts are kept, and the weights of a large file are passed over unread, so memory
// stays bounded by the graph structure, not by the size of the weights.
#ifndef NNERGY_FRONTENDS_ONNX_READER_HPP
#define NNERGY_FRONTENDS_ONNX_READER_HPP

#include <fcntl.h>
#include <nnergy/plugin.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <nnergy/dtype.hpp>
#include <nnergy/reading/file_bytes.hpp>
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

#include "onnx_proto.hpp"

namespace nnergy::onnx_frontend {

/// Oldest and newest default-domain opsets read. ONNX 1.12 (Debian 12) defines opsets up to 17,
/// but the file format of opsets 18 to 22 is the same: only operator versions changed, and the
/// host implements those from the specification. The oldest, 7, is where the ops the host knows
/// took the semantics it counts.
inline constexpr int64_t min_opset = 7;
inline constexpr int64_t max_opset = 22;
/// Integer initializers with at most this many elements pass their values (shape constants).
inline constexpr uint64_t max_value_elements = proto::tensor::max_kept_ints;

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
struct tensor_summary : proto::tensor_header {
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
inline std::optional<std::variant<int64_t, double>> scalar_value(const proto::tensor& t) {
    for (int64_t d : t.dims)
        if (d != 1) return std::nullopt;
    auto raw_unsigned = [&](std::size_t width) -> std::optional<uint64_t> {
        if (t.raw.size() != width || t.raw_size != width) return std::nullopt;
        uint64_t u = 0;
        for (std::size_t b = 0; b < width; ++b)
            u |= static_cast<uint64_t>(static_cast<unsigned char>(t.raw[b])) << (8 * b);
        return u;
    };
    auto count = [&](int field) {
        auto it = t.typed_counts.find(field);
        return it == t.typed_counts.end() ? uint64_t{0} : it->second;
    };
    enum : int32_t { FLOAT = 1, UINT8 = 2, INT8 = 3, UINT16 = 4, INT16 = 5, INT32 = 6, INT64 = 7 };
    enum : int32_t { BOOL = 9, DOUBLE = 11 };
    switch (t.data_type) {
        case INT64:
            if (t.has_raw) {
                if (auto u = raw_unsigned(8)) return static_cast<int64_t>(*u);
                return std::nullopt;
            }
            // int32_data and int64_data share `ints`: only int64_data may hold the value.
            if (count(7) == 1 && count(5) == 0) return t.ints[0];
            return std::nullopt;
        case INT32:
        case INT16:
        case INT8:
        case UINT16:
        case UINT8:
        case BOOL: {
            const int32_t type = t.data_type;
            const std::size_t width = type == INT32 ? 4 : type == INT16 || type == UINT16 ? 2 : 1;
            if (t.has_raw) {
                auto u = raw_unsigned(width);
                if (!u) return std::nullopt;
                const bool is_signed = type == INT32 || type == INT16 || type == INT8;
                const int shift = static_cast<int>(64 - 8 * width);
                return is_signed ? static_cast<int64_t>(*u << shift) >> shift
                                 : static_cast<int64_t>(*u);
            }
            if (count(5) == 1 && count(7) == 0) return t.ints[0];
            return std::nullopt;
        }
        case FLOAT:
            if (t.has_raw) {
                auto u = raw_unsigned(4);
                if (!u) return std::nullopt;
                float f;
                const auto bits = static_cast<uint32_t>(*u);
                std::memcpy(&f, &bits, sizeof f);
                return static_cast<double>(f);
            }
            if (count(4) == 1) return static_cast<double>(t.first_float);
            return std::nullopt;
        case DOUBLE:
            if (t.has_raw) {
                auto u = raw_unsigned(8);
                if (!u) return std::nullopt;
                double f;
                std::memcpy(&f, &*u, sizeof f);
                return f;
            }
            if (count(10) == 1) return t.first_double;
            return std::nullopt;
        default:
            return std::nullopt;
    }
}

/// What is kept of a decoded TensorProto (an initializer, or a Constant's `value`).
inline tensor_summary summarize(const proto::tensor& t) {
    tensor_summary s;
    static_cast<proto::tensor_header&>(s) = t;
    if (s.data_type == 6 || s.data_type == 7) {
        if (t.has_raw && t.raw_size <= proto::tensor::max_kept_raw) {
            s.small_values = decode_raw_ints(t.raw, s.data_type);
            s.values_complete = true;
        } else if (!t.has_raw && t.ints_complete) {
            s.small_values = t.ints;
            s.values_complete = true;
        }
    }
    return s;
}

// ---- reading the file -----------------------------------------------------------------------

namespace detail {

/// A model file's bytes, read on demand: a small file whole (mapped), a large one through a
/// window, so that the weights it embeds are passed over rather than read. (Mapping a large file
/// without populating it cost a page fault per initializer, far more than a read of the same
/// bytes.)
class byte_source {
public:
    /// Bytes already in memory (the caller keeps them).
    explicit byte_source(std::string_view bytes) noexcept : whole_(bytes), size_(bytes.size()) {}
    /// An open file of `size` bytes; `file` names it in messages. Files up to `whole` bytes
    /// are read at once; larger ones through a window of `window` bytes.
    byte_source(int fd, std::size_t size, const std::string& file, std::size_t whole = read_whole,
                std::size_t window = window_bytes)
        : fd_(fd), size_(size), file_(&file), window_bytes_(std::max<std::size_t>(window, 16)) {
        if (size_ <= whole) {
            // Mapped where the system allows: reading copies every byte into fresh memory.
            try {
                owned_.emplace(fd, file);
            } catch (const std::exception& e) {
                throw read_error(e.what(), NNERGY_CODE_IO_ERROR);
            }
            whole_ = owned_->view();
            if (whole_.size() != size_)
                throw read_error(file + ": the file changed size while it was read",
                                 NNERGY_CODE_IO_ERROR);
            fd_ = -1;
        }
    }

    std::size_t size() const noexcept { return size_; }

    uint8_t at(std::size_t pos) {
        if (fd_ < 0) return static_cast<uint8_t>(whole_[pos]);
        if (pos < window_at_ || pos >= window_at_ + window_.size()) {
            window_.resize(std::min(window_bytes_, size_ - pos));
            fill(window_.data(), pos, window_.size());
            window_at_ = pos;
        }
        return static_cast<uint8_t>(window_[pos - window_at_]);
    }
    /// Bytes [pos, pos + n): a view of the file's bytes, or of `scratch` they were read into.
    std::string_view bytes(std::size_t pos, std::size_t n, std::string& scratch) {
        if (fd_ < 0) return whole_.substr(pos, n);
        if (pos >= window_at_ && pos + n <= window_at_ + window_.size())
            return std::string_view(window_).substr(pos - window_at_, n);
        scratch.resize(n);
        fill(scratch.data(), pos, n);
        return scratch;
    }

    static constexpr std::size_t read_whole = std::size_t{8} << 20;
    /// Enough for most nodes' fields; small, as each initializer of a large file costs one.
    static constexpr std::size_t window_bytes = std::size_t{16} << 10;

private:
    void fill(char* out, std::size_t pos, std::size_t n) const {
        while (n > 0) {
            const ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(pos));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0)
                throw read_error(*file_ + ": read error: " +
                                     (got < 0 ? std::strerror(errno) : "the file shrank"),
                                 NNERGY_CODE_IO_ERROR);
            out += got;
            pos += static_cast<std::size_t>(got);
            n -= static_cast<std::size_t>(got);
        }
    }

    std::string_view whole_;
    std::optional<nnergy::reading::file_bytes> owned_;
    int fd_ = -1;
    std::size_t size_ = 0;
    const std::string* file_ = nullptr;
    std::size_t window_bytes_ = window_bytes;
    std::string window_;
    std::size_t window_at_ = 0;
};

/// The model's own level of the file, read with the messages its failures deserve: where the
/// file ends early, and where its bytes are no protobuf at all. What lies inside the model's
/// fields is decoded afterwards (proto::decode).
class top_level {
public:
    top_level(byte_source& bytes, const std::string& file)
        : bytes_(bytes), file_(file), size_(bytes.size()), limit_(bytes.size()) {}

    std::size_t position() const noexcept { return at_; }
    /// The bytes from `from` to the position, copied.
    std::string copy_from(std::size_t from) {
        std::string scratch;
        const std::string_view s = bytes_.bytes(from, at_ - from, scratch);
        if (s.data() != scratch.data()) scratch.assign(s);  // a view of the file or window
        return scratch;
    }

    [[noreturn]] void truncated(std::string_view where) const {
        throw read_error(file_ + ": truncated ONNX file: it ends inside " + std::string(where) +
                         " (at byte " + std::to_string(at_) + " of " + std::to_string(size_) + ")");
    }
    [[noreturn]] void invalid(std::string_view where, std::size_t at) const {
        throw read_error(file_ + ": not an ONNX model: invalid protobuf data in " +
                         std::string(where) + " at byte " + std::to_string(at));
    }
    [[noreturn]] void invalid(std::string_view where) const { invalid(where, at_); }

    /// The next tag of the message that ends at the current limit; false at its end.
    bool next_tag(uint32_t& tag, std::string_view where) {
        if (at_ == limit_) return false;
        const std::size_t start = at_;
        const uint64_t t = varint(where);
        if (t > UINT32_MAX || (t >> 3) == 0) invalid(where, start);
        tag = static_cast<uint32_t>(t);
        return true;
    }
    /// A length prefix, checked against what is left of the file and of the enclosing message.
    uint32_t length_prefix(std::string_view where) {
        const std::size_t start = at_;
        const uint64_t n = varint(where);
        if (n > size_ - at_)
            throw read_error(file_ + ": truncated ONNX file: " + std::string(where) + " (" +
                             std::to_string(n) + " bytes from byte " + std::to_string(at_) +
                             ") runs past its end (" + std::to_string(size_) + " bytes)");
        if (n > limit_ - at_) invalid(where, start);
        return static_cast<uint32_t>(n);
    }
    /// Passes over the next `n` bytes (within the current message).
    void skip(std::size_t n, std::string_view where) {
        if (n > limit_ - at_) {
            at_ = limit_;
            truncated(where);
        }
        at_ += n;
    }
    /// Passes over one field (its tag already read).
    void skip_field(uint32_t tag, std::string_view where) {
        switch (tag & 7u) {
            case proto::varint:
                varint(where);
                return;
            case proto::fixed64:
                skip(8, where);
                return;
            case proto::fixed32:
                skip(4, where);
                return;
            case proto::length:
                skip(length_prefix(where), where);
                return;
            default:
                invalid(where);
        }
    }
    /// Reads within the next `n` bytes until end_message(); returns the enclosing limit.
    std::size_t begin_message(std::size_t n) noexcept {
        const std::size_t outer = limit_;
        limit_ = at_ + n;
        return outer;
    }
    void end_message(std::size_t outer) noexcept { limit_ = outer; }

    uint64_t varint(std::string_view where) {
        const std::size_t start = at_;
        uint64_t v = 0;
        for (int shift = 0; shift < 70; shift += 7) {
            if (at_ == limit_) {
                if (limit_ == size_) truncated(where);
                invalid(where, start);
            }
            const uint8_t b = bytes_.at(at_++);
            if (shift < 64) v |= static_cast<uint64_t>(b & 0x7Fu) << shift;
            if (b < 0x80) return v;
        }
        invalid(where, start);
    }

private:
    byte_source& bytes_;
    const std::string& file_;
    std::size_t size_;
    std::size_t at_ = 0;
    std::size_t limit_;
};

/// An initializer larger than this is read field by field: its data is passed over.
inline constexpr std::size_t read_whole_tensor = std::size_t{64} << 10;

/// Reads one large initializer (the scanner at its first field, limited to it): its data
/// fields are counted, not read; its other fields are decoded as usual.
inline proto::tensor read_large_tensor(top_level& s, const std::string& where) {
    // Fields are copied into `rest` and decoded together; the data fields are summed here.
    std::string rest;
    uint64_t counts[16] = {};
    bool has_raw = false;
    uint64_t raw_size = 0;
    uint32_t tag = 0;
    for (std::size_t start = s.position(); s.next_tag(tag, where); start = s.position()) {
        const uint32_t field = tag >> 3;
        const bool data_field =
            field == 4 || field == 5 || field == 7 || field == 9 || field == 10 || field == 11;
        if ((tag & 7u) == proto::length && data_field) {
            const std::size_t n = s.length_prefix(where);
            const std::size_t at = s.position();
            // Small ones (a few values) are decoded with the rest: they may be kept.
            if (n <= proto::tensor::max_kept_raw) {
                s.skip(n, where);
                rest += s.copy_from(start);
                continue;
            }
            if (field == 9) {
                has_raw = true;
                raw_size = n;
            } else if (field == 4) {
                if (n % 4 != 0) s.invalid(where, at);
                counts[4] += n / 4;
            } else if (field == 10) {
                if (n % 8 != 0) s.invalid(where, at);
                counts[10] += n / 8;
            } else {  // packed varints: counted one by one
                const std::size_t outer = s.begin_message(n);
                while (s.position() < at + n) {
                    s.varint(where);
                    ++counts[field];
                }
                s.end_message(outer);
                continue;
            }
            s.skip(n, where);
            continue;
        }
        s.skip_field(tag, where);
        rest += s.copy_from(start);
    }
    proto::tensor t;
    try {
        proto::decode(rest, t);
    } catch (const proto::malformed&) {
        s.invalid(where);
    }
    for (int f : {4, 5, 7, 10, 11})
        if (counts[f] > 0) {
            t.typed_counts[f] += counts[f];
            if (f == 5 || f == 7) t.ints_complete = false;  // more than could be kept
        }
    if (has_raw) {
        t.has_raw = true;
        t.raw_size = raw_size;
        t.raw.clear();
    }
    return t;
}

}  // namespace detail

/// A model as read: every part except the initializers' data.
struct model_data {
    proto::model model;  ///< without its graph
    proto::graph graph;  ///< without its initializers
    std::vector<tensor_summary> initializers;
    bool has_graph = false;
};

/// Reads a model from `bytes`, a whole file or the window onto one; `file` names it in
/// messages. Initializers larger than `large_tensor` bytes are read field by field.
inline model_data read_model(detail::byte_source& bytes, const std::string& file,
                             std::size_t large_tensor = detail::read_whole_tensor) {
    if (bytes.size() > static_cast<uint64_t>(INT_MAX))
        throw read_error(file + ": " + std::to_string(bytes.size()) +
                         " bytes is more than the 2 GiB a protobuf file can hold (ONNX keeps "
                         "larger weights in external data files)");
    detail::top_level s(bytes, file);
    model_data m;
    // The fields of the model and of its graph other than the graph and the initializers, in
    // file order: decoded once the file is known to be whole.
    std::vector<std::string> model_fields, graph_fields;
    std::string scratch;
    uint32_t tag = 0;
    for (std::size_t start = 0; s.next_tag(tag, "the model"); start = s.position()) {
        if ((tag >> 3) != 7) {
            s.skip_field(tag, "the model");
            model_fields.push_back(s.copy_from(start));
            continue;
        }
        if ((tag & 7u) != proto::length) s.invalid("the model");
        if (m.has_graph) s.invalid("the model (a second graph)");
        m.has_graph = true;
        const std::size_t outer = s.begin_message(s.length_prefix("the graph"));
        uint32_t gtag = 0;
        for (std::size_t gstart = s.position(); s.next_tag(gtag, "the graph");
             gstart = s.position()) {
            if ((gtag >> 3) == 5 && (gtag & 7u) == proto::length) {
                const std::size_t index = m.initializers.size();
                const std::string where = "initializer " + std::to_string(index);
                const std::size_t n = s.length_prefix(where);
                const std::size_t at = s.position();
                if (n > large_tensor) {
                    const std::size_t tensor_outer = s.begin_message(n);
                    const proto::tensor t = detail::read_large_tensor(s, where);
                    s.end_message(tensor_outer);
                    m.initializers.push_back(summarize(t));
                    continue;
                }
                s.skip(n, where);
                proto::tensor t;
                try {
                    proto::decode(bytes.bytes(at, n, scratch), t);
                } catch (const proto::malformed&) {
                    s.invalid(where, at);
                }
                m.initializers.push_back(summarize(t));
            } else {
                s.skip_field(gtag, "the graph");
                graph_fields.push_back(s.copy_from(gstart));
            }
        }
        s.end_message(outer);
    }
    try {
        for (const std::string& f : model_fields)
            proto::for_each_field(
                f, [&](proto::wire& w, uint32_t t) { return proto::decode_field(w, t, m.model); });
        for (const std::string& f : graph_fields)
            proto::for_each_field(
                f, [&](proto::wire& w, uint32_t t) { return proto::decode_field(w, t, m.graph); });
    } catch (const proto::malformed&) {
        throw read_error(file + ": not an ONNX model: its fields do not match onnx.ModelProto");
    }
    if (!m.model.ir_version || !m.has_graph)
        throw read_error(file + ": not an ONNX model: no " +
                         std::string(m.model.ir_version ? "graph" : "ir_version") +
                         " field (is it a different protobuf message?)");
    return m;
}

/// Reads a model from the bytes of a file held in memory.
inline model_data read_model(std::string_view bytes, const std::string& file) {
    detail::byte_source source(bytes);
    return read_model(source, file);
}

/// Reads a model file.
inline model_data read_model_file(const std::string& file) {
    std::error_code ec;
    const auto st = std::filesystem::status(file, ec);
    if (ec || !std::filesystem::exists(st))
        throw read_error(file + ": no such file", NNERGY_CODE_NOT_FOUND);
    if (std::filesystem::is_directory(st))
        throw read_error(file + ": is a directory, not an ONNX file");
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw read_error(file + ": cannot open: " + std::strerror(errno), NNERGY_CODE_IO_ERROR);
    struct closer {
        int fd;
        ~closer() { ::close(fd); }
    } const close_at_end{fd};
    struct stat info {};
    if (::fstat(fd, &info) != 0)
        throw read_error(file + ": cannot read its size: " + std::strerror(errno),
                         NNERGY_CODE_IO_ERROR);
    detail::byte_source source(fd, static_cast<std::size_t>(info.st_size), file);
    return read_model(source, file);
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

/// "domain::name" or "domain::name:overload", for messages.
inline std::string function_label(std::string_view domain, std::string_view name,
                                  std::string_view overload) {
    std::string s = std::string(domain.empty() ? "ai.onnx" : domain) + "::" + std::string(name);
    if (!overload.empty()) s += ":" + std::string(overload);
    return s;
}

/// The graph's nodes with every call of a model-local function replaced by the function's body.
struct inlined_graph {
    std::vector<proto::node> nodes;
    /// Declared types of the tensors inside function bodies (FunctionProto.value_info, IR 10),
    /// under their names after inlining.
    std::vector<proto::value_info> value_info;
};

/// Expands the model's functions (ModelProto.functions) into the nodes of its graph:
/// formal inputs and outputs become the caller's tensors, every other tensor and every node of
/// a body is prefixed with the calling node's name ("call/inner"), attribute references take
/// the caller's attribute or the function's default (and are omitted when neither is given, as
/// ONNX specifies), and calls inside bodies are expanded in turn. `opset` is the model's
/// default-domain opset, which a function's own import must equal.
class function_inliner {
public:
    function_inliner(const proto::model& model, const std::string& file,
                     std::optional<int64_t> opset)
        : file_(file) {
        for (const proto::function& f : model.functions) {
            const std::string overload = f.overload;
            const std::string label = function_label(normalize_domain(f.domain), f.name, overload);
            if (f.name.empty())
                throw read_error(file + ": a function of domain '" + f.domain + "' has no name");
            if (!functions_
                     .emplace(key{std::string(normalize_domain(f.domain)), f.name, overload}, &f)
                     .second)
                throw read_error(file + ": function " + quote_name(label) +
                                 " is defined twice (ONNX requires (domain, name, overload) to "
                                 "be unique)");
            domains_.insert(std::string(normalize_domain(f.domain)));
            for (const auto& o : f.opset_import)
                if (normalize_domain(o.domain).empty() && opset && o.version != *opset)
                    throw read_error(file + ": function " + quote_name(label) + " imports opset " +
                                     std::to_string(o.version) +
                                     " of the default ONNX domain but the model imports " +
                                     std::to_string(*opset) +
                                     " (its operators would be read at the model's versions)");
        }
    }

    /// Whether the model holds functions at all.
    bool empty() const noexcept { return functions_.empty(); }

    inlined_graph run(const proto::graph& g) {
        inlined_graph out;
        out_ = &out;
        // The size of the result is known before anything is copied: a blow-up is refused at
        // once, naming the call that causes it.
        std::size_t total = 0;
        for (const proto::node& n : g.nodes) {
            const proto::function* f = find(n);
            const std::size_t size = f ? 1 + expanded_size(*f) : 1;
            total = std::min(total + size, max_inlined_nodes + 1);
            if (total > max_inlined_nodes)
                throw read_error(
                    file_ + ": inlining the model's functions makes more than " +
                    std::to_string(max_inlined_nodes) + " nodes and calls (at node " +
                    quote_name(n.name.empty() ? n.op_type : n.name) +
                    (f ? ", a call of " + quote_name(function_label(normalize_domain(f->domain),
                                                                    f->name, f->overload))
                       : std::string()) +
                    "): the functions call each other too often");
        }
        for (std::size_t i = 0; i < g.nodes.size(); ++i) {
            const proto::node& n = g.nodes[i];
            std::string name = n.name.empty() ? n.op_type + "_" + std::to_string(i) : n.name;
            if (const proto::function* f = find(n)) {
                expand(n, name, *f);
                continue;
            }
            check_not_missing(n, name);
            proto::node& copy = add_node();
            copy = n;
            copy.name = std::move(name);
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
    std::size_t expanded_size(const proto::function& f) {
        auto known = sizes_.find(&f);
        if (known != sizes_.end()) return known->second;
        sizes_[&f] = 1;  // while in progress: a recursive call
        depths_[&f] = 1;
        std::size_t size = 0, depth = 1;
        // The descent is bounded too: a chain thousands of functions deep would exhaust the stack
        // before its depth is known.
        if (++descent_ > max_function_depth) depth = max_function_depth + 1;
        for (const proto::node& b : f.nodes) {
            if (depth > max_function_depth) break;
            const proto::function* inner = find(b);
            size = std::min(size + 1 + (inner ? expanded_size(*inner) : 0), max_inlined_nodes + 1);
            if (inner) depth = std::max(depth, depths_[inner] + 1);
        }
        --descent_;
        // The depth is kept per function, so a chain measured in parts is still measured whole.
        if (depth > max_function_depth)
            throw read_error(
                file_ + ": functions nest more than " + std::to_string(max_function_depth) +
                " calls deep (function " +
                quote_name(function_label(normalize_domain(f.domain), f.name, f.overload)) +
                " calls functions " + std::to_string(depth - 1) + " levels deep)");
        depths_[&f] = depth;
        sizes_[&f] = size;
        return size;
    }

    const proto::function* find(const proto::node& n) const {
        if (functions_.empty()) return nullptr;
        auto it =
            functions_.find(key{std::string(normalize_domain(n.domain)), n.op_type, n.overload});
        return it == functions_.end() ? nullptr : it->second;
    }

    std::string chain_text(const proto::function* last = nullptr) const {
        std::string s;
        for (const proto::function* f : chain_)
            s += (s.empty() ? "" : " -> ") +
                 function_label(normalize_domain(f->domain), f->name, f->overload);
        if (last)
            s += (s.empty() ? "" : " -> ") +
                 function_label(normalize_domain(last->domain), last->name, last->overload);
        return s;
    }
    std::string where(const std::string& node_name, const proto::node& n) const {
        std::string s = file_ + ": node " + quote_name(node_name) + " (" +
                        (n.domain.empty() ? "" : n.domain + ".") + n.op_type;
        if (!chain_.empty()) s += ", in function " + chain_text();
        return s + ")";
    }

    /// A node of a domain that holds the model's functions must name one of them: an exporter's
    /// function domain has no operators of its own, so the node could not be counted.
    void check_not_missing(const proto::node& n, const std::string& name) const {
        const std::string_view d = normalize_domain(n.domain);
        if (d.empty() || !domains_.count(std::string(d))) return;
        const std::string overload = n.overload;
        throw read_error(where(name, n) + ": domain '" + n.domain +
                         "' holds the model's functions, but none is named " +
                         quote_name(n.op_type) +
                         (overload.empty() ? "" : " with overload " + quote_name(overload)) +
                         " (the function body is missing)");
    }

    proto::node& add_node() {
        if (++work_ > max_inlined_nodes) throw_too_large();
        return out_->nodes.emplace_back();
    }
    [[noreturn]] void throw_too_large() const {
        throw read_error(file_ + ": inlining the model's functions makes more than " +
                         std::to_string(max_inlined_nodes) + " nodes and calls (function chain " +
                         chain_text() + "): the functions call each other too often");
    }

    /// Replaces `call` (already renamed into its caller's scope, named `call_name`) by the body
    /// of `f`.
    void expand(const proto::node& call, const std::string& call_name, const proto::function& f) {
        for (const proto::function* c : chain_)
            if (c == &f)
                throw read_error(
                    where(call_name, call) + ": calls function " +
                    quote_name(function_label(normalize_domain(f.domain), f.name, f.overload)) +
                    " recursively (function chain " + chain_text(&f) + ")");
        if (++work_ > max_inlined_nodes) throw_too_large();
        const std::string label = function_label(normalize_domain(f.domain), f.name, f.overload);
        if (call.input.size() > f.input.size() || call.output.size() > f.output.size())
            throw read_error(where(call_name, call) + ": calls function " + quote_name(label) +
                             " with " + std::to_string(call.input.size()) + " inputs and " +
                             std::to_string(call.output.size()) + " outputs, but it declares " +
                             std::to_string(f.input.size()) + " and " +
                             std::to_string(f.output.size()));

        // A unique prefix per call site, even where two nodes share a name.
        std::string prefix = call_name;
        for (int k = 2; !prefixes_.insert(prefix).second; ++k)
            prefix = call_name + "#" + std::to_string(k);
        prefix += "/";

        std::map<std::string, std::string, std::less<>> formal;
        for (std::size_t i = 0; i < f.input.size(); ++i)
            formal[f.input[i]] = i < call.input.size() ? call.input[i] : std::string();
        for (std::size_t i = 0; i < f.output.size(); ++i) {
            // An output the caller omits is still computed inside: it keeps a private name.
            const bool bound = i < call.output.size() && !call.output[i].empty();
            formal[f.output[i]] = bound ? call.output[i] : prefix + f.output[i];
        }
        auto rename = [&](const std::string& t) {
            if (t.empty()) return t;
            auto it = formal.find(t);
            return it != formal.end() ? it->second : prefix + t;
        };

        // Attribute parameters: without a default (attribute) and with one (attribute_proto).
        std::set<std::string, std::less<>> declared(f.attribute.begin(), f.attribute.end());
        std::map<std::string, const proto::attribute*, std::less<>> defaults;
        for (const proto::attribute& a : f.attribute_proto) {
            declared.insert(a.name);
            defaults[a.name] = &a;
        }

        chain_.push_back(&f);
        for (std::size_t j = 0; j < f.nodes.size(); ++j) {
            const proto::node& b = f.nodes[j];
            // A copy keeps every field (domain, overload) but the ones renamed below.
            proto::node n;
            n.op_type = b.op_type;
            n.domain = b.domain;
            n.overload = b.overload;
            n.name = prefix + (b.name.empty() ? b.op_type + "_" + std::to_string(j) : b.name);
            for (const std::string& t : b.input) n.input.push_back(rename(t));
            for (const std::string& t : b.output) n.output.push_back(rename(t));
            for (const proto::attribute& a : b.attributes) {
                if (a.ref_attr_name.empty()) {
                    n.attributes.push_back(a);
                    continue;
                }
                if (!declared.count(a.ref_attr_name))
                    throw read_error(where(n.name, b) + ": attribute " + quote_name(a.name) +
                                     " refers to " + quote_name(a.ref_attr_name) +
                                     ", which function " + quote_name(label) + " does not declare");
                const proto::attribute* value = nullptr;
                for (const proto::attribute& c : call.attributes)
                    if (c.name == a.ref_attr_name) value = &c;
                if (!value) {
                    auto d = defaults.find(a.ref_attr_name);
                    if (d != defaults.end()) value = d->second;
                }
                if (!value) continue;  // neither given nor defaulted: omitted (ONNX IR)
                proto::attribute& copy = n.attributes.emplace_back(*value);
                copy.name = a.name;
            }
            if (const proto::function* inner = find(n)) {
                expand(n, n.name, *inner);
                continue;
            }
            check_not_missing(n, n.name);
            add_node() = std::move(n);
        }
        // Declared types inside the body; the formal parameters' types are the caller's.
        for (const proto::value_info& v : f.value_info) {
            if (formal.count(v.name)) continue;
            proto::value_info& renamed = out_->value_info.emplace_back(v);
            renamed.name = prefix + v.name;
        }
        chain_.pop_back();
    }

    const std::string& file_;
    std::map<key, const proto::function*> functions_;
    std::set<std::string, std::less<>> domains_;
    std::set<std::string, std::less<>> prefixes_;
    std::vector<const proto::function*> chain_;
    inlined_graph* out_ = nullptr;
    std::size_t work_ = 0;
    std::map<const proto::function*, std::size_t> sizes_;
    std::map<const proto::function*, std::size_t> depths_;
    std::size_t descent_ = 0;
};

/// Feeds a model into a builder with the interface of nnergy::sdk::graph_builder. `fallback_name`
/// names a graph without a name; `note` receives one line per part of the model that is skipped.
template <class Builder, class Note>
void build_graph(const model_data& m, const std::string& file, std::string_view fallback_name,
                 Builder& b, Note&& note) {
    using dim_type = typename Builder::dim;
    const proto::graph& g = m.graph;

    // Opsets first: a newer default domain than supported is refused before anything else.
    std::optional<int64_t> opset;
    std::vector<std::pair<std::string, int64_t>> other_opsets;
    for (const auto& o : m.model.opset_import) {
        if (normalize_domain(o.domain).empty())
            opset = o.version;
        else
            other_opsets.emplace_back(o.domain, o.version);
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
    const std::vector<proto::node>* graph_nodes = &g.nodes;
    if (!m.model.functions.empty()) {
        function_inliner inliner(m.model, file, opset);
        inlined = inliner.run(g);
        graph_nodes = &inlined.nodes;
    }
    const std::vector<proto::node>& nodes = *graph_nodes;

    if (!opset) {
        for (const auto& n : nodes)
            if (normalize_domain(n.domain).empty())
                throw read_error(file +
                                 ": the model imports no opset of the default ONNX domain "
                                 "but its node " +
                                 quote_name(n.name) + " (" + n.op_type + ") is of that domain");
    }

    // Every tensor is a graph input, an initializer (dense or sparse) or a node's output: a
    // bound the host sizes its storage by.
    std::size_t tensor_bound =
        g.inputs.size() + m.initializers.size() + g.sparse_initializers.size();
    for (const auto& n : nodes) tensor_bound += n.output.size();
    b.reserve(tensor_bound, static_cast<std::size_t>(nodes.size()));

    b.metadata("name", g.name.empty() ? fallback_name : std::string_view(g.name));
    if (opset) b.metadata("opset", std::to_string(*opset));
    for (const auto& [d, v] : other_opsets) b.metadata("opset." + d, std::to_string(v));
    b.metadata("ir_version", std::to_string(m.model.ir_version.value_or(0)));
    if (!m.model.producer_name.empty()) b.metadata("producer", m.model.producer_name);
    if (!m.model.producer_version.empty()) b.metadata("producer_version", m.model.producer_version);

    // Declared types: graph inputs and outputs first, then value_info.
    // Hashed: exporters' tensor names share long prefixes ("/encoder/layers/..."), which
    // ordered maps compare again and again.
    std::unordered_map<std::string, const proto::type_proto*> declared;
    declared.reserve(g.inputs.size() + g.outputs.size() + g.value_infos.size() +
                     inlined.value_info.size());
    for (const auto& v : g.inputs) declared.emplace(v.name, &v.type);
    for (const auto& v : g.outputs) declared.emplace(v.name, &v.type);
    for (const auto& v : g.value_infos) declared.emplace(v.name, &v.type);
    for (const auto& v : inlined.value_info) declared.emplace(v.name, &v.type);

    auto shape_of = [](const proto::type_proto& t) {
        std::optional<std::vector<dim_type>> shape;
        if (!t.tensor || !t.has_shape) return shape;
        shape.emplace();
        for (const auto& d : t.dims) {
            dim_type x;
            if (d.value && *d.value >= 0)
                x.value = *d.value;
            else if (d.param && !d.param->empty())
                x.symbol = *d.param;
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
    ids.reserve(m.initializers.size() + g.inputs.size() +
                2 * static_cast<std::size_t>(nodes.size()));
    auto add_declared = [&](const std::string& name, std::string_view what,
                            nnergy_dtype d = NNERGY_DTYPE_UNDEFINED) {
        auto it = declared.find(name);
        std::optional<std::vector<dim_type>> shape;
        if (it != declared.end() && it->second->tensor) {
            d = dtype_checked(it->second->elem_type, what, name);
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
    for (const auto& s : g.sparse_initializers) initializer_names.insert(s.values.name);
    for (const auto& v : g.inputs) {
        if (initializer_names.count(v.name)) continue;
        if (!v.type.tensor)
            throw read_error(file + ": graph input " + quote_name(v.name) +
                             ": only tensor inputs are supported (not sequences, maps or "
                             "optionals)");
        if (ids.count(v.name))
            throw read_error(file + ": graph input " + quote_name(v.name) + " is listed twice");
        b.add_input(add_declared(v.name, "graph input"));
    }
    for (std::size_t i = 0; i < m.initializers.size(); ++i) {
        const tensor_summary& t = m.initializers[i];
        if (t.name.empty())
            throw read_error(file + ": initializer " + std::to_string(i) + " has no name");
        if (ids.count(t.name))
            throw read_error(file + ": initializer " + quote_name(t.name) + " is declared twice");
        add_constant(t, "initializer");
    }
    for (const auto& s : g.sparse_initializers) {
        tensor_summary t;
        t.name = s.values.name;
        t.data_type = s.values.data_type;
        t.dims = s.dims;
        t.external = true;  // the values tensor holds the non-zeros only: nothing to check
        if (ids.count(t.name))
            throw read_error(file + ": sparse initializer " + quote_name(t.name) +
                             " is declared twice");
        add_constant(t, "sparse initializer");
    }

    // Node names (generated where missing), and every tensor a node produces.
    std::vector<std::string> names(nodes.size());
    std::unordered_set<std::string> produced;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const auto& n = nodes[i];
        names[i] = n.name.empty() ? n.op_type + "_" + std::to_string(i) : n.name;
        for (const auto& o : n.output)
            if (!o.empty()) produced.insert(o);
    }
    auto node_where = [&](std::size_t i) {
        const auto& n = nodes[i];
        return file + ": node " + quote_name(names[i]) + " (index " + std::to_string(i) + ", " +
               (n.domain.empty() ? "" : n.domain + ".") + n.op_type + ")";
    };
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        for (const auto& in : nodes[i].input) {
            if (in.empty() || ids.count(in) || produced.count(in)) continue;
            throw read_error(node_where(i) + ": input " + quote_name(in) +
                             " is not a graph input, an initializer or the output of any node");
        }
    }

    // A Constant holding a tensor becomes an initializer: the ABI has no tensor attributes,
    // and an initializer carries the shape (and the values of small integer tensors).
    auto is_tensor_constant = [](const proto::node& n) {
        return normalize_domain(n.domain).empty() && n.op_type == "Constant" &&
               n.attributes.size() == 1 && n.attributes[0].name == "value" && n.attributes[0].t &&
               n.output.size() == 1 && !n.output[0].empty();
    };
    // Every node's outputs get their tensors before any node is added, so that a file whose
    // nodes are out of topological order still reads (the host orders them).
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const auto& n = nodes[i];
        try {
            if (is_tensor_constant(n)) {
                tensor_summary t = summarize(*n.attributes[0].t);
                t.name = n.output[0];
                if (ids.count(t.name))
                    throw read_error("output " + quote_name(t.name) + " is already declared");
                add_constant(t, "constant");
                continue;
            }
            // ConstantOfShape's output has its fill value's element type (the ONNX rule), which
            // the host cannot see: the ABI has no tensor attributes.
            nnergy_dtype fill_type = NNERGY_DTYPE_UNDEFINED;
            if (normalize_domain(n.domain).empty() && n.op_type == "ConstantOfShape")
                for (const auto& a : n.attributes)
                    if (a.name == "value" && a.t)
                        fill_type = dtype_checked(a.t->data_type, "fill value of", n.name);
            for (const auto& o : n.output)
                if (!o.empty() && !ids.count(o)) add_declared(o, "tensor", fill_type);
        } catch (const read_error& e) {
            throw read_error(node_where(i) + ": " + e.what(), e.code());
        }
    }

    std::vector<uint32_t> inputs, outputs;
    std::vector<std::string> skipped;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const auto& n = nodes[i];
        if (is_tensor_constant(n)) continue;
        const std::string& name = names[i];
        try {
            inputs.clear();
            outputs.clear();
            for (const auto& in : n.input)
                inputs.push_back(in.empty() ? NNERGY_NO_TENSOR : ids.at(in));
            for (const auto& o : n.output)
                outputs.push_back(o.empty() ? NNERGY_NO_TENSOR : ids.at(o));
            const uint32_t id =
                b.add_node(name, n.op_type, normalize_domain(n.domain), inputs, outputs);
            for (const auto& a : n.attributes) {
                switch (a.type) {
                    case proto::attr_int:
                        b.attr(id, a.name, a.i);
                        break;
                    case proto::attr_float:
                        b.attr(id, a.name, static_cast<double>(a.f));
                        break;
                    case proto::attr_string:
                        b.attr(id, a.name, std::string_view(a.s));
                        break;
                    case proto::attr_ints:
                        b.attr(id, a.name, a.ints);
                        break;
                    case proto::attr_floats:
                        b.attr(id, a.name, std::vector<double>(a.floats.begin(), a.floats.end()));
                        break;
                    case proto::attr_tensor:
                        // A one-element tensor (ConstantOfShape's fill) passes as a number.
                        if (a.t) {
                            if (auto v = scalar_value(*a.t)) {
                                std::visit([&](auto x) { b.attr(id, a.name, x); }, *v);
                                break;
                            }
                        }
                        [[fallthrough]];
                    default:
                        skipped.push_back(name + "." + a.name + " (" +
                                          proto::attribute_type_name(a.type) + ")");
                }
            }
        } catch (const read_error& e) {
            throw read_error(node_where(i) + ": " + e.what(), e.code());
        } catch (const std::exception& e) {
            throw read_error(node_where(i) + ": " + e.what());
        }
    }
    for (const auto& v : g.outputs) {
        auto it = ids.find(v.name);
        if (it == ids.end())
            throw read_error(file + ": graph output " + quote_name(v.name) +
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
