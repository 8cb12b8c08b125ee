// SPDX-License-Identifier: Apache-2.0
/// \file bench.hpp
/// \brief `nnergy bench`: times each pipeline stage on synthetic graphs of growing size.
#pragma once

#include <cstddef>
#include <nnergy/framework/registry.hpp>
#include <vector>

namespace nnergy {

/// Builds synthetic CNN graphs of about `sizes[i]` nodes, writes each as a JSON graph, then times
/// parse (JSON frontend), shape inference and counting, partition and estimate (reference
/// architecture + roofline estimator on h100-sxm5), reporting medians of `repeats` runs and peak
/// resident memory. Returns the process exit code.
int run_bench(registry& reg, const std::vector<size_t>& sizes, int repeats);

}  // namespace nnergy
