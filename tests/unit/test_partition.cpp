// SPDX-License-Identifier: Apache-2.0
// finalize_partition: validation of a partitioner's kernels, their order, and their statistics.
#include <catch2/catch.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/partition.hpp>
#include <string>
#include <vector>

#include "ops_test_model.hpp"

namespace {

// The shared test graph, plus kernels made from node names.
struct partition_model : model {
    kernel k(const std::string& name, std::vector<std::string> members,
             const std::string& pattern = "") const {
        kernel out;
        out.name = name;
        out.pattern = pattern;
        for (auto& m : members) out.nodes.push_back(n(m));
        return out;
    }
    std::string error_of(std::vector<kernel> kernels) const {
        try {
            finalize_partition(*b, std::move(kernels), "test.partitioner");
        } catch (const nnergy::error& e) {
            return e.what();
        }
        FAIL("finalize_partition accepted an invalid partition");
        return {};
    }
};

// conv -> bn -> relu -> global average pool -> flatten -> gemm
partition_model small_cnn() {
    partition_model m;
    m.input("x", {1, 3, 8, 8});
    m.weight("w", {16, 3, 3, 3});
    m.weight("b", {16});
    for (const char* n : {"s", "sh", "mu", "var"}) m.weight(n, {16});
    m.weight("fw", {10, 16});
    m.weight("fb", {10});
    m.node("conv", "Conv", {"x", "w", "b"}, {"c"}, {ais("pads", {1, 1, 1, 1})});
    m.node("bn", "BatchNormalization", {"c", "s", "sh", "mu", "var"}, {"n"});
    m.node("relu", "Relu", {"n"}, {"r"});
    m.node("gap", "GlobalAveragePool", {"r"}, {"p"});
    m.node("flat", "Flatten", {"p"}, {"f"});
    m.node("fc", "Gemm", {"f", "fw", "fb"}, {"y"}, {ai("transB", 1)});
    m.output("y");
    m.bind();
    return m;
}

}  // namespace

TEST_CASE("statistics of a fused conv+bn+relu kernel", "[partition]") {
    partition_model m = small_cnn();
    // Given out of order on purpose: finalize_partition sorts them.
    const partition p =
        finalize_partition(*m.b,
                           {m.k("head", {"fc", "flat"}, "gemm"), m.k("pool", {"gap"}),
                            m.k("conv1", {"relu", "conv", "bn"}, "conv_bn_relu")},
                           "test.partitioner");
    REQUIRE(p.kernels.size() == 3);
    CHECK(p.kernels[0].name == "conv1");
    CHECK(p.kernels[1].name == "pool");
    CHECK(p.kernels[2].name == "head");

    const kernel& k = p.kernels[0];
    CHECK(k.pattern == "conv_bn_relu");
    CHECK(k.nodes == std::vector<uint32_t>{m.n("conv"), m.n("bn"), m.n("relu")});
    const nnergy_kernel_stats& s = k.stats;
    CHECK(s.struct_size == sizeof(nnergy_kernel_stats));
    // conv: 16 x 8 x 8 = 1,024 outputs x 3 x 3 x 3 = 27,648 MACs
    CHECK(s.macs == 27'648.0);
    // conv 2 x 27,648 + 1,024 (bias) = 56,320; bn 2 x 1,024 = 2,048; relu 1,024 -> 59,392
    CHECK(s.flops == 59'392.0);
    // only x enters from outside: 3 x 8 x 8 x 4 bytes = 768
    CHECK(s.input_bytes == 768.0);
    // only r leaves (c and n stay inside): 16 x 8 x 8 x 4 = 4,096
    CHECK(s.output_bytes == 4'096.0);
    // w 432 + b 16 + bn 4 x 16 = 512 floats = 2,048 bytes
    CHECK(s.weight_bytes == 2'048.0);
    // 59,392 / (768 + 4,096 + 2,048 = 6,912)
    CHECK(s.arithmetic_intensity == Approx(59'392.0 / 6'912.0));
    CHECK(s.anchor_node == m.n("conv"));
    CHECK(s.batch == 1.0);
    CHECK(s.channels == 16.0);
    CHECK(s.spatial == 64.0);
    CHECK(s.total_threads == 1'024.0);
    CHECK(s.groups == 1);
    CHECK_FALSE(s.is_depthwise);
    CHECK(s.all_counted);
    CHECK(k.dependencies.empty());

    const kernel& pool = p.kernels[1];
    CHECK(pool.dependencies == std::vector<uint32_t>{0});
    CHECK(pool.stats.input_bytes == 4'096.0);
    CHECK(pool.stats.output_bytes == 64.0);  // 16 floats
    CHECK(pool.stats.weight_bytes == 0.0);
    CHECK(pool.stats.arithmetic_intensity == Approx(1'024.0 / 4'160.0));

    const kernel& head = p.kernels[2];
    CHECK(head.dependencies == std::vector<uint32_t>{1});
    CHECK(head.stats.macs == 160.0);          // 1 x 10 x 16
    CHECK(head.stats.flops == 330.0);         // 2 x 160 + 10 bias adds
    CHECK(head.stats.input_bytes == 64.0);    // p
    CHECK(head.stats.output_bytes == 40.0);   // y, a graph output: 10 floats
    CHECK(head.stats.weight_bytes == 680.0);  // (160 + 10) x 4
    CHECK(head.stats.anchor_node == m.n("fc"));
    CHECK(head.stats.batch == 1.0);  // [1, 10]: 2-D, channels = last dim
    CHECK(head.stats.channels == 10.0);
    CHECK(head.stats.spatial == 1.0);
    CHECK(head.stats.total_threads == 10.0);
}

TEST_CASE("single-node kernels reproduce the node counts", "[partition]") {
    partition_model m = small_cnn();
    std::vector<kernel> ks;
    for (const node& x : m.g.nodes) ks.push_back(m.k(x.name, {x.name}));
    const partition p = finalize_partition(*m.b, ks, "test.partitioner");
    REQUIRE(p.kernels.size() == m.g.nodes.size());
    for (size_t i = 0; i < p.kernels.size(); ++i) {
        const uint32_t n = p.kernels[i].nodes[0];
        INFO(m.g.nodes[n].name);
        const op_counts& c = m.b->counts[n];
        CHECK(p.kernels[i].stats.flops == c.flops);
        CHECK(p.kernels[i].stats.input_bytes == c.input_bytes);
        CHECK(p.kernels[i].stats.output_bytes == c.output_bytes);
        CHECK(p.kernels[i].stats.weight_bytes == c.weight_bytes);
    }
}

TEST_CASE("outputs consumed both inside and outside a kernel leave it", "[partition]") {
    partition_model m;
    m.input("x", {2, 4});
    m.node("a", "Relu", {"x"}, {"ra"});
    m.node("b", "Sigmoid", {"ra"}, {"rb"});
    m.node("c", "Add", {"ra", "rb"}, {"y"});
    m.output("y");
    m.output("rb");  // a graph output consumed inside its kernel
    m.bind();
    const partition p =
        finalize_partition(*m.b, {m.k("ab", {"a", "b"}), m.k("c", {"c"})}, "test.partitioner");
    // ra (32 bytes) goes to c outside; rb (32 bytes) goes to c and is a graph output.
    CHECK(p.kernels[0].stats.output_bytes == 64.0);
    CHECK(p.kernels[1].stats.input_bytes == 64.0);
    CHECK(p.kernels[1].dependencies == std::vector<uint32_t>{0});

    const partition one = finalize_partition(*m.b, {m.k("all", {"a", "b", "c"})}, "t");
    CHECK(one.kernels[0].stats.output_bytes == 64.0);  // y and rb: graph outputs
    CHECK(one.kernels[0].stats.input_bytes == 32.0);
    // b (Sigmoid, 4 x 8 = 32 FLOPs) outweighs a (Relu) and c (Add), 8 FLOPs each.
    CHECK(one.kernels[0].stats.anchor_node == m.n("b"));
}

TEST_CASE("anchor ties go to the first member; parallelism of 3-D outputs", "[partition]") {
    partition_model m;
    m.input("x", {2, 5, 8});
    m.weight("w", {8, 4});
    m.node("mm", "MatMul", {"x", "w"}, {"h"});
    m.node("r1", "Relu", {"h"}, {"a"});
    m.node("r2", "Relu", {"a"}, {"y"});
    m.output("y");
    m.bind();
    const partition p = finalize_partition(*m.b, {m.k("mm", {"mm"}), m.k("relus", {"r2", "r1"})},
                                           "test.partitioner");
    CHECK(p.kernels[1].stats.anchor_node == m.n("r1"));  // 40 FLOPs each: the first wins
    const nnergy_kernel_stats& s = p.kernels[0].stats;
    // [B, S, F] = [2, 5, 4]: batch 2, channels (features) 4, spatial (sequence) 5
    CHECK(s.batch == 2.0);
    CHECK(s.channels == 4.0);
    CHECK(s.spatial == 5.0);
    CHECK(s.total_threads == 40.0);
    CHECK(s.macs == 320.0);  // 2 x 5 x 4 = 40 outputs x K 8
}

TEST_CASE("depthwise convolutions and unknown members", "[partition]") {
    partition_model m;
    m.input("x", {1, 32, 14, 14});
    m.weight("w", {32, 1, 3, 3});
    m.add_tensor("y", NNERGY_DTYPE_FLOAT32, std::vector<D>{1, 32, 14, 14}, false);
    m.node("dw", "Conv", {"x", "w"}, {"c"}, {ai("group", 32), ais("pads", {1, 1, 1, 1})});
    m.node("odd", "FancyActivation", {"c"}, {"y"});
    m.output("y");
    m.bind();
    const partition p = finalize_partition(*m.b, {m.k("k", {"dw", "odd"})}, "test.partitioner");
    const nnergy_kernel_stats& s = p.kernels[0].stats;
    CHECK(s.groups == 32);
    CHECK(s.is_depthwise);
    CHECK_FALSE(s.all_counted);
    CHECK(s.anchor_node == m.n("dw"));
    CHECK(s.channels == 32.0);
    CHECK(s.spatial == 196.0);

    partition_model g;  // grouped but not depthwise
    g.input("x", {1, 32, 14, 14});
    g.weight("w", {64, 8, 3, 3});
    g.node("gc", "Conv", {"x", "w"}, {"y"}, {ai("group", 4)});
    g.output("y");
    g.bind();
    const partition q = finalize_partition(*g.b, {g.k("k", {"gc"})}, "test.partitioner");
    CHECK(q.kernels[0].stats.groups == 4);
    CHECK_FALSE(q.kernels[0].stats.is_depthwise);
}

TEST_CASE("shape operands make dependencies but move no bytes", "[partition]") {
    partition_model m;
    m.input("x", {2, 3, 4});
    m.node("shape", "Shape", {"x"}, {"s"});
    m.node("reshape", "Reshape", {"x", "s"}, {"y"});
    m.output("y");
    m.bind();
    const partition p = finalize_partition(
        *m.b, {m.k("reshape", {"reshape"}), m.k("shape", {"shape"})}, "test.partitioner");
    REQUIRE(p.kernels[1].name == "reshape");
    CHECK(p.kernels[1].dependencies == std::vector<uint32_t>{0});
    CHECK(p.kernels[1].stats.input_bytes == 96.0);  // x only: 24 floats
    CHECK(p.kernels[0].stats.input_bytes == 0.0);   // Shape reads metadata
    // The shape is known once the model is bound: the host passes it, no device bytes.
    CHECK(p.kernels[0].stats.output_bytes == 0.0);
    CHECK(p.kernels[0].stats.arithmetic_intensity == 0.0);
}

TEST_CASE("shape arithmetic known at bind time is no device work", "[partition]") {
    partition_model m;
    m.input("x", {2, 3, 4});
    m.node("shape", "Shape", {"x"}, {"s"});
    m.node("twice", "Max", {"s", "s"}, {"s2"});  // int64 values known: folded
    m.node("relu", "Relu", {"x"}, {"r"});
    m.node("reshape", "Reshape", {"r", "s2"}, {"y"});
    m.output("y");
    m.bind();
    const partition p = finalize_partition(
        *m.b,
        {m.k("shape", {"shape", "twice"}), m.k("relu", {"relu"}), m.k("reshape", {"reshape"})},
        "test.partitioner");
    REQUIRE(p.kernels[0].name == "shape");
    const nnergy_kernel_stats& folded = p.kernels[0].stats;
    CHECK(folded.flops == 0.0);
    CHECK(folded.input_bytes + folded.output_bytes + folded.weight_bytes == 0.0);
    const nnergy_kernel_stats& relu = p.kernels[1].stats;
    CHECK(relu.flops == 24.0);
    CHECK(relu.input_bytes == 96.0);
}

TEST_CASE("a constant cast to an activation's type is folded, not a kernel", "[partition]") {
    // x * CastLike(v, x) with v a float32 constant (a Constant node's value) or an input.
    const auto cast_kernel = [](bool constant) {
        partition_model m;
        m.input("x", {2, 3}, NNERGY_DTYPE_FLOAT16);
        if (constant)
            m.g.tensors[m.weight("v", {2, 3})].is_constant = true;  // code, not a parameter
        else
            m.input("v", {2, 3});
        m.node("cast", "CastLike", {"v", "x"}, {"v_h"});
        m.node("mul", "Mul", {"x", "v_h"}, {"y"});
        m.output("y");
        m.bind();
        const partition p = finalize_partition(*m.b, {m.k("cast", {"cast"}), m.k("mul", {"mul"})},
                                               "test.partitioner");
        REQUIRE(p.kernels[0].name == "cast");
        return p.kernels[0].stats;
    };
    const nnergy_kernel_stats folded = cast_kernel(true);
    CHECK(folded.flops == 0.0);
    CHECK(folded.input_bytes + folded.output_bytes + folded.weight_bytes == 0.0);
    // The same cast of an activation is device work.
    const nnergy_kernel_stats cast = cast_kernel(false);
    CHECK(cast.input_bytes == 24.0);   // six floats
    CHECK(cast.output_bytes == 12.0);  // six halves
}

TEST_CASE("a batched matrix product's columns are its last dimension", "[partition]") {
    partition_model m;
    m.input("q", {2, 12, 128, 64});
    m.input("k", {2, 12, 64, 128});
    m.node("scores", "MatMul", {"q", "k"}, {"s"});
    m.output("s");
    m.bind();
    const partition p = finalize_partition(*m.b, {m.k("scores", {"scores"})}, "test.partitioner");
    const nnergy_kernel_stats& st = p.kernels[0].stats;
    CHECK(st.batch == 2.0);
    CHECK(st.channels == 128.0);        // N, not the 12 heads
    CHECK(st.spatial == 12.0 * 128.0);  // heads x rows
    CHECK(st.total_threads == 2.0 * 12 * 128 * 128);
}

TEST_CASE("invalid partitions are rejected naming the partitioner and the node",
          "[partition][errors]") {
    partition_model m = small_cnn();
    CHECK(m.error_of({m.k("a", {"conv", "bn", "relu"}), m.k("b", {"gap", "flat"})}) ==
          "model.json: partitioner 'test.partitioner': node 'fc' (Gemm) is in no kernel; every "
          "node must be in exactly one kernel");
    CHECK_THAT(m.error_of({m.k("a", {"conv", "bn"}), m.k("b", {"gap"})}),
               Contains("node 'relu' (Relu) is in no kernel (nor are 2 more nodes)"));
    CHECK(m.error_of({m.k("a", {"conv", "bn", "relu"}), m.k("b", {"relu", "gap", "flat", "fc"})}) ==
          "model.json: partitioner 'test.partitioner': node 'relu' (Relu) is in two kernels: 'a' "
          "and 'b'");
    CHECK_THAT(m.error_of({m.k("a", {"conv", "conv", "bn", "relu", "gap", "flat", "fc"})}),
               Contains("kernel 'a' lists node 'conv' (Conv) twice"));
    CHECK_THAT(m.error_of({m.k("a", {"conv", "bn", "relu", "gap", "flat", "fc"}), m.k("e", {})}),
               Contains("kernel 'e' has no nodes"));
    kernel bad = m.k("a", {"conv", "bn", "relu", "gap", "flat", "fc"});
    bad.nodes.push_back(99);
    CHECK_THAT(m.error_of({bad}), Contains("kernel 'a' names node index 99, but the graph has 6"));
    // x -> y -> x: conv (in x) feeds bn (in y), relu (in y) feeds gap (in x).
    CHECK(m.error_of({m.k("x", {"conv", "gap", "flat", "fc"}), m.k("y", {"bn", "relu"})}) ==
          "model.json: partitioner 'test.partitioner': kernels form a cycle: 'x' -> 'y' -> 'x' "
          "(each kernel must be able to run after the kernels it reads from)");
    try {
        finalize_partition(*m.b, {}, "test.partitioner");
        FAIL("empty partition accepted");
    } catch (const nnergy::error& e) {
        CHECK(e.code() == exit_code::failure);
    }
}
