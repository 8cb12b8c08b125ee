// SPDX-License-Identifier: Apache-2.0
/// \file calibrate.hpp
/// \brief `nnergy calibrate`: a hardware entry's fitted constants (op-class efficiency tables,
/// runtime dispatch costs, energy coefficients) refitted to measurement files, written as an
/// overlay of the entry (docs/calibrate.md); and the leave-one-out check of `nnergy validate
/// --leave-out`, which refits without each model or family and predicts it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <nnergy/framework/validate.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy {

/// A hardware constant that keeps the entry's ratio to a fitted one (`--tie FOLLOWER=LEADER`):
/// a coefficient scaled from another (a 16-bit unit's energy from the 32-bit one's) moves with
/// what it was scaled from instead of being fitted on its own.
struct tied_constant {
    std::string key, unit;   ///< unit: as written in the file it came from
    double unit_factor = 1;  ///< SI value per written value
    double initial = 0;      ///< SI, the entry's value
};

/// One constant a calibration may move.
struct calibration_parameter {
    /// Where it lives: a hardware key (`cpu.kernels.conv.efficiency`), or a runtime cost on
    /// this machine (`runtime.pytorch-eager-cpu.dispatch.per_kernel`, docs/hardware.md).
    std::string key;
    std::string unit;             ///< as written in the file it came from
    double unit_factor = 1;       ///< SI value per written value
    double initial = 0;           ///< SI, the entry's (or the runtime profile's) value
    double lower = 0, upper = 0;  ///< SI search bounds
    double fitted = 0;            ///< SI
    bool identified = false;     ///< moving it changes some estimate of the measured configurations
    bool at_bound = false;       ///< the fit ended at a search bound
    std::string origin;          ///< the file it was read from
    std::string runtime;         ///< the runtime profile a host cost belongs to; empty: hardware
    bool from_template = false;  ///< absent from the entry: added from the class's template
    /// A count (a tile size, a split depth) named by --fit, with --discrete-counts: it moves by
    /// factors of two (docs/calibrate.md, "How").
    bool discrete = false;
    /// A count the entry has at 0, which turns it off (no split of the reduction, no
    /// derating), named by --fit: the search may switch it on, starting from `on_value`, and
    /// off again.
    bool may_be_off = false;
    /// Where a count at 0 starts when switched on: the median of the positive values its key
    /// has in the entry's other tables (docs/calibrate.md, "What is fitted").
    double on_value = 0;
    /// Constants tied to this one: each is its initial value times fitted / initial.
    std::vector<tied_constant> followers;

    /// A follower's SI value when this constant is `value`: the entry's ratio kept; a count at
    /// 0 leads a follower at 0, which takes its value.
    double follower_value(const tied_constant& f, double value) const {
        return initial != 0 ? f.initial * value / initial : value;
    }
};

/// What a fit minimizes over the latencies and energies it is given.
enum class fit_objective {
    /// Root mean square of log(estimate / measurement): weighs the largest misses most.
    log_rms,
    /// Mean of |log(estimate / measurement)|: the log form of the mean absolute percentage
    /// error validate reports, less pulled by a few large misses.
    log_mean_abs,
    /// Root mean square of (estimate / measurement - 1): least squares on relative errors,
    /// where a factor too low weighs less than the same factor too high.
    relative_rms,
};

/// Which measured quantities the objective counts.
enum class fit_quantities {
    latency_and_energy,
    latency,
    /// Energies only: for energy coefficients, whose latency effect (through throttling at
    /// the power limit) is not what they are fitted to.
    energy,
};

/// What a fit minimizes, over what.
struct fit_goal {
    fit_objective objective = fit_objective::log_rms;
    fit_quantities quantities = fit_quantities::latency_and_energy;
};

/// "both", "latency" or "energy".
const char* fit_quantities_name(fit_quantities quantities);
/// The quantities of that name; none for another name.
std::optional<fit_quantities> fit_quantities_from_name(std::string_view name);

/// "log-rms", "log-mean-abs" or "relative-rms".
const char* fit_objective_name(fit_objective objective);
/// The objective of that name; none for another name.
std::optional<fit_objective> fit_objective_from_name(std::string_view name);

/// A tie: the follower keeps its ratio to the fitted leader and is not fitted on its own.
struct calibration_tie {
    std::string follower, leader;
    /// Where it was written, as errors name it: "--tie FOLLOWER=LEADER", or a recipe's
    /// "FILE:LINE: tie FOLLOWER=LEADER".
    std::string origin;
};

struct calibrate_options {
    validate_options validate;  ///< measurements, hardware, runtimes, models, dims
    /// Glob patterns (`*` matches any run of characters) of the keys to fit; empty: every
    /// continuous constant the entry marks as fitted (docs/calibrate.md).
    std::vector<std::string> fit;
    std::vector<std::string> fix;  ///< patterns of keys to keep, after `fit`
    std::vector<calibration_tie> ties;
    size_t max_sweeps = 200;
    fit_goal goal;
    /// Counts that `fit` names (tile sizes, split depths) move by factors of two instead of
    /// continuously (docs/calibrate.md, "How").
    bool discrete_counts = false;
};

/// A calibration written down as data (docs/calibrate.md, "Recipes"): what `calibrate
/// --recipe FILE` fits, before the command line's own options. Paths are resolved against the
/// recipe's folder; empty texts and lists were not given.
struct calibration_recipe {
    std::string hardware;                   ///< a catalog name, or a file (with overlays)
    std::vector<std::string> measurements;  ///< files
    std::string runs, fit_to, objective;    ///< as calibrate's --runs, --fit-to, --objective
    std::vector<std::string> fit, fix, dims, models;
    std::vector<calibration_tie> ties;    ///< in the order written
    std::optional<bool> discrete_counts;  ///< as --discrete-counts
};

/// Reads a recipe (schema "nnergy.calibration/1"); an unknown key, a value of the wrong kind
/// or an unknown choice is an error naming the file (and line).
calibration_recipe read_calibration_recipe(const std::filesystem::path& file);

/// The errors of one set of estimates, per mode.
struct calibration_errors {
    std::vector<validated_config> configs;
    std::vector<mode_summary> modes;
};

struct calibration_result {
    validation_result header;                       ///< hardware, files, skipped configurations
    std::vector<calibration_parameter> parameters;  ///< identified ones first, then the rest
    calibration_errors before, after;               ///< the entry as it is; as fitted
    fit_goal goal;
    double objective_before = 0, objective_after = 0;  ///< of the errors, as `goal`
    size_t evaluations = 0;                            ///< estimates of the whole set made
};

/// Whether `calibrate` fits `v` when no --fit names what to fit: a positive continuous
/// constant the entry marks as fitted (its source, or its `_provenance`), or one borrowed from
/// an entry that fitted it.
bool fitted_by_default(const config_values& hardware, const config_value& v);

/// The constants of the session's hardware entry (and of its runtime profiles' host costs) a
/// calibration moves, with bounds; `identified` is not yet known. Throws nnergy::error (usage)
/// when a `fit` pattern matches no constant.
std::vector<calibration_parameter> calibration_parameters(const validation_session& session,
                                                          const calibrate_options& options);

/// The hardware values with the parameters at `values` (SI, one per parameter).
config_values with_parameters(const config_values& hardware,
                              const std::vector<calibration_parameter>& parameters,
                              const std::vector<double>& values);

/// Fits `parameters` (starting at their `initial`) to the configurations `only` of the session
/// (all when null), minimizing the goal's objective over its quantities. Fills `fitted`,
/// `identified` and `at_bound`; returns the objective reached and counts evaluations into
/// `evaluations`.
double fit_parameters(const validation_session& session,
                      std::vector<calibration_parameter>& parameters,
                      const std::vector<size_t>* only, size_t max_sweeps, const fit_goal& goal,
                      size_t& evaluations);

/// Reads the files, fits, and reports the errors before and after.
calibration_result run_calibration(const calibrate_options& options);

/// The overlay file: `base` naming the entry (`base_ref` as given, a catalog name or a path
/// made relative to `output`'s folder), the fitted values with their provenance, and the
/// residuals per mode and model.
std::string calibration_overlay(const calibration_result& result, const std::string& base_ref,
                                const std::filesystem::path& output,
                                const std::string& command_line);

/// A readable summary: parameters before and after, MAPE per mode before and after.
std::string calibration_text(const calibration_result& result);

/// What `validate --leave-out` groups by: each model; each family (the model name's leading
/// letters: resnet18 and resnet50 are the family resnet); or each source, the model a run was
/// measured on or its op's shapes were taken from (leave_out_group).
enum class leave_out_unit { model, family, source };

/// "model", "family" or "source".
const char* leave_out_unit_name(leave_out_unit unit);
/// The unit of that name; none for another name.
std::optional<leave_out_unit> leave_out_unit_from_name(std::string_view name);

/// The group of a measured configuration under `unit`. A model run's source is its model; an op
/// run's is the first word of its `params.source` without a `_b<batch>` suffix ("resnet50_b64"
/// and "resnet50 fc" are resnet50). Empty: an op run that names no source, which is in no group
/// and so in every fit.
std::string leave_out_group(const measured_config& config, leave_out_unit unit);

/// The family of a model name: its leading ASCII letters, lowercased ("mobilenet_v2" ->
/// "mobilenet"); the whole name when it starts with no letter.
std::string model_family(const std::string& model);

struct leave_out_result {
    leave_out_unit unit = leave_out_unit::model;
    std::vector<std::string> groups;                ///< held out one at a time
    std::vector<calibration_parameter> parameters;  ///< as fitted on every group
    calibration_errors in_sample;                   ///< refitted on all, predicting all
    calibration_errors held_out;  ///< each configuration predicted by the fit without its group
    std::vector<std::vector<mode_summary>> held_out_per_group;  ///< the same, per group
    size_t evaluations = 0;
};

/// Refits on all configurations, then once without each group, predicting the group held
/// out. Needs two groups or more (invalid_input otherwise).
leave_out_result run_leave_out(const validation_session& session, const calibrate_options& options,
                               leave_out_unit unit);

/// `validate --leave-out`: runs run_leave_out and adds its summary to `v`, with the checks of
/// the held-out errors against `options`' --max-mape and --max-energy-mape limits and, when
/// `max_ratio` > 0, against max_ratio times each mode's in-sample MAPE.
void add_leave_out(validation_result& v, const validation_session& session,
                   const validate_options& options, const calibrate_options& fit,
                   leave_out_unit unit, double max_ratio);

}  // namespace nnergy
