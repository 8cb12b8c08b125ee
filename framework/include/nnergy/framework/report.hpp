// SPDX-License-Identifier: Apache-2.0
/// \file report.hpp
/// \brief The report document: a JSON-like tree the host builds and reporters read through the
/// value_* functions of the host API (docs/report.md).
#pragma once

#include <nnergy/plugin.h>

#include <cstdint>
#include <nnergy/framework/pooled_name.hpp>
#include <span>
#include <string>
#include <string_view>

/// Defined in the global namespace: it is the host's definition of the ABI's opaque type.
///
/// Reports hold hundreds of thousands of values (a 10k-node graph's has 370,000), so a value
/// is kept small: 32 bytes. Its number, text or members share one place of 16 bytes (a value
/// holds one of them): a text of up to 16 bytes lies there, a longer one on the heap, and
/// members are an array of their own (pointer and capacity; the count is in the header). An
/// object member carries its own name (pooled: the same few hundred names in every report)
/// instead of its object keeping a list of names beside its members.
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
    static nnergy_value of(std::string_view v);
    static nnergy_value of(const char* v) { return of(std::string_view(v)); }

    nnergy_value_kind kind() const noexcept { return static_cast<nnergy_value_kind>(kind_); }
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
        if (kind_ != NNERGY_VALUE_STRING) return {};
        return {size_ <= inline_text ? storage_.text : storage_.long_text, size_};
    }
    /// ARRAY elements or OBJECT members (each named by its key()); empty for other kinds.
    std::span<const nnergy_value> items() const noexcept {
        if (!is_container()) return {};
        return {storage_.items.data, size_};
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
    static constexpr uint32_t inline_text = 16;  ///< texts this long or shorter lie inline

    static nnergy_value make(nnergy_value_kind k) noexcept {
        nnergy_value x;
        x.kind_ = static_cast<uint8_t>(k);
        if (x.is_container()) x.storage_.items = {nullptr, 0};
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
    /// Room for one more member or element (a container), and the place for it.
    nnergy_value& append_slot();
    /// Moves the members or elements to an array of `capacity` (at least size_).
    void reallocate(uint32_t capacity);
    /// Stores `v` as this STRING's text (its place holding none yet).
    void assign_text(std::string_view v);
    /// Marks the value NULL without freeing anything: what it owned is freed or taken.
    void forget() noexcept;

    uint8_t kind_ = NNERGY_VALUE_NULL;  ///< an nnergy_value_kind
    bool bool_ = false;
    uint32_t size_ = 0;  ///< a STRING's length, or the count of members or elements
    nnergy::detail::pooled_name key_;
    union number_value {
        int64_t i;
        double f;
    };
    struct member_array {
        nnergy_value* data;  ///< owned, room for `capacity`; the first size_ are constructed
        uint32_t capacity;
    };
    union storage {
        number_value number;     ///< INT, FLOAT
        char text[inline_text];  ///< a STRING of at most inline_text bytes
        char* long_text;         ///< a longer STRING (owned, new[])
        member_array items;      ///< ARRAY, OBJECT
        storage() noexcept : number{0} {}
    } storage_;
};

namespace nnergy {
using report_value = ::nnergy_value;

/// Serializes a value as JSON (used by tests and for diagnostics; reporters do their own).
std::string to_json(const report_value& v, int indent = 2);
}  // namespace nnergy
