// SPDX-License-Identifier: Apache-2.0
/// \file text_format.hpp
/// \brief Human-readable numbers and fixed-width tables for the text reporter; no host calls.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <nnergy/modeling/text.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy::text {

/// printf into a std::string: the modeling kit's, shared by every plugin.
using modeling::format;

/// Three significant digits of a value in [1, 1000): "1.23", "12.3", "123"; beyond the largest
/// unit a caller has, whole numbers up to a million, then an exponent ("2.68e+06"), never a row
/// of digits.
inline std::string three_digits(double x) {
    if (x < 9.995) return format("%.2f", x);
    if (x < 99.95) return format("%.1f", x);
    if (x < 999.5e3) return format("%.0f", x);
    return format("%.2e", x);
}

/// A count with a decimal prefix: 512, 12.5k, 1.23M, 4.09G. Counts below 1000 that are whole
/// print whole; fractions (int4 bytes) keep three digits.
inline std::string si(double v) {
    if (!std::isfinite(v)) return "-";
    std::string sign = v < 0 ? "-" : "";
    double x = std::fabs(v);
    static constexpr const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
    size_t i = 0;
    // 999.5 already rounds to "1000" at three digits, so it belongs to the next prefix.
    while (x >= 999.5 && i + 1 < std::size(prefixes)) {
        x /= 1000;
        ++i;
    }
    if (i == 0) {
        if (x == std::floor(x)) return sign + format("%.0f", x);
        return sign + format("%.3g", x);
    }
    if (x >= 999.5) return format("%.2e", v);  // beyond the largest prefix
    return sign + three_digits(x) + prefixes[i];
}

/// A quantity with a unit: "6.00 TFLOP/s", "1.20 GB", "512 B".
inline std::string si_unit(double v, std::string_view unit) {
    const std::string n = si(v);
    size_t digits = n.size();
    while (digits > 0 && std::isalpha(static_cast<unsigned char>(n[digits - 1]))) --digits;
    return n.substr(0, digits) + " " + n.substr(digits) + std::string(unit);
}

/// A duration in the unit that keeps three digits: "850 ns", "12.3 us", "1.23 ms", "2.05 s".
inline std::string seconds(double s) {
    if (!std::isfinite(s)) return "-";
    if (s == 0) return "0 s";
    if (s < 0) return "-" + seconds(-s);
    static constexpr const char* units[] = {"ns", "us", "ms", "s"};
    if (s >= 1) return three_digits(s) + " s";  // s * 1e9 would overflow near the top
    double x = s * 1e9;
    size_t i = 0;
    while (x >= 999.5 && i + 1 < std::size(units)) {
        x /= 1000;
        ++i;
    }
    if (i == 0 && x < 1) return format("%.3g ", x) + units[i];  // below a nanosecond
    return three_digits(x) + " " + units[i];
}

/// An energy in the unit that keeps three digits: "850 nJ", "12.3 uJ", "1.23 mJ", "2.05 J".
inline std::string joules(double j) {
    if (!std::isfinite(j)) return "-";
    if (j == 0) return "0 J";
    if (j < 0) return "-" + joules(-j);
    static constexpr const char* units[] = {"pJ", "nJ", "uJ", "mJ", "J", "kJ"};
    if (j >= 1e3) return three_digits(j / 1e3) + " kJ";  // j * 1e12 would overflow near the top
    double x = j * 1e12;
    size_t i = 0;
    while (x >= 999.5 && i + 1 < std::size(units)) {
        x /= 1000;
        ++i;
    }
    if (i == 0 && x < 1) return format("%.3g ", x) + units[i];
    return three_digits(x) + " " + units[i];
}

/// A ratio such as arithmetic intensity: "0.125", "41.2", "1.23k".
inline std::string ratio(double v) {
    if (!std::isfinite(v)) return "-";
    if (std::fabs(v) >= 999.5) return si(v);
    if (v == 0) return "0";
    if (std::fabs(v) < 1) return format("%.3g", v);
    return three_digits(v);
}

/// A fraction as a percentage: "78%", "0.4%", "100%".
inline std::string percent(double fraction) {
    if (!std::isfinite(fraction)) return "-";
    double p = fraction * 100;
    if (p > 0 && p < 0.05) return "<0.1%";
    if (p > 0 && p < 0.95) return format("%.1f%%", p);
    return format("%.0f%%", p);
}

/// Display width of UTF-8 text: one column per code point.
inline size_t display_width(std::string_view s) {
    size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

/// Byte offset of the `cols`-th code point of UTF-8 text (its size when shorter).
inline size_t column_offset(std::string_view s, size_t cols) {
    size_t seen = 0;
    for (size_t i = 0; i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
            if (seen == cols) return i;
            ++seen;
        }
    return s.size();
}

/// Cuts text to `width` columns by removing its middle, marked with "...": long names differ
/// at both ends ("model.layers.11.mlp/MatMul"), so both are kept.
inline std::string truncate(std::string_view s, size_t width) {
    const size_t w = display_width(s);
    if (width == 0 || w <= width) return std::string(s);
    if (width <= 3) return std::string("...").substr(0, width);
    const size_t keep = width - 3;
    const size_t head = (keep + 1) / 2, tail = keep - head;
    return std::string(s.substr(0, column_offset(s, head))) + "..." +
           std::string(s.substr(column_offset(s, w - tail)));
}

enum class align { left, right };

struct column {
    std::string header;
    align alignment = align::left;
    size_t max_width = 0;  ///< 0: as wide as the widest cell
};

/// A fixed-width table: a header row, a rule, then the rows; two spaces between columns, no
/// trailing spaces.
inline std::string render_table(const std::vector<column>& columns,
                                const std::vector<std::vector<std::string>>& rows,
                                std::string_view indent = "") {
    std::vector<size_t> widths(columns.size());
    std::vector<std::vector<std::string>> cells;
    cells.reserve(rows.size() + 1);
    std::vector<std::string> header;
    for (const column& c : columns) header.push_back(c.header);
    cells.push_back(header);
    for (const auto& row : rows) {
        std::vector<std::string> r(columns.size());
        for (size_t i = 0; i < columns.size() && i < row.size(); ++i)
            r[i] = truncate(row[i], columns[i].max_width);
        cells.push_back(std::move(r));
    }
    for (const auto& r : cells)
        for (size_t i = 0; i < columns.size(); ++i)
            widths[i] = std::max(widths[i], display_width(r[i]));

    auto line = [&](const std::vector<std::string>& r) {
        std::string s(indent);
        for (size_t i = 0; i < columns.size(); ++i) {
            const size_t pad = widths[i] - display_width(r[i]);
            if (i) s += "  ";
            if (columns[i].alignment == align::right) s.append(pad, ' ');
            s += r[i];
            if (columns[i].alignment == align::left) s.append(pad, ' ');
        }
        while (s.size() > indent.size() && s.back() == ' ') s.pop_back();
        return s + "\n";
    };
    std::string out = line(cells[0]);
    size_t total = 0;
    for (size_t i = 0; i < widths.size(); ++i) total += widths[i] + (i ? 2 : 0);
    out += std::string(indent) + std::string(total, '-') + "\n";
    for (size_t r = 1; r < cells.size(); ++r) out += line(cells[r]);
    return out;
}

}  // namespace nnergy::text
