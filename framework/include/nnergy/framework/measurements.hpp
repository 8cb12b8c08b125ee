// SPDX-License-Identifier: Apache-2.0
/// \file measurements.hpp
/// \brief Reading measurement files (`nnergy.measurements/1`, docs/measurements.md): what was
/// measured on a real machine, for validation against estimates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nnergy {

/// One run of a measurement file: the keys a reader of whole-model runs needs. A key the run
/// does not give is empty.
struct measured_run {
    size_t index = 0;  ///< its position in the file's `runs` array
    std::string kind;  ///< model, op or command
    std::string name;
    std::string device, precision, mode;
    std::optional<int64_t> batch, threads;
    std::optional<double> latency_ms_median;
    /// The latency the run's timing method reports for a call with next to no device work
    /// (CUDA events around a single eager call time the host's path to the kernel too): a call
    /// the device finishes sooner is measured at about this floor.
    std::optional<double> latency_floor_ms;
    std::optional<double> flops, bytes;  ///< the work of one call as the file counts it
    std::string op_class;                ///< kind op: the op class the harness measured
    std::string params_json;  ///< kind op: its `params` object, as JSON text; empty otherwise
    /// Energy of one call per meter domain (`gpu0`, `package-0`, ...), in the file's order.
    std::vector<std::pair<std::string, double>> energy_j;
    /// Per meter domain that gives its mean power too: the time one call occupied the measured
    /// loop (energy per call over mean power), the calls' idle gaps included.
    std::vector<std::pair<std::string, double>> call_period_s;
};

struct measurement_file {
    std::filesystem::path path;
    std::string machine;  ///< machine.name
    std::vector<measured_run> runs;
};

/// Parses the text of a measurement file named `file` (for messages). Throws nnergy::error
/// (invalid_input) naming the file: text that is not JSON (with the parser's line and column),
/// another `schema`, a missing `machine.name` or `runs`, and a run whose key has another type
/// or range than docs/measurements.md gives (naming the run's index and the key).
measurement_file parse_measurements(const std::string& text, const std::filesystem::path& file);

/// Reads and parses a measurement file; a file that cannot be read is an error naming it.
measurement_file read_measurements(const std::filesystem::path& file);

}  // namespace nnergy
