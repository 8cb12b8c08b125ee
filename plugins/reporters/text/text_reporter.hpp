// SPDX-License-Identifier: Apache-2.0
/// \file text_reporter.hpp
/// \brief nnergy.reporter.text: the report document (docs/report.md) as fixed-width tables for
/// people. Every field is optional here: a run without an estimator still prints its kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <nnergy/modeling/text.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text_format.hpp"

namespace nnergy::text {

struct render_options {
    /// Rows of the per-kernel table: the N slowest kernels, shown in kernel order; -1 for
    /// every kernel, 0 for no table. The summary comes first whatever this is, so a
    /// 500-kernel model reads from the top.
    int64_t kernel_rows = 10;
    int64_t top = 3;     ///< explain this many slowest kernels
    bool color = false;  ///< ANSI colour (a terminal, NO_COLOR unset)
};

/// ANSI styles, applied only when colour is on; never inside aligned table cells.
inline std::string style(bool on, std::string_view code, std::string_view s) {
    if (!on) return std::string(s);
    return "\033[" + std::string(code) + "m" + std::string(s) + "\033[0m";
}

namespace detail {

/// Text from the report as a terminal can show it: names come from the user's files, and their
/// control bytes (an escape sequence in a node's name) would act on the terminal.
inline std::string shown(std::string_view s) { return modeling::printable(s); }
inline std::string shown(const sdk::value_view& v, std::string_view fallback = "") {
    return modeling::printable(v.text(fallback));
}

inline std::string count(const sdk::value_view& v) {
    auto n = v.number();
    return n ? si(*n) : "-";
}

inline std::string plural(double n, std::string_view one, std::string_view many) {
    return si(n) + " " + std::string(n == 1 ? one : many);
}

/// "conv1 (Conv)" lists, "batch=1, seq=128" dims.
inline std::string dims_text(const sdk::value_view& dims) {
    std::string s;
    for (size_t i = 0; i < dims.size(); ++i) {
        if (!s.empty()) s += ", ";
        s += shown(dims.key(i)) + "=" + shown(dims.at(i));
    }
    return s;
}

inline std::string unknown_ops_text(const sdk::value_view& unknown) {
    const size_t n = unknown.size();
    if (n == 0) return {};
    std::vector<std::string> items;
    for (size_t i = 0; i < n; ++i) {
        const sdk::value_view u = unknown.at(i);
        std::string item = "node '" + shown(u["node"], "?") + "' (" + shown(u["op_type"], "?");
        const std::string domain = shown(u["domain"]);
        if (!domain.empty()) item += ", domain " + domain;
        items.push_back(item + ")");
    }
    std::string s = "unknown ops (not counted):";
    if (n <= 3) {
        for (size_t i = 0; i < n; ++i) s += (i ? ", " : " ") + items[i];
        return s + "\n";
    }
    s += " " + std::to_string(n) + "\n";
    for (const std::string& item : items) s += "  " + item + "\n";
    return s;
}

/// Colour of an energy category's bar and of a bottleneck's name.
inline std::string_view category_color(std::string_view name) {
    if (name == "compute") return "32";                                   // green
    if (name == "memory" || name.substr(0, 7) == "memory:") return "33";  // yellow
    if (name == "static") return "90";                                    // grey
    if (name == "control" || name == "overhead") return "31";             // red
    return "36";                                                          // cyan
}

/// The energy estimate: power, efficiency, where the joules go by category (with bars), the
/// static energy lost to under-utilization, and how concentrated the energy-delay product is.
inline std::string energy_text(const sdk::value_view& totals, bool color = false) {
    const std::optional<double> energy = totals["energy_j"].number();
    if (!energy) return {};
    std::string s = "  energy " + joules(*energy);
    if (auto p = totals["average_power_w"].number()) s += ": " + format("%.3g W", *p) + " average";
    if (auto p = totals["peak_power_w"].number()) s += ", " + format("%.3g W", *p) + " peak kernel";
    if (auto p = totals["power_limit_w"].number()) s += " (limit " + format("%.3g W", *p) + ")";
    if (auto x = totals["edp_j_s"].number()) s += ", EDP " + format("%.3g J*s", *x);
    s += "\n   ";
    if (auto x = totals["inferences_per_j"].number())
        s += " " + format("%.3g", *x) + " inferences/J";
    if (auto x = totals["tokens_per_j"].number()) s += ", " + format("%.3g", *x) + " tokens/J";
    if (auto x = totals["tflops_per_w"].number()) s += ", " + format("%.3g", *x) + " TFLOP/s per W";
    s += "\n";
    if (auto t = totals["throttled_kernels"].number(); t && *t > 0)
        s += "  power limit: " + plural(*t, "kernel", "kernels") +
             " throttled, latency stretched from " +
             seconds(totals["latency_unthrottled_s"].number().value_or(0)) + "\n";
    // energy.<category>_j, largest first, with a bar of 30 cells for the whole.
    std::vector<std::pair<std::string, double>> categories;
    for (size_t i = 0; i < totals.size(); ++i) {
        const std::string_view key = totals.key(i);
        if (key.substr(0, 7) != "energy." || key.size() < 10 || key.substr(key.size() - 2) != "_j")
            continue;
        const std::string_view name = key.substr(7, key.size() - 9);
        if (name.find('.') != std::string_view::npos) continue;
        categories.emplace_back(std::string(name), totals[key].number().value_or(0));
    }
    std::stable_sort(categories.begin(), categories.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [name, j] : categories) {
        const double share = *energy > 0 ? j / *energy : 0;
        std::string line = "    " + name;
        line.resize(std::max<size_t>(line.size() + 1, 14), ' ');
        line += format("%-10s %4.0f%%", joules(j).c_str(), 100 * share);
        // Eighths of a cell, so a 2% category still shows.
        const long eighths = std::lround(share * 30 * 8);
        std::string bar;
        for (long c = 0; c < eighths / 8; ++c) bar += "\u2588";
        static constexpr std::string_view partial[] = {"",       "\u258f", "\u258e", "\u258d",
                                                       "\u258c", "\u258b", "\u258a", "\u2589"};
        bar += partial[eighths % 8];
        if (!bar.empty()) line += "  " + style(color, category_color(name), bar);
        s += line + "\n";
    }
    if (auto u = totals["underutilization_energy_j"].number(); u && *u > 0)
        s += "  under-utilization: " + joules(*u) +
             " of static energy spent beyond what the kernels need at peak rate\n";
    if (auto k50 = totals["edp_kernels_50pct"].number())
        s += "  energy-delay: " + plural(*k50, "kernel makes", "kernels make") + " 50%, " +
             format("%.0f", totals["edp_kernels_80pct"].number().value_or(0)) + " make 80%, " +
             format("%.0f", totals["edp_kernels_90pct"].number().value_or(0)) + " make 90%\n";
    if (const sdk::value_view advice = totals["advice"]; advice.kind() == NNERGY_VALUE_STRING) {
        s += "  to spend less:\n";
        std::string_view rest = advice.as_string();
        while (!rest.empty()) {
            const size_t end = rest.find('\n');
            s += "    - ";
            s += shown(rest.substr(0, end));
            s += '\n';
            rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
        }
    }
    return s;
}

/// One line of peak memory: "peak memory 12.3 MB (weights 1.20 MB, activations 10.1 MB,
/// workspace 1.00 MB), fits in l2"; the parts an estimator did not write are left out.
inline std::string memory_text(const sdk::value_view& totals) {
    auto peak = totals["peak_memory_bytes"].number();
    if (!peak) return {};
    std::string s = "  peak memory " + si_unit(*peak, "B");
    std::string parts;
    static constexpr std::string_view keys[][2] = {{"weight_bytes", "weights"},
                                                   {"activations_at_peak_bytes", "activations"},
                                                   {"workspace_at_peak_bytes", "workspace"}};
    for (const auto& key : keys)
        if (auto v = (totals[key[0]]).number())
            parts += (parts.empty() ? "" : ", ") + std::string(key[1]) + " " + si_unit(*v, "B");
    if (!parts.empty()) s += " (" + parts + ")";
    const std::string kernel = shown(totals["peak_kernel_name"]);
    if (!kernel.empty()) s += " at kernel " + kernel;
    const std::string fits = shown(totals["fits"]);
    if (fits == "does not fit")
        s += ", does not fit in device memory";
    else if (fits == "unknown")
        s += ", device memory capacity not given";
    else if (!fits.empty())
        s += ", fits in " + fits;
    return s + "\n";
}

inline std::string totals_text(const sdk::value_view& totals, const sdk::value_view& dims,
                               bool estimated, bool color = false) {
    std::string s = "  params " + count(totals["params"]) + "   MACs " + count(totals["macs"]) +
                    "   FLOPs " + count(totals["flops"]);
    auto latency = totals["latency_s"].number();
    if (latency) s += "   latency " + seconds(*latency);
    if (auto e = totals["energy_j"].number()) s += "   energy " + joules(*e);
    s += "\n";
    if (latency && *latency > 0) {
        auto batch = dims["batch"].number();
        s += "  throughput ";
        if (batch && *batch == 1)
            s += si(1 / *latency) + " samples/s (batch 1)";
        else if (batch && *batch > 0)
            s += si(*batch / *latency) + " samples/s (batch " + si(*batch) + ", " +
                 si(1 / *latency) + " batches/s)";
        else
            s += si(1 / *latency) + " inferences/s";
        if (auto flops = totals["flops"].number(); flops && *flops > 0)
            s += ", " + si_unit(*flops / *latency, "FLOP/s") + " achieved";
        s += "\n";
    } else if (!latency && !estimated) {
        s += "  latency not estimated: the pipeline has no [[estimator]]\n";
    }
    auto c = totals["compute_time_s"].number();
    auto m = totals["memory_time_s"].number();
    auto o = totals["overhead_s"].number();
    if (c && m && o)
        s += "  summed over kernels: compute " + seconds(*c) + ", memory " + seconds(*m) +
             ", launch overhead " + seconds(*o) + "\n";
    s += memory_text(totals);
    s += energy_text(totals, color);
    return s;
}

/// One line: stages, widest stage, critical path and the speedup concurrency could bring.
inline std::string concurrency_text(const sdk::value_view& c) {
    auto stages = c["stages"].number();
    if (!stages) return {};
    std::string s = "  concurrency: " + plural(*stages, "dependency stage", "dependency stages") +
                    ", widest " +
                    plural(c["widest_stage_kernels"].number().value_or(0), "kernel", "kernels") +
                    "; critical path " +
                    plural(c["critical_path_kernels"].number().value_or(0), "kernel", "kernels");
    auto critical = c["critical_path_latency_s"].number();
    auto serial = c["serial_latency_s"].number();
    auto bound = c["speedup_bound"].number();
    if (critical && serial && bound)
        s += ", " + seconds(*critical) + " of " + seconds(*serial) +
             " serial: overlapping independent kernels gains at most x" + format("%.2f", *bound);
    return s + "\n";
}

inline std::string run_text(const sdk::value_view& run, size_t index, size_t run_count,
                            const sdk::value_view& model, const render_options& opt) {
    const sdk::value_view arch = run["architecture"];
    std::string head = "Run " + std::to_string(index + 1) + " of " + std::to_string(run_count) +
                       ": " + shown(arch["hardware"], "?");
    const std::string cls = shown(arch["class"]);
    if (!cls.empty()) head += " (" + cls + ")";
    const std::string precision = shown(arch["precision"]);
    if (!precision.empty()) head += ", " + precision;
    // The run's own bindings (a sweep binds each run differently), else the model's.
    const sdk::value_view dims = run["dims"] ? run["dims"] : model["dims"];
    for (size_t i = 0; i < dims.size(); ++i)
        head += ", " + shown(dims.key(i)) + "=" + shown(dims.at(i));
    std::string s = style(opt.color, "1", head) + "\n";
    std::string components = "  architecture " + shown(arch["plugin"], "?");
    const sdk::value_view estimators = run["estimators"];
    if (estimators.size()) {
        components += ", estimator" + std::string(estimators.size() > 1 ? "s " : " ");
        for (size_t i = 0; i < estimators.size(); ++i)
            components += (i ? ", " : "") + shown(estimators.at(i));
    }
    s += components + "\n";

    const sdk::value_view kernels = run["kernels"];
    const sdk::value_view totals = run["totals"];
    const std::optional<double> run_latency = totals["latency_s"].number();
    const bool any_energy = [&] {
        for (size_t i = 0; i < kernels.size(); ++i)
            if (kernels.at(i)["metrics"]["energy_j"].number()) return true;
        return false;
    }();
    bool any_note = false, any_metrics = false;
    double scale = 1;
    std::vector<std::vector<std::string>> rows;
    // Bottleneck -> (kernels, latency), for the summary line.
    std::map<std::string, std::pair<size_t, double>> by_bottleneck;
    struct slow {
        double latency;
        size_t row;
    };
    std::vector<slow> slowest;
    for (size_t i = 0; i < kernels.size(); ++i) {
        const sdk::value_view k = kernels.at(i);
        const sdk::value_view mapping = k["mapping"];
        const sdk::value_view metrics = k["metrics"];
        std::string name = shown(k["name"], "?");
        if (metrics["note"] ||
            (k["all_counted"].kind() == NNERGY_VALUE_BOOL && !k["all_counted"].as_bool())) {
            name += "*";
            any_note = true;
        }
        std::string ops;
        const sdk::value_view op_list = k["ops"];
        for (size_t j = 0; j < op_list.size(); ++j) ops += (j ? "+" : "") + shown(op_list.at(j));
        const double bytes = k["input_bytes"].number().value_or(0) +
                             k["output_bytes"].number().value_or(0) +
                             k["weight_bytes"].number().value_or(0);
        std::optional<double> ai = k["arithmetic_intensity"].number();
        if (!ai && bytes > 0) ai = k["flops"].number().value_or(0) / bytes;
        auto util = mapping["utilization"].number();
        std::string bottleneck = shown(metrics["bottleneck"]);
        if (bottleneck.empty()) bottleneck = shown(mapping["bottleneck"], "-");
        auto latency = metrics["latency_s"].number();
        if (latency) {
            any_metrics = true;
            auto& b = by_bottleneck[bottleneck];
            ++b.first;
            b.second += *latency;
            slowest.push_back({*latency, i});
        }
        if (auto sc = mapping["bytes_scale"].number(); sc && *sc != 1) scale = *sc;
        std::string share = "-";
        if (latency && run_latency && *run_latency > 0) share = percent(*latency / *run_latency);
        std::vector<std::string> row = {k["index"].number() ? shown(k["index"]) : std::to_string(i),
                                        name,
                                        shown(k["pattern"]),
                                        ops,
                                        count(k["macs"]),
                                        count(k["flops"]),
                                        si(bytes),
                                        ai ? ratio(*ai) : "-",
                                        shown(mapping["unit"], "-"),
                                        util ? percent(*util) : "-",
                                        bottleneck,
                                        latency ? seconds(*latency) : "-",
                                        share};
        if (any_energy) {
            auto e = metrics["energy_j"].number();
            row.push_back(e ? joules(*e) : "-");
        }
        rows.push_back(std::move(row));
    }

    s += totals_text(totals, dims, any_metrics, opt.color);
    if (!by_bottleneck.empty()) {
        std::vector<std::pair<std::string, std::pair<size_t, double>>> order(by_bottleneck.begin(),
                                                                             by_bottleneck.end());
        std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
            return a.second.second > b.second.second;
        });
        double sum = 0;
        for (const auto& b : order) sum += b.second.second;
        s += "  bottlenecks:";
        for (size_t i = 0; i < order.size(); ++i) {
            s += (i ? ", " : " ") + order[i].first + " " +
                 plural(static_cast<double>(order[i].second.first), "kernel", "kernels");
            if (sum > 0) s += " (" + percent(order[i].second.second / sum) + " of latency)";
        }
        s += "\n";
    }
    s += concurrency_text(run["concurrency"]);
    if (opt.top > 0 && !slowest.empty()) {
        std::stable_sort(slowest.begin(), slowest.end(),
                         [](const slow& a, const slow& b) { return a.latency > b.latency; });
        const size_t n = std::min(slowest.size(), static_cast<size_t>(opt.top));
        s += "  slowest kernels:\n";
        for (size_t i = 0; i < n; ++i) {
            const sdk::value_view k = kernels.at(slowest[i].row);
            const std::vector<std::string>& row = rows[slowest[i].row];
            std::string line = "    #" + row[0] + " " + shown(k["name"], "?") + "  " + row[11];
            if (row[12] != "-") line += " (" + row[12] + ")";
            const std::string why = shown(k["mapping"]["explanation"]);
            if (!why.empty()) line += ": " + why;
            s += line + "\n";
        }
    }

    if (rows.empty()) return s + "  no kernels\n";
    if (opt.kernel_rows == 0) return s;
    // The N slowest kernels (all when N covers them), listed in kernel order.
    std::vector<size_t> shown;
    if (opt.kernel_rows < 0 || static_cast<size_t>(opt.kernel_rows) >= rows.size() ||
        slowest.empty()) {
        for (size_t i = 0; i < rows.size(); ++i) shown.push_back(i);
        if (opt.kernel_rows >= 0 && shown.size() > static_cast<size_t>(opt.kernel_rows))
            shown.resize(static_cast<size_t>(opt.kernel_rows));
    } else {
        std::vector<slow> order = slowest;
        std::stable_sort(order.begin(), order.end(),
                         [](const slow& a, const slow& b) { return a.latency > b.latency; });
        for (size_t i = 0; i < static_cast<size_t>(opt.kernel_rows); ++i)
            shown.push_back(order[i].row);
        std::sort(shown.begin(), shown.end());
    }
    std::vector<std::vector<std::string>> table;
    for (size_t i : shown) table.push_back(rows[i]);
    std::vector<column> columns = {
        {"#", align::right},      {"kernel", align::left, 32}, {"pattern", align::left, 20},
        {"ops", align::left, 32}, {"MACs", align::right},      {"FLOPs", align::right},
        {"bytes", align::right},  {"AI", align::right},        {"unit", align::left, 12},
        {"util", align::right},   {"bottleneck", align::left}, {"latency", align::right},
        {"share", align::right}};
    if (any_energy) columns.push_back({"energy", align::right});
    s += "\n";
    if (shown.size() < rows.size())
        s += "  the " + std::to_string(shown.size()) + " slowest of " +
             std::to_string(rows.size()) +
             " kernels, in kernel order (--kernels all: every "
             "kernel)\n";
    s += render_table(columns, table, "  ");
    if (any_note) s += "  * contains ops that could not be counted: their work is missing\n";
    if (scale != 1)
        s += "  bytes and AI are the graph's; DRAM traffic is modeled in " +
             (precision.empty() ? std::string("the compute precision") : precision) + " at x" +
             format("%g", scale) + " those bytes\n";
    return s;
}

}  // namespace detail

/// The whole report as text.
inline std::string render(const sdk::value_view& doc, const render_options& opt = {}) {
    using namespace detail;
    std::string s;
    const sdk::value_view tool = doc["tool"];
    s += shown(tool["name"], "nnergy") + " " + shown(tool["version"]) + " report\n";
    const sdk::value_view model = doc["model"];
    std::string model_line = "  model     " + shown(model["name"], "?");
    std::string origin = shown(model["path"]);
    const std::string frontend = shown(model["frontend"]);
    if (!frontend.empty()) origin += (origin.empty() ? "" : " via ") + frontend;
    if (!origin.empty()) model_line += "  (" + origin + ")";
    s += model_line + "\n";
    if (model["dims"].size()) s += "  dims      " + dims_text(model["dims"]) + "\n";
    const sdk::value_view sweep = model["sweep"];
    for (size_t i = 0; i < sweep.size(); ++i) {
        std::string values;
        for (size_t v = 0; v < sweep.at(i).size(); ++v)
            values += (v ? ", " : "") + shown(sweep.at(i).at(v));
        s += "  sweep     " + shown(sweep.key(i)) + " = " + values +
             " (one run each; dims above are the first run's)\n";
    }
    std::string graph;
    if (auto n = model["nodes"].number()) graph += plural(*n, "node", "nodes");
    if (auto n = model["tensors"].number())
        graph += (graph.empty() ? "" : ", ") + plural(*n, "tensor", "tensors");
    const sdk::value_view partitioner = doc["partitioner"];
    if (auto n = partitioner["kernels"].number()) {
        graph += (graph.empty() ? "" : ", ") + plural(*n, "kernel", "kernels");
        const std::string p = shown(partitioner["plugin"]);
        if (!p.empty()) graph += " (" + p + ")";
    }
    if (!graph.empty()) s += "  graph     " + graph + "\n";
    const std::string pipeline = shown(doc["pipeline"]);
    if (!pipeline.empty()) s += "  pipeline  " + pipeline + "\n";

    const sdk::value_view runs = doc["runs"];
    for (size_t r = 0; r < runs.size(); ++r)
        s += "\n" + run_text(runs.at(r), r, runs.size(), model, opt);
    if (runs.size() == 0 && doc["totals"]) {
        s += "\nNo architecture in the pipeline: counts only.\n";
        s += totals_text(doc["totals"], model["dims"], false);
    }
    const std::string unknown = unknown_ops_text(model["unknown_ops"]);
    if (!unknown.empty()) s += "\n" + unknown;
    return s;
}

class text_reporter : public sdk::reporter {
public:
    explicit text_reporter(const sdk::context& ctx) : sdk::reporter(ctx) {
        const sdk::config_view config = ctx.config();
        config.expect_only({"kernels", "top"}, "nnergy.reporter.text");
        // kernels = N (the N slowest), "all", or a boolean (true: all, false: none).
        if (const auto* k = config.find("kernels")) {
            if (k->kind == NNERGY_VALUE_BOOL)
                options_.kernel_rows = k->bool_value ? -1 : 0;
            else if (k->kind == NNERGY_VALUE_INT && k->int_value >= 0)
                options_.kernel_rows = k->int_value;
            else if (k->kind == NNERGY_VALUE_STRING &&
                     sdk::from_sv(k->string_value) == std::string_view("all"))
                options_.kernel_rows = -1;
            else
                throw sdk::error(sdk::config_view::where(*k) +
                                 ": 'kernels' must be a count of kernel rows (0 or more), "
                                 "\"all\", true or false");
        }
        options_.top = config.integer("top").value_or(3);
        if (options_.top < 0)
            throw sdk::error(sdk::config_view::where(*config.find("top")) +
                             ": 'top' must be 0 or more (how many slowest kernels to explain)");
    }

    void report(const sdk::value_view& doc, sdk::output_writer& out) override {
        render_options opt = options_;
        opt.color = out.allows_color();
        out.write(render(doc, opt));
    }

private:
    render_options options_;
};

}  // namespace nnergy::text
