// SPDX-License-Identifier: Apache-2.0
/// \file kpu_architecture.hpp
/// \brief nnergy.architecture.kpu: maps kernels onto a KPU hardware file (kpu_model.hpp holds
/// the arithmetic; this class reads the kernel statistics and writes mappings).
#pragma once

#include <algorithm>
#include <nnergy/modeling.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "kpu_model.hpp"

namespace nnergy::kpu {

class kpu_architecture : public modeling::class_architecture<kpu_hardware> {
public:
    explicit kpu_architecture(const sdk::context& ctx)
        : class_architecture(ctx, "nnergy.architecture.kpu") {}

private:
    double units_available() const override { return hw_.tiles; }

    void map_device_kernel(const sdk::graph_view&, const sdk::partition_view&, uint32_t,
                           const nnergy_map_options& options, const precision_units& units,
                           modeling::kernel_facts& f, sdk::mapping_writer& out) const override {
        kpu_kernel k = modeling::model_kernel<kpu_kernel>(f);
        const double element = modeling::storage_bytes(options.precision);
        k.element_bytes = element > 0 ? element : 4;

        const kpu_mapping m = kpu::map_kernel(hw_, units, k);
        modeling::write_common_keys(out, f, m, hw_.tiles, m.launch_overhead_s);
        out.set_text("schedule", m.matrix ? "matrix" : "stream");
        if (m.matrix) {
            out.set("blocks", m.blocks.blocks);
            out.set("reduction_depth", m.blocks.k);
            out.set("cycles", m.blocks.cycles);
            out.set("working_set_bytes", m.working_set_bytes);
            out.set("spill_passes", m.spill_passes);
        }
        out.set("memory_efficiency", hw_.base.memory_efficiency);
        if (m.sram_bandwidth > 0) out.add_level("tile_sram", m.sram_bytes, m.sram_bandwidth);
        if (m.noc_bandwidth > 0) out.add_level("noc", m.noc_bytes, m.noc_bandwidth);
        out.add_level("dram", m.dram_bytes, m.dram_bandwidth);
        // Events for the energy estimator: tile FLOPs, tile-memory, NoC and DRAM bytes, and the
        // kernel's launch.
        out.add_event("compute", modeling::unit_event(m.unit, units.precision), k.flops);
        out.add_event("memory", "tile_sram", m.sram_bytes);
        out.add_event("memory", "noc", m.noc_bytes);
        out.add_event("memory", "dram", m.dram_bytes);
        out.add_event("control", "launch", 1);
    }
};

}  // namespace nnergy::kpu
