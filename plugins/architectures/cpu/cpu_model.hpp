// SPDX-License-Identifier: Apache-2.0
/// \file cpu_model.hpp
/// \brief The stored-program (CPU) architecture model, without host calls so it can be tested
/// alone.
///
/// A kernel runs on the precision's matrix unit (AVX-512 FMA, AMX, SME) when it has
/// multiply-accumulates that suit it, else on the vector unit. Its outputs are split over the
/// cores in blocks of the unit's width; a short reduction runs below the unit's rate. Its bytes
/// come from the smallest cache level that holds its working set, else from DRAM. Every kernel
/// pays a fixed time per op class (parallel-region fork/join, setup) and, when the runtime
/// reorders weights on every call (eager frameworks), the time to repack its weights. The
/// constants are data (docs/hardware.md, [cpu.kernels.<class>]), each with its provenance.
#pragma once

#include <algorithm>
#include <cmath>
#include <nnergy/modeling.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy::cpu {

using modeling::append_number;
using modeling::append_percent;
using modeling::append_seconds;
using modeling::append_short_number;
using modeling::class_name;
using modeling::classify;
using modeling::execution_unit;
using modeling::hardware_model;
using modeling::op_class;
using modeling::precision_units;
using modeling::provenance;

/// Per op class behaviour of one CPU ([cpu.kernels.<class>], overridden per unit precision).
struct class_params {
    double fixed_time_s = 0;  ///< time every kernel of the class pays (fork/join, setup)
    double efficiency = 1;    ///< scales the unit's efficiency
    double k_half = 0;        ///< reduction depth at which the unit reaches half its rate
    /// Rate at which a runtime that repacks weights on every call reorders (and casts) them,
    /// in bytes of packed weights per second (0: free).
    double weight_prep_bandwidth = 0;
    double memory_efficiency = 1;  ///< scales every memory level's bandwidth
    provenance source = provenance::theoretical;
};

/// A cache level that can serve a kernel's traffic: it needs a capacity and a bandwidth.
struct cache_level {
    std::string name;      ///< "l2", as in [memory.l2]
    double capacity = 0;   ///< bytes, the whole chip
    double bandwidth = 0;  ///< B/s, the whole chip
    provenance source = provenance::theoretical;
    /// Private to each core (L1D, L2): the threads' cores bring their own, and their misses
    /// are what memory.per_core_bandwidth bounds.
    bool per_core = false;
};

/// The facts of a convolution that decide which library an eager framework runs it with.
struct conv_geometry {
    double batch = 1;
    double input_elements = 0;  ///< all of the input's elements (N x C x H x W)
    double kernel_h = 1, kernel_w = 1;
    double groups = 1;
    bool strided = false, dilated = false, padded = false;

    bool pointwise() const noexcept { return kernel_h == 1 && kernel_w == 1; }
    /// The native path unfolds the input into columns unless the convolution is a plain GEMM.
    bool needs_columns() const noexcept { return !pointwise() || strided || dilated || padded; }
};

/// The convolutions an eager framework leaves to its native path (im2col + the BLAS GEMM)
/// instead of its convolution library ([convolution.native] of the runtime; PyTorch: those
/// oneDNN does not take). A convolution runs natively in `precision` when it is ungrouped, not
/// wider and taller than `max_kernel_extent`, and both its batch and its input are small; or,
/// on one thread, when it is an unstrided, undilated 1x1 convolution of a small batch.
struct native_conv_rule {
    std::string precision;  ///< empty: every convolution goes to the library
    double max_batch = 0;
    double max_input_elements = 0;
    double max_kernel_extent = 0;
    double single_thread_pointwise_max_batch = -1;  ///< below 0: no such case

    bool applies(const conv_geometry& g, std::string_view compute_precision,
                 double threads) const noexcept {
        if (precision.empty() || compute_precision != precision) return false;
        if (threads <= 1 && g.pointwise() && !g.strided && !g.dilated &&
            g.batch <= single_thread_pointwise_max_batch)
            return true;
        const bool large_kernel = g.kernel_h > max_kernel_extent && g.kernel_w > max_kernel_extent;
        return g.groups <= 1 && !large_kernel && g.batch <= max_batch &&
               g.input_elements <= max_input_elements;
    }
};

/// What the runtime does that changes a CPU kernel's cost.
struct cpu_runtime {
    /// Eager frameworks reorder convolution and GEMM weights into the unit's blocked layout on
    /// every call ([weights] prepack = "per_call"); compiled runtimes do it once.
    bool repack_weights_per_call = false;
    /// Mixed-precision eager frameworks (PyTorch's autocast) cast the weights of every matrix
    /// op from their stored type to the compute precision on every call ([weights] cast =
    /// "per_call"); a model stored in the compute precision casts nothing.
    bool cast_weights_per_call = false;
    native_conv_rule native_conv;
    /// Work items (elements) above which the runtime splits an op over its threads
    /// ([parallel] grain; PyTorch's at::internal::GRAIN_SIZE); 0: every op is split.
    double parallel_grain = 0;
    /// Bytes above which an op's output is fresh memory on every call ([allocator] fresh_above;
    /// 0: never): the C library maps allocations above its mmap threshold anew each time and
    /// unmaps them when they are freed, so every page of such an output is faulted in and
    /// zeroed by the kernel when the op first writes it.
    double fresh_output_threshold = 0;
};

/// Physical cores that `threads` software threads keep busy on `units` hardware threads of
/// `smt` per core. An operating system that knows which hardware threads share a core gives
/// each thread a core of its own first ("spread"); one that does not (a virtual machine whose
/// vCPUs hide their siblings) places them as if at random, so that two may share a core while
/// another idles: the expected count of cores holding at least one of them.
inline double busy_cores(double threads, double units, double smt, bool placement_unaware) {
    units = std::max(1.0, units);
    smt = std::clamp(smt, 1.0, units);
    threads = std::clamp(std::round(threads), 1.0, units);
    const double cores = units / smt;
    if (smt <= 1) return threads;
    if (!placement_unaware) return std::min(threads, cores);
    // Probability that a given core holds none of the threads: C(units - smt, threads) /
    // C(units, threads).
    double none = 1;
    for (double i = 0; i < threads; ++i) none *= std::max(0.0, units - smt - i) / (units - i);
    return cores * (1 - none);
}

struct cpu_hardware {
    hardware_model base;
    std::vector<cache_level> caches;  ///< smallest first; only levels with a bandwidth
    modeling::class_table<class_params> kernels;
    /// Bytes of stored weights a per-call cast reads per second (cpu.weight_cast_bandwidth;
    /// 0: free).
    double weight_cast_bandwidth = 0;
    /// Threads the runtime runs ops on (cpu.threads; default all of compute.units, the
    /// hardware threads the peaks and bandwidths of the file were measured or rated with).
    double threads = 1;
    double smt = 1;                  ///< hardware threads per core (cpu.smt)
    bool placement_unaware = false;  ///< cpu.thread_placement = "unaware"
    /// The share of the file's compute peaks `threads` reach: the cores they keep busy over
    /// the cores all units keep busy.
    double compute_share = 1;
    /// What the busy cores can stream at most, each at memory.per_core_bandwidth (infinite
    /// without one): a core's outstanding cache-line fills bound it, whatever the level.
    double core_bandwidth_limit = HUGE_VAL;
    /// Waking the thread team and meeting at its closing barrier, paid by every op split over
    /// more than one thread (cpu.fork_join_time; 0: free).
    double fork_join_time_s = 0;
    /// Bytes of fresh memory one core faults in and zeroes per second on its first touch
    /// (cpu.first_touch_bandwidth; 0: free), and the share of that time more cores do not
    /// shorten (cpu.first_touch_serial: the kernel's page-table and allocator locks).
    double first_touch_bandwidth = 0;
    double first_touch_serial = 0;
    double cores_busy = 1;  ///< cores the threads keep busy (busy_cores)

    const class_params& params(op_class c, std::string_view precision) const {
        return kernels.params(c, precision);
    }

    static cpu_hardware from_config(const sdk::config_view& hw) {
        cpu_hardware c;
        c.base = hardware_model::from_config(hw);
        read_threads(hw, c);
        for (const char* level : {"l1d", "l2", "l3"}) {
            const std::string base = std::string("memory.") + level + ".";
            cache_level l;
            l.name = level;
            l.per_core = std::string_view(level) != "l3";
            // Per-core caches of the cores the threads run on.
            l.capacity = per_chip(hw, base + "capacity", c.threads);
            // A private level's chip-wide rate was had on all cores: its busy cores' share.
            const double chip_rate = hardware_model::optional_number(hw, base + "bandwidth", 0, 0);
            l.bandwidth = chip_rate > 0 ? chip_rate * (l.per_core ? c.compute_share : 1.0)
                                        : per_chip(hw, base + "bandwidth", c.threads);
            l.source = hardware_model::read_provenance(hw, base + "bandwidth_provenance", l.source);
            if (l.capacity > 0 && l.bandwidth > 0) c.caches.push_back(std::move(l));
        }
        c.kernels = modeling::read_class_table<class_params>(hw, "cpu", c.base, read_params);
        c.weight_cast_bandwidth =
            hardware_model::optional_number(hw, "cpu.weight_cast_bandwidth", 0, 0);
        c.fork_join_time_s = hardware_model::optional_number(hw, "cpu.fork_join_time", 0, 0);
        c.first_touch_bandwidth =
            hardware_model::optional_number(hw, "cpu.first_touch_bandwidth", 0, 0);
        c.first_touch_serial = hardware_model::optional_number(hw, "cpu.first_touch_serial", 0, 0);
        if (c.first_touch_serial > 1)
            throw sdk::error(sdk::config_view::where(*hw.find("cpu.first_touch_serial")) +
                                 ": 'cpu.first_touch_serial' is a share of the time, at most 100 %",
                             NNERGY_CODE_INVALID_ARGUMENT);
        return c;
    }

private:
    static void read_threads(const sdk::config_view& hw, cpu_hardware& c) {
        const double units = c.base.units;
        c.threads = hardware_model::optional_number(hw, "cpu.threads", units, 1);
        // Without the key the threads are compute.units, which is a whole count.
        if (const nnergy_named_value* key = hw.find("cpu.threads");
            key && (c.threads > units || c.threads != std::round(c.threads)))
            throw sdk::error(sdk::config_view::where(*key) +
                                 ": 'cpu.threads' must be a whole count of at most compute.units",
                             NNERGY_CODE_INVALID_ARGUMENT);
        c.smt = hardware_model::optional_number(hw, "cpu.smt", 1, 1);
        if (c.smt > units || c.smt != std::round(c.smt))
            throw sdk::error(sdk::config_view::where(*hw.find("cpu.smt")) +
                                 ": 'cpu.smt' (hardware threads per core) must be a whole count "
                                 "of at most compute.units",
                             NNERGY_CODE_INVALID_ARGUMENT);
        if (const std::optional<std::string> p = hw.string("cpu.thread_placement")) {
            if (*p != "spread" && *p != "unaware")
                throw sdk::error(sdk::config_view::where(*hw.find("cpu.thread_placement")) +
                                     ": 'cpu.thread_placement' must be \"spread\" or "
                                     "\"unaware\", got \"" +
                                     *p + "\"",
                                 NNERGY_CODE_INVALID_ARGUMENT);
            c.placement_unaware = *p == "unaware";
        }
        const double busy = busy_cores(c.threads, units, c.smt, c.placement_unaware);
        c.cores_busy = busy;
        c.compute_share = busy / busy_cores(units, units, c.smt, c.placement_unaware);
        const double per_core =
            hardware_model::optional_number(hw, "memory.per_core_bandwidth", 0, 0);
        if (per_core > 0) c.core_bandwidth_limit = busy * per_core;
    }

    /// `<key>` for the chip, or `<key>_per_unit` x units (per-core caches).
    static double per_chip(const sdk::config_view& hw, const std::string& key, double units) {
        const double chip = hardware_model::optional_number(hw, key, 0, 0);
        if (chip > 0) return chip;
        return hardware_model::optional_number(hw, key + "_per_unit", 0, 0) * units;
    }
    static class_params read_params(const sdk::config_view& hw, const std::string& base,
                                    const class_params& fallback) {
        class_params p = fallback;
        p.fixed_time_s =
            hardware_model::optional_number(hw, base + "fixed_time", p.fixed_time_s, 0);
        p.k_half = hardware_model::optional_number(hw, base + "k_half", p.k_half, 0);
        p.weight_prep_bandwidth = hardware_model::optional_number(
            hw, base + "weight_prep_bandwidth", p.weight_prep_bandwidth, 0);
        p.efficiency = hardware_model::optional_fraction(hw, base + "efficiency", p.efficiency);
        p.memory_efficiency =
            hardware_model::optional_fraction(hw, base + "memory_efficiency", p.memory_efficiency);
        p.source = hardware_model::read_provenance(hw, base + "provenance", p.source);
        return p;
    }
};

/// What the CPU model needs of one kernel. Bytes are in the compute precision.
struct cpu_kernel : modeling::kernel_work {
    /// A convolution the runtime runs on its native path (native_conv_rule): priced as the GEMM
    /// (GEMV for one output position) it is, without the library's set-up and weight repacking,
    /// plus the traffic of its column buffer.
    bool native_conv = false;
    double column_bytes = 0;  ///< im2col buffer, written once and read once by the GEMM
    /// Weight bytes as stored, where that is wider than the compute precision (0: stored in
    /// it); a runtime that casts on every call reads them so.
    double stored_weight_bytes = 0;
    /// Bytes of its outputs that are fresh memory on every call (cpu_runtime's threshold).
    double fresh_output_bytes = 0;
};

/// The result of mapping one kernel; field names follow the mapping keys (docs/abi.md).
struct cpu_mapping {
    std::string unit;
    double peak_flops_per_s = 0;
    double compute_efficiency = 1;  ///< unit x class x reduction depth
    double effective_flops_per_s = 0;
    double utilization = 1;
    double units_allocated = 1;
    double waves = 1;
    double reduction_depth = 0;
    double fixed_time_s = 0;  ///< class fixed time + weight repacking and casting + fork/join
    double fork_join_s = 0;
    double weight_prep_s = 0;
    double weight_cast_s = 0;
    double first_touch_s = 0;  ///< faulting in the fresh pages of its outputs
    std::string memory_level;  ///< the level that serves the working set
    double memory_bytes = 0;
    double memory_bandwidth = 0;  ///< achievable B/s of that level
    double compute_time_s = 0;
    double memory_time_s = 0;
    std::string bottleneck;
    std::string explanation;
    provenance confidence = provenance::theoretical;
};

/// Matrix work on the matrix unit; depthwise convolutions (no reduction over channels to feed
/// a matrix unit) and work without MACs on the vector unit when the file has one.
inline const execution_unit& choose_unit(const precision_units& p, const cpu_kernel& k) {
    const bool matrix = k.macs > 0 && k.cls != op_class::depthwise;
    return matrix || !p.vector ? p.matrix : *p.vector;
}

/// The class whose constants price the kernel: a natively run convolution is a GEMM.
inline op_class pricing_class(const cpu_kernel& k) noexcept {
    if (!k.native_conv) return k.cls;
    return modeling::is_matrix_vector(k.outputs, k.out_channels) ? op_class::gemv : op_class::gemm;
}

inline cpu_mapping map_kernel(const cpu_hardware& hw, const precision_units& p,
                              const cpu_runtime& rt, const cpu_kernel& k) {
    const execution_unit& u = choose_unit(p, k);
    const op_class cls = pricing_class(k);
    const class_params& cp = hw.params(cls, p.precision);
    const double cores = hw.threads;

    cpu_mapping m;
    m.unit = u.name;
    m.peak_flops_per_s = u.peak_flops_per_s * hw.compute_share;
    // Outputs are split over cores in blocks the unit computes at once (a ZMM register of
    // float32, an AMX tile); work without MACs splits over its inputs as well.
    const modeling::occupancy o =
        modeling::compute_occupancy(k.macs > 0 ? k.outputs : k.threads, cores, u.threads_per_unit);
    m.utilization = o.utilization;
    m.units_allocated = o.units_allocated;
    m.waves = o.waves;
    double efficiency = u.efficiency * cp.efficiency;
    if (k.macs > 0) {
        m.reduction_depth = k.macs / std::max(1.0, k.outputs);
        if (cp.k_half > 0) efficiency *= m.reduction_depth / (m.reduction_depth + cp.k_half);
    }
    m.compute_efficiency = efficiency;
    m.effective_flops_per_s = m.peak_flops_per_s * efficiency * m.utilization;
    m.compute_time_s = k.flops > 0 ? k.flops / m.effective_flops_per_s : 0.0;

    // Repeated inference keeps what fits in cache: the smallest level holding the kernel's
    // working set serves all of its bytes.
    const double bytes = std::max(0.0, k.dram_bytes() + k.column_bytes);
    m.memory_level = "dram";
    m.memory_bandwidth = hw.base.dram_bandwidth * hw.base.memory_efficiency;
    provenance memory_source = hw.base.memory_provenance;
    bool private_level = false;
    for (const cache_level& l : hw.caches)
        if (bytes <= l.capacity) {
            m.memory_level = l.name;
            m.memory_bandwidth = l.bandwidth;
            memory_source = l.source;
            private_level = l.per_core;
            break;
        }
    // Beyond its private caches a core streams only as fast as its outstanding line fills
    // allow: fewer busy cores cannot reach a shared level's rate.
    if (!private_level) m.memory_bandwidth = std::min(m.memory_bandwidth, hw.core_bandwidth_limit);
    m.memory_bandwidth *= cp.memory_efficiency;
    m.memory_bytes = bytes;
    m.memory_time_s = bytes > 0 ? bytes / m.memory_bandwidth : 0.0;

    // Reordering and casting are loops split over the threads as the kernel is: their rates
    // (measured on all units) scale with the busy cores.
    if (rt.repack_weights_per_call && cp.weight_prep_bandwidth > 0 && k.macs > 0)
        m.weight_prep_s = k.weight_bytes / (cp.weight_prep_bandwidth * hw.compute_share);
    if (rt.cast_weights_per_call && hw.weight_cast_bandwidth > 0 && k.macs > 0)
        m.weight_cast_s = k.stored_weight_bytes / (hw.weight_cast_bandwidth * hw.compute_share);
    // Ops below the runtime's grain run on the calling thread alone.
    if (hw.threads > 1 && hw.fork_join_time_s > 0 && k.threads > rt.parallel_grain)
        m.fork_join_s = hw.fork_join_time_s;
    // Fresh output pages are faulted in by the threads that first write them; the share the
    // kernel serializes (its locks) does not shrink with more cores.
    if (k.fresh_output_bytes > 0 && hw.first_touch_bandwidth > 0)
        m.first_touch_s =
            k.fresh_output_bytes / hw.first_touch_bandwidth *
            (hw.first_touch_serial + (1 - hw.first_touch_serial) / std::max(1.0, hw.cores_busy));
    m.fixed_time_s =
        cp.fixed_time_s + m.weight_prep_s + m.weight_cast_s + m.fork_join_s + m.first_touch_s;

    switch (modeling::limiting_term(m.compute_time_s, m.memory_time_s, m.fixed_time_s)) {
        case modeling::limit::overhead:
            m.bottleneck = "overhead";
            m.confidence = cp.source;
            break;
        case modeling::limit::compute:
            m.bottleneck = "compute";
            m.confidence = std::max(u.efficiency_provenance, cp.source);
            break;
        case modeling::limit::memory:
            m.bottleneck = "memory:" + m.memory_level;
            m.confidence = memory_source;
            break;
    }

    if (!k.explain) return m;  // the caller keeps totals only

    // "Conv 3x3 (conv_bn_relu) [conv] on avx512: 16 of 16 cores, 1 wave, 98% of lanes, K 576 ->
    // 61% of peak when busy, 2.1 MB from l2, weights repacked 12 us -> compute-bound"
    std::string& e = m.explanation;
    e.reserve(200 + k.what.size());
    e += k.what.empty() ? std::string_view("kernel") : std::string_view(k.what);
    e += " [";
    e += class_name(k.cls);
    if (k.native_conv) {
        e += " as ";
        e += class_name(cls);
        e += ", the runtime's native path";
    }
    e += "] on ";
    e += m.unit;
    e += ": ";
    modeling::append_units_and_waves(e, m.units_allocated, cores, hw.base.unit_name, m.waves);
    append_percent(e, m.utilization);
    e += " of lanes";
    if (m.reduction_depth > 0) {
        e += ", K ";
        append_short_number(e, m.reduction_depth);
    }
    e += ", ";
    append_percent(e, m.compute_efficiency);
    e += " of peak when busy, ";
    append_short_number(e, bytes / 1e6);
    e += " MB from ";
    e += m.memory_level;
    if (m.weight_cast_s > 0) {
        e += ", weights cast ";
        append_seconds(e, m.weight_cast_s);
    }
    if (m.weight_prep_s > 0) {
        e += ", weights repacked ";
        append_seconds(e, m.weight_prep_s);
    }
    if (m.fork_join_s > 0) {
        e += ", fork/join ";
        append_seconds(e, m.fork_join_s);
    }
    if (m.first_touch_s > 0) {
        e += ", fresh output pages ";
        append_seconds(e, m.first_touch_s);
    }
    modeling::append_verdict(e, m.bottleneck, m.fixed_time_s, "fixed",
                             std::max(m.compute_time_s, m.memory_time_s));
    return m;
}

/// Bytes the per-call weight preparation moves beside the kernel's own: repacking reads the
/// weights and writes them in the unit's layout; casting reads them as stored and writes them
/// in the compute precision (0 without either). Energy only: their time is weight_prep_s and
/// weight_cast_s.
inline double weight_traffic(const cpu_kernel& k, const cpu_mapping& m) noexcept {
    double bytes = 0;
    if (m.weight_prep_s > 0) bytes += 2 * k.weight_bytes;
    if (m.weight_cast_s > 0) bytes += k.stored_weight_bytes + k.weight_bytes;
    return bytes;
}

}  // namespace nnergy::cpu
