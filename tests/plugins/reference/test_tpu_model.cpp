// SPDX-License-Identifier: Apache-2.0
// The TPU architecture model (weight-stationary MXU tiles, waves, the vector unit, on-chip
// memory and parameter caching) on the TPU catalog files, against values computed by hand.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "catalog_file.hpp"
#include "tpu_model.hpp"

using nnergy::test::loaded;
namespace tpu = nnergy::tpu;

namespace {

struct chip {
    loaded file;
    tpu::tpu_hardware hw;
    explicit chip(const char* name) : file(name), hw(tpu::tpu_hardware::from_config(file.view())) {}

    tpu::tpu_mapping map(const char* precision, const tpu::tpu_kernel& k) const {
        const auto* p = hw.base.find(precision);
        REQUIRE(p);
        return tpu::map_kernel(hw, *p, k);
    }
};

/// A GEMM of M x K by K x N with one byte per element.
tpu::tpu_kernel gemm(double m, double k, double n) {
    tpu::tpu_kernel g;
    g.what = "MatMul";
    g.macs = m * k * n;
    g.flops = 2 * g.macs;
    g.outputs = m * n;
    g.out_channels = n;
    g.threads = g.outputs;
    g.input_bytes = m * k;
    g.weight_bytes = k * n;
    g.output_bytes = m * n;
    return g;
}

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const nnergy::sdk::error& e) {
        return e.what();
    }
    FAIL("expected an nnergy::sdk::error");
    return {};
}

}  // namespace

TEST_CASE("tpu: the catalog files describe their arrays, vector units and VMEM", "[tpu]") {
    const chip v4("tpu-v4");
    REQUIRE(v4.hw.array);
    CHECK(v4.hw.array->mxus() == 8);
    CHECK(v4.hw.array->rows == 128);
    CHECK(v4.hw.array->cols == 128);
    CHECK(v4.hw.array->clock_hz == Approx(1049e6));
    CHECK(v4.hw.vector_lanes == 128);
    CHECK(v4.hw.vector_sublanes == 8);
    REQUIRE(v4.hw.on_chip);
    CHECK(v4.hw.on_chip->name == "vmem");
    CHECK(v4.hw.on_chip->capacity == 32.0 * 1024 * 1024);
    CHECK(v4.hw.on_chip->bandwidth == Approx(26.4e12));
    const auto* bf16 = v4.hw.base.find("bfloat16");
    REQUIRE(bf16);
    REQUIRE(bf16->vector);
    // 2 TensorCores x 8 x 128 lanes x 2 ALUs x 1049 MHz.
    CHECK(bf16->vector->peak_flops_per_s == Approx(2 * 8 * 128 * 2 * 1049e6).epsilon(1e-3));
    CHECK(v4.hw.vector_slots(*bf16->vector) == 2048);

    const chip v5e("tpu-v5e");
    REQUIRE(v5e.hw.array);
    CHECK(v5e.hw.array->mxus() == 4);
    CHECK(v5e.hw.on_chip->capacity == 128.0 * 1024 * 1024);
    CHECK(v5e.hw.base.find("int8")->vector);

    const chip coral("coral-edge-tpu");
    CHECK(!coral.hw.array);
    REQUIRE(coral.hw.parameter_cache);
    CHECK(coral.hw.parameter_cache->capacity == Approx(8e6));
    for (const char* name : {"tpu-v4", "tpu-v5e", "coral-edge-tpu"}) {
        INFO(name);
        const loaded h(name);
        for (const nnergy::config_value& v : h.values)
            if (v.kind == NNERGY_VALUE_FLOAT) CHECK(!v.source.empty());
    }
}

TEST_CASE("tpu: a GEMM's cycles by hand", "[tpu]") {
    const chip v4("tpu-v4");
    // M 512, K 256, N 384 on 8 MXUs of 128 x 128: 2 x 3 = 6 weight tiles, one wave (6 < 8,
    // and 8 / 6 leaves no whole copy to split M). Cycles: the first weight load (128), then
    // M 512 + rows 128 + cols 128 of streaming and skew = 896.
    const tpu::tpu_kernel k = gemm(512, 256, 384);
    const tpu::tpu_mapping m = v4.map("bfloat16", k);
    REQUIRE(m.plan);
    CHECK(m.plan->k_tiles == 2);
    CHECK(m.plan->n_tiles == 3);
    CHECK(m.plan->tiles == 6);
    CHECK(m.plan->splits == 1);
    CHECK(m.plan->waves == 1);
    CHECK(m.plan->cycles == 896);
    CHECK(m.plan->mxus_busy == 6);
    CHECK(m.unit == "mxu");
    CHECK(m.units_available == 8);
    // 50331648 MACs over 8 x 16384 cells x 896 cycles.
    const double util = 512.0 * 256 * 384 / (8 * 16384.0 * 896);
    CHECK(m.utilization == Approx(util));
    CHECK(m.utilization == Approx(0.428571).epsilon(1e-5));
    // Time: 896 cycles x 2 x 131072 cells / 275e12 = 0.854 us; effective = 2 MACs / time.
    CHECK(m.mxu_time_s == Approx(896 * 2 * 131072.0 / 275e12));
    CHECK(m.effective_flops_per_s == Approx(275e12 * util));
    CHECK(m.effective_flops_per_s == Approx(2 * k.macs / m.mxu_time_s));
    CHECK(m.compute_time_s == Approx(m.mxu_time_s));
    CHECK(m.vector_time_s > m.mxu_time_s);
    CHECK_THAT(m.explanation, Catch::Contains("6 weight tiles") && Catch::Contains("896 cycles"));
}

TEST_CASE("tpu: K = 64 pads to 128 rows and halves utilization", "[tpu]") {
    const chip v4("tpu-v4");
    // N 1024 -> 8 column tiles, one per MXU, one wave either way; same cycles, half the MACs.
    const tpu::tpu_mapping full = v4.map("bfloat16", gemm(4096, 128, 1024));
    const tpu::tpu_mapping half = v4.map("bfloat16", gemm(4096, 64, 1024));
    CHECK(full.plan->cycles == 128 + 4096 + 256);
    CHECK(half.plan->cycles == full.plan->cycles);
    CHECK(full.utilization == Approx(4096.0 * 128 * 1024 / (131072.0 * 4480)));
    CHECK(half.utilization == Approx(full.utilization / 2));
    CHECK(half.mxu_time_s == Approx(full.mxu_time_s));
    // A short stream cannot hide the fill and drain: M 1 keeps 1 / 385 of the cycles busy.
    const tpu::tpu_mapping tiny = v4.map("bfloat16", gemm(1, 128, 1024));
    CHECK(tiny.plan->cycles == 128 + 1 + 256);
}

TEST_CASE("tpu: weight tiles spread over the MXUs in waves", "[tpu]") {
    const chip v4("tpu-v4");
    // K 1024, N 1024: 8 x 8 = 64 tiles on 8 MXUs = 8 full waves of 4096 + 256 cycles after
    // the first weight load.
    const tpu::tpu_mapping eight = v4.map("bfloat16", gemm(4096, 1024, 1024));
    CHECK(eight.plan->tiles == 64);
    CHECK(eight.plan->waves == 8);
    CHECK(eight.plan->cycles == 128 + 8 * 4352);
    // N 1152: 72 tiles, a ninth wave with one tile per MXU; N 1032 pads its ninth column
    // tile from 8 columns to 128 and wastes most of that wave.
    const tpu::tpu_mapping nine = v4.map("bfloat16", gemm(4096, 1024, 1152));
    CHECK(nine.plan->waves == 9);
    const tpu::tpu_mapping ragged = v4.map("bfloat16", gemm(4096, 1024, 1032));
    CHECK(ragged.plan->waves == 9);
    CHECK(ragged.utilization < eight.utilization * 0.9);
    // Fewer tiles than MXUs: idle MXUs take copies of the tile and split M.
    const tpu::tpu_mapping one = v4.map("bfloat16", gemm(8192, 128, 128));
    CHECK(one.plan->tiles == 1);
    CHECK(one.plan->splits == 8);
    CHECK(one.plan->m_part == 1024);
    CHECK(one.plan->mxus_busy == 8);
    CHECK(one.plan->cycles == 128 + 1024 + 256);
}

TEST_CASE("tpu: depthwise convolutions choose the vector unit", "[tpu]") {
    const chip v4("tpu-v4");
    // 3x3 depthwise, 144 channels, 56 x 56: per group K 9, N 1 -> 144 tiles of 9 of 16384
    // cells, 18 waves of 3136 + 256 cycles.
    tpu::tpu_kernel dw;
    dw.what = "depthwise Conv 3x3";
    dw.outputs = 144.0 * 56 * 56;
    dw.out_channels = 144;
    dw.groups = 144;
    dw.macs = dw.outputs * 9;
    dw.flops = 2 * dw.macs;
    dw.threads = dw.outputs;
    dw.input_bytes = dw.output_bytes = 2 * dw.outputs;
    dw.weight_bytes = 2 * 144 * 9;
    const tpu::tpu_mapping m = v4.map("bfloat16", dw);
    REQUIRE(m.plan);
    CHECK(m.plan->tiles == 144);
    CHECK(m.plan->waves == 18);
    CHECK(m.plan->cycles == 128 + 18 * (3136 + 256));
    CHECK(m.mxu_time_s == Approx(61184 * 2 * 131072.0 / 275e12));
    // Vector: 451584 outputs on 2048 lanes = 221 waves (99.8% busy) at 4.297 TFLOP/s.
    const double vutil = 451584.0 / (221 * 2048);
    CHECK(m.vector_time_s == Approx(dw.flops / (4.297e12 * vutil)));
    CHECK(m.vector_time_s < m.mxu_time_s);
    CHECK(m.unit == "vpu");
    CHECK(m.units_available == 2);
    CHECK(m.utilization == Approx(vutil));
    CHECK(m.effective_flops_per_s == Approx(4.297e12 * vutil));
    CHECK_THAT(m.explanation, Catch::Contains("mxu would take"));
    // A large GEMM stays on the MXUs.
    CHECK(v4.map("bfloat16", gemm(4096, 1024, 1024)).unit == "mxu");
}

TEST_CASE("tpu: kernels without MACs run on the vector unit", "[tpu]") {
    const chip v5e("tpu-v5e");
    tpu::tpu_kernel relu;
    relu.what = "Relu";
    relu.flops = 1 << 20;
    relu.threads = 1 << 20;
    relu.input_bytes = relu.output_bytes = 2 << 20;
    const tpu::tpu_mapping m = v5e.map("bfloat16", relu);
    CHECK(m.unit == "vpu");
    CHECK(!m.plan);
    CHECK(m.utilization == 1);  // 1M elements fill 1024 slots exactly
    CHECK(m.bottleneck == "memory:dram");
    // VMEM: each operand once.
    CHECK(m.on_chip_bytes == Approx(4 << 20));
}

TEST_CASE("tpu: operands larger than VMEM are re-read from HBM", "[tpu]") {
    // Blocks of 64 MiB: weights of 200 MiB make 4 blocks, inputs of 100 MiB make 2. Streaming
    // the inputs per weight block re-reads 3 x 100 MiB; streaming the weights per input block
    // re-reads 1 x 200 MiB, the cheaper order.
    const double mib = 1024.0 * 1024;
    CHECK(tpu::reread_bytes(100 * mib, 200 * mib, 64 * mib) == Approx(200 * mib));
    CHECK(tpu::reread_bytes(100 * mib, 60 * mib, 64 * mib) == 0);
    const chip v5e("tpu-v5e");  // 128 MiB VMEM, half per block
    tpu::tpu_kernel k = gemm(4096, 25600, 4096);
    k.input_bytes = 100 * mib;
    k.weight_bytes = 200 * mib;
    k.output_bytes = 16 * mib;
    const tpu::tpu_mapping m = v5e.map("bfloat16", k);
    CHECK(m.dram_reread_bytes == Approx(200 * mib));
    CHECK(m.dram_bytes == Approx(516 * mib));
    CHECK_THAT(m.explanation, Catch::Contains("re-read"));
}

TEST_CASE("tpu: the Edge TPU caches parameters in its SRAM, in model order", "[tpu]") {
    const chip coral("coral-edge-tpu");
    tpu::tpu_kernel k = gemm(196, 1152, 256);  // about 0.3 MB of int8 weights
    k.weights_before = 1e6;
    tpu::tpu_mapping m = coral.map("int8", k);
    CHECK(m.weights_streamed_bytes == 0);
    CHECK(m.dram_bytes == Approx(k.input_bytes + k.output_bytes));
    CHECK(m.unit == "edgetpu");
    // 7.9 MB of earlier weights leave 0.1 MB: the rest streams over the host link.
    k.weights_before = 7.9e6;
    m = coral.map("int8", k);
    CHECK(m.weights_streamed_bytes == Approx(k.weight_bytes - 0.1e6));
    CHECK_THAT(m.explanation, Catch::Contains("weights streamed past the sram"));
    // Only int8 is offered.
    const auto e = error_of([&] { coral.hw.base.require(NNERGY_DTYPE_BFLOAT16); });
    CHECK(e.find("has no compute precision 'bfloat16' (available: int8)") != std::string::npos);
}

TEST_CASE("tpu: bad [tpu] values name the file, line and key", "[tpu]") {
    const loaded v4("tpu-v4");
    auto with = [&](const char* key, auto&& edit) {
        std::vector<nnergy_named_value> values = v4.named;
        bool found = false;
        for (nnergy_named_value& v : values)
            if (nnergy::sdk::from_sv(v.name) == key) {
                edit(v);
                found = true;
            }
        REQUIRE(found);
        return values;
    };
    SECTION("zero array rows") {
        const auto values = with("tpu.mxu_rows", [](nnergy_named_value& v) { v.float_value = 0; });
        const nnergy::sdk::config_view view(values.data(), values.size());
        const std::string where = nnergy::sdk::config_view::where(*view.find("tpu.mxu_rows"));
        CHECK(where.find("tpu-v4.toml:") != std::string::npos);
        CHECK(error_of([&] { tpu::tpu_hardware::from_config(view); }) ==
              where + ": 'tpu.mxu_rows' must be a whole number of at least 1, got 0");
    }
    SECTION("a fractional MXU count") {
        const auto values =
            with("tpu.mxus_per_tensorcore", [](nnergy_named_value& v) { v.float_value = 2.5; });
        const nnergy::sdk::config_view view(values.data(), values.size());
        CHECK(error_of([&] { tpu::tpu_hardware::from_config(view); }) ==
              nnergy::sdk::config_view::where(*view.find("tpu.mxus_per_tensorcore")) +
                  ": 'tpu.mxus_per_tensorcore' must be a whole number of at least 1, got 2.5");
    }
    SECTION("an on-chip level without a memory table") {
        static const std::string name = "l9";
        const auto values = with("tpu.on_chip", [](nnergy_named_value& v) {
            v.string_value = nnergy::sdk::to_sv(name);
        });
        const nnergy::sdk::config_view view(values.data(), values.size());
        const std::string e = error_of([&] { tpu::tpu_hardware::from_config(view); });
        CHECK(e.rfind(nnergy::sdk::config_view::where(*view.find("tpu.on_chip")) + ": ", 0) == 0);
        CHECK(e.find("'tpu.on_chip' names memory level 'l9'") != std::string::npos);
        CHECK(e.find("no 'memory.l9.capacity'") != std::string::npos);
    }
    SECTION("a half-described array") {
        std::vector<nnergy_named_value> values;
        for (const nnergy_named_value& v : v4.named)
            if (nnergy::sdk::from_sv(v.name) != "tpu.mxu_cols") values.push_back(v);
        const nnergy::sdk::config_view view(values.data(), values.size());
        const std::string e = error_of([&] { tpu::tpu_hardware::from_config(view); });
        CHECK(e.find("missing required number 'tpu.mxu_cols'") != std::string::npos);
        CHECK(e.find("tpu-v4.toml") != std::string::npos);
    }
}
