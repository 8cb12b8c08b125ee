// SPDX-License-Identifier: Apache-2.0
/// \file pipeline.hpp
/// \brief Pipelines: which plugins to wire together, read from TOML (docs/pipelines.md), and
/// running them end to end.
#pragma once

#include <filesystem>
#include <map>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/report.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <optional>
#include <string>
#include <vector>

namespace nnergy {

struct component_spec {
    std::string plugin;
    config_values config;  ///< the table minus the keys the host consumes
    source_location where;
};

struct architecture_spec : component_spec {
    /// `plugin` may be "auto": the architecture of the hardware file's class (registry::
    /// architecture_for_class), chosen by run_pipeline once it reads the file.
    std::string hardware;  ///< as written: a catalog name or a path
    std::filesystem::path hardware_file;
    std::string precision = "float32";
    /// Where the plugin was named when that is not where the hardware was (the command line's
    /// --arch beside its --hw); an empty file means `where`.
    source_location plugin_where;
    const source_location& plugin_location() const noexcept {
        return plugin_where.file.empty() ? where : plugin_where;
    }
};

struct reporter_spec : component_spec {
    std::string output = "-";  ///< "-" is standard output
};

struct model_spec {
    std::string frontend;  ///< empty: chosen by file extension
    std::filesystem::path path;
    dim_bindings dims;
    /// Dimensions bound to several values (`batch = [1, 8, 64]`): one run per combination.
    std::map<std::string, std::vector<int64_t>, std::less<>> sweeps;
    config_values options;  ///< [model.options], given to the frontend
    source_location where;
};

/// The execution runtime ([runtime]): how the kernels are issued (eager, graph, fused).
struct runtime_spec {
    std::string profile;  ///< as written: a catalog name or a path
    std::filesystem::path file;
    source_location where;
};

/// One hardware entry of a sweep, resolved: a catalog name or a file.
struct sweep_hardware {
    std::string name;  ///< the catalog name, or the path as written
    std::filesystem::path file;
    source_location where;
};

/// [sweep]: the axes `nnergy sweep` crosses (docs/pipelines.md). An empty axis is taken from
/// the rest of the pipeline ([model] path, [model] dims, [[architecture]], [runtime]).
struct sweep_spec {
    std::vector<std::filesystem::path> models;
    std::vector<sweep_hardware> hardware;
    /// `batch` and `dims`: each name's values, replacing [model] dims of the same name.
    std::map<std::string, std::vector<int64_t>, std::less<>> dims;
    std::vector<std::string> precisions;  ///< canonical names, or "all"
    std::vector<runtime_spec> runtimes;   ///< an empty `file` is "none": no runtime profile
    std::string output;                   ///< resolved path, "-", or empty (not given)
    source_location where;
};

struct pipeline_spec {
    std::filesystem::path file;      ///< empty when built from the command line
    std::filesystem::path base_dir;  ///< relative paths resolve here
    std::vector<std::filesystem::path> search_paths;
    std::vector<std::filesystem::path> load;
    model_spec model;
    component_spec partitioner;
    std::vector<architecture_spec> architectures;
    std::vector<component_spec> estimators;
    std::vector<reporter_spec> reporters;
    std::optional<runtime_spec> runtime;
    /// [sweep]. With it, [partitioner] and [[estimator]] may be left out (the sweep's defaults),
    /// and so may [model] and [[architecture]] when the sweep names models and hardware.
    std::optional<sweep_spec> sweep;
};

/// What a pipeline file is read for: a run needs [model], [partitioner] and [[estimator]]
/// (unless a [sweep] supplies them); `validate` takes the models from measurements and the
/// default partitioner and estimators where the file has none.
enum class pipeline_use { run, validate };

/// Swept dimensions: one run per value.
using dim_sweeps = std::map<std::string, std::vector<int64_t>, std::less<>>;

/// Input shapes for frontends that need them (TorchScript): each "[NAME=]D0xD1x..." goes to the
/// frontend's options as input_shapes[i]. A number in an input's leading dim becomes the symbol
/// `batch` (the batch stays symbolic, so --batch and sweeps apply) and binds `batch` in `dims`
/// to that number unless `dims` or `sweeps` already has it (several inputs must agree). Throws
/// naming `where` on a bad entry.
void add_input_shapes(model_spec& model, const std::vector<std::string>& shapes,
                      const source_location& where, dim_bindings& dims,
                      const dim_sweeps& sweeps = {});

/// Parses and checks a pipeline file. Unknown keys, wrong types, missing files and missing
/// required keys are nnergy::error naming the file, line and key.
pipeline_spec parse_pipeline(const std::filesystem::path& file,
                             pipeline_use use = pipeline_use::run);

/// The report formats with a bundled reporter, by their short names (text, json, csv, ...).
std::vector<std::string> report_formats();

/// The reporter component for a format: a short name ("html", also "md") gives
/// nnergy.reporter.<name>; any other non-empty name is taken as a component name; an empty
/// format or "auto" is chosen by the output file's extension (.html, .csv, .md, .json,
/// .trace.json, .txt), text on standard output when the format is "auto". Empty when nothing
/// decides it.
std::string reporter_component(std::string_view format, std::string_view output);

/// Directories holding the bundled configs (hardware catalog, fusion rules, pipelines): the
/// installed share directory and the source tree's configs/ when run from a build tree.
std::vector<std::filesystem::path> config_dirs();

/// The first bundled config file at `relative` ("fusion/default.toml") in config_dirs(), or an
/// empty path when none has it.
std::filesystem::path find_config(const std::filesystem::path& relative);

/// The OVERLAY of a BASE+OVERLAY hardware reference, or nullopt when `ref` is one entry (a
/// catalog name, or a file, relative to base_dir, whose name may itself hold a '+').
std::optional<std::string> hardware_overlay_part(const std::string& ref,
                                                 const std::filesystem::path& base_dir);

/// Resolves a hardware reference: a path (relative to base_dir) or a catalog name looked up in
/// configs/hardware/<name>.toml. Throws listing the catalog when the name is unknown.
std::filesystem::path resolve_hardware(const std::string& ref,
                                       const std::filesystem::path& base_dir,
                                       const source_location& where);

/// Names of the hardware files in the catalog, sorted.
std::vector<std::string> hardware_catalog();

/// Resolves a runtime profile: a path or a name in configs/runtimes/<name>.toml.
std::filesystem::path resolve_runtime(const std::string& ref, const std::filesystem::path& base_dir,
                                      const source_location& where);

/// Names of the runtime profiles in the catalog, sorted.
std::vector<std::string> runtime_catalog();

/// The bundled fusion rules (configs/fusion/default.toml). Throws when they cannot be found.
std::filesystem::path default_fusion_rules();

/// The partitioner's configuration under a runtime profile: a runtime that launches the
/// kernels of its own fusion rules (`fusion_rules`) replaces the partitioner's `rules`; setting
/// both is an error naming them. `runtime` is the profile read from `runtime_file`.
config_values partitioner_config_for_runtime(const config_values& partitioner_config,
                                             const config_values& runtime,
                                             const std::string& profile,
                                             const std::filesystem::path& runtime_file);

struct run_options {
    std::vector<std::filesystem::path> plugin_paths;  ///< --plugin-path, searched first
    dim_bindings dims;                                ///< --dim, override the pipeline's
    /// Swept dimensions from the command line (--batch 1,8,64), replacing the pipeline's.
    std::map<std::string, std::vector<int64_t>, std::less<>> sweeps;
    bool strict = false;  ///< unknown ops are an error
    /// Symbols bound to a value when the model's inputs use them and neither the pipeline nor
    /// the options bind them (analyze and compare: batch=1), each with a warning saying so.
    dim_bindings default_dims;
    /// Called once every report is written, before run_pipeline tears down what it built (the
    /// graph, the report tree, the plugins): a command-line run may end the process here and
    /// leave that to the system (end_process_when_written).
    void (*when_written)() = nullptr;
};

/// For run_options::when_written in a command-line tool: flushes the standard streams and the
/// log, then ends the process with exit status 0 without freeing what the run built, which costs
/// more than the rest of a small model's run after its report is out. Under a sanitizer it does
/// nothing, so that leaks are still found.
void end_process_when_written();

/// Loads the plugins a pipeline needs into `reg` (search order of registry.hpp).
void load_plugins(registry& reg, const pipeline_spec& spec, const run_options& options);

/// Runs a pipeline: load, bind, partition, map, estimate, then every reporter. Returns the
/// report document. Throws nnergy::error on failure.
report_value run_pipeline(const pipeline_spec& spec, registry& reg, const run_options& options);

/// Writes report bytes to `output` (a file; "-" or empty: standard output). Throws
/// nnergy::error naming `who` and the file when it cannot be written.
void write_output(const std::string& bytes, const std::string& output, const std::string& who);
/// Writes what run_reporter returned: puts a streamed file in place, else writes the bytes.
void write_output(reporter_output& output, const std::string& who);

}  // namespace nnergy
