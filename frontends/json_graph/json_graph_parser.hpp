// SPDX-License-Identifier: Apache-2.0
/// \file json_graph_parser.hpp
/// \brief Reads "nnergy.graph/1" documents (docs/json-graph.md) into a plain description.
///
/// Header-only and free of host calls, so every rule can be unit-tested without loading the
/// plugin; build_graph() then feeds the description into a graph builder (the SDK's
/// nnergy::sdk::graph_builder in the plugin).
#pragma once

#include <nnergy/plugin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <nnergy/dtype.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace nnergy::json_graph {

/// The only schema this reader accepts.
inline constexpr std::string_view schema_id = "nnergy.graph/1";
inline constexpr std::string_view schema_family = "nnergy.graph/";
/// Deeper documents are rejected: a model needs six levels, and this bounds recursion.
inline constexpr std::size_t max_nesting = 64;

/// A rejected document. The message names the file, the line and the node or tensor at fault.
class parse_error : public std::runtime_error {
public:
    explicit parse_error(const std::string& message,
                         nnergy_status_code code = NNERGY_CODE_INVALID_ARGUMENT)
        : std::runtime_error(message), code_(code) {}
    nnergy_status_code code() const noexcept { return code_; }

private:
    nnergy_status_code code_;
};

// ------------------------------------------------------------------------------------------------
// Element types
// ------------------------------------------------------------------------------------------------

/// Tensor element types are the canonical dtype names; tfloat32 is refused on purpose: it is a
/// compute precision, never the type of a stored tensor.
inline std::optional<nnergy_dtype> dtype_from_schema_name(std::string_view name) noexcept {
    auto t = sdk::dtype_from_canonical_name(name);
    if (t == NNERGY_DTYPE_TFLOAT32) return std::nullopt;
    return t;
}

inline bool is_integer_dtype(nnergy_dtype t) noexcept { return sdk::is_integer_dtype(t); }

// ------------------------------------------------------------------------------------------------
// The description a document is read into
// ------------------------------------------------------------------------------------------------

/// A dimension: concrete (`value` >= 0), symbolic (`symbol` non-empty) or unknown (neither).
struct dim_spec {
    int64_t value = NNERGY_DIM_UNKNOWN;
    std::string symbol;
};

/// Attribute values: integer, float, string and lists of integers or floats.
using attr_value =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

struct attr_spec {
    std::string name;
    attr_value value;
};

struct tensor_spec {
    std::string name;
    nnergy_dtype dtype = NNERGY_DTYPE_UNDEFINED;
    std::optional<std::vector<dim_spec>> shape;
    bool initializer = false;
    std::optional<std::vector<int64_t>> values;
    uint32_t line = 0;      ///< 0 for tensors declared implicitly by a node
    bool declared = false;  ///< listed in "tensors" (not declared implicitly)
};

struct node_spec {
    std::string name;
    std::string op;
    std::string domain;
    std::vector<uint32_t> inputs;  ///< indices into graph_spec::tensors; NNERGY_NO_TENSOR
    std::vector<uint32_t> outputs;
    std::vector<attr_spec> attributes;
    uint32_t line = 0;
};

struct graph_spec {
    std::string name;
    std::vector<std::pair<std::string, std::string>> metadata;  ///< without "name"
    std::vector<tensor_spec> tensors;  ///< declared ones first, then implicit ones
    std::vector<node_spec> nodes;      ///< in file order
    std::vector<uint32_t> inputs;
    std::vector<uint32_t> outputs;
};

// ------------------------------------------------------------------------------------------------
// Source positions
// ------------------------------------------------------------------------------------------------

/// Where a JSON value starts, plus its children in file order (array elements, object members).
/// nlohmann::json keeps no positions, so a second, light pass over the already validated text
/// recovers them; it also catches what the DOM hides: duplicate keys, and integers too large for
/// 64 bits (which nlohmann silently turns into floats).
struct source_pos {
    uint32_t line = 0;
    uint32_t column = 0;
    bool integer_token = false;  ///< a number written without fraction or exponent
    std::vector<source_pos> children;
};

namespace detail {

inline std::string quote_name(std::string_view s) {
    // Names come from validated UTF-8 JSON strings; only control characters need escaping.
    std::string out = "'";
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            static const char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 15];
        } else {
            out += c;
        }
    }
    out += "'";
    return out;
}

/// Escapes every byte that is not printable ASCII (nlohmann's messages may quote raw input).
inline std::string printable(std::string_view s) {
    std::string out;
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u >= 0x7f) {
            static const char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 15];
        } else {
            out += c;
        }
    }
    return out;
}

/// Thrown by the position scanner on text it does not expect; positions are then unknown.
struct scan_failure {};

class position_scanner {
public:
    position_scanner(std::string_view text, std::string_view file) : s_(text), file_(file) {}

    source_pos scan() {
        if (s_.substr(0, 3) == "\xEF\xBB\xBF") i_ = 3;  // a UTF-8 byte order mark
        return value(0);
    }

private:
    std::string_view s_;
    std::string_view file_;
    std::size_t i_ = 0;
    uint32_t line_ = 1;
    std::size_t line_start_ = 0;

    char peek() const {
        if (i_ >= s_.size()) throw scan_failure{};
        return s_[i_];
    }
    void skip_ws() {
        while (i_ < s_.size()) {
            char c = s_[i_];
            if (c == '\n') {
                ++line_;
                line_start_ = i_ + 1;
            } else if (c != ' ' && c != '\t' && c != '\r') {
                break;
            }
            ++i_;
        }
    }
    source_pos here() const {
        source_pos p;
        p.line = line_;
        p.column = static_cast<uint32_t>(i_ - line_start_ + 1);
        return p;
    }
    std::string_view string_token() {
        std::size_t start = i_;
        if (peek() != '"') throw scan_failure{};
        ++i_;
        while (peek() != '"') {
            if (s_[i_] == '\\') ++i_;
            ++i_;
        }
        ++i_;
        return s_.substr(start, i_ - start);
    }
    static std::string decode_key(std::string_view token) {
        if (token.find('\\') == std::string_view::npos)
            return std::string(token.substr(1, token.size() - 2));
        try {
            return nlohmann::json::parse(token).get<std::string>();
        } catch (const std::exception&) {
            throw scan_failure{};
        }
    }
    [[noreturn]] void too_deep(const source_pos& p) const {
        throw parse_error(std::string(file_) + ":" + std::to_string(p.line) + ":" +
                          std::to_string(p.column) + ": nesting deeper than " +
                          std::to_string(max_nesting) + " levels");
    }
    source_pos value(std::size_t depth) {
        skip_ws();
        source_pos p = here();
        char c = peek();
        if (c == '{' || c == '[') {
            if (depth + 1 > max_nesting) too_deep(p);
            const char close = c == '{' ? '}' : ']';
            ++i_;
            skip_ws();
            if (peek() == close) {
                ++i_;
                return p;
            }
            std::unordered_map<std::string, source_pos> seen;
            while (true) {
                if (c == '{') {
                    skip_ws();
                    source_pos key_pos = here();
                    std::string key = decode_key(string_token());
                    auto [it, fresh] = seen.emplace(key, key_pos);
                    if (!fresh)
                        throw parse_error(
                            std::string(file_) + ":" + std::to_string(key_pos.line) + ":" +
                            std::to_string(key_pos.column) + ": duplicate key " + quote_name(key) +
                            " (first at line " + std::to_string(it->second.line) + ")");
                    skip_ws();
                    if (peek() != ':') throw scan_failure{};
                    ++i_;
                }
                p.children.push_back(value(depth + 1));
                skip_ws();
                if (peek() == ',') {
                    ++i_;
                    continue;
                }
                if (peek() != close) throw scan_failure{};
                ++i_;
                return p;
            }
        }
        if (c == '"') {
            string_token();
            return p;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            bool integer = true;
            while (i_ < s_.size()) {
                char d = s_[i_];
                if (d == '.' || d == 'e' || d == 'E')
                    integer = false;
                else if (!(d == '-' || d == '+' || (d >= '0' && d <= '9')))
                    break;
                ++i_;
            }
            p.integer_token = integer;
            return p;
        }
        if (c == 't' || c == 'f' || c == 'n') {
            while (i_ < s_.size() && s_[i_] >= 'a' && s_[i_] <= 'z') ++i_;
            return p;
        }
        throw scan_failure{};
    }
};

using json = nlohmann::ordered_json;

inline const source_pos* child(const source_pos* p, std::size_t k) noexcept {
    return p && k < p->children.size() ? &p->children[k] : nullptr;
}

/// "a string", "an array", ...: what a JSON value is, for messages.
inline std::string kind_of(const json& j, const source_pos* p) {
    switch (j.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::boolean:
            return j.get<bool>() ? "true" : "false";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
            return "an integer";
        case json::value_t::number_float:
            return p && p->integer_token ? "an integer" : "a number with a fraction or exponent";
        case json::value_t::string:
            return "a string";
        case json::value_t::array:
            return "an array";
        case json::value_t::object:
            return "an object";
        default:
            return "an unsupported value";
    }
}

/// Levenshtein distance, for "did you mean" hints on misspelled keys.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

/// Line and column (1-based, in bytes) of byte `offset`.
inline std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t offset) {
    offset = std::min(offset, text.size());
    std::size_t line = 1, start = 0;
    for (std::size_t i = 0; i < offset; ++i) {
        if (text[i] == '\n') {
            ++line;
            start = i + 1;
        }
    }
    return {line, offset - start + 1};
}

/// An object member found by key, with its position.
struct member {
    const json* value = nullptr;
    const source_pos* pos = nullptr;
    explicit operator bool() const noexcept { return value != nullptr; }
};

inline member find_member(const json& obj, const source_pos* pos, std::string_view key) {
    std::size_t k = 0;
    for (auto it = obj.begin(); it != obj.end(); ++it, ++k)
        if (it.key() == key) return {&*it, child(pos, k)};
    return {};
}

// ------------------------------------------------------------------------------------------------
// The reader
// ------------------------------------------------------------------------------------------------

class reader {
public:
    explicit reader(std::string_view file) : file_(file) {}

    graph_spec read(std::string_view text) {
        json doc = parse_syntax(text);
        source_pos root;
        const source_pos* rp = nullptr;
        try {
            root = position_scanner(text, file_).scan();
            rp = &root;
        } catch (const scan_failure&) {
            rp = nullptr;  // positions unknown; messages fall back to names
        }
        return read_document(doc, rp);
    }

private:
    std::string file_;
    graph_spec g_;
    std::unordered_map<std::string, uint32_t> tensor_ids_;

    // ---- errors ----

    [[noreturn]] void fail(const source_pos* p, const std::string& subject, const std::string& what,
                           nnergy_status_code code = NNERGY_CODE_INVALID_ARGUMENT) const {
        std::string m = file_;
        if (p && p->line) m += ":" + std::to_string(p->line);
        m += ": ";
        if (!subject.empty()) m += subject + ": ";
        m += what;
        throw parse_error(m, code);
    }

    json parse_syntax(std::string_view text) const {
        try {
            return json::parse(text.begin(), text.end());
        } catch (const nlohmann::json::parse_error& e) {
            // e.byte counts the bytes read, the offending one included.
            std::size_t offset = e.byte > 0 ? static_cast<std::size_t>(e.byte - 1) : 0;
            auto [line, column] = line_column(text, offset);
            std::string what = e.what();
            // Keep nlohmann's description, drop its own "[json.exception...] parse error at
            // line L, column C:" prefix (the position is ours).
            std::size_t colon = what.find(": ");
            std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
            throw parse_error(file_ + ":" + std::to_string(line) + ":" + std::to_string(column) +
                              ": invalid JSON: " + printable(detail));
        } catch (const nlohmann::json::out_of_range& e) {
            // A number beyond double range ("1e999"); nlohmann names the token but no position.
            std::string what = e.what();
            std::string token;
            std::size_t q1 = what.find('\''), q2 = what.rfind('\'');
            if (q1 != std::string::npos && q2 > q1) token = what.substr(q1 + 1, q2 - q1 - 1);
            std::size_t at = token.empty() ? std::string_view::npos : text.find(token);
            std::string where = file_;
            if (at != std::string_view::npos) {
                auto [line, column] = line_column(text, at);
                where += ":" + std::to_string(line) + ":" + std::to_string(column);
            }
            throw parse_error(where + ": number out of range: " + printable(token));
        } catch (const nlohmann::json::exception& e) {
            throw parse_error(file_ + ": invalid JSON: " + printable(e.what()));
        }
    }

    /// Rejects keys outside `allowed`, suggesting the nearest allowed one.
    void check_keys(const json& obj, const source_pos* pos, const std::string& subject,
                    std::initializer_list<std::string_view> allowed) const {
        std::size_t k = 0;
        for (auto it = obj.begin(); it != obj.end(); ++it, ++k) {
            const std::string& key = it.key();
            if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
            std::string list, hint;
            std::size_t best = 3;  // suggest only close matches: a typo, or an abbreviation
            for (std::string_view a : allowed) {
                if (!list.empty()) list += ", ";
                list += a;
                std::size_t d = edit_distance(key, a);
                if (d >= best && key.size() >= 4 && a.substr(0, 4) == key.substr(0, 4)) d = 2;
                if (d < best) {
                    best = d;
                    hint = std::string(a);
                }
            }
            std::string what = "unknown key " + quote_name(key);
            if (!hint.empty()) what += " (did you mean '" + hint + "'?)";
            what += "; allowed keys: " + list;
            fail(child(pos, k), subject, what);
        }
    }

    std::string require_string(const member& m, const std::string& subject, const std::string& key,
                               bool allow_empty = false) const {
        if (!m.value->is_string())
            fail(m.pos, subject, "'" + key + "' must be a string, not " + kind_of(*m.value, m.pos));
        std::string s = m.value->get<std::string>();
        if (s.empty() && !allow_empty) fail(m.pos, subject, "'" + key + "' must not be empty");
        return s;
    }

    /// A JSON integer that fits int64_t.
    int64_t require_int(const json& j, const source_pos* p, const std::string& subject,
                        const std::string& what) const {
        if (j.is_number_integer() && !j.is_number_unsigned()) return j.get<int64_t>();
        if (j.is_number_unsigned()) {
            uint64_t u = j.get<uint64_t>();
            if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                return static_cast<int64_t>(u);
            fail(p, subject,
                 what + " " + std::to_string(u) + " is out of the 64-bit integer range");
        }
        if (j.is_number_float() && p && p->integer_token)
            fail(p, subject, what + " is out of the 64-bit integer range");
        fail(p, subject, what + " must be an integer, not " + kind_of(j, p));
    }

    // ---- document ----

    graph_spec read_document(const json& doc, const source_pos* rp) {
        if (!doc.is_object())
            fail(rp, "",
                 "expected a JSON object with \"schema\": \"" + std::string(schema_id) +
                     "\", found " + kind_of(doc, rp));
        member schema = find_member(doc, rp, "schema");
        if (!schema)
            fail(rp, "",
                 "missing \"schema\": this reader expects \"schema\": \"" + std::string(schema_id) +
                     "\"");
        std::string id = require_string(schema, "", "schema");
        if (id != schema_id) {
            if (id.rfind(schema_family, 0) == 0)
                fail(schema.pos, "",
                     "unsupported schema version " + quote_name(id) + "; this reader supports '" +
                         std::string(schema_id) + "'",
                     NNERGY_CODE_UNSUPPORTED_VERSION);
            fail(schema.pos, "",
                 "'schema' is " + quote_name(id) + ", not '" + std::string(schema_id) + "'");
        }
        check_keys(doc, rp, "",
                   {"schema", "name", "metadata", "inputs", "outputs", "tensors", "nodes"});

        if (member m = find_member(doc, rp, "name")) g_.name = require_string(m, "", "name");
        if (member m = find_member(doc, rp, "metadata")) read_metadata(m);
        if (member m = find_member(doc, rp, "tensors")) {
            if (!m.value->is_array())
                fail(m.pos, "", "'tensors' must be an array, not " + kind_of(*m.value, m.pos));
            for (std::size_t k = 0; k < m.value->size(); ++k)
                read_tensor((*m.value)[k], child(m.pos, k), k);
        }
        member nodes = find_member(doc, rp, "nodes");
        if (!nodes) fail(rp, "", "missing 'nodes' (an array of nodes)");
        if (!nodes.value->is_array())
            fail(nodes.pos, "",
                 "'nodes' must be an array, not " + kind_of(*nodes.value, nodes.pos));
        std::vector<raw_node> raw;
        raw.reserve(nodes.value->size());
        for (std::size_t k = 0; k < nodes.value->size(); ++k)
            raw.push_back(read_node((*nodes.value)[k], child(nodes.pos, k), k));

        std::vector<named_ref> inputs, outputs;
        if (member m = find_member(doc, rp, "inputs")) inputs = read_names(m, "inputs");
        member out = find_member(doc, rp, "outputs");
        if (!out) fail(rp, "", "missing 'outputs' (an array of tensor names)");
        outputs = read_names(out, "outputs");

        resolve(raw, inputs, outputs);
        return std::move(g_);
    }

    void read_metadata(const member& m) {
        if (!m.value->is_object())
            fail(m.pos, "",
                 "'metadata' must be an object of strings, not " + kind_of(*m.value, m.pos));
        std::size_t k = 0;
        for (auto it = m.value->begin(); it != m.value->end(); ++it, ++k) {
            const source_pos* p = child(m.pos, k);
            if (it.key().empty()) fail(p, "metadata", "keys must not be empty");
            if (it.key() == "name")
                fail(p, "metadata", "the graph's name goes in the top-level 'name', not here");
            if (!it->is_string())
                fail(p, "metadata",
                     "value of " + quote_name(it.key()) + " must be a string, not " +
                         kind_of(*it, p));
            g_.metadata.emplace_back(it.key(), it->get<std::string>());
        }
    }

    struct named_ref {
        std::string name;
        const source_pos* pos = nullptr;
    };

    std::vector<named_ref> read_names(const member& m, const std::string& key) const {
        if (!m.value->is_array())
            fail(m.pos, "",
                 "'" + key + "' must be an array of tensor names, not " + kind_of(*m.value, m.pos));
        std::vector<named_ref> out;
        for (std::size_t k = 0; k < m.value->size(); ++k) {
            const json& v = (*m.value)[k];
            const source_pos* p = child(m.pos, k);
            if (!v.is_string() || v.get_ref<const std::string&>().empty())
                fail(p, "",
                     "'" + key + "' must be an array of tensor names; element " +
                         std::to_string(k) + " is " +
                         (v.is_string() ? std::string("an empty string") : kind_of(v, p)));
            out.push_back({v.get<std::string>(), p});
        }
        return out;
    }

    // ---- tensors ----

    static bool valid_symbol(std::string_view s) noexcept {
        if (s.empty()) return false;
        auto first = static_cast<unsigned char>(s[0]);
        if (!(first == '_' || first >= 0x80 || (first >= 'a' && first <= 'z') ||
              (first >= 'A' && first <= 'Z')))
            return false;
        for (char c : s) {
            auto u = static_cast<unsigned char>(c);
            if (u <= 0x20 || u == 0x7f) return false;
        }
        return true;
    }

    void read_tensor(const json& t, const source_pos* p, std::size_t index) {
        std::string subject = "tensor at index " + std::to_string(index) + " of 'tensors'";
        if (!t.is_object()) fail(p, subject, "must be an object, not " + kind_of(t, p));
        tensor_spec spec;
        spec.line = p ? p->line : 0;
        spec.declared = true;
        member name = find_member(t, p, "name");
        if (!name) fail(p, subject, "missing 'name'");
        spec.name = require_string(name, subject, "name");
        subject = "tensor " + quote_name(spec.name) + " (index " + std::to_string(index) +
                  " of 'tensors')";
        check_keys(t, p, subject, {"name", "dtype", "shape", "initializer", "values"});

        if (member m = find_member(t, p, "dtype")) {
            std::string d = require_string(m, subject, "dtype");
            std::optional<nnergy_dtype> dt = dtype_from_schema_name(d);
            if (!dt) {
                std::string names;
                for (const sdk::dtype_info& e : sdk::k_dtypes)
                    if (e.dtype != NNERGY_DTYPE_TFLOAT32)
                        names += (names.empty() ? "" : ", ") + std::string(e.name);
                fail(m.pos, subject,
                     "unknown dtype " + quote_name(d) + "; expected one of: " + names);
            }
            spec.dtype = *dt;
        }
        if (member m = find_member(t, p, "shape")) spec.shape = read_shape(m, subject);
        if (member m = find_member(t, p, "initializer")) {
            if (!m.value->is_boolean())
                fail(m.pos, subject,
                     "'initializer' must be true or false, not " + kind_of(*m.value, m.pos));
            spec.initializer = m.value->get<bool>();
        }
        if (spec.initializer) {
            if (spec.dtype == NNERGY_DTYPE_UNDEFINED)
                fail(p, subject, "an initializer needs a 'dtype'");
            if (!spec.shape) fail(p, subject, "an initializer needs a 'shape'");
        }
        if (member m = find_member(t, p, "values")) spec.values = read_values(m, spec, subject);

        auto [it, fresh] = tensor_ids_.emplace(spec.name, static_cast<uint32_t>(g_.tensors.size()));
        if (!fresh)
            fail(name.pos, subject,
                 "duplicate tensor name (first declared at line " +
                     std::to_string(g_.tensors[it->second].line) + ")");
        g_.tensors.push_back(std::move(spec));
    }

    std::vector<dim_spec> read_shape(const member& m, const std::string& subject) const {
        if (!m.value->is_array())
            fail(m.pos, subject,
                 "'shape' must be an array of dimensions, not " + kind_of(*m.value, m.pos));
        std::vector<dim_spec> shape;
        for (std::size_t k = 0; k < m.value->size(); ++k) {
            const json& d = (*m.value)[k];
            const source_pos* p = child(m.pos, k);
            const std::string what = "dimension " + std::to_string(k) + " of 'shape'";
            dim_spec dim;
            if (d.is_null()) {
                // unknown dimension
            } else if (d.is_string()) {
                dim.symbol = d.get<std::string>();
                if (!valid_symbol(dim.symbol))
                    fail(p, subject,
                         what + " is " + quote_name(dim.symbol) +
                             "; a symbol starts with a letter or '_' and has no spaces (numbers "
                             "are written without quotes)");
            } else if (d.is_number()) {
                dim.value = require_int(d, p, subject, what);
                if (dim.value < 0)
                    fail(p, subject,
                         what + " is " + std::to_string(dim.value) +
                             "; dimensions are integers >= 0, symbol names like \"batch\", or "
                             "null for unknown");
            } else {
                fail(p, subject,
                     what + " must be an integer, a symbol name or null, not " + kind_of(d, p));
            }
            shape.push_back(std::move(dim));
        }
        return shape;
    }

    std::vector<int64_t> read_values(const member& m, const tensor_spec& spec,
                                     const std::string& subject) const {
        if (!m.value->is_array())
            fail(m.pos, subject,
                 "'values' must be an array of integers, not " + kind_of(*m.value, m.pos));
        if (!spec.initializer) fail(m.pos, subject, "'values' requires \"initializer\": true");
        if (!is_integer_dtype(spec.dtype))
            fail(m.pos, subject,
                 "'values' are allowed only for integer dtypes (shape constants); weights carry "
                 "no values");
        uint64_t count = 1;
        for (const dim_spec& d : *spec.shape) {
            if (!d.symbol.empty() || d.value < 0)
                fail(m.pos, subject, "a tensor with 'values' needs a fully concrete 'shape'");
            uint64_t next = 0;
            if (__builtin_mul_overflow(count, static_cast<uint64_t>(d.value), &next))
                fail(m.pos, subject, "'shape' has too many elements");
            count = next;
        }
        if (count != m.value->size())
            fail(m.pos, subject,
                 "'values' has " + std::to_string(m.value->size()) + " elements but 'shape' has " +
                     std::to_string(count));
        std::vector<int64_t> values;
        values.reserve(m.value->size());
        for (std::size_t k = 0; k < m.value->size(); ++k)
            values.push_back(require_int((*m.value)[k], child(m.pos, k), subject,
                                         "element " + std::to_string(k) + " of 'values'"));
        return values;
    }

    // ---- nodes ----

    struct raw_node {
        node_spec spec;
        std::vector<named_ref> inputs, outputs;
        const source_pos* pos = nullptr;
        std::string subject;
    };

    raw_node read_node(const json& n, const source_pos* p, std::size_t index) {
        raw_node r;
        r.pos = p;
        r.spec.line = p ? p->line : 0;
        r.subject = "node at index " + std::to_string(index);
        if (!n.is_object()) fail(p, r.subject, "must be an object, not " + kind_of(n, p));
        member name = find_member(n, p, "name");
        if (!name) fail(p, r.subject, "missing 'name'");
        r.spec.name = require_string(name, r.subject, "name");
        r.subject = "node " + quote_name(r.spec.name) + " (index " + std::to_string(index) + ")";
        check_keys(n, p, r.subject, {"name", "op", "domain", "inputs", "outputs", "attributes"});
        member op = find_member(n, p, "op");
        if (!op) fail(p, r.subject, "missing 'op' (the ONNX operator type, e.g. \"Conv\")");
        r.spec.op = require_string(op, r.subject, "op");
        if (member m = find_member(n, p, "domain"))
            r.spec.domain = require_string(m, r.subject, "domain", true);
        if (member m = find_member(n, p, "inputs")) r.inputs = read_node_names(m, r, "inputs");
        member out = find_member(n, p, "outputs");
        if (!out) fail(p, r.subject, "missing 'outputs' (an array of tensor names)");
        r.outputs = read_node_names(out, r, "outputs");
        if (r.outputs.empty()) fail(out.pos, r.subject, "'outputs' must name at least one tensor");
        for (const named_ref& o : r.outputs)
            if (o.name.empty())
                fail(o.pos, r.subject,
                     "output names must not be empty (only inputs can be omitted)");
        if (member m = find_member(n, p, "attributes")) read_attributes(m, r);

        auto [it, fresh] = node_lines_.emplace(r.spec.name, r.spec.line);
        if (!fresh)
            fail(name.pos, r.subject,
                 "duplicate node name (first at line " + std::to_string(it->second) + ")");
        return r;
    }
    std::unordered_map<std::string, uint32_t> node_lines_;

    std::vector<named_ref> read_node_names(const member& m, const raw_node& r,
                                           const std::string& key) const {
        if (!m.value->is_array())
            fail(m.pos, r.subject,
                 "'" + key + "' must be an array of tensor names, not " + kind_of(*m.value, m.pos));
        std::vector<named_ref> out;
        for (std::size_t k = 0; k < m.value->size(); ++k) {
            const json& v = (*m.value)[k];
            const source_pos* p = child(m.pos, k);
            if (!v.is_string())
                fail(p, r.subject,
                     "'" + key + "' must be an array of tensor names; element " +
                         std::to_string(k) + " is " + kind_of(v, p));
            out.push_back({v.get<std::string>(), p});
        }
        return out;
    }

    void read_attributes(const member& m, raw_node& r) const {
        if (!m.value->is_object())
            fail(m.pos, r.subject,
                 "'attributes' must be an object, not " + kind_of(*m.value, m.pos));
        std::size_t k = 0;
        for (auto it = m.value->begin(); it != m.value->end(); ++it, ++k) {
            if (it.key().empty())
                fail(child(m.pos, k), r.subject, "attribute names must not be empty");
            r.spec.attributes.push_back(
                {it.key(), read_attribute(it.key(), *it, child(m.pos, k), r.subject)});
        }
    }

    enum class element { integer, real, string, other };

    element classify(const json& v, const source_pos* p) const {
        if (v.is_number_integer()) return element::integer;  // includes unsigned
        if (v.is_number_float()) return p && p->integer_token ? element::integer : element::real;
        if (v.is_string()) return element::string;
        return element::other;
    }

    static std::optional<double> special_float(const json& v) {
        if (!v.is_string()) return std::nullopt;
        const std::string& s = v.get_ref<const std::string&>();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        return std::nullopt;
    }

    double require_float(const json& v, const source_pos* p, const std::string& subject,
                         const std::string& what) const {
        if (v.is_number_float() && !(p && p->integer_token)) return v.get<double>();
        if (v.is_number()) return static_cast<double>(require_int(v, p, subject, what));
        if (std::optional<double> f = special_float(v)) return *f;
        fail(p, subject,
             what + " must be a number (or \"inf\", \"-inf\", \"nan\"), not " + kind_of(v, p));
    }

    attr_value read_attribute(const std::string& name, const json& v, const source_pos* p,
                              const std::string& subject) const {
        const std::string what = "attribute " + quote_name(name);
        const std::string kinds =
            "; attribute values are integers, numbers with a fraction or exponent, strings, "
            "arrays of those, or a typed object such as {\"ints\": []} or {\"floats\": [1, 2]}";
        switch (classify(v, p)) {
            case element::integer:
                return require_int(v, p, subject, what);
            case element::real:
                return v.get<double>();
            case element::string:
                return v.get<std::string>();
            case element::other:
                break;
        }
        if (v.is_array()) {
            if (v.empty())
                fail(p, subject,
                     what +
                         " is an empty array, whose type is ambiguous; write {\"ints\": []} or "
                         "{\"floats\": []}");
            bool any_real = false, any_int = false, any_string = false;
            for (std::size_t k = 0; k < v.size(); ++k) {
                const source_pos* ep = child(p, k);
                switch (classify(v[k], ep)) {
                    case element::integer:
                        any_int = true;
                        break;
                    case element::real:
                        any_real = true;
                        break;
                    case element::string:
                        any_string = true;
                        break;
                    case element::other:
                        fail(ep, subject,
                             what + ": element " + std::to_string(k) + " is " + kind_of(v[k], ep) +
                                 kinds);
                }
            }
            if (any_string && (any_int || any_real))
                fail(p, subject, what + " mixes strings and numbers" + kinds);
            if (any_string)
                fail(p, subject,
                     what +
                         " is a list of strings, which nnergy.graph/1 does not carry (the "
                         "plugin ABI has no string-list attributes)");
            if (any_real) {
                std::vector<double> out;
                for (std::size_t k = 0; k < v.size(); ++k)
                    out.push_back(require_float(v[k], child(p, k), subject,
                                                what + " element " + std::to_string(k)));
                return out;
            }
            std::vector<int64_t> out;
            for (std::size_t k = 0; k < v.size(); ++k)
                out.push_back(require_int(v[k], child(p, k), subject,
                                          what + " element " + std::to_string(k)));
            return out;
        }
        if (v.is_object()) {
            if (v.size() != 1)
                fail(p, subject,
                     what +
                         ": a typed value is an object with exactly one key: \"int\", "
                         "\"float\", \"string\", \"ints\" or \"floats\"");
            const std::string& type = v.begin().key();
            const json& x = *v.begin();
            const source_pos* xp = child(p, 0);
            if (type == "int") return require_int(x, xp, subject, what);
            if (type == "float") return require_float(x, xp, subject, what);
            if (type == "string") {
                if (!x.is_string())
                    fail(xp, subject, what + " must be a string, not " + kind_of(x, xp));
                return x.get<std::string>();
            }
            if (type == "ints" || type == "floats") {
                if (!x.is_array())
                    fail(xp, subject,
                         what + ": \"" + type + "\" must be an array, not " + kind_of(x, xp));
                if (type == "ints") {
                    std::vector<int64_t> out;
                    for (std::size_t k = 0; k < x.size(); ++k)
                        out.push_back(require_int(x[k], child(xp, k), subject,
                                                  what + " element " + std::to_string(k)));
                    return out;
                }
                std::vector<double> out;
                for (std::size_t k = 0; k < x.size(); ++k)
                    out.push_back(require_float(x[k], child(xp, k), subject,
                                                what + " element " + std::to_string(k)));
                return out;
            }
            if (type == "strings")
                fail(p, subject,
                     what +
                         " is a list of strings, which nnergy.graph/1 does not carry (the "
                         "plugin ABI has no string-list attributes)");
            fail(xp ? xp : p, subject,
                 what + ": unknown type " + quote_name(type) +
                     "; expected \"int\", \"float\", \"string\", \"ints\" or \"floats\"");
        }
        if (v.is_boolean())
            fail(p, subject,
                 what + " is " + kind_of(v, p) +
                     "; ONNX attributes have no boolean type: write 1 or 0");
        fail(p, subject, what + " is " + kind_of(v, p) + kinds);
    }

    // ---- references ----

    uint32_t declare_implicit(const std::string& name) {
        tensor_spec t;
        t.name = name;
        auto id = static_cast<uint32_t>(g_.tensors.size());
        g_.tensors.push_back(std::move(t));
        tensor_ids_.emplace(name, id);
        return id;
    }

    std::string node_where(uint32_t n) const {
        const node_spec& s = g_.nodes[n];
        return quote_name(s.name) + (s.line ? " (line " + std::to_string(s.line) + ")" : "");
    }

    void resolve(std::vector<raw_node>& raw, const std::vector<named_ref>& inputs,
                 const std::vector<named_ref>& outputs) {
        // Which node produces each name, before anything is declared implicitly.
        std::unordered_map<std::string, std::size_t> produced_by;
        for (std::size_t n = 0; n < raw.size(); ++n) {
            for (const named_ref& o : raw[n].outputs) {
                auto [it, fresh] = produced_by.emplace(o.name, n);
                if (!fresh)
                    fail(o.pos, raw[n].subject,
                         "output " + quote_name(o.name) + " is already produced by node " +
                             quote_name(raw[it->second].spec.name) +
                             (raw[it->second].spec.line
                                  ? " (line " + std::to_string(raw[it->second].spec.line) + ")"
                                  : ""));
            }
        }
        std::unordered_map<std::string, const named_ref*> graph_inputs;
        for (const named_ref& in : inputs) {
            auto it = tensor_ids_.find(in.name);
            if (it == tensor_ids_.end())
                fail(in.pos, "",
                     "graph input " + quote_name(in.name) +
                         " is not declared in 'tensors' (inputs need a dtype and a shape)");
            const tensor_spec& t = g_.tensors[it->second];
            const std::string subject = "graph input " + quote_name(in.name);
            if (!graph_inputs.emplace(in.name, &in).second)
                fail(in.pos, subject, "listed twice in 'inputs'");
            if (t.initializer)
                fail(in.pos, subject,
                     "is an initializer; list only activations in 'inputs' (initializers are "
                     "found through \"initializer\": true)");
            if (t.dtype == NNERGY_DTYPE_UNDEFINED)
                fail(in.pos, subject, "needs a 'dtype' in its 'tensors' entry");
            if (!t.shape) fail(in.pos, subject, "needs a 'shape' in its 'tensors' entry");
            if (auto p = produced_by.find(in.name); p != produced_by.end())
                fail(in.pos, subject,
                     "is also produced by node " + quote_name(raw[p->second].spec.name));
            g_.inputs.push_back(it->second);
        }

        for (std::size_t n = 0; n < raw.size(); ++n) {
            raw_node& r = raw[n];
            for (const named_ref& in : r.inputs) {
                if (in.name.empty()) {
                    r.spec.inputs.push_back(NNERGY_NO_TENSOR);
                    continue;
                }
                auto it = tensor_ids_.find(in.name);
                uint32_t id = 0;
                bool produced = produced_by.count(in.name) != 0;
                if (it != tensor_ids_.end()) {
                    id = it->second;
                } else if (produced) {
                    id = declare_implicit(in.name);
                } else {
                    fail(in.pos, r.subject,
                         "input " + quote_name(in.name) +
                             " is not declared in 'tensors' and no node produces it");
                }
                const tensor_spec& t = g_.tensors[id];
                if (!produced && !t.initializer && !graph_inputs.count(in.name))
                    fail(in.pos, r.subject,
                         "input " + quote_name(in.name) +
                             " is neither a graph input, an initializer, nor produced by a node");
                r.spec.inputs.push_back(id);
            }
            for (const named_ref& o : r.outputs) {
                auto it = tensor_ids_.find(o.name);
                uint32_t id = it != tensor_ids_.end() ? it->second : declare_implicit(o.name);
                if (g_.tensors[id].initializer)
                    fail(o.pos, r.subject, "output " + quote_name(o.name) + " is an initializer");
                r.spec.outputs.push_back(id);
            }
            g_.nodes.push_back(std::move(r.spec));
        }

        std::unordered_map<std::string, bool> seen_outputs;
        for (const named_ref& o : outputs) {
            const std::string subject = "graph output " + quote_name(o.name);
            auto it = tensor_ids_.find(o.name);
            if (it == tensor_ids_.end())
                fail(o.pos, subject, "is neither declared in 'tensors' nor produced by a node");
            if (!seen_outputs.emplace(o.name, true).second)
                fail(o.pos, subject, "listed twice in 'outputs'");
            const tensor_spec& t = g_.tensors[it->second];
            if (!produced_by.count(o.name) && !graph_inputs.count(o.name) && !t.initializer)
                fail(o.pos, subject, "is declared but no node produces it");
            g_.outputs.push_back(it->second);
        }
        check_acyclic();
    }

    /// Kahn's algorithm; on a cycle, names its nodes in order, with their lines.
    void check_acyclic() const {
        const std::size_t n_nodes = g_.nodes.size();
        std::vector<uint32_t> producer(g_.tensors.size(), NNERGY_NO_NODE);
        for (uint32_t n = 0; n < n_nodes; ++n)
            for (uint32_t t : g_.nodes[n].outputs) producer[t] = n;
        std::vector<std::size_t> pending(n_nodes, 0);
        std::vector<std::vector<uint32_t>> consumers(n_nodes);
        for (uint32_t n = 0; n < n_nodes; ++n)
            for (uint32_t t : g_.nodes[n].inputs)
                if (t != NNERGY_NO_TENSOR && producer[t] != NNERGY_NO_NODE) {
                    ++pending[n];
                    consumers[producer[t]].push_back(n);
                }
        std::vector<uint32_t> ready;
        for (uint32_t n = 0; n < n_nodes; ++n)
            if (!pending[n]) ready.push_back(n);
        std::size_t done = 0;
        while (!ready.empty()) {
            uint32_t n = ready.back();
            ready.pop_back();
            ++done;
            for (uint32_t c : consumers[n])
                if (--pending[c] == 0) ready.push_back(c);
        }
        if (done == n_nodes) return;
        // Walk producers backwards from a stuck node until one repeats: that loop is a cycle.
        uint32_t start = 0;
        while (!pending[start]) ++start;
        std::vector<uint32_t> path;
        std::vector<std::size_t> index_in_path(n_nodes, SIZE_MAX);
        uint32_t cur = start;
        while (index_in_path[cur] == SIZE_MAX) {
            index_in_path[cur] = path.size();
            path.push_back(cur);
            uint32_t next = NNERGY_NO_NODE;
            for (uint32_t t : g_.nodes[cur].inputs)
                if (t != NNERGY_NO_TENSOR && producer[t] != NNERGY_NO_NODE &&
                    pending[producer[t]]) {
                    next = producer[t];
                    break;
                }
            if (next == NNERGY_NO_NODE) break;  // cannot happen: a stuck node has a stuck input
            cur = next;
        }
        std::vector<uint32_t> cycle(
            path.begin() + static_cast<std::ptrdiff_t>(std::min(index_in_path[cur], path.size())),
            path.end());
        std::reverse(cycle.begin(), cycle.end());  // producers first
        // Start at the node that comes first in the file, for a stable, readable message.
        std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
        std::string chain;
        for (uint32_t n : cycle) chain += node_where(n) + " -> ";
        chain += quote_name(g_.nodes[cycle.empty() ? start : cycle.front()].name);
        source_pos at;
        at.line = g_.nodes[cycle.empty() ? start : cycle.front()].line;
        fail(&at, "", "the nodes form a cycle: " + chain);
    }
};

}  // namespace detail

/// Reads a document. `file` names it in messages. Throws parse_error.
inline graph_spec parse_graph(std::string_view text, std::string_view file) {
    return detail::reader(file).read(text);
}

/// Feeds a description into a graph builder with the interface of nnergy::sdk::graph_builder.
/// The graph's name is passed as metadata "name", first, which is how the ABI names graphs.
/// Errors the builder raises are rethrown as parse_error naming the file and node.
template <class Builder>
void build_graph(const graph_spec& g, std::string_view file, std::string_view fallback_name,
                 Builder& b) {
    using dim_type = typename Builder::dim;
    auto where = [&](uint32_t line, const std::string& subject) {
        std::string m(file);
        if (line) m += ":" + std::to_string(line);
        return m + ": " + subject + ": ";
    };
    std::string subject = "graph";
    uint32_t line = 0;
    try {
        b.metadata("name", g.name.empty() ? fallback_name : std::string_view(g.name));
        for (const auto& [k, v] : g.metadata) b.metadata(k, v);
        std::vector<uint32_t> ids;
        ids.reserve(g.tensors.size());
        for (const tensor_spec& t : g.tensors) {
            subject = "tensor " + detail::quote_name(t.name);
            line = t.line;
            std::optional<std::vector<dim_type>> shape;
            if (t.shape) {
                shape.emplace();
                for (const dim_spec& d : *t.shape) {
                    dim_type x;
                    x.value = d.value;
                    x.symbol = d.symbol;
                    shape->push_back(std::move(x));
                }
            }
            uint32_t id = b.add_tensor(t.name, t.dtype, shape);
            if (t.initializer) b.set_initializer(id);
            if (t.values) b.set_initializer_values(id, *t.values);
            ids.push_back(id);
        }
        auto map = [&](const std::vector<uint32_t>& v) {
            std::vector<uint32_t> out;
            out.reserve(v.size());
            for (uint32_t t : v) out.push_back(t == NNERGY_NO_TENSOR ? NNERGY_NO_TENSOR : ids[t]);
            return out;
        };
        subject = "graph inputs";
        line = 0;
        for (uint32_t t : g.inputs) b.add_input(ids[t]);
        for (std::size_t k = 0; k < g.nodes.size(); ++k) {
            const node_spec& n = g.nodes[k];
            subject = "node " + detail::quote_name(n.name) + " (index " + std::to_string(k) + ")";
            line = n.line;
            uint32_t id = b.add_node(n.name, n.op, n.domain, map(n.inputs), map(n.outputs));
            for (const attr_spec& a : n.attributes)
                std::visit([&](const auto& v) { b.attr(id, a.name, v); }, a.value);
            if (n.line) b.source_line(id, n.line);
        }
        subject = "graph outputs";
        line = 0;
        for (uint32_t t : g.outputs) b.add_output(ids[t]);
    } catch (const parse_error&) {
        throw;
    } catch (const std::exception& e) {
        throw parse_error(where(line, subject) + e.what());
    }
}

}  // namespace nnergy::json_graph
