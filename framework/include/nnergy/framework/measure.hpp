// SPDX-License-Identifier: Apache-2.0
/// \file measure.hpp
/// \brief `nnergy measure`: a command run under the energy meters, its figures printed and
/// written as a measurement file (docs/measure.md, docs/measurements.md).
#pragma once

#include <chrono>
#include <cstdio>
#include <istream>
#include <nnergy/framework/meter.hpp>
#include <optional>
#include <string>
#include <vector>

namespace nnergy {

struct measure_options {
    std::vector<std::string> command;  ///< program and arguments, run without a shell
    /// Meters asked for by name: only these are used, and one that is unavailable is an error
    /// before the command runs. With none asked for, every available meter is used.
    std::optional<std::vector<unsigned>> gpus;  ///< NVML indices (empty: every GPU)
    bool rapl = false;
    bool jetson = false;
    std::optional<double> items;          ///< the work the command does, for items per joule
    std::chrono::milliseconds idle{500};  ///< idle baseline before the command (0: none)
    std::string json_file;                ///< a measurement file to write ("" none)
    // Labels recorded in the measurement file.
    std::string model, hardware, precision, mode, device;
    std::optional<long long> batch;
    meters::meter_options meter;
    /// Serve meter windows on request instead of running a command (serve_meters).
    bool serve = false;
};

/// What running a command gave.
struct command_result {
    bool started = false;
    int exit_status = 0;  ///< its exit status; 128 + signal when killed; 127/126 not started
    double duration_s = 0;
    std::string error;  ///< why it did not start
};

/// Runs `argv` (looked up in PATH, no shell) with the standard streams inherited; waits for it,
/// forwarding SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this process by another process
/// (a terminal's Ctrl-C reaches both already).
command_result run_command(const std::vector<std::string>& argv);

/// The command line as a POSIX shell would take it back: words quoted where they need it.
std::string shell_join(const std::vector<std::string>& argv);

/// `precision` as the measurement format spells it (fp32, tf32, fp16, bf16, int8, fp8); nnergy's
/// own names (float32, float16, bfloat16, ...) are accepted. Empty when it is neither.
std::string measurement_precision(const std::string& precision);

/// Runs options.command under the meters, prints the figures to `out` and writes the
/// measurement file. Returns the command's exit status. Throws nnergy::error before running
/// the command when a meter asked for is unavailable or the file cannot be written.
int run_measure(const measure_options& options, std::FILE* out = stderr);

/// `nnergy measure --serve`: opens the meters as run_measure does, then answers requests read
/// a line at a time from `in` with one JSON line each on `out` (docs/measure.md, "Serving
/// windows"): first a ready line naming the domains, then `begin` opens a window, `end` closes
/// it and gives its readings, `quit` or the end of input stops. A process that times its own
/// work reads its energy this way without running under `measure`. Returns 0 after `quit` or
/// the end of input; throws nnergy::error when a meter asked for is unavailable or a command
/// was given.
int serve_meters(const measure_options& options, std::istream& in, std::FILE* out);

}  // namespace nnergy
