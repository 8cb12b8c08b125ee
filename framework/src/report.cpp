// SPDX-License-Identifier: Apache-2.0
#include <cstdint>
#include <cstring>
#include <new>
#include <nlohmann/json.hpp>
#include <nnergy/framework/report.hpp>
#include <stdexcept>
#include <string>
#include <utility>

namespace {
/// Report objects and arrays are built a member at a time and are mostly small: room for eight
/// at the first one, then doubling, spares the moves of growing one at a time from one.
uint32_t grown_capacity(uint32_t size) {
    if (size == 0) return 8;
    if (size > UINT32_MAX / 2) throw std::length_error("nnergy_value: too many members");
    return 2 * size;
}
}  // namespace

static_assert(sizeof(nnergy_value) <= 32, "a report holds hundreds of thousands of values");

nnergy_value::nnergy_value(const nnergy_value& other) { copy(other); }

nnergy_value::nnergy_value(nnergy_value&& other) noexcept { take(other); }

nnergy_value& nnergy_value::operator=(const nnergy_value& other) {
    if (this != &other) {
        // Copied first: `other` may be one of this value's members.
        nnergy_value copied(other);
        destroy();
        take(copied);
    }
    return *this;
}

nnergy_value& nnergy_value::operator=(nnergy_value&& other) noexcept {
    if (this != &other) {
        // Taken first: `other` may be one of this value's members.
        nnergy_value taken(std::move(other));
        destroy();
        take(taken);
    }
    return *this;
}

nnergy_value nnergy_value::of(std::string_view v) {
    nnergy_value x = make(NNERGY_VALUE_STRING);
    x.assign_text(v);
    return x;
}

void nnergy_value::assign_text(std::string_view v) {
    if (v.size() > UINT32_MAX) throw std::length_error("nnergy_value: text too long");
    const uint32_t n = static_cast<uint32_t>(v.size());
    // The size is set once the text has its place: a failed allocation leaves an empty text.
    if (n > inline_text) storage_.long_text = new char[n];
    std::memcpy(n > inline_text ? storage_.long_text : storage_.text, v.data(), n);
    size_ = n;
}

void nnergy_value::forget() noexcept {
    kind_ = NNERGY_VALUE_NULL;
    size_ = 0;
    storage_.number.i = 0;
}

void nnergy_value::destroy() noexcept {
    if (kind_ == NNERGY_VALUE_STRING) {
        if (size_ > inline_text) delete[] storage_.long_text;
    } else if (is_container()) {
        for (uint32_t i = 0; i < size_; ++i) storage_.items.data[i].~nnergy_value();
        ::operator delete(storage_.items.data);
    }
    forget();
}

void nnergy_value::take(nnergy_value& other) noexcept {
    kind_ = other.kind_;
    bool_ = other.bool_;
    size_ = other.size_;
    key_ = other.key_;
    // The place holds a number, a text (inline or its pointer) or the members' array: its
    // bytes move as they are, and `other` no longer owns what they point to.
    storage_ = other.storage_;
    other.forget();
}

void nnergy_value::copy(const nnergy_value& other) {
    if (other.kind_ == NNERGY_VALUE_STRING) {
        assign_text(other.string_value());
    } else if (other.is_container()) {
        storage_.items = {nullptr, 0};
        kind_ = other.kind_;  // what destroy() frees should a member's copy throw
        try {
            if (other.size_ > 0) reallocate(other.size_);
            for (const nnergy_value& x : other.items()) {
                new (&storage_.items.data[size_]) nnergy_value(x);
                ++size_;
            }
        } catch (...) {
            // A constructor that throws runs no destructor: free what was copied here.
            destroy();
            throw;
        }
    } else {
        storage_ = other.storage_;
    }
    kind_ = other.kind_;
    bool_ = other.bool_;
    key_ = other.key_;
}

void nnergy_value::reallocate(uint32_t capacity) {
    auto* moved = static_cast<nnergy_value*>(::operator new(capacity * sizeof(nnergy_value)));
    for (uint32_t i = 0; i < size_; ++i) {
        new (&moved[i]) nnergy_value(std::move(storage_.items.data[i]));
        storage_.items.data[i].~nnergy_value();
    }
    ::operator delete(storage_.items.data);
    storage_.items = {moved, capacity};
}

nnergy_value& nnergy_value::append_slot() {
    if (size_ == storage_.items.capacity) reallocate(grown_capacity(size_));
    nnergy_value* slot = new (&storage_.items.data[size_]) nnergy_value();
    ++size_;
    return *slot;
}

nnergy_value& nnergy_value::set(std::string_view key, nnergy_value v) {
    if (kind_ == NNERGY_VALUE_OBJECT)
        for (uint32_t i = 0; i < size_; ++i) {
            nnergy_value& member = storage_.items.data[i];
            if (member.key_ == key) {
                const nnergy::detail::pooled_name name = member.key_;
                member = std::move(v);
                member.key_ = name;
                return member;
            }
        }
    return add(key, std::move(v));
}

nnergy_value& nnergy_value::add(std::string_view key, nnergy_value v) {
    if (kind_ != NNERGY_VALUE_OBJECT)
        throw std::logic_error("nnergy_value::add: '" + std::string(key) +
                               "' added to a value that is not an object");
    // Objects of one kind list their members in one order: the member after a given one is
    // usually the one that followed it last time, which saves looking the name up.
    using nnergy::detail::pooled_name;
    constexpr size_t hinted = 256;
    thread_local pooled_name next_after[hinted];
    const char* last_key = size_ == 0 ? nullptr : storage_.items.data[size_ - 1].key_.view().data();
    const size_t slot = (reinterpret_cast<uintptr_t>(last_key) >> 4) % hinted;
    const pooled_name name = pooled_name::of(key, next_after[slot]);
    nnergy_value& member = append_slot();
    member.take(v);
    member.key_ = name;
    return member;
}

void nnergy_value::reserve(size_t n) {
    if (!is_container() || n <= storage_.items.capacity) return;
    if (n > UINT32_MAX) throw std::length_error("nnergy_value: too many members");
    reallocate(static_cast<uint32_t>(n));
}

nnergy_value& nnergy_value::push(nnergy_value v) {
    if (kind_ != NNERGY_VALUE_ARRAY)
        throw std::logic_error("nnergy_value::push: the value is not an array");
    nnergy_value& element = append_slot();
    element.take(v);
    element.key_ = nnergy::detail::pooled_name();
    return element;
}

const nnergy_value* nnergy_value::get(std::string_view key) const noexcept {
    if (kind_ != NNERGY_VALUE_OBJECT) return nullptr;
    for (const nnergy_value& member : items())
        if (member.key_ == key) return &member;
    return nullptr;
}

nnergy_value* nnergy_value::get(std::string_view key) noexcept {
    return const_cast<nnergy_value*>(std::as_const(*this).get(key));
}

namespace nnergy {
namespace {
nlohmann::ordered_json to_ordered(const report_value& v) {
    switch (v.kind()) {
        case NNERGY_VALUE_NULL:
            return nullptr;
        case NNERGY_VALUE_BOOL:
            return v.bool_value();
        case NNERGY_VALUE_INT:
            return v.int_value();
        case NNERGY_VALUE_FLOAT:
            return v.float_value();
        case NNERGY_VALUE_STRING:
            return std::string(v.string_value());
        case NNERGY_VALUE_ARRAY: {
            auto a = nlohmann::ordered_json::array();
            for (const auto& x : v.items()) a.push_back(to_ordered(x));
            return a;
        }
        case NNERGY_VALUE_OBJECT: {
            auto o = nlohmann::ordered_json::object();
            for (const auto& member : v.items()) o[std::string(member.key())] = to_ordered(member);
            return o;
        }
    }
    return nullptr;
}
}  // namespace

std::string to_json(const report_value& v, int indent) {
    return to_ordered(v).dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}
}  // namespace nnergy
