// SPDX-License-Identifier: Apache-2.0
// Running a pipeline end to end and assembling the report document.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nnergy/framework/concurrency.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/evaluate.hpp>
#include <nnergy/framework/heap_pages.hpp>
#include <nnergy/framework/host_objects.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <nnergy/framework/sanitizers.hpp>
#include <nnergy/framework/suggest.hpp>

namespace nnergy {
namespace {

const component_entry& require(const registry& reg, nnergy_component_kind kind,
                               const std::string& name, const source_location& where) {
    if (const component_entry* e = reg.find(kind, name)) return *e;
    std::string hint;
    if (const component_entry* other = reg.find(name)) {
        hint = fmt::format(" ('{}' is {})", name, kind_with_article(other->kind));
    } else {
        std::vector<std::string> names;
        for (const component_entry* c : reg.of_kind(kind)) names.push_back(c->name);
        hint = did_you_mean(name, names);
    }
    throw error(fmt::format("{}: no {} plugin named '{}'{} (available: {})", where.str(),
                            kind_name(kind), name, hint, reg.names_of(kind)),
                exit_code::plugin_missing);
}

/// Every binding a run sweeps over: the pipeline's single values and --dim overrides, crossed
/// with each swept dimension's values (in name order), --dim taking a swept name out.
std::vector<dim_bindings> sweep_bindings(const pipeline_spec& spec, const run_options& options) {
    dim_bindings base = spec.model.dims;
    for (const auto& [k, v] : options.dims) base[k] = v;
    std::map<std::string, std::vector<int64_t>, std::less<>> sweeps = spec.model.sweeps;
    for (const auto& [k, v] : options.sweeps) sweeps[k] = v;
    std::vector<dim_bindings> out{base};
    for (const auto& [name, values] : sweeps) {
        if (options.dims.count(name)) continue;
        std::vector<dim_bindings> next;
        for (const dim_bindings& b : out)
            for (int64_t v : values) {
                next.push_back(b);
                next.back()[name] = v;
            }
        out = std::move(next);
    }
    return out;
}

/// Checks the names bound against the model's symbols, then binds each default the model's
/// inputs use and nothing else binds, saying so. A bound name the model does not use is allowed
/// (one command line serves several models) unless it looks like a misspelt symbol left unbound.
std::vector<dim_bindings> with_defaults(const graph& g, std::vector<dim_bindings> bindings,
                                        const dim_bindings& defaults) {
    const std::vector<std::string> used = symbols_of(g);
    const dim_bindings& bound = bindings.front();  // every point binds the same names
    std::vector<std::string> unbound;
    for (const std::string& s : used)
        if (!bound.count(s)) unbound.push_back(s);
    for (const auto& [name, value] : bound) {
        if (std::binary_search(used.begin(), used.end(), name)) continue;
        const std::string hint = did_you_mean(name, unbound);
        if (hint.empty()) continue;
        std::string list;
        for (const std::string& s : used) list += (list.empty() ? "" : ", ") + s;
        throw error(
            fmt::format("{}: dimension symbol '{}' is bound but the model does not use "
                        "it{} (symbols of the model: {})",
                        g.source_path, name, hint, list));
    }
    for (const auto& [name, value] : defaults) {
        if (bound.count(name) || !std::binary_search(used.begin(), used.end(), name)) continue;
        for (dim_bindings& b : bindings) b[name] = value;
        spdlog::warn("{} is not bound; using {}={} ({} to choose)", name, name, value,
                     name == "batch" ? std::string("--batch N") : "--dim " + name + "=N");
    }
    return bindings;
}

report_value number(double v) { return report_value::of(v); }
report_value integer(int64_t v) { return report_value::of(v); }

/// Stages, critical path and speedup bound of one run (docs/report.md, "concurrency"); the
/// critical path weighs kernels by their latency_s when every kernel has one.
report_value concurrency_document(const partition& part, const nnergy_results& results) {
    std::vector<double> latency;
    const std::optional<uint32_t> latency_key = results.kernel_keys.find("latency_s");
    for (const auto& numbers : results.kernel_numbers) {
        auto it = std::find_if(numbers.begin(), numbers.end(), [&](const auto& kv) {
            return latency_key && kv.first == *latency_key;
        });
        if (it == numbers.end()) break;
        latency.push_back(it->second);
    }
    if (latency.size() != part.kernels.size()) latency.clear();
    const concurrency_summary c = analyze_concurrency(part, latency);
    report_value doc = report_value::object();
    doc.set("stages", integer(static_cast<int64_t>(c.stages.size())));
    doc.set("widest_stage", integer(c.widest_stage));
    doc.set("widest_stage_kernels",
            integer(c.stages.empty() ? 0 : c.stages[c.widest_stage].kernels));
    report_value path = report_value::array();
    for (uint32_t k : c.critical_path) path.push(integer(k));
    doc.set("critical_path", std::move(path));
    doc.set("critical_path_kernels", integer(static_cast<int64_t>(c.critical_path.size())));
    if (!latency.empty()) {
        doc.set("critical_path_latency_s", number(c.critical_path_latency_s));
        doc.set("serial_latency_s", number(c.serial_latency_s));
        doc.set("speedup_bound", number(c.speedup_bound));
    }
    report_value per_stage = report_value::array();
    for (const stage_summary& s : c.stages) {
        report_value x = report_value::object();
        x.set("kernels", integer(s.kernels));
        x.set("total_threads", number(s.total_threads));
        x.set("max_threads", number(s.max_threads));
        if (!latency.empty()) x.set("latency_s", number(s.latency_s));
        per_stage.push(std::move(x));
    }
    doc.set("per_stage", std::move(per_stage));
    return doc;
}

report_value kernel_document(const bound_graph& g, const partition& p, uint32_t k) {
    const kernel& kr = p.kernels[k];
    const nnergy_kernel_stats& s = kr.stats;
    report_value o = report_value::object();
    o.reserve(16);  // the members below, and the caller's mapping and metrics
    o.add("index", integer(k));
    o.add("name", report_value::of(kr.name));
    o.add("pattern", report_value::of(kr.pattern));
    report_value ops = report_value::array();
    report_value nodes = report_value::array();
    ops.reserve(kr.nodes.size());
    nodes.reserve(kr.nodes.size());
    for (uint32_t n : kr.nodes) {
        ops.push(report_value::of(g.source->nodes[n].op_type));
        nodes.push(report_value::of(g.source->nodes[n].name));
    }
    o.add("ops", std::move(ops));
    o.add("nodes", std::move(nodes));
    o.add("macs", number(s.macs));
    o.add("flops", number(s.flops));
    o.add("input_bytes", number(s.input_bytes));
    o.add("output_bytes", number(s.output_bytes));
    o.add("weight_bytes", number(s.weight_bytes));
    o.add("arithmetic_intensity", number(s.arithmetic_intensity));
    report_value par = report_value::object();
    par.reserve(6);
    par.add("batch", number(s.batch));
    par.add("channels", number(s.channels));
    par.add("spatial", number(s.spatial));
    par.add("total_threads", number(s.total_threads));
    par.add("groups", integer(s.groups));
    par.add("depthwise", report_value::of(s.is_depthwise));
    o.add("parallelism", std::move(par));
    o.add("all_counted", report_value::of(s.all_counted));
    report_value deps = report_value::array();
    deps.reserve(kr.dependencies.size());
    for (uint32_t d : kr.dependencies) deps.push(integer(d));
    o.add("dependencies", std::move(deps));
    return o;
}

report_value mapping_document(const nnergy_mapping& m) {
    report_value o = report_value::object();
    o.reserve(m.texts.size() + m.numbers.size() + 2);  // and the levels and events
    // Each list's keys are distinct; a number only needs checking against the texts.
    for (const auto& [k, v] : m.texts) o.add(k, report_value::of(v));
    for (const auto& [k, v] : m.numbers) {
        if (m.texts.find(k))
            o.set(k, number(v));
        else
            o.add(k, number(v));
    }
    report_value levels = report_value::array();
    levels.reserve(m.levels.size());
    for (const auto& l : m.levels) {
        report_value x = report_value::object();
        x.reserve(3);
        x.add("level", report_value::of(l.name.view()));
        x.add("bytes", number(l.bytes));
        x.add("bandwidth_bytes_per_s", number(l.bandwidth_bytes_per_s));
        levels.push(std::move(x));
    }
    o.set("levels", std::move(levels));
    if (!m.events.empty()) {
        report_value events = report_value::array();
        events.reserve(m.events.size());
        for (const auto& e : m.events) {
            report_value x = report_value::object();
            x.reserve(3);
            x.add("category", report_value::of(e.category.view()));
            x.add("event", report_value::of(e.name.view()));
            x.add("count", number(e.count));
            events.push(std::move(x));
        }
        o.set("events", std::move(events));
    }
    return o;
}

}  // namespace

void write_output(const std::string& bytes, const std::string& output, const std::string& who) {
    if (output.empty() || output == "-") {
        std::fwrite(bytes.data(), 1, bytes.size(), stdout);
        std::fflush(stdout);
        return;
    }
    std::ofstream f(output, std::ios::binary);
    if (!f) throw error(fmt::format("{}: cannot write report file '{}'", who, output));
    f << bytes;
    if (!f) throw error(fmt::format("{}: error writing report file '{}'", who, output));
    spdlog::info("wrote {}", output);
}

void write_output(reporter_output& output, const std::string& who) {
    if (!output.file) return write_output(output.bytes, output.path, who);
    try {
        output.file->commit();
    } catch (const error& e) {
        throw error(fmt::format("{}: {}", who, e.what()));
    }
    if (!output.path.empty()) spdlog::info("wrote {}", output.path);
}

config_values partitioner_config_for_runtime(const config_values& partitioner_config,
                                             const config_values& runtime,
                                             const std::string& profile,
                                             const std::filesystem::path& runtime_file) {
    config_values out = partitioner_config;
    const config_value* rules = find_value(runtime, "fusion_rules");
    if (!rules) return out;
    if (rules->kind != NNERGY_VALUE_STRING)
        throw error(fmt::format("{}:{}: 'fusion_rules' must be a path (a string)", rules->file,
                                rules->line));
    std::filesystem::path file(rules->string_value);
    if (file.is_relative()) file = (runtime_file.parent_path() / file).lexically_normal();
    if (const config_value* own = find_value(out, "rules"))
        throw error(
            fmt::format("{}: [partitioner] rules = \"{}\" conflicts with runtime '{}', which "
                        "launches the kernels of its own fusion rules ({}); remove one of them",
                        own->line ? fmt::format("{}:{}", own->file, own->line) : own->file,
                        own->string_value, profile, file.string()));
    config_value v = *rules;
    v.name = "rules";
    v.string_value = std::filesystem::absolute(file).string();
    out.push_back(std::move(v));
    return out;
}

void load_plugins(registry& reg, const pipeline_spec& spec, const run_options& options) {
    std::vector<std::filesystem::path> paths = options.plugin_paths;
    paths.insert(paths.end(), spec.search_paths.begin(), spec.search_paths.end());
    paths.insert(paths.end(), spec.load.begin(), spec.load.end());
    auto defaults = default_plugin_paths();
    paths.insert(paths.end(), defaults.begin(), defaults.end());
    reg.scan(paths);
}

void end_process_when_written() {
    if (NNERGY_UNDER_SANITIZER) return;  // leaks are only found at a normal exit
    spdlog::default_logger()->flush();
    std::fflush(nullptr);
    std::_Exit(0);
}

namespace {

// Wall time per stage of a run, logged at debug level (`nnergy -v`) when the run ends.
class stage_clock {
public:
    void lap(std::string_view stage) {
        const auto now = std::chrono::steady_clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
        last_ = now;
        cover_heap_growth_with_huge_pages();  // what the stage grew the heap by
        for (auto& [name, total] : stages_)
            if (name == stage) {
                total += ms;
                return;
            }
        stages_.emplace_back(std::string(stage), ms);
    }
    ~stage_clock() { log(); }
    /// Logs the stage times once (at the end of the run, or before the process ends there).
    void log() {
        if (logged_ || !spdlog::should_log(spdlog::level::debug)) return;
        logged_ = true;
        std::string line;
        for (const auto& [name, ms] : stages_)
            line += fmt::format("{}{} {:.2f}", line.empty() ? "" : ", ", name, ms);
        spdlog::debug("stage times (ms): {}", line);
    }

private:
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
    std::vector<std::pair<std::string, double>> stages_;
    bool logged_ = false;
};

}  // namespace

report_value run_pipeline(const pipeline_spec& spec, registry& reg, const run_options& options) {
    stage_clock clock;
    if (spec.model.path.empty() || spec.partitioner.plugin.empty() || spec.architectures.empty() ||
        spec.estimators.empty())
        throw error(fmt::format(
            "{}: this pipeline leaves [model], [partitioner], [[architecture]] or [[estimator]] "
            "to its [sweep] table: run it with `nnergy sweep`",
            spec.file.string()));
    // Frontend: named, or chosen by the model file's extension.
    const component_entry* fe = nullptr;
    if (!spec.model.frontend.empty()) {
        fe = &require(reg, NNERGY_KIND_FRONTEND, spec.model.frontend, spec.model.where);
    } else {
        fe = reg.frontend_for(spec.model.path);
        if (!fe)
            throw error(fmt::format("{}: no frontend reads '{}' (frontends: {}); set "
                                    "[model] frontend",
                                    spec.model.where.str(), spec.model.path.string(),
                                    reg.names_of(NNERGY_KIND_FRONTEND)),
                        exit_code::plugin_missing);
    }
    // Resolve every component before doing work, so a typo fails fast.
    const component_entry& pe =
        require(reg, NNERGY_KIND_PARTITIONER, spec.partitioner.plugin, spec.partitioner.where);
    std::vector<const component_entry*> arch_entries, est_entries, rep_entries;
    // "auto" is resolved once the hardware file is read, after the model: it always finds an
    // architecture (the reference one at worst), and reading the file first would delay the
    // model by the file's parse.
    for (const auto& a : spec.architectures)
        arch_entries.push_back(a.plugin == "auto" ? nullptr
                                                  : &require(reg, NNERGY_KIND_ARCHITECTURE,
                                                             a.plugin, a.plugin_location()));
    for (const auto& e : spec.estimators)
        est_entries.push_back(&require(reg, NNERGY_KIND_ESTIMATOR, e.plugin, e.where));
    for (const auto& r : spec.reporters)
        rep_entries.push_back(&require(reg, NNERGY_KIND_REPORTER, r.plugin, r.where));

    component_instance frontend(*fe, spec.model.options, {}, spec.base_dir);
    clock.lap("open frontend");
    // `nnergy bench --startup` sets NNERGY_SPAWN_NS: the moment the work on the model starts.
    if (std::getenv("NNERGY_SPAWN_NS"))
        spdlog::debug("reached the model {}",
                      std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count());
    graph g = load_model(frontend, spec.model.path);
    clock.lap("load");
    spdlog::info("loaded {} ({} nodes, {} tensors) with {}", spec.model.path.string(),
                 g.nodes.size(), g.tensors.size(), fe->name);

    const std::vector<dim_bindings> bindings =
        with_defaults(g, sweep_bindings(spec, options), options.default_dims);
    const bind_options bind_opts{options.strict};
    // Declared shapes that disagree with inferred ones: warned about once per tensor, however
    // many points the run sweeps (under --strict bind throws instead).
    std::vector<uint8_t> warned(g.tensors.size(), 0);
    const auto warn_disagreements = [&](const bound_graph& b) {
        for (const shape_disagreement& d : b.disagreements) {
            if (warned[d.tensor]) continue;
            warned[d.tensor] = 1;
            spdlog::warn("{} (the inferred shape is used; --strict makes this an error)",
                         d.message);
        }
    };
    bound_graph bg = nnergy::bind(g, bindings.front(), bind_opts);
    warn_disagreements(bg);
    clock.lap("bind");

    report_value unknown = report_value::array();
    for (uint32_t n : bg.unknown_nodes) {
        report_value u = report_value::object();
        u.set("node", report_value::of(g.nodes[n].name));
        u.set("op_type", report_value::of(g.nodes[n].op_type));
        u.set("domain", report_value::of(g.nodes[n].domain));
        unknown.push(std::move(u));
    }
    if (!bg.unknown_nodes.empty()) {
        std::string list;
        for (uint32_t n : bg.unknown_nodes)
            list += fmt::format("{}'{}' ({}{}{})", list.empty() ? "" : ", ", g.nodes[n].name,
                                g.nodes[n].domain, g.nodes[n].domain.empty() ? "" : ".",
                                g.nodes[n].op_type);
        if (options.strict)
            throw error(fmt::format("{}: {} node(s) with ops that cannot be counted: {}",
                                    spec.model.path.string(), bg.unknown_nodes.size(), list),
                        exit_code::strict);
        spdlog::warn(
            "{} node(s) with ops that cannot be counted (reported, not counted as "
            "zero): {}",
            bg.unknown_nodes.size(), list);
    }

    // The runtime profile decides which kernels a framework launches (PyTorch eager runs a
    // convolution, its batch norm and its ReLU as three kernels) unless it leaves fusion to
    // the partitioner's own rules (a compiling runtime).
    config_values runtime;
    config_values partitioner_config = spec.partitioner.config;
    if (spec.runtime) {
        runtime = read_runtime_file(spec.runtime->file);
        partitioner_config = partitioner_config_for_runtime(
            spec.partitioner.config, runtime, spec.runtime->profile, spec.runtime->file);
    }
    component_instance partitioner(pe, partitioner_config, {}, spec.base_dir, {},
                                   spec.partitioner.where);
    clock.lap("open partitioner");
    partition part = run_partitioner(partitioner, bg);
    clock.lap("partition");

    double macs = 0, flops = 0;
    auto count_work = [&] {
        macs = flops = 0;
        for (const op_counts& c : bg.counts) {
            macs += c.macs;
            flops += c.flops;
        }
    };
    count_work();

    report_value doc = report_value::object();
    doc.set("schema", report_value::of("nnergy.report/1"));
    report_value tool = report_value::object();
    tool.set("name", report_value::of("nnergy"));
    tool.set("version", report_value::of(NNERGY_VERSION));
    doc.set("tool", std::move(tool));
    doc.set("pipeline", report_value::of(spec.file.string()));
    report_value model = report_value::object();
    model.set("name", report_value::of(g.name));
    model.set("path", report_value::of(spec.model.path.string()));
    model.set("frontend", report_value::of(fe->name));
    report_value dims_doc = report_value::object();
    for (const auto& [k, v] : bg.bindings) dims_doc.set(k, integer(v));
    model.set("dims", std::move(dims_doc));
    if (bindings.size() > 1) {
        // Every value each swept dimension takes, in run order.
        report_value sweep = report_value::object();
        for (const auto& [name, first] : bindings.front()) {
            std::vector<int64_t> values;
            for (const dim_bindings& b : bindings)
                if (std::find(values.begin(), values.end(), b.at(name)) == values.end())
                    values.push_back(b.at(name));
            if (values.size() < 2) continue;
            report_value list = report_value::array();
            for (int64_t v : values) list.push(integer(v));
            sweep.set(name, std::move(list));
        }
        model.set("sweep", std::move(sweep));
    }
    model.set("nodes", integer(static_cast<int64_t>(g.nodes.size())));
    model.set("tensors", integer(static_cast<int64_t>(g.tensors.size())));
    model.set("unknown_ops", std::move(unknown));
    doc.set("model", std::move(model));
    report_value part_doc = report_value::object();
    part_doc.set("plugin", report_value::of(pe.name));
    part_doc.set("kernels", integer(static_cast<int64_t>(part.kernels.size())));
    doc.set("partitioner", std::move(part_doc));
    if (spec.runtime) {
        report_value rt = report_value::object();
        const config_value* name = find_value(runtime, "name");
        const config_value* mode = find_value(runtime, "mode");
        rt.set("profile", report_value::of(name ? name->string_value : spec.runtime->profile));
        rt.set("file", report_value::of(spec.runtime->file.string()));
        rt.set("mode", report_value::of(mode ? mode->string_value : ""));
        doc.set("runtime", std::move(rt));
    }

    std::vector<std::unique_ptr<component_instance>> estimators;
    for (size_t i = 0; i < spec.estimators.size(); ++i)
        estimators.push_back(std::make_unique<component_instance>(
            *est_entries[i], spec.estimators[i].config, config_values{}, spec.base_dir, runtime,
            spec.estimators[i].where));

    // Each hardware file is read once, however many bindings and precisions the run sweeps
    // over (a precision sweep is one architecture per precision, all on the same file).
    clock.lap("open estimators");
    // Read once per file and shared by every architecture instance made from it, for the
    // whole run: no copy per run, and values that stay where they are (estimators may key what
    // they derive from a hardware description by where its values live, so another file's
    // values must never take the place of freed ones while they run).
    std::map<std::filesystem::path, std::shared_ptr<const config_values>> hardware_files;
    std::vector<std::shared_ptr<const config_values>> hardware;
    for (size_t a = 0; a < spec.architectures.size(); ++a) {
        const architecture_spec& as = spec.architectures[a];
        auto found = hardware_files.find(as.hardware_file);
        if (found == hardware_files.end())
            found = hardware_files
                        .emplace(as.hardware_file, std::make_shared<const config_values>(
                                                       read_hardware_file(as.hardware_file)))
                        .first;
        hardware.push_back(found->second);
        if (!arch_entries[a]) {
            const config_value* cls = find_value(*found->second, "class");
            arch_entries[a] =
                &require(reg, NNERGY_KIND_ARCHITECTURE,
                         reg.architecture_for_class(cls && cls->kind == NNERGY_VALUE_STRING
                                                        ? std::string_view(cls->string_value)
                                                        : std::string_view()),
                         as.where);
        }
    }

    clock.lap("read hardware");
    report_value runs = report_value::array();
    // One loaded graph, bound and partitioned again for each point of a dimension sweep.
    for (size_t b = 0; b < bindings.size(); ++b) {
        if (b > 0) {
            bg = nnergy::bind(g, bindings[b], bind_opts);
            warn_disagreements(bg);
            part = run_partitioner(partitioner, bg);
            count_work();
        }
        report_value run_dims = report_value::object();
        for (const auto& [k, v] : bg.bindings) run_dims.set(k, integer(v));
        for (size_t a = 0; a < spec.architectures.size(); ++a) {
            const architecture_spec& as = spec.architectures[a];
            const config_values& hw = *hardware[a];
            const config_value* hw_name = find_value(hw, "name");
            const config_value* hw_class = find_value(hw, "class");
            clock.lap("report");
            const std::unique_ptr<component_instance> arch_held =
                component_instance::sharing_hardware(*arch_entries[a], as.config, hardware[a],
                                                     spec.base_dir, runtime, as.where);
            const component_instance& arch = *arch_held;
            clock.lap("open architecture");
            const nnergy_dtype precision = *dtype_from_name(as.precision);
            std::vector<nnergy_mapping> mappings = map_kernels(arch, bg, part, precision);
            clock.lap("map");

            nnergy_results results;
            report_value est_names = report_value::array();
            for (size_t e = 0; e < estimators.size(); ++e) {
                run_estimator(*estimators[e], arch, bg, part, mappings, precision, results);
                est_names.push(report_value::of(est_entries[e]->name));
            }
            clock.lap("estimate");
            require_finite_totals(results, part, as.hardware_file,
                                  spec.runtime ? spec.runtime->file : std::filesystem::path());

            report_value run = report_value::object();
            report_value arch_doc = report_value::object();
            arch_doc.set("plugin", report_value::of(arch_entries[a]->name));
            arch_doc.set("hardware",
                         report_value::of(hw_name ? hw_name->string_value : as.hardware));
            arch_doc.set("hardware_file", report_value::of(as.hardware_file.string()));
            arch_doc.set("class", report_value::of(hw_class ? hw_class->string_value : ""));
            arch_doc.set("precision", report_value::of(as.precision));
            // Where every number of the hardware description comes from, in SI units.
            report_value quantities = report_value::object();
            for (const config_value& v : hw) {
                if (v.source.empty()) continue;
                report_value q = report_value::object();
                q.set("value_si", number(v.float_value));
                q.set("unit", report_value::of(v.unit));
                q.set("source", report_value::of(v.source));
                // Added, not set: a hardware description names each key once (overlays and
                // borrows replace by name), so there is nothing to look for among the members.
                quantities.add(v.name, std::move(q));
            }
            arch_doc.set("quantities", std::move(quantities));
            run.set("architecture", std::move(arch_doc));
            run.set("estimators", std::move(est_names));

            report_value totals = report_value::object();
            totals.set("params", number(bg.total_params));
            totals.set("macs", number(macs));
            totals.set("flops", number(flops));
            for (const auto& [k, v] : results.totals) totals.set(k, number(v));
            // Work per joule, from the energy estimate and the bound dims: inferences (the
            // batch) and, for a sequence model, tokens (batch x seq).
            for (const auto& [k, v] : results.totals) {
                if (k != "energy_j" || !(v > 0)) continue;
                const auto batch = bg.bindings.find("batch");
                const double items =
                    batch != bg.bindings.end() ? static_cast<double>(batch->second) : 1.0;
                totals.set("inferences_per_j", number(items / v));
                if (const auto seq = bg.bindings.find("seq"); seq != bg.bindings.end())
                    totals.set("tokens_per_j",
                               number(items * static_cast<double>(seq->second) / v));
            }
            for (const auto& [k, v] : results.total_texts) totals.set(k, report_value::of(v));
            run.set("totals", std::move(totals));

            report_value concurrency = concurrency_document(part, results);
            report_value kernels = report_value::array();
            for (uint32_t k = 0; k < part.kernels.size(); ++k) {
                report_value kd = kernel_document(bg, part, k);
                kd.set("mapping", mapping_document(mappings[k]));
                report_value metrics = report_value::object();
                metrics.reserve(results.kernel_numbers[k].size() + results.kernel_texts[k].size());
                // A kernel's number keys are distinct; its texts are checked against them.
                for (const auto& [key, v] : results.kernel_numbers[k])
                    metrics.add(results.kernel_keys.name(key), number(v));
                for (const auto& [key, v] : results.kernel_texts[k])
                    metrics.set(key, report_value::of(v));
                kd.set("metrics", std::move(metrics));
                kernels.push(std::move(kd));
                // The kernel's mapping and results are in the document now: their memory is
                // freed for the document's own, which the rest of the kernels then take instead
                // of fresh memory (a 100,000-node graph's run held 63 MB less at its peak).
                mappings[k] = nnergy_mapping();
                std::vector<std::pair<uint32_t, double>>().swap(results.kernel_numbers[k]);
                results.kernel_texts[k] = decltype(results.kernel_texts)::value_type();
            }
            run.set("kernels", std::move(kernels));
            run.set("concurrency", std::move(concurrency));
            run.set("dims", run_dims);
            runs.push(std::move(run));
        }
    }
    // The first run's totals at the top level, so single-architecture users find them directly.
    doc.set("totals",
            runs.items().empty() ? report_value::object() : *runs.items()[0].get("totals"));
    doc.set("runs", std::move(runs));

    clock.lap("report");
    for (size_t r = 0; r < spec.reporters.size(); ++r) {
        component_instance reporter(*rep_entries[r], spec.reporters[r].config, {}, spec.base_dir,
                                    {}, spec.reporters[r].where);
        clock.lap("open reporter");
        std::vector<reporter_output> outputs =
            run_reporter(reporter, doc, spec.reporters[r].output, true);
        clock.lap("format");
        for (reporter_output& o : outputs) write_output(o, rep_entries[r]->name);
        clock.lap("write");
    }
    if (options.when_written) {
        clock.log();
        options.when_written();
    }
    return doc;
}

}  // namespace nnergy
