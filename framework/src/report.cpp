// SPDX-License-Identifier: Apache-2.0
#include <cstdint>
#include <nlohmann/json.hpp>
#include <nnergy/framework/report.hpp>
#include <stdexcept>
#include <string>
#include <utility>

namespace {
/// Report objects and arrays are built a member at a time and are mostly small: room for eight
/// at the first one, then doubling, spares the moves of growing one at a time from one.
template <class T>
void make_room(std::vector<T>& v) {
    if (v.size() == v.capacity()) v.reserve(v.empty() ? 8 : 2 * v.size());
}
}  // namespace

const std::vector<nnergy_value> nnergy_value::no_items_;

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

void nnergy_value::destroy() noexcept {
    if (kind_ == NNERGY_VALUE_STRING)
        storage_.text.~basic_string();
    else if (is_container())
        storage_.items.~vector();
    kind_ = NNERGY_VALUE_NULL;
}

void nnergy_value::take(nnergy_value& other) noexcept {
    kind_ = other.kind_;
    bool_ = other.bool_;
    key_ = other.key_;
    if (is_number())
        storage_.number = other.storage_.number;
    else if (kind_ == NNERGY_VALUE_STRING)
        new (&storage_.text) std::string(std::move(other.storage_.text));
    else if (is_container())
        new (&storage_.items) std::vector<nnergy_value>(std::move(other.storage_.items));
    other.destroy();
}

void nnergy_value::copy(const nnergy_value& other) {
    if (other.is_number())
        storage_.number = other.storage_.number;
    else if (other.kind_ == NNERGY_VALUE_STRING)
        new (&storage_.text) std::string(other.storage_.text);
    else if (other.is_container())
        new (&storage_.items) std::vector<nnergy_value>(other.storage_.items);
    kind_ = other.kind_;
    bool_ = other.bool_;
    key_ = other.key_;
}

nnergy_value& nnergy_value::set(std::string_view key, nnergy_value v) {
    if (kind_ == NNERGY_VALUE_OBJECT)
        for (nnergy_value& member : storage_.items)
            if (member.key_ == key) {
                const nnergy::detail::pooled_name name = member.key_;
                member = std::move(v);
                member.key_ = name;
                return member;
            }
    return add(key, std::move(v));
}

nnergy_value& nnergy_value::add(std::string_view key, nnergy_value v) {
    if (kind_ != NNERGY_VALUE_OBJECT)
        throw std::logic_error("nnergy_value::add: '" + std::string(key) +
                               "' added to a value that is not an object");
    std::vector<nnergy_value>& members = storage_.items;
    make_room(members);
    // Objects of one kind list their members in one order: the member after a given one is
    // usually the one that followed it last time, which saves looking the name up.
    using nnergy::detail::pooled_name;
    constexpr size_t hinted = 256;
    thread_local pooled_name next_after[hinted];
    const size_t slot =
        members.empty()
            ? 0
            : (reinterpret_cast<uintptr_t>(members.back().key_.view().data()) >> 4) % hinted;
    members.push_back(std::move(v));
    members.back().key_ = pooled_name::of(key, next_after[slot]);
    return members.back();
}

void nnergy_value::reserve(size_t n) {
    if (is_container()) storage_.items.reserve(n);
}

nnergy_value& nnergy_value::push(nnergy_value v) {
    if (kind_ != NNERGY_VALUE_ARRAY)
        throw std::logic_error("nnergy_value::push: the value is not an array");
    make_room(storage_.items);
    storage_.items.push_back(std::move(v));
    storage_.items.back().key_ = nnergy::detail::pooled_name();
    return storage_.items.back();
}

const nnergy_value* nnergy_value::get(std::string_view key) const noexcept {
    if (kind_ != NNERGY_VALUE_OBJECT) return nullptr;
    for (const nnergy_value& member : storage_.items)
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
