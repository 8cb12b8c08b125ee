// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/pipeline.hpp>

namespace {
const std::string root = NNERGY_TEST_SOURCE_DIR;

std::string error_of(const std::string& file) {
    try {
        nnergy::parse_pipeline(root + "/tests/data/pipelines/" + file);
    } catch (const nnergy::error& e) {
        return e.what();
    }
    return "(no error)";
}
}  // namespace

TEST_CASE("the quickstart pipeline parses", "[pipeline]") {
    auto spec = nnergy::parse_pipeline(root + "/configs/pipelines/quickstart.toml");
    CHECK(spec.model.path.filename() == "hybrid_cnn_transformer.json");
    CHECK(spec.model.frontend.empty());
    CHECK(spec.model.dims.at("batch") == 1);
    CHECK(spec.partitioner.plugin == "nnergy.partitioner.fusion");
    REQUIRE(spec.partitioner.config.size() == 1);
    CHECK(spec.partitioner.config[0].name == "rules");
    REQUIRE(spec.architectures.size() == 1);
    CHECK(spec.architectures[0].precision == "float16");
    CHECK(spec.architectures[0].hardware_file.filename() == "h100-sxm5.toml");
    CHECK(spec.architectures[0].config.empty());
    REQUIRE(spec.estimators.size() == 3);
    CHECK(spec.estimators[0].plugin == "nnergy.estimator.roofline");
    CHECK(spec.estimators[1].plugin == "nnergy.estimator.energy");
    CHECK(spec.estimators[2].plugin == "nnergy.estimator.memory");
    REQUIRE(spec.reporters.size() == 3);
    CHECK(spec.reporters[0].output == "-");
    CHECK(spec.reporters[1].output.ends_with("quickstart-report.json"));
    CHECK(spec.reporters[2].plugin == "nnergy.reporter.html");
    CHECK(spec.reporters[2].output.ends_with("quickstart-report.html"));
}

TEST_CASE("pipeline errors name the file, line and key", "[pipeline]") {
    CHECK_THAT(error_of("unknown_key.toml"), Catch::Contains("unknown_key.toml:3") &&
                                                 Catch::Contains("unknown key 'dimz'") &&
                                                 Catch::Contains("dims"));
    CHECK_THAT(error_of("wrong_type.toml"),
               Catch::Contains("wrong_type.toml:3") &&
                   Catch::Contains("'model.dims.batch' must be a positive integer"));
    CHECK_THAT(error_of("missing_model.toml"), Catch::Contains("missing_model.toml:2") &&
                                                   Catch::Contains("does_not_exist.json") &&
                                                   Catch::Contains("does not exist"));
    CHECK_THAT(error_of("unknown_hardware.toml"),
               Catch::Contains("unknown_hardware.toml:10") &&
                   Catch::Contains("unknown hardware 'h100-sxm9'") && Catch::Contains("h100-sxm5"));
    CHECK_THAT(error_of("bad_precision.toml"), Catch::Contains("bad_precision.toml:11") &&
                                                   Catch::Contains("unknown precision 'float13'"));
    CHECK_THAT(error_of("invalid_toml.toml"), Catch::Contains("invalid TOML"));
    CHECK_THAT(error_of("nope.toml"), Catch::Contains("no such file"));
}

TEST_CASE("pipelines sweep dimensions and precisions", "[pipeline]") {
    auto spec = nnergy::parse_pipeline(root + "/tests/data/pipelines/sweep.toml");
    CHECK(spec.model.dims.empty());
    CHECK(spec.model.sweeps.at("batch") == std::vector<int64_t>{1, 8});
    REQUIRE(spec.architectures.size() == 2);  // one per precision, otherwise alike
    CHECK(spec.architectures[0].precision == "float32");
    CHECK(spec.architectures[1].precision == "float16");
    CHECK(spec.architectures[1].hardware_file == spec.architectures[0].hardware_file);
    CHECK_THAT(error_of("sweep_empty.toml"),
               Catch::Contains("sweep_empty.toml:4") && Catch::Contains("sweeps over no values"));
    CHECK_THAT(error_of("sweep_bad_dim.toml"),
               Catch::Contains("sweep_bad_dim.toml:4") &&
                   Catch::Contains("'model.dims.batch' must be a positive integer or an array"));
    CHECK_THAT(error_of("sweep_bad_precision.toml"),
               Catch::Contains("sweep_bad_precision.toml:13") &&
                   Catch::Contains("unknown precision 'float13'"));
}

TEST_CASE("precision \"all\" sweeps every precision the hardware offers", "[pipeline]") {
    auto spec = nnergy::parse_pipeline(root + "/tests/data/pipelines/sweep_all_precisions.toml");
    std::vector<std::string> precisions;
    for (const auto& a : spec.architectures) precisions.push_back(a.precision);
    // xeon-8490h lists float64, float32, bfloat16 and int8 peaks; float32 comes once, first.
    CHECK(precisions == std::vector<std::string>{"float32", "float64", "bfloat16", "int8"});
}

TEST_CASE("a report format is chosen by short name or by the output's extension", "[pipeline]") {
    using nnergy::reporter_component;
    CHECK(reporter_component("html", "") == "nnergy.reporter.html");
    CHECK(reporter_component("md", "-") == "nnergy.reporter.markdown");
    CHECK(reporter_component("acme.reporter.budget", "x.html") == "acme.reporter.budget");
    CHECK(reporter_component("auto", "-") == "nnergy.reporter.text");
    CHECK(reporter_component("auto", "out/Report.HTML") == "nnergy.reporter.html");
    CHECK(reporter_component("", "r.csv") == "nnergy.reporter.csv");
    CHECK(reporter_component("", "r.md") == "nnergy.reporter.markdown");
    CHECK(reporter_component("", "r.json") == "nnergy.reporter.json");
    CHECK(reporter_component("", "run.trace.json") == "nnergy.reporter.trace");
    CHECK(reporter_component("", "run.perfetto.json") == "nnergy.reporter.trace");
    CHECK(reporter_component("", "notes.txt") == "nnergy.reporter.text");
    // Nothing decides: the caller reports it.
    CHECK(reporter_component("", "r.xlsx").empty());
    CHECK(reporter_component("", "-").empty());
    CHECK(reporter_component("auto", "r.xlsx").empty());
    for (const std::string& f : nnergy::report_formats())
        CHECK(reporter_component(f, "") == "nnergy.reporter." + f);
}

TEST_CASE("a pipeline's reporter may be named by format or by its output", "[pipeline]") {
    auto spec = nnergy::parse_pipeline(root + "/tests/data/pipelines/reporter_formats.toml");
    REQUIRE(spec.reporters.size() == 3);
    CHECK(spec.reporters[0].plugin == "nnergy.reporter.html");
    CHECK(spec.reporters[1].plugin == "nnergy.reporter.csv");
    CHECK(spec.reporters[1].output.ends_with("kernels.csv"));
    CHECK(spec.reporters[2].plugin == "nnergy.reporter.trace");
    CHECK_THAT(error_of("reporter_no_format.toml"),
               Catch::Contains("reporter_no_format.toml:16") &&
                   Catch::Contains("[[reporter]] needs 'plugin'") && Catch::Contains("html"));
}

TEST_CASE("bundled configs are found by their path under configs/", "[pipeline]") {
    const std::filesystem::path rules = nnergy::find_config("fusion/default.toml");
    REQUIRE_FALSE(rules.empty());
    CHECK(std::filesystem::is_regular_file(rules));
    CHECK(rules.filename() == "default.toml");
    CHECK(nnergy::find_config("calibration/gpu.toml").parent_path().filename() == "calibration");
    CHECK(nnergy::find_config("fusion/no-such-rules.toml").empty());
}
