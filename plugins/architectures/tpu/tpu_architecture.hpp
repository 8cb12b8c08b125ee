// SPDX-License-Identifier: Apache-2.0
/// \file tpu_architecture.hpp
/// \brief nnergy.architecture.tpu: maps kernels onto a TPU hardware file (tpu_model.hpp holds
/// the arithmetic; this class reads the graph and writes mappings).
#pragma once

#include <initializer_list>
#include <nnergy/sdk.hpp>
#include <string>
#include <string_view>

#include "op_class.hpp"
#include "reference_architecture.hpp"
#include "tpu_model.hpp"

namespace nnergy::tpu {

class tpu_architecture : public sdk::architecture {
public:
    explicit tpu_architecture(const sdk::context& ctx)
        : sdk::architecture(ctx), hw_(tpu_hardware::from_config(ctx.hardware())) {
        // hardware and precision are read by the host; everything else would be a typo.
        ctx.config().expect_only({}, "nnergy.architecture.tpu");
    }

    const tpu_hardware& hardware() const noexcept { return hw_; }

    void map_kernel(const sdk::graph_view& graph, const sdk::partition_view& partition,
                    uint32_t kernel, const nnergy_map_options& options,
                    sdk::mapping_writer& out) const override {
        const precision_units& units = hw_.base.require(options.precision);
        const nnergy_kernel_stats stats = partition.stats(kernel);

        tpu_kernel k;
        k.what = reference::describe(graph, partition, kernel, stats);
        k.macs = stats.macs;
        k.flops = stats.flops;
        const nnergy_dtype graph_dtype = reference::anchor_dtype(graph, stats);
        const double scale = reference::bytes_scale(graph_dtype, options.precision);
        k.input_bytes = stats.input_bytes * scale;
        k.output_bytes = stats.output_bytes * scale;
        k.weight_bytes = stats.weight_bytes * scale;
        k.outputs = std::max(1.0, stats.total_threads);
        k.out_channels = std::max(1.0, stats.channels);
        k.groups = static_cast<double>(std::max<int64_t>(1, stats.groups));
        k.threads = reference::available_threads(stats.macs, stats.total_threads, stats.input_bytes,
                                                 graph_dtype);
        if (hw_.parameter_cache && stats.weight_bytes > 0) {
            // The cache fills in model order: the weights of earlier kernels come first. Only
            // files with a parameter cache (small edge models) pay for this scan.
            double before = 0;
            for (uint32_t i = 0; i < kernel; ++i) before += partition.stats(i).weight_bytes;
            k.weights_before = before * scale;
        }

        const tpu_mapping m = tpu::map_kernel(hw_, units, k);
        out.set_text("unit", m.unit);
        // The op class shared by every class architecture (op_class.hpp), for reports.
        const std::string_view anchor_op =
            stats.anchor_node != NNERGY_NO_NODE && stats.anchor_node < graph.node_count()
                ? graph.op_type(stats.anchor_node)
                : std::string_view();
        out.set_text("op_class", reference::class_name(reference::classify(
                                     anchor_op, partition.pattern(kernel), stats.macs,
                                     stats.is_depthwise, stats.groups)));
        out.set("peak_flops_per_s", m.peak_flops_per_s);
        out.set("compute_efficiency", m.compute_efficiency);
        out.set("effective_flops_per_s", m.effective_flops_per_s);
        out.set("units_available", m.units_available);
        out.set("units_allocated", m.units_allocated);
        out.set("utilization", m.utilization);
        out.set("waves", m.waves);
        if (m.plan) {
            out.set("reduction_depth", m.plan->k);
            out.set("weight_tiles", m.plan->tiles);
            out.set("mxu_cycles", m.plan->cycles);
            out.set("mxu_utilization", m.plan->utilization);
            out.set("mxu_time_s", m.mxu_time_s);
            if (m.vector_time_s > 0) out.set("vector_time_s", m.vector_time_s);
        }
        out.set("launch_overhead_s", m.launch_overhead_s);
        out.set("memory_efficiency", hw_.base.memory_efficiency);
        out.set("bytes_scale", scale);
        if (m.dram_reread_bytes > 0) out.set("dram_reread_bytes", m.dram_reread_bytes);
        if (hw_.parameter_cache) out.set("weights_streamed_bytes", m.weights_streamed_bytes);
        out.add_level("dram", m.dram_bytes, m.dram_bandwidth_bytes_per_s);
        if (hw_.on_chip && hw_.on_chip->bandwidth > 0)
            out.add_level(hw_.on_chip->name, m.on_chip_bytes, hw_.on_chip->bandwidth);
        out.set_text("bottleneck", m.bottleneck);
        out.set_text("explanation", m.explanation);
        out.set_text("confidence", reference::to_string(m.confidence));
    }

private:
    tpu_hardware hw_;
};

}  // namespace nnergy::tpu
