// SPDX-License-Identifier: Apache-2.0
/// \file json_document.hpp
/// \brief A JSON document that remembers where each value starts and on which line.
///
/// The graph reader needs the line of every node and tensor (for messages that point into the
/// file) and must reject what generic DOMs hide: duplicate keys, integers beyond 64 bits,
/// trailing text. A recursive-descent parser reads the text in place into a flat, read-only tree
/// in file order: strings without escapes point into the text, so the parse costs no memory in
/// proportion to the file beyond the values it keeps (a structural index, as simdjson builds,
/// costs four bytes per byte of text). The UTF-8 of the whole text is checked first, ASCII
/// sixteen bytes at a time.
#pragma once

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <nnergy/modeling/text.hpp>
#include <optional>
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
        // Documents are below 4 GiB (json_document refuses larger ones).
        const char* begin = text.data();
        const char* end = begin + text.size();
        for (const char* p = begin; p < end;) {
            const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
            if (!nl) break;
            const char* at = static_cast<const char*>(nl);
            line_starts_.push_back(static_cast<uint32_t>(at - begin) + 1);
            p = at + 1;
        }
    }
    uint32_t line(std::size_t offset) const noexcept {
        auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        return static_cast<uint32_t>(it - line_starts_.begin()) + 1;
    }
    uint32_t column(std::size_t offset) const noexcept {
        auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        std::size_t start = it == line_starts_.begin() ? 0 : std::size_t{*(it - 1)};
        return static_cast<uint32_t>(offset - start) + 1;
    }

private:
    std::vector<uint32_t> line_starts_;  ///< offsets just after each '\n'
};

namespace detail {
/// Bytes that end the plain part of a string: its closing quote, an escape, a control character.
inline constexpr std::array<bool, 256> plain_string_ends = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[c] = true;
    t['"'] = t['\\'] = true;
    return t;
}();
inline bool ends_plain_string(char c) noexcept {
    return plain_string_ends[static_cast<unsigned char>(c)];
}

/// Bytes that end a bare token (a number or a literal): structure, blanks, a quote, and NUL.
/// Looked up, not searched for in a list: every byte of every number passes through here.
inline constexpr std::array<bool, 256> token_ends = [] {
    std::array<bool, 256> t{};
    for (const char c : {',', ':', '[', ']', '{', '}', ' ', '\t', '\r', '\n', '"', '\0'})
        t[static_cast<unsigned char>(c)] = true;
    return t;
}();
inline bool ends_token(char c) noexcept { return token_ends[static_cast<unsigned char>(c)]; }

// The scanning loops look at sixteen bytes at a time (SSE2, which every x86-64 has), or eight
// (other 64-bit little-endian machines), then finish byte by byte: names are most of a graph's
// text. In each mask the lowest set bit marks the first byte that matches.
#if defined(__SSE2__)
inline constexpr std::ptrdiff_t scan_width = 16;
inline __m128i bytes_equal(__m128i x, char c) noexcept {
    return _mm_cmpeq_epi8(x, _mm_set1_epi8(c));
}
#else
inline constexpr std::ptrdiff_t scan_width =
    sizeof(void*) == 8 && std::endian::native == std::endian::little ? 8 : 0;
inline uint64_t load8(const char* p) noexcept {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
inline constexpr uint64_t every_byte = 0x0101010101010101u, high_bits = 0x8080808080808080u;
// Exact for the lowest matching byte; bits above it may be spurious (never looked at).
inline uint64_t bytes_equal(uint64_t x, unsigned char b) noexcept {
    const uint64_t y = x ^ (every_byte * b);
    return (y - every_byte) & ~y & high_bits;
}
inline uint64_t bytes_below(uint64_t x, unsigned char n) noexcept {
    return (x - every_byte * n) & ~x & high_bits;
}
#endif

/// The first of [p, e) that is a quote, a backslash or (with `controls`) a control character;
/// e if none.
template <bool controls>
inline const char* find_string_stop(const char* p, const char* e) noexcept {
#if defined(__SSE2__)
    for (; e - p >= scan_width; p += scan_width) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        __m128i m = _mm_or_si128(bytes_equal(x, '"'), bytes_equal(x, '\\'));
        if constexpr (controls)  // unsigned x <= 0x1f
            m = _mm_or_si128(
                m, _mm_cmpeq_epi8(_mm_max_epu8(x, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f)));
        if (const int bits = _mm_movemask_epi8(m)) return p + std::countr_zero(unsigned(bits));
    }
#else
    if constexpr (scan_width == 8)
        for (; e - p >= 8; p += 8) {
            const uint64_t x = load8(p);
            uint64_t m = bytes_equal(x, '"') | bytes_equal(x, '\\');
            if constexpr (controls) m |= bytes_below(x, 0x20);
            if (m) return p + std::countr_zero(m) / 8;
        }
#endif
    for (; p != e; ++p)
        if (*p == '"' || *p == '\\' || (controls && ends_plain_string(*p))) return p;
    return e;
}

/// Where the first byte of `text` lies that does not belong to well-formed UTF-8 (RFC 3629, as
/// modeling::utf8_sequence_length() checks a sequence); text.size() if there is none. ASCII,
/// nearly all of a graph's text, is passed over a block at a time.
inline std::size_t first_ill_formed_utf8(std::string_view text) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n) {
#if defined(__SSE2__)
        while (n - i >= 16 &&
               _mm_movemask_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i))) == 0)
            i += 16;
#else
        for (uint64_t word = 0; n - i >= 8; i += 8) {
            std::memcpy(&word, p + i, 8);
            if (word & 0x8080808080808080u) break;
        }
#endif
        while (i < n && p[i] < 0x80) ++i;
        if (i == n) break;
        const std::size_t length = modeling::utf8_sequence_length(text, i);
        if (length == 0) return i;
        i += length;
    }
    return n;
}

/// What a byte means to stepping over a list, looked up rather than compared in turn (lists are
/// dense with structure: a search ahead for the next bracket or comma costs more than it skips).
enum byte_kind : uint8_t { other, quote, opening, closing, comma, newline };
inline constexpr std::array<uint8_t, 256> byte_kinds = [] {
    std::array<uint8_t, 256> t{};
    t['"'] = quote;
    t['['] = t['{'] = opening;
    t[']'] = t['}'] = closing;
    t[','] = comma;
    t['\n'] = newline;
    return t;
}();
inline byte_kind kind_of_byte(char c) noexcept {
    return static_cast<byte_kind>(byte_kinds[static_cast<unsigned char>(c)]);
}

#if defined(__SSE2__)
/// Stepping over a list reads blocks of 64 bytes, one bit a byte (bit i: the block's byte i).
inline constexpr std::ptrdiff_t block_width = 64;
struct block_bits {
    uint64_t quote = 0, backslash = 0, opening = 0, closing = 0, comma = 0, newline = 0;
};
inline block_bits classify_block(const char* p) noexcept {
    block_bits b;
    for (int part = 0; part < 4; ++part) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * part));
        // '[' and ']' are '{' and '}' with bit 5 clear; no other byte becomes either.
        const __m128i folded = _mm_or_si128(x, _mm_set1_epi8(0x20));
        const auto bits = [part](__m128i m) {
            return static_cast<uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(m)))
                   << (16 * part);
        };
        b.quote |= bits(bytes_equal(x, '"'));
        b.backslash |= bits(bytes_equal(x, '\\'));
        b.opening |= bits(bytes_equal(folded, '{'));
        b.closing |= bits(bytes_equal(folded, '}'));
        b.comma |= bits(bytes_equal(x, ','));
        b.newline |= bits(bytes_equal(x, '\n'));
    }
    return b;
}
/// Bit i becomes the parity of bits 0..i: set from an opening quote up to (not including)
/// its closing one.
inline uint64_t prefix_xor(uint64_t x) noexcept {
    for (unsigned shift = 1; shift < 64; shift *= 2) x ^= x << shift;
    return x;
}
/// Set bits of `x` at positions [from, to), to <= 64.
inline std::size_t bits_in(uint64_t x, unsigned from, unsigned to) noexcept {
    const uint64_t below_to = to >= 64 ? ~uint64_t{0} : (uint64_t{1} << to) - 1;
    const uint64_t below_from = from >= 64 ? ~uint64_t{0} : (uint64_t{1} << from) - 1;
    return static_cast<std::size_t>(std::popcount(x & below_to & ~below_from));
}
#endif
}  // namespace detail

/// One value. Children of an array or object are contiguous in json_document::values(), in file
/// order; an object member carries its key. 64 bytes: each value is built, kept while its
/// container is open and then moved to its place, and a graph's text holds one every 15 bytes
/// or so.
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
    /// An array read element by element (json_document::for_each_element); child_count is its
    /// length, but its elements are not stored.
    bool streamed = false;
    uint32_t offset = 0;  ///< where the value starts
    /// The number, as `type` says: read only the member it names.
    union {
        int64_t integer = 0;
        uint64_t unsigned_integer;
        double real;
    };
    std::string_view string;  ///< decoded text of a string
    std::string_view key;     ///< decoded key, for object members
    uint32_t line = 0;        ///< the line it starts on (1-based)
    uint32_t key_offset = 0;  ///< where the key starts, for object members
    uint32_t first_child = 0;
    uint32_t child_count = 0;

    bool is_number() const noexcept {
        return type == kind::integer || type == kind::unsigned_integer ||
               type == kind::big_integer || type == kind::real;
    }
    bool is_integer() const noexcept {
        return type == kind::integer || type == kind::unsigned_integer || type == kind::big_integer;
    }
};
static_assert(sizeof(json_value) <= 64, "json_value grew: every value of a document pays for it");

/// A parsed document. The strings it holds point into the text or into the document itself, so
/// it is neither copied nor moved, and the text must outlive it.
///
/// Arrays under the top-level keys named `streamed` are not kept: the first pass steps over them
/// (counting their elements) and for_each_element() reads them one element at a time, so memory
/// stays proportional to one element, not to the file (a graph's node and tensor lists are
/// nearly all of it). Syntax errors inside them surface there.
class json_document {
public:
    /// Parses `text`; throws json_syntax_error. Containers deeper than `max_depth` are refused.
    json_document(std::string_view text, std::size_t max_depth,
                  std::initializer_list<std::string_view> streamed = {})
        : text_(text), max_depth_(max_depth), streamed_keys_(streamed) {
        // A UTF-8 byte order mark is allowed and skipped.
        base_ = text_.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
        if (text_.size() > UINT32_MAX - 64)
            throw json_syntax_error(0, "the document is larger than 4 GiB");
        if (const std::size_t bad = base_ + detail::first_ill_formed_utf8(text_.substr(base_));
            bad != text_.size())
            utf8_error(bad);
        try {
            parse();
        } catch (const read_without_streaming&) {
            parse_without_streaming();
        } catch (const json_syntax_error&) {
            // An error after a list that was stepped over may come after one inside it: read
            // again, every value in order, so that the first error in the file is the one told.
            if (!stepped_over_) throw;
            parse_without_streaming();
        }
    }
    /// A temporary string would be gone before the values that point into it.
    json_document(std::string&&, std::size_t,
                  std::initializer_list<std::string_view> = {}) = delete;
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
    /// Lines and columns of offsets, for messages; built on first use (values carry their line).
    const line_index& lines() const {
        if (!lines_) lines_.emplace(text_);
        return *lines_;
    }

    /// Reads one element of a streamed array in place, for a caller's fast path that takes what
    /// it needs as it goes instead of building the element's values. Each read succeeds or
    /// returns false; on false the caller gives up on the element, which is then read as values
    /// (for_each_element), and that finds whatever made the fast read give up, errors included.
    /// So the fast path only ever accepts a well-formed element, in its plain forms: strings
    /// without escapes, numbers as the values would hold them, literals.
    class element_cursor {
    public:
        explicit element_cursor(json_document& doc) noexcept : doc_(doc) {}

        /// The next byte after blanks ('\0' at the end of the text).
        [[gnu::always_inline]] char peek() noexcept {
            // Most tokens follow the one before without a blank: that case is a test here.
            if (doc_.at_ != doc_.end() && static_cast<unsigned char>(*doc_.at_) > ' ')
                return *doc_.at_;
            return peek_after_blanks();
        }
        /// Takes `c`, the next byte after blanks.
        bool take(char c) noexcept {
            if (peek() != c) return false;
            ++doc_.at_;
            return true;
        }
        /// Where the next byte is, and its line (after peek()).
        uint32_t offset() const noexcept { return static_cast<uint32_t>(doc_.position()); }
        uint32_t line() const noexcept { return doc_.line_; }
        /// A string without escapes or control characters, as a view of the text.
        bool plain_string(std::string_view& out) noexcept {
            if (peek() != '"') return false;
            const char* const open = doc_.at_;
            const char* const e = doc_.end();
            const char* const p = detail::find_string_stop<true>(open + 1, e);
            if (p == e || *p != '"') return false;
            out = {open + 1, static_cast<std::size_t>(p - open - 1)};
            doc_.at_ = p + 1;
            return true;
        }
        /// A number, read as a value holding it would be.
        bool number(json_value& out) {
            const char c = peek();
            if (c != '-' && (c < '0' || c > '9')) return false;
            // Most numbers of a graph are short non-negative integers (dimensions, attribute
            // values): read here; anything else as the document reads numbers.
            const char* p = doc_.at_;
            const char* const e = doc_.end();
            if (c != '0' || e - p < 2 || p[1] < '0' || p[1] > '9') {
                uint64_t v = 0;
                const char* q = p;
                for (; q != e && q - p < 18 && *q >= '0' && *q <= '9'; ++q)
                    v = 10 * v + static_cast<uint64_t>(*q - '0');
                if (q != p && (q == e || detail::ends_token(*q))) {
                    out.type = json_value::kind::integer;
                    out.integer = static_cast<int64_t>(v);
                    out.offset = offset();
                    out.line = line();
                    doc_.at_ = q;
                    return true;
                }
            }
            out.offset = offset();
            out.line = line();
            try {
                doc_.read_number(out);
            } catch (const json_syntax_error&) {
                return false;
            }
            return true;
        }
        /// The literal `word` (true, false, null).
        bool literal(std::string_view word) {
            peek();
            const std::size_t at = doc_.position();
            const std::size_t e = doc_.token_end(at);
            if (doc_.text_.substr(at, e - at) != word) return false;
            doc_.at_ = doc_.text_.data() + e;
            return true;
        }

    private:
        [[gnu::noinline]] char peek_after_blanks() noexcept {
            doc_.skip_blank();
            return doc_.at_ != doc_.end() ? *doc_.at_ : '\0';
        }

        json_document& doc_;
    };

    /// Calls `visit(which, element, index)` for each element of each array in `arrays` (absent
    /// ones are null), `which` being its position in `arrays`. Streamed arrays are read in file
    /// order; an element and its children live only during its call.
    template <class Visit>
    void for_each_element(std::initializer_list<const json_value*> arrays, Visit&& visit) {
        for_each_element(
            arrays, [](std::size_t, element_cursor&, std::size_t) { return false; }, visit);
    }

    /// As above, but each element of a streamed array is first offered to `fast(which, cursor,
    /// index)`, which reads it through the cursor and returns true, or returns false having kept
    /// nothing of it (the element is then read again as values and visited). Only once it has
    /// read the whole element, well-formed, may `fast` do the caller's work, and throw as `visit`
    /// would.
    template <class Fast, class Visit>
    void for_each_element(std::initializer_list<const json_value*> arrays, Fast&& fast,
                          Visit&& visit) {
        std::vector<std::pair<const json_value*, std::size_t>> streamed;
        std::size_t which = 0;
        for (const json_value* array : arrays) {
            if (array && !array->streamed)
                for (std::size_t k = 0; k < array->child_count; ++k)
                    visit(which, child(*array, k), k);
            if (array && array->streamed) streamed.emplace_back(array, which);
            ++which;
        }
        std::sort(streamed.begin(), streamed.end(),
                  [](const auto& a, const auto& b) { return a.first->offset < b.first->offset; });
        for (const auto& entry : streamed) {
            const std::size_t index_in_arrays = entry.second;
            at_ = text_.data() + entry.first->offset;
            line_ = entry.first->line;
            std::size_t index = 0;
            element_cursor cursor(*this);
            read_elements([&] {
                const char* const start = at_;
                const uint32_t start_line = line_;
                if (fast(index_in_arrays, cursor, index)) {
                    ++index;
                    return;
                }
                at_ = start;
                line_ = start_line;
                const std::size_t mark = values_.size();
                const json_value e = read_value(3);
                visit(index_in_arrays, e, index++);
                values_.resize(mark);
            });
        }
        report_trailing();
    }

private:
    std::string_view text_;
    mutable std::optional<line_index> lines_;
    std::size_t max_depth_;
    std::vector<std::string_view> streamed_keys_;
    std::deque<std::string> owned_strings_;          ///< decoded strings that held escapes
    std::size_t trailing_ = std::string_view::npos;  ///< text after the top-level value
    std::size_t root_index_ = 0;
    std::size_t base_ = 0;             ///< offset of the first byte after any byte order mark
    bool stepped_over_ = false;        ///< the first pass stepped over a streamed array
    const char* at_ = nullptr;         ///< the parser's position
    uint32_t line_ = 1;                ///< the line `at_` is on
    std::vector<json_value> values_;   ///< finished containers' children, then the root
    std::vector<json_value> pending_;  ///< children of the containers still open

    struct read_without_streaming {};

    const char* end() const noexcept { return text_.data() + text_.size(); }
    std::size_t position() const noexcept { return static_cast<std::size_t>(at_ - text_.data()); }

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
        while (e < text_.size() && !detail::ends_token(text_[e])) ++e;
        return e == at ? at + 1 : e;
    }

    [[noreturn]] void unexpected_end() const {
        throw json_syntax_error(text_.size(), "unexpected end of input");
    }

    /// Names what stands at `at`, where `expected` should have. Inside a container, a value
    /// that runs to the end of the text means the text was cut short.
    [[noreturn]] void unexpected_at(std::size_t at, std::string_view expected = {},
                                    bool inside_container = true) const {
        const std::size_t end = content_end();
        if (at >= end) unexpected_end();
        const char c = text_[at];
        if (inside_container && std::strchr("[]{},:", c) == nullptr && token_end(at) >= end)
            unexpected_end();
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

    /// Reports the byte at `at`, the first that is not well-formed UTF-8.
    [[noreturn]] void utf8_error(std::size_t at) const {
        throw json_syntax_error(
            at, "ill-formed UTF-8 (" + printable_byte(static_cast<unsigned char>(text_[at])) + ")");
    }

    [[noreturn]] void too_deep(std::size_t at) const {
        throw json_syntax_error(at,
                                "nesting deeper than " + std::to_string(max_depth_) + " levels");
    }

    [[noreturn]] void bad_literal(std::size_t at) const {
        throw json_syntax_error(at, "invalid literal '" +
                                        std::string(text_.substr(at, token_end(at) - at)) +
                                        "' (expected true, false or null)");
    }

    void report_trailing() const {
        if (trailing_ != std::string_view::npos)
            unexpected_at(trailing_, "nothing after the top-level value", false);
    }

    // ---- the parser ----

    void parse_without_streaming() {
        values_.clear();
        pending_.clear();
        owned_strings_.clear();
        trailing_ = std::string_view::npos;
        streamed_keys_.clear();
        stepped_over_ = false;
        parse();
    }

    void parse() {
        at_ = text_.data() + base_;
        line_ = 1;
        skip_blank();
        if (at_ == end()) unexpected_end();
        const json_value root = read_value(1, true);
        skip_blank();
        if (at_ != end()) trailing_ = position();
        if (!any_streamed(root)) report_trailing();
        root_index_ = values_.size();
        values_.push_back(root);
    }

    [[gnu::always_inline]] void skip_blank() noexcept {
        const char* const e = end();
        while (at_ != e) {
            const char c = *at_;
            // Every blank is at most ' ': one test tells most values' first bytes apart.
            if (static_cast<unsigned char>(c) > ' ') return;
            if (c == ' ') {
                // One space (after a ':' or a ',') is the commonest blank of all.
                if (e - at_ > 1 && static_cast<unsigned char>(at_[1]) > ' ') {
                    ++at_;
                    return;
                }
#if defined(__SSE2__)
                // Indentation (a seventh of the bytes of `bench`'s pretty-printed graphs) is
                // stepped over sixteen bytes at a time.
                if (e - at_ >= detail::scan_width) {
                    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at_));
                    const auto other =
                        ~static_cast<unsigned>(_mm_movemask_epi8(detail::bytes_equal(x, ' '))) &
                        0xffffu;
                    at_ += other ? std::countr_zero(other) : detail::scan_width;
                    continue;
                }
#endif
                ++at_;
            } else if (c == '\n') {
                ++line_;
                ++at_;
            } else if (c == '\t' || c == '\r') {
                ++at_;
            } else {
                return;
            }
        }
    }

    /// The value at the parser's position (after blanks): `depth` is its container depth.
    json_value read_value(std::size_t depth, bool top = false) {
        skip_blank();
        if (at_ == end()) unexpected_end();
        json_value out;
        out.offset = static_cast<uint32_t>(position());
        out.line = line_;
        switch (*at_) {
            case '{':
                read_object(depth, out, top);
                break;
            case '[':
                read_array(depth, out);
                break;
            case '"':
                out.type = json_value::kind::string;
                out.string = read_string();
                break;
            case 't':
                read_literal("true", out.offset);
                out.type = json_value::kind::boolean;
                out.boolean = true;
                break;
            case 'f':
                read_literal("false", out.offset);
                out.type = json_value::kind::boolean;
                break;
            case 'n':
                read_literal("null", out.offset);
                out.type = json_value::kind::null;
                break;
            case '-':
            case '0':
            case '1':
            case '2':
            case '3':
            case '4':
            case '5':
            case '6':
            case '7':
            case '8':
            case '9':
                read_number(out);
                break;
            default:
                unexpected_at(position(), "a value");
        }
        return out;
    }

    void read_literal(std::string_view word, std::size_t at) {
        const std::size_t e = token_end(at);
        if (text_.substr(at, e - at) != word) bad_literal(at);
        at_ = text_.data() + e;
    }

    /// A string at the parser's position (its opening quote), decoded. Strings without escapes
    /// are views of the text.
    std::string_view read_string() {
        const char* const open = at_;
        const char* const e = end();
        const char* p = detail::find_string_stop<true>(open + 1, e);
        if (p != e && *p == '"') {
            at_ = p + 1;
            return {open + 1, static_cast<std::size_t>(p - open - 1)};
        }
        std::string decoded(open + 1, p);
        while (true) {
            if (p == e) unterminated_string(open);
            const auto c = static_cast<unsigned char>(*p);
            if (c == '"') break;
            if (c < 0x20)
                throw json_syntax_error(static_cast<std::size_t>(p - text_.data()),
                                        "control character " + printable_byte(c) +
                                            " inside a string (write it as an escape such as \\n)");
            if (c != '\\') {
                decoded += static_cast<char>(c);
                ++p;
                continue;
            }
            if (++p == e) unterminated_string(open);
            switch (*p++) {
                case '"':
                    decoded += '"';
                    break;
                case '\\':
                    decoded += '\\';
                    break;
                case '/':
                    decoded += '/';
                    break;
                case 'b':
                    decoded += '\b';
                    break;
                case 'f':
                    decoded += '\f';
                    break;
                case 'n':
                    decoded += '\n';
                    break;
                case 'r':
                    decoded += '\r';
                    break;
                case 't':
                    decoded += '\t';
                    break;
                case 'u': {
                    uint32_t cp = read_hex4(p, open);
                    if (cp >= 0xdc00 && cp <= 0xdfff) bad_escape(open);
                    if (cp >= 0xd800 && cp <= 0xdbff) {
                        // A high surrogate needs its low half, written as a second escape.
                        if (e - p < 2 || p[0] != '\\' || p[1] != 'u') bad_escape(open);
                        p += 2;
                        const uint32_t low = read_hex4(p, open);
                        if (low < 0xdc00 || low > 0xdfff) bad_escape(open);
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                    }
                    append_utf8(decoded, cp);
                    break;
                }
                default:
                    bad_escape(open);
            }
        }
        at_ = p + 1;
        return owned_strings_.emplace_back(std::move(decoded));
    }

    uint32_t read_hex4(const char*& p, const char* open) const {
        if (end() - p < 4) {
            // Cut short, or a bad escape: which one depends on whether the string ends.
            for (const char* q = p; q != end(); ++q)
                if (*q == '"') bad_escape(open);
            unterminated_string(open);
        }
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k, ++p) {
            const char c = *p;
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= static_cast<uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= static_cast<uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                v |= static_cast<uint32_t>(c - 'A' + 10);
            else
                bad_escape(open);
        }
        return v;
    }

    static void append_utf8(std::string& s, uint32_t cp) {
        if (cp < 0x80) {
            s += static_cast<char>(cp);
        } else if (cp < 0x800) {
            s += static_cast<char>(0xc0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            s += static_cast<char>(0xe0 | (cp >> 12));
            s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            s += static_cast<char>(0x80 | (cp & 0x3f));
        } else {
            s += static_cast<char>(0xf0 | (cp >> 18));
            s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
            s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            s += static_cast<char>(0x80 | (cp & 0x3f));
        }
    }

    [[noreturn]] void bad_escape(const char* open) const {
        throw json_syntax_error(static_cast<std::size_t>(open - text_.data()),
                                "invalid string (bad escape sequence)");
    }

    [[noreturn]] void unterminated_string(const char* open) const {
        const auto start = static_cast<std::size_t>(open - text_.data());
        throw json_syntax_error(text_.size(), "unexpected end of input inside the string at line " +
                                                  std::to_string(lines().line(start)) +
                                                  ", column " +
                                                  std::to_string(lines().column(start)));
    }

    /// A number, checked against JSON's grammar: integers keep their exact value where it fits
    /// 64 bits; numbers with a fraction or an exponent are read as the nearest double.
    void read_number(json_value& out) {
        const std::size_t at = out.offset;
        const std::string_view text = text_.substr(at, token_end(at) - at);
        std::size_t i = text[0] == '-' ? 1 : 0;
        auto digits = [&] {
            const std::size_t from = i;
            while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
            return i - from;
        };
        const std::size_t int_digits = digits();
        // No leading zeros: "01" is not JSON.
        bool well_formed = int_digits > 0 && !(int_digits > 1 && text[text[0] == '-'] == '0');
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
        if (!well_formed) {
            if (at + text.size() >= content_end()) unexpected_end();
            throw json_syntax_error(at, "invalid number '" + std::string(text) + "'");
        }
        at_ = text.data() + text.size();
        if (integer) {
            const bool negative = text[0] == '-';
            uint64_t magnitude = 0;
            bool fits = true;
            for (std::size_t k = negative; k < text.size() && fits; ++k)
                fits = !__builtin_mul_overflow(magnitude, uint64_t{10}, &magnitude) &&
                       !__builtin_add_overflow(magnitude, static_cast<uint64_t>(text[k] - '0'),
                                               &magnitude);
            if (!fits) {
                out.type = json_value::kind::big_integer;
            } else if (negative) {
                if (magnitude > uint64_t{1} << 63) {
                    out.type = json_value::kind::big_integer;
                } else {
                    out.type = json_value::kind::integer;
                    out.integer = magnitude == uint64_t{1} << 63 ? INT64_MIN
                                                                 : -static_cast<int64_t>(magnitude);
                }
            } else if (magnitude > static_cast<uint64_t>(INT64_MAX)) {
                out.type = json_value::kind::unsigned_integer;
                out.unsigned_integer = magnitude;
            } else {
                out.type = json_value::kind::integer;
                out.integer = static_cast<int64_t>(magnitude);
            }
            return;
        }
        out.type = json_value::kind::real;
        const auto [stop, error] =
            std::from_chars(text.data(), text.data() + text.size(), out.real);
        if (error == std::errc{} && stop == text.data() + text.size()) return;
        // Beyond a double's range: too large is an error, too small is (signed) zero, as
        // IEEE rounding makes it.
        const double v = std::strtod(std::string(text).c_str(), nullptr);
        if (v == HUGE_VAL || v == -HUGE_VAL)
            throw json_syntax_error(at, "number out of range: " + std::string(text));
        out.real = v;
    }

    /// Reads the elements of the array at the parser's position (its '['), calling `element`
    /// with the parser at each; leaves the parser after the ']'.
    template <class Element>
    void read_elements(Element&& element) {
        ++at_;  // '['
        skip_blank();
        if (at_ == end()) unexpected_end();
        if (*at_ == ']') {
            ++at_;
            return;
        }
        while (true) {
            element();
            skip_blank();
            if (at_ == end()) unexpected_end();
            if (*at_ == ',') {
                ++at_;
                continue;
            }
            if (*at_ == ']') {
                ++at_;
                return;
            }
            unexpected_at(position(), "',' or ']'");
        }
    }

    void read_array(std::size_t depth, json_value& out) {
        out.type = json_value::kind::array;
        if (depth > max_depth_) too_deep(out.offset);
        const std::size_t mark = pending_.size();
        read_elements([&] {
            const json_value x = read_value(depth + 1);
            pending_.push_back(x);
        });
        close(mark, out);
    }

    void read_object(std::size_t depth, json_value& out, bool top) {
        out.type = json_value::kind::object;
        if (depth > max_depth_) too_deep(out.offset);
        ++at_;  // '{'
        const std::size_t mark = pending_.size();
        skip_blank();
        if (at_ == end()) unexpected_end();
        if (*at_ == '}') {
            ++at_;
            close(mark, out);
            return;
        }
        std::string_view expected_key = "a string key or '}'";
        while (true) {
            skip_blank();
            if (at_ == end()) unexpected_end();
            if (*at_ != '"') unexpected_at(position(), expected_key);
            const auto key_offset = static_cast<uint32_t>(position());
            const std::string_view key = read_string();
            skip_blank();
            if (at_ == end()) unexpected_end();
            if (*at_ != ':') unexpected_at(position(), "':'");
            ++at_;
            json_value x;
            if (top && std::find(streamed_keys_.begin(), streamed_keys_.end(), key) !=
                           streamed_keys_.end()) {
                skip_blank();
                if (at_ != end() && *at_ == '[') x = step_over_array();
            }
            if (!x.streamed) x = read_value(depth + 1);
            x.key = key;
            x.key_offset = key_offset;
            pending_.push_back(x);
            skip_blank();
            if (at_ == end()) unexpected_end();
            if (*at_ == ',') {
                ++at_;
                expected_key = "a string key";
                continue;
            }
            if (*at_ == '}') {
                ++at_;
                break;
            }
            unexpected_at(position(), "',' or '}'");
        }
        check_unique_keys(mark);
        close(mark, out);
    }

    /// An array left in the text for for_each_element(): only its end is found, and its
    /// elements counted (readers size their tables once). One that never closes makes the
    /// whole text be read again without streaming, which finds the error's position.
    json_value step_over_array() {
        json_value out;
        out.type = json_value::kind::array;
        out.offset = static_cast<uint32_t>(position());
        out.line = line_;
        out.streamed = true;
        const char* p = at_ + 1;
        const char* const e = end();
        const char* first = p;
        while (first != e && (*first == ' ' || *first == '\t' || *first == '\r' || *first == '\n'))
            ++first;
        const bool empty = first != e && *first == ']';
        list_count count;
#if defined(__SSE2__)
        // Sixty-four bytes at a time: where strings lie follows from the quotes alone (a block
        // without a backslash escapes none), so only the brackets outside strings are visited,
        // and the commas and newlines between two of them are counted at once.
        bool in_string = false;
        while (!count.closed && e - p >= detail::block_width) {
            const detail::block_bits bits = detail::classify_block(p);
            if (bits.backslash) {
                // An escape: this block byte by byte, each string skipped whole, escapes and
                // all (the next block then starts outside any string).
                p = step_bytes(p, p + detail::block_width, e, in_string, count);
                in_string = false;
                continue;
            }
            const uint64_t inside = detail::prefix_xor(bits.quote) ^ (in_string ? ~uint64_t{0} : 0);
            in_string = (inside >> 63) != 0;
            const uint64_t commas = bits.comma & ~inside, newlines = bits.newline & ~inside;
            const uint64_t opening = bits.opening & ~inside;
            unsigned from = 0;  // bytes before `from` are counted
            for (uint64_t brackets = (bits.opening | bits.closing) & ~inside; brackets;
                 brackets &= brackets - 1) {
                const unsigned at = static_cast<unsigned>(std::countr_zero(brackets));
                if (count.level == 1) count.commas += detail::bits_in(commas, from, at);
                from = at + 1;
                if ((opening >> at) & 1) {
                    ++count.level;
                } else if (--count.level == 0) {
                    count.lines += detail::bits_in(newlines, 0, at);
                    count.closed = true;
                    p += at;
                    break;
                }
            }
            if (count.closed) break;
            if (count.level == 1) count.commas += detail::bits_in(commas, from, 64);
            count.lines += static_cast<uint32_t>(std::popcount(newlines));
            p += detail::block_width;
        }
        if (!count.closed) p = step_bytes(p, e, e, in_string, count);
#else
        p = step_bytes(p, e, e, false, count);
#endif
        if (!count.closed) throw read_without_streaming{};
        line_ += count.lines;
        const std::size_t elements = empty ? 0 : count.commas + 1;
        out.child_count = static_cast<uint32_t>(std::min<std::size_t>(elements, UINT32_MAX));
        at_ = p + 1;
        stepped_over_ = true;
        return out;
    }

    /// What stepping over a list has seen so far.
    struct list_count {
        std::size_t level = 1;   ///< brackets open, the list's own included
        std::size_t commas = 0;  ///< at the list's own level
        uint32_t lines = 0;      ///< newlines
        bool closed = false;     ///< its closing bracket was met
    };

    /// Steps over [p, stop) byte by byte (first the rest of a string when `in_string`), a
    /// string that starts there whole; returns where it stopped: the list's closing bracket
    /// (`count.closed`), or at or past `stop`. A string without its closing quote is an error.
    static const char* step_bytes(const char* p, const char* stop, const char* e, bool in_string,
                                  list_count& count) {
        // The closing quote of the string whose text starts at q; e if none.
        const auto string_end = [e](const char* q) {
            q = detail::find_string_stop<false>(q, e);
            while (q != e && *q == '\\')
                q = e - q > 2 ? detail::find_string_stop<false>(q + 2, e) : e;
            if (q == e) throw read_without_streaming{};
            return q;
        };
        if (in_string) p = string_end(p) + 1;
        for (; p < stop; ++p) {
            const detail::byte_kind k = detail::kind_of_byte(*p);
            if (k == detail::other) continue;
            if (k == detail::quote) {
                p = string_end(p + 1);
            } else if (k == detail::opening) {
                ++count.level;
            } else if (k == detail::closing) {
                if (--count.level == 0) {
                    count.closed = true;
                    return p;
                }
            } else if (k == detail::comma) {
                count.commas += count.level == 1;
            } else {
                ++count.lines;
            }
        }
        return p;
    }

    bool any_streamed(const json_value& object) const noexcept {
        if (object.type != json_value::kind::object) return false;
        for (std::size_t k = 0; k < object.child_count; ++k)
            if (child(object, k).streamed) return true;
        return false;
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
                                        std::to_string(lines().line(first.key_offset)) + ")");
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
