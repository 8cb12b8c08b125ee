// SPDX-License-Identifier: Apache-2.0
/// \file html_charts.hpp
/// \brief The report's charts as inline SVG, drawn from the plain structs of html_data.hpp. A
/// chart whose numbers are missing is replaced by a one-line note; every string from the
/// document goes through escape().
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "html_data.hpp"
#include "html_format.hpp"

namespace nnergy::html {

/// One-line note standing in for a chart that cannot be drawn; `id` stays in the page so the
/// chart's place can still be found.
inline std::string chart_note(std::string_view id, std::string_view text) {
    return "<p class=\"note\" id=\"" + std::string(id) + "\" data-missing=\"1\">" + escape(text) +
           "</p>\n";
}

inline std::string bottleneck_colour(std::string_view b) {
    if (b == "compute") return "#d9534f";
    if (b == "memory:dram") return "#3b6fb6";
    if (b.substr(0, 7) == "memory:") return "#4bb3b0";
    if (b == "overhead") return "#f0a030";
    if (b == "none" || b.empty()) return "#9a9a9a";
    return "#a66bbe";
}

/// Colours of energy categories: the bundled ones fixed, vendors' from a palette in order.
class category_colours {
public:
    std::string operator()(const std::string& category) {
        if (category == "compute") return "#d9534f";
        if (category == "memory") return "#3b6fb6";
        if (category == "control") return "#f0a030";
        if (category == "static") return "#b8b0a8";
        static constexpr const char* palette[] = {"#59a14f", "#e0c040", "#a66bbe",
                                                  "#ff9da7", "#9c755f", "#4bb3b0"};
        auto it = assigned_.find(category);
        if (it != assigned_.end()) return it->second;
        const std::string c = palette[assigned_.size() % std::size(palette)];
        assigned_.emplace(category, c);
        return c;
    }

private:
    std::map<std::string, std::string> assigned_;
};

inline std::string swatch(const std::string& colour, std::string_view label) {
    return "<span class=\"key\"><i style=\"background:" + colour + "\"></i>" + escape(label) +
           "</span>";
}

/// "#12 conv1": a kernel as named in tooltips and labels.
inline std::string kernel_label(const kernel_data& k) {
    return "#" + std::to_string(k.index) + " " + (k.name.empty() ? "?" : k.name);
}

/// Cuts a label to `n` code points, marking the cut with an ellipsis.
inline std::string shorten(std::string_view s, size_t n) {
    size_t cols = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
        if (cols == n - 1) {
            size_t rest = 0;
            for (size_t j = i; j < s.size(); ++j)
                if ((static_cast<unsigned char>(s[j]) & 0xC0) != 0x80) ++rest;
            if (rest > 1) return std::string(s.substr(0, i)) + "\xE2\x80\xA6";
            return std::string(s);
        }
        ++cols;
    }
    return std::string(s);
}

namespace svg {

struct frame {
    double width, height, left, right, top, bottom;
    double x0() const { return left; }
    double x1() const { return width - right; }
    double y0() const { return height - bottom; }  ///< the plot's bottom edge
    double y1() const { return top; }
};

inline std::string open(const frame& f, std::string_view label) {
    return "<svg viewBox=\"0 0 " + coord(f.width) + " " + coord(f.height) + "\" width=\"" +
           coord(f.width) + "\" height=\"" + coord(f.height) + "\" role=\"img\" aria-label=\"" +
           escape(label) + "\">\n";
}

inline std::string text(double x, double y, std::string_view content, std::string_view cls = "",
                        std::string_view anchor = "") {
    std::string s = "<text x=\"" + coord(x) + "\" y=\"" + coord(y) + "\"";
    if (!cls.empty()) s += " class=\"" + std::string(cls) + "\"";
    if (!anchor.empty()) s += " text-anchor=\"" + std::string(anchor) + "\"";
    return s + ">" + escape(content) + "</text>\n";
}

inline std::string line(double x1, double y1, double x2, double y2, std::string_view cls) {
    return "<line x1=\"" + coord(x1) + "\" y1=\"" + coord(y1) + "\" x2=\"" + coord(x2) +
           "\" y2=\"" + coord(y2) + "\" class=\"" + std::string(cls) + "\"/>\n";
}

inline std::string rect(double x, double y, double w, double h, std::string_view fill,
                        std::string_view tooltip, std::string_view cls = "") {
    std::string s = "<rect x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" width=\"" +
                    coord(std::max(0.0, w)) + "\" height=\"" + coord(std::max(0.0, h)) + "\"";
    if (!fill.empty()) s += " fill=\"" + std::string(fill) + "\"";
    if (!cls.empty()) s += " class=\"" + std::string(cls) + "\"";
    if (tooltip.empty()) return s + "/>\n";
    return s + "><title>" + escape(tooltip) + "</title></rect>\n";
}

/// Horizontal grid lines and labels of a y axis.
inline std::string y_axis(const frame& f, const scale& sy, const std::vector<double>& ticks,
                          const std::function<std::string(double)>& label, std::string_view title) {
    std::string s;
    for (double t : ticks) {
        const double y = sy(t);
        s += line(f.x0(), y, f.x1(), y, "grid");
        s += text(f.x0() - 6, y + 4, label(t), "tick", "end");
    }
    s += line(f.x0(), f.y0(), f.x0(), f.y1(), "axis");
    const double cy = (f.y0() + f.y1()) / 2;
    s += "<text class=\"title\" text-anchor=\"middle\" transform=\"translate(14 " + coord(cy) +
         ") rotate(-90)\">" + escape(title) + "</text>\n";
    return s;
}

/// Vertical grid lines and labels of an x axis.
inline std::string x_axis(const frame& f, const scale& sx, const std::vector<double>& ticks,
                          const std::function<std::string(double)>& label, std::string_view title) {
    std::string s;
    for (double t : ticks) {
        const double x = sx(t);
        s += line(x, f.y0(), x, f.y1(), "grid");
        s += text(x, f.y0() + 16, label(t), "tick", "middle");
    }
    s += line(f.x0(), f.y0(), f.x1(), f.y0(), "axis");
    s += text((f.x0() + f.x1()) / 2, f.height - 6, title, "title", "middle");
    return s;
}

}  // namespace svg

/// Log-log roofline: each kernel at (FLOP per byte of DRAM traffic, FLOPs / latency), coloured
/// by bottleneck; the compute roof of every execution unit the kernels use and the DRAM roof.
inline std::string roofline_chart(const run_data& run, const std::string& id) {
    struct point {
        double ai, flops_per_s;
        const kernel_data* k;
    };
    std::vector<point> points;
    size_t left_out = 0;
    std::map<std::string, double> peaks;  // unit -> peak FLOP/s
    double bandwidth = 0;
    for (const kernel_data& k : run.kernels) {
        if (k.peak_flops && *k.peak_flops > 0) {
            double& p = peaks[k.unit.empty() ? "peak" : k.unit];
            p = std::max(p, *k.peak_flops);
        }
        if (k.dram_bandwidth && *k.dram_bandwidth > 0)
            bandwidth = std::max(bandwidth, *k.dram_bandwidth);
        const opt ai = k.roofline_ai();
        if (ai && *ai > 0 && k.flops && *k.flops > 0 && k.latency && *k.latency > 0)
            points.push_back({*ai, *k.flops / *k.latency, &k});
        else
            ++left_out;
    }
    if (points.empty())
        return chart_note(id, run.kernels.empty()
                                  ? "Roofline: no kernels."
                                  : "Roofline not drawn: no kernel has FLOPs, bytes and a latency "
                                    "(the pipeline needs a latency estimator).");

    double x_lo = points[0].ai, x_hi = x_lo, y_lo = points[0].flops_per_s, y_hi = y_lo;
    for (const point& p : points) {
        x_lo = std::min(x_lo, p.ai);
        x_hi = std::max(x_hi, p.ai);
        y_lo = std::min(y_lo, p.flops_per_s);
        y_hi = std::max(y_hi, p.flops_per_s);
    }
    double top_peak = 0;
    for (const auto& [unit, peak] : peaks) {
        top_peak = std::max(top_peak, peak);
        y_hi = std::max(y_hi, peak);
        if (bandwidth > 0) {
            x_lo = std::min(x_lo, peak / bandwidth);
            x_hi = std::max(x_hi, peak / bandwidth);
        }
    }
    const std::vector<double> xt = log_ticks(x_lo, x_hi * 2), yt = log_ticks(y_lo, y_hi * 2);
    const svg::frame f{720, 400, 78, 24, 14, 44};
    const scale sx{xt.front(), xt.back(), f.x0(), f.x1(), true};
    const scale sy{yt.front(), yt.back(), f.y0(), f.y1(), true};

    std::string s =
        "<figure class=\"chart\" id=\"" + id + "\">\n<figcaption>Roofline</figcaption>\n";
    s += svg::open(f, "roofline: attained FLOP/s against arithmetic intensity, log-log");
    s += svg::x_axis(
        f, sx, xt, [](double v) { return v < 1 ? format("%g", v) : tick(v); },
        "arithmetic intensity (FLOP per byte of DRAM traffic)");
    s += svg::y_axis(
        f, sy, yt, [](double v) { return tick(v); }, "attained FLOP/s");
    // Roofs: the DRAM slope up to the highest ridge, each unit's peak flat from its own ridge.
    if (bandwidth > 0) {
        const double x_start = sx.lo;
        const double x_end =
            std::min(top_peak > 0 ? top_peak / bandwidth : sx.hi, sy.hi / bandwidth);
        // Clip the slope to the plot: it leaves through the bottom edge when x_start * bw is
        // below the axis.
        const double x_from = std::max(x_start, sy.lo / bandwidth);
        if (x_end > x_from) {
            s += svg::line(sx(x_from), sy(x_from * bandwidth), sx(x_end), sy(x_end * bandwidth),
                           "roof");
            const double lx = std::sqrt(x_from * x_end);  // mid-slope, in log space
            const double angle =
                std::atan2(sy(x_end * bandwidth) - sy(x_from * bandwidth), sx(x_end) - sx(x_from)) *
                180 / M_PI;
            s += "<text class=\"roof-label\" transform=\"translate(" + coord(sx(lx)) + " " +
                 coord(sy(lx * bandwidth) - 6) + ") rotate(" + coord(angle) + ")\">" +
                 escape("DRAM " + si(bandwidth, "B/s")) + "</text>\n";
        }
    }
    for (const auto& [unit, peak] : peaks) {
        const double ridge = bandwidth > 0 ? peak / bandwidth : sx.lo;
        s += svg::line(sx(std::max(ridge, sx.lo)), sy(peak), f.x1(), sy(peak), "roof");
        s += svg::text(f.x1() - 4, sy(peak) - 5, unit + " " + si(peak, "FLOP/s"), "roof-label",
                       "end");
    }
    std::map<std::string, size_t> legend;
    for (const point& p : points) {
        const kernel_data& k = *p.k;
        const std::string b = k.bottleneck.empty() ? "unknown" : k.bottleneck;
        ++legend[b];
        s += "<circle cx=\"" + coord(sx(p.ai)) + "\" cy=\"" + coord(sy(p.flops_per_s)) +
             "\" r=\"4\" fill=\"" + bottleneck_colour(k.bottleneck) + "\" class=\"pt\"><title>" +
             escape(kernel_label(k) + "\n" + b + "\nAI " + count(p.ai) + " FLOP/B, " +
                    si(p.flops_per_s, "FLOP/s") + "\nlatency " + seconds(*k.latency)) +
             "</title></circle>\n";
    }
    s += "</svg>\n<div class=\"legend\">";
    for (const auto& [b, n] : legend)
        s += swatch(bottleneck_colour(b == "unknown" ? "" : b), b + " (" + std::to_string(n) + ")");
    s += "</div>\n";
    std::string note;
    if (left_out)
        note += std::to_string(left_out) + " of " + std::to_string(run.kernels.size()) +
                " kernels not placed (no FLOPs, no DRAM bytes or no latency). ";
    if (bandwidth <= 0) note += "No DRAM bandwidth in the mappings: no memory roof. ";
    if (peaks.empty()) note += "No peak FLOP/s in the mappings: no compute roof. ";
    if (!note.empty()) {
        note.pop_back();
        s += "<p class=\"note\">" + escape(note) + "</p>\n";
    }
    return s + "</figure>\n";
}

namespace detail {

/// One horizontal stacked bar's segments: category -> joules, in a fixed category order.
struct stacked_row {
    std::string label, tooltip;
    std::vector<double> parts;  ///< one per category of the chart
    double total = 0;
};

inline std::string stacked_bars(const std::vector<stacked_row>& rows,
                                const std::vector<std::string>& categories,
                                category_colours& colours, std::string_view unit,
                                std::string_view aria) {
    double max_total = 0;
    for (const stacked_row& r : rows) max_total = std::max(max_total, r.total);
    const double row_h = 22;
    const svg::frame f{720, 34 + row_h * static_cast<double>(rows.size()), 200, 80, 8, 26};
    const std::vector<double> xt = linear_ticks(0, max_total > 0 ? max_total : 1, 5);
    const scale sx{0, xt.back(), f.x0(), f.x1(), false};
    std::string s = svg::open(f, aria);
    for (double t : xt) {
        s += svg::line(sx(t), f.y1(), sx(t), f.y0(), "grid");
        s += svg::text(sx(t), f.y0() + 16, tick(t, unit), "tick", "middle");
    }
    for (size_t r = 0; r < rows.size(); ++r) {
        const stacked_row& row = rows[r];
        const double y = f.y1() + row_h * static_cast<double>(r);
        s += svg::text(f.x0() - 6, y + 15, shorten(row.label, 30), "tick", "end");
        double x = 0;
        for (size_t c = 0; c < categories.size(); ++c) {
            const double v = c < row.parts.size() ? row.parts[c] : 0;
            if (!(v > 0)) continue;
            const std::string share = row.total > 0 ? " (" + percent(v / row.total) + ")" : "";
            s += svg::rect(sx(x), y + 3, sx(x + v) - sx(x), row_h - 6, colours(categories[c]),
                           row.tooltip + "\n" + categories[c] + ": " + si(v, unit) + share);
            x += v;
        }
        s += svg::text(sx(row.total) + 5, y + 15, si(row.total, unit), "tick");
    }
    s += svg::line(f.x0(), f.y1(), f.x0(), f.y0(), "axis");
    return s + "</svg>\n";
}

}  // namespace detail

/// The run's energy by category: one stacked bar (static included), with a legend of joules and
/// shares.
inline std::string energy_category_chart(const run_data& run, const std::string& id,
                                         category_colours& colours) {
    if (run.energy_categories.empty())
        return chart_note(id,
                          "Energy by category not drawn: the run has no energy estimate (add "
                          "nnergy.estimator.energy after the latency estimator; the hardware "
                          "file needs an [energy] table).");
    detail::stacked_row row;
    std::vector<std::string> categories;
    for (const auto& [name, j] : run.energy_categories) {
        categories.push_back(name);
        row.parts.push_back(j);
        row.total += j;
    }
    row.label = "whole model";
    row.tooltip = "whole model, " + si(row.total, "J");
    std::string s = "<figure class=\"chart\" id=\"" + id +
                    "\">\n<figcaption>Energy by category (one forward pass)</figcaption>\n";
    s += detail::stacked_bars({row}, categories, colours, "J", "energy by category");
    s += "<div class=\"legend\">";
    for (size_t c = 0; c < categories.size(); ++c)
        s += swatch(colours(categories[c]),
                    categories[c] + " " + si(row.parts[c], "J") +
                        (row.total > 0 ? " (" + percent(row.parts[c] / row.total) + ")" : ""));
    return s + "</div>\n</figure>\n";
}

/// The kernels spending the most energy, each bar stacked by its categories; the rest of the
/// kernels summed in a last bar.
inline std::string energy_kernel_chart(const run_data& run, const std::string& id, size_t top,
                                       category_colours& colours) {
    std::vector<const kernel_data*> with;
    for (const kernel_data& k : run.kernels)
        if (k.energy) with.push_back(&k);
    if (with.empty())
        return chart_note(id, "Energy by kernel not drawn: no kernel has an energy estimate.");
    std::stable_sort(with.begin(), with.end(), [](const kernel_data* a, const kernel_data* b) {
        return *a->energy > *b->energy;
    });
    std::vector<std::string> categories;
    for (const auto& [name, j] : run.energy_categories) categories.push_back(name);
    for (const kernel_data* k : with)
        for (const auto& [name, j] : k->energy_categories)
            if (std::find(categories.begin(), categories.end(), name) == categories.end())
                categories.push_back(name);
    const bool by_category = !categories.empty();
    if (!by_category) categories.push_back("energy");

    auto row_of = [&](const kernel_data& k) {
        detail::stacked_row row;
        row.label = kernel_label(k);
        row.tooltip = kernel_label(k) + ": " + si(*k.energy, "J");
        row.parts.assign(categories.size(), 0);
        if (by_category && !k.energy_categories.empty()) {
            for (const auto& [name, j] : k.energy_categories)
                row.parts[static_cast<size_t>(
                    std::find(categories.begin(), categories.end(), name) - categories.begin())] +=
                    j;
        } else {
            // No per-kernel categories: the whole energy in the first colour.
            row.parts[0] = *k.energy;
        }
        row.total = *k.energy;
        return row;
    };
    std::vector<detail::stacked_row> rows;
    const size_t shown = std::min(top, with.size());
    for (size_t i = 0; i < shown; ++i) rows.push_back(row_of(*with[i]));
    // The rest as a line of text, not a bar: their sum would dwarf the bars and flatten them.
    std::string rest;
    if (with.size() > shown) {
        double rest_j = 0, all_j = 0;
        for (size_t i = 0; i < with.size(); ++i) {
            all_j += *with[i]->energy;
            if (i >= shown) rest_j += *with[i]->energy;
        }
        rest = "The other " + std::to_string(with.size() - shown) + " kernels: " + si(rest_j, "J") +
               (all_j > 0 ? " (" + percent(rest_j / all_j) + ")" : "") + " of the kernels' energy.";
    }
    std::string s = "<figure class=\"chart\" id=\"" + id +
                    "\">\n<figcaption>Energy by kernel (top " + std::to_string(shown) + " of " +
                    std::to_string(with.size()) + (by_category ? ", stacked by category" : "") +
                    ")</figcaption>\n";
    s += detail::stacked_bars(rows, categories, colours, "J", "energy of the top kernels");
    if (by_category) {
        s += "<div class=\"legend\">";
        for (const std::string& c : categories) s += swatch(colours(c), c);
        s += "</div>\n";
    }
    if (!rest.empty()) s += "<p class=\"note\">" + escape(rest) + "</p>\n";
    return s + "</figure>\n";
}

/// Memory in use while each kernel runs, in kernel order: weights, live activations and
/// workspace stacked (or the total alone when the parts are missing); the peak marked.
inline std::string memory_chart(const run_data& run, const std::string& id) {
    const size_t n = run.kernels.size();
    size_t with = 0;
    for (const kernel_data& k : run.kernels)
        if (k.memory_in_use) ++with;
    if (with == 0)
        return chart_note(id,
                          "Memory timeline not drawn: no kernel has memory_in_use_bytes (add "
                          "nnergy.estimator.memory to the pipeline).");
    bool parts = true;
    double max_v = 0;
    size_t peak = 0;
    for (size_t i = 0; i < n; ++i) {
        const kernel_data& k = run.kernels[i];
        if (k.memory_in_use && !(k.activation_bytes && k.workspace_bytes)) parts = false;
        if (k.memory_in_use && *k.memory_in_use > max_v) {
            max_v = *k.memory_in_use;
            peak = i;
        }
    }
    // The estimator names its peak kernel (the first reaching the maximum); prefer it.
    if (run.peak_kernel)
        for (size_t i = 0; i < n; ++i)
            if (static_cast<double>(run.kernels[i].index) == *run.peak_kernel &&
                run.kernels[i].memory_in_use)
                peak = i;

    const svg::frame f{720, 320, 78, 24, 30, 44};
    const std::vector<double> yt = linear_ticks(0, max_v > 0 ? max_v : 1, 5);
    const scale sy{0, yt.back(), f.y0(), f.y1(), false};
    const double band = (f.x1() - f.x0()) / static_cast<double>(n);
    auto x_of = [&](size_t i) { return f.x0() + band * static_cast<double>(i); };

    // Layers, bottom first: each kernel's value in that layer.
    struct layer {
        std::string name, colour;
        std::vector<double> v;
    };
    std::vector<layer> layers;
    if (parts) {
        layers = {{"weights", "#8c6d9e", {}},
                  {"activations", "#59a14f", {}},
                  {"workspace", "#e0c040", {}}};
        for (const kernel_data& k : run.kernels) {
            const double a = k.activation_bytes.value_or(0), w = k.workspace_bytes.value_or(0);
            const double total = k.memory_in_use.value_or(0);
            layers[0].v.push_back(std::max(0.0, total - a - w));
            layers[1].v.push_back(a);
            layers[2].v.push_back(w);
        }
    } else {
        layers = {{"memory in use", "#3b6fb6", {}}};
        for (const kernel_data& k : run.kernels) layers[0].v.push_back(k.memory_in_use.value_or(0));
    }

    std::string s = "<figure class=\"chart\" id=\"" + id +
                    "\">\n<figcaption>Memory in use by kernel (in execution order)</figcaption>\n";
    s += svg::open(f, "memory in use while each kernel runs");
    s += svg::y_axis(
        f, sy, yt, [](double v) { return tick(v, "B"); }, "memory in use");
    const std::vector<double> xt = linear_ticks(0, static_cast<double>(n - 1), 8);
    std::string xs;
    for (double t : xt) {
        if (t < 0 || t > static_cast<double>(n - 1) || t != std::floor(t)) continue;
        const double x = x_of(static_cast<size_t>(t)) + band / 2;
        xs += svg::text(x, f.y0() + 16,
                        "#" + std::to_string(run.kernels[static_cast<size_t>(t)].index), "tick",
                        "middle");
    }
    s += xs + svg::line(f.x0(), f.y0(), f.x1(), f.y0(), "axis");
    s += svg::text((f.x0() + f.x1()) / 2, f.height - 6, "kernel, in execution order", "title",
                   "middle");
    // Each layer as one step-shaped area: along its top edge left to right, then back along the
    // layer below.
    std::vector<double> below(n, 0);
    for (const layer& l : layers) {
        std::string top, bottom;
        std::vector<double> above(n);
        for (size_t i = 0; i < n; ++i) above[i] = below[i] + l.v[i];
        for (size_t i = 0; i < n; ++i) {
            top += (i ? " L" : "M") + coord(x_of(i)) + " " + coord(sy(above[i])) + " L" +
                   coord(x_of(i + 1)) + " " + coord(sy(above[i]));
        }
        for (size_t i = n; i-- > 0;)
            bottom += " L" + coord(x_of(i + 1)) + " " + coord(sy(below[i])) + " L" +
                      coord(x_of(i)) + " " + coord(sy(below[i]));
        s += "<path d=\"" + top + bottom + " Z\" fill=\"" + l.colour + "\" class=\"area\"><title>" +
             escape(l.name) + "</title></path>\n";
        below = std::move(above);
    }
    // Hover bands: one per kernel, with its numbers.
    for (size_t i = 0; i < n; ++i) {
        const kernel_data& k = run.kernels[i];
        if (!k.memory_in_use) continue;
        std::string tip = kernel_label(k) + "\nin use " + si(*k.memory_in_use, "B");
        if (parts)
            tip += "\nweights " + si(layers[0].v[i], "B") + ", activations " +
                   si(layers[1].v[i], "B") + ", workspace " + si(layers[2].v[i], "B");
        s += svg::rect(x_of(i), f.y1(), band, f.y0() - f.y1(), "", tip, "hover");
    }
    // The peak: a dashed line, a dot and its label, on the side with room.
    const kernel_data& pk = run.kernels[peak];
    const double px = x_of(peak) + band / 2, py = sy(pk.memory_in_use.value_or(0));
    s += svg::line(px, f.y0(), px, f.y1() - 8, "peak");
    s += "<circle cx=\"" + coord(px) + "\" cy=\"" + coord(py) + "\" r=\"4\" class=\"peak-dot\"/>\n";
    const bool right_side = px < (f.x0() + f.x1()) / 2;
    s += svg::text(
        px + (right_side ? 6 : -6), f.y1() - 12,
        "peak " + si(pk.memory_in_use.value_or(0), "B") + " at " + shorten(kernel_label(pk), 40),
        "peak-label", right_side ? "start" : "end");
    s += "</svg>\n<div class=\"legend\">";
    for (const layer& l : layers) s += swatch(l.colour, l.name);
    s += "</div>\n";
    if (!run.fits.empty())
        s += "<p class=\"note\">" +
             escape(run.fits == "does not fit" ? "The peak does not fit in device memory."
                    : run.fits == "unknown"    ? "Device memory capacity not given."
                                               : "The peak fits in " + run.fits + ".") +
             "</p>\n";
    return s + "</figure>\n";
}

/// The energy-delay product's concentration: the kernels sorted by EDP, largest first, against
/// the cumulative share of the summed kernel EDP, with the 50/80/90% marks. It answers "how
/// few kernels must get faster or cheaper to matter".
inline std::string edp_chart(const run_data& run, const std::string& id) {
    std::vector<std::pair<double, const kernel_data*>> edp;
    for (const kernel_data& k : run.kernels) {
        opt e = k.edp;
        if (!e && k.energy && k.latency) e = *k.energy * *k.latency;
        if (e && *e >= 0) edp.emplace_back(*e, &k);
    }
    double sum = 0;
    for (const auto& e : edp) sum += e.first;
    if (edp.empty() || !(sum > 0))
        return chart_note(id,
                          "EDP curve not drawn: no kernel has an energy-delay product (the "
                          "pipeline needs the energy estimator).");
    std::stable_sort(edp.begin(), edp.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    const size_t n = edp.size();
    const svg::frame f{720, 320, 78, 24, 14, 44};
    const std::vector<double> xt = linear_ticks(0, static_cast<double>(n), 8);
    const scale sx{0, xt.back(), f.x0(), f.x1(), false};
    const scale sy{0, 1, f.y0(), f.y1(), false};
    std::string s = "<figure class=\"chart\" id=\"" + id +
                    "\">\n<figcaption>Energy-delay product: cumulative share over kernels, "
                    "largest EDP first</figcaption>\n";
    s += svg::open(f, "cumulative share of the summed kernel EDP over kernels sorted by EDP");
    s += svg::x_axis(
        f, sx, xt, [](double v) { return count(v); }, "kernels, sorted by EDP (largest first)");
    s += svg::y_axis(
        f, sy, {0, 0.2, 0.4, 0.6, 0.8, 1.0}, [](double v) { return percent(v); },
        "share of summed kernel EDP");
    std::vector<double> cumulative(n);
    double acc = 0;
    for (size_t i = 0; i < n; ++i) cumulative[i] = (acc += edp[i].first) / sum;
    for (double mark : {0.5, 0.8, 0.9}) {
        size_t k = 0;
        while (k + 1 < n && cumulative[k] < mark - 1e-12) ++k;
        s += svg::line(f.x0(), sy(mark), sx(static_cast<double>(k + 1)), sy(mark), "mark");
        s += svg::line(sx(static_cast<double>(k + 1)), sy(mark), sx(static_cast<double>(k + 1)),
                       f.y0(), "mark");
        s += svg::text(
            sx(static_cast<double>(k + 1)) + 5, sy(mark) + 14,
            percent(mark) + ": " + std::to_string(k + 1) + (k == 0 ? " kernel" : " kernels"),
            "mark-label");
    }
    std::string d = "M" + coord(sx(0)) + " " + coord(sy(0));
    for (size_t i = 0; i < n; ++i)
        d += " L" + coord(sx(static_cast<double>(i + 1))) + " " + coord(sy(cumulative[i]));
    s += "<path d=\"" + d + "\" class=\"curve\"/>\n";
    // A point with a tooltip per kernel, up to a bound: past it the points merge into a band
    // and only add weight, and the kernels that matter are the first ones.
    constexpr size_t max_points = 200;
    const size_t points = std::min(n, max_points);
    for (size_t i = 0; i < points; ++i) {
        const kernel_data& k = *edp[i].second;
        s += "<circle cx=\"" + coord(sx(static_cast<double>(i + 1))) + "\" cy=\"" +
             coord(sy(cumulative[i])) + "\" r=\"3\" fill=\"" + bottleneck_colour(k.bottleneck) +
             "\" class=\"pt\"><title>" +
             escape(std::to_string(i + 1) + ". " + kernel_label(k) + "\nEDP " +
                    si(edp[i].first, "J\xC2\xB7s") + " (" + percent(edp[i].first / sum) +
                    "), cumulative " + percent(cumulative[i])) +
             "</title></circle>\n";
    }
    s += "</svg>\n";
    if (points < n)
        s += "<p class=\"note\">Points (with tooltips) for the " + std::to_string(points) +
             " kernels with the largest EDP; the curve covers all " + std::to_string(n) + ".</p>\n";
    return s + "</figure>\n";
}

/// One metric across runs: a horizontal bar per run, the smallest marked best.
struct comparison_metric {
    std::string id, title, unit;
    std::function<opt(const run_data&)> value;
};

inline std::string comparison_chart(const std::vector<run_data>& runs, const comparison_metric& m) {
    double max_v = 0, best = 0;
    bool any = false;
    for (const run_data& r : runs)
        if (opt v = m.value(r)) {
            if (!any || *v < best) best = *v;
            max_v = std::max(max_v, *v);
            any = true;
        }
    if (!any) return chart_note(m.id, m.title + ": not estimated in any run.");
    const double row_h = 24;
    const svg::frame f{720, 34 + row_h * static_cast<double>(runs.size()), 250, 90, 8, 26};
    const std::vector<double> xt = linear_ticks(0, max_v > 0 ? max_v : 1, 5);
    const scale sx{0, xt.back(), f.x0(), f.x1(), false};
    std::string s = "<figure class=\"chart\" id=\"" + m.id + "\">\n<figcaption>" + escape(m.title) +
                    " by run</figcaption>\n";
    s += svg::open(f, m.title + " of each run");
    for (double t : xt) {
        s += svg::line(sx(t), f.y1(), sx(t), f.y0(), "grid");
        s += svg::text(sx(t), f.y0() + 16, tick(t, m.unit), "tick", "middle");
    }
    for (size_t i = 0; i < runs.size(); ++i) {
        const run_data& r = runs[i];
        const double y = f.y1() + row_h * static_cast<double>(i);
        const std::string label = std::to_string(r.number) + ". " + r.label();
        s += svg::text(f.x0() - 6, y + 16, shorten(label, 40), "tick", "end");
        const opt v = m.value(r);
        if (!v) {
            s += svg::text(f.x0() + 4, y + 16, "not estimated", "tick");
            continue;
        }
        const bool is_best = *v == best && runs.size() > 1;
        s += svg::rect(f.x0(), y + 4, sx(*v) - f.x0(), row_h - 8, is_best ? "#59a14f" : "#3b6fb6",
                       label + "\n" + m.title + ": " + si(*v, m.unit) + (is_best ? " (best)" : ""));
        s += svg::text(sx(*v) + 5, y + 16, si(*v, m.unit) + (is_best ? " best" : ""), "tick");
    }
    s += svg::line(f.x0(), f.y1(), f.x0(), f.y0(), "axis");
    return s + "</svg>\n</figure>\n";
}

inline std::vector<comparison_metric> comparison_metrics() {
    return {
        {"compare-latency", "Latency", "s", [](const run_data& r) { return r.latency; }},
        {"compare-energy", "Energy", "J", [](const run_data& r) { return r.energy; }},
        {"compare-memory", "Peak memory", "B", [](const run_data& r) { return r.peak_memory; }},
        {"compare-edp", "EDP", "J\xC2\xB7s", [](const run_data& r) { return r.edp; }},
    };
}

}  // namespace nnergy::html
