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
#include <memory>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/measurements.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <optional>
#include <string>
#include <vector>

namespace nnergy {

/// One measured configuration: a (model, precision, batch, mode, device), its runs merged.
struct measured_config {
    /// A model's name; for an op run its label (op_runs.hpp: name and shape parameters).
    std::string model, precision, mode, device;
    int64_t batch = 1;
    std::string kind = "model";      ///< "model" or "op"
    std::string op_class;            ///< op runs: the class the harness measured
    std::string name;                ///< op runs: the op's name, as in the file
    std::string params_json;         ///< op runs: their params
    std::optional<int64_t> threads;  ///< the run's thread count, where it gives one
    double latency_s = 0;            ///< the median of its runs' latency_ms_median
    std::optional<double> energy_j;  ///< the median of its runs' energies, where they have one
    /// The median over its runs of the time one call occupied the measured loop (energy over
    /// mean power, averaged over the summed domains), where the runs give a mean power.
    std::optional<double> call_period_s;
    /// The median of its runs' latency_floor_ms, in seconds, where they give one: the
    /// prediction is the larger of the estimate and this floor.
    std::optional<double> latency_floor_s;
    std::vector<std::string> sources;  ///< "FILE run N", one per run
};

struct collect_options {
    /// Runs of one configuration whose latencies (or energies) differ by more than this share
    /// of the smaller are contradictory, an error; closer ones are repeats, merged.
    double duplicate_tolerance = 0.05;
    /// Meter domains whose energies are summed; empty: every domain a run has.
    std::vector<std::string> energy_domains;
    /// Runs of kind "op" too (single ops of the microbenchmark harness); otherwise they are
    /// counted in other_runs.
    bool include_ops = false;
    bool include_models = true;  ///< runs of kind "model" (false: counted in other_runs)
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
    std::string runtime;             ///< the profile the mode ran under ("none": no profile)
    double predicted_latency_s = 0;  ///< NaN when no estimator gave one (has_latency false)
    bool has_latency = false;
    /// Where the measurement has a timing floor and the estimate is below it: the estimate
    /// (predicted_latency_s is then the floor).
    std::optional<double> below_floor_latency_s;
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

/// The op runs of one mode and op class (the class the harness measured): which classes a
/// hardware entry's tables price well, and which not.
struct op_class_summary {
    std::string mode;  ///< as summary_mode(): "<mode> ops"
    std::string op_class;
    error_summary latency;
    std::optional<error_summary> energy;  ///< empty when no run of the class has both energies
};

/// A threshold (--max-mape, --max-energy-mape) and how the mode fared.
struct threshold_check {
    std::string mode, metric;  ///< metric: "latency" or "energy"
    double max_mape = 0;
    std::optional<double> mape;  ///< empty: no configuration to compare in that mode
    bool passed() const { return mape && *mape <= max_mape; }
};

/// `validate --leave-out`: the entry's fitted constants refitted on all configurations (in
/// sample) and once without each model, family or source, predicting the one left out
/// (docs/validate.md).
struct leave_out_summary {
    std::string unit;                     ///< "model", "family" or "source"
    std::vector<std::string> groups;      ///< left out one at a time
    std::vector<std::string> parameters;  ///< the constants refitted
    std::vector<validated_config> in_sample, held_out;
    std::vector<mode_summary> in_sample_modes, held_out_modes;
    /// The entry's own errors over the configurations held out in turn (with `source`, op runs
    /// that name none are never held out).
    std::vector<mode_summary> entry_modes;
    std::vector<std::vector<mode_summary>> held_out_per_group;  ///< in the order of `groups`
    /// What the refits counted (calibrate's --fit-to): "both", "latency" or "energy".
    std::string fitted_to;
};

struct validation_result {
    std::string hardware, hw_class;
    std::filesystem::path hardware_file;
    std::vector<std::string> files;
    std::vector<validated_config> configs;  ///< by mode, model, precision, batch
    std::vector<skipped_configs> skipped;
    std::vector<mode_summary> modes;           ///< by mode
    std::vector<op_class_summary> op_classes;  ///< op runs, by mode and class
    std::vector<threshold_check> thresholds;
    size_t other_runs = 0;
    std::optional<leave_out_summary> leave_out;
};

/// The mode a configuration is summarized under: its mode, "<mode> ops" for an op run.
std::string summary_mode(const measured_config& c);

/// Per mode: the MAPE and worst case of latency and, where measured and estimated, energy.
std::vector<mode_summary> summarize(const std::vector<validated_config>& configs);

/// The op runs among `configs` per mode and op class (by mode, then class; a run that names no
/// class is "-"), as summarize() gives them per mode.
std::vector<op_class_summary> summarize_op_classes(const std::vector<validated_config>& configs);

struct validate_options {
    std::vector<std::filesystem::path> measurements;
    std::string hardware;  ///< a catalog name or a hardware file
    /// The pipeline form (`validate PIPELINE MEASUREMENTS...`): its one [[architecture]] gives
    /// the hardware, the architecture plugin and its options, its [partitioner], [[estimator]]s,
    /// plugin search paths and [runtime] (for the measured mode the profile's mode names) are
    /// used; [model] and [[reporter]] are not (the measurements name the models). Replaces
    /// `hardware`.
    std::optional<pipeline_spec> pipeline;
    /// MODE -> runtime profile (a name in configs/runtimes, a file, or "none"), over the
    /// defaults of the hardware's class (docs/validate.md).
    std::map<std::string, std::string> runtimes;
    std::vector<std::filesystem::path> model_dirs;  ///< searched before the bundled models
    /// Per model: the input shapes of its TorchScript archive ("[NAME=]D0xD1x...", the leading
    /// number the batch; the measured batch replaces it).
    std::map<std::string, std::vector<std::string>> input_shapes;
    /// Per model ("" for every model that has the symbol): dims beside batch.
    std::map<std::string, dim_bindings> dims;
    std::map<std::string, double> max_mape, max_energy_mape;  ///< per mode, percent
    collect_options collect;
    std::vector<std::filesystem::path> plugin_paths;
    /// When set, each op run's graph is written there as a JSON graph, named after the run
    /// that first measured the configuration: `<file stem>-run-<N>.json` (docs/validate.md).
    std::filesystem::path graphs_dir;
};

/// The runtime profile of each mode that has a default for a class: GPUs run `eager` under
/// pytorch-eager and `cuda_graph` under cuda-graph, CPUs `eager` under pytorch-eager-cpu.
std::map<std::string, std::string> default_runtimes(const std::string& hw_class);

/// Measured configurations made ready to estimate: the files read and checked, the hardware,
/// runtime profiles and models resolved, each model bound at its batch and partitioned once.
/// predict() then estimates them on any hardware values, as often as a fit needs.
class validation_session {
public:
    /// Throws as run_validation does for a bad file, hardware, runtime or option.
    explicit validation_session(const validate_options& options);
    ~validation_session();
    validation_session(const validation_session&) = delete;
    validation_session& operator=(const validation_session&) = delete;

    /// The hardware entry's values, as read (an overlay merged onto its base).
    const config_values& hardware() const noexcept;
    /// hardware, hardware_file, hw_class, files, other_runs and the configurations skipped
    /// before estimation; no configs or summaries.
    const validation_result& header() const noexcept;
    size_t size() const noexcept;            ///< configurations ready to estimate
    size_t measured_count() const noexcept;  ///< measured configurations, skipped ones too
    const measured_config& measured(size_t i) const;
    /// Name and values of each runtime profile a ready configuration runs under.
    std::vector<std::pair<std::string, const config_values*>> runtimes() const;

    /// Estimates of configurations `only` (indices below size(); all when null), in that order,
    /// on hardware values `hardware`. A configuration no estimator gave a latency has a NaN
    /// predicted_latency_s. Throws nnergy::error naming the configuration a plugin failed on.
    /// Not for two threads at once: it is const to its callers, but each call recreates the
    /// session's evaluation workers' plugins for the hardware it is given.
    std::vector<validated_config> predict(const config_values& hardware,
                                          const std::vector<size_t>* only = nullptr) const;

private:
    struct state;
    std::unique_ptr<state> s_;
};

/// Orders configurations by mode, model, precision, batch and device, as reports list them.
void sort_configs(std::vector<validated_config>& configs);

/// Appends the --max-mape and --max-energy-mape checks of `options` to `v` (its modes summarized).
void check_thresholds(validation_result& v, const validate_options& options);

/// Estimates every configuration of a session with its entry's values and summarizes, with the
/// thresholds of `options`.
validation_result validate_session(const validation_session& session,
                                   const validate_options& options);

/// Reads the files, estimates every configuration and summarizes. Throws nnergy::error for a
/// bad file, hardware or runtime, and (invalid_input) when no configuration can be validated.
validation_result run_validation(const validate_options& options);

std::string validation_text(const validation_result& v);
/// The validation as a document (schema nnergy.validation/1, docs/validate.md) for the
/// reporters: the JSON reporter writes it as it is, the Markdown and HTML reporters as pages.
report_value validation_document(const validation_result& v);

}  // namespace nnergy
