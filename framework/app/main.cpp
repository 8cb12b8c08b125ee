// SPDX-License-Identifier: Apache-2.0
// The nnergy command line. Exit codes are documented in docs/cli.md.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nnergy/plugin.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <boost/dll/runtime_symbol_info.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nnergy/framework/bench.hpp>
#include <nnergy/framework/calibrate.hpp>
#include <nnergy/framework/compare.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/hardware_catalog.hpp>
#include <nnergy/framework/heap_pages.hpp>
#include <nnergy/framework/json_graph_writer.hpp>
#include <nnergy/framework/measure.hpp>
#include <nnergy/framework/model_zoo.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <nnergy/framework/suggest.hpp>
#include <nnergy/framework/sweep.hpp>
#include <nnergy/framework/validate.hpp>
#include <nnergy/modeling/text.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "completion.hpp"

namespace {

using nnergy::exit_code;

// Parses "batch=8,seq=512" (also repeated --dim options).
nnergy::dim_bindings parse_dims(const std::vector<std::string>& items) {
    nnergy::dim_bindings out;
    for (const std::string& item : items) {
        std::string_view rest = item;
        while (!rest.empty()) {
            size_t comma = rest.find(',');
            std::string_view one = rest.substr(0, comma);
            rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
            size_t eq = one.find('=');
            if (eq == std::string_view::npos || eq == 0 || eq + 1 == one.size())
                throw nnergy::error(
                    fmt::format("--dim '{}': expected NAME=VALUE (e.g. batch=8)", one),
                    exit_code::usage);
            std::string name(one.substr(0, eq));
            std::string value(one.substr(eq + 1));
            size_t used = 0;
            long long v = 0;
            try {
                v = std::stoll(value, &used);
            } catch (...) {
                used = 0;
            }
            if (used != value.size() || v <= 0)
                throw nnergy::error(
                    fmt::format("--dim {}: '{}' is not a positive integer", name, value),
                    exit_code::usage);
            out[name] = v;
        }
    }
    return out;
}

// "MODE=VALUE" of `option`, both parts non-empty.
std::pair<std::string, std::string> split_setting(const std::string& item, const char* option,
                                                  const char* expected) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
        throw nnergy::error(fmt::format("{} '{}': expected {}", option, item, expected),
                            exit_code::usage);
    return {item.substr(0, eq), item.substr(eq + 1)};
}

// Where a calibration recipe's settings go (calibrate --recipe, validate --recipe).
struct recipe_settings {
    std::string& hardware;
    std::vector<std::string>& files;
    std::vector<std::string>& fit;
    std::vector<std::string>& fix;
    std::vector<std::string>& dims;
    std::vector<std::string>& models;
    std::vector<nnergy::calibration_tie>& ties;
    std::string& fit_to;
    std::string& objective;
    bool& discrete_counts;
};

// A recipe's settings beside the command line's: HARDWARE, files and the single-valued options
// given on the command line replace the recipe's; its lists follow the recipe's.
void apply_recipe(const nnergy::calibration_recipe& r, const CLI::App& command,
                  const recipe_settings& s) {
    const auto recipe_then = [](std::vector<std::string> recipe,
                                const std::vector<std::string>& command_line) {
        recipe.insert(recipe.end(), command_line.begin(), command_line.end());
        return recipe;
    };
    if (s.hardware.empty()) s.hardware = r.hardware;
    if (s.files.empty()) s.files = r.measurements;
    s.fit = recipe_then(r.fit, s.fit);
    s.fix = recipe_then(r.fix, s.fix);
    s.dims = recipe_then(r.dims, s.dims);
    s.models = recipe_then(r.models, s.models);
    s.ties = r.ties;
    if (!command.count("--fit-to") && !r.fit_to.empty()) s.fit_to = r.fit_to;
    if (!command.count("--objective") && !r.objective.empty()) s.objective = r.objective;
    if (!command.count("--discrete-counts") && r.discrete_counts)
        s.discrete_counts = *r.discrete_counts;
}

// "MODE=PERCENT" of --max-mape and --max-energy-mape.
std::map<std::string, double> parse_limits(const std::vector<std::string>& items,
                                           const char* option) {
    std::map<std::string, double> out;
    for (const std::string& item : items) {
        auto [mode, value] = split_setting(item, option, "MODE=PERCENT (e.g. eager=15)");
        size_t used = 0;
        double v = -1;
        try {
            v = std::stod(value, &used);
        } catch (...) {
            used = 0;
        }
        if (used != value.size() || !(v >= 0))
            throw nnergy::error(
                fmt::format("{} {}: '{}' is not a percentage (0 or more)", option, mode, value),
                exit_code::usage);
        out[mode] = v;
    }
    return out;
}

struct global_options {
    bool verbose = false;
    bool quiet = false;
    std::vector<std::string> plugin_paths;
};

std::vector<std::filesystem::path> to_paths(const std::vector<std::string>& v) {
    return {v.begin(), v.end()};
}

/// --plugin-path entries, then the default search path.
std::vector<std::filesystem::path> plugin_search_path(const global_options& g) {
    auto paths = to_paths(g.plugin_paths);
    auto defaults = nnergy::default_plugin_paths();
    paths.insert(paths.end(), defaults.begin(), defaults.end());
    return paths;
}

/// A log line's message as modeling::printable() shows it: messages quote names from the
/// user's files, whose bytes that are not UTF-8 would garble the line.
class printable_message : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg& msg, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        const std::string text =
            nnergy::modeling::printable({msg.payload.data(), msg.payload.size()});
        dest.append(text.data(), text.data() + text.size());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<printable_message>();
    }
};

void setup_logging(const global_options& g) {
    auto logger = spdlog::stderr_color_mt("nnergy");
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<printable_message>('*').set_pattern("nnergy: %^%l%$: %*");
    logger->set_formatter(std::move(formatter));
    spdlog::set_default_logger(logger);
    spdlog::set_level(g.verbose ? spdlog::level::debug
                      : g.quiet ? spdlog::level::err
                                : spdlog::level::warn);
}

int cmd_plugins(const global_options& g) {
    nnergy::registry reg;
    const std::vector<std::filesystem::path> paths = plugin_search_path(g);
    // Every library is opened and checked here, and the catalog refreshed.
    reg.scan(paths, nnergy::scan_mode::load_all);
    std::printf("Search path:\n");
    for (const auto& p : paths) std::printf("  %s\n", p.string().c_str());
    // Other runs open only the libraries they use and learn what the rest offer from here.
    std::printf("\nCatalog: %s\n",
                reg.catalog_path().empty()
                    ? "none (NNERGY_PLUGIN_CACHE=off: every run opens every library)"
                    : reg.catalog_path().string().c_str());
    std::printf("\nPlugins (%zu libraries, %zu components):\n", reg.libraries().size(),
                reg.components().size());
    for (const auto& lib : reg.libraries()) {
        std::printf("\n  %s %s  (vendor: %s, license: %s, ABI %u.%u)\n    file: %s\n",
                    lib->name.c_str(), lib->version.empty() ? "-" : lib->version.c_str(),
                    lib->vendor.empty() ? "-" : lib->vendor.c_str(), lib->license.c_str(),
                    lib->abi_major, lib->abi_minor, lib->file.string().c_str());
        for (const auto& c : reg.components()) {
            if (c.library != lib) continue;
            std::string extra =
                c.file_extensions.empty() ? "" : fmt::format(" [{}]", c.file_extensions);
            std::printf("    %-13s %s%s%s%s\n", std::string(nnergy::kind_name(c.kind)).c_str(),
                        c.name.c_str(), extra.c_str(), c.description.empty() ? "" : "  - ",
                        c.description.c_str());
        }
    }
    if (!reg.skipped().empty()) {
        std::printf("\nSkipped libraries (%zu):\n", reg.skipped().size());
        for (const auto& s : reg.skipped())
            std::printf("  %s\n    reason: %s\n", s.file.string().c_str(), s.reason.c_str());
    }
    return 0;
}

/// A model on the command line: a file, or the name of a bundled model (nnergy models).
std::string model_arg(const std::string& ref) {
    return nnergy::resolve_model(ref, {}, {"model", 0}).string();
}

/// Throws a usage error, with the closest names, when `name` is not a precision.
void check_precision(const std::string& name) {
    if (nnergy::dtype_from_name(name)) return;
    std::vector<std::string> known = nnergy::precision_names();
    known.push_back("all");
    throw nnergy::error(fmt::format("--precision: unknown precision '{}'{}", name,
                                    nnergy::did_you_mean(name, known)),
                        exit_code::usage);
}

/// `nnergy --version`: the version, then what the binary was built as.
std::string version_text() {
#if defined(__clang__)
    const std::string compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
    const std::string compiler = "GCC " __VERSION__;
#else
    const std::string compiler = "an unknown compiler";
#endif
    return fmt::format("nnergy {}\nplugin ABI {}.{}; built with {} ({}, C++ {})", NNERGY_VERSION,
                       NNERGY_ABI_MAJOR, NNERGY_ABI_MINOR, compiler, NNERGY_BUILD_TYPE,
                       __cplusplus);
}

/// The words the completion scripts offer for option values: the catalogs, the precisions and
/// the installed plugins.
nnergy::cli::completion_table completion_values(const global_options& g,
                                                const std::vector<std::string>& compare_formats,
                                                const std::vector<std::string>& validate_formats) {
    nnergy::registry reg;
    reg.scan(plugin_search_path(g));
    const auto components = [&](nnergy_component_kind kind) {
        std::vector<std::string> out;
        for (const nnergy::component_entry* c : reg.of_kind(kind)) out.push_back(c->name);
        return out;
    };
    nnergy::cli::completion_table t;
    t["--hw"] = {nnergy::hardware_catalog(), true};
    t["--runtime"] = {nnergy::runtime_catalog(), true};
    t["--precision"] = {nnergy::precision_names(), false};
    t["--precision"].words.push_back("all");
    t["--format"] = {nnergy::report_formats(), false};
    for (std::string& r : components(NNERGY_KIND_REPORTER)) t["--format"].words.push_back(r);
    t["compare --format"] = {compare_formats, false};
    t["sweep --format"] = {{"csv", "jsonl"}, false};
    t["validate --format"] = {validate_formats, false};
    // validate's --runtime is MODE=PROFILE: a bare profile name would be wrong there, and bash
    // splits words at '=', so it offers nothing.
    t["validate --runtime"] = {{}, false};
    t["--arch"] = {{"auto"}, false};
    for (std::string& a : components(NNERGY_KIND_ARCHITECTURE)) t["--arch"].words.push_back(a);
    t["--frontend"] = {components(NNERGY_KIND_FRONTEND), false};
    std::vector<std::string> models;
    for (const nnergy::zoo_model& m : nnergy::model_zoo()) models.push_back(m.name);
    t["model"] = {models, true};
    t["--model"] = t["model"];
    t["--sweep"] = t["model"];
    t["--sweep-command"] = t["model"];
    t["hardware show name"] = {nnergy::hardware_catalog(), true};
    t["completion shell"] = {{"bash", "zsh"}, false};
    t["measure --precision"] = {{"fp32", "tf32", "fp16", "bf16", "int8", "fp8"}, false};
    t["measure --hardware"] = t["--hw"];
    t["measure --mode"] = {{"eager", "cuda_graph", "compiled"}, false};
    t["measure --model"] = {models, false};
    return t;
}

/// The default pipeline of `analyze` and `compare` without architectures and reporters: the
/// model, the fusion partitioner with the bundled rules (or the runtime's, or --rules), the
/// runtime profile, and the roofline, energy and memory estimators.
nnergy::pipeline_spec default_pipeline(const std::string& model_file, const std::string& frontend,
                                       const std::string& runtime, const std::string& rules) {
    nnergy::pipeline_spec spec;
    spec.base_dir = std::filesystem::current_path();
    spec.model.path = model_file;
    spec.model.frontend = frontend;
    spec.model.where = {"command line", 0};
    spec.partitioner.plugin = "nnergy.partitioner.fusion";
    spec.partitioner.where = {"default pipeline", 0};
    // A runtime that launches the kernels of its own fusion rules replaces the
    // bundled default (an explicit --rules still conflicts with it, and says so).
    bool runtime_has_rules = false;
    if (!runtime.empty()) {
        nnergy::runtime_spec rt;
        rt.profile = runtime;
        rt.where = {"--runtime", 0};
        rt.file = nnergy::resolve_runtime(runtime, spec.base_dir, rt.where);
        runtime_has_rules =
            nnergy::find_value(nnergy::read_runtime_file(rt.file), "fusion_rules") != nullptr;
        spec.runtime = std::move(rt);
    }
    std::filesystem::path rules_file = rules;
    if (rules.empty() && !runtime_has_rules) {
        for (const auto& dir : nnergy::config_dirs())
            if (std::filesystem::is_regular_file(dir / "fusion" / "default.toml")) {
                rules_file = dir / "fusion" / "default.toml";
                break;
            }
        if (rules_file.empty())
            throw nnergy::error(
                "cannot find the bundled fusion rules "
                "(configs/fusion/default.toml); pass --rules FILE");
    }
    if (!rules_file.empty()) {
        nnergy::config_value rv;
        rv.name = "rules";
        rv.kind = NNERGY_VALUE_STRING;
        rv.string_value = std::filesystem::absolute(rules_file).string();
        rv.file = rules.empty() ? "default rules" : "--rules";
        spec.partitioner.config.push_back(rv);
    }
    nnergy::component_spec est;
    est.plugin = "nnergy.estimator.roofline";
    est.where = {"default pipeline", 0};
    spec.estimators.push_back(est);
    // Energy reads the roofline's latencies, so it comes after it.
    est.plugin = "nnergy.estimator.energy";
    spec.estimators.push_back(est);
    est.plugin = "nnergy.estimator.memory";
    spec.estimators.push_back(est);
    return spec;
}

/// validate's and calibrate's --dim: MODEL:NAME=VALUE binds for one model; NAME=VALUE for every
/// model that has the symbol.
std::map<std::string, nnergy::dim_bindings> parse_model_dims(
    const std::vector<std::string>& items) {
    std::map<std::string, nnergy::dim_bindings> out;
    for (const std::string& d : items) {
        const size_t colon = d.find(':');
        const size_t eq = d.find('=');
        const bool scoped = colon != std::string::npos && colon < eq;
        const std::string model = scoped ? d.substr(0, colon) : std::string();
        for (const auto& [name, value] : parse_dims({scoped ? d.substr(colon + 1) : d})) {
            if (name == "batch")
                throw nnergy::error(
                    "--dim batch: the batch of each configuration is the measured one",
                    exit_code::usage);
            out[model][name] = value;
        }
    }
    return out;
}

/// calibrate --here: the microbenchmark harness on this machine's CPU, writing the pass
/// (OUTPUT-runs.json) and a starting entry from it (OUTPUT-base.toml) beside the overlay; sets
/// `hardware` and `files` to them.
void run_here(const std::string& output, std::string harness, const std::string& python,
              int threads, bool quick, std::string& hardware, std::vector<std::string>& files) {
    std::error_code ec;
    if (harness.empty())
        if (const char* env = std::getenv("NNERGY_MICROBENCH")) harness = env;
    if (harness.empty())
        for (const auto& dir : nnergy::config_dirs()) {
            const std::filesystem::path p = dir.parent_path() / "tools" / "microbench" / "run.py";
            if (std::filesystem::is_regular_file(p, ec)) {
                harness = p.string();
                break;
            }
        }
    if (harness.empty() || !std::filesystem::is_regular_file(harness, ec))
        throw nnergy::error(
            harness.empty()
                ? std::string("--here: no microbenchmark harness found (tools/microbench/run.py "
                              "of the source tree; --harness PATH or NNERGY_MICROBENCH)")
                : fmt::format("--here: harness '{}' does not exist", harness));
    const std::filesystem::path out(output);
    const std::filesystem::path dir = out.parent_path().empty() ? "." : out.parent_path();
    const std::string stem = out.stem().string();
    const std::filesystem::path runs = dir / (stem + "-runs.json");
    const std::filesystem::path base = dir / (stem + "-base.toml");
    const auto self = boost::dll::program_location(ec);
    std::vector<std::string> argv = {python,     harness,       "--device",         "cpu",
                                     "--energy", "auto",        "--nnergy",         self.string(),
                                     "-o",       runs.string(), "--hardware-entry", base.string()};
    if (threads > 0) {
        argv.push_back("--threads");
        argv.push_back(std::to_string(threads));
    }
    if (quick) argv.push_back("--quick");
    spdlog::info("--here: {}", nnergy::shell_join(argv));
    const nnergy::command_result r = nnergy::run_command(argv);
    if (!r.started) throw nnergy::error(fmt::format("--here: cannot run {}: {}", python, r.error));
    if (r.exit_status != 0)
        throw nnergy::error(
            fmt::format("--here: the harness exited {} (see its messages above)", r.exit_status),
            exit_code::failure);
    hardware = base.string();
    files = {runs.string()};
}

/// What validate and calibrate share: the measurements, the hardware, and how each measured
/// mode, model and dim is estimated.

nnergy::validate_options measured_options(
    const global_options& g, const std::string& hardware, const std::vector<std::string>& files,
    const std::vector<std::string>& runtimes, const std::vector<std::string>& model_dirs,
    const std::vector<std::string>& dims, const std::vector<std::string>& input_shapes,
    const std::vector<std::string>& energy_domains, double duplicate_tolerance_pct) {
    nnergy::validate_options vo;
    vo.hardware = hardware;
    vo.measurements = to_paths(files);
    for (const std::string& r : runtimes) {
        auto [mode, profile] =
            split_setting(r, "--runtime", "MODE=PROFILE (e.g. eager=pytorch-eager)");
        vo.runtimes[mode] = profile;
    }
    vo.model_dirs = to_paths(model_dirs);
    vo.dims = parse_model_dims(dims);
    for (const std::string& item : input_shapes) {
        // MODEL:SHAPE: the measurements name several models, each with its own inputs.
        const size_t colon = item.find(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == item.size() ||
            colon > item.find('='))
            throw nnergy::error(fmt::format("--input-shape '{}': expected MODEL:[NAME=]D0xD1x... "
                                            "(the model as the measurements name it, such as "
                                            "resnet18:1x3x224x224)",
                                            item),
                                exit_code::usage);
        vo.input_shapes[item.substr(0, colon)].push_back(item.substr(colon + 1));
    }
    vo.collect.energy_domains = energy_domains;
    vo.collect.duplicate_tolerance = duplicate_tolerance_pct / 100;
    vo.plugin_paths = to_paths(g.plugin_paths);
    return vo;
}

/// The subcommand a command line names: its first word that is not an option (nor the value
/// of --plugin-path). "*" where every subcommand's options are needed (help, completion, a word
/// that names no subcommand, so that the error lists them as before); "" where none is named.
template <size_t N>
std::string chosen_subcommand(
    int argc, char** argv,
    const std::pair<std::string_view, std::function<void()>> (&definitions)[N]) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view word = argv[i];
        if (word == "-h" || word == "--help" || word == "--help-all") return "*";
    }
    for (int i = 1; i < argc; ++i) {
        const std::string_view word = argv[i];
        if (word == "--plugin-path") {
            ++i;
            continue;
        }
        if (word.empty() || word[0] == '-') continue;
        for (const auto& d : definitions)
            if (d.first == word) return word == "completion" ? "*" : std::string(word);
        return "*";
    }
    return "";
}

}  // namespace

int main(int argc, char** argv) {
    nnergy::back_heap_with_huge_pages();
    CLI::App app{"nnergy: latency, energy and memory of neural networks on hardware models"};
    app.require_subcommand(1);
    global_options g;
    app.add_flag("-v,--verbose", g.verbose, "Log debug details to stderr");
    app.add_flag("-q,--quiet", g.quiet, "Log only errors");
    app.add_option("--plugin-path", g.plugin_paths,
                   "Directory or library searched for plugins first (repeatable)");
    app.set_version_flag("--version", version_text(), "Print the version and build, then exit");
    app.footer(
        "Examples:\n"
        "  nnergy models\n"
        "  nnergy analyze resnet50 --hw h100-sxm5\n"
        "  nnergy compare bert_base --hw h100-sxm5,l4 --dim seq=128\n"
        "  nnergy hardware list\n"
        "  nnergy COMMAND --help");

    // run
    auto* run = app.add_subcommand("run", "Run a TOML pipeline (docs/pipelines.md)");
    std::string pipeline_file;
    std::vector<std::string> run_dims;
    bool run_strict = false;
    const auto define_run = [&] {
        run->add_option("pipeline", pipeline_file, "Pipeline file")->required();
        run->add_option("--dim", run_dims, "Bind dimension symbols: NAME=VALUE[,NAME=VALUE]");
        run->add_flag("--strict", run_strict,
                      "Fail when the model has ops that cannot be counted, or declared shapes "
                      "that disagree with inferred ones");
        run->footer(
            "Examples:\n"
            "  nnergy run configs/pipelines/quickstart.toml\n"
            "  nnergy run my-pipeline.toml --dim batch=8,seq=512 --strict");
    };

    // sweep
    auto* sweep = app.add_subcommand(
        "sweep", "Every configuration of a pipeline's axes, in parallel, as CSV or JSON Lines");
    std::string sweep_file, sweep_fmt;
    nnergy::sweep_options sweep_opts;
    const auto define_sweep = [&] {
        sweep
            ->add_option("pipeline", sweep_file,
                         "Pipeline file with a [sweep] table, or any pipeline")
            ->required();
        sweep->add_option("-j,--jobs", sweep_opts.jobs, "Threads (default: all cores)");
        sweep->add_option("-o,--output", sweep_opts.output,
                          "Rows to this file (.csv or .jsonl; '-' is standard output), overriding "
                          "[sweep] output");
        sweep->add_option("--format", sweep_fmt, "csv or jsonl (default: by the file's extension)")
            ->check(CLI::IsMember({"csv", "jsonl"}));
        sweep->add_flag("--resume", sweep_opts.resume,
                        "Keep the rows already in the output file and run only the others");
        sweep->add_option("--summary-json", sweep_opts.summary_json,
                          "Also write the summary (best per metric, Pareto front) as JSON");
        sweep->fallthrough();  // --quiet (no progress bar) and --verbose after the command too
        sweep->footer(
            "Example:\n  nnergy sweep configs/pipelines/which-gpu.toml -o which-gpu.csv --jobs 4\n"
            "Ctrl-C stops it with every row written whole; --resume then runs the rest.");
    };

    // analyze
    auto* analyze = app.add_subcommand("analyze", "Analyze a model with the default pipeline");
    std::string model_file, hw, runtime, format = "auto", output = "-", frontend, rules,
                                         kernel_rows;
    std::vector<std::string> an_dims, precisions{"float32"};
    std::vector<int64_t> batches;
    bool an_strict = false;
    std::string arch_plugin = "auto";
    std::vector<std::string> input_shapes;
    const auto define_analyze = [&] {
        analyze
            ->add_option("model", model_file,
                         "Model file (frontend chosen by extension) or bundled model name")
            ->required();
        analyze->add_option("--hw", hw, "Hardware catalog name or hardware TOML file")->required();
        analyze->add_option("--dim", an_dims, "Bind dimension symbols: NAME=VALUE[,NAME=VALUE]");
        analyze
            ->add_option("--batch", batches,
                         "Shorthand for --dim batch=N; several (1,8,64) sweep: one run each")
            ->delimiter(',');
        analyze
            ->add_option("--precision", precisions,
                         "Compute precision (float32, float16, ...); several sweep: one run each; "
                         "'all': every precision the hardware offers")
            ->delimiter(',');
        analyze->add_option("--runtime", runtime,
                            "Execution runtime profile: a name in configs/runtimes (pytorch-eager, "
                            "cuda-graph, fused) or a file");
        analyze->add_option("--arch", arch_plugin,
                            "Architecture plugin (default: the one for the hardware's class, "
                            "nnergy.architecture.<class>, else nnergy.architecture.reference)");
        analyze->add_option("--format", format,
                            "Report format: text, json, csv, markdown, html, trace, or a reporter "
                            "component name (default: by the -o file's extension, else text)");
        analyze->add_option("-o,--output", output, "Report file ('-' is standard output)");
        analyze->add_option("--kernels", kernel_rows,
                            "Text and Markdown reports: per-kernel rows to show, N (the N slowest, "
                            "in kernel order) or 'all'");
        analyze->add_option("--frontend", frontend, "Frontend plugin (default: by file extension)");
        analyze->add_option("--input-shape", input_shapes,
                            "TorchScript models: an input's shape, [NAME=]D0xD1x... (1x3x224x224, "
                            "ids=batchxseq); one per input, in order or by name; a number in the "
                            "leading dim is the batch (--batch overrides it)");
        analyze->add_option("--rules", rules, "Fusion rules file (default: the bundled rules)");
        analyze->add_flag("--strict", an_strict,
                          "Fail when the model has ops that cannot be counted, or declared shapes "
                          "that disagree with inferred ones");
        analyze->footer(
            "Examples:\n"
            "  nnergy analyze resnet50 --hw h100-sxm5\n"
            "  nnergy analyze model.onnx --hw a100-sxm4-80gb --batch 1,8,64 --precision "
            "float16,int8\n"
            "  nnergy analyze bert_base --hw h100-sxm5 --dim seq=128 --runtime cuda-graph "
            "--format json -o report.json\n"
            "An unbound 'batch' symbol is 1 (with a warning); other symbols need --dim NAME=N.");
    };

    // compare
    auto* compare = app.add_subcommand(
        "compare", "One model on several hardware entries side by side, ranked per metric");
    std::string cmp_model, cmp_runtime, cmp_format = "text", cmp_output = "-", cmp_precision;
    std::vector<std::string> cmp_hw, cmp_dims;
    int64_t cmp_batch = 0;
    std::vector<std::string> cmp_input_shapes;
    const std::vector<std::string> compare_formats{"text", "json", "csv"};
    const auto define_compare = [&] {
        compare
            ->add_option("model", cmp_model,
                         "Model file (frontend chosen by extension) or bundled model name")
            ->required();
        compare
            ->add_option("--hw", cmp_hw,
                         "Hardware catalog names or files, comma-separated (at least two)")
            ->delimiter(',')
            ->required();
        compare->add_option("--batch", cmp_batch, "Shorthand for --dim batch=N");
        compare->add_option("--dim", cmp_dims, "Bind dimension symbols: NAME=VALUE[,NAME=VALUE]");
        compare->add_option("--precision", cmp_precision,
                            "Compute precision (default float32); a device without it runs at its "
                            "own: bfloat16, float16, int8, else the first it offers");
        compare->add_option("--runtime", cmp_runtime, "Execution runtime profile, as for analyze");
        compare->add_option("--input-shape", cmp_input_shapes,
                            "TorchScript models: input shapes, as for analyze");
        compare->add_option("--format", cmp_format, "text, json or csv")
            ->check(CLI::IsMember(compare_formats));
        compare->add_option("-o,--output", cmp_output, "Output file ('-' is standard output)");
        compare->footer(
            "Examples:\n  nnergy compare configs/models/cnn_block.json --hw "
            "h100-sxm5,a100-sxm4-80gb,xeon-8490h --batch 8\n"
            "  nnergy compare resnet50 --hw h100-sxm5,l4,jetson-agx-orin --precision float16 "
            "--format csv");
    };

    // What calibrate's and validate --leave-out's fits may minimize (nnergy::fit_objective).
    const std::vector<std::string> objective_names = {
        nnergy::fit_objective_name(nnergy::fit_objective::log_rms),
        nnergy::fit_objective_name(nnergy::fit_objective::log_mean_abs),
        nnergy::fit_objective_name(nnergy::fit_objective::relative_rms)};
    const std::vector<std::string> quantity_names = {
        nnergy::fit_quantities_name(nnergy::fit_quantities::latency_and_energy),
        nnergy::fit_quantities_name(nnergy::fit_quantities::latency),
        nnergy::fit_quantities_name(nnergy::fit_quantities::energy)};

    // validate
    auto* validate = app.add_subcommand(
        "validate",
        "Measured latency and energy (measurement files) against estimates: errors and MAPE");
    std::vector<std::string> val_files, val_runtimes, val_dims, val_max_mape, val_max_energy_mape,
        val_models, val_domains;
    std::string val_hw, val_format = "text", val_output = "-", val_leave_out,
                        val_objective = "log-rms", val_fit_to = "both";
    std::vector<std::string> val_fit, val_fix, val_ties;
    std::string val_recipe;
    size_t val_sweeps = 200;
    bool val_ops = false, val_discrete_counts = false;
    std::string val_graphs_dir;
    double val_tolerance = 5, val_max_ratio = 0;
    std::vector<std::string> val_input_shapes;
    const std::vector<std::string> validate_formats{"text", "markdown", "html", "json"};
    const auto define_validate = [&] {
        validate->add_option(
            "files", val_files,
            "Measurement files (nnergy.measurements/1, docs/measurements.md), after a "
            "pipeline file (.toml) when --hw is not given: its [[architecture]] names "
            "the hardware (or a --recipe's)");
        validate->add_option(
            "--hw", val_hw,
            "Hardware catalog name or hardware TOML file (or a pipeline file first)");
        validate->add_option("--runtime", val_runtimes,
                             "MODE=PROFILE: the runtime profile of a measured mode (repeatable; "
                             "defaults: GPU eager=pytorch-eager, cuda_graph=cuda-graph; CPU "
                             "eager=pytorch-eager-cpu; 'none': no profile)");
        validate->add_option("--models", val_models,
                             "Directory of model files NAME.onnx, NAME.json or NAME.pt (with "
                             "--input-shape), searched before the bundled models (repeatable)");
        validate->add_option("--input-shape", val_input_shapes,
                             "MODEL:[NAME=]D0xD1x...: an input shape of a model read from a "
                             "TorchScript archive in --models (NAME.pt), one per input "
                             "(resnet18:1x3x224x224); the measured batch replaces the leading dim");
        validate->add_option("--dim", val_dims,
                             "[MODEL:]NAME=VALUE[,...]: dims beside batch, for one model, or for "
                             "every model with that symbol");
        validate->add_option("--max-mape", val_max_mape,
                             "MODE=PERCENT: fail (exit 6) when the mode's latency MAPE is higher "
                             "(repeatable)");
        validate->add_option("--max-energy-mape", val_max_energy_mape,
                             "MODE=PERCENT: fail (exit 6) when the mode's energy MAPE is higher "
                             "(repeatable)");
        validate
            ->add_option("--energy-domain", val_domains,
                         "Meter domains whose energies are summed as the measured energy (default: "
                         "every domain of a run)")
            ->delimiter(',');
        validate
            ->add_option("--duplicate-tolerance", val_tolerance,
                         "PERCENT: repeated runs of one configuration further apart are an error "
                         "(default 5); closer ones are merged (median)")
            ->check(CLI::NonNegativeNumber);
        validate->add_flag("--ops", val_ops,
                           "Runs of kind op too (single ops of the microbenchmark harness), "
                           "summarized as mode '<mode> ops'");
        validate->add_option(
            "--write-graphs", val_graphs_dir,
            "DIR: write each op run's graph (JSON graph) as DIR/<file stem>-run-<N>.json, "
            "N the run that first measured the configuration");
        validate
            ->add_option("--leave-out", val_leave_out,
                         "model, family or source: refit the entry's fitted constants without "
                         "each model (family; source: the model a run measured or an op run's "
                         "shapes come from) and report the error on the one left out")
            ->check(CLI::IsMember({"model", "family", "source"}));
        validate
            ->add_option(
                "--max-leave-out-ratio", val_max_ratio,
                "RATIO: with --leave-out, fail (exit 6) when a mode's held-out MAPE is more "
                "than RATIO times its in-sample MAPE")
            ->check(CLI::PositiveNumber);
        validate->add_option("--fit", val_fit,
                             "KEY pattern (* wildcard) of the constants --leave-out refits "
                             "(repeatable; default: those the entry marks as fitted)");
        validate->add_option("--fix", val_fix,
                             "KEY pattern of constants --leave-out keeps (repeatable)");
        validate->add_option("--tie", val_ties,
                             "FOLLOWER=LEADER: in --leave-out's fits, FOLLOWER keeps the entry's "
                             "ratio to the fitted LEADER (repeatable, as calibrate)");
        validate->add_flag("--discrete-counts", val_discrete_counts,
                           "In --leave-out's fits, counts that --fit names move by factors of "
                           "two (as calibrate)");
        validate
            ->add_option("--max-sweeps", val_sweeps,
                         "Most search sweeps of each of --leave-out's fits (default 200)")
            ->check(CLI::Range(1, 10000));
        validate->add_option(
            "--recipe", val_recipe,
            "FILE: a calibration recipe (docs/calibrate.md) whose fit --leave-out checks: its "
            "hardware, measurement files, runs, --fit, --fix, --tie, --dim, --models, objective "
            "and what it fits to, as calibrate --recipe takes them");
        validate
            ->add_option("--objective", val_objective,
                         "log-rms (default), log-mean-abs or relative-rms: what --leave-out's "
                         "fits minimize (as calibrate)")
            ->check(CLI::IsMember(objective_names));
        validate
            ->add_option("--fit-to", val_fit_to,
                         "both (default), latency or energy: what --leave-out's fits count (as "
                         "calibrate)")
            ->check(CLI::IsMember(quantity_names));
        validate
            ->add_option("--format", val_format,
                         "text, markdown, html or json (the last three through the reporter "
                         "plugins), or a reporter component's name")
            ->check([&](const std::string& f) {
                const bool known = std::find(validate_formats.begin(), validate_formats.end(), f) !=
                                   validate_formats.end();
                return known || f.find('.') != std::string::npos
                           ? std::string()
                           : "--format: expected text, markdown, html, json or a reporter "
                             "component's name (such as nnergy.reporter.markdown), not '" +
                                 f + "'";
            });
        validate->add_option("-o,--output", val_output, "Output file ('-' is standard output)");
        validate->footer(
            "Examples:\n"
            "  nnergy validate --hw h100-sxm5 h100-models.json --dim bert_base:seq=128\n"
            "  nnergy validate --hw xeon-5th-gen-16vcpu xeon.json --max-mape eager=12\n"
            "  nnergy validate --hw h100-sxm5 runs.json --models ./onnx --runtime compiled=fused "
            "--format html -o validation.html\n"
            "  nnergy validate --hw xeon-5th-gen-16vcpu xeon.json --leave-out model "
            "--max-leave-out-ratio 1.5\n"
            "  nnergy validate my-gpu.toml h100-models.json   # the pipeline's hardware, plugins, "
            "runtime\n"
            "Exit codes: 6 when a --max-mape, --max-energy-mape or --max-leave-out-ratio is "
            "exceeded "
            "(docs/validate.md).");
    };

    // calibrate
    auto* calibrate = app.add_subcommand(
        "calibrate",
        "Refit a hardware entry's fitted constants to measurement files; write an overlay");
    std::vector<std::string> cal_files, cal_runtimes, cal_dims, cal_models, cal_domains, cal_fit,
        cal_fix;
    std::string cal_hw, cal_output, cal_runs = "all", cal_objective = "log-rms",
                                    cal_fit_to = "both";
    std::vector<std::string> cal_ties;
    std::vector<nnergy::calibration_tie> recipe_ties;
    double cal_tolerance = 5;
    size_t cal_sweeps = 200;
    bool cal_discrete_counts = false;
    bool cal_here = false, cal_quick = false;
    std::string cal_harness, cal_python = "/usr/bin/python3", cal_recipe;
    int cal_threads = 0;
    std::vector<std::string> cal_input_shapes;
    const auto define_calibrate = [&] {
        calibrate->add_option("hardware", cal_hw, "Hardware catalog name or hardware TOML file");
        calibrate->add_option("files", cal_files,
                              "Measurement files (nnergy.measurements/1, docs/measurements.md)");
        calibrate->add_flag(
            "--here", cal_here,
            "Measure this machine's CPU with the microbenchmark harness, write a "
            "starting entry from the pass, and calibrate it (no HARDWARE or files)");
        calibrate->add_flag("--quick", cal_quick,
                            "With --here: the harness's quick pass (a smoke "
                            "test: one small shape per class)");
        calibrate->add_option("--threads", cal_threads, "With --here: threads of the main pass")
            ->check(CLI::PositiveNumber);
        calibrate->add_option("--harness", cal_harness,
                              "With --here: the harness's run.py (default: tools/microbench/run.py "
                              "of the source tree)");
        calibrate->add_option(
            "--python", cal_python,
            "With --here: a Python that imports torch (default /usr/bin/python3)");
        calibrate->add_option("-o,--output", cal_output, "The overlay file to write (TOML)")
            ->required();
        calibrate->add_option(
            "--recipe", cal_recipe,
            "FILE: a calibration recipe (nnergy.calibration/1, docs/calibrate.md): hardware, "
            "measurement files, --runs, --fit-to, --objective, --fit, --fix, --tie, --dim and "
            "--models as data; HARDWARE, files and the single-valued options on the command "
            "line replace the recipe's, its --fit, --fix, --tie, --dim and --models add to them");
        calibrate->add_option("--fit", cal_fit,
                              "KEY pattern (* wildcard) of the constants to fit (repeatable; "
                              "default: the continuous ones the entry marks as fitted, and the "
                              "runtime profiles' fitted host costs)");
        calibrate->add_option("--fix", cal_fix, "KEY pattern of constants to keep (repeatable)");
        calibrate
            ->add_option("--runs", cal_runs,
                         "model, op or all (default): the kinds of runs fitted to (op: the "
                         "microbenchmark harness's single ops)")
            ->check(CLI::IsMember({"model", "op", "all"}));
        calibrate->add_option("--runtime", cal_runtimes,
                              "MODE=PROFILE: the runtime profile of a measured mode (as validate)");
        calibrate->add_option("--models", cal_models,
                              "Directory of model files NAME.onnx or NAME.json (repeatable)");
        calibrate->add_option("--dim", cal_dims, "[MODEL:]NAME=VALUE[,...]: dims beside batch");
        calibrate->add_option("--input-shape", cal_input_shapes,
                              "MODEL:[NAME=]D0xD1x...: an input shape of a model read from a "
                              "TorchScript archive in --models, as for validate");
        calibrate
            ->add_option("--energy-domain", cal_domains,
                         "Meter domains whose energies are summed as the measured energy")
            ->delimiter(',');
        calibrate
            ->add_option("--duplicate-tolerance", cal_tolerance,
                         "PERCENT: repeated runs further apart are an error (default 5)")
            ->check(CLI::NonNegativeNumber);
        calibrate->add_flag("--discrete-counts", cal_discrete_counts,
                            "Counts that --fit names (tile sizes, split depths) move by factors "
                            "of two, not continuously");
        calibrate
            ->add_option("--max-sweeps", cal_sweeps,
                         "Most search sweeps (default 200; the search ends sooner once its step is "
                         "below 0.1%)")
            ->check(CLI::Range(1, 10000));
        calibrate
            ->add_option("--objective", cal_objective,
                         "log-rms (default: the root mean square of log(estimate / measurement), "
                         "which weighs the largest misses most) or log-mean-abs (the mean of "
                         "|log(estimate / measurement)|, the log form of MAPE) or relative-rms "
                         "(the root mean square of estimate / measurement - 1)")
            ->check(CLI::IsMember(objective_names));
        calibrate->add_option(
            "--tie", cal_ties,
            "FOLLOWER=LEADER: the constant FOLLOWER keeps the entry's ratio to the "
            "fitted LEADER instead of being fitted on its own (repeatable; a "
            "coefficient scaled from another)");
        calibrate
            ->add_option("--fit-to", cal_fit_to,
                         "both (default), latency or energy: the measured quantities the "
                         "objective counts (energy: energy coefficients, whose latency effect "
                         "through throttling is not what they are fitted to)")
            ->check(CLI::IsMember(quantity_names));
        calibrate->footer(
            "Examples:\n"
            "  nnergy calibrate xeon-5th-gen-16vcpu xeon.json -o xeon-calibrated.toml\n"
            "  nnergy analyze resnet50 --hw xeon-5th-gen-16vcpu+xeon-calibrated.toml\n"
            "  nnergy calibrate h100-sxm5 runs.json --fit 'gpu.kernels.conv.*' -o h100-conv.toml\n"
            "  nnergy calibrate --here -o this-cpu.toml     # then --hw this-cpu.toml\n"
            "  nnergy calibrate --recipe tests/data/measurements/h100-sxm5-energy.calibration.toml "
            "-o e.toml\n"
            "See docs/calibrate.md.");
    };

    // plugins
    auto* plugins = app.add_subcommand("plugins", "List plugins found, and why any was skipped");
    const auto define_plugins = [&] {
        plugins->footer(
            "Examples:\n"
            "  nnergy plugins\n"
            "  nnergy --plugin-path ./my-plugins plugins");
    };

    // convert
    auto* convert = app.add_subcommand("convert", "Write a model as a JSON graph");
    std::string convert_in, convert_out, convert_frontend;
    std::vector<std::string> convert_input_shapes;
    const auto define_convert = [&] {
        convert->add_option("model", convert_in, "Model file or bundled model name")->required();
        convert->add_option("-o,--output", convert_out, "Output JSON graph ('-' for stdout)")
            ->required();
        convert->add_option("--frontend", convert_frontend,
                            "Frontend plugin (default: by extension)");
        convert->add_option("--input-shape", convert_input_shapes,
                            "TorchScript models: input shapes, as for analyze (the leading number "
                            "becomes the symbol batch in the written graph)");
        convert->footer(
            "Examples:\n"
            "  nnergy convert model.onnx -o model.json\n"
            "  nnergy convert resnet50 -o -");
    };

    // bench
    auto* bench = app.add_subcommand("bench", "Time parse, inference, partition and estimate");
    std::vector<size_t> bench_sizes{1000, 10000, 100000};
    int bench_repeats = 5;
    std::vector<std::string> bench_models, bench_dims;
    std::vector<std::string> bench_input_shapes;
    std::string bench_sweep;
    std::string bench_compare;
    std::string bench_startup;
    std::string bench_sweep_command;
    std::vector<int> bench_threads{1, 2};
    const auto define_bench = [&] {
        bench->add_option("--nodes", bench_sizes, "Synthetic graph sizes in nodes")->delimiter(',');
        bench->add_option("--repeats", bench_repeats, "Repetitions per size (median reported)");
        bench->add_option("--model", bench_models,
                          "Time loading these model files (or bundled models) instead (load, "
                          "inference, counting)");
        bench->add_option("--input-shape", bench_input_shapes,
                          "With --model or --startup: TorchScript input shapes, as for analyze");
        bench->add_option("--sweep", bench_sweep,
                          "Evaluations per second of a sweep of this model over the catalog");
        bench->add_option(
            "--compare", bench_compare,
            "Run the same cases with this binary and with OLD_BINARY (another build's "
            "nnergy) and print each figure beside their ratio");
        bench->add_option(
            "--startup", bench_startup,
            "Start-up and end-to-end times of new nnergy processes analyzing this model");
        bench->add_option(
            "--sweep-command", bench_sweep_command,
            "Wall time of `nnergy sweep` of this model over catalog x precision x batch "
            "(1,000 configurations)");
        bench
            ->add_option("--threads", bench_threads,
                         "With --sweep or --sweep-command: thread counts to time, e.g. 1,2,4 "
                         "(default 1,2)")
            ->delimiter(',');
        bench->add_option("--dim", bench_dims,
                          "With --model: NAME=VALUE[,NAME=VALUE] (default batch=1)");
        bench->footer(
            "Examples:\n"
            "  nnergy bench --nodes 1000,10000 --repeats 3\n"
            "  nnergy bench --model model.onnx --dim batch=1,seq=128\n"
            "  nnergy bench --sweep resnet50 --threads 1,2,4");
    };

    // hardware
    auto* hardware = app.add_subcommand("hardware", "The hardware catalog");
    auto* hardware_list = hardware->add_subcommand("list", "One line per catalog entry");
    auto* hardware_show =
        hardware->add_subcommand("show", "Every value of one entry, with units and sources");
    std::string hardware_name;
    const auto define_hardware = [&] {
        hardware->require_subcommand(1);
        hardware_show->add_option("name", hardware_name, "Catalog name or hardware file")
            ->required();
        hardware->footer(
            "Examples:\n"
            "  nnergy hardware list\n"
            "  nnergy hardware show h100-sxm5");
        hardware_list->footer("Example:\n  nnergy hardware list");
        hardware_show->footer(
            "Examples:\n"
            "  nnergy hardware show h100-sxm5\n"
            "  nnergy hardware show ./my-accelerator.toml");
    };

    // models
    auto* models =
        app.add_subcommand("models", "The bundled models: name, what it is, params, nodes, inputs");
    const auto define_models = [&] {
        models->footer(
            "Examples:\n"
            "  nnergy models\n"
            "  nnergy analyze resnet50 --hw h100-sxm5   (a name that is not a file is looked up "
            "here)");
    };

    // measure
    auto* measure = app.add_subcommand(
        "measure",
        "Run a command and measure its energy: NVIDIA GPUs (NVML), CPU package and DRAM (RAPL), "
        "Jetson rails (INA3221)");
    nnergy::measure_options measure_opts;
    std::vector<unsigned> measure_gpus;
    double measure_items = 0, measure_sample_ms = 10;
    long long measure_idle_ms = 500, measure_batch = 0;
    const auto define_measure = [&] {
        measure
            ->add_option(
                "--gpu", measure_gpus,
                "Meter these GPUs (NVML indices, comma-separated); naming any meter "
                "(--gpu, --rapl, --jetson) uses only those, and one unavailable is an error")
            ->delimiter(',');
        measure->add_flag("--rapl", measure_opts.rapl,
                          "Meter the CPU packages and DRAM through RAPL");
        measure->add_flag("--jetson", measure_opts.jetson,
                          "Meter the Jetson power rails (INA3221 under hwmon)");
        measure->add_option("--items", measure_items,
                            "Items the command processes (images, tokens): gives items per joule");
        measure->add_option(
            "--idle-ms", measure_idle_ms,
            "Idle baseline measured before the command, in ms (0: none; default 500)");
        measure->add_option(
            "--sample-ms", measure_sample_ms,
            "Power sampling period in ms (peak power, sampled domains; default 10)");
        measure->add_option("--json", measure_opts.json_file,
                            "Write a measurement file (docs/measurements.md)");
        measure->add_option("--model", measure_opts.model, "Label for the file: the model run");
        measure->add_option("--hw,--hardware", measure_opts.hardware,
                            "Label for the file: the machine, e.g. a hardware catalog name "
                            "(default: the host name)");
        measure->add_option("--batch", measure_batch, "Label for the file: the batch size");
        measure->add_option("--precision", measure_opts.precision,
                            "Label for the file: fp32, tf32, fp16, bf16, int8 or fp8 (float16 and "
                            "the like are accepted)");
        measure->add_option("--mode", measure_opts.mode,
                            "Label for the file: the runtime mode (eager, cuda_graph, compiled)");
        measure->add_option("--device", measure_opts.device,
                            "Label for the file: the device the work ran on (cpu, cuda:0)");
        measure->add_flag("--serve", measure_opts.serve,
                          "Run no command: answer begin/end requests on standard input with the "
                          "meters' readings, a JSON line each (docs/measure.md)");
        measure->add_option("command", measure_opts.command,
                            "The command and its arguments, after --");
        measure->footer(
            "Examples:\n"
            "  nnergy measure -- python3 infer.py --batch 8\n"
            "  nnergy measure --gpu 0 --items 6400 --json run.json -- ./bench --iters 800\n"
            "  nnergy measure --rapl --idle-ms 1000 -- sh -c 'make -j8'\n"
            "The command's exit status is passed on (128 + signal when killed, 127 when it cannot "
            "start); the figures go to stderr.");
    };

    // completion
    auto* completion =
        app.add_subcommand("completion", "Print a shell completion script (bash or zsh)");
    std::string completion_shell;
    const auto define_completion = [&] {
        completion->add_option("shell", completion_shell, "bash or zsh")
            ->required()
            ->check(CLI::IsMember({"bash", "zsh"}));
        completion->footer(
            "Examples:\n"
            "  source <(nnergy completion bash)        # in ~/.bashrc\n"
            "  nnergy completion zsh > ~/.zfunc/_nnergy  # with fpath+=(~/.zfunc) before compinit");
    };

    // Options are defined for the subcommand the command line names (defining those of every
    // subcommand costs a third of start-up); help, completion and a word that names no
    // subcommand get all of them, a command line without one none.
    const std::pair<std::string_view, std::function<void()>> definitions[] = {
        {"run", define_run},
        {"sweep", define_sweep},
        {"analyze", define_analyze},
        {"compare", define_compare},
        {"validate", define_validate},
        {"calibrate", define_calibrate},
        {"plugins", define_plugins},
        {"convert", define_convert},
        {"bench", define_bench},
        {"hardware", define_hardware},
        {"models", define_models},
        {"measure", define_measure},
        {"completion", define_completion},
    };
    const std::string chosen = chosen_subcommand(argc, argv, definitions);
    for (const auto& [name, define] : definitions)
        if (chosen == "*" || chosen == name) define();

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : static_cast<int>(exit_code::usage);
    }
    setup_logging(g);
    // Runs open only the plugin libraries they use; the catalog says what the others offer.
    nnergy::registry::set_process_catalog(nnergy::default_catalog_path());

    try {
        if (plugins->parsed()) return cmd_plugins(g);

        if (models->parsed()) {
            nnergy::registry reg;
            reg.scan(plugin_search_path(g));
            return nnergy::print_model_list(reg, stdout);
        }

        if (completion->parsed()) {
            const std::string script = nnergy::cli::completion_script(
                app, completion_shell, completion_values(g, compare_formats, validate_formats));
            std::fwrite(script.data(), 1, script.size(), stdout);
            return 0;
        }

        if (run->parsed()) {
            nnergy::pipeline_spec spec = nnergy::parse_pipeline(pipeline_file);
            nnergy::run_options opts;
            opts.plugin_paths = to_paths(g.plugin_paths);
            opts.dims = parse_dims(run_dims);
            opts.strict = run_strict;
            nnergy::registry reg;
            nnergy::load_plugins(reg, spec, opts);
            opts.when_written = nnergy::end_process_when_written;
            nnergy::run_pipeline(spec, reg, opts);
            return 0;
        }

        if (sweep->parsed()) {
            sweep_opts.plugin_paths = to_paths(g.plugin_paths);
            sweep_opts.progress = !g.quiet;
            if (!sweep_fmt.empty())
                sweep_opts.format =
                    sweep_fmt == "jsonl" ? nnergy::sweep_format::jsonl : nnergy::sweep_format::csv;
            return nnergy::run_sweep(nnergy::parse_pipeline(sweep_file), sweep_opts);
        }

        if (analyze->parsed()) {
            nnergy::pipeline_spec spec =
                default_pipeline(model_arg(model_file), frontend, runtime, rules);
            nnergy::run_options opts;
            opts.plugin_paths = to_paths(g.plugin_paths);
            opts.dims = parse_dims(an_dims);
            opts.default_dims["batch"] = 1;
            for (int64_t b : batches)
                if (b <= 0) throw nnergy::error("--batch must be positive", exit_code::usage);
            if (batches.size() == 1) opts.dims["batch"] = batches.front();
            if (batches.size() > 1) opts.sweeps["batch"] = batches;
            // 8x3x224x224 binds batch=8 unless --batch or --dim says otherwise.
            nnergy::add_input_shapes(spec.model, input_shapes, {"--input-shape", 0}, opts.dims,
                                     opts.sweeps);
            opts.strict = an_strict;
            nnergy::architecture_spec arch;
            arch.plugin = arch_plugin;
            arch.where = {"--hw", 0};
            arch.plugin_where = {"--arch", 0};
            arch.hardware = hw;
            arch.hardware_file = nnergy::resolve_hardware(hw, spec.base_dir, arch.where);
            // Read here only for "all" precisions (at most once).
            std::optional<nnergy::config_values> hw_values;
            const auto hardware_values = [&]() -> const nnergy::config_values& {
                if (!hw_values) hw_values = nnergy::read_hardware_file(arch.hardware_file);
                return *hw_values;
            };
            std::vector<std::string> expanded;
            for (const std::string& precision : precisions) {
                if (precision != "all") {
                    expanded.push_back(precision);
                    continue;
                }
                // Every precision the hardware offers.
                for (std::string& p : nnergy::hardware_precisions(hardware_values()))
                    if (std::find(expanded.begin(), expanded.end(), p) == expanded.end())
                        expanded.push_back(std::move(p));
            }
            for (const std::string& precision : expanded) {
                check_precision(precision);
                arch.precision =
                    std::string(nnergy::dtype_name(*nnergy::dtype_from_name(precision)));
                spec.architectures.push_back(arch);
            }
            nnergy::reporter_spec rep;
            rep.plugin = nnergy::reporter_component(format, output);
            if (rep.plugin.empty())
                throw nnergy::error(
                    fmt::format("-o {}: the extension names no report format; add --format "
                                "({})",
                                output, fmt::join(nnergy::report_formats(), ", ")),
                    exit_code::usage);
            rep.where = {"--format", 0};
            rep.output = output;
            if (!kernel_rows.empty()) {
                if (rep.plugin != "nnergy.reporter.text" &&
                    rep.plugin != "nnergy.reporter.markdown")
                    throw nnergy::error("--kernels applies to the text and markdown reports",
                                        exit_code::usage);
                nnergy::config_value v;
                v.name = "kernels";
                v.file = "--kernels";
                if (kernel_rows == "all") {
                    v.kind = NNERGY_VALUE_STRING;
                    v.string_value = kernel_rows;
                } else {
                    size_t used = 0;
                    long long n = -1;
                    try {
                        n = std::stoll(kernel_rows, &used);
                    } catch (...) {
                        used = 0;
                    }
                    if (used != kernel_rows.size() || n < 0)
                        throw nnergy::error(
                            fmt::format("--kernels '{}': expected a count (0 or more) or 'all'",
                                        kernel_rows),
                            exit_code::usage);
                    v.kind = NNERGY_VALUE_INT;
                    v.int_value = n;
                    v.float_value = static_cast<double>(n);
                }
                rep.config.push_back(v);
            }
            spec.reporters.push_back(rep);
            nnergy::registry reg;
            nnergy::load_plugins(reg, spec, opts);
            // arch_plugin "auto" stays: run_pipeline picks the class plugin (a GPU file gets
            // the SIMT model) when it reads the hardware file, after the model.
            opts.when_written = nnergy::end_process_when_written;
            nnergy::run_pipeline(spec, reg, opts);
            return 0;
        }

        if (validate->parsed()) {
            nnergy::validate_options vo;
            std::optional<nnergy::pipeline_spec> val_pipeline;
            std::vector<nnergy::calibration_tie> val_recipe_ties;
            bool val_recipe_op_runs_only = false;
            if (!val_recipe.empty()) {
                // As calibrate --recipe: the command line's single values replace the
                // recipe's, its lists add to them.
                const nnergy::calibration_recipe r = nnergy::read_calibration_recipe(val_recipe);
                if (val_leave_out.empty())
                    throw nnergy::error("--recipe names a fit: it goes with --leave-out",
                                        exit_code::usage);
                if (!val_files.empty() &&
                    std::filesystem::path(val_files.front()).extension() == ".toml")
                    throw nnergy::error(
                        fmt::format("validate {}: a pipeline file and a --recipe both name the "
                                    "hardware: give one of them",
                                    val_files.front()),
                        exit_code::usage);
                apply_recipe(r, *validate,
                             {val_hw, val_files, val_fit, val_fix, val_dims, val_models,
                              val_recipe_ties, val_fit_to, val_objective, val_discrete_counts});
                // Its runs: op runs only, model runs only, or both.
                if (!r.runs.empty() && !val_ops) {
                    if (r.runs != "model") val_ops = true;
                    if (r.runs == "op") val_recipe_op_runs_only = true;
                }
            }
            if (val_files.empty())
                throw nnergy::error("validate needs measurement files (or a --recipe)",
                                    exit_code::usage);
            if (std::filesystem::path(val_files.front()).extension() == ".toml") {
                if (!val_hw.empty())
                    throw nnergy::error(
                        fmt::format("validate {}: give the hardware in the pipeline's "
                                    "[[architecture]] or with --hw, not both",
                                    val_files.front()),
                        exit_code::usage);
                val_pipeline =
                    nnergy::parse_pipeline(val_files.front(), nnergy::pipeline_use::validate);
                val_files.erase(val_files.begin());
            } else if (val_hw.empty()) {
                throw nnergy::error(
                    "validate needs --hw NAME (a catalog name or file) or a pipeline file first",
                    exit_code::usage);
            }
            vo = measured_options(g, val_hw, val_files, val_runtimes, val_models, val_dims,
                                  val_input_shapes, val_domains, val_tolerance);
            vo.pipeline = std::move(val_pipeline);
            vo.max_mape = parse_limits(val_max_mape, "--max-mape");
            vo.max_energy_mape = parse_limits(val_max_energy_mape, "--max-energy-mape");
            vo.collect.include_ops = val_ops;
            if (val_recipe_op_runs_only) vo.collect.include_models = false;
            vo.graphs_dir = val_graphs_dir;
            if (!val_graphs_dir.empty() && !val_ops)
                throw nnergy::error("--write-graphs writes op runs' graphs: it needs --ops",
                                    exit_code::usage);
            if (val_leave_out.empty() &&
                (val_max_ratio > 0 || !val_fit.empty() || !val_fix.empty() || !val_ties.empty() ||
                 val_discrete_counts || validate->count("--max-sweeps") ||
                 validate->count("--objective") || validate->count("--fit-to")))
                throw nnergy::error(
                    "--max-leave-out-ratio, --fit, --fix, --tie, --discrete-counts, "
                    "--max-sweeps, --objective and --fit-to need --leave-out",
                    exit_code::usage);
            const nnergy::validation_session session(vo);
            nnergy::validation_result result = nnergy::validate_session(session, vo);
            if (!val_leave_out.empty()) {
                nnergy::calibrate_options co;
                co.fit = val_fit;
                co.fix = val_fix;
                co.max_sweeps = val_sweeps;
                co.discrete_counts = val_discrete_counts;
                co.goal = {*nnergy::fit_objective_from_name(val_objective),
                           *nnergy::fit_quantities_from_name(val_fit_to)};
                co.ties = val_recipe_ties;
                for (const std::string& t : val_ties) {
                    auto [follower, leader] =
                        split_setting(t, "--tie", "FOLLOWER=LEADER (two hardware keys)");
                    co.ties.push_back(
                        {follower, leader, fmt::format("--tie {}={}", follower, leader)});
                }
                nnergy::add_leave_out(result, session, vo, co,
                                      *nnergy::leave_out_unit_from_name(val_leave_out),
                                      val_max_ratio);
            }
            if (val_format == "text") {
                nnergy::write_output(nnergy::validation_text(result), val_output, "validate");
            } else {
                // Markdown, HTML and JSON (or any reporter named) through the reporter plugins,
                // from the validation document (schema nnergy.validation/1).
                nnergy::registry reg;
                reg.scan(plugin_search_path(g));
                const std::string name = val_format.find('.') == std::string::npos
                                             ? "nnergy.reporter." + val_format
                                             : val_format;
                const nnergy::component_entry* rep = reg.find(NNERGY_KIND_REPORTER, name);
                if (!rep)
                    throw nnergy::error(
                        fmt::format("validate --format {}: no reporter '{}' (reporters: {})",
                                    val_format, name, reg.names_of(NNERGY_KIND_REPORTER)),
                        exit_code::plugin_missing);
                nnergy::component_instance reporter(*rep, {});
                for (nnergy::reporter_output& o : nnergy::run_reporter(
                         reporter, nnergy::validation_document(result), val_output, true))
                    nnergy::write_output(o, name);
            }
            bool passed = true;
            for (const nnergy::threshold_check& t : result.thresholds)
                if (!t.passed()) {
                    passed = false;
                    spdlog::error(
                        t.mape ? fmt::format("{} MAPE of {}: {:.1f}% exceeds {:g}%", t.metric,
                                             t.mode, *t.mape, t.max_mape)
                               : fmt::format("{} MAPE of {}: no configuration to compare (limit "
                                             "{:g}%)",
                                             t.metric, t.mode, t.max_mape));
                }
            return passed ? 0 : static_cast<int>(exit_code::accuracy);
        }

        if (calibrate->parsed()) {
            if (!cal_recipe.empty()) {
                if (cal_here)
                    throw nnergy::error(
                        "--recipe names what to fit; --here measures this "
                        "machine instead: give one of them",
                        exit_code::usage);
                const nnergy::calibration_recipe r = nnergy::read_calibration_recipe(cal_recipe);
                apply_recipe(r, *calibrate,
                             {cal_hw, cal_files, cal_fit, cal_fix, cal_dims, cal_models,
                              recipe_ties, cal_fit_to, cal_objective, cal_discrete_counts});
                if (!calibrate->count("--runs") && !r.runs.empty()) cal_runs = r.runs;
            }
            if (cal_here) {
                if (!cal_hw.empty() || !cal_files.empty())
                    throw nnergy::error("--here measures this machine: give no HARDWARE or files",
                                        exit_code::usage);
                run_here(cal_output, cal_harness, cal_python, cal_threads, cal_quick, cal_hw,
                         cal_files);
                cal_runs = "op";
            } else if (cal_hw.empty() || cal_files.empty()) {
                throw nnergy::error(
                    "calibrate needs HARDWARE and measurement files, on the command line or "
                    "in a --recipe (or --here)",
                    exit_code::usage);
            } else if (cal_quick || cal_threads || !cal_harness.empty()) {
                throw nnergy::error("--quick, --threads and --harness go with --here",
                                    exit_code::usage);
            }
            nnergy::calibrate_options co;
            nnergy::validate_options& vo = co.validate;
            vo = measured_options(g, cal_hw, cal_files, cal_runtimes, cal_models, cal_dims,
                                  cal_input_shapes, cal_domains, cal_tolerance);
            vo.collect.include_ops = cal_runs != "model";
            vo.collect.include_models = cal_runs != "op";
            co.fit = cal_fit;
            co.fix = cal_fix;
            co.max_sweeps = cal_sweeps;
            co.discrete_counts = cal_discrete_counts;
            co.goal = {*nnergy::fit_objective_from_name(cal_objective),
                       *nnergy::fit_quantities_from_name(cal_fit_to)};
            // The recipe's ties, then the command line's.
            co.ties = recipe_ties;
            for (const std::string& t : cal_ties) {
                auto [follower, leader] =
                    split_setting(t, "--tie", "FOLLOWER=LEADER (two hardware keys)");
                co.ties.push_back({follower, leader, fmt::format("--tie {}={}", follower, leader)});
            }
            const nnergy::calibration_result r = nnergy::run_calibration(co);
            std::string command = "nnergy calibrate";
            for (int i = 2; i < argc; ++i) command += std::string(" ") + argv[i];
            const std::string overlay = nnergy::calibration_overlay(r, cal_hw, cal_output, command);
            {
                std::ofstream f(cal_output, std::ios::binary);
                if (!f || !(f << overlay))
                    throw nnergy::error(fmt::format("cannot write '{}'", cal_output));
            }
            // A reference holds one overlay: a stacked entry's overlay is used on its own.
            const std::string use =
                nnergy::hardware_overlay_part(cal_hw, std::filesystem::current_path())
                    ? cal_output
                    : cal_hw + "+" + cal_output;
            const std::string text = nnergy::calibration_text(r) +
                                     fmt::format("\nwrote {}: use --hw {}\n", cal_output, use);
            std::fwrite(text.data(), 1, text.size(), stdout);
            return 0;
        }

        if (compare->parsed()) {
            if (cmp_hw.size() < 2)
                throw nnergy::error("compare needs at least two hardware entries (--hw a,b,...)",
                                    exit_code::usage);
            for (size_t i = 0; i < cmp_hw.size(); ++i)
                for (size_t j = 0; j < i; ++j)
                    if (cmp_hw[i] == cmp_hw[j])
                        throw nnergy::error(fmt::format("--hw: '{}' is named twice", cmp_hw[i]),
                                            exit_code::usage);
            nnergy::pipeline_spec spec =
                default_pipeline(model_arg(cmp_model), "", cmp_runtime, "");
            nnergy::run_options opts;
            opts.plugin_paths = to_paths(g.plugin_paths);
            opts.dims = parse_dims(cmp_dims);
            opts.default_dims["batch"] = 1;
            if (cmp_batch < 0 || (cmp_batch == 0 && compare->count("--batch")))
                throw nnergy::error("--batch must be positive", exit_code::usage);
            if (cmp_batch > 0) opts.dims["batch"] = cmp_batch;
            nnergy::add_input_shapes(spec.model, cmp_input_shapes, {"--input-shape", 0}, opts.dims);
            if (!cmp_precision.empty()) check_precision(cmp_precision);
            std::vector<nnergy::config_values> hardware;
            const std::string wanted = cmp_precision.empty() ? "float32" : cmp_precision;
            for (const std::string& name : cmp_hw) {
                nnergy::architecture_spec arch;
                arch.where = {"--hw", 0};
                arch.hardware = name;
                arch.hardware_file = nnergy::resolve_hardware(name, spec.base_dir, arch.where);
                // A catalog name and a path to the same file are one device.
                for (const nnergy::architecture_spec& other : spec.architectures)
                    if (std::filesystem::weakly_canonical(other.hardware_file) ==
                        std::filesystem::weakly_canonical(arch.hardware_file))
                        throw nnergy::error(
                            fmt::format("--hw: '{}' and '{}' are the same hardware file ({})",
                                        other.hardware, name, arch.hardware_file.string()),
                            exit_code::usage);
                hardware.push_back(nnergy::read_hardware_file(arch.hardware_file));
                // The requested precision where the device has it, else its own.
                const std::vector<std::string> offered =
                    nnergy::hardware_precisions(hardware.back());
                std::string chosen;
                for (const std::string& p :
                     {wanted, std::string("bfloat16"), std::string("float16"), std::string("int8")})
                    if (chosen.empty() &&
                        std::find(offered.begin(), offered.end(), p) != offered.end())
                        chosen = p;
                if (chosen.empty() && !offered.empty()) chosen = offered.front();
                if (chosen.empty())
                    throw nnergy::error(fmt::format("{}: the hardware offers no precision",
                                                    arch.hardware_file.string()));
                arch.precision = chosen;
                spec.architectures.push_back(std::move(arch));
            }
            nnergy::registry reg;
            nnergy::load_plugins(reg, spec, opts);
            for (size_t i = 0; i < spec.architectures.size(); ++i) {
                const nnergy::config_value* cls = nnergy::find_value(hardware[i], "class");
                spec.architectures[i].plugin = reg.architecture_for_class(
                    cls && cls->kind == NNERGY_VALUE_STRING ? cls->string_value : "");
            }
            const nnergy::report_value doc = nnergy::run_pipeline(spec, reg, opts);
            std::vector<nnergy::compared_device> devices = nnergy::read_compared(doc);
            for (nnergy::compared_device& d : devices) d.requested_precision = wanted;
            const std::string bytes =
                cmp_format == "json"  ? nnergy::compare_json(cmp_model, devices)
                : cmp_format == "csv" ? nnergy::compare_csv(devices)
                                      : nnergy::compare_text(cmp_model, devices);
            if (cmp_output == "-") {
                std::fwrite(bytes.data(), 1, bytes.size(), stdout);
            } else {
                std::ofstream f(cmp_output, std::ios::binary);
                if (!f || !(f << bytes))
                    throw nnergy::error(fmt::format("cannot write '{}'", cmp_output));
            }
            return 0;
        }

        if (convert->parsed()) {
            nnergy::registry reg;
            reg.scan(plugin_search_path(g));
            convert_in = model_arg(convert_in);
            const nnergy::component_entry* fe =
                convert_frontend.empty() ? reg.frontend_for(convert_in)
                                         : reg.find(NNERGY_KIND_FRONTEND, convert_frontend);
            if (!fe) {
                std::vector<std::string> frontends;
                for (const auto* c : reg.of_kind(NNERGY_KIND_FRONTEND))
                    frontends.push_back(c->name);
                throw nnergy::error(
                    fmt::format("{}: no frontend {}{} (frontends: {})", convert_in,
                                convert_frontend.empty() ? "reads this file type"
                                                         : "named '" + convert_frontend + "'",
                                nnergy::did_you_mean(convert_frontend, frontends),
                                reg.names_of(NNERGY_KIND_FRONTEND)),
                    exit_code::plugin_missing);
            }
            // The written graph keeps the batch symbolic: the binding is not used.
            nnergy::model_spec shapes;
            nnergy::dim_bindings unused;
            nnergy::add_input_shapes(shapes, convert_input_shapes, {"--input-shape", 0}, unused);
            nnergy::component_instance inst(*fe, shapes.options, {},
                                            std::filesystem::current_path());
            nnergy::graph model = nnergy::load_model(inst, convert_in);
            if (convert_out == "-") {
                nnergy::write_json_graph(model, std::cout);
                std::cout.flush();
            } else {
                std::ofstream f(convert_out, std::ios::binary);
                if (!f) throw nnergy::error(fmt::format("cannot write '{}'", convert_out));
                nnergy::write_json_graph(model, f);
                if (!f) throw nnergy::error(fmt::format("error writing '{}'", convert_out));
            }
            return 0;
        }

        if (measure->parsed()) {
            if (measure->count("--gpu")) measure_opts.gpus = measure_gpus;
            if (measure->count("--items")) measure_opts.items = measure_items;
            if (measure->count("--batch")) measure_opts.batch = measure_batch;
            if (measure_idle_ms < 0)
                throw nnergy::error("--idle-ms must be 0 or more", exit_code::usage);
            if (!(measure_sample_ms >= 0.1 && measure_sample_ms <= 10000))
                throw nnergy::error("--sample-ms must be between 0.1 and 10000", exit_code::usage);
            measure_opts.idle = std::chrono::milliseconds(measure_idle_ms);
            measure_opts.meter.sample_period =
                std::chrono::microseconds(static_cast<long long>(measure_sample_ms * 1000));
            if (measure_opts.serve) return nnergy::serve_meters(measure_opts, std::cin, stdout);
            return nnergy::run_measure(measure_opts, stderr);
        }

        if (hardware_list->parsed()) return nnergy::print_hardware_list(stdout);
        if (hardware_show->parsed()) return nnergy::print_hardware_show(hardware_name, stdout);

        if (bench->parsed()) {
            if (!bench_compare.empty()) {
                // The command line as given, less --compare: global options, then bench's.
                std::vector<std::string> global_args, bench_args;
                bool after = false;
                for (int i = 1; i < argc; ++i) {
                    const std::string a = argv[i];
                    if (!after && a == "bench") {
                        after = true;
                        continue;
                    }
                    if (a == "--compare") {
                        ++i;
                        continue;
                    }
                    if (a.starts_with("--compare=")) continue;
                    (after ? bench_args : global_args).push_back(a);
                }
                return nnergy::run_bench_compare(bench_compare, global_args, bench_args);
            }
            nnergy::registry reg;
            reg.scan(plugin_search_path(g));
            if (!bench_startup.empty())
                return nnergy::run_bench_startup(model_arg(bench_startup), bench_repeats,
                                                 bench_input_shapes);
            if (!bench_sweep_command.empty())
                return nnergy::run_bench_sweep_command(model_arg(bench_sweep_command),
                                                       bench_threads, bench_repeats);
            if (!bench_sweep.empty())
                return nnergy::run_bench_sweep(reg, model_arg(bench_sweep), bench_repeats,
                                               bench_threads);
            if (!bench_models.empty()) {
                for (std::string& m : bench_models) m = model_arg(m);
                nnergy::dim_bindings dims = parse_dims(bench_dims);
                nnergy::model_spec shapes;
                nnergy::add_input_shapes(shapes, bench_input_shapes, {"--input-shape", 0}, dims);
                dims.try_emplace("batch", 1);
                return nnergy::run_bench_models(reg, to_paths(bench_models), dims, bench_repeats,
                                                shapes.options);
            }
            return nnergy::run_bench(reg, bench_sizes, bench_repeats);
        }
    } catch (const nnergy::error& e) {
        spdlog::error("{}", e.what());
        return static_cast<int>(e.code());
    } catch (const std::exception& e) {
        spdlog::critical("internal error: {}", e.what());
        return static_cast<int>(exit_code::internal);
    }
    return 0;
}
