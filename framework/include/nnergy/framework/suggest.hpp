// SPDX-License-Identifier: Apache-2.0
/// \file suggest.hpp
/// \brief "Did you mean" hints for misspelt names: hardware, runtimes, plugins, precisions,
/// dimension symbols, models.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace nnergy {

/// Edit distance between two names, case-insensitive: insertions, deletions, substitutions and
/// swaps of two neighbouring characters cost 1 each (optimal string alignment).
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidates close to `name`, best first (those that extend `name`, then fewest edits, then
/// alphabetical), at most `max`.
/// Close means within max(1, length/3) edits, or sharing a prefix of at least 3 characters and
/// half of `name` (`h100-pcie` for `h100-sxm`). Dotted names are compared by their last part
/// when the rest is the same (`nnergy.architecture.gpuu` is one edit from `...gpu`, not close to
/// `...cpu`) or when `name` has no dot (`jsno` suggests `nnergy.reporter.json`). Exact matches
/// are left out.
std::vector<std::string> closest_names(std::string_view name,
                                       const std::vector<std::string>& candidates, size_t max = 3);

/// " — did you mean a, b?" for the closest candidates, or "" when none is close.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace nnergy
