// SPDX-License-Identifier: Apache-2.0
/// \file html_reporter.hpp
/// \brief nnergy.reporter.html: the report document (docs/report.md) as one self-contained HTML
/// page: inline CSS, inline SVG charts and a little inline script, nothing fetched.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <nnergy/sdk.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "html_assets.hpp"
#include "html_charts.hpp"
#include "html_data.hpp"
#include "html_format.hpp"
#include "html_validation.hpp"

namespace nnergy::html {

struct render_options {
    std::string title;                 ///< empty: "<model> - nnergy report"
    int64_t max_table_kernels = 1000;  ///< rows of each kernel table (the slowest kept); 0: none
    int64_t energy_kernels = 15;       ///< bars of the energy-by-kernel chart
};

namespace detail {

inline std::string card(std::string_view label, const std::string& value) {
    return "<div class=\"card\"><div class=\"label\">" + escape(label) +
           "</div><div class=\"value\">" + escape(value) + "</div></div>";
}

inline std::string meta_row(std::string_view key, const std::string& value) {
    if (value.empty()) return {};
    return "<dt>" + escape(key) + "</dt><dd>" + escape(value) + "</dd>";
}

inline std::string join(const std::vector<std::string>& items, std::string_view sep) {
    std::string s;
    for (size_t i = 0; i < items.size(); ++i) s += (i ? std::string(sep) : "") + items[i];
    return s;
}

/// The run's totals as cards, each with its unit; a note names what was not estimated.
inline std::string totals_cards(const run_data& r) {
    std::string s = "<div class=\"cards\">";
    std::vector<std::string> missing_parts;
    auto add = [&](std::string_view label, const opt& v, auto fmt) {
        if (v) s += card(label, fmt(*v));
    };
    add("latency", r.latency, [](double v) { return seconds(v); });
    add("energy", r.energy, [](double v) { return si(v, "J"); });
    add("average power", r.average_power, [](double v) { return si(v, "W"); });
    add("EDP", r.edp, [](double v) { return si(v, "J\xC2\xB7s"); });
    add("peak memory", r.peak_memory, [](double v) { return si(v, "B"); });
    add("inferences per J", r.inferences_per_j, [](double v) { return si(v); });
    add("tokens per J", r.tokens_per_j, [](double v) { return si(v); });
    add("FLOPs", r.flops, [](double v) { return count(v); });
    add("MACs", r.macs, [](double v) { return count(v); });
    add("params", r.params, [](double v) { return count(v); });
    if (r.flops && r.latency && *r.latency > 0)
        s += card("attained", si(*r.flops / *r.latency, "FLOP/s"));
    s += "</div>\n";
    if (!r.latency) missing_parts.push_back("latency (no latency estimator)");
    if (!r.energy)
        missing_parts.push_back("energy (no nnergy.estimator.energy or no [energy] table)");
    if (!r.peak_memory) missing_parts.push_back("memory (no nnergy.estimator.memory)");
    if (!missing_parts.empty())
        s += "<p class=\"note\">Not estimated in this run: " + escape(join(missing_parts, "; ")) +
             ".</p>\n";
    return s;
}

struct column {
    std::string header;
    bool number;
};

/// The kernel table: one row per kernel (the slowest `max_rows` when there are more), sortable
/// by clicking a header, filtered by the text box; units in the headers.
inline std::string kernel_table(const run_data& r, const std::string& prefix, int64_t max_rows) {
    const std::string id = prefix + "-kernels";
    if (max_rows == 0) return chart_note(id, "Kernel table left out (max_table_kernels = 0).");
    if (r.kernels.empty()) return chart_note(id, "No kernels.");
    bool energy = false, memory = false, latency = false;
    for (const kernel_data& k : r.kernels) {
        energy = energy || k.energy;
        memory = memory || k.memory_in_use;
        latency = latency || k.latency;
    }
    std::vector<const kernel_data*> rows;
    for (const kernel_data& k : r.kernels) rows.push_back(&k);
    const size_t limit = static_cast<size_t>(max_rows);
    std::string note;
    if (rows.size() > limit) {
        std::stable_sort(rows.begin(), rows.end(), [](const kernel_data* a, const kernel_data* b) {
            return a->latency.value_or(-1) > b->latency.value_or(-1);
        });
        rows.resize(limit);
        std::stable_sort(rows.begin(), rows.end(), [](const kernel_data* a, const kernel_data* b) {
            return a->index < b->index;
        });
        note = "The table lists the " + std::to_string(limit) + " slowest of " +
               std::to_string(r.kernels.size()) + " kernels (max_table_kernels).";
    }

    std::vector<column> cols = {{"#", true},       {"kernel", false},   {"pattern", false},
                                {"ops", false},    {"unit", false},     {"bottleneck", false},
                                {"FLOPs", true},   {"bytes (B)", true}, {"AI (FLOP/B)", true},
                                {"util (%)", true}};
    if (latency) {
        cols.push_back({"latency (s)", true});
        cols.push_back({"share of latency (%)", true});
    }
    if (energy) {
        cols.push_back({"energy (J)", true});
        cols.push_back({"power (W)", true});
        cols.push_back({"EDP (J\xC2\xB7s)", true});
    }
    if (memory) cols.push_back({"memory in use (B)", true});

    std::string s = "<h3>Kernels</h3>\n<div class=\"filter\"><input type=\"search\" id=\"" +
                    prefix + "-filter\" data-table=\"" + id + "\" data-count=\"" + prefix +
                    "-count\" placeholder=\"filter kernels (name, op, bottleneck...)\" "
                    "aria-label=\"filter kernels\"><span id=\"" +
                    prefix + "-count\" class=\"note\"></span></div>\n";
    if (!note.empty()) s += "<p class=\"note\">" + escape(note) + "</p>\n";
    s += "<div class=\"table-wrap\"><table class=\"kernels\" id=\"" + id + "\"><thead><tr>";
    for (const column& c : cols)
        s += std::string("<th") + (c.number ? " data-type=\"number\"" : "") + ">" +
             escape(c.header) + "</th>";
    s += "</tr></thead>\n<tbody>\n";
    auto num = [&](const opt& v, const std::string& shown) {
        if (!v)
            return std::string("<td class=\"num\" data-v=\"\">") + std::string(missing) + "</td>";
        return "<td class=\"num\" data-v=\"" + sort_key(*v) + "\">" + escape(shown) + "</td>";
    };
    auto txt = [](const std::string& v) { return "<td>" + escape(v) + "</td>"; };
    for (const kernel_data* kp : rows) {
        const kernel_data& k = *kp;
        s += "<tr>";
        s += num(static_cast<double>(k.index), std::to_string(k.index));
        std::string name = "<td";
        if (!k.explanation.empty()) name += " title=\"" + escape(k.explanation) + "\"";
        name += ">" + escape(k.name) + (k.all_counted ? "" : " *") + "</td>";
        s += name;
        s += txt(k.pattern) + "<td class=\"ops\" title=\"" + escape(k.ops) + "\">" + escape(k.ops) +
             "</td>" + txt(k.unit);
        s += "<td><span class=\"dot\" style=\"background:" + bottleneck_colour(k.bottleneck) +
             "\"></span>" + escape(k.bottleneck) + "</td>";
        s += num(k.flops, k.flops ? count(*k.flops) : "");
        s += num(k.bytes, k.bytes ? si(*k.bytes, "B") : "");
        s += num(k.ai, k.ai ? count(*k.ai) : "");
        const opt util = k.utilization ? opt(*k.utilization * 100) : std::nullopt;
        s += num(util, util ? percent(*k.utilization) : "");
        if (latency) {
            s += num(k.latency, k.latency ? seconds(*k.latency) : "");
            const opt share = k.latency && r.latency && *r.latency > 0
                                  ? opt(*k.latency / *r.latency * 100)
                                  : std::nullopt;
            s += num(share, share ? percent(*share / 100) : "");
        }
        if (energy) {
            s += num(k.energy, k.energy ? si(*k.energy, "J") : "");
            s += num(k.power, k.power ? si(*k.power, "W") : "");
            s += num(k.edp, k.edp ? si(*k.edp, "J\xC2\xB7s") : "");
        }
        if (memory) s += num(k.memory_in_use, k.memory_in_use ? si(*k.memory_in_use, "B") : "");
        s += "</tr>\n";
    }
    s += "</tbody></table></div>\n";
    bool any_uncounted = false;
    for (const kernel_data* k : rows) any_uncounted = any_uncounted || !k->all_counted;
    if (any_uncounted)
        s += "<p class=\"note\">* contains ops that could not be counted: their work is "
             "missing.</p>\n";
    return s;
}

inline std::string run_section(const run_data& r, size_t run_count, const render_options& opt,
                               category_colours& colours) {
    const std::string prefix = "run" + std::to_string(r.number);
    std::string s = "<section class=\"run\" id=\"" + prefix + "\">\n<h2>";
    if (run_count > 1)
        s += "Run " + std::to_string(r.number) + " of " + std::to_string(run_count) + ": ";
    s += escape(r.label()) + "</h2>\n<dl class=\"meta\">";
    s += meta_row(
        "hardware",
        r.hardware + (r.hardware_class.empty() ? std::string() : " (" + r.hardware_class + ")"));
    s += meta_row("precision", r.precision);
    s += meta_row("dims", join(r.dim_texts, ", "));
    s += meta_row("architecture", r.architecture);
    s += meta_row("estimators", join(r.estimators, ", "));
    s += "</dl>\n";
    if (run_count > 1) s += totals_cards(r);  // a single run's are in the page header
    s += "<div class=\"charts\">\n";
    s += roofline_chart(r, prefix + "-roofline");
    s += memory_chart(r, prefix + "-memory");
    s += energy_category_chart(r, prefix + "-energy-categories", colours);
    s += energy_kernel_chart(r, prefix + "-energy-kernels", static_cast<size_t>(opt.energy_kernels),
                             colours);
    s += edp_chart(r, prefix + "-edp");
    s += "</div>\n";
    s += kernel_table(r, prefix, opt.max_table_kernels);
    return s + "</section>\n";
}

}  // namespace detail

/// The whole page.
inline std::string render(const report_data& d, const render_options& opt = {}) {
    using namespace detail;
    const std::string title = !opt.title.empty()
                                  ? opt.title
                                  : (d.model_name.empty() ? std::string("model") : d.model_name) +
                                        " \xE2\x80\x94 nnergy report";
    std::string s;
    s.reserve(64 * 1024 + 2048 * d.runs.size() * (d.runs.empty() ? 0 : d.runs[0].kernels.size()));
    s += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    s += "<meta http-equiv=\"Content-Security-Policy\" content=\"" +
         std::string(content_security_policy) + "\">\n";
    s += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    s += "<meta name=\"generator\" content=\"" + escape(d.tool) + "\">\n";
    s += "<title>" + escape(title) + "</title>\n<script>" + std::string(error_script) +
         "</script>\n<style>" + std::string(style_sheet) + "</style>\n</head>\n<body>\n";

    s += "<header class=\"page\" id=\"summary\">\n<h1>" + escape(title) +
         "</h1>\n<dl class=\"meta\">";
    s += meta_row("model", d.model_name);
    s += meta_row("file", d.model_path);
    s += meta_row("frontend", d.frontend);
    s += meta_row("dims", join(d.dim_texts, ", ") +
                              (d.sweep_texts.empty() ? "" : " (first run; each run has its own)"));
    for (const std::string& sw : d.sweep_texts) s += meta_row("sweep", sw);
    std::vector<std::string> graph;
    if (d.nodes) graph.push_back(count(*d.nodes) + " nodes");
    if (d.tensors) graph.push_back(count(*d.tensors) + " tensors");
    if (d.kernel_count)
        graph.push_back(count(*d.kernel_count) + " kernels" +
                        (d.partitioner.empty() ? "" : " (" + d.partitioner + ")"));
    s += meta_row("graph", join(graph, ", "));
    s += meta_row("pipeline", d.pipeline);
    if (d.runs.size() == 1) {
        const run_data& r = d.runs[0];
        s += meta_row("hardware",
                      r.hardware + (r.hardware_class.empty() ? std::string()
                                                             : " (" + r.hardware_class + ")"));
        s += meta_row("precision", r.precision);
    } else if (d.runs.size() > 1) {
        s += meta_row("runs", std::to_string(d.runs.size()));
    }
    s += "</dl>\n";
    if (d.runs.size() == 1) s += totals_cards(d.runs[0]);
    s += "</header>\n<main>\n";

    category_colours colours;
    if (d.runs.empty()) {
        s += "<p class=\"note\" id=\"no-runs\">No architecture in the pipeline: counts only, no "
             "charts.</p>\n";
    } else if (d.runs.size() > 1) {
        s +=
            "<section id=\"comparison\">\n<h2>Runs compared</h2>\n<table class=\"kernels\" "
            "id=\"runs-table\"><thead><tr><th data-type=\"number\">run</th><th>hardware</th>"
            "<th>precision</th><th>dims</th><th data-type=\"number\">latency (s)</th>"
            "<th data-type=\"number\">energy (J)</th><th data-type=\"number\">average power "
            "(W)</th><th data-type=\"number\">EDP (J\xC2\xB7s)</th><th data-type=\"number\">peak "
            "memory (B)</th><th data-type=\"number\">inferences per J</th></tr></thead>\n<tbody>\n";
        for (const run_data& r : d.runs) {
            auto cell = [](const nnergy::html::opt& v, const std::string& shown) {
                return v ? "<td class=\"num\" data-v=\"" + sort_key(*v) + "\">" + escape(shown) +
                               "</td>"
                         : "<td class=\"num\" data-v=\"\">" + std::string(missing) + "</td>";
            };
            s += "<tr><td class=\"num\" data-v=\"" + std::to_string(r.number) + "\">" +
                 std::to_string(r.number) + "</td><td>" + escape(r.hardware) + "</td><td>" +
                 escape(r.precision) + "</td><td>" + escape(join(r.dim_texts, ", ")) + "</td>";
            s += cell(r.latency, r.latency ? seconds(*r.latency) : "");
            s += cell(r.energy, r.energy ? si(*r.energy, "J") : "");
            s += cell(r.average_power, r.average_power ? si(*r.average_power, "W") : "");
            s += cell(r.edp, r.edp ? si(*r.edp, "J\xC2\xB7s") : "");
            s += cell(r.peak_memory, r.peak_memory ? si(*r.peak_memory, "B") : "");
            s += cell(r.inferences_per_j, r.inferences_per_j ? si(*r.inferences_per_j) : "");
            s += "</tr>\n";
        }
        s += "</tbody></table>\n<div class=\"charts compare\">\n";
        for (const comparison_metric& m : comparison_metrics()) s += comparison_chart(d.runs, m);
        s += "</div>\n</section>\n";
        s += "<nav class=\"runs\" id=\"run-selector\" aria-label=\"runs\">";
        for (const run_data& r : d.runs)
            s += "<button type=\"button\" data-run=\"run" + std::to_string(r.number) + "\">" +
                 std::to_string(r.number) + ". " + escape(r.label()) + "</button>";
        s += "<button type=\"button\" data-run=\"all\">all runs</button></nav>\n";
    }
    for (const run_data& r : d.runs) s += run_section(r, d.runs.size(), opt, colours);
    if (!d.unknown_ops.empty()) {
        s += "<h2>Unknown ops</h2>\n<p class=\"note\" id=\"unknown-ops\">Not counted: their work "
             "is missing from every figure.</p>\n<ul>";
        for (const std::string& u : d.unknown_ops) s += "<li>" + escape(u) + "</li>";
        s += "</ul>\n";
    }
    s += "</main>\n<footer>Generated by " + escape(d.tool) +
         ". Units are SI; decimal prefixes (kB = 1000 B). Hover a point or bar for its "
         "numbers.</footer>\n";
    s += "<script>" + std::string(page_script) + "</script>\n</body>\n</html>\n";
    return s;
}

/// The page for a report document.
inline std::string render(const sdk::value_view& doc, const render_options& opt = {}) {
    return render(read_report(doc), opt);
}

class html_reporter : public sdk::reporter {
public:
    explicit html_reporter(const sdk::context& ctx) : sdk::reporter(ctx) {
        const sdk::config_view config = ctx.config();
        config.expect_only({"title", "max_table_kernels", "energy_kernels"},
                           "nnergy.reporter.html");
        options_.title = config.string("title").value_or("");
        options_.max_table_kernels = config.integer("max_table_kernels").value_or(1000);
        if (options_.max_table_kernels < 0)
            throw sdk::error(sdk::config_view::where(*config.find("max_table_kernels")) +
                             ": 'max_table_kernels' must be 0 (no table) or more");
        options_.energy_kernels = config.integer("energy_kernels").value_or(15);
        if (options_.energy_kernels < 1 || options_.energy_kernels > 200)
            throw sdk::error(sdk::config_view::where(*config.find("energy_kernels")) +
                             ": 'energy_kernels' must be between 1 and 200");
    }

    void report(const sdk::value_view& doc, sdk::output_writer& out) override {
        // `nnergy validate` hands its comparison of many estimates with measurements.
        out.write(reporting::is_validation(doc) ? render_validation(doc) : render(doc, options_));
    }

private:
    render_options options_;
};

}  // namespace nnergy::html
