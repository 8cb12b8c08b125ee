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
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nnergy/dtype.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "json_document.hpp"

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
    bool constant = false;  ///< a constant of the model's code, not a parameter
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

namespace detail {

/// Names (views into the document, which outlives the map) to 32-bit values: open addressing
/// over (hash, value, name) slots, so a name costs no allocation of its own.
class name_map {
public:
    void reserve(std::size_t n) {
        std::size_t want = 16;
        while (want < 2 * n) want *= 2;
        if (want > slots_.size()) rehash(want);
    }
    static std::size_t hash(std::string_view name) noexcept {
        return std::hash<std::string_view>{}(name);
    }
    /// Asks for the slot where `hash` starts probing to be brought into the cache: on graphs
    /// whose tables outgrow the caches, a lookup is a memory access, and issuing it a few names
    /// ahead hides its latency.
    void prefetch(std::size_t h) const noexcept {
        if (!slots_.empty()) __builtin_prefetch(&slots_[h & (slots_.size() - 1)]);
    }
    /// The value held for `name` (whose hash is `h`), or null.
    const uint32_t* find(std::string_view name, std::size_t h) const noexcept {
        if (slots_.empty()) return nullptr;
        const slot& s = slots_[probe(h, name)];
        return s.used ? &s.value : nullptr;
    }
    const uint32_t* find(std::string_view name) const noexcept { return find(name, hash(name)); }
    /// Adds `name` with `value` unless it is there; returns its value and whether it was added.
    std::pair<uint32_t, bool> emplace(std::string_view name, std::size_t h, uint32_t value) {
        if (2 * (count_ + 1) > slots_.size()) rehash(std::max<std::size_t>(16, 2 * slots_.size()));
        slot& s = slots_[probe(h, name)];
        if (s.used) return {s.value, false};
        s = slot{h, name, value, true};
        ++count_;
        return {value, true};
    }
    std::pair<uint32_t, bool> emplace(std::string_view name, uint32_t value) {
        return emplace(name, hash(name), value);
    }

private:
    struct slot {
        std::size_t hash = 0;
        std::string_view name;
        uint32_t value = 0;
        bool used = false;
    };
    /// The slot holding `name`, else the empty slot where it would go.
    std::size_t probe(std::size_t h, std::string_view name) const noexcept {
        const std::size_t mask = slots_.size() - 1;
        std::size_t at = h & mask;
        while (slots_[at].used && !(slots_[at].hash == h && slots_[at].name == name))
            at = (at + 1) & mask;
        return at;
    }
    void rehash(std::size_t size) {
        std::vector<slot> old = std::move(slots_);
        slots_.assign(size, slot{});
        const std::size_t mask = size - 1;
        for (const slot& s : old)
            if (s.used) {
                std::size_t at = s.hash & mask;
                while (slots_[at].used) at = (at + 1) & mask;
                slots_[at] = s;
            }
    }
    std::vector<slot> slots_;  ///< a power of two in size, at most half full
    std::size_t count_ = 0;
};

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

/// Escapes every byte that is not printable ASCII (syntax messages may quote raw input).
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

/// "a string", "an array", ...: what a JSON value is, for messages.
inline std::string kind_of(const json_value& j) {
    switch (j.type) {
        case json_value::kind::null:
            return "null";
        case json_value::kind::boolean:
            return j.boolean ? "true" : "false";
        case json_value::kind::integer:
        case json_value::kind::unsigned_integer:
        case json_value::kind::big_integer:
            return "an integer";
        case json_value::kind::real:
            return "a number with a fraction or exponent";
        case json_value::kind::string:
            return "a string";
        case json_value::kind::array:
            return "an array";
        case json_value::kind::object:
            return "an object";
    }
    return "an unsupported value";
}

// ------------------------------------------------------------------------------------------------
// The reader
// ------------------------------------------------------------------------------------------------

class reader {
public:
    explicit reader(std::string_view file) : file_(file) {}

    graph_spec read(std::string_view text) {
        std::optional<json_document> doc;
        try {
            doc.emplace(text, max_nesting,
                        std::initializer_list<std::string_view>{"tensors", "nodes"});
            doc_ = &*doc;
            return read_document(doc->root());
        } catch (const json_syntax_error& e) {
            const line_index& lines = doc ? doc->lines() : line_index(text);
            const std::string where = file_ + ":" + std::to_string(lines.line(e.offset())) + ":" +
                                      std::to_string(lines.column(e.offset())) + ": ";
            const std::string what = e.what();
            // Structure problems are "invalid JSON"; a number or a depth beyond the limits is
            // named as such.
            const bool limit = what.rfind("number out of range", 0) == 0 ||
                               what.rfind("nesting deeper", 0) == 0 ||
                               what.rfind("duplicate key", 0) == 0;
            throw parse_error(where + (limit ? "" : "invalid JSON: ") + printable(what));
        }
    }

private:
    /// Who a message is about, formatted only when a message is needed.
    struct subject_ref {
        enum class kind : uint8_t { text, tensor, node, graph_input, graph_output };
        kind what = kind::text;
        std::string_view name;  ///< empty until the name is read
        std::size_t index = 0;

        subject_ref(const char* fixed = "") : name(fixed) {}
        subject_ref(kind k, std::string_view n, std::size_t i = 0) : what(k), name(n), index(i) {}

        std::string str() const {
            switch (what) {
                case kind::text:
                    return std::string(name);
                case kind::tensor:
                    return name.empty()
                               ? "tensor at index " + std::to_string(index) + " of 'tensors'"
                               : "tensor " + quote_name(name) + " (index " + std::to_string(index) +
                                     " of 'tensors')";
                case kind::node:
                    return name.empty() ? "node at index " + std::to_string(index)
                                        : "node " + quote_name(name) + " (index " +
                                              std::to_string(index) + ")";
                case kind::graph_input:
                    return "graph input " + quote_name(name);
                case kind::graph_output:
                    return "graph output " + quote_name(name);
            }
            return {};
        }
    };

    std::string file_;
    json_document* doc_ = nullptr;
    graph_spec g_;
    name_map tensor_ids_;  ///< names point into the document

    // ---- access ----

    static uint32_t line_of(const json_value& v) noexcept { return v.line; }
    std::size_t size(const json_value& v) const noexcept { return v.child_count; }
    const json_value& at(const json_value& v, std::size_t k) const noexcept {
        return doc_->child(v, k);
    }
    /// An object member by key; null if absent.
    const json_value* find_member(const json_value& obj, std::string_view key) const noexcept {
        for (const json_value* m = doc_->children_begin(obj); m != doc_->children_end(obj); ++m)
            if (m->key == key) return m;
        return nullptr;
    }
    struct members {
        const json_value* b;
        const json_value* e;
        const json_value* begin() const noexcept { return b; }
        const json_value* end() const noexcept { return e; }
    };
    members members_of(const json_value& obj) const noexcept {
        return {doc_->children_begin(obj), doc_->children_end(obj)};
    }
    /// The members named `keys[k]`, found in one pass (null where absent), and whether the
    /// object has a key not in `keys` (check_keys() then says which). The document refuses
    /// duplicate keys, so each is found at most once.
    template <std::size_t N>
    std::pair<std::array<const json_value*, N>, bool> keyed_members(
        const json_value& obj, const std::array<std::string_view, N>& keys) const noexcept {
        std::pair<std::array<const json_value*, N>, bool> out{};
        for (const json_value& m : members_of(obj)) {
            std::size_t k = 0;
            while (k < N && m.key != keys[k]) ++k;
            if (k < N)
                out.first[k] = &m;
            else
                out.second = true;
        }
        return out;
    }

    // ---- errors ----

    [[noreturn]] void fail(const json_value* p, const subject_ref& subject, const std::string& what,
                           nnergy_status_code code = NNERGY_CODE_INVALID_ARGUMENT) const {
        fail_at_line(p ? line_of(*p) : 0, subject, what, code);
    }

    [[noreturn]] void fail_at(uint32_t offset, const subject_ref& subject,
                              const std::string& what) const {
        fail_at_line(doc_->lines().line(offset), subject, what);
    }

    [[noreturn]] void fail_at_line(uint32_t line, const subject_ref& subject,
                                   const std::string& what,
                                   nnergy_status_code code = NNERGY_CODE_INVALID_ARGUMENT) const {
        std::string m = file_;
        if (line) m += ":" + std::to_string(line);
        m += ": ";
        if (std::string who = subject.str(); !who.empty()) m += who + ": ";
        m += what;
        throw parse_error(m, code);
    }

    /// Rejects keys outside `allowed`, suggesting the nearest allowed one.
    void check_keys(const json_value& obj, const subject_ref& subject,
                    std::initializer_list<std::string_view> allowed) const {
        check_keys(obj, subject, allowed.begin(), allowed.end());
    }
    template <std::size_t N>
    void check_keys(const json_value& obj, const subject_ref& subject,
                    const std::array<std::string_view, N>& allowed) const {
        check_keys(obj, subject, allowed.data(), allowed.data() + N);
    }
    void check_keys(const json_value& obj, const subject_ref& subject,
                    const std::string_view* allowed_begin,
                    const std::string_view* allowed_end) const {
        struct {
            const std::string_view *b, *e;
            const std::string_view* begin() const noexcept { return b; }
            const std::string_view* end() const noexcept { return e; }
        } const allowed{allowed_begin, allowed_end};
        for (const json_value& m : members_of(obj)) {
            const std::string_view key = m.key;
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
            fail(&m, subject, what);
        }
    }

    std::string require_string(const json_value& m, const subject_ref& subject,
                               const std::string& key, bool allow_empty = false) const {
        if (m.type != json_value::kind::string)
            fail(&m, subject, "'" + key + "' must be a string, not " + kind_of(m));
        if (m.string.empty() && !allow_empty) fail(&m, subject, "'" + key + "' must not be empty");
        return std::string(m.string);
    }

    /// A JSON integer that fits int64_t.
    /// `what()` names the value in messages; it is only called on failure.
    template <class What>
    int64_t require_int(const json_value& j, const subject_ref& subject, const What& what) const {
        switch (j.type) {
            case json_value::kind::integer:
                return j.integer;
            case json_value::kind::unsigned_integer:
                fail(&j, subject,
                     what() + " " + std::to_string(j.unsigned_integer) +
                         " is out of the 64-bit integer range");
            case json_value::kind::big_integer:
                fail(&j, subject, what() + " is out of the 64-bit integer range");
            default:
                fail(&j, subject, what() + " must be an integer, not " + kind_of(j));
        }
    }

    // ---- document ----

    graph_spec read_document(const json_value doc) {
        if (doc.type != json_value::kind::object)
            fail(&doc, "",
                 "expected a JSON object with \"schema\": \"" + std::string(schema_id) +
                     "\", found " + kind_of(doc));
        const json_value* schema = find_member(doc, "schema");
        if (!schema)
            fail(&doc, "",
                 "missing \"schema\": this reader expects \"schema\": \"" + std::string(schema_id) +
                     "\"");
        std::string id = require_string(*schema, "", "schema");
        if (id != schema_id) {
            if (id.rfind(schema_family, 0) == 0)
                fail(schema, "",
                     "unsupported schema version " + quote_name(id) + "; this reader supports '" +
                         std::string(schema_id) + "'",
                     NNERGY_CODE_UNSUPPORTED_VERSION);
            fail(schema, "",
                 "'schema' is " + quote_name(id) + ", not '" + std::string(schema_id) + "'");
        }
        check_keys(doc, "",
                   {"schema", "name", "metadata", "inputs", "outputs", "tensors", "nodes"});

        if (const json_value* m = find_member(doc, "name"))
            g_.name = require_string(*m, "", "name");
        if (const json_value* m = find_member(doc, "metadata")) read_metadata(*m);
        // Copies, not references: streaming appends to the document's storage.
        const json_value* tensors_member = find_member(doc, "tensors");
        const json_value tensors = tensors_member ? *tensors_member : json_value{};
        if (tensors_member && tensors.type != json_value::kind::array)
            fail(&tensors, "", "'tensors' must be an array, not " + kind_of(tensors));
        const json_value* nodes_member = find_member(doc, "nodes");
        if (!nodes_member) fail(&doc, "", "missing 'nodes' (an array of nodes)");
        const json_value nodes = *nodes_member;
        if (nodes.type != json_value::kind::array)
            fail(&nodes, "", "'nodes' must be an array, not " + kind_of(nodes));
        // Both lists in one pass, in file order (json_document::for_each_element).
        std::vector<raw_node> raw;
        raw.reserve(nodes.child_count);
        g_.nodes.reserve(nodes.child_count);
        declared_name_lines_.reserve(tensors.child_count);
        g_.tensors.reserve(tensors.child_count + nodes.child_count);
        tensor_ids_.reserve(tensors.child_count + nodes.child_count);
        doc_->for_each_element({tensors_member ? &tensors : nullptr, &nodes},
                               [&](std::size_t which, const json_value& e, std::size_t k) {
                                   if (which == 0)
                                       read_tensor(e, k);
                                   else
                                       raw.push_back(read_node(e, k));
                               });

        std::vector<named_ref> inputs, outputs;
        if (const json_value* m = find_member(doc, "inputs")) inputs = read_names(*m, "inputs");
        const json_value* out = find_member(doc, "outputs");
        if (!out) fail(&doc, "", "missing 'outputs' (an array of tensor names)");
        outputs = read_names(*out, "outputs");

        resolve(raw, inputs, outputs);
        return std::move(g_);
    }

    void read_metadata(const json_value& m) {
        if (m.type != json_value::kind::object)
            fail(&m, "", "'metadata' must be an object of strings, not " + kind_of(m));
        for (const json_value& v : members_of(m)) {
            if (v.key.empty()) fail(&v, "metadata", "keys must not be empty");
            if (v.key == "name")
                fail(&v, "metadata", "the graph's name goes in the top-level 'name', not here");
            if (v.type != json_value::kind::string)
                fail(&v, "metadata",
                     "value of " + quote_name(v.key) + " must be a string, not " + kind_of(v));
            g_.metadata.emplace_back(std::string(v.key), std::string(v.string));
        }
    }

    struct named_ref {
        std::string_view name;  ///< points into the document
        uint32_t offset = 0;
        std::size_t hash = 0;  ///< name_map::hash(name), taken while the text is in the cache
    };

    std::vector<named_ref> read_names(const json_value& m, const std::string& key) const {
        if (m.type != json_value::kind::array)
            fail(&m, "", "'" + key + "' must be an array of tensor names, not " + kind_of(m));
        std::vector<named_ref> out;
        out.reserve(size(m));
        for (std::size_t k = 0; k < size(m); ++k) {
            const json_value& v = at(m, k);
            if (v.type != json_value::kind::string || v.string.empty())
                fail(&v, "",
                     "'" + key + "' must be an array of tensor names; element " +
                         std::to_string(k) + " is " +
                         (v.type == json_value::kind::string ? std::string("an empty string")
                                                             : kind_of(v)));
            out.push_back({v.string, v.offset, 0});
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

    /// A dimension expression as ONNX exporters write them and `nnergy convert` passes on
    /// (`seq + 1`, `Max(1, seq)`, `2*s0`): names, integers, operators, parentheses, commas and
    /// single spaces inside; the host evaluates it over the bound symbols.
    static bool valid_expression(std::string_view s) noexcept {
        if (s.empty() || s.front() == ' ' || s.back() == ' ') return false;
        bool has_name = false;
        for (char c : s) {
            auto u = static_cast<unsigned char>(c);
            if (u == '_' || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z'))
                has_name = true;
            else if (!((u >= '0' && u <= '9') ||
                       std::string_view(" +-*/%(),.").find(c) != std::string_view::npos))
                return false;
        }
        return has_name;
    }

    void read_tensor(const json_value& t, std::size_t index) {
        subject_ref subject(subject_ref::kind::tensor, {}, index);
        if (t.type != json_value::kind::object)
            fail(&t, subject, "must be an object, not " + kind_of(t));
        tensor_spec spec;
        spec.line = line_of(t);
        spec.declared = true;
        static constexpr std::array<std::string_view, 6> keys{"name",        "dtype",    "shape",
                                                              "initializer", "constant", "values"};
        const auto [member, unknown_key] = keyed_members(t, keys);
        const json_value* name = member[0];
        if (!name) fail(&t, subject, "missing 'name'");
        spec.name = require_string(*name, subject, "name");
        subject.name = name->string;
        if (unknown_key) check_keys(t, subject, keys);

        if (const json_value* m = member[1]) {
            std::string d = require_string(*m, subject, "dtype");
            std::optional<nnergy_dtype> dt = dtype_from_schema_name(d);
            if (!dt) {
                std::string names;
                for (const sdk::dtype_info& e : sdk::k_dtypes)
                    if (e.dtype != NNERGY_DTYPE_TFLOAT32)
                        names += (names.empty() ? "" : ", ") + std::string(e.name);
                fail(m, subject, "unknown dtype " + quote_name(d) + "; expected one of: " + names);
            }
            spec.dtype = *dt;
        }
        if (const json_value* m = member[2]) spec.shape = read_shape(*m, subject);
        if (const json_value* m = member[3]) {
            if (m->type != json_value::kind::boolean)
                fail(m, subject, "'initializer' must be true or false, not " + kind_of(*m));
            spec.initializer = m->boolean;
        }
        if (const json_value* m = member[4]) {
            if (m->type != json_value::kind::boolean)
                fail(m, subject, "'constant' must be true or false, not " + kind_of(*m));
            spec.constant = m->boolean;
            if (spec.constant && !spec.initializer)
                fail(m, subject, "'constant' requires \"initializer\": true");
        }
        if (spec.initializer) {
            if (spec.dtype == NNERGY_DTYPE_UNDEFINED)
                fail(&t, subject, "an initializer needs a 'dtype'");
            if (!spec.shape) fail(&t, subject, "an initializer needs a 'shape'");
        }
        if (const json_value* m = member[5]) spec.values = read_values(*m, spec, subject);
        // Names are registered once all are read (register_names()).
        declared_name_lines_.push_back(name->line);
        g_.tensors.push_back(std::move(spec));
    }
    std::vector<uint32_t> declared_name_lines_;  ///< the line of each declared tensor's "name"

    std::vector<dim_spec> read_shape(const json_value& m, const subject_ref& subject) const {
        if (m.type != json_value::kind::array)
            fail(&m, subject, "'shape' must be an array of dimensions, not " + kind_of(m));
        std::vector<dim_spec> shape;
        shape.reserve(size(m));
        for (std::size_t k = 0; k < size(m); ++k) {
            const json_value& d = at(m, k);
            auto what = [k] { return "dimension " + std::to_string(k) + " of 'shape'"; };
            dim_spec dim;
            if (d.type == json_value::kind::null) {
                // unknown dimension
            } else if (d.type == json_value::kind::string) {
                dim.symbol = std::string(d.string);
                if (!valid_symbol(dim.symbol) && !valid_expression(dim.symbol))
                    fail(&d, subject,
                         what() + " is " + quote_name(dim.symbol) +
                             "; a symbol starts with a letter or '_' and has no spaces, an "
                             "expression such as \"seq + 1\" names a symbol (numbers are written "
                             "without quotes)");
            } else if (d.is_number()) {
                dim.value = require_int(d, subject, what);
                if (dim.value < 0)
                    fail(&d, subject,
                         what() + " is " + std::to_string(dim.value) +
                             "; dimensions are integers >= 0, symbol names like \"batch\", or "
                             "null for unknown");
            } else {
                fail(&d, subject,
                     what() + " must be an integer, a symbol name or null, not " + kind_of(d));
            }
            shape.push_back(std::move(dim));
        }
        return shape;
    }

    std::vector<int64_t> read_values(const json_value& m, const tensor_spec& spec,
                                     const subject_ref& subject) const {
        if (m.type != json_value::kind::array)
            fail(&m, subject, "'values' must be an array of integers, not " + kind_of(m));
        if (!spec.initializer) fail(&m, subject, "'values' requires \"initializer\": true");
        if (!is_integer_dtype(spec.dtype))
            fail(&m, subject,
                 "'values' are allowed only for integer dtypes (shape constants); weights carry "
                 "no values");
        uint64_t count = 1;
        for (const dim_spec& d : *spec.shape) {
            if (!d.symbol.empty() || d.value < 0)
                fail(&m, subject, "a tensor with 'values' needs a fully concrete 'shape'");
            uint64_t next = 0;
            if (__builtin_mul_overflow(count, static_cast<uint64_t>(d.value), &next))
                fail(&m, subject, "'shape' has too many elements");
            count = next;
        }
        if (count != size(m))
            fail(&m, subject,
                 "'values' has " + std::to_string(size(m)) + " elements but 'shape' has " +
                     std::to_string(count));
        std::vector<int64_t> values;
        values.reserve(size(m));
        for (std::size_t k = 0; k < size(m); ++k)
            values.push_back(require_int(at(m, k), subject, [k] {
                return "element " + std::to_string(k) + " of 'values'";
            }));
        return values;
    }

    // ---- nodes ----

    /// What resolving a node's names needs beside its description (which goes straight into
    /// graph_spec::nodes, at the same index).
    struct raw_node {
        std::vector<named_ref> inputs, outputs;
        subject_ref subject;
        uint32_t name_line = 0;  ///< the line of its "name" (node_spec::line is the node's)
    };

    raw_node read_node(const json_value& n, std::size_t index) {
        raw_node r;
        node_spec& spec = g_.nodes.emplace_back();
        spec.line = line_of(n);
        r.subject = subject_ref(subject_ref::kind::node, {}, index);
        if (n.type != json_value::kind::object)
            fail(&n, r.subject, "must be an object, not " + kind_of(n));
        static constexpr std::array<std::string_view, 6> keys{"name",   "op",      "domain",
                                                              "inputs", "outputs", "attributes"};
        const auto [member, unknown_key] = keyed_members(n, keys);
        const json_value* name = member[0];
        if (!name) fail(&n, r.subject, "missing 'name'");
        spec.name = require_string(*name, r.subject, "name");
        r.subject.name = name->string;
        if (unknown_key) check_keys(n, r.subject, keys);
        const json_value* op = member[1];
        if (!op) fail(&n, r.subject, "missing 'op' (the ONNX operator type, e.g. \"Conv\")");
        spec.op = require_string(*op, r.subject, "op");
        if (const json_value* m = member[2])
            spec.domain = require_string(*m, r.subject, "domain", true);
        if (const json_value* m = member[3]) r.inputs = read_node_names(*m, r, "inputs");
        const json_value* out = member[4];
        if (!out) fail(&n, r.subject, "missing 'outputs' (an array of tensor names)");
        r.outputs = read_node_names(*out, r, "outputs");
        if (r.outputs.empty()) fail(out, r.subject, "'outputs' must name at least one tensor");
        for (const named_ref& o : r.outputs)
            if (o.name.empty())
                fail_at(o.offset, r.subject,
                        "output names must not be empty (only inputs can be omitted)");
        if (const json_value* m = member[5]) read_attributes(*m, spec, r.subject);
        r.name_line = name->line;
        return r;
    }

    std::vector<named_ref> read_node_names(const json_value& m, const raw_node& r,
                                           const std::string& key) const {
        if (m.type != json_value::kind::array)
            fail(&m, r.subject,
                 "'" + key + "' must be an array of tensor names, not " + kind_of(m));
        std::vector<named_ref> out;
        out.reserve(size(m));
        for (std::size_t k = 0; k < size(m); ++k) {
            const json_value& v = at(m, k);
            if (v.type != json_value::kind::string)
                fail(&v, r.subject,
                     "'" + key + "' must be an array of tensor names; element " +
                         std::to_string(k) + " is " + kind_of(v));
            out.push_back({v.string, v.offset, name_map::hash(v.string)});
        }
        return out;
    }

    void read_attributes(const json_value& m, node_spec& spec, const subject_ref& subject) const {
        if (m.type != json_value::kind::object)
            fail(&m, subject, "'attributes' must be an object, not " + kind_of(m));
        spec.attributes.reserve(size(m));
        for (const json_value& a : members_of(m)) {
            if (a.key.empty()) fail(&a, subject, "attribute names must not be empty");
            spec.attributes.push_back({std::string(a.key), read_attribute(a.key, a, subject)});
        }
    }

    enum class element { integer, real, string, other };

    static element classify(const json_value& v) noexcept {
        if (v.is_integer()) return element::integer;
        if (v.type == json_value::kind::real) return element::real;
        if (v.type == json_value::kind::string) return element::string;
        return element::other;
    }

    static std::optional<double> special_float(const json_value& v) {
        if (v.type != json_value::kind::string) return std::nullopt;
        if (v.string == "inf") return std::numeric_limits<double>::infinity();
        if (v.string == "-inf") return -std::numeric_limits<double>::infinity();
        if (v.string == "nan") return std::numeric_limits<double>::quiet_NaN();
        return std::nullopt;
    }

    template <class What>
    double require_float(const json_value& v, const subject_ref& subject, const What& what) const {
        if (v.type == json_value::kind::real) return v.real;
        if (v.is_number()) return static_cast<double>(require_int(v, subject, what));
        if (std::optional<double> f = special_float(v)) return *f;
        fail(&v, subject,
             what() + " must be a number (or \"inf\", \"-inf\", \"nan\"), not " + kind_of(v));
    }

    attr_value read_attribute(std::string_view name, const json_value& v,
                              const subject_ref& subject) const {
        auto what = [name] { return "attribute " + quote_name(name); };
        static constexpr const char* kinds =
            "; attribute values are integers, numbers with a fraction or exponent, strings, "
            "arrays of those, or a typed object such as {\"ints\": []} or {\"floats\": [1, 2]}";
        switch (classify(v)) {
            case element::integer:
                return require_int(v, subject, what);
            case element::real:
                return v.real;
            case element::string:
                return std::string(v.string);
            case element::other:
                break;
        }
        if (v.type == json_value::kind::array) {
            if (size(v) == 0)
                fail(&v, subject,
                     what() +
                         " is an empty array, whose type is ambiguous; write {\"ints\": []} or "
                         "{\"floats\": []}");
            bool any_real = false, any_int = false, any_string = false;
            for (std::size_t k = 0; k < size(v); ++k) {
                const json_value& e = at(v, k);
                switch (classify(e)) {
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
                        fail(&e, subject,
                             what() + ": element " + std::to_string(k) + " is " + kind_of(e) +
                                 kinds);
                }
            }
            if (any_string && (any_int || any_real))
                fail(&v, subject, what() + " mixes strings and numbers" + kinds);
            if (any_string)
                fail(&v, subject,
                     what() +
                         " is a list of strings, which nnergy.graph/1 does not carry (the "
                         "plugin ABI has no string-list attributes)");
            if (any_real) return list_of<double>(v, subject, what);
            return list_of<int64_t>(v, subject, what);
        }
        if (v.type == json_value::kind::object) {
            if (size(v) != 1)
                fail(&v, subject,
                     what() +
                         ": a typed value is an object with exactly one key: \"int\", "
                         "\"float\", \"string\", \"ints\" or \"floats\"");
            const json_value& x = at(v, 0);
            const std::string_view type = x.key;
            if (type == "int") return require_int(x, subject, what);
            if (type == "float") return require_float(x, subject, what);
            if (type == "string") {
                if (x.type != json_value::kind::string)
                    fail(&x, subject, what() + " must be a string, not " + kind_of(x));
                return std::string(x.string);
            }
            if (type == "ints" || type == "floats") {
                if (x.type != json_value::kind::array)
                    fail(&x, subject,
                         what() + ": \"" + std::string(type) + "\" must be an array, not " +
                             kind_of(x));
                if (type == "ints") return list_of<int64_t>(x, subject, what);
                return list_of<double>(x, subject, what);
            }
            if (type == "strings")
                fail(&v, subject,
                     what() +
                         " is a list of strings, which nnergy.graph/1 does not carry (the "
                         "plugin ABI has no string-list attributes)");
            fail(&x, subject,
                 what() + ": unknown type " + quote_name(type) +
                     "; expected \"int\", \"float\", \"string\", \"ints\" or \"floats\"");
        }
        if (v.type == json_value::kind::boolean)
            fail(&v, subject,
                 what() + " is " + kind_of(v) +
                     "; ONNX attributes have no boolean type: write 1 or 0");
        fail(&v, subject, what() + " is " + kind_of(v) + kinds);
    }

    /// The elements of an array as integers (T = int64_t) or numbers (T = double).
    template <class T, class What>
    std::vector<T> list_of(const json_value& v, const subject_ref& subject,
                           const What& what) const {
        std::vector<T> out;
        out.reserve(size(v));
        for (std::size_t k = 0; k < size(v); ++k) {
            auto element = [&] { return what() + " element " + std::to_string(k); };
            if constexpr (std::is_same_v<T, int64_t>)
                out.push_back(require_int(at(v, k), subject, element));
            else
                out.push_back(require_float(at(v, k), subject, element));
        }
        return out;
    }

    // ---- references ----

    std::string node_where(uint32_t n) const {
        const node_spec& s = g_.nodes[n];
        return quote_name(s.name) + (s.line ? " (line " + std::to_string(s.line) + ")" : "");
    }

    /// Turns names into tensor indices. Each reference costs one lookup (the tables are far
    /// larger than the caches on big graphs, so lookups, not arithmetic, set the pace): tensors
    /// that only nodes declare are added at their first reference, as they come, and what can
    /// only be judged once every producer is known is checked afterwards, from plain arrays.
    /// Calls `body(k, hash)` for k in [0, count), `hash` being that of `name_at(k)`, while the
    /// slot of the name a few positions later is being fetched from memory.
    template <class NameAt, class Body>
    static void for_each_hashed(std::size_t count, const name_map& map, NameAt&& name_at,
                                Body&& body) {
        constexpr std::size_t ahead = 8;
        std::array<std::size_t, ahead> hashes{};
        for (std::size_t k = 0; k < std::min(count, ahead); ++k) {
            hashes[k] = name_map::hash(name_at(k));
            map.prefetch(hashes[k]);
        }
        for (std::size_t k = 0; k < count; ++k) {
            const std::size_t h = hashes[k % ahead];
            if (k + ahead < count) {
                hashes[k % ahead] = name_map::hash(name_at(k + ahead));
                map.prefetch(hashes[k % ahead]);
            }
            body(k, h);
        }
    }

    /// Declared tensors' and nodes' names, each checked for a duplicate.
    void register_names(const std::vector<raw_node>& raw) {
        for_each_hashed(
            g_.tensors.size(), tensor_ids_,
            [&](std::size_t k) -> std::string_view { return g_.tensors[k].name; },
            [&](std::size_t k, std::size_t h) {
                const auto [first, fresh] =
                    tensor_ids_.emplace(g_.tensors[k].name, h, static_cast<uint32_t>(k));
                if (!fresh)
                    fail_at_line(declared_name_lines_[k],
                                 subject_ref(subject_ref::kind::tensor, g_.tensors[k].name, k),
                                 "duplicate tensor name (first declared at line " +
                                     std::to_string(g_.tensors[first].line) + ")");
            });
        name_map node_lines;
        node_lines.reserve(raw.size());
        for_each_hashed(
            raw.size(), node_lines,
            [&](std::size_t n) -> std::string_view { return g_.nodes[n].name; },
            [&](std::size_t n, std::size_t h) {
                const auto [first_line, fresh] =
                    node_lines.emplace(g_.nodes[n].name, h, g_.nodes[n].line);
                if (!fresh)
                    fail_at_line(
                        raw[n].name_line, raw[n].subject,
                        "duplicate node name (first at line " + std::to_string(first_line) + ")");
            });
    }

    void resolve(std::vector<raw_node>& raw, const std::vector<named_ref>& inputs,
                 const std::vector<named_ref>& outputs) {
        register_names(raw);
        std::vector<uint32_t> producer(g_.tensors.size(), NNERGY_NO_NODE);
        // Inputs that named no declared tensor, in order: a node must produce each.
        struct first_use {
            uint32_t tensor, node;
            uint32_t offset;
        };
        std::vector<first_use> undeclared_inputs;
        auto tensor_named = [&](const named_ref& ref) {
            const std::string_view name = ref.name;
            const auto id = static_cast<uint32_t>(g_.tensors.size());
            const auto [found, fresh] = tensor_ids_.emplace(name, ref.hash, id);
            if (fresh) {
                tensor_spec t;
                t.name = std::string(name);
                g_.tensors.push_back(std::move(t));
                producer.push_back(NNERGY_NO_NODE);
            }
            return std::pair<uint32_t, bool>{found, fresh};
        };
        constexpr std::size_t ahead = 4;  // nodes whose names are fetched ahead of their turn
        auto prefetch_names = [&](std::size_t n) {
            if (n >= raw.size()) return;
            for (const named_ref& ref : raw[n].inputs) tensor_ids_.prefetch(ref.hash);
            for (const named_ref& ref : raw[n].outputs) tensor_ids_.prefetch(ref.hash);
        };
        for (std::size_t n = 0; n < ahead; ++n) prefetch_names(n);
        for (std::size_t n = 0; n < raw.size(); ++n) {
            prefetch_names(n + ahead);
            raw_node& r = raw[n];
            node_spec& spec = g_.nodes[n];
            spec.inputs.reserve(r.inputs.size());
            for (const named_ref& in : r.inputs) {
                if (in.name.empty()) {
                    spec.inputs.push_back(NNERGY_NO_TENSOR);
                    continue;
                }
                const auto [id, fresh] = tensor_named(in);
                if (fresh) undeclared_inputs.push_back({id, static_cast<uint32_t>(n), in.offset});
                spec.inputs.push_back(id);
            }
            spec.outputs.reserve(r.outputs.size());
            for (const named_ref& o : r.outputs) {
                const uint32_t id = tensor_named(o).first;
                if (g_.tensors[id].initializer)
                    fail_at(o.offset, r.subject,
                            "output " + quote_name(o.name) + " is an initializer");
                if (const uint32_t first = producer[id]; first != NNERGY_NO_NODE)
                    fail_at(o.offset, r.subject,
                            "output " + quote_name(o.name) + " is already produced by node " +
                                quote_name(g_.nodes[first].name) +
                                (g_.nodes[first].line
                                     ? " (line " + std::to_string(g_.nodes[first].line) + ")"
                                     : ""));
                producer[id] = static_cast<uint32_t>(n);
                spec.outputs.push_back(id);
            }
        }
        for (const first_use& u : undeclared_inputs)
            if (producer[u.tensor] == NNERGY_NO_NODE)
                fail_at(u.offset, raw[u.node].subject,
                        "input " + quote_name(g_.tensors[u.tensor].name) +
                            " is not declared in 'tensors' and no node produces it");

        std::vector<bool> is_graph_input(g_.tensors.size(), false);
        for (const named_ref& in : inputs) {
            const uint32_t* id = tensor_ids_.find(in.name);
            if (!id || !g_.tensors[*id].declared)
                fail_at(in.offset, "",
                        "graph input " + quote_name(in.name) +
                            " is not declared in 'tensors' (inputs need a dtype and a shape)");
            const tensor_spec& t = g_.tensors[*id];
            const subject_ref subject(subject_ref::kind::graph_input, in.name);
            if (is_graph_input[*id]) fail_at(in.offset, subject, "listed twice in 'inputs'");
            is_graph_input[*id] = true;
            if (t.initializer)
                fail_at(in.offset, subject,
                        "is an initializer; list only activations in 'inputs' (initializers are "
                        "found through \"initializer\": true)");
            if (t.dtype == NNERGY_DTYPE_UNDEFINED)
                fail_at(in.offset, subject, "needs a 'dtype' in its 'tensors' entry");
            if (!t.shape) fail_at(in.offset, subject, "needs a 'shape' in its 'tensors' entry");
            if (producer[*id] != NNERGY_NO_NODE)
                fail_at(in.offset, subject,
                        "is also produced by node " + quote_name(g_.nodes[producer[*id]].name));
            g_.inputs.push_back(*id);
        }

        for (std::size_t n = 0; n < raw.size(); ++n) {
            const raw_node& r = raw[n];
            for (std::size_t k = 0; k < r.inputs.size(); ++k) {
                const uint32_t id = g_.nodes[n].inputs[k];
                if (id == NNERGY_NO_TENSOR || producer[id] != NNERGY_NO_NODE ||
                    g_.tensors[id].initializer || is_graph_input[id])
                    continue;
                fail_at(r.inputs[k].offset, r.subject,
                        "input " + quote_name(r.inputs[k].name) +
                            " is neither a graph input, an initializer, nor produced by a node");
            }
        }

        std::vector<bool> is_graph_output(g_.tensors.size(), false);
        for (const named_ref& o : outputs) {
            const subject_ref subject(subject_ref::kind::graph_output, o.name);
            const uint32_t* id = tensor_ids_.find(o.name);
            if (!id)
                fail_at(o.offset, subject,
                        "is neither declared in 'tensors' nor produced by a node");
            if (is_graph_output[*id]) fail_at(o.offset, subject, "listed twice in 'outputs'");
            is_graph_output[*id] = true;
            const tensor_spec& t = g_.tensors[*id];
            if (producer[*id] == NNERGY_NO_NODE && !is_graph_input[*id] && !t.initializer)
                fail_at(o.offset, subject, "is declared but no node produces it");
            g_.outputs.push_back(*id);
        }
        check_acyclic(producer);
    }

    /// Kahn's algorithm; on a cycle, names its nodes in order, with their lines.
    void check_acyclic(const std::vector<uint32_t>& producer) const {
        const std::size_t n_nodes = g_.nodes.size();
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
        fail_at_line(g_.nodes[cycle.empty() ? start : cycle.front()].line, "",
                     "the nodes form a cycle: " + chain);
    }
};

}  // namespace detail

/// Reads a document, in place: `file` names it in messages. Throws parse_error.
inline graph_spec parse_graph(std::string_view text, std::string_view file) {
    return detail::reader(file).read(text);
}

namespace detail {
/// Frees a string's memory (assigning an empty one may keep it).
inline void release(std::string& s) {
    s.clear();
    s.shrink_to_fit();
}
}  // namespace detail

/// Feeds a description into a graph builder with the interface of nnergy::sdk::graph_builder,
/// releasing each tensor's and node's own memory once handed over (so that the description and
/// the graph built from it are not both whole at once). The graph's name is passed as metadata
/// "name", first, which is how the ABI names graphs. Errors the builder raises are rethrown as
/// parse_error naming the file and node.
template <class Builder>
void build_graph(graph_spec&& g, std::string_view file, std::string_view fallback_name,
                 Builder& b) {
    // What is being added, for messages; formatted only on failure.
    enum class stage { graph, tensor, inputs, node, outputs } at = stage::graph;
    std::size_t index = 0;
    auto where = [&] {
        std::string m(file);
        uint32_t line = at == stage::tensor ? g.tensors[index].line
                        : at == stage::node ? g.nodes[index].line
                                            : 0;
        if (line) m += ":" + std::to_string(line);
        m += ": ";
        switch (at) {
            case stage::graph:
                return m + "graph: ";
            case stage::tensor:
                return m + "tensor " + detail::quote_name(g.tensors[index].name) + ": ";
            case stage::inputs:
                return m + "graph inputs: ";
            case stage::node:
                return m + "node " + detail::quote_name(g.nodes[index].name) + " (index " +
                       std::to_string(index) + "): ";
            case stage::outputs:
                return m + "graph outputs: ";
        }
        return m;
    };
    try {
        b.reserve(g.tensors.size(), g.nodes.size());
        b.metadata("name", g.name.empty() ? fallback_name : std::string_view(g.name));
        for (const auto& [k, v] : g.metadata) b.metadata(k, v);
        std::vector<uint32_t> ids;
        ids.reserve(g.tensors.size());
        at = stage::tensor;
        // Dimensions are handed over as arrays, reused from one tensor to the next.
        std::vector<int64_t> dim_values;
        std::vector<nnergy_string_view> dim_symbols;
        for (index = 0; index < g.tensors.size(); ++index) {
            tensor_spec& t = g.tensors[index];
            dim_values.clear();
            dim_symbols.clear();
            if (t.shape)
                for (const dim_spec& d : *t.shape) {
                    dim_values.push_back(d.value);
                    dim_symbols.push_back({d.symbol.data(), d.symbol.size()});
                }
            uint32_t id = b.add_tensor(t.name, t.dtype, t.shape.has_value(), dim_values.size(),
                                       dim_values.data(), dim_symbols.data());
            if (t.initializer) b.set_initializer(id);
            if (t.constant) b.set_constant(id);
            if (t.values) b.set_initializer_values(id, *t.values);
            ids.push_back(id);
            detail::release(t.name);
            t.shape.reset();
            t.values.reset();
        }
        std::vector<uint32_t> inputs, outputs;  // reused: one allocation for the whole graph
        auto map = [&](const std::vector<uint32_t>& v,
                       std::vector<uint32_t>& out) -> const std::vector<uint32_t>& {
            out.clear();
            for (uint32_t t : v) out.push_back(t == NNERGY_NO_TENSOR ? NNERGY_NO_TENSOR : ids[t]);
            return out;
        };
        at = stage::inputs;
        for (uint32_t t : g.inputs) b.add_input(ids[t]);
        at = stage::node;
        for (index = 0; index < g.nodes.size(); ++index) {
            node_spec& n = g.nodes[index];
            uint32_t id =
                b.add_node(n.name, n.op, n.domain, map(n.inputs, inputs), map(n.outputs, outputs));
            for (const attr_spec& a : n.attributes)
                std::visit([&](const auto& v) { b.attr(id, a.name, v); }, a.value);
            if (n.line) b.source_line(id, n.line);
            detail::release(n.name);
            detail::release(n.op);
            detail::release(n.domain);
            n.inputs = {};
            n.outputs = {};
            n.attributes = {};
        }
        at = stage::outputs;
        for (uint32_t t : g.outputs) b.add_output(ids[t]);
    } catch (const parse_error&) {
        throw;
    } catch (const std::exception& e) {
        throw parse_error(where() + e.what());
    }
}

}  // namespace nnergy::json_graph
