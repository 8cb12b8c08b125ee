// SPDX-License-Identifier: Apache-2.0
// Shape inference and constant folding of the operators beyond the basic CNN/transformer set:
// every expected shape is worked out by hand beside it (ONNX semantics).

#include "ops_test_model.hpp"

TEST_CASE("ConvTranspose: strides, pads, output_padding, dilations, groups, output_shape",
          "[ops][shape][conv]") {
    model m;
    m.input("x", {1, 16, 7, 7});
    m.weight("w", {16, 8, 3, 3});
    m.node("up", "ConvTranspose", {"x", "w"}, {"y"},
           {ais("strides", {2, 2}), ais("pads", {1, 1, 1, 1}), ais("output_padding", {1, 1})});
    m.output("y");
    m.bind();
    // stride x (in - 1) + output_padding + kernel - pads = 2 x 6 + 1 + 3 - 2 = 14
    CHECK(m.shape_of("y") == shape{1, 8, 14, 14});

    model g;  // group 2: C_out = w[1] x group = 4 x 2 = 8
    g.input("x", {1, 16, 5, 5});
    g.weight("w", {16, 4, 3, 3});
    g.node("up", "ConvTranspose", {"x", "w"}, {"y"}, {ai("group", 2)});
    g.output("y");
    g.bind();
    // 1 x (5 - 1) + 0 + 3 - 0 = 7
    CHECK(g.shape_of("y") == shape{1, 8, 7, 7});

    model d;  // dilation 2: kernel extent (3 - 1) x 2 + 1 = 5; 1 x (5 - 1) + 5 = 9
    d.input("x", {1, 4, 5});
    d.weight("w", {4, 2, 3});
    d.node("up", "ConvTranspose", {"x", "w"}, {"y"}, {ais("dilations", {2})});
    d.output("y");
    d.bind();
    CHECK(d.shape_of("y") == shape{1, 2, 9});

    model s;  // explicit output_shape wins; SAME_UPPER gives in x stride
    s.input("x", {1, 4, 5});
    s.weight("w", {4, 2, 3});
    s.node("a", "ConvTranspose", {"x", "w"}, {"y"}, {ais("output_shape", {10})});
    s.node("b", "ConvTranspose", {"x", "w"}, {"z"},
           {as("auto_pad", "SAME_UPPER"), ais("strides", {3})});
    s.output("y");
    s.output("z");
    s.bind();
    CHECK(s.shape_of("y") == shape{1, 2, 10});
    CHECK(s.shape_of("z") == shape{1, 2, 15});  // 5 x 3

    model bad;  // output_padding must stay below the stride
    bad.input("x", {1, 4, 5});
    bad.weight("w", {4, 2, 3});
    bad.node("up", "ConvTranspose", {"x", "w"}, {"y"},
             {ais("strides", {2}), ais("output_padding", {2})});
    bad.output("y");
    const std::string e = bad.bind_error();
    CHECK_THAT(e, Contains("node 'up'"));
    CHECK_THAT(e, Contains("output_padding"));
}

TEST_CASE("Einsum shapes: explicit, implicit, ellipsis, traces and errors",
          "[ops][shape][einsum]") {
    const auto run = [](const char* eq, std::vector<std::vector<D>> ins) {
        model m;
        std::vector<std::string> names;
        for (size_t k = 0; k < ins.size(); ++k) {
            names.push_back("x" + std::to_string(k));
            m.input(names.back(), ins[k]);
        }
        m.node("e", "Einsum", names, {"y"}, {as("equation", eq)});
        m.output("y");
        m.bind();
        return m.shape_of("y");
    };
    CHECK(run("bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}) == shape{2, 3, 5});
    // implicit output: labels used once, alphabetically: i, k
    CHECK(run("ij,jk", {{3, 4}, {4, 5}}) == shape{3, 5});
    // implicit, out of order: k before m alphabetically
    CHECK(run("mj,jk", {{3, 4}, {4, 5}}) == shape{5, 3});
    // ellipsis broadcast: [7, 2] and [2] broadcast to [7, 2]
    CHECK(run("...ij,...jk->...ik", {{7, 2, 3, 4}, {2, 4, 5}}) == shape{7, 2, 3, 5});
    CHECK(run("bhqd,bhkd->bhqk", {{1, 2, 3, 4}, {1, 2, 5, 4}}) == shape{1, 2, 3, 5});
    CHECK(run("ii->i", {{3, 3}}) == shape{3});  // diagonal
    CHECK(run("ij->", {{3, 4}}) == shape{});    // full sum
    CHECK(run("ij->ji", {{3, 4}}) == shape{4, 3});

    model bad;
    bad.input("a", {2, 3});
    bad.input("b", {4, 5});
    bad.node("e", "Einsum", {"a", "b"}, {"y"}, {as("equation", "ij,jk->ik")});
    bad.output("y");
    const std::string e = bad.bind_error();
    CHECK_THAT(e, Contains("node 'e'"));
    CHECK_THAT(e, Contains("label 'j' is 3"));

    model wrong_terms;
    wrong_terms.input("a", {2, 3});
    wrong_terms.node("e", "Einsum", {"a"}, {"y"}, {as("equation", "ij,jk->ik")});
    wrong_terms.output("y");
    CHECK_THAT(wrong_terms.bind_error(), Contains("2 operand terms for 1 inputs"));
}

TEST_CASE("InstanceNormalization and GroupNormalization shapes", "[ops][shape][norm]") {
    model m;
    m.input("x", {2, 4, 5, 5});
    m.weight("s4", {4});
    m.weight("b4", {4});
    m.weight("s2", {2});
    m.weight("b2", {2});
    m.node("in", "InstanceNormalization", {"x", "s4", "b4"}, {"y"});
    m.node("gn21", "GroupNormalization", {"x", "s4", "b4"}, {"z"}, {ai("num_groups", 2)});
    // opset 18 took one scale per group
    m.node("gn18", "GroupNormalization", {"x", "s2", "b2"}, {"w"}, {ai("num_groups", 2)});
    m.output("y");
    m.output("z");
    m.output("w");
    m.bind();
    CHECK(m.shape_of("y") == shape{2, 4, 5, 5});
    CHECK(m.shape_of("z") == shape{2, 4, 5, 5});
    CHECK(m.shape_of("w") == shape{2, 4, 5, 5});

    model bad;  // 4 channels do not split into 3 groups
    bad.input("x", {2, 4, 5, 5});
    bad.weight("s", {4});
    bad.weight("b", {4});
    bad.node("gn", "GroupNormalization", {"x", "s", "b"}, {"y"}, {ai("num_groups", 3)});
    bad.output("y");
    CHECK_THAT(bad.bind_error(), Contains("not divisible by num_groups 3"));
}

TEST_CASE("Resize and Upsample: sizes, constant scales, aspect policy, unknown scales",
          "[ops][shape][resize]") {
    model m;
    m.input("x", {1, 3, 10, 20});
    m.ints("sizes", {1, 3, 20, 40});
    m.node("by_sizes", "Resize", {"x", "", "", "sizes"}, {"a"});
    m.node("k", "Constant", {}, {"scales"}, {afs("value_floats", {1.0, 1.0, 2.0, 2.5})});
    m.node("by_scales", "Resize", {"x", "", "scales"}, {"b"}, {as("mode", "linear")});
    m.node("up7", "Upsample", {"x"}, {"c"}, {afs("scales", {1.0, 1.0, 2.0, 2.0})});
    m.node("k9", "Constant", {}, {"up_scales"}, {afs("value_floats", {1.0, 1.0, 0.5, 0.25})});
    m.node("up9", "Upsample", {"x", "up_scales"}, {"d"});
    m.node("rs10", "Resize", {"x", "up_scales"}, {"f"});  // opset 10: (X, scales)
    m.ints("hw", {12, 12});
    // not_larger: one scale min(12 / 10, 12 / 20) = 0.6 for both axes: 6 x 12
    m.node("fit", "Resize", {"x", "", "", "hw"}, {"e"},
           {ais("axes", {2, 3}), as("keep_aspect_ratio_policy", "not_larger")});
    for (const char* o : {"a", "b", "c", "d", "e", "f"}) m.output(o);
    m.bind();
    CHECK(m.shape_of("a") == shape{1, 3, 20, 40});
    CHECK(m.shape_of("f") == shape{1, 3, 5, 5});
    // floor(10 x 2) = 20, floor(20 x 2.5) = 50
    CHECK(m.shape_of("b") == shape{1, 3, 20, 50});
    CHECK(m.shape_of("c") == shape{1, 3, 20, 40});
    // floor(10 x 0.5) = 5, floor(20 x 0.25) = 5
    CHECK(m.shape_of("d") == shape{1, 3, 5, 5});
    CHECK(m.shape_of("e") == shape{1, 3, 6, 12});

    // Scales in a float initializer carry no values: the node is named, never guessed.
    model unknown;
    unknown.input("x", {1, 3, 10, 20});
    unknown.weight("scales", {4});
    unknown.node("rs", "Resize", {"x", "", "scales"}, {"y"});
    unknown.output("y");
    const std::string e = unknown.bind_error();
    CHECK_THAT(e, Contains("node 'rs'"));
    CHECK_THAT(e, Contains("scales (input 'scales') are not constants"));

    model declared;  // the same with the output declared: the declared shape is used
    declared.input("x", {1, 3, 10, 20});
    declared.weight("scales", {4});
    declared.declare("y", {1, 3, 30, 60});
    declared.node("rs", "Resize", {"x", "", "scales"}, {"y"});
    declared.output("y");
    declared.bind();
    CHECK(declared.shape_of("y") == shape{1, 3, 30, 60});
}

TEST_CASE("Slice with negative bounds, clamping and negative steps", "[ops][shape][slice]") {
    model m;
    m.input("x", {10, 20});
    m.ints("s1", {-3, 0});
    m.ints("e1", {std::numeric_limits<int64_t>::max(), 100});
    m.ints("a1", {0, 1});
    m.ints("t1", {1, 3});
    m.node("a", "Slice", {"x", "s1", "e1", "a1", "t1"}, {"ya"});
    m.ints("s2", {-1});
    m.ints("e2", {std::numeric_limits<int64_t>::min()});
    m.ints("a2", {1});
    m.ints("t2", {-2});
    m.node("b", "Slice", {"x", "s2", "e2", "a2", "t2"}, {"yb"});
    m.ints("s3", {5});
    m.ints("e3", {3});
    m.ints("a3", {-2});
    m.node("c", "Slice", {"x", "s3", "e3", "a3"}, {"yc"});
    for (const char* o : {"ya", "yb", "yc"}) m.output(o);
    m.bind();
    // axis 0: [-3 + 10 = 7, clamp(max) = 10) = 3; axis 1: [0, 20) step 3 = ceil(20 / 3) = 7
    CHECK(m.shape_of("ya") == shape{3, 7});
    // axis 1 backwards from 19 to before 0 (end -> -1) step -2: ceil((19 - -1) / 2) = 10
    CHECK(m.shape_of("yb") == shape{10, 10});
    // start 5 past end 3 with a positive step: empty
    CHECK(m.shape_of("yc") == shape{0, 20});
}

TEST_CASE("GatherElements, GatherND, ScatterND, ScatterElements", "[ops][shape][gather]") {
    model m;
    m.input("data", {2, 3, 4});
    m.input("ge_idx", {2, 3, 2}, NNERGY_DTYPE_INT64);
    m.input("nd_idx", {2, 2}, NNERGY_DTYPE_INT64);
    m.input("nd_b_idx", {2, 1}, NNERGY_DTYPE_INT64);
    m.node("ge", "GatherElements", {"data", "ge_idx"}, {"a"}, {ai("axis", 2)});
    m.node("nd", "GatherND", {"data", "nd_idx"}, {"b"});
    m.node("ndb", "GatherND", {"data", "nd_b_idx"}, {"c"}, {ai("batch_dims", 1)});
    m.input("s_idx", {2, 1}, NNERGY_DTYPE_INT64);
    m.input("s_upd", {2, 3, 4});
    m.node("snd", "ScatterND", {"data", "s_idx", "s_upd"}, {"d"});
    m.input("ge_upd", {2, 3, 2});
    m.node("se", "ScatterElements", {"data", "ge_idx", "ge_upd"}, {"e"}, {ai("axis", 1)});
    for (const char* o : {"a", "b", "c", "d", "e"}) m.output(o);
    m.bind();
    CHECK(m.shape_of("a") == shape{2, 3, 2});  // the indices' shape
    // indices[:-1] + data[indices[-1]:] = [2] + [4]
    CHECK(m.shape_of("b") == shape{2, 4});
    // batch_dims 1: indices[:-1] + data[1 + 1:] = [2] + [4]
    CHECK(m.shape_of("c") == shape{2, 4});
    CHECK(m.shape_of("d") == shape{2, 3, 4});
    CHECK(m.shape_of("e") == shape{2, 3, 4});

    model bad;  // ScatterND updates must be indices[:-1] + data[1:] = [2, 3, 4]
    bad.input("data", {2, 3, 4});
    bad.input("idx", {2, 1}, NNERGY_DTYPE_INT64);
    bad.input("upd", {2, 3});
    bad.node("s", "ScatterND", {"data", "idx", "upd"}, {"y"});
    bad.output("y");
    CHECK_THAT(bad.bind_error(), Contains("must have shape [2, 3, 4]"));
}

TEST_CASE("reductions: every kind, axes as attribute or input, keepdims, noop",
          "[ops][shape][reduce]") {
    model m;
    m.input("x", {2, 3, 4});
    m.ints("ax1", {1});
    m.node("l2", "ReduceL2", {"x", "ax1"}, {"a"}, {ai("keepdims", 0)});
    m.node("lse", "ReduceLogSumExp", {"x"}, {"b"}, {ais("axes", {-1})});
    m.node("noop", "ReduceSum", {"x"}, {"c"}, {ai("noop_with_empty_axes", 1)});
    m.node("all", "ReduceProd", {"x"}, {"d"}, {ai("keepdims", 0)});
    m.node("l1", "ReduceL1", {"x", "ax1"}, {"e"});
    m.node("ss", "ReduceSumSquare", {"x", "ax1"}, {"f"});
    m.node("ls", "ReduceLogSum", {"x", "ax1"}, {"g"});
    m.node("am", "ArgMax", {"x"}, {"h"}, {ai("axis", 1), ai("keepdims", 0)});
    m.node("an", "ArgMin", {"x"}, {"i"});
    for (const char* o : {"a", "b", "c", "d", "e", "f", "g", "h", "i"}) m.output(o);
    m.bind();
    CHECK(m.shape_of("a") == shape{2, 4});
    CHECK(m.shape_of("b") == shape{2, 3, 1});
    CHECK(m.shape_of("c") == shape{2, 3, 4});
    CHECK(m.shape_of("d") == shape{});
    CHECK(m.shape_of("e") == shape{2, 1, 4});
    CHECK(m.shape_of("f") == shape{2, 1, 4});
    CHECK(m.shape_of("g") == shape{2, 1, 4});
    CHECK(m.shape_of("h") == shape{2, 4});
    CHECK(m.dtype_of("h") == NNERGY_DTYPE_INT64);
    CHECK(m.shape_of("i") == shape{1, 3, 4});  // axis 0, keepdims 1 by default
}

TEST_CASE("TopK, Size, NonZero and the data-dependent case", "[ops][shape][topk]") {
    model m;
    m.input("x", {3, 5});
    m.ints("k", {2});
    m.node("top", "TopK", {"x", "k"}, {"v", "i"});
    m.node("top1", "TopK", {"x"}, {"v1", "i1"}, {ai("k", 3), ai("axis", 0)});  // opset 1
    m.node("size", "Size", {"x"}, {"n"});
    m.ints("mask", {0, 3, 0, 5});
    m.node("nz", "NonZero", {"mask"}, {"where"});
    for (const char* o : {"v", "i", "n", "where"}) m.output(o);
    m.bind();
    CHECK(m.shape_of("v") == shape{3, 2});
    CHECK(m.shape_of("v1") == shape{3, 5});
    CHECK(m.shape_of("i") == shape{3, 2});
    CHECK(m.dtype_of("i") == NNERGY_DTYPE_INT64);
    CHECK(m.shape_of("n") == shape{});
    CHECK(m.values_of("n") == std::vector<int64_t>{15});  // 3 x 5
    // constant input: the non-zero positions 1 and 3 are known, one row per input axis
    CHECK(m.shape_of("where") == shape{1, 2});
    CHECK(m.values_of("where") == std::vector<int64_t>{1, 3});

    // NonZero of data the host cannot see: the count is never guessed.
    model dyn;
    dyn.input("x", {3, 5});
    dyn.node("nz", "NonZero", {"x"}, {"y"});
    dyn.output("y");
    const std::string e = dyn.bind_error();
    CHECK_THAT(e, Contains("node 'nz'"));
    CHECK_THAT(e, Contains("depends on the values"));
    CHECK_THAT(e, Contains("declare the full shape of output 'y'"));

    // Declaring the output with a symbol the user binds makes the count explicit.
    model declared;
    declared.input("x", {3, 5});
    declared.declare("y", {2, "nonzero_count"}, NNERGY_DTYPE_INT64);
    declared.node("nz", "NonZero", {"x"}, {"y"});
    declared.output("y");
    declared.bind({{"nonzero_count", 7}});
    CHECK(declared.shape_of("y") == shape{2, 7});

    model big_k;
    big_k.input("x", {3, 5});
    big_k.ints("k", {6});
    big_k.node("top", "TopK", {"x", "k"}, {"v", "i"});
    big_k.output("v");
    CHECK_THAT(big_k.bind_error(), Contains("K = 6 is outside [0, 5]"));
}

TEST_CASE("layout ops: DepthToSpace, SpaceToDepth, OneHot, Trilu, CumSum, EyeLike",
          "[ops][shape][layout]") {
    CHECK(unary_shape("DepthToSpace", {1, 8, 2, 3}, {ai("blocksize", 2)}) == shape{1, 2, 4, 6});
    CHECK(unary_shape("SpaceToDepth", {1, 2, 4, 6}, {ai("blocksize", 2)}) == shape{1, 8, 2, 3});
    CHECK(unary_shape("Trilu", {4, 5}) == shape{4, 5});
    CHECK(unary_shape("EyeLike", {4, 5}) == shape{4, 5});

    model m;
    m.input("idx", {2, 3}, NNERGY_DTYPE_INT64);
    m.ints("depth", {10}, true);
    m.weight("values", {2});
    m.node("oh", "OneHot", {"idx", "depth", "values"}, {"a"});
    m.node("oh0", "OneHot", {"idx", "depth", "values"}, {"b"}, {ai("axis", 0)});
    m.input("x", {2, 5});
    m.ints("axis", {1}, true);
    m.node("cs", "CumSum", {"x", "axis"}, {"c"});
    for (const char* o : {"a", "b", "c"}) m.output(o);
    m.bind();
    CHECK(m.shape_of("a") == shape{2, 3, 10});
    CHECK(m.dtype_of("a") == NNERGY_DTYPE_FLOAT32);  // the type of `values`
    CHECK(m.shape_of("b") == shape{10, 2, 3});
    CHECK(m.shape_of("c") == shape{2, 5});

    model bad;
    bad.input("x", {1, 3, 4, 6});
    bad.node("d2s", "DepthToSpace", {"x"}, {"y"}, {ai("blocksize", 2)});
    bad.output("y");
    CHECK_THAT(bad.bind_error(), Contains("channels 3 are not divisible by blocksize^2 = 4"));
}

TEST_CASE("pooling: MaxPool dilations, ceil_mode and indices; LpPool, GlobalLpPool",
          "[ops][shape][pool]") {
    model m;
    m.input("x", {1, 1, 10, 10});
    // extent (3 - 1) x 2 + 1 = 5; span 10 - 5 = 5; ceil(5 / 2) + 1 = 4 (floor: 2 + 1 = 3)
    m.node("ceil", "MaxPool", {"x"}, {"a", "ai"},
           {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}), ais("dilations", {2, 2}),
            ai("ceil_mode", 1)});
    m.node("floor", "MaxPool", {"x"}, {"b"},
           {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}), ais("dilations", {2, 2})});
    m.node("lp", "LpPool", {"x"}, {"c"}, {ais("kernel_shape", {2, 2}), ais("strides", {2, 2})});
    m.node("glp", "GlobalLpPool", {"x"}, {"d"});
    m.node("avg", "AveragePool", {"x"}, {"e"},
           {ais("kernel_shape", {3, 3}), ais("pads", {1, 1, 1, 1}), ai("count_include_pad", 1)});
    for (const char* o : {"a", "ai", "b", "c", "d", "e"}) m.output(o);
    m.bind();
    CHECK(m.shape_of("a") == shape{1, 1, 4, 4});
    CHECK(m.shape_of("ai") == shape{1, 1, 4, 4});
    CHECK(m.dtype_of("ai") == NNERGY_DTYPE_INT64);
    CHECK(m.shape_of("b") == shape{1, 1, 3, 3});
    CHECK(m.shape_of("c") == shape{1, 1, 5, 5});
    CHECK(m.shape_of("d") == shape{1, 1, 1, 1});
    CHECK(m.shape_of("e") == shape{1, 1, 10, 10});  // (10 + 2 - 3) / 1 + 1
}

TEST_CASE("quantized ops: shapes and element types", "[ops][shape][quant]") {
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
    m.input("f", {2, 3});
    m.weight("zi8", {}, NNERGY_DTYPE_INT8);
    m.node("ql", "QuantizeLinear", {"f", "sa", "zi8"}, {"qi8"});
    m.node("qu", "QuantizeLinear", {"f", "sa"}, {"qu8"});
    m.node("dq", "DequantizeLinear", {"qi8", "sa", "zi8"}, {"back"});
    m.node("dyn", "DynamicQuantizeLinear", {"f"}, {"dy", "ds", "dz"});
    for (const char* o : {"p", "q", "back", "qu8", "dy", "ds", "dz"}) m.output(o);
    m.bind();
    CHECK(m.shape_of("p") == shape{4, 3});
    CHECK(m.dtype_of("p") == NNERGY_DTYPE_INT32);
    CHECK(m.shape_of("q") == shape{4, 3});
    CHECK(m.dtype_of("q") == NNERGY_DTYPE_UINT8);  // y_zero_point's type
    CHECK(m.dtype_of("qi8") == NNERGY_DTYPE_INT8);
    CHECK(m.dtype_of("qu8") == NNERGY_DTYPE_UINT8);  // no zero point: uint8
    CHECK(m.dtype_of("back") == NNERGY_DTYPE_FLOAT32);
    CHECK(m.shape_of("back") == shape{2, 3});
    CHECK(m.shape_of("dy") == shape{2, 3});
    CHECK(m.dtype_of("dy") == NNERGY_DTYPE_UINT8);
    CHECK(m.shape_of("ds") == shape{});
    CHECK(m.dtype_of("ds") == NNERGY_DTYPE_FLOAT32);
    CHECK(m.dtype_of("dz") == NNERGY_DTYPE_UINT8);
}

TEST_CASE("folding: Shape -> Slice -> ReduceProd -> Concat -> Reshape and friends",
          "[ops][shape][folding]") {
    model m;
    m.input("x", {"batch", 3, 4, 5});
    m.node("shape", "Shape", {"x"}, {"s"});  // [2, 3, 4, 5]
    m.ints("one", {1});
    m.ints("three", {3});
    m.node("hw", "Slice", {"s", "one", "three"}, {"s12"});     // [3, 4]
    m.node("cast", "Cast", {"s12"}, {"s12i"}, {ai("to", 7)});  // [3, 4]
    m.node("prod", "ReduceProd", {"s12i"}, {"p"});             // [12] (keepdims)
    m.ints("minus_one", {-1});
    m.node("cat", "Concat", {"minus_one", "p"}, {"target"}, {ai("axis", 0)});  // [-1, 12]
    m.node("reshape", "Reshape", {"x", "target"}, {"y"});
    m.node("size", "Size", {"x"}, {"n"});  // 120
    m.ints("twelve", {12}, true);
    m.node("div", "Div", {"n", "twelve"}, {"rows"});  // 10
    m.ints("seven", {7, -7});
    m.ints("three_s", {3}, true);
    m.node("mod", "Mod", {"seven", "three_s"}, {"md"});
    m.node("fmod", "Mod", {"seven", "three_s"}, {"fm"}, {ai("fmod", 1)});
    m.node("le", "LessOrEqual", {"s", "three_s"}, {"small"});                 // [1, 1, 0, 0]
    m.node("ge", "GreaterOrEqual", {"s", "three_s"}, {"big"});                // [0, 1, 1, 1]
    m.node("and", "And", {"small", "big"}, {"three_only"});                   // [0, 1, 0, 0]
    m.node("cos", "ConstantOfShape", {"three"}, {"ones"}, {ai("value", 1)});  // [1, 1, 1]
    m.node("abs", "Abs", {"minus_one"}, {"plus_one"});
    m.node("sign", "Sign", {"seven"}, {"signs"});
    for (const char* o : {"y", "rows", "md", "fm", "three_only", "ones", "plus_one", "signs"})
        m.output(o);
    m.bind({{"batch", 2}});
    CHECK(m.values_of("s12i") == std::vector<int64_t>{3, 4});
    CHECK(m.values_of("p") == std::vector<int64_t>{12});
    CHECK(m.values_of("target") == std::vector<int64_t>{-1, 12});
    // 2 x 3 x 4 x 5 = 120 elements; 120 / 12 = 10 rows
    CHECK(m.shape_of("y") == shape{10, 12});
    CHECK(m.values_of("rows") == std::vector<int64_t>{10});
    // Python-style modulo takes the divisor's sign: 7 % 3 = 1, -7 % 3 = 2; fmod: 1, -1
    CHECK(m.values_of("md") == std::vector<int64_t>{1, 2});
    CHECK(m.values_of("fm") == std::vector<int64_t>{1, -1});
    CHECK(m.values_of("three_only") == std::vector<int64_t>{0, 1, 0, 0});
    CHECK(m.dtype_of("three_only") == NNERGY_DTYPE_BOOL);
    CHECK(m.dtype_of("ones") == NNERGY_DTYPE_INT64);
    CHECK(m.values_of("ones") == std::vector<int64_t>{1, 1, 1});
    CHECK(m.values_of("plus_one") == std::vector<int64_t>{1});
    CHECK(m.values_of("signs") == std::vector<int64_t>{1, -1});
}

TEST_CASE("folding: Slice and Transpose of 2-D integer tensors (torch's F.pad lowering)",
          "[ops][shape][folding]") {
    // torch.onnx exports F.pad(x, (0, 0, 0, 1, 0, 2)) as a pads table reshaped to [-1, 2],
    // reversed along its rows, transposed and flattened into ONNX's begin..., end... order.
    model m;
    m.input("x", {1, 5, 6, 8});
    m.ints("flat", {0, 0, 0, 1, 0, 2, 0, 0});  // torch order, padded to rank 4: last dim first
    m.ints("pairs", {-1, 2});
    m.node("table", "Reshape", {"flat", "pairs"}, {"t"});  // [[0,0],[0,1],[0,2],[0,0]]
    m.ints("start", {-1});
    m.ints("end", {std::numeric_limits<int64_t>::min() + 1});
    m.ints("axis", {0});
    m.ints("back", {-1});
    m.node("reverse", "Slice", {"t", "start", "end", "axis", "back"}, {"r"});
    m.node("swap", "Transpose", {"r"}, {"tr"}, {ais("perm", {1, 0})});
    m.ints("flatten", {-1});
    m.node("onnx_order", "Reshape", {"tr", "flatten"}, {"pads"});
    m.node("pad", "Pad", {"x", "pads"}, {"y"});
    m.ints("rows", {1});
    m.ints("rows_end", {3});
    m.node("middle", "Slice", {"t", "rows", "rows_end", "axis"}, {"mid"});
    m.output("y");
    m.output("mid");
    m.bind();
    CHECK(m.values_of("r") == std::vector<int64_t>{0, 0, 0, 2, 0, 1, 0, 0});
    CHECK(m.shape_of("tr") == shape{2, 4});
    CHECK(m.values_of("tr") == std::vector<int64_t>{0, 0, 0, 0, 0, 2, 1, 0});
    CHECK(m.shape_of("y") == shape{1, 7, 7, 8});  // dim 1 padded by 2 at the end, dim 2 by 1
    CHECK(m.values_of("mid") == std::vector<int64_t>{0, 1, 0, 2});
}

TEST_CASE("Expand to a folded ConstantOfShape target broadcasts", "[ops][shape][folding]") {
    // torch.expand_as lowering: Expand(v, ConstantOfShape(Shape(x)) * Shape(x)).
    model m;
    m.input("x", {2, 3, 4});
    m.input("v", {3, 1});
    m.node("shape", "Shape", {"x"}, {"s"});
    m.node("len", "Shape", {"s"}, {"rank"});  // [3]
    m.node("ones", "ConstantOfShape", {"rank"}, {"o"}, {ai("value", 1)});
    m.node("mul", "Mul", {"o", "s"}, {"target"});
    m.node("expand", "Expand", {"v", "target"}, {"y"});
    m.output("y");
    m.bind();
    CHECK(m.values_of("target") == std::vector<int64_t>{2, 3, 4});
    CHECK(m.shape_of("y") == shape{2, 3, 4});
}

TEST_CASE("known ops: at least 120, control flow stays unknown", "[ops][shape]") {
    const auto ops = known_ops();
    CHECK(ops.size() >= 120);
    CHECK(std::is_sorted(ops.begin(), ops.end()));
    CHECK(std::adjacent_find(ops.begin(), ops.end()) == ops.end());
    for (const char* op : {"ConvTranspose",
                           "Einsum",
                           "InstanceNormalization",
                           "GroupNormalization",
                           "Resize",
                           "Upsample",
                           "GatherElements",
                           "GatherND",
                           "ScatterND",
                           "CastLike",
                           "ReduceLogSumExp",
                           "ArgMax",
                           "Hardmax",
                           "TopK",
                           "Size",
                           "NonZero",
                           "Mish",
                           "Celu",
                           "BitShift",
                           "LpPool",
                           "GlobalLpPool",
                           "DepthToSpace",
                           "SpaceToDepth",
                           "Trilu",
                           "CumSum",
                           "OneHot",
                           "LRN",
                           "MatMulInteger",
                           "QLinearMatMul",
                           "QLinearConv",
                           "QuantizeLinear",
                           "DequantizeLinear",
                           "DynamicQuantizeLinear"}) {
        INFO(op);
        CHECK(is_known_op(op));
    }
    for (const char* op : {"If", "Loop", "Scan", "Attention"}) {
        INFO(op);
        CHECK_FALSE(is_known_op(op));
    }

    model m;  // an If is listed as unknown, its declared output used
    m.input("c", {}, NNERGY_DTYPE_BOOL);
    m.declare("y", {2});
    m.node("branch", "If", {"c"}, {"y"});
    m.output("y");
    m.bind();
    REQUIRE(m.b->unknown_nodes.size() == 1);
    CHECK(m.g.nodes[m.b->unknown_nodes[0]].name == "branch");
    CHECK_FALSE(m.counts("branch").counted);
}

TEST_CASE("Split, Pad, Expand, Where, CastLike, Dropout: the other forms exports use",
          "[ops][shape][layout]") {
    model m;
    m.input("x", {3, 1, 10});
    // opset < 13: split sizes as an attribute
    m.node("split", "Split", {"x"}, {"p", "q"}, {ai("axis", 2), ais("split", {4, 6})});
    // pads for axis -1 only: begin 1, end -3 (a crop): 10 + 1 - 3 = 8
    m.ints("pads", {1, -3});
    m.ints("pad_axes", {-1});
    m.node("pad", "Pad", {"x", "pads", "", "pad_axes"}, {"r"});
    // Expand broadcasts both ways: [3, 1, 10] with [2, 1, 4, 1] -> [2, 3, 4, 10]
    m.ints("target", {2, 1, 4, 1});
    m.node("expand", "Expand", {"x", "target"}, {"e"});
    m.input("cond", {1, 10}, NNERGY_DTYPE_BOOL);
    m.input("other", {4, 1, 1, 1});
    m.node("where", "Where", {"cond", "x", "other"}, {"w"});
    m.input("like", {1}, NNERGY_DTYPE_FLOAT16);
    m.node("castlike", "CastLike", {"x", "like"}, {"h"});
    m.node("drop", "Dropout", {"x"}, {"d", "mask"});
    for (const char* o : {"p", "q", "r", "e", "w", "h", "d", "mask"}) m.output(o);
    m.bind();
    CHECK(m.shape_of("p") == shape{3, 1, 4});
    CHECK(m.shape_of("q") == shape{3, 1, 6});
    CHECK(m.shape_of("r") == shape{3, 1, 8});
    CHECK(m.shape_of("e") == shape{2, 3, 4, 10});
    // [1, 10], [3, 1, 10] and [4, 1, 1, 1] broadcast right-aligned: [4, 3, 1, 10]
    CHECK(m.shape_of("w") == shape{4, 3, 1, 10});
    CHECK(m.dtype_of("h") == NNERGY_DTYPE_FLOAT16);
    CHECK(m.shape_of("h") == shape{3, 1, 10});
    CHECK(m.shape_of("mask") == shape{3, 1, 10});
    CHECK(m.dtype_of("mask") == NNERGY_DTYPE_BOOL);

    model bad;  // a split that does not add up names the node
    bad.input("x", {3, 10});
    bad.node("split", "Split", {"x"}, {"p", "q"}, {ai("axis", 1), ais("split", {4, 5})});
    bad.output("p");
    const std::string e = bad.bind_error();
    CHECK_THAT(e, Contains("node 'split'"));
    CHECK_THAT(e, Contains("do not add up"));
}

TEST_CASE("host ops: PyTorch's adaptive pools, overlapping windows and errors",
          "[ops][shape][pool]") {
    const auto pool = [](const std::string& op, std::vector<D> x, std::vector<int64_t> size,
                         const std::string& domain = "ai.nnergy") {
        auto m = std::make_unique<model>();
        m->input("x", std::move(x));
        m->node("p", op, {"x"}, {"y"}, {ais("output_size", std::move(size))});
        m->g.nodes.back().domain = domain;
        m->output("y");
        return m;
    };
    // 2 x 8 x 7 x 7 averaged to 3 x 3: windows [0,3) [2,5) [4,7) along each dim, 3 + 3 + 3 =
    // 9 elements per dim (7 + 3 - gcd 1), 81 per channel plane: 2 x 8 x 81 = 1,296 FLOPs.
    auto a = pool("AdaptiveAveragePool", {2, 8, 7, 7}, {3, 3});
    a->bind();
    CHECK(a->shape_of("y") == shape{2, 8, 3, 3});
    CHECK(a->counts("p").flops == 1'296.0);
    CHECK(a->counts("p").macs == 0);
    // Max over 1 x 4 x 8 pooled to 3 along the last dim: windows [0,3) [2,6) [5,8) = 3 + 4 +
    // 3 = 10 = 8 + 3 - 1 elements per row; 4 rows x 10 - 12 outputs = 28 comparisons.
    auto m = pool("AdaptiveMaxPool", {1, 4, 8}, {3});
    m->bind();
    CHECK(m->shape_of("y") == shape{1, 4, 3});
    CHECK(m->counts("p").flops == 28.0);
    // A divisible size reads each element once, as a mean over windows would: 1 x 2 x 6 x 6 to
    // 3 x 2 is 72 FLOPs, the input's element count. A wider output than input repeats
    // elements: 2 pooled to 3 gives windows [0,1) [0,2) [1,2), 4 = 2 + 3 - 1 elements.
    auto d = pool("AdaptiveAveragePool", {1, 2, 6, 6}, {3, 2});
    d->bind();
    CHECK(d->counts("p").flops == 72.0);
    auto w = pool("AdaptiveAveragePool", {1, 1, 2}, {3});
    w->bind();
    CHECK(w->shape_of("y") == shape{1, 1, 3});
    CHECK(w->counts("p").flops == 4.0);

    CHECK_THAT(pool("AdaptiveAveragePool", {1, 4, 7, 7}, {})->bind_error(),
               Contains("'output_size' is required"));
    CHECK_THAT(pool("AdaptiveAveragePool", {4, 7}, {3, 3})->bind_error(),
               Contains("must have rank >= 3"));
    CHECK_THAT(pool("AdaptiveMaxPool", {1, 4, 7, 7}, {3, 0})->bind_error(),
               Contains("must be positive"));
    // Only in the host's domain: in ONNX's the name is no op, and shape inference says so.
    CHECK_THAT(pool("AdaptiveAveragePool", {1, 4, 7, 7}, {3, 3}, "")->bind_error(),
               Contains("unknown to shape inference"));
}
