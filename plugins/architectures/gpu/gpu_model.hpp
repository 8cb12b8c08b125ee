// SPDX-License-Identifier: Apache-2.0
/// \file gpu_model.hpp
/// \brief The SIMT (GPU) architecture model, without host calls so it can be tested alone.
///
/// A kernel runs on tensor cores or CUDA cores depending on its op class, the requested
/// precision and the runtime's math modes (TF32 for fp32 convolutions). Matrix work is cut into
/// output tiles spread over the SMs in waves: small or oddly shaped problems leave SMs idle and
/// pad tiles, a short reduction (K) cannot keep a tile's pipeline full, and a few tiles per SM
/// cannot hide its latencies. Every kernel also pays a fixed device time per op class (ramp-up,
/// tail, small setup kernels). The constants are data (docs/hardware.md, [gpu.kernels.<class>]),
/// each with its provenance.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <nnergy/modeling.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy::gpu {

using modeling::append_number;
using modeling::append_percent;
using modeling::append_seconds;
using modeling::append_short_number;
using modeling::execution_unit;
using modeling::format;
using modeling::hardware_model;
using modeling::precision_units;
using modeling::provenance;

using modeling::all_classes;
using modeling::class_name;
using modeling::classify;
using modeling::op_class;
using modeling::uses_matrix_tiles;

/// Per op class behaviour of one GPU ([gpu.kernels.<class>], overridden per unit precision in
/// [gpu.kernels.<class>.<precision>]).
struct class_params {
    double fixed_time_s = 0;       ///< device time every kernel of the class pays
    double tile_m = 128;           ///< output rows (pixels, tokens) per thread block
    double tile_n = 128;           ///< output columns (channels, features) per thread block
    double k_half = 0;             ///< reduction depth at which a tile reaches half its rate
    double split_k_depth = 0;      ///< a problem with fewer tiles than SMs splits K into parts of
                                   ///< at least this depth (0: never)
    double tiles_half = 0;         ///< tiles per SM (waves) at which an SM reaches half its rate:
                                   ///< a few small thread blocks cannot hide its latencies
                                   ///< (0: one tile per SM runs at full rate)
    double efficiency = 1;         ///< scales the unit's efficiency
    double narrow_efficiency = 1;  ///< of the CUDA-core fallback for too few input channels
    double memory_efficiency = 1;  ///< scales the device's achievable DRAM bandwidth
    provenance source = provenance::theoretical;
};

/// The math modes of the execution runtime: which unit fp32 matrix work may use.
struct math_modes {
    bool float32_conv_tf32 = false;
    bool float32_matmul_tf32 = false;
};

/// A GPU: the reference description plus per-class constants.
struct gpu_hardware {
    hardware_model base;
    /// Convolutions with fewer input channels per group run CUDA-core kernels (0: never).
    double tensor_core_min_channels = 0;
    /// [memory.l2] capacity in bytes: what a repeated forward pass can keep on chip (0: none).
    double l2_capacity = 0;
    modeling::class_table<class_params> kernels;

    const class_params& params(op_class c, std::string_view precision) const {
        return kernels.params(c, precision);
    }

    static gpu_hardware from_config(const sdk::config_view& hw) {
        gpu_hardware g;
        g.base = hardware_model::from_config(hw);
        g.tensor_core_min_channels =
            hardware_model::optional_number(hw, "gpu.tensor_core_min_channels", 0, 0);
        g.l2_capacity = hardware_model::optional_number(hw, "memory.l2.capacity", 0, 0);
        g.kernels = modeling::read_class_table<class_params>(hw, "gpu", g.base, read_params);
        return g;
    }

private:
    static class_params read_params(const sdk::config_view& hw, const std::string& base,
                                    const class_params& fallback) {
        class_params p = fallback;
        p.fixed_time_s =
            hardware_model::optional_number(hw, base + "fixed_time", p.fixed_time_s, 0);
        p.tile_m = hardware_model::optional_number(hw, base + "tile_m", p.tile_m, 1);
        p.tile_n = hardware_model::optional_number(hw, base + "tile_n", p.tile_n, 1);
        p.k_half = hardware_model::optional_number(hw, base + "k_half", p.k_half, 0);
        p.split_k_depth =
            hardware_model::optional_number(hw, base + "split_k_depth", p.split_k_depth, 0);
        p.tiles_half = hardware_model::optional_number(hw, base + "tiles_half", p.tiles_half, 0);
        p.efficiency = hardware_model::optional_fraction(hw, base + "efficiency", p.efficiency);
        p.narrow_efficiency =
            hardware_model::optional_fraction(hw, base + "narrow_efficiency", p.narrow_efficiency);
        p.memory_efficiency =
            hardware_model::optional_fraction(hw, base + "memory_efficiency", p.memory_efficiency);
        p.source = hardware_model::read_provenance(hw, base + "provenance", p.source);
        return p;
    }
};

/// What the GPU model needs of one kernel: the shared facts, and a convolution's input
/// channels.
struct gpu_kernel : modeling::kernel_work {
    double input_channels = 0;  ///< per group, for convolutions (0: unknown)
};

/// The unit and precision a kernel runs in.
struct unit_choice {
    const execution_unit* unit = nullptr;
    std::string_view precision;  ///< "tfloat32" when fp32 work runs on TF32 tensor cores
};

/// Dense and grouped convolutions: what cuDNN runs as implicit GEMMs (TF32 where the runtime
/// allows it, CUDA cores when a group has too few input channels).
inline bool implicit_gemm_conv(op_class c) noexcept {
    return c == op_class::conv || c == op_class::grouped_conv;
}

/// Tensor cores (the matrix unit) for GEMM-like classes; CUDA cores (the precision's vector
/// unit, when the file has one) for depthwise convolutions and work without MACs. fp32 matrix
/// work moves to TF32 tensor cores where the runtime allows it.
inline unit_choice choose_unit(const gpu_hardware& hw, const precision_units& p, op_class c,
                               const math_modes& math) {
    unit_choice u;
    u.precision = p.precision;
    if (!uses_matrix_tiles(c)) {
        u.unit = p.vector ? &*p.vector : &p.matrix;
        return u;
    }
    const bool conv = implicit_gemm_conv(c);
    const bool tf32 = p.precision == "float32" &&
                      ((conv && math.float32_conv_tf32) || (!conv && math.float32_matmul_tf32));
    if (tf32)
        if (const precision_units* t = hw.base.find("tfloat32")) {
            u.unit = &t->matrix;
            u.precision = "tfloat32";
            return u;
        }
    u.unit = &p.matrix;
    return u;
}

/// Output tiles over SMs: the busy fraction of the tile slots, padding and the last wave
/// included. A problem with fewer tiles than SMs splits its reduction (split-K, as cuBLAS and
/// cuDNN do) into parts of at least `split_k_depth`, over the idle SMs. A grouped convolution
/// is `groups` GEMMs of `n / groups` columns each: every group pads its own tiles.
struct tiling {
    double tiles = 1;
    double splits = 1;
    double waves = 1;
    double utilization = 1;
    double sms_busy = 1;
};

inline tiling tile(double outputs, double n, double k, double sms, const class_params& p,
                   double groups = 1) {
    tiling t;
    n = std::max(1.0, n);
    groups = std::clamp(groups, 1.0, n);
    const double m = std::max(1.0, outputs / n);
    t.tiles = std::ceil(m / p.tile_m) * std::ceil(n / groups / p.tile_n) * groups;
    if (p.split_k_depth > 0 && t.tiles < sms)
        t.splits =
            std::max(1.0, std::min(std::floor(sms / t.tiles), std::floor(k / p.split_k_depth)));
    t.waves = std::max(1.0, std::ceil(t.tiles * t.splits / sms));
    t.utilization = std::min(1.0, (m * n * t.splits) / (t.waves * sms * p.tile_m * p.tile_n));
    t.sms_busy = std::min(sms, t.tiles * t.splits);
    return t;
}

/// What the whole graph keeps in memory, in the compute precision: every kernel's weights, and
/// the largest activations (inputs and outputs) of any one kernel.
struct graph_footprint {
    double weight_bytes = 0;
    double largest_activation_bytes = 0;
};

/// The bytes a kernel moves to or from DRAM in a forward pass that is run again and again (as
/// inference is, and as it is measured). Its activations stay in L2 between the kernel that
/// writes them and the one that reads them unless they exceed it; the graph's weights stay in
/// L2 from one pass to the next when they fit beside the largest kernel's activations, and are
/// streamed from DRAM on every pass when they do not. Without an L2 every byte is DRAM traffic.
inline double dram_traffic(const modeling::kernel_work& k, const graph_footprint& g,
                           double l2_capacity) {
    if (l2_capacity <= 0) return std::max(0.0, k.dram_bytes());
    const double activations = std::max(0.0, k.input_bytes + k.output_bytes);
    const bool weights_stay = g.weight_bytes + g.largest_activation_bytes <= l2_capacity;
    return (activations > l2_capacity ? activations : 0.0) +
           (weights_stay ? 0.0 : std::max(0.0, k.weight_bytes));
}

/// The result of mapping one kernel; field names follow the mapping keys (docs/abi.md).
struct gpu_mapping {
    // Views of the hardware description or of literals, which outlive the mapping.
    std::string_view unit;
    std::string_view unit_precision;
    double peak_flops_per_s = 0;
    double compute_efficiency = 1;  ///< unit efficiency x class efficiency x reduction depth
    double effective_flops_per_s = 0;
    double utilization = 1;
    double units_allocated = 1;
    double waves = 1;
    double splits = 1;
    double reduction_depth = 0;
    double fixed_time_s = 0;
    double dram_bytes = 0;
    double dram_bandwidth_bytes_per_s = 0;
    double compute_time_s = 0;
    double memory_time_s = 0;
    std::string_view bottleneck;
    std::string explanation;
    provenance confidence = provenance::theoretical;
};

inline gpu_mapping map_kernel(const gpu_hardware& hw, const precision_units& p,
                              const math_modes& math, const gpu_kernel& k) {
    unit_choice choice = choose_unit(hw, p, k.cls, math);
    // Tensor-core convolution kernels need enough input channels (a 3-channel stem runs an
    // implicit-GEMM CUDA-core kernel).
    const bool narrow = implicit_gemm_conv(k.cls) && k.input_channels > 0 &&
                        k.input_channels < hw.tensor_core_min_channels;
    const class_params& cp = hw.params(k.cls, choice.precision);
    if (narrow) {
        const precision_units* fp =
            hw.base.find(p.precision == "tfloat32" ? "float32" : p.precision);
        const precision_units& pu = fp ? *fp : p;
        choice.unit = pu.vector ? &*pu.vector : &pu.matrix;
        choice.precision = pu.precision;
    }
    const execution_unit& u = *choice.unit;
    const double sms = hw.base.units;

    gpu_mapping m;
    m.unit = u.name;
    m.unit_precision = choice.precision;
    m.peak_flops_per_s = u.peak_flops_per_s;
    m.fixed_time_s = cp.fixed_time_s;
    double efficiency = u.efficiency * (narrow ? cp.narrow_efficiency : cp.efficiency);
    if (uses_matrix_tiles(k.cls) && k.macs > 0 && !narrow) {
        const double depth = k.macs / std::max(1.0, k.outputs);
        const tiling t = tile(k.outputs, k.out_channels, depth, sms, cp,
                              k.cls == op_class::grouped_conv ? k.groups : 1.0);
        m.utilization = t.utilization;
        m.units_allocated = t.sms_busy;
        m.waves = t.waves;
        m.splits = t.splits;
        m.reduction_depth = depth;
        const double part = depth / t.splits;
        if (cp.k_half > 0) efficiency *= part / (part + cp.k_half);
        if (cp.tiles_half > 0) efficiency *= t.waves / (t.waves + cp.tiles_half);
    } else {
        const modeling::occupancy o =
            modeling::compute_occupancy(k.threads, sms, u.threads_per_unit);
        m.utilization = o.utilization;
        m.units_allocated = o.units_allocated;
        m.waves = o.waves;
        if (k.macs > 0) m.reduction_depth = k.macs / std::max(1.0, k.outputs);
    }
    m.compute_efficiency = efficiency;
    m.effective_flops_per_s = u.peak_flops_per_s * efficiency * m.utilization;
    m.dram_bytes = std::max(0.0, k.dram_bytes());
    m.dram_bandwidth_bytes_per_s =
        hw.base.dram_bandwidth * hw.base.memory_efficiency * cp.memory_efficiency;
    m.compute_time_s = k.flops > 0 ? k.flops / m.effective_flops_per_s : 0.0;
    m.memory_time_s = m.dram_bytes > 0 ? m.dram_bytes / m.dram_bandwidth_bytes_per_s : 0.0;

    switch (modeling::limiting_term(m.compute_time_s, m.memory_time_s, m.fixed_time_s)) {
        case modeling::limit::overhead:
            m.bottleneck = "overhead";
            m.confidence = cp.source;
            break;
        case modeling::limit::compute:
            m.bottleneck = "compute";
            // A fitted class curve on a measured unit is as good as the curve.
            m.confidence = std::max(u.efficiency_provenance, cp.source);
            break;
        case modeling::limit::memory:
            m.bottleneck = "memory:dram";
            m.confidence = hw.base.memory_provenance;
            break;
    }

    if (!k.explain) return m;  // the caller keeps totals only

    // "Conv 3x3 (conv_bn_relu) [conv] on tensor_core (tfloat32): 98 of 132 SMs, 1 wave, 74%
    // of tile slots, K 576 -> 62% of peak x efficiency; 41 FLOP/B -> compute-bound"
    std::string& e = m.explanation;
    e.reserve(200 + k.what.size());
    e += k.what.empty() ? std::string_view("kernel") : std::string_view(k.what);
    e += " [";
    e += class_name(k.cls);
    e += "] on ";
    e += m.unit;
    if (m.unit_precision != p.precision) {
        e += " (";
        e += m.unit_precision;
        e += ')';
    }
    e += ": ";
    modeling::append_units_and_waves(e, m.units_allocated, sms, hw.base.unit_name, m.waves);
    append_percent(e, m.utilization);
    e += uses_matrix_tiles(k.cls) && k.macs > 0 && !narrow ? " of tile slots" : " of thread slots";
    if (m.reduction_depth > 0) {
        e += ", K ";
        append_short_number(e, m.reduction_depth);
        if (m.splits > 1) {
            e += " split ";
            append_number(e, m.splits, 0, true);
            e += " ways";
        }
    }
    if (k.cls == op_class::grouped_conv && k.groups > 1) {
        e += ", ";
        append_number(e, k.groups, 0, true);
        e += " groups of ";
        append_number(e, k.out_channels / k.groups, 0, true);
        e += " output channels";
    }
    if (narrow) e += ", too few input channels for tensor cores";
    e += ", ";
    append_percent(e, m.compute_efficiency);
    e += " of peak when busy";
    modeling::append_intensity(e, k.flops, m.dram_bytes);
    modeling::append_verdict(e, m.bottleneck, m.fixed_time_s, "fixed per kernel",
                             std::max(m.compute_time_s, m.memory_time_s));
    return m;
}

}  // namespace nnergy::gpu
