// SPDX-License-Identifier: Apache-2.0
// Measurement files read for `nnergy validate`, repeated runs merged or refused, the summary.
#include <catch2/catch.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/validate.hpp>
#include <string>

using Catch::Matchers::Contains;
using nnergy::collect_measured;
using nnergy::measurement_file;
using nnergy::parse_measurements;

namespace {

std::string file_with(const std::string& runs) {
    return R"({"schema": "nnergy.measurements/1", "machine": {"name": "m"}, "runs": [)" + runs +
           "]}";
}

std::string model_run(const std::string& name, const std::string& precision, int batch,
                      const std::string& mode, double ms, const std::string& extra = "") {
    return R"({"kind": "model", "name": ")" + name + R"(", "precision": ")" + precision +
           R"(", "batch": )" + std::to_string(batch) +
           (mode.empty() ? "" : R"(, "mode": ")" + mode + "\"") + R"(, "latency_ms_median": )" +
           std::to_string(ms) + extra + "}";
}

std::string message_of(const std::string& text) {
    try {
        parse_measurements(text, "m.json");
    } catch (const nnergy::error& e) {
        CHECK(e.code() == nnergy::exit_code::invalid_input);
        return e.what();
    }
    return "no error";
}

std::string collect_message(const std::string& text, double tolerance = 0.05) {
    try {
        collect_measured({parse_measurements(text, "m.json")}, {tolerance, {}});
    } catch (const nnergy::error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("measurement files: the runs and their keys", "[validate]") {
    const measurement_file f = parse_measurements(
        file_with(model_run("resnet50", "fp16", 8, "eager", 2.5,
                            R"(, "device": "cuda:0", "energy": {"gpu0": {"meter": "nvml",
                            "energy_j": 1.5}, "package-0": {"meter": "rapl", "energy_j": 0.5}})") +
                  R"(, {"kind": "op", "name": "matmul", "op_class": "gemm", "params": {}})"),
        "m.json");
    REQUIRE(f.machine == "m");
    REQUIRE(f.runs.size() == 2);
    CHECK(f.runs[0].name == "resnet50");
    CHECK(*f.runs[0].batch == 8);
    CHECK(*f.runs[0].latency_ms_median == 2.5);
    CHECK(f.runs[0].device == "cuda:0");
    CHECK(f.runs[0].energy_j.size() == 2);
    CHECK(f.runs[1].index == 1);
    CHECK(f.runs[1].kind == "op");
}

TEST_CASE("measurement files: malformed files name the file, run and key", "[validate]") {
    CHECK_THAT(message_of("{\"schema\": "),
               Contains("m.json: not a JSON document: parse error at line 1, column 12"));
    CHECK_THAT(message_of(R"({"schema": "nnergy.report/1", "machine": {"name": "m"}, "runs": []})"),
               Contains("m.json: 'schema' is \"nnergy.report/1\", expected"));
    CHECK_THAT(message_of(R"({"schema": "nnergy.measurements/1", "runs": []})"),
               Contains("m.json: 'machine' must be an object"));
    CHECK_THAT(message_of(file_with(R"({"kind": "model"})")),
               Contains("m.json: run 0: missing 'name'"));
    CHECK_THAT(message_of(file_with(model_run("a", "fp32", 1, "", 1) + "," +
                                    R"({"kind": "model", "name": "b", "batch": "8"})")),
               Contains("m.json: run 1: 'batch' must be an integer >= 1, got \"8\""));
    CHECK_THAT(message_of(file_with(R"({"kind": "model", "name": "b", "batch": 0})")),
               Contains("run 0: 'batch' must be an integer >= 1, got 0"));
    CHECK_THAT(message_of(file_with(R"({"kind": "model", "name": "b", "precision": "fp13"})")),
               Contains("run 0: 'precision' must be one of \"fp32\""));
    CHECK_THAT(message_of(file_with(R"({"kind": "model", "name": "b", "latency_ms_median": -1})")),
               Contains("run 0: 'latency_ms_median' must be a number > 0, got -1"));
    CHECK_THAT(message_of(file_with(
                   R"({"kind": "model", "name": "b", "energy": {"gpu0": {"meter": "nvml"}}})")),
               Contains("run 0: energy 'gpu0': missing 'energy_j'"));
    CHECK_THAT(message_of(file_with(R"({"kind": "op", "name": "matmul"})")),
               Contains("run 0 (op 'matmul'): missing 'op_class'"));
}

TEST_CASE("validate: a model run needs batch, precision and latency", "[validate]") {
    CHECK_THAT(collect_message(file_with(model_run("a", "fp32", 1, "", 1) + "," +
                                         R"({"kind": "model", "name": "b", "batch": 8,
                                         "precision": "fp32"})")),
               Contains("m.json: run 1 (model 'b'): missing 'latency_ms_median'"));
    CHECK_THAT(collect_message(file_with(R"({"kind": "model", "name": "b", "precision": "fp32",
                                         "latency_ms_median": 1})")),
               Contains("m.json: run 0 (model 'b'): missing 'batch'"));
}

TEST_CASE("validate: repeats are merged, contradictions refused", "[validate]") {
    const std::string three = file_with(
        model_run("a", "fp32", 1, "eager", 1.00) + "," + model_run("a", "fp32", 1, "", 1.02) + "," +
        model_run("a", "fp32", 1, "eager", 1.04) + "," + model_run("a", "fp32", 8, "eager", 4.0));
    const auto c = collect_measured({parse_measurements(three, "m.json")}, {});
    REQUIRE(c.configs.size() == 2);
    CHECK(c.configs[0].mode == "eager");  // a run without a mode is eager
    CHECK(c.configs[0].latency_s == Approx(1.02e-3));
    CHECK(c.configs[0].sources.size() == 3);
    CHECK(c.configs[0].sources[1] == "m.json run 1");
    CHECK(c.configs[1].batch == 8);

    const std::string apart = file_with(model_run("a", "fp32", 1, "eager", 1.0) + "," +
                                        model_run("a", "fp16", 1, "eager", 0.5) + "," +
                                        model_run("a", "fp32", 1, "eager", 1.2));
    CHECK_THAT(collect_message(apart),
               Contains("contradictory measurements of a fp32 batch 1 eager: m.json run 0 has a "
                        "median latency of 1 ms, m.json run 2 has 1.2 ms (20.0% apart"));
    CHECK(collect_message(apart, 0.25) == "no error");

    // Another device or mode is another configuration.
    CHECK(collect_message(file_with(model_run("a", "fp32", 1, "eager", 1.0) + "," +
                                    model_run("a", "fp32", 1, "cuda_graph", 2.0))) == "no error");
}

TEST_CASE("validate: a timing floor is read, merged over repeats, and checked", "[validate]") {
    const std::string floor = R"(, "latency_floor_ms": 0.04)";
    const std::string two =
        file_with(model_run("a", "fp32", 1, "eager", 0.05, floor) + "," +
                  model_run("a", "fp32", 1, "eager", 0.051, R"(, "latency_floor_ms": 0.041)") +
                  "," + model_run("b", "fp32", 1, "eager", 0.05));
    const measurement_file f = parse_measurements(two, "m.json");
    CHECK(*f.runs[0].latency_floor_ms == 0.04);
    CHECK_FALSE(f.runs[2].latency_floor_ms);
    const auto c = collect_measured({f}, {});
    REQUIRE(c.configs.size() == 2);
    CHECK(*c.configs[0].latency_floor_s == Approx(40.5e-6));
    CHECK_FALSE(c.configs[1].latency_floor_s);

    CHECK_THAT(
        message_of(file_with(model_run("a", "fp32", 1, "", 1, R"(, "latency_floor_ms": 0)"))),
        Contains("run 0: 'latency_floor_ms' must be a number > 0, got 0"));
    CHECK_THAT(
        message_of(file_with(model_run("a", "fp32", 1, "", 1, R"(, "latency_floor_ms": 1e300)"))),
        Contains("run 0: 'latency_floor_ms' is 1e+300, beyond the range of any measurement"));
    // Repeats timed with different floors, or one with a floor and one without, were not
    // timed the same way.
    CHECK_THAT(collect_message(
                   file_with(model_run("a", "fp32", 1, "", 0.05, floor) + "," +
                             model_run("a", "fp32", 1, "", 0.05, R"(, "latency_floor_ms": 0.02)"))),
               Contains("m.json run 1 has a latency floor of 0.02 ms, m.json run 0 has 0.04 ms"));
    CHECK_THAT(collect_message(file_with(model_run("a", "fp32", 1, "", 0.05) + "," +
                                         model_run("a", "fp32", 1, "", 0.05, floor))),
               Contains("contradictory measurements of a fp32 batch 1 eager: m.json run 1 gives a "
                        "'latency_floor_ms', m.json run 0 does not"));
}

TEST_CASE("validate: energy per call, summed over the chosen domains", "[validate]") {
    const std::string text = file_with(model_run(
        "a", "fp32", 1, "eager", 1.0,
        R"(, "energy": {"gpu0": {"meter": "nvml", "energy_j": 2}, "package-0": {"meter": "rapl",
        "energy_j": 1}})"));
    const measurement_file f = parse_measurements(text, "m.json");
    CHECK(*collect_measured({f}, {}).configs[0].energy_j == Approx(3));
    CHECK(*collect_measured({f}, {0.05, {"gpu0"}}).configs[0].energy_j == Approx(2));
    CHECK_FALSE(collect_measured({f}, {0.05, {"dram-0"}}).configs[0].energy_j);
}

TEST_CASE("validate: MAPE and the worst case per mode", "[validate]") {
    std::vector<nnergy::validated_config> v(3);
    const double measured[] = {1, 2, 4}, predicted[] = {1.1, 1.6, 4.2};
    const char* modes[] = {"eager", "eager", "cuda_graph"};
    for (size_t i = 0; i < 3; ++i) {
        v[i].measured.mode = modes[i];
        v[i].measured.latency_s = measured[i];
        v[i].predicted_latency_s = predicted[i];
        v[i].runtime = "r";
    }
    v[0].measured.energy_j = 10;
    v[0].predicted_energy_j = 13;
    v[1].predicted_energy_j = 1;  // no measurement: not compared
    const auto s = nnergy::summarize(v);
    REQUIRE(s.size() == 2);
    CHECK(s[0].mode == "cuda_graph");
    CHECK(s[0].latency.count == 1);
    CHECK(s[0].latency.mape == Approx(5));
    CHECK_FALSE(s[0].energy);
    CHECK(s[1].mode == "eager");
    CHECK(s[1].latency.count == 2);
    CHECK(s[1].latency.mape == Approx(15));  // (10% + 20%) / 2
    CHECK(s[1].latency.worst == 1);
    CHECK(s[1].latency.worst_error == Approx(-20));
    REQUIRE(s[1].energy);
    CHECK(s[1].energy->count == 1);
    CHECK(s[1].energy->mape == Approx(30));
}

TEST_CASE("validate: default runtime profiles per class", "[validate]") {
    CHECK(nnergy::default_runtimes("gpu").at("cuda_graph") == "cuda-graph");
    CHECK(nnergy::default_runtimes("gpu").at("eager") == "pytorch-eager");
    CHECK(nnergy::default_runtimes("cpu").at("eager") == "pytorch-eager-cpu");
    CHECK(nnergy::default_runtimes("tpu").empty());
}
