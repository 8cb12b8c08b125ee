// SPDX-License-Identifier: Apache-2.0
/// \file reference_architecture.hpp
/// \brief nnergy.architecture.reference: maps kernels onto any hardware file as a roofline
/// (reference_model.hpp holds the arithmetic; this class reads the graph and writes mappings).
#pragma once

#include <nnergy/modeling.hpp>
#include <nnergy/sdk.hpp>
#include <optional>

#include "reference_model.hpp"

namespace nnergy::reference {

/// The mapping keys and events this architecture writes beyond the common ones (sdk::keys),
/// interned once.
namespace names {
inline const sdk::key threads{"threads"};
}  // namespace names

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
        const bool explain = (options.flags & NNERGY_MAP_TOTALS_ONLY) == 0;
        std::optional<kernel_facts> f = read_device_kernel(
            graph, partition, kernel, options.precision, hw_.units, out, explain);
        if (!f) return;
        const kernel_work work = model_kernel<kernel_work>(*f);

        const kernel_mapping m = reference::map_kernel(hw_, units, work);
        out.set_text(sdk::keys::unit, m.unit);
        out.set(sdk::keys::peak_flops_per_s, m.peak_flops_per_s);
        out.set(sdk::keys::compute_efficiency, m.compute_efficiency);
        out.set(sdk::keys::effective_flops_per_s, m.effective_flops_per_s);
        out.set(sdk::keys::units_available, m.units_available);
        out.set(sdk::keys::units_allocated, m.units_allocated);
        out.set(sdk::keys::utilization, m.utilization);
        out.set(names::threads, work.threads);
        out.set(sdk::keys::waves, m.waves);
        out.set(sdk::keys::launch_overhead_s, m.launch_overhead_s);
        out.set(sdk::keys::memory_efficiency, m.memory_efficiency);
        out.set(sdk::keys::bytes_scale, f->bytes_scale);
        out.add_level("dram", m.dram_bytes, m.dram_bandwidth_bytes_per_s);
        // Events for the energy estimator: FLOPs on the unit, DRAM bytes, one launch.
        modeling::add_compute_event(out, m.unit, units.precision, work.flops);
        out.add_event(sdk::keys::memory, sdk::keys::dram, m.dram_bytes);
        out.add_event(sdk::keys::control, sdk::keys::launch, 1);
        out.set_text(sdk::keys::bottleneck, m.bottleneck);
        if (explain) out.set_text(sdk::keys::explanation, m.explanation);
        out.set_text(sdk::keys::confidence, to_string(m.confidence));
    }

private:
    hardware_model hw_;
};

}  // namespace nnergy::reference
