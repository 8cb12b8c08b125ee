// SPDX-License-Identifier: Apache-2.0
/// \file json_reporter.hpp
/// \brief nnergy.reporter.json: the report document (docs/report.md) as JSON, key order kept,
/// numbers with enough digits to read back the same double.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
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

// A JSON string literal; bytes that are not UTF-8 become U+FFFD so the output stays valid.
inline void append_string(std::string& out, std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    out += '"';
    size_t i = 0;
    while (i < s.size()) {
        // Runs of plain ASCII are copied whole: most report text is. They are found eight
        // bytes at a time, then byte by byte.
        size_t run = i;
        for (uint64_t word = 0; run + 8 <= s.size(); run += 8) {
            std::memcpy(&word, s.data() + run, 8);
            if (!plain_word(word)) break;
        }
        while (run < s.size()) {
            const unsigned char c = static_cast<unsigned char>(s[run]);
            if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
            ++run;
        }
        out.append(s.data() + i, run - i);
        i = run;
        if (i == s.size()) break;
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            const size_t n = modeling::utf8_sequence_length(s, i);
            if (n == 0) {
                out += "\xef\xbf\xbd";
                ++i;
            } else {
                out.append(s.data() + i, n);
                i += n;
            }
            continue;
        }
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                out += "\\u00";
                out += hex[c >> 4];
                out += hex[c & 15];
        }
        ++i;
    }
    out += '"';
}

// The shortest text that reads back as the same double; a whole number keeps a ".0" so that
// readers see a float, and NaN and infinities (not JSON) are null.
inline void append_double(std::string& out, double v) {
    if (!std::isfinite(v)) {
        out += "null";
        return;
    }
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    const std::string_view text(buf, static_cast<size_t>(r.ptr - buf));
    out += text;
    if (text.find_first_of(".eE") == std::string_view::npos) out += ".0";
}

inline void append_int(std::string& out, int64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<size_t>(r.ptr - buf));
}

inline void newline(std::string& out, int indent, int depth) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(depth), ' ');
}

/// Where text goes while it is written: at each member or element boundary, text beyond
/// `flush_bytes` is handed to `writer` (when there is one) and the buffer reused, so a report of
/// any size costs the reporter a buffer's worth of memory.
struct text_flush {
    sdk::output_writer* writer = nullptr;
    static constexpr size_t flush_bytes = size_t{1} << 16;
    void operator()(std::string& out) const {
        if (writer && out.size() >= flush_bytes) {
            writer->write(out);
            out.clear();
        }
    }
};

inline void append_value(std::string& out, const sdk::value_view& v, int indent, int depth,
                         const text_flush& flush) {
    switch (v.kind()) {
        case NNERGY_VALUE_NULL:
            out += "null";
            return;
        case NNERGY_VALUE_BOOL:
            out += v.as_bool() ? "true" : "false";
            return;
        case NNERGY_VALUE_INT:
            append_int(out, v.as_int());
            return;
        case NNERGY_VALUE_FLOAT:
            append_double(out, v.as_number());
            return;
        case NNERGY_VALUE_STRING:
            append_string(out, v.as_string());
            return;
        case NNERGY_VALUE_ARRAY:
        case NNERGY_VALUE_OBJECT: {
            const bool object = v.kind() == NNERGY_VALUE_OBJECT;
            const size_t n = v.size();
            out += object ? '{' : '[';
            if (n == 0) {
                out += object ? '}' : ']';
                return;
            }
            for (size_t i = 0; i < n; ++i) {
                if (i > 0) out += ',';
                newline(out, indent, depth + 1);
                if (object) {
                    append_string(out, v.key(i));
                    out += indent < 0 ? ":" : ": ";
                }
                append_value(out, v.at(i), indent, depth + 1, flush);
                flush(out);
            }
            newline(out, indent, depth);
            out += object ? '}' : ']';
            return;
        }
    }
    throw sdk::error(
        "report document has a value of unknown kind " + std::to_string(static_cast<int>(v.kind())),
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
    std::string out;
    // Room for the whole text at once: a report of hundreds of kilobytes grown by doubling was
    // copied several times, each time into memory the process had not touched yet. About 45
    // bytes per value at indent 2; room reserved and not written costs nothing.
    out.reserve(std::max<size_t>(size_t{1} << 16, detail::count_values(doc) * 64));
    detail::append_value(out, doc, indent, 0, detail::text_flush{});
    out += '\n';
    return out;
}

/// The same, written to `writer` a piece at a time.
inline void render(const sdk::value_view& doc, int indent, sdk::output_writer& writer) {
    std::string out;
    // A value's own text (a long string) may carry a piece beyond the flush size.
    out.reserve(2 * detail::text_flush::flush_bytes);
    detail::append_value(out, doc, indent, 0, detail::text_flush{&writer});
    out += '\n';
    writer.write(out);
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
