// SPDX-License-Identifier: Apache-2.0
/// \file recent_values.hpp
/// \brief Values a plugin derives from a graph, a partition or a hardware description, kept for
/// the most recent ones: a sweep evaluates each bound graph and partition on a run of devices and
/// precisions, a calibration many graphs on each candidate's hardware, and what depends on one of
/// them alone need not be derived again.
#pragma once

#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

namespace nnergy::modeling {

/// Keys are built from the host's identities (sdk::graph_view::identity(),
/// sdk::partition_view::identity(), ABI 1.5; sdk::estimate_input::hardware_identity(), 1.9),
/// which are never reused within a run, plus whatever else the value depends on (a precision).
/// An identity of 0 means the host named nothing: such a value is derived every time.
/// Thread-safe; a value is derived outside the lock, and copied out under it (make `Value` a
/// std::shared_ptr<const T> when it is large).
template <class Key, class Value>
class recent_values {
public:
    /// Keeps at most `capacity` values and, with a `weight_budget`, values whose weights
    /// (get()'s `weigh`) add up to at most that: a cache that must hold one value per model of
    /// a calibration (hundreds of one-op graphs) stays small for a sweep over large models.
    explicit recent_values(size_t capacity = 16, size_t weight_budget = 0)
        : capacity_(capacity == 0 ? 1 : capacity), weight_budget_(weight_budget) {}

    /// The value for `key`, from `make()` the first time (or every time when not `named`).
    template <class Make>
    Value get(const Key& key, bool named, Make&& make) const {
        return get(key, named, std::forward<Make>(make), [](const Value&) { return size_t{1}; });
    }

    /// The same, weighing each new value with `weigh(value)`. A value heavier than the whole
    /// budget is returned without being kept.
    template <class Make, class Weigh>
    Value get(const Key& key, bool named, Make&& make, Weigh&& weigh) const {
        if (!named) return make();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            // Newest first: consecutive calls usually ask for the same key.
            for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
                if (it->key == key) return it->value;
        }
        Value value = make();
        const size_t weight = weigh(value);
        std::lock_guard<std::mutex> lock(mutex_);
        for (const entry& e : entries_)
            if (e.key == key) return e.value;  // another thread derived it meanwhile
        if (weight_budget_ != 0 && weight > weight_budget_) return value;
        // The oldest go first: a sweep moves on from a partition and does not come back.
        size_t evicted = 0;
        while (evicted < entries_.size() &&
               (entries_.size() - evicted == capacity_ ||
                (weight_budget_ != 0 && weight_ + weight > weight_budget_)))
            weight_ -= entries_[evicted++].weight;
        entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(evicted));
        entries_.push_back({key, value, weight});
        weight_ += weight;
        return value;
    }

private:
    struct entry {
        Key key;
        Value value;
        size_t weight;
    };
    size_t capacity_;
    size_t weight_budget_;
    mutable std::mutex mutex_;
    mutable std::vector<entry> entries_;
    mutable size_t weight_ = 0;  ///< of the kept entries
};

}  // namespace nnergy::modeling
