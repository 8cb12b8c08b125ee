// SPDX-License-Identifier: Apache-2.0
// The hardware catalog read through the host's loader: datasheet values are pinned here so they
// cannot drift, measured efficiencies are checked against the measurement files they cite, and
// every file maps a kernel in each of its precisions.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <nnergy/framework/host.hpp>

#include "catalog_file.hpp"
#include "fake_host.hpp"
#include "reference_architecture.hpp"

namespace {

using nnergy::test::k_source_dir;
using nnergy::test::loaded;

/// shared/validation beside the checkout, when present.
std::optional<nlohmann::json> validation(const std::string& rel) {
    std::ifstream in(k_source_dir / ".." / "shared" / "validation" / rel);
    if (!in) return std::nullopt;
    return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("h100-sxm5: datasheet values", "[hardware]") {
    const loaded h("h100-sxm5");
    // NVIDIA H100 whitepaper / datasheet, SXM5, dense.
    CHECK(h.number("compute.float32.peak") == Approx(66.9e12));
    CHECK(h.number("compute.tfloat32.peak") == Approx(494.7e12));
    CHECK(h.number("compute.float16.peak") == Approx(989.4e12));
    CHECK(h.number("compute.bfloat16.peak") == Approx(989.4e12));
    CHECK(h.number("compute.float8_e4m3.peak") == Approx(1978.9e12));
    CHECK(h.number("compute.int8.peak") == Approx(1978.9e12));
    CHECK(h.number("compute.float64.peak") == Approx(66.9e12));
    CHECK(h.number("compute.float64.vector.peak") == Approx(33.5e12));
    CHECK(h.number("memory.dram.bandwidth") == Approx(3.35e12));
    CHECK(h.number("memory.dram.capacity") == Approx(80e9));
    CHECK(h.number("memory.l2.capacity") == Approx(50e6));
    CHECK(h.number("compute.units") == 132);
    CHECK(h.number("compute.threads_per_unit") == 2048);
    CHECK(h.number("power.tdp") == 700);
}

TEST_CASE("h100-sxm5: measured constants match the measurements they cite", "[hardware]") {
    const loaded h("h100-sxm5");
    auto micro = validation("h100/micro.json");
    if (!micro) {
        WARN("../shared/validation is not beside the checkout; measured values not cross-checked");
        return;
    }
    auto gemm = [&](const std::string& dtype, bool tf32) {
        for (const auto& g : (*micro)["gemm"])
            if (g["dtype"] == dtype && g["tf32"] == tf32 && g["m"] == 8192)
                return g["tflops"].get<double>() * 1e12;
        FAIL("no 8192^3 GEMM for " << dtype);
        return 0.0;
    };
    // Efficiency = achieved 8192^3 GEMM rate / datasheet peak, written with 3 digits.
    CHECK(h.number("compute.float32.efficiency") ==
          Approx(gemm("float32", false) / 66.9e12).margin(5e-4));
    CHECK(h.number("compute.tfloat32.efficiency") ==
          Approx(gemm("float32", true) / 494.7e12).margin(5e-4));
    CHECK(h.number("compute.float16.efficiency") ==
          Approx(gemm("float16", false) / 989.4e12).margin(5e-4));
    CHECK(h.number("compute.bfloat16.efficiency") ==
          Approx(gemm("bfloat16", false) / 989.4e12).margin(5e-4));
    // Streaming add at the largest size, bytes read + written.
    const auto& add = (*micro)["elementwise"];
    double best_size = 0, gbps = 0;
    for (const auto& e : add)
        if (e["dtype"] == "float32" && e["bytes_moved"].get<double>() > best_size) {
            best_size = e["bytes_moved"].get<double>();
            gbps = e["gbps"].get<double>();
        }
    CHECK(h.number("efficiency.memory") == Approx(gbps * 1e9 / 3.35e12).margin(5e-4));
    CHECK(h.number("overhead.kernel_launch") ==
          Approx((*micro)["launch"]["graph_us_per_tiny_kernel"].get<double>() * 1e-6).margin(5e-9));
}

TEST_CASE("xeon host: measured peaks", "[hardware]") {
    const loaded x("xeon-5th-gen-16vcpu");
    auto models = validation("xeon-host/models.json");
    if (!models) {
        WARN("../shared/validation is not beside the checkout; measured values not cross-checked");
        return;
    }
    CHECK(x.number("compute.float32.peak") ==
          Approx((*models)["gemm4096_fp32_tflops"].get<double>() * 1e12).epsilon(1e-3));
    CHECK(x.number("compute.bfloat16.peak") ==
          Approx((*models)["gemm4096_bf16_tflops"].get<double>() * 1e12).epsilon(1e-3));
    CHECK(x.number("memory.dram.bandwidth") ==
          Approx((*models)["stream_add_gbps"].get<double>() * 1e9).epsilon(1e-3));
}

TEST_CASE("every catalog file maps a kernel in each of its precisions", "[hardware]") {
    fake::install();
    for (const char* name : {"h100-sxm5", "xeon-5th-gen-16vcpu"}) {
        INFO(name);
        const loaded h(name);
        for (const nnergy::config_value& v : h.values)
            if (v.kind == NNERGY_VALUE_FLOAT) CHECK(!v.source.empty());
        const auto hw = nnergy::modeling::hardware_model::from_config(h.view());
        CHECK(hw.name == name);
        for (const auto& p : hw.precisions) {
            nnergy::modeling::kernel_work k;
            k.macs = 1e9;
            k.flops = 2e9;
            k.input_bytes = 1e7;
            k.threads = 1e6;
            const auto m = nnergy::reference::map_kernel(hw, p, k);
            CHECK(m.effective_flops_per_s > 0);
            CHECK(m.effective_flops_per_s <= m.peak_flops_per_s);
            CHECK(m.utilization > 0);
            CHECK(m.utilization <= 1);
        }
    }
}

TEST_CASE("h100-sxm5: a 4096^3 fp16 GEMM by hand", "[hardware]") {
    const loaded h("h100-sxm5");
    const auto hw = nnergy::modeling::hardware_model::from_config(h.view());
    nnergy::modeling::kernel_work k;
    k.macs = 4096.0 * 4096 * 4096;
    k.flops = 2 * k.macs;                   // 1.374e11
    k.input_bytes = 3 * 4096.0 * 4096 * 2;  // A, B, C in fp16: 1.007e8 B
    k.threads = 4096.0 * 4096;              // one per output element: 16.8M
    const auto m = nnergy::reference::map_kernel(hw, hw.require(NNERGY_DTYPE_FLOAT16), k);
    // Slots 132 x 2048 = 270336: 62.06 -> 63 waves, utilization 16777216 / (63 x 270336) =
    // 0.98509; effective 989.4e12 x 0.713 x 0.98509 = 6.9492e14 FLOP/s; compute 197.7 us;
    // memory 1.007e8 / (3.35e12 x 0.887) = 33.9 us.
    CHECK(m.unit == "tensor_core");
    CHECK(m.waves == 63);
    CHECK(m.utilization == Approx(16777216.0 / (63 * 270336.0)));
    CHECK(m.effective_flops_per_s == Approx(989.4e12 * 0.713 * 16777216.0 / (63 * 270336.0)));
    CHECK(m.compute_time_s == Approx(1.9777e-4).epsilon(1e-3));
    CHECK(m.memory_time_s == Approx(3.387e-5).epsilon(1e-3));
    CHECK(m.bottleneck == "compute");
    CHECK(m.confidence == nnergy::modeling::provenance::measured);
    CHECK(m.launch_overhead_s == Approx(1.22e-6));
}

TEST_CASE("xeon host: float16 is not offered", "[hardware]") {
    const loaded x("xeon-5th-gen-16vcpu");
    const auto hw = nnergy::modeling::hardware_model::from_config(x.view());
    try {
        hw.require(NNERGY_DTYPE_FLOAT16);
        FAIL("expected UNIMPLEMENTED");
    } catch (const nnergy::sdk::error& e) {
        CHECK(e.code() == NNERGY_CODE_UNIMPLEMENTED);
        // The host lists a file's keys in TOML++ table order (sorted by name).
        CHECK_THAT(e.what(), Catch::Contains("has no compute precision 'float16' (available: "
                                             "bfloat16, float32)"));
    }
}
