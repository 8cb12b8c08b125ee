// SPDX-License-Identifier: Apache-2.0
/// \file concurrency.hpp
/// \brief How much of a partitioned graph could run at once: dependency stages, the critical
/// path, parallelism per stage, and the speedup bound they imply (docs/report.md).
#pragma once

#include <cstdint>
#include <nnergy/framework/partition.hpp>
#include <vector>

namespace nnergy {

struct stage_summary {
    uint32_t kernels = 0;
    double total_threads = 0;  ///< sum of the kernels' parallelism.total_threads
    double max_threads = 0;
    double latency_s = 0;  ///< longest kernel of the stage (0 without latencies)
};

struct concurrency_summary {
    /// Stage of each kernel: 0 for kernels without producers, else 1 + the latest producer's.
    std::vector<uint32_t> stage_of;
    std::vector<stage_summary> stages;
    uint32_t widest_stage = 0;  ///< index of the stage with the most kernels (the first such)
    /// The longest chain of dependent kernels, producers first: by latency when latencies are
    /// given, else by kernel count.
    std::vector<uint32_t> critical_path;
    double critical_path_latency_s = 0;
    double serial_latency_s = 0;  ///< sum of every kernel's latency
    /// serial / critical path: the most that running independent kernels at the same time could
    /// gain over one after another (1 without latencies or for a chain).
    double speedup_bound = 1;
};

/// `latency_s` holds one latency per kernel, or is empty.
concurrency_summary analyze_concurrency(const partition& p, const std::vector<double>& latency_s);

}  // namespace nnergy
