// SPDX-License-Identifier: Apache-2.0
/// \file cpu_architecture.hpp
/// \brief nnergy.architecture.cpu: maps kernels onto a CPU hardware file (cpu_model.hpp holds
/// the arithmetic; this class reads the graph and the runtime and writes mappings).
#pragma once

#include <initializer_list>
#include <nnergy/sdk.hpp>
#include <string>
#include <string_view>

#include "cpu_model.hpp"
#include "reference_architecture.hpp"

namespace nnergy::cpu {

/// [weights] prepack = "per_call" (eager frameworks) or "once" (the default).
inline cpu_runtime read_runtime(const sdk::config_view& runtime) {
    cpu_runtime r;
    const std::optional<std::string> v = runtime.string("weights.prepack");
    if (!v || *v == "once") return r;
    if (*v == "per_call") {
        r.repack_weights_per_call = true;
        return r;
    }
    throw sdk::error(sdk::config_view::where(*runtime.find("weights.prepack")) +
                         ": 'weights.prepack' must be \"per_call\" or \"once\", got \"" + *v + "\"",
                     NNERGY_CODE_INVALID_ARGUMENT);
}

class cpu_architecture : public sdk::architecture {
public:
    explicit cpu_architecture(const sdk::context& ctx)
        : sdk::architecture(ctx),
          hw_(cpu_hardware::from_config(ctx.hardware())),
          runtime_(read_runtime(ctx.runtime())) {
        ctx.config().expect_only({}, "nnergy.architecture.cpu");
    }

    const cpu_hardware& hardware() const noexcept { return hw_; }

    void map_kernel(const sdk::graph_view& graph, const sdk::partition_view& partition,
                    uint32_t kernel, const nnergy_map_options& options,
                    sdk::mapping_writer& out) const override {
        const precision_units& units = hw_.base.require(options.precision);
        const nnergy_kernel_stats stats = partition.stats(kernel);
        const bool has_anchor =
            stats.anchor_node != NNERGY_NO_NODE && stats.anchor_node < graph.node_count();
        const std::string_view anchor_op =
            has_anchor ? graph.op_type(stats.anchor_node) : std::string_view();

        cpu_kernel k;
        k.cls = classify(anchor_op, partition.pattern(kernel), stats.macs, stats.is_depthwise,
                         stats.groups);
        k.what = reference::describe(graph, partition, kernel, stats);
        k.macs = stats.macs;
        k.flops = stats.flops;
        const nnergy_dtype graph_dtype = reference::anchor_dtype(graph, stats);
        const double scale = reference::bytes_scale(graph_dtype, options.precision);
        k.input_bytes = stats.input_bytes * scale;
        k.output_bytes = stats.output_bytes * scale;
        k.weight_bytes = stats.weight_bytes * scale;
        k.outputs = std::max(1.0, stats.total_threads);
        k.threads = reference::available_threads(stats.macs, stats.total_threads, stats.input_bytes,
                                                 graph_dtype);

        const cpu_mapping m = cpu::map_kernel(hw_, units, runtime_, k);
        out.set_text("unit", m.unit);
        out.set_text("op_class", class_name(k.cls));
        out.set("peak_flops_per_s", m.peak_flops_per_s);
        out.set("compute_efficiency", m.compute_efficiency);
        out.set("effective_flops_per_s", m.effective_flops_per_s);
        out.set("units_available", hw_.base.units);
        out.set("units_allocated", m.units_allocated);
        out.set("utilization", m.utilization);
        out.set("waves", m.waves);
        if (m.reduction_depth > 0) out.set("reduction_depth", m.reduction_depth);
        if (m.weight_prep_s > 0) out.set("weight_prep_s", m.weight_prep_s);
        out.set("launch_overhead_s", m.fixed_time_s);
        out.set("bytes_scale", scale);
        out.add_level(m.memory_level, m.memory_bytes, m.memory_bandwidth);
        out.set_text("bottleneck", m.bottleneck);
        out.set_text("explanation", m.explanation);
        out.set_text("confidence", reference::to_string(m.confidence));
    }

private:
    cpu_hardware hw_;
    cpu_runtime runtime_;
};

}  // namespace nnergy::cpu
