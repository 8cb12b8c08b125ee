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

inline opt number(const sdk::value_view& v) {
    if (!v.is_number()) return std::nullopt;
    const double x = v.as_number();
    if (!std::isfinite(x)) return std::nullopt;
    return x;
}

inline std::string text(const sdk::value_view& v) {
    switch (v.kind()) {
        case NNERGY_VALUE_STRING:
            return std::string(v.as_string());
        case NNERGY_VALUE_INT:
            return std::to_string(v.as_int());
        case NNERGY_VALUE_FLOAT:
            return std::isfinite(v.as_number()) ? format("%g", v.as_number()) : std::string();
        case NNERGY_VALUE_BOOL:
            return v.as_bool() ? "true" : "false";
        default:
            return {};
    }
}

/// "energy.<category>_j" keys with a category free of dots: the per-category sums.
inline named_values energy_categories(const sdk::value_view& object) {
    named_values out;
    for (size_t i = 0; i < object.size(); ++i) {
        const std::string_view key = object.key(i);
        if (key.size() < 10 || key.substr(0, 7) != "energy." || key.substr(key.size() - 2) != "_j")
            continue;
        const std::string_view name = key.substr(7, key.size() - 9);
        if (name.find('.') != std::string_view::npos) continue;
        if (opt j = number(object.at(i))) out.emplace_back(std::string(name), *j);
    }
    return out;
}

inline std::vector<std::string> dim_texts(const sdk::value_view& dims) {
    std::vector<std::string> out;
    for (size_t i = 0; i < dims.size(); ++i)
        out.push_back(std::string(dims.key(i)) + "=" + text(dims.at(i)));
    return out;
}

inline kernel_data read_kernel(const sdk::value_view& k, size_t position) {
    kernel_data d;
    const opt index = number(k["index"]);
    d.index = index && *index >= 0 ? static_cast<size_t>(*index) : position;
    d.name = text(k["name"]);
    d.pattern = text(k["pattern"]);
    const sdk::value_view ops = k["ops"];
    for (size_t i = 0; i < ops.size(); ++i) d.ops += (i ? "+" : "") + text(ops.at(i));
    if (k["all_counted"].kind() == NNERGY_VALUE_BOOL) d.all_counted = k["all_counted"].as_bool();
    d.flops = number(k["flops"]);
    d.macs = number(k["macs"]);
    const opt in = number(k["input_bytes"]), out = number(k["output_bytes"]),
              w = number(k["weight_bytes"]);
    if (in || out || w) d.bytes = in.value_or(0) + out.value_or(0) + w.value_or(0);
    d.ai = number(k["arithmetic_intensity"]);
    if (!d.ai && d.flops && d.bytes && *d.bytes > 0) d.ai = *d.flops / *d.bytes;

    const sdk::value_view mapping = k["mapping"];
    d.unit = text(mapping["unit"]);
    d.explanation = text(mapping["explanation"]);
    d.peak_flops = number(mapping["peak_flops_per_s"]);
    d.utilization = number(mapping["utilization"]);
    const sdk::value_view levels = mapping["levels"];
    for (size_t i = 0; i < levels.size(); ++i) {
        const sdk::value_view level = levels.at(i);
        if (text(level["level"]) != "dram") continue;
        d.dram_bytes = number(level["bytes"]);
        d.dram_bandwidth = number(level["bandwidth_bytes_per_s"]);
    }

    const sdk::value_view metrics = k["metrics"];
    d.bottleneck = text(metrics["bottleneck"]);
    if (d.bottleneck.empty()) d.bottleneck = text(mapping["bottleneck"]);
    if (metrics["note"]) d.all_counted = false;
    d.latency = number(metrics["latency_s"]);
    d.energy = number(metrics["energy_j"]);
    d.power = number(metrics["power_w"]);
    d.edp = number(metrics["edp_j_s"]);
    d.memory_in_use = number(metrics["memory_in_use_bytes"]);
    d.activation_bytes = number(metrics["live_activation_bytes"]);
    d.workspace_bytes = number(metrics["workspace_bytes"]);
    d.energy_categories = energy_categories(metrics);
    return d;
}

inline run_data read_run(const sdk::value_view& run, size_t number_1based,
                         const sdk::value_view& model_dims) {
    run_data r;
    r.number = number_1based;
    const sdk::value_view arch = run["architecture"];
    r.hardware = text(arch["hardware"]);
    r.hardware_class = text(arch["class"]);
    r.precision = text(arch["precision"]);
    r.architecture = text(arch["plugin"]);
    r.dim_texts = dim_texts(run["dims"] ? run["dims"] : model_dims);
    const sdk::value_view estimators = run["estimators"];
    for (size_t i = 0; i < estimators.size(); ++i) r.estimators.push_back(text(estimators.at(i)));

    const sdk::value_view t = run["totals"];
    r.params = number(t["params"]);
    r.macs = number(t["macs"]);
    r.flops = number(t["flops"]);
    r.latency = number(t["latency_s"]);
    r.energy = number(t["energy_j"]);
    r.average_power = number(t["average_power_w"]);
    r.edp = number(t["edp_j_s"]);
    if (!r.edp && r.energy && r.latency) r.edp = *r.energy * *r.latency;
    if (!r.average_power && r.energy && r.latency && *r.latency > 0)
        r.average_power = *r.energy / *r.latency;
    r.peak_memory = number(t["peak_memory_bytes"]);
    r.inferences_per_j = number(t["inferences_per_j"]);
    r.tokens_per_j = number(t["tokens_per_j"]);
    r.weight_bytes = number(t["weight_bytes"]);
    r.peak_kernel = number(t["peak_kernel"]);
    r.peak_kernel_name = text(t["peak_kernel_name"]);
    r.fits = text(t["fits"]);
    r.compute_time = number(t["compute_time_s"]);
    r.memory_time = number(t["memory_time_s"]);
    r.overhead = number(t["overhead_s"]);
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
    d.tool = text(tool["name"]);
    if (d.tool.empty()) d.tool = "nnergy";
    const std::string version = text(tool["version"]);
    if (!version.empty()) d.tool += " " + version;
    const sdk::value_view model = doc["model"];
    d.model_name = text(model["name"]);
    d.model_path = text(model["path"]);
    d.frontend = text(model["frontend"]);
    d.pipeline = text(doc["pipeline"]);
    d.dim_texts = dim_texts(model["dims"]);
    const sdk::value_view sweep = model["sweep"];
    for (size_t i = 0; i < sweep.size(); ++i) {
        std::string values;
        for (size_t v = 0; v < sweep.at(i).size(); ++v)
            values += (v ? ", " : "") + text(sweep.at(i).at(v));
        d.sweep_texts.push_back(std::string(sweep.key(i)) + " = " + values);
    }
    d.nodes = number(model["nodes"]);
    d.tensors = number(model["tensors"]);
    const sdk::value_view unknown = model["unknown_ops"];
    for (size_t i = 0; i < unknown.size(); ++i) {
        const sdk::value_view u = unknown.at(i);
        std::string item = text(u["node"]) + " (" + text(u["op_type"]);
        const std::string domain = text(u["domain"]);
        if (!domain.empty()) item += ", domain " + domain;
        d.unknown_ops.push_back(item + ")");
    }
    const sdk::value_view partitioner = doc["partitioner"];
    d.partitioner = text(partitioner["plugin"]);
    d.kernel_count = number(partitioner["kernels"]);
    const sdk::value_view runs = doc["runs"];
    for (size_t i = 0; i < runs.size(); ++i)
        d.runs.push_back(read_run(runs.at(i), i + 1, model["dims"]));
    return d;
}

}  // namespace nnergy::html
