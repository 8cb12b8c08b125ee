// SPDX-License-Identifier: Apache-2.0
/// \file tpu_architecture.hpp
/// \brief nnergy.architecture.tpu: maps kernels onto a TPU hardware file (tpu_model.hpp holds
/// the arithmetic; this class reads the graph and writes mappings).
#pragma once

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <nnergy/modeling.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tpu_model.hpp"

namespace nnergy::tpu {

/// The mapping keys and events this architecture writes beyond the common ones (sdk::keys),
/// interned once.
namespace names {
inline const sdk::key accumulator{"accumulator"};
inline const sdk::key dram_reread_bytes{"dram_reread_bytes"};
inline const sdk::key mxu_cycles{"mxu_cycles"};
inline const sdk::key mxu_time_s{"mxu_time_s"};
inline const sdk::key mxu_utilization{"mxu_utilization"};
inline const sdk::key vector_time_s{"vector_time_s"};
inline const sdk::key weight_load{"weight_load"};
inline const sdk::key weight_tiles{"weight_tiles"};
inline const sdk::key weights_streamed_bytes{"weights_streamed_bytes"};
}  // namespace names

class tpu_architecture : public modeling::class_architecture<tpu_hardware> {
public:
    explicit tpu_architecture(const sdk::context& ctx)
        : class_architecture(ctx, "nnergy.architecture.tpu") {}

private:
    void map_device_kernel(const sdk::graph_view&, const sdk::partition_view& partition,
                           uint32_t kernel, const nnergy_map_options&, const precision_units& units,
                           modeling::kernel_facts& f, sdk::mapping_writer& out) const override {
        tpu_kernel k = modeling::model_kernel<tpu_kernel>(f);
        if (hw_.parameter_cache && f.stats.weight_bytes > 0) {
            // The cache fills in model order: the weights of earlier kernels come first. Only
            // files with a parameter cache (small edge models) pay for this scan.
            double before = 0;
            for (uint32_t i = 0; i < kernel; ++i) before += partition.stats(i).weight_bytes;
            k.weights_before = before * f.bytes_scale;
        }

        const tpu_mapping m = tpu::map_kernel(hw_, units, k);
        modeling::write_common_keys(out, f, m, m.units_available, m.launch_overhead_s);
        if (m.plan) {
            out.set(sdk::keys::reduction_depth, m.plan->k);
            out.set(names::weight_tiles, m.plan->tiles);
            out.set(names::mxu_cycles, m.plan->cycles);
            out.set(names::mxu_utilization, m.plan->utilization);
            out.set(names::mxu_time_s, m.mxu_time_s);
            if (m.vector_time_s > 0) out.set(names::vector_time_s, m.vector_time_s);
        }
        out.set(sdk::keys::memory_efficiency, hw_.base.memory_efficiency);
        if (m.dram_reread_bytes > 0) out.set(names::dram_reread_bytes, m.dram_reread_bytes);
        if (hw_.parameter_cache) out.set(names::weights_streamed_bytes, m.weights_streamed_bytes);
        out.add_level("dram", m.dram_bytes, m.dram_bandwidth_bytes_per_s);
        if (hw_.on_chip && hw_.on_chip->bandwidth > 0)
            out.add_level(hw_.on_chip->name, m.on_chip_bytes, hw_.on_chip->bandwidth);
        add_events(k, m, units.precision, out);
    }

    /// Events for the energy estimator (docs/hardware.md, "Energy"): the FLOPs on the unit that
    /// ran them (the systolic array or the vector unit); DRAM and on-chip bytes; the weights
    /// shifted into the arrays (once per copy of a tile); the accumulators' partial sums (4-byte
    /// sums, written and read once per reduction tile); DMA transfers of 4 KiB between DRAM and
    /// on-chip memory; the kernel's launch.
    void add_events(const tpu_kernel& k, const tpu_mapping& m, std::string_view precision,
                    sdk::mapping_writer& out) const {
        modeling::add_compute_event(out, m.unit, precision, k.flops);
        out.add_event(sdk::keys::memory, sdk::keys::dram, m.dram_bytes);
        if (hw_.on_chip) out.add_event("memory", hw_.on_chip->name, m.on_chip_bytes);
        if (m.plan) {
            out.add_event(sdk::keys::memory, names::weight_load, k.weight_bytes * m.plan->splits);
            const double outputs = m.plan->m * m.plan->n * m.plan->groups;
            out.add_event(sdk::keys::memory, names::accumulator, outputs * 4 * 2 * m.plan->k_tiles);
        }
        out.add_event(sdk::keys::control, sdk::keys::dma, std::ceil(m.dram_bytes / 4096));
        out.add_event(sdk::keys::control, sdk::keys::launch, 1);
    }
};

}  // namespace nnergy::tpu
