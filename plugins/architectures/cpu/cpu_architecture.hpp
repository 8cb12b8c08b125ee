// SPDX-License-Identifier: Apache-2.0
/// \file cpu_architecture.hpp
/// \brief nnergy.architecture.cpu: maps kernels onto a CPU hardware file (cpu_model.hpp holds
/// the arithmetic; this class reads the graph and the runtime and writes mappings).
#pragma once

#include <initializer_list>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cpu_model.hpp"
#include "reference_architecture.hpp"

namespace nnergy::cpu {

/// [weights] prepack = "per_call" (eager frameworks) or "once" (the default).
inline cpu_runtime read_runtime(const sdk::config_view& runtime) {
    cpu_runtime r;
    const std::optional<std::string> v = runtime.string("weights.prepack");
    if (!v || *v == "once") return r;
    if (*v == "per_call") {
        r.repack_weights_per_call = true;
        return r;
    }
    throw sdk::error(sdk::config_view::where(*runtime.find("weights.prepack")) +
                         ": 'weights.prepack' must be \"per_call\" or \"once\", got \"" + *v + "\"",
                     NNERGY_CODE_INVALID_ARGUMENT);
}

class cpu_architecture : public sdk::architecture {
public:
    explicit cpu_architecture(const sdk::context& ctx)
        : sdk::architecture(ctx),
          hw_(cpu_hardware::from_config(ctx.hardware())),
          runtime_(read_runtime(ctx.runtime())) {
        ctx.config().expect_only({}, "nnergy.architecture.cpu");
    }

    const cpu_hardware& hardware() const noexcept { return hw_; }

    void map_kernel(const sdk::graph_view& graph, const sdk::partition_view& partition,
                    uint32_t kernel, const nnergy_map_options& options,
                    sdk::mapping_writer& out) const override {
        const precision_units& units = hw_.base.require(options.precision);
        std::optional<reference::kernel_facts> facts = reference::read_device_kernel(
            graph, partition, kernel, options.precision, hw_.base.units, out);
        if (!facts) return;
        const reference::kernel_facts& f = *facts;
        const cpu_kernel k = reference::model_kernel<cpu_kernel>(*facts);

        const cpu_mapping m = cpu::map_kernel(hw_, units, runtime_, k);
        reference::write_common_keys(out, f, m, hw_.base.units, m.fixed_time_s);
        if (m.reduction_depth > 0) out.set("reduction_depth", m.reduction_depth);
        if (m.weight_prep_s > 0) out.set("weight_prep_s", m.weight_prep_s);
        out.add_level(m.memory_level, m.memory_bytes, m.memory_bandwidth);
    }

private:
    cpu_hardware hw_;
    cpu_runtime runtime_;
};

}  // namespace nnergy::cpu
