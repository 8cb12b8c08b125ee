// SPDX-License-Identifier: Apache-2.0
/// \file validate.hpp
/// \brief `nnergy validate`: every measured whole-model configuration of measurement files
/// (docs/measurements.md) estimated on one hardware entry, with the signed errors and the mean
/// absolute percentage error (MAPE) per runtime mode (docs/validate.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nnergy/framework/measurements.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <optional>
#include <string>
#include <vector>

namespace nnergy {

/// One measured configuration: a (model, precision, batch, mode, device), its runs merged.
struct measured_config {
    std::string model, precision, mode, device;
    int64_t batch = 1;
    double latency_s = 0;              ///< the median of its runs' latency_ms_median
    std::optional<double> energy_j;    ///< the median of its runs' energies, where they have one
    std::vector<std::string> sources;  ///< "FILE run N", one per run
};

struct collect_options {
    /// Runs of one configuration whose latencies (or energies) differ by more than this share
    /// of the smaller are contradictory, an error; closer ones are repeats, merged.
    double duplicate_tolerance = 0.05;
    /// Meter domains whose energies are summed; empty: every domain a run has.
    std::vector<std::string> energy_domains;
};

struct collected_measurements {
    std::vector<measured_config> configs;  ///< in the order of their first run
    size_t other_runs = 0;                 ///< runs of kind op or command: not whole models
};

/// The whole-model runs (kind "model") of the files, one entry per configuration. A run
/// without `mode` is "eager". Throws nnergy::error (invalid_input) naming the file, the run
/// and the key for a model run without `batch`, `precision` or `latency_ms_median`, and naming
/// both runs for a configuration measured twice with results further apart than the tolerance.
collected_measurements collect_measured(const std::vector<measurement_file>& files,
                                        const collect_options& options);

/// A measured configuration with its estimate.
struct validated_config {
    measured_config measured;
    std::string runtime;  ///< the profile the mode ran under ("none": no profile)
    double predicted_latency_s = 0;
    std::optional<double> predicted_energy_j;

    double latency_error() const { return predicted_latency_s / measured.latency_s - 1; }
    /// Empty unless both the measurement and the estimate have an energy.
    std::optional<double> energy_error() const;
};

/// Configurations not validated, grouped by reason.
struct skipped_configs {
    std::string model, mode, reason;
    size_t configs = 0;
};

/// Absolute percentage errors of one metric in one mode.
struct error_summary {
    size_t count = 0;
    double mape = 0;         ///< percent
    size_t worst = 0;        ///< index into validation_result::configs
    double worst_error = 0;  ///< signed, percent
};

struct mode_summary {
    std::string mode, runtime;
    error_summary latency;
    std::optional<error_summary> energy;  ///< empty when no configuration has both energies
};

/// A threshold (--max-mape, --max-energy-mape) and how the mode fared.
struct threshold_check {
    std::string mode, metric;  ///< metric: "latency" or "energy"
    double max_mape = 0;
    std::optional<double> mape;  ///< empty: no configuration to compare in that mode
    bool passed() const { return mape && *mape <= max_mape; }
};

struct validation_result {
    std::string hardware, hw_class;
    std::filesystem::path hardware_file;
    std::vector<std::string> files;
    std::vector<validated_config> configs;  ///< by mode, model, precision, batch
    std::vector<skipped_configs> skipped;
    std::vector<mode_summary> modes;  ///< by mode
    std::vector<threshold_check> thresholds;
    size_t other_runs = 0;
};

/// Per mode: the MAPE and worst case of latency and, where measured and estimated, energy.
std::vector<mode_summary> summarize(const std::vector<validated_config>& configs);

struct validate_options {
    std::vector<std::filesystem::path> measurements;
    std::string hardware;  ///< a catalog name or a hardware file
    /// MODE -> runtime profile (a name in configs/runtimes, a file, or "none"), over the
    /// defaults of the hardware's class (docs/validate.md).
    std::map<std::string, std::string> runtimes;
    std::vector<std::filesystem::path> model_dirs;  ///< searched before the bundled models
    /// Per model ("" for every model that has the symbol): dims beside batch.
    std::map<std::string, dim_bindings> dims;
    std::map<std::string, double> max_mape, max_energy_mape;  ///< per mode, percent
    collect_options collect;
    std::vector<std::filesystem::path> plugin_paths;
};

/// The runtime profile of each mode that has a default for a class: GPUs run `eager` under
/// pytorch-eager and `cuda_graph` under cuda-graph, CPUs `eager` under pytorch-eager-cpu.
std::map<std::string, std::string> default_runtimes(const std::string& hw_class);

/// Reads the files, estimates every configuration and summarizes. Throws nnergy::error for a
/// bad file, hardware or runtime, and (invalid_input) when no configuration can be validated.
validation_result run_validation(const validate_options& options);

std::string validation_text(const validation_result& v);
std::string validation_markdown(const validation_result& v);
std::string validation_html(const validation_result& v);
std::string validation_json(const validation_result& v);  ///< schema nnergy.validation/1

}  // namespace nnergy
