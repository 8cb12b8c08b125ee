// SPDX-License-Identifier: Apache-2.0
/// \file gpu_architecture.hpp
/// \brief nnergy.architecture.gpu: maps kernels onto a GPU hardware file (gpu_model.hpp holds
/// the arithmetic; this class reads the graph, the runtime's math modes and writes mappings).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nnergy/modeling.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "gpu_model.hpp"

namespace nnergy::gpu {

/// The mapping keys and events this architecture writes beyond the common ones (sdk::keys),
/// interned once.
namespace names {
inline const sdk::key l2{"l2"};
inline const sdk::key shared{"shared"};
inline const sdk::key split_k{"split_k"};
inline const sdk::key unit_precision{"unit_precision"};
inline const sdk::key warp_instruction{"warp_instruction"};
}  // namespace names

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
    void map_device_kernel(const sdk::graph_view& graph, const sdk::partition_view& partition,
                           uint32_t, const nnergy_map_options& options,
                           const precision_units& units, modeling::kernel_facts& f,
                           sdk::mapping_writer& out) const override {
        gpu_kernel k = modeling::model_kernel<gpu_kernel>(f);
        if (implicit_gemm_conv(k.cls)) {
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
        // Without an L2 every byte is DRAM traffic: no footprint to look up.
        const double dram =
            hw_.l2_capacity > 0
                ? dram_traffic(k, footprint(graph, partition, options.precision), hw_.l2_capacity)
                : m.dram_bytes;
        modeling::write_common_keys(out, f, m, hw_.base.units, m.fixed_time_s);
        out.set_text(names::unit_precision, m.unit_precision);
        if (m.reduction_depth > 0) out.set(sdk::keys::reduction_depth, m.reduction_depth);
        if (m.splits > 1) out.set(names::split_k, m.splits);
        out.set(sdk::keys::memory_efficiency, hw_.base.memory_efficiency);
        out.add_level("dram", m.dram_bytes, m.dram_bandwidth_bytes_per_s);
        add_events(k, m, dram, out);
    }

    /// The graph's footprint at `precision`, computed once per partition and precision (an
    /// identity of 0, from an older host, means "compute it every time").
    graph_footprint footprint(const sdk::graph_view& graph, const sdk::partition_view& partition,
                              nnergy_dtype precision) const {
        const uint64_t id = partition.identity();
        return footprints_.get({id, precision}, id != 0, [&] {
            graph_footprint g;
            for (uint32_t i = 0; i < partition.kernel_count(); ++i) {
                const nnergy_kernel_stats s = partition.stats(i);
                const double scale =
                    modeling::bytes_scale(modeling::anchor_dtype(graph, s), precision);
                g.weight_bytes += s.weight_bytes * scale;
                g.largest_activation_bytes =
                    std::max(g.largest_activation_bytes, (s.input_bytes + s.output_bytes) * scale);
            }
            return g;
        });
    }

    /// Events for the energy estimator (docs/hardware.md, "Energy"): the FLOPs on the unit and
    /// precision that ran them; every byte the kernel moves crosses L2 on its way to the SMs, and
    /// `dram` of them come from or go to HBM (dram_traffic);
    /// operand tiles staged in shared memory (each MAC's operands are reused across a tile's
    /// columns and rows); bytes through the register file; warp instructions (one tensor-core
    /// MMA per 4096 FLOP, one CUDA-core FMA per 64, one 16-byte-per-lane load or store per 512
    /// bytes); one launch.
    void add_events(const gpu_kernel& k, const gpu_mapping& m, double dram,
                    sdk::mapping_writer& out) const {
        modeling::add_compute_event(out, m.unit, m.unit_precision, k.flops);
        out.add_event(sdk::keys::memory, sdk::keys::dram, dram);
        out.add_event(sdk::keys::memory, names::l2, m.dram_bytes);
        double shared = 0;
        if (modeling::uses_matrix_tiles(k.cls) && k.macs > 0) {
            const class_params& cp = hw_.params(k.cls, m.unit_precision);
            double element = modeling::precision_storage_bytes(m.unit_precision);
            if (element <= 0) element = 4;
            shared = k.macs * element * (1 / cp.tile_m + 1 / cp.tile_n);
            out.add_event(sdk::keys::memory, names::shared, shared);
        }
        out.add_event(sdk::keys::memory, sdk::keys::register_file, shared + m.dram_bytes);
        const double flops_per_instruction = m.unit == "tensor_core" ? 4096.0 : 64.0;
        out.add_event(sdk::keys::control, names::warp_instruction,
                      k.flops / flops_per_instruction + (shared + m.dram_bytes) / 512);
        out.add_event(sdk::keys::control, sdk::keys::launch, 1);
    }

    math_modes math_;
    mutable modeling::recent_values<std::pair<uint64_t, nnergy_dtype>, graph_footprint> footprints_;
};

}  // namespace nnergy::gpu
