// SPDX-License-Identifier: Apache-2.0
// The roofline estimator: latency = max(compute, slowest memory level) + launch overhead, with
// expected values worked out by hand in the comments.
#include <catch2/catch.hpp>

#include "fake_host.hpp"
#include "roofline_estimator.hpp"

using nnergy::roofline::estimate_kernel;
using nnergy::roofline::kernel_input;

TEST_CASE("roofline: compute-bound kernel", "[roofline]") {
    kernel_input k;
    k.name = "mm";
    k.index = 0;
    k.flops = 2e9;
    k.effective_flops_per_s = 1e12;                       // 2 ms
    k.levels = {{"dram", 1e9, 1e12}, {"l2", 3e9, 5e12}};  // 1 ms, 0.6 ms
    k.launch_overhead_s = 1e-6;
    const auto e = estimate_kernel(k);
    CHECK(e.compute_time_s == Approx(2e-3));
    CHECK(e.memory_time_s == Approx(1e-3));
    CHECK(e.overhead_s == 1e-6);
    CHECK(e.latency_s == Approx(2.001e-3));
    CHECK(e.bottleneck() == "compute");
    REQUIRE(e.level_times_s.size() == 2);
    CHECK(e.level_times_s[1].first == "l2");
    CHECK(e.level_times_s[1].second == Approx(6e-4));
}

TEST_CASE("roofline: the slowest memory level names the bottleneck", "[roofline]") {
    kernel_input k;
    k.flops = 1e6;
    k.effective_flops_per_s = 1e12;                       // 1 us
    k.levels = {{"dram", 1e6, 1e12}, {"l2", 1e9, 2e12}};  // 1 us, 500 us
    const auto e = estimate_kernel(k);
    CHECK(e.memory_time_s == Approx(5e-4));
    CHECK(e.latency_s == Approx(5e-4));
    CHECK(e.bottleneck() == "memory:l2");
}

TEST_CASE("roofline: launch overhead dominates tiny kernels", "[roofline]") {
    kernel_input k;
    k.flops = 10;
    k.effective_flops_per_s = 1e12;   // 10 ps
    k.levels = {{"dram", 40, 1e12}};  // 40 ps
    k.launch_overhead_s = 5e-6;
    const auto e = estimate_kernel(k);
    CHECK(e.latency_s == Approx(5e-6 + 4e-11));
    CHECK(e.bottleneck() == "overhead");
}

TEST_CASE("roofline: kernels without FLOPs need no compute rate", "[roofline]") {
    kernel_input k;
    k.flops = 0;
    k.levels = {{"dram", 2e6, 1e12}};  // 2 us
    const auto e = estimate_kernel(k);
    CHECK(e.compute_time_s == 0);
    CHECK(e.latency_s == Approx(2e-6));
    CHECK(e.bottleneck() == "memory:dram");

    kernel_input empty;
    CHECK(estimate_kernel(empty).bottleneck() == "none");  // nothing to do at all
    kernel_input launch_only;
    launch_only.launch_overhead_s = 1e-6;
    CHECK(estimate_kernel(launch_only).bottleneck() == "overhead");
    CHECK(estimate_kernel(empty).latency_s == 0);
}

TEST_CASE("roofline: incomplete mappings are errors naming the kernel", "[roofline]") {
    kernel_input k;
    k.name = "conv1";
    k.index = 3;
    k.flops = 1e6;
    try {
        estimate_kernel(k);
        FAIL("expected an error");
    } catch (const nnergy::sdk::error& e) {
        CHECK(e.code() == NNERGY_CODE_FAILED_PRECONDITION);
        CHECK(std::string(e.what()) ==
              "kernel 'conv1' (#3): the architecture's mapping has no 'effective_flops_per_s'");
    }
    k.effective_flops_per_s = 1e12;
    k.levels = {{"dram", 100, 0}};
    CHECK_THROWS_WITH(estimate_kernel(k), Catch::Contains("memory level 'dram' moves") &&
                                              Catch::Contains("no positive bandwidth"));
}

TEST_CASE("roofline estimator plugin: serial totals and uncounted ops", "[roofline]") {
    fake::install();
    fake::config cfg;
    const nnergy_create_args args = fake::create_args(cfg);
    const nnergy::roofline::roofline_estimator est{nnergy::sdk::context(args)};

    fake::partition p;
    fake::kernel a{"a", "", {0}, {}};
    a.stats.flops = 4e9;  // 4e9 / 2e12 = 2 ms compute; 1e6 B / 1e12 = 1 us memory
    a.stats.all_counted = true;
    fake::kernel b{"b", "", {1}, {}};
    b.stats.flops = 0;  // 3e6 B / 1e12 = 3 us memory
    b.stats.all_counted = false;
    p.kernels = {a, b};
    fake::mapping ma, mb;
    ma.numbers = {{"effective_flops_per_s", 2e12}, {"launch_overhead_s", 1e-6}};
    ma.levels = {{"dram", 1e6, 1e12}};
    mb.numbers = {{"effective_flops_per_s", 2e12}, {"launch_overhead_s", 1e-6}};
    mb.levels = {{"dram", 3e6, 1e12}};
    const nnergy_mapping* mappings[] = {reinterpret_cast<const nnergy_mapping*>(&ma),
                                        reinterpret_cast<const nnergy_mapping*>(&mb)};
    nnergy_estimate_input in{};
    in.struct_size = sizeof in;
    in.partition = reinterpret_cast<const nnergy_partition*>(&p);
    in.mappings = mappings;
    in.mapping_count = 2;
    fake::results r;
    nnergy::sdk::results_writer out(reinterpret_cast<nnergy_results*>(&r));
    est.estimate(nnergy::sdk::estimate_input(in), out);

    CHECK(r.numbers[0]["latency_s"] == Approx(2e-3 + 1e-6));
    CHECK(r.numbers[0]["compute_time_s"] == Approx(2e-3));
    CHECK(r.numbers[0]["memory_time_dram_s"] == Approx(1e-6));
    CHECK(r.texts[0]["bottleneck"] == "compute");
    CHECK(r.texts[0].count("note") == 0);
    CHECK(r.numbers[1]["latency_s"] == Approx(4e-6));
    CHECK(r.texts[1]["bottleneck"] == "memory:dram");
    CHECK(r.texts[1]["note"] == "contains uncounted ops");
    // Kernels run one after another.
    CHECK(r.totals["latency_s"] == Approx(2e-3 + 1e-6 + 4e-6));
    CHECK(r.totals["overhead_s"] == Approx(2e-6));
}

TEST_CASE("roofline estimator: configuration", "[roofline]") {
    fake::install();
    fake::config cfg;
    cfg.file("pipe.toml").text("runtime", "eager", 12);
    const nnergy_create_args args = fake::create_args(cfg);
    try {
        nnergy::roofline::roofline_estimator est{nnergy::sdk::context(args)};
        FAIL("expected an error");
    } catch (const nnergy::sdk::error& e) {
        CHECK(e.code() == NNERGY_CODE_INVALID_ARGUMENT);
        CHECK_THAT(e.what(), Catch::StartsWith("pipe.toml:12: the runtime is chosen by the "
                                               "pipeline's [runtime] table"));
    }
    fake::config typo;
    typo.file("pipe.toml").text("mode", "x", 13);
    const nnergy_create_args args2 = fake::create_args(typo);
    CHECK_THROWS_WITH(nnergy::roofline::roofline_estimator{nnergy::sdk::context(args2)},
                      "pipe.toml:13: unknown key 'mode' for nnergy.estimator.roofline (it takes no "
                      "keys)");
}
