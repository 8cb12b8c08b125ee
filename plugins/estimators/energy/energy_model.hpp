// SPDX-License-Identifier: Apache-2.0
/// \file energy_model.hpp
/// \brief The energy of one kernel and of a whole run, without host calls so it can be tested
/// alone (docs/hardware.md, "Energy"; docs/report.md, "Energy keys").
///
/// An architecture counts what a kernel does as events (FLOPs per execution unit and
/// precision, bytes per memory level, launches); the hardware file prices each one
/// (energy.<category>.<event>). Static power is drawn for as long as the kernel runs: the
/// device's idle power, plus the static power of the units the kernel keeps busy and of the
/// clocked-but-idle units that power gating does not switch off. A kernel whose power would
/// exceed the device's limit is stretched as the chip would throttle: its dynamic energy stays,
/// its time grows until its power meets the limit.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nnergy/modeling/text.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nnergy::energy {

/// Where an energy coefficient comes from (docs/hardware.md): measured on the part, fitted to
/// measurements of it, from a datasheet, scaled from another part (process or clock), or
/// derived from first principles.
inline bool is_energy_provenance(std::string_view p) noexcept {
    return p == "measured" || p == "fitted" || p == "datasheet" || p == "scaled" ||
           p == "theoretical";
}

/// One priced event: energy.<category>.<event> in joules per count.
struct coefficient {
    std::string category;
    std::string event;
    double joules = 0;
    std::string provenance;  ///< empty when the file gives none
};

/// The [energy] table of a hardware file, checked.
struct energy_table {
    std::string hardware;  ///< "hardware 'h100-sxm5' (configs/hardware/h100-sxm5.toml)"
    bool present = false;  ///< the file has an [energy] table
    double idle_power_w = 0;
    double active_power_w = 0;
    double power_gating = 0;   ///< share of an idle unit's active power that gating saves
    double power_limit_w = 0;  ///< 0: no limit
    std::vector<coefficient> coefficients;
    /// energy.fused.<kind>: the share of a kernel's data movement and time an op of that kind
    /// costs when fused next to the kernel's anchor (fused_ops.hpp).
    std::vector<std::pair<std::string, double>> fused_modifiers;

    /// The modifier of a fused op kind; 1 (an equal share) when the file gives none.
    double fused_modifier(std::string_view kind) const noexcept {
        for (const auto& [k, v] : fused_modifiers)
            if (k == kind) return v;
        return 1.0;
    }

    /// The coefficient of an event: energy.<category>.<event>, or for an event named
    /// "<unit>.<precision>" the unit's own energy.<category>.<unit>.
    const coefficient* find(std::string_view category, std::string_view event) const noexcept {
        for (const coefficient& c : coefficients)
            if (c.category == category && c.event == event) return &c;
        const size_t dot = event.rfind('.');
        if (dot != std::string_view::npos) return find(category, event.substr(0, dot));
        return nullptr;
    }

    /// Memory levels an energy.memory.<level> may name besides the file's own [memory.<level>]
    /// tables: the levels inside the chip every class architecture counts.
    static bool is_architectural_level(std::string_view level) noexcept {
        for (std::string_view l :
             {"register_file", "l1", "shared", "l2", "l3", "dram", "noc", "host_link",
              "unified_buffer", "accumulator", "weight_load", "tile_sram", "on_chip"})
            if (l == level) return true;
        return false;
    }

    /// Reads energy.* from a flattened hardware description (quantities in SI units: W, J, J/B,
    /// J/FLOP). Throws sdk::error naming the file, line and key of a bad entry.
    static energy_table from_config(const sdk::config_view& hw, std::string hardware_context) {
        energy_table t;
        t.hardware = std::move(hardware_context);
        constexpr std::string_view prefix = "energy.";
        std::vector<std::string> levels;
        for (const nnergy_named_value& v : hw) {
            const std::string_view key = sdk::from_sv(v.name);
            if (key.substr(0, 7) == "memory.") {
                const size_t end = key.find('.', 7);
                if (end != std::string_view::npos) levels.emplace_back(key.substr(7, end - 7));
            }
        }
        for (const nnergy_named_value& v : hw) {
            const std::string_view key = sdk::from_sv(v.name);
            if (key.substr(0, prefix.size()) != prefix) continue;
            t.present = true;
            const std::string where = sdk::config_view::where(v);
            const std::string_view rest = key.substr(prefix.size());
            const size_t dot = rest.find('.');
            if (dot == std::string_view::npos)
                throw sdk::error(where + ": '" + std::string(key) +
                                     "': energy keys are energy.<category>.<event> (compute, "
                                     "memory, control, static or a vendor's category)",
                                 NNERGY_CODE_INVALID_ARGUMENT);
            const std::string category(rest.substr(0, dot));
            std::string event(rest.substr(dot + 1));
            constexpr std::string_view prov_suffix = "_provenance";
            if (event.size() > prov_suffix.size() &&
                event.compare(event.size() - prov_suffix.size(), prov_suffix.size(), prov_suffix) ==
                    0) {
                const std::string_view p = sdk::from_sv(v.string_value);
                if (v.kind != NNERGY_VALUE_STRING || !is_energy_provenance(p))
                    throw sdk::error(where + ": '" + std::string(key) +
                                         "' must be \"measured\", \"fitted\", \"datasheet\", "
                                         "\"scaled\" or \"theoretical\"",
                                     NNERGY_CODE_INVALID_ARGUMENT);
                continue;  // attached below, once every coefficient is read
            }
            if (v.kind != NNERGY_VALUE_FLOAT && v.kind != NNERGY_VALUE_INT)
                throw sdk::error(where + ": '" + std::string(key) +
                                     "' must be a quantity { value, unit, source }",
                                 NNERGY_CODE_INVALID_ARGUMENT);
            const double x = v.float_value;
            if (!std::isfinite(x) || x < 0)
                throw sdk::error(where + ": '" + std::string(key) +
                                     "' must be a finite non-negative energy or power, got " +
                                     modeling::format("%g", x) +
                                     " (in SI units: J, J/B, J/FLOP or W)",
                                 NNERGY_CODE_INVALID_ARGUMENT);
            if (category == "fused") {
                if (x > 1)
                    throw sdk::error(where + ": '" + std::string(key) +
                                         "' is a fraction in [0, 1] (unit \"%\" or \"1\")",
                                     NNERGY_CODE_INVALID_ARGUMENT);
                t.fused_modifiers.emplace_back(std::move(event), x);
                continue;
            }
            if (category == "static") {
                if (event == "idle_power")
                    t.idle_power_w = x;
                else if (event == "active_power")
                    t.active_power_w = x;
                else if (event == "power_gating") {
                    if (x > 1)
                        throw sdk::error(where + ": '" + std::string(key) +
                                             "' is a fraction in [0, 1] (unit \"%\" or \"1\")",
                                         NNERGY_CODE_INVALID_ARGUMENT);
                    t.power_gating = x;
                } else if (event == "power_limit")
                    t.power_limit_w = x;
                else
                    throw sdk::error(where + ": unknown key '" + std::string(key) +
                                         "' (energy.static has idle_power, active_power, "
                                         "power_gating and power_limit)",
                                     NNERGY_CODE_INVALID_ARGUMENT);
                continue;
            }
            if (category == "memory" && !is_architectural_level(event) &&
                std::find(levels.begin(), levels.end(), event) == levels.end())
                throw sdk::error(where + ": '" + std::string(key) + "': unknown memory level '" +
                                     event +
                                     "' (a [memory.<level>] of this file, or one of "
                                     "register_file, l1, shared, l2, l3, dram, noc, host_link, "
                                     "unified_buffer, accumulator, weight_load, tile_sram, "
                                     "on_chip)",
                                 NNERGY_CODE_INVALID_ARGUMENT);
            t.coefficients.push_back({category, std::move(event), x, {}});
        }
        for (coefficient& c : t.coefficients)
            if (const auto p = hw.string("energy." + c.category + "." + c.event + "_provenance"))
                c.provenance = *p;
        if (t.power_limit_w == 0)
            if (const auto tdp = hw.number("power.limit").has_value() ? hw.number("power.limit")
                                                                      : hw.number("power.tdp"))
                t.power_limit_w = *tdp;
        // A device must be able to keep every unit busy within its limit: throttling slows the
        // dynamic work down, it cannot take static power below the limit.
        if (t.present && t.power_limit_w > 0 &&
            t.power_limit_w <= t.idle_power_w + t.active_power_w)
            throw sdk::error(t.hardware + ": the power limit (" +
                                 modeling::format("%g", t.power_limit_w) +
                                 " W) must exceed energy.static.idle_power + active_power (" +
                                 modeling::format("%g", t.idle_power_w) + " + " +
                                 modeling::format("%g", t.active_power_w) +
                                 " W: the static power with every unit busy)",
                             NNERGY_CODE_INVALID_ARGUMENT);
        return t;
    }
};

/// One event of a kernel, as the architecture counted it.
struct kernel_event {
    std::string_view category;
    std::string_view event;
    double count = 0;
    /// Its coefficient when the caller has already looked it up (nullptr: look it up).
    const coefficient* price = nullptr;
    uint32_t slot = UINT32_MAX;  ///< the caller's own number for the event, copied to its entry
};

/// What the energy of one kernel depends on.
struct kernel_input {
    std::string_view name;  ///< the kernel's name, for messages
    uint32_t index = 0;     ///< its number
    double latency_s = 0;   ///< from the latency estimator
    double overhead_s = 0;  ///< the part of it that is fixed per-kernel time (launch_overhead_s)
    double units_allocated = 0;
    double units_available = 0;  ///< 0: unknown (every unit counted busy)
    double ideal_time_s = 0;     ///< the kernel at peak rate and bandwidth (under-utilization)
    std::vector<kernel_event> events;
};

/// One line of a kernel's breakdown: energy.<category>.<event>. The names point into the
/// kernel's mapping (or are literals), which outlives the estimate.
struct breakdown_entry {
    std::string_view category;
    std::string_view event;
    double joules = 0;
    uint32_t slot = UINT32_MAX;  ///< the event's kernel_event::slot; UINT32_MAX for static ones
};

struct kernel_energy {
    std::vector<breakdown_entry> entries;  ///< dynamic events, then the static ones
    double dynamic_j = 0;
    double static_j = 0;
    double energy_j = 0;
    double latency_s = 0;  ///< stretched when throttled
    double power_w = 0;
    double static_power_w = 0;
    double underutilization_j = 0;
    bool throttled = false;
};

/// Writes breakdown line `i` member by member in place: a temporary moved in is read back in
/// 16-byte halves right after its members were stored in 8- and 4-byte pieces, which the
/// processor cannot forward from its store buffer (a stall on every line of every kernel).
inline void set_entry(kernel_energy& e, size_t i, std::string_view category, std::string_view event,
                      double joules, uint32_t slot = UINT32_MAX) {
    breakdown_entry& b = e.entries[i];
    b.category = category;
    b.event = event;
    b.joules = joules;
    b.slot = slot;
}

/// The energy of one kernel. Writes into `e`, whose vectors keep their buffers when reused.
inline void estimate_kernel(const energy_table& t, const kernel_input& k, kernel_energy& e) {
    // The kernel's events, then its three static lines.
    const size_t events = k.events.size();
    e.entries.resize(events + 3);
    e.dynamic_j = e.static_j = e.energy_j = e.power_w = e.static_power_w = 0;
    e.underutilization_j = 0;
    e.throttled = false;
    e.latency_s = std::max(0.0, k.latency_s);
    for (size_t i = 0; i < events; ++i) {
        const kernel_event& ev = k.events[i];
        const coefficient* c = ev.price ? ev.price : t.find(ev.category, ev.event);
        if (!c)
            throw sdk::error(
                t.hardware + ": kernel '" + std::string(k.name) + "' (#" + std::to_string(k.index) +
                    ") counts " + std::string(ev.category) + " event '" + std::string(ev.event) +
                    "' but the file prices no energy." + std::string(ev.category) + "." +
                    std::string(ev.event) + " (add it as { value, unit, source } to the [energy." +
                    std::string(ev.category) + "] table)",
                NNERGY_CODE_NOT_FOUND);
        const double j = ev.count * c->joules;
        set_entry(e, i, ev.category, ev.event, j, ev.slot);
        e.dynamic_j += j;
    }
    // Static power while the kernel runs: busy units, and clocked-but-idle ones unless gated.
    // Units are busy while the kernel works; over its fixed per-kernel time (launch_overhead_s:
    // ramp-up, tail, set-up) every unit waits, clocked but idle.
    const double busy =
        k.units_available > 0 ? std::clamp(k.units_allocated / k.units_available, 0.0, 1.0) : 1.0;
    const double busy_units_w = t.active_power_w * busy;
    const double idle_units_w = t.active_power_w * (1 - busy) * (1 - t.power_gating);
    const double waiting_units_w = t.active_power_w * (1 - t.power_gating);
    const double working_share =
        e.latency_s > 0 ? 1 - std::clamp(k.overhead_s, 0.0, e.latency_s) / e.latency_s : 1.0;
    e.static_power_w = t.idle_power_w + (busy_units_w + idle_units_w) * working_share +
                       waiting_units_w * (1 - working_share);
    if (e.latency_s > 0 && t.power_limit_w > 0 &&
        e.dynamic_j / e.latency_s + e.static_power_w > t.power_limit_w) {
        // Throttled: the dynamic work stays, the time grows until the power meets the limit.
        e.latency_s = e.dynamic_j / (t.power_limit_w - e.static_power_w);
        e.throttled = true;
    }
    const double working_s = e.latency_s * working_share;
    const double idle_j = t.idle_power_w * e.latency_s;
    const double busy_j = busy_units_w * working_s;
    const double clocked_j = idle_units_w * working_s + waiting_units_w * (e.latency_s - working_s);
    set_entry(e, events, "static", "idle_power", idle_j);
    set_entry(e, events + 1, "static", "busy_units", busy_j);
    set_entry(e, events + 2, "static", "clocked_idle_units", clocked_j);
    e.static_j = idle_j + busy_j + clocked_j;
    e.energy_j = e.dynamic_j + e.static_j;
    e.power_w = e.latency_s > 0 ? e.energy_j / e.latency_s : 0.0;
    // Static energy spent beyond what the kernel would need at peak rate and bandwidth.
    const double ideal = std::clamp(k.ideal_time_s, 0.0, e.latency_s);
    e.underutilization_j = e.static_power_w * (e.latency_s - ideal);
}

/// Kernels (their indices) by energy-delay product, largest first, and how many of them make
/// each share of the sum.
struct edp_ranking {
    std::vector<uint32_t> order;
    std::vector<double> cumulative_share;             ///< by position in `order`
    std::vector<std::pair<double, uint32_t>> by_key;  ///< the sort's room, kept for the next
    size_t kernels_for(double share) const noexcept {
        for (size_t i = 0; i < cumulative_share.size(); ++i)
            if (cumulative_share[i] >= share - 1e-12) return i + 1;
        return cumulative_share.size();
    }
};

/// Ranks into `r`, reusing its storage (a sweep ranks every evaluation).
inline void rank_by_edp(const std::vector<double>& edp, edp_ranking& r) {
    // The largest first, equal ones in kernel order: what a stable sort gives, without the
    // buffer std::stable_sort allocates on every call. Sorted as (-edp, kernel) pairs; a NaN
    // (never in a finished estimate) ranks last.
    r.by_key.resize(edp.size());
    for (uint32_t i = 0; i < edp.size(); ++i)
        r.by_key[i] = {std::isnan(edp[i]) ? std::numeric_limits<double>::infinity() : -edp[i], i};
    std::sort(r.by_key.begin(), r.by_key.end());
    r.order.resize(edp.size());
    for (size_t i = 0; i < edp.size(); ++i) r.order[i] = r.by_key[i].second;
    double sum = 0;
    for (double x : edp) sum += x;
    double run = 0;
    r.cumulative_share.clear();
    r.cumulative_share.reserve(edp.size());
    for (uint32_t k : r.order) {
        run += edp[k];
        r.cumulative_share.push_back(sum > 0 ? run / sum : 1.0);
    }
}

inline edp_ranking rank_by_edp(const std::vector<double>& edp) {
    edp_ranking r;
    rank_by_edp(edp, r);
    return r;
}

/// The model's latency once throttled kernels are stretched by `stretch_s` in all: a
/// device-bound run grows by the stretch, a host-bound one only by what the device's idle time
/// cannot absorb.
inline double throttled_latency(double latency_s, double stretch_s, bool host_bound,
                                double device_idle_s) {
    if (stretch_s <= 0) return latency_s;
    return latency_s + (host_bound ? std::max(0.0, stretch_s - device_idle_s) : stretch_s);
}

/// One kernel of the device timeline the latency estimator laid out: when it starts, how long
/// it ran then, and how long it runs once throttled.
struct timed_kernel {
    double start_s = 0;
    double latency_s = 0;            ///< the latency estimator's
    double throttled_latency_s = 0;  ///< this estimator's (equal unless stretched)
};

/// Moves the kernels after a throttled one later, as far as its stretch still reaches them,
/// and returns the pass's new latency. A gap before a kernel that is longer than the run's
/// shortest gap is the device waiting for the host: a stretch shrinks into it instead of moving
/// the kernel. The shortest gap is the runtime's own launch gap, which no stretch removes.
/// `latency_s` is the pass's latency before the stretch; a host-bound pass ends when the host
/// does, or when the stretched device does if that is later.
inline double relay_throttled(std::vector<timed_kernel>& kernels, double latency_s,
                              bool host_bound) {
    double shortest_gap = -1, previous_end = -1;
    for (const timed_kernel& k : kernels) {
        if (k.latency_s <= 0) continue;
        if (previous_end >= 0) {
            const double gap = std::max(0.0, k.start_s - previous_end);
            shortest_gap = shortest_gap < 0 ? gap : std::min(shortest_gap, gap);
        }
        previous_end = k.start_s + k.latency_s;
    }
    shortest_gap = std::max(0.0, shortest_gap);
    double shift = 0, device_end = 0, moved_end = 0;
    previous_end = -1;
    for (timed_kernel& k : kernels) {
        if (k.latency_s <= 0 && k.throttled_latency_s <= 0) {
            // A view runs no kernel: it stays where the device is.
            k.start_s += shift;
            continue;
        }
        if (previous_end >= 0)
            shift = std::max(0.0, shift - std::max(0.0, k.start_s - previous_end - shortest_gap));
        previous_end = k.start_s + k.latency_s;
        device_end = std::max(device_end, previous_end);
        k.start_s += shift;
        shift += k.throttled_latency_s - k.latency_s;
        moved_end = std::max(moved_end, k.start_s + k.throttled_latency_s);
    }
    const double tail = std::max(0.0, latency_s - device_end);
    return host_bound ? std::max(latency_s, moved_end) : moved_end + tail;
}

}  // namespace nnergy::energy
