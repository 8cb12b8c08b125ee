// SPDX-License-Identifier: Apache-2.0
/// \file kpu_architecture.hpp
/// \brief nnergy.architecture.kpu: maps kernels onto a KPU hardware file (kpu_model.hpp holds
/// the arithmetic; this class reads the kernel statistics and writes mappings).
#pragma once

#include <algorithm>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

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
        std::optional<reference::kernel_facts> facts = reference::read_device_kernel(
            graph, partition, kernel, options.precision, hw_.tiles, out);
        if (!facts) return;
        const reference::kernel_facts& f = *facts;
        kpu_kernel k = reference::model_kernel<kpu_kernel>(*facts);
        const double element = reference::storage_bytes(options.precision);
        k.element_bytes = element > 0 ? element : 4;

        const kpu_mapping m = kpu::map_kernel(hw_, units, k);
        reference::write_common_keys(out, f, m, hw_.tiles, m.launch_overhead_s);
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
    }

private:
    kpu_hardware hw_;
};

}  // namespace nnergy::kpu
