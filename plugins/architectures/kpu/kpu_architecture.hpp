// SPDX-License-Identifier: Apache-2.0
/// \file kpu_architecture.hpp
/// \brief nnergy.architecture.kpu: maps kernels onto a KPU hardware file (kpu_model.hpp holds
/// the arithmetic; this class reads the kernel statistics and writes mappings).
#pragma once

#include <algorithm>
#include <cmath>
#include <nnergy/modeling.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "kpu_model.hpp"

namespace nnergy::kpu {

/// The mapping keys and events this architecture writes beyond the common ones (sdk::keys),
/// interned once.
namespace names {
inline const sdk::key blocks{"blocks"};
inline const sdk::key cycles{"cycles"};
inline const sdk::key noc{"noc"};
inline const sdk::key schedule{"schedule"};
inline const sdk::key spill_passes{"spill_passes"};
inline const sdk::key tile_sram{"tile_sram"};
inline const sdk::key token_routing{"token_routing"};
inline const sdk::key working_set_bytes{"working_set_bytes"};
}  // namespace names

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
        out.set_text(names::schedule, m.matrix ? "matrix" : "stream");
        if (m.matrix) {
            out.set(names::blocks, m.blocks.blocks);
            out.set(sdk::keys::reduction_depth, m.blocks.k);
            out.set(names::cycles, m.blocks.cycles);
            out.set(names::working_set_bytes, m.working_set_bytes);
            out.set(names::spill_passes, m.spill_passes);
        }
        out.set(sdk::keys::memory_efficiency, hw_.base.memory_efficiency);
        if (m.sram_bandwidth > 0) out.add_level("tile_sram", m.sram_bytes, m.sram_bandwidth);
        if (m.noc_bandwidth > 0) out.add_level("noc", m.noc_bytes, m.noc_bandwidth);
        out.add_level("dram", m.dram_bytes, m.dram_bandwidth);
        add_events(k, m, units.precision, out);
    }

    /// Events for the energy estimator (docs/hardware.md, "Energy"): tile FLOPs; tile-memory
    /// bytes; NoC byte-hops (operands travel from the fabric's edge to the busy tiles, half the
    /// side of the busy block on average); tokens routed (one per operand element on the NoC);
    /// DRAM bytes and their DMA transfers of 4 KiB; the kernel's launch.
    static void add_events(const kpu_kernel& k, const kpu_mapping& m, std::string_view precision,
                           sdk::mapping_writer& out) {
        modeling::add_compute_event(out, m.unit, precision, k.flops);
        out.add_event(sdk::keys::memory, names::tile_sram, m.sram_bytes);
        const double hops = std::max(1.0, std::sqrt(std::max(1.0, m.units_allocated)) / 2);
        out.add_event(sdk::keys::memory, names::noc, m.noc_bytes * hops);
        out.add_event(sdk::keys::control, names::token_routing,
                      m.noc_bytes / std::max(1.0, k.element_bytes));
        out.add_event(sdk::keys::memory, sdk::keys::dram, m.dram_bytes);
        out.add_event(sdk::keys::control, sdk::keys::dma, std::ceil(m.dram_bytes / 4096));
        out.add_event(sdk::keys::control, sdk::keys::launch, 1);
    }
};

}  // namespace nnergy::kpu
