// SPDX-License-Identifier: Apache-2.0
/// \file kpu_model.hpp
/// \brief The KPU (domain flow) architecture model, without host calls so it can be tested alone.
///
/// A KPU is a mesh of tiles, each a rows x cols array of processing elements (PEs) fed from
/// SRAM over a network on chip (NoC). Matrix work runs output-stationary: the output (M x N in
/// the GEMM view) is cut into rows x cols blocks, spread over the tiles in waves; a block
/// streams its reduction (K) through the array and pays a pipeline fill and drain of rows + cols
/// cycles. Work without multiply-accumulates streams through the PEs elementwise. Operands move
/// tile SRAM -> array and across tiles over the NoC; DRAM sees the kernel's compulsory traffic,
/// plus re-reads only when its working set spills out of the tiles' SRAM. The constants are data
/// ([kpu] in docs/hardware.md), each with its provenance.
#pragma once

#include <algorithm>
#include <cmath>
#include <nnergy/modeling.hpp>
#include <string>
#include <string_view>

namespace nnergy::kpu {

using modeling::append_number;
using modeling::append_percent;
using modeling::append_seconds;
using modeling::append_short_number;
using modeling::execution_unit;
using modeling::format;
using modeling::hardware_model;
using modeling::precision_units;
using modeling::provenance;

/// A KPU: the reference description plus the tile fabric ([kpu]).
struct kpu_hardware {
    hardware_model base;
    double tiles = 1;
    double tile_rows = 1;
    double tile_cols = 1;
    double clock_hz = 1;
    double tile_sram_bytes = 0;
    /// Per tile, bytes per second; 0: the file gives none and the level is not reported.
    double tile_sram_bandwidth = 0;
    provenance tile_sram_provenance = provenance::theoretical;
    double noc_bandwidth = 0;  ///< per tile (injection into / ejection from the mesh)
    provenance noc_provenance = provenance::theoretical;
    double kernel_setup_s = 0;  ///< program load and token routing, every kernel
    provenance setup_provenance = provenance::theoretical;
    double stream_ops_per_pe = 1;  ///< elementwise operations per PE per cycle

    double pes_per_tile() const noexcept { return tile_rows * tile_cols; }
    double sram_capacity() const noexcept { return tiles * tile_sram_bytes; }
    /// Rate of work without MACs: every PE streams `stream_ops_per_pe` operations a cycle.
    double stream_peak() const noexcept {
        return tiles * pes_per_tile() * clock_hz * stream_ops_per_pe;
    }
    /// MACs one PE completes per cycle at a precision, so that the cycle model reproduces the
    /// file's peak (2 FLOPs per MAC): the design notes do not say how a MAC is counted.
    double macs_per_pe_cycle(const execution_unit& u) const noexcept {
        return u.peak_flops_per_s / (2 * tiles * pes_per_tile() * clock_hz);
    }

    static kpu_hardware from_config(const sdk::config_view& hw) {
        kpu_hardware k;
        k.base = hardware_model::from_config(hw);
        const std::string ctx = k.base.context();
        k.tiles = required_count(hw, "kpu.tiles", ctx);
        k.tile_rows = required_count(hw, "kpu.tile_rows", ctx);
        k.tile_cols = required_count(hw, "kpu.tile_cols", ctx);
        k.clock_hz = hw.require_number("kpu.clock", ctx);
        hardware_model::check_positive(hw, "kpu.clock", k.clock_hz);
        k.tile_sram_bytes = hw.require_number("kpu.tile_sram", ctx);
        hardware_model::check_positive(hw, "kpu.tile_sram", k.tile_sram_bytes);
        // [compute] units describes the same tiles for the reference architecture.
        if (hw.contains("compute.units") && k.base.units != k.tiles)
            throw sdk::error(sdk::config_view::where(*hw.find("kpu.tiles")) + ": 'kpu.tiles' (" +
                             format("%g", k.tiles) + ") differs from 'compute.units' (" +
                             format("%g", k.base.units) + ")");
        k.tile_sram_bandwidth =
            hardware_model::optional_number(hw, "kpu.tile_sram_bandwidth", 0, 0);
        k.tile_sram_provenance = hardware_model::read_provenance(
            hw, "kpu.tile_sram_bandwidth_provenance", provenance::theoretical);
        k.noc_bandwidth = hardware_model::optional_number(hw, "kpu.noc_bandwidth", 0, 0);
        k.noc_provenance = hardware_model::read_provenance(hw, "kpu.noc_bandwidth_provenance",
                                                           provenance::theoretical);
        // Without a setup cost of its own, a kernel pays the file's kernel launch cost.
        k.kernel_setup_s =
            hardware_model::optional_number(hw, "kpu.kernel_setup", k.base.launch_overhead_s, 0);
        k.setup_provenance = hw.contains("kpu.kernel_setup")
                                 ? hardware_model::read_provenance(
                                       hw, "kpu.kernel_setup_provenance", provenance::theoretical)
                                 : k.base.overhead_provenance;
        k.stream_ops_per_pe = hardware_model::optional_number(hw, "kpu.stream_ops_per_pe", 1, 0);
        hardware_model::check_positive(hw, "kpu.stream_ops_per_pe", k.stream_ops_per_pe);
        return k;
    }

private:
    static double required_count(const sdk::config_view& hw, std::string_view key,
                                 const std::string& ctx) {
        const double v = hw.require_number(key, ctx);
        if (!(v >= 1) || !std::isfinite(v) || v != std::floor(v))
            throw sdk::error(sdk::config_view::where(*hw.find(key)) + ": '" + std::string(key) +
                             "' must be a whole number of at least 1, got " + format("%g", v));
        return v;
    }
};

/// What the KPU model needs of one kernel. Byte counts are in the compute precision.
struct kpu_kernel : modeling::kernel_work {
    double element_bytes = 4;  ///< of one operand streamed into the array
};

/// Output blocks over tiles.
struct blocking {
    double m = 1, n = 1, k = 0;  ///< the GEMM view
    double row_blocks = 1;       ///< ceil(M / rows)
    double col_blocks = 1;       ///< ceil(N / cols)
    double blocks = 1;
    double waves = 1;
    double tiles_busy = 1;
    double utilization = 1;    ///< busy PE slots: padding, idle tiles and the last wave
    double stream_cycles = 0;  ///< per block: K / MACs per PE per cycle
    double fill_cycles = 0;    ///< per block: rows + cols
    double cycles = 0;         ///< waves x (stream + fill)
};

inline blocking block(const kpu_hardware& hw, double macs_per_pe_cycle, const kpu_kernel& k) {
    blocking b;
    b.n = std::max(1.0, k.out_channels);
    const double outputs = std::max(1.0, k.outputs);
    b.m = std::max(1.0, outputs / b.n);
    b.k = k.macs / outputs;
    b.row_blocks = std::ceil(b.m / hw.tile_rows);
    b.col_blocks = std::ceil(b.n / hw.tile_cols);
    b.blocks = b.row_blocks * b.col_blocks;
    b.waves = std::max(1.0, std::ceil(b.blocks / hw.tiles));
    b.tiles_busy = std::min(hw.tiles, b.blocks);
    b.utilization = std::min(1.0, b.m * b.n / (b.waves * hw.tiles * hw.pes_per_tile()));
    b.stream_cycles = b.k / macs_per_pe_cycle;
    b.fill_cycles = hw.tile_rows + hw.tile_cols;
    b.cycles = b.waves * (b.stream_cycles + b.fill_cycles);
    return b;
}

/// The result of mapping one kernel; field names follow the mapping keys (docs/abi.md).
struct kpu_mapping {
    std::string unit;
    bool matrix = false;  ///< output-stationary blocks (else elementwise streaming)
    double peak_flops_per_s = 0;
    double compute_efficiency = 1;  ///< unit efficiency x pipelined fraction of the cycles
    double effective_flops_per_s = 0;
    double utilization = 1;
    double units_allocated = 1;
    double waves = 1;
    blocking blocks;
    double launch_overhead_s = 0;
    // Memory levels: bytes and the bandwidth of the tiles that move them (0: not reported).
    double sram_bytes = 0, sram_bandwidth = 0;
    double noc_bytes = 0, noc_bandwidth = 0;
    double dram_bytes = 0, dram_bandwidth = 0;
    double working_set_bytes = 0;
    double spill_passes = 1;
    double spill_bytes = 0;
    double compute_time_s = 0;
    double memory_time_s = 0;  ///< the slowest level
    std::string bottleneck;    ///< compute | memory:<level> | overhead
    std::string explanation;
    provenance confidence = provenance::theoretical;
};

/// DRAM re-reads of a kernel whose working set (its weights plus the activation slab one wave
/// needs) exceeds the tiles' SRAM: the larger operand is cut into `passes` parts that fit, each
/// streaming the smaller operand once more.
inline void spill(const kpu_hardware& hw, double input, double output, double weight,
                  const blocking& b, kpu_mapping& m) {
    // A wave covers ceil(tiles / column blocks) row blocks (all of them for a narrow output).
    const double rows_per_wave = std::min(b.row_blocks, std::ceil(hw.tiles / b.col_blocks));
    const double slab = (input + output) * rows_per_wave / b.row_blocks;
    m.working_set_bytes = weight + slab;
    const double capacity = hw.sram_capacity();
    if (m.working_set_bytes <= capacity) return;
    m.spill_passes = std::ceil(m.working_set_bytes / capacity);
    // Without weights (two activation operands) the inputs are what is streamed again.
    const double restreamed = weight > 0 ? std::min(input, weight) : input;
    m.spill_bytes = (m.spill_passes - 1) * restreamed;
}

inline kpu_mapping map_kernel(const kpu_hardware& hw, const precision_units& p,
                              const kpu_kernel& k) {
    const execution_unit& u = p.matrix;
    kpu_mapping m;
    m.unit = u.name;
    m.matrix = k.macs > 0;
    m.launch_overhead_s = hw.kernel_setup_s;
    const double input = std::max(0.0, k.input_bytes);
    const double output = std::max(0.0, k.output_bytes);
    const double weight = std::max(0.0, k.weight_bytes);
    m.dram_bytes = input + output + weight;

    if (m.matrix) {
        const blocking b = block(hw, hw.macs_per_pe_cycle(u), k);
        m.blocks = b;
        m.peak_flops_per_s = u.peak_flops_per_s;
        m.utilization = b.utilization;
        m.units_allocated = b.tiles_busy;
        m.waves = b.waves;
        m.compute_efficiency = u.efficiency * b.stream_cycles / (b.stream_cycles + b.fill_cycles);
        m.compute_time_s = b.cycles / hw.clock_hz / u.efficiency;
        m.effective_flops_per_s = k.flops > 0
                                      ? k.flops / m.compute_time_s
                                      : u.peak_flops_per_s * m.compute_efficiency * m.utilization;
        // Tile SRAM feeds the array edges: every block streams rows x K inputs and K x cols
        // weights. A block of a grouped convolution spans several groups, each needing its own
        // inputs (depthwise: one input stream per column, no reuse along a row).
        const double groups = std::clamp(k.groups, 1.0, b.n);
        const double groups_per_block =
            std::clamp(std::min(hw.tile_cols, b.n) * groups / b.n, 1.0, groups);
        const double a_reads = b.m * b.k * b.col_blocks * groups_per_block;
        const double b_reads = b.k * b.n * b.row_blocks;
        m.sram_bytes = (a_reads + b_reads) * k.element_bytes + output;
        // The NoC carries inputs to every column block that needs them, weights once to each
        // tile holding their column block (kept there across waves), and outputs out.
        const double weight_copies =
            std::clamp(std::floor(hw.tiles / b.col_blocks), 1.0, b.row_blocks);
        m.noc_bytes =
            input * b.col_blocks * groups_per_block / groups + weight * weight_copies + output;
        spill(hw, input, output, weight, b, m);
        m.dram_bytes += m.spill_bytes;
    } else {
        // Elementwise streaming: each element is read and written once, nothing is re-read.
        const modeling::occupancy o =
            modeling::compute_occupancy(k.threads, hw.tiles, hw.pes_per_tile());
        m.unit = "pe_stream";
        m.peak_flops_per_s = hw.stream_peak();
        m.utilization = o.utilization;
        m.units_allocated = o.units_allocated;
        m.waves = o.waves;
        m.compute_efficiency = u.efficiency;
        m.effective_flops_per_s = m.peak_flops_per_s * u.efficiency * o.utilization;
        m.compute_time_s = k.flops > 0 ? k.flops / m.effective_flops_per_s : 0.0;
        m.sram_bytes = input + output;
        m.noc_bytes = input + output;
    }
    m.sram_bandwidth = hw.tile_sram_bandwidth * m.units_allocated;
    m.noc_bandwidth = hw.noc_bandwidth * m.units_allocated;
    m.dram_bandwidth = hw.base.dram_bandwidth * hw.base.memory_efficiency;

    // The slowest level bounds the memory time; levels without a bandwidth are not reported.
    const char* slowest = "dram";
    provenance slowest_source = hw.base.memory_provenance;
    m.memory_time_s = m.dram_bytes / m.dram_bandwidth;
    auto level = [&](double bytes, double bandwidth, const char* name, provenance source) {
        if (bandwidth <= 0 || bytes <= 0) return;
        const double t = bytes / bandwidth;
        if (t > m.memory_time_s) {
            m.memory_time_s = t;
            slowest = name;
            slowest_source = source;
        }
    };
    level(m.sram_bytes, m.sram_bandwidth, "tile_sram", hw.tile_sram_provenance);
    level(m.noc_bytes, m.noc_bandwidth, "noc", hw.noc_provenance);

    switch (modeling::limiting_term(m.compute_time_s, m.memory_time_s, m.launch_overhead_s)) {
        case modeling::limit::overhead:
            m.bottleneck = "overhead";
            m.confidence = hw.setup_provenance;
            break;
        case modeling::limit::compute:
            m.bottleneck = "compute";
            m.confidence = u.efficiency_provenance;
            break;
        case modeling::limit::memory:
            m.bottleneck = "memory:";
            m.bottleneck += slowest;
            m.confidence = slowest_source;
            break;
    }

    if (!k.explain) return m;  // the caller keeps totals only

    // "MatMul on kpu_tile: 16x16 blocks of 16x16 on 64 of 64 tiles, 4 waves, 100% of PE slots,
    // K 512: 1024 stream + 32 fill/drain cycles a block (97%); working set 1.5 MB of 16.8 MB
    // SRAM -> compute-bound"
    std::string& e = m.explanation;
    e.reserve(220 + k.what.size());
    e += k.what.empty() ? std::string_view("kernel") : std::string_view(k.what);
    e += " on ";
    e += m.unit;
    e += ": ";
    if (m.matrix) {
        append_number(e, m.blocks.row_blocks, 0, true);
        e += 'x';
        append_number(e, m.blocks.col_blocks, 0, true);
        e += " blocks of ";
        append_number(e, hw.tile_rows, 0, true);
        e += 'x';
        append_number(e, hw.tile_cols, 0, true);
        e += " on ";
    }
    modeling::append_units_and_waves(e, m.units_allocated, hw.tiles, "tile", m.waves);
    append_percent(e, m.utilization);
    e += " of PE slots";
    if (m.matrix) {
        e += ", K ";
        append_short_number(e, m.blocks.k);
        e += ": ";
        append_short_number(e, m.blocks.stream_cycles);
        e += " stream + ";
        append_number(e, m.blocks.fill_cycles, 0, true);
        e += " fill/drain cycles a block (";
        append_percent(e, m.blocks.stream_cycles / (m.blocks.stream_cycles + m.blocks.fill_cycles));
        e += ')';
        e += "; working set ";
        append_short_number(e, m.working_set_bytes / 1e6);
        e += " MB";
        if (m.spill_passes > 1) {
            e += " > ";
            append_short_number(e, hw.sram_capacity() / 1e6);
            e += " MB SRAM: ";
            append_number(e, m.spill_passes, 0, true);
            e += " passes, +";
            append_short_number(e, m.spill_bytes / 1e6);
            e += " MB DRAM";
        } else {
            e += " fits ";
            append_short_number(e, hw.sram_capacity() / 1e6);
            e += " MB SRAM";
        }
    } else {
        e += ", elementwise stream";
    }
    modeling::append_verdict(e, m.bottleneck, m.launch_overhead_s, "setup",
                             std::max(m.compute_time_s, m.memory_time_s));
    return m;
}

}  // namespace nnergy::kpu
