// SPDX-License-Identifier: Apache-2.0
/// \file partition.hpp
/// \brief Kernels: groups of nodes a compiler would run as one, with their statistics.
#pragma once

#include <nnergy/framework/shape_inference.hpp>
#include <string>
#include <vector>

namespace nnergy {

struct kernel {
    std::string name;
    std::string pattern;          ///< the fusion rule that made it ("conv_bn_relu"), may be empty
    std::vector<uint32_t> nodes;  ///< member nodes, in topological order
    nnergy_kernel_stats stats{};  ///< filled by finalize_partition
    std::vector<uint32_t> dependencies;  ///< producer kernels, increasing
};

struct partition {
    std::vector<kernel> kernels;  ///< topologically ordered
    /// What plugins key caches on (docs/abi.md §9): set by finalize_partition, never reused;
    /// 0 for a partition built otherwise. Nothing changes a partition once it has one.
    uint64_t identity = 0;
};

/// Validates a partitioner's output (every node in exactly one kernel, kernels acyclic), orders
/// kernels topologically, and computes each kernel's statistics and dependencies:
///  - input bytes: activations read by members but produced outside the kernel (graph inputs
///    included, initializers excluded), each tensor once;
///  - output bytes: tensors produced inside and consumed outside, or graph outputs;
///  - weight bytes: initializers read by members, each once;
///  - macs/flops: sums over members; parallelism from the anchor (most-FLOPs) node's output.
/// Throws nnergy::error naming `partitioner_name` on invalid output.
partition finalize_partition(const bound_graph& g, std::vector<kernel> kernels,
                             const std::string& partitioner_name);

}  // namespace nnergy
