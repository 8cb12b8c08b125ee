// SPDX-License-Identifier: Apache-2.0
// nnergy validate: measured whole-model configurations against estimates of the fast path of
// evaluate.hpp (the same plugins, plans and totals as `nnergy sweep`).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <nnergy/framework/calibrate.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/evaluate.hpp>
#include <nnergy/framework/json_graph_writer.hpp>
#include <nnergy/framework/model_zoo.hpp>
#include <nnergy/framework/op_runs.hpp>
#include <nnergy/framework/validate.hpp>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

namespace nnergy {
namespace {

/// How a configuration's hardware differs from the entry.
struct hardware_variant {
    int64_t units = 0;  ///< the cores its thread count allows (0: the entry's)
    /// For a single op, the runtime whose per-pass cost it does not pay (empty: none).
    std::string single_op_runtime;
    /// For a run of mode "device" (the kernels' time alone), the runtime whose gaps between
    /// kernels and per-pass device time it leaves out (empty: none).
    std::string device_time_runtime;
    bool operator==(const hardware_variant&) const = default;
};

/// What `--models DIR` finds for a measured model NAME, in order: NAME.onnx, NAME.json, then a
/// TorchScript archive (from index 2 on: its shapes come from --input-shape MODEL:SHAPE).
constexpr std::array<std::string_view, 5> model_extensions = {".onnx", ".json", ".pt", ".pth",
                                                              ".torchscript"};

/// "<file stem>-run-<N>.json" for the source "FILE run N" of an op configuration.
std::string op_graph_file_name(const std::string& source) {
    const size_t at = source.rfind(" run ");
    const std::string file = at == std::string::npos ? source : source.substr(0, at);
    const std::string run = at == std::string::npos ? "0" : source.substr(at + 5);
    return fmt::format("{}-run-{}.json", std::filesystem::path(file).stem().string(), run);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct pending {
    measured_config config;
    std::vector<std::pair<double, std::string>> latencies_ms, energies_j,
        floors_ms;  // value, source
    std::vector<double> call_periods_s;
};

std::string describe(const measured_config& c) {
    return fmt::format("{} {} batch {} {}{}{}", c.model, c.precision, c.batch, c.mode,
                       c.device.empty() ? "" : " on " + c.device,
                       c.kind == "op" && c.threads ? fmt::format(", {} threads", *c.threads) : "");
}

// Repeats of one configuration must agree within the tolerance; they name the two furthest
// apart otherwise.
void check_agreement(const pending& p, const std::vector<std::pair<double, std::string>>& values,
                     const char* what, const char* unit, double tolerance) {
    if (values.size() < 2) return;
    const auto [lo, hi] =
        std::minmax_element(values.begin(), values.end(),
                            [](const auto& a, const auto& b) { return a.first < b.first; });
    if (lo->first > 0 && hi->first / lo->first - 1 <= tolerance) return;
    throw error(fmt::format(
        "contradictory measurements of {}: {} has a {} of {:.6g} {}, {} has {:.6g} {} ({:.1f}% "
        "apart; repeats may differ by at most {:g}%, --duplicate-tolerance)",
        describe(p.config), lo->second, what, lo->first, unit, hi->second, hi->first, unit,
        lo->first > 0 ? 100 * (hi->first / lo->first - 1) : 100.0, 100 * tolerance));
}

}  // namespace

collected_measurements collect_measured(const std::vector<measurement_file>& files,
                                        const collect_options& options) {
    collected_measurements out;
    std::vector<pending> found;
    std::map<std::tuple<std::string, std::string, int64_t, std::string, std::string, int64_t>,
             size_t>
        index;
    for (const measurement_file& f : files) {
        for (const measured_run& r : f.runs) {
            // An op run is comparable when it timed a call at a batch and precision (the
            // converted peaks of a validation file carry rates only).
            const bool op = r.kind == "op" && options.include_ops && r.batch &&
                            !r.precision.empty() && r.latency_ms_median;
            if ((r.kind != "model" || !options.include_models) && !op) {
                ++out.other_runs;
                continue;
            }
            const std::string source = fmt::format("{} run {}", f.path.string(), r.index);
            const auto need = [&](bool present, const char* key) {
                if (!present)
                    throw error(fmt::format(
                        "{}: run {} ({} '{}'): missing '{}', which {} {} run "
                        "needs to be validated",
                        f.path.string(), r.index, r.kind, r.name, key, op ? "an" : "a", r.kind));
            };
            need(r.batch.has_value(), "batch");
            need(!r.precision.empty(), "precision");
            need(r.latency_ms_median.has_value(), "latency_ms_median");
            const std::string mode = r.mode.empty() ? "eager" : r.mode;
            std::optional<double> energy;
            const auto summed = [&](const std::string& domain) {
                const auto& d = options.energy_domains;
                return d.empty() || std::find(d.begin(), d.end(), domain) != d.end();
            };
            for (const auto& [domain, j] : r.energy_j)
                if (summed(domain)) energy = energy.value_or(0) + j;
            double period_sum = 0;
            size_t periods = 0;
            for (const auto& [domain, s] : r.call_period_s)
                if (summed(domain)) {
                    period_sum += s;
                    ++periods;
                }
            const std::string label = op ? op_run_label(r.name, r.params_json) : r.name;
            const auto key = std::make_tuple(label, r.precision, *r.batch, mode, r.device,
                                             r.threads.value_or(0));
            auto [it, added] = index.emplace(key, found.size());
            if (added) {
                pending p;
                p.config.model = label;
                p.config.kind = r.kind;
                p.config.op_class = r.op_class;
                p.config.name = r.name;
                p.config.params_json = r.params_json;
                p.config.threads = r.threads;
                p.config.precision = r.precision;
                p.config.batch = *r.batch;
                p.config.mode = mode;
                p.config.device = r.device;
                found.push_back(std::move(p));
            }
            pending& p = found[it->second];
            p.config.sources.push_back(source);
            p.latencies_ms.emplace_back(*r.latency_ms_median, source);
            if (r.latency_floor_ms) p.floors_ms.emplace_back(*r.latency_floor_ms, source);
            if (energy) p.energies_j.emplace_back(*energy, source);
            if (periods > 0) p.call_periods_s.push_back(period_sum / static_cast<double>(periods));
        }
    }
    for (pending& p : found) {
        check_agreement(p, p.latencies_ms, "median latency", "ms", options.duplicate_tolerance);
        check_agreement(p, p.energies_j, "energy per call", "J", options.duplicate_tolerance);
        check_agreement(p, p.floors_ms, "latency floor", "ms", options.duplicate_tolerance);
        // Repeats timed with and without a floor were not timed the same way.
        if (!p.floors_ms.empty() && p.floors_ms.size() != p.latencies_ms.size()) {
            const auto without =
                std::find_if(p.config.sources.begin(), p.config.sources.end(), [&](const auto& s) {
                    return std::none_of(p.floors_ms.begin(), p.floors_ms.end(),
                                        [&](const auto& f) { return f.second == s; });
                });
            throw error(fmt::format(
                "contradictory measurements of {}: {} gives a 'latency_floor_ms', {} does not; "
                "repeats of a configuration are timed the same way",
                describe(p.config), p.floors_ms.front().second, *without));
        }
        std::vector<double> v;
        for (const auto& [x, s] : p.latencies_ms) v.push_back(x);
        p.config.latency_s = median(v) / 1e3;
        v.clear();
        for (const auto& [x, s] : p.energies_j) v.push_back(x);
        if (!v.empty()) p.config.energy_j = median(v);
        if (!p.call_periods_s.empty()) p.config.call_period_s = median(p.call_periods_s);
        v.clear();
        for (const auto& [x, s] : p.floors_ms) v.push_back(x);
        if (!v.empty()) p.config.latency_floor_s = median(v) / 1e3;
        out.configs.push_back(std::move(p.config));
    }
    return out;
}

std::optional<double> validated_config::energy_error() const {
    if (!measured.energy_j || !predicted_energy_j || *measured.energy_j <= 0) return std::nullopt;
    return *predicted_energy_j / *measured.energy_j - 1;
}

std::string summary_mode(const measured_config& c) {
    return c.kind == "op" ? c.mode + " ops" : c.mode;
}

namespace {

/// The errors of `configs` grouped by key_of(config), in the keys' order; a configuration whose
/// key is empty is left out. `worst` indexes `configs`; `runtime` names every profile a group's
/// configurations ran under.
template <class Key, class KeyOf>
std::vector<std::pair<Key, mode_summary>> summarize_by(const std::vector<validated_config>& configs,
                                                       const KeyOf& key_of) {
    std::map<Key, mode_summary> by_key;
    std::map<Key, double> latency_sum, energy_sum;
    const auto add = [](error_summary& s, double& sum, size_t i, double error) {
        const double pct = 100 * error;
        if (s.count == 0 || std::fabs(pct) > std::fabs(s.worst_error)) {
            s.worst = i;
            s.worst_error = pct;
        }
        ++s.count;
        sum += std::fabs(pct);
    };
    std::map<Key, std::set<std::string>> runtimes_of;
    for (size_t i = 0; i < configs.size(); ++i) {
        const validated_config& c = configs[i];
        const Key key = key_of(c.measured);
        if (key == Key{}) continue;
        mode_summary& m = by_key[key];
        if (m.mode.empty()) m.mode = summary_mode(c.measured);
        // Op runs of one mode may take two variants of its profile (fp32 math): named both.
        runtimes_of[key].insert(c.runtime);
        add(m.latency, latency_sum[key], i, c.latency_error());
        if (const std::optional<double> e = c.energy_error()) {
            if (!m.energy) m.energy = error_summary{};
            add(*m.energy, energy_sum[key], i, *e);
        }
    }
    std::vector<std::pair<Key, mode_summary>> out;
    for (auto& [key, m] : by_key) {
        for (const std::string& r : runtimes_of[key])
            m.runtime += (m.runtime.empty() ? "" : ", ") + r;
        m.latency.mape = latency_sum[key] / static_cast<double>(m.latency.count);
        if (m.energy) m.energy->mape = energy_sum[key] / static_cast<double>(m.energy->count);
        out.emplace_back(key, std::move(m));
    }
    return out;
}

}  // namespace

std::vector<mode_summary> summarize(const std::vector<validated_config>& configs) {
    std::vector<mode_summary> out;
    for (auto& [mode, m] : summarize_by<std::string>(
             configs, [](const measured_config& c) { return summary_mode(c); }))
        out.push_back(std::move(m));
    return out;
}

std::vector<op_class_summary> summarize_op_classes(const std::vector<validated_config>& configs) {
    using key = std::pair<std::string, std::string>;  // (mode, op class)
    std::vector<op_class_summary> out;
    for (auto& [k, m] : summarize_by<key>(configs, [](const measured_config& c) {
             return c.kind == "op" ? key{summary_mode(c), c.op_class.empty() ? "-" : c.op_class}
                                   : key{};
         }))
        out.push_back({k.first, k.second, m.latency, m.energy});
    return out;
}

std::map<std::string, std::string> default_runtimes(const std::string& hw_class) {
    // A profiler's device time is the graph-mode profile's kernels without the gaps between
    // them (hardware_variant::device_time_runtime).
    if (hw_class == "gpu")
        return {{"eager", "pytorch-eager"}, {"cuda_graph", "cuda-graph"}, {"device", "cuda-graph"}};
    if (hw_class == "cpu") return {{"eager", "pytorch-eager-cpu"}};
    return {};
}

namespace {

/// A runtime profile with its plan, and the worker that partitions under it.
struct runtime_state {
    std::string id;     ///< the session's key: the profile, or a variant of it
    std::string name;   ///< the profile's own name (runtime.<name>.* hardware keys)
    std::string label;  ///< what reports call it: the name, and a variant's difference
    std::filesystem::path file;
    config_values values;
    std::unique_ptr<evaluation_plan> plan;
    std::unique_ptr<evaluation_worker> worker;
    /// The workers of predict()'s further threads (an estimator or partitioner instance is
    /// never shared between threads), made on first use.
    std::vector<std::unique_ptr<evaluation_worker>> more_workers;
    /// Per hardware variant, the architecture one prediction's threads share (map_kernel may run
    /// on several threads at once on one instance, docs/abi.md §8): a candidate then creates
    /// one architecture per variant instead of one per thread. Made on first use.
    struct shared_architecture {
        std::mutex making;
        std::unique_ptr<component_instance> instance;
    };
    std::vector<std::unique_ptr<shared_architecture>> architectures;

    /// Variant `v`'s architecture, made from `hardware` by the first thread that asks.
    const component_instance& architecture(size_t v, const component_entry& entry,
                                           const config_values& config,
                                           const std::shared_ptr<const config_values>& hardware,
                                           const source_location& where) {
        shared_architecture& a = *architectures.at(v);
        std::lock_guard<std::mutex> lock(a.making);
        if (!a.instance)
            a.instance = component_instance::sharing_hardware(entry, config, hardware,
                                                              plan->base_dir, plan->runtime, where);
        return *a.instance;
    }
};

struct model_state {
    std::filesystem::path file;
    std::unique_ptr<graph> g;
    std::vector<std::string> symbols;
    std::string error;  ///< why it cannot be validated
};

/// A configuration ready to estimate: its model bound at its batch and partitioned.
struct prepared_config {
    measured_config measured;
    runtime_state* runtime = nullptr;
    size_t variant = 0;  ///< index into the session's hardware variants
    std::shared_ptr<const bound_graph> bound;
    std::shared_ptr<const partition> part;
    nnergy_dtype dtype{};
};

/// Makes `to` hold `from`. Where `to` starts with `from`'s keys in their order (an earlier copy
/// of the same entry with other values, a variant's additions after them), the values are
/// written over it, strings only where they differ; otherwise it becomes a copy. Every member
/// of config_value is written.
void overwrite_values(config_values& to, const config_values& from) {
    bool same_keys = to.size() >= from.size();
    for (size_t i = 0; same_keys && i < from.size(); ++i) same_keys = to[i].name == from[i].name;
    if (!same_keys) {
        to = from;
        return;
    }
    to.resize(from.size());  // a variant's additions are made again
    for (size_t i = 0; i < from.size(); ++i) {
        config_value& t = to[i];
        const config_value& f = from[i];
        t.kind = f.kind;
        t.bool_value = f.bool_value;
        t.int_value = f.int_value;
        t.float_value = f.float_value;
        t.line = f.line;
        t.written_value = f.written_value;
        for (std::string config_value::*text :
             {&config_value::string_value, &config_value::file, &config_value::source,
              &config_value::unit, &config_value::borrowed_from, &config_value::borrow_reason})
            if (t.*text != f.*text) t.*text = f.*text;
    }
}

/// Plugins' warnings (a peak that does not fit) would repeat per configuration: errors only
/// while estimating, the level restored after.
struct quiet_plugins {
    spdlog::level::level_enum level = spdlog::get_level();
    quiet_plugins() {
        if (level >= spdlog::level::warn) spdlog::set_level(spdlog::level::err);
    }
    ~quiet_plugins() { spdlog::set_level(level); }
    quiet_plugins(const quiet_plugins&) = delete;
    quiet_plugins& operator=(const quiet_plugins&) = delete;
};

}  // namespace

struct validation_session::state {
    validation_result header;
    config_values hw;
    registry reg;
    const component_entry* arch_entry = nullptr;
    config_values arch_config;   ///< the pipeline's [[architecture]] options (none with --hw)
    source_location arch_where;  ///< the pipeline's [[architecture]] table (none with --hw)
    std::map<std::string, runtime_state> runtimes;
    std::map<std::string, model_state> models;
    std::vector<prepared_config> configs;
    size_t measured_count = 0;
    double entry_units = 0;  ///< compute.units of the entry (0: not given)
    /// How configurations' hardware differs from the entry. Index 0 is the entry as it is.
    std::vector<hardware_variant> variants{hardware_variant{}};
    /// Each variant's hardware values as the last prediction built them (predict()).
    std::vector<std::shared_ptr<config_values>> variant_values;
    /// Said once per session (a calibration predicts the same runs again and again).
    std::atomic<bool> warned_no_idle_power{false};
};

validation_session::~validation_session() = default;

validation_session::validation_session(const validate_options& o) : s_(std::make_unique<state>()) {
    if (o.measurements.empty())
        throw error("validate: no measurement file given", exit_code::usage);
    std::vector<measurement_file> files;
    for (const auto& p : o.measurements) files.push_back(read_measurements(p));
    if (!o.graphs_dir.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(o.graphs_dir, ec);
        if (ec)
            throw error(fmt::format("--write-graphs {}: cannot create the directory: {}",
                                    o.graphs_dir.string(), ec.message()));
    }
    const collected_measurements measured = collect_measured(files, o.collect);
    if (measured.configs.empty()) {
        std::string names;
        for (const auto& f : files) names += (names.empty() ? "" : ", ") + f.path.string();
        throw error(fmt::format("nothing to validate: no run of kind \"model\" in {}", names));
    }

    validation_result& v = s_->header;
    s_->measured_count = measured.configs.size();
    v.other_runs = measured.other_runs;
    for (const auto& f : files) v.files.push_back(f.path.string());
    pipeline_spec spec;
    spec.base_dir = std::filesystem::current_path();
    source_location hw_where{"--hw", 0};
    const architecture_spec* pipeline_arch = nullptr;
    if (o.pipeline) {
        spec = *o.pipeline;
        const std::string file = spec.file.string();
        if (spec.architectures.size() != 1)
            throw error(fmt::format("{}: validate takes a pipeline with one [[architecture]] (the "
                                    "hardware the measurements are compared with); it has {}",
                                    file, spec.architectures.size()),
                        exit_code::usage);
        if (spec.sweep)
            throw error(fmt::format("{}: validate takes no [sweep] pipeline: the measurements give "
                                    "the models, batches and precisions",
                                    file),
                        exit_code::usage);
        if (!spec.model.path.empty() || !spec.reporters.empty())
            spdlog::warn(
                "{}: validate does not use [model] or [[reporter]]: the measurements name "
                "the models, and validate writes its own report (--format, -o)",
                file);
        pipeline_arch = &spec.architectures.front();
        hw_where = pipeline_arch->where;
        v.hardware = pipeline_arch->hardware;
        v.hardware_file = pipeline_arch->hardware_file;
    } else {
        v.hardware = o.hardware;
        v.hardware_file = resolve_hardware(o.hardware, spec.base_dir, hw_where);
    }
    s_->hw = read_hardware_file(v.hardware_file);
    const config_values& hw = s_->hw;
    if (const config_value* c = find_value(hw, "class"); c && c->kind == NNERGY_VALUE_STRING)
        v.hw_class = c->string_value;
    // A file measured on another catalog machine is most likely a mistake, but not surely one.
    const std::string hw_name = [&] {
        const config_value* n = find_value(hw, "name");
        return n ? n->string_value : v.hardware;
    }();
    const std::vector<std::string> catalog = hardware_catalog();
    for (const measurement_file& f : files)
        if (f.machine != v.hardware && f.machine != hw_name &&
            std::find(catalog.begin(), catalog.end(), f.machine) != catalog.end())
            spdlog::warn("{}: measured on '{}', validated against '{}'", f.path.string(), f.machine,
                         v.hardware);

    const double entry_units = s_->entry_units = [&] {
        const config_value* u = find_value(hw, "compute.units");
        return u ? (u->kind == NNERGY_VALUE_INT ? static_cast<double>(u->int_value)
                                                : u->float_value)
                 : 0.0;
    }();

    registry& reg = s_->reg;
    run_options ro;
    ro.plugin_paths = o.plugin_paths;
    load_plugins(reg, spec, ro);
    s_->arch_entry = &require_component(
        reg, NNERGY_KIND_ARCHITECTURE,
        pipeline_arch ? pipeline_arch->plugin : reg.architecture_for_class(v.hw_class), hw_where);
    if (pipeline_arch) {
        s_->arch_config = pipeline_arch->config;
        s_->arch_where = pipeline_arch->where;
    }

    // Every profile is resolved before any work, so a typo fails first.
    std::map<std::string, std::string> profile_of = default_runtimes(v.hw_class);
    if (o.pipeline && o.pipeline->runtime) {
        // The pipeline's profile stands for the measured mode its own mode names.
        const runtime_spec& r = *o.pipeline->runtime;
        const config_values values = read_runtime_file(r.file);
        const config_value* m = find_value(values, "mode");
        const std::string kind = m ? m->string_value : "";
        static const std::map<std::string, std::string> measured_mode{{"eager", "eager"},
                                                                      {"inline", "eager"},
                                                                      {"graph", "cuda_graph"},
                                                                      {"fused", "compiled"}};
        const auto it = measured_mode.find(kind);
        if (it == measured_mode.end())
            throw error(fmt::format("{}: [runtime] {}: its mode '{}' names no measured mode "
                                    "(eager, graph, inline or fused); give --runtime MODE=PROFILE",
                                    r.where.str(), r.profile, kind),
                        exit_code::usage);
        profile_of[it->second] = r.file.string();
    }
    for (const auto& [mode, profile] : o.runtimes) profile_of[mode] = profile;
    std::map<std::string, runtime_state>& runtimes = s_->runtimes;
    for (const auto& [mode, profile] : profile_of) {
        if (runtimes.count(profile)) continue;
        runtime_state& rt = runtimes[profile];
        rt.id = profile;
        rt.name = profile;
        if (profile != "none") {
            rt.file = resolve_runtime(profile, spec.base_dir, {"--runtime", 0});
            rt.values = read_runtime_file(rt.file);
            if (const config_value* n = find_value(rt.values, "name")) rt.name = n->string_value;
        }
        rt.label = rt.name;
        rt.plan = std::make_unique<evaluation_plan>(
            plan_for_runtime(reg, spec, rt.values, profile, rt.file, "default pipeline"));
        rt.worker = std::make_unique<evaluation_worker>(*rt.plan);
    }

    // The harness's fp32 op runs turn TF32 off for convolutions and matrix products alike
    // (docs/microbench.md), where a model's fp32 keeps its runtime's math (PyTorch lets cuDNN
    // use TF32): such runs take a variant of their profile with every math mode float32.
    const auto runtime_for = [&](const measured_config& c,
                                 const std::string& profile) -> runtime_state& {
        runtime_state& rt = runtimes.at(profile);
        if (c.kind != "op" || c.precision != "fp32") return rt;
        bool tf32 = false;
        for (const config_value& x : rt.values)
            tf32 |= x.name.starts_with("math.") && x.string_value == "tfloat32";
        if (!tf32) return rt;
        const std::string strict_name = profile + " (fp32 math)";
        auto [it, added] = runtimes.try_emplace(strict_name);
        runtime_state& strict = it->second;
        if (added) {
            strict.id = strict_name;
            strict.name = rt.name;
            strict.label = rt.name + " (fp32 math)";
            strict.file = rt.file;
            strict.values = rt.values;
            for (config_value& x : strict.values)
                if (x.name.starts_with("math.") && x.string_value == "tfloat32")
                    x.string_value = "float32";
            strict.plan = std::make_unique<evaluation_plan>(plan_for_runtime(
                reg, spec, strict.values, profile, strict.file, "default pipeline"));
            strict.worker = std::make_unique<evaluation_worker>(*strict.plan);
        }
        return strict;
    };

    std::map<std::string, model_state>& models = s_->models;
    const auto model = [&](const measured_config& c) -> model_state& {
        const std::string& name = c.model;
        // An op run's graph has its batch and its tensors' type built in: one per batch and
        // storage type. The harness casts a 16-bit run's inputs and weights before it times the
        // op, so its graph holds them in that type (no cast per call, unlike autocast).
        nnergy_dtype storage = NNERGY_DTYPE_FLOAT32;
        if (const std::optional<nnergy_dtype> d = dtype_from_name(c.precision);
            d && (*d == NNERGY_DTYPE_FLOAT16 || *d == NNERGY_DTYPE_BFLOAT16))
            storage = *d;
        auto [it, added] = models.try_emplace(
            c.kind == "op" ? fmt::format("{}@batch={}@{}", name, c.batch, dtype_name(storage))
                           : name);
        model_state& m = it->second;
        if (!added) return m;
        if (c.kind == "op") {
            try {
                m.g = std::make_unique<graph>(
                    op_run_graph(c.name, c.op_class, c.params_json, c.batch, storage));
            } catch (const std::exception& e) {
                m.error = e.what();
            }
            return m;
        }
        // A name the file system cannot hold (too long, say) is a model not found, not a fault.
        std::error_code unreadable;
        for (const auto& dir : o.model_dirs)
            for (std::string_view ext : model_extensions)
                if (m.file.empty() &&
                    std::filesystem::is_regular_file(dir / (name + std::string(ext)), unreadable))
                    m.file = dir / (name + std::string(ext));
        if (m.file.empty())
            if (const std::optional<zoo_model> z = find_zoo_model(name)) m.file = z->file;
        if (m.file.empty()) {
            std::string dirs;
            for (const auto& dir : o.model_dirs)
                dirs += fmt::format("{}{}", dirs.empty() ? "" : ", ", dir.string());
            m.error = fmt::format(
                "no model '{}': {}not a bundled model (nnergy models)", name,
                dirs.empty() ? ""
                             : fmt::format("no {0}.onnx, {0}.json or {0}.pt in {1}; ", name, dirs));
            return m;
        }
        try {
            const component_entry* fe = reg.frontend_for(m.file);
            if (!fe)
                throw error(fmt::format("{}: no frontend reads this file (frontends: {})",
                                        m.file.string(), reg.names_of(NNERGY_KIND_FRONTEND)));
            // A TorchScript archive keeps no shapes: --input-shape MODEL:SHAPE gives them (the
            // measured batch binds its batch).
            model_spec shapes;
            if (const auto s = o.input_shapes.find(name); s != o.input_shapes.end()) {
                dim_bindings unused;
                add_input_shapes(shapes, s->second, {"--input-shape", 0}, unused);
            }
            component_instance inst(*fe, shapes.options, {}, spec.base_dir);
            m.g = std::make_unique<graph>(load_model(inst, m.file));
            m.symbols = symbols_of(*m.g);
        } catch (const std::exception& e) {
            m.error = e.what();
            // An archive without shapes: the frontend's hint names analyze's form, and
            // validate scopes shapes by model.
            const std::string ext = m.file.extension().string();
            if (!o.input_shapes.count(name) &&
                std::find(model_extensions.begin() + 2, model_extensions.end(), ext) !=
                    model_extensions.end())
                m.error += fmt::format(" (validate: --input-shape {}:SHAPE, once per input)", name);
        }
        return m;
    };

    const auto skip = [&](const measured_config& c, const std::string& reason) {
        // Op runs are many: grouped by reason alone.
        const std::string what = c.kind == "op" ? std::string("op runs") : c.model;
        for (skipped_configs& s : v.skipped)
            if (s.model == what && s.mode == c.mode && s.reason == reason) {
                ++s.configs;
                return;
            }
        v.skipped.push_back({what, c.mode, reason, 1});
    };

    // One bind and partition per (model, runtime, batch): the configurations sorted so.
    std::vector<size_t> order(measured.configs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto key = [&](size_t i) {
        const measured_config& c = measured.configs[i];
        const auto rt = profile_of.find(c.mode);
        return std::make_tuple(c.model, rt == profile_of.end() ? std::string() : rt->second,
                               c.batch, c.precision, c.mode, c.device);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return key(a) < key(b); });

    std::tuple<std::string, std::string, int64_t> bound_key;
    std::shared_ptr<const bound_graph> bound;
    std::shared_ptr<const partition> part;
    std::string bound_error;
    std::set<std::string> unknown_warned;
    std::vector<std::string> notes;  // warned once the plugins' level is back
    auto quiet = std::make_optional<quiet_plugins>();
    for (size_t i : order) {
        const measured_config& c = measured.configs[i];
        const bool cpu_device = c.device == "cpu" || c.device.starts_with("cpu:");
        const bool gpu_device = c.device.starts_with("cuda") || c.device.starts_with("gpu");
        if ((cpu_device && v.hw_class != "cpu") || (gpu_device && v.hw_class != "gpu")) {
            skip(c, fmt::format("measured on device '{}'; the hardware is a {}", c.device,
                                v.hw_class.empty() ? "device without a class" : v.hw_class));
            continue;
        }
        const auto profile = profile_of.find(c.mode);
        if (profile == profile_of.end()) {
            skip(c, fmt::format("no runtime profile for mode '{}' on a {} (--runtime {}=PROFILE)",
                                c.mode, v.hw_class, c.mode));
            continue;
        }
        const std::optional<nnergy_dtype> dtype = dtype_from_name(c.precision);
        if (!dtype || !find_value(hw, fmt::format("compute.{}.peak", dtype_name(*dtype)))) {
            skip(c, fmt::format("the hardware offers no {}",
                                dtype ? std::string(dtype_name(*dtype)) : c.precision));
            continue;
        }
        model_state& m = model(c);
        if (!m.error.empty()) {
            skip(c, m.error);
            continue;
        }
        if (!o.graphs_dir.empty() && c.kind == "op" && !c.sources.empty())
            write_json_graph_file(*m.g, o.graphs_dir / op_graph_file_name(c.sources.front()));
        runtime_state& rt = runtime_for(c, profile->second);
        const auto this_key = std::make_tuple(c.model, rt.id, c.batch);
        if (!bound || this_key != bound_key || !bound_error.empty()) {
            bound_key = this_key;
            bound.reset();
            part.reset();
            bound_error.clear();
            dim_bindings b;
            if (const auto all = o.dims.find(""); all != o.dims.end())
                for (const auto& [name, value] : all->second)
                    if (std::find(m.symbols.begin(), m.symbols.end(), name) != m.symbols.end())
                        b[name] = value;
            if (const auto own = o.dims.find(c.model); own != o.dims.end())
                for (const auto& [name, value] : own->second) b[name] = value;
            b["batch"] = c.batch;
            try {
                auto bg = std::make_shared<bound_graph>(nnergy::bind(*m.g, b));
                part = std::make_shared<partition>(run_partitioner(rt.worker->partitioner(), *bg));
                bound = std::move(bg);
            } catch (const std::exception& e) {
                bound_error = e.what();
                // The binding message names the command's own --dim form: give validate's.
                if (bound_error.find("unbound dimension symbols") != std::string::npos)
                    bound_error += fmt::format("; here: --dim {}:NAME=VALUE", c.model);
            }
            if (bound && !bound->unknown_nodes.empty() && unknown_warned.insert(c.model).second)
                notes.push_back(fmt::format(
                    "{}: {} node(s) with ops that cannot be counted: its estimates leave them "
                    "out (`nnergy analyze` lists them)",
                    c.model, bound->unknown_nodes.size()));
        }
        if (!bound_error.empty()) {
            skip(c, bound_error);
            continue;
        }
        // The cores the run's threads could use, when fewer than the entry has; a single op
        // pays the runtime's per-op costs but not its per-pass one.
        hardware_variant variant;
        if (c.threads && entry_units > 0 && static_cast<double>(*c.threads) < entry_units)
            variant.units = *c.threads;
        if (c.kind == "op") variant.single_op_runtime = rt.name;
        if (c.mode == "device") variant.device_time_runtime = rt.name;
        size_t vi = 0;
        while (vi < s_->variants.size() && s_->variants[vi] != variant) ++vi;
        if (vi == s_->variants.size()) s_->variants.push_back(variant);
        s_->configs.push_back({c, &rt, vi, bound, part, *dtype});
    }
    quiet.reset();
    for (const std::string& n : notes) spdlog::warn("{}", n);
}

const config_values& validation_session::hardware() const noexcept { return s_->hw; }

const validation_result& validation_session::header() const noexcept { return s_->header; }

size_t validation_session::size() const noexcept { return s_->configs.size(); }

size_t validation_session::measured_count() const noexcept { return s_->measured_count; }

const measured_config& validation_session::measured(size_t i) const {
    return s_->configs.at(i).measured;
}

std::vector<std::pair<std::string, const config_values*>> validation_session::runtimes() const {
    std::vector<std::pair<std::string, const config_values*>> out;
    for (const prepared_config& c : s_->configs) {
        const runtime_state* rt = c.runtime;
        if (std::none_of(out.begin(), out.end(),
                         [&](const auto& p) { return p.first == rt->name; }))
            out.emplace_back(rt->name, &rt->values);
    }
    return out;
}

std::vector<validated_config> validation_session::predict(const config_values& hw,
                                                          const std::vector<size_t>* only) const {
    const size_t n = only ? only->size() : s_->configs.size();
    // One thread per core, each taking a few configurations at least: a refit predicts small
    // subsets many times, where starting threads would cost more than it saves.
    const size_t threads =
        std::clamp<size_t>(n / 4, 1, std::max(1u, std::thread::hardware_concurrency()));
    // The hardware values may differ from the last call's: architectures anew (and estimators
    // of plugins that may key their caches on the values' addresses, evaluation_worker).
    for (auto& [name, rt] : s_->runtimes) {
        if (!rt.worker) continue;
        rt.architectures.resize(s_->variants.size());
        for (auto& a : rt.architectures) {
            if (!a) a = std::make_unique<runtime_state::shared_architecture>();
            a->instance.reset();
        }
        rt.worker->forget_hardware();
        while (rt.more_workers.size() + 1 < threads)
            rt.more_workers.push_back(std::make_unique<evaluation_worker>(*rt.plan));
        for (size_t t = 0; t + 1 < threads; ++t) rt.more_workers[t]->forget_hardware();
    }
    // The variants this prediction uses, built from `hw` into the session's storage: a
    // calibration predicts again and again with the same keys and other values, so the values
    // are written over the last prediction's (whose architectures are gone) rather than copied
    // anew, and each thread's architecture shares them.
    std::vector<char> used(s_->variants.size(), 0);
    for (size_t j = 0; j < n; ++j) used[s_->configs.at(only ? (*only)[j] : j).variant] = 1;
    s_->variant_values.resize(s_->variants.size());
    const auto build_variant = [&](size_t v) {
        std::shared_ptr<config_values>& stored = s_->variant_values[v];
        if (!stored || stored.use_count() > 1)
            stored = std::make_shared<config_values>(hw);
        else
            overwrite_values(*stored, hw);
        config_values& values = *stored;
        const auto& [units, single_op_runtime, device_time_runtime] = s_->variants[v];
        const auto set = [&](const std::string& key, double value, const char* unit) {
            for (config_value& c : values)
                if (c.name == key) {
                    c.kind = NNERGY_VALUE_FLOAT;
                    c.float_value = c.written_value = value;
                    return;
                }
            config_value c;
            c.name = key;
            c.kind = NNERGY_VALUE_FLOAT;
            c.float_value = c.written_value = value;
            c.unit = unit;
            c.source = "nnergy validate: the measured configuration";
            values.push_back(std::move(c));
        };
        const config_value* cls = find_value(hw, "class");
        if (units > 0 && cls && cls->string_value == "cpu") {
            // A CPU run on fewer threads: the CPU model knows what they reach (cores kept
            // busy, per-core bandwidth; docs/hardware.md).
            set("cpu.threads", static_cast<double>(units), "count");
        } else if (units > 0) {
            // Fewer cores: the chip's compute peaks in proportion (memory bandwidth is
            // shared and stays, an upper bound for fewer cores).
            const double share = static_cast<double>(units) / s_->entry_units;
            for (config_value& c : values)
                if (c.kind == NNERGY_VALUE_FLOAT && c.name.starts_with("compute.") &&
                    c.name.ends_with(".peak")) {
                    c.float_value *= share;
                    c.written_value *= share;
                }
            set("compute.units", static_cast<double>(units), "count");
        }
        // A single op called directly: no forward pass around it, no module layer, and
        // timed over calls issued back to back (docs/microbench.md).
        if (!single_op_runtime.empty()) {
            set(fmt::format("runtime.{}.dispatch.per_call", single_op_runtime), 0, "s");
            set(fmt::format("runtime.{}.dispatch.per_module", single_op_runtime), 0, "s");
            set(fmt::format("runtime.{}.dispatch.repeated_calls", single_op_runtime), 1, "1");
        }
        // A profiler's device time: the kernels' own, no gap between them.
        if (!device_time_runtime.empty()) {
            set(fmt::format("runtime.{}.launch.kernel_gap", device_time_runtime), 0, "s");
            set(fmt::format("runtime.{}.dispatch.per_call", device_time_runtime), 0, "s");
        }
    };
    for (size_t v = 0; v < used.size(); ++v)  // before threads read them
        if (used[v]) build_variant(v);
    std::vector<validated_config> out(n);
    std::optional<quiet_plugins> quiet;
    quiet.emplace();
    // Set when an energy estimator reports no idle power (idle_power_w) to price a period by.
    std::atomic<bool> no_idle_power{false};
    // Thread t uses each runtime's t-th worker.
    parallel_for(threads, n, [&](size_t thread, size_t j) {
        const prepared_config& c = s_->configs.at(only ? (*only)[j] : j);
        evaluation_worker* w =
            thread == 0 ? c.runtime->worker.get() : c.runtime->more_workers[thread - 1].get();
        evaluation_totals t;
        try {
            const component_instance& arch =
                c.runtime->architecture(c.variant, *s_->arch_entry, s_->arch_config,
                                        s_->variant_values[c.variant], s_->arch_where);
            t = totals_of(w->evaluate(arch, *c.bound, *c.part, c.dtype), *c.bound);
        } catch (const std::exception& e) {
            throw error(fmt::format("{}: {}", describe(c.measured), e.what()), exit_code::failure);
        }
        validated_config& r = out[j];
        r.measured = c.measured;
        r.runtime = c.runtime->label;
        r.predicted_latency_s = t.latency_s ? *t.latency_s : std::nan("");
        r.has_latency = t.latency_s.has_value();
        r.predicted_energy_j = t.energy_j;
        // An op run's energy per call is the loop's energy over its calls, priced over the
        // time one call took in that loop (docs/validate.md, "Op runs"): a call estimated to be
        // shorter leaves the device idle for the rest; one estimated to be longer draws its
        // static power over the measured time only. The op's events stay as estimated, so the
        // error is the energy model's rather than the latency model's.
        if (c.measured.kind == "op" && c.measured.call_period_s && r.predicted_energy_j &&
            r.predicted_latency_s > 0) {
            const double period = *c.measured.call_period_s;
            if (period >= r.predicted_latency_s) {
                if (t.idle_power_w)
                    *r.predicted_energy_j += *t.idle_power_w * (period - r.predicted_latency_s);
                else
                    no_idle_power = true;
            } else if (t.static_energy_j) {
                *r.predicted_energy_j -= *t.static_energy_j * (1 - period / r.predicted_latency_s);
            }
        }
        // A call the device finishes sooner than the timing method can report is measured at
        // the method's floor (docs/measurements.md). Its energy stays priced over the device's
        // time: the measured period holds the rest.
        if (c.measured.latency_floor_s && r.has_latency &&
            r.predicted_latency_s < *c.measured.latency_floor_s) {
            r.below_floor_latency_s = r.predicted_latency_s;
            r.predicted_latency_s = *c.measured.latency_floor_s;
        }
    });
    quiet.reset();
    if (no_idle_power && !s_->warned_no_idle_power.exchange(true)) {
        spdlog::warn(
            "op runs: the energy estimator reports no idle_power_w, so a call estimated to take "
            "less than its period in the measured loop is priced without the device's idle time "
            "for the rest of it");
    }
    return out;
}

void sort_configs(std::vector<validated_config>& configs) {
    std::stable_sort(configs.begin(), configs.end(),
                     [](const validated_config& a, const validated_config& b) {
                         const measured_config &x = a.measured, &y = b.measured;
                         return std::tie(x.mode, x.model, x.precision, x.batch, x.device) <
                                std::tie(y.mode, y.model, y.precision, y.batch, y.device);
                     });
}

void check_thresholds(validation_result& v, const validate_options& o) {
    const auto check = [&](const std::map<std::string, double>& limits, const char* metric) {
        for (const auto& [mode, max] : limits) {
            threshold_check t{mode, metric, max, std::nullopt};
            for (const mode_summary& s : v.modes)
                if (s.mode == mode) {
                    if (std::string_view(metric) == "latency")
                        t.mape = s.latency.mape;
                    else if (s.energy)
                        t.mape = s.energy->mape;
                }
            v.thresholds.push_back(t);
        }
    };
    check(o.max_mape, "latency");
    check(o.max_energy_mape, "energy");
}

validation_result run_validation(const validate_options& o) {
    const validation_session session(o);
    return validate_session(session, o);
}

validation_result validate_session(const validation_session& session, const validate_options& o) {
    validation_result v = session.header();
    for (validated_config& c : session.predict(session.hardware())) {
        // An estimate that left the range of a number would make the MAPE infinite, or, left
        // out, better than it is: the run stops, as analyze does (evaluate.hpp).
        const bool latency_not_finite = c.has_latency && !std::isfinite(c.predicted_latency_s);
        if (latency_not_finite || (c.predicted_energy_j && !std::isfinite(*c.predicted_energy_j)))
            throw error(
                fmt::format("{}: the estimate's {} is {}: {}", describe(c.measured),
                            latency_not_finite ? "latency" : "energy",
                            latency_not_finite ? c.predicted_latency_s : *c.predicted_energy_j,
                            not_finite_cause));
        if (!c.has_latency) {
            bool merged = false;
            for (skipped_configs& s : v.skipped)
                if (s.model == c.measured.model && s.mode == c.measured.mode &&
                    s.reason == "no estimator gave a latency") {
                    ++s.configs;
                    merged = true;
                    break;
                }
            if (!merged)
                v.skipped.push_back(
                    {c.measured.model, c.measured.mode, "no estimator gave a latency", 1});
            continue;
        }
        v.configs.push_back(std::move(c));
    }
    sort_configs(v.configs);
    for (const skipped_configs& s : v.skipped)
        spdlog::warn("skipped {} configuration{} of {} ({}): {}", s.configs,
                     s.configs == 1 ? "" : "s", s.model, s.mode, s.reason);
    if (v.configs.empty())
        throw error(
            fmt::format("nothing to validate: none of the {} measured model "
                        "configuration{} could be estimated{}",
                        session.measured_count(), session.measured_count() == 1 ? "" : "s",
                        v.skipped.empty() ? "" : " (skipped: see above)"));
    v.modes = summarize(v.configs);
    v.op_classes = summarize_op_classes(v.configs);
    check_thresholds(v, o);
    return v;
}

// ---- output ----

namespace {

std::string pct(double p) { return fmt::format("{:+.1f}%", p); }

std::string config_name(const measured_config& c) {
    return fmt::format("{} {} batch {}", c.model, c.precision, c.batch);
}

std::string worst_text(const validation_result& v, const error_summary& s) {
    return fmt::format("{} ({})", pct(s.worst_error), config_name(v.configs[s.worst].measured));
}

std::string ms(double s) { return fmt::format("{:.3f}", 1e3 * s); }
std::string joules(const std::optional<double>& j) {
    return j ? fmt::format("{:.4g}", *j) : std::string("-");
}
std::string energy_pct(const validated_config& c) {
    const std::optional<double> e = c.energy_error();
    return e ? pct(100 * *e) : std::string("-");
}

std::string threshold_text(const threshold_check& t) {
    if (!t.mape)
        return fmt::format("{} MAPE of {} at most {:.4g}%: FAILED, no configuration to compare",
                           t.metric, t.mode, t.max_mape);
    return fmt::format("{} MAPE of {} at most {:.4g}%: {:.1f}%, {}", t.metric, t.mode, t.max_mape,
                       *t.mape, t.passed() ? "ok" : "FAILED");
}

std::string skipped_text(const skipped_configs& s) {
    return fmt::format("{} ({}), {} configuration{}: {}", s.model, s.mode, s.configs,
                       s.configs == 1 ? "" : "s", s.reason);
}

// Energy columns only where a configuration has a measured energy.
bool any_energy(const validation_result& v) {
    for (const validated_config& c : v.configs)
        if (c.measured.energy_j) return true;
    return false;
}

constexpr size_t k_latency_columns = 8;

// The rows of the per-configuration table, as cells, for every format.
std::vector<std::string> table_head() {
    return {"model",          "precision", "batch",
            "mode",           "runtime",   "latency measured (ms)",
            "predicted (ms)", "error",     "energy measured (J)",
            "predicted (J)",  "error"};
}

std::vector<std::string> table_row(const validated_config& c) {
    const measured_config& m = c.measured;
    return {m.model,
            m.precision,
            std::to_string(m.batch),
            m.mode,
            c.runtime,
            ms(m.latency_s),
            ms(c.predicted_latency_s) + (c.below_floor_latency_s ? " (floor)" : ""),
            pct(100 * c.latency_error()),
            joules(m.energy_j),
            joules(c.predicted_energy_j),
            energy_pct(c)};
}

struct summary_row {
    std::string metric, mode, runtime;
    const error_summary* s;
};

std::vector<summary_row> summary_rows(const validation_result& v) {
    std::vector<summary_row> rows;
    for (const mode_summary& m : v.modes)
        rows.push_back({"latency", m.mode, m.runtime, &m.latency});
    for (const mode_summary& m : v.modes)
        if (m.energy) rows.push_back({"energy", m.mode, m.runtime, &*m.energy});
    return rows;
}

std::string sources_text(const validation_result& v) {
    std::string s;
    for (const std::string& f : v.files) s += fmt::format("{}{}", s.empty() ? "" : ", ", f);
    return s;
}

/// One line of the leave-out summary: a metric of a mode with the entry's values, refitted on
/// all configurations, and held out.
struct leave_out_row {
    std::string metric, mode;
    size_t configs = 0;
    std::optional<double> entry, in_sample, held_out;
    std::optional<double> ratio() const {
        if (!in_sample || !held_out || *in_sample <= 0) return std::nullopt;
        return *held_out / *in_sample;
    }
};

std::vector<leave_out_row> leave_out_rows(const validation_result& v) {
    std::vector<leave_out_row> rows;
    if (!v.leave_out) return rows;
    const leave_out_summary& l = *v.leave_out;
    const auto find = [](const std::vector<mode_summary>& modes, const std::string& mode) {
        const mode_summary* f = nullptr;
        for (const mode_summary& m : modes)
            if (m.mode == mode) f = &m;
        return f;
    };
    for (const char* metric : {"latency", "energy"})
        for (const mode_summary& h : l.held_out_modes) {
            const bool latency = std::string_view(metric) == "latency";
            const auto mape = [&](const mode_summary* m) -> std::optional<double> {
                if (!m) return std::nullopt;
                if (latency) return m->latency.mape;
                return m->energy ? std::optional<double>(m->energy->mape) : std::nullopt;
            };
            leave_out_row r{metric,
                            h.mode,
                            latency ? h.latency.count : 0,
                            mape(find(l.entry_modes, h.mode)),
                            mape(find(l.in_sample_modes, h.mode)),
                            mape(&h)};
            if (!latency && !r.held_out) continue;
            if (!latency) r.configs = h.energy->count;
            rows.push_back(r);
        }
    return rows;
}

/// Held-out MAPE of one group in one mode: latency, and energy where the group has one.
struct leave_out_group_row {
    std::string group, mode;
    size_t configs = 0;
    double latency_mape = 0;
    std::optional<double> energy_mape;
};

std::vector<leave_out_group_row> leave_out_groups(const leave_out_summary& l) {
    std::vector<leave_out_group_row> out;
    for (size_t i = 0; i < l.groups.size() && i < l.held_out_per_group.size(); ++i)
        for (const mode_summary& m : l.held_out_per_group[i])
            out.push_back({l.groups[i], m.mode, m.latency.count, m.latency.mape,
                           m.energy ? std::optional<double>(m.energy->mape) : std::nullopt});
    return out;
}

std::string opt_pct(const std::optional<double>& x) {
    return x ? fmt::format("{:.1f}%", *x) : std::string("-");
}

std::string leave_out_intro(const leave_out_summary& l) {
    std::string params;
    for (const std::string& p : l.parameters) params += (params.empty() ? "" : ", ") + p;
    return fmt::format(
        "Leave one {} out: the entry's {} fitted constant{} ({}) refitted on every configuration "
        "(in sample), then once without each of the {} {}s, predicting the one left out.",
        l.unit, l.parameters.size(), l.parameters.size() == 1 ? "" : "s", params, l.groups.size(),
        l.unit == "family" ? "familie" : l.unit);
}

}  // namespace

std::string validation_text(const validation_result& v) {
    std::string s =
        fmt::format("nnergy validate: {} configuration{} on {} ({}) from {}\n\n", v.configs.size(),
                    v.configs.size() == 1 ? "" : "s", v.hardware, v.hw_class, sources_text(v));
    std::vector<std::string> head = table_head();
    std::vector<std::vector<std::string>> rows;
    for (const validated_config& c : v.configs) rows.push_back(table_row(c));
    if (!any_energy(v)) {
        head.resize(k_latency_columns);
        for (auto& r : rows) r.resize(k_latency_columns);
    }
    std::vector<size_t> width(head.size());
    for (size_t k = 0; k < head.size(); ++k) {
        width[k] = head[k].size();
        for (const auto& r : rows) width[k] = std::max(width[k], r[k].size());
    }
    const auto line = [&](const std::vector<std::string>& cells) {
        std::string l = " ";
        for (size_t k = 0; k < cells.size(); ++k) {
            // Names left, figures right.
            l += k < 2 || k == 3 || k == 4 ? fmt::format(" {:<{}}", cells[k], width[k])
                                           : fmt::format(" {:>{}}", cells[k], width[k]);
        }
        while (!l.empty() && l.back() == ' ') l.pop_back();
        return l + "\n";
    };
    s += line(head);
    for (const auto& r : rows) s += line(r);
    if (!v.skipped.empty()) {
        size_t n = 0;
        for (const skipped_configs& k : v.skipped) n += k.configs;
        s += fmt::format("\nskipped {} configuration{}:\n", n, n == 1 ? "" : "s");
        for (const skipped_configs& k : v.skipped) s += "  " + skipped_text(k) + "\n";
    }
    if (const size_t floored = static_cast<size_t>(
            std::count_if(v.configs.begin(), v.configs.end(),
                          [](const validated_config& c) { return c.below_floor_latency_s; })))
        s += fmt::format(
            "\n(floor): {} configuration{} estimated below the timing floor of {} runs "
            "(latency_floor_ms), predicted at the floor\n",
            floored, floored == 1 ? "" : "s", floored == 1 ? "its" : "their");
    if (v.other_runs)
        s += fmt::format(
            "\n{} run{} of kind op or command not compared (whole models are; op runs too "
            "with --ops)\n",
            v.other_runs, v.other_runs == 1 ? "" : "s");
    s += "\n";
    for (const summary_row& r : summary_rows(v))
        s += fmt::format("{:<8} {} ({}): MAPE {:.1f}% over {} configuration{}; worst {}\n",
                         r.metric, r.mode, r.runtime, r.s->mape, r.s->count,
                         r.s->count == 1 ? "" : "s", worst_text(v, *r.s));
    // Per class only where the op runs span more than one.
    if (v.op_classes.size() > 1) {
        s += "\nop runs by class:\n";
        for (const op_class_summary& c : v.op_classes) {
            s += fmt::format("  {:<12} {:<20} {:>4} configs  latency MAPE {:>6.1f}%  worst {}",
                             c.mode, c.op_class, c.latency.count, c.latency.mape,
                             worst_text(v, c.latency));
            if (c.energy) s += fmt::format("; energy MAPE {:.1f}%", c.energy->mape);
            s += "\n";
        }
    }
    if (v.leave_out) {
        s += "\n" + leave_out_intro(*v.leave_out) + "\n\n";
        s += fmt::format("  {:<8} {:<12} {:>7} {:>10} {:>10} {:>10} {:>8}\n", "metric", "mode",
                         "configs", "entry", "in sample", "held out", "ratio");
        for (const leave_out_row& r : leave_out_rows(v))
            s += fmt::format("  {:<8} {:<12} {:>7} {:>10} {:>10} {:>10} {:>8}\n", r.metric, r.mode,
                             r.configs, opt_pct(r.entry), opt_pct(r.in_sample), opt_pct(r.held_out),
                             r.ratio() ? fmt::format("{:.2f}x", *r.ratio()) : "-");
        const std::vector<leave_out_group_row> groups = leave_out_groups(*v.leave_out);
        const bool energy = std::any_of(groups.begin(), groups.end(),
                                        [](const leave_out_group_row& g) { return g.energy_mape; });
        // A fit to energies alone leads with what it fitted; a group without energies then
        // shows its latency only, in parentheses.
        const bool energy_first = energy && v.leave_out->fitted_to == "energy";
        std::string_view heading = "latency";
        if (energy_first)
            heading = "energy (latency)";
        else if (energy)
            heading = "latency (energy)";
        s += fmt::format("\n  held out, {} MAPE per {}:\n", heading, v.leave_out->unit);
        for (const leave_out_group_row& g : groups) {
            std::string figures;
            if (energy_first)
                figures = fmt::format("{:>8} ({:.1f}%)",
                                      g.energy_mape ? fmt::format("{:.1f}%", *g.energy_mape) : "-",
                                      g.latency_mape);
            else
                figures =
                    fmt::format("{:>7.1f}%{}", g.latency_mape,
                                g.energy_mape ? fmt::format(" ({:.1f}%)", *g.energy_mape) : "");
            s += fmt::format("    {:<24} {:<12} {:>3} configs {}\n", g.group, g.mode, g.configs,
                             figures);
        }
    }
    if (!v.thresholds.empty()) {
        s += "\n";
        for (const threshold_check& t : v.thresholds) s += threshold_text(t) + "\n";
    }
    return s;
}

report_value validation_document(const validation_result& v) {
    using rv = report_value;
    const auto text = [](std::string_view x) { return rv::of(x); };
    const auto integer = [](auto x) { return rv::of(static_cast<int64_t>(x)); };
    const auto real = [](double x) { return rv::of(x); };
    const auto opt = [](const std::optional<double>& x) { return x ? rv::of(*x) : rv(); };
    const auto strings = [&](const std::vector<std::string>& xs) {
        rv a = rv::array();
        for (const std::string& x : xs) a.push(rv::of(x));
        return a;
    };
    rv doc = rv::object();
    doc.set("schema", text("nnergy.validation/1"));
    doc.set("hardware", text(v.hardware));
    doc.set("hardware_file", text(v.hardware_file.string()));
    doc.set("class", text(v.hw_class));
    doc.set("measurements", strings(v.files));
    rv configs = rv::array();
    for (const validated_config& c : v.configs) {
        const measured_config& m = c.measured;
        rv x = rv::object();
        x.set("model", text(m.model));
        x.set("precision", text(m.precision));
        x.set("batch", integer(m.batch));
        x.set("mode", text(m.mode));
        x.set("device", text(m.device));
        x.set("runtime", text(c.runtime));
        x.set("sources", strings(m.sources));
        rv latency = rv::object();
        latency.set("measured", real(m.latency_s));
        latency.set("predicted", real(c.predicted_latency_s));
        latency.set("error_pct", real(100 * c.latency_error()));
        if (m.latency_floor_s) {
            latency.set("floor", real(*m.latency_floor_s));
            latency.set("estimate", real(c.below_floor_latency_s.value_or(c.predicted_latency_s)));
        }
        x.set("latency_s", std::move(latency));
        const std::optional<double> e = c.energy_error();
        rv energy = rv::object();
        energy.set("measured", opt(m.energy_j));
        energy.set("predicted", opt(c.predicted_energy_j));
        energy.set("error_pct", e ? real(100 * *e) : rv());
        x.set("energy_j", std::move(energy));
        configs.push(std::move(x));
    }
    doc.set("configurations", std::move(configs));
    const auto summary = [&](const error_summary& s) {
        rv x = rv::object();
        x.set("configurations", integer(s.count));
        x.set("mape_pct", real(s.mape));
        rv worst = rv::object();
        worst.set("configuration", integer(s.worst));
        worst.set("error_pct", real(s.worst_error));
        x.set("worst", std::move(worst));
        return x;
    };
    rv modes = rv::array();
    for (const mode_summary& m : v.modes) {
        rv x = rv::object();
        x.set("mode", text(m.mode));
        x.set("runtime", text(m.runtime));
        x.set("latency", summary(m.latency));
        x.set("energy", m.energy ? summary(*m.energy) : rv());
        modes.push(std::move(x));
    }
    doc.set("modes", std::move(modes));
    rv op_classes = rv::array();
    for (const op_class_summary& c : v.op_classes) {
        rv x = rv::object();
        x.set("mode", text(c.mode));
        x.set("op_class", text(c.op_class));
        x.set("latency", summary(c.latency));
        x.set("energy", c.energy ? summary(*c.energy) : rv());
        op_classes.push(std::move(x));
    }
    doc.set("op_classes", std::move(op_classes));
    rv skipped = rv::array();
    for (const skipped_configs& k : v.skipped) {
        rv x = rv::object();
        x.set("model", text(k.model));
        x.set("mode", text(k.mode));
        x.set("configurations", integer(k.configs));
        x.set("reason", text(k.reason));
        skipped.push(std::move(x));
    }
    doc.set("skipped", std::move(skipped));
    doc.set("other_runs", integer(v.other_runs));
    rv thresholds = rv::array();
    for (const threshold_check& t : v.thresholds) {
        rv x = rv::object();
        x.set("mode", text(t.mode));
        x.set("metric", text(t.metric));
        x.set("max_mape_pct", real(t.max_mape));
        x.set("mape_pct", opt(t.mape));
        x.set("passed", rv::of(t.passed()));
        thresholds.push(std::move(x));
    }
    doc.set("thresholds", std::move(thresholds));
    if (v.leave_out) {
        const leave_out_summary& l = *v.leave_out;
        rv lo = rv::object();
        lo.set("unit", text(l.unit));
        lo.set("groups", strings(l.groups));
        lo.set("parameters", strings(l.parameters));
        rv rows = rv::array();
        for (const leave_out_row& r : leave_out_rows(v)) {
            rv x = rv::object();
            x.set("metric", text(r.metric));
            x.set("mode", text(r.mode));
            x.set("configurations", integer(r.configs));
            x.set("entry_mape_pct", opt(r.entry));
            x.set("in_sample_mape_pct", opt(r.in_sample));
            x.set("held_out_mape_pct", opt(r.held_out));
            x.set("ratio", opt(r.ratio()));
            rows.push(std::move(x));
        }
        lo.set("modes", std::move(rows));
        rv per_group = rv::array();
        for (const leave_out_group_row& g : leave_out_groups(l)) {
            rv x = rv::object();
            x.set("group", text(g.group));
            x.set("mode", text(g.mode));
            x.set("configurations", integer(g.configs));
            x.set("latency_mape_pct", real(g.latency_mape));
            x.set("energy_mape_pct", opt(g.energy_mape));
            per_group.push(std::move(x));
        }
        lo.set("per_group", std::move(per_group));
        rv held = rv::array();
        for (const validated_config& c : l.held_out) {
            const std::optional<double> e = c.energy_error();
            rv x = rv::object();
            x.set("model", text(c.measured.model));
            x.set("precision", text(c.measured.precision));
            x.set("batch", integer(c.measured.batch));
            x.set("mode", text(c.measured.mode));
            x.set("latency_error_pct", real(100 * c.latency_error()));
            x.set("energy_error_pct", e ? real(100 * *e) : rv());
            held.push(std::move(x));
        }
        lo.set("held_out", std::move(held));
        doc.set("leave_out", std::move(lo));
    }
    return doc;
}

}  // namespace nnergy
