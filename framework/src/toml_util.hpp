// SPDX-License-Identifier: Apache-2.0
// Host-internal helpers shared by the readers of TOML files.
#pragma once

#include <toml++/toml.h>

#include <nnergy/framework/host.hpp>

namespace nnergy::detail {

/// Flattens a node into dotted names (tables) and name[i] (arrays).
void flatten_toml(const toml::node& n, const std::string& name, const std::string& file,
                  config_values& out);

/// Parses a TOML file; errors name the file, line and column.
toml::table parse_toml_file(const std::filesystem::path& file);
/// TOML text read from `file`, parsed; errors name the file, line and column.
toml::table parse_toml_text(std::string_view text, const std::filesystem::path& file);

inline uint32_t line_of(const toml::node& n) {
    return static_cast<uint32_t>(n.source().begin.line);
}

}  // namespace nnergy::detail
