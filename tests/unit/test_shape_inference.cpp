// SPDX-License-Identifier: Apache-2.0
// Shape inference: binding symbols, every known op's output shape, constant folding of shape
// sub-graphs, and the errors bad models get.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ops_test_model.hpp"

namespace {
shape binary_shape(const std::string& op, std::vector<D> a, std::vector<D> b,
                   std::vector<attribute> attrs = {}) {
    model m;
    m.input("a", std::move(a));
    m.input("b", std::move(b));
    m.node("n", op, {"a", "b"}, {"y"}, std::move(attrs));
    m.output("y");
    m.bind();
    return m.shape_of("y");
}
}  // namespace

TEST_CASE("symbols are bound and listed", "[shape]") {
    model m;
    m.input("x", {"batch", "seq", 16});
    m.input("mask", {"seq", "heads"});
    m.node("relu", "Relu", {"x"}, {"y"});
    m.output("y");
    CHECK(symbols_of(m.g) == std::vector<std::string>{"batch", "heads", "seq"});
    // All unbound symbols at once, sorted.
    CHECK(m.bind_error() ==
          "model.json: unbound dimension symbols: batch, heads, seq (bind them with --dim "
          "NAME=VALUE or [model] dims)");
    CHECK_THAT(m.bind_error({{"batch", 2}}),
               Contains("unbound dimension symbols: heads, seq (bind"));
    CHECK_THAT(m.bind_error({{"batch", 0}, {"seq", 4}, {"heads", 2}}),
               Contains("'batch' is bound to 0"));
    m.bind({{"batch", 2}, {"seq", 7}, {"heads", 3}, {"unused", 5}});
    CHECK(m.shape_of("x") == shape{2, 7, 16});
    CHECK(m.shape_of("y") == shape{2, 7, 16});
    CHECK(m.shape_of("mask") == shape{7, 3});
}

TEST_CASE("graph inputs need complete shapes", "[shape][errors]") {
    model m;
    m.add_tensor("x", NNERGY_DTYPE_FLOAT32, std::nullopt, false);
    m.g.inputs.push_back(0);
    m.node("relu", "Relu", {"x"}, {"y"});
    CHECK_THAT(m.bind_error(), Contains("graph input 'x' has no shape"));

    model u;
    u.input("x", {2, -1});
    u.node("relu", "Relu", {"x"}, {"y"});
    CHECK_THAT(u.bind_error(), Contains("graph input 'x' [2, ?]: dimension 1 is unknown"));
}

TEST_CASE("Conv output shapes", "[shape][conv]") {
    const auto conv = [](std::vector<D> x, std::vector<D> w, std::vector<attribute> attrs,
                         bool bias = false) {
        model m;
        m.input("x", std::move(x));
        const int64_t out_channels = w.front().d.value;
        m.weight("w", std::move(w));
        std::vector<std::string> ins{"x", "w"};
        if (bias) {
            m.weight("b", {out_channels});
            ins.push_back("b");
        }
        m.node("conv", "Conv", ins, {"y"}, std::move(attrs));
        m.output("y");
        m.bind();
        return m.shape_of("y");
    };
    // 3x3, pad 1, stride 1: (56 + 1 + 1 - 3) / 1 + 1 = 56
    CHECK(conv({1, 64, 56, 56}, {64, 64, 3, 3}, {ais("pads", {1, 1, 1, 1})}, true) ==
          shape{1, 64, 56, 56});
    // 7x7, stride 2, pad 3: (224 + 6 - 7) / 2 + 1 = 111 + 1 = 112
    CHECK(conv({1, 3, 224, 224}, {64, 3, 7, 7},
               {ais("strides", {2, 2}), ais("pads", {3, 3, 3, 3})}) == shape{1, 64, 112, 112});
    // dilation 2: extent (3 - 1) * 2 + 1 = 5, no pad: 20 - 5 + 1 = 16
    CHECK(conv({1, 8, 20, 20}, {8, 8, 3, 3}, {ais("dilations", {2, 2})}) == shape{1, 8, 16, 16});
    // groups: C_in 32 = 8 per group x 4 groups
    CHECK(conv({1, 32, 14, 14}, {64, 8, 3, 3}, {ai("group", 4), ais("pads", {1, 1, 1, 1})}) ==
          shape{1, 64, 14, 14});
    // depthwise: group = C_in = 32, weight [32, 1, 3, 3]
    CHECK(conv({2, 32, 14, 14}, {32, 1, 3, 3}, {ai("group", 32), ais("pads", {1, 1, 1, 1})}) ==
          shape{2, 32, 14, 14});
    // asymmetric pads [h_begin, w_begin, h_end, w_end] = [0, 1, 2, 3]:
    // H: 10 + 0 + 2 - 3 + 1 = 10; W: 10 + 1 + 3 - 3 + 1 = 12
    CHECK(conv({1, 1, 10, 10}, {1, 1, 3, 3}, {ais("pads", {0, 1, 2, 3})}) == shape{1, 1, 10, 12});
    // SAME_UPPER, stride 2: ceil(7 / 2) = 4 (pads attribute ignored)
    CHECK(conv({1, 4, 7, 7}, {4, 4, 3, 3},
               {as("auto_pad", "SAME_UPPER"), ais("strides", {2, 2})}) == shape{1, 4, 4, 4});
    // VALID, stride 2: (7 - 3) / 2 + 1 = 3
    CHECK(conv({1, 4, 7, 7}, {4, 4, 3, 3}, {as("auto_pad", "VALID"), ais("strides", {2, 2})}) ==
          shape{1, 4, 3, 3});
    // 1-D convolution: 10 - 3 + 1 = 8
    CHECK(conv({2, 4, 10}, {8, 4, 3}, {}) == shape{2, 8, 8});
    // 3-D convolution, stride 2 on depth only: (8 - 3) / 2 + 1 = 3; 16 - 3 + 1 = 14
    CHECK(conv({1, 2, 8, 16, 16}, {4, 2, 3, 3, 3}, {ais("strides", {2, 1, 1})}) ==
          shape{1, 4, 3, 14, 14});
}

TEST_CASE("Conv errors name the node and the shapes", "[shape][conv][errors]") {
    model m;
    m.input("x", {1, 16, 8, 8});
    m.weight("w", {32, 8, 3, 3});  // expects 8 x group(1) = 8 input channels
    m.node("conv1", "Conv", {"x", "w"}, {"y"});
    CHECK(m.bind_error() ==
          "model.json: node 'conv1' (Conv): input channels 16 of input 'x' [1, 16, 8, 8] differ "
          "from weight channels 8 x group 1 of input 'w' [32, 8, 3, 3]");

    model bias;
    bias.input("x", {1, 8, 8, 8});
    bias.weight("w", {32, 8, 3, 3});
    bias.weight("b", {16});
    bias.node("conv1", "Conv", {"x", "w", "b"}, {"y"});
    CHECK_THAT(bias.bind_error(), Contains("bias input 'b' [16] must have shape [32]"));

    model big;
    big.input("x", {1, 1, 2, 2});
    big.weight("w", {1, 1, 3, 3});
    big.node("conv1", "Conv", {"x", "w"}, {"y"});
    CHECK_THAT(big.bind_error(), Contains("node 'conv1' (Conv)") && Contains("does not fit"));

    model pad;
    pad.input("x", {1, 1, 8, 8});
    pad.weight("w", {1, 1, 3, 3});
    pad.node("conv1", "Conv", {"x", "w"}, {"y"}, {ais("pads", {1, 1})});
    CHECK_THAT(pad.bind_error(), Contains("attribute 'pads' has 2 entries, expected 4"));
}

TEST_CASE("ConvTranspose output shapes", "[shape][conv]") {
    model m;
    m.input("x", {1, 16, 8, 8});
    m.weight("w", {16, 8, 4, 4});  // [C_in, C_out / group, kh, kw]
    m.node("up", "ConvTranspose", {"x", "w"}, {"y"},
           {ais("strides", {2, 2}), ais("pads", {1, 1, 1, 1})});
    m.output("y");
    m.bind();
    // 2 * (8 - 1) + 0 + 4 - 1 - 1 = 16
    CHECK(m.shape_of("y") == shape{1, 8, 16, 16});
}

TEST_CASE("Gemm and MatMul shapes", "[shape][matmul]") {
    model g;
    g.input("a", {4, 3});
    g.weight("b", {5, 3});
    g.weight("c", {5});
    g.node("fc", "Gemm", {"a", "b", "c"}, {"y"}, {ai("transB", 1)});
    g.output("y");
    g.bind();
    CHECK(g.shape_of("y") == shape{4, 5});

    model t;
    t.input("a", {3, 4});
    t.weight("b", {3, 5});
    t.node("fc", "Gemm", {"a", "b"}, {"y"}, {ai("transA", 1)});
    t.output("y");
    t.bind();
    CHECK(t.shape_of("y") == shape{4, 5});

    CHECK(binary_shape("MatMul", {2, 3, 4}, {4, 5}) == shape{2, 3, 5});
    CHECK(binary_shape("MatMul", {2, 1, 3, 4}, {7, 4, 5}) == shape{2, 7, 3, 5});
    CHECK(binary_shape("MatMul", {4}, {4, 5}) == shape{5});
    CHECK(binary_shape("MatMul", {3, 4}, {4}) == shape{3});
    CHECK(binary_shape("MatMul", {4}, {4}) == shape{});
    CHECK(binary_shape("MatMul", {6, 2, 3, 4}, {4}) == shape{6, 2, 3});
}

TEST_CASE("incompatible MatMul and Gemm shapes", "[shape][matmul][errors]") {
    model m;
    m.input("a", {2, 3});
    m.input("b", {4, 5});
    m.node("mm", "MatMul", {"a", "b"}, {"y"});
    CHECK(m.bind_error() ==
          "model.json: node 'mm' (MatMul): inner dimensions differ: input 'a' [2, 3] x input "
          "'b' [4, 5] (3 vs 4)");

    model batch;
    batch.input("a", {2, 3, 4});
    batch.input("b", {5, 4, 6});
    batch.node("mm", "MatMul", {"a", "b"}, {"y"});
    CHECK_THAT(batch.bind_error(), Contains("batch dimensions cannot be broadcast"));

    model gemm;
    gemm.input("a", {4, 3});
    gemm.weight("b", {4, 5});
    gemm.node("fc", "Gemm", {"a", "b"}, {"y"});
    CHECK_THAT(gemm.bind_error(), Contains("node 'fc' (Gemm): inner dimensions differ"));
}

TEST_CASE("broadcasting elementwise ops", "[shape][elementwise]") {
    CHECK(binary_shape("Add", {2, 1, 4}, {3, 1}) == shape{2, 3, 4});
    CHECK(binary_shape("Mul", {5}, {}) == shape{5});
    CHECK(binary_shape("Sub", {1}, {3, 1, 2}) == shape{3, 1, 2});
    CHECK(binary_shape("Div", {8, 1, 6, 1}, {7, 1, 5}) == shape{8, 7, 6, 5});
    CHECK(binary_shape("Pow", {2, 3}, {1}) == shape{2, 3});
    CHECK(binary_shape("PRelu", {1, 8, 4, 4}, {8, 1, 1}) == shape{1, 8, 4, 4});

    model sum;
    sum.input("a", {3, 1});
    sum.input("b", {1, 4});
    sum.input("c", {4});
    sum.input("cond", {3, 4}, NNERGY_DTYPE_BOOL);
    sum.node("s", "Sum", {"a", "b", "c"}, {"y"});
    sum.node("w", "Where", {"cond", "a", "b"}, {"z"});
    sum.output("y");
    sum.output("z");
    sum.bind();
    CHECK(sum.shape_of("y") == shape{3, 4});
    CHECK(sum.shape_of("z") == shape{3, 4});

    model bad;
    bad.input("a", {2, 3});
    bad.input("b", {4});
    bad.node("add1", "Add", {"a", "b"}, {"y"});
    CHECK(bad.bind_error() ==
          "model.json: node 'add1' (Add): inputs cannot be broadcast together: input 'a' [2, 3], "
          "input 'b' [4]");
}

TEST_CASE("unary ops keep the shape", "[shape][elementwise]") {
    for (const char* op : {"Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Neg", "Identity",
                           "Gelu", "LeakyRelu", "Softmax", "Abs", "HardSwish", "Clip"}) {
        INFO(op);
        CHECK(unary_shape(op, {2, 3, 5}) == shape{2, 3, 5});
    }
    model d;
    d.input("x", {4, 6});
    d.node("drop", "Dropout", {"x"}, {"y", "mask"});
    d.output("y");
    d.bind();
    CHECK(d.shape_of("mask") == shape{4, 6});
    CHECK(d.dtype_of("mask") == NNERGY_DTYPE_BOOL);

    CHECK_THAT(
        [] {
            model s;
            s.input("x", {2, 3});
            s.node("sm", "Softmax", {"x"}, {"y"}, {ai("axis", 2)});
            return s.bind_error();
        }(),
        Contains("node 'sm' (Softmax): axis 2 is out of range for rank 2"));
}

TEST_CASE("normalization shapes", "[shape][norm]") {
    model m;
    m.input("x", {2, 5, 8});
    m.weight("g", {8});
    m.weight("bias", {8});
    m.node("ln", "LayerNormalization", {"x", "g", "bias"}, {"y", "mean", "inv"}, {ai("axis", -1)});
    m.output("y");
    m.bind();
    CHECK(m.shape_of("y") == shape{2, 5, 8});
    CHECK(m.shape_of("mean") == shape{2, 5, 1});
    CHECK(m.shape_of("inv") == shape{2, 5, 1});

    model bn;
    bn.input("x", {2, 4, 3, 3});
    for (const char* n : {"s", "b", "mu", "var"}) bn.weight(n, {4});
    bn.node("bn", "BatchNormalization", {"x", "s", "b", "mu", "var"}, {"y"});
    bn.output("y");
    bn.bind();
    CHECK(bn.shape_of("y") == shape{2, 4, 3, 3});

    model bad;
    bad.input("x", {2, 4, 3, 3});
    for (const char* n : {"s", "b", "mu"}) bad.weight(n, {4});
    bad.weight("var", {5});
    bad.node("bn", "BatchNormalization", {"x", "s", "b", "mu", "var"}, {"y"});
    CHECK_THAT(bad.bind_error(), Contains("node 'bn' (BatchNormalization): input 'var' [5] must "
                                          "have shape [4]"));
}

TEST_CASE("pooling shapes", "[shape][pool]") {
    // 3x3 stride 2 pad 1 (ResNet stem): (112 + 2 - 3) / 2 + 1 = 55 + 1 = 56
    CHECK(unary_shape("MaxPool", {1, 64, 112, 112},
                      {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}),
                       ais("pads", {1, 1, 1, 1})}) == shape{1, 64, 56, 56});
    // floor: (6 - 3) / 2 + 1 = 2; ceil_mode: ceil(3 / 2) + 1 = 3
    CHECK(unary_shape("MaxPool", {1, 1, 6, 6},
                      {ais("kernel_shape", {3, 3}), ais("strides", {2, 2})}) == shape{1, 1, 2, 2});
    CHECK(unary_shape("AveragePool", {1, 1, 6, 6},
                      {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}), ai("ceil_mode", 1)}) ==
          shape{1, 1, 3, 3});
    // ceil_mode whose last window would start in the end padding: 5 + 1 + 1 - 2 = 5,
    // ceil(5 / 2) + 1 = 4, but window 4 starts at 3 * 2 = 6 >= 5 + 1, so 3 windows remain.
    CHECK(unary_shape("MaxPool", {1, 1, 5, 5},
                      {ais("kernel_shape", {2, 2}), ais("strides", {2, 2}),
                       ais("pads", {1, 1, 1, 1}), ai("ceil_mode", 1)}) == shape{1, 1, 3, 3});
    CHECK(unary_shape("AveragePool", {1, 3, 8, 8},
                      {ais("kernel_shape", {2, 2}), ais("strides", {2, 2})}) == shape{1, 3, 4, 4});
    CHECK(unary_shape("MaxPool", {1, 3, 7, 7},
                      {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}),
                       as("auto_pad", "SAME_UPPER")}) == shape{1, 3, 4, 4});
    CHECK(unary_shape("GlobalAveragePool", {2, 512, 7, 7}) == shape{2, 512, 1, 1});
    CHECK(unary_shape("GlobalMaxPool", {2, 16, 5}) == shape{2, 16, 1});

    model m;
    m.input("x", {1, 1, 4, 4});
    m.node("pool", "MaxPool", {"x"}, {"y"});
    CHECK_THAT(m.bind_error(),
               Contains("node 'pool' (MaxPool): attribute 'kernel_shape' is required"));
}

TEST_CASE("Flatten, Transpose, Concat, Squeeze, Unsqueeze, Reduce", "[shape][layout]") {
    CHECK(unary_shape("Flatten", {2, 3, 4, 5}) == shape{2, 60});
    CHECK(unary_shape("Flatten", {2, 3, 4, 5}, {ai("axis", 0)}) == shape{1, 120});
    CHECK(unary_shape("Flatten", {2, 3, 4, 5}, {ai("axis", -1)}) == shape{24, 5});
    CHECK(unary_shape("Transpose", {2, 3, 4}) == shape{4, 3, 2});
    CHECK(unary_shape("Transpose", {1, 3, 8, 9}, {ais("perm", {0, 2, 3, 1})}) == shape{1, 8, 9, 3});
    CHECK(binary_shape("Concat", {2, 3, 4}, {2, 5, 4}, {ai("axis", 1)}) == shape{2, 8, 4});
    CHECK(binary_shape("Concat", {2, 3}, {2, 3}, {ai("axis", -2)}) == shape{4, 3});
    CHECK(unary_shape("Squeeze", {1, 3, 1, 4}) == shape{3, 4});
    CHECK(unary_shape("Squeeze", {1, 3, 1, 4}, {ais("axes", {-2})}) == shape{1, 3, 4});
    CHECK(unary_shape("Unsqueeze", {3, 4}, {ais("axes", {0, 3})}) == shape{1, 3, 4, 1});
    CHECK(unary_shape("Unsqueeze", {3, 4}, {ais("axes", {-1})}) == shape{3, 4, 1});
    CHECK(unary_shape("ReduceMean", {2, 3, 4}, {ais("axes", {-1})}) == shape{2, 3, 1});
    CHECK(unary_shape("ReduceMean", {2, 3, 4}, {ais("axes", {0, 2}), ai("keepdims", 0)}) ==
          shape{3});
    CHECK(unary_shape("ReduceSum", {2, 3, 4}) == shape{1, 1, 1});

    // Opset 13+ forms: axes as an input constant.
    model m;
    m.input("x", {1, 3, 1, 4});
    m.ints("sq_axes", {0});
    m.ints("un_axes", {1, 2});
    m.ints("red_axes", {1});
    m.node("sq", "Squeeze", {"x", "sq_axes"}, {"a"});
    m.node("un", "Unsqueeze", {"a", "un_axes"}, {"b"});
    m.node("red", "ReduceMean", {"b", "red_axes"}, {"c"}, {ai("keepdims", 0)});
    m.output("c");
    m.bind();
    CHECK(m.shape_of("a") == shape{3, 1, 4});
    CHECK(m.shape_of("b") == shape{3, 1, 1, 1, 4});
    CHECK(m.shape_of("c") == shape{3, 1, 1, 4});

    model bad;
    bad.input("x", {2, 3});
    bad.node("sq", "Squeeze", {"x"}, {"y"}, {ais("axes", {1})});
    CHECK_THAT(bad.bind_error(), Contains("cannot squeeze axis 1 of input 'x' [2, 3]"));

    model perm;
    perm.input("x", {2, 3});
    perm.node("t", "Transpose", {"x"}, {"y"}, {ais("perm", {0, 0})});
    CHECK_THAT(perm.bind_error(), Contains("is not a permutation"));

    model cat;
    cat.input("a", {2, 3});
    cat.input("b", {3, 3});
    cat.node("cat", "Concat", {"a", "b"}, {"y"}, {ai("axis", 1)});
    CHECK_THAT(cat.bind_error(), Contains("input 'b' [3, 3] does not match input 'a' [2, 3]"));
}

TEST_CASE("Reshape with 0, -1 and allowzero", "[shape][reshape]") {
    const auto reshape = [](std::vector<D> x, std::vector<int64_t> target,
                            std::vector<attribute> attrs = {}) {
        model m;
        m.input("x", std::move(x));
        m.ints("target", std::move(target));
        m.node("r", "Reshape", {"x", "target"}, {"y"}, std::move(attrs));
        m.output("y");
        m.bind();
        return m.shape_of("y");
    };
    CHECK(reshape({2, 3, 4}, {0, -1}) == shape{2, 12});
    CHECK(reshape({2, 3, 4}, {-1}) == shape{24});
    CHECK(reshape({2, 3, 4}, {4, 0, 2}) == shape{4, 3, 2});   // 0 copies dim 1 (3)
    CHECK(reshape({2, 3, 4}, {3, -1, 2}) == shape{3, 4, 2});  // 24 / (3 * 2) = 4
    // allowzero: a literal 0 stays 0; [2, 0, 3] has 0 elements like [0, 3]
    CHECK(reshape({2, 0, 3}, {0, 3}, {ai("allowzero", 1)}) == shape{0, 3});
    // Opset 1-4 form: the target as an attribute.
    CHECK(unary_shape("Reshape", {6, 4}, {ais("shape", {3, 8})}) == shape{3, 8});
}

TEST_CASE("bad Reshape targets", "[shape][reshape][errors]") {
    const auto error_of = [](std::vector<D> x, std::vector<int64_t> target,
                             std::vector<attribute> attrs = {}) {
        model m;
        m.input("x", std::move(x));
        m.ints("target", std::move(target));
        m.node("r", "Reshape", {"x", "target"}, {"y"}, std::move(attrs));
        return m.bind_error();
    };
    CHECK(error_of({2, 3, 4}, {5, -1}) ==
          "model.json: node 'r' (Reshape): cannot reshape input 'x' [2, 3, 4] (24 elements) to "
          "[5, -1]: the other dimensions (5 elements) do not divide the input");
    CHECK_THAT(error_of({2, 3, 4}, {-1, -1}), Contains("more than one -1"));
    CHECK_THAT(error_of({2, 3, 4}, {5, 5}), Contains("element counts differ"));
    CHECK_THAT(error_of({2, 3, 4}, {-2, 12}), Contains("dimension -2 is invalid"));
    CHECK_THAT(error_of({2, 3}, {2, 3, 0}), Contains("copies a missing input dimension"));
    // Without allowzero the 0 copies dim 0 (2): 2 * 3 = 6 elements, but the input has none.
    CHECK_THAT(error_of({2, 0, 3}, {0, 3}), Contains("element counts differ"));
    CHECK_THAT(error_of({2, 0, 3}, {0, -1}, {ai("allowzero", 1)}), Contains("ambiguous"));
}

TEST_CASE("Shape -> Gather -> Unsqueeze -> Concat -> Reshape folds to a concrete shape",
          "[shape][folding]") {
    // The pattern exporters write for x.view(x.size(0), x.size(1), 12, 64).
    model m;
    m.input("x", {"batch", "seq", 768});
    m.ints("i0", {0}, true);
    m.ints("i1", {1}, true);
    m.ints("axes0", {0});
    m.ints("heads", {12, 64});
    m.node("shape", "Shape", {"x"}, {"s"});
    m.node("g0", "Gather", {"s", "i0"}, {"b"}, {ai("axis", 0)});
    m.node("g1", "Gather", {"s", "i1"}, {"t"}, {ai("axis", 0)});
    m.node("u0", "Unsqueeze", {"b", "axes0"}, {"b1"});
    m.node("u1", "Unsqueeze", {"t"}, {"t1"}, {ais("axes", {0})});
    m.node("cat", "Concat", {"b1", "t1", "heads"}, {"target"}, {ai("axis", 0)});
    m.node("reshape", "Reshape", {"x", "target"}, {"y"});
    m.output("y");
    m.bind({{"batch", 2}, {"seq", 5}});
    CHECK(m.values_of("s") == std::vector<int64_t>{2, 5, 768});
    CHECK(m.shape_of("b").empty());  // Gather of a scalar index yields a scalar
    CHECK(m.values_of("b") == std::vector<int64_t>{2});
    CHECK(m.values_of("t1") == std::vector<int64_t>{5});
    CHECK(m.values_of("target") == std::vector<int64_t>{2, 5, 12, 64});
    CHECK(m.shape_of("y") == shape{2, 5, 12, 64});

    // Rebinding changes the folded target.
    m.bind({{"batch", 3}, {"seq", 7}});
    CHECK(m.shape_of("y") == shape{3, 7, 12, 64});
}

TEST_CASE("folding through Slice, Cast, arithmetic, Constant and Range", "[shape][folding]") {
    model m;
    m.input("x", {"batch", 16, 8});
    m.ints("zero", {0});
    m.ints("two", {2});
    m.ints("minus_one", {-1});
    m.node("shape", "Shape", {"x"}, {"s"});
    m.node("head", "Slice", {"s", "zero", "two"}, {"bs"});           // [batch, 16]
    m.node("cast", "Cast", {"bs"}, {"bs32"}, {ai("to", 6)});         // int32
    m.node("cast_back", "Cast", {"bs32"}, {"bs64"}, {ai("to", 7)});  // int64
    m.node("prod", "Mul", {"bs64", "two"}, {"doubled"});             // [2 batch, 32]
    m.node("c", "Constant", {}, {"last"}, {ais("value_ints", {4})});
    m.node("cat", "Concat", {"doubled", "last"}, {"target"}, {ai("axis", 0)});
    m.node("r", "Reshape", {"x", "target"}, {"y"});
    m.output("y");
    // The folded target [2 * batch, 32, 4] holds 256 * batch elements, x only 128 * batch: the
    // error proves the chain folded (an unfolded target would ask for a declared shape).
    CHECK_THAT(m.bind_error({{"batch", 3}}),
               Contains("cannot reshape input 'x' [3, 16, 8] (384 elements) to [6, 32, 4]"));

    model ok;
    ok.input("x", {"batch", 16, 8});
    ok.ints("zero", {0});
    ok.ints("two", {2});
    ok.ints("minus_one", {-1});
    ok.node("shape", "Shape", {"x"}, {"s"});
    ok.node("head", "Slice", {"s", "zero", "two"}, {"bs"});  // [batch, 16]
    ok.node("half", "Div", {"bs", "two"}, {"halved"});       // [batch / 2, 8]
    ok.node("cat", "Concat", {"halved", "minus_one"}, {"target"}, {ai("axis", 0)});
    ok.node("r", "Reshape", {"x", "target"}, {"y"});
    ok.output("y");
    ok.bind({{"batch", 4}});
    CHECK(ok.values_of("bs") == std::vector<int64_t>{4, 16});
    CHECK(ok.values_of("halved") == std::vector<int64_t>{2, 8});
    // 4 * 16 * 8 = 512 elements; 512 / (2 * 8) = 32
    CHECK(ok.shape_of("y") == shape{2, 8, 32});

    model range;
    range.ints("start", {0}, true);
    range.ints("limit", {10}, true);
    range.ints("delta", {3}, true);
    range.node("range", "Range", {"start", "limit", "delta"}, {"r"});
    range.output("r");
    range.bind();
    // ceil((10 - 0) / 3) = 4 elements: 0, 3, 6, 9
    CHECK(range.shape_of("r") == shape{4});
    CHECK(range.values_of("r") == std::vector<int64_t>{0, 3, 6, 9});

    // Deltas and spans at the ends of int64 count without leaving 64 bits.
    constexpr int64_t lowest = std::numeric_limits<int64_t>::min();
    model far;
    far.ints("start", {5}, true);
    far.ints("limit", {lowest + 5}, true);
    far.ints("delta", {lowest}, true);
    far.ints("up", {std::numeric_limits<int64_t>::max()}, true);
    far.ints("zero", {0}, true);
    far.ints("ten", {10}, true);
    far.node("down", "Range", {"start", "limit", "delta"}, {"r"});
    far.node("up", "Range", {"zero", "ten", "up"}, {"u"});
    far.output("r");
    far.output("u");
    far.bind();
    CHECK(far.values_of("r") == std::vector<int64_t>{5});
    CHECK(far.values_of("u") == std::vector<int64_t>{0});
}

TEST_CASE("Gather, Slice, Split, Expand, Tile, Pad, ConstantOfShape shapes", "[shape][layout]") {
    model g;
    g.input("data", {10, 4});
    g.input("idx", {2, 3}, NNERGY_DTYPE_INT64);
    g.node("g0", "Gather", {"data", "idx"}, {"y0"});
    g.node("g1", "Gather", {"data", "idx"}, {"y1"}, {ai("axis", 1)});
    g.output("y0");
    g.output("y1");
    g.bind();
    CHECK(g.shape_of("y0") == shape{2, 3, 4});
    CHECK(g.shape_of("y1") == shape{10, 2, 3});

    model s;
    s.input("x", {10, 20});
    s.ints("st", {-5});
    s.ints("en", {std::numeric_limits<int64_t>::max()});
    s.ints("ax", {1});
    s.ints("rst", {-1});
    s.ints("ren", {std::numeric_limits<int64_t>::min()});
    s.ints("rax", {0});
    s.ints("rstep", {-1});
    s.ints("st2", {1});
    s.ints("en2", {8});
    s.ints("step3", {3});
    s.node("tail", "Slice", {"x", "st", "en", "ax"}, {"a"});                // last 5 columns
    s.node("rev", "Slice", {"x", "rst", "ren", "rax", "rstep"}, {"b"});     // rows reversed
    s.node("strided", "Slice", {"x", "st2", "en2", "ax", "step3"}, {"c"});  // cols 1, 4, 7
    s.output("a");
    s.output("b");
    s.output("c");
    s.bind();
    CHECK(s.shape_of("a") == shape{10, 5});
    CHECK(s.shape_of("b") == shape{10, 20});
    CHECK(s.shape_of("c") == shape{10, 3});  // ceil((8 - 1) / 3) = 3

    // Steps at the ends of int64 take one element, with no arithmetic past 64 bits.
    model far;
    far.input("x", {10, 20});
    far.ints("st", {0});
    far.ints("en", {std::numeric_limits<int64_t>::max()});
    far.ints("ax", {1});
    far.ints("up", {std::numeric_limits<int64_t>::max()});
    far.ints("rst", {-1});
    far.ints("ren", {std::numeric_limits<int64_t>::min()});
    far.ints("down", {std::numeric_limits<int64_t>::min()});
    far.node("first", "Slice", {"x", "st", "en", "ax", "up"}, {"a"});
    far.node("last", "Slice", {"x", "rst", "ren", "ax", "down"}, {"b"});
    far.output("a");
    far.output("b");
    far.bind();
    CHECK(far.shape_of("a") == shape{10, 1});
    CHECK(far.shape_of("b") == shape{10, 1});

    model sp;
    sp.input("x", {2, 10});
    sp.ints("sizes", {3, 7});
    sp.node("split", "Split", {"x", "sizes"}, {"p", "q"}, {ai("axis", 1)});
    sp.node("halves", "Split", {"x"}, {"h1", "h2"}, {ai("axis", 1)});
    sp.output("p");
    sp.output("h1");
    sp.bind();
    CHECK(sp.shape_of("p") == shape{2, 3});
    CHECK(sp.shape_of("q") == shape{2, 7});
    CHECK(sp.shape_of("h1") == shape{2, 5});
    CHECK(sp.shape_of("h2") == shape{2, 5});

    model e;
    e.input("x", {3, 1});
    e.ints("target", {2, 1, 4});
    e.ints("reps", {2, 3});
    e.ints("pads", {0, 1, 1, 2});
    e.ints("cshape", {2, 5});
    e.node("expand", "Expand", {"x", "target"}, {"a"});
    e.node("tile", "Tile", {"x", "reps"}, {"b"});
    e.node("pad", "Pad", {"x", "pads"}, {"c"});
    e.node("cos", "ConstantOfShape", {"cshape"}, {"d"});
    e.output("a");
    e.bind();
    CHECK(e.shape_of("a") == shape{2, 3, 4});
    CHECK(e.shape_of("b") == shape{6, 3});
    CHECK(e.shape_of("c") == shape{4, 4});  // [3 + 0 + 1, 1 + 1 + 2]
    CHECK(e.shape_of("d") == shape{2, 5});
    CHECK(e.dtype_of("d") == NNERGY_DTYPE_FLOAT32);
}

TEST_CASE("declared output shapes that disagree are warnings, errors under strict",
          "[shape][declared]") {
    model m;
    m.input("x", {"batch", 8});
    m.declare("y", {"batch", 8});
    m.node("relu", "Relu", {"x"}, {"y"});
    m.output("y");
    CHECK(m.bind({{"batch", 2}}).disagreements.empty());  // agrees
    CHECK(m.shape_of("y") == shape{2, 8});

    model bad;
    bad.input("x", {"batch", 8});
    bad.weight("w", {8, 4});
    const uint32_t y = bad.declare("y", {"batch", 5});
    bad.node("fc", "MatMul", {"x", "w"}, {"y"});
    bad.output("y");
    const std::string message =
        "model.json: node 'fc' (MatMul): output 'y' is declared [batch=2, 5] but inferred [2, 4]";
    const bound_graph& b = bad.bind({{"batch", 2}});
    REQUIRE(b.disagreements.size() == 1);
    CHECK(b.disagreements[0].message == message);
    CHECK(b.disagreements[0].tensor == y);
    CHECK(b.disagreements[0].node == bad.n("fc"));
    CHECK(bad.shape_of("y") == shape{2, 4});  // the inferred shape is used
    // MACs follow the inferred shape: 2 x 8 x 4.
    CHECK(bad.counts("fc").macs == 64);
    try {
        nnergy::bind(bad.g, {{"batch", 2}}, bind_options{true});
        FAIL("strict bind accepted a disagreeing declared shape");
    } catch (const nnergy::error& e) {
        CHECK(std::string(e.what()) == message);
        CHECK(e.code() == exit_code::strict);
    }

    model rank;  // a rank that disagrees, twice: strict says how many more
    rank.input("x", {2, 8});
    rank.declare("y", {16});
    rank.declare("z", {2, 8, 1});
    rank.node("relu", "Relu", {"x"}, {"y"});
    rank.node("relu2", "Relu", {"x"}, {"z"});
    rank.output("y");
    rank.output("z");
    CHECK(rank.bind().disagreements.size() == 2);
    CHECK(rank.b->disagreements[0].message ==
          "model.json: node 'relu' (Relu): output 'y' is declared [16] but inferred [2, 8]");
    CHECK_THROWS_WITH(nnergy::bind(rank.g, {}, bind_options{true}),
                      Contains("output 'y' is declared [16]") &&
                          Contains("(and 1 more declared shapes that disagree"));

    model partial;  // unknown dims in a declared shape match anything
    partial.input("x", {2, 8});
    partial.declare("y", {-1, 8});
    partial.node("relu", "Relu", {"x"}, {"y"});
    partial.output("y");
    CHECK(partial.bind().disagreements.empty());
    CHECK(partial.shape_of("y") == shape{2, 8});
}

TEST_CASE("only graph inputs' symbols are asked for; exporter-named dims are inferred",
          "[shape][declared]") {
    // torch.onnx.export names output dims itself (Gemm2311_dim_0): a result, not an input.
    model m;
    m.input("x", {"batch", 4});
    m.weight("w", {4, 3});
    m.declare("y", {"Gemm2311_dim_0", 3});
    m.node("fc", "MatMul", {"x", "w"}, {"y"});
    m.output("y");
    m.g.finalize();
    CHECK(symbols_of(m.g) == std::vector<std::string>{"batch"});
    CHECK(m.bind_error() ==
          "model.json: unbound dimension symbols: batch (bind them with --dim NAME=VALUE or "
          "[model] dims)");
    CHECK(m.bind({{"batch", 5}}).disagreements.empty());
    CHECK(m.shape_of("y") == shape{5, 3});
    // Binding an exporter's symbol makes it a cross-check like any bound symbol.
    CHECK(m.bind({{"batch", 5}, {"Gemm2311_dim_0", 6}}).disagreements.size() == 1);

    // One invented symbol on several tensors is one value: the first inferred one.
    model u;
    u.input("x", {"batch", 4});
    u.weight("w", {4, 4});
    u.declare("a", {"s0", 4});
    u.declare("c", {"s0", 4});
    u.declare("d", {"s0", "s0"});
    u.declare("cc", {"s0", 4});
    u.node("relu", "Relu", {"x"}, {"a"});                          // s0 := batch
    u.node("fc", "MatMul", {"a", "w"}, {"c"});                     // agrees
    u.node("cat", "Concat", {"a", "c"}, {"cc"}, {ai("axis", 0)});  // [2 batch, 4]
    u.node("sq", "MatMul", {"a", "c_t"}, {"d"});                   // [batch, batch]
    u.node("t", "Transpose", {"c"}, {"c_t"});
    u.output("cc");
    u.output("d");
    const bound_graph& b = u.bind({{"batch", 3}});
    REQUIRE(b.disagreements.size() == 1);
    CHECK(b.disagreements[0].message ==
          "model.json: node 'cat' (Concat): output 'cc' is declared [s0=3, 4] but inferred "
          "[6, 4]");
    CHECK(u.shape_of("d") == shape{3, 3});
}

TEST_CASE("declared dims written as expressions of bound symbols are evaluated",
          "[shape][declared]") {
    // The dynamo exporter declares value_info dims such as `seq + 1`.
    const auto concat = [](const char* declared_dim) {
        model m;
        m.input("x", {1, "seq", 8});
        m.input("first", {1, 1, 8});
        m.declare("y", {1, declared_dim, 8});
        m.node("cat", "Concat", {"first", "x"}, {"y"}, {ai("axis", 1)});
        m.output("y");
        m.bind({{"seq", 7}});
        return m.b->disagreements;
    };
    CHECK(concat("seq + 1").empty());
    CHECK(concat("1+seq").empty());
    CHECK(concat("Max(1, seq) + 1").empty());
    CHECK(concat("2*floor(seq/2) + 2").empty());  // 2 x 3 + 2 = 8
    const auto bad = concat("seq - 1");
    REQUIRE(bad.size() == 1);
    CHECK(bad[0].message ==
          "model.json: node 'cat' (Concat): output 'y' is declared [1, seq - 1=6, 8] but "
          "inferred [1, 8, 8]");
    // An expression of a symbol nobody binds is a unification variable like any other.
    CHECK(concat("s17 + 1").empty());

    // On a graph input, the names in an expression are the user's to bind.
    model in;
    in.input("x", {"2*seq", 4});
    in.node("relu", "Relu", {"x"}, {"y"});
    in.output("y");
    in.g.finalize();
    CHECK(symbols_of(in.g) == std::vector<std::string>{"seq"});
    CHECK_THAT(in.bind_error(), Contains("unbound dimension symbols: seq (bind"));
    in.bind({{"seq", 3}});
    CHECK(in.shape_of("y") == shape{6, 4});
    CHECK_THAT(in.bind_error({{"seq", 3}, {"unused", 0}}), Contains("'unused' is bound to 0"));

    model odd;  // an input dim that is no integer with the bindings given
    odd.input("x", {"seq/2", 4});
    odd.node("relu", "Relu", {"x"}, {"y"});
    CHECK_THAT(odd.bind_error({{"seq", 3}}),
               Contains("graph input 'x' [seq/2, 4]: dimension 0 ('seq/2') is not a "
                        "non-negative integer"));
}

TEST_CASE("dimension expressions evaluate exactly or not at all", "[shape][declared]") {
    const dim_bindings b{{"seq", 7}, {"s0", 8}, {"big", INT64_C(1) << 62}};
    const auto eval = [&](const char* text) { return evaluate_dim_expression(text, b); };
    CHECK(eval("seq") == 7);
    CHECK(eval("seq + 1") == 8);
    CHECK(eval("2*seq - 1") == 13);
    CHECK(eval("(seq + 1) * (seq - 1)") == 48);
    CHECK(eval("seq**2") == 49);
    CHECK(eval("-seq**2 + 50") == 1);  // ** binds tighter than unary minus
    CHECK(eval("2**3**2") == 512);     // right-associative
    CHECK(eval("seq // 2") == 3);
    CHECK(eval("-seq // 2") == -4);  // floor division, as Python
    CHECK(eval("-seq % 3") == 2);    // the sign of the divisor, as Python
    CHECK(eval("seq % -3") == -2);
    CHECK(eval("s0/2") == 4);
    CHECK(eval("seq/2") == std::nullopt);  // 3.5 is no dimension
    CHECK(eval("floor(seq/2)") == 3);
    CHECK(eval("ceiling(seq/2)") == 4);
    CHECK(eval("floor(-seq/2)") == -4);
    CHECK(eval("ceiling(-seq/2)") == -3);
    CHECK(eval("seq/2 + seq/2") == 7);  // exact rationals: 7/2 + 7/2
    CHECK(eval("Max(1, seq)") == 7);
    CHECK(eval("Min(seq, s0, 4)") == 4);
    CHECK(eval("Max(seq/2, 3)") == std::nullopt);  // 3.5
    CHECK(eval("Max(s0/2, 3)") == 4);
    CHECK(eval("CeilToInt(IntTrueDiv(seq, 2))") == 4);
    CHECK(eval("FloorToInt(seq/2)") == 3);
    CHECK(eval("TruncToInt(-seq/2)") == -3);
    CHECK(eval("FloorDiv(seq, 2)") == 3);
    CHECK(eval("CleanDiv(s0, 4)") == 2);
    CHECK(eval("Mod(seq, 3)") == 1);
    CHECK(eval("PythonMod(-seq, 3)") == 2);
    CHECK(eval("Abs(1 - seq)") == 6);
    CHECK(eval(" seq\t+ 1 ") == 8);
    // Overflow, division by zero, unbound names and bad text are no value, never a wrong one.
    CHECK(eval("big * 2") == std::nullopt);
    CHECK(eval("big + big") == std::nullopt);
    CHECK(eval("9223372036854775807 + 1") == std::nullopt);
    CHECK(eval("99999999999999999999") == std::nullopt);
    CHECK(eval("2**64") == std::nullopt);
    CHECK(eval("seq / 0") == std::nullopt);
    CHECK(eval("seq // (seq - 7)") == std::nullopt);
    CHECK(eval("seq % 0") == std::nullopt);
    CHECK(eval("Gemm2311_dim_0") == std::nullopt);
    CHECK(eval("unbound + 1") == std::nullopt);
    CHECK(eval("Foo(seq)") == std::nullopt);
    CHECK(eval("seq +") == std::nullopt);
    CHECK(eval("(seq") == std::nullopt);
    CHECK(eval("seq)") == std::nullopt);
    CHECK(eval("") == std::nullopt);
    CHECK(eval("Max()") == std::nullopt);
    CHECK(eval("floor(seq, 2)") == std::nullopt);
    CHECK(eval("sequence length") == std::nullopt);
    CHECK(eval(std::string(100000, '(').c_str()) == std::nullopt);  // no stack overflow
    CHECK(eval(std::string(100000, '-').append("1").c_str()) == std::nullopt);
    // Max compares exactly, even where the cross products exceed 64 bits.
    CHECK(eval("Max(big + 1, big)") == (INT64_C(1) << 62) + 1);
}

TEST_CASE("unknown ops fall back on declared dims that are bound, derived or unified",
          "[shape][declared][unknown]") {
    model m;
    m.input("x", {"batch", 4});
    m.declare("r", {"n_rows", 4});
    m.declare("y", {"n_rows", "batch + 2"});
    m.node("relu", "Relu", {"x"}, {"r"});  // n_rows := batch
    m.node("mystery", "FancyOp", {"r"}, {"y"});
    m.node("after", "Relu", {"y"}, {"z"});
    m.output("z");
    m.bind({{"batch", 3}});
    CHECK(m.shape_of("y") == shape{3, 5});
    CHECK(m.shape_of("z") == shape{3, 5});

    model never;  // a unification variable no tensor gave a value: as unknown as '?'
    never.input("x", {"batch", 4});
    never.declare("y", {"never_seen", 4});
    never.node("mystery", "FancyOp", {"x"}, {"y"});
    never.output("y");
    CHECK_THAT(never.bind_error({{"batch", 3}}),
               Contains("node 'mystery' (FancyOp): op type 'FancyOp' is unknown to shape "
                        "inference; declare the full shape of output 'y' to go on"));
}

TEST_CASE("element counts beyond 64 bits are errors naming the tensor", "[shape][errors]") {
    const int64_t t40 = INT64_C(1) << 40, t20 = INT64_C(1) << 20;
    model in;  // 2^40 x 2^40 x 2^20 = 2^100 elements
    in.input("x", {t40, t40, t20});
    in.node("relu", "Relu", {"x"}, {"y"});
    in.output("y");
    CHECK(in.bind_error() ==
          "model.json: graph input 'x' [1099511627776, 1099511627776, 1048576] has more "
          "elements than a 64-bit count holds");

    model sym;  // through a binding: 2^61 x batch fits below 2^63 for batch 2, not for 4
    sym.input("x", {"batch", t40, t20 * 2});
    sym.node("relu", "Relu", {"x"}, {"y"});
    sym.output("y");
    sym.bind({{"batch", 2}});
    CHECK_THAT(sym.bind_error({{"batch", 4}}),
               Contains("graph input 'x' [batch=4, 1099511627776, 2097152] has more elements"));

    model weight;
    weight.input("x", {2});
    weight.weight("w", {t40, t40, t20});
    weight.node("add", "Add", {"x", "w"}, {"y"});
    CHECK_THAT(weight.bind_error(), Contains("initializer 'w' [1099511627776, 1099511627776, "
                                             "1048576] has more elements"));

    model expand;  // an op can make one from small inputs
    expand.input("x", {1});
    expand.ints("target", {t40, t40, t20});
    expand.node("big", "Expand", {"x", "target"}, {"y"});
    expand.output("y");
    CHECK(expand.bind_error() ==
          "model.json: node 'big' (Expand): output 'y' [1099511627776, 1099511627776, 1048576] "
          "has more elements than a 64-bit count holds");
}

TEST_CASE("nodes computed from shapes and code constants alone are folded", "[shape][folding]") {
    // The causal mask of a decoder: seq x seq, too large to carry values, yet computed from
    // shapes and constants only (Shape -> Gather -> Range -> Unsqueeze -> LessOrEqual -> Where).
    model m;
    m.input("q", {1, "seq", 8});
    m.ints("one_index", {1}, true);
    m.ints("zero", {0}, true);
    m.ints("one", {1}, true);
    m.ints("axis0", {0});
    m.ints("axis1", {1});
    for (const char* name : {"keep", "drop"}) {
        const uint32_t t = m.weight(name, {});
        m.g.tensors[t].is_constant = true;  // a Constant node's value: code, not a weight
    }
    m.node("t", "Transpose", {"q"}, {"k_t"}, {ais("perm", {0, 2, 1})});
    m.node("scores", "MatMul", {"q", "k_t"}, {"s"});  // [1, seq, seq]
    m.node("shape", "Shape", {"q"}, {"q_shape"});
    m.node("len", "Gather", {"q_shape", "one_index"}, {"n"}, {ai("axis", 0)});
    m.node("range", "Range", {"zero", "n", "one"}, {"positions"});
    m.node("rows", "Unsqueeze", {"positions", "axis1"}, {"i"});  // [seq, 1]
    m.node("cols", "Unsqueeze", {"positions", "axis0"}, {"j"});  // [1, seq]
    m.node("causal", "LessOrEqual", {"j", "i"}, {"allowed"});    // [seq, seq]
    m.node("mask", "Where", {"allowed", "keep", "drop"}, {"bias"});
    m.node("add", "Add", {"s", "bias"}, {"y"});
    m.output("y");
    const int64_t seq = 128;  // seq x seq = 16,384 mask elements: more than values are kept for
    m.bind({{"seq", seq}});
    CHECK_FALSE(m.values_of("allowed").has_value());
    for (const char* folded : {"shape", "len", "range", "rows", "cols", "causal", "mask"}) {
        INFO(folded);
        CHECK(m.counts(folded).folded);
        CHECK(m.counts(folded).flops == 0);
    }
    for (const char* device : {"t", "scores", "add"}) {
        INFO(device);
        CHECK_FALSE(m.counts(device).folded);
    }
    CHECK(m.counts("add").flops == seq * seq);  // one add per score
    CHECK(m.counts("scores").macs == seq * seq * 8);

    // A trained weight is not known at bind time: a Transpose of it is device work.
    model w;
    w.input("x", {2, 4});
    w.weight("weight", {3, 4});
    w.node("wt", "Transpose", {"weight"}, {"weight_t"});
    w.node("fc", "MatMul", {"x", "weight_t"}, {"y"});
    w.output("y");
    w.bind();
    CHECK_FALSE(w.counts("wt").folded);

    // Nor is what Dropout returns, nor a graph output (it must be computed), nor what an
    // unknown op returns.
    model d;
    d.input("x", {2, 4});
    const uint32_t c = d.weight("c", {2, 4});
    d.g.tensors[c].is_constant = true;
    d.declare("u", {2, 4});
    d.node("drop", "Dropout", {"c"}, {"dc"});
    d.node("neg", "Neg", {"dc"}, {"ndc"});
    d.node("neg2", "Neg", {"c"}, {"nc"});
    d.node("neg3", "Neg", {"c"}, {"out"});
    d.node("mystery", "FancyOp", {"c"}, {"u"});
    d.node("neg4", "Neg", {"u"}, {"nu"});
    d.node("sum", "Sum", {"x", "ndc", "nc", "nu"}, {"y"});
    d.output("y");
    d.output("out");
    d.bind();
    CHECK_FALSE(d.counts("drop").folded);
    CHECK_FALSE(d.counts("neg").folded);
    CHECK(d.counts("neg2").folded);
    CHECK_FALSE(d.counts("neg3").folded);
    CHECK_FALSE(d.counts("neg4").folded);
}

TEST_CASE("unknown ops: declared shapes are used and the node is listed", "[shape][unknown]") {
    model m;
    m.input("x", {"batch", 4});
    m.declare("y", {"batch", 6});
    m.node("relu", "Relu", {"x"}, {"r"});
    m.node("mystery", "FancyOp", {"r"}, {"y"});
    m.node("after", "Relu", {"y"}, {"z"});
    m.output("z");
    const bound_graph& b = m.bind({{"batch", 3}});
    CHECK(m.shape_of("y") == shape{3, 6});
    CHECK(m.shape_of("z") == shape{3, 6});
    REQUIRE(b.unknown_nodes.size() == 1);
    CHECK(m.g.nodes[b.unknown_nodes[0]].name == "mystery");
    CHECK_FALSE(b.counts[b.unknown_nodes[0]].counted);
    CHECK(b.counts[0].counted);
    CHECK_FALSE(is_known_op("FancyOp"));
    CHECK(is_known_op("Conv"));

    model custom_domain;  // a known name in another domain is not the ONNX op
    custom_domain.input("x", {4});
    custom_domain.declare("y", {4});
    custom_domain.node("relu", "Relu", {"x"}, {"y"});
    custom_domain.g.nodes[0].domain = "com.example";
    custom_domain.output("y");
    CHECK(custom_domain.bind().unknown_nodes.size() == 1);
}

TEST_CASE("unknown ops without declared shapes or types are errors", "[shape][unknown][errors]") {
    model m;
    m.input("x", {2, 4});
    m.node("mystery", "FancyOp", {"x"}, {"y"});
    m.output("y");
    CHECK(m.bind_error() ==
          "model.json: node 'mystery' (FancyOp): op type 'FancyOp' is unknown to shape "
          "inference; declare the full shape of output 'y' to go on");

    model half;
    half.input("x", {2, 4});
    half.declare("y", {2, -1});
    half.node("mystery", "FancyOp", {"x"}, {"y"});
    CHECK_THAT(half.bind_error(), Contains("declare the full shape of output 'y'"));

    model untyped;
    untyped.input("x", {2, 4});
    untyped.declare("y", {2, 4}, NNERGY_DTYPE_UNDEFINED);
    untyped.node("mystery", "FancyOp", {"x"}, {"y"});
    CHECK_THAT(untyped.bind_error(), Contains("declare the element type of output 'y'"));
}

TEST_CASE("shape inputs that cannot be folded fall back on declared shapes", "[shape][folding]") {
    // The target comes from a graph input: its values are unknown to the host.
    model m;
    m.input("x", {2, 6});
    m.input("target", {2}, NNERGY_DTYPE_INT64);
    m.node("reshape", "Reshape", {"x", "target"}, {"y"});
    m.output("y");
    CHECK(m.bind_error() ==
          "model.json: node 'reshape' (Reshape): the target shape (input 'target') is not a "
          "constant the host can fold; declare the full shape of output 'y' to go on");

    model declared;
    declared.input("x", {2, 6});
    declared.input("target", {2}, NNERGY_DTYPE_INT64);
    declared.declare("y", {3, 4});
    declared.node("reshape", "Reshape", {"x", "target"}, {"y"});
    declared.output("y");
    const bound_graph& b = declared.bind();
    CHECK(declared.shape_of("y") == shape{3, 4});
    CHECK(b.unknown_nodes.empty());  // a known op: still counted
    CHECK(b.counts[0].counted);
}

TEST_CASE("initializer values must match their shapes", "[shape][errors]") {
    model m;
    m.input("x", {2, 6});
    const uint32_t t = m.ints("target", {3, 4});
    m.g.tensors[t].int_values = std::vector<int64_t>{3, 4, 1};
    m.node("reshape", "Reshape", {"x", "target"}, {"y"});
    CHECK_THAT(m.bind_error(),
               Contains("initializer 'target' has 3 values but its shape [2] holds 2"));
}

TEST_CASE("known op list", "[shape]") {
    const auto ops = known_ops();
    CHECK(std::is_sorted(ops.begin(), ops.end()));
    for (const char* op : {"Conv",
                           "Gemm",
                           "MatMul",
                           "BatchNormalization",
                           "Relu",
                           "LeakyRelu",
                           "Gelu",
                           "Sigmoid",
                           "Tanh",
                           "Erf",
                           "Sqrt",
                           "Exp",
                           "Neg",
                           "Identity",
                           "Dropout",
                           "Add",
                           "Sub",
                           "Mul",
                           "Div",
                           "Pow",
                           "MaxPool",
                           "AveragePool",
                           "GlobalAveragePool",
                           "GlobalMaxPool",
                           "Flatten",
                           "Reshape",
                           "Transpose",
                           "Softmax",
                           "LayerNormalization",
                           "Concat",
                           "Squeeze",
                           "Unsqueeze",
                           "ReduceMean",
                           "Shape",
                           "Gather",
                           "Cast",
                           "Clip",
                           "Constant"}) {
        INFO(op);
        CHECK(is_known_op(op));
        CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
    }
}

TEST_CASE("folding through Shape start/end, Equal, Where, Neg and Max", "[shape][folding]") {
    // The exporter pattern for Expand to x's shape with -1 meaning "keep": Where(Equal(t, -1),
    // ones, t).
    model m;
    m.input("x", {"batch", 6, 8});
    m.input("v", {1, 8});
    m.ints("minus_one", {-1});
    m.ints("ones", {1, 1, 1});
    m.ints("floor", {4});
    m.node("tail", "Shape", {"x"}, {"s12"}, {ai("start", 1)});                // [6, 8]
    m.node("last", "Shape", {"x"}, {"s2"}, {ai("start", -1), ai("end", 3)});  // [8]
    m.node("neg", "Neg", {"minus_one"}, {"one"});                             // [1]
    m.node("cat", "Concat", {"minus_one", "s12"}, {"t"}, {ai("axis", 0)});    // [-1, 6, 8]
    m.node("eq", "Equal", {"t", "minus_one"}, {"is_keep"});                   // [1, 0, 0]
    m.node("where", "Where", {"is_keep", "ones", "t"}, {"target"});           // [1, 6, 8]
    m.node("max", "Max", {"s2", "floor"}, {"m"});                             // [8]
    m.node("expand", "Expand", {"v", "target"}, {"y"});
    m.output("y");
    m.bind({{"batch", 2}});
    CHECK(m.values_of("s12") == std::vector<int64_t>{6, 8});
    CHECK(m.values_of("s2") == std::vector<int64_t>{8});
    CHECK(m.values_of("one") == std::vector<int64_t>{1});
    CHECK(m.values_of("is_keep") == std::vector<int64_t>{1, 0, 0});
    CHECK(m.dtype_of("is_keep") == NNERGY_DTYPE_BOOL);
    CHECK(m.values_of("target") == std::vector<int64_t>{1, 6, 8});
    CHECK(m.values_of("m") == std::vector<int64_t>{8});
    CHECK(m.shape_of("y") == shape{1, 6, 8});

    // Float tensors are never folded: their values are not integers the host tracks.
    CHECK_FALSE(m.values_of("v").has_value());

    model split;  // opset 18 num_outputs: the last chunk is the smaller one
    split.input("x", {10, 2});
    split.node("split", "Split", {"x"}, {"a", "b", "c"}, {ai("num_outputs", 3)});
    split.output("a");
    split.bind();
    // ceil(10 / 3) = 4: chunks 4, 4, 2
    CHECK(split.shape_of("a") == shape{4, 2});
    CHECK(split.shape_of("b") == shape{4, 2});
    CHECK(split.shape_of("c") == shape{2, 2});

    model uneven;  // without num_outputs an uneven split is an error
    uneven.input("x", {10, 2});
    uneven.node("split", "Split", {"x"}, {"a", "b", "c"});
    CHECK_THAT(uneven.bind_error(), Contains("does not split evenly into 3 outputs"));
}

TEST_CASE("index tensors built from absent integer initializers may keep partial shapes",
          "[shape][folding][declared]") {
    // The dynamo exporter's causal mask, with every initializer in external data that is absent:
    // an Unsqueeze's axes have no values, and the exporter declares its output only in part.
    // The index tensors are host work, so their rank suffices until device work reads them.
    model m;
    m.input("scores", {1, "seq", "seq"});
    m.weight("axes", {1}, NNERGY_DTYPE_INT64);  // values absent
    m.ints("zero", {0}, true);
    m.ints("one", {1}, true);
    m.node("shape", "Shape", {"scores"}, {"s"});
    m.node("len", "Gather", {"s", "one"}, {"n"}, {ai("axis", 0)});
    m.node("range", "Range", {"zero", "n", "one"}, {"positions"});
    m.declare("column", {-1, -1}, NNERGY_DTYPE_INT64);
    m.node("unsqueeze", "Unsqueeze", {"positions", "axes"}, {"column"});
    m.declare("allowed", {"seq", "seq"}, NNERGY_DTYPE_BOOL);
    m.node("causal", "LessOrEqual", {"positions", "column"}, {"allowed"});
    m.weight("fill", {}, NNERGY_DTYPE_FLOAT32);
    m.g.tensors[*m.g.find_tensor("fill")].is_constant = true;
    m.node("mask", "Where", {"allowed", "scores", "fill"}, {"y"});
    m.output("y");
    m.bind({{"seq", 16}});
    CHECK(m.shape_of("column") == shape{-1, -1});
    CHECK(m.shape_of("allowed") == shape{16, 16});
    for (const char* folded : {"shape", "len", "range", "unsqueeze", "causal"}) {
        INFO(folded);
        CHECK(m.counts(folded).folded);
        CHECK(m.counts(folded).output_bytes >= 0);
    }
    CHECK_FALSE(m.counts("mask").folded);
    CHECK(m.counts("mask").input_bytes == 16 * 16 * 4 + 16 * 16);  // scores and the bool mask

    // A graph output is computed and counted: known only in part, it is an error.
    model o;
    o.input("x", {4});
    o.weight("axes", {1}, NNERGY_DTYPE_INT64);
    o.ints("zero", {0}, true);
    o.ints("one", {1}, true);
    o.ints("four", {4}, true);
    o.node("range", "Range", {"zero", "four", "one"}, {"positions"});
    o.declare("column", {-1, -1}, NNERGY_DTYPE_INT64);
    o.node("unsqueeze", "Unsqueeze", {"positions", "axes"}, {"column"});
    o.output("column");
    CHECK_THAT(o.bind_error(), Contains("node 'unsqueeze' (Unsqueeze)") &&
                                   Contains("declare the full shape of output 'column'"));

    // Device work that reads a tensor known only in part cannot be counted: an error.
    model d;
    d.input("x", {4});
    d.weight("axes", {1}, NNERGY_DTYPE_INT64);
    d.ints("zero", {0}, true);
    d.ints("one", {1}, true);
    d.ints("four", {4}, true);
    d.node("range", "Range", {"zero", "four", "one"}, {"positions"});
    d.declare("column", {-1, -1}, NNERGY_DTYPE_INT64);
    d.node("unsqueeze", "Unsqueeze", {"positions", "axes"}, {"column"});
    d.declare("c", {-1, -1});
    d.node("cast", "Cast", {"column"}, {"c"}, {ai("to", 1)});
    d.declare("y", {4, 4});
    d.node("add", "Add", {"x", "c"}, {"y"});
    d.output("y");
    CHECK_THAT(d.bind_error(), Contains("node 'add' (Add)") &&
                                   Contains("the shape of input 'c' is known only in part"));
}
