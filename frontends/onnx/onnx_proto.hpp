// SPDX-License-Identifier: Apache-2.0
// The parts of ONNX's protobuf messages (onnx.proto, IR version 10) that the reader uses, and a
// decoder of protobuf's wire format for them.
//
// The frontend decodes the bytes itself rather than through the generated ONNX classes: those
// need the full protobuf runtime, whose shared library takes longer to load and relocate than
// the rest of a typical run together, and whose descriptors the plugin never uses. Decoding
// follows protobuf's rules: fields may come in any order and repeat (a repeated field appends,
// a singular scalar keeps the last value, a singular message merges), repeated scalars may be
// packed or not, a field of an unexpected wire type or an unknown number is skipped, and an
// enum value the schema does not define leaves the field unset.
#ifndef NNERGY_FRONTENDS_ONNX_PROTO_HPP
#define NNERGY_FRONTENDS_ONNX_PROTO_HPP

#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy::onnx_frontend::proto {

/// Thrown for bytes that are no valid encoding of the message being decoded.
struct malformed {};

enum wire_type : uint32_t {
    varint = 0,
    fixed64 = 1,
    length = 2,
    group_start = 3,
    group_end = 4,
    fixed32 = 5
};

/// A decoding position over bytes held elsewhere.
class wire {
public:
    explicit wire(std::string_view bytes) noexcept
        : begin_(bytes.data()), at_(bytes.data()), end_(bytes.data() + bytes.size()) {}

    bool done() const noexcept { return at_ == end_; }
    /// Bytes read so far.
    std::size_t offset() const noexcept { return static_cast<std::size_t>(at_ - begin_); }
    std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - at_); }

    uint64_t read_varint() {
        uint64_t v = 0;
        // At most ten bytes: bits beyond the 64th are dropped, as protobuf does.
        for (int shift = 0; shift < 70; shift += 7) {
            if (at_ == end_) throw malformed{};
            const auto b = static_cast<uint8_t>(*at_++);
            if (shift < 64) v |= static_cast<uint64_t>(b & 0x7Fu) << shift;
            if (b < 0x80) return v;
        }
        throw malformed{};
    }
    /// A field's tag: its number (at least 1) and wire type (one protobuf defines).
    uint32_t read_tag() {
        const uint64_t t = read_varint();
        if (t > UINT32_MAX || (t >> 3) == 0 || (t & 7u) > fixed32) throw malformed{};
        return static_cast<uint32_t>(t);
    }
    /// The bytes of a length-delimited field (its tag already read).
    std::string_view read_bytes() {
        const uint64_t n = read_varint();
        if (n > static_cast<uint64_t>(INT_MAX) || n > remaining()) throw malformed{};
        const std::string_view s(at_, static_cast<std::size_t>(n));
        at_ += n;
        return s;
    }
    uint32_t read_fixed32() {
        if (remaining() < 4) throw malformed{};
        uint32_t v = 0;
        for (int b = 0; b < 4; ++b)
            v |= static_cast<uint32_t>(static_cast<uint8_t>(at_[b])) << (8 * b);
        at_ += 4;
        return v;
    }
    uint64_t read_fixed64() {
        if (remaining() < 8) throw malformed{};
        uint64_t v = 0;
        for (int b = 0; b < 8; ++b)
            v |= static_cast<uint64_t>(static_cast<uint8_t>(at_[b])) << (8 * b);
        at_ += 8;
        return v;
    }
    void skip_bytes(std::size_t n) {
        if (n > remaining()) throw malformed{};
        at_ += n;
    }
    /// Skips the value of a field whose tag was just read. A group is skipped to its end tag.
    void skip_value(uint32_t tag, int depth = 0) {
        switch (tag & 7u) {
            case varint:
                read_varint();
                return;
            case fixed64:
                skip_bytes(8);
                return;
            case fixed32:
                skip_bytes(4);
                return;
            case length:
                read_bytes();
                return;
            case group_start: {
                if (depth >= max_depth) throw malformed{};
                for (;;) {
                    const uint32_t inner = read_tag();
                    if ((inner & 7u) == group_end) {
                        if ((inner >> 3) != (tag >> 3)) throw malformed{};
                        return;
                    }
                    skip_value(inner, depth + 1);
                }
            }
            default:  // an end tag outside its group
                throw malformed{};
        }
    }

    /// protobuf's own limit on nesting.
    static constexpr int max_depth = 100;

private:
    const char* begin_;
    const char* at_;
    const char* end_;
};

// ---- decoding helpers ---------------------------------------------------------------------

/// Calls `f(tag)` for each field of the message in `bytes`, with the wire positioned at the
/// field's value; `f` reads the value or returns false to have it skipped.
template <class F>
void for_each_field(std::string_view bytes, F&& f) {
    wire w(bytes);
    while (!w.done()) {
        const uint32_t tag = w.read_tag();
        if ((tag & 7u) == group_end) throw malformed{};  // no group is open here
        if (!f(w, tag)) w.skip_value(tag);
    }
}

inline bool is(uint32_t tag, uint32_t wt) noexcept { return (tag & 7u) == wt; }

inline void read_string(wire& w, std::string& out) {
    const std::string_view s = w.read_bytes();
    out.assign(s.data(), s.size());
}

/// A repeated varint field, packed or not; false when the wire type fits neither.
template <class T>
bool read_repeated_varint(wire& w, uint32_t tag, std::vector<T>& out) {
    if (is(tag, varint)) {
        out.push_back(static_cast<T>(w.read_varint()));
        return true;
    }
    if (!is(tag, length)) return false;
    wire packed(w.read_bytes());
    while (!packed.done()) out.push_back(static_cast<T>(packed.read_varint()));
    return true;
}

/// A repeated float field (fixed32), packed or not.
inline bool read_repeated_float(wire& w, uint32_t tag, std::vector<float>& out) {
    auto as_float = [](uint32_t bits) {
        float f;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    };
    if (is(tag, fixed32)) {
        out.push_back(as_float(w.read_fixed32()));
        return true;
    }
    if (!is(tag, length)) return false;
    const std::string_view bytes = w.read_bytes();
    if (bytes.size() % 4 != 0) throw malformed{};
    wire packed(bytes);
    while (!packed.done()) out.push_back(as_float(packed.read_fixed32()));
    return true;
}

// ---- messages -----------------------------------------------------------------------------

struct operator_set_id {
    std::string domain;
    int64_t version = 0;
};

inline void decode(std::string_view bytes, operator_set_id& m) {
    for_each_field(bytes, [&](wire& w, uint32_t tag) {
        switch (tag >> 3) {
            case 1:
                if (!is(tag, length)) return false;
                read_string(w, m.domain);
                return true;
            case 2:
                if (!is(tag, varint)) return false;
                m.version = static_cast<int64_t>(w.read_varint());
                return true;
            default:
                return false;
        }
    });
}

/// TensorShapeProto.Dimension: a value or a parameter name (a oneof: the last one set counts).
struct dimension {
    std::optional<int64_t> value;
    std::optional<std::string> param;
};

inline void decode(std::string_view bytes, dimension& m) {
    for_each_field(bytes, [&](wire& w, uint32_t tag) {
        switch (tag >> 3) {
            case 1:
                if (!is(tag, varint)) return false;
                m.value = static_cast<int64_t>(w.read_varint());
                m.param.reset();
                return true;
            case 2:
                if (!is(tag, length)) return false;
                m.param.emplace();
                read_string(w, *m.param);
                m.value.reset();
                return true;
            default:
                return false;
        }
    });
}

/// TypeProto, of which only the tensor kind is kept (a oneof: `tensor` says whether the value
/// last set was a tensor type).
struct type_proto {
    bool tensor = false;
    int32_t elem_type = 0;
    bool has_shape = false;
    std::vector<dimension> dims;
};

inline void decode_tensor_type(std::string_view bytes, type_proto& m) {
    for_each_field(bytes, [&](wire& w, uint32_t tag) {
        switch (tag >> 3) {
            case 1:
                if (!is(tag, varint)) return false;
                m.elem_type = static_cast<int32_t>(w.read_varint());
                return true;
            case 2:
                if (!is(tag, length)) return false;
                m.has_shape = true;
                for_each_field(w.read_bytes(), [&](wire& s, uint32_t stag) {
                    if ((stag >> 3) != 1 || !is(stag, length)) return false;
                    decode(s.read_bytes(), m.dims.emplace_back());
                    return true;
                });
                return true;
            default:
                return false;
        }
    });
}

/// Checks the framing of the fields of a message the reader does not look into (a sequence,
/// map, optional or sparse tensor type, a sub-graph), one level deep.
inline void check_message(std::string_view bytes) {
    for_each_field(bytes, [](wire&, uint32_t) { return false; });
}

inline void decode(std::string_view bytes, type_proto& m) {
    for_each_field(bytes, [&](wire& w, uint32_t tag) {
        const uint32_t field = tag >> 3;
        if (!is(tag, length) ||
            (field != 1 && field != 4 && field != 5 && field != 8 && field != 9))
            return false;
        const std::string_view value = w.read_bytes();
        if (field == 1) {
            if (!m.tensor) m = type_proto{};  // another kind was set: it is replaced
            m.tensor = true;
            decode_tensor_type(value, m);
        } else {
            check_message(value);
            m = type_proto{};
        }
        return true;
    });
}

struct value_info {
    std::string name;
    type_proto type;
};

inline void decode(std::string_view bytes, value_info& m) {
    for_each_field(bytes, [&](wire& w, uint32_t tag) {
        switch (tag >> 3) {
            case 1:
                if (!is(tag, length)) return false;
                read_string(w, m.name);
                return true;
            case 2:
                if (!is(tag, length)) return false;
                decode(w.read_bytes(), m.type);
                return true;
            default:
                return false;
        }
    });
}

/// What the reader keeps of any TensorProto: its shape and type, and how its data is held.
struct tensor_header {
    std::string name;
    int32_t data_type = 0;
    std::vector<int64_t> dims;
    bool external = false;  ///< data_location EXTERNAL or external_data entries present
    bool has_raw = false;
    uint64_t raw_size = 0;
    /// Entries seen in each typed field (by field number 4, 5, 6, 7, 10, 11).
    std::map<int, uint64_t> typed_counts;
};

/// TensorProto, without its data: the header, a raw_data of at most `max_kept_raw` bytes, and
/// the first entry of each typed field (a one-element tensor is an attribute's scalar).
struct tensor : tensor_header {
    std::string raw;  ///< raw_data, when at most max_kept_raw bytes
    /// int32_data or int64_data values (int32 sign-extended), at most `max_kept_ints`;
    /// ints_complete when none was left out.
    std::vector<int64_t> ints;
    bool ints_complete = true;
    float first_float = 0;    ///< float_data's first entry
    double first_double = 0;  ///< double_data's first entry

    static constexpr std::size_t max_kept_ints = 64;
    static constexpr std::size_t max_kept_raw = max_kept_ints * 8;
};

inline void decode(std::string_view bytes, tensor& t) {
    auto keep = [&](int64_t v) {
        if (t.ints.size() < tensor::max_kept_ints)
            t.ints.push_back(v);
        else
            t.ints_complete = false;
    };
    auto count_varints = [&](wire& w, uint32_t tag, int field, bool is_int32) {
        std::vector<uint64_t> values;
        if (!read_repeated_varint(w, tag, values)) return false;
        for (uint64_t v : values)
            keep(is_int32 ? static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)))
                          : static_cast<int64_t>(v));
        t.typed_counts[field] += values.size();
        return true;
    };
    for_each_field(bytes, [&](wire& w, uint32_t tag) {
        const uint32_t field = tag >> 3;
        switch (field) {
            case 1:  // dims
                return read_repeated_varint(w, tag, t.dims);
            case 2:  // data_type
                if (!is(tag, varint)) return false;
                t.data_type = static_cast<int32_t>(w.read_varint());
                return true;
            case 4: {  // float_data
                std::vector<float> values;
                if (!read_repeated_float(w, tag, values)) return false;
                if (t.typed_counts[4] == 0 && !values.empty()) t.first_float = values[0];
                t.typed_counts[4] += values.size();
                return true;
            }
            case 10: {  // double_data
                const bool first = t.typed_counts[10] == 0;
                if (is(tag, fixed64)) {
                    const uint64_t bits = w.read_fixed64();
                    if (first) std::memcpy(&t.first_double, &bits, sizeof bits);
                    ++t.typed_counts[10];
                    return true;
                }
                if (!is(tag, length)) return false;
                const std::string_view packed = w.read_bytes();
                if (packed.size() % 8 != 0) throw malformed{};
                if (first && !packed.empty()) {
                    wire p(packed);
                    const uint64_t bits = p.read_fixed64();
                    std::memcpy(&t.first_double, &bits, sizeof bits);
                }
                t.typed_counts[10] += packed.size() / 8;
                return true;
            }
            case 5:  // int32_data: int32 values are stored sign-extended as 64-bit varints
                return count_varints(w, tag, 5, true);
            case 7:  // int64_data
                return count_varints(w, tag, 7, false);
            case 11: {  // uint64_data
                std::vector<uint64_t> values;
                if (!read_repeated_varint(w, tag, values)) return false;
                t.typed_counts[11] += values.size();
                return true;
            }
            case 6:  // string_data
                if (!is(tag, length)) return false;
                w.read_bytes();
                ++t.typed_counts[6];
                return true;
            case 8:  // name
                if (!is(tag, length)) return false;
                read_string(w, t.name);
                return true;
            case 9: {  // raw_data: only a small one is kept, for shape constants and scalars
                if (!is(tag, length)) return false;
                const std::string_view raw = w.read_bytes();
                t.has_raw = true;
                t.raw_size = raw.size();
                if (raw.size() <= tensor::max_kept_raw)
                    t.raw.assign(raw.data(), raw.size());
                else
                    t.raw.clear();
                return true;
            }
            case 13:  // external_data
                if (!is(tag, length)) return false;
                check_message(w.read_bytes());
                t.external = true;
                return true;
            case 14:  // data_location: EXTERNAL is 1; a value the enum lacks leaves it unset
                if (!is(tag, varint)) return false;
                if (const uint64_t v = w.read_varint(); v <= 1) t.external = t.external || v == 1;
                return true;
            default:
                return false;
        }
    });
}

/// AttributeProto.AttributeType values (onnx.proto), and their names for messages.
enum attribute_type : int32_t {
    attr_undefined = 0,
    attr_float = 1,
    attr_int = 2,
    attr_string = 3,
    attr_tensor = 4,
    attr_graph = 5,
    attr_floats = 6,
    attr_ints = 7,
    attr_strings = 8,
    attr_tensors = 9,
    attr_graphs = 10,
    attr_sparse_tensor = 11,
    attr_sparse_tensors = 12,
    attr_type_proto = 13,
    attr_type_protos = 14,
};

inline const char* attribute_type_name(int32_t t) noexcept {
    static const char* const names[] = {
        "UNDEFINED",      "FLOAT",      "INT",        "STRING",  "TENSOR", "GRAPH",
        "FLOATS",         "INTS",       "STRINGS",    "TENSORS", "GRAPHS", "SPARSE_TENSOR",
        "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
    return t >= 0 && t <= attr_type_protos ? names[t] : "";
}

/// AttributeProto, without the values the reader never reads (graphs, strings lists, sparse
/// tensors, type protos: skipped, but still checked as protobuf would).
struct attribute {
    std::string name;
    std::string ref_attr_name;
    int32_t type = attr_undefined;
    float f = 0;
    int64_t i = 0;
    std::string s;
    std::optional<tensor> t;
    std::vector<float> floats;
    std::vector<int64_t> ints;
};

inline void decode(std::string_view bytes, attribute& a) {
    for_each_field(bytes, [&](wire& w, uint32_t tag) {
        switch (tag >> 3) {
            case 1:
                if (!is(tag, length)) return false;
                read_string(w, a.name);
                return true;
            case 21:
                if (!is(tag, length)) return false;
                read_string(w, a.ref_attr_name);
                return true;
            case 20:  // a value the enum lacks leaves the type unset
                if (!is(tag, varint)) return false;
                if (const uint64_t v = w.read_varint(); v <= attr_type_protos)
                    a.type = static_cast<int32_t>(v);
                return true;
            case 2: {
                if (!is(tag, fixed32)) return false;
                const uint32_t bits = w.read_fixed32();
                std::memcpy(&a.f, &bits, sizeof bits);
                return true;
            }
            case 3:
                if (!is(tag, varint)) return false;
                a.i = static_cast<int64_t>(w.read_varint());
                return true;
            case 4:
                if (!is(tag, length)) return false;
                read_string(w, a.s);
                return true;
            case 5:
                if (!is(tag, length)) return false;
                if (!a.t) a.t.emplace();
                decode(w.read_bytes(), *a.t);
                return true;
            case 7:
                return read_repeated_float(w, tag, a.floats);
            case 8:
                return read_repeated_varint(w, tag, a.ints);
            case 6:
            case 10:
            case 11:
            case 14:
            case 15:
            case 22:
            case 23:
                if (!is(tag, length)) return false;
                check_message(w.read_bytes());
                return true;
            default:
                return false;
        }
    });
}

struct node {
    std::vector<std::string> input;
    std::vector<std::string> output;
    std::string name;
    std::string op_type;
    std::string domain;
    std::string overload;  ///< IR 10
    std::vector<attribute> attributes;
};

inline void decode(std::string_view bytes, node& n) {
    for_each_field(bytes, [&](wire& w, uint32_t tag) {
        if (!is(tag, length)) return false;
        switch (tag >> 3) {
            case 1:
                read_string(w, n.input.emplace_back());
                return true;
            case 2:
                read_string(w, n.output.emplace_back());
                return true;
            case 3:
                read_string(w, n.name);
                return true;
            case 4:
                read_string(w, n.op_type);
                return true;
            case 7:
                read_string(w, n.domain);
                return true;
            case 8:
                read_string(w, n.overload);
                return true;
            case 5:
                decode(w.read_bytes(), n.attributes.emplace_back());
                return true;
            default:
                return false;
        }
    });
}

/// SparseTensorProto: what the reader keeps of its values tensor and its dims.
struct sparse_tensor {
    tensor values;
    std::vector<int64_t> dims;
};

inline void decode(std::string_view bytes, sparse_tensor& s) {
    for_each_field(bytes, [&](wire& w, uint32_t tag) {
        switch (tag >> 3) {
            case 1:
                if (!is(tag, length)) return false;
                decode(w.read_bytes(), s.values);
                return true;
            case 2:
                if (!is(tag, length)) return false;
                {
                    tensor indices;
                    decode(w.read_bytes(), indices);
                }
                return true;
            case 3:
                return read_repeated_varint(w, tag, s.dims);
            default:
                return false;
        }
    });
}

/// GraphProto without its initializers (the reader scans those from the file itself).
struct graph {
    std::vector<node> nodes;
    std::string name;
    std::vector<sparse_tensor> sparse_initializers;
    std::vector<value_info> inputs;
    std::vector<value_info> outputs;
    std::vector<value_info> value_infos;
};

/// Decodes one field of a GraphProto other than an initializer (its tag just read).
inline bool decode_field(wire& w, uint32_t tag, graph& g) {
    if (!is(tag, length)) return false;
    switch (tag >> 3) {
        case 1:
            decode(w.read_bytes(), g.nodes.emplace_back());
            return true;
        case 2:
            read_string(w, g.name);
            return true;
        case 15:
            decode(w.read_bytes(), g.sparse_initializers.emplace_back());
            return true;
        case 11:
            decode(w.read_bytes(), g.inputs.emplace_back());
            return true;
        case 12:
            decode(w.read_bytes(), g.outputs.emplace_back());
            return true;
        case 13:
            decode(w.read_bytes(), g.value_infos.emplace_back());
            return true;
        case 14:  // quantization_annotation
            check_message(w.read_bytes());
            return true;
        default:
            return false;
    }
}

struct function {
    std::string name;
    std::string domain;
    std::string overload;  ///< IR 10
    std::vector<std::string> input;
    std::vector<std::string> output;
    std::vector<std::string> attribute;             ///< parameters without a default
    std::vector<proto::attribute> attribute_proto;  ///< parameters with one (IR 9)
    std::vector<node> nodes;
    std::vector<operator_set_id> opset_import;
    std::vector<proto::value_info> value_info;  ///< IR 10
};

inline void decode(std::string_view bytes, function& f) {
    for_each_field(bytes, [&](wire& w, uint32_t tag) {
        if (!is(tag, length)) return false;
        switch (tag >> 3) {
            case 1:
                read_string(w, f.name);
                return true;
            case 10:
                read_string(w, f.domain);
                return true;
            case 13:
                read_string(w, f.overload);
                return true;
            case 4:
                read_string(w, f.input.emplace_back());
                return true;
            case 5:
                read_string(w, f.output.emplace_back());
                return true;
            case 6:
                read_string(w, f.attribute.emplace_back());
                return true;
            case 11:
                decode(w.read_bytes(), f.attribute_proto.emplace_back());
                return true;
            case 7:
                decode(w.read_bytes(), f.nodes.emplace_back());
                return true;
            case 9:
                decode(w.read_bytes(), f.opset_import.emplace_back());
                return true;
            case 12:
                decode(w.read_bytes(), f.value_info.emplace_back());
                return true;
            default:
                return false;
        }
    });
}

/// ModelProto without its graph.
struct model {
    std::optional<int64_t> ir_version;
    std::vector<operator_set_id> opset_import;
    std::string producer_name;
    std::string producer_version;
    std::vector<function> functions;
};

/// Decodes one field of a ModelProto other than its graph (its tag just read).
inline bool decode_field(wire& w, uint32_t tag, model& m) {
    switch (tag >> 3) {
        case 1:
            if (!is(tag, varint)) return false;
            m.ir_version = static_cast<int64_t>(w.read_varint());
            return true;
        case 8:
            if (!is(tag, length)) return false;
            decode(w.read_bytes(), m.opset_import.emplace_back());
            return true;
        case 2:
            if (!is(tag, length)) return false;
            read_string(w, m.producer_name);
            return true;
        case 3:
            if (!is(tag, length)) return false;
            read_string(w, m.producer_version);
            return true;
        case 25:
            if (!is(tag, length)) return false;
            decode(w.read_bytes(), m.functions.emplace_back());
            return true;
        case 14:  // metadata_props
        case 20:  // training_info
            if (!is(tag, length)) return false;
            check_message(w.read_bytes());
            return true;
        default:
            return false;
    }
}

}  // namespace nnergy::onnx_frontend::proto

#endif  // NNERGY_FRONTENDS_ONNX_PROTO_HPP
