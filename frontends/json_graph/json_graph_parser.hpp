// SPDX-License-Identifier: Apache-2.0
/// \file json_graph_parser.hpp
/// \brief Reads "nnergy.graph/1" documents (docs/json-graph.md) into a graph builder, one tensor
/// and one node at a time (read_graph), or into a plain description (parse_graph).
///
/// Header-only and free of host calls, so every rule can be unit-tested without loading the
/// plugin (whose builder is the SDK's nnergy::sdk::graph_builder).
#pragma once

#include <nnergy/plugin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nnergy/dtype.hpp>
#include <nnergy/modeling/text.hpp>
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
    friend bool operator==(const dim_spec&, const dim_spec&) = default;
};

/// Attribute values: integer, float, string and lists of integers or floats.
using attr_value =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

struct attr_spec {
    std::string name;
    attr_value value;
    friend bool operator==(const attr_spec&, const attr_spec&) = default;
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
    friend bool operator==(const tensor_spec&, const tensor_spec&) = default;
};

struct node_spec {
    std::string name;
    std::string op;
    std::string domain;
    std::vector<uint32_t> inputs;  ///< indices into graph_spec::tensors; NNERGY_NO_TENSOR
    std::vector<uint32_t> outputs;
    std::vector<attr_spec> attributes;
    uint32_t line = 0;
    friend bool operator==(const node_spec&, const node_spec&) = default;
};

struct graph_spec {
    std::string name;
    std::vector<std::pair<std::string, std::string>> metadata;  ///< without "name"
    std::vector<tensor_spec> tensors;  ///< declared ones first, then implicit ones
    std::vector<node_spec> nodes;      ///< in file order
    std::vector<uint32_t> inputs;
    std::vector<uint32_t> outputs;
    friend bool operator==(const graph_spec&, const graph_spec&) = default;
};

namespace detail {

/// Names (views into the document, which outlives the map) to 32-bit values: open addressing
/// over (hash, value, name) slots, so a name costs no allocation of its own.
class name_map {
public:
    /// Names are at most this long (16 MiB - 1): a slot keeps a name's size in 24 bits.
    static constexpr std::size_t longest_name = (std::size_t{1} << 24) - 1;

    void reserve(std::size_t n) {
        std::size_t want = 16;
        while (3 * want < 4 * n) want *= 2;
        if (want > slots_.size()) rehash(want);
    }
    /// The value held for `name`, or null.
    const uint32_t* find(std::string_view name) const noexcept {
        if (slots_.empty() || name.size() > longest_name) return nullptr;
        const slot& s = slots_[probe(hash(name), name)];
        return s.data ? &s.value : nullptr;
    }
    /// Asks for the slot where a look-up of `name` starts, so that a look-up made a little
    /// later finds it in the cache: on a large graph the table outgrows the caches, and a
    /// reader that waits for each slot in turn spends most of its time waiting.
    void prefetch(std::string_view name) const noexcept {
        if (!slots_.empty()) __builtin_prefetch(&slots_[hash(name) & (slots_.size() - 1)]);
    }
    /// Adds `name` (at most longest_name bytes) with `value` unless it is there; returns its
    /// value and whether it was added.
    std::pair<uint32_t, bool> emplace(std::string_view name, uint32_t value) {
        if (4 * (count_ + 1) > 3 * slots_.size())
            rehash(std::max<std::size_t>(16, 2 * slots_.size()));
        const std::size_t h = hash(name);
        slot& s = slots_[probe(h, name)];
        if (s.data) return {s.value, false};
        // An empty name still needs a non-null pointer to mark the slot used.
        s = slot{name.empty() ? "" : name.data(), size_and_tag(name.size(), h), value};
        ++count_;
        return {value, true};
    }

private:
    // Sixteen bytes: on large graphs the tables outgrow the caches and every lookup is a memory
    // access, so a slot keeps only where the name is, its size and eight bits of its hash (a
    // name is read only when those match), and the value.
    struct slot {
        const char* data = nullptr;  ///< null: the slot is empty
        uint32_t size_tag = 0;       ///< the name's size, and the hash's top byte above it
        uint32_t value = 0;
    };
    static std::size_t hash(std::string_view name) noexcept {
        return static_cast<std::size_t>(modeling::name_hash(name));
    }
    static uint32_t size_and_tag(std::size_t size, std::size_t h) noexcept {
        return static_cast<uint32_t>(size) |
               (static_cast<uint32_t>(h >> (8 * sizeof(std::size_t) - 8)) << 24);
    }
    /// The slot holding `name` (hash `h`), else the empty slot where it would go.
    std::size_t probe(std::size_t h, std::string_view name) const noexcept {
        const std::size_t mask = slots_.size() - 1;
        const uint32_t key = size_and_tag(name.size(), h);
        std::size_t at = h & mask;
        while (slots_[at].data && !(slots_[at].size_tag == key &&
                                    std::string_view(slots_[at].data, name.size()) == name))
            at = (at + 1) & mask;
        return at;
    }
    void rehash(std::size_t size) {
        std::vector<slot> old = std::move(slots_);
        slots_.assign(size, slot{});
        const std::size_t mask = size - 1;
        for (const slot& s : old)
            if (s.data) {
                std::size_t at = hash({s.data, s.size_tag & longest_name}) & mask;
                while (slots_[at].data) at = (at + 1) & mask;
                slots_[at] = s;
            }
    }
    std::vector<slot> slots_;  ///< a power of two in size, at most three quarters full
    std::size_t count_ = 0;
};

/// Adds names to a name_map `depth` names after they are queued, asking for each one's slot
/// when it is queued: on a large graph the table outgrows the caches, and a reader that waits
/// for each slot in turn spends most of its time waiting. A name found already there is handed
/// to `on_duplicate(entry, value held)` when it is added, up to `depth` names late.
template <std::size_t depth>
class delayed_inserts {
public:
    struct entry {
        std::string_view name;
        uint32_t value = 0;
        uint32_t line = 0;      ///< where the name is, for a message
        std::size_t index = 0;  ///< the element's index in its list, for a message
    };

    template <class OnDuplicate>
    void push(name_map& map, const entry& e, OnDuplicate&& on_duplicate) {
        map.prefetch(e.name);
        if (count_ == depth) pop(map, on_duplicate);
        ring_[(head_ + count_) % depth] = e;
        ++count_;
    }
    template <class OnDuplicate>
    void drain(name_map& map, OnDuplicate&& on_duplicate) {
        while (count_ > 0) pop(map, on_duplicate);
    }

private:
    template <class OnDuplicate>
    void pop(name_map& map, OnDuplicate& on_duplicate) {
        const entry e = ring_[head_];
        head_ = (head_ + 1) % depth;
        --count_;
        const auto [held, fresh] = map.emplace(e.name, e.value);
        if (!fresh) on_duplicate(e, held);
    }

    std::array<entry, depth> ring_{};
    std::size_t head_ = 0, count_ = 0;
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

/// Reads a document into `Sink`, one tensor and one node at a time, as they are read and
/// checked: sink.graph_name(name or ""), metadata(key, value), reserve(tensors, nodes),
/// tensor(tensor_spec), whose index is the number of tensors before it (declared tensors first,
/// then those nodes declare by naming them, in order of first mention), node(node_spec with
/// resolved indices, its index), input(t) and output(t). What can be judged only once every node is
/// read (an input no node produces, a cycle) is checked afterwards from compact arrays; the sink's
/// work is then discarded.
template <class Sink>
class reader {
public:
    /// `in_place` false reads every element as values (for tests: the two ways must agree).
    reader(std::string_view file, Sink& sink, bool in_place = true)
        : file_(file), sink_(sink), fast_(in_place) {}

    void read(std::string_view text) {
        std::optional<json_document> doc;
        try {
            doc.emplace(text, max_nesting,
                        std::initializer_list<std::string_view>{"tensors", "nodes"});
            doc_ = &*doc;
            read_document(doc->root());
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
    struct named_ref {
        std::string_view name;  ///< points into the document
        uint32_t offset = 0;
    };

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

    using cursor = json_document::element_cursor;

    std::string file_;
    Sink& sink_;
    /// Elements are first read in place (read_tensor(cursor&), read_node(cursor&)); those that
    /// are not in the plain forms those read are read as values.
    bool fast_ = true;
    json_document* doc_ = nullptr;
    name_map tensor_ids_;  ///< names point into the document
    name_map node_lines_;  ///< node names to their lines
    // Declared tensors and node names are added to their tables a few names late (read_tensor,
    // read_node); nothing looks them up before the list is read.
    static constexpr std::size_t insert_delay = 16;
    delayed_inserts<insert_delay> declared_names_, node_names_late_;
    // Per tensor: what the checks after the reading need.
    enum tensor_flag : uint8_t { declared = 1, initializer = 2, typed = 4, shaped = 8, input = 16 };
    std::vector<uint8_t> tensor_flags_;
    std::vector<uint32_t> tensor_lines_;  ///< the line of a declared tensor's entry; 0 otherwise
    std::vector<uint32_t> producer_;      ///< the node producing each tensor
    // Per node: its name (a view of the text), line and input tensors (all nodes' inputs in
    // one array), for messages and the cycle check.
    std::vector<std::string_view> node_names_;
    std::vector<uint32_t> node_lines_v_;
    std::vector<uint32_t> input_start_;  ///< node n's inputs are node_inputs_[start[n], start[n+1])
    std::vector<uint32_t> node_inputs_;
    // Node inputs that no node had produced when they were read: each must be produced by a
    // later node (or be an initializer or graph input, which are known before the nodes).
    struct open_input {
        uint32_t tensor, node, offset;
        bool undeclared;        ///< the reference declared the tensor
        std::string_view name;  ///< as the document spells it
    };
    std::vector<open_input> open_inputs_;
    std::vector<std::pair<uint32_t, uint32_t>> graph_input_offsets_;  ///< (tensor, offset)
    tensor_spec tensor_;                                              ///< the tensor being read
    node_spec node_;  ///< the node being read (its strings' and lists' storage reused)
    std::vector<dim_spec> shape_storage_;  ///< a declared shape's storage, reused
    std::vector<named_ref> node_in_, node_out_;

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

    /// Names are keys of the reader's tables, which keep their sizes in 24 bits. `what()`
    /// names the value in the message.
    template <class What>
    void check_name_size(const json_value& v, const subject_ref& subject, const What& what) const {
        if (v.string.size() > name_map::longest_name)
            fail(&v, subject,
                 what() + " is " + std::to_string(v.string.size()) +
                     " bytes long; names are at most " + std::to_string(name_map::longest_name) +
                     " bytes");
    }

    /// The string `m` holds (a view of the document, which outlives the reader).
    std::string_view require_string(const json_value& m, const subject_ref& subject,
                                    std::string_view key, bool allow_empty = false) const {
        if (m.type != json_value::kind::string)
            fail(&m, subject, "'" + std::string(key) + "' must be a string, not " + kind_of(m));
        if (m.string.empty() && !allow_empty)
            fail(&m, subject, "'" + std::string(key) + "' must not be empty");
        return m.string;
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

    void read_document(const json_value doc) {
        if (doc.type != json_value::kind::object)
            fail(&doc, "",
                 "expected a JSON object with \"schema\": \"" + std::string(schema_id) +
                     "\", found " + kind_of(doc));
        const json_value* schema = find_member(doc, "schema");
        if (!schema)
            fail(&doc, "",
                 "missing \"schema\": this reader expects \"schema\": \"" + std::string(schema_id) +
                     "\"");
        const std::string id(require_string(*schema, "", "schema"));
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

        const json_value* name = find_member(doc, "name");
        sink_.graph_name(name ? require_string(*name, "", "name") : std::string_view());
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
        std::vector<named_ref> inputs, outputs;
        if (const json_value* m = find_member(doc, "inputs")) inputs = read_names(*m, "inputs");
        const json_value* out = find_member(doc, "outputs");
        if (!out) fail(&doc, "", "missing 'outputs' (an array of tensor names)");
        outputs = read_names(*out, "outputs");

        // Room for the declared tensors alone where they outnumber the nodes: a file that
        // declares its tensors, as `nnergy convert` writes it, declares the nodes' outputs too.
        // Otherwise most nodes declare one tensor, their output, by naming it. The tables grow
        // if that was wrong. For a million-node graph the name table is then 67 MB instead of
        // 134, and the host's tensor table 80 bytes a node smaller.
        const std::size_t expected_tensors = tensors.child_count >= nodes.child_count
                                                 ? tensors.child_count
                                                 : tensors.child_count + nodes.child_count;
        sink_.reserve(expected_tensors, nodes.child_count);
        tensor_ids_.reserve(expected_tensors);
        node_lines_.reserve(nodes.child_count);
        tensor_flags_.reserve(expected_tensors);
        tensor_lines_.reserve(expected_tensors);
        producer_.reserve(expected_tensors);
        node_names_.reserve(nodes.child_count);
        node_lines_v_.reserve(nodes.child_count);
        input_start_.reserve(nodes.child_count + 1);
        input_start_.push_back(0);
        // The declared tensors first, wherever the list is in the file, so that every node's
        // names are known when it is read; then the graph's inputs; then the nodes.
        if (tensors_member)
            doc_->for_each_element(
                {&tensors},
                [&](std::size_t, cursor& c, std::size_t k) { return fast_ && read_tensor(c, k); },
                [&](std::size_t, const json_value& e, std::size_t k) { read_tensor(e, k); });
        declared_names_.drain(tensor_ids_, duplicate_tensor());
        add_graph_inputs(inputs);
        doc_->for_each_element(
            {&nodes},
            [&](std::size_t, cursor& c, std::size_t k) { return fast_ && read_node(c, k); },
            [&](std::size_t, const json_value& e, std::size_t k) { read_node(e, k); });
        node_names_late_.drain(node_lines_, duplicate_node());
        check_open_inputs();
        add_graph_outputs(outputs);
        check_acyclic();
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
            sink_.metadata(v.key, v.string);
        }
    }

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
            out.push_back({v.string, v.offset});
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
        tensor_spec& spec = tensor_;
        spec = tensor_spec{};
        spec.line = line_of(t);
        spec.declared = true;
        static constexpr std::array<std::string_view, 6> keys{"name",        "dtype",    "shape",
                                                              "initializer", "constant", "values"};
        const auto [member, unknown_key] = keyed_members(t, keys);
        const json_value* name = member[0];
        if (!name) fail(&t, subject, "missing 'name'");
        spec.name = require_string(*name, subject, "name");
        check_name_size(*name, subject, [] { return std::string("'name'"); });
        subject.name = name->string;
        if (unknown_key) check_keys(t, subject, keys);

        if (const json_value* m = member[1]) {
            const std::string_view d = require_string(*m, subject, "dtype");
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
        declare_tensor(spec, name->string, line_of(*name), index);
    }

    /// The tensor at the cursor, read in place (the fast path of for_each_element): false, with
    /// nothing kept, unless it is well-formed and passes every check of the value path above,
    /// which then reads it and tells what is wrong. A tensor with `values` takes that path too.
    bool read_tensor(cursor& c, std::size_t index) {
        tensor_spec& spec = tensor_;
        if (c.peek() != '{') return false;
        spec = tensor_spec{};
        spec.line = c.line();
        spec.declared = true;
        c.take('{');
        std::string_view name;
        uint32_t name_line = 0;
        // By size first: each key is compared with one name, not searched for.
        const auto key_index = [](std::string_view key) {
            return key.size() == 4 && key == "name"           ? 0
                   : key.size() == 5 && key == "dtype"        ? 1
                   : key.size() == 5 && key == "shape"        ? 2
                   : key.size() == 11 && key == "initializer" ? 3
                   : key.size() == 8 && key == "constant"     ? 4
                                                              : unknown;
        };
        const bool read = read_members(c, key_index, [&](unsigned k) {
            switch (k) {
                case 0:
                    c.peek();
                    name_line = c.line();
                    return c.plain_string(name);
                case 1: {
                    std::string_view d;
                    if (!c.plain_string(d)) return false;
                    const std::optional<nnergy_dtype> dt = dtype_from_schema_name(d);
                    if (!dt) return false;
                    spec.dtype = *dt;
                    return true;
                }
                case 2:
                    // The dims' storage is the last shape's, kept between tensors.
                    spec.shape = std::move(shape_storage_);
                    spec.shape->clear();
                    return read_shape(c, *spec.shape);
                default: {
                    bool& flag = k == 3 ? spec.initializer : spec.constant;
                    flag = c.peek() == 't';
                    return c.literal(flag ? "true" : "false");
                }
            }
        });
        if (!read) return false;
        if (name.empty() || name.size() > name_map::longest_name) return false;
        if (spec.constant && !spec.initializer) return false;
        if (spec.initializer && (spec.dtype == NNERGY_DTYPE_UNDEFINED || !spec.shape)) return false;
        spec.name.assign(name);
        declare_tensor(spec, name, name_line, index);
        if (spec.shape) shape_storage_ = std::move(*spec.shape);
        return true;
    }

    /// The members of the object at the cursor, after its '{': `member(k)` reads the value of
    /// the key `key_index(key)` numbers k (below 32), `unknown` for a key it does not know.
    /// False for an unknown or repeated key, or where `member` gives up.
    static constexpr unsigned unknown = 32;
    template <class Index, class Member>
    static bool read_members(cursor& c, Index&& key_index, Member&& member) {
        unsigned seen = 0;
        do {
            std::string_view key;
            if (!c.plain_string(key) || !c.take(':')) return false;
            const unsigned k = key_index(key);
            if (k >= unknown || (seen & (1u << k))) return false;
            seen |= 1u << k;
            if (!member(k)) return false;
        } while (c.take(','));
        return c.take('}');
    }

    /// A shape at the cursor; false where read_shape() would refuse it or it is not plain.
    bool read_shape(cursor& c, std::vector<dim_spec>& shape) const {
        if (!c.take('[')) return false;
        if (c.take(']')) return true;
        do {
            dim_spec& dim = shape.emplace_back();
            const char first = c.peek();
            if (first == 'n') {
                if (!c.literal("null")) return false;
            } else if (first == '"') {
                std::string_view symbol;
                if (!c.plain_string(symbol)) return false;
                dim.symbol.assign(symbol);
                if (!valid_symbol(dim.symbol) && !valid_expression(dim.symbol)) return false;
            } else {
                json_value v;
                if (!c.number(v) || v.type != json_value::kind::integer || v.integer < 0)
                    return false;
                dim.value = v.integer;
            }
        } while (c.take(','));
        return c.take(']');
    }

    /// What both ways of reading a declared tensor end with.
    void declare_tensor(const tensor_spec& spec, std::string_view name, uint32_t name_line,
                        std::size_t index) {
        declared_names_.push(tensor_ids_,
                             {name, static_cast<uint32_t>(tensor_flags_.size()), name_line, index},
                             duplicate_tensor());
        add_tensor(spec);
    }

    /// What a declared tensor whose name an earlier one holds fails with.
    auto duplicate_tensor() {
        return [this](const delayed_inserts<insert_delay>::entry& e, uint32_t first) {
            fail_at_line(e.line, subject_ref(subject_ref::kind::tensor, e.name, e.index),
                         "duplicate tensor name (first declared at line " +
                             std::to_string(tensor_lines_[first]) + ")");
        };
    }
    /// What a node whose name an earlier one holds fails with.
    auto duplicate_node() {
        return [this](const delayed_inserts<insert_delay>::entry& e, uint32_t first_line) {
            fail_at_line(e.line, subject_ref(subject_ref::kind::node, e.name, e.index),
                         "duplicate node name (first at line " + std::to_string(first_line) + ")");
        };
    }

    /// Hands a tensor to the sink and keeps what the later checks need.
    uint32_t add_tensor(const tensor_spec& spec) {
        const auto id = static_cast<uint32_t>(tensor_flags_.size());
        tensor_flags_.push_back(static_cast<uint8_t>(
            (spec.declared ? declared : 0) | (spec.initializer ? initializer : 0) |
            (spec.dtype != NNERGY_DTYPE_UNDEFINED ? typed : 0) | (spec.shape ? shaped : 0)));
        tensor_lines_.push_back(spec.line);
        producer_.push_back(NNERGY_NO_NODE);
        sink_.tensor(spec);
        return id;
    }

    /// The tensor a node names: declared, or declared now by this first mention.
    std::pair<uint32_t, bool> tensor_named(std::string_view name) {
        const auto next = static_cast<uint32_t>(tensor_flags_.size());
        const auto [id, fresh] = tensor_ids_.emplace(name, next);
        if (!fresh) return {id, false};
        tensor_spec& implicit = tensor_;
        implicit = tensor_spec{};
        implicit.name.assign(name);
        add_tensor(implicit);
        return {id, true};
    }

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

    void read_node(const json_value& n, std::size_t index) {
        node_spec& spec = node_;
        spec.name.clear();
        spec.op.clear();
        spec.domain.clear();
        spec.inputs.clear();
        spec.outputs.clear();
        spec.attributes.clear();
        spec.line = line_of(n);
        subject_ref subject(subject_ref::kind::node, {}, index);
        if (n.type != json_value::kind::object)
            fail(&n, subject, "must be an object, not " + kind_of(n));
        static constexpr std::array<std::string_view, 6> keys{"name",   "op",      "domain",
                                                              "inputs", "outputs", "attributes"};
        const auto [member, unknown_key] = keyed_members(n, keys);
        const json_value* name = member[0];
        if (!name) fail(&n, subject, "missing 'name'");
        spec.name = require_string(*name, subject, "name");
        check_name_size(*name, subject, [] { return std::string("'name'"); });
        subject.name = name->string;
        if (unknown_key) check_keys(n, subject, keys);
        const json_value* op = member[1];
        if (!op) fail(&n, subject, "missing 'op' (the ONNX operator type, e.g. \"Conv\")");
        spec.op = require_string(*op, subject, "op");
        if (const json_value* m = member[2])
            spec.domain = require_string(*m, subject, "domain", true);
        node_in_.clear();
        node_out_.clear();
        if (const json_value* m = member[3]) read_node_names(*m, subject, "inputs", node_in_);
        const json_value* out = member[4];
        if (!out) fail(&n, subject, "missing 'outputs' (an array of tensor names)");
        read_node_names(*out, subject, "outputs", node_out_);
        for (const named_ref& r : node_in_) tensor_ids_.prefetch(r.name);
        for (const named_ref& r : node_out_) tensor_ids_.prefetch(r.name);
        if (node_out_.empty()) fail(out, subject, "'outputs' must name at least one tensor");
        for (const named_ref& o : node_out_)
            if (o.name.empty())
                fail_at(o.offset, subject,
                        "output names must not be empty (only inputs can be omitted)");
        if (const json_value* m = member[5]) read_attributes(*m, spec, subject);
        add_node(spec, name->string, line_of(*name), index);
    }

    /// The node at the cursor, read in place (the fast path of for_each_element): false, with
    /// nothing kept, unless it is well-formed and passes every check of the value path above,
    /// which then reads it and tells what is wrong. Typed attribute objects take that path too.
    bool read_node(cursor& c, std::size_t index) {
        node_spec& spec = node_;
        if (c.peek() != '{') return false;
        spec.line = c.line();
        c.take('{');
        spec.attributes.clear();
        node_in_.clear();
        node_out_.clear();
        std::string_view name, op, domain;
        uint32_t name_line = 0;
        const auto key_index = [](std::string_view key) {
            return key.size() == 4 && key == "name"          ? 0
                   : key.size() == 2 && key == "op"          ? 1
                   : key.size() == 6 && key == "domain"      ? 2
                   : key.size() == 6 && key == "inputs"      ? 3
                   : key.size() == 7 && key == "outputs"     ? 4
                   : key.size() == 10 && key == "attributes" ? 5
                                                             : unknown;
        };
        const bool read = read_members(c, key_index, [&](unsigned k) {
            switch (k) {
                case 0:
                    c.peek();
                    name_line = c.line();
                    return c.plain_string(name);
                case 1:
                    return c.plain_string(op);
                case 2:
                    return c.plain_string(domain);
                case 3:
                    return read_node_names(c, node_in_);
                case 4:
                    return read_node_names(c, node_out_);
                default:
                    return read_attributes(c, spec);
            }
        });
        if (!read || name.empty() || name.size() > name_map::longest_name || op.empty() ||
            node_out_.empty())
            return false;
        for (const named_ref& o : node_out_)
            if (o.name.empty()) return false;
        for (const named_ref& r : node_in_) tensor_ids_.prefetch(r.name);
        for (const named_ref& r : node_out_) tensor_ids_.prefetch(r.name);
        spec.name.assign(name);
        spec.op.assign(op);
        spec.domain.assign(domain);
        spec.inputs.clear();
        spec.outputs.clear();
        add_node(spec, name, name_line, index);
        return true;
    }

    bool read_node_names(cursor& c, std::vector<named_ref>& out) const {
        if (!c.take('[')) return false;
        if (c.take(']')) return true;
        do {
            c.peek();
            const uint32_t offset = c.offset();
            std::string_view name;
            if (!c.plain_string(name) || name.size() > name_map::longest_name) return false;
            out.push_back({name, offset});
        } while (c.take(','));
        return c.take(']');
    }

    /// Attributes at the cursor: integers, numbers, strings and non-empty lists of numbers.
    bool read_attributes(cursor& c, node_spec& spec) const {
        if (!c.take('{')) return false;
        if (c.take('}')) return true;
        do {
            std::string_view key;
            if (!c.plain_string(key) || key.empty() || !c.take(':')) return false;
            for (const attr_spec& a : spec.attributes)
                if (a.name == key) return false;
            attr_spec& a = spec.attributes.emplace_back();
            a.name.assign(key);
            const char first = c.peek();
            if (first == '"') {
                std::string_view text;
                if (!c.plain_string(text)) return false;
                a.value = std::string(text);
            } else if (first == '[') {
                c.take('[');
                std::vector<int64_t> ints;
                std::vector<double> reals;  // from the first number with a fraction on
                bool any_real = false;
                do {
                    json_value v;
                    if (!c.number(v)) return false;
                    if (v.type == json_value::kind::integer) {
                        if (any_real)
                            reals.push_back(static_cast<double>(v.integer));
                        else
                            ints.push_back(v.integer);
                    } else if (v.type == json_value::kind::real) {
                        if (!any_real)
                            for (const int64_t i : ints) reals.push_back(static_cast<double>(i));
                        any_real = true;
                        reals.push_back(v.real);
                    } else {
                        return false;
                    }
                } while (c.take(','));
                if (!c.take(']')) return false;
                if (any_real)
                    a.value = std::move(reals);
                else
                    a.value = std::move(ints);
            } else {
                json_value v;
                if (!c.number(v)) return false;
                if (v.type == json_value::kind::integer)
                    a.value = v.integer;
                else if (v.type == json_value::kind::real)
                    a.value = v.real;
                else
                    return false;
            }
        } while (c.take(','));
        return c.take('}');
    }

    /// What both ways of reading a node end with: its names resolved, handed to the sink.
    void add_node(node_spec& spec, std::string_view name, uint32_t name_line, std::size_t index) {
        node_names_late_.push(node_lines_, {name, spec.line, name_line, index}, duplicate_node());
        resolve(spec, subject_ref(subject_ref::kind::node, name, index), index);
        node_names_.push_back(name);
        node_lines_v_.push_back(spec.line);
        sink_.node(spec, index);
    }

    /// The node's names as tensor indices. A name no tensor has yet declares one; an input no
    /// node has produced yet is checked once all are read (check_open_inputs()).
    void resolve(node_spec& spec, const subject_ref& subject, std::size_t index) {
        const auto n = static_cast<uint32_t>(index);
        for (const named_ref& in : node_in_) {
            if (in.name.empty()) {
                spec.inputs.push_back(NNERGY_NO_TENSOR);
                continue;
            }
            const auto [id, fresh] = tensor_named(in.name);
            spec.inputs.push_back(id);
            node_inputs_.push_back(id);
            if (producer_[id] == NNERGY_NO_NODE && !(tensor_flags_[id] & (initializer | input)))
                open_inputs_.push_back({id, n, in.offset, fresh, in.name});
        }
        input_start_.push_back(static_cast<uint32_t>(node_inputs_.size()));
        for (const named_ref& o : node_out_) {
            const uint32_t id = tensor_named(o.name).first;
            if (tensor_flags_[id] & initializer)
                fail_at(o.offset, subject, "output " + quote_name(o.name) + " is an initializer");
            if (const uint32_t first = producer_[id]; first == n)
                fail_at(o.offset, subject,
                        "output " + quote_name(o.name) + " is named twice in its 'outputs'");
            else if (first != NNERGY_NO_NODE)
                fail_at(o.offset, subject,
                        "output " + quote_name(o.name) + " is already produced by node " +
                            node_where(first));
            if (tensor_flags_[id] & input)
                for (const auto& [t, offset] : graph_input_offsets_)
                    if (t == id)
                        fail_at(offset, subject_ref(subject_ref::kind::graph_input, o.name),
                                "is also produced by node " + quote_name(spec.name));
            producer_[id] = n;
            spec.outputs.push_back(id);
        }
    }

    void read_node_names(const json_value& m, const subject_ref& subject, const char* key,
                         std::vector<named_ref>& out) const {
        if (m.type != json_value::kind::array)
            fail(&m, subject,
                 std::string("'") + key + "' must be an array of tensor names, not " + kind_of(m));
        for (std::size_t k = 0; k < size(m); ++k) {
            const json_value& v = at(m, k);
            if (v.type != json_value::kind::string)
                fail(&v, subject,
                     std::string("'") + key + "' must be an array of tensor names; element " +
                         std::to_string(k) + " is " + kind_of(v));
            check_name_size(v, subject, [&] {
                return "element " + std::to_string(k) + " of '" + std::string(key) + "'";
            });
            out.push_back({v.string, v.offset});
        }
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
        return quote_name(node_names_[n]) +
               (node_lines_v_[n] ? " (line " + std::to_string(node_lines_v_[n]) + ")" : "");
    }

    void add_graph_inputs(const std::vector<named_ref>& inputs) {
        for (const named_ref& in : inputs) {
            const uint32_t* id = tensor_ids_.find(in.name);
            if (!id)
                fail_at(in.offset, "",
                        "graph input " + quote_name(in.name) +
                            " is not declared in 'tensors' (inputs need a dtype and a shape)");
            const subject_ref subject(subject_ref::kind::graph_input, in.name);
            uint8_t& flags = tensor_flags_[*id];
            if (flags & input) fail_at(in.offset, subject, "listed twice in 'inputs'");
            flags |= input;
            if (flags & initializer)
                fail_at(in.offset, subject,
                        "is an initializer; list only activations in 'inputs' (initializers are "
                        "found through \"initializer\": true)");
            if (!(flags & typed))
                fail_at(in.offset, subject, "needs a 'dtype' in its 'tensors' entry");
            if (!(flags & shaped))
                fail_at(in.offset, subject, "needs a 'shape' in its 'tensors' entry");
            graph_input_offsets_.emplace_back(*id, in.offset);
            sink_.input(*id);
        }
    }

    /// Inputs that were not produced when their node was read must have been produced since.
    void check_open_inputs() const {
        for (const open_input& u : open_inputs_) {
            if (producer_[u.tensor] != NNERGY_NO_NODE) continue;
            const subject_ref subject(subject_ref::kind::node, node_names_[u.node], u.node);
            const std::string_view name = u.name;
            if (u.undeclared)
                fail_at(u.offset, subject,
                        "input " + quote_name(name) +
                            " is not declared in 'tensors' and no node produces it");
            fail_at(u.offset, subject,
                    "input " + quote_name(name) +
                        " is neither a graph input, an initializer, nor produced by a node");
        }
    }

    void add_graph_outputs(const std::vector<named_ref>& outputs) {
        std::vector<bool> listed(tensor_flags_.size(), false);
        for (const named_ref& o : outputs) {
            const subject_ref subject(subject_ref::kind::graph_output, o.name);
            const uint32_t* id = tensor_ids_.find(o.name);
            if (!id)
                fail_at(o.offset, subject,
                        "is neither declared in 'tensors' nor produced by a node");
            if (listed[*id]) fail_at(o.offset, subject, "listed twice in 'outputs'");
            listed[*id] = true;
            if (producer_[*id] == NNERGY_NO_NODE && !(tensor_flags_[*id] & (input | initializer)))
                fail_at(o.offset, subject, "is declared but no node produces it");
            sink_.output(*id);
        }
    }

    /// Kahn's algorithm; on a cycle, names its nodes in order, with their lines.
    void check_acyclic() const {
        const std::vector<uint32_t>& producer = producer_;
        const std::size_t n_nodes = node_names_.size();
        auto inputs_of = [&](uint32_t n) {
            struct span {
                const uint32_t *b, *e;
                const uint32_t* begin() const noexcept { return b; }
                const uint32_t* end() const noexcept { return e; }
            };
            return span{node_inputs_.data() + input_start_[n],
                        node_inputs_.data() + input_start_[n + 1]};
        };
        // Each node's consumers, one list after another (consumer_start[n] to [n + 1]): three
        // allocations for the whole graph, not one per node.
        std::vector<std::size_t> pending(n_nodes, 0);
        std::vector<uint32_t> consumer_start(n_nodes + 1, 0);
        for (uint32_t n = 0; n < n_nodes; ++n)
            for (uint32_t t : inputs_of(n))
                if (producer[t] != NNERGY_NO_NODE) {
                    ++pending[n];
                    ++consumer_start[producer[t] + 1];
                }
        for (std::size_t n = 0; n < n_nodes; ++n) consumer_start[n + 1] += consumer_start[n];
        std::vector<uint32_t> consumers(consumer_start[n_nodes]);
        {
            std::vector<uint32_t> next(consumer_start.begin(), consumer_start.end() - 1);
            for (uint32_t n = 0; n < n_nodes; ++n)
                for (uint32_t t : inputs_of(n))
                    if (producer[t] != NNERGY_NO_NODE) consumers[next[producer[t]]++] = n;
        }
        std::vector<uint32_t> ready;
        for (uint32_t n = 0; n < n_nodes; ++n)
            if (!pending[n]) ready.push_back(n);
        std::size_t done = 0;
        while (!ready.empty()) {
            uint32_t n = ready.back();
            ready.pop_back();
            ++done;
            for (uint32_t k = consumer_start[n]; k < consumer_start[n + 1]; ++k)
                if (--pending[consumers[k]] == 0) ready.push_back(consumers[k]);
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
            for (uint32_t t : inputs_of(cur))
                if (producer[t] != NNERGY_NO_NODE && pending[producer[t]]) {
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
        const uint32_t first = cycle.empty() ? start : cycle.front();
        chain += quote_name(node_names_[first]);
        fail_at_line(node_lines_v_[first], "", "the nodes form a cycle: " + chain);
    }
};

}  // namespace detail

namespace detail {

/// Keeps what the reader hands over as a graph_spec.
struct spec_sink {
    graph_spec& g;
    void graph_name(std::string_view name) { g.name = name; }
    void metadata(std::string_view key, std::string_view value) {
        g.metadata.emplace_back(key, value);
    }
    void reserve(std::size_t tensors, std::size_t nodes) {
        g.tensors.reserve(tensors);
        g.nodes.reserve(nodes);
    }
    void tensor(const tensor_spec& t) { g.tensors.push_back(t); }
    void node(const node_spec& n, std::size_t) { g.nodes.push_back(n); }
    void input(uint32_t t) { g.inputs.push_back(t); }
    void output(uint32_t t) { g.outputs.push_back(t); }
};

/// Feeds what the reader hands over into a builder with the interface of
/// nnergy::sdk::graph_builder as it comes: no description of the whole graph is kept beside
/// the graph built. Errors the builder raises are rethrown as parse_error naming the file, line
/// and tensor or node.
template <class Builder>
class builder_sink {
public:
    builder_sink(Builder& b, std::string_view file, std::string_view fallback_name)
        : b_(b), file_(file), fallback_name_(fallback_name) {}

    void graph_name(std::string_view name) {
        // The ABI names a graph by its metadata "name", set first.
        guard([] { return std::string("graph: "); }, 0,
              [&] { b_.metadata("name", name.empty() ? fallback_name_ : name); });
    }
    void metadata(std::string_view key, std::string_view value) {
        guard([] { return std::string("graph: "); }, 0, [&] { b_.metadata(key, value); });
    }
    void reserve(std::size_t tensors, std::size_t nodes) {
        guard([] { return std::string("graph: "); }, 0, [&] { b_.reserve(tensors, nodes); });
        ids_.reserve(tensors);
    }
    void tensor(const tensor_spec& t) {
        guard([&] { return "tensor " + quote_name(t.name) + ": "; }, t.line,
              [&] {
                  dim_values_.clear();
                  dim_symbols_.clear();
                  if (t.shape)
                      for (const dim_spec& d : *t.shape) {
                          dim_values_.push_back(d.value);
                          dim_symbols_.push_back({d.symbol.data(), d.symbol.size()});
                      }
                  const uint32_t id =
                      b_.add_tensor(t.name, t.dtype, t.shape.has_value(), dim_values_.size(),
                                    dim_values_.data(), dim_symbols_.data());
                  if (t.initializer) b_.set_initializer(id);
                  if (t.constant) b_.set_constant(id);
                  if (t.values) b_.set_initializer_values(id, *t.values);
                  ids_.push_back(id);
              });
    }
    void node(const node_spec& n, std::size_t index) {
        guard(
            [&] {
                return "node " + quote_name(n.name) + " (index " + std::to_string(index) + "): ";
            },
            n.line,
            [&] {
                const uint32_t id = b_.add_node(n.name, n.op, n.domain, map(n.inputs, inputs_),
                                                map(n.outputs, outputs_));
                for (const attr_spec& a : n.attributes)
                    std::visit([&](const auto& v) { b_.attr(id, a.name, v); }, a.value);
                if (n.line) b_.source_line(id, n.line);
            });
    }
    void input(uint32_t t) {
        guard([] { return std::string("graph inputs: "); }, 0, [&] { b_.add_input(ids_[t]); });
    }
    void output(uint32_t t) {
        guard([] { return std::string("graph outputs: "); }, 0, [&] { b_.add_output(ids_[t]); });
    }

private:
    Builder& b_;
    std::string_view file_, fallback_name_;
    std::vector<uint32_t> ids_;  ///< the builder's index of each tensor
    // Reused from one tensor or node to the next.
    std::vector<int64_t> dim_values_;
    std::vector<nnergy_string_view> dim_symbols_;
    std::vector<uint32_t> inputs_, outputs_;

    const std::vector<uint32_t>& map(const std::vector<uint32_t>& v, std::vector<uint32_t>& out) {
        out.clear();
        for (uint32_t t : v) out.push_back(t == NNERGY_NO_TENSOR ? NNERGY_NO_TENSOR : ids_[t]);
        return out;
    }
    /// Runs `f`; a builder's error becomes a parse_error, `what()` and `line` saying where
    /// (formatted only then).
    template <class What, class F>
    void guard(const What& what, uint32_t line, F&& f) {
        try {
            f();
        } catch (const parse_error&) {
            throw;
        } catch (const std::exception& e) {
            std::string m(file_);
            if (line) m += ":" + std::to_string(line);
            m += ": ";
            m += what();
            throw parse_error(m + e.what());
        }
    }
};

}  // namespace detail

/// Reads a document into a description of the whole graph (for tests and tools): `file` names
/// it in messages. Throws parse_error. `in_place` false reads every element as values, not
/// first in place (for tests: either way reads the same graph and the same errors).
inline graph_spec parse_graph(std::string_view text, std::string_view file, bool in_place = true) {
    graph_spec g;
    detail::spec_sink sink{g};
    detail::reader<detail::spec_sink>(file, sink, in_place).read(text);
    return g;
}

/// Reads a document straight into a builder with the interface of nnergy::sdk::graph_builder,
/// one tensor and one node at a time. A graph without a "name" gets `fallback_name`. Throws
/// parse_error; the builder's graph is then incomplete, to be discarded.
template <class Builder>
void read_graph(std::string_view text, std::string_view file, std::string_view fallback_name,
                Builder& b) {
    detail::builder_sink<Builder> sink(b, file, fallback_name);
    detail::reader<detail::builder_sink<Builder>>(file, sink).read(text);
}

}  // namespace nnergy::json_graph
