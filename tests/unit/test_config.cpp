// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/host.hpp>

namespace {
const std::string data = std::string(NNERGY_TEST_SOURCE_DIR) + "/tests/data/hardware/";

std::string error_of(const std::string& file) {
    try {
        nnergy::read_hardware_file(data + file);
    } catch (const nnergy::error& e) {
        return e.what();
    }
    return "(no error)";
}
}  // namespace

TEST_CASE("hardware quantities are converted to SI units", "[config][hardware]") {
    auto hw = nnergy::read_hardware_file(data + "good.toml");
    const auto* bw = nnergy::find_value(hw, "memory.dram.bandwidth");
    REQUIRE(bw);
    CHECK(bw->float_value == Approx(3.35e12));
    CHECK(bw->unit == "TB/s");
    CHECK(bw->source == "test value");
    CHECK(bw->line == 6);
    // 80 GiB = 80 * 2^30 bytes
    CHECK(nnergy::find_value(hw, "memory.dram.capacity")->float_value == Approx(85899345920.0));
    CHECK(nnergy::find_value(hw, "compute.float16.peak")->float_value == Approx(9.894e14));
    CHECK(nnergy::find_value(hw, "compute.float16.unit")->string_value == "tensor_core");
    CHECK(nnergy::find_value(hw, "overhead.kernel_launch")->float_value == Approx(7.8e-6));
    CHECK(nnergy::find_value(hw, "efficiency.memory")->float_value == Approx(0.89));
}

TEST_CASE("hardware files reject numbers without unit or source", "[config][hardware]") {
    CHECK_THAT(error_of("bare_number.toml"), Catch::Contains("bare_number.toml:5") &&
                                                 Catch::Contains("memory.dram.bandwidth") &&
                                                 Catch::Contains("bare number"));
    CHECK_THAT(error_of("no_source.toml"),
               Catch::Contains("no_source.toml:5") && Catch::Contains("source"));
    CHECK_THAT(error_of("bad_unit.toml"),
               Catch::Contains("unknown unit 'TB/fortnight'") && Catch::Contains("TB/s"));
    CHECK_THAT(error_of("missing.toml"), Catch::Contains("no such file"));
}

TEST_CASE("TOML files flatten to dotted names with lines", "[config]") {
    auto v = nnergy::read_toml_file(std::string(NNERGY_TEST_SOURCE_DIR) +
                                    "/tests/data/pipelines/unknown_key.toml");
    const auto* batch = nnergy::find_value(v, "model.dimz.batch");
    REQUIRE(batch);
    CHECK(batch->kind == NNERGY_VALUE_INT);
    CHECK(batch->int_value == 1);
    CHECK(batch->line == 3);
    const auto* arch = nnergy::find_value(v, "architecture[0].hardware");
    REQUIRE(arch);
    CHECK(arch->string_value == "h100-sxm5");
}

TEST_CASE("invalid TOML names file, line and column", "[config]") {
    try {
        nnergy::read_toml_file(std::string(NNERGY_TEST_SOURCE_DIR) +
                               "/tests/data/pipelines/invalid_toml.toml");
        FAIL("expected an error");
    } catch (const nnergy::error& e) {
        CHECK_THAT(e.what(),
                   Catch::Contains("invalid_toml.toml:1:") && Catch::Contains("invalid TOML"));
    }
}
