// SPDX-License-Identifier: Apache-2.0
/// \file kpu_architecture.hpp
/// \brief nnergy.architecture.kpu: maps kernels onto a KPU hardware file (kpu_model.hpp holds
/// the arithmetic; this class reads the kernel statistics and writes mappings).
#pragma once

#include <algorithm>
#include <nnergy/sdk.hpp>
#include <string>
#include <string_view>

#include "kpu_model.hpp"
#include "op_class.hpp"
#include "reference_architecture.hpp"

namespace nnergy::kpu {

class kpu_architecture : public sdk::architecture {
public:
    explicit kpu_architecture(const sdk::context& ctx)
        : sdk::architecture(ctx), hw_(kpu_hardware::from_config(ctx.hardware())) {
        // hardware and precision are read by the host; everything else would be a typo.
        ctx.config().expect_only({}, "nnergy.architecture.kpu");
    }

    const kpu_hardware& hardware() const noexcept { return hw_; }

    void map_kernel(const sdk::graph_view& graph, const sdk::partition_view& partition,
                    uint32_t kernel, const nnergy_map_options& options,
                    sdk::mapping_writer& out) const override {
        const precision_units& units = hw_.base.require(options.precision);
        const nnergy_kernel_stats stats = partition.stats(kernel);

        kpu_kernel k;
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
        const double element = reference::storage_bytes(options.precision);
        k.element_bytes = element > 0 ? element : 4;

        const kpu_mapping m = kpu::map_kernel(hw_, units, k);
        out.set_text("unit", m.unit);
        out.set_text("schedule", m.matrix ? "matrix" : "stream");
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
        out.set("units_available", hw_.tiles);
        out.set("units_allocated", m.units_allocated);
        out.set("utilization", m.utilization);
        out.set("waves", m.waves);
        if (m.matrix) {
            out.set("blocks", m.blocks.blocks);
            out.set("reduction_depth", m.blocks.k);
            out.set("cycles", m.blocks.cycles);
            out.set("working_set_bytes", m.working_set_bytes);
            out.set("spill_passes", m.spill_passes);
        }
        out.set("launch_overhead_s", m.launch_overhead_s);
        out.set("memory_efficiency", hw_.base.memory_efficiency);
        out.set("bytes_scale", scale);
        if (m.sram_bandwidth > 0) out.add_level("tile_sram", m.sram_bytes, m.sram_bandwidth);
        if (m.noc_bandwidth > 0) out.add_level("noc", m.noc_bytes, m.noc_bandwidth);
        out.add_level("dram", m.dram_bytes, m.dram_bandwidth);
        out.set_text("bottleneck", m.bottleneck);
        out.set_text("explanation", m.explanation);
        out.set_text("confidence", reference::to_string(m.confidence));
    }

private:
    kpu_hardware hw_;
};

}  // namespace nnergy::kpu
