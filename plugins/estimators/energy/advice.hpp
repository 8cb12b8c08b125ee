// SPDX-License-Identifier: Apache-2.0
/// \file advice.hpp
/// \brief What to change to spend less energy, each item with its estimated saving, from the
/// energy estimate of one run (no host calls, so it can be tested alone). The savings are first
/// order: what the named energy would become, before the change's effect on anything else.
#pragma once

#include <algorithm>
#include <nnergy/modeling/hardware_model.hpp>
#include <nnergy/modeling/text.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "energy_model.hpp"

namespace nnergy::energy {

/// What the advisor needs of one kernel.
struct kernel_summary {
    // Views of the host's partition and mapping, which outlive the estimate.
    std::string_view name;
    std::string_view op_class;    ///< mapping's op_class ("elementwise", "conv", ...)
    std::string_view bottleneck;  ///< mapping's bottleneck ("compute", "memory:dram", "overhead")
    double utilization = 0;       ///< mapping's utilization
    double energy_j = 0;
    double static_j = 0;
    double memory_j = 0;   ///< energy.memory_j of the kernel
    double control_j = 0;  ///< energy.control_j of the kernel
    double underutilization_j = 0;
    /// For a compute-bound kernel, the part of underutilization_j that its idle slots
    /// (1 - utilization) account for: what filling them (reshaping, batching) would save; 0
    /// otherwise, or when the mapping gives no utilization.
    double idle_slots_j = 0;
    /// Compute events re-priced at the cheapest lower precision the file prices on any unit
    /// (0 when there is none): the compute energy the kernel would have there.
    double compute_j = 0;
    double compute_lower_precision_j = -1;
    /// For a kernel bound by a memory level: the static energy of the time that level adds
    /// beyond the kernel's compute and its other levels, and the energy of its DRAM bytes.
    double memory_wait_j = 0;
    double dram_j = 0;
    bool single_consumer_of_producer = false;  ///< reads one kernel's output, which only it reads
};

struct advice_item {
    std::string_view kind;  ///< static, utilization, precision, fusion, memory_bound
    /// The total its saving is reported as: "advice.<kind>_saving_j".
    std::string_view saving_key;
    double saving_j = 0;
    std::string text;
};

/// The cheapest compute coefficient for `event` ("<unit>.<precision>") at a precision narrower
/// than its own, on any unit of the file; nullptr when none is cheaper.
inline const coefficient* cheaper_precision(const energy_table& t, std::string_view event) {
    const size_t dot = event.rfind('.');
    if (dot == std::string_view::npos) return nullptr;
    const std::string_view precision = event.substr(dot + 1);
    const double own_bytes = modeling::precision_storage_bytes(precision);
    const coefficient* own = t.find("compute", event);
    if (!own || own_bytes <= 0) return nullptr;
    const coefficient* best = nullptr;
    for (const coefficient& c : t.coefficients) {
        if (c.category != "compute") continue;
        const size_t d = c.event.rfind('.');
        if (d == std::string::npos) continue;
        const std::string_view p = std::string_view(c.event).substr(d + 1);
        const double bytes = modeling::precision_storage_bytes(p);
        // Floating point to floating point only: integer precisions need quantization.
        if (bytes <= 0 || bytes >= own_bytes || p.substr(0, 3) == "int" || p.substr(0, 4) == "uint")
            continue;
        if (c.joules < own->joules && (!best || c.joules < best->joules)) best = &c;
    }
    return best;
}

// printf's "%.3g J" and "%.0f%%", without its format parsing, appended where the text grows
// (a sweep writes the advice of every evaluation).
inline void append_joules(std::string& s, double j) {
    modeling::append_number(s, j, 3, false);
    s += " J";
}
inline void append_share(std::string& s, double part, double whole) {
    if (!(whole > 0)) {
        s += "0%";
        return;
    }
    modeling::append_number(s, 100 * part / whole, 0, true);
    s += '%';
}

/// Text built by appending, without a temporary string per piece: `text << "a " << j(0.1)`.
struct advice_text {
    std::string& s;
    struct in_joules {
        double j;
    };
    struct as_share {
        double part, whole;
    };
    advice_text& operator<<(std::string_view piece) {
        s += piece;
        return *this;
    }
    advice_text& operator<<(in_joules x) {
        append_joules(s, x.j);
        return *this;
    }
    advice_text& operator<<(as_share x) {
        append_share(s, x.part, x.whole);
        return *this;
    }
    advice_text& operator<<(size_t n) {
        modeling::append_number(s, static_cast<double>(n), 0, true);
        return *this;
    }
};
inline advice_text::in_joules joules(double j) { return {j}; }
inline advice_text::as_share share(double part, double whole) { return {part, whole}; }

/// Advice for one run, largest saving first.
inline std::vector<advice_item> advise(const std::vector<kernel_summary>& kernels, double energy_j,
                                       double static_j, double device_idle_j,
                                       double underutilization_j) {
    std::vector<advice_item> items;
    if (energy_j <= 0) return items;

    // Static energy: the device is powered while it waits or runs below capacity.
    if (static_j > 0.5 * energy_j) {
        advice_item a;
        a.kind = "static";
        a.saving_key = "advice.static_saving_j";
        a.saving_j = underutilization_j;
        advice_text t{a.text};
        t << "static power is " << share(static_j, energy_j) << " of the energy ("
          << joules(static_j) << "), of which " << joules(underutilization_j);
        // Idle time between kernels is named only where the run has some (a runtime profile).
        if (device_idle_j > 0)
            t << " is spent while the device waits (" << joules(device_idle_j)
              << " between kernels) or runs";
        else
            t << " is spent while the device runs";
        t << " below its peak: a larger batch or a part sized to the work saves up to "
          << joules(underutilization_j) << " (" << share(underutilization_j, energy_j)
          << ") per pass";
        items.push_back(std::move(a));
    }

    // Low utilization: the kernels that leave most static energy to idle slots. Running below
    // peak with every slot busy (a unit's efficiency) is not something reshaping fixes.
    std::vector<const kernel_summary*> by_waste;
    for (const kernel_summary& k : kernels)
        if (k.idle_slots_j > 0) by_waste.push_back(&k);
    std::stable_sort(by_waste.begin(), by_waste.end(), [](const auto* a, const auto* b) {
        return a->idle_slots_j > b->idle_slots_j;
    });
    if (!by_waste.empty() && by_waste.front()->idle_slots_j > 0.02 * energy_j) {
        advice_item a;
        a.kind = "utilization";
        a.saving_key = "advice.utilization_saving_j";
        advice_text t{a.text};
        t << "low utilization:";
        for (size_t i = 0; i < std::min<size_t>(3, by_waste.size()); ++i) {
            const kernel_summary& k = *by_waste[i];
            a.saving_j += k.idle_slots_j;
            t << (i ? "; " : " ") << k.name << " (";
            if (!k.op_class.empty()) t << k.op_class << ", ";
            modeling::append_percent(a.text, k.utilization);
            t << " of the device's slots busy";
            if (!k.bottleneck.empty()) t << ", " << k.bottleneck << "-bound";
            t << ") spends " << joules(k.idle_slots_j) << " of static energy on idle slots";
        }
        t << ": reshaping or batching them to fill the device would save up to "
          << joules(a.saving_j);
        items.push_back(std::move(a));
    }

    // Precision: the same work on a narrower floating-point precision the file prices.
    double compute_now = 0, compute_lower = 0, memory = 0;
    bool any_lower = false;
    for (const kernel_summary& k : kernels) {
        memory += k.memory_j;
        if (k.compute_lower_precision_j >= 0) {
            any_lower = true;
            compute_now += k.compute_j;
            compute_lower += k.compute_lower_precision_j;
        }
    }
    if (any_lower && compute_now > compute_lower) {
        advice_item a;
        a.kind = "precision";
        a.saving_key = "advice.precision_saving_j";
        // Half the bytes at every memory level when the tensors narrow as well.
        a.saving_j = (compute_now - compute_lower) + 0.5 * memory;
        advice_text{a.text} << "precision: a narrower floating-point precision on the device's "
                               "cheapest unit would cut compute energy from "
                            << joules(compute_now) << " to " << joules(compute_lower)
                            << " and, with half the bytes, memory energy by "
                            << joules(0.5 * memory) << ": about " << joules(a.saving_j) << " ("
                            << share(a.saving_j, energy_j) << ") before any speed-up";
        items.push_back(std::move(a));
    }

    // Fusion: elementwise and normalization kernels that only consume one producer's output.
    double fusion = 0;
    size_t fusible = 0;
    for (const kernel_summary& k : kernels)
        if (k.single_consumer_of_producer &&
            (k.op_class == "elementwise" || k.op_class == "normalization" ||
             k.op_class == "batch_norm")) {
            ++fusible;
            // Fused, the intermediate tensor stays on chip, the launch and the kernel's own
            // time (its static energy) go.
            fusion += k.memory_j + k.control_j + k.static_j;
        }
    if (fusible > 0 && fusion > 0.01 * energy_j) {
        advice_item a;
        a.kind = "fusion";
        a.saving_key = "advice.fusion_saving_j";
        a.saving_j = fusion;
        advice_text{a.text} << "fusion: " << fusible
                            << " elementwise or normalization kernel(s) run apart from the "
                               "kernel whose output they alone read; fusing them into it (a "
                               "compiling runtime, or fusion rules) would save about "
                            << joules(fusion) << " (" << share(fusion, energy_j) << ")";
        items.push_back(std::move(a));
    }

    // Memory-bound kernels: the time they wait on memory beyond their compute (more bandwidth,
    // or tensors kept closer, would shorten it) and the DRAM traffic itself (tensors kept on
    // chip by fusion or tiling would not move it).
    double memory_bound = 0, waiting = 0, dram = 0;
    size_t count = 0;
    for (const kernel_summary& k : kernels)
        if (k.bottleneck.substr(0, 7) == "memory:") {
            ++count;
            memory_bound += k.energy_j;
            waiting += k.memory_wait_j;
            dram += k.dram_j;
        }
    if (count > 0 && memory_bound > 0.1 * energy_j && waiting + dram > 0) {
        advice_item a;
        a.kind = "memory_bound";
        a.saving_key = "advice.memory_bound_saving_j";
        a.saving_j = waiting + dram;
        advice_text{a.text} << "memory-bound: " << count << " kernel(s) spend "
                            << joules(memory_bound) << " (" << share(memory_bound, energy_j)
                            << ") bound by memory, " << joules(waiting)
                            << " of it static energy while they wait on memory beyond their "
                               "compute, and "
                            << joules(dram)
                            << " moving bytes to and from DRAM: keeping their tensors on chip "
                               "(fusion, tiling) or a device with more bandwidth saves up to "
                            << joules(a.saving_j) << " (" << share(a.saving_j, energy_j) << ")";
        items.push_back(std::move(a));
    }

    std::stable_sort(items.begin(), items.end(), [](const advice_item& a, const advice_item& b) {
        return a.saving_j > b.saving_j;
    });
    return items;
}

}  // namespace nnergy::energy
