// SPDX-License-Identifier: Apache-2.0
/// \file markdown_reporter.hpp
/// \brief nnergy.reporter.markdown: a summary of the report document (docs/report.md) in
/// GitHub-flavoured Markdown for pull requests and notebooks: totals per run, the energy by
/// category, the top kernels by latency and by energy, and a comparison of runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "markdown_format.hpp"
#include "markdown_validation.hpp"

namespace nnergy::markdown {

struct render_options {
    /// How many kernels the top lists show; nullopt: all of them.
    std::optional<size_t> kernels = 10;
};

namespace detail {

inline std::string dims_text(const sdk::value_view& dims) {
    std::string s;
    for (size_t i = 0; i < dims.size(); ++i)
        s += (s.empty() ? "" : ", ") + std::string(dims.key(i)) + "=" + dims.at(i).text();
    return s;
}

/// The run's own bindings (a sweep binds each run differently), else the model's.
inline sdk::value_view run_dims(const sdk::value_view& run, const sdk::value_view& model) {
    return run["dims"] ? run["dims"] : model["dims"];
}

/// "h100-sxm5 (gpu), float16, batch=1"
inline std::string run_label(const sdk::value_view& run, const sdk::value_view& model) {
    const sdk::value_view arch = run["architecture"];
    std::string s = arch["hardware"].text();
    if (s.empty()) s = "?";
    if (const std::string c = arch["class"].text(); !c.empty()) s += " (" + c + ")";
    if (const std::string p = arch["precision"].text(); !p.empty()) s += ", " + p;
    if (const std::string d = dims_text(run_dims(run, model)); !d.empty()) s += ", " + d;
    return s;
}

/// A number scaled into a column's unit, or "-" when absent.
inline std::string cell(const std::optional<double>& v, const scale& sc) {
    return v ? escape(digits3(*v / sc.factor)) : "-";
}

inline std::string fits_text(const sdk::value_view& totals) {
    const std::string fits = totals["fits"].text();
    if (fits.empty()) return "-";
    if (fits == "does not fit") return "**does not fit**";
    if (fits == "unknown") return "unknown";
    return "in " + escape(fits);
}

/// One row per run: latency, energy, average power, EDP, peak memory and its verdict,
/// inferences (and tokens) per joule; each column in one unit, chosen for its largest value.
inline std::string totals_table(const std::vector<sdk::value_view>& runs,
                                const sdk::value_view& model, bool identify_runs) {
    struct quantity {
        const char* key;
        const char* label;
        const char* unit;
        bool prefixes;
    };
    static constexpr quantity quantities[] = {{"latency_s", "latency", "s", true},
                                              {"energy_j", "energy", "J", true},
                                              {"average_power_w", "average power", "W", true},
                                              {"edp_j_s", "EDP", "J·s", true},
                                              {"peak_memory_bytes", "peak memory", "B", true},
                                              {"inferences_per_j", "inferences/J", "", false},
                                              {"tokens_per_j", "tokens/J", "", false}};
    std::vector<column> columns;
    if (identify_runs) columns = {{"run", align::right}, {"hardware"}, {"precision"}, {"dims"}};
    std::vector<std::vector<std::string>> rows(runs.size());
    for (size_t r = 0; r < runs.size() && identify_runs; ++r) {
        const sdk::value_view arch = runs[r]["architecture"];
        rows[r] = {std::to_string(r + 1), escape(arch["hardware"].text()),
                   escape(arch["precision"].text()), escape(dims_text(run_dims(runs[r], model)))};
    }
    for (const quantity& q : quantities) {
        std::vector<std::optional<double>> values;
        std::vector<double> present;
        for (const sdk::value_view& run : runs) {
            values.push_back(run["totals"][q.key].number());
            if (values.back()) present.push_back(*values.back());
        }
        // Tokens per joule only for models with a sequence dimension.
        if (present.empty() && std::string_view(q.key) == "tokens_per_j") continue;
        // Bytes take decimal prefixes up from B, never below it.
        const scale sc =
            q.prefixes ? pick_scale(present, std::string_view(q.unit) != "B") : scale{};
        std::string header = q.label;
        if (*q.unit) header += " (" + sc.prefix + q.unit + ")";
        columns.push_back({escape(header), align::right});
        for (size_t r = 0; r < runs.size(); ++r) rows[r].push_back(cell(values[r], sc));
        if (std::string_view(q.key) == "peak_memory_bytes") {
            columns.push_back({"fits"});
            for (size_t r = 0; r < runs.size(); ++r)
                rows[r].push_back(fits_text(runs[r]["totals"]));
        }
    }
    return table(columns, rows);
}

/// The energy by category (`energy.<category>_j` totals), largest first, with its share.
inline std::string energy_table(const sdk::value_view& totals) {
    const std::optional<double> energy = totals["energy_j"].number();
    if (!energy) return {};
    std::vector<std::pair<std::string, double>> categories;
    for (size_t i = 0; i < totals.size(); ++i) {
        const std::string_view key = totals.key(i);
        if (key.size() < 10 || key.substr(0, 7) != "energy." || key.substr(key.size() - 2) != "_j")
            continue;
        const std::string_view name = key.substr(7, key.size() - 9);
        if (name.find('.') != std::string_view::npos) continue;
        if (const auto j = totals.at(i).number()) categories.emplace_back(std::string(name), *j);
    }
    if (categories.empty()) return {};
    std::stable_sort(categories.begin(), categories.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<double> values{*energy};
    for (const auto& c : categories) values.push_back(c.second);
    const scale sc = pick_scale(values);
    std::vector<std::vector<std::string>> rows;
    for (const auto& [name, j] : categories)
        rows.push_back({escape(name), cell(j, sc), escape(percent(*energy > 0 ? j / *energy : 0))});
    rows.push_back({"**total**", "**" + cell(*energy, sc) + "**", "**100.0%**"});
    return table(
        {{"category"}, {"energy (" + sc.prefix + "J)", align::right}, {"share", align::right}},
        rows);
}

/// The top kernels by one metric, largest first (ties in kernel order).
inline std::string top_kernels(const sdk::value_view& run, std::string_view key,
                               std::string_view label, std::string_view unit,
                               const render_options& opt) {
    const sdk::value_view kernels = run["kernels"];
    struct entry {
        double value;
        size_t row;
    };
    std::vector<entry> entries;
    for (size_t i = 0; i < kernels.size(); ++i)
        if (const auto v = kernels.at(i)["metrics"][key].number()) entries.push_back({*v, i});
    if (entries.empty()) return {};
    std::stable_sort(entries.begin(), entries.end(),
                     [](const entry& a, const entry& b) { return a.value > b.value; });
    const size_t n = opt.kernels ? std::min(*opt.kernels, entries.size()) : entries.size();
    if (n == 0) return {};
    std::string heading =
        n == entries.size()
            ? "Kernels by " + std::string(label) + " (all " + std::to_string(n) + ")"
            : "Top " + std::to_string(n) + " kernels by " + std::string(label) + " (of " +
                  std::to_string(entries.size()) + ")";
    std::vector<double> values;
    for (size_t i = 0; i < n; ++i) values.push_back(entries[i].value);
    const scale sc = pick_scale(values);
    const std::string total_key = std::string(key);
    const std::optional<double> total = run["totals"][total_key].number();
    const bool energy = key == "energy_j";
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < n; ++i) {
        const sdk::value_view k = kernels.at(entries[i].row);
        const sdk::value_view metrics = k["metrics"];
        std::string ops;
        const sdk::value_view op_list = k["ops"];
        for (size_t j = 0; j < op_list.size(); ++j) ops += (j ? "+" : "") + op_list.at(j).text();
        const std::string index =
            k["index"].number() ? k["index"].text() : std::to_string(entries[i].row);
        std::vector<std::string> row = {
            index,
            escape(k["name"].text()),
            escape(k["pattern"].text()),
            escape(ops),
            cell(entries[i].value, sc),
            total && *total > 0 ? escape(percent(entries[i].value / *total)) : "-"};
        if (energy) {
            std::optional<double> power = metrics["power_w"].number();
            row.push_back(power ? escape(digits3(*power)) : "-");
        } else {
            std::string bottleneck = metrics["bottleneck"].text();
            if (bottleneck.empty()) bottleneck = k["mapping"]["bottleneck"].text();
            row.push_back(bottleneck.empty() ? "-" : escape(bottleneck));
        }
        rows.push_back(std::move(row));
    }
    std::vector<column> columns = {
        {"#", align::right},
        {"kernel"},
        {"pattern"},
        {"ops"},
        {escape(std::string(label) + " (" + sc.prefix + std::string(unit) + ")"), align::right},
        {"share", align::right}};
    if (energy)
        columns.push_back({"power (W)", align::right});
    else
        columns.push_back({"bottleneck"});
    return "### " + escape(heading) + "\n\n" + table(columns, rows);
}

inline std::string run_section(const sdk::value_view& run, size_t index, size_t run_count,
                               const sdk::value_view& model, const render_options& opt) {
    std::string s = "## Run " + std::to_string(index + 1) + " of " + std::to_string(run_count) +
                    ": " + escape(run_label(run, model)) + "\n\n";
    const sdk::value_view totals = run["totals"];
    s += totals_table({run}, model, false);
    if (const std::string kernel = totals["peak_kernel_name"].text(); !kernel.empty())
        s += "\nPeak memory at kernel " + escape(kernel) + ".\n";
    if (const std::string rt = totals["runtime"].text(); !rt.empty()) {
        s += "\nRuntime " + escape(rt);
        if (const std::string bound = totals["runtime_bound"].text(); !bound.empty())
            s += ", " + escape(bound) + "-bound";
        s += ".\n";
    }
    if (const std::string e = energy_table(totals); !e.empty())
        s += "\n### Energy by category\n\n" + e;
    for (const std::string& part : {top_kernels(run, "latency_s", "latency", "s", opt),
                                    top_kernels(run, "energy_j", "energy", "J", opt)})
        if (!part.empty()) s += "\n" + part;
    return s;
}

}  // namespace detail

/// The whole summary.
inline std::string render(const sdk::value_view& doc, const render_options& opt = {}) {
    using namespace detail;
    const sdk::value_view model = doc["model"];
    std::string name = model["name"].text();
    if (name.empty()) name = "model";
    // Title: the model and its bindings; a swept dimension lists every value it takes.
    std::string dims;
    const sdk::value_view bound = model["dims"];
    const sdk::value_view sweep = model["sweep"];
    for (size_t i = 0; i < bound.size(); ++i) {
        const std::string key(bound.key(i));
        std::string value = bound.at(i).text();
        if (const sdk::value_view values = sweep[key]; values.size() > 0) {
            value.clear();
            for (size_t v = 0; v < values.size(); ++v)
                value += (v ? ", " : "") + values.at(v).text();
            dims += (dims.empty() ? "" : ", ") + key + " in {" + value + "}";
        } else {
            dims += (dims.empty() ? "" : ", ") + key + "=" + value;
        }
    }
    std::string s = "# " + escape(name) + (dims.empty() ? "" : " (" + escape(dims) + ")") + "\n\n";

    std::string about;
    // The file's name only: a summary pasted into a pull request should not carry local paths.
    if (std::string path = model["path"].text(); !path.empty())
        about += "Model " + escape(path.substr(path.find_last_of("/\\") + 1));
    if (const auto n = model["nodes"].number())
        about += (about.empty() ? "" : ", ") + format("%.0f", *n) + " nodes";
    const sdk::value_view partitioner = doc["partitioner"];
    if (const auto n = partitioner["kernels"].number()) {
        about += (about.empty() ? "" : ", ") + format("%.0f", *n) + " kernels";
        if (const std::string p = partitioner["plugin"].text(); !p.empty())
            about += " (" + escape(p) + ")";
    }
    const sdk::value_view tool = doc["tool"];
    if (const std::string v = tool["version"].text(); !v.empty())
        about += (about.empty() ? "" : "; ") +
                 escape(tool["name"].text().empty() ? "nnergy" : tool["name"].text()) + " " +
                 escape(v);
    if (!about.empty()) s += about + ".\n\n";

    const sdk::value_view runs = doc["runs"];
    std::vector<sdk::value_view> all;
    for (size_t r = 0; r < runs.size(); ++r) all.push_back(runs.at(r));
    if (all.size() > 1) s += "## Runs compared\n\n" + totals_table(all, model, true) + "\n";
    for (size_t r = 0; r < all.size(); ++r) {
        if (r) s += "\n";
        s += run_section(all[r], r, all.size(), model, opt);
    }
    if (all.empty()) s += "No architecture in the pipeline: nothing estimated.\n";
    if (const sdk::value_view unknown = model["unknown_ops"]; unknown.size() > 0) {
        s += "\nUnknown ops (not counted):";
        for (size_t i = 0; i < unknown.size(); ++i)
            s += std::string(i ? ", " : " ") + escape(unknown.at(i)["node"].text()) + " (" +
                 escape(unknown.at(i)["op_type"].text()) + ")";
        s += ".\n";
    }
    return s;
}

/// Reads the `kernels` key: a count, or "all".
inline render_options parse_options(const sdk::config_view& config) {
    config.expect_only({"kernels"}, "nnergy.reporter.markdown");
    render_options opt;
    if (const nnergy_named_value* v = config.find("kernels")) {
        if (v->kind == NNERGY_VALUE_STRING && sdk::from_sv(v->string_value) == "all")
            opt.kernels.reset();
        else if (v->kind == NNERGY_VALUE_INT && v->int_value >= 0)
            opt.kernels = static_cast<size_t>(v->int_value);
        else
            throw sdk::error(sdk::config_view::where(*v) +
                             ": 'kernels' must be a count of 0 or more, or \"all\"");
    }
    return opt;
}

class markdown_reporter : public sdk::reporter {
public:
    explicit markdown_reporter(const sdk::context& ctx)
        : sdk::reporter(ctx), options_(parse_options(ctx.config())) {}

    void report(const sdk::value_view& doc, sdk::output_writer& out) override {
        // `nnergy validate` hands its comparison of many estimates with measurements.
        out.write(reporting::is_validation(doc) ? render_validation(doc) : render(doc, options_));
    }

private:
    render_options options_;
};

}  // namespace nnergy::markdown
