// SPDX-License-Identifier: Apache-2.0
// The energy estimator plugin on a hand-built two-kernel run: every level of the breakdown tree
// (model -> kernel -> category -> event) sums to its parent, the device's idle time between
// kernels is priced, and a missing latency estimator is a clear error.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "energy_estimator.hpp"
#include "fake_host.hpp"

namespace {

struct run {
    fake::config cfg;
    fake::config hw;
    fake::partition p;
    fake::mapping ma, mb;
    fake::results r;
    const nnergy_mapping* mappings[2] = {reinterpret_cast<const nnergy_mapping*>(&ma),
                                         reinterpret_cast<const nnergy_mapping*>(&mb)};

    run() {
        fake::install();
        hw.text("name", "toy")
            .number("energy.static.idle_power", 100)
            .number("energy.static.active_power", 40)
            .number("energy.static.power_limit", 1000)
            .number("energy.compute.tensor_core", 1e-12)
            .number("energy.compute.cuda_core", 4e-12)
            .number("energy.memory.dram", 20e-12)
            .number("energy.control.launch", 2e-6);
        fake::kernel a{"a", "", {0}, {}};
        a.stats.flops = 1e9;
        fake::kernel b{"b", "", {1}, {}};
        b.stats.flops = 1e6;
        p.kernels = {a, b};
        ma.numbers = {{"units_allocated", 10}, {"units_available", 10}, {"peak_flops_per_s", 1e12}};
        ma.events = {{"compute", "tensor_core.float16", 1e9},
                     {"memory", "dram", 1e7},
                     {"control", "launch", 1}};
        mb.numbers = {{"units_allocated", 5}, {"units_available", 10}, {"peak_flops_per_s", 1e12}};
        mb.levels = {{"dram", 4e7, 1e12}};
        mb.events = {{"compute", "cuda_core.float16", 1e6},
                     {"memory", "dram", 4e7},
                     {"control", "launch", 1}};
        // What the roofline estimator wrote before: 2 ms and 0.5 ms, 3 ms in all (0.5 ms idle).
        r.numbers[0]["latency_s"] = 2e-3;
        r.numbers[1]["latency_s"] = 0.5e-3;
        r.totals["latency_s"] = 3e-3;
    }

    void estimate() {
        const nnergy_create_args args = fake::create_args(cfg);
        const nnergy::energy::energy_estimator est{nnergy::sdk::context(args)};
        nnergy_estimate_input in{};
        in.struct_size = sizeof in;
        in.partition = reinterpret_cast<const nnergy_partition*>(&p);
        in.mappings = mappings;
        in.mapping_count = 2;
        in.hardware = hw.data();
        in.hardware_count = hw.size();
        nnergy::sdk::results_writer out(reinterpret_cast<nnergy_results*>(&r));
        est.estimate(nnergy::sdk::estimate_input(in), out);
    }
};

// Sum of the categories of a breakdown: energy.<category>_j, no dot in the category.
template <class Map>
double categories(const Map& m) {
    double s = 0;
    for (const auto& [k, v] : m)
        if (k.size() > 9 && k.compare(0, 7, "energy.") == 0 &&
            k.compare(k.size() - 2, 2, "_j") == 0 && k.find('.', 7) == std::string::npos)
            s += v;
    return s;
}

// Sum of the events of one category: energy.<category>.<event>_j (events may hold dots,
// "tensor_core.float16").
template <class Map>
double events(const Map& m, const std::string& category) {
    const std::string prefix = "energy." + category + ".";
    double s = 0;
    for (const auto& [k, v] : m)
        if (k.size() > prefix.size() + 2 && k.compare(0, prefix.size(), prefix) == 0 &&
            k.compare(k.size() - 2, 2, "_j") == 0)
            s += v;
    return s;
}

}  // namespace

TEST_CASE("energy estimator: hand-computed run", "[energy]") {
    run x;
    x.estimate();
    auto& k0 = x.r.numbers[0];
    auto& k1 = x.r.numbers[1];
    // Kernel a: 1 mJ compute + 0.2 mJ DRAM + 2 uJ launch; static (100 + 40) W x 2 ms = 0.28 J.
    CHECK(k0["energy.compute_j"] == Approx(1e-3));
    CHECK(k0["energy.memory.dram_j"] == Approx(0.2e-3));
    CHECK(k0["energy.static_j"] == Approx(0.28));
    CHECK(k0["energy_j"] == Approx(0.281202));
    // Kernel b: 4 uJ compute + 0.8 mJ DRAM + 2 uJ; static (100 + 40 x 0.5 + 40 x 0.5) W x 0.5 ms
    // (no power gating: idle units stay clocked) = 0.07 J.
    CHECK(k1["energy.static_j"] == Approx(0.07));
    CHECK(k1["energy_j"] == Approx(0.070806));
    // Between kernels: 0.5 ms at the idle power, 50 mJ; the idle power is reported (validate
    // prices a measured call's period with it).
    CHECK(x.r.totals["energy.static.device_idle_j"] == Approx(0.05));
    CHECK(x.r.totals["idle_power_w"] == 100);
    CHECK(x.r.totals["energy_j"] == Approx(0.281202 + 0.070806 + 0.05));
    CHECK(x.r.totals["average_power_w"] == Approx((0.281202 + 0.070806 + 0.05) / 3e-3));
    CHECK(x.r.totals["edp_j_s"] == Approx((0.281202 + 0.070806 + 0.05) * 3e-3));
    CHECK(x.r.totals["peak_power_w"] == Approx(0.070806 / 0.5e-3));  // kernel b
    CHECK(x.r.totals["throttled_kernels"] == 0);
    // Kernel b would take 40 us at its peak bandwidth: the other 460 us of static power are
    // under-utilization.
    CHECK(k1["underutilization_energy_j"] == Approx(140 * 460e-6));
}

TEST_CASE("energy estimator: the breakdown tree sums exactly at every level", "[energy]") {
    run x;
    x.estimate();
    for (auto& [k, metrics] : x.r.numbers) {
        const double total = metrics["energy_j"];
        CHECK(categories(metrics) == Approx(total).epsilon(1e-14));
        for (const char* category : {"compute", "memory", "control", "static"}) {
            const std::string c = category;
            CHECK(events(metrics, c) == Approx(metrics["energy." + c + "_j"]).epsilon(1e-14));
        }
    }
    double kernels = 0;
    for (auto& [k, metrics] : x.r.numbers) kernels += metrics["energy_j"];
    const double total = x.r.totals["energy_j"];
    CHECK(kernels + x.r.totals["energy.static.device_idle_j"] == Approx(total).epsilon(1e-14));
    CHECK(categories(x.r.totals) == Approx(total).epsilon(1e-14));
    for (const char* category : {"compute", "memory", "control", "static"}) {
        const std::string c = category;
        CHECK(events(x.r.totals, c) == Approx(x.r.totals["energy." + c + "_j"]).epsilon(1e-14));
    }
    CHECK(x.r.totals["dynamic_energy_j"] + x.r.totals["static_energy_j"] ==
          Approx(total).epsilon(1e-14));
}

TEST_CASE("energy estimator: a run over the power limit is throttled", "[energy]") {
    run x;
    x.hw.without("energy.static.power_limit").number("energy.static.power_limit", 200);
    // Kernel a: 0.2 J of compute + 0.2 mJ DRAM + 2 uJ in 2 ms is 100.1 W dynamic on 140 W of
    // static power: over 200 W, it stretches to 0.200202 J / (200 - 140) W.
    x.ma.events[0].count = 2e11;
    x.estimate();
    auto& k0 = x.r.numbers[0];
    const double dynamic = 0.200202;
    CHECK(k0["latency_s"] == Approx(dynamic / 60));
    CHECK(k0["latency_unthrottled_s"] == Approx(2e-3));
    CHECK(x.r.texts[0]["throttled"] == "power limit");
    CHECK(x.r.totals["throttled_kernels"] == 1);
    CHECK(x.r.totals["latency_unthrottled_s"] == Approx(3e-3));
    CHECK(x.r.totals["latency_s"] == Approx(3e-3 + dynamic / 60 - 2e-3));
    CHECK(x.r.totals["peak_power_w"] <= 200 + 1e-9);
}

TEST_CASE("energy estimator: a stretch moves the kernels after it on the timeline", "[energy]") {
    run x;
    x.hw.without("energy.static.power_limit").number("energy.static.power_limit", 200);
    x.ma.events[0].count = 2e11;
    // A device-bound timeline: a at 0.1 ms, b 0.4 ms after a ends (the runtime's launch gap).
    x.r.numbers[0]["start_s"] = 0.1e-3;
    x.r.numbers[1]["start_s"] = 2.5e-3;
    x.r.totals["device_busy_s"] = 2.5e-3;
    x.r.totals["device_idle_s"] = 0.5e-3;
    x.estimate();
    const double stretched = 0.200202 / 60;
    CHECK(x.r.numbers[0]["start_s"] == Approx(0.1e-3));
    CHECK(x.r.numbers[1]["start_s"] == Approx(0.1e-3 + stretched + 0.4e-3));
    // The pass ends when b does: the timeline's end, not a summed approximation.
    CHECK(x.r.totals["latency_s"] == Approx(x.r.numbers[1]["start_s"] + 0.5e-3));
    CHECK(x.r.totals["device_busy_s"] == Approx(stretched + 0.5e-3));
    CHECK(x.r.totals["device_idle_s"] ==
          Approx(x.r.totals["latency_s"] - x.r.totals["device_busy_s"]));
}

TEST_CASE("energy estimator: it needs the latencies of an earlier estimator", "[energy]") {
    run x;
    x.r.numbers.clear();
    CHECK_THROWS_WITH(x.estimate(), Catch::Contains("list nnergy.estimator.roofline before"));
}

TEST_CASE("energy estimator: hardware without an energy table gives no estimate", "[energy]") {
    run x;
    x.hw = fake::config();
    x.hw.text("name", "bare");
    x.estimate();
    CHECK(x.r.totals.count("energy_j") == 0);
}
