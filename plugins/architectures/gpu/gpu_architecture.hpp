// SPDX-License-Identifier: Apache-2.0
/// \file gpu_architecture.hpp
/// \brief nnergy.architecture.gpu: maps kernels onto a GPU hardware file (gpu_model.hpp holds
/// the arithmetic; this class reads the graph, the runtime's math modes and writes mappings).
#pragma once

#include <initializer_list>
#include <nnergy/modeling.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "gpu_model.hpp"

namespace nnergy::gpu {

/// Math modes from the runtime profile ([math] float32_conv / float32_matmul = "tfloat32" or
/// "float32"); without a runtime, fp32 stays fp32.
inline math_modes read_math(const sdk::config_view& runtime) {
    math_modes m;
    auto mode = [&](std::string_view key) {
        const std::optional<std::string> v = runtime.string(key);
        if (!v || *v == "float32") return false;
        if (*v == "tfloat32") return true;
        throw sdk::error(sdk::config_view::where(*runtime.find(key)) + ": '" + std::string(key) +
                             "' must be \"float32\" or \"tfloat32\", got \"" + *v + "\"",
                         NNERGY_CODE_INVALID_ARGUMENT);
    };
    m.float32_conv_tf32 = mode("math.float32_conv");
    m.float32_matmul_tf32 = mode("math.float32_matmul");
    return m;
}

class gpu_architecture : public modeling::class_architecture<gpu_hardware> {
public:
    explicit gpu_architecture(const sdk::context& ctx)
        : class_architecture(ctx, "nnergy.architecture.gpu"), math_(read_math(ctx.runtime())) {}

private:
    void map_device_kernel(const sdk::graph_view& graph, const sdk::partition_view&, uint32_t,
                           const nnergy_map_options&, const precision_units& units,
                           modeling::kernel_facts& f, sdk::mapping_writer& out) const override {
        gpu_kernel k = modeling::model_kernel<gpu_kernel>(f);
        if (k.cls == op_class::conv) {
            // Input channels per group = reduction depth / window size.
            const int64_t* window = nullptr;
            size_t rank = 0;
            double window_size = 1;
            if (!f.anchor_op.empty() &&
                sdk::host().node_attr_ints(graph.handle(), f.stats.anchor_node,
                                           sdk::to_sv("kernel_shape"), &window, &rank))
                for (size_t i = 0; i < rank; ++i) window_size *= static_cast<double>(window[i]);
            k.input_channels = f.stats.macs / k.outputs / std::max(1.0, window_size);
        }

        const gpu_mapping m = gpu::map_kernel(hw_, units, math_, k);
        modeling::write_common_keys(out, f, m, hw_.base.units, m.fixed_time_s);
        out.set_text("unit_precision", m.unit_precision);
        if (m.reduction_depth > 0) out.set("reduction_depth", m.reduction_depth);
        if (m.splits > 1) out.set("split_k", m.splits);
        out.set("memory_efficiency", hw_.base.memory_efficiency);
        out.add_level("dram", m.dram_bytes, m.dram_bandwidth_bytes_per_s);
        // Events for the energy estimator: the FLOPs on the unit and precision that ran them,
        // the bytes from HBM, which all cross L2 on their way to the SMs, and one launch.
        std::string unit = m.unit;
        unit += '.';
        unit += m.unit_precision;
        out.add_event("compute", unit, k.flops);
        out.add_event("memory", "dram", m.dram_bytes);
        out.add_event("memory", "l2", m.dram_bytes);
        out.add_event("control", "launch", 1);
    }

    math_modes math_;
};

}  // namespace nnergy::gpu
