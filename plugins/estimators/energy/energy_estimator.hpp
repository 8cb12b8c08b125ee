// SPDX-License-Identifier: Apache-2.0
/// \file energy_estimator.hpp
/// \brief nnergy.estimator.energy: energy per kernel and per inference, its breakdown as a tree
/// (model -> kernel -> category -> event), power, throttling and energy-delay product. Reads the
/// events each architecture counted (energy_model.hpp) and the latency an earlier estimator of
/// the pipeline wrote (nnergy.estimator.roofline).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nnergy/sdk.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "advice.hpp"
#include "energy_model.hpp"
#include "fused_ops.hpp"

namespace nnergy::energy {

class energy_estimator : public sdk::estimator {
public:
    explicit energy_estimator(const sdk::context& ctx) : sdk::estimator(ctx) {
        ctx.config().expect_only({}, "nnergy.estimator.energy");
    }

    void estimate(const sdk::estimate_input& input, sdk::results_writer& out) const override {
        const sdk::config_view hw = input.hardware();
        const energy_table& table = table_for(hw);
        if (!table.present) {
            if (!warned_.exchange(true))
                ctx().warn(table.hardware +
                           " has no [energy] table: no energy estimate (docs/hardware.md, "
                           "\"Energy\")");
            return;
        }
        const sdk::partition_view partition = input.partition();
        const size_t kernels = input.kernel_count();
        // A caller that keeps the totals (a sweep) gets no per-kernel breakdown; every total is
        // computed the same way.
        const bool per_kernel = !input.totals_only();

        // Totals keep the order in which their keys first appear, so the report reads as the
        // kernels do: compute, memory, control, vendor categories, static.
        std::vector<std::pair<std::string, double>> totals;
        auto add_total = [&](const std::string& key, double j) {
            for (auto& [k, v] : totals)
                if (k == key) {
                    v += j;
                    return;
                }
            totals.emplace_back(key, j);
        };

        kernel_input in;
        kernel_energy e;
        std::string key;
        std::vector<std::pair<std::string_view, double>> categories;
        lower_precision_cache lower;
        scratch work;
        std::vector<double> edp(kernels, 0.0);
        std::vector<kernel_summary> summaries(kernels);
        // Kernels that read a given kernel's output, for the fusion advice.
        std::vector<uint32_t> consumers(kernels, 0);
        std::vector<uint32_t> single_producer(kernels, NNERGY_NO_NODE);  // when it has one
        for (uint32_t k = 0; k < kernels; ++k) {
            const size_t n = sdk::host().kernel_dependency_count(partition.handle(), k);
            for (size_t i = 0; i < n; ++i) {
                const uint32_t p = sdk::host().kernel_dependency(partition.handle(), k, i);
                if (p >= kernels) continue;
                ++consumers[p];
                if (n == 1) single_producer[k] = p;
            }
        }
        double energy = 0, dynamic = 0, static_j = 0, busy = 0, stretch = 0, peak_power = 0;
        double underutilized = 0, flops = 0, fusion_saving = 0;
        size_t throttled = 0;
        for (uint32_t k = 0; k < kernels; ++k) {
            const sdk::mapping_view mapping = input.mapping(k);
            const nnergy_kernel_stats stats = partition.stats(k);
            flops += stats.flops;
            const std::optional<double> latency = out.kernel_number(k, "latency_s");
            if (!latency)
                throw sdk::error(
                    "nnergy.estimator.energy needs each kernel's latency_s from a latency "
                    "estimator that runs before it: list nnergy.estimator.roofline before "
                    "nnergy.estimator.energy in the pipeline's [[estimator]] tables",
                    NNERGY_CODE_FAILED_PRECONDITION);
            in.name = partition.name(k);
            in.index = k;
            in.latency_s = *latency;
            in.overhead_s = mapping.number_or("launch_overhead_s", 0.0);
            in.units_allocated = mapping.number_or("units_allocated", 0.0);
            in.units_available = mapping.number_or("units_available", 0.0);
            in.ideal_time_s =
                ideal_time(mapping, stats.flops, work.dram_bytes, work.dram_bandwidth);
            in.events.resize(sdk::host().mapping_event_count(mapping.handle()));
            for (size_t i = 0; i < in.events.size(); ++i) {
                nnergy_string_view category{nullptr, 0}, name{nullptr, 0};
                sdk::host().mapping_event(mapping.handle(), i, &category, &name,
                                          &in.events[i].count);
                in.events[i].category = sdk::from_sv(category);
                in.events[i].event = sdk::from_sv(name);
            }

            estimate_kernel(table, in, e);
            // Categories first, each summed over its events, then the events.
            categories.clear();
            for (const breakdown_entry& b : e.entries) {
                auto c = std::find_if(categories.begin(), categories.end(),
                                      [&](const auto& x) { return x.first == b.category; });
                if (c == categories.end())
                    categories.emplace_back(b.category, b.joules);
                else
                    c->second += b.joules;
            }
            for (const auto& [category, joules] : categories) {
                key.assign("energy.");
                key += category;
                key += "_j";
                if (per_kernel) out.kernel(k, key, joules);
                add_total(key, joules);
            }
            for (const breakdown_entry& b : e.entries) {
                key.assign("energy.");
                key += b.category;
                key += '.';
                key += b.event;
                key += "_j";
                if (per_kernel) out.kernel(k, key, b.joules);
                add_total(key, b.joules);
            }
            if (per_kernel) {
                out.kernel(k, "energy_j", e.energy_j);
                out.kernel(k, "power_w", e.power_w);
                out.kernel(k, "underutilization_energy_j", e.underutilization_j);
            }
            if (e.throttled) {
                // The kernel's time is the throttled one; the latency estimator's stays beside.
                out.kernel(k, "latency_unthrottled_s", *latency);
                out.kernel(k, "latency_s", e.latency_s);
                out.kernel_text(k, "throttled", "power limit");
                ++throttled;
            }
            summarize(table, partition.name(k), mapping, in, e, lower, summaries[k]);
            summaries[k].single_consumer_of_producer =
                single_producer[k] != NNERGY_NO_NODE && consumers[single_producer[k]] == 1;
            fusion_saving +=
                split_fused(input.graph(), partition, k, table, mapping, e, per_kernel, work, out);
            edp[k] = e.energy_j * e.latency_s;
            if (per_kernel) out.kernel(k, "edp_j_s", edp[k]);
            energy += e.energy_j;
            dynamic += e.dynamic_j;
            static_j += e.static_j;
            busy += e.latency_s;
            stretch += e.latency_s - std::max(0.0, *latency);
            peak_power = std::max(peak_power, e.power_w);
            underutilized += e.underutilization_j;
        }

        // The device between kernels (launch gaps, waiting for the host) draws its idle power.
        const double latency = out.total_number("latency_s").value_or(busy - stretch);
        const bool host_bound = out.total_text_value("runtime_bound").value_or("") == "host";
        const double device_idle = out.total_number("device_idle_s").value_or(0.0);
        double total_latency = latency;
        if (throttled > 0) {
            // Kernels after a stretched one start later, as far as the stretch reaches them;
            // without a laid-out timeline (no runtime profile), the whole-pass approximation.
            const std::optional<double> relaid = relay_timeline(kernels, latency, host_bound, out);
            total_latency =
                relaid ? *relaid : throttled_latency(latency, stretch, host_bound, device_idle);
        }
        const double idle_time = std::max(0.0, total_latency - busy);
        const double idle_j = table.idle_power_w * idle_time;
        add_total("energy.static_j", idle_j);
        add_total("energy.static.device_idle_j", idle_j);
        energy += idle_j;
        static_j += idle_j;
        underutilized += idle_j;

        for (const auto& [k, v] : totals) out.total(k, v);
        out.total("energy_j", energy);
        out.total("dynamic_energy_j", dynamic);
        out.total("static_energy_j", static_j);
        out.total("device_idle_energy_j", idle_j);
        out.total("underutilization_energy_j", underutilized);
        out.total("average_power_w", total_latency > 0 ? energy / total_latency : 0.0);
        out.total("peak_power_w", peak_power);
        out.total("edp_j_s", energy * total_latency);
        if (energy > 0) out.total("tflops_per_w", flops / energy / 1e12);
        if (table.power_limit_w > 0) out.total("power_limit_w", table.power_limit_w);
        out.total("throttled_kernels", static_cast<double>(throttled));
        out.total("fusion_saving_j", fusion_saving);
        if (throttled > 0) {
            out.total("latency_unthrottled_s", latency);
            out.total("latency_s", total_latency);
            out.total_text("throttled", "yes");
            if (out.total_number("device_busy_s")) {
                out.total("kernel_sum_s", busy);
                out.total("device_busy_s", busy);
                out.total("device_idle_s", idle_time);
            }
        }

        const std::vector<advice_item> advice =
            advise(summaries, energy, static_j, idle_j, underutilized);
        std::string advice_text;
        for (const advice_item& a : advice) {
            out.total("advice." + a.kind + "_saving_j", a.saving_j);
            if (!advice_text.empty()) advice_text += '\n';
            advice_text += a.text;
        }
        if (!advice_text.empty()) out.total_text("advice", advice_text);

        const edp_ranking ranking = rank_by_edp(edp);
        for (size_t i = 0; per_kernel && i < ranking.order.size(); ++i) {
            out.kernel(ranking.order[i], "edp_rank", static_cast<double>(i + 1));
            out.kernel(ranking.order[i], "edp_cumulative_share", ranking.cumulative_share[i]);
        }
        for (const auto& [name, share] :
             {std::pair{"edp_kernels_50pct", 0.5}, std::pair{"edp_kernels_80pct", 0.8},
              std::pair{"edp_kernels_90pct", 0.9}, std::pair{"edp_kernels_99pct", 0.99}})
            out.total(name, static_cast<double>(ranking.kernels_for(share)));
    }

private:
    /// Moves the kernels after a throttled one on the latency estimator's timeline (their
    /// start_s) and returns the pass's stretched latency; nothing when a kernel has no start_s.
    /// Runs only for a throttled pass, so the common one reads no timeline.
    static std::optional<double> relay_timeline(uint32_t kernels, double latency, bool host_bound,
                                                sdk::results_writer& out) {
        std::vector<timed_kernel> timeline(kernels);
        for (uint32_t k = 0; k < kernels; ++k) {
            const std::optional<double> start = out.kernel_number(k, "start_s");
            const std::optional<double> now = out.kernel_number(k, "latency_s");
            if (!start || !now) return std::nullopt;
            timeline[k] = {*start, out.kernel_number(k, "latency_unthrottled_s").value_or(*now),
                           *now};
        }
        const double relaid = relay_throttled(timeline, latency, host_bound);
        for (uint32_t k = 0; k < kernels; ++k) out.kernel(k, "start_s", timeline[k].start_s);
        return relaid;
    }

    /// The hardware file's energy table, read once per hardware description: the host hands
    /// the same values to every estimate of an architecture, and reading them is not free.
    const energy_table& table_for(const sdk::config_view& hw) const {
        // The values' strings live in the host's copy of the file for the whole run: their
        // addresses identify the description.
        const nnergy_named_value* first = hw.size() ? &hw[0] : nullptr;
        const void* name = first ? static_cast<const void*>(first->name.data) : nullptr;
        const void* file = first ? static_cast<const void*>(first->file.data) : nullptr;
        std::lock_guard<std::mutex> lock(tables_mutex_);
        for (const cached_table& c : tables_)
            if (c.name == name && c.file == file && c.count == hw.size()) return *c.table;
        tables_.push_back(
            {name, file, hw.size(),
             std::make_unique<energy_table>(energy_table::from_config(hw, hardware_context(hw)))});
        return *tables_.back().table;
    }

    static std::string hardware_context(const sdk::config_view& hw) {
        std::string s = "hardware '" + hw.string("name").value_or("<unnamed>") + "'";
        for (const nnergy_named_value& v : hw)
            if (v.file.size) {
                s += " (";
                s += sdk::from_sv(v.file);
                s += ')';
                break;
            }
        return s;
    }

    /// The kernel's time at its unit's peak rate and at the bandwidth of its slowest level.
    /// The kernel's time at its unit's peak rate and at the bandwidth of its slowest level; also
    /// reports the DRAM level's bytes and bandwidth (0 without one).
    static double ideal_time(const sdk::mapping_view& m, double flops, double& dram_bytes,
                             double& dram_bandwidth) {
        double t = 0;
        const double peak = m.number_or("peak_flops_per_s", 0.0);
        if (flops > 0 && peak > 0) t = flops / peak;
        dram_bytes = dram_bandwidth = 0;
        const size_t levels = sdk::host().mapping_level_count(m.handle());
        for (size_t i = 0; i < levels; ++i) {
            nnergy_string_view name{nullptr, 0};
            double bytes = 0, bandwidth = 0;
            sdk::host().mapping_level(m.handle(), i, &name, &bytes, &bandwidth);
            if (bytes > 0 && bandwidth > 0) t = std::max(t, bytes / bandwidth);
            if (sdk::from_sv(name) == "dram") {
                dram_bytes = bytes;
                dram_bandwidth = bandwidth;
            }
        }
        return t;
    }

    /// The result keys of a fused kernel's i-th op.
    struct op_keys {
        std::string energy, latency, edp;
    };

    /// Buffers reused from kernel to kernel.
    struct scratch {
        std::vector<fused_op> ops;
        std::vector<fused_op_estimate> split;
        std::vector<op_keys> keys_of_op;
        double dram_bytes = 0, dram_bandwidth = 0;
    };

    /// Energy, delay and EDP of each op of a fused kernel (op.<i>.energy_j, .latency_s, .edp_j_s
    /// for the kernel's i-th node, in the order of the report's `nodes`) and what fusing them
    /// saved (fusion_saving_j); returns that saving. Keys by position, not by node name, so that
    /// every kernel writes the same few keys; none without `per_kernel`.
    static double split_fused(const sdk::graph_view& graph, const sdk::partition_view& partition,
                              uint32_t k, const energy_table& table,
                              const sdk::mapping_view& mapping, const kernel_energy& e,
                              bool per_kernel, scratch& work, sdk::results_writer& out) {
        const size_t count = sdk::host().kernel_node_count(partition.handle(), k);
        if (count < 2 || e.energy_j <= 0) return 0;
        const nnergy_kernel_stats stats = partition.stats(k);
        const double scale = mapping.number_or("bytes_scale", 1.0);
        std::vector<fused_op>& ops = work.ops;
        ops.resize(count);
        for (size_t i = 0; i < count; ++i) {
            const uint32_t node = sdk::host().kernel_node(partition.handle(), k, i);
            const nnergy_op_counts c = graph.counts(node);
            fused_op& o = ops[i];
            o.op_type = graph.op_type(node);
            o.flops = c.flops;
            o.bytes = (c.input_bytes + c.output_bytes + c.weight_bytes) * scale;
            o.anchor = node == stats.anchor_node;
            const std::string_view kind = o.anchor ? std::string_view{} : fused_kind(o.op_type);
            o.weight = kind.empty() ? 1.0 : table.fused_modifier(kind);
        }
        double compute = 0, memory = 0;
        for (const breakdown_entry& b : e.entries) {
            if (b.category == "compute") compute += b.joules;
            if (b.category == "memory") memory += b.joules;
        }
        standalone_costs c;
        c.bytes_per_s = work.dram_bandwidth;
        c.joules_per_byte = work.dram_bytes > 0 ? memory / work.dram_bytes : 0.0;
        if (const coefficient* launch = table.find("control", "launch"))
            c.launch_j = launch->joules;
        c.launch_s = mapping.number_or("launch_overhead_s", 0.0);
        c.static_power_w = e.static_power_w;
        split_kernel(ops, compute, e.energy_j - compute, e.latency_s, c, work.split);
        const std::vector<fused_op_estimate>& split = work.split;
        double saving = 0;
        // The keys of the i-th op, built once per run: every fused kernel writes them.
        while (work.keys_of_op.size() < ops.size()) {
            const std::string base = "op." + std::to_string(work.keys_of_op.size());
            work.keys_of_op.push_back({base + ".energy_j", base + ".latency_s", base + ".edp_j_s"});
        }
        for (size_t i = 0; i < ops.size(); ++i) {
            if (per_kernel) {
                const op_keys& keys = work.keys_of_op[i];
                out.kernel(k, keys.energy, split[i].energy_j);
                out.kernel(k, keys.latency, split[i].latency_s);
                out.kernel(k, keys.edp, split[i].edp_j_s);
            }
            if (!ops[i].anchor) saving += std::max(0.0, split[i].standalone_j - split[i].energy_j);
        }
        if (per_kernel) out.kernel(k, "fusion_saving_j", saving);
        return saving;
    }

    /// What the advisor needs of a kernel: its mapping's class, bottleneck and utilization, its
    /// energy by part, and its compute energy at the cheapest narrower precision.
    /// The price of each compute event at the cheapest narrower precision, looked up once per
    /// event name in a run.
    struct lower_precision_cache {
        std::vector<std::pair<std::string, double>> joules;
        double price(const energy_table& table, std::string_view event) {
            for (const auto& [name, j] : joules)
                if (name == event) return j;
            const coefficient* cheaper = cheaper_precision(table, event);
            const coefficient* own = table.find("compute", event);
            joules.emplace_back(std::string(event), (cheaper ? cheaper : own)->joules);
            return joules.back().second;
        }
    };

    static void summarize(const energy_table& table, std::string_view name,
                          const sdk::mapping_view& mapping, const kernel_input& in,
                          const kernel_energy& e, lower_precision_cache& lower, kernel_summary& s) {
        s.name = name;
        s.op_class = mapping.text("op_class").value_or("");
        s.bottleneck = mapping.text("bottleneck").value_or("");
        s.utilization = mapping.number_or("utilization", 0.0);
        s.energy_j = e.energy_j;
        s.static_j = e.static_j;
        s.underutilization_j = e.underutilization_j;
        for (const breakdown_entry& b : e.entries) {
            if (b.category == "memory") s.memory_j += b.joules;
            if (b.category == "control") s.control_j += b.joules;
            if (b.category == "compute") s.compute_j += b.joules;
        }
        for (const kernel_event& ev : in.events) {
            if (ev.category != "compute") continue;
            if (s.compute_lower_precision_j < 0) s.compute_lower_precision_j = 0;
            s.compute_lower_precision_j += ev.count * lower.price(table, ev.event);
        }
    }

    mutable std::atomic<bool> warned_{false};
    mutable std::mutex tables_mutex_;
    struct cached_table {
        const void* name;
        const void* file;
        size_t count;
        std::unique_ptr<energy_table> table;
    };
    mutable std::vector<cached_table> tables_;
};

}  // namespace nnergy::energy
