// SPDX-License-Identifier: Apache-2.0
/// \file reference_architecture.hpp
/// \brief nnergy.architecture.reference: maps kernels onto any hardware file as a roofline
/// (reference_model.hpp holds the arithmetic; this class reads the graph and writes mappings).
#pragma once

#include <initializer_list>
#include <nnergy/sdk.hpp>
#include <string>
#include <string_view>

#include "reference_model.hpp"

namespace nnergy::reference {

/// The element type of the kernel's anchor output (what its tensors are stored in).
inline nnergy_dtype anchor_dtype(const sdk::graph_view& graph, const nnergy_kernel_stats& stats) {
    if (stats.anchor_node == NNERGY_NO_NODE || stats.anchor_node >= graph.node_count() ||
        graph.output_count(stats.anchor_node) == 0)
        return NNERGY_DTYPE_UNDEFINED;
    const uint32_t t = graph.output(stats.anchor_node, 0);
    return t == NNERGY_NO_TENSOR ? NNERGY_DTYPE_UNDEFINED : graph.dtype(t);
}

/// "depthwise Conv 3x3 (conv_bn_relu)": the anchor op, its window, and the fusion pattern.
inline std::string describe(const sdk::graph_view& graph, const sdk::partition_view& partition,
                            uint32_t kernel, const nnergy_kernel_stats& stats) {
    std::string what;
    if (stats.anchor_node != NNERGY_NO_NODE && stats.anchor_node < graph.node_count()) {
        if (stats.is_depthwise) what = "depthwise ";
        what += graph.op_type(stats.anchor_node);
        // The window is read in place (graph_view::attr_ints would copy it).
        const int64_t* window = nullptr;
        size_t rank = 0;
        if (sdk::host().node_attr_ints(graph.handle(), stats.anchor_node,
                                       sdk::to_sv("kernel_shape"), &window, &rank) &&
            rank > 0) {
            what += ' ';
            for (size_t i = 0; i < rank; ++i) {
                if (i) what += 'x';
                what += std::to_string(window[i]);
            }
        }
    }
    const std::string_view pattern = partition.pattern(kernel);
    if (!pattern.empty() && sdk::host().kernel_node_count(partition.handle(), kernel) > 1) {
        if (what.empty()) {
            what = pattern;
        } else {
            what += " (";
            what += pattern;
            what += ')';
        }
    }
    return what;
}

class reference_architecture : public sdk::architecture {
public:
    explicit reference_architecture(const sdk::context& ctx)
        : sdk::architecture(ctx), hw_(hardware_model::from_config(ctx.hardware())) {
        // hardware and precision are read by the host; everything else would be a typo.
        ctx.config().expect_only({}, "nnergy.architecture.reference");
    }

    const hardware_model& hardware() const noexcept { return hw_; }

    void map_kernel(const sdk::graph_view& graph, const sdk::partition_view& partition,
                    uint32_t kernel, const nnergy_map_options& options,
                    sdk::mapping_writer& out) const override {
        const precision_units& units = hw_.require(options.precision);
        const nnergy_kernel_stats stats = partition.stats(kernel);

        kernel_work work;
        work.what = describe(graph, partition, kernel, stats);
        work.macs = stats.macs;
        work.flops = stats.flops;
        const nnergy_dtype graph_dtype = anchor_dtype(graph, stats);
        const double scale = bytes_scale(graph_dtype, options.precision);
        work.dram_bytes = (stats.input_bytes + stats.output_bytes + stats.weight_bytes) * scale;
        work.total_threads =
            available_threads(stats.macs, stats.total_threads, stats.input_bytes, graph_dtype);

        const kernel_mapping m = reference::map_kernel(hw_, units, work);
        out.set_text("unit", m.unit);
        out.set("peak_flops_per_s", m.peak_flops_per_s);
        out.set("compute_efficiency", m.compute_efficiency);
        out.set("effective_flops_per_s", m.effective_flops_per_s);
        out.set("units_available", m.units_available);
        out.set("units_allocated", m.units_allocated);
        out.set("utilization", m.utilization);
        out.set("threads", work.total_threads);
        out.set("waves", m.waves);
        out.set("launch_overhead_s", m.launch_overhead_s);
        out.set("memory_efficiency", m.memory_efficiency);
        out.set("bytes_scale", scale);
        out.add_level("dram", m.dram_bytes, m.dram_bandwidth_bytes_per_s);
        out.set_text("bottleneck", m.bottleneck);
        out.set_text("explanation", m.explanation);
        out.set_text("confidence", to_string(m.confidence));
    }

private:
    hardware_model hw_;
};

}  // namespace nnergy::reference
