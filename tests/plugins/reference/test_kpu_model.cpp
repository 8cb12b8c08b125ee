// SPDX-License-Identifier: Apache-2.0
// The KPU (domain flow) architecture model on the kpu-t64 / t256 / t768 catalog files: cycles of
// output-stationary blocks, padding, waves, elementwise streaming, memory levels and spills,
// checked against values computed by hand in the comments.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "catalog_file.hpp"
#include "fake_host.hpp"
#include "kpu_architecture.hpp"
#include "kpu_model.hpp"

using nnergy::test::loaded;
namespace kpu = nnergy::kpu;

namespace {

struct kpu_file {
    loaded file;
    kpu::kpu_hardware hw;
    explicit kpu_file(const char* name)
        : file(name), hw(kpu::kpu_hardware::from_config(file.view())) {}

    kpu::kpu_mapping map(const char* precision, const kpu::kpu_kernel& k) const {
        return kpu::map_kernel(hw, *hw.base.find(precision), k);
    }
};

/// C[M x N] = A[M x K] x W[K x N] in `bytes` per element.
kpu::kpu_kernel gemm(double m, double n, double k, double bytes = 4) {
    kpu::kpu_kernel g;
    g.what = "MatMul";
    g.outputs = m * n;
    g.out_channels = n;
    g.macs = m * n * k;
    g.flops = 2 * g.macs;
    g.input_bytes = m * k * bytes;
    g.weight_bytes = k * n * bytes;
    g.output_bytes = m * n * bytes;
    g.element_bytes = bytes;
    return g;
}

/// The roofline estimator's latency: max(compute, slowest level) + setup.
double latency(const kpu::kpu_mapping& m) {
    return std::max(m.compute_time_s, m.memory_time_s) + m.launch_overhead_s;
}

/// The error from_config raises for a file whose value `key` is replaced by `value`.
std::string error_with(const char* file, std::string_view key, double value) {
    loaded f{file};
    bool found = false;
    for (nnergy_named_value& v : f.named)
        if (nnergy::sdk::from_sv(v.name) == key) {
            v.float_value = value;
            found = true;
        }
    REQUIRE(found);
    try {
        (void)kpu::kpu_hardware::from_config(f.view());
    } catch (const nnergy::sdk::error& e) {
        return e.what();
    }
    FAIL("expected an nnergy::sdk::error for " << key);
    return {};
}

}  // namespace

TEST_CASE("kpu: the catalog files describe the tile fabric", "[kpu]") {
    for (const char* name : {"kpu-t64", "kpu-t256", "kpu-t768"}) {
        const kpu_file f{name};
        INFO(name);
        CHECK(f.hw.tiles == f.hw.base.units);
        CHECK(f.hw.tile_rows == 16);
        CHECK(f.hw.tile_cols == 16);
        CHECK(f.hw.clock_hz == Approx(1e9));
        CHECK(f.hw.tile_sram_bytes == 256 * 1024);
        CHECK(f.hw.tile_sram_bandwidth == Approx(128e9));
        CHECK(f.hw.noc_bandwidth == Approx(64e9));
        CHECK(f.hw.kernel_setup_s == Approx(1e-6));
        CHECK(f.hw.setup_provenance == kpu::provenance::theoretical);
        CHECK(f.hw.stream_ops_per_pe == 1);
        // 256 GFLOP/s per tile at 1 GHz over 256 PEs: half a MAC per PE per cycle in fp32,
        // doubled for bfloat16 and again for int8.
        CHECK(f.hw.macs_per_pe_cycle(f.hw.base.find("float32")->matrix) == Approx(0.5));
        CHECK(f.hw.macs_per_pe_cycle(f.hw.base.find("bfloat16")->matrix) == Approx(1));
        CHECK(f.hw.macs_per_pe_cycle(f.hw.base.find("int8")->matrix) == Approx(2));
    }
}

TEST_CASE("kpu: GEMM cycles, computed by hand", "[kpu]") {
    const kpu_file t64{"kpu-t64"};
    // 256 x 256 x 512 fp32: 16 x 16 = 256 blocks over 64 tiles = 4 waves; a block streams
    // K / 0.5 = 1024 cycles plus 16 + 16 of fill and drain: 4 x 1056 = 4224 cycles = 4.224 us.
    const kpu::kpu_mapping m = t64.map("float32", gemm(256, 256, 512));
    CHECK(m.matrix);
    CHECK(m.unit == "kpu_tile");
    CHECK(m.blocks.row_blocks == 16);
    CHECK(m.blocks.col_blocks == 16);
    CHECK(m.waves == 4);
    CHECK(m.units_allocated == 64);
    CHECK(m.blocks.cycles == Approx(4224));
    CHECK(m.compute_time_s == Approx(4.224e-6));
    CHECK(m.utilization == Approx(1.0));
    CHECK(m.compute_efficiency == Approx(1024.0 / 1056));
    CHECK(m.effective_flops_per_s == Approx(2 * 256.0 * 256 * 512 / 4.224e-6));
    CHECK(m.effective_flops_per_s == Approx(m.peak_flops_per_s * 1024.0 / 1056));
    // Tile SRAM: every block streams 16 x 512 inputs and 512 x 16 weights:
    // (256 x 512 x 16 + 512 x 256 x 16) x 4 B + 256 KiB of outputs = 17,039,360 B.
    CHECK(m.sram_bytes == Approx(17039360));
    CHECK(m.sram_bandwidth == Approx(64 * 128e9));
    // NoC: inputs to 16 column blocks (8 MiB), weights to the 64 / 16 = 4 tiles of each column
    // block (2 MiB), outputs once (256 KiB).
    CHECK(m.noc_bytes == Approx(10747904));
    CHECK(m.noc_bandwidth == Approx(64 * 64e9));
    // DRAM: compulsory only (the working set fits 16 MiB of SRAM): 1,310,720 B at 25.6 GB/s
    // = 51.2 us, more than the compute.
    CHECK(m.spill_passes == 1);
    CHECK(m.dram_bytes == Approx(524288 + 524288 + 262144));
    CHECK(m.memory_time_s == Approx(51.2e-6));
    CHECK(m.bottleneck == "memory:dram");
    CHECK(m.launch_overhead_s == Approx(1e-6));
    CHECK(m.explanation ==
          "MatMul on kpu_tile: 16x16 blocks of 16x16 on 64 of 64 tiles, 4 waves, 100% of PE "
          "slots, K 512: 1024 stream + 32 fill/drain cycles a block (97%); working set 0.721 MB "
          "fits 16.8 MB SRAM -> memory-bound (dram)");

    // bfloat16 streams a MAC per PE per cycle: 4 x (512 + 32) = 2176 cycles.
    const kpu::kpu_mapping h = t64.map("bfloat16", gemm(256, 256, 512, 2));
    CHECK(h.blocks.cycles == Approx(2176));
    CHECK(h.compute_time_s == Approx(2.176e-6));
}

TEST_CASE("kpu: padding of partial blocks shows up as utilization", "[kpu]") {
    const kpu_file t64{"kpu-t64"};
    // 120 x 120 needs the same 8 x 8 = 64 blocks as 128 x 128: same cycles, fewer useful MACs.
    const kpu::kpu_mapping full = t64.map("float32", gemm(128, 128, 256));
    const kpu::kpu_mapping padded = t64.map("float32", gemm(120, 120, 256));
    CHECK(full.blocks.blocks == 64);
    CHECK(padded.blocks.blocks == 64);
    CHECK(padded.waves == 1);
    CHECK(padded.compute_time_s == Approx(full.compute_time_s));
    CHECK(full.utilization == Approx(1.0));
    CHECK(padded.utilization == Approx(14400.0 / 16384));
    CHECK(padded.effective_flops_per_s == Approx(full.effective_flops_per_s * 14400.0 / 16384));
    // Fewer blocks than tiles leave tiles idle: 2 blocks on 64 tiles.
    const kpu::kpu_mapping narrow = t64.map("float32", gemm(32, 16, 256));
    CHECK(narrow.units_allocated == 2);
    CHECK(narrow.utilization == Approx(512.0 / (64 * 256)));
}

TEST_CASE("kpu: blocks beyond the tiles run in waves", "[kpu]") {
    const kpu_file t64{"kpu-t64"};
    const kpu::kpu_mapping one = t64.map("float32", gemm(128, 128, 256));
    // 136 columns: 8 x 9 = 72 blocks, 2 waves; the second holds 8 blocks.
    const kpu::kpu_mapping two = t64.map("float32", gemm(128, 136, 256));
    CHECK(one.waves == 1);
    CHECK(two.waves == 2);
    CHECK(two.blocks.cycles == Approx(2 * (512 + 32)));
    CHECK(two.compute_time_s == Approx(2 * one.compute_time_s));
    CHECK(two.utilization == Approx(128.0 * 136 / (2 * 64 * 256)));
    // The larger KPU holds all 72 blocks in one wave.
    const kpu_file t256{"kpu-t256"};
    CHECK(t256.map("float32", gemm(128, 136, 256)).waves == 1);
}

TEST_CASE("kpu: a depthwise convolution is dominated by fill and drain", "[kpu]") {
    const kpu_file t64{"kpu-t64"};
    // 3x3 depthwise, 64 channels, 56 x 56 outputs, fp32: K = 9 -> 18 stream cycles against
    // 32 of fill and drain a block; 196 x 4 = 784 blocks, 13 waves of 50 cycles = 650 cycles.
    kpu::kpu_kernel dw;
    dw.what = "depthwise Conv 3x3";
    dw.outputs = 3136 * 64;
    dw.out_channels = 64;
    dw.groups = 64;
    dw.macs = dw.outputs * 9;
    dw.flops = 2 * dw.macs;
    dw.input_bytes = 3136 * 64 * 4;
    dw.weight_bytes = 64 * 9 * 4;
    dw.output_bytes = 3136 * 64 * 4;
    const kpu::kpu_mapping m = t64.map("float32", dw);
    CHECK(m.blocks.k == Approx(9));
    CHECK(m.waves == 13);
    CHECK(m.blocks.cycles == Approx(650));
    CHECK(m.compute_efficiency == Approx(18.0 / 50));
    CHECK(m.utilization == Approx(200704.0 / (13 * 64 * 256)));
    CHECK(m.effective_flops_per_s < 0.36 * m.peak_flops_per_s);
    // No input reuse along a block's row: each column streams its own channel's window
    // (3136 x 9 x 4 x 16 inputs), weights per row block (9 x 64 x 196), outputs once.
    CHECK(m.sram_bytes == Approx((1806336.0 + 112896) * 4 + 802816));
    // Each channel's input reaches only its own column block; the weights reach the 16 tiles
    // of each of the 4 column blocks.
    CHECK(m.noc_bytes == Approx(802816 + 2304.0 * 16 + 802816));
    // A 3x3 convolution of 64 to 64 channels (K 576) streams far longer per block.
    kpu::kpu_kernel conv = dw;
    conv.groups = 1;
    conv.macs = dw.outputs * 576;
    conv.flops = 2 * conv.macs;
    CHECK(t64.map("float32", conv).compute_efficiency == Approx(1152.0 / 1184));
}

TEST_CASE("kpu: DRAM sees only compulsory traffic until the working set spills", "[kpu]") {
    const kpu_file t64{"kpu-t64"};
    // 64 tokens x 1024 x 1024 fp32: 4 MiB of weights + a 128 KiB slab fit 16 MiB of SRAM.
    const kpu::kpu_mapping fits = t64.map("float32", gemm(64, 1024, 1024));
    CHECK(fits.spill_passes == 1);
    CHECK(fits.spill_bytes == 0);
    CHECK(fits.working_set_bytes == Approx(4194304 + 131072));
    CHECK(fits.dram_bytes == Approx(262144 + 262144 + 4194304));

    // 64 x 4096 x 4096: 64 MiB of weights + a 0.5 MiB slab (one of four row blocks a wave)
    // need ceil(64.5 / 16) = 5 passes; the 1 MiB of inputs is streamed 4 more times.
    const kpu::kpu_kernel big = gemm(64, 4096, 4096);
    const kpu::kpu_mapping spills = t64.map("float32", big);
    CHECK(spills.working_set_bytes == Approx(67108864 + 524288));
    CHECK(spills.spill_passes == 5);
    CHECK(spills.spill_bytes == Approx(4 * 1048576));
    CHECK(spills.dram_bytes == Approx(1048576 + 1048576 + 67108864 + 4 * 1048576));
    CHECK(spills.bottleneck == "memory:dram");
    CHECK_THAT(spills.explanation, Catch::Contains("> 16.8 MB SRAM: 5 passes, +4.19 MB DRAM"));

    // 768 tiles hold 192 MiB: the same GEMM does not spill there.
    const kpu_file t768{"kpu-t768"};
    const kpu::kpu_mapping fits768 = t768.map("float32", big);
    CHECK(fits768.spill_passes == 1);
    CHECK(fits768.dram_bytes == Approx(1048576 + 1048576 + 67108864));
}

TEST_CASE("kpu: the larger KPU is faster on a large GEMM", "[kpu]") {
    const kpu::kpu_kernel k = gemm(4096, 4096, 4096);
    const kpu::kpu_mapping t64 = kpu_file{"kpu-t64"}.map("float32", k);
    const kpu::kpu_mapping t256 = kpu_file{"kpu-t256"}.map("float32", k);
    const kpu::kpu_mapping t768 = kpu_file{"kpu-t768"}.map("float32", k);
    // 256 x 256 blocks of 8192 + 32 cycles: 1024, 256 and 86 waves.
    CHECK(t64.blocks.cycles == Approx(1024 * 8224));
    CHECK(t256.blocks.cycles == Approx(256 * 8224));
    CHECK(t768.blocks.cycles == Approx(86 * 8224));
    CHECK(t256.compute_time_s < t64.compute_time_s);
    CHECK(t768.compute_time_s < t256.compute_time_s);
    CHECK(latency(t256) < latency(t64));
    CHECK(latency(t768) < latency(t256));

    // 8192^3 on T768: 342 waves of 16384 + 32 cycles = 5.614 ms of compute against 1 GiB of
    // DRAM (3 x 256 MiB compulsory + 256 MiB re-read: 258 MiB of working set need 2 passes over
    // 192 MiB of SRAM) at 204.8 GB/s = 5.243 ms: compute-bound.
    const kpu::kpu_mapping huge = kpu_file{"kpu-t768"}.map("float32", gemm(8192, 8192, 8192));
    CHECK(huge.compute_time_s == Approx(342 * 16416e-9));
    CHECK(huge.spill_passes == 2);
    CHECK(huge.dram_bytes == Approx(4 * 268435456.0));
    CHECK(huge.bottleneck == "compute");
}

TEST_CASE("kpu: work without MACs streams through the PEs", "[kpu]") {
    const kpu_file t64{"kpu-t64"};
    // Relu over 1e6 fp32 elements: 64 x 256 PEs x 1 GHz x 1 op = 16.384 TOP/s; 1e6 elements
    // in 62 waves of 16384 PE slots.
    kpu::kpu_kernel relu;
    relu.what = "Relu";
    relu.flops = 1e6;
    relu.threads = 1e6;
    relu.outputs = 1e6;
    relu.input_bytes = 4e6;
    relu.output_bytes = 4e6;
    const kpu::kpu_mapping m = t64.map("float32", relu);
    CHECK_FALSE(m.matrix);
    CHECK(m.unit == "pe_stream");
    CHECK(m.peak_flops_per_s == Approx(16.384e12));
    CHECK(m.waves == 62);
    CHECK(m.utilization == Approx(1e6 / (62 * 16384.0)));
    CHECK(m.effective_flops_per_s == Approx(16.384e12 * 1e6 / (62 * 16384.0)));
    CHECK(m.sram_bytes == Approx(8e6));
    CHECK(m.spill_bytes == 0);
    CHECK(m.dram_bytes == Approx(8e6));
    // 8 MB at 25.6 GB/s = 312.5 us, far above the 62 ns of compute.
    CHECK(m.memory_time_s == Approx(312.5e-6));
    CHECK(m.bottleneck == "memory:dram");
}

TEST_CASE("kpu: a tiny kernel is bound by the per-kernel setup", "[kpu]") {
    const kpu_file t64{"kpu-t64"};
    // 16 x 16 x 16: one block of 32 + 32 cycles = 64 ns; 3 KiB of DRAM traffic at 25.6 GB/s
    // = 120 ns; both well below the 1 us setup.
    const kpu::kpu_mapping m = t64.map("float32", gemm(16, 16, 16));
    CHECK(m.blocks.cycles == Approx(64));
    CHECK(m.bottleneck == "overhead");
    CHECK(m.confidence == kpu::provenance::theoretical);
    CHECK_THAT(m.explanation, Catch::EndsWith("-> overhead-bound (1 us setup > 120 ns work)"));
}

TEST_CASE("kpu: invalid [kpu] values name the file, line and key", "[kpu]") {
    std::string e = error_with("kpu-t64", "kpu.tile_rows", 0);
    CHECK_THAT(e, Catch::Contains("kpu-t64.toml:"));
    CHECK_THAT(e, Catch::Contains("'kpu.tile_rows' must be a whole number of at least 1, got 0"));
    e = error_with("kpu-t256", "kpu.tile_cols", 2.5);
    CHECK_THAT(e, Catch::Contains("'kpu.tile_cols' must be a whole number of at least 1, got 2.5"));
    e = error_with("kpu-t768", "kpu.tiles", 512);
    CHECK_THAT(e, Catch::Contains("kpu-t768.toml:"));
    CHECK_THAT(e, Catch::Contains("'kpu.tiles' (512) differs from 'compute.units' (768)"));
    e = error_with("kpu-t64", "kpu.noc_bandwidth", -1);
    CHECK_THAT(e, Catch::Contains("'kpu.noc_bandwidth' must be at least 0, got -1"));
    e = error_with("kpu-t64", "kpu.clock", 0);
    CHECK_THAT(e, Catch::Contains("'kpu.clock' must be a positive number, got 0"));

    // A missing required key names the hardware and the key.
    loaded f{"kpu-t64"};
    f.named.erase(std::remove_if(f.named.begin(), f.named.end(),
                                 [](const nnergy_named_value& v) {
                                     return nnergy::sdk::from_sv(v.name) == "kpu.tile_sram";
                                 }),
                  f.named.end());
    CHECK_THROWS_WITH(kpu::kpu_hardware::from_config(f.view()),
                      Catch::Contains("hardware 'kpu-t64'") &&
                          Catch::Contains("missing required number 'kpu.tile_sram'"));
}

TEST_CASE("kpu: the architecture plugin writes the mapping keys", "[kpu]") {
    fake::install();
    const loaded hw{"kpu-t64"};
    fake::config cfg;  // the host keeps `hardware` and `precision` to itself
    nnergy_create_args args = fake::create_args(cfg);
    args.hardware = hw.named.data();
    args.hardware_count = hw.named.size();
    const nnergy::kpu::kpu_architecture arch{nnergy::sdk::context(args)};

    // A float32 MatMul of 256 x 512 by 512 x 256, run in bfloat16.
    fake::graph g;
    g.tensor_dtypes = {NNERGY_DTYPE_FLOAT32};
    g.nodes.push_back({"fc", "MatMul", {0}, {}});
    fake::partition p;
    fake::kernel k{"fc", "matmul", {0}, {}};
    k.stats.macs = 256.0 * 256 * 512;
    k.stats.flops = 2 * k.stats.macs;
    k.stats.input_bytes = 524288;
    k.stats.weight_bytes = 524288;
    k.stats.output_bytes = 262144;
    k.stats.total_threads = 65536;
    k.stats.channels = 256;
    k.stats.groups = 1;
    k.stats.anchor_node = 0;
    k.stats.all_counted = true;
    p.kernels.push_back(k);

    fake::mapping m;
    const nnergy_map_options opt{sizeof(nnergy_map_options), NNERGY_DTYPE_BFLOAT16, 0};
    nnergy::sdk::mapping_writer out(reinterpret_cast<nnergy_mapping*>(&m));
    arch.map_kernel(nnergy::sdk::graph_view(reinterpret_cast<const nnergy_graph*>(&g)),
                    nnergy::sdk::partition_view(reinterpret_cast<const nnergy_partition*>(&p)), 0,
                    opt, out);

    // bfloat16: 4 waves of 512 + 32 cycles = 2.176 us; bytes halved (2 B elements).
    CHECK(m.texts["unit"] == "kpu_tile");
    CHECK(m.texts["schedule"] == "matrix");
    CHECK(m.texts["op_class"] == "gemm");
    CHECK(m.numbers["peak_flops_per_s"] == Approx(32.768e12));
    CHECK(m.numbers["effective_flops_per_s"] == Approx(2 * 256.0 * 256 * 512 / 2.176e-6));
    CHECK(m.numbers["units_available"] == 64);
    CHECK(m.numbers["units_allocated"] == 64);
    CHECK(m.numbers["utilization"] == Approx(1.0));
    CHECK(m.numbers["waves"] == 4);
    CHECK(m.numbers["cycles"] == Approx(2176));
    CHECK(m.numbers["launch_overhead_s"] == Approx(1e-6));
    CHECK(m.numbers["bytes_scale"] == 0.5);
    REQUIRE(m.levels.size() == 3);
    // SRAM: (2,097,152 + 2,097,152) operands x 2 B + 128 KiB of outputs.
    CHECK(m.levels[0].name == "tile_sram");
    CHECK(m.levels[0].bytes == Approx(8519680));
    CHECK(m.levels[0].bandwidth == Approx(64 * 128e9));
    // NoC: 256 KiB of inputs x 16 column blocks + 256 KiB of weights x 4 tiles + outputs.
    CHECK(m.levels[1].name == "noc");
    CHECK(m.levels[1].bytes == Approx(5373952));
    CHECK(m.levels[1].bandwidth == Approx(64 * 64e9));
    CHECK(m.levels[2].name == "dram");
    CHECK(m.levels[2].bytes == Approx(655360));
    CHECK(m.levels[2].bandwidth == Approx(25.6e9));
    CHECK(m.texts["bottleneck"] == "memory:dram");
    CHECK(m.texts["confidence"] == "theoretical");
    CHECK_THAT(m.texts["explanation"], Catch::StartsWith("MatMul on kpu_tile: 16x16 blocks"));
}
