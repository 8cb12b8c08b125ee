// SPDX-License-Identifier: Apache-2.0
/// \file tpu_model.hpp
/// \brief The systolic-array (TPU) architecture model, without host calls so it can be tested
/// alone.
///
/// Matrix work runs weight-stationary on the MXUs: the weights (K x N, per group) are cut into
/// array-sized tiles, each tile is loaded into an MXU and the M input rows stream through it.
/// A tile costs M + rows + cols cycles (streaming plus the skew of filling and draining the
/// pipeline); the next tile's weights load while the current one streams, so only the first
/// load of each MXU (rows cycles) is exposed. Tiles spread over the MXUs in waves; padding of K
/// or N to the array size and the last, partly empty wave show up as utilization. Kernels
/// without multiply-accumulates run on the vector unit, and matrix work that maps badly
/// (depthwise convolutions, tiny K) runs there too when that is faster. The constants are data
/// (docs/hardware.md, [tpu] and the memory tables it names).
#pragma once

#include <algorithm>
#include <cmath>
#include <nnergy/modeling.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace nnergy::tpu {

using modeling::append_number;
using modeling::append_percent;
using modeling::append_seconds;
using modeling::append_short_number;
using modeling::execution_unit;
using modeling::format;
using modeling::hardware_model;
using modeling::precision_units;
using modeling::provenance;

/// The matrix units of one chip.
struct systolic_array {
    double tensorcores = 1;
    double mxus_per_tensorcore = 1;
    double rows = 128;    ///< reduction (K) side: one weight row per array row
    double cols = 128;    ///< output (N) side
    double clock_hz = 0;  ///< 0: not given (only reported)

    double mxus() const noexcept { return tensorcores * mxus_per_tensorcore; }
    double cells() const noexcept { return mxus() * rows * cols; }
};

/// An on-chip memory level named by the [tpu] table (memory.<name>).
struct memory_level {
    std::string name;
    double capacity = 0;   ///< bytes
    double bandwidth = 0;  ///< B/s; 0: not given, the level is not reported as traffic
};

/// A TPU: the reference description plus the [tpu] table.
struct tpu_hardware {
    hardware_model base;
    std::optional<systolic_array> array;  ///< absent: matrix work is a plain roofline
    double vector_lanes = 0;              ///< 0: not given
    double vector_sublanes = 0;
    std::optional<memory_level> on_chip;          ///< working memory (VMEM)
    double block_fraction = 0.5;                  ///< share of on_chip one operand block may use
    std::optional<memory_level> parameter_cache;  ///< keeps weights across inferences (Coral)

    /// Element slots the vector units process per instruction: tensorcores x sublanes x lanes
    /// when the file gives the shape, else the reference model's units x threads_per_unit.
    double vector_slots(const execution_unit& vector) const noexcept {
        if (array && vector_lanes > 0 && vector_sublanes > 0)
            return array->tensorcores * vector_sublanes * vector_lanes;
        return base.units * vector.threads_per_unit;
    }
    double vector_units() const noexcept { return array ? array->tensorcores : base.units; }

    static tpu_hardware from_config(const sdk::config_view& hw) {
        tpu_hardware t;
        t.base = hardware_model::from_config(hw);
        const std::string ctx = t.base.context();
        constexpr std::string_view array_keys[] = {
            "tpu.tensorcores_per_chip", "tpu.mxus_per_tensorcore", "tpu.mxu_rows", "tpu.mxu_cols"};
        bool any = false;
        for (std::string_view k : array_keys) any = any || hw.contains(k);
        if (any) {
            // One key of the array implies all four: a half-described array is a typo.
            systolic_array a;
            a.tensorcores = count(hw, array_keys[0], ctx);
            a.mxus_per_tensorcore = count(hw, array_keys[1], ctx);
            a.rows = count(hw, array_keys[2], ctx);
            a.cols = count(hw, array_keys[3], ctx);
            if (hw.contains("tpu.clock")) {
                a.clock_hz = hw.require_number("tpu.clock", ctx);
                hardware_model::check_positive(hw, "tpu.clock", a.clock_hz);
            }
            t.array = a;
        }
        if (hw.contains("tpu.vector_lanes") || hw.contains("tpu.vector_sublanes")) {
            t.vector_lanes = count(hw, "tpu.vector_lanes", ctx);
            t.vector_sublanes = count(hw, "tpu.vector_sublanes", ctx);
        }
        t.on_chip = level(hw, "tpu.on_chip", ctx);
        t.parameter_cache = level(hw, "tpu.parameter_cache", ctx);
        if (hw.contains("tpu.on_chip_block_fraction")) {
            t.block_fraction =
                hardware_model::efficiency(hw, "tpu.on_chip_block_fraction", "", std::nullopt)
                    .first;
        }
        return t;
    }

private:
    /// A required whole number of at least 1.
    static double count(const sdk::config_view& hw, std::string_view key, const std::string& ctx) {
        const double v = hw.require_number(key, ctx);
        if (!(v >= 1) || !std::isfinite(v) || v != std::floor(v))
            throw sdk::error(sdk::config_view::where(*hw.find(key)) + ": '" + std::string(key) +
                             "' must be a whole number of at least 1, got " + format("%g", v));
        return v;
    }

    /// The memory table a [tpu] key names: its capacity is required, its bandwidth optional.
    static std::optional<memory_level> level(const sdk::config_view& hw, std::string_view key,
                                             const std::string& ctx) {
        const std::optional<std::string> name = hw.string(key);
        if (!name) return std::nullopt;
        const std::string base = "memory." + *name;
        if (name->empty() || name->find('.') != std::string::npos ||
            !hw.contains(base + ".capacity"))
            throw sdk::error(sdk::config_view::where(*hw.find(key)) + ": '" + std::string(key) +
                                 "' names memory level '" + *name + "', but " + ctx + " has no '" +
                                 base + ".capacity'",
                             NNERGY_CODE_NOT_FOUND);
        memory_level m;
        m.name = *name;
        m.capacity = hw.require_number(base + ".capacity", ctx);
        hardware_model::check_positive(hw, base + ".capacity", m.capacity);
        if (hw.contains(base + ".bandwidth")) {
            m.bandwidth = hw.require_number(base + ".bandwidth", ctx);
            hardware_model::check_positive(hw, base + ".bandwidth", m.bandwidth);
        }
        return m;
    }
};

/// What the TPU model needs of one kernel. Byte counts are in the compute precision.
struct tpu_kernel : modeling::kernel_work {
    /// Weight bytes of the kernels before this one, for a parameter cache filled in model order.
    double weights_before = 0;
};

/// Weight-stationary tiling of one GEMM (or one per group) over the MXUs.
struct mxu_plan {
    double m = 1, k = 0, n = 1;  ///< per group
    double groups = 1;
    double k_tiles = 1, n_tiles = 1, tiles = 1;
    double splits = 1;  ///< M split over MXUs holding copies of the same tile (few tiles)
    double m_part = 1;  ///< rows streamed per tile
    double waves = 1;
    double cycles = 0;  ///< first weight load + waves x (m_part + rows + cols)
    double mxus_busy = 1;
    double utilization = 0;  ///< MACs / (MXU cells x cycles)
};

inline mxu_plan plan_mxu(const systolic_array& a, double macs, double outputs, double channels,
                         double groups) {
    mxu_plan p;
    const double out = std::max(1.0, outputs);
    const double n_total = std::max(1.0, channels);
    p.groups = std::clamp(groups, 1.0, n_total);
    p.n = std::max(1.0, n_total / p.groups);
    p.m = std::max(1.0, out / n_total);
    p.k = std::max(0.0, macs) / out;
    p.k_tiles = std::max(1.0, std::ceil(p.k / a.rows));
    p.n_tiles = std::ceil(p.n / a.cols);
    p.tiles = p.groups * p.k_tiles * p.n_tiles;
    const double mxus = a.mxus();
    // Fewer tiles than MXUs: idle MXUs take a copy of a tile and a share of the rows.
    if (p.tiles < mxus)
        p.splits = std::max(1.0, std::min(std::floor(mxus / p.tiles), std::ceil(p.m)));
    p.m_part = std::ceil(p.m / p.splits);
    p.waves = std::max(1.0, std::ceil(p.tiles * p.splits / mxus));
    p.cycles = a.rows + p.waves * (p.m_part + a.rows + a.cols);
    p.mxus_busy = std::min(mxus, p.tiles * p.splits);
    p.utilization = std::min(1.0, std::max(0.0, macs) / (a.cells() * p.cycles));
    return p;
}

/// DRAM re-reads when one operand does not fit in the on-chip blocks: the compiler keeps one
/// operand resident in blocks of at most `block` bytes and streams the other once per block,
/// in whichever order moves fewer bytes.
inline double reread_bytes(double input_bytes, double weight_bytes, double block) {
    if (!(block > 0) || weight_bytes <= 0 || input_bytes <= 0) return 0;
    const double weight_blocks = std::ceil(weight_bytes / block);
    const double input_blocks = std::ceil(input_bytes / block);
    return std::min(input_bytes * (weight_blocks - 1), weight_bytes * (input_blocks - 1));
}

/// The result of mapping one kernel; field names follow the mapping keys (docs/abi.md).
struct tpu_mapping {
    std::string unit;
    bool on_mxu = false;
    double peak_flops_per_s = 0;
    double compute_efficiency = 1;
    double effective_flops_per_s = 0;
    double units_available = 1;
    double units_allocated = 1;
    double utilization = 0;
    double waves = 1;
    std::optional<mxu_plan> plan;  ///< the MXU tiling, when the kernel has MACs and an array
    double mxu_time_s = 0;         ///< both candidates of matrix work, 0 when not computed
    double vector_time_s = 0;
    double launch_overhead_s = 0;
    double dram_bytes = 0;
    double dram_reread_bytes = 0;
    double weights_streamed_bytes = 0;  ///< weights not held by the parameter cache
    double dram_bandwidth_bytes_per_s = 0;
    double on_chip_bytes = 0;
    double compute_time_s = 0;
    double memory_time_s = 0;  ///< the slowest level
    std::string bottleneck;    ///< compute | memory:<level> | overhead
    std::string explanation;
    provenance confidence = provenance::theoretical;
};

namespace detail {

/// Time of `flops` on a unit with `slots` parallel element slots (the reference occupancy).
struct vector_estimate {
    double time_s = 0;
    double utilization = 1;
    double waves = 1;
    double units_allocated = 1;
};

inline vector_estimate on_vector(const tpu_hardware& hw, const execution_unit& u, double flops,
                                 double threads) {
    vector_estimate v;
    const double units = hw.vector_units();
    const double slots = hw.vector_slots(u);
    const modeling::occupancy o = modeling::compute_occupancy(threads, units, slots / units);
    v.utilization = o.utilization;
    v.waves = o.waves;
    v.units_allocated = o.units_allocated;
    v.time_s = flops > 0 ? flops / (u.peak_flops_per_s * u.efficiency * o.utilization) : 0.0;
    return v;
}

}  // namespace detail

inline tpu_mapping map_kernel(const tpu_hardware& hw, const precision_units& p,
                              const tpu_kernel& k) {
    tpu_mapping m;
    const execution_unit& matrix = p.matrix;
    const execution_unit* vector = p.vector ? &*p.vector : nullptr;
    const bool has_macs = k.macs > 0;

    // Compute: the MXU plan for matrix work, the vector unit for the rest and as the
    // alternative for matrix work that maps badly.
    const execution_unit* chosen = nullptr;
    if (has_macs && hw.array) {
        const systolic_array& a = *hw.array;
        const mxu_plan plan = plan_mxu(a, k.macs, k.outputs, k.out_channels, k.groups);
        // At full utilization the MXUs reach the precision's peak: cycles x cells MACs take
        // cycles x 2 x cells / peak seconds (int8 cells do more MACs per cycle than bf16 ones).
        m.mxu_time_s = plan.cycles * 2 * a.cells() / (matrix.peak_flops_per_s * matrix.efficiency);
        m.plan = plan;
        std::optional<detail::vector_estimate> v;
        if (vector) {
            v = detail::on_vector(hw, *vector, 2 * k.macs, k.threads);
            m.vector_time_s = v->time_s;
        }
        if (v && v->time_s < m.mxu_time_s) {
            chosen = vector;
            m.utilization = v->utilization;
            m.waves = v->waves;
            m.units_allocated = v->units_allocated;
            m.units_available = hw.vector_units();
        } else {
            chosen = &matrix;
            m.on_mxu = true;
            m.utilization = plan.utilization;
            m.waves = plan.waves;
            m.units_allocated = plan.mxus_busy;
            m.units_available = a.mxus();
        }
    } else if (!has_macs && vector) {
        const detail::vector_estimate v = detail::on_vector(hw, *vector, k.flops, k.threads);
        chosen = vector;
        m.utilization = v.utilization;
        m.waves = v.waves;
        m.units_allocated = v.units_allocated;
        m.units_available = hw.vector_units();
    } else {
        // No array or no vector figures: the reference roofline on the precision's unit.
        chosen = &matrix;
        const modeling::occupancy o =
            modeling::compute_occupancy(k.threads, hw.base.units, matrix.threads_per_unit);
        m.utilization = o.utilization;
        m.waves = o.waves;
        m.units_allocated = o.units_allocated;
        m.units_available = hw.base.units;
    }
    const execution_unit& u = *chosen;
    m.unit = u.name;
    m.peak_flops_per_s = u.peak_flops_per_s;
    m.compute_efficiency = u.efficiency;
    m.effective_flops_per_s = u.peak_flops_per_s * u.efficiency * m.utilization;
    m.compute_time_s = k.flops > 0 ? k.flops / m.effective_flops_per_s : 0.0;

    // Memory: every operand crosses DRAM once, plus re-reads when the weights and inputs both
    // exceed the on-chip blocks; weights held by a parameter cache do not cross at all.
    const double in = std::max(0.0, k.input_bytes), out = std::max(0.0, k.output_bytes),
                 w = std::max(0.0, k.weight_bytes);
    double streamed = w;
    if (hw.parameter_cache) {
        const double room =
            std::max(0.0, hw.parameter_cache->capacity - std::max(0.0, k.weights_before));
        streamed = w - std::min(w, room);
    }
    m.weights_streamed_bytes = streamed;
    if (has_macs && hw.on_chip)
        m.dram_reread_bytes = reread_bytes(in, streamed, hw.on_chip->capacity * hw.block_fraction);
    m.dram_bytes = in + out + streamed + m.dram_reread_bytes;
    m.dram_bandwidth_bytes_per_s = hw.base.dram_bandwidth * hw.base.memory_efficiency;
    const double dram_time = m.dram_bytes > 0 ? m.dram_bytes / m.dram_bandwidth_bytes_per_s : 0.0;
    double on_chip_time = 0;
    if (hw.on_chip && hw.on_chip->bandwidth > 0) {
        // The MXU reads each input row once per column of tiles and writes partial sums once
        // per row of tiles; the vector unit reads and writes each operand once.
        if (m.on_mxu && m.plan)
            m.on_chip_bytes = in * m.plan->n_tiles + w + out * m.plan->k_tiles;
        else
            m.on_chip_bytes = in + out + w;
        on_chip_time = m.on_chip_bytes / hw.on_chip->bandwidth;
    }
    m.memory_time_s = std::max(dram_time, on_chip_time);
    m.launch_overhead_s = hw.base.launch_overhead_s;

    switch (modeling::limiting_term(m.compute_time_s, m.memory_time_s, m.launch_overhead_s)) {
        case modeling::limit::overhead:
            m.bottleneck = "overhead";
            m.confidence = hw.base.overhead_provenance;
            break;
        case modeling::limit::compute:
            m.bottleneck = "compute";
            m.confidence = u.efficiency_provenance;
            break;
        case modeling::limit::memory:
            if (dram_time >= on_chip_time) {
                m.bottleneck = "memory:dram";
                m.confidence = hw.base.memory_provenance;
            } else {
                m.bottleneck = "memory:" + hw.on_chip->name;
                m.confidence = provenance::theoretical;
            }
            break;
    }

    if (!k.explain) return m;  // the caller keeps totals only

    // "Gemm on mxu: 6 weight tiles (K 256 -> 2 x 128, N 384 -> 3 x 128) on 6 of 8 MXUs,
    // 1 wave, 896 cycles (M 512 per tile), 43% of MAC slots; vpu 23.4 us; AI 82 FLOP/B ->
    // compute-bound", appended piece by piece.
    std::string& e = m.explanation;
    e.reserve(220 + k.what.size());
    e += k.what.empty() ? std::string_view("kernel") : std::string_view(k.what);
    e += " on ";
    e += m.unit;
    e += ": ";
    if (m.plan && hw.array) {
        const mxu_plan& pl = *m.plan;
        const systolic_array& a = *hw.array;
        if (!m.on_mxu) {
            e += "mxu would take ";
            append_seconds(e, m.mxu_time_s);
            e += " (";
        }
        append_number(e, pl.tiles, 0, true);
        e += pl.tiles == 1 ? " weight tile (" : " weight tiles (";
        if (pl.groups > 1) {
            append_number(e, pl.groups, 0, true);
            e += " groups, ";
        }
        e += "K ";
        append_short_number(e, pl.k);
        e += " -> ";
        append_number(e, pl.k_tiles, 0, true);
        e += " x ";
        append_number(e, a.rows, 0, true);
        e += ", N ";
        append_short_number(e, pl.n);
        e += " -> ";
        append_number(e, pl.n_tiles, 0, true);
        e += " x ";
        append_number(e, a.cols, 0, true);
        e += ") on ";
        append_number(e, pl.mxus_busy, 0, true);
        e += " of ";
        append_number(e, a.mxus(), 0, true);
        e += " MXUs";
        if (pl.splits > 1) {
            e += " (M split ";
            append_number(e, pl.splits, 0, true);
            e += " ways)";
        }
        e += ", ";
        append_number(e, pl.waves, 0, true);
        e += pl.waves == 1 ? " wave, " : " waves, ";
        append_short_number(e, pl.cycles);
        e += " cycles, ";
        append_percent(e, pl.utilization);
        e += " of MAC slots";
        if (m.on_mxu) {
            if (m.vector_time_s > 0) {
                e += "; vector unit would take ";
                append_seconds(e, m.vector_time_s);
            }
        } else {
            e += "); ";
            append_percent(e, m.utilization);
            e += " of vector lanes";
        }
    } else {
        append_number(e, m.units_allocated, 0, true);
        e += " of ";
        append_number(e, m.units_available, 0, true);
        e += m.units_available == 1 ? " unit, " : " units, ";
        append_percent(e, m.utilization);
        e += " of slots";
    }
    if (m.dram_reread_bytes > 0) {
        e += ", ";
        append_short_number(e, m.dram_reread_bytes / 1e6);
        e += " MB re-read (operands exceed ";
        e += hw.on_chip->name;
        e += ')';
    }
    if (hw.parameter_cache && k.weight_bytes > 0) {
        e += streamed > 0 ? ", weights streamed past the " : ", weights cached in ";
        e += hw.parameter_cache->name;
    }
    modeling::append_intensity(e, k.flops, m.dram_bytes);
    modeling::append_verdict(e, m.bottleneck, m.launch_overhead_s, "per kernel",
                             std::max(m.compute_time_s, m.memory_time_s));
    return m;
}

}  // namespace nnergy::tpu
