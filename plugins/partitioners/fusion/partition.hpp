// SPDX-License-Identifier: Apache-2.0
// The fusion algorithm: chain rules, then absorption of layout ops, in time linear in the graph.
#pragma once

#include <cstdint>
#include <nnergy/sdk.hpp>
#include <string>
#include <vector>

#include "rules.hpp"

namespace nnergy::fusion {

/// One kernel to hand to the host.
struct kernel_plan {
    std::string name;
    std::string pattern;
    std::vector<uint32_t> nodes;  ///< increasing (the graph's topological order)
};

struct plan_summary {
    size_t fused_kernels = 0;   ///< kernels made by a chain rule
    size_t fused_nodes = 0;     ///< nodes in those kernels
    size_t absorbed_nodes = 0;  ///< layout nodes moved into the kernel that consumes them
};

/// Groups the nodes of `g` into kernels. With `rules` null every node is its own kernel.
/// Every node ends in exactly one kernel. A rule's kernel sends its outputs out only from its
/// last (topologically greatest) node; a layout node joins only the kernel that reads all its
/// outputs, or (shared = "producer") the one kernel producing everything it reads. Each step keeps
/// the kernels an acyclic graph.
std::vector<kernel_plan> plan_kernels(const sdk::graph_view& g, const rule_set* rules,
                                      plan_summary* summary = nullptr);

}  // namespace nnergy::fusion
