// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nnergy/framework/calibrate.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/host.hpp>

#include "scoped_test_state.hpp"

namespace {
const std::string data = std::string(NNERGY_TEST_SOURCE_DIR) + "/tests/data/hardware/";

/// The error reading a hardware file, or empty when it reads.
std::string error_reading(const std::filesystem::path& file) {
    try {
        nnergy::read_hardware_file(file);
    } catch (const nnergy::error& e) {
        return e.what();
    }
    return {};
}

std::string error_of(const std::string& file) {
    const std::string message = error_reading(data + file);
    return message.empty() ? "(no error)" : message;
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

TEST_CASE("hardware quantities are finite in SI units", "[config][hardware]") {
    // TOML reads nan and inf as numbers; 1e308 TB/s overflows a double once in B/s.
    CHECK_THAT(error_of("not_finite.toml"),
               Catch::Contains("not_finite.toml:5") && Catch::Contains("memory.dram.bandwidth") &&
                   Catch::Contains("must be a finite number, got nan"));
    CHECK_THAT(error_of("out_of_range.toml"), Catch::Contains("out_of_range.toml:5") &&
                                                  Catch::Contains("memory.dram.bandwidth") &&
                                                  Catch::Contains("1e+308 TB/s is out of range"));
}

namespace {
/// The error reading a hardware file whose one quantity is `quantity` (empty when it reads).
std::string error_of_quantity(const std::string& key, const std::string& quantity) {
    const nnergy::test::temp_dir dir;
    const std::filesystem::path file = dir.path / "plausible.toml";
    std::ofstream(file) << "schema = \"nnergy.hardware/1\"\nname = \"test\"\n"
                        << key << " = " << quantity << "\n";
    return error_reading(file);
}
}  // namespace

TEST_CASE("hardware quantities lie within any device's range", "[config][hardware]") {
    auto q = [](const std::string& value, const std::string& unit) {
        return "{ value = " + value + ", unit = \"" + unit + "\", source = \"test value\" }";
    };
    // A slipped exponent or unit is refused, naming the key, line and range in the unit used.
    CHECK_THAT(error_of_quantity("peak", q("1e-300", "TFLOP/s")),
               Catch::Contains(":3: 'peak': 1e-300 TFLOP/s is beyond any device's range for a "
                               "rate of work (expected 1e-09 to 1e+08 TFLOP/s"));
    CHECK_THAT(error_of_quantity("capacity", q("1e9", "GB")),
               Catch::Contains("'capacity': 1000000000 GB is beyond") &&
                   Catch::Contains("expected 1e-09 to 1e+07 GB"));
    CHECK_THAT(error_of_quantity("dram", q("5e6", "pJ/B")),
               Catch::Contains("an energy per byte or operation"));
    CHECK_THAT(error_of_quantity("launch", q("-1e5", "s")), Catch::Contains("a time"));
    CHECK_THAT(error_of_quantity("clock", q("0.5", "Hz")), Catch::Contains("a frequency"));
    // The bounds themselves, zero, and the sign within them are the key's own rules' business.
    CHECK(error_of_quantity("peak", q("1", "kFLOP/s")).empty());
    CHECK(error_of_quantity("peak", q("100", "POP/s")).empty());
    CHECK(error_of_quantity("idle", q("0", "W")).empty());
    CHECK(error_of_quantity("pj", q("-1", "pJ/FLOP")).empty());
    // Counts and factors only within what a model's products and quotients survive (1e308
    // lanes per core made every rate zero); their keys bound them tighter.
    CHECK_THAT(error_of_quantity("tiles", q("1e30", "count")),
               Catch::Contains("'tiles': 1e+30 count is beyond any device's range for a count "
                               "(expected 1e-06 to 1e+12 count"));
    CHECK_THAT(error_of_quantity("factor", q("1e-30", "1")),
               Catch::Contains("a fraction or factor (expected 1e-12 to 1e+12 1"));
    CHECK_THAT(error_of_quantity("share", q("1e20", "%")),
               Catch::Contains("(expected 1e-10 to 1e+14 %"));
    CHECK(error_of_quantity("tiles", q("1e12", "count")).empty());
    CHECK(error_of_quantity("tiles_half", q("0.5", "count")).empty());
    CHECK(error_of_quantity("share", q("0", "%")).empty());

    const auto bandwidth = nnergy::plausible_si_range("TB/s");
    REQUIRE(bandwidth);
    CHECK(bandwidth->first == 1e3);
    CHECK(bandwidth->second == 1e18);
    const auto share = nnergy::plausible_si_range("%");
    REQUIRE(share);
    CHECK(share->second == 1e12);
    CHECK_FALSE(nnergy::plausible_si_range("TB/fortnight"));
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

TEST_CASE("[[borrow]] takes another entry's keys under the listed prefixes", "[config][hardware]") {
    const auto hw = nnergy::read_hardware_file(data + "borrow_good.toml");
    const auto h100 = nnergy::read_hardware_file(std::string(NNERGY_TEST_SOURCE_DIR) +
                                                 "/configs/hardware/h100-sxm5.toml");
    // Borrowed: the value, where it is written, its source behind the borrowing file's reason.
    const auto* tile = nnergy::find_value(hw, "gpu.kernels.gemm.tile_m");
    const auto* h100_tile = nnergy::find_value(h100, "gpu.kernels.gemm.tile_m");
    REQUIRE(tile);
    REQUIRE(h100_tile);
    CHECK(tile->float_value == h100_tile->float_value);
    CHECK(tile->file == h100_tile->file);
    CHECK(tile->line == h100_tile->line);
    CHECK(tile->source == h100_tile->source);
    CHECK(tile->borrowed_from == "h100-sxm5");
    CHECK(tile->borrow_reason == "assumed: test");
    const auto* launch = nnergy::find_value(hw, "overhead.kernel_launch");
    REQUIRE(launch);
    CHECK(launch->float_value == nnergy::find_value(h100, "overhead.kernel_launch")->float_value);
    // Measured or fitted on the lender: theoretical here.
    REQUIRE(nnergy::find_value(h100, "gpu.kernels.gemm.provenance")->string_value == "fitted");
    CHECK(nnergy::find_value(hw, "gpu.kernels.gemm.provenance")->string_value == "theoretical");
    // The file's own value stays; nothing outside the prefixes comes along; no borrow keys left.
    const auto* conv = nnergy::find_value(hw, "gpu.kernels.conv.efficiency");
    REQUIRE(conv);
    CHECK(conv->float_value == Approx(0.25));
    CHECK(conv->source == "test value");
    size_t named = 0;
    for (const auto& v : hw) {
        named += v.name == "gpu.kernels.conv.efficiency";
        CHECK(v.name.rfind("borrow", 0) != 0);
    }
    CHECK(named == 1);
    CHECK_FALSE(nnergy::find_value(hw, "compute.float32.peak"));
    CHECK_FALSE(nnergy::find_value(hw, "overhead.host_dispatch_eager"));
    CHECK(nnergy::find_value(hw, "name")->string_value == "borrow-test-gpu");
}

TEST_CASE("[[borrow]] errors name the file, line and what was expected", "[config][hardware]") {
    CHECK_THAT(error_of("borrow_no_such_key.toml"), Catch::Contains("borrow_no_such_key.toml:7") &&
                                                        Catch::Contains("'gpu.kernelz'") &&
                                                        Catch::Contains("h100-sxm5"));
    CHECK_THAT(error_of("borrow_no_source.toml"),
               Catch::Contains("borrow_no_source.toml:5") && Catch::Contains("source = "));
    CHECK_THAT(error_of("borrow_identity.toml"),
               Catch::Contains("borrow_identity.toml:6") && Catch::Contains("'class'"));
    CHECK_THAT(error_of("borrow_table.toml"),
               Catch::Contains("borrow_table.toml:5") && Catch::Contains("[[borrow]]"));
    CHECK_THAT(error_of("borrow_unknown_field.toml"),
               Catch::Contains("borrow_unknown_field.toml:8") && Catch::Contains("only_if"));
    CHECK_THAT(error_of("borrow_cycle_a.toml"), Catch::Contains("borrow_cycle_") &&
                                                    Catch::Contains(".toml:5") &&
                                                    Catch::Contains("cycle"));
}

TEST_CASE("[[borrow]] in an overlay, and from an overlay", "[config][hardware]") {
    const std::string catalog = std::string(NNERGY_TEST_SOURCE_DIR) + "/configs/hardware/";
    // In an overlay the borrowed key is the overlay's own: it replaces the base's.
    const auto over = nnergy::read_hardware_file(data + "borrow_overlay.toml");
    CHECK(nnergy::find_value(over, "name")->string_value == "h100-sxm5");
    CHECK(nnergy::find_value(over, "overhead.kernel_launch")->float_value == Approx(7.8e-6));
    // From an overlay: what its base gives, with the overlay's values; the first borrow wins.
    const auto hw = nnergy::read_hardware_file(data + "borrow_from_overlay.toml");
    const auto h200 = nnergy::read_hardware_file(catalog + "h200-sxm.toml");
    const auto h100 = nnergy::read_hardware_file(catalog + "h100-sxm5.toml");
    const double bw = nnergy::find_value(hw, "memory.dram.bandwidth")->float_value;
    CHECK(bw == nnergy::find_value(h200, "memory.dram.bandwidth")->float_value);
    CHECK(bw != nnergy::find_value(h100, "memory.dram.bandwidth")->float_value);
    CHECK(nnergy::find_value(hw, "memory.dram.bandwidth")->borrowed_from == "h200-sxm");
    CHECK(nnergy::find_value(hw, "memory.dram.bandwidth")->borrow_reason == "assumed: test");
    CHECK(nnergy::find_value(hw, "memory.l2.capacity")->float_value ==
          nnergy::find_value(h100, "memory.l2.capacity")->float_value);
    size_t named = 0;
    for (const auto& v : hw) named += v.name == "memory.dram.bandwidth";
    CHECK(named == 1);
}

TEST_CASE("[[borrow]] values a lender fitted are calibrated by default", "[config][calibrate]") {
    const std::string catalog = std::string(NNERGY_TEST_SOURCE_DIR) + "/configs/hardware/";
    const auto pcie = nnergy::read_hardware_file(catalog + "h100-pcie.toml");
    const auto* eff = nnergy::find_value(pcie, "gpu.kernels.conv.efficiency");
    REQUIRE(eff);
    CHECK(eff->borrowed_from == "h100-sxm5");
    CHECK_THAT(eff->source, Catch::StartsWith("fitted"));
    CHECK(nnergy::fitted_by_default(pcie, *eff));
    // Discrete tile sizes stay out, as on the lender; datasheet values stay out.
    CHECK_FALSE(
        nnergy::fitted_by_default(pcie, *nnergy::find_value(pcie, "gpu.kernels.conv.tile_m")));
    CHECK_FALSE(
        nnergy::fitted_by_default(pcie, *nnergy::find_value(pcie, "memory.dram.bandwidth")));
    // The file's own values keep their sources and are not borrowed.
    CHECK(nnergy::find_value(pcie, "memory.dram.bandwidth")->borrowed_from.empty());
}
