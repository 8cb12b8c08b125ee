// SPDX-License-Identifier: Apache-2.0
/// \file report.hpp
/// \brief The report document: a JSON-like tree the host builds and reporters read through the
/// value_* functions of the host API (docs/report.md).
#pragma once

#include <nnergy/plugin.h>

#include <cstdint>
#include <new>
#include <nnergy/framework/pooled_name.hpp>
#include <string>
#include <string_view>
#include <vector>

/// Defined in the global namespace: it is the host's definition of the ABI's opaque type.
///
/// Reports hold hundreds of thousands of values (a 10k-node graph's has 370,000), so a value
/// is kept small: 48 bytes, its number, text or members sharing one place (a value holds one
/// of them), and an object member carrying its own name (pooled: the same few hundred names in
/// every report) instead of its object keeping a list of names beside its members.
struct nnergy_value {
    nnergy_value() noexcept {}
    nnergy_value(const nnergy_value& other);
    nnergy_value(nnergy_value&& other) noexcept;
    nnergy_value& operator=(const nnergy_value& other);
    nnergy_value& operator=(nnergy_value&& other) noexcept;
    ~nnergy_value() { destroy(); }

    static nnergy_value object() { return make(NNERGY_VALUE_OBJECT); }
    static nnergy_value array() { return make(NNERGY_VALUE_ARRAY); }
    static nnergy_value of(bool v) {
        nnergy_value x = make(NNERGY_VALUE_BOOL);
        x.bool_ = v;
        return x;
    }
    static nnergy_value of(int64_t v) {
        nnergy_value x = make(NNERGY_VALUE_INT);
        x.storage_.number.i = v;
        return x;
    }
    static nnergy_value of(double v) {
        nnergy_value x = make(NNERGY_VALUE_FLOAT);
        x.storage_.number.f = v;
        return x;
    }
    static nnergy_value of(std::string_view v) {
        nnergy_value x = make(NNERGY_VALUE_STRING);
        x.storage_.text.assign(v.data(), v.size());
        return x;
    }
    static nnergy_value of(const char* v) { return of(std::string_view(v)); }

    nnergy_value_kind kind() const noexcept { return kind_; }
    bool bool_value() const noexcept { return kind_ == NNERGY_VALUE_BOOL && bool_; }
    /// An INT's value; 0 for other kinds.
    int64_t int_value() const noexcept { return kind_ == NNERGY_VALUE_INT ? storage_.number.i : 0; }
    /// A FLOAT's or an INT's value as a double; 0 for other kinds.
    double float_value() const noexcept {
        return kind_ == NNERGY_VALUE_FLOAT ? storage_.number.f
               : kind_ == NNERGY_VALUE_INT ? static_cast<double>(storage_.number.i)
                                           : 0.0;
    }
    /// A STRING's text; empty for other kinds.
    std::string_view string_value() const noexcept {
        return kind_ == NNERGY_VALUE_STRING ? std::string_view(storage_.text) : std::string_view();
    }
    /// ARRAY elements or OBJECT members (each named by its key()); empty for other kinds.
    const std::vector<nnergy_value>& items() const noexcept {
        return is_container() ? storage_.items : no_items_;
    }
    /// The name of this value as a member of an OBJECT.
    std::string_view key() const noexcept { return key_.view(); }

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
        x.kind_ = k;
        if (k == NNERGY_VALUE_STRING)
            new (&x.storage_.text) std::string();
        else if (x.is_container())
            new (&x.storage_.items) std::vector<nnergy_value>();
        return x;
    }
    bool is_number() const noexcept {
        return kind_ == NNERGY_VALUE_INT || kind_ == NNERGY_VALUE_FLOAT;
    }
    bool is_container() const noexcept {
        return kind_ == NNERGY_VALUE_ARRAY || kind_ == NNERGY_VALUE_OBJECT;
    }
    /// Ends the text or members (the value is then NULL).
    void destroy() noexcept;
    /// Takes `other`'s kind and contents (this value being NULL), leaving `other` NULL.
    void take(nnergy_value& other) noexcept;
    /// Copies `other`'s kind and contents (this value being NULL).
    void copy(const nnergy_value& other);

    nnergy_value_kind kind_ = NNERGY_VALUE_NULL;
    bool bool_ = false;
    nnergy::detail::pooled_name key_;
    union number_value {
        int64_t i;
        double f;
    };
    union storage {
        number_value number;              ///< INT, FLOAT
        std::string text;                 ///< STRING
        std::vector<nnergy_value> items;  ///< ARRAY, OBJECT
        storage() noexcept : number{0} {}
        ~storage() {}
    } storage_;
    static const std::vector<nnergy_value> no_items_;
};

namespace nnergy {
using report_value = ::nnergy_value;

/// Serializes a value as JSON (used by tests and for diagnostics; reporters do their own).
std::string to_json(const report_value& v, int indent = 2);
}  // namespace nnergy
