// SPDX-License-Identifier: Apache-2.0
/// \file markdown_format.hpp
/// \brief Escaping, number formatting and tables in GitHub-flavoured Markdown; no host calls.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nnergy/modeling/text.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy::markdown {

/// printf into a std::string: the modeling kit's, shared by every plugin.
using modeling::format;

/// Text that renders as itself in a table cell or a heading: line breaks and tabs become spaces
/// (a line break would end a table row); what else a file should not carry (control characters,
/// such as an escape sequence in a node's name, and bytes that are not UTF-8) reads \xNN, as
/// modeling::printable() shows it; then the punctuation that starts markup (emphasis, links,
/// code, HTML, strike-through, entities, table pipes, and so the backslash of \xNN) is
/// backslash-escaped, which GFM allows for any ASCII punctuation.
inline std::string escape(std::string_view raw) {
    std::string spaced(raw);
    for (char& c : spaced)
        if (c == '\r' || c == '\n' || c == '\t') c = ' ';
    const std::string s = modeling::printable(spaced);
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '\\':
            case '`':
            case '*':
            case '_':
            case '[':
            case ']':
            case '<':
            case '>':
            case '|':
            case '~':
            case '#':
            case '&':
            case '!':
                out += '\\';
                out += c;
                break;
            default:
                out += c;
        }
    }
    return out;
}

/// Three significant digits without an exponent for values from 1e-6 up: "1.23", "12.3",
/// "123", "12300", "0.0123", "0.000253". Smaller magnitudes, and those of a billion or more (where
/// a row of digits stops being readable), keep three digits with an exponent.
inline std::string digits3(double x) {
    if (!std::isfinite(x)) return "-";
    if (x == 0) return "0";
    const double a = std::fabs(x);
    if (a >= 999.5e6) return format("%.2e", x);
    if (a >= 999.5) {
        // Round to three significant digits, print the integer: 12345 -> "12300".
        const double unit = std::pow(10.0, std::floor(std::log10(a)) - 2);
        return format("%.0f", std::round(x / unit) * unit);
    }
    if (a >= 99.95) return format("%.0f", x);
    if (a >= 9.995) return format("%.1f", x);
    if (a >= 0.9995) return format("%.2f", x);
    if (a >= 0.9995e-6) {
        // Three significant digits after the leading zeros.
        const int decimals = 2 - static_cast<int>(std::floor(std::log10(a)));
        return format("%.*f", decimals, x);
    }
    return format("%.2e", x);
}

/// A decimal prefix for a column of values with one unit: the prefix that brings the largest
/// magnitude into [1, 1000), within the prefixes the unit uses.
struct scale {
    std::string prefix;  ///< "m", "µ", "" ...
    double factor = 1;   ///< value / factor is shown
};

inline scale pick_scale(const std::vector<double>& values, bool small_prefixes = true,
                        bool large_prefixes = true) {
    double largest = 0;
    for (double v : values)
        if (std::isfinite(v)) largest = std::max(largest, std::fabs(v));
    struct entry {
        const char* prefix;
        double factor;
        bool small;
    };
    static constexpr entry prefixes[] = {{"T", 1e12, false}, {"G", 1e9, false}, {"M", 1e6, false},
                                         {"k", 1e3, false},  {"", 1, false},    {"m", 1e-3, true},
                                         {"µ", 1e-6, true},  {"n", 1e-9, true}, {"p", 1e-12, true}};
    if (largest == 0) return {};
    for (const entry& e : prefixes) {
        if (e.factor > 1 && !large_prefixes) continue;
        if (e.factor < 1 && !small_prefixes) continue;
        // 999.5 of a prefix prints as "1000": it belongs to the next one.
        if (largest / e.factor >= 0.9995) return {e.prefix, e.factor};
    }
    // Below the smallest prefix: the smallest one, digits3 keeps the exponent.
    for (auto it = std::rbegin(prefixes); it != std::rend(prefixes); ++it)
        if (it->factor == 1 || (it->factor < 1 && small_prefixes)) return {it->prefix, it->factor};
    return {};
}

/// A share as a percentage with one decimal: "41.7%", "<0.1%".
inline std::string percent(double fraction) {
    if (!std::isfinite(fraction)) return "-";
    const double p = fraction * 100;
    if (p > 0 && p < 0.05) return "<0.1%";
    return format("%.1f%%", p);
}

enum class align { left, right };

struct column {
    std::string header;  ///< already escaped
    align alignment = align::left;
};

/// A GFM table: header, delimiter row with alignment, one line per row. Cells must already be
/// escaped; an empty cell is left empty.
inline std::string table(const std::vector<column>& columns,
                         const std::vector<std::vector<std::string>>& rows) {
    std::string s = "|";
    for (const column& c : columns) s += " " + c.header + " |";
    s += "\n|";
    for (const column& c : columns) s += c.alignment == align::right ? "---:|" : "---|";
    s += "\n";
    for (const auto& row : rows) {
        s += "|";
        for (size_t i = 0; i < columns.size(); ++i) {
            const std::string& cell = i < row.size() ? row[i] : std::string();
            s += cell.empty() ? " |" : " " + cell + " |";
        }
        s += "\n";
    }
    return s;
}

}  // namespace nnergy::markdown
