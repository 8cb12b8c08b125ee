// SPDX-License-Identifier: Apache-2.0
/// \file energy_estimator.hpp
/// \brief nnergy.estimator.energy: energy per kernel and per inference, its breakdown as a tree
/// (model -> kernel -> category -> event), power, throttling and energy-delay product. Reads the
/// events each architecture counted (energy_model.hpp) and the latency an earlier estimator of
/// the pipeline wrote (nnergy.estimator.roofline).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <nnergy/modeling/recent_values.hpp>
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
        const std::shared_ptr<table_state> state_held = table_for(input);
        table_state& state = *state_held;
        const energy_table& table = state.table;
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
        // Advice takes a summary of every kernel and text: none for a caller that reads none.
        const bool advice_wanted = input.advice_wanted();

        // Totals keep the order in which their keys first appear, so the report reads as the
        // kernels do: compute, memory, control, vendor categories, static.
        const lines_lease lease(state);
        breakdown_lines& lines = *lease.lines;
        auto add_total = [&](std::string_view key, double j) {
            size_t index = breakdown_lines::none;
            lines.add(index, key, j);
        };

        // The run's buffers come with its lines, so a sweep's runs allocate nothing here.
        kernel_input& in = lines.buffers.in;
        kernel_energy& e = lines.buffers.e;
        std::vector<uint32_t>& kernel_categories = lines.buffers.kernel_categories;
        scratch& work = lines.buffers.work;
        std::vector<double>& edp = lines.buffers.edp;
        std::vector<kernel_summary>& summaries = lines.buffers.summaries;
        edp.assign(kernels, 0.0);
        summaries.assign(advice_wanted ? kernels : 0, kernel_summary{});
        const std::shared_ptr<const partition_facts> facts_held = facts_for(input);
        const partition_facts& facts = *facts_held;
        double energy = 0, dynamic = 0, static_j = 0, busy = 0, stretch = 0, peak_power = 0;
        double underutilized = 0, flops = 0, fusion_saving = 0;
        size_t throttled = 0;
        for (uint32_t k = 0; k < kernels; ++k) {
            const sdk::mapping_view mapping = input.mapping(k);
            flops += facts.flops[k];
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
            in.overhead_s = mapping.number_or(sdk::keys::launch_overhead_s, 0.0);
            in.units_allocated = mapping.number_or(sdk::keys::units_allocated, 0.0);
            in.units_available = mapping.number_or(sdk::keys::units_available, 0.0);
            in.ideal_time_s =
                ideal_time(mapping, facts.flops[k], work.dram_bytes, work.dram_bandwidth);
            in.events.resize(mapping.event_count());
            for (size_t i = 0; i < in.events.size(); ++i) {
                kernel_event& ev = in.events[i];
                // Looked up from the values read, not from `ev`: a 16-byte load of a view just
                // stored as two 8-byte halves would wait for them to reach the cache.
                std::string_view category, name;
                mapping.event_at(i, category, name, ev.count);
                ev.category = category;
                ev.event = name;
                ev.slot = lines.find(table, category, name);
                ev.price = lines.lines[ev.slot].price;
            }

            estimate_kernel(table, in, e);
            // Categories first, each summed over its events, then the events.
            kernel_categories.clear();
            for (size_t i = 0; i < e.entries.size(); ++i) {
                breakdown_entry& b = e.entries[i];
                if (b.slot == UINT32_MAX) b.slot = lines.find(table, b.category, b.event);
                const uint32_t c = lines.lines[b.slot].category;
                breakdown_lines::category& sum = lines.categories[c];
                if (!sum.in_kernel) {
                    sum.in_kernel = true;
                    sum.kernel_j = 0;
                    kernel_categories.push_back(c);
                }
                sum.kernel_j += b.joules;
            }
            kernel_parts parts;
            for (const uint32_t c : kernel_categories) {
                breakdown_lines::category& sum = lines.categories[c];
                sum.in_kernel = false;
                if (per_kernel) out.kernel(k, sum.key, sum.kernel_j);
                lines.add(sum.total, sum.key, sum.kernel_j);
                if (sum.kind == breakdown_lines::part::compute) parts.compute_j += sum.kernel_j;
                if (sum.kind == breakdown_lines::part::memory) parts.memory_j += sum.kernel_j;
                if (sum.kind == breakdown_lines::part::control) parts.control_j += sum.kernel_j;
            }
            double dram_j = 0;
            for (const breakdown_entry& b : e.entries) {
                breakdown_lines::line& line = lines.lines[b.slot];
                if (per_kernel) out.kernel(k, line.key, b.joules);
                lines.add(line.total, line.key, b.joules);
                if (line.dram) dram_j += b.joules;
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
            if (advice_wanted) {
                kernel_summary& summary = summaries[k];
                summarize(table, mapping, in, e, parts, lines, summary);
                if (summary.bottleneck.substr(0, 7) == "memory:") {
                    // The latency estimator's time: a throttled kernel's stretch is not memory's.
                    const double working = std::max(0.0, in.latency_s - in.overhead_s);
                    summary.memory_wait_j =
                        e.static_power_w * memory_wait_time(mapping, facts.flops[k],
                                                            summary.bottleneck.substr(7), working);
                    summary.dram_j = dram_j;
                }
                const uint32_t producer = facts.single_producer[k];
                summary.single_consumer_of_producer =
                    producer != NNERGY_NO_NODE && facts.consumers[producer] == 1;
            }
            fusion_saving +=
                split_fused(facts, k, table, mapping, in, e, parts, per_kernel, work, out);
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

        for (size_t i = 0; i < lines.totals_used; ++i)
            out.total(lines.totals[i].first, lines.totals[i].second);
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
        out.total("idle_power_w", table.idle_power_w);
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

        if (advice_wanted) {
            const std::vector<advice_item> advice =
                advise(summaries, energy, static_j, idle_j, underutilized);
            std::string advice_text;
            for (const advice_item& a : advice) {
                out.total(a.saving_key, a.saving_j);
                if (!advice_text.empty()) advice_text += '\n';
                advice_text += a.text;
            }
            if (!advice_text.empty()) out.total_text("advice", advice_text);
        }

        edp_ranking& ranking = lines.buffers.ranking;
        rank_by_edp(edp, ranking);
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
    struct table_state;
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
    /// the same values to every estimate of an architecture, and reading them is not free. Kept
    /// under the description's identity (ABI 1.9), which values written over an earlier
    /// description's (a calibration's next candidate) do not share; without one, read afresh.
    std::shared_ptr<table_state> table_for(const sdk::estimate_input& input) const {
        const sdk::config_view hw = input.hardware();
        const auto read = [&] {
            auto state = std::make_shared<table_state>();
            state->table = energy_table::from_config(hw, hardware_context(hw));
            return state;
        };
        const uint64_t id = input.hardware_identity();
        return tables_.get(id, id != 0, read);
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

    /// The kernel's time at its unit's peak rate and at the bandwidth of its slowest level; also
    /// reports the DRAM level's bytes and bandwidth (0 without one).
    static double ideal_time(const sdk::mapping_view& m, double flops, double& dram_bytes,
                             double& dram_bandwidth) {
        double t = 0;
        const double peak = m.number_or(sdk::keys::peak_flops_per_s, 0.0);
        if (flops > 0 && peak > 0) t = flops / peak;
        dram_bytes = dram_bandwidth = 0;
        const size_t levels = m.level_count();
        for (size_t i = 0; i < levels; ++i) {
            std::string_view name;
            double bytes = 0, bandwidth = 0;
            m.level_at(i, name, bytes, bandwidth);
            if (bytes > 0 && bandwidth > 0) t = std::max(t, bytes / bandwidth);
            if (name == "dram") {
                dram_bytes = bytes;
                dram_bandwidth = bandwidth;
            }
        }
        return t;
    }

    /// The part of a kernel's working time that its bottleneck memory level (`level`; empty:
    /// unnamed) adds beyond its compute, at the unit's effective rate, and its other levels'
    /// traffic: the most that more bandwidth there, or its tensors kept closer, would save.
    static double memory_wait_time(const sdk::mapping_view& m, double flops, std::string_view level,
                                   double working_s) {
        double rate = m.number_or(sdk::keys::effective_flops_per_s, 0.0);
        if (!(rate > 0)) rate = m.number_or(sdk::keys::peak_flops_per_s, 0.0);
        double needed = flops > 0 && rate > 0 ? flops / rate : 0.0;
        const size_t levels = level.empty() ? 0 : m.level_count();
        for (size_t i = 0; i < levels; ++i) {
            std::string_view name;
            double bytes = 0, bandwidth = 0;
            m.level_at(i, name, bytes, bandwidth);
            if (name != level && bytes > 0 && bandwidth > 0)
                needed = std::max(needed, bytes / bandwidth);
        }
        return std::max(0.0, working_s - needed);
    }

    /// What an estimate needs of the partition's structure, which a sweep evaluates on many
    /// devices and precisions: each kernel's FLOPs, who reads its output, and its fused ops.
    struct partition_facts {
        struct op {
            double flops = 0;
            double bytes = 0;  ///< inputs, outputs and weights at the model's own precision
            bool anchor = false;
            std::string_view kind;  ///< fused_kind() of a non-anchor op (a static string)
        };
        std::vector<double> flops;
        std::vector<uint32_t> consumers;        ///< kernels that read the kernel's output
        std::vector<uint32_t> single_producer;  ///< its one producer; NNERGY_NO_NODE otherwise
        std::vector<uint32_t> first_op;  ///< the kernel's ops are ops[first_op[k], first_op[k+1])
        std::vector<op> ops;             ///< only those of kernels of two or more ops
    };

    static std::shared_ptr<const partition_facts> read_facts(const sdk::estimate_input& input) {
        const sdk::graph_view graph = input.graph();
        const sdk::partition_view partition = input.partition();
        const uint32_t kernels = static_cast<uint32_t>(input.kernel_count());
        auto f = std::make_shared<partition_facts>();
        f->flops.resize(kernels);
        f->consumers.assign(kernels, 0);
        f->single_producer.assign(kernels, NNERGY_NO_NODE);
        f->first_op.assign(kernels + 1, 0);
        for (uint32_t k = 0; k < kernels; ++k) {
            const size_t n = sdk::host().kernel_dependency_count(partition.handle(), k);
            for (size_t i = 0; i < n; ++i) {
                const uint32_t p = sdk::host().kernel_dependency(partition.handle(), k, i);
                if (p >= kernels) continue;
                ++f->consumers[p];
                if (n == 1) f->single_producer[k] = p;
            }
            const nnergy_kernel_stats stats = partition.stats(k);
            f->flops[k] = stats.flops;
            f->first_op[k] = static_cast<uint32_t>(f->ops.size());
            const size_t count = sdk::host().kernel_node_count(partition.handle(), k);
            for (size_t i = 0; count >= 2 && i < count; ++i) {
                const uint32_t node = sdk::host().kernel_node(partition.handle(), k, i);
                const nnergy_op_counts c = graph.counts(node);
                partition_facts::op& o = f->ops.emplace_back();
                o.flops = c.flops;
                o.bytes = c.input_bytes + c.output_bytes + c.weight_bytes;
                o.anchor = node == stats.anchor_node;
                if (!o.anchor) o.kind = fused_kind(graph.op_type(node));
            }
        }
        f->first_op[kernels] = static_cast<uint32_t>(f->ops.size());
        return f;
    }

    /// The partition's facts, read once per graph and partition the host names.
    std::shared_ptr<const partition_facts> facts_for(const sdk::estimate_input& input) const {
        const uint64_t graph = input.graph().identity(), partition = input.partition().identity();
        return facts_.get({graph, partition}, graph != 0 && partition != 0,
                          [&] { return read_facts(input); });
    }

    /// A kernel's energy by part of the chip, summed over its categories.
    struct kernel_parts {
        double compute_j = 0, memory_j = 0, control_j = 0;
    };

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
        const coefficient* launch = nullptr;  ///< energy.control.launch, looked up once
        bool launch_looked_up = false;
    };

    /// Energy, delay and EDP of each op of a fused kernel (op.<i>.energy_j, .latency_s, .edp_j_s
    /// for the kernel's i-th node, in the order of the report's `nodes`) and what fusing them
    /// saved (fusion_saving_j); returns that saving. Keys by position, not by node name, so that
    /// every kernel writes the same few keys; none without `per_kernel`.
    static double split_fused(const partition_facts& facts, uint32_t k, const energy_table& table,
                              const sdk::mapping_view& mapping, const kernel_input& in,
                              const kernel_energy& e, const kernel_parts& parts, bool per_kernel,
                              scratch& work, sdk::results_writer& out) {
        const uint32_t first = facts.first_op[k], count = facts.first_op[k + 1] - first;
        if (count < 2 || e.energy_j <= 0) return 0;
        const double scale = mapping.number_or(sdk::keys::bytes_scale, 1.0);
        std::vector<fused_op>& ops = work.ops;
        ops.resize(count);
        for (uint32_t i = 0; i < count; ++i) {
            const partition_facts::op& f = facts.ops[first + i];
            fused_op& o = ops[i];
            o.flops = f.flops;
            o.bytes = f.bytes * scale;
            o.anchor = f.anchor;
            o.weight = f.kind.empty() ? 1.0 : table.fused_modifier(f.kind);
        }
        standalone_costs c;
        c.bytes_per_s = work.dram_bandwidth;
        c.joules_per_byte = work.dram_bytes > 0 ? parts.memory_j / work.dram_bytes : 0.0;
        if (!work.launch_looked_up) {
            work.launch = table.find("control", "launch");
            work.launch_looked_up = true;
        }
        if (work.launch != nullptr) c.launch_j = work.launch->joules;
        c.launch_s = in.overhead_s;
        c.static_power_w = e.static_power_w;
        const double compute = parts.compute_j;
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

    /// The breakdown lines of a hardware table (energy.<category>.<event>), each resolved once:
    /// its price, its result keys, its category and, for the run that holds them, its place
    /// among the totals. An event is looked for by the address of its names first (find()).
    struct breakdown_lines {
        static constexpr size_t none = SIZE_MAX;
        enum class part { compute, memory, control, other };
        struct category {
            part kind = part::other;
            std::string key;      ///< energy.<category>_j
            size_t total = none;  ///< its place in `totals`, once added
            double kernel_j = 0;  ///< the current kernel's sum
            bool in_kernel = false;
        };
        struct line {
            std::string category_name, event;
            const coefficient* price = nullptr;  ///< nullptr: the file prices none
            uint32_t category = 0;               ///< its place in `categories`
            std::string key;                     ///< energy.<category>.<event>_j
            size_t total = none;
            double lower_precision_j = -1;  ///< the price at a narrower precision; < 0: not yet
            bool dram = false;              ///< energy.memory.dram: traffic to and from DRAM
        };
        std::vector<category> categories;
        std::vector<line> lines;
        /// The per-kernel buffers of a run, kept with the lines for the next run.
        struct run_buffers {
            kernel_input in;
            kernel_energy e;
            std::vector<uint32_t> kernel_categories;
            scratch work;
            std::vector<double> edp;
            std::vector<kernel_summary> summaries;
            edp_ranking ranking;
        } buffers;
        /// The run's totals, in the order first added: the first `totals_used`. Those after
        /// them are earlier runs' entries, kept so that a sweep copies its keys into strings
        /// that already have room for them instead of allocating some for every evaluation.
        std::vector<std::pair<std::string, double>> totals;
        size_t totals_used = 0;

        uint32_t add_line(const energy_table& t, std::string_view category_name,
                          std::string_view event) {
            line l;
            l.category_name.assign(category_name);
            l.event.assign(event);
            // Static lines are computed, not priced.
            l.price = category_name == "static" ? nullptr : t.find(category_name, event);
            l.key = "energy." + l.category_name + "." + l.event + "_j";
            l.dram = category_name == "memory" && event == "dram";
            const std::string category_key = "energy." + l.category_name + "_j";
            while (l.category < categories.size() && categories[l.category].key != category_key)
                ++l.category;
            if (l.category == categories.size()) {
                category c;
                c.key = category_key;
                c.kind = category_name == "compute"   ? part::compute
                         : category_name == "memory"  ? part::memory
                         : category_name == "control" ? part::control
                                                      : part::other;
                categories.push_back(std::move(c));
            }
            lines.push_back(std::move(l));
            return static_cast<uint32_t>(lines.size() - 1);
        }

        /// Forgets the last run's totals and the names it saw, keeping every resolved line.
        void start_run() {
            if (++run == 0) {  // what earlier runs saw no longer counts
                for (seen_name& n : seen) n = seen_name{};
                run = 1;
            }
            totals_used = 0;
            for (category& c : categories) {
                c.total = none;
                c.in_kernel = false;
            }
            for (line& l : lines) l.total = none;
        }

        /// A name pair by the address of its text, as met during one run: the estimator's own
        /// string literals, and the mappings' event names, which the ABI keeps alive as long as
        /// their mapping (mapping_event), and every mapping outlives the run. Strings alive at
        /// once at the same address and of the same size are the same text. (The host pools
        /// names, so the same event of every kernel usually has one address.)
        struct seen_name {
            const char* category = nullptr;
            const char* event = nullptr;
            uint32_t category_size = 0, event_size = 0;
            uint32_t slot = 0;
            uint32_t run = 0;  ///< the run that saw it
        };
        static constexpr unsigned seen_bits = 8;
        seen_name seen[size_t{1} << seen_bits];
        uint32_t run = 0;

        /// The breakdown line of an event, first by the names' addresses among those this run
        /// has met.
        uint32_t find(const energy_table& t, std::string_view category, std::string_view event) {
            const auto address = [](std::string_view v) {
                return static_cast<size_t>(reinterpret_cast<uintptr_t>(v.data()));
            };
            // Fibonacci hashing: the addresses' high bits after a multiply spread them evenly.
            const uint64_t mixed = (static_cast<uint64_t>(address(event)) * 0x9E3779B97F4A7C15ull) ^
                                   static_cast<uint64_t>(address(category));
            seen_name& n = seen[(mixed * 0x9E3779B97F4A7C15ull) >> (64 - seen_bits)];
            if (n.run == run && n.event == event.data() && n.category == category.data() &&
                n.event_size == event.size() && n.category_size == category.size())
                return n.slot;
            return remember(n, t, category, event);
        }

        /// The line by its names (a search: once per name and run), added if new; kept apart
        /// so that the common case above stays a few instructions.
        [[gnu::noinline]] uint32_t remember(seen_name& n, const energy_table& t,
                                            std::string_view category, std::string_view event) {
            uint32_t slot = 0;
            while (slot < lines.size() &&
                   !(modeling::same_text(lines[slot].event, event) &&
                     modeling::same_text(lines[slot].category_name, category)))
                ++slot;
            if (slot == lines.size()) slot = add_line(t, category, event);
            n = {category.data(),
                 event.data(),
                 static_cast<uint32_t>(category.size()),
                 static_cast<uint32_t>(event.size()),
                 slot,
                 run};
            return slot;
        }

        /// Adds `j` to the total `key`, whose place `index` is found on first use.
        void add(size_t& index, std::string_view key, double j) {
            if (index == none) {
                index = 0;
                while (index < totals_used && totals[index].first != key) ++index;
                if (index == totals_used) {
                    if (totals_used == totals.size()) totals.emplace_back();
                    totals[index].first.assign(key);
                    totals[index].second = j;
                    ++totals_used;
                    return;
                }
            }
            totals[index].second += j;
        }
    };

    /// A hardware description's energy table, and the breakdown lines resolved against it,
    /// kept between runs: each concurrent run takes a set of its own.
    struct table_state {
        energy_table table;
        std::mutex lines_mutex;
        std::vector<std::unique_ptr<breakdown_lines>> idle_lines;
    };

    /// A run's breakdown lines, taken from its table's idle ones and given back at the end.
    struct lines_lease {
        table_state& state;
        std::unique_ptr<breakdown_lines> lines;
        explicit lines_lease(table_state& s) : state(s) {
            {
                std::lock_guard<std::mutex> lock(state.lines_mutex);
                if (!state.idle_lines.empty()) {
                    lines = std::move(state.idle_lines.back());
                    state.idle_lines.pop_back();
                }
            }
            if (!lines) lines = std::make_unique<breakdown_lines>();
            lines->start_run();
        }
        ~lines_lease() {
            try {
                std::lock_guard<std::mutex> lock(state.lines_mutex);
                state.idle_lines.push_back(std::move(lines));
            } catch (...) {
                // Without room to keep them, the next run resolves its lines anew.
            }
        }
        lines_lease(const lines_lease&) = delete;
        lines_lease& operator=(const lines_lease&) = delete;
    };

    /// What the advisor needs of a kernel: its mapping's class, bottleneck and utilization, its
    /// energy by part, and its compute energy at the cheapest narrower precision.
    static void summarize(const energy_table& table, const sdk::mapping_view& mapping,
                          const kernel_input& in, const kernel_energy& e, const kernel_parts& parts,
                          breakdown_lines& lines, kernel_summary& s) {
        s.name = in.name;
        s.op_class = mapping.text(sdk::keys::op_class).value_or("");
        s.bottleneck = mapping.text(sdk::keys::bottleneck).value_or("");
        s.utilization = mapping.number_or(sdk::keys::utilization, 0.0);
        s.energy_j = e.energy_j;
        s.static_j = e.static_j;
        s.underutilization_j = e.underutilization_j;
        if (s.bottleneck == "compute" && s.utilization > 0 && s.utilization < 1) {
            // Its work spread over every slot would take `utilization` of its working time
            // (more slots do not shorten a kernel bound by memory or fixed time).
            const double working = std::max(0.0, e.latency_s - std::max(0.0, in.overhead_s));
            s.idle_slots_j =
                std::min(e.underutilization_j, e.static_power_w * working * (1 - s.utilization));
        }
        s.memory_j = parts.memory_j;
        s.control_j = parts.control_j;
        s.compute_j = parts.compute_j;
        for (const kernel_event& ev : in.events) {
            breakdown_lines::line& line = lines.lines[ev.slot];
            if (lines.categories[line.category].kind != breakdown_lines::part::compute) continue;
            if (s.compute_lower_precision_j < 0) s.compute_lower_precision_j = 0;
            if (line.lower_precision_j < 0) {
                const coefficient* cheaper = cheaper_precision(table, ev.event);
                line.lower_precision_j = (cheaper ? cheaper : line.price)->joules;
            }
            s.compute_lower_precision_j += ev.count * line.lower_precision_j;
        }
    }

    mutable std::atomic<bool> warned_{false};
    /// By hardware identity; room for every device of a large sweep, whose evaluations take the
    /// devices in turn.
    mutable modeling::recent_values<uint64_t, std::shared_ptr<table_state>> tables_{256};
    mutable modeling::recent_values<std::pair<uint64_t, uint64_t>,
                                    std::shared_ptr<const partition_facts>>
        facts_;
};

}  // namespace nnergy::energy
