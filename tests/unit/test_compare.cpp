// SPDX-License-Identifier: Apache-2.0
// `nnergy compare`: devices read from a report document, ranked per metric, formatted.
#include <catch2/catch.hpp>
#include <nnergy/framework/compare.hpp>

using nnergy::report_value;

namespace {

report_value run(const char* hw, const char* cls, double latency, bool energy) {
    report_value r = report_value::object();
    report_value arch = report_value::object();
    arch.set("hardware", report_value::of(hw));
    arch.set("class", report_value::of(cls));
    arch.set("precision", report_value::of("float16"));
    r.set("architecture", std::move(arch));
    report_value t = report_value::object();
    t.set("latency_s", report_value::of(latency));
    if (energy) t.set("energy_j", report_value::of(latency * 100));
    r.set("totals", std::move(t));
    report_value kernels = report_value::array();
    for (const char* b : {"compute", "memory:dram", "overhead"}) {
        report_value k = report_value::object();
        report_value m = report_value::object();
        m.set("latency_s", report_value::of(std::string_view(b) == "compute" ? 2.0 : 1.0));
        m.set("bottleneck", report_value::of(b));
        k.set("metrics", std::move(m));
        kernels.push(std::move(k));
    }
    r.set("kernels", std::move(kernels));
    return r;
}

}  // namespace

TEST_CASE("compare: devices ranked best first per metric, missing metrics left out") {
    report_value doc = report_value::object();
    report_value runs = report_value::array();
    runs.push(run("slow", "gpu", 3e-3, true));
    runs.push(run("fast", "tpu", 1e-3, false));
    runs.push(run("middle", "cpu", 2e-3, true));
    doc.set("runs", std::move(runs));
    const auto devices = nnergy::read_compared(doc);
    REQUIRE(devices.size() == 3);
    CHECK(devices[1].hardware == "fast");
    CHECK(devices[1].hw_class == "tpu");
    CHECK_FALSE(devices[1].energy_j);
    // 2 s compute, 1 s memory, 1 s overhead.
    CHECK(devices[0].compute_share == Approx(0.5));
    CHECK(devices[0].memory_share == Approx(0.25));
    CHECK(nnergy::rank_devices(devices, &nnergy::compared_device::latency_s) ==
          std::vector<size_t>{1, 2, 0});
    CHECK(nnergy::rank_devices(devices, &nnergy::compared_device::energy_j) ==
          std::vector<size_t>{2, 0});
    CHECK(nnergy::rank_devices(devices, &nnergy::compared_device::peak_memory_bytes).empty());

    const std::string text = nnergy::compare_text("m.onnx", devices);
    CHECK_THAT(text, Catch::Contains("best latency: fast (1 ms), 2x better than middle"));
    CHECK_THAT(text, Catch::Contains("peak memory: not estimated"));
    const std::string csv = nnergy::compare_csv(devices);
    CHECK_THAT(csv, Catch::Contains("\nfast,tpu,float16,0.001,,"));
    const std::string json = nnergy::compare_json("m.onnx", devices);
    CHECK_THAT(json, Catch::Contains("\"energy_j\": null"));
    CHECK_THAT(text, !Catch::Contains("does not offer"));
    CHECK_THAT(json, Catch::Contains(
                         "\"latency_s\": [\n      \"fast\",\n      \"middle\",\n      \"slow\""));
}
