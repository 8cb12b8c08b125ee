// SPDX-License-Identifier: Apache-2.0
/// \file json_document.hpp
/// \brief A JSON document that remembers where each value starts, parsed with simdjson.
///
/// The graph reader needs the line of every node and tensor (for messages that point into the
/// file) and must reject what generic DOMs hide: duplicate keys, integers beyond 64 bits,
/// trailing text. simdjson's On-Demand API validates the text and hands out each value's
/// position; this file copies the values into a flat, read-only tree in file order and turns
/// simdjson's error codes into messages with a line and column.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nnergy::json_graph {

/// A syntax error: `offset` is the byte the message is about.
class json_syntax_error : public std::runtime_error {
public:
    json_syntax_error(std::size_t offset, const std::string& what)
        : std::runtime_error(what), offset_(offset) {}
    std::size_t offset() const noexcept { return offset_; }

private:
    std::size_t offset_;
};

/// Maps byte offsets to 1-based lines and columns (columns count bytes). Built with one memchr
/// sweep; each lookup is a binary search.
class line_index {
public:
    explicit line_index(std::string_view text) {
        const char* begin = text.data();
        const char* end = begin + text.size();
        for (const char* p = begin; p < end;) {
            const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
            if (!nl) break;
            const char* at = static_cast<const char*>(nl);
            line_starts_.push_back(static_cast<std::size_t>(at - begin) + 1);
            p = at + 1;
        }
    }
    uint32_t line(std::size_t offset) const noexcept {
        auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        return static_cast<uint32_t>(it - line_starts_.begin()) + 1;
    }
    uint32_t column(std::size_t offset) const noexcept {
        auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        std::size_t start = it == line_starts_.begin() ? 0 : *(it - 1);
        return static_cast<uint32_t>(offset - start) + 1;
    }

private:
    std::vector<std::size_t> line_starts_;  ///< offsets just after each '\n'
};

/// One value. Children of an array or object are contiguous in json_document::values(), in file
/// order; an object member carries its key.
struct json_value {
    enum class kind : uint8_t {
        null,
        boolean,
        integer,           ///< fits int64_t
        unsigned_integer,  ///< above INT64_MAX, fits uint64_t
        big_integer,       ///< written as an integer, beyond 64 bits: no value kept
        real,              ///< written with a fraction or an exponent
        string,
        array,
        object,
    };
    kind type = kind::null;
    bool boolean = false;
    int64_t integer = 0;
    uint64_t unsigned_integer = 0;
    double real = 0;
    std::string_view string;  ///< decoded text of a string
    std::string_view key;     ///< decoded key, for object members
    uint32_t offset = 0;      ///< where the value starts
    uint32_t key_offset = 0;  ///< where the key starts, for object members
    uint32_t first_child = 0;
    uint32_t child_count = 0;
    /// An array read element by element (json_document::for_each_element); child_count is its
    /// length, but its elements are not stored.
    bool streamed = false;

    bool is_number() const noexcept {
        return type == kind::integer || type == kind::unsigned_integer ||
               type == kind::big_integer || type == kind::real;
    }
    bool is_integer() const noexcept {
        return type == kind::integer || type == kind::unsigned_integer || type == kind::big_integer;
    }
};

/// A parsed document. The strings it holds point into its own simdjson parser, so it is neither
/// copied nor moved.
///
/// Arrays under the top-level keys named `streamed` are not kept: for_each_element() reads them
/// one element at a time, so memory stays proportional to one element, not to the file (a graph's
/// node and tensor lists are nearly all of it). Syntax errors inside them surface there.
class json_document {
public:
    /// Parses `text`, read into simdjson's padded buffer, in place (`text` must outlive the
    /// document); throws json_syntax_error. Containers deeper than `max_depth` are refused.
    json_document(const simdjson::padded_string& text, std::size_t max_depth,
                  std::initializer_list<std::string_view> streamed = {})
        : text_(text.data(), text.size()),
          lines_(text_),
          max_depth_(max_depth),
          streamed_keys_(streamed) {
        // A UTF-8 byte order mark is allowed and skipped.
        base_ = text_.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
        padded_ = simdjson::padded_string_view(text.data() + base_, text.size() - base_,
                                               text.size() - base_ + simdjson::SIMDJSON_PADDING);
        try {
            parse();
        } catch (const read_without_streaming&) {
            values_.clear();
            pending_.clear();
            owned_strings_.clear();
            trailing_ = std::string_view::npos;
            streamed_keys_.clear();
            parse();
        }
    }
    json_document(const json_document&) = delete;
    json_document& operator=(const json_document&) = delete;

    const json_value& root() const noexcept { return values_[root_index_]; }
    const json_value& child(const json_value& v, std::size_t k) const noexcept {
        return values_[v.first_child + k];
    }
    const json_value* children_begin(const json_value& v) const noexcept {
        return values_.data() + v.first_child;
    }
    const json_value* children_end(const json_value& v) const noexcept {
        return values_.data() + v.first_child + v.child_count;
    }
    const line_index& lines() const noexcept { return lines_; }

    /// Calls `visit(which, element, index)` for each element of each array in `arrays` (absent
    /// ones are null), `which` being its position in `arrays`. Streamed arrays are read in one
    /// pass in file order; an element and its children live only during its call.
    template <class Visit>
    void for_each_element(std::initializer_list<const json_value*> arrays, Visit&& visit) {
        std::size_t which = 0, streamed = 0;
        for (const json_value* array : arrays) {
            if (array && !array->streamed)
                for (std::size_t k = 0; k < array->child_count; ++k)
                    visit(which, child(*array, k), k);
            streamed += array && array->streamed;
            ++which;
        }
        if (streamed == 0) return report_trailing();
        // simdjson decodes strings into one buffer from its start on every pass, so one pass
        // reads all streamed arrays (the first pass's strings were copied).
        doc_.rewind();
        // Through a value, as the first pass: the document's own get_object() also checks
        // that the text ends with the object, which trailing text (reported below) breaks.
        simdjson::ondemand::value root;
        simdjson::ondemand::object top;
        if (doc_.get_value().get(root) != simdjson::SUCCESS ||
            root.get_object().get(top) != simdjson::SUCCESS) {
            report_trailing();
            unexpected_at(stop_offset(base_));
        }
        for (auto member : top) {
            simdjson::ondemand::field f;
            if (std::move(member).get(f) != simdjson::SUCCESS)
                unexpected_at(stop_offset(base_), "',' or '}'");
            // Matched by position: the key's spelling may hold escapes.
            const std::size_t key_offset = offset_of(f.key().raw()) - 1;
            which = 0;
            const json_value* array = nullptr;
            for (const json_value* a : arrays) {
                if (a && a->streamed && a->key_offset == key_offset) {
                    array = a;
                    break;
                }
                ++which;
            }
            if (!array) continue;
            simdjson::ondemand::array elements;
            if (f.value().get_array().get(elements) != simdjson::SUCCESS)
                unexpected_at(stop_offset(array->offset));
            std::size_t index = 0;
            for (auto element : elements) {
                simdjson::ondemand::value x;
                if (std::move(element).get(x) != simdjson::SUCCESS)
                    unexpected_at(stop_offset(array->offset), "',' or ']'");
                const std::size_t mark = values_.size();
                const json_value e = read(x, 3);
                visit(which, e, index++);
                values_.resize(mark);
            }
            if (--streamed == 0) break;
        }
        report_trailing();
    }

private:
    std::string_view text_;  ///< the text, without simdjson's padding
    line_index lines_;
    std::size_t max_depth_;
    std::vector<std::string_view> streamed_keys_;
    std::deque<std::string> owned_strings_;  ///< the first pass's strings (see for_each_element)
    bool own_strings_ = false;
    std::size_t trailing_ = std::string_view::npos;  ///< text after the top-level value
    std::size_t root_index_ = 0;
    simdjson::padded_string_view padded_;  ///< what simdjson reads: the text after any BOM
    std::size_t base_ = 0;                 ///< offset in text_ of padded_'s first byte
    simdjson::ondemand::parser parser_;
    simdjson::ondemand::document doc_;
    std::vector<json_value> values_;   ///< finished containers' children, then the root
    std::vector<json_value> pending_;  ///< children of the containers still open

    struct read_without_streaming {};

    std::size_t offset_of(const char* p) const noexcept {
        return base_ + static_cast<std::size_t>(p - padded_.data());
    }

    // ---- error messages ----

    static std::string printable_byte(unsigned char u) {
        static const char hex[] = "0123456789abcdef";
        if (u >= 0x20 && u < 0x7f) return std::string("'") + static_cast<char>(u) + "'";
        return std::string("byte \\x") + hex[u >> 4] + hex[u & 15];
    }

    /// Offset just past the last non-blank byte: errors at or after it mean the text ended early.
    std::size_t content_end() const noexcept {
        std::size_t e = text_.size();
        while (e > base_ && (text_[e - 1] == ' ' || text_[e - 1] == '\n' || text_[e - 1] == '\r' ||
                             text_[e - 1] == '\t'))
            --e;
        return e;
    }

    std::size_t token_end(std::size_t at) const noexcept {
        if (at < text_.size() && text_[at] == '"') {
            for (std::size_t i = at + 1; i < text_.size(); ++i) {
                if (text_[i] == '\\')
                    ++i;
                else if (text_[i] == '"')
                    return i + 1;
            }
            return text_.size();
        }
        std::size_t e = at;
        while (e < text_.size() && std::strchr(",:[]{} \t\r\n\"", text_[e]) == nullptr) ++e;
        return e == at ? at + 1 : e;
    }

    [[noreturn]] void unexpected_end() const {
        throw json_syntax_error(text_.size(), "unexpected end of input");
    }

    /// Names what stands at `at`, the position simdjson stopped at. Inside a container, a value
    /// that runs to the end of the text means the text was cut short.
    [[noreturn]] void unexpected_at(std::size_t at, std::string_view expected = {},
                                    bool inside_container = true) const {
        const std::size_t end = content_end();
        if (at >= end) unexpected_end();
        const char c = text_[at];
        if (inside_container && std::strchr("[]{},:", c) == nullptr && token_end(at) >= end)
            unexpected_end();
        // A container skipped over (not yet read) that is never closed: the text was cut short.
        if ((c == '[' || c == '{') && never_closed(at)) unexpected_end();
        std::string what;
        if (c == '"')
            what = "unexpected string literal";
        else if (c == '-' || (c >= '0' && c <= '9'))
            what = "unexpected number";
        else if (c >= 'a' && c <= 'z')
            what = "unexpected literal '" + std::string(text_.substr(at, token_end(at) - at)) + "'";
        else
            what = "unexpected " + printable_byte(static_cast<unsigned char>(c));
        if (!expected.empty()) what += "; expected " + std::string(expected);
        throw json_syntax_error(at, what);
    }

    /// simdjson reports where it stopped only while it is inside the document.
    std::size_t stop_offset(std::size_t fallback) {
        const char* p = nullptr;
        if (doc_.current_location().get(p) != simdjson::SUCCESS) return text_.size();
        std::size_t at = offset_of(p);
        return at < fallback ? fallback : at;
    }

    /// The first byte that is not well-formed UTF-8 (simdjson only says that one exists).
    std::size_t first_bad_utf8() const noexcept {
        const auto* s = reinterpret_cast<const unsigned char*>(text_.data());
        const std::size_t n = text_.size();
        std::size_t i = base_;
        while (i < n) {
            const unsigned char c = s[i];
            std::size_t len = c < 0x80         ? 1
                              : (c >> 5) == 6  ? 2
                              : (c >> 4) == 14 ? 3
                              : (c >> 3) == 30 ? 4
                                               : 0;
            if (len == 0 || i + len > n) return i;
            uint32_t cp = len == 1   ? c
                          : len == 2 ? (c & 0x1fu)
                          : len == 3 ? (c & 0x0fu)
                                     : (c & 0x07u);
            for (std::size_t k = 1; k < len; ++k) {
                if ((s[i + k] & 0xc0) != 0x80) return i;
                cp = (cp << 6) | (s[i + k] & 0x3fu);
            }
            static const uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
            if (cp < min_for_len[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
            i += len;
        }
        return n;
    }

    /// Where the first string starts that holds `bad` (a raw control character), or where an
    /// unterminated one starts; and whether it was unterminated.
    std::pair<std::size_t, std::size_t> string_problem() const noexcept {
        bool in_string = false;
        std::size_t start = 0;
        for (std::size_t i = base_; i < text_.size(); ++i) {
            const auto c = static_cast<unsigned char>(text_[i]);
            if (!in_string) {
                if (c == '"') {
                    in_string = true;
                    start = i;
                }
            } else if (c == '\\') {
                ++i;
            } else if (c == '"') {
                in_string = false;
            } else if (c < 0x20) {
                return {start, i};
            }
        }
        return {start, in_string ? text_.size() : std::string_view::npos};
    }

    /// Walks the text from `from`, outside strings, keeping the bracket depth; returns the
    /// first bracket after which `stop(depth)` holds, or npos.
    template <class Stop>
    std::size_t walk_brackets(std::size_t from, Stop stop) const noexcept {
        bool in_string = false;
        std::size_t level = 0;
        for (std::size_t i = from; i < text_.size(); ++i) {
            const char c = text_[i];
            if (in_string) {
                if (c == '\\')
                    ++i;
                else if (c == '"')
                    in_string = false;
            } else if (c == '"') {
                in_string = true;
            } else if (c == '[' || c == '{') {
                if (stop(++level)) return i;
            } else if ((c == ']' || c == '}') && level > 0) {
                if (stop(--level)) return i;
            }
        }
        return std::string_view::npos;
    }

    /// Whether the container opening at `at` runs to the end of the text.
    bool never_closed(std::size_t at) const noexcept {
        return walk_brackets(at, [](std::size_t depth) { return depth == 0; }) ==
               std::string_view::npos;
    }

    /// The first bracket nested deeper than `depth` (0 if none).
    std::size_t first_too_deep(std::size_t depth) const noexcept {
        const std::size_t at = walk_brackets(base_, [depth](std::size_t d) { return d > depth; });
        return at == std::string_view::npos ? 0 : at;
    }

    [[noreturn]] void too_deep(std::size_t at) const {
        throw json_syntax_error(at,
                                "nesting deeper than " + std::to_string(max_depth_) + " levels");
    }

    [[noreturn]] void document_error(simdjson::error_code e) const {
        switch (e) {
            case simdjson::EMPTY:
            case simdjson::INCOMPLETE_ARRAY_OR_OBJECT:
                unexpected_end();
            case simdjson::UTF8_ERROR: {
                std::size_t at = first_bad_utf8();
                throw json_syntax_error(
                    at,
                    "ill-formed UTF-8 (" +
                        (at < text_.size() ? printable_byte(static_cast<unsigned char>(text_[at]))
                                           : std::string("truncated sequence")) +
                        ")");
            }
            case simdjson::UNCLOSED_STRING:
            case simdjson::UNESCAPED_CHARS: {
                auto [start, bad] = string_problem();
                if (bad == text_.size())
                    throw json_syntax_error(bad,
                                            "unexpected end of input inside the string at line " +
                                                std::to_string(lines_.line(start)) + ", column " +
                                                std::to_string(lines_.column(start)));
                if (bad != std::string_view::npos)
                    throw json_syntax_error(
                        bad, "control character " +
                                 printable_byte(static_cast<unsigned char>(text_[bad])) +
                                 " inside a string (write it as an escape such as \\n)");
                break;
            }
            case simdjson::DEPTH_ERROR:
                too_deep(first_too_deep(max_depth_));
            case simdjson::CAPACITY:
                throw json_syntax_error(0,
                                        "the document is too large (simdjson handles up to 4 GiB)");
            default:
                break;
        }
        throw json_syntax_error(0, simdjson::error_message(e));
    }

    // ---- the copy into values_ ----

    void parse() {
        if (padded_.size() > UINT32_MAX - 64)
            throw json_syntax_error(0, "the document is larger than 4 GiB");
        if (simdjson::error_code e = parser_.iterate(padded_).get(doc_)) document_error(e);
        own_strings_ = !streamed_keys_.empty();
        simdjson::ondemand::json_type type{};
        if (simdjson::error_code e = doc_.type().get(type)) {
            if (e == simdjson::UTF8_ERROR || e == simdjson::UNCLOSED_STRING ||
                e == simdjson::UNESCAPED_CHARS || e == simdjson::EMPTY)
                document_error(e);
            unexpected_at(stop_offset(base_));
        }
        std::size_t start = base_;
        while (start < text_.size() && std::strchr(" \t\r\n", text_[start]) && text_[start] != 0)
            ++start;
        json_value root;
        root.offset = static_cast<uint32_t>(start);
        if (type == simdjson::ondemand::json_type::array ||
            type == simdjson::ondemand::json_type::object) {
            simdjson::ondemand::value v;
            if (simdjson::error_code e = doc_.get_value().get(v)) document_error(e);
            root = read(v, 1, true);
            const char* after = nullptr;
            if (doc_.current_location().get(after) == simdjson::SUCCESS) {
                // Skipped (streamed) arrays are not checked yet: an unclosed one swallows the
                // rest, and a malformed one can end early, leaving what looks like trailing
                // text. Their own errors come first (for_each_element).
                if (never_closed(root.offset)) unexpected_end();
                trailing_ = offset_of(after);
                if (!any_streamed(root)) report_trailing();
            }
        } else {
            // A scalar document: the graph reader refuses it by its kind, so the kind is enough.
            switch (type) {
                case simdjson::ondemand::json_type::number:
                    root.type = json_value::kind::integer;
                    break;
                case simdjson::ondemand::json_type::string:
                    root.type = json_value::kind::string;
                    break;
                case simdjson::ondemand::json_type::boolean:
                    root.type = json_value::kind::boolean;
                    break;
                default:
                    root.type = json_value::kind::null;
            }
        }
        root_index_ = values_.size();
        values_.push_back(root);
        own_strings_ = false;
    }

    json_value read(simdjson::ondemand::value& v, std::size_t depth, bool top = false) {
        json_value out;
        const std::string_view token = v.raw_json_token();
        out.offset = static_cast<uint32_t>(offset_of(token.data()));
        simdjson::ondemand::json_type type{};
        if (simdjson::error_code e = v.type().get(type)) {
            (void)e;
            unexpected_at(stop_offset(out.offset), "a value");
        }
        switch (type) {
            case simdjson::ondemand::json_type::array:
                read_array(v, depth, out);
                break;
            case simdjson::ondemand::json_type::object:
                read_object(v, depth, out, top);
                break;
            case simdjson::ondemand::json_type::number:
                read_number(v, out);
                break;
            case simdjson::ondemand::json_type::string:
                out.type = json_value::kind::string;
                if (v.get_string().get(out.string) != simdjson::SUCCESS)
                    throw json_syntax_error(out.offset, "invalid string (bad escape sequence)");
                if (own_strings_) out.string = owned_strings_.emplace_back(out.string);
                break;
            case simdjson::ondemand::json_type::boolean:
                out.type = json_value::kind::boolean;
                if (v.get_bool().get(out.boolean) != simdjson::SUCCESS) bad_literal(out.offset);
                break;
            case simdjson::ondemand::json_type::null: {
                bool is_null = false;
                if (v.is_null().get(is_null) != simdjson::SUCCESS || !is_null)
                    bad_literal(out.offset);
                out.type = json_value::kind::null;
                break;
            }
        }
        return out;
    }

    /// An array left in the text for for_each_element(); any other value is read later.
    json_value skip_if_array(simdjson::ondemand::value& v) {
        json_value out;
        simdjson::ondemand::json_type type{};
        if (v.type().get(type) != simdjson::SUCCESS || type != simdjson::ondemand::json_type::array)
            return out;
        out.type = json_value::kind::array;
        out.offset = static_cast<uint32_t>(offset_of(v.raw_json_token().data()));
        out.streamed = true;
        // The element count lets readers size their tables once. simdjson cannot go on after an
        // error, and where it stops counting is not where the error is: a malformed array makes
        // the whole text be read again without streaming, which finds the error's position.
        simdjson::ondemand::array a;
        std::size_t count = 0;
        if (v.get_array().get(a) != simdjson::SUCCESS ||
            a.count_elements().get(count) != simdjson::SUCCESS)
            throw read_without_streaming{};
        out.child_count = static_cast<uint32_t>(std::min<std::size_t>(count, UINT32_MAX));
        return out;
    }

    bool any_streamed(const json_value& object) const noexcept {
        for (std::size_t k = 0; k < object.child_count; ++k)
            if (child(object, k).streamed) return true;
        return false;
    }

    void report_trailing() const {
        if (trailing_ != std::string_view::npos)
            unexpected_at(trailing_, "nothing after the top-level value", false);
    }

    [[noreturn]] void bad_literal(std::size_t at) const {
        throw json_syntax_error(at, "invalid literal '" +
                                        std::string(text_.substr(at, token_end(at) - at)) +
                                        "' (expected true, false or null)");
    }

    void read_number(simdjson::ondemand::value& v, json_value& out) {
        simdjson::ondemand::number n;
        if (v.get_number().get(n) == simdjson::SUCCESS) {
            switch (n.get_number_type()) {
                case simdjson::ondemand::number_type::signed_integer:
                    out.type = json_value::kind::integer;
                    out.integer = n.get_int64();
                    return;
                case simdjson::ondemand::number_type::unsigned_integer:
                    out.type = json_value::kind::unsigned_integer;
                    out.unsigned_integer = n.get_uint64();
                    return;
                case simdjson::ondemand::number_type::floating_point_number:
                    out.type = json_value::kind::real;
                    out.real = n.get_double();
                    return;
            }
        }
        // simdjson refuses the number: say whether it is malformed or merely too large.
        const std::size_t at = out.offset;
        const std::string_view text = text_.substr(at, token_end(at) - at);
        std::size_t i = text.substr(0, 1) == "-" ? 1 : 0;
        auto digits = [&] {
            std::size_t from = i;
            while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
            return i - from;
        };
        bool well_formed = digits() > 0;
        bool integer = true;
        if (well_formed && i < text.size() && text[i] == '.') {
            ++i;
            integer = false;
            well_formed = digits() > 0;
        }
        if (well_formed && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
            ++i;
            integer = false;
            if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
            well_formed = digits() > 0;
        }
        well_formed = well_formed && i == text.size();
        if (well_formed && integer) {
            out.type = json_value::kind::big_integer;
            return;
        }
        if (well_formed) throw json_syntax_error(at, "number out of range: " + std::string(text));
        if (at + text.size() >= content_end()) unexpected_end();
        throw json_syntax_error(at, "invalid number '" + std::string(text) + "'");
    }

    void read_array(simdjson::ondemand::value& v, std::size_t depth, json_value& out) {
        out.type = json_value::kind::array;
        if (depth > max_depth_) too_deep(out.offset);
        simdjson::ondemand::array a;
        if (v.get_array().get(a) != simdjson::SUCCESS) unexpected_at(stop_offset(out.offset));
        const std::size_t mark = pending_.size();
        for (auto element : a) {
            simdjson::ondemand::value x;
            if (std::move(element).get(x) != simdjson::SUCCESS)
                unexpected_at(stop_offset(out.offset), "',' or ']'");
            pending_.push_back(read(x, depth + 1));
        }
        close(mark, out);
    }

    void read_object(simdjson::ondemand::value& v, std::size_t depth, json_value& out, bool top) {
        out.type = json_value::kind::object;
        if (depth > max_depth_) too_deep(out.offset);
        simdjson::ondemand::object o;
        if (v.get_object().get(o) != simdjson::SUCCESS) unexpected_at(stop_offset(out.offset));
        const std::size_t mark = pending_.size();
        for (auto member : o) {
            simdjson::ondemand::field f;
            if (std::move(member).get(f) != simdjson::SUCCESS) {
                // What was expected follows from the byte before the offending one.
                const std::size_t at = stop_offset(out.offset);
                std::size_t before = at;
                while (before > out.offset && std::strchr(" \t\r\n", text_[before - 1])) --before;
                const char prev = before > out.offset ? text_[before - 1] : '{';
                if (prev == ',') unexpected_at(at, "a string key");
                if (pending_.size() > mark) unexpected_at(at, "',' or '}'");
                unexpected_at(at, prev == '"' ? "':'" : "a string key or '}'");
            }
            // The key's raw position first: asking for the decoded key consumes it.
            const std::size_t key_offset = offset_of(f.key().raw()) - 1;
            std::string_view key;
            if (f.unescaped_key().get(key) != simdjson::SUCCESS)
                throw json_syntax_error(key_offset, "invalid string (bad escape sequence)");
            json_value x;
            if (top && std::find(streamed_keys_.begin(), streamed_keys_.end(), key) !=
                           streamed_keys_.end())
                x = skip_if_array(f.value());
            if (!x.streamed) x = read(f.value(), depth + 1);
            x.key = own_strings_ ? std::string_view(owned_strings_.emplace_back(key)) : key;
            x.key_offset = static_cast<uint32_t>(key_offset);
            pending_.push_back(x);
        }
        check_unique_keys(mark);
        close(mark, out);
    }

    void check_unique_keys(std::size_t mark) const {
        const std::size_t n = pending_.size() - mark;
        auto duplicate = [&](const json_value& first, const json_value& again) {
            std::string key;
            for (char c : again.key) {
                auto u = static_cast<unsigned char>(c);
                key += u < 0x20 || u == 0x7f ? printable_byte(u) : std::string(1, c);
            }
            throw json_syntax_error(again.key_offset,
                                    "duplicate key '" + key + "' (first at line " +
                                        std::to_string(lines_.line(first.key_offset)) + ")");
        };
        if (n <= 16) {
            for (std::size_t j = mark + 1; j < pending_.size(); ++j)
                for (std::size_t i = mark; i < j; ++i)
                    if (pending_[i].key == pending_[j].key) duplicate(pending_[i], pending_[j]);
            return;
        }
        std::vector<std::size_t> order(n);
        for (std::size_t k = 0; k < n; ++k) order[k] = mark + k;
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return pending_[a].key < pending_[b].key;
        });
        // Report the duplicate that comes first in the file.
        std::size_t best = SIZE_MAX, best_first = 0;
        for (std::size_t k = 1; k < n; ++k)
            if (pending_[order[k]].key == pending_[order[k - 1]].key && order[k] < best) {
                best = order[k];
                std::size_t f = k - 1;
                while (f > 0 && pending_[order[f - 1]].key == pending_[order[k]].key) --f;
                best_first = order[f];
            }
        if (best != SIZE_MAX) duplicate(pending_[best_first], pending_[best]);
    }

    /// Moves the open container's children (pending_[mark...]) to their final place.
    void close(std::size_t mark, json_value& out) {
        out.first_child = static_cast<uint32_t>(values_.size());
        out.child_count = static_cast<uint32_t>(pending_.size() - mark);
        values_.insert(values_.end(), pending_.begin() + static_cast<std::ptrdiff_t>(mark),
                       pending_.end());
        pending_.resize(mark);
    }
};

}  // namespace nnergy::json_graph
