// SPDX-License-Identifier: Apache-2.0
/// \file trace_timeline.hpp
/// \brief The estimated timeline of one run, laid out for a trace viewer: host dispatch and
/// device kernel intervals, memory and power samples, all in microseconds; no host calls.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <vector>

namespace nnergy::trace {

/// What the report says about one kernel (seconds, joules, bytes, watts).
struct kernel_input {
    double latency_s = 0;
    std::optional<double> start_s;          ///< on the device, with a runtime
    std::optional<double> host_dispatch_s;  ///< eager and inline runtimes
    std::optional<double> energy_j;
    std::optional<double> power_w;
    std::optional<double> idle_power_j;  ///< energy.static.idle_power_j
    std::optional<double> memory_in_use_bytes;
};

/// What the report says about the run.
struct run_input {
    std::vector<kernel_input> kernels;
    std::optional<double> host_time_s;
    std::optional<double> weight_bytes;
};

struct interval {
    size_t kernel = 0;  ///< position in run_input::kernels
    double ts_us = 0;
    double dur_us = 0;
    double shifted_us = 0;  ///< how much later than the estimator's start it was placed
};

struct sample {
    double ts_us = 0;
    double value = 0;
};

struct timeline {
    std::vector<interval> host;    ///< empty without host dispatch times
    std::vector<interval> device;  ///< one per kernel, in kernel order
    std::vector<sample> memory;    ///< empty without memory_in_use_bytes
    std::vector<sample> power;     ///< empty without kernel energy
    bool inline_host = false;      ///< dispatch waited for the previous kernel (CPU runtimes)
};

namespace detail {

/// Appends a counter sample; a second sample at the same time replaces the first (the value
/// that holds from then on is the later one).
inline void add_sample(std::vector<sample>& samples, double ts_us, double value) {
    if (!samples.empty() && samples.back().ts_us == ts_us)
        samples.back().value = value;
    else
        samples.push_back({ts_us, value});
}

/// Two times equal up to rounding (the estimator adds the same terms in another order).
inline bool same_time(double a, double b) {
    return std::fabs(a - b) <= 1e-12 + 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

/// Seconds to microseconds, to the picosecond: the sums of the timeline's terms carry
/// rounding noise in the last digits (524.0000000000009) that no viewer can show.
inline double to_us(double s) { return std::round(s * 1e12) / 1e6; }

/// Places intervals in order on one track: each starts at its own time or at the previous
/// one's end, whichever is later, so complete events never overlap. The comparison is made on
/// the microsecond values written out, so ts + dur of one event never exceeds the next ts.
inline void place(std::vector<interval>& track, size_t kernel, double start_s, double dur_s) {
    const double wanted = to_us(start_s);
    const double prev_end = track.empty() ? 0.0 : track.back().ts_us + track.back().dur_us;
    const double ts = std::max(wanted, prev_end);
    // A shift below 10 ps is the rounding of the sums, not a change of the timeline.
    const double shifted = ts - wanted > 1e-5 ? ts - wanted : 0.0;
    track.push_back({kernel, ts, to_us(std::max(0.0, dur_s)), shifted});
}

}  // namespace detail

/// Lays out one run. Kernels without `start_s` run back to back from 0, in kernel order.
/// Host dispatch starts at the pass's fixed host cost (host_time_s minus the dispatches), one
/// dispatch after another; an inline runtime (the host runs each kernel itself) dispatches only
/// once the previous kernel ended, which is recognised when every launched kernel starts
/// exactly as its dispatch ends under that rule.
inline timeline lay_out(const run_input& run) {
    using namespace detail;
    timeline t;
    const size_t n = run.kernels.size();

    // Device: the estimator's start times, else back to back.
    double cursor = 0;
    for (size_t k = 0; k < n; ++k) {
        const kernel_input& ki = run.kernels[k];
        const double start = ki.start_s.value_or(cursor);
        place(t.device, k, start, ki.latency_s);
        cursor = start + std::max(0.0, ki.latency_s);
    }

    // Host dispatch, only where the runtime reports it.
    bool any_dispatch = false;
    double dispatch_sum = 0;
    for (const kernel_input& ki : run.kernels) {
        if (ki.host_dispatch_s) any_dispatch = true;
        dispatch_sum += std::max(0.0, ki.host_dispatch_s.value_or(0));
    }
    if (any_dispatch) {
        const double first = std::max(0.0, run.host_time_s.value_or(dispatch_sum) - dispatch_sum);
        // Inline layout: each dispatch waits for the device's previous kernel.
        std::vector<double> inline_start(n);
        double host = first, device = 0;
        bool fits_inline = true, launches = false;
        for (size_t k = 0; k < n; ++k) {
            const kernel_input& ki = run.kernels[k];
            const double d = std::max(0.0, ki.host_dispatch_s.value_or(0));
            host = std::max(host, device);
            inline_start[k] = host;
            host += d;
            if (ki.latency_s > 0 && ki.start_s) {
                launches = true;
                if (!same_time(*ki.start_s, host)) fits_inline = false;
                device = *ki.start_s + ki.latency_s;
            }
        }
        t.inline_host = fits_inline && launches;
        double h = first;
        for (size_t k = 0; k < n; ++k) {
            const double d = std::max(0.0, run.kernels[k].host_dispatch_s.value_or(0));
            const double start = t.inline_host ? inline_start[k] : h;
            h = start + d;
            if (d > 0) place(t.host, k, start, d);
        }
    }

    // Memory: the level while each kernel runs, then the weights alone once the pass is over.
    bool any_memory = false;
    for (const interval& iv : t.device)
        if (const auto m = run.kernels[iv.kernel].memory_in_use_bytes) {
            add_sample(t.memory, iv.ts_us, std::max(0.0, *m));
            any_memory = true;
        }
    const double end_us = t.device.empty() ? 0.0 : t.device.back().ts_us + t.device.back().dur_us;
    if (any_memory && run.weight_bytes)
        add_sample(t.memory, end_us, std::max(0.0, *run.weight_bytes));

    // Power: each kernel's average over its time; between kernels and after the last one the
    // device's idle power, recovered from the energy estimator's static idle term.
    std::optional<double> idle_w;
    for (const kernel_input& ki : run.kernels)
        if (ki.idle_power_j && ki.latency_s > 0) {
            idle_w = *ki.idle_power_j / ki.latency_s;
            break;
        }
    bool any_power = false;
    for (size_t i = 0; i < t.device.size(); ++i) {
        const interval& iv = t.device[i];
        const kernel_input& ki = run.kernels[iv.kernel];
        if (iv.dur_us <= 0) continue;
        std::optional<double> w = ki.power_w;
        if (!w && ki.energy_j && ki.latency_s > 0) w = *ki.energy_j / ki.latency_s;
        if (!w || !std::isfinite(*w)) continue;
        any_power = true;
        add_sample(t.power, iv.ts_us, std::max(0.0, *w));
        // Idle until the next kernel with time starts, if it does not start right away.
        double next = -1;
        for (size_t j = i + 1; j < t.device.size(); ++j)
            if (t.device[j].dur_us > 0) {
                next = t.device[j].ts_us;
                break;
            }
        const double end = iv.ts_us + iv.dur_us;
        if (next < 0 || !same_time(next * 1e-6, end * 1e-6))
            add_sample(t.power, end, std::max(0.0, idle_w.value_or(0)));
    }
    if (!any_power) t.power.clear();
    return t;
}

}  // namespace nnergy::trace
