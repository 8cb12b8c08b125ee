// SPDX-License-Identifier: Apache-2.0
// Counting: MACs, FLOPs, bytes and parameters per node, under docs/counting.md. Every expected
// value is worked out by hand in the comment beside it.
#include <catch2/catch.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ops_test_model.hpp"

TEST_CASE("3x3 convolution: the docs/counting.md worked example", "[counting][conv]") {
    model m;
    m.input("x", {1, 64, 56, 56});
    m.weight("w", {64, 64, 3, 3});
    m.weight("b", {64});
    m.node("conv", "Conv", {"x", "w", "b"}, {"y"}, {ais("pads", {1, 1, 1, 1})});
    m.output("y");
    m.bind();
    const op_counts& c = m.counts("conv");
    // output 1 x 64 x 56 x 56 = 200,704 elements
    // MACs = 200,704 x (64 / 1) x 3 x 3 = 200,704 x 576 = 115,605,504
    CHECK(c.macs == 115'605'504.0);
    // FLOPs = 2 x MACs + one bias add per output = 231,211,008 + 200,704 = 231,411,712
    CHECK(c.flops == 231'411'712.0);
    // activations in and out: 200,704 x 4 bytes = 802,816 each
    CHECK(c.input_bytes == 802'816.0);
    CHECK(c.output_bytes == 802'816.0);
    // weights: 64 x 64 x 3 x 3 + 64 = 36,928 elements, x 4 bytes = 147,712
    CHECK(c.params == 36'928.0);
    CHECK(c.weight_bytes == 147'712.0);
    CHECK(c.counted);
    CHECK(m.b->total_params == 36'928.0);
}

TEST_CASE("grouped, depthwise, strided and transposed convolutions", "[counting][conv]") {
    model g;
    g.input("x", {1, 32, 14, 14});
    g.weight("w", {64, 8, 3, 3});
    g.node("conv", "Conv", {"x", "w"}, {"y"}, {ai("group", 4), ais("pads", {1, 1, 1, 1})});
    g.output("y");
    g.bind();
    // 1 x 64 x 14 x 14 = 12,544 outputs x (32 / 4 = 8) x 9 = 903,168 MACs; no bias
    CHECK(g.counts("conv").macs == 903'168.0);
    CHECK(g.counts("conv").flops == 1'806'336.0);

    model dw;
    dw.input("x", {2, 32, 14, 14});
    dw.weight("w", {32, 1, 3, 3});
    dw.node("conv", "Conv", {"x", "w"}, {"y"}, {ai("group", 32), ais("pads", {1, 1, 1, 1})});
    dw.output("y");
    dw.bind();
    // 2 x 32 x 14 x 14 = 12,544 outputs x 1 x 9 = 112,896 MACs
    CHECK(dw.counts("conv").macs == 112'896.0);
    CHECK(dw.counts("conv").params == 288.0);  // 32 x 1 x 3 x 3

    model s;
    s.input("x", {1, 3, 224, 224});
    s.weight("w", {64, 3, 7, 7});
    s.node("stem", "Conv", {"x", "w"}, {"y"}, {ais("strides", {2, 2}), ais("pads", {3, 3, 3, 3})});
    s.output("y");
    s.bind();
    // 64 x 112 x 112 = 802,816 outputs x 3 x 49 = 118,013,952 MACs (ResNet stem)
    CHECK(s.counts("stem").macs == 118'013'952.0);

    model t;
    t.input("x", {1, 16, 8, 8});
    t.weight("w", {16, 8, 4, 4});
    t.weight("b", {8});
    t.node("up", "ConvTranspose", {"x", "w", "b"}, {"y"},
           {ais("strides", {2, 2}), ais("pads", {1, 1, 1, 1})});
    t.output("y");
    t.bind();
    // every input element (16 x 8 x 8 = 1,024) scatters into 8 x 4 x 4 = 128 outputs:
    // 131,072 MACs; bias: 8 x 16 x 16 = 2,048 adds; FLOPs = 262,144 + 2,048 = 264,192
    CHECK(t.counts("up").macs == 131'072.0);
    CHECK(t.counts("up").flops == 264'192.0);
}

TEST_CASE("Gemm and MatMul counts", "[counting][matmul]") {
    model g;
    g.input("a", {4, 3});
    g.weight("w", {5, 3});
    g.weight("c", {5});
    g.node("fc", "Gemm", {"a", "w", "c"}, {"y"}, {ai("transB", 1)});
    g.output("y");
    g.bind();
    const op_counts& fc = g.counts("fc");
    CHECK(fc.macs == 60.0);          // M x N x K = 4 x 5 x 3
    CHECK(fc.flops == 140.0);        // 2 x 60 + M x N (bias C) = 120 + 20
    CHECK(fc.input_bytes == 48.0);   // 4 x 3 x 4
    CHECK(fc.output_bytes == 80.0);  // 4 x 5 x 4
    CHECK(fc.weight_bytes == 80.0);  // (15 + 5) x 4
    CHECK(fc.params == 20.0);

    model nobias;
    nobias.input("a", {4, 3});
    nobias.weight("w", {5, 3});
    nobias.weight("c", {5});
    nobias.node("fc", "Gemm", {"a", "w", "c"}, {"y"}, {ai("transB", 1), af("beta", 0.0)});
    nobias.output("y");
    nobias.bind();
    CHECK(nobias.counts("fc").flops == 120.0);  // beta = 0: C is not added

    model mm;
    mm.input("a", {2, 3, 4});
    mm.input("b", {2, 4, 5});
    mm.input("p", {2, 1, 3, 4});
    mm.input("q", {7, 4, 5});
    mm.input("v", {4});
    mm.weight("w", {4, 5});
    mm.node("batched", "MatMul", {"a", "b"}, {"y1"});
    mm.node("broadcast", "MatMul", {"p", "q"}, {"y2"});
    mm.node("vector", "MatMul", {"v", "w"}, {"y3"});
    mm.output("y1");
    mm.output("y2");
    mm.output("y3");
    mm.bind();
    CHECK(mm.counts("batched").macs == 120.0);  // batch 2 x M 3 x N 5 x K 4
    CHECK(mm.counts("batched").flops == 240.0);
    CHECK(mm.counts("broadcast").macs == 840.0);  // batch 2 x 7 x M 3 x N 5 x K 4
    CHECK(mm.counts("vector").macs == 20.0);      // N 5 x K 4
    CHECK(mm.counts("vector").params == 20.0);
}

TEST_CASE("elementwise FLOPs per output element", "[counting][elementwise]") {
    // 2 x 8 = 16 elements throughout.
    CHECK(unary_flops("Relu", {2, 8}) == 16.0);  // 1 each
    CHECK(unary_flops("Tanh", {2, 8}) == 16.0);  // 1 each
    CHECK(unary_flops("Erf", {2, 8}) == 16.0);
    CHECK(unary_flops("Sqrt", {2, 8}) == 16.0);
    CHECK(unary_flops("Neg", {2, 8}) == 16.0);
    CHECK(unary_flops("LeakyRelu", {2, 8}) == 32.0);                           // 2 each
    CHECK(unary_flops("Clip", {2, 8}) == 32.0);                                // 2 each
    CHECK(unary_flops("Sigmoid", {2, 8}) == 64.0);                             // 4 each
    CHECK(unary_flops("HardSwish", {2, 8}) == 80.0);                           // 5 each
    CHECK(unary_flops("Gelu", {2, 8}) == 80.0);                                // 5 each (erf form)
    CHECK(unary_flops("Gelu", {2, 8}, {as("approximate", "tanh")}) == 144.0);  // 9 each
    CHECK(unary_flops("Softmax", {2, 8}) == 80.0);                             // 5 each
    CHECK(unary_flops("Identity", {2, 8}) == 0.0);
    CHECK(unary_flops("Dropout", {2, 8}) == 0.0);
    CHECK(unary_flops("Transpose", {2, 8}) == 0.0);
    CHECK(unary_flops("Flatten", {2, 8}) == 0.0);

    model add;
    add.input("a", {2, 8});
    add.input("b", {8});
    add.node("add", "Add", {"a", "b"}, {"y"});
    add.node("sq", "Mul", {"a", "a"}, {"z"});
    add.output("y");
    add.output("z");
    add.bind();
    CHECK(add.counts("add").flops == 16.0);        // one per output element (2 x 8)
    CHECK(add.counts("add").input_bytes == 96.0);  // 64 (a) + 32 (b)
    CHECK(add.counts("sq").flops == 16.0);
    CHECK(add.counts("sq").input_bytes == 64.0);  // a read once, though named twice

    model var;
    var.input("a", {3, 4});
    var.input("b", {3, 4});
    var.input("c", {3, 4});
    var.node("sum", "Sum", {"a", "b", "c"}, {"s"});
    var.node("mean", "Mean", {"a", "b", "c"}, {"m"});
    var.node("max", "Max", {"a", "b", "c"}, {"x"});
    var.output("s");
    var.bind();
    CHECK(var.counts("sum").flops == 24.0);   // 12 outputs x (3 - 1) adds
    CHECK(var.counts("mean").flops == 36.0);  // 12 x (2 adds + 1 divide)
    CHECK(var.counts("max").flops == 24.0);   // 12 x 2 comparisons
}

TEST_CASE("normalization, pooling and reduction counts", "[counting][norm]") {
    model ln;
    ln.input("x", {2, 5, 8});
    ln.weight("g", {8});
    ln.weight("beta", {8});
    ln.node("ln", "LayerNormalization", {"x", "g", "beta"}, {"y"});
    ln.node("ln_nobias", "LayerNormalization", {"x", "g"}, {"z"});
    ln.output("y");
    ln.output("z");
    ln.bind();
    CHECK(ln.counts("ln").flops == 560.0);               // 80 elements x 7
    CHECK(ln.counts("ln_nobias").flops == 480.0);        // 80 elements x 6
    CHECK(ln.counts("ln").params == 16.0);               // g and beta, 8 each
    CHECK(ln.counts("ln_nobias").params == 0.0);         // g already counted at "ln"
    CHECK(ln.counts("ln_nobias").weight_bytes == 32.0);  // but still read: 8 x 4 bytes

    model bn;
    bn.input("x", {2, 4, 3, 3});
    for (const char* n : {"s", "b", "mu", "var"}) bn.weight(n, {4});
    bn.node("bn", "BatchNormalization", {"x", "s", "b", "mu", "var"}, {"y"});
    bn.output("y");
    bn.bind();
    CHECK(bn.counts("bn").flops == 144.0);        // 72 elements x 2 (scale and shift)
    CHECK(bn.counts("bn").params == 8.0);         // scale + bias; mean and var are statistics
    CHECK(bn.counts("bn").weight_bytes == 64.0);  // all four read: 16 x 4 bytes

    // MaxPool 3x3 stride 2 on 6x6: 2 x 2 outputs x (9 - 1) comparisons = 32
    CHECK(unary_flops("MaxPool", {1, 1, 6, 6},
                      {ais("kernel_shape", {3, 3}), ais("strides", {2, 2})}) == 32.0);
    // AveragePool: 4 outputs x (8 adds + 1 divide) = 36
    CHECK(unary_flops("AveragePool", {1, 1, 6, 6},
                      {ais("kernel_shape", {3, 3}), ais("strides", {2, 2})}) == 36.0);
    // GlobalAveragePool 2 x 512 x 7 x 7: one FLOP per input element = 50,176
    CHECK(unary_flops("GlobalAveragePool", {2, 512, 7, 7}) == 50'176.0);
    // GlobalMaxPool: 1,024 outputs x 48 comparisons = 49,152
    CHECK(unary_flops("GlobalMaxPool", {2, 512, 7, 7}) == 49'152.0);
    CHECK(unary_flops("ReduceMean", {2, 3, 4}, {ais("axes", {-1})}) == 24.0);  // 6 x (3 + 1)
    CHECK(unary_flops("ReduceSum", {2, 3, 4}, {ais("axes", {-1})}) == 18.0);   // 6 x 3
}

TEST_CASE("parameters: each initializer once, shape constants and statistics excluded",
          "[counting][params]") {
    model m;
    m.input("x", {2, 8});
    m.weight("w", {8, 8});
    m.ints("target", {4, 4});
    m.weight("lo", {}, NNERGY_DTYPE_FLOAT32);
    m.weight("hi", {}, NNERGY_DTYPE_FLOAT32);
    m.weight("bias", {16});
    m.node("mm1", "MatMul", {"x", "w"}, {"a"});
    m.node("mm2", "MatMul", {"a", "w"}, {"b"});            // shared weight
    m.node("reshape", "Reshape", {"b", "target"}, {"c"});  // shape constant
    m.node("clip", "Clip", {"c", "lo", "hi"}, {"d"});      // bounds are control operands
    m.node("shape", "Shape", {"bias"}, {"s"});             // reads only metadata...
    m.node("flat", "Reshape", {"d", "s"}, {"e"});
    m.node("add", "Add", {"e", "bias"}, {"f"});  // ...but this reads the data
    m.output("f");
    const bound_graph& b = m.bind();
    CHECK(m.counts("mm1").params == 64.0);         // w, first consumer
    CHECK(m.counts("mm1").weight_bytes == 256.0);  // 64 x 4 bytes
    CHECK(m.counts("mm2").params == 0.0);          // w again: counted once per graph
    CHECK(m.counts("mm2").weight_bytes == 256.0);  // but read again
    CHECK(m.counts("reshape").params == 0.0);
    CHECK(m.counts("reshape").weight_bytes == 0.0);
    CHECK(m.counts("clip").params == 0.0);
    CHECK(m.counts("clip").weight_bytes == 0.0);
    CHECK(m.counts("shape").params == 0.0);
    CHECK(m.counts("shape").input_bytes == 0.0);
    CHECK(m.counts("add").params == 16.0);
    CHECK(b.total_params == 80.0);  // 64 (w) + 16 (bias)

    // Integer index constants are never parameters, even at data slots.
    model g;
    g.input("x", {5, 3});
    g.ints("rows", {0, 2});
    g.node("pick", "Gather", {"x", "rows"}, {"y"});
    g.output("y");
    CHECK(g.bind().total_params == 0.0);
    CHECK(g.counts("pick").weight_bytes == 16.0);  // the two int64 indices are still read

    // Nor is a bool flag (the dynamo exporter's mask `True`); an int8 quantized weight is, and
    // so is an int32 tensor (a quantized bias).
    model q;
    q.input("x", {5, 3});
    q.input("cond", {5, 3}, NNERGY_DTYPE_BOOL);
    q.weight("rows32", {2}, NNERGY_DTYPE_INT32);
    q.weight("flag", {}, NNERGY_DTYPE_BOOL);
    q.weight("w8", {3, 3}, NNERGY_DTYPE_INT8);
    q.node("pick", "Gather", {"x", "rows32"}, {"y"});
    q.node("both", "And", {"cond", "flag"}, {"c"});
    q.node("deq", "Cast", {"w8"}, {"wf"}, {ai("to", 1)});
    q.output("y");
    q.output("c");
    q.output("wf");
    CHECK(q.bind().total_params == 11.0);

    // A parameter no node reads (an auxiliary head only training runs) is still one of the
    // model's, as PyTorch counts them; an unread int64 constant is not.
    model u;
    u.input("x", {2, 8});
    u.weight("w", {8, 4});
    u.weight("aux", {8, 3});
    u.ints("unused_shape", {1, 2});
    u.node("mm", "MatMul", {"x", "w"}, {"y"});
    u.output("y");
    CHECK(u.bind().total_params == 56.0);  // 32 (w) + 24 (aux)
    CHECK(u.counts("mm").params == 32.0);  // no node is charged with aux
}

TEST_CASE("bytes: partial reads, int4 and unknown ops", "[counting][bytes]") {
    model e;
    e.input("ids", {1, 7}, NNERGY_DTYPE_INT64);
    e.weight("table", {1000, 64});
    e.node("embed", "Gather", {"table", "ids"}, {"h"});
    e.output("h");
    e.bind();
    const op_counts& g = e.counts("embed");
    CHECK(g.params == 64'000.0);       // the whole table is parameters
    CHECK(g.weight_bytes == 1'792.0);  // but only 7 rows x 64 x 4 bytes are read
    CHECK(g.input_bytes == 56.0);      // 7 int64 ids
    CHECK(g.output_bytes == 1'792.0);  // 1 x 7 x 64 x 4
    CHECK(g.flops == 0.0);

    model s;
    s.input("x", {10, 20});
    s.ints("st", {15});
    s.ints("en", {20});
    s.ints("ax", {1});
    s.node("tail", "Slice", {"x", "st", "en", "ax"}, {"y"});
    s.output("y");
    s.bind();
    CHECK(s.counts("tail").input_bytes == 200.0);  // 10 x 5 floats read, not 800 bytes
    CHECK(s.counts("tail").weight_bytes == 0.0);   // bounds are control operands

    model q;
    q.input("x", {3, 5}, NNERGY_DTYPE_INT4);
    q.node("id", "Identity", {"x"}, {"y"});
    q.output("y");
    q.bind();
    CHECK(q.counts("id").input_bytes == 7.5);  // 15 elements x 4 bits / 8
    CHECK(q.b->tensor_bytes(*q.g.find_tensor("y")) == 7.5);

    model u;
    u.input("x", {2, 4});
    u.weight("w", {4});
    u.declare("y", {2, 4}, NNERGY_DTYPE_FLOAT16);
    u.node("mystery", "FancyOp", {"x", "w"}, {"y"});
    u.output("y");
    u.bind();
    const op_counts& c = u.counts("mystery");
    CHECK_FALSE(c.counted);
    CHECK(c.macs == 0.0);
    CHECK(c.flops == 0.0);
    CHECK(c.input_bytes == 32.0);   // bytes are still known from the shapes: 8 x 4
    CHECK(c.output_bytes == 16.0);  // 8 x 2 (float16)
    CHECK(c.weight_bytes == 16.0);
    CHECK(c.params == 4.0);  // operand roles unknown: initializers count
}

TEST_CASE("rebinding batch 1 and batch 8 scales the work eightfold", "[counting][bind]") {
    model m;
    m.input("x", {"batch", 3, 32, 32});
    m.weight("w1", {16, 3, 3, 3});
    m.weight("b1", {16});
    for (const char* n : {"s", "sh", "mu", "var"}) m.weight(n, {16});
    m.weight("fc", {10, 16});
    m.weight("fcb", {10});
    m.ints("flat", {0, -1});
    m.node("conv", "Conv", {"x", "w1", "b1"}, {"c"}, {ais("pads", {1, 1, 1, 1})});
    m.node("bn", "BatchNormalization", {"c", "s", "sh", "mu", "var"}, {"n"});
    m.node("relu", "Relu", {"n"}, {"r"});
    m.node("gap", "GlobalAveragePool", {"r"}, {"p"});
    m.node("reshape", "Reshape", {"p", "flat"}, {"f"});
    m.node("fc", "Gemm", {"f", "fc", "fcb"}, {"y"}, {ai("transB", 1)});
    m.output("y");

    const auto totals = [](const bound_graph& b) {
        double macs = 0, flops = 0, bytes = 0;
        for (const op_counts& c : b.counts) {
            macs += c.macs;
            flops += c.flops;
            bytes += c.input_bytes + c.output_bytes;
        }
        return std::vector<double>{macs, flops, bytes, b.total_params};
    };
    const auto one = totals(m.bind({{"batch", 1}}));
    const auto eight = totals(m.bind({{"batch", 8}}));
    // batch 1: conv 16 x 32 x 32 = 16,384 outputs x 27 = 442,368 MACs; fc 10 x 16 = 160
    CHECK(one[0] == 442'528.0);
    CHECK(eight[0] == 8 * one[0]);
    CHECK(eight[1] == 8 * one[1]);
    CHECK(eight[2] == 8 * one[2]);
    // params: 432 + 16 (conv) + 32 (bn scale, shift) + 160 + 10 (fc) = 650; unchanged
    CHECK(one[3] == 650.0);
    CHECK(eight[3] == 650.0);
    // The folded Reshape target follows the batch.
    CHECK(m.b->shapes[*m.g.find_tensor("f")] == std::vector<int64_t>{8, 16});
}
