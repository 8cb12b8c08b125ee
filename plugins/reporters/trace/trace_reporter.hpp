// SPDX-License-Identifier: Apache-2.0
/// \file trace_reporter.hpp
/// \brief nnergy.reporter.trace: the estimated timeline of each run in the JSON trace event
/// format that Perfetto and chrome://tracing open: one process per run, a host dispatch and a
/// device kernel track, and memory and power counters.
#pragma once

#include <nlohmann/json.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "trace_timeline.hpp"

namespace nnergy::trace {

/// Thread ids of the tracks inside a run's process.
inline constexpr int host_tid = 1;
inline constexpr int device_tid = 2;

namespace detail {

using json = nlohmann::ordered_json;

/// "run 1: h100-sxm5 (gpu), float16, batch=1"
inline std::string process_name(const sdk::value_view& run, size_t index,
                                const sdk::value_view& model) {
    const sdk::value_view arch = run["architecture"];
    std::string s = "run " + std::to_string(index + 1) + ": " + arch["hardware"].text();
    if (const std::string c = arch["class"].text(); !c.empty()) s += " (" + c + ")";
    if (const std::string p = arch["precision"].text(); !p.empty()) s += ", " + p;
    const sdk::value_view dims = run["dims"] ? run["dims"] : model["dims"];
    for (size_t i = 0; i < dims.size(); ++i)
        s += ", " + std::string(dims.key(i)) + "=" + dims.at(i).text();
    return s;
}

inline run_input read_run(const sdk::value_view& run) {
    run_input in;
    const sdk::value_view kernels = run["kernels"];
    for (size_t i = 0; i < kernels.size(); ++i) {
        const sdk::value_view m = kernels.at(i)["metrics"];
        kernel_input k;
        k.latency_s = m["latency_s"].number().value_or(0);
        k.start_s = m["start_s"].number();
        k.host_dispatch_s = m["host_dispatch_s"].number();
        k.energy_j = m["energy_j"].number();
        k.power_w = m["power_w"].number();
        k.idle_power_j = m["energy.static.idle_power_j"].number();
        k.memory_in_use_bytes = m["memory_in_use_bytes"].number();
        in.kernels.push_back(k);
    }
    const sdk::value_view totals = run["totals"];
    in.host_time_s = totals["host_time_s"].number();
    in.weight_bytes = totals["weight_bytes"].number();
    return in;
}

inline json metadata(std::string_view name, int pid, int tid, json args) {
    return json{{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

inline json kernel_args(const sdk::value_view& k) {
    const sdk::value_view m = k["metrics"];
    json args = json::object();
    args["index"] = k["index"].is_number() ? json(k["index"].as_int()) : json();
    args["name"] = k["name"].text();
    args["pattern"] = k["pattern"].text();
    std::string ops;
    const sdk::value_view op_list = k["ops"];
    for (size_t j = 0; j < op_list.size(); ++j) ops += (j ? "+" : "") + op_list.at(j).text();
    args["ops"] = ops;
    args["flops"] = k["flops"].number() ? json(*k["flops"].number()) : json();
    const auto in = k["input_bytes"].number(), out = k["output_bytes"].number(),
               w = k["weight_bytes"].number();
    args["bytes"] =
        in || out || w ? json(in.value_or(0) + out.value_or(0) + w.value_or(0)) : json();
    std::string bottleneck = m["bottleneck"].text();
    if (bottleneck.empty()) bottleneck = k["mapping"]["bottleneck"].text();
    args["bottleneck"] = bottleneck;
    args["energy_j"] = m["energy_j"].number() ? json(*m["energy_j"].number()) : json();
    args["latency_s"] = m["latency_s"].number() ? json(*m["latency_s"].number()) : json();
    return args;
}

}  // namespace detail

/// The trace of every run as one JSON document, one event per line.
inline std::string render(const sdk::value_view& doc) {
    using namespace detail;
    std::vector<json> events;
    const sdk::value_view model = doc["model"];
    const sdk::value_view runs = doc["runs"];
    for (size_t r = 0; r < runs.size(); ++r) {
        const sdk::value_view run = runs.at(r);
        const sdk::value_view kernels = run["kernels"];
        const int pid = static_cast<int>(r + 1);
        const timeline t = lay_out(read_run(run));

        events.push_back(metadata("process_name", pid, 0, {{"name", process_name(run, r, model)}}));
        events.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", pid}}));
        if (!t.host.empty()) {
            events.push_back(
                metadata("thread_name", pid, host_tid,
                         {{"name", t.inline_host ? "host dispatch (inline)" : "host dispatch"}}));
            events.push_back(metadata("thread_sort_index", pid, host_tid, {{"sort_index", 0}}));
        }
        events.push_back(metadata("thread_name", pid, device_tid, {{"name", "device kernels"}}));
        events.push_back(metadata("thread_sort_index", pid, device_tid, {{"sort_index", 1}}));

        for (const interval& iv : t.host) {
            const sdk::value_view k = kernels.at(iv.kernel);
            json args = {{"kernel", k["name"].text()},
                         {"host_dispatch_s", *k["metrics"]["host_dispatch_s"].number()}};
            if (iv.shifted_us > 0) args["shifted_us"] = iv.shifted_us;
            events.push_back({{"name", k["name"].text()},
                              {"cat", "host"},
                              {"ph", "X"},
                              {"ts", iv.ts_us},
                              {"dur", iv.dur_us},
                              {"pid", pid},
                              {"tid", host_tid},
                              {"args", std::move(args)}});
        }
        for (const interval& iv : t.device) {
            const sdk::value_view k = kernels.at(iv.kernel);
            json args = kernel_args(k);
            if (iv.shifted_us > 0) args["shifted_us"] = iv.shifted_us;
            events.push_back({{"name", k["name"].text()},
                              {"cat", "kernel"},
                              {"ph", "X"},
                              {"ts", iv.ts_us},
                              {"dur", iv.dur_us},
                              {"pid", pid},
                              {"tid", device_tid},
                              {"args", std::move(args)}});
        }
        for (const sample& s : t.memory)
            events.push_back({{"name", "memory"},
                              {"ph", "C"},
                              {"ts", s.ts_us},
                              {"pid", pid},
                              {"tid", device_tid},
                              {"args", {{"in_use_bytes", s.value}}}});
        for (const sample& s : t.power)
            events.push_back({{"name", "power"},
                              {"ph", "C"},
                              {"ts", s.ts_us},
                              {"pid", pid},
                              {"tid", device_tid},
                              {"args", {{"W", s.value}}}});
    }

    std::string s = "{\"traceEvents\": [\n";
    for (size_t i = 0; i < events.size(); ++i)
        s += events[i].dump(-1, ' ', false, json::error_handler_t::replace) +
             (i + 1 < events.size() ? ",\n" : "\n");
    json other = json::object();
    other["model"] = model["name"].text();
    const sdk::value_view tool = doc["tool"];
    other["tool"] = tool["name"].text() + " " + tool["version"].text();
    other["schema"] = doc["schema"].text();
    s += "], \"displayTimeUnit\": \"ns\", \"otherData\": " +
         other.dump(-1, ' ', false, json::error_handler_t::replace) + "}\n";
    return s;
}

class trace_reporter : public sdk::reporter {
public:
    explicit trace_reporter(const sdk::context& ctx) : sdk::reporter(ctx) {
        ctx.config().expect_only({}, "nnergy.reporter.trace");
    }

    void report(const sdk::value_view& doc, sdk::output_writer& out) override {
        out.write(render(doc));
    }
};

}  // namespace nnergy::trace
