// SPDX-License-Identifier: Apache-2.0
// A cache of parsed configuration files on disk, so that a new process need not parse the same
// TOML again: parsing a hardware entry costs a hundred times what reading its bytes does.
#pragma once

#include <cstddef>
#include <filesystem>
#include <nnergy/framework/host.hpp>
#include <optional>
#include <string_view>

namespace nnergy::config_cache {

/// The values a file of `bytes` at `file` gave when parsed as `schema` ("" for plain TOML), if a
/// cache entry holds them. An entry is used only when the file's bytes, the schema and the path
/// are those it was made from, and the code reading it is the build that made it (its GNU
/// build ID; a rebuild can change what parsing produces). Entries are named by the build, the
/// schema and the path, so two builds sharing the directory keep their own.
std::optional<config_values> load(std::string_view schema, const std::filesystem::path& file,
                                  std::string_view bytes);

/// The most entries the cache directory keeps. A design-space search that writes a hardware
/// file per candidate would otherwise fill it without end.
inline constexpr size_t max_entries = 256;

/// Records what parsing gave, and keeps the directory at max_entries or fewer by removing the
/// entries written longest ago. Never throws: a cache that cannot be written is skipped.
void store(std::string_view schema, const std::filesystem::path& file, std::string_view bytes,
           const config_values& values) noexcept;

/// Where entries live: NNERGY_CONFIG_CACHE (a directory, or "off"), else
/// $XDG_CACHE_HOME/nnergy/config, else ~/.cache/nnergy/config; empty when none.
std::filesystem::path directory();

}  // namespace nnergy::config_cache
