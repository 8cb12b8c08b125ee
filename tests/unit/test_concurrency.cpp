// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <nnergy/framework/concurrency.hpp>

namespace {

nnergy::partition diamond() {
    // k0 -> {k1, k2} -> k3
    nnergy::partition p;
    p.kernels.resize(4);
    p.kernels[1].dependencies = {0};
    p.kernels[2].dependencies = {0};
    p.kernels[3].dependencies = {1, 2};
    const double threads[] = {100, 40, 60, 10};
    for (int k = 0; k < 4; ++k) p.kernels[k].stats.total_threads = threads[k];
    return p;
}

}  // namespace

TEST_CASE("concurrency: stages, widest stage and critical path by latency", "[concurrency]") {
    const auto c = nnergy::analyze_concurrency(diamond(), {1e-3, 2e-3, 5e-3, 1e-3});
    CHECK(c.stage_of == std::vector<uint32_t>{0, 1, 1, 2});
    REQUIRE(c.stages.size() == 3);
    CHECK(c.stages[1].kernels == 2);
    CHECK(c.stages[1].total_threads == 100);
    CHECK(c.stages[1].max_threads == 60);
    CHECK(c.stages[1].latency_s == Approx(5e-3));
    CHECK(c.widest_stage == 1);
    CHECK(c.critical_path == std::vector<uint32_t>{0, 2, 3});  // through the slower branch
    CHECK(c.critical_path_latency_s == Approx(7e-3));
    CHECK(c.serial_latency_s == Approx(9e-3));
    CHECK(c.speedup_bound == Approx(9.0 / 7.0));
}

TEST_CASE("concurrency: without latencies the critical path counts kernels", "[concurrency]") {
    const auto c = nnergy::analyze_concurrency(diamond(), {});
    CHECK(c.critical_path.size() == 3);
    CHECK(c.critical_path.front() == 0);
    CHECK(c.critical_path.back() == 3);
    CHECK(c.serial_latency_s == 0);
    CHECK(c.speedup_bound == 1);
}

TEST_CASE("concurrency: a chain cannot overlap, independent kernels can", "[concurrency]") {
    nnergy::partition chain;
    chain.kernels.resize(3);
    chain.kernels[1].dependencies = {0};
    chain.kernels[2].dependencies = {1};
    auto c = nnergy::analyze_concurrency(chain, {1, 1, 1});
    CHECK(c.stages.size() == 3);
    CHECK(c.speedup_bound == Approx(1));
    nnergy::partition apart;
    apart.kernels.resize(3);
    c = nnergy::analyze_concurrency(apart, {1, 2, 3});
    CHECK(c.stages.size() == 1);
    CHECK(c.critical_path == std::vector<uint32_t>{2});
    CHECK(c.speedup_bound == Approx(2));
    CHECK(nnergy::analyze_concurrency(nnergy::partition{}, {}).stages.empty());
}
