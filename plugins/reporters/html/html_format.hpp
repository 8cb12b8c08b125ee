// SPDX-License-Identifier: Apache-2.0
/// \file html_format.hpp
/// \brief Pure helpers of the HTML reporter: escaping, human numbers with units, SVG coordinates
/// and axis ticks. No host calls, so they are unit-tested on their own.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <nnergy/modeling/text.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace nnergy::html {

/// printf into a std::string: the modeling kit's, shared by every plugin.
using modeling::format;

/// Text made safe for HTML element content and quoted attribute values: the five markup
/// characters become entities, and invalid UTF-8 and control characters (other than tab and
/// newline) become U+FFFD, so an untrusted model or node name cannot inject markup or garble the
/// page.
inline std::string escape(std::string_view s) {
    std::string out;
    out.reserve(s.size() + s.size() / 8);
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        const size_t n = c < 0x80 ? 1 : modeling::utf8_sequence_length(s, i);
        if (n == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
            continue;
        }
        if (n > 1) {
            // C1 controls (U+0080..U+009F) are two-byte sequences starting with 0xC2.
            if (c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0)
                out += "\xEF\xBF\xBD";
            else
                out.append(s.substr(i, n));
            i += n;
            continue;
        }
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            case '\t':
            case '\n':
                out += static_cast<char>(c);
                break;
            default:
                if (c < 0x20 || c == 0x7F)
                    out += "\xEF\xBF\xBD";
                else
                    out += static_cast<char>(c);
        }
        ++i;
    }
    return out;
}

/// Three significant digits of a value in [1, 1000): "1.23", "12.3", "123".
inline std::string three_digits(double x) {
    if (x < 9.995) return format("%.2f", x);
    if (x < 99.95) return format("%.1f", x);
    return format("%.0f", x);
}

/// Placeholder for a number that is missing or not finite: the page never shows "nan".
inline constexpr std::string_view missing = "\xE2\x80\x93";  // en dash

/// A number with a decimal prefix and unit, three significant digits: "12.3 kB", "1.20 GFLOP/s",
/// "850 µJ". Prefixes from pico to exa; zero prints as "0 B". `unit` may be empty ("12.5k").
inline std::string si(double v, std::string_view unit = "") {
    if (!std::isfinite(v)) return std::string(missing);
    const std::string space = unit.empty() ? "" : " ";
    if (v == 0) return "0" + space + std::string(unit);
    const std::string sign = v < 0 ? "-" : "";
    double x = std::fabs(v);
    // Index 4 is no prefix; "\xC2\xB5" is the micro sign.
    static constexpr const char* prefixes[] = {"p", "n", "\xC2\xB5", "m", "", "k",
                                               "M", "G", "T",        "P", "E"};
    int i = 4;
    // 999.5 already rounds to "1000" at three digits, so it belongs to the next prefix.
    while (x >= 999.5 && i + 1 < static_cast<int>(std::size(prefixes))) {
        x /= 1000;
        ++i;
    }
    // Beyond the largest prefix (an absurd hardware file's figures): an exponent.
    if (x >= 999.5) return sign + format("%.2e", std::fabs(v)) + space + std::string(unit);
    while (x < 0.9995 && i > 0) {
        x *= 1000;
        --i;
    }
    if (x >= 999.5) {  // rounding at the smaller prefix reached 1000
        x /= 1000;
        ++i;
    }
    std::string digits = x < 0.9995 ? format("%.3g", x) : three_digits(x);
    return sign + digits + space + prefixes[i] + std::string(unit);
}

/// A count: whole numbers below 1000 print whole ("512"), larger ones with a prefix ("1.23M").
inline std::string count(double v) {
    if (!std::isfinite(v)) return std::string(missing);
    if (std::fabs(v) < 999.5 && v == std::floor(v)) return format("%.0f", v);
    if (std::fabs(v) < 1 && v != 0) return format("%.3g", v);
    return si(v);
}

/// An axis tick's label: si() without trailing zeros ("10P", "2.5 kB", "0 J"), since tick
/// values are round and their zeros only add noise.
inline std::string tick(double v, std::string_view unit = "") {
    const std::string s = si(v, unit);
    const size_t dot = s.find('.');
    if (dot == std::string::npos) return s;
    size_t end = dot + 1;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    size_t last = end;
    while (last > dot + 1 && s[last - 1] == '0') --last;
    if (last == dot + 1) last = dot;
    return s.substr(0, last) + s.substr(end);
}

/// A duration: "850 ns", "12.3 µs", "1.23 ms", "2.05 s".
inline std::string seconds(double s) { return si(s, "s"); }

/// A fraction as a percentage: "78%", "0.4%", "<0.1%".
inline std::string percent(double fraction) {
    if (!std::isfinite(fraction)) return std::string(missing);
    const double p = fraction * 100;
    if (p > 0 && p < 0.05) return "<0.1%";
    if (p > 0 && p < 9.95) return format("%.1f%%", p);
    return format("%.0f%%", p);
}

/// A number as the sort key of a table cell: the shortest text that reads back as the same
/// double, so keys order the way the doubles do; empty (sorted last) when missing.
inline std::string sort_key(double v) {
    if (!std::isfinite(v)) return {};
#if defined(__cpp_lib_to_chars)
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    if (ec == std::errc()) return std::string(buf, end);
#endif
    return format("%.17g", v);
}

/// An SVG coordinate or length with at most one decimal ("12", "12.3", "-3.3"); a non-finite
/// value (which callers filter out before) becomes 0 rather than "nan", which would make the SVG
/// invalid. Integer arithmetic rather than printf: a large page has tens of thousands of them.
inline std::string coord(double v) {
    if (!std::isfinite(v)) return "0";
    if (std::fabs(v) > 1e15) return format("%.0f", v);
    long long tenths = std::llround(v * 10);
    if (tenths == 0) return "0";
    std::string s = tenths < 0 ? "-" : "";
    if (tenths < 0) tenths = -tenths;
    s += std::to_string(tenths / 10);
    if (tenths % 10) {
        s += '.';
        s += static_cast<char>('0' + tenths % 10);
    }
    return s;
}

/// Ticks for a linear axis from `lo` to `hi`: multiples of 1, 2 or 5 x 10^k, about `target`
/// of them, covering [lo, hi] (the first at or below lo, the last at or above hi).
inline std::vector<double> linear_ticks(double lo, double hi, int target = 5) {
    if (!std::isfinite(lo) || !std::isfinite(hi) || target < 1) return {};
    if (hi < lo) std::swap(lo, hi);
    if (hi == lo) {
        if (lo == 0) return {0, 1};
        const double pad = std::fabs(lo) * 0.5;
        lo -= pad;
        hi += pad;
    }
    const double raw = (hi - lo) / target;
    const int exponent = static_cast<int>(std::floor(std::log10(raw)));
    // A tick is (integer x 10^exponent); dividing by an exact power of ten for negative exponents
    // gives the double nearest the decimal value (0.6, not 3 x 0.2 = 0.6000000000000001).
    const auto at = [exponent](double multiple) {
        return exponent >= 0 ? multiple * std::pow(10.0, exponent)
                             : multiple / std::pow(10.0, -exponent);
    };
    double mantissa = 10;
    for (double m : {1.0, 2.0, 5.0})
        if (at(m) >= raw * 0.999) {
            mantissa = m;
            break;
        }
    const double step = at(mantissa);
    const double first = std::floor(lo / step + 1e-9);
    std::vector<double> ticks;
    for (double k = first; ticks.size() < 100; ++k) {
        const double t = at(k * mantissa);
        ticks.push_back(t == 0 ? 0.0 : t);  // no -0
        if (t >= hi - step * 1e-9) break;
    }
    return ticks;
}

/// Ticks for a log axis: the powers of ten from the one at or below `lo` to the one at or above
/// `hi` (at least two). Both must be positive; otherwise no ticks.
inline std::vector<double> log_ticks(double lo, double hi) {
    if (!(lo > 0) || !(hi > 0) || !std::isfinite(lo) || !std::isfinite(hi)) return {};
    if (hi < lo) std::swap(lo, hi);
    // The small tolerance keeps an exact power (1e3, computed as 999.9999) on its own decade.
    int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
    int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
    if (last <= first) last = first + 1;
    std::vector<double> ticks;
    for (int e = first; e <= last; ++e) ticks.push_back(std::pow(10.0, e));
    return ticks;
}

/// Maps [lo, hi] onto [a, b] (pixels), linearly or on a log scale.
struct scale {
    double lo = 0, hi = 1, a = 0, b = 1;
    bool log = false;
    double operator()(double v) const {
        double t;
        if (log)
            t = (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
        else
            t = (v - lo) / (hi - lo);
        if (!std::isfinite(t)) t = 0;
        return a + t * (b - a);
    }
};

}  // namespace nnergy::html
