// SPDX-License-Identifier: Apache-2.0
/// \file recent_values.hpp
/// \brief Values a plugin derives from a graph or a partition, kept for the few most recent
/// ones: a sweep evaluates each bound graph and partition on a run of devices and precisions,
/// and what depends on them alone need not be derived again.
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
    explicit recent_values(size_t capacity = 16) : capacity_(capacity == 0 ? 1 : capacity) {}

    /// The value for `key`, from `make()` the first time (or every time when not `named`).
    template <class Make>
    Value get(const Key& key, bool named, Make&& make) const {
        if (!named) return make();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            // Newest first: consecutive calls usually ask for the same key.
            for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
                if (it->first == key) return it->second;
        }
        Value value = make();
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& [k, v] : entries_)
            if (k == key) return v;  // another thread derived it meanwhile
        // The oldest goes first: a sweep moves on from a partition and does not come back.
        if (entries_.size() == capacity_) entries_.erase(entries_.begin());
        entries_.emplace_back(key, value);
        return value;
    }

private:
    size_t capacity_;
    mutable std::mutex mutex_;
    mutable std::vector<std::pair<Key, Value>> entries_;
};

}  // namespace nnergy::modeling
