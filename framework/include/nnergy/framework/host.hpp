// SPDX-License-Identifier: Apache-2.0
/// \file host.hpp
/// \brief The host side of the plugin ABI: configuration values, component instances, and the
/// calls that drive each kind of component.
#pragma once

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nnergy/framework/partition.hpp>
#include <nnergy/framework/registry.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nnergy {

/// Where a setting came from, for error messages ("quickstart.toml:12").
struct source_location {
    std::string file;
    uint32_t line = 0;
    std::string str() const;
};

/// One flattened configuration value (owning twin of nnergy_named_value).
struct config_value {
    std::string name;
    nnergy_value_kind kind = NNERGY_VALUE_NULL;
    bool bool_value = false;
    int64_t int_value = 0;
    double float_value = 0;
    std::string string_value;
    std::string file;
    uint32_t line = 0;
    std::string source;        ///< hardware quantities: where the number comes from
    std::string unit;          ///< hardware quantities: the unit written in the file
    double written_value = 0;  ///< hardware quantities: the number as written, in `unit`
    /// Taken by a [[borrow]] table (docs/hardware.md, "Borrowed tables"): the entry it came from
    /// and the borrowing file's reason; `source`, `file` and `line` stay the lender's.
    std::string borrowed_from;
    std::string borrow_reason;
};
using config_values = std::vector<config_value>;

/// Reads a TOML file and flattens it (tables to dotted names, arrays to name[i]).
/// Throws nnergy::error naming the file and line on a parse error or a missing file.
config_values read_toml_file(const std::filesystem::path& file);

/// Reads a hardware description: every number must be {value, unit, source}; quantities are
/// converted to SI. Throws nnergy::error naming the file, line and key on any violation.
config_values read_hardware_file(const std::filesystem::path& file);

/// The magnitudes (SI) a non-zero quantity written in `unit` may have in a hardware or runtime
/// file, wider than any device's on both sides (docs/hardware.md); empty for unknown units.
std::optional<std::pair<double, double>> plausible_si_range(std::string_view unit);

/// The precisions a hardware description offers (a `compute.<precision>.peak`), widest first:
/// what `precision = "all"` sweeps over.
std::vector<std::string> hardware_precisions(const config_values& hardware);

/// Reads an execution-runtime profile (docs/pipelines.md): the same rules as a hardware file,
/// under schema "nnergy.runtime/1".
config_values read_runtime_file(const std::filesystem::path& file);

/// Reads a calibration template (configs/calibration/<class>.toml, docs/calibrate.md): the same
/// rules as a hardware file, under schema "nnergy.calibration/1".
config_values read_calibration_template(const std::filesystem::path& file);

const config_value* find_value(const config_values& values, std::string_view name) noexcept;

/// The C host API table of this process (nnergy_host_api).
const nnergy_host_api* host_api() noexcept;

/// A live component instance; keeps its library loaded; destroys the instance on destruction.
class component_instance {
public:
    /// Creates the instance. `base_dir` resolves relative paths the plugin asks the host to read.
    /// Throws nnergy::error (exit_code::failure) with the plugin's message when create fails.
    /// `runtime` is the pipeline's execution-runtime profile (architectures and estimators).
    /// `where` is the pipeline table that configured it: errors the plugin raises while it is
    /// created or driven (by the calls below) are told there (`pipeline.toml:21: ...`), unless
    /// it has no line (the command line chose the plugin) or the message already names the file.
    component_instance(const component_entry& entry, config_values config,
                       config_values hardware = {}, std::filesystem::path base_dir = {},
                       config_values runtime = {}, source_location where = {});
    /// The same with hardware values the caller shares with other instances rather than copies
    /// into each (a calibration creates one architecture per thread and hardware variant for
    /// every candidate it tries). They must not change while an instance holds them.
    static std::unique_ptr<component_instance> sharing_hardware(
        const component_entry& entry, config_values config,
        std::shared_ptr<const config_values> hardware, std::filesystem::path base_dir,
        config_values runtime, source_location where);
    ~component_instance();
    component_instance(const component_instance&) = delete;
    component_instance& operator=(const component_instance&) = delete;

    const component_entry& entry() const noexcept { return entry_; }
    void* self() const noexcept { return self_; }
    nnergy_host_context* context() const noexcept;
    const config_values& hardware() const noexcept;
    /// The hardware values as the ABI hands them to plugins (views into hardware()).
    const std::vector<nnergy_named_value>& hardware_views() const noexcept;
    /// The number estimators key what they derive from hardware_views() on (since ABI 1.9):
    /// new for every instance, so values written over an earlier candidate's get a new one.
    uint64_t hardware_identity() const noexcept;
    /// True when the plugin was built for ABI 1.9 or later: its caches of what it derives from
    /// the hardware are keyed by hardware_identity(), not by where the values lie, so it may
    /// outlive the hardware descriptions it estimated on.
    bool keys_hardware_caches_by_identity() const noexcept;
    const source_location& where() const noexcept { return where_; }

private:
    struct shared_hardware {};
    component_instance(shared_hardware, const component_entry& entry, config_values config,
                       std::shared_ptr<const config_values> hardware,
                       std::filesystem::path base_dir, config_values runtime,
                       source_location where);

    struct state;
    component_entry entry_;
    std::unique_ptr<state> state_;
    source_location where_;
    void* self_ = nullptr;
};

/// Loads a model through a frontend instance and finalizes it. Throws nnergy::error naming the
/// file on failure.
graph load_model(component_instance& frontend, const std::filesystem::path& path);

/// Runs a partitioner on a bound graph and finalizes its output.
partition run_partitioner(component_instance& partitioner, const bound_graph& g);

}  // namespace nnergy

struct nnergy_mapping;
struct nnergy_results;

namespace nnergy {

/// Maps every kernel of `p` through an architecture instance; one mapping per kernel.
/// Throws nnergy::error naming the architecture and kernel on failure.
std::vector<nnergy_mapping> map_kernels(const component_instance& architecture,
                                        const bound_graph& g, const partition& p,
                                        nnergy_dtype precision);
/// The same into `out`, whose mappings are cleared and reused (their storage kept): the form
/// for evaluating one model many times.
/// `flags` are nnergy_map_options' (NNERGY_MAP_TOTALS_ONLY for a caller that keeps totals only).
void map_kernels(const component_instance& architecture, const bound_graph& g, const partition& p,
                 nnergy_dtype precision, std::vector<nnergy_mapping>& out, uint64_t flags = 0);

/// Runs an estimator over mapped kernels, writing into `out` (sized to the kernel count).
void run_estimator(const component_instance& estimator, const component_instance& architecture,
                   const bound_graph& g, const partition& p,
                   const std::vector<nnergy_mapping>& mappings, nnergy_dtype precision,
                   nnergy_results& out, uint64_t flags = 0);

/// A report file written as the reporter produces it: into a temporary file beside it, put in
/// its place by commit() once the reporter has succeeded and removed otherwise, so that a
/// failing reporter leaves an earlier file as it was. A report held whole in memory until the
/// end costs its size twice over (the reporter's text and the host's copy): hundreds of
/// megabytes for a graph of a million nodes.
///
/// Standard output, a pipe or a device (`-o /dev/stdout`) has no place beside it: `in_place`
/// writes straight to it (standard output where the destination is empty), and a reporter that
/// fails part way has written part of its report there, as a command writing to a pipe does.
class pending_file {
public:
    enum class mode { beside, in_place };
    explicit pending_file(std::string destination, mode how = mode::beside);
    pending_file(const pending_file&) = delete;
    pending_file& operator=(const pending_file&) = delete;
    ~pending_file();
    /// Appends; throws nnergy::error naming the destination when it cannot be written.
    void write(std::string_view bytes);
    /// Puts the file in place (an empty one when nothing was written); throws nnergy::error
    /// naming it on failure.
    void commit();
    const std::string& destination() const noexcept { return destination_; }
    bool in_place() const noexcept { return how_ == mode::in_place; }

private:
    void open();
    /// "report file 'x'", or "the report to standard output", for messages.
    std::string described() const;
    std::string destination_;
    std::string temporary_;
    std::FILE* file_ = nullptr;
    mode how_ = mode::beside;
    bool committed_ = false;
};

/// Whether a report file at `path` can be streamed through a temporary file beside it: a regular
/// file or none yet. A device, pipe or link (-o /dev/stdout) is written in place.
bool streams_to_file(const std::string& path);

/// What a reporter wrote to one output; an empty path is standard output. A streamed file's
/// bytes are in `file`, not in `bytes`.
struct reporter_output {
    std::string path;
    std::string bytes;
    std::unique_ptr<pending_file> file;
};

/// Runs a reporter over a report document. `output` is the file it writes ("-" or empty:
/// standard output). Returns its own output first, then the companions it opened (ABI 1.4)
/// in the order it opened them. Nothing is written to disk unless `stream_files`: then the
/// files (not standard output) are written as the reporter goes, in temporary files that
/// write_output (pipeline.hpp) puts in place.
std::vector<reporter_output> run_reporter(component_instance& reporter,
                                          const ::nnergy_value& report, const std::string& output,
                                          bool stream_files = false);

}  // namespace nnergy
