// SPDX-License-Identifier: Apache-2.0
/// \file memory_model.hpp
/// \brief The arithmetic of nnergy.estimator.memory, without host calls so it can be tested
/// alone: a liveness simulation of activation buffers over kernels in execution order, the
/// memory in use while each kernel runs, its peak, where the peak fits, and what three
/// well-known techniques would save. docs/report.md names the results.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nnergy::memory {

/// One activation buffer: a tensor that exists in memory between kernels (a graph input, a
/// graph output, or a tensor one kernel writes and another reads). Tensors a fused kernel both
/// produces and consumes never reach memory and have no buffer.
struct buffer {
    std::string_view name;             ///< a view into the host's graph, valid for one estimate
    double bytes = 0;                  ///< at the run's precision
    std::optional<uint32_t> producer;  ///< the kernel writing it; none for a graph input
    std::vector<uint32_t> readers;     ///< kernels reading it, other than its producer
    bool graph_output = false;         ///< stays live to the end of the pass
    bool batch_leading = false;        ///< its first dimension is the bound batch
};

/// What one kernel needs beside its inputs and outputs, live only while it runs.
struct kernel_input {
    std::string_view name;  ///< a view into the host's partition, valid for one estimate
    double workspace_bytes = 0;
    bool workspace_batch_leading = false;  ///< the workspace grows with the batch
};

struct model_input {
    std::vector<buffer> buffers;
    std::vector<kernel_input> kernels;  ///< in execution (topological) order
    double weight_bytes = 0;            ///< every initializer, at the run's precision
    double weight_int8_bytes = 0;       ///< the same with floating-point weights at 1 B/element
    double batch = 0;                   ///< the bound batch; 0 when unknown
};

struct kernel_memory {
    double live_activation_bytes = 0;  ///< buffers live while it runs, its inputs and outputs too
    double workspace_bytes = 0;
    double memory_in_use_bytes = 0;  ///< weights + live activations + workspace
    double io_bytes = 0;             ///< its own input and output buffers
};

struct model_result {
    std::vector<kernel_memory> kernels;
    double weight_bytes = 0;
    double peak_memory_bytes = 0;
    double peak_activation_bytes = 0;  ///< largest live_activation_bytes of any kernel
    double peak_workspace_bytes = 0;   ///< largest workspace of any kernel
    double activations_at_peak_bytes = 0;
    double workspace_at_peak_bytes = 0;
    std::optional<uint32_t> peak_kernel;  ///< the first kernel reaching the peak
    std::vector<size_t> live_at_peak;     ///< buffer indices, largest first
    /// weights + the largest (inputs + outputs + workspace) of one kernel: the least any
    /// schedule of these kernels needs with every weight resident.
    double recompute_floor_bytes = 0;
    double saving_int8_weights_bytes = 0;
    double saving_half_batch_bytes = 0;
    double saving_recompute_bytes = 0;
};

/// Kernel interval [first, last] during which a buffer is live, for `kernels` kernels.
inline std::pair<uint32_t, uint32_t> live_range(const buffer& b, size_t kernels) {
    const uint32_t end = kernels ? static_cast<uint32_t>(kernels - 1) : 0;
    uint32_t first = b.producer ? *b.producer : 0;
    uint32_t last = first;
    for (uint32_t r : b.readers) last = std::max(last, r);
    if (b.graph_output) last = end;
    return {std::min(first, end), std::min(last, end)};
}

namespace detail {
/// Live bytes per kernel (weights excluded), each buffer's bytes multiplied by scale(b).
template <class Scale>
std::vector<double> live_bytes(const model_input& in, Scale scale) {
    const size_t n = in.kernels.size();
    std::vector<double> delta(n + 1, 0.0);
    for (const buffer& b : in.buffers) {
        const auto [first, last] = live_range(b, n);
        const double bytes = b.bytes * scale(b);
        delta[first] += bytes;
        delta[last + 1] -= bytes;
    }
    std::vector<double> live(n, 0.0);
    double running = 0;
    for (size_t k = 0; k < n; ++k) {
        running += delta[k];
        live[k] = std::max(0.0, running);
    }
    return live;
}
}  // namespace detail

/// The batch factor of "half the batch": floor(B/2)/B, or nothing for a batch below 2.
inline std::optional<double> half_batch_factor(double batch) {
    if (!(batch >= 2) || !std::isfinite(batch)) return std::nullopt;
    return std::floor(batch / 2) / batch;
}

/// Runs the liveness simulation and derives every result.
inline model_result simulate(const model_input& in) {
    model_result r;
    const size_t n = in.kernels.size();
    r.weight_bytes = in.weight_bytes;
    r.saving_int8_weights_bytes = std::max(0.0, in.weight_bytes - in.weight_int8_bytes);
    r.kernels.resize(n);
    if (n == 0) {
        // Nothing runs: what stays in memory is the weights and the graph's inputs and outputs.
        r.peak_memory_bytes = in.weight_bytes;
        for (size_t i = 0; i < in.buffers.size(); ++i) {
            r.peak_memory_bytes += in.buffers[i].bytes;
            r.activations_at_peak_bytes += in.buffers[i].bytes;
            r.live_at_peak.push_back(i);
        }
        r.peak_activation_bytes = r.activations_at_peak_bytes;
        r.recompute_floor_bytes = r.peak_memory_bytes;
        return r;
    }

    const std::vector<double> live = detail::live_bytes(in, [](const buffer&) { return 1.0; });
    for (const buffer& b : in.buffers) {
        if (b.producer && *b.producer < n) r.kernels[*b.producer].io_bytes += b.bytes;
        uint32_t previous = UINT32_MAX;
        // The estimator gives readers in order; a hand-built input may not.
        std::vector<uint32_t> unsorted;
        const std::vector<uint32_t>* readers = &b.readers;
        if (!std::is_sorted(b.readers.begin(), b.readers.end())) {
            unsorted = b.readers;
            std::sort(unsorted.begin(), unsorted.end());
            readers = &unsorted;
        }
        for (uint32_t k : *readers) {
            if (k == previous || k >= n || (b.producer && k == *b.producer)) continue;
            r.kernels[k].io_bytes += b.bytes;
            previous = k;
        }
    }
    double floor_io = 0;
    for (size_t k = 0; k < n; ++k) {
        kernel_memory& m = r.kernels[k];
        m.live_activation_bytes = live[k];
        m.workspace_bytes = in.kernels[k].workspace_bytes;
        m.memory_in_use_bytes = in.weight_bytes + m.live_activation_bytes + m.workspace_bytes;
        r.peak_activation_bytes = std::max(r.peak_activation_bytes, m.live_activation_bytes);
        r.peak_workspace_bytes = std::max(r.peak_workspace_bytes, m.workspace_bytes);
        floor_io = std::max(floor_io, m.io_bytes + m.workspace_bytes);
        if (!r.peak_kernel || m.memory_in_use_bytes > r.peak_memory_bytes) {
            r.peak_kernel = static_cast<uint32_t>(k);
            r.peak_memory_bytes = m.memory_in_use_bytes;
        }
    }
    const uint32_t peak = *r.peak_kernel;
    r.activations_at_peak_bytes = r.kernels[peak].live_activation_bytes;
    r.workspace_at_peak_bytes = r.kernels[peak].workspace_bytes;
    for (size_t i = 0; i < in.buffers.size(); ++i) {
        const auto [first, last] = live_range(in.buffers[i], n);
        if (first <= peak && peak <= last) r.live_at_peak.push_back(i);
    }
    // Largest first; equal sizes in the order the buffers were given (tensor order).
    std::stable_sort(r.live_at_peak.begin(), r.live_at_peak.end(),
                     [&](size_t a, size_t b) { return in.buffers[a].bytes > in.buffers[b].bytes; });

    r.recompute_floor_bytes = in.weight_bytes + floor_io;
    r.saving_recompute_bytes = std::max(0.0, r.peak_memory_bytes - r.recompute_floor_bytes);

    if (const std::optional<double> f = half_batch_factor(in.batch)) {
        const std::vector<double> half =
            detail::live_bytes(in, [f](const buffer& b) { return b.batch_leading ? *f : 1.0; });
        double half_peak = 0;
        for (size_t k = 0; k < n; ++k) {
            const kernel_input& ki = in.kernels[k];
            const double ws = ki.workspace_bytes * (ki.workspace_batch_leading ? *f : 1.0);
            half_peak = std::max(half_peak, in.weight_bytes + half[k] + ws);
        }
        r.saving_half_batch_bytes = std::max(0.0, r.peak_memory_bytes - half_peak);
    }
    return r;
}

/// A memory level of the hardware with a capacity ("l2", "dram").
struct capacity_level {
    std::string name;
    double bytes = 0;
};

struct fit_verdict {
    /// The smallest level holding the peak ("l2", "device memory" for dram), "does not fit"
    /// when it exceeds device memory, "unknown" when it exceeds every level given and the
    /// device memory's capacity is not; empty without levels.
    std::string fits;
    std::vector<std::pair<std::string, bool>> fits_in;  ///< per level, smallest first
};

/// The name a level has in the verdict: DRAM is the device memory, HBM included.
inline std::string level_display_name(std::string_view level) {
    return level == "dram" ? std::string("device memory") : std::string(level);
}

/// `levels` smallest first (detail::capacity_levels() gives them so): a sweep asks for a verdict
/// per evaluation, and the levels are read and ordered once per hardware description.
inline fit_verdict fit(double peak_bytes, const std::vector<capacity_level>& levels) {
    fit_verdict v;
    if (levels.empty()) return v;
    bool device_memory_known = false;
    for (const capacity_level& l : levels) {
        const bool fits = peak_bytes <= l.bytes;
        v.fits_in.emplace_back(l.name, fits);
        if (fits && v.fits.empty()) v.fits = level_display_name(l.name);
        device_memory_known = device_memory_known || l.name == "dram";
    }
    if (v.fits.empty()) v.fits = device_memory_known ? "does not fit" : "unknown";
    return v;
}

/// "b (4096 B), a (1024 B)" for at most `limit` names, then "and N more".
inline std::string live_list(const model_input& in, const std::vector<size_t>& live,
                             size_t limit = 10) {
    std::string s;
    const size_t shown = std::min(limit, live.size());
    for (size_t i = 0; i < shown; ++i) {
        const buffer& b = in.buffers[live[i]];
        if (!s.empty()) s += ", ";
        s += b.name;
        s += " (";
        // Whole bytes; a fraction only for int4 tensors of odd element counts.
        const double whole = std::floor(b.bytes);
        s += whole == b.bytes ? std::to_string(static_cast<long long>(whole))
                              : std::to_string(b.bytes);
        s += " B)";
    }
    if (live.size() > shown) s += ", and " + std::to_string(live.size() - shown) + " more";
    return s;
}

}  // namespace nnergy::memory
