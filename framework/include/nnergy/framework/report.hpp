// SPDX-License-Identifier: Apache-2.0
/// \file report.hpp
/// \brief The report document: a JSON-like tree the host builds and reporters read through the
/// value_* functions of the host API (docs/report.md).
#pragma once

#include <nnergy/plugin.h>

#include <cstdint>
#include <nnergy/framework/pooled_name.hpp>
#include <string>
#include <string_view>
#include <vector>

/// Defined in the global namespace: it is the host's definition of the ABI's opaque type.
struct nnergy_value {
    nnergy_value_kind kind = NNERGY_VALUE_NULL;
    bool bool_value = false;
    int64_t int_value = 0;
    double float_value = 0;
    std::string string_value;
    /// OBJECT member names, in insertion order: the same few hundred names in every report,
    /// each stored once for the process.
    std::vector<nnergy::detail::pooled_name> keys;
    std::vector<nnergy_value> items;  ///< ARRAY elements or OBJECT member values

    static nnergy_value object() { return make(NNERGY_VALUE_OBJECT); }
    static nnergy_value array() { return make(NNERGY_VALUE_ARRAY); }
    static nnergy_value of(bool v) {
        nnergy_value x = make(NNERGY_VALUE_BOOL);
        x.bool_value = v;
        return x;
    }
    static nnergy_value of(int64_t v) {
        nnergy_value x = make(NNERGY_VALUE_INT);
        x.int_value = v;
        x.float_value = static_cast<double>(v);
        return x;
    }
    static nnergy_value of(double v) {
        nnergy_value x = make(NNERGY_VALUE_FLOAT);
        x.float_value = v;
        return x;
    }
    static nnergy_value of(std::string_view v) {
        nnergy_value x = make(NNERGY_VALUE_STRING);
        x.string_value = std::string(v);
        return x;
    }
    static nnergy_value of(const char* v) { return of(std::string_view(v)); }

    /// Sets (or replaces) an OBJECT member; returns it.
    nnergy_value& set(std::string_view key, nnergy_value v);
    /// Appends an OBJECT member whose key the caller knows is not set yet (members copied from
    /// a list of distinct keys), without searching the members; returns it.
    nnergy_value& add(std::string_view key, nnergy_value v);
    /// Appends an ARRAY element; returns it.
    nnergy_value& push(nnergy_value v);
    /// Makes room for `n` members or elements.
    void reserve(size_t n);
    /// OBJECT member or null.
    const nnergy_value* get(std::string_view key) const noexcept;
    nnergy_value* get(std::string_view key) noexcept;

private:
    static nnergy_value make(nnergy_value_kind k) {
        nnergy_value x;
        x.kind = k;
        return x;
    }
};

namespace nnergy {
using report_value = ::nnergy_value;

/// Serializes a value as JSON (used by tests and for diagnostics; reporters do their own).
std::string to_json(const report_value& v, int indent = 2);
}  // namespace nnergy
