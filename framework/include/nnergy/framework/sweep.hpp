// SPDX-License-Identifier: Apache-2.0
/// \file sweep.hpp
/// \brief `nnergy sweep`: the cartesian product of a pipeline's axes (models, dims, runtimes,
/// hardware, precisions), evaluated in parallel and streamed as CSV or JSON Lines, one row per
/// configuration (docs/cli.md, docs/pipelines.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nnergy/framework/evaluate.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nnergy {

enum class sweep_format { csv, jsonl };

/// One device of a sweep, its hardware file read.
struct sweep_device {
    std::string name;  ///< catalog name or path as written; unique within a sweep
    std::filesystem::path file;
    std::string plugin;    ///< architecture plugin; "auto": the one of the hardware's class
    config_values config;  ///< the [[architecture]] table's keys for the plugin
    config_values hardware;
    std::string hw_class;
    std::vector<std::string> precisions;  ///< requested, "all" expanded, each once
    source_location where;                ///< where the pipeline names it
};

/// One runtime of a sweep, its profile read.
struct sweep_runtime {
    std::string name;            ///< as written; "none" for no profile
    std::filesystem::path file;  ///< empty for "none"
    config_values values;
};

/// The axes of a sweep. A configuration picks one entry of each (a device with one of its
/// precisions).
struct sweep_axes {
    std::vector<std::filesystem::path> models;
    std::vector<std::string> model_names;  ///< relative to the pipeline's directory
    std::vector<std::string> dim_names;    ///< `batch` first, then by name: the dims columns
    std::vector<dim_bindings> bindings;    ///< the cross product of the dims' values
    std::vector<sweep_runtime> runtimes;
    std::vector<sweep_device> devices;
};

/// The axes of a pipeline: [sweep] where it gives one, else the pipeline's own single values
/// ([model] path, [model] dims with their arrays, [[architecture]] hardware and precision,
/// [runtime]). Reads every hardware file and runtime profile. Throws nnergy::error naming the
/// file and line of what is wrong.
sweep_axes sweep_axes_of(const pipeline_spec& spec);

struct sweep_config {
    uint32_t model = 0, runtime = 0, binding = 0, device = 0;
    nnergy_dtype precision = NNERGY_DTYPE_FLOAT32;
};

struct sweep_expansion {
    /// In order model, runtime, binding, device, precision: consecutive configurations share
    /// one bound and partitioned model. A configuration's index here is its `config` column.
    std::vector<sweep_config> configs;
    size_t skipped = 0;  ///< (device, precision) pairs the device does not offer, times the rest
};

sweep_expansion expand_sweep(const sweep_axes& axes);

/// What identifies a configuration across runs (--resume): model, hardware, precision, every
/// dim and runtime.
std::string sweep_key(const sweep_axes& axes, const sweep_config& c);

/// The outcome of one configuration: its totals, or the error that stopped it.
struct sweep_result {
    bool ok = true;
    std::string error;
    evaluation_totals totals;
};

/// Column names, in order: config, model, hardware, class, precision, the dims, runtime,
/// status, the totals with their units, error.
std::vector<std::string> sweep_columns(const sweep_axes& axes);

/// The CSV header line (with its newline); empty for JSON Lines, which has none.
std::string sweep_header(sweep_format format, const sweep_axes& axes);

/// One complete row, newline included: CSV (RFC 4180 quoting) or one JSON object.
std::string sweep_row(sweep_format format, const sweep_axes& axes, size_t index,
                      const sweep_config& c, const sweep_result& r);

/// A row read back from an output file: its key and the figures the summary ranks.
struct sweep_row_read {
    std::string key;
    bool ok = false;
    std::optional<double> latency_s, energy_j, edp_j_s, peak_memory_bytes, inferences_per_j;
};

struct sweep_output_read {
    std::vector<sweep_row_read> rows;
    /// Bytes up to the end of the last complete line: a row cut short (no newline) is not one.
    uint64_t complete_bytes = 0;
    bool has_header = false;  ///< CSV: the file starts with this sweep's header
};

/// Reads an output file written by a sweep of the same axes, for --resume. Throws
/// nnergy::error naming the file and line when it is not such a file (another header, a line
/// that is not a row).
sweep_output_read read_sweep_output(const std::filesystem::path& file, sweep_format format,
                                    const sweep_axes& axes);

/// Indices of the points no other point beats on both coordinates (lower is better), sorted by
/// the first coordinate; of equal points, the first.
std::vector<size_t> pareto_front(const std::vector<std::pair<double, double>>& points);

struct sweep_options {
    std::vector<std::filesystem::path> plugin_paths;
    unsigned jobs = 0;                   ///< 0: std::thread::hardware_concurrency()
    std::string output;                  ///< -o: overrides [sweep] output; "-": standard output
    std::optional<sweep_format> format;  ///< --format; default: by the output's extension
    bool resume = false;
    bool progress = true;  ///< a progress bar when standard error is a terminal
    std::string summary_json;
};

/// Runs the sweep of a pipeline, writing rows as they complete and a summary at the end.
/// Returns 0, 1 when a configuration failed (its row says why), or 130 when interrupted by
/// SIGINT (every row written is complete). Throws nnergy::error before any work on bad input.
int run_sweep(const pipeline_spec& spec, const sweep_options& options);

}  // namespace nnergy
