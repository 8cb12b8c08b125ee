// SPDX-License-Identifier: Apache-2.0
// Shell completion scripts built from the command definitions (CLI11's App tree).
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy::cli {

/// What the value of an option (or a positional argument) completes to.
struct completion_values {
    std::vector<std::string> words;
    bool files = false;  ///< file names fit too (a hardware file for --hw)
};

/// Keyed by an option's name as typed ("--hw") or a positional's name ("model"); a key that
/// starts with the command ("compare --format", "hardware show name") applies to that command
/// only and wins over the plain name. An option with no entry completes file names.
using completion_table = std::map<std::string, completion_values, std::less<>>;

/// The completion script for `shell` ("bash" or "zsh"): every command, subcommand and option of
/// `app`, with the values of `table`.
std::string completion_script(const CLI::App& app, std::string_view shell,
                              const completion_table& table);

}  // namespace nnergy::cli
