// SPDX-License-Identifier: Apache-2.0
#include <cstdint>
#include <nlohmann/json.hpp>
#include <nnergy/framework/report.hpp>

namespace {
/// Report objects and arrays are built a member at a time and are mostly small: room for eight
/// at the first one, then doubling, spares the moves of growing one at a time from one.
template <class T>
void make_room(std::vector<T>& v) {
    if (v.size() == v.capacity()) v.reserve(v.empty() ? 8 : 2 * v.size());
}
}  // namespace

nnergy_value& nnergy_value::set(std::string_view key, nnergy_value v) {
    for (size_t i = 0; i < keys.size(); ++i) {
        if (keys[i] == key) {
            items[i] = std::move(v);
            return items[i];
        }
    }
    return add(key, std::move(v));
}

nnergy_value& nnergy_value::add(std::string_view key, nnergy_value v) {
    make_room(keys);
    make_room(items);
    // Objects of one kind list their members in one order: the member after a given one is
    // usually the one that followed it last time, which saves looking the name up.
    using nnergy::detail::pooled_name;
    constexpr size_t hinted = 256;
    thread_local pooled_name next_after[hinted];
    const size_t slot =
        keys.empty() ? 0 : (reinterpret_cast<uintptr_t>(keys.back().view().data()) >> 4) % hinted;
    keys.push_back(pooled_name::of(key, next_after[slot]));
    items.push_back(std::move(v));
    return items.back();
}

void nnergy_value::reserve(size_t n) {
    if (kind == NNERGY_VALUE_OBJECT) keys.reserve(n);
    items.reserve(n);
}

nnergy_value& nnergy_value::push(nnergy_value v) {
    make_room(items);
    items.push_back(std::move(v));
    return items.back();
}

const nnergy_value* nnergy_value::get(std::string_view key) const noexcept {
    if (kind != NNERGY_VALUE_OBJECT) return nullptr;
    for (size_t i = 0; i < keys.size(); ++i)
        if (keys[i] == key) return &items[i];
    return nullptr;
}

nnergy_value* nnergy_value::get(std::string_view key) noexcept {
    return const_cast<nnergy_value*>(std::as_const(*this).get(key));
}

namespace nnergy {
namespace {
nlohmann::ordered_json to_ordered(const report_value& v) {
    switch (v.kind) {
        case NNERGY_VALUE_NULL:
            return nullptr;
        case NNERGY_VALUE_BOOL:
            return v.bool_value;
        case NNERGY_VALUE_INT:
            return v.int_value;
        case NNERGY_VALUE_FLOAT:
            return v.float_value;
        case NNERGY_VALUE_STRING:
            return v.string_value;
        case NNERGY_VALUE_ARRAY: {
            auto a = nlohmann::ordered_json::array();
            for (const auto& x : v.items) a.push_back(to_ordered(x));
            return a;
        }
        case NNERGY_VALUE_OBJECT: {
            auto o = nlohmann::ordered_json::object();
            for (size_t i = 0; i < v.keys.size(); ++i)
                o[std::string(v.keys[i].view())] = to_ordered(v.items[i]);
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
