// SPDX-License-Identifier: Apache-2.0
// The energy model of one kernel, with expected values worked out by hand in the comments.
#include <catch2/catch.hpp>
#include <cmath>

#include "advice.hpp"
#include "energy_model.hpp"
#include "fake_host.hpp"
#include "fused_ops.hpp"

using namespace nnergy::energy;

namespace {

// idle 100 W, busy units 50 W, half of an idle unit's power gated, limit 1000 W;
// 1 pJ per tensor-core FLOP, 10 pJ per DRAM byte, 1 uJ per launch.
fake::config device() {
    fake::config hw;
    hw.text("name", "toy")
        .number("energy.static.idle_power", 100, 3)
        .number("energy.static.active_power", 50, 4)
        .number("energy.static.power_gating", 0.5, 5)
        .number("energy.static.power_limit", 1000, 6)
        .number("energy.compute.tensor_core", 1e-12, 7)
        .text("energy.compute.tensor_core_provenance", "measured", 8)
        .number("energy.memory.dram", 10e-12, 9)
        .number("energy.control.launch", 1e-6, 10);
    return hw;
}

kernel_input gemm_kernel() {
    kernel_input k;
    k.name = "mm";
    k.latency_s = 1e-3;
    k.units_allocated = 50;
    k.units_available = 100;
    k.events = {
        {"compute", "tensor_core.float16", 2e9}, {"memory", "dram", 1e8}, {"control", "launch", 1}};
    return k;
}

}  // namespace

TEST_CASE("energy: one kernel by hand", "[energy]") {
    fake::install();
    const fake::config hw = device();
    const energy_table t = energy_table::from_config(hw.view(), "hardware 'toy'");
    REQUIRE(t.present);
    CHECK(t.find("compute", "tensor_core.float16")->provenance == "measured");
    kernel_energy e;
    estimate_kernel(t, gemm_kernel(), e);
    // dynamic: 2e9 x 1 pJ + 1e8 x 10 pJ + 1 uJ = 2 mJ + 1 mJ + 0.001 mJ
    CHECK(e.dynamic_j == Approx(3.001e-3));
    // static: 100 W + 50 W x 0.5 busy + 50 W x 0.5 idle x (1 - 0.5 gated) = 137.5 W over 1 ms
    CHECK(e.static_power_w == Approx(137.5));
    CHECK(e.static_j == Approx(0.1375));
    CHECK(e.energy_j == Approx(0.140501));
    CHECK(e.power_w == Approx(140.501));
    CHECK_FALSE(e.throttled);
    // The entries are the breakdown: they sum to the kernel's energy.
    double sum = 0;
    for (const breakdown_entry& b : e.entries) sum += b.joules;
    CHECK(sum == Approx(e.energy_j).epsilon(1e-15));
    REQUIRE(e.entries.size() == 6);
    CHECK(e.entries[0].event == "tensor_core.float16");
    CHECK(e.entries[3].event == "idle_power");
    CHECK(e.entries[3].joules == Approx(0.1));
    CHECK(e.entries[4].joules == Approx(0.025));   // busy units
    CHECK(e.entries[5].joules == Approx(0.0125));  // clocked-but-idle units, half gated
}

TEST_CASE("energy: over a kernel's fixed time every unit waits, clocked but idle", "[energy]") {
    fake::install();
    const fake::config hw = device();
    const energy_table t = energy_table::from_config(hw.view(), "hardware 'toy'");
    kernel_input k = gemm_kernel();
    k.overhead_s = 0.4e-3;  // of its 1 ms, 0.6 ms of work
    kernel_energy e;
    estimate_kernel(t, k, e);
    // work: 0.6 ms at 100 + 25 + 12.5 W; fixed time: 0.4 ms at 100 W + 50 W x (1 - 0.5 gated)
    CHECK(e.entries[3].joules == Approx(0.1));                          // idle, the whole 1 ms
    CHECK(e.entries[4].joules == Approx(25 * 0.6e-3));                  // busy units, work only
    CHECK(e.entries[5].joules == Approx(12.5 * 0.6e-3 + 25 * 0.4e-3));  // waiting units
    CHECK(e.static_power_w == Approx(100 + 37.5 * 0.6 + 25 * 0.4));
    CHECK(e.static_j == Approx(e.static_power_w * 1e-3));
    // A fixed time longer than the latency is the whole kernel.
    k.overhead_s = 5e-3;
    estimate_kernel(t, k, e);
    CHECK(e.entries[4].joules == 0);
    CHECK(e.static_power_w == Approx(125));
}

TEST_CASE("energy: a kernel over the power limit is throttled", "[energy]") {
    fake::install();
    fake::config hw;
    hw.number("energy.static.idle_power", 100)
        .number("energy.static.power_limit", 200)
        .number("energy.compute.tensor_core", 1e-12);
    const energy_table t = energy_table::from_config(hw.view(), "toy");
    kernel_input k;
    k.latency_s = 1e-3;
    k.events = {{"compute", "tensor_core", 2e11}};  // 0.2 J in 1 ms: 200 W + 100 W static
    kernel_energy e;
    estimate_kernel(t, k, e);
    // At the 200 W limit the 0.2 J of work takes 0.2 J / (200 - 100) W = 2 ms.
    CHECK(e.throttled);
    CHECK(e.latency_s == Approx(2e-3));
    CHECK(e.energy_j == Approx(0.4));
    CHECK(e.power_w == Approx(200));
}

TEST_CASE("energy: an event the file does not price is an error naming the key", "[energy]") {
    fake::install();
    const fake::config hw = device();
    const energy_table t = energy_table::from_config(hw.view(), "hardware 'toy' (toy.toml)");
    kernel_input k = gemm_kernel();
    k.events.push_back({"memory", "l2", 10});
    kernel_energy e;
    CHECK_THROWS_WITH(estimate_kernel(t, k, e), Catch::Contains("hardware 'toy' (toy.toml)") &&
                                                    Catch::Contains("kernel 'mm' (#0)") &&
                                                    Catch::Contains("no energy.memory.l2"));
}

TEST_CASE("energy: malformed tables are errors naming the file, line and key", "[energy]") {
    fake::install();
    auto error_of = [](const fake::config& hw) {
        try {
            energy_table::from_config(hw.view(), "toy");
        } catch (const nnergy::sdk::error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    fake::config negative;
    negative.number("energy.memory.dram", -1e-12, 12);
    CHECK_THAT(error_of(negative), Catch::Contains("toy.toml:12") &&
                                       Catch::Contains("energy.memory.dram") &&
                                       Catch::Contains("non-negative"));
    fake::config level;
    level.number("energy.memory.l7", 1e-12, 4);
    CHECK_THAT(error_of(level),
               Catch::Contains("toy.toml:4") && Catch::Contains("unknown memory level 'l7'"));
    fake::config declared;  // a level the file declares is known
    declared.number("memory.l7.bandwidth", 1e12).number("energy.memory.l7", 1e-12, 4);
    CHECK(error_of(declared) == "no error");
    fake::config static_key;
    static_key.number("energy.static.leakage", 3, 7);
    CHECK_THAT(error_of(static_key), Catch::Contains("unknown key 'energy.static.leakage'"));
    fake::config provenance;
    provenance.number("energy.memory.dram", 1e-12)
        .text("energy.memory.dram_provenance", "guess", 9);
    CHECK_THAT(error_of(provenance),
               Catch::Contains("toy.toml:9") && Catch::Contains("\"measured\", \"fitted\""));
    fake::config gating;
    gating.number("energy.static.power_gating", 1.5, 2);
    CHECK_THAT(error_of(gating), Catch::Contains("fraction"));
    fake::config limit;
    limit.number("energy.static.idle_power", 100).number("power.tdp", 80);
    CHECK_THAT(error_of(limit), Catch::Contains("power limit (80") &&
                                    Catch::Contains("must exceed energy.static.idle_power"));
    // Every unit busy must fit too: static power the limit cannot absorb is no throttling.
    fake::config busy_limit;
    busy_limit.number("energy.static.idle_power", 100)
        .number("energy.static.active_power", 50)
        .number("power.tdp", 140);
    CHECK_THAT(error_of(busy_limit), Catch::Contains("power limit (140") &&
                                         Catch::Contains("idle_power + active_power (100 + 50"));
    fake::config bare;
    bare.number("energy.dram", 1e-12, 3);
    CHECK_THAT(error_of(bare), Catch::Contains("energy.<category>.<event>"));
}

TEST_CASE("energy: kernels ranked by energy-delay product", "[energy]") {
    const edp_ranking r = rank_by_edp({1, 6, 3});  // sum 10: 6 (60%), 3 (90%), 1 (100%)
    CHECK(r.order == std::vector<uint32_t>{1, 2, 0});
    CHECK(r.cumulative_share[0] == Approx(0.6));
    CHECK(r.kernels_for(0.5) == 1);
    CHECK(r.kernels_for(0.8) == 2);
    CHECK(r.kernels_for(0.9) == 2);
    CHECK(r.kernels_for(0.99) == 3);
}

TEST_CASE("energy: kernels of equal energy-delay product keep their order", "[energy]") {
    // Many equal values, as a repeated block gives: the report's ranks must not depend on the
    // sort's algorithm. A NaN ranks last.
    std::vector<double> edp;
    for (int i = 0; i < 40; ++i) edp.push_back(i % 3 == 0 ? 2.0 : 1.0);
    edp[7] = std::nan("");
    edp.push_back(5.0);
    edp_ranking r;
    rank_by_edp(edp, r);
    std::vector<uint32_t> expected{40};
    for (uint32_t i = 0; i < 40; ++i)
        if (i % 3 == 0) expected.push_back(i);
    for (uint32_t i = 0; i < 40; ++i)
        if (i % 3 != 0 && i != 7) expected.push_back(i);
    expected.push_back(7);
    CHECK(r.order == expected);
}

TEST_CASE("energy: a throttled run grows by what the device cannot absorb", "[energy]") {
    CHECK(throttled_latency(10, 2, false, 5) == 12);  // device-bound: every stretch shows
    CHECK(throttled_latency(10, 2, true, 5) == 10);   // host-bound: the device had 5 idle
    CHECK(throttled_latency(10, 7, true, 5) == 12);
    CHECK(throttled_latency(10, 0, false, 0) == 10);
}

TEST_CASE("energy: a stretch moves later kernels unless the device waited for the host",
          "[energy]") {
    using nnergy::energy::relay_throttled;
    using nnergy::energy::timed_kernel;
    // Launch gap 1; kernel 0 stretched by 4. Kernel 1 follows at the launch gap and moves by 4;
    // a view keeps to the device; kernel 2 waited 3 for the host (gap 4), which absorbs 3.
    std::vector<timed_kernel> device_bound = {{1, 2, 6}, {4, 3, 3}, {7, 0, 0}, {11, 1, 1}};
    CHECK(relay_throttled(device_bound, 12, false) == Approx(13));
    CHECK(device_bound[0].start_s == 1);
    CHECK(device_bound[1].start_s == 8);
    CHECK(device_bound[2].start_s == 11);
    CHECK(device_bound[3].start_s == 12);
    // Host-bound: the pass ends when the host does (20), unless the device now ends later.
    std::vector<timed_kernel> host_bound = {{1, 2, 6}, {4, 3, 3}, {7, 0, 0}, {11, 1, 1}};
    CHECK(relay_throttled(host_bound, 20, true) == 20);
    std::vector<timed_kernel> late = {{1, 2, 30}, {4, 3, 3}};
    CHECK(relay_throttled(late, 20, true) == Approx(1 + 30 + 1 + 3));
    // Nothing stretched: nothing moves.
    std::vector<timed_kernel> same = {{1, 2, 2}, {4, 3, 3}};
    CHECK(relay_throttled(same, 7, false) == Approx(7));
    CHECK(same[1].start_s == 4);
}

TEST_CASE("energy: advice names each saving, largest first", "[energy]") {
    using nnergy::energy::advise;
    using nnergy::energy::kernel_summary;
    kernel_summary conv;
    conv.name = "conv";
    conv.op_class = "conv";
    conv.bottleneck = "compute";
    conv.utilization = 0.1;
    conv.energy_j = 1.0;
    conv.static_j = 0.7;
    conv.memory_j = 0.1;
    conv.compute_j = 0.2;
    conv.compute_lower_precision_j = 0.05;
    conv.underutilization_j = 0.6;
    conv.idle_slots_j = 0.5;  // of the 0.6 J, 0.1 J is the unit's efficiency
    kernel_summary relu;
    relu.name = "relu";
    relu.op_class = "elementwise";
    relu.bottleneck = "memory:dram";
    relu.energy_j = 0.2;
    relu.static_j = 0.1;
    relu.memory_j = 0.09;
    relu.control_j = 0.01;
    relu.compute_lower_precision_j = 0;
    relu.underutilization_j = 0.05;
    relu.memory_wait_j = 0.04;
    relu.dram_j = 0.03;
    relu.single_consumer_of_producer = true;
    // 1.2 J in all, 0.8 J static (0.1 J of it between kernels), 0.75 J under-utilized.
    const auto items = advise({conv, relu}, 1.3, 0.9, 0.1, 0.75);
    REQUIRE(items.size() == 5);
    CHECK(items[0].kind == "static");
    CHECK(items[0].saving_j == Approx(0.75));
    CHECK_THAT(items[0].text, Catch::Contains("waits (0.1 J between kernels) or runs below"));
    CHECK(items[1].kind == "utilization");
    CHECK(items[1].saving_j == Approx(0.5));  // conv's idle slots; relu is memory-bound
    CHECK_THAT(items[1].text, Catch::Contains("conv (conv, 10% of the device's slots busy, "
                                              "compute-bound) spends 0.5 J of static energy "
                                              "on idle slots"));
    CHECK_THAT(items[1].text, Catch::Contains("up to 0.5 J"));
    CHECK_THAT(items[1].text, !Catch::Contains("relu"));
    CHECK(items[2].kind == "precision");
    CHECK(items[2].saving_j == Approx(0.15 + 0.5 * 0.19));  // compute 0.2 -> 0.05, memory / 2
    CHECK(items[3].kind == "fusion");
    CHECK(items[3].saving_j == Approx(0.2));  // relu's memory, control and static energy
    CHECK(items[4].kind == "memory_bound");
    // relu waits 0.04 J on memory beyond its compute and moves 0.03 J of DRAM bytes.
    CHECK(items[4].saving_j == Approx(0.07));
    CHECK_THAT(items[4].text, Catch::Contains("1 kernel(s) spend 0.2 J (15%) bound by memory, "
                                              "0.04 J of it static energy"));
    CHECK_THAT(items[4].text, Catch::Contains("0.03 J moving bytes to and from DRAM"));
    // A compute-bound kernel's memory wait is no memory-bound saving; a run without idle time
    // between kernels does not mention it.
    conv.memory_wait_j = 0.5;
    const auto again = advise({conv, relu}, 1.3, 0.9, 0, 0.75);
    CHECK_THAT(again.front().text, Catch::Contains("is spent while the device runs below its "
                                                   "peak"));
    CHECK_THAT(again.front().text, !Catch::Contains("between kernels"));
    CHECK(again.back().kind == "memory_bound");
    CHECK(again.back().saving_j == Approx(0.07));
}

TEST_CASE("energy: a fused kernel's energy and time shared among its ops", "[energy]") {
    using namespace nnergy::energy;
    CHECK(fused_kind("Relu") == "activation");
    CHECK(fused_kind("BatchNormalization") == "normalization");
    CHECK(fused_kind("Conv").empty());
    fused_op conv{9e9, 1e6, true, 1.0};    // Conv
    fused_op relu{1e9, 2e6, false, 0.25};  // Relu
    standalone_costs c;
    c.joules_per_byte = 1e-9;
    c.launch_j = 1e-3;
    c.launch_s = 1e-3;
    c.bytes_per_s = 1e9;
    c.static_power_w = 10;
    // 1 J of compute shared 9:1 by FLOPs; 0.5 J of the rest and 1 s shared 1:0.25 (0.8, 0.2).
    const auto s = split_kernel({conv, relu}, 1.0, 0.5, 1.0, c);
    CHECK(s[0].energy_j == Approx(0.9 + 0.4));
    CHECK(s[1].energy_j == Approx(0.1 + 0.1));
    CHECK(s[0].energy_j + s[1].energy_j == Approx(1.5));
    CHECK(s[0].latency_s == Approx(0.8));
    CHECK(s[1].latency_s == Approx(0.2));
    CHECK(s[1].edp_j_s == Approx(0.2 * 0.2));
    CHECK(s[0].standalone_j == 0);
    // On its own: 0.1 J compute + 2e6 B x 1 nJ + 1 mJ launch + 10 W x (1 ms + 2 ms).
    CHECK(s[1].standalone_j == Approx(0.1 + 2e-3 + 1e-3 + 10 * 3e-3));
}
