// SPDX-License-Identifier: Apache-2.0
/// \file cpu_architecture.hpp
/// \brief nnergy.architecture.cpu: maps kernels onto a CPU hardware file (cpu_model.hpp holds
/// the arithmetic; this class reads the graph and the runtime and writes mappings).
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

#include "cpu_model.hpp"

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

class cpu_architecture : public modeling::class_architecture<cpu_hardware> {
public:
    explicit cpu_architecture(const sdk::context& ctx)
        : class_architecture(ctx, "nnergy.architecture.cpu"),
          runtime_(read_runtime(ctx.runtime())) {}

private:
    void map_device_kernel(const sdk::graph_view&, const sdk::partition_view&, uint32_t,
                           const nnergy_map_options&, const precision_units& units,
                           modeling::kernel_facts& f, sdk::mapping_writer& out) const override {
        const cpu_kernel k = modeling::model_kernel<cpu_kernel>(f);

        const cpu_mapping m = cpu::map_kernel(hw_, units, runtime_, k);
        modeling::write_common_keys(out, f, m, hw_.base.units, m.fixed_time_s);
        if (m.reduction_depth > 0) out.set("reduction_depth", m.reduction_depth);
        if (m.weight_prep_s > 0) out.set("weight_prep_s", m.weight_prep_s);
        out.add_level(m.memory_level, m.memory_bytes, m.memory_bandwidth);
        add_events(k, m, units.precision, out);
    }

    /// Bytes one instruction of a vector unit works on: the register width.
    static double vector_bytes(std::string_view unit) noexcept {
        if (unit == "avx512") return 64;
        if (unit == "amx") return 1024;  // one 16 x 64-byte tile register
        if (unit == "neon" || unit == "neon_dot") return 16;
        return 32;  // avx2 and units without a known width
    }

    /// Events for the energy estimator (docs/hardware.md, "Energy"): the FLOPs on the unit
    /// that ran them; the bytes through the register file and L1 (every operand passes them)
    /// and at the level that serves the working set; vector instructions fetched, decoded and
    /// issued (FMAs at 2 FLOP per lane, loads and stores one register width each); the
    /// dispatch of one op.
    static void add_events(const cpu_kernel& k, const cpu_mapping& m, std::string_view precision,
                           sdk::mapping_writer& out) {
        modeling::add_compute_event(out, m.unit, precision, k.flops);
        out.add_event("memory", "register_file", m.memory_bytes);
        out.add_event("memory", "l1", m.memory_bytes);
        if (m.memory_level != "l1") out.add_event("memory", m.memory_level, m.memory_bytes);
        double element = modeling::precision_storage_bytes(precision);
        if (element <= 0) element = 4;
        const double width = vector_bytes(m.unit);
        const double lanes = std::max(1.0, width / element);
        out.add_event("control", "instruction", k.flops / (2 * lanes) + m.memory_bytes / width);
        out.add_event("control", "launch", 1);
    }

    cpu_runtime runtime_;
};

}  // namespace nnergy::cpu
