// SPDX-License-Identifier: Apache-2.0
/// \file roofline_estimator.hpp
/// \brief nnergy.estimator.roofline: per-kernel roofline latency; kernels run one after another,
/// or as the pipeline's execution runtime issues them (runtime_model.hpp).
#pragma once

#include <initializer_list>
#include <memory>
#include <nnergy/modeling/op_class.hpp>
#include <nnergy/modeling/recent_values.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roofline_model.hpp"
#include "runtime_model.hpp"

namespace nnergy::roofline {

class roofline_estimator : public sdk::estimator {
public:
    explicit roofline_estimator(const sdk::context& ctx)
        : sdk::estimator(ctx), runtime_(runtime_profile::from_config(ctx.runtime())) {
        if (const nnergy_named_value* r = ctx.config().find("runtime"))
            throw sdk::error(sdk::config_view::where(*r) +
                                 ": the runtime is chosen by the pipeline's [runtime] table "
                                 "(profile = \"pytorch-eager\", ...), not by the estimator",
                             NNERGY_CODE_INVALID_ARGUMENT);
        ctx.config().expect_only({}, "nnergy.estimator.roofline");
    }

    void estimate(const sdk::estimate_input& input, sdk::results_writer& out) const override {
        const sdk::partition_view partition = input.partition();
        const bool per_kernel = !input.totals_only();
        double latency = 0, compute = 0, memory = 0, overhead = 0;
        size_t uncounted = 0;
        // Reused from kernel to kernel, so their strings keep their buffers.
        kernel_input in;
        kernel_estimate e;
        std::string key;
        std::vector<double> kernel_latency(input.kernel_count(), 0.0);
        for (uint32_t k = 0; k < input.kernel_count(); ++k) {
            const nnergy_kernel_stats stats = partition.stats(k);
            const sdk::mapping_view mapping = input.mapping(k);
            in.name = partition.name(k);
            in.index = k;
            in.flops = stats.flops;
            in.effective_flops_per_s = mapping.number(sdk::keys::effective_flops_per_s);
            in.launch_overhead_s = mapping.number_or(sdk::keys::launch_overhead_s, 0.0);
            // Read into the reused levels: no allocation per kernel.
            in.levels.resize(mapping.level_count());
            for (size_t i = 0; i < in.levels.size(); ++i) {
                level_traffic& l = in.levels[i];
                mapping.level_at(i, l.level, l.bytes, l.bandwidth_bytes_per_s);
            }

            estimate_kernel(in, e);
            // Later estimators read latency_s (and start_s below); a caller keeping the totals
            // only needs nothing else per kernel.
            out.kernel(k, "latency_s", e.latency_s);
            if (per_kernel) {
                out.kernel(k, "compute_time_s", e.compute_time_s);
                out.kernel(k, "memory_time_s", e.memory_time_s);
                for (const auto& [level, t] : e.level_times_s) {
                    key.assign("memory_time_");
                    key += level;
                    key += "_s";
                    out.kernel(k, key, t);
                }
                out.kernel(k, "overhead_s", e.overhead_s);
                out.kernel_text(k, "bottleneck", e.bottleneck());
            }
            if (!stats.all_counted) {
                if (per_kernel) out.kernel_text(k, "note", "contains uncounted ops");
                ++uncounted;
            }
            latency += e.latency_s;
            kernel_latency[k] = e.latency_s;
            compute += e.compute_time_s;
            memory += e.memory_time_s;
            overhead += e.overhead_s;
        }
        if (runtime_.mode != runtime_mode::none) {
            // The runtime decides how kernel latencies add up: host dispatch, gaps, one launch.
            const sdk::graph_view graph = input.graph();
            std::vector<issued_kernel> issued(input.kernel_count());
            const bool host_issues =
                runtime_.mode == runtime_mode::eager || runtime_.mode == runtime_mode::inline_host;
            const std::shared_ptr<const runtime_profile> machine_held = on_machine_for(input);
            const runtime_profile& on_machine = *machine_held;
            for (uint32_t k = 0; k < input.kernel_count(); ++k) {
                issued[k].device_s = kernel_latency[k];
                if (!host_issues) continue;
                for (uint32_t n : partition.nodes(k))
                    if (is_view(graph.op_type(n))) issued[k].views += 1;
                // Host dispatch per op class (and the run's precision), where the profile or the
                // machine gives it.
                if (!on_machine.has_class_dispatch) continue;
                if (const std::optional<std::string_view> name =
                        input.mapping(k).text(sdk::keys::op_class))
                    if (const std::optional<modeling::op_class> c = modeling::class_of_name(*name))
                        issued[k].dispatch_s = on_machine.dispatch_for(*c, input.precision());
            }
            const runtime_timeline t = run_timeline(on_machine, issued);
            for (uint32_t k = 0; k < input.kernel_count(); ++k) {
                out.kernel(k, "start_s", t.kernels[k].start_s);
                if (host_issues && per_kernel)
                    out.kernel(k, "host_dispatch_s", t.kernels[k].host_dispatch_s);
            }
            out.total("kernel_sum_s", latency);
            out.total("host_time_s", t.host_s);
            out.total("device_busy_s", t.device_busy_s);
            out.total("device_idle_s", t.device_idle_s);
            out.total_text("runtime", runtime_.name);
            out.total_text("runtime_bound", t.host_s >= t.device_busy_s ? "host" : "device");
            latency = t.latency_s;
        }
        out.total("latency_s", latency);
        out.total("compute_time_s", compute);
        out.total("memory_time_s", memory);
        out.total("overhead_s", overhead);
        if (uncounted)
            ctx().warn(std::to_string(uncounted) +
                       " kernel(s) contain ops the counter does not know; their latency "
                       "covers only the counted work");
    }

private:
    /// Ops an eager framework runs as views: host dispatch, no kernel.
    static bool is_view(std::string_view op) noexcept {
        return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
               op == "Transpose" || op == "Identity" || op == "Slice" || op == "Split";
    }

    /// The runtime's costs on the hardware's machine, read once per hardware description (a
    /// calibration estimates thousands of one-op graphs on each candidate, and the reading
    /// scans the whole entry); kept under its identity (ABI 1.9), read afresh without one.
    std::shared_ptr<const runtime_profile> on_machine_for(const sdk::estimate_input& input) const {
        const uint64_t id = input.hardware_identity();
        return on_machine_.get(id, id != 0, [&] {
            return std::make_shared<const runtime_profile>(runtime_.on_machine(input.hardware()));
        });
    }

    runtime_profile runtime_;
    mutable modeling::recent_values<uint64_t, std::shared_ptr<const runtime_profile>> on_machine_{
        256};
};

}  // namespace nnergy::roofline
