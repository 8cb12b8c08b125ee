// SPDX-License-Identifier: Apache-2.0
#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/evaluate.hpp>
#include <thread>
#include <vector>

namespace nnergy {

const component_entry& require_component(const registry& reg, nnergy_component_kind kind,
                                         const std::string& name, const source_location& where) {
    if (const component_entry* e = reg.find(kind, name)) return *e;
    throw error(fmt::format("{}: no {} plugin named '{}' (available: {})", where.str(),
                            kind_name(kind), name, reg.names_of(kind)),
                exit_code::plugin_missing);
}

evaluation_plan plan_for_runtime(const registry& reg, const pipeline_spec& spec,
                                 const config_values& runtime, const std::string& runtime_name,
                                 const std::filesystem::path& runtime_file,
                                 const std::string& defaults_where) {
    evaluation_plan p;
    const bool default_partitioner = spec.partitioner.plugin.empty();
    p.partitioner = default_partitioner
                        ? &require_component(reg, NNERGY_KIND_PARTITIONER,
                                             "nnergy.partitioner.fusion", {defaults_where, 0})
                        : &require_component(reg, NNERGY_KIND_PARTITIONER, spec.partitioner.plugin,
                                             spec.partitioner.where);
    p.partitioner_config = spec.partitioner.config;
    p.partitioner_where = spec.partitioner.where;
    if (default_partitioner && !find_value(runtime, "fusion_rules")) {
        config_value rules;
        rules.name = "rules";
        rules.kind = NNERGY_VALUE_STRING;
        rules.string_value = std::filesystem::absolute(default_fusion_rules()).string();
        rules.file = "default rules";
        p.partitioner_config.push_back(std::move(rules));
    }
    if (!runtime_file.empty())
        p.partitioner_config = partitioner_config_for_runtime(p.partitioner_config, runtime,
                                                              runtime_name, runtime_file);
    std::vector<component_spec> estimators = spec.estimators;
    if (estimators.empty())
        for (const char* name :
             {"nnergy.estimator.roofline", "nnergy.estimator.energy", "nnergy.estimator.memory"})
            estimators.push_back({name, {}, {defaults_where, 0}});
    for (const component_spec& e : estimators) {
        p.estimators.push_back(
            {&require_component(reg, NNERGY_KIND_ESTIMATOR, e.plugin, e.where), e.config, e.where});
    }
    p.runtime = runtime;
    p.base_dir = spec.base_dir;
    return p;
}

namespace {

std::unique_ptr<component_instance> estimator_of(const evaluation_plan& plan, size_t e) {
    const evaluation_plan::estimator& planned = plan.estimators[e];
    return std::make_unique<component_instance>(*planned.entry, planned.config, config_values{},
                                                plan.base_dir, plan.runtime, planned.where);
}

}  // namespace

evaluation_worker::evaluation_worker(const evaluation_plan& plan)
    : plan_(plan),
      partitioner_(*plan.partitioner, plan.partitioner_config, {}, plan.base_dir, {},
                   plan.partitioner_where) {
    for (size_t e = 0; e < plan.estimators.size(); ++e)
        estimators_.push_back(estimator_of(plan, e));
}

void evaluation_worker::refresh_estimators() {
    if (!estimators_stale_) return;
    for (size_t e = 0; e < plan_.estimators.size(); ++e)
        if (!estimators_[e]->keys_hardware_caches_by_identity())
            estimators_[e] = estimator_of(plan_, e);
    estimators_stale_ = false;
}

const component_instance& evaluation_worker::estimator(size_t e) {
    refresh_estimators();
    return *estimators_.at(e);
}

void evaluation_worker::forget_hardware() {
    architectures_.clear();
    // Made again when next used: a calibration's candidate often evaluates on few of the
    // workers (runtimes) it forgets the hardware of. An estimator that keys its hardware caches
    // by identity (ABI 1.9) stays: the next architectures name their values anew.
    estimators_stale_ = true;
}

const component_instance& evaluation_worker::architecture(size_t device,
                                                          const component_entry& entry,
                                                          const config_values& config,
                                                          const config_values& hardware,
                                                          const source_location& where) {
    // Copied only for an instance not made yet.
    if (const auto made = architectures_.find(device); made != architectures_.end() && made->second)
        return *made->second;
    return architecture(device, entry, config, std::make_shared<const config_values>(hardware),
                        where);
}

const component_instance& evaluation_worker::architecture(
    size_t device, const component_entry& entry, const config_values& config,
    const std::shared_ptr<const config_values>& hardware, const source_location& where) {
    std::unique_ptr<component_instance>& a = architectures_[device];
    if (!a)
        a = component_instance::sharing_hardware(entry, config, hardware, plan_.base_dir,
                                                 plan_.runtime, where);
    return *a;
}

const nnergy_results& evaluation_worker::evaluate(const component_instance& architecture,
                                                  const bound_graph& g, const partition& p,
                                                  nnergy_dtype precision) {
    // Sweeps keep the totals and read no advice: plugins may leave out explanations,
    // per-kernel breakdowns and advice.
    constexpr uint64_t flags = NNERGY_MAP_TOTALS_ONLY | NNERGY_MAP_NO_ADVICE;
    map_kernels(architecture, g, p, precision, mappings_, flags);
    results_.clear(p.kernels.size());
    refresh_estimators();
    for (const auto& e : estimators_)
        run_estimator(*e, architecture, g, p, mappings_, precision, results_, flags);
    return results_;
}

void require_finite_totals(const nnergy_results& results, const partition& part,
                           const std::filesystem::path& hardware_file,
                           const std::filesystem::path& runtime_file) {
    for (const auto& [key, value] : results.totals) {
        if (std::isfinite(value)) continue;
        // The kernel at fault is looked for only once a total is known not to be finite.
        std::string first;
        const size_t kernels = std::min(results.kernel_numbers.size(), part.kernels.size());
        for (size_t k = 0; k < kernels && first.empty(); ++k)
            for (const auto& [id, v] : results.kernel_numbers[k])
                if (!std::isfinite(v)) {
                    first = fmt::format(" (first at kernel '{}': {} = {})", part.kernels[k].name,
                                        results.kernel_keys.name(id), v);
                    break;
                }
        throw error(fmt::format("{}: the estimate's total {} is {}{}: {}",
                                runtime_file.empty()
                                    ? hardware_file.string()
                                    : fmt::format("{} (runtime profile {})", hardware_file.string(),
                                                  runtime_file.string()),
                                std::string_view(key), value, first, not_finite_cause));
    }
}

evaluation_totals totals_of(const nnergy_results& results, const bound_graph& g) {
    evaluation_totals t;
    // Pooled once: each total's key then compares by address.
    using detail::pooled_name;
    static const pooled_name latency = pooled_name::of("latency_s"),
                             energy = pooled_name::of("energy_j"),
                             power = pooled_name::of("average_power_w"),
                             edp = pooled_name::of("edp_j_s"),
                             memory = pooled_name::of("peak_memory_bytes"),
                             static_energy = pooled_name::of("static_energy_j"),
                             idle_power = pooled_name::of("idle_power_w");
    for (const auto& [k, v] : results.totals) {
        if (k == latency)
            t.latency_s = v;
        else if (k == energy)
            t.energy_j = v;
        else if (k == power)
            t.average_power_w = v;
        else if (k == edp)
            t.edp_j_s = v;
        else if (k == memory)
            t.peak_memory_bytes = v;
        else if (k == static_energy)
            t.static_energy_j = v;
        else if (k == idle_power)
            t.idle_power_w = v;
    }
    for (const auto& [k, v] : results.total_texts)
        if (k == "fits") t.fits = v;
    // Work per joule as the report computes it: the bound batch, or one inference.
    if (t.energy_j && *t.energy_j > 0) {
        const auto batch = g.bindings.find("batch");
        const double items = batch != g.bindings.end() ? static_cast<double>(batch->second) : 1.0;
        t.inferences_per_j = items / *t.energy_j;
    }
    for (const op_counts& c : g.counts) {
        t.macs += c.macs;
        t.flops += c.flops;
    }
    t.params = g.total_params;
    return t;
}

namespace detail {
namespace {

/// Threads that serve run_on_threads() one call at a time: thread n (from 1) takes part in a
/// call that wants n or more threads besides its caller, and otherwise waits.
class kept_threads {
public:
    /// Runs body on the caller and on `helpers` kept threads; false, having run nothing, when a
    /// call is already running or the threads cannot be started.
    bool try_run(size_t helpers, void (*body)(void*, size_t), void* context) {
        std::unique_lock<std::mutex> lock(mutex_);
        if (busy_) return false;
        try {
            while (started_ < helpers) {
                const size_t number = started_ + 1;
                std::thread(&kept_threads::serve, this, number).detach();
                ++started_;
            }
        } catch (...) {
            return false;  // too few threads: the caller starts its own (those started stay)
        }
        busy_ = true;
        body_ = body;
        context_ = context;
        wanted_ = helpers;
        remaining_ = helpers;
        ++call_;
        lock.unlock();
        wake_.notify_all();
        body(context, 0);
        lock.lock();
        finished_.wait(lock, [&] { return remaining_ == 0; });
        busy_ = false;
        return true;
    }

private:
    [[noreturn]] void serve(size_t number) {
        uint64_t served = 0;
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return call_ != served && number <= wanted_ && busy_; });
            served = call_;
            void (*const body)(void*, size_t) = body_;
            void* const context = context_;
            lock.unlock();
            body(context, number);
            lock.lock();
            if (--remaining_ == 0) finished_.notify_one();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_, finished_;
    size_t started_ = 0;  ///< threads serving calls, numbered 1 to started_
    bool busy_ = false;   ///< a call is running
    uint64_t call_ = 0;   ///< the running call's number, counted from 1
    size_t wanted_ = 0, remaining_ = 0;
    void (*body_)(void*, size_t) = nullptr;
    void* context_ = nullptr;
};

// This process's kept threads. Never destroyed, its threads never joined: they wait for calls
// until the process ends, and no exit path has to reach them. fork() copies the calling thread
// only: a child has none of the threads its copy counts, and perhaps a copy of the lock one of
// them held. It forgets that copy and starts threads of its own when it first needs some.
std::atomic<kept_threads*> kept_by_this_process{nullptr};

kept_threads& kept_threads_of_this_process() {
    static const int forget_in_child = ::pthread_atfork(
        nullptr, nullptr, [] { kept_by_this_process.store(nullptr, std::memory_order_relaxed); });
    (void)forget_in_child;
    kept_threads* kept = kept_by_this_process.load(std::memory_order_acquire);
    if (kept) return *kept;
    auto* made = new kept_threads;
    if (kept_by_this_process.compare_exchange_strong(kept, made, std::memory_order_acq_rel))
        return *made;
    delete made;  // another thread's came first
    return *kept;
}

}  // namespace

void run_on_threads(size_t threads, void (*body)(void*, size_t), void* context) {
    if (threads <= 1) {
        if (threads == 1) body(context, 0);
        return;
    }
    if (kept_threads_of_this_process().try_run(threads - 1, body, context)) return;
    // A number whose thread cannot be started runs on the caller after its own: its body then
    // finds the work taken, or does it, as any late thread would.
    std::vector<std::thread> started;
    std::vector<size_t> not_started;
    started.reserve(threads);
    not_started.reserve(threads);
    for (size_t t = 1; t < threads; ++t) {
        try {
            started.emplace_back(body, context, t);
        } catch (...) {
            not_started.push_back(t);
        }
    }
    body(context, 0);
    for (const size_t t : not_started) body(context, t);
    for (std::thread& t : started) t.join();
}

}  // namespace detail

}  // namespace nnergy
