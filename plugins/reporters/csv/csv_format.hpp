// SPDX-License-Identifier: Apache-2.0
/// \file csv_format.hpp
/// \brief RFC 4180 fields and numbers that read back as the same double; no host calls.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace nnergy::csv {

/// One field: as is, or quoted with inner quotes doubled when it holds a comma, a quote, a
/// line break, or leading or trailing spaces (which some readers trim).
inline std::string field(std::string_view s) {
    bool quote = !s.empty() && (s.front() == ' ' || s.back() == ' ');
    for (char c : s)
        if (c == ',' || c == '"' || c == '\n' || c == '\r') quote = true;
    if (!quote) return std::string(s);
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

/// A record: fields joined by commas, ended by `eol`.
inline std::string record(const std::vector<std::string>& fields, std::string_view eol = "\n") {
    std::string s;
    for (size_t i = 0; i < fields.size(); ++i) {
        if (i) s += ',';
        s += field(fields[i]);
    }
    s += eol;
    return s;
}

/// The shortest decimal form that reads back as the same double ("1e-06", "0.25", "1234");
/// empty for NaN and infinities, which a spreadsheet cannot hold either.
inline std::string number(double v) {
    if (!std::isfinite(v)) return {};
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    if (r.ec != std::errc()) return {};
    return std::string(buf, r.ptr);
}

inline std::string integer(int64_t v) { return std::to_string(v); }

}  // namespace nnergy::csv
