// SPDX-License-Identifier: Apache-2.0
/// \file hardware_catalog.hpp
/// \brief `nnergy hardware list` and `nnergy hardware show`: the bundled catalog, printed.
#pragma once

#include <cstdio>
#include <string>

namespace nnergy {

/// One line per catalog file: name, class, headline peaks, DRAM bandwidth, TDP, description.
/// A file that does not read is listed with its error, and the exit code is then 3.
int print_hardware_list(std::FILE* out);

/// Every value of one hardware file (a catalog name or a path), with its unit and source.
/// Throws nnergy::error for an unknown name or an invalid file.
int print_hardware_show(const std::string& ref, std::FILE* out);

}  // namespace nnergy
