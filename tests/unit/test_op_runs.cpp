// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/measurements.hpp>
#include <nnergy/framework/op_runs.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <set>

namespace {
const std::string measurements_dir =
    std::string(NNERGY_TEST_SOURCE_DIR) + "/tests/data/measurements/";
const std::string measurements = measurements_dir + "cpu-build-vm-2core.json";
}  // namespace

// The harness writes the FLOPs of each op run as docs/counting.md counts them; the one-op graph
// of the run, counted by nnergy, must give the same figure: the graph is the op that was timed.
// Every committed pass: the build VM's CPU, the H100 and its host's Xeon; and the ops profiled
// inside models on the H100, whose FLOPs the converter counts from the profiled shapes.
TEST_CASE("op-run graphs count the FLOPs the harness measured", "[op_runs]") {
    const std::string file =
        GENERATE(as<std::string>{}, "cpu-build-vm-2core.json", "cpu-h100-host-xeon-16vcpu.json",
                 "gpu-h100-sxm5.json", "h100-op-profiles.json");
    INFO(file);
    const nnergy::measurement_file f = nnergy::read_measurements(measurements_dir + file);
    std::map<std::string, std::pair<size_t, size_t>> per_class;  // checked, agreeing
    std::set<std::string> disagreements;
    for (const nnergy::measured_run& r : f.runs) {
        if (r.kind != "op" || !r.batch) continue;
        const nnergy::graph g = nnergy::op_run_graph(r.name, r.op_class, r.params_json, *r.batch);
        const nnergy::bound_graph b = nnergy::bind(g, {});
        double flops = 0;
        for (const nnergy::op_counts& c : b.counts) flops += c.flops;
        CHECK(b.unknown_nodes.empty());
        auto& [checked, agreeing] = per_class[r.op_class];
        ++checked;
        // The JSON's flops field: read back from the file through the label's run.
        const double expected = r.flops.value_or(-1);
        if (expected < 0) continue;
        const bool agree = expected == 0 ? flops == 0 : std::fabs(flops / expected - 1) < 0.01;
        if (agree)
            ++agreeing;
        else
            disagreements.insert(r.op_class + " " + nnergy::op_run_label(r.name, r.params_json) +
                                 ": nnergy " + std::to_string(flops) + ", harness " +
                                 std::to_string(expected));
    }
    size_t checked_runs = 0;
    for (const auto& [op_class, counts] : per_class) checked_runs += counts.first;
    for (const std::string& d : disagreements) UNSCOPED_INFO(d);
    CHECK(disagreements.empty());
    // A harness pass covers every class; the profiles, the classes of five models.
    const bool profiles = file == "h100-op-profiles.json";
    CHECK(per_class.size() >= (profiles ? 7u : 10u));
    CHECK(checked_runs >= (profiles ? 200u : 400u));
}

TEST_CASE("op-run graphs: bad parameters name the run and the key", "[op_runs]") {
    const auto error_of = [](const std::string& name, const std::string& cls,
                             const std::string& params) -> std::string {
        try {
            nnergy::op_run_graph(name, cls, params, 1);
        } catch (const nnergy::error& e) {
            return e.what();
        }
        return "(no error)";
    };
    CHECK_THAT(error_of("conv2d", "conv", R"({"cin": 3, "cout": 8, "hw": 32})"),
               Catch::Contains("op run 'conv2d' (class conv): params has no 'k'"));
    CHECK_THAT(error_of("conv2d", "conv", R"({"cin": 3, "cout": 8, "hw": 32, "k": "3"})"),
               Catch::Contains("params 'k' must be an integer >= 1, got \"3\""));
    CHECK_THAT(error_of("conv2d", "grouped_conv",
                        R"({"cin": 6, "cout": 8, "hw": 8, "k": 3, "groups": 4})"),
               Catch::Contains("groups 4 does not divide cin 6 and cout 8"));
    CHECK_THAT(error_of("warp", "elementwise", R"({"ops": ["warp"], "numel": 8})"),
               Catch::Contains("unknown elementwise op 'warp'"));
    CHECK_THAT(
        error_of("fft", "spectral", R"({"n": 8})"),
        Catch::Contains("op run 'fft' (class spectral): no graph for this op (known: conv2d"));
}

TEST_CASE("op-run labels: name, shape and the layer it came from", "[op_runs]") {
    CHECK(nnergy::op_run_label("conv2d", R"({"cin": 3, "cout": 64, "hw": 224, "k": 7, "stride": 2,
          "groups": 1, "source": "resnet stem", "out_hw": 112})") ==
          "conv2d(cin=3,cout=64,groups=1,hw=224,k=7,stride=2) [resnet stem]");
    CHECK(nnergy::op_run_label("linear", R"({"k": 8, "n": 8, "seq": 1, "m": 1})") ==
          "linear(k=8,n=8,seq=1)");
    CHECK(nnergy::op_run_label("matmul", R"({"m": 4, "n": 8, "k": 2})") == "matmul(k=2,m=4,n=8)");
    CHECK(nnergy::op_run_label("add+relu", R"({"ops": ["add", "relu"], "numel": 4})") ==
          "add+relu(numel=4,ops=add+relu)");
}

// An attention called op by op writes every intermediate (the harness's impl "math"): each is a
// graph output, so no fusion rule can keep it on chip; impl "sdpa" is one call with one result.
TEST_CASE("op-run graphs: attention by op keeps its intermediates, sdpa does not", "[op_runs]") {
    const auto outputs = [](const char* params) {
        return nnergy::op_run_graph("attention", "attention", params, 1).outputs.size();
    };
    CHECK(outputs(R"({"seq": 8, "heads": 2, "head_dim": 4, "impl": "sdpa"})") == 1);
    // product, scale and softmax, then the output
    CHECK(outputs(R"({"seq": 8, "heads": 2, "head_dim": 4, "impl": "math"})") == 4);
    // ... and the mask's add when causal
    CHECK(outputs(R"({"seq": 8, "heads": 2, "head_dim": 4, "impl": "math", "causal": true})") == 5);
}
