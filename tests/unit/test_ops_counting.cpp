// SPDX-License-Identifier: Apache-2.0
// Counting (MACs, FLOPs, bytes) of the operators beyond the basic CNN/transformer set, under
// docs/counting.md: every expected value is worked out by hand beside it.

#include "ops_test_model.hpp"

TEST_CASE("ConvTranspose counts: every input element scatters a kernel", "[ops][counting][conv]") {
    model m;
    m.input("x", {1, 16, 7, 7});
    m.weight("w", {16, 8, 3, 3});
    m.weight("b", {8});
    m.node("up", "ConvTranspose", {"x", "w", "b"}, {"y"},
           {ais("strides", {2, 2}), ais("pads", {1, 1, 1, 1}), ais("output_padding", {1, 1})});
    m.output("y");
    m.bind();
    const op_counts& c = m.counts("up");
    // in = 16 x 7 x 7 = 784; MACs = in x (C_out / group) x 3 x 3 = 784 x 8 x 9 = 56,448
    CHECK(c.macs == 56'448.0);
    // out = 8 x 14 x 14 = 1,568; FLOPs = 2 x 56,448 + 1,568 = 114,464
    CHECK(c.flops == 114'464.0);
    // params = 16 x 8 x 9 + 8 = 1,160
    CHECK(c.params == 1'160.0);
}

TEST_CASE("Einsum counts: all index extents for two operands, left to right for more",
          "[ops][counting][einsum]") {
    model m;
    m.input("a", {2, 3, 4});
    m.input("b", {2, 4, 5});
    m.node("bmm", "Einsum", {"a", "b"}, {"y"}, {as("equation", "bij,bjk->bik")});
    m.input("p", {2, 3});
    m.input("q", {3, 4});
    m.input("r", {4, 5});
    m.node("chain", "Einsum", {"p", "q", "r"}, {"z"}, {as("equation", "ij,jk,kl->il")});
    m.node("sum", "Einsum", {"q"}, {"t"}, {as("equation", "ij->")});
    m.node("tr", "Einsum", {"q"}, {"u"}, {as("equation", "ij->ji")});
    for (const char* o : {"y", "z", "t", "u"}) m.output(o);
    m.bind();
    // labels b, i, j, k: 2 x 3 x 4 x 5 = 120 MACs, 240 FLOPs
    CHECK(m.counts("bmm").macs == 120.0);
    CHECK(m.counts("bmm").flops == 240.0);
    // p x q over i, j, k: 2 x 3 x 4 = 24; j is then summed away, leaving [i, k];
    // that x r over i, k, l: 2 x 4 x 5 = 40. MACs = 64, FLOPs = 128
    CHECK(m.counts("chain").macs == 64.0);
    CHECK(m.counts("chain").flops == 128.0);
    // one operand sums: in - out = 12 - 1 = 11 adds
    CHECK(m.counts("sum").macs == 0.0);
    CHECK(m.counts("sum").flops == 11.0);
    // a transpose only moves data: 12 - 12 = 0
    CHECK(m.counts("tr").flops == 0.0);
}

TEST_CASE("normalization counts", "[ops][counting][norm]") {
    model m;
    m.input("x", {2, 4, 5, 5});
    m.weight("s", {4});
    m.weight("b", {4});
    m.node("in", "InstanceNormalization", {"x", "s", "b"}, {"a"});
    m.node("gn", "GroupNormalization", {"x", "s", "b"}, {"c"}, {ai("num_groups", 2)});
    m.node("lrn", "LRN", {"x"}, {"d"}, {ai("size", 5)});
    m.node("mvn", "MeanVarianceNormalization", {"x"}, {"e"});
    m.node("lpn", "LpNormalization", {"x"}, {"f"}, {ai("axis", 1)});
    for (const char* o : {"a", "c", "d", "e", "f"}) m.output(o);
    m.bind();
    // out = 2 x 4 x 5 x 5 = 200
    CHECK(m.counts("in").flops == 1'400.0);   // 7 x 200
    CHECK(m.counts("gn").flops == 1'400.0);   // 7 x 200
    CHECK(m.counts("lrn").flops == 2'600.0);  // (2 x 5 + 3) x 200 = 13 x 200
    CHECK(m.counts("mvn").flops == 1'000.0);  // 5 x 200
    CHECK(m.counts("lpn").flops == 600.0);    // 3 x 200
    // scale and bias are shared: counted once, by the first reader
    CHECK(m.counts("in").params == 8.0);
    CHECK(m.counts("gn").params == 0.0);
}

TEST_CASE("Resize counts by mode", "[ops][counting][resize]") {
    const auto flops = [](const char* mode) {
        model m;
        m.input("x", {1, 3, 10, 20});
        m.ints("sizes", {1, 3, 20, 40});
        m.node("rs", "Resize", {"x", "", "", "sizes"}, {"y"}, {as("mode", mode)});
        m.output("y");
        m.bind();
        return m.counts("rs").flops;
    };
    // out = 3 x 20 x 40 = 2,400; two axes change (k = 2)
    CHECK(flops("nearest") == 0.0);
    // linear: 2^2 = 4 neighbours, 4 multiplies + 3 adds = 7 per output: 16,800
    CHECK(flops("linear") == 16'800.0);
    // cubic: 4^2 = 16 neighbours, 16 + 15 = 31 per output: 74,400
    CHECK(flops("cubic") == 74'400.0);
}

TEST_CASE("reduction, index and scan counts", "[ops][counting][reduce]") {
    model m;
    m.input("x", {2, 3});
    m.ints("ax", {1});
    m.node("l1", "ReduceL1", {"x", "ax"}, {"a"}, {ai("keepdims", 0)});
    m.node("l2", "ReduceL2", {"x", "ax"}, {"b"}, {ai("keepdims", 0)});
    m.node("lse", "ReduceLogSumExp", {"x", "ax"}, {"c"}, {ai("keepdims", 0)});
    m.node("ls", "ReduceLogSum", {"x", "ax"}, {"d"}, {ai("keepdims", 0)});
    m.node("ss", "ReduceSumSquare", {"x", "ax"}, {"e"}, {ai("keepdims", 0)});
    m.node("pr", "ReduceProd", {"x", "ax"}, {"f"}, {ai("keepdims", 0)});
    m.node("am", "ArgMax", {"x"}, {"g"}, {ai("axis", 1)});
    m.ints("k", {2});
    m.node("top", "TopK", {"x", "k"}, {"h", "hi"});
    m.ints("axis", {1}, true);
    m.node("cs", "CumSum", {"x", "axis"}, {"i"});
    for (const char* o : {"a", "b", "c", "d", "e", "f", "g", "h", "hi", "i"}) m.output(o);
    m.bind();
    // in = 6, out = 2 (rows of 3)
    CHECK(m.counts("l1").flops == 10.0);   // 6 abs + 4 adds = 2 x 6 - 2
    CHECK(m.counts("l2").flops == 12.0);   // 6 squares + 4 adds + 2 sqrt = 2 x 6
    CHECK(m.counts("lse").flops == 12.0);  // 6 exp + 4 adds + 2 log
    CHECK(m.counts("ls").flops == 6.0);    // 4 adds + 2 log
    CHECK(m.counts("ss").flops == 10.0);   // 6 squares + 4 adds
    CHECK(m.counts("pr").flops == 4.0);    // 2 multiplies per row
    CHECK(m.counts("am").flops == 4.0);    // 2 comparisons per row
    CHECK(m.counts("top").flops == 6.0);   // one comparison per input element
    CHECK(m.counts("cs").flops == 4.0);    // 3 - 1 adds per row, 2 rows
}

TEST_CASE("pooling counts: LpPool and GlobalLpPool", "[ops][counting][pool]") {
    // x = [1, 2, 4, 4]: 32 elements; LpPool 2x2 stride 2 gives 2 x 2 x 2 = 8 outputs
    // 3 x window per output (abs, pow, add per element): 8 x 3 x 4 = 96
    CHECK(unary_flops("LpPool", {1, 2, 4, 4},
                      {ais("kernel_shape", {2, 2}), ais("strides", {2, 2})}) == 96.0);
    // 3 x in = 3 x 32 = 96
    CHECK(unary_flops("GlobalLpPool", {1, 2, 4, 4}) == 96.0);
}

TEST_CASE("new elementwise ops: FLOPs per output element", "[ops][counting][elementwise]") {
    // x = [2, 3]: 6 elements
    CHECK(unary_flops("Sin", {2, 3}) == 6.0);
    CHECK(unary_flops("Atanh", {2, 3}) == 6.0);
    CHECK(unary_flops("Round", {2, 3}) == 6.0);
    CHECK(unary_flops("ThresholdedRelu", {2, 3}) == 12.0);  // 2 x 6
    CHECK(unary_flops("Softsign", {2, 3}) == 18.0);         // 3 x 6
    CHECK(unary_flops("Shrink", {2, 3}) == 18.0);           // 3 x 6
    CHECK(unary_flops("Selu", {2, 3}) == 30.0);             // 5 x 6
    CHECK(unary_flops("Mish", {2, 3}) == 30.0);             // 5 x 6
    CHECK(unary_flops("Celu", {2, 3}) == 42.0);             // 7 x 6
    CHECK(unary_flops("Hardmax", {2, 3}) == 6.0);
    CHECK(unary_flops("DepthToSpace", {1, 4, 1, 1}, {ai("blocksize", 2)}) == 0.0);

    model m;  // broadcasting binary ops: one FLOP per output element
    m.input("a", {2, 3});
    m.input("b", {3});
    m.node("mod", "Mod", {"a", "b"}, {"y"}, {ai("fmod", 1)});
    m.node("le", "LessOrEqual", {"a", "b"}, {"z"});
    m.output("y");
    m.output("z");
    m.bind();
    CHECK(m.counts("mod").flops == 6.0);
    CHECK(m.counts("le").flops == 6.0);
}

TEST_CASE("quantized counts", "[ops][counting][quant]") {
    model m;
    m.input("a", {4, 8}, NNERGY_DTYPE_UINT8);
    m.weight("b", {8, 3}, NNERGY_DTYPE_INT8);
    m.node("mmi", "MatMulInteger", {"a", "b"}, {"p"});
    m.weight("sa", {});
    m.weight("za", {}, NNERGY_DTYPE_UINT8);
    m.weight("sb", {});
    m.weight("zb", {}, NNERGY_DTYPE_INT8);
    m.weight("sy", {});
    m.weight("zy", {}, NNERGY_DTYPE_UINT8);
    m.node("qmm", "QLinearMatMul", {"a", "sa", "za", "b", "sb", "zb", "sy", "zy"}, {"q"});
    m.input("x", {1, 3, 8, 8}, NNERGY_DTYPE_UINT8);
    m.weight("w", {16, 3, 3, 3}, NNERGY_DTYPE_INT8);
    m.weight("bias", {16}, NNERGY_DTYPE_INT32);
    m.node("qconv", "QLinearConv", {"x", "sa", "za", "w", "sb", "zb", "sy", "zy", "bias"}, {"r"},
           {ais("pads", {1, 1, 1, 1})});
    m.node("iconv", "ConvInteger", {"x", "w"}, {"s"}, {ais("pads", {1, 1, 1, 1})});
    m.input("f", {2, 3});
    m.node("quant", "QuantizeLinear", {"f", "sa", "za"}, {"fq"});
    m.node("dequant", "DequantizeLinear", {"fq", "sa", "za"}, {"fd"});
    m.node("dyn", "DynamicQuantizeLinear", {"f"}, {"dy", "ds", "dz"});
    for (const char* o : {"p", "q", "r", "s", "fd", "dy", "ds", "dz"}) m.output(o);
    m.bind();
    // 4 x 3 outputs x K = 8: 96 MACs
    CHECK(m.counts("mmi").macs == 96.0);
    CHECK(m.counts("mmi").flops == 192.0);
    // plus requantizing 12 outputs at 2 each: 192 + 24 = 216
    CHECK(m.counts("qmm").macs == 96.0);
    CHECK(m.counts("qmm").flops == 216.0);
    // out = 16 x 8 x 8 = 1,024; MACs = 1,024 x 3 x 3 x 3 = 27,648
    // FLOPs = 55,296 + 1,024 (bias) + 2,048 (requantize) = 58,368
    CHECK(m.counts("qconv").macs == 27'648.0);
    CHECK(m.counts("qconv").flops == 58'368.0);
    CHECK(m.shape_of("r") == shape{1, 16, 8, 8});
    CHECK(m.counts("iconv").macs == 27'648.0);
    CHECK(m.counts("iconv").flops == 55'296.0);
    CHECK(m.counts("quant").flops == 30.0);    // 5 x 6
    CHECK(m.counts("dequant").flops == 12.0);  // 2 x 6
    CHECK(m.counts("dyn").flops == 42.0);      // 7 x 6
    // params: b 24 + scales/zero points 6 + w 432 + bias 16 = 478 (each initializer once)
    CHECK(m.b->total_params == 478.0);
}

TEST_CASE("Scatter counts and partial reads of GatherElements / GatherND",
          "[ops][counting][bytes]") {
    model m;
    m.input("data", {4, 5});
    m.input("idx", {2, 1}, NNERGY_DTYPE_INT64);
    m.input("upd", {2, 5});
    m.node("set", "ScatterND", {"data", "idx", "upd"}, {"a"});
    m.node("add", "ScatterND", {"data", "idx", "upd"}, {"b"}, {as("reduction", "add")});
    m.input("gi", {4, 2}, NNERGY_DTYPE_INT64);
    m.node("ge", "GatherElements", {"data", "gi"}, {"c"}, {ai("axis", 1)});
    m.node("gnd", "GatherND", {"data", "idx"}, {"d"});
    for (const char* o : {"a", "b", "c", "d"}) m.output(o);
    m.bind();
    CHECK(m.counts("set").flops == 0.0);
    CHECK(m.counts("add").flops == 10.0);  // one add per update element, 2 x 5
    // GatherElements reads 4 x 2 data elements (32 bytes) and the int64 indices (64 bytes)
    CHECK(m.counts("ge").input_bytes == 96.0);
    // GatherND output [2, 5]: 10 data elements (40 bytes) and 2 indices (16 bytes)
    CHECK(m.counts("gnd").input_bytes == 56.0);
}
