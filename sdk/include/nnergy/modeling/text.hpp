// SPDX-License-Identifier: Apache-2.0
/// \file text.hpp
/// \brief Number and time formatting for mapping explanations, without printf's format parsing
/// in the hot path (plugins do not link fmt), and text from the user's files made safe to show.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

namespace nnergy::modeling {

/// Whether two short names are equal: the comparison the per-kernel paths make most, inlined
/// eight bytes at a time instead of a call to memcmp.
inline bool same_text(std::string_view a, std::string_view b) noexcept {
    const size_t n = a.size();
    if (n != b.size()) return false;
    auto word = [](const char* p, size_t bytes) {
        uint64_t x = 0;
        std::memcpy(&x, p, bytes);
        return x;
    };
    if (n >= 8) {
        // Whole words, then the last eight bytes (overlapping the words when n is not a
        // multiple of eight).
        for (size_t i = 0; i + 8 < n; i += 8)
            if (word(a.data() + i, 8) != word(b.data() + i, 8)) return false;
        return word(a.data() + n - 8, 8) == word(b.data() + n - 8, 8);
    }
    if (n >= 4)
        return word(a.data(), 4) == word(b.data(), 4) &&
               word(a.data() + n - 4, 4) == word(b.data() + n - 4, 4);
    for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return false;
    return true;
}

/// A hash of every byte of a name, eight at a time: the tables of a large graph's tensor names
/// hash each name several times, and names share long prefixes ("layer.12.attn.q.weight"), so
/// no byte may be left out. Not for untrusted input where collisions would be an attack.
inline uint64_t name_hash(std::string_view name) noexcept {
    constexpr uint64_t k0 = 0x9E3779B97F4A7C15ull, k1 = 0xC2B2AE3D27D4EB4Full;
    const size_t n = name.size();
    const char* p = name.data();
    auto word = [](const char* at, size_t bytes) {
        uint64_t x = 0;
        std::memcpy(&x, at, bytes);
        return x;
    };
    auto mix = [](uint64_t h, uint64_t w) {
        h = (h ^ w) * k1;
        return h ^ (h >> 31);
    };
    uint64_t h = (n + 1) * k0;
    size_t i = 0;
    for (; i + 8 < n; i += 8) h = mix(h, word(p + i, 8));
    // The last one to eight bytes (overlapping the words before when n > 8).
    // (An empty name may have no data at all: nothing is read.)
    h = mix(h, n >= 8 ? word(p + n - 8, 8) : n > 0 ? word(p, n) : 0);
    h ^= h >> 29;
    h *= k0;
    return h ^ (h >> 32);
}

/// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates,
/// nothing above U+10FFFF), or 0 when the byte there does not start one.
inline size_t utf8_sequence_length(std::string_view s, size_t i) noexcept {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b0 = byte(i);
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
    if (b0 >= 0xc2 && b0 <= 0xdf) {
        n = 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
        n = 3;
        if (b0 == 0xe0) lo = 0xa0;
        if (b0 == 0xed) hi = 0x9f;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        n = 4;
        if (b0 == 0xf0) lo = 0x90;
        if (b0 == 0xf4) hi = 0x8f;
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
    for (size_t k = 2; k < n; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
    return n;
}

/// `s` as a message can show it: bytes that are not well-formed UTF-8, and control characters
/// other than newline and tab, become \xNN. Names in messages come from the user's files, and
/// a damaged file's raw bytes would garble a terminal and break readers that expect UTF-8.
inline std::string printable(std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        // The bytes kept as they are: a UTF-8 sequence, a printable ASCII character, a newline
        // or a tab; none for a byte shown as \xNN.
        size_t kept = 0;
        if (c >= 0x80)
            kept = utf8_sequence_length(s, i);
        else if ((c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t')
            kept = 1;
        if (kept > 0) {
            out.append(s.data() + i, kept);
            i += kept;
            continue;
        }
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 15];
        ++i;
    }
    return out;
}

/// printf into a std::string (plugins do not link fmt).
template <class... Args>
std::string format(const char* pattern, Args... args) {
    char buf[256];
    int n = std::snprintf(buf, sizeof buf, pattern, args...);
    if (n < 0) return {};
    if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
    std::string s(static_cast<size_t>(n) + 1, '\0');
    std::snprintf(s.data(), s.size(), pattern, args...);
    s.resize(static_cast<size_t>(n));
    return s;
}

/// Appends `x` as printf's "%.{precision}f" (fixed) or "%.{precision}g" (general) would in the
/// "C" locale: std::to_chars promises the same digits, without printf's parsing of a format
/// string, which dominates the cost of mapping a kernel.
inline void append_number(std::string& out, double x, int precision, bool fixed) {
    // Whole numbers in fixed notation (unit counts, waves) are their integer's digits.
    if (fixed && x == std::trunc(x) && std::fabs(x) < 0x1p53 && !std::signbit(x)) {
        char buf[24];
        const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(x));
        out.append(buf, end);
        if (precision > 0) {
            out += '.';
            out.append(static_cast<size_t>(precision), '0');
        }
        return;
    }
#if defined(__cpp_lib_to_chars)
    char buf[64];
    const auto [end, ec] =
        std::to_chars(buf, buf + sizeof buf, x,
                      fixed ? std::chars_format::fixed : std::chars_format::general, precision);
    if (ec == std::errc()) {
        out.append(buf, end);
        return;
    }
#endif
    // Past 64 characters (huge fixed numbers), or without to_chars: printf itself.
    out += format(fixed ? "%.*f" : "%.*g", precision, x);
}

inline void append_percent(std::string& out, double fraction) {
    double pct = fraction * 100;
    if (pct > 0 && pct < 0.05) {
        out += "<0.1%";
        return;
    }
    append_number(out, pct, pct > 0 && pct < 0.95 ? 1 : 0, true);
    out += '%';
}

inline std::string percent(double fraction) {
    std::string s;
    append_percent(s, fraction);
    return s;
}

/// Three significant digits without exponents for ordinary magnitudes: "0.02", "41.2", "1250".
inline void append_short_number(std::string& out, double x) {
    if (x >= 100 && x < 1e15)
        append_number(out, x, 0, true);
    else
        append_number(out, x, 3, false);
}

inline std::string short_number(double x) {
    std::string s;
    append_short_number(s, x);
    return s;
}

inline void append_seconds(std::string& out, double s) {
    if (s >= 1) {
        append_number(out, s, 3, false);
        out += " s";
    } else if (s >= 1e-3) {
        append_number(out, s * 1e3, 3, false);
        out += " ms";
    } else if (s >= 1e-6) {
        append_number(out, s * 1e6, 3, false);
        out += " us";
    } else {
        append_number(out, s * 1e9, 3, false);
        out += " ns";
    }
}

inline std::string seconds_text(double s) {
    std::string out;
    append_seconds(out, s);
    return out;
}

/// Appends "98 of 132 SMs, 1 wave, " for a kernel on `allocated` of `available` units.
inline void append_units_and_waves(std::string& e, double allocated, double available,
                                   std::string_view unit_name, double waves) {
    append_number(e, allocated, 0, true);
    e += " of ";
    append_number(e, available, 0, true);
    e += ' ';
    e += unit_name;
    e += "s, ";
    append_number(e, waves, 0, true);
    e += waves == 1 ? " wave, " : " waves, ";
}

/// Appends ", AI 41 FLOP/B" (arithmetic intensity) when the kernel has both FLOPs and bytes.
inline void append_intensity(std::string& e, double flops, double bytes) {
    if (flops <= 0 || bytes <= 0) return;
    e += ", AI ";
    append_short_number(e, flops / bytes);
    e += " FLOP/B";
}

/// Ends a class architecture's explanation with its verdict: " -> compute-bound",
/// " -> memory-bound (dram)" or " -> overhead-bound (1 us setup > 120 ns work)", where
/// `fixed_label` names the fixed cost ("setup", "per kernel").
inline void append_verdict(std::string& e, std::string_view bottleneck, double fixed_s,
                           std::string_view fixed_label, double work_s) {
    e += " -> ";
    if (bottleneck == "overhead") {
        e += "overhead-bound (";
        append_seconds(e, fixed_s);
        e += ' ';
        e += fixed_label;
        e += " > ";
        append_seconds(e, work_s);
        e += " work)";
    } else if (bottleneck == "compute") {
        e += "compute-bound";
    } else {
        e += "memory-bound";
        constexpr std::string_view memory = "memory:";
        if (bottleneck.substr(0, memory.size()) == memory) {
            e += " (";
            e += bottleneck.substr(memory.size());
            e += ')';
        }
    }
}

}  // namespace nnergy::modeling
