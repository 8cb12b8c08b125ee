// SPDX-License-Identifier: Apache-2.0
// Where nnergy keeps what it caches for a user (the plugin catalog, parsed configuration).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace nnergy {

/// `$<env>` when set ("off" or empty: no cache), else $XDG_CACHE_HOME/nnergy/<leaf>, else
/// ~/.cache/nnergy/<leaf>; empty when none of them says where.
inline std::filesystem::path user_cache_path(const char* env, std::string_view leaf) {
    if (const char* v = std::getenv(env)) {
        const std::string_view value(v);
        if (value.empty() || value == "off") return {};
        return std::filesystem::path(value);
    }
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
        return std::filesystem::path(xdg) / "nnergy" / leaf;
    if (const char* home = std::getenv("HOME"); home && *home == '/')
        return std::filesystem::path(home) / ".cache" / "nnergy" / leaf;
    return {};
}

}  // namespace nnergy
