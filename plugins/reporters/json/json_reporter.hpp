// SPDX-License-Identifier: Apache-2.0
/// \file json_reporter.hpp
/// \brief nnergy.reporter.json: the report document (docs/report.md) as JSON, key order kept,
/// numbers with enough digits to read back the same double.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <nnergy/modeling/text.hpp>
#include <nnergy/sdk.hpp>
#include <string>
#include <string_view>

namespace nnergy::json {

namespace detail {

// Whether none of eight bytes needs attention in a string literal (a control character, a
// quote, a backslash or a byte of a multi-byte UTF-8 sequence). It may answer no for a plain
// word (the caller then looks byte by byte), never yes for one that is not.
inline bool plain_word(uint64_t x) noexcept {
    constexpr uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    auto has_zero = [](uint64_t v) { return (v - ones) & ~v & highs; };
    const uint64_t below_space = (x - ones * 0x20) & ~x & highs;
    return (below_space | has_zero(x ^ (ones * '"')) | has_zero(x ^ (ones * '\\')) | (x & highs)) ==
           0;
}

/// The text being written. Each piece makes room for its longest possible text once and then
/// stores bytes through a pointer (appending to a std::string a character at a time checked
/// its capacity for every one). With a writer, text beyond `flush_bytes` is handed over at
/// member and element boundaries and the buffer reused, so a report of any size costs the
/// reporter a buffer's worth of memory.
class text_buffer {
public:
    static constexpr size_t flush_bytes = size_t{1} << 16;

    explicit text_buffer(sdk::output_writer* writer = nullptr, size_t capacity = 2 * flush_bytes)
        : writer_(writer) {
        buf_.resize(capacity);
    }
    /// Room for `n` more bytes; returns where they go. Call done() with the end written.
    char* room(size_t n) {
        if (buf_.size() - used_ < n) [[unlikely]]
            grow(n);
        return buf_.data() + used_;
    }
    void done(const char* end) noexcept { used_ = static_cast<size_t>(end - buf_.data()); }
    void append(std::string_view s) {
        char* p = room(s.size());
        std::memcpy(p, s.data(), s.size());
        used_ += s.size();
    }
    void flush_if_full() {
        if (writer_ && used_ >= flush_bytes) flush();
    }
    /// Hands the text to the writer; without one, keeps it.
    void flush() {
        if (!writer_ || used_ == 0) return;
        writer_->write(view());
        used_ = 0;
    }
    std::string_view view() const noexcept { return {buf_.data(), used_}; }
    std::string take() {
        buf_.resize(used_);
        used_ = 0;
        return std::move(buf_);
    }

private:
    [[gnu::noinline]] void grow(size_t n) { buf_.resize(std::max(2 * buf_.size(), used_ + n)); }

    sdk::output_writer* writer_;
    std::string buf_;  ///< sized to its capacity; the first used_ bytes are the text
    size_t used_ = 0;
};

// A JSON string literal at `p`, which has room for 2 + 6 * s.size() bytes (every byte written
// as \u00XX); returns its end. Bytes that are not UTF-8 become U+FFFD (three bytes for at
// least one) so the output stays valid.
inline char* put_string(char* p, std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    *p++ = '"';
    // Most report text (keys, names, units) is plain and short: checked and copied in whole
    // words, the last one overlapping the one before rather than finished byte by byte. Text
    // that is not plain is then written from its start by the loop below.
    const size_t n = s.size();
    if (n >= 4) {
        const char* const from = s.data();
        bool plain = true;
        uint64_t word = 0;
        if (n >= 8) {
            for (size_t i = 0; plain && i + 8 < n; i += 8) {
                std::memcpy(&word, from + i, 8);
                plain = plain_word(word);
                std::memcpy(p + i, &word, 8);
            }
            std::memcpy(&word, from + n - 8, 8);
            plain = plain && plain_word(word);
            std::memcpy(p + n - 8, &word, 8);
        } else {
            uint32_t low = 0, high = 0;
            std::memcpy(&low, from, 4);
            std::memcpy(&high, from + n - 4, 4);
            plain = plain_word(uint64_t{low} | uint64_t{high} << 32);
            std::memcpy(p, &low, 4);
            std::memcpy(p + n - 4, &high, 4);
        }
        if (plain) {
            p[n] = '"';
            return p + n + 1;
        }
    }
    size_t i = 0;
    while (i < s.size()) {
        // Plain ASCII is copied as it is found, eight bytes at a time, then byte by byte: most
        // report text is plain.
        for (uint64_t word = 0; i + 8 <= s.size(); i += 8, p += 8) {
            std::memcpy(&word, s.data() + i, 8);
            if (!plain_word(word)) break;
            std::memcpy(p, &word, 8);
        }
        for (; i < s.size(); ++i, ++p) {
            const unsigned char c = static_cast<unsigned char>(s[i]);
            if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
            *p = static_cast<char>(c);
        }
        if (i == s.size()) break;
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            const size_t n = modeling::utf8_sequence_length(s, i);
            if (n == 0) {
                std::memcpy(p, "\xef\xbf\xbd", 3);
                p += 3;
                ++i;
            } else {
                std::memcpy(p, s.data() + i, n);
                p += n;
                i += n;
            }
            continue;
        }
        *p++ = '\\';
        switch (c) {
            case '"':
                *p++ = '"';
                break;
            case '\\':
                *p++ = '\\';
                break;
            case '\b':
                *p++ = 'b';
                break;
            case '\f':
                *p++ = 'f';
                break;
            case '\n':
                *p++ = 'n';
                break;
            case '\r':
                *p++ = 'r';
                break;
            case '\t':
                *p++ = 't';
                break;
            default:
                std::memcpy(p, "u00", 3);
                p[3] = hex[c >> 4];
                p[4] = hex[c & 15];
                p += 5;
        }
        ++i;
    }
    *p++ = '"';
    return p;
}

inline void append_string(text_buffer& out, std::string_view s) {
    out.done(put_string(out.room(2 + 6 * s.size()), s));
}

inline void append_string(std::string& out, std::string_view s) {
    text_buffer text(nullptr, 2 + 6 * s.size());
    append_string(text, s);
    out += text.view();
}

/// Room for a double's text: its shortest form (at most 24 bytes) with ".0", and the fixed-size
/// copy double_texts makes.
inline constexpr size_t double_room = 40;

/// At `p` (double_room bytes of room), the shortest text that reads back as the same double; a
/// whole number keeps a ".0" so that readers see a float, and NaN and infinities (not JSON) are
/// null. Returns its end.
inline char* put_double(char* p, double v) {
    if (!std::isfinite(v)) {
        std::memcpy(p, "null", 4);
        return p + 4;
    }
    // Whole numbers below 2^53 (counts, bytes, sizes: two in five of a report's numbers) are
    // their integer's digits, which is what std::to_chars writes unless the exponent form is
    // shorter (1e+05 for 100000): its digits without trailing zeros, a point if more than one,
    // and four for "e+NN". Those, -0 and all other numbers are std::to_chars's.
    constexpr double exact_below = 9007199254740992.0;  // 2^53
    if (v == std::trunc(v) && std::fabs(v) < exact_below && !(v == 0 && std::signbit(v))) {
        const auto whole = static_cast<int64_t>(v);
        char* const end = std::to_chars(p, p + 24, whole).ptr;
        const char* first = p + (whole < 0);
        const auto digits = static_cast<size_t>(end - first);
        size_t zeros = 0;
        while (zeros + 1 < digits && end[-1 - static_cast<std::ptrdiff_t>(zeros)] == '0') ++zeros;
        const size_t significant = digits - zeros;
        const size_t exponent_form = significant + (significant > 1) + 4;
        if (digits <= exponent_form) {
            std::memcpy(end, ".0", 2);
            return end + 2;
        }
    }
    char* const end = std::to_chars(p, p + 32, v).ptr;
    if (std::string_view(p, static_cast<size_t>(end - p)).find_first_of(".eE") !=
        std::string_view::npos)
        return end;
    std::memcpy(end, ".0", 2);
    return end + 2;
}

/// The texts of the doubles written last, by their bits: a report repeats most of its numbers
/// (a device's peaks and efficiencies in every kernel, the same shapes in every block), and
/// copying a text back costs a tenth of finding the shortest one again.
class double_texts {
public:
    /// put_double(p, v), from a remembered text where there is one.
    char* put(char* p, double v) noexcept {
        uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        entry& e = entries_[(bits * 0x9E3779B97F4A7C15ull) >> (64 - index_bits)];
        if (e.size == 0 || e.bits != bits) {
            e.bits = bits;
            e.size = static_cast<uint8_t>(put_double(e.text, v) - e.text);
        }
        std::memcpy(p, e.text, sizeof e.text);  // all of it: the room is there, the copy fixed
        return p + e.size;
    }

private:
    static constexpr unsigned index_bits = 10;
    struct entry {
        uint64_t bits = 0;
        uint8_t size = 0;  ///< 0: empty (no double's text is empty)
        char text[39];
    };
    static_assert(sizeof(entry::text) <= double_room);
    std::array<entry, size_t{1} << index_bits> entries_{};
};

/// A line break and `depth` levels of `indent` spaces at `p`, which has room for 8 bytes beyond
/// them (spaces are stored eight at a time); returns the end.
inline char* put_newline(char* p, int indent, int depth) {
    const auto spaces = static_cast<size_t>(indent) * static_cast<size_t>(depth);
    constexpr uint64_t eight_spaces = 0x2020202020202020ull;
    *p++ = '\n';
    for (size_t k = 0; k < spaces; k += 8) std::memcpy(p + k, &eight_spaces, 8);
    return p + spaces;
}

inline void append_value(text_buffer& out, double_texts& numbers, const sdk::value_view& v,
                         int indent, int depth) {
    const nnergy_value_kind kind = v.kind();
    switch (kind) {
        case NNERGY_VALUE_NULL:
            out.append("null");
            return;
        case NNERGY_VALUE_BOOL:
            out.append(v.as_bool() ? "true" : "false");
            return;
        case NNERGY_VALUE_INT: {
            char* p = out.room(24);
            out.done(std::to_chars(p, p + 24, v.as_int()).ptr);
            return;
        }
        case NNERGY_VALUE_FLOAT:
            out.done(numbers.put(out.room(double_room), v.as_number()));
            return;
        case NNERGY_VALUE_STRING:
            append_string(out, v.as_string());
            return;
        case NNERGY_VALUE_ARRAY:
        case NNERGY_VALUE_OBJECT: {
            const bool object = kind == NNERGY_VALUE_OBJECT;
            const size_t n = v.size();
            if (n == 0) {
                out.append(object ? "{}" : "[]");
                return;
            }
            // What comes before a member: the separator, the line break and indentation
            // (with the 8 bytes put_newline may store beyond it), the key and ": ".
            const size_t lead =
                indent < 0 ? 2 : 10 + static_cast<size_t>(indent) * static_cast<size_t>(depth + 1);
            for (size_t i = 0; i < n; ++i) {
                const std::string_view key = object ? v.key(i) : std::string_view();
                char* p = out.room(lead + (object ? 4 + 6 * key.size() : 0));
                *p++ = i == 0 ? (object ? '{' : '[') : ',';
                if (indent >= 0) p = put_newline(p, indent, depth + 1);
                if (object) {
                    p = put_string(p, key);
                    *p++ = ':';
                    if (indent >= 0) *p++ = ' ';
                }
                out.done(p);
                append_value(out, numbers, v.at(i), indent, depth + 1);
                out.flush_if_full();
            }
            char* p = out.room(lead);
            if (indent >= 0) p = put_newline(p, indent, depth);
            *p++ = object ? '}' : ']';
            out.done(p);
            return;
        }
    }
    throw sdk::error(
        "report document has a value of unknown kind " + std::to_string(static_cast<int>(kind)),
        NNERGY_CODE_INTERNAL);
}

/// Values in the document, containers and their members included.
inline size_t count_values(const sdk::value_view& v) {
    size_t n = 1;
    if (v.kind() == NNERGY_VALUE_ARRAY || v.kind() == NNERGY_VALUE_OBJECT)
        for (size_t i = 0, size = v.size(); i < size; ++i) n += count_values(v.at(i));
    return n;
}

}  // namespace detail

/// The document as text, written straight from the host's tree (no intermediate copy); `indent`
/// spaces per level, or -1 for one line. Strings that are not valid UTF-8 get U+FFFD rather
/// than failing.
inline std::string render(const sdk::value_view& doc, int indent = 2) {
    // Room for the whole text at once: a report of hundreds of kilobytes grown by doubling was
    // copied several times, each time into memory the process had not touched yet. About 45
    // bytes per value at indent 2.
    detail::text_buffer out(nullptr,
                            std::max<size_t>(size_t{1} << 16, detail::count_values(doc) * 64));
    const auto numbers = std::make_unique<detail::double_texts>();
    detail::append_value(out, *numbers, doc, indent, 0);
    out.append("\n");
    return out.take();
}

/// The same, written to `writer` a piece at a time.
inline void render(const sdk::value_view& doc, int indent, sdk::output_writer& writer) {
    // A value's own text (a long string) may carry a piece beyond the flush size.
    detail::text_buffer out(&writer);
    const auto numbers = std::make_unique<detail::double_texts>();
    detail::append_value(out, *numbers, doc, indent, 0);
    out.append("\n");
    out.flush();
}

class json_reporter : public sdk::reporter {
public:
    explicit json_reporter(const sdk::context& ctx) : sdk::reporter(ctx) {
        const sdk::config_view config = ctx.config();
        config.expect_only({"indent"}, "nnergy.reporter.json");
        const int64_t indent = config.integer("indent").value_or(2);
        if (indent < -1 || indent > 16)
            throw sdk::error(sdk::config_view::where(*config.find("indent")) +
                             ": 'indent' must be between 0 and 16 spaces, or -1 for one line");
        indent_ = static_cast<int>(indent);
    }

    void report(const sdk::value_view& doc, sdk::output_writer& out) override {
        render(doc, indent_, out);
    }

private:
    int indent_ = 2;
};

}  // namespace nnergy::json
