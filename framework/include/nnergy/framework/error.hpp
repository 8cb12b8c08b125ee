// SPDX-License-Identifier: Apache-2.0
/// \file error.hpp
/// \brief The host's error type and the process exit codes it maps to (docs/cli.md).
#pragma once

#include <stdexcept>
#include <string>

namespace nnergy {

/// Exit codes of the nnergy binary. Documented in docs/cli.md; values are frozen.
enum class exit_code : int {
    ok = 0,
    failure = 1,         ///< a run failed: a plugin returned an error, estimation failed
    usage = 2,           ///< bad command line
    invalid_input = 3,   ///< a bad model, pipeline or hardware file
    plugin_missing = 4,  ///< a requested plugin or component is not available
    strict = 5,          ///< --strict and the model has ops that cannot be counted
    accuracy = 6,        ///< validate: a MAPE above its --max-mape or --max-energy-mape
    internal = 70        ///< a bug
};

/// A user-facing error: the message names the file, line, node or key at fault.
class error : public std::runtime_error {
public:
    explicit error(const std::string& message, exit_code code = exit_code::invalid_input)
        : std::runtime_error(message), code_(code) {}
    exit_code code() const noexcept { return code_; }

private:
    exit_code code_;
};

}  // namespace nnergy
