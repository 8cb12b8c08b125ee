// SPDX-License-Identifier: Apache-2.0
// The architectural events each class architecture counts for the energy estimator
// (docs/hardware.md, "Energy"), on one MatMul of 256 x 512 by 512 x 256 stored in float32 and
// run in a 16-bit precision, with the counts worked out by hand from the kernel and from the
// traffic the architecture itself reports in its memory levels.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "catalog_file.hpp"
#include "cpu_architecture.hpp"
#include "fake_host.hpp"
#include "gpu_architecture.hpp"
#include "kpu_architecture.hpp"
#include "reference_architecture.hpp"
#include "tpu_architecture.hpp"

using nnergy::test::loaded;

namespace {

constexpr double k_macs = 256.0 * 256 * 512;

struct mapped {
    fake::mapping m;

    template <class Architecture>
    mapped(const char* hardware, nnergy_dtype precision, Architecture*) {
        fake::install();
        const loaded hw{hardware};
        fake::config cfg;
        nnergy_create_args args = fake::create_args(cfg);
        args.hardware = hw.named.data();
        args.hardware_count = hw.named.size();
        const Architecture arch{nnergy::sdk::context(args)};
        fake::graph g;
        g.tensor_dtypes = {NNERGY_DTYPE_FLOAT32};
        g.nodes.push_back({"fc", "MatMul", {0}, {}});
        fake::partition p;
        fake::kernel k{"fc", "matmul", {0}, {}};
        k.stats.macs = k_macs;
        k.stats.flops = 2 * k_macs;
        k.stats.input_bytes = 524288;   // 256 x 512 float32
        k.stats.weight_bytes = 524288;  // 512 x 256 float32
        k.stats.output_bytes = 262144;  // 256 x 256 float32
        k.stats.total_threads = 65536;
        k.stats.channels = 256;
        k.stats.groups = 1;
        k.stats.anchor_node = 0;
        k.stats.all_counted = true;
        p.kernels.push_back(k);
        const nnergy_map_options opt{sizeof(nnergy_map_options), precision, 0};
        nnergy::sdk::mapping_writer out(reinterpret_cast<nnergy_mapping*>(&m));
        arch.map_kernel(nnergy::sdk::graph_view(reinterpret_cast<const nnergy_graph*>(&g)),
                        nnergy::sdk::partition_view(reinterpret_cast<const nnergy_partition*>(&p)),
                        0, opt, out);
    }

    double event(const std::string& category, const std::string& name) const {
        for (const fake::event& e : m.events)
            if (e.category == category && e.name == name) return e.count;
        FAIL("no event " << category << "." << name);
        return 0;
    }
    double level(const std::string& name) const {
        for (const fake::level& l : m.levels)
            if (l.name == name) return l.bytes;
        FAIL("no level " << name);
        return 0;
    }
};

}  // namespace

TEST_CASE("events: GPU", "[events]") {
    const mapped x("h100-sxm5", NNERGY_DTYPE_FLOAT16,
                   static_cast<nnergy::gpu::gpu_architecture*>(nullptr));
    const double dram = x.level("dram");
    CHECK(dram == Approx(655360));  // 1.25 MiB of float32 bytes, halved
    CHECK(x.event("compute", "tensor_core.float16") == 2 * k_macs);
    // Every byte crosses the L2; a graph this small stays in its 50 MB from one pass to the
    // next, so none comes from HBM (the latency's memory level still prices every byte).
    CHECK(x.event("memory", "dram") == 0);
    CHECK(x.event("memory", "l2") == dram);
    // 128 x 128 tensor-core tiles (gemm.float16): each MAC's 2-byte operands are reused 128
    // times along each side: MACs x 2 B x (1/128 + 1/128).
    const double shared = k_macs * 2 * (2.0 / 128);
    CHECK(x.event("memory", "shared") == Approx(shared));
    CHECK(x.event("memory", "register_file") == Approx(shared + dram));
    CHECK(x.event("control", "warp_instruction") ==
          Approx(2 * k_macs / 4096 + (shared + dram) / 512));
    CHECK(x.event("control", "launch") == 1);
}

TEST_CASE("events: CPU", "[events]") {
    const mapped x("xeon-8490h", NNERGY_DTYPE_BFLOAT16,
                   static_cast<nnergy::cpu::cpu_architecture*>(nullptr));
    const std::string unit = x.m.texts.at("unit");
    REQUIRE(unit == "amx");
    const fake::level& served = x.m.levels.at(0);
    CHECK(x.event("compute", "amx.bfloat16") == 2 * k_macs);
    CHECK(x.event("memory", "register_file") == served.bytes);
    CHECK(x.event("memory", "l1") == served.bytes);
    if (served.name != "l1") CHECK(x.event("memory", served.name) == served.bytes);
    // AMX works on 1 KiB tile registers: 512 bfloat16 lanes, 2 FLOP each per instruction.
    CHECK(x.event("control", "instruction") == Approx(2 * k_macs / 1024 + served.bytes / 1024));
    CHECK(x.event("control", "launch") == 1);
}

TEST_CASE("events: TPU", "[events]") {
    const mapped x("tpu-v4", NNERGY_DTYPE_BFLOAT16,
                   static_cast<nnergy::tpu::tpu_architecture*>(nullptr));
    CHECK(x.event("compute", "mxu.bfloat16") == 2 * k_macs);
    const double dram = x.level("dram");
    CHECK(x.event("memory", "dram") == dram);
    CHECK(x.event("memory", "vmem") == x.level("vmem"));
    // 128 x 128 arrays: K 512 in 4 reduction tiles, N 256 in 2 column tiles, 8 tiles on 8 MXUs
    // (no copies): weights load once (256 KiB of bfloat16), and each of the 65536 outputs' 4-byte
    // partial sums is written and read once per reduction tile.
    CHECK(x.m.numbers.at("weight_tiles") == 8);
    CHECK(x.event("memory", "weight_load") == Approx(262144));
    CHECK(x.event("memory", "accumulator") == Approx(65536.0 * 4 * 2 * 4));
    CHECK(x.event("control", "dma") == std::ceil(dram / 4096));
    CHECK(x.event("control", "launch") == 1);
}

TEST_CASE("events: KPU", "[events]") {
    const mapped x("kpu-t64", NNERGY_DTYPE_BFLOAT16,
                   static_cast<nnergy::kpu::kpu_architecture*>(nullptr));
    CHECK(x.event("compute", "kpu_tile.bfloat16") == 2 * k_macs);
    CHECK(x.event("memory", "tile_sram") == x.level("tile_sram"));
    // 64 busy tiles: operands travel sqrt(64) / 2 = 4 hops; one token per 2-byte element.
    CHECK(x.event("memory", "noc") == Approx(x.level("noc") * 4));
    CHECK(x.event("control", "token_routing") == Approx(x.level("noc") / 2));
    CHECK(x.event("memory", "dram") == x.level("dram"));
    CHECK(x.event("control", "dma") == std::ceil(x.level("dram") / 4096));
    CHECK(x.event("control", "launch") == 1);
}

TEST_CASE("events: reference", "[events]") {
    const mapped x("coral-edge-tpu", NNERGY_DTYPE_INT8,
                   static_cast<nnergy::reference::reference_architecture*>(nullptr));
    const std::string unit = x.m.texts.at("unit");
    CHECK(x.event("compute", unit + ".int8") == 2 * k_macs);
    CHECK(x.event("memory", "dram") == x.level("dram"));
    CHECK(x.event("control", "launch") == 1);
}
