// SPDX-License-Identifier: Apache-2.0
/// \file host_objects.hpp
/// \brief The host's definitions of the ABI's opaque types. Plugins never see these layouts;
/// they reach them only through the functions of nnergy_host_api.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/pooled_name.hpp>
#include <nnergy/framework/report.hpp>
#include <nnergy/modeling/text.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

struct nnergy_status {
    nnergy_status_code code = NNERGY_CODE_OK;
    std::string message;
};

struct nnergy_host_context {
    std::string component_name;
    std::filesystem::path base_dir;  ///< relative paths in config_file_read resolve here
};

struct nnergy_config_file {
    nnergy::config_values values;
    std::vector<nnergy_named_value> views;  ///< point into `values`
};

struct nnergy_graph_builder {
    nnergy::graph* target = nullptr;
    std::string file;  ///< for error messages
};

struct nnergy_graph {
    const nnergy::graph* source = nullptr;
    const nnergy::bound_graph* bound = nullptr;
};

struct nnergy_partition_builder {
    const nnergy::bound_graph* graph = nullptr;
    std::vector<nnergy::kernel> kernels;
};

struct nnergy_partition {
    const nnergy::partition* source = nullptr;
};

namespace nnergy::detail {

/// A vector whose cleared elements keep their storage: a worker evaluates the same model many
/// times, and a mapping's or a result's strings then cost no allocation after the first pass.
/// Only the first size() elements are live; the rest wait to be reused.
template <class T>
class reusable_list {
public:
    T* begin() noexcept { return items_.data(); }
    T* end() noexcept { return items_.data() + used_; }
    const T* begin() const noexcept { return items_.data(); }
    const T* end() const noexcept { return items_.data() + used_; }
    size_t size() const noexcept { return used_; }
    bool empty() const noexcept { return used_ == 0; }
    T& operator[](size_t i) noexcept { return items_[i]; }
    const T& operator[](size_t i) const noexcept { return items_[i]; }
    /// Forgets the elements, keeping them (and their strings' storage) for reuse.
    void clear() noexcept { used_ = 0; }
    /// The next element, a reused one (holding an earlier value: assign every member) or a new
    /// one; `first` is the room made on the first growth.
    T& grow(size_t first) {
        // Nearly always a kept element: that path stays a few inlined instructions, the growth
        // (an allocation, a construction) a call.
        if (used_ < items_.size()) return items_[used_++];
        return grow_storage(first);
    }

private:
    [[gnu::noinline]] T& grow_storage(size_t first) {
        if (items_.size() == items_.capacity())
            items_.reserve(items_.empty() ? first : 2 * items_.size());
        items_.emplace_back();
        return items_[used_++];
    }

    std::vector<T> items_;
    size_t used_ = 0;
};

/// A reusable list whose live elements are distinct (by a key the caller compares), in the
/// order first placed.
///
/// A list refilled for every kernel is usually refilled with much the same keys in the same
/// order. Its first `trusted_` elements (live or kept for reuse) are known to hold distinct
/// keys; when a refill places the key its position held before, inside that prefix, the key
/// cannot already be live (the live keys are the prefix before it): it needs neither a search
/// nor a copy.
template <class T>
class unique_list : public reusable_list<T> {
public:
    enum class placed {
        live,    ///< the key was live: update the element
        reused,  ///< a new element that already holds the key: set its value
        fresh,   ///< a new element: write its key and value
    };
    /// The element for the key `matches` accepts; `first` is the room made on the first growth.
    template <class Matches>
    std::pair<T&, placed> place(Matches matches, size_t first) {
        const size_t next = this->size();
        if (next < trusted_ && matches((*this)[next])) return {this->grow(first), placed::reused};
        for (T& item : *this)
            if (matches(item)) return {item, placed::live};
        // The new key replaces the one its position held. The trusted elements after it stay
        // distinct from it unless one of them holds the same key: the prefix then ends there.
        size_t end = std::max(trusted_, next + 1);
        for (size_t i = next + 1; i < trusted_; ++i)
            if (matches((*this)[i])) {
                end = i;
                break;
            }
        trusted_ = end;
        return {this->grow(first), placed::fresh};
    }

private:
    size_t trusted_ = 0;
};

/// A short list of (key, value) pairs, each key once, in the order first set. K is
/// std::string or pooled_name.
template <class V, class K = std::string>
class keyed_list : public unique_list<std::pair<K, V>> {
public:
    /// Sets `key` to `value`; `first` is the room made on the first insertion, sized to what the
    /// list usually holds.
    template <class T>
    void set(std::string_view key, T&& value, size_t first) {
        const size_t position = this->size();
        auto [kv, how] = this->place(
            [key](const auto& item) { return modeling::same_text(item.first, key); }, first);
        if (how == unique_list<std::pair<K, V>>::placed::fresh) {
            if constexpr (std::is_same_v<K, pooled_name>)
                kv.first = pooled_name::at<keyed_list>(key, position);
            else
                kv.first.assign(key);
        }
        assign(kv.second, std::forward<T>(value));
    }
    const V* find(std::string_view key) const noexcept {
        for (const auto& kv : *this)
            if (modeling::same_text(kv.first, key)) return &kv.second;
        return nullptr;
    }
    /// The same for a pooled key (K is pooled_name): one pool holds each text once, so the
    /// keys compare by address, not by text.
    template <class T>
    void set(pooled_name key, T&& value, size_t first) {
        static_assert(std::is_same_v<K, pooled_name>);
        auto [kv, how] = this->place([key](const auto& item) { return item.first == key; }, first);
        if (how == unique_list<std::pair<K, V>>::placed::fresh) kv.first = key;
        assign(kv.second, std::forward<T>(value));
    }
    const V* find(pooled_name key) const noexcept {
        static_assert(std::is_same_v<K, pooled_name>);
        for (const auto& kv : *this)
            if (kv.first == key) return &kv.second;
        return nullptr;
    }

private:
    template <class T>
    static void assign(V& to, T&& value) {
        if constexpr (std::is_same_v<V, std::string>) {
            // A reused text usually has its value already (a unit, a bottleneck).
            if (!modeling::same_text(to, value)) to = std::forward<T>(value);
        } else {
            to = std::forward<T>(value);
        }
    }
};

}  // namespace nnergy::detail

struct nnergy_mapping {
    using name = nnergy::detail::pooled_name;
    struct level {
        nnergy::detail::pooled_name name;
        double bytes = 0;
        double bandwidth_bytes_per_s = 0;
    };
    nnergy::detail::keyed_list<double, name> numbers;
    nnergy::detail::keyed_list<std::string, name> texts;
    nnergy::detail::reusable_list<level> levels;
    struct event {
        nnergy::detail::pooled_name category;
        nnergy::detail::pooled_name name;
        double count = 0;
    };
    nnergy::detail::unique_list<event> events;  ///< each (category, name) once

    /// Empties the mapping for the next map_kernel, keeping its storage.
    void clear() noexcept {
        numbers.clear();
        texts.clear();
        levels.clear();
        events.clear();
    }
};

struct nnergy_results {
    /// Names of kernel number keys, each stored once: every kernel of a run writes the same
    /// keys, so a kernel keeps (key id, value) pairs and no string of its own.
    class key_table {
    public:
        uint32_t intern(std::string_view key) {
            if (auto it = ids_.find(key); it != ids_.end()) return it->second;
            const uint32_t id = static_cast<uint32_t>(names_.size());
            names_.emplace_back(key);
            ids_.emplace(names_.back(), id);
            return id;
        }
        std::optional<uint32_t> find(std::string_view key) const {
            if (auto it = ids_.find(key); it != ids_.end()) return it->second;
            return std::nullopt;
        }
        const std::string& name(uint32_t id) const { return names_[id]; }

    private:
        struct hash {
            using is_transparent = void;
            size_t operator()(std::string_view s) const noexcept {
                return std::hash<std::string_view>{}(s);
            }
        };
        std::deque<std::string> names_;  // a deque never moves its strings
        std::unordered_map<std::string_view, uint32_t, hash, std::equal_to<>> ids_;
    };
    static constexpr uint32_t no_key = UINT32_MAX;
    key_table kernel_keys;
    /// Per key id, the key a kernel usually sets next (no_key: not seen yet), and the key it
    /// sets first: estimators write their keys in a fixed order, so a key is first checked
    /// against its predicted id (one comparison) before it is looked up (a hash).
    std::vector<uint32_t> next_key;
    uint32_t first_key = no_key;
    /// Per key id, a bit per kernel: the kernels that have set it.
    std::vector<std::vector<uint64_t>> key_kernels;
    std::vector<std::vector<std::pair<uint32_t, double>>> kernel_numbers;
    /// The key id a kernel number was last read by: an estimator reads one key of every kernel
    /// in turn (the latency), which then costs a comparison instead of a hash. Atomic only so
    /// that readers on several threads stay well defined; the id is checked before use.
    mutable std::atomic<uint32_t> last_read_key{no_key};
    std::vector<nnergy::detail::keyed_list<std::string, nnergy::detail::pooled_name>> kernel_texts;
    /// Keyed by pooled names, so that a run whose estimators set their totals in another order
    /// than the last run's (another architecture, other energy lines) finds each key by address.
    nnergy::detail::keyed_list<double, nnergy::detail::pooled_name> totals;
    nnergy::detail::keyed_list<std::string> total_texts;

    /// Empties the results for an evaluation of `kernels` kernels, keeping the interned keys
    /// and the storage of every list.
    void clear(size_t kernels) {
        kernel_numbers.resize(kernels);
        kernel_texts.resize(kernels);
        for (auto& n : kernel_numbers) n.clear();
        for (auto& t : kernel_texts) t.clear();
        for (auto& holders : key_kernels)
            if (!holders.empty()) holders.assign(kernels / 64 + 1, 0);
        totals.clear();
        total_texts.clear();
    }
};

struct nnergy_output {
    std::string bytes;                           ///< what was written, unless it streams to `file`
    std::string path;                            ///< empty: standard output
    std::unique_ptr<nnergy::pending_file> file;  ///< a file written as it goes
    bool allows_color = false;  ///< standard output on a colour terminal, NO_COLOR unset
    /// Companion outputs (since ABI 1.4) by suffix, in the order they were opened.
    std::vector<std::pair<std::string, std::unique_ptr<nnergy_output>>> companions;
};

namespace nnergy {

/// Turns a status returned by a plugin into its message, and frees it.
std::string consume_status(nnergy_status* status);

/// Wraps a config_values list as the ABI's named-value array (views into `values`).
std::vector<nnergy_named_value> named_value_views(const config_values& values);

}  // namespace nnergy
