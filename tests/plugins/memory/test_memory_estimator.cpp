// SPDX-License-Identifier: Apache-2.0
// The memory estimator on graphs built by hand: every expected byte count is worked out in the
// comments. Activations are freed after their last reader; weights stay for the whole pass;
// workspace lives only while its kernel runs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "graph_host.hpp"
#include "memory_estimator.hpp"
#include "text_reporter.hpp"

namespace {

using nnergy::memory::memory_estimator;

/// Runs the estimator on `g` cut into `p` at `precision`, with hardware values `hw`.
memfake::results estimate(const memfake::graph& g, const fake::partition& p,
                          nnergy_dtype precision = NNERGY_DTYPE_FLOAT32,
                          const fake::config* hw = nullptr) {
    memfake::install();
    fake::config cfg;
    const nnergy_create_args args = fake::create_args(cfg);
    const memory_estimator est{nnergy::sdk::context(args)};
    std::vector<fake::mapping> maps(p.kernels.size());
    std::vector<const nnergy_mapping*> mappings;
    for (const fake::mapping& m : maps)
        mappings.push_back(reinterpret_cast<const nnergy_mapping*>(&m));
    nnergy_map_options options{};
    options.struct_size = sizeof options;
    options.precision = precision;
    nnergy_estimate_input in{};
    in.struct_size = sizeof in;
    in.graph = g.handle();
    in.partition = reinterpret_cast<const nnergy_partition*>(&p);
    in.mappings = mappings.data();
    in.mapping_count = mappings.size();
    if (hw) {
        in.hardware = hw->data();
        in.hardware_count = hw->size();
    }
    in.options = &options;
    memfake::results r;
    nnergy::sdk::results_writer out(reinterpret_cast<nnergy_results*>(&r));
    est.estimate(nnergy::sdk::estimate_input(in), out);
    return r;
}

fake::kernel kernel(const std::string& name, std::vector<uint32_t> nodes,
                    const std::string& pattern = "") {
    return fake::kernel{name, pattern, std::move(nodes), {}};
}

/// One kernel per node, named after it.
fake::partition one_per_node(const memfake::graph& g) {
    fake::partition p;
    for (uint32_t n = 0; n < g.nodes.size(); ++n) p.kernels.push_back(kernel(g.nodes[n].name, {n}));
    return p;
}

/// memory_in_use_bytes = weights + live activations + workspace, for every kernel, and the peak
/// is the largest of them.
void check_consistent(memfake::results& r, size_t kernels) {
    double peak = 0;
    for (uint32_t k = 0; k < kernels; ++k) {
        auto& m = r.numbers[k];
        CHECK(m.at("memory_in_use_bytes") == r.totals.at("weight_bytes") +
                                                 m.at("live_activation_bytes") +
                                                 m.at("workspace_bytes"));
        peak = std::max(peak, m.at("memory_in_use_bytes"));
    }
    CHECK(r.totals.at("peak_memory_bytes") == peak);
    const auto at = static_cast<uint32_t>(r.totals.at("peak_kernel"));
    CHECK(r.numbers[at].at("memory_in_use_bytes") == peak);
    CHECK(r.totals.at("peak_memory_bytes") == r.totals.at("weight_bytes") +
                                                  r.totals.at("activations_at_peak_bytes") +
                                                  r.totals.at("workspace_at_peak_bytes"));
}

/// x -> Relu -> MatMul(W1) -> MatMul(W2) -> Add(skip from the Relu) -> y.
/// The Relu's output `a` is read by the Add three kernels later: a skip connection.
memfake::graph diamond(int64_t batch = 1) {
    memfake::graph g;
    const uint32_t x = g.add("x", {batch, 256});      // 1024 B per sample
    const uint32_t a = g.add("a", {batch, 256});      // 1024 B
    const uint32_t w1 = g.weight("w1", {256, 1024});  // 1 MiB
    const uint32_t b = g.add("b", {batch, 1024});     // 4096 B
    const uint32_t w2 = g.weight("w2", {1024, 256});  // 1 MiB
    const uint32_t c = g.add("c", {batch, 256});      // 1024 B
    const uint32_t y = g.add("y", {batch, 256});      // 1024 B
    g.output(y);
    g.op("relu", "Relu", {x}, {a});
    g.op("up", "MatMul", {a, w1}, {b});
    g.op("down", "MatMul", {b, w2}, {c});
    g.op("skip_add", "Add", {a, c}, {y});
    return g;
}

constexpr double diamond_weights = 2 * 256 * 1024 * 4;  // 2097152

}  // namespace

TEST_CASE("memory: a chain frees each activation after its last reader", "[memory]") {
    memfake::graph g;
    const uint32_t x = g.add("x", {1, 100});         // 400 B
    const uint32_t w1 = g.weight("w1", {100, 500});  // 200000 B
    const uint32_t a = g.add("a", {1, 500});         // 2000 B
    const uint32_t b = g.add("b", {1, 500});         // 2000 B
    const uint32_t w2 = g.weight("w2", {500, 10});   // 20000 B
    const uint32_t y = g.add("y", {1, 10});          // 40 B
    g.weight("unused", {1000});                      // read by nobody: not counted
    g.output(y);
    g.op("fc1", "MatMul", {x, w1}, {a});
    g.op("act", "Relu", {a}, {b});
    g.op("fc2", "MatMul", {b, w2}, {y});
    const fake::partition p = one_per_node(g);
    memfake::results r = estimate(g, p);

    // Live: x over kernel 0; a over 0..1; b over 1..2; y from 2 to the end.
    CHECK(r.numbers[0]["live_activation_bytes"] == 2400);  // x + a
    CHECK(r.numbers[1]["live_activation_bytes"] == 4000);  // a + b
    CHECK(r.numbers[2]["live_activation_bytes"] == 2040);  // b + y
    CHECK(r.totals["weight_bytes"] == 220000);
    CHECK(r.numbers[1]["memory_in_use_bytes"] == 224000);
    CHECK(r.totals["peak_memory_bytes"] == 224000);
    CHECK(r.totals["peak_activation_bytes"] == 4000);
    CHECK(r.totals["peak_workspace_bytes"] == 0);
    CHECK(r.totals["peak_kernel"] == 1);
    CHECK(r.total_texts["peak_kernel_name"] == "act");
    CHECK(r.total_texts["live_at_peak"] == "a (2000 B), b (2000 B)");
    // A chain keeps nothing beyond the running kernel's operands: nothing to recompute.
    CHECK(r.totals["saving_recompute_bytes"] == 0);
    // 55000 weight elements at 1 B instead of 4 B.
    CHECK(r.totals["saving_int8_weights_bytes"] == 220000 - 55000);
    // Batch 1 cannot be halved.
    CHECK(r.totals["saving_half_batch_bytes"] == 0);
    // No capacities in the (empty) hardware description: no verdict.
    CHECK(r.total_texts.count("fits") == 0);
    check_consistent(r, 3);
}

TEST_CASE("memory: a skip connection stays live until its reader runs", "[memory]") {
    const memfake::graph g = diamond();
    SECTION("one kernel per node") {
        memfake::results r = estimate(g, one_per_node(g));
        // a lives over kernels 0..3, b over 1..2, c over 2..3, y at 3.
        CHECK(r.numbers[0]["live_activation_bytes"] == 2048);  // x + a
        CHECK(r.numbers[1]["live_activation_bytes"] == 5120);  // a + b
        CHECK(r.numbers[2]["live_activation_bytes"] == 6144);  // a (skip) + b + c
        CHECK(r.numbers[3]["live_activation_bytes"] == 3072);  // a + c + y
        CHECK(r.totals["peak_memory_bytes"] == diamond_weights + 6144);
        CHECK(r.totals["peak_memory_bytes"] == 2103296);
        CHECK(r.total_texts["peak_kernel_name"] == "down");
        CHECK(r.total_texts["live_at_peak"] == "b (4096 B), a (1024 B), c (1024 B)");
        // The largest kernel's own operands: 'up' or 'down', 4096 + 1024 = 5120 B. The skip
        // tensor held beside them is what recomputing it would free.
        CHECK(r.totals["saving_recompute_bytes"] == 1024);
        check_consistent(r, 4);
    }
    SECTION("a fused kernel keeps its internal tensor on chip") {
        fake::partition p;
        p.kernels = {kernel("relu", {0}), kernel("up", {1}), kernel("down_add", {2, 3})};
        memfake::results r = estimate(g, p);
        // c is written and read inside 'down_add': never materialized.
        CHECK(r.numbers[2]["live_activation_bytes"] == 6144);  // a + b + y
        CHECK(r.numbers[2]["workspace_bytes"] == 0);
        CHECK(r.totals["peak_memory_bytes"] == diamond_weights + 6144);
        CHECK(r.total_texts["live_at_peak"] == "b (4096 B), a (1024 B), y (1024 B)");
        // The peak kernel reads a and b and writes y: all of it is its own operands.
        CHECK(r.totals["saving_recompute_bytes"] == 0);
        check_consistent(r, 3);
    }
}

TEST_CASE("memory: floating tensors are stored at the run's precision", "[memory]") {
    SECTION("float32 graph run in float16: everything halves") {
        const memfake::graph g = diamond();
        memfake::results r = estimate(g, one_per_node(g), NNERGY_DTYPE_FLOAT16);
        CHECK(r.totals["weight_bytes"] == diamond_weights / 2);
        CHECK(r.numbers[2]["live_activation_bytes"] == 3072);
        CHECK(r.totals["peak_memory_bytes"] == 1048576 + 3072);
        // 524288 weight elements: 2 B each now, 1 B in int8.
        CHECK(r.totals["saving_int8_weights_bytes"] == 524288);
        check_consistent(r, 4);
    }
    SECTION("integer tensors keep their size") {
        memfake::graph g;
        const uint32_t ids = g.add("ids", {1, 8}, NNERGY_DTYPE_INT64);  // 64 B
        const uint32_t table = g.weight("table", {100, 16});            // 6400 B
        const uint32_t e = g.add("e", {1, 8, 16});                      // 512 B
        g.output(e);
        g.op("embed", "Gather", {table, ids}, {e});
        memfake::results f32 = estimate(g, one_per_node(g), NNERGY_DTYPE_FLOAT32);
        CHECK(f32.totals["peak_memory_bytes"] == 6400 + 64 + 512);
        memfake::results f16 = estimate(g, one_per_node(g), NNERGY_DTYPE_FLOAT16);
        CHECK(f16.totals["weight_bytes"] == 3200);
        CHECK(f16.numbers[0]["live_activation_bytes"] == 64 + 256);
        CHECK(f16.totals["peak_memory_bytes"] == 3200 + 64 + 256);
        CHECK(f16.totals["saving_int8_weights_bytes"] == 3200 - 1600);
        // int8 runs already store the weights at 1 B: nothing left to save.
        memfake::results i8 = estimate(g, one_per_node(g), NNERGY_DTYPE_INT8);
        CHECK(i8.totals["weight_bytes"] == 1600);
        CHECK(i8.totals["saving_int8_weights_bytes"] == 0);
    }
}

TEST_CASE("memory: im2col workspace of a 3x3 convolution", "[memory]") {
    const auto conv = [](std::vector<int64_t> w_shape) {
        memfake::graph g;
        const uint32_t x = g.add("x", {2, 8, 16, 16});  // 16384 B
        const uint32_t w = g.weight("w", std::move(w_shape));
        const uint32_t y = g.add("y", {2, 16, 16, 16});  // 32768 B
        g.output(y);
        g.op("conv", "Conv", {x, w}, {y});
        return g;
    };
    SECTION("dense 3x3") {
        const memfake::graph g = conv({16, 8, 3, 3});  // 4608 B of weights
        memfake::results r = estimate(g, one_per_node(g));
        // 2 images x 256 output positions x (8 channels x 3 x 3) x 4 B.
        CHECK(r.numbers[0]["workspace_bytes"] == 2 * 256 * 8 * 9 * 4);
        CHECK(r.numbers[0]["workspace_bytes"] == 147456);
        CHECK(r.numbers[0]["live_activation_bytes"] == 16384 + 32768);
        CHECK(r.numbers[0]["memory_in_use_bytes"] == 4608 + 49152 + 147456);
        CHECK(r.totals["peak_workspace_bytes"] == 147456);
        CHECK(r.totals["workspace_at_peak_bytes"] == 147456);
        // Half the batch halves activations and the im2col buffer, not the weights.
        CHECK(r.totals["saving_half_batch_bytes"] == (49152 + 147456) / 2);
        check_consistent(r, 1);

        memfake::results h = estimate(g, one_per_node(g), NNERGY_DTYPE_FLOAT16);
        CHECK(h.numbers[0]["workspace_bytes"] == 73728);
        CHECK(h.numbers[0]["memory_in_use_bytes"] == 2304 + 24576 + 73728);
    }
    SECTION("grouped 3x3: each group gathers Cin/groups channels") {
        const memfake::graph g = conv({16, 4, 3, 3});  // groups = 2
        memfake::results r = estimate(g, one_per_node(g));
        CHECK(r.numbers[0]["workspace_bytes"] == 2 * 256 * 4 * 9 * 4);
    }
    SECTION("1x1 needs no im2col") {
        const memfake::graph g = conv({16, 8, 1, 1});
        memfake::results r = estimate(g, one_per_node(g));
        CHECK(r.numbers[0]["workspace_bytes"] == 0);
        CHECK(r.totals["peak_workspace_bytes"] == 0);
    }
}

TEST_CASE("memory: attention scores are workspace of the kernel holding them", "[memory]") {
    memfake::graph g;
    const uint32_t q = g.add("q", {1, 2, 8, 4});       // 256 B
    const uint32_t k = g.add("kt", {1, 2, 4, 8});      // 256 B
    const uint32_t v = g.add("v", {1, 2, 8, 4});       // 256 B
    const uint32_t s = g.add("scores", {1, 2, 8, 8});  // 512 B: batch x heads x seq x seq
    const uint32_t p = g.add("probs", {1, 2, 8, 8});   // 512 B
    const uint32_t o = g.add("o", {1, 2, 8, 4});       // 256 B
    g.output(o);
    g.op("qk", "MatMul", {q, k}, {s});
    g.op("softmax", "Softmax", {s}, {p});
    g.op("pv", "MatMul", {p, v}, {o});

    SECTION("an attention kernel") {
        fake::partition part;
        part.kernels = {kernel("attn", {0, 1, 2}, "attention")};
        memfake::results r = estimate(g, part);
        CHECK(r.numbers[0]["workspace_bytes"] == 512);
        CHECK(r.numbers[0]["live_activation_bytes"] == 4 * 256);  // q, kt, v, o
        CHECK(r.totals["peak_memory_bytes"] == 1536);
        check_consistent(r, 1);
    }
    SECTION("a kernel of another pattern with Softmax fed by a MatMul") {
        fake::partition part;
        part.kernels = {kernel("qk_softmax", {0, 1}), kernel("pv", {2})};
        memfake::results r = estimate(g, part);
        CHECK(r.numbers[0]["workspace_bytes"] == 512);
        // probs leaves the kernel: an activation, not workspace.
        CHECK(r.numbers[0]["live_activation_bytes"] == 3 * 256 + 512);  // q, kt, v, probs
        CHECK(r.numbers[1]["workspace_bytes"] == 0);
    }
    SECTION("unfused: the scores are an activation, counted once") {
        memfake::results r = estimate(g, one_per_node(g));
        for (uint32_t i = 0; i < 3; ++i) CHECK(r.numbers[i]["workspace_bytes"] == 0);
        CHECK(r.numbers[0]["live_activation_bytes"] == 3 * 256 + 512);    // q, kt, v, scores
        CHECK(r.numbers[1]["live_activation_bytes"] == 256 + 512 + 512);  // v, scores, probs
        CHECK(r.numbers[2]["live_activation_bytes"] == 256 + 512 + 256);  // v, probs, o
        CHECK(r.totals["peak_kernel"] == 0);  // the first of two equal peaks
    }
}

TEST_CASE("memory: half the batch", "[memory]") {
    // Activations lead with the batch; weights do not.
    memfake::results b2 = estimate(diamond(2), one_per_node(diamond(2)));
    CHECK(b2.totals["peak_memory_bytes"] == diamond_weights + 2 * 6144);
    CHECK(b2.totals["saving_half_batch_bytes"] == 6144);
    // An odd batch halves to floor(3 / 2) = 1.
    memfake::results b3 = estimate(diamond(3), one_per_node(diamond(3)));
    CHECK(b3.totals["peak_memory_bytes"] == diamond_weights + 3 * 6144);
    CHECK(b3.totals["saving_half_batch_bytes"] == Approx(2 * 6144));
}

TEST_CASE("memory: where the peak fits", "[memory]") {
    const memfake::graph g = diamond();  // peak 2103296 B
    const fake::partition p = one_per_node(g);
    SECTION("in L2") {
        fake::config hw;
        hw.number("memory.dram.bandwidth", 3.35e12)
            .number("memory.dram.capacity", 80e9)
            .number("memory.l2.capacity", 50e6);
        memfake::results r = estimate(g, p, NNERGY_DTYPE_FLOAT32, &hw);
        CHECK(r.total_texts["fits"] == "l2");
        CHECK(r.totals["fits_in_l2"] == 1);
        CHECK(r.totals["fits_in_dram"] == 1);
    }
    SECTION("in device memory only; per-unit capacities are not candidates") {
        fake::config hw;
        hw.number("memory.l1.capacity_per_unit", 256e3)
            .number("memory.l2.capacity", 1e6)
            .number("memory.dram.capacity", 80e9);
        memfake::results r = estimate(g, p, NNERGY_DTYPE_FLOAT32, &hw);
        CHECK(r.total_texts["fits"] == "device memory");
        CHECK(r.totals["fits_in_l2"] == 0);
        CHECK(r.totals["fits_in_dram"] == 1);
        CHECK(r.totals.count("fits_in_l1") == 0);
    }
    SECTION("on-chip SRAM") {
        fake::config hw;
        hw.number("memory.sram.capacity", 8e6);
        memfake::results r = estimate(g, p, NNERGY_DTYPE_FLOAT32, &hw);
        CHECK(r.total_texts["fits"] == "sram");
        CHECK(r.totals["fits_in_sram"] == 1);
    }
    SECTION("nowhere") {
        fake::config hw;
        hw.number("memory.dram.capacity", 2e6);
        fake::log_lines().clear();
        memfake::results r = estimate(g, p, NNERGY_DTYPE_FLOAT32, &hw);
        CHECK(r.total_texts["fits"] == "does not fit");
        CHECK(r.totals["fits_in_dram"] == 0);
        REQUIRE(fake::log_lines().size() == 1);
        CHECK_THAT(fake::log_lines()[0], Catch::Contains("exceeds the device memory"));
    }
    SECTION("beyond every level given, device memory unknown") {
        fake::config hw;
        hw.number("memory.l3.capacity", 1e6);
        memfake::results r = estimate(g, p, NNERGY_DTYPE_FLOAT32, &hw);
        CHECK(r.total_texts["fits"] == "unknown");
        CHECK(r.totals["fits_in_l3"] == 0);
    }
}

TEST_CASE("memory: live_at_peak lists at most ten tensors", "[memory]") {
    memfake::graph g;
    std::vector<uint32_t> inputs;
    for (int i = 0; i < 12; ++i)
        inputs.push_back(g.add("in" + std::to_string(i), {1, 10 + i}));  // 40 + 4i B
    const uint32_t y = g.add("y", {1, 100});                             // 400 B
    g.output(y);
    g.op("sum", "Sum", inputs, {y});
    memfake::results r = estimate(g, one_per_node(g));
    CHECK(r.total_texts["live_at_peak"] ==
          "y (400 B), in11 (84 B), in10 (80 B), in9 (76 B), in8 (72 B), in7 (68 B), in6 (64 B), "
          "in5 (60 B), in4 (56 B), in3 (52 B), and 3 more");
}

TEST_CASE("memory: the model without kernels and without weights", "[memory]") {
    nnergy::memory::model_input in;
    in.weight_bytes = 100;
    nnergy::memory::buffer passthrough;
    passthrough.name = "x";
    passthrough.bytes = 40;
    passthrough.graph_output = true;
    in.buffers.push_back(passthrough);
    const nnergy::memory::model_result r = nnergy::memory::simulate(in);
    CHECK(r.peak_memory_bytes == 140);
    CHECK_FALSE(r.peak_kernel.has_value());
    CHECK(r.saving_recompute_bytes == 0);
}

TEST_CASE("memory: configuration", "[memory]") {
    memfake::install();
    fake::config none;
    const nnergy_create_args ok = fake::create_args(none);
    CHECK_NOTHROW(memory_estimator{nnergy::sdk::context(ok)});
    fake::config typo;
    typo.file("pipe.toml").number("capacity", 1, 21);
    const nnergy_create_args args = fake::create_args(typo);
    CHECK_THROWS_WITH(memory_estimator{nnergy::sdk::context(args)},
                      "pipe.toml:21: unknown key 'capacity' for nnergy.estimator.memory (it takes "
                      "no keys)");
}

TEST_CASE("memory: the text reporter's peak memory line", "[memory]") {
    memfake::install();
    const nlohmann::ordered_json totals = {{"params", 10},
                                           {"peak_memory_bytes", 12.5e6},
                                           {"weight_bytes", 2e6},
                                           {"activations_at_peak_bytes", 10e6},
                                           {"workspace_at_peak_bytes", 0.5e6},
                                           {"peak_kernel_name", "block.2.conv"},
                                           {"fits", "l2"}};
    const fake::value v = fake::value::from(totals);
    CHECK(nnergy::text::detail::memory_text(nnergy::sdk::value_view(v.handle())) ==
          "  peak memory 12.5 MB (weights 2.00 MB, activations 10.0 MB, workspace 500 kB) at "
          "kernel block.2.conv, fits in l2\n");
    const fake::value none = fake::value::from(nlohmann::ordered_json{{"params", 10}});
    CHECK(nnergy::text::detail::memory_text(nnergy::sdk::value_view(none.handle())).empty());
}
