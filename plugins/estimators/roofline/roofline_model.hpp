// SPDX-License-Identifier: Apache-2.0
/// \file roofline_model.hpp
/// \brief The roofline latency of one kernel from its mapping, without host calls so it can be
/// tested alone. docs/report.md names the metrics; docs/hardware.md derives the mapping.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nnergy::roofline {

/// Traffic at one memory level, as the architecture mapped it.
struct level_traffic {
    std::string_view level;  ///< the mapping's name for it (the host keeps it for the estimate)
    double bytes = 0;
    double bandwidth_bytes_per_s = 0;
};

/// What the estimator needs of one kernel.
struct kernel_input {
    std::string_view name;  ///< the kernel's name and number, for messages
    uint32_t index = 0;
    double flops = 0;
    std::optional<double> effective_flops_per_s;
    std::vector<level_traffic> levels;
    double launch_overhead_s = 0;

    /// "kernel 'conv1' (#0)": built for a message only, not for every kernel.
    std::string label() const {
        return "kernel '" + std::string(name) + "' (#" + std::to_string(index) + ")";
    }
};

struct kernel_estimate {
    double compute_time_s = 0;
    double memory_time_s = 0;  ///< the slowest level
    double overhead_s = 0;
    double latency_s = 0;
    /// The largest term: `memory` names its level in slowest_level.
    enum class bound { none, overhead, compute, memory } limit = bound::none;
    std::string_view slowest_level;
    std::vector<std::pair<std::string_view, double>> level_times_s;

    /// compute | memory:<level> | overhead | none (nothing runs), as the report writes it.
    std::string bottleneck() const {
        switch (limit) {
            case bound::overhead:
                return "overhead";
            case bound::compute:
                return "compute";
            case bound::memory:
                return "memory:" + std::string(slowest_level);
            case bound::none:
                break;
        }
        return "none";
    }
};

inline bool finite_non_negative(double v) { return std::isfinite(v) && v >= 0; }

/// latency = max(compute, slowest memory level) + launch overhead. The terms overlap because a
/// kernel streams operands while it computes; the launch cost does not overlap with its own
/// kernel. Writes into `e`, whose strings and vector keep their buffers when reused.
inline void estimate_kernel(const kernel_input& k, kernel_estimate& e) {
    if (!finite_non_negative(k.flops))
        throw sdk::error(k.label() + ": FLOP count must be a finite non-negative number",
                         NNERGY_CODE_INTERNAL);
    e.compute_time_s = 0;
    e.memory_time_s = 0;
    e.overhead_s = 0;
    e.latency_s = 0;
    e.level_times_s.clear();
    if (k.flops > 0) {
        if (!k.effective_flops_per_s)
            throw sdk::error(
                k.label() + ": the architecture's mapping has no 'effective_flops_per_s'",
                NNERGY_CODE_FAILED_PRECONDITION);
        if (!(*k.effective_flops_per_s > 0) || !std::isfinite(*k.effective_flops_per_s))
            throw sdk::error(k.label() +
                                 ": the architecture's mapping has effective_flops_per_s = " +
                                 std::to_string(*k.effective_flops_per_s) +
                                 "; it must be positive for a kernel with FLOPs",
                             NNERGY_CODE_FAILED_PRECONDITION);
        e.compute_time_s = k.flops / *k.effective_flops_per_s;
    }
    const level_traffic* slowest = nullptr;
    for (const level_traffic& l : k.levels) {
        if (!finite_non_negative(l.bytes))
            throw sdk::error(k.label() + ": memory level '" + std::string(l.level) +
                                 "' has an invalid byte count",
                             NNERGY_CODE_FAILED_PRECONDITION);
        double t = 0;
        if (l.bytes > 0) {
            if (!(l.bandwidth_bytes_per_s > 0) || !std::isfinite(l.bandwidth_bytes_per_s))
                throw sdk::error(k.label() + ": memory level '" + std::string(l.level) +
                                     "' moves " + std::to_string(l.bytes) +
                                     " bytes but has no positive bandwidth",
                                 NNERGY_CODE_FAILED_PRECONDITION);
            t = l.bytes / l.bandwidth_bytes_per_s;
        }
        e.level_times_s.emplace_back(l.level, t);
        if (!slowest || slowest->level.empty() || t > e.memory_time_s) {
            e.memory_time_s = t;
            slowest = &l;
        }
    }
    if (!finite_non_negative(k.launch_overhead_s))
        throw sdk::error(k.label() + ": launch_overhead_s must be a finite non-negative number",
                         NNERGY_CODE_FAILED_PRECONDITION);
    e.overhead_s = k.launch_overhead_s;
    const double work = std::max(e.compute_time_s, e.memory_time_s);
    e.latency_s = work + e.overhead_s;
    // The largest of the three terms names the bottleneck; a kernel with no work but a launch
    // is overhead by definition.
    e.slowest_level = {};
    if (e.latency_s == 0) {
        e.limit = kernel_estimate::bound::none;  // nothing runs: shape arithmetic known at bind
    } else if (work == 0 || e.overhead_s > work) {
        e.limit = kernel_estimate::bound::overhead;
    } else if (e.compute_time_s >= e.memory_time_s) {
        e.limit = kernel_estimate::bound::compute;
    } else {
        e.limit = kernel_estimate::bound::memory;
        if (slowest) e.slowest_level = slowest->level;
    }
}

inline kernel_estimate estimate_kernel(const kernel_input& k) {
    kernel_estimate e;
    estimate_kernel(k, e);
    return e;
}

}  // namespace nnergy::roofline
