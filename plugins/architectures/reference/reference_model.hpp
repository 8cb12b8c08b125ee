// SPDX-License-Identifier: Apache-2.0
/// \file reference_model.hpp
/// \brief The reference architecture's model, without host calls so it can be tested alone:
/// maps one kernel onto any hardware description as a roofline, peak x efficiency x
/// utilization against DRAM bandwidth x efficiency, plus a launch cost.
#pragma once

#include <algorithm>
#include <nnergy/modeling.hpp>
#include <string>

namespace nnergy::reference {

using namespace nnergy::modeling;

/// The result of mapping one kernel; field names follow the mapping keys (docs/abi.md).
struct kernel_mapping {
    std::string unit;
    double peak_flops_per_s = 0;
    double compute_efficiency = 1;
    double effective_flops_per_s = 0;
    double units_available = 0;
    double units_allocated = 0;
    double utilization = 0;
    double waves = 1;
    double launch_overhead_s = 0;
    double dram_bytes = 0;
    double dram_bandwidth_bytes_per_s = 0;  ///< achievable: datasheet x memory efficiency
    double memory_efficiency = 1;
    double compute_time_s = 0;  ///< the roofline terms behind the bottleneck guess
    double memory_time_s = 0;
    std::string bottleneck;  ///< compute | memory:dram | overhead
    std::string explanation;
    provenance confidence = provenance::theoretical;
};

/// Maps one kernel: the roofline of docs/hardware.md.
inline kernel_mapping map_kernel(const hardware_model& hw, const precision_units& p,
                                 const kernel_work& k) {
    const execution_unit& u = p.unit_for(k.macs);
    const occupancy occ = compute_occupancy(k.threads, hw.units, u.threads_per_unit);
    kernel_mapping m;
    m.unit = u.name;
    m.peak_flops_per_s = u.peak_flops_per_s;
    m.compute_efficiency = u.efficiency;
    m.effective_flops_per_s = u.peak_flops_per_s * u.efficiency * occ.utilization;
    m.units_available = hw.units;
    m.units_allocated = occ.units_allocated;
    m.utilization = occ.utilization;
    m.waves = occ.waves;
    m.launch_overhead_s = hw.launch_overhead_s;
    m.dram_bytes = std::max(0.0, k.dram_bytes());
    m.memory_efficiency = hw.memory_efficiency;
    m.dram_bandwidth_bytes_per_s = hw.dram_bandwidth * hw.memory_efficiency;
    m.compute_time_s = k.flops > 0 ? k.flops / m.effective_flops_per_s : 0.0;
    m.memory_time_s = m.dram_bytes > 0 ? m.dram_bytes / m.dram_bandwidth_bytes_per_s : 0.0;

    const double work = std::max(m.compute_time_s, m.memory_time_s);
    const limit verdict = limiting_term(m.compute_time_s, m.memory_time_s, m.launch_overhead_s);
    switch (verdict) {
        case limit::overhead:
            m.bottleneck = "overhead";
            m.confidence = hw.overhead_provenance;
            break;
        case limit::compute:
            m.bottleneck = "compute";
            m.confidence = u.efficiency_provenance;
            break;
        case limit::memory:
            m.bottleneck = "memory:dram";
            m.confidence = hw.memory_provenance;
            break;
    }

    if (!k.explain) return m;  // the caller keeps totals only

    // "Conv 3x3 on tensor_core: 9.3% of 132 SMs busy, AI 41 FLOP/B below ridge 295 FLOP/B ->
    // memory-bound", appended piece by piece into one buffer.
    std::string& e = m.explanation;
    e.reserve(160 + k.what.size() + m.unit.size() + hw.unit_name.size());
    e += k.what.empty() ? std::string_view("kernel") : std::string_view(k.what);
    e += " on ";
    e += m.unit;
    e += ": ";
    append_number(e, m.units_allocated, 0, true);
    e += " of ";
    append_number(e, hw.units, 0, true);
    e += ' ';
    e += hw.unit_name;
    if (hw.units != 1) e += 's';
    e += " busy";
    if (m.waves > 1) {
        e += " in ";
        append_number(e, m.waves, 0, true);
        e += " waves";
    }
    e += " (";
    append_percent(e, m.utilization);
    e += " of thread slots)";
    const double ridge = m.effective_flops_per_s / m.dram_bandwidth_bytes_per_s;
    if (k.flops <= 0) {
        e += ", no arithmetic";
    } else if (m.dram_bytes <= 0) {
        e += ", no DRAM traffic";
    } else {
        const double ai = k.flops / m.dram_bytes;
        e += ", AI ";
        append_short_number(e, ai);
        e += ai < ridge ? " FLOP/B below ridge " : " FLOP/B above ridge ";
        append_short_number(e, ridge);
        e += " FLOP/B";
    }
    e += " -> ";
    switch (verdict) {
        case limit::overhead:
            e += "launch-bound (";
            append_seconds(e, m.launch_overhead_s);
            e += " launch > ";
            append_seconds(e, work);
            e += " work)";
            break;
        case limit::compute:
            e += "compute-bound";
            break;
        case limit::memory:
            e += "memory-bound";
            break;
    }
    return m;
}

}  // namespace nnergy::reference
