// SPDX-License-Identifier: Apache-2.0
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nnergy/framework/calibrate.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/host.hpp>
#include <string>

namespace {
const std::string data = std::string(NNERGY_TEST_SOURCE_DIR) + "/tests/data/calibrate/";
const std::string catalog = std::string(NNERGY_TEST_SOURCE_DIR) + "/configs/hardware/";
}  // namespace

TEST_CASE("an overlay is its base with its own values in their place", "[calibrate][overlay]") {
    const nnergy::config_values base =
        nnergy::read_hardware_file(catalog + "xeon-5th-gen-16vcpu.toml");
    const nnergy::config_values over = nnergy::read_hardware_file(data + "xeon-truth.toml");
    // Inherited: name, class, peaks, everything the overlay does not give.
    REQUIRE(nnergy::find_value(over, "name"));
    CHECK(nnergy::find_value(over, "name")->string_value == "xeon-5th-gen-16vcpu");
    CHECK(nnergy::find_value(over, "compute.float32.peak")->float_value ==
          nnergy::find_value(base, "compute.float32.peak")->float_value);
    CHECK_FALSE(nnergy::find_value(over, "base"));
    // Replaced, with the overlay's file and line.
    const nnergy::config_value* eff = nnergy::find_value(over, "cpu.kernels.conv.efficiency");
    REQUIRE(eff);
    CHECK(eff->float_value == Approx(0.55));
    CHECK(eff->source == "test truth");
    CHECK(eff->file.find("xeon-truth.toml") != std::string::npos);
    // The runtime's cost on this machine, replaced as well.
    const nnergy::config_value* dispatch =
        nnergy::find_value(over, "runtime.pytorch-eager-cpu.dispatch.per_kernel");
    REQUIRE(dispatch);
    CHECK(dispatch->float_value == Approx(3e-6));
    CHECK(dispatch->file.find("xeon-truth.toml") != std::string::npos);
    // Nothing duplicated, nothing added: every key of the overlay is one of the entry's.
    size_t named = 0;
    for (const nnergy::config_value& v : over) named += v.name == "cpu.kernels.conv.efficiency";
    CHECK(named == 1);
    CHECK(over.size() == base.size());
}

TEST_CASE("overlay errors name the file and line", "[calibrate][overlay]") {
    const auto error_of = [](const std::string& file) -> std::string {
        try {
            nnergy::read_hardware_file(file);
        } catch (const nnergy::error& e) {
            return e.what();
        }
        return "(no error)";
    };
    CHECK_THAT(error_of(data + "cycle-a.toml"), Catch::Contains("cycle-") &&
                                                    Catch::Contains(".toml:4") &&
                                                    Catch::Contains("overlays itself"));
    CHECK_THAT(error_of(data + "unknown-base.toml"),
               Catch::Contains("unknown-base.toml:4") && Catch::Contains("'h100-sxm6'"));
}

TEST_CASE("model families are the leading letters of the name", "[calibrate][leave-out]") {
    CHECK(nnergy::model_family("resnet18") == "resnet");
    CHECK(nnergy::model_family("resnet50_dynamo") == "resnet");
    CHECK(nnergy::model_family("mobilenet_v2") == "mobilenet");
    CHECK(nnergy::model_family("ViT_b_16") == "vit");
    CHECK(nnergy::model_family("3dunet") == "3dunet");
}

TEST_CASE("leave-out groups: model, family, or the model a run's shapes come from",
          "[calibrate][leave-out]") {
    const auto op_run = [](std::string params_json) {
        nnergy::measured_config c;
        c.kind = "op";
        c.model = "conv2d(cin=64,cout=64,hw=56,k=3) [resnet50_b64]";
        c.params_json = std::move(params_json);
        return c;
    };
    const auto source = [](const nnergy::measured_config& c) {
        return nnergy::leave_out_group(c, nnergy::leave_out_unit::source);
    };
    // A profile's name ends in its batch; a harness source is the model, then the layer.
    CHECK(source(op_run(R"({"source": "resnet50_b64"})")) == "resnet50");
    CHECK(source(op_run(R"({"source": "vit_b_16_b1"})")) == "vit_b_16");
    CHECK(source(op_run(R"({"source": "resnet50 layer1 conv1"})")) == "resnet50");
    CHECK(source(op_run(R"({"source": "mobilenet_v2 block1"})")) == "mobilenet_v2");
    // "_b" without digits after it is part of the name.
    CHECK(source(op_run(R"({"source": "bert_base"})")) == "bert_base");
    CHECK(source(op_run(R"({"source": "model_b"})")) == "model_b");
    // No source (or not a text): in no group, so in every fit.
    CHECK(source(op_run(R"({"k": 3})")).empty());
    CHECK(source(op_run(R"({"source": 7})")).empty());
    CHECK(source(op_run("not json")).empty());
    // A model run is its own source; model and family group op runs by their label.
    nnergy::measured_config model;
    model.model = "resnet50";
    CHECK(source(model) == "resnet50");
    const nnergy::measured_config op = op_run(R"({"source": "resnet50_b64"})");
    CHECK(nnergy::leave_out_group(op, nnergy::leave_out_unit::model) == op.model);
    CHECK(nnergy::leave_out_group(op, nnergy::leave_out_unit::family) == "conv");
    for (nnergy::leave_out_unit u : {nnergy::leave_out_unit::model, nnergy::leave_out_unit::family,
                                     nnergy::leave_out_unit::source})
        CHECK(nnergy::leave_out_unit_from_name(nnergy::leave_out_unit_name(u)) == u);
    CHECK_FALSE(nnergy::leave_out_unit_from_name("op"));
}

TEST_CASE("with_parameters sets values in SI and as written, and adds missing keys",
          "[calibrate]") {
    const nnergy::config_values hw =
        nnergy::read_hardware_file(catalog + "xeon-5th-gen-16vcpu.toml");
    nnergy::calibration_parameter eff;
    eff.key = "cpu.kernels.conv.efficiency";
    eff.unit = "%";
    eff.unit_factor = 0.01;
    nnergy::calibration_parameter dispatch;  // a key the entry does not give
    dispatch.key = "runtime.pytorch-eager-cpu.dispatch.per_view";
    dispatch.unit = "us";
    dispatch.unit_factor = 1e-6;
    dispatch.runtime = "pytorch-eager-cpu";
    const nnergy::config_values out = nnergy::with_parameters(hw, {eff, dispatch}, {0.5, 2e-5});
    CHECK(nnergy::find_value(out, eff.key)->float_value == Approx(0.5));
    CHECK(nnergy::find_value(out, eff.key)->written_value == Approx(50));
    CHECK(nnergy::find_value(out, dispatch.key)->float_value == Approx(2e-5));
    CHECK(nnergy::find_value(out, dispatch.key)->written_value == Approx(20));
    CHECK(out.size() == hw.size() + 1);
    // The input is untouched.
    CHECK(nnergy::find_value(hw, eff.key)->float_value != Approx(0.5));
}

TEST_CASE("with_parameters moves a tied constant at its ratio to its leader", "[calibrate]") {
    const nnergy::config_values hw = nnergy::read_hardware_file(catalog + "h100-sxm5.toml");
    const nnergy::config_value* fp32 = nnergy::find_value(hw, "energy.compute.cuda_core.float32");
    const nnergy::config_value* fp16 = nnergy::find_value(hw, "energy.compute.cuda_core.float16");
    REQUIRE(fp32);
    REQUIRE(fp16);
    nnergy::calibration_parameter leader;
    leader.key = fp32->name;
    leader.unit = "pJ/FLOP";
    leader.unit_factor = 1e-12;
    leader.initial = fp32->float_value;
    leader.followers.push_back({fp16->name, "pJ/FLOP", 1e-12, fp16->float_value});
    const nnergy::config_values out =
        nnergy::with_parameters(hw, {leader}, {3 * fp32->float_value});
    CHECK(nnergy::find_value(out, fp32->name)->float_value == Approx(3 * fp32->float_value));
    CHECK(nnergy::find_value(out, fp16->name)->float_value == Approx(3 * fp16->float_value));
    CHECK(nnergy::find_value(out, fp16->name)->written_value ==
          Approx(3 * fp16->float_value / 1e-12));
    CHECK(out.size() == hw.size());
}

TEST_CASE("objective and quantity names round-trip; others are refused", "[calibrate]") {
    for (nnergy::fit_objective o :
         {nnergy::fit_objective::log_rms, nnergy::fit_objective::log_mean_abs,
          nnergy::fit_objective::relative_rms})
        CHECK(nnergy::fit_objective_from_name(nnergy::fit_objective_name(o)) == o);
    CHECK(std::string(nnergy::fit_objective_name(nnergy::fit_objective::relative_rms)) ==
          "relative-rms");
    CHECK_FALSE(nnergy::fit_objective_from_name("rms"));
    for (nnergy::fit_quantities q :
         {nnergy::fit_quantities::latency_and_energy, nnergy::fit_quantities::latency,
          nnergy::fit_quantities::energy})
        CHECK(nnergy::fit_quantities_from_name(nnergy::fit_quantities_name(q)) == q);
    CHECK(std::string(nnergy::fit_quantities_name(nnergy::fit_quantities::latency_and_energy)) ==
          "both");
    CHECK_FALSE(nnergy::fit_quantities_from_name("power"));
}

TEST_CASE("a hardware file read again gives what it holds now", "[calibrate][overlay]") {
    // A run parses a file once and reuses it while its bytes stay the same; a file rewritten
    // in between (calibrate writing an overlay, a test rewriting a fixture) is read afresh.
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() /
        ("nnergy-reread-" + std::to_string(static_cast<long>(::getpid())) + ".toml");
    const auto write = [&](int efficiency) {
        std::ofstream f(file, std::ios::trunc);
        f << "schema = \"nnergy.hardware/1\"\nbase = \"xeon-5th-gen-16vcpu\"\n";
        f << "[cpu.kernels.conv]\nefficiency = { value = " << efficiency
          << ", unit = \"%\", source = \"test\" }\n";
    };
    write(41);
    const nnergy::config_values first = nnergy::read_hardware_file(file);
    write(43);  // same size: only the bytes tell the files apart
    const nnergy::config_values second = nnergy::read_hardware_file(file);
    std::filesystem::remove(file);
    REQUIRE(nnergy::find_value(first, "cpu.kernels.conv.efficiency"));
    REQUIRE(nnergy::find_value(second, "cpu.kernels.conv.efficiency"));
    CHECK(nnergy::find_value(first, "cpu.kernels.conv.efficiency")->float_value == Approx(0.41));
    CHECK(nnergy::find_value(second, "cpu.kernels.conv.efficiency")->float_value == Approx(0.43));
}
