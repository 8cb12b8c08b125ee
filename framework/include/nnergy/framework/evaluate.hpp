// SPDX-License-Identifier: Apache-2.0
/// \file evaluate.hpp
/// \brief The fast path of sweeps (`nnergy sweep`, `nnergy bench --sweep`): a model loaded once,
/// bound and partitioned once per (dims, runtime), then mapped and estimated on each (device,
/// precision) by plugin instances of its own thread, keeping only the totals.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/host_objects.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <nnergy/framework/registry.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace nnergy {

/// What evaluates a bound, partitioned model under one runtime profile: the resolved plugins
/// and their configurations. Shared, read-only, by every thread.
struct evaluation_plan {
    const component_entry* partitioner = nullptr;
    config_values partitioner_config;
    source_location partitioner_where;  ///< its pipeline table, if one names it
    struct estimator {
        const component_entry* entry = nullptr;
        config_values config;
        source_location where;  ///< its pipeline table, if one names it
    };
    std::vector<estimator> estimators;  ///< run in this order
    config_values runtime;              ///< the runtime profile, read (empty: none)
    std::filesystem::path base_dir;
};

/// The component of that kind and name in `reg`; throws nnergy::error (plugin_missing) naming
/// `where` and the available ones when there is none.
const component_entry& require_component(const registry& reg, nnergy_component_kind kind,
                                         const std::string& name, const source_location& where);

/// The plan of a pipeline's partitioner and estimators under one runtime profile (`runtime`,
/// read from `runtime_file`; both empty for none). Without a [partitioner] it is the fusion
/// partitioner with the bundled rules, without [[estimator]] tables the roofline, energy and
/// memory estimators (`defaults_where` names them in errors), as `analyze` runs them; a runtime
/// with its own fusion rules replaces the rules.
evaluation_plan plan_for_runtime(const registry& reg, const pipeline_spec& spec,
                                 const config_values& runtime, const std::string& runtime_name,
                                 const std::filesystem::path& runtime_file,
                                 const std::string& defaults_where);

/// One thread's instances of a plan's plugins: a plugin instance is never shared between
/// threads, so workers share only the loaded model and its bound, partitioned forms.
class evaluation_worker {
public:
    explicit evaluation_worker(const evaluation_plan& plan);

    component_instance& partitioner() noexcept { return partitioner_; }
    /// The instance of the plan's estimator `e` that the next evaluation runs (made anew first
    /// when forget_hardware() dropped it).
    const component_instance& estimator(size_t e);

    /// The architecture instance of device `device` (an index the caller chooses), created on
    /// first use from `entry`, its configuration and the device's hardware values; `where` is
    /// the pipeline table that names it, if any (component_instance).
    const component_instance& architecture(size_t device, const component_entry& entry,
                                           const config_values& config,
                                           const config_values& hardware,
                                           const source_location& where = {});
    /// The same with hardware values shared with the instance rather than copied into it.
    const component_instance& architecture(size_t device, const component_entry& entry,
                                           const config_values& config,
                                           const std::shared_ptr<const config_values>& hardware,
                                           const source_location& where = {});

    /// Drops the architecture instances, and creates the estimators anew before the next
    /// evaluation: for hardware values that change between evaluations (a calibration's
    /// candidates), since plugins may keep what they derived from the values they saw. An
    /// estimator built for ABI 1.9 or later is kept: it keys such caches by the hardware's
    /// identity, which the new architectures' values do not share.
    void forget_hardware();

    /// Maps every kernel on `architecture` at `precision`, then runs the plan's estimators,
    /// asking for the totals only (NNERGY_MAP_TOTALS_ONLY). The results are the worker's, valid
    /// until its next evaluation, which reuses their storage and the mappings' (no allocation per
    /// kernel once the first pass has run).
    const nnergy_results& evaluate(const component_instance& architecture, const bound_graph& g,
                                   const partition& p, nnergy_dtype precision);

private:
    /// Makes anew, after forget_hardware(), the estimators that may key caches on addresses.
    void refresh_estimators();

    const evaluation_plan& plan_;
    component_instance partitioner_;
    std::vector<std::unique_ptr<component_instance>> estimators_;
    bool estimators_stale_ = false;  ///< forget_hardware() was called since they were made
    std::unordered_map<size_t, std::unique_ptr<component_instance>> architectures_;
    std::vector<nnergy_mapping> mappings_;
    nnergy_results results_;
};

/// The totals of one evaluation that a sweep keeps. A figure no estimator wrote is empty.
struct evaluation_totals {
    std::optional<double> latency_s, energy_j, average_power_w, edp_j_s, peak_memory_bytes;
    std::optional<double> static_energy_j;   ///< the part of energy_j drawn over time
    std::optional<double> idle_power_w;      ///< what the device draws while no kernel runs
    std::optional<double> inferences_per_j;  ///< the bound batch (1 without one) per joule
    std::string fits;                        ///< the memory estimator's verdict, or empty
    double flops = 0, macs = 0, params = 0;
};

evaluation_totals totals_of(const nnergy_results& results, const bound_graph& g);

/// Why an estimate may not be a finite number, for the messages of analyze, sweep and validate.
inline constexpr std::string_view not_finite_cause =
    "the estimate left the range of a number (a count or factor of the description far outside "
    "any device's, or a fault of an estimator plugin)";

/// Throws an error (invalid input) when a total of `results` is not a finite number, naming the
/// total, the hardware file, the runtime profile (none: empty) and the first kernel with such a
/// number; the message is built only then (a sweep calls this for every configuration). Such a
/// total (a report would show null) comes from an estimator plugin's fault or a count or factor
/// far outside any device's (quantities with units are range-checked when a file is read): a run
/// never reports an unknown energy or latency.
void require_finite_totals(const nnergy_results& results, const partition& part,
                           const std::filesystem::path& hardware_file,
                           const std::filesystem::path& runtime_file);

namespace detail {
/// Calls body(context, t) for each t in [0, threads): t = 0 on the calling thread, the others on
/// threads kept from one call to the next. A calibration or a benchmark makes thousands of calls:
/// a new thread each time costs its start and the warming of its caches (the name pool's
/// included). A call made while another runs (from one of its bodies, or from another thread)
/// starts threads of its own, as does one the kept threads cannot serve; a forked child keeps
/// threads of its own, not its parent's. Returns once every body has returned. `body` must not
/// throw.
void run_on_threads(size_t threads, void (*body)(void* context, size_t t), void* context);
}  // namespace detail

/// Runs job(t, i) for every i in [0, count) on `threads` threads, t being the thread's number
/// (0: the calling thread), each thread taking the next index (jobs differ in cost). Threads
/// other than the caller are kept between calls (detail::run_on_threads). Dispatching stops
/// once `stop` reads true; jobs already started finish. The first exception a job throws is
/// rethrown after every thread has finished.
template <class Job>
void parallel_for(size_t threads, size_t count, Job job, const std::atomic<bool>* stop = nullptr) {
    std::atomic<size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    std::atomic<bool> failed{false};
    auto run = [&](size_t t) {
        for (size_t i = next++; i < count; i = next++) {
            if (failed || (stop && stop->load())) return;
            try {
                job(t, i);
            } catch (...) {
                std::lock_guard<std::mutex> lock(failure_mutex);
                if (!failure) failure = std::current_exception();
                failed = true;
            }
        }
    };
    detail::run_on_threads(
        threads, [](void* context, size_t t) { (*static_cast<decltype(run)*>(context))(t); }, &run);
    if (failure) std::rethrow_exception(failure);
}

/// parallel_for with one worker per thread: job(worker, i).
template <class Worker, class Job>
void parallel_for(std::vector<std::unique_ptr<Worker>>& workers, size_t count, Job job,
                  const std::atomic<bool>* stop = nullptr) {
    parallel_for(
        workers.size(), count, [&](size_t t, size_t i) { job(*workers[t], i); }, stop);
}

}  // namespace nnergy
