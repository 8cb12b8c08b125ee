// SPDX-License-Identifier: Apache-2.0
/// \file html_data.hpp
/// \brief The numbers the HTML report draws, read out of the report document (docs/report.md)
/// into plain structs. Every number is optional: a pipeline without the energy or memory
/// estimator leaves those fields empty, and non-finite values count as missing.
#pragma once

#include <cmath>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "html_format.hpp"

namespace nnergy::html {

using opt = std::optional<double>;
using named_values = std::vector<std::pair<std::string, double>>;

struct kernel_data {
    size_t index = 0;
    std::string name, pattern, ops, unit, bottleneck, explanation;
    bool all_counted = true;
    opt flops, macs;
    opt bytes;       ///< the graph's input + output + weight bytes
    opt ai;          ///< the document's arithmetic_intensity (graph bytes)
    opt dram_bytes;  ///< mapping.levels[dram].bytes: the traffic the latency model moved
    opt dram_bandwidth, peak_flops;
    opt utilization;
    opt latency, energy, power, edp;
    opt memory_in_use, activation_bytes, workspace_bytes;
    named_values energy_categories;  ///< energy.<category>_j of the kernel, in document order

    /// FLOP per byte of DRAM traffic, the roofline's abscissa; falls back to the graph's.
    opt roofline_ai() const {
        if (flops && dram_bytes && *dram_bytes > 0) return *flops / *dram_bytes;
        return ai;
    }
};

struct run_data {
    size_t number = 1;  ///< 1-based
    std::string hardware, hardware_class, precision, architecture;
    std::vector<std::string> dim_texts;  ///< "batch=8"
    std::vector<std::string> estimators;
    // Totals.
    opt params, macs, flops, latency, energy, average_power, edp, peak_memory, inferences_per_j,
        tokens_per_j, weight_bytes, peak_kernel, compute_time, memory_time, overhead;
    std::string peak_kernel_name, fits;
    named_values energy_categories;  ///< totals energy.<category>_j, static included
    std::vector<kernel_data> kernels;

    /// "h100-sxm5 · float16 · batch=8"
    std::string label() const {
        std::string s = hardware.empty() ? "?" : hardware;
        if (!precision.empty()) s += " \xC2\xB7 " + precision;
        for (const std::string& d : dim_texts) s += " \xC2\xB7 " + d;
        return s;
    }
};

struct report_data {
    std::string title;
    std::string tool, model_name, model_path, frontend, pipeline, partitioner;
    std::vector<std::string> dim_texts, sweep_texts, unknown_ops;
    opt nodes, tensors, kernel_count;
    std::vector<run_data> runs;
};

namespace detail {

/// "energy.<category>_j" keys with a category free of dots: the per-category sums.
inline named_values energy_categories(const sdk::value_view& object) {
    named_values out;
    for (size_t i = 0; i < object.size(); ++i) {
        const std::string_view key = object.key(i);
        if (key.size() < 10 || key.substr(0, 7) != "energy." || key.substr(key.size() - 2) != "_j")
            continue;
        const std::string_view name = key.substr(7, key.size() - 9);
        if (name.find('.') != std::string_view::npos) continue;
        if (opt j = object.at(i).number()) out.emplace_back(std::string(name), *j);
    }
    return out;
}

inline std::vector<std::string> dim_texts(const sdk::value_view& dims) {
    std::vector<std::string> out;
    for (size_t i = 0; i < dims.size(); ++i)
        out.push_back(std::string(dims.key(i)) + "=" + dims.at(i).text());
    return out;
}

inline kernel_data read_kernel(const sdk::value_view& k, size_t position) {
    kernel_data d;
    const opt index = k["index"].number();
    d.index = index && *index >= 0 ? static_cast<size_t>(*index) : position;
    d.name = k["name"].text();
    d.pattern = k["pattern"].text();
    const sdk::value_view ops = k["ops"];
    for (size_t i = 0; i < ops.size(); ++i) d.ops += (i ? "+" : "") + ops.at(i).text();
    if (k["all_counted"].kind() == NNERGY_VALUE_BOOL) d.all_counted = k["all_counted"].as_bool();
    d.flops = k["flops"].number();
    d.macs = k["macs"].number();
    const opt in = k["input_bytes"].number(), out = k["output_bytes"].number(),
              w = k["weight_bytes"].number();
    if (in || out || w) d.bytes = in.value_or(0) + out.value_or(0) + w.value_or(0);
    d.ai = k["arithmetic_intensity"].number();
    if (!d.ai && d.flops && d.bytes && *d.bytes > 0) d.ai = *d.flops / *d.bytes;

    const sdk::value_view mapping = k["mapping"];
    d.unit = mapping["unit"].text();
    d.explanation = mapping["explanation"].text();
    d.peak_flops = mapping["peak_flops_per_s"].number();
    d.utilization = mapping["utilization"].number();
    const sdk::value_view levels = mapping["levels"];
    for (size_t i = 0; i < levels.size(); ++i) {
        const sdk::value_view level = levels.at(i);
        if (level["level"].text() != "dram") continue;
        d.dram_bytes = level["bytes"].number();
        d.dram_bandwidth = level["bandwidth_bytes_per_s"].number();
    }

    const sdk::value_view metrics = k["metrics"];
    d.bottleneck = metrics["bottleneck"].text();
    if (d.bottleneck.empty()) d.bottleneck = mapping["bottleneck"].text();
    if (metrics["note"]) d.all_counted = false;
    d.latency = metrics["latency_s"].number();
    d.energy = metrics["energy_j"].number();
    d.power = metrics["power_w"].number();
    d.edp = metrics["edp_j_s"].number();
    d.memory_in_use = metrics["memory_in_use_bytes"].number();
    d.activation_bytes = metrics["live_activation_bytes"].number();
    d.workspace_bytes = metrics["workspace_bytes"].number();
    d.energy_categories = energy_categories(metrics);
    return d;
}

inline run_data read_run(const sdk::value_view& run, size_t number_1based,
                         const sdk::value_view& model_dims) {
    run_data r;
    r.number = number_1based;
    const sdk::value_view arch = run["architecture"];
    r.hardware = arch["hardware"].text();
    r.hardware_class = arch["class"].text();
    r.precision = arch["precision"].text();
    r.architecture = arch["plugin"].text();
    r.dim_texts = dim_texts(run["dims"] ? run["dims"] : model_dims);
    const sdk::value_view estimators = run["estimators"];
    for (size_t i = 0; i < estimators.size(); ++i) r.estimators.push_back(estimators.at(i).text());

    const sdk::value_view t = run["totals"];
    r.params = t["params"].number();
    r.macs = t["macs"].number();
    r.flops = t["flops"].number();
    r.latency = t["latency_s"].number();
    r.energy = t["energy_j"].number();
    r.average_power = t["average_power_w"].number();
    r.edp = t["edp_j_s"].number();
    if (!r.edp && r.energy && r.latency) r.edp = *r.energy * *r.latency;
    if (!r.average_power && r.energy && r.latency && *r.latency > 0)
        r.average_power = *r.energy / *r.latency;
    r.peak_memory = t["peak_memory_bytes"].number();
    r.inferences_per_j = t["inferences_per_j"].number();
    r.tokens_per_j = t["tokens_per_j"].number();
    r.weight_bytes = t["weight_bytes"].number();
    r.peak_kernel = t["peak_kernel"].number();
    r.peak_kernel_name = t["peak_kernel_name"].text();
    r.fits = t["fits"].text();
    r.compute_time = t["compute_time_s"].number();
    r.memory_time = t["memory_time_s"].number();
    r.overhead = t["overhead_s"].number();
    r.energy_categories = energy_categories(t);

    const sdk::value_view kernels = run["kernels"];
    r.kernels.reserve(kernels.size());
    for (size_t i = 0; i < kernels.size(); ++i) r.kernels.push_back(read_kernel(kernels.at(i), i));
    return r;
}

}  // namespace detail

/// Everything the page shows, from the document.
inline report_data read_report(const sdk::value_view& doc) {
    using namespace detail;
    report_data d;
    const sdk::value_view tool = doc["tool"];
    d.tool = tool["name"].text();
    if (d.tool.empty()) d.tool = "nnergy";
    const std::string version = tool["version"].text();
    if (!version.empty()) d.tool += " " + version;
    const sdk::value_view model = doc["model"];
    d.model_name = model["name"].text();
    d.model_path = model["path"].text();
    d.frontend = model["frontend"].text();
    d.pipeline = doc["pipeline"].text();
    d.dim_texts = dim_texts(model["dims"]);
    const sdk::value_view sweep = model["sweep"];
    for (size_t i = 0; i < sweep.size(); ++i) {
        std::string values;
        for (size_t v = 0; v < sweep.at(i).size(); ++v)
            values += (v ? ", " : "") + sweep.at(i).at(v).text();
        d.sweep_texts.push_back(std::string(sweep.key(i)) + " = " + values);
    }
    d.nodes = model["nodes"].number();
    d.tensors = model["tensors"].number();
    const sdk::value_view unknown = model["unknown_ops"];
    for (size_t i = 0; i < unknown.size(); ++i) {
        const sdk::value_view u = unknown.at(i);
        std::string item = u["node"].text() + " (" + u["op_type"].text();
        const std::string domain = u["domain"].text();
        if (!domain.empty()) item += ", domain " + domain;
        d.unknown_ops.push_back(item + ")");
    }
    const sdk::value_view partitioner = doc["partitioner"];
    d.partitioner = partitioner["plugin"].text();
    d.kernel_count = partitioner["kernels"].number();
    const sdk::value_view runs = doc["runs"];
    for (size_t i = 0; i < runs.size(); ++i)
        d.runs.push_back(read_run(runs.at(i), i + 1, model["dims"]));
    return d;
}

}  // namespace nnergy::html
