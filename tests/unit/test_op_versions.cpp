// SPDX-License-Identifier: Apache-2.0
// Operator versions: which version of an op a model's opset selects, ops a model's opset does
// not define, and the forms and semantics that changed from opset 13 to 22. Every expected
// shape and count is worked out by hand from the ONNX operator specification beside it.

#include <fstream>
#include <map>
#include <sstream>

#include "ops_test_model.hpp"

namespace {

// A model importing default-domain opset `opset` (metadata written as the ONNX frontend does).
model at(int opset) {
    model m;
    m.g.metadata.emplace_back("opset", std::to_string(opset));
    return m;
}

std::string finalize_error(model& m) {
    try {
        m.g.finalize();
    } catch (const nnergy::error& e) {
        return e.what();
    }
    FAIL("finalize() accepted an invalid model");
    return {};
}

const op_versions* versions_of(const std::vector<op_versions>& all, std::string_view name) {
    for (const op_versions& v : all)
        if (v.name == name) return &v;
    return nullptr;
}

}  // namespace

TEST_CASE("the version table holds the ONNX since_versions of every known op", "[ops][versions]") {
    const auto all = known_op_versions();
    REQUIRE(all.size() == known_ops().size());
    for (size_t i = 0; i < all.size(); ++i) {
        CHECK(all[i].name == known_ops()[i]);
        REQUIRE_FALSE(all[i].since.empty());
        CHECK(std::is_sorted(all[i].since.begin(), all[i].since.end()));
        CHECK(all[i].since.back() <= newest_supported_opset);
    }
    // From the ONNX changelog (docs/Changelog.md of onnx/onnx).
    const auto since = [&](const char* op) {
        const op_versions* v = versions_of(all, op);
        REQUIRE(v);
        return v->since;
    };
    CHECK(since("ReduceMean") == std::vector<int>{1, 11, 13, 18});
    CHECK(since("ReduceMax") == std::vector<int>{1, 11, 12, 13, 18, 20});
    CHECK(since("ReduceSum") == std::vector<int>{1, 11, 13});
    CHECK(since("Split") == std::vector<int>{1, 2, 11, 13, 18});
    CHECK(since("Pad") == std::vector<int>{1, 2, 11, 13, 18, 19, 21});
    CHECK(since("Resize") == std::vector<int>{10, 11, 13, 18, 19});
    CHECK(since("GroupNormalization") == std::vector<int>{18, 21});
    CHECK(since("AveragePool") == std::vector<int>{1, 7, 10, 11, 19, 22});
    CHECK(since("QuantizeLinear") == std::vector<int>{10, 13, 19, 21});
    CHECK(since("Gelu") == std::vector<int>{20});
    CHECK(since("DeformConv") == std::vector<int>{19, 22});
    CHECK(since("AffineGrid") == std::vector<int>{20});
    CHECK(since("Col2Im") == std::vector<int>{18});
    CHECK(since("Shape") == std::vector<int>{1, 13, 15, 19, 21});
    CHECK(versions_of(all, "Upsample")->removed_in == 10);
    CHECK(versions_of(all, "Add")->removed_in == 0);
}

TEST_CASE("an op the model's opset does not define is an error naming the file and node",
          "[ops][versions][errors]") {
    model gelu = at(17);  // Gelu arrived with opset 20
    gelu.input("x", {2, 3});
    gelu.node("act", "Gelu", {"x"}, {"y"});
    gelu.output("y");
    std::string e = finalize_error(gelu);
    CHECK_THAT(e, Contains("model.json"));
    CHECK_THAT(e, Contains("node 'act' (Gelu)"));
    CHECK_THAT(e, Contains("Gelu was introduced in opset 20; this model imports opset 17"));

    model ok = at(20);
    ok.input("x", {2, 3});
    ok.node("act", "Gelu", {"x"}, {"y"});
    ok.output("y");
    ok.bind();
    CHECK(ok.shape_of("y") == shape{2, 3});
    CHECK(ok.g.opset() == 20);
    CHECK(ok.g.op_versions()[ok.n("act")] == 20);

    model up = at(10);  // Upsample left the default domain in opset 10
    up.input("x", {1, 1, 2, 2});
    up.node("up", "Upsample", {"x"}, {"y"}, {afs("scales", {1, 1, 2, 2})});
    up.output("y");
    e = finalize_error(up);
    CHECK_THAT(e, Contains("node 'up' (Upsample)"));
    CHECK_THAT(e, Contains("Upsample was removed from the default ONNX domain in opset 10"));
    CHECK_THAT(e, Contains("this model imports opset 10"));

    model up8 = at(8);  // Upsample-7, scales as an attribute
    up8.input("x", {1, 1, 2, 2});
    up8.node("up", "Upsample", {"x"}, {"y"}, {afs("scales", {1, 1, 2, 2})});
    up8.output("y");
    up8.bind();
    CHECK(up8.shape_of("y") == shape{1, 1, 4, 4});
    CHECK(up8.g.op_versions()[0] == 7);

    for (const char* op : {"GroupNormalization", "BitwiseNot", "Col2Im", "CenterCropPad"}) {
        model m = at(17);  // all four arrived with opset 18
        m.input("x", {1, 4, 2, 2}, NNERGY_DTYPE_INT32);
        m.node("n", op, {"x"}, {"y"});
        m.output("y");
        e = finalize_error(m);
        CHECK_THAT(e, Contains(std::string(op) + " was introduced in opset 18"));
    }

    // Without a declared opset (a JSON graph) every form is read: both ops load.
    model plain;
    plain.input("x", {1, 1, 2, 2});
    plain.node("act", "Gelu", {"x"}, {"g"});
    plain.node("up", "Upsample", {"g"}, {"y"}, {afs("scales", {1, 1, 2, 2})});
    plain.output("y");
    plain.bind();
    CHECK(plain.g.opset() == 0);
    CHECK(plain.shape_of("y") == shape{1, 1, 4, 4});
}

TEST_CASE("a metadata opset that is not a known opset number is an error",
          "[ops][versions][errors]") {
    for (const char* bad : {"23", "abc", "0", "-3", ""}) {
        model m;
        m.g.metadata.emplace_back("opset", bad);
        m.input("x", {2});
        m.node("r", "Relu", {"x"}, {"y"});
        m.output("y");
        const std::string e = finalize_error(m);
        CHECK_THAT(e, Contains("model.json"));
        CHECK_THAT(e, Contains("opset"));
    }
}

TEST_CASE("reductions: axes attribute before opset 18 (ReduceSum 13), input from it",
          "[ops][versions][reduce]") {
    {
        model m = at(18);
        m.input("x", {2, 3, 4});
        m.ints("axes", {1});
        m.node("mean", "ReduceMean", {"x", "axes"}, {"y"}, {ai("keepdims", 0)});
        m.output("y");
        m.bind();
        CHECK(m.shape_of("y") == shape{2, 4});
        // (n - 1) adds + 1 divide per output: in = 24 FLOPs
        CHECK(m.counts("mean").flops == 24);
    }
    {
        model m = at(17);
        m.input("x", {2, 3, 4});
        m.node("mean", "ReduceMean", {"x"}, {"y"}, {ais("axes", {-1})});
        m.output("y");
        m.bind();
        CHECK(m.shape_of("y") == shape{2, 3, 1});
    }
    {
        model m = at(18);  // the attribute form ended with ReduceMean-13
        m.input("x", {2, 3, 4});
        m.node("mean", "ReduceMean", {"x"}, {"y"}, {ais("axes", {1})});
        m.output("y");
        const std::string e = m.bind_error();
        CHECK_THAT(e, Contains("node 'mean' (ReduceMean)"));
        CHECK_THAT(e, Contains("ReduceMean-18 takes axes as input 1"));
    }
    {
        model m = at(17);
        m.input("x", {2, 3, 4});
        m.ints("axes", {1});
        m.node("l2", "ReduceL2", {"x", "axes"}, {"y"});
        m.output("y");
        const std::string e = m.bind_error();
        CHECK_THAT(e, Contains("node 'l2' (ReduceL2)"));
        CHECK_THAT(e, Contains("ReduceL2-13 takes axes as an attribute"));
        CHECK_THAT(e, Contains("arrived in opset 18"));
    }
    {
        model m = at(13);  // ReduceSum moved first
        m.input("x", {2, 3, 4});
        m.ints("axes", {0, 2});
        m.node("sum", "ReduceSum", {"x", "axes"}, {"y"});
        m.output("y");
        m.bind();
        CHECK(m.shape_of("y") == shape{1, 3, 1});
        CHECK(m.counts("sum").flops == 24 - 3);  // in - out
    }
    {
        model m = at(20);  // empty axes with noop_with_empty_axes: identity
        m.input("x", {2, 3});
        m.node("max", "ReduceMax", {"x"}, {"y"}, {ai("noop_with_empty_axes", 1)});
        m.output("y");
        m.bind();
        CHECK(m.shape_of("y") == shape{2, 3});
    }
    {
        model m = at(17);  // noop_with_empty_axes came with the axes input
        m.input("x", {2, 3});
        m.node("max", "ReduceMax", {"x"}, {"y"}, {ai("noop_with_empty_axes", 1)});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("'noop_with_empty_axes' arrived with ReduceMax-18"));
    }
}

TEST_CASE("Squeeze and Unsqueeze: axes attribute before opset 13, input from it",
          "[ops][versions]") {
    model m = at(13);
    m.input("x", {1, 3, 1});
    m.node("sq", "Squeeze", {"x"}, {"y"}, {ais("axes", {0})});
    m.output("y");
    CHECK_THAT(m.bind_error(), Contains("Squeeze-13 takes axes as input 1"));

    model o = at(11);
    o.input("x", {3});
    o.ints("axes", {0});
    o.node("us", "Unsqueeze", {"x", "axes"}, {"y"});
    o.output("y");
    CHECK_THAT(o.bind_error(), Contains("Unsqueeze-11 takes axes as an attribute"));

    model ok = at(21);
    ok.input("x", {3});
    ok.ints("axes", {0, 2});
    ok.node("us", "Unsqueeze", {"x", "axes"}, {"y"});
    ok.output("y");
    ok.bind();
    CHECK(ok.shape_of("y") == shape{1, 3, 1});
}

TEST_CASE("Split-18: num_outputs with a smaller last chunk; its errors", "[ops][versions][split]") {
    {
        model m = at(18);  // ceil(10 / 3) = 4: 4, 4, 2
        m.input("x", {10, 2});
        m.node("s", "Split", {"x"}, {"a", "b", "c"}, {ai("num_outputs", 3)});
        m.output("a");
        m.output("b");
        m.output("c");
        m.bind();
        CHECK(m.shape_of("a") == shape{4, 2});
        CHECK(m.shape_of("b") == shape{4, 2});
        CHECK(m.shape_of("c") == shape{2, 2});
    }
    {
        model m = at(18);  // even: 12 / 3 = 4 each, on axis -1
        m.input("x", {2, 12});
        m.node("s", "Split", {"x"}, {"a", "b", "c"}, {ai("num_outputs", 3), ai("axis", -1)});
        m.output("c");
        m.bind();
        CHECK(m.shape_of("c") == shape{2, 4});
    }
    {
        model m = at(18);  // num_outputs disagrees with the two outputs the node lists
        m.input("x", {10});
        m.node("s", "Split", {"x"}, {"a", "b"}, {ai("num_outputs", 3)});
        m.output("a");
        const std::string e = m.bind_error();
        CHECK_THAT(e, Contains("node 's' (Split)"));
        CHECK_THAT(e, Contains("num_outputs 3 differs from the 2 outputs"));
    }
    {
        model m = at(18);  // ceil(5 / 4) = 2: 2, 2, 2 and -1
        m.input("x", {5});
        m.node("s", "Split", {"x"}, {"a", "b", "c", "d"}, {ai("num_outputs", 4)});
        m.output("a");
        CHECK_THAT(m.bind_error(), Contains("the last chunk would be -1"));
    }
    {
        model m = at(18);  // Split-18 needs one of the two
        m.input("x", {10});
        m.node("s", "Split", {"x"}, {"a", "b"});
        m.output("a");
        CHECK_THAT(m.bind_error(), Contains("Split-18 needs split sizes (input 1) or num_outputs"));
    }
    {
        model m = at(17);  // num_outputs arrived with Split-18
        m.input("x", {10});
        m.node("s", "Split", {"x"}, {"a", "b"}, {ai("num_outputs", 2)});
        m.output("a");
        CHECK_THAT(m.bind_error(), Contains("'num_outputs' arrived with Split-18"));
    }
    {
        model m = at(13);  // an even split without sizes
        m.input("x", {10});
        m.node("s", "Split", {"x"}, {"a", "b"});
        m.output("a");
        m.bind();
        CHECK(m.shape_of("a") == shape{5});
    }
    {
        model m = at(13);  // uneven without sizes is an error before 18
        m.input("x", {9});
        m.node("s", "Split", {"x"}, {"a", "b"});
        m.output("a");
        CHECK_THAT(m.bind_error(), Contains("does not split evenly"));
    }
}

TEST_CASE("Pad: axes input from 18, wrap mode from 19", "[ops][versions][pad]") {
    {
        model m = at(18);  // pads [begin(2), begin(3), end(2), end(3)] = [1, 0, 2, 3]
        m.input("x", {1, 3, 4, 4});
        m.ints("pads", {1, 0, 2, 3});
        m.ints("axes", {2, -1});
        m.node("p", "Pad", {"x", "pads", "", "axes"}, {"y"});
        m.output("y");
        m.bind();
        CHECK(m.shape_of("y") == shape{1, 3, 7, 7});
    }
    {
        model m = at(13);
        m.input("x", {1, 3, 4, 4});
        m.ints("pads", {1, 1});
        m.ints("axes", {2});
        m.node("p", "Pad", {"x", "pads", "", "axes"}, {"y"});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("input 3 (axes) arrived with Pad-18"));
    }
    {
        model m = at(18);
        m.input("x", {2, 2});
        m.ints("pads", {0, 1, 0, 1});
        m.node("p", "Pad", {"x", "pads"}, {"y"}, {as("mode", "wrap")});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("mode 'wrap' arrived with Pad-19"));
    }
    {
        model m = at(19);
        m.input("x", {2, 2});
        m.ints("pads", {0, 1, 0, 1});
        m.node("p", "Pad", {"x", "pads"}, {"y"}, {as("mode", "wrap")});
        m.output("y");
        m.bind();
        CHECK(m.shape_of("y") == shape{2, 4});
    }
    {
        model m = at(11);  // the pads attribute form ended with Pad-2
        m.input("x", {2, 2});
        m.node("p", "Pad", {"x"}, {"y"}, {ais("pads", {0, 1, 0, 1})});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("Pad-11 takes pads as input 1"));
    }
    {
        model m = at(21);  // axes out of range
        m.input("x", {1, 3, 4, 4});
        m.ints("pads", {1, 1});
        m.ints("axes", {4});
        m.node("p", "Pad", {"x", "pads", "", "axes"}, {"y"});
        m.output("y");
        const std::string e = m.bind_error();
        CHECK_THAT(e, Contains("node 'p' (Pad)"));
        CHECK_THAT(e, Contains("axis 4 is out of range for rank 4 (valid: -4 to 3)"));
    }
}

TEST_CASE("Resize: axes and keep_aspect_ratio_policy from 18, half_pixel_symmetric from 19",
          "[ops][versions][resize]") {
    const auto resize = [](int opset, std::vector<attribute> attrs) {
        model m = at(opset);
        m.input("x", {1, 3, 20, 40});
        m.ints("sizes", {10, 10});
        m.node("rs", "Resize", {"x", "", "", "sizes"}, {"y"}, std::move(attrs));
        m.output("y");
        return m;
    };
    {
        // not_larger: scale = min(10 / 20, 10 / 40) = 0.25: round(20 x 0.25), round(40 x 0.25)
        model m = resize(18, {ais("axes", {2, 3}), as("keep_aspect_ratio_policy", "not_larger")});
        m.bind();
        CHECK(m.shape_of("y") == shape{1, 3, 5, 10});
    }
    {
        model m = resize(17, {ais("axes", {2, 3})});
        const std::string e = m.bind_error();
        CHECK_THAT(e, Contains("node 'rs' (Resize)"));
        CHECK_THAT(e, Contains("'axes' arrived with Resize-18"));
    }
    {
        model m = resize(18, {ais("axes", {2, 3}),
                              as("coordinate_transformation_mode", "half_pixel_symmetric")});
        CHECK_THAT(m.bind_error(), Contains("'half_pixel_symmetric' arrived with Resize-19"));
    }
    {
        // the half_pixel_symmetric mapping moves sample points, not the output size
        model m = resize(19, {ais("axes", {2, 3}), as("mode", "linear"),
                              as("coordinate_transformation_mode", "half_pixel_symmetric")});
        m.bind();
        CHECK(m.shape_of("y") == shape{1, 3, 10, 10});
        // both axes change: (2 x 2^2 - 1) x out = 7 x 300
        CHECK(m.counts("rs").flops == 7 * 300);
    }
    {
        model m = resize(19, {ais("axes", {2, 4})});
        CHECK_THAT(m.bind_error(), Contains("axis 4 is out of range for rank 4"));
    }
    {
        model m = at(13);  // Resize-13 reads input 1 as roi: no scales, no sizes
        m.input("x", {1, 3, 4, 4});
        m.weight("roi", {0});
        m.node("rs", "Resize", {"x", "roi"}, {"y"});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("needs scales (input 2) or sizes (input 3)"));
    }
}

TEST_CASE("GroupNormalization-18 takes scale per group, -21 per channel", "[ops][versions][norm]") {
    const auto gn = [](int opset, int64_t param) {
        model m = at(opset);
        m.input("x", {2, 6, 4, 4});
        m.weight("s", {param});
        m.weight("b", {param});
        m.node("gn", "GroupNormalization", {"x", "s", "b"}, {"y"}, {ai("num_groups", 3)});
        m.output("y");
        return m;
    };
    model a = gn(18, 3);
    a.bind();
    CHECK(a.shape_of("y") == shape{2, 6, 4, 4});
    CHECK(a.counts("gn").flops == 7 * 192);  // 7 x out
    CHECK(a.counts("gn").params == 6);

    model b = gn(21, 6);
    b.bind();
    CHECK(b.counts("gn").params == 12);

    model c = gn(20, 6);
    std::string e = c.bind_error();
    CHECK_THAT(e, Contains("node 'gn' (GroupNormalization)"));
    CHECK_THAT(e, Contains("must have shape [3] (GroupNormalization-18: one per group)"));

    model d = gn(21, 3);
    e = d.bind_error();
    CHECK_THAT(e, Contains("must have shape [6] (GroupNormalization-21: one per channel)"));
}

TEST_CASE("QuantizeLinear and DequantizeLinear: per tensor, per axis, blocked (21)",
          "[ops][versions][quant]") {
    {
        // blocks of 32 on axis 1: scale [4, ceil(64 / 32)] = [4, 2]
        model m = at(21);
        m.input("x", {4, 64});
        m.weight("s", {4, 2});
        m.weight("z", {4, 2}, NNERGY_DTYPE_INT4);
        m.node("q", "QuantizeLinear", {"x", "s", "z"}, {"y"},
               {ai("axis", 1), ai("block_size", 32)});
        m.node("dq", "DequantizeLinear", {"y", "s", "z"}, {"r"},
               {ai("axis", 1), ai("block_size", 32)});
        m.output("r");
        m.bind();
        CHECK(m.shape_of("y") == shape{4, 64});
        CHECK(m.dtype_of("y") == NNERGY_DTYPE_INT4);
        CHECK(m.dtype_of("r") == NNERGY_DTYPE_FLOAT32);
        CHECK(m.counts("q").flops == 5 * 256);
        CHECK(m.counts("dq").flops == 2 * 256);
    }
    {
        model m = at(21);  // ceil(60 / 32) = 2 blocks, not 3
        m.input("x", {4, 60});
        m.weight("s", {4, 3});
        m.node("q", "QuantizeLinear", {"x", "s"}, {"y"}, {ai("axis", 1), ai("block_size", 32)});
        m.output("y");
        const std::string e = m.bind_error();
        CHECK_THAT(e, Contains("node 'q' (QuantizeLinear)"));
        CHECK_THAT(e, Contains("must have shape [4, 2]"));
    }
    {
        model m = at(19);  // block_size arrived with QuantizeLinear-21
        m.input("x", {4, 64});
        m.weight("s", {4, 2});
        m.node("q", "QuantizeLinear", {"x", "s"}, {"y"}, {ai("axis", 1), ai("block_size", 32)});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("'block_size' arrived with QuantizeLinear-21"));
    }
    {
        model m = at(13);  // per axis: scale of length x[axis] = x[0] = 8
        m.input("x", {8, 3});
        m.weight("s", {8});
        m.weight("z", {8}, NNERGY_DTYPE_INT8);
        m.node("q", "QuantizeLinear", {"x", "s", "z"}, {"y"}, {ai("axis", 0)});
        m.output("y");
        m.bind();
        CHECK(m.dtype_of("y") == NNERGY_DTYPE_INT8);
    }
    {
        model m = at(13);
        m.input("x", {8, 3});
        m.weight("s", {3});
        m.node("q", "QuantizeLinear", {"x", "s"}, {"y"}, {ai("axis", 0)});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("must be a scalar or 1-D of length 8"));
    }
    {
        model m = at(13);  // zero point and scale share one shape
        m.input("x", {8, 3});
        m.weight("s", {8});
        m.weight("z", {1}, NNERGY_DTYPE_UINT8);
        m.node("q", "QuantizeLinear", {"x", "s", "z"}, {"y"}, {ai("axis", 0)});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("must have the shape of scale"));
    }
    {
        model m = at(10);  // QuantizeLinear-10 is per tensor only
        m.input("x", {8, 3});
        m.weight("s", {8});
        m.node("q", "QuantizeLinear", {"x", "s"}, {"y"});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("QuantizeLinear-10 takes a scalar scale only"));
    }
    {
        model m = at(21);  // output_dtype without a zero point
        m.input("x", {8, 3});
        m.weight("s", {});
        m.node("q", "QuantizeLinear", {"x", "s"}, {"y"}, {ai("output_dtype", 3)});  // INT8
        m.output("y");
        m.bind();
        CHECK(m.dtype_of("y") == NNERGY_DTYPE_INT8);
    }
}

TEST_CASE("pools: AveragePool-19 dilations, LpPool-18 ceil_mode", "[ops][versions][pool]") {
    {
        // extent (3 - 1) x 2 + 1 = 5 on 7: (7 - 5) / 1 + 1 = 3
        model m = at(19);
        m.input("x", {1, 2, 7, 7});
        m.node("ap", "AveragePool", {"x"}, {"y"},
               {ais("kernel_shape", {3, 3}), ais("dilations", {2, 2})});
        m.output("y");
        m.bind();
        CHECK(m.shape_of("y") == shape{1, 2, 3, 3});
        // prod(kernel) x out: 9 x 18 (dilation spreads the window, not its size)
        CHECK(m.counts("ap").flops == 9 * 18);
    }
    {
        model m = at(18);
        m.input("x", {1, 2, 7, 7});
        m.node("ap", "AveragePool", {"x"}, {"y"},
               {ais("kernel_shape", {3, 3}), ais("dilations", {2, 2})});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("'dilations' arrived with AveragePool-19"));
    }
    {
        // ceil((5 - 2) / 2) + 1 = 3; the last window starts at 4 < 5, so it stays
        model m = at(18);
        m.input("x", {1, 1, 5, 5});
        m.node("lp", "LpPool", {"x"}, {"y"},
               {ais("kernel_shape", {2, 2}), ais("strides", {2, 2}), ai("ceil_mode", 1)});
        m.output("y");
        m.bind();
        CHECK(m.shape_of("y") == shape{1, 1, 3, 3});
    }
    {
        model m = at(17);
        m.input("x", {1, 1, 5, 5});
        m.node("lp", "LpPool", {"x"}, {"y"}, {ais("kernel_shape", {2, 2}), ai("ceil_mode", 1)});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("'ceil_mode' arrived with LpPool-18"));
    }
}

TEST_CASE("Shape-15 start/end, Gelu-20 approximate, Scatter reductions by version",
          "[ops][versions]") {
    {
        model m = at(15);  // dims 1 .. rank - 1 of [2, 3, 4, 5]
        m.input("x", {2, 3, 4, 5});
        m.node("sh", "Shape", {"x"}, {"s"}, {ai("start", 1), ai("end", -1)});
        m.output("s");
        m.bind();
        CHECK(m.shape_of("s") == shape{2});
        CHECK(m.values_of("s") == std::vector<int64_t>{3, 4});
    }
    {
        model m = at(14);
        m.input("x", {2, 3, 4, 5});
        m.node("sh", "Shape", {"x"}, {"s"}, {ai("start", 1)});
        m.output("s");
        CHECK_THAT(m.bind_error(), Contains("'start' arrived with Shape-15"));
    }
    {
        model m = at(20);
        m.input("x", {4});
        m.node("g", "Gelu", {"x"}, {"y"}, {as("approximate", "fast")});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("approximate 'fast' is not one of none, tanh"));
    }
    {
        model m = at(20);  // tanh form: 9 per element
        m.input("x", {4});
        m.node("g", "Gelu", {"x"}, {"y"}, {as("approximate", "tanh")});
        m.output("y");
        m.bind();
        CHECK(m.counts("g").flops == 36);
    }
    const auto scatter = [](int opset, const char* reduction) {
        model m = at(opset);
        m.input("x", {4, 5});
        m.input("i", {2, 5}, NNERGY_DTYPE_INT64);
        m.input("u", {2, 5});
        m.node("sc", "ScatterElements", {"x", "i", "u"}, {"y"}, {as("reduction", reduction)});
        m.output("y");
        return m;
    };
    model a = scatter(18, "max");
    a.bind();
    CHECK(a.counts("sc").flops == 10);  // one max per update element
    model b = scatter(16, "max");
    CHECK_THAT(b.bind_error(), Contains("reduction 'max' arrived with ScatterElements-18"));
    model c = scatter(13, "add");
    CHECK_THAT(c.bind_error(), Contains("'reduction' arrived with ScatterElements-16"));
}

TEST_CASE("Clip-11, Upsample-9 and Cast-19 forms", "[ops][versions]") {
    {
        model m = at(13);  // min and max are inputs from Clip-11
        m.input("x", {4});
        m.node("c", "Clip", {"x"}, {"y"}, {af("min", 0.0)});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("Clip-13 takes min as input 1"));
    }
    {
        model m = at(9);  // Upsample-9 reads its scales from input 1
        m.input("x", {1, 1, 2, 2});
        m.node("up", "Upsample", {"x"}, {"y"}, {afs("scales", {1, 1, 2, 2})});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("Upsample-9 takes scales as input 1"));
    }
    {
        model m = at(17);
        m.input("x", {4});
        m.node("c", "Cast", {"x"}, {"y"}, {ai("to", 17), ai("saturate", 0)});  // FLOAT8E4M3FN
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("'saturate' arrived with Cast-19"));
    }
    {
        model m = at(19);
        m.input("x", {4});
        m.node("c", "Cast", {"x"}, {"y"}, {ai("to", 17), ai("saturate", 0)});
        m.output("y");
        m.bind();
        CHECK(m.dtype_of("y") == NNERGY_DTYPE_FLOAT8_E4M3);
        CHECK(m.counts("c").output_bytes == 4);  // one byte per float8 element
    }
}

TEST_CASE("axes out of range and repeated axes name the node, the axis and the valid range",
          "[ops][versions][errors]") {
    const auto err = [](auto build) {
        model m = at(21);
        build(m);
        return m.bind_error();
    };
    std::string e = err([](model& m) {
        m.input("x", {2, 3, 4});
        m.ints("axes", {5});
        m.node("r", "ReduceSum", {"x", "axes"}, {"y"});
        m.output("y");
    });
    CHECK_THAT(e, Contains("node 'r' (ReduceSum)"));
    CHECK_THAT(e, Contains("axis 5 is out of range for rank 3 (valid: -3 to 2)"));

    e = err([](model& m) {
        m.input("x", {2, 3});
        m.ints("axes", {1, -3});  // -3 is axis 1 of the rank-4 output
        m.node("u", "Unsqueeze", {"x", "axes"}, {"y"});
        m.output("y");
    });
    CHECK_THAT(e, Contains("node 'u' (Unsqueeze)"));
    CHECK_THAT(e, Contains("is repeated"));

    e = err([](model& m) {
        m.input("x", {2, 3});
        m.node("c", "Concat", {"x", "x"}, {"y"}, {ai("axis", -3)});
        m.output("y");
    });
    CHECK_THAT(e, Contains("node 'c' (Concat)"));
    CHECK_THAT(e, Contains("axis -3 is out of range for rank 2 (valid: -2 to 1)"));

    e = err([](model& m) {
        m.input("x", {2, 3});
        m.ints("i", {0});
        m.node("g", "Gather", {"x", "i"}, {"y"}, {ai("axis", 2)});
        m.output("y");
    });
    CHECK_THAT(e, Contains("axis 2 is out of range for rank 2"));

    e = err([](model& m) {
        m.input("x", {4, 6});
        m.node("s", "Split", {"x"}, {"a", "b"}, {ai("axis", 2), ai("num_outputs", 2)});
        m.output("a");
    });
    CHECK_THAT(e, Contains("node 's' (Split)"));
    CHECK_THAT(e, Contains("axis 2 is out of range for rank 2"));

    e = err([](model& m) {
        m.input("x", {2, 3, 4});
        m.ints("axes", {3});
        m.node("sq", "Squeeze", {"x", "axes"}, {"y"});
        m.output("y");
    });
    CHECK_THAT(e, Contains("node 'sq' (Squeeze)"));
    CHECK_THAT(e, Contains("axis 3 is out of range for rank 3 (valid: -3 to 2)"));

    e = err([](model& m) {
        m.input("x", {2, 3, 4});
        m.ints("shape", {2, 2});
        m.node("cc", "CenterCropPad", {"x", "shape"}, {"y"}, {ais("axes", {1, -2})});
        m.output("y");
    });
    CHECK_THAT(e, Contains("axis 1 is repeated"));

    e = err([](model& m) {
        m.input("x", {2, 3});
        m.node("f", "Flatten", {"x"}, {"y"}, {ai("axis", 3)});
        m.output("y");
    });
    CHECK_THAT(e, Contains("node 'f' (Flatten)"));
    CHECK_THAT(e, Contains("axis 3 is out of range for rank 2 (valid: -2 to 2)"));

    e = err([](model& m) {
        m.input("x", {2, 3});
        m.node("sm", "Softmax", {"x"}, {"y"}, {ai("axis", -3)});
        m.output("y");
    });
    CHECK_THAT(e, Contains("node 'sm' (Softmax)"));
    CHECK_THAT(e, Contains("axis -3 is out of range for rank 2"));
}

TEST_CASE("Col2Im-18: image from column blocks", "[ops][versions][new]") {
    // C = 2, block 2x2, image 3x3, stride 1: (3 - 2 + 1)^2 = 4 blocks; input [1, 2 x 4, 4]
    model m = at(18);
    m.input("cols", {1, 8, 4});
    m.ints("image", {3, 3});
    m.ints("block", {2, 2});
    m.node("fold", "Col2Im", {"cols", "image", "block"}, {"img"});
    m.output("img");
    m.bind();
    CHECK(m.shape_of("img") == shape{1, 2, 3, 3});
    CHECK(m.counts("fold").flops == 32);            // one add per column element
    CHECK(m.counts("fold").input_bytes == 32 * 4);  // image and block shapes are control

    // strides 2, pads 1: (5 + 2 - 3) / 2 + 1 = 3 per axis: 9 blocks of 3x3 for C = 1
    model s = at(18);
    s.input("cols", {2, 9, 9});
    s.ints("image", {5, 5});
    s.ints("block", {3, 3});
    s.node("fold", "Col2Im", {"cols", "image", "block"}, {"img"},
           {ais("strides", {2, 2}), ais("pads", {1, 1, 1, 1})});
    s.output("img");
    s.bind();
    CHECK(s.shape_of("img") == shape{2, 1, 5, 5});

    model bad = at(18);
    bad.input("cols", {1, 8, 5});
    bad.ints("image", {3, 3});
    bad.ints("block", {2, 2});
    bad.node("fold", "Col2Im", {"cols", "image", "block"}, {"img"});
    bad.output("img");
    const std::string e = bad.bind_error();
    CHECK_THAT(e, Contains("node 'fold' (Col2Im)"));
    CHECK_THAT(e, Contains("must be the number of blocks, 4"));
}

TEST_CASE("CenterCropPad-18: the named axes take the target sizes", "[ops][versions][new]") {
    model m = at(18);
    m.input("x", {2, 10, 7});
    m.ints("shape", {5, 9});
    m.node("cc", "CenterCropPad", {"x", "shape"}, {"y"}, {ais("axes", {1, -1})});
    m.output("y");
    m.bind();
    CHECK(m.shape_of("y") == shape{2, 5, 9});
    CHECK(m.counts("cc").flops == 0);

    model all = at(18);
    all.input("x", {4, 4});
    all.ints("shape", {2, 6});
    all.node("cc", "CenterCropPad", {"x", "shape"}, {"y"});
    all.output("y");
    all.bind();
    CHECK(all.shape_of("y") == shape{2, 6});
}

TEST_CASE("DeformConv-19: Conv's shape; MACs as Conv plus bilinear sampling",
          "[ops][versions][new]") {
    // x [1, 4, 5, 5], w [6, 4, 3, 3], no padding: out [1, 6, 3, 3] (54 elements)
    model m = at(19);
    m.input("x", {1, 4, 5, 5});
    m.weight("w", {6, 4, 3, 3});
    m.input("off", {1, 18, 3, 3});  // offset_group 1 x 9 points x 2 coordinates
    m.node("dc", "DeformConv", {"x", "w", "off"}, {"y"});
    m.output("y");
    m.bind();
    CHECK(m.shape_of("y") == shape{1, 6, 3, 3});
    // MACs = out x C_in x prod(kernel) = 54 x 4 x 9 = 1944.
    // Samples = positions (9) x C_in (4) x kernel points (9) = 324, each 4 multiplies and
    // 3 adds: 2268. FLOPs = 2 x 1944 + 2268 = 6156.
    CHECK(m.counts("dc").macs == 1944);
    CHECK(m.counts("dc").flops == 6156);

    model b = at(22);  // bias (+ out) and mask (+ one multiply per sample)
    b.input("x", {1, 4, 5, 5});
    b.weight("w", {6, 4, 3, 3});
    b.input("off", {1, 18, 3, 3});
    b.weight("bias", {6});
    b.input("mask", {1, 9, 3, 3});
    b.node("dc", "DeformConv", {"x", "w", "off", "bias", "mask"}, {"y"});
    b.output("y");
    b.bind();
    CHECK(b.counts("dc").flops == 6156 + 54 + 324);
    CHECK(b.counts("dc").params == 6 * 4 * 9 + 6);

    model bad = at(19);
    bad.input("x", {1, 4, 5, 5});
    bad.weight("w", {6, 4, 3, 3});
    bad.input("off", {1, 9, 3, 3});
    bad.node("dc", "DeformConv", {"x", "w", "off"}, {"y"});
    bad.output("y");
    const std::string e = bad.bind_error();
    CHECK_THAT(e, Contains("node 'dc' (DeformConv)"));
    CHECK_THAT(e, Contains("must have shape [1, 18, 3, 3]"));

    model old = at(18);
    old.input("x", {1, 4, 5, 5});
    old.weight("w", {6, 4, 3, 3});
    old.input("off", {1, 18, 3, 3});
    old.node("dc", "DeformConv", {"x", "w", "off"}, {"y"});
    old.output("y");
    CHECK_THAT(finalize_error(old), Contains("DeformConv was introduced in opset 19"));
}

TEST_CASE("AffineGrid-20 and GridSample-16/20", "[ops][versions][new]") {
    {
        model m = at(20);  // theta [2, 2, 3], size (2, 3, 4, 5): grid [2, 4, 5, 2]
        m.input("theta", {2, 2, 3});
        m.ints("size", {2, 3, 4, 5});
        m.node("ag", "AffineGrid", {"theta", "size"}, {"grid"}, {ai("align_corners", 1)});
        m.output("grid");
        m.bind();
        CHECK(m.shape_of("grid") == shape{2, 4, 5, 2});
        CHECK(m.counts("ag").macs == 80 * 3);  // out x (r + 1)
        CHECK(m.counts("ag").flops == 480);
    }
    {
        model m = at(20);  // 3-D: theta [1, 3, 4], size (1, 1, 2, 3, 4): grid [1, 2, 3, 4, 3]
        m.input("theta", {1, 3, 4});
        m.ints("size", {1, 1, 2, 3, 4});
        m.node("ag", "AffineGrid", {"theta", "size"}, {"grid"});
        m.output("grid");
        m.bind();
        CHECK(m.shape_of("grid") == shape{1, 2, 3, 4, 3});
    }
    {
        model m = at(20);
        m.input("theta", {2, 3, 4});
        m.ints("size", {2, 3, 4, 5});
        m.node("ag", "AffineGrid", {"theta", "size"}, {"grid"});
        m.output("grid");
        CHECK_THAT(m.bind_error(), Contains("must have shape [2, 2, 3]"));
    }
    const auto gs = [](int opset, std::vector<D> x, std::vector<D> grid, const char* mode) {
        model m = at(opset);
        m.input("x", std::move(x));
        m.input("grid", std::move(grid));
        std::vector<attribute> attrs;
        if (mode) attrs.push_back(as("mode", mode));
        m.node("gs", "GridSample", {"x", "grid"}, {"y"}, std::move(attrs));
        m.output("y");
        return m;
    };
    {
        model m = gs(20, {1, 3, 8, 8}, {1, 4, 5, 2}, nullptr);  // linear by default
        m.bind();
        CHECK(m.shape_of("y") == shape{1, 3, 4, 5});
        CHECK(m.counts("gs").flops == 60 * 7);  // 4 neighbours: 2 x 4 - 1
    }
    {
        model m = gs(20, {1, 3, 8, 8}, {1, 4, 5, 2}, "cubic");
        m.bind();
        CHECK(m.counts("gs").flops == 60 * 31);  // 16 neighbours: 2 x 16 - 1
    }
    {
        model m = gs(16, {1, 3, 8, 8}, {1, 4, 5, 2}, "bicubic");
        m.bind();
        CHECK(m.counts("gs").flops == 60 * 31);
    }
    {
        model m = gs(16, {1, 3, 8, 8}, {1, 4, 5, 2}, "nearest");
        m.bind();
        CHECK(m.counts("gs").flops == 0);
    }
    {
        model m = gs(20, {1, 2, 4, 4, 4}, {1, 2, 2, 2, 3}, nullptr);  // 3-D: 8 neighbours
        m.bind();
        CHECK(m.shape_of("y") == shape{1, 2, 2, 2, 2});
        CHECK(m.counts("gs").flops == 16 * 15);
    }
    {
        model m = gs(16, {1, 2, 4, 4, 4}, {1, 2, 2, 2, 3}, nullptr);
        CHECK_THAT(m.bind_error(), Contains("GridSample-16 samples 4-D inputs only"));
    }
    {
        model m = gs(16, {1, 3, 8, 8}, {1, 4, 5, 2}, "linear");  // -16 calls it bilinear
        CHECK_THAT(m.bind_error(), Contains("mode 'linear' is not one of bilinear"));
    }
    {
        model m = gs(20, {1, 3, 8, 8}, {1, 4, 5, 3}, nullptr);
        CHECK_THAT(m.bind_error(), Contains("node 'gs' (GridSample)"));
    }
}

TEST_CASE("DFT-17 and DFT-20: shapes and fast-transform counts", "[ops][versions][new]") {
    const auto dft = [](int opset, std::vector<D> x, std::vector<std::string> ins,
                        std::vector<attribute> attrs) {
        model m = at(opset);
        m.input("x", std::move(x));
        ins.insert(ins.begin(), "x");
        m.node("f", "DFT", ins, {"y"}, std::move(attrs));
        m.output("y");
        return m;
    };
    {
        // real [2, 16, 1] on axis -2, one-sided: floor(16 / 2) + 1 = 9 complex bins;
        // 2 lines x 2.5 x 16 x log2(16) = 320
        model m = dft(20, {2, 16, 1}, {}, {ai("onesided", 1)});
        m.bind();
        CHECK(m.shape_of("y") == shape{2, 9, 2});
        CHECK(m.counts("f").flops == 320);
    }
    {
        // complex [3, 10, 2] truncated to dft_length 8: 3 x 5 x 8 x 3 = 360
        model m = at(20);
        m.input("x", {3, 10, 2});
        m.ints("len", {8}, true);
        m.node("f", "DFT", {"x", "len"}, {"y"});
        m.output("y");
        m.bind();
        CHECK(m.shape_of("y") == shape{3, 8, 2});
        CHECK(m.counts("f").flops == 360);
    }
    {
        // inverse of a one-sided spectrum [1, 9, 2]: a real signal of 2 x (9 - 1) = 16
        model m = dft(20, {1, 9, 2}, {}, {ai("onesided", 1), ai("inverse", 1)});
        m.bind();
        CHECK(m.shape_of("y") == shape{1, 16, 1});
        CHECK(m.counts("f").flops == 160);  // 2.5 x 16 x 4
    }
    {
        // DFT-17 defaults to axis 1: [4, 8, 2]: 4 lines x 5 x 8 x 3 = 480
        model m = dft(17, {4, 8, 2}, {}, {});
        m.bind();
        CHECK(m.shape_of("y") == shape{4, 8, 2});
        CHECK(m.counts("f").flops == 480);
    }
    {
        model m = at(17);
        m.input("x", {4, 8, 2});
        m.ints("axis", {0}, true);
        m.node("f", "DFT", {"x", "", "axis"}, {"y"});
        m.output("y");
        CHECK_THAT(m.bind_error(), Contains("DFT-17 takes axis as an attribute"));
    }
    {
        model m = dft(20, {4, 8, 2}, {}, {ai("axis", 0)});
        CHECK_THAT(m.bind_error(), Contains("DFT-20 takes axis as input 2"));
    }
    {
        model m = at(20);
        m.input("x", {4, 8, 2});
        m.ints("axis", {-1}, true);
        m.node("f", "DFT", {"x", "", "axis"}, {"y"});
        m.output("y");
        const std::string e = m.bind_error();
        CHECK_THAT(e, Contains("node 'f' (DFT)"));
        CHECK_THAT(e, Contains("axis -1 is out of range for rank 3 (valid: -3 to -2 and 0 to 1"));
    }
    {
        model m = dft(16, {4, 8, 2}, {}, {});
        CHECK_THAT(finalize_error(m), Contains("DFT was introduced in opset 17"));
    }
}

TEST_CASE("docs/onnx.md lists every known op with the versions the code covers",
          "[ops][versions][docs]") {
    std::ifstream in(std::string(NNERGY_TEST_SOURCE_DIR) + "/docs/onnx.md");
    REQUIRE(in);
    std::string line;
    bool in_section = false;
    std::map<std::string, std::string> documented;
    while (std::getline(in, line)) {
        if (line.rfind("## ", 0) == 0) in_section = line == "## Operators and versions";
        if (!in_section || line.rfind("| ", 0) != 0) continue;
        // "| ReduceMean | 1, 11, 13, 18 | ... |"
        std::vector<std::string> cells;
        std::stringstream ss(line.substr(1));
        std::string cell;
        while (std::getline(ss, cell, '|')) {
            const size_t a = cell.find_first_not_of(' ');
            const size_t b = cell.find_last_not_of(' ');
            cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
        }
        // Only the rows of the per-operator table name one op in backquotes.
        if (cells.size() < 2 || cells[0].size() < 3 || cells[0].front() != '`') continue;
        const std::string name = cells[0].substr(1, cells[0].size() - 2);
        CHECK(documented.count(name) == 0);
        documented[name] = cells[1];
    }
    const auto all = known_op_versions();
    CHECK(documented.size() == all.size());
    for (const op_versions& v : all) {
        std::string want;
        for (int s : v.since) want += (want.empty() ? "" : ", ") + std::to_string(s);
        if (v.removed_in) want += "; removed in " + std::to_string(v.removed_in);
        INFO(v.name);
        REQUIRE(documented.count(v.name) == 1);
        CHECK(documented[v.name] == want);
    }
}
