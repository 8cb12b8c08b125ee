// SPDX-License-Identifier: Apache-2.0
// The bundled hardware catalog: every file reads, is named after itself, the datasheet figures
// below (dense rates, no sparsity) stay what their sources say, and every [energy] table prices
// every event its architecture class counts.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <string>
#include <utility>
#include <vector>

namespace {

const std::filesystem::path catalog_dir =
    std::filesystem::path(NNERGY_TEST_SOURCE_DIR) / "configs" / "hardware";

nnergy::config_values read(const std::string& name) {
    return nnergy::read_hardware_file(catalog_dir / (name + ".toml"));
}

/// The value of `key` in the unit it is written in (what the datasheet says).
double written(const nnergy::config_values& v, const std::string& key) {
    const nnergy::config_value* x = nnergy::find_value(v, key);
    INFO(key);
    REQUIRE(x != nullptr);
    REQUIRE(!x->unit.empty());
    return x->written_value;
}

double si(const nnergy::config_values& v, const std::string& key) {
    const nnergy::config_value* x = nnergy::find_value(v, key);
    INFO(key);
    REQUIRE(x != nullptr);
    return x->float_value;
}

}  // namespace

TEST_CASE("hardware catalog: every file reads and is named after itself", "[hardware]") {
    std::size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(catalog_dir)) {
        if (e.path().extension() != ".toml") continue;
        ++files;
        INFO(e.path().string());
        const nnergy::config_values v = nnergy::read_hardware_file(e.path());
        const nnergy::config_value* name = nnergy::find_value(v, "name");
        REQUIRE(name != nullptr);
        CHECK(name->string_value == e.path().stem().string());
        const nnergy::config_value* cls = nnergy::find_value(v, "class");
        REQUIRE(cls != nullptr);
        CHECK((cls->string_value == "gpu" || cls->string_value == "cpu" ||
               cls->string_value == "tpu" || cls->string_value == "kpu"));
        CHECK(si(v, "memory.dram.bandwidth") > 0);
    }
    CHECK(files == nnergy::hardware_catalog().size());
}

TEST_CASE("hardware catalog: every GPU entry has per-op-class kernel tables", "[hardware]") {
    // Without them the architecture falls back to one 128 x 128 tile and no fixed time per
    // kernel, and parts of one die came out in the wrong order. Only the H100 SXM5 measured
    // them; the others borrow them (theoretical) or inherit them through `base`.
    std::size_t gpus = 0;
    for (const auto& e : std::filesystem::directory_iterator(catalog_dir)) {
        if (e.path().extension() != ".toml") continue;
        const nnergy::config_values v = nnergy::read_hardware_file(e.path());
        const nnergy::config_value* cls = nnergy::find_value(v, "class");
        if (!cls || cls->string_value != "gpu") continue;
        ++gpus;
        INFO(e.path().string());
        for (const char* key : {"gpu.kernels.conv.tile_m", "gpu.kernels.gemm.fixed_time",
                                "gpu.kernels.depthwise.efficiency", "overhead.kernel_launch"})
            CHECK(nnergy::find_value(v, key) != nullptr);
        const nnergy::config_value* provenance =
            nnergy::find_value(v, "gpu.kernels.conv.provenance");
        REQUIRE(provenance != nullptr);
        const std::string name = nnergy::find_value(v, "name")->string_value;
        if (name != "h100-sxm5" && name != "h200-sxm")
            CHECK(provenance->string_value == "theoretical");
    }
    CHECK(gpus >= 7);
}

TEST_CASE("hardware catalog: H100 SXM5 datasheet figures", "[hardware]") {
    const auto v = read("h100-sxm5");
    CHECK(written(v, "memory.dram.bandwidth") == 3.35);  // TB/s, HBM3
    CHECK(si(v, "memory.dram.bandwidth") == Approx(3.35e12));
    CHECK(written(v, "compute.float16.peak") == 989.4);  // TFLOP/s dense
    CHECK(written(v, "compute.bfloat16.peak") == 989.4);
    CHECK(written(v, "compute.tfloat32.peak") == 494.7);
    CHECK(written(v, "compute.float32.peak") == 66.9);
    CHECK(written(v, "compute.float8_e4m3.peak") == 1978.9);
    CHECK(written(v, "compute.int8.peak") == 1978.9);
    CHECK(written(v, "power.tdp") == 700);
    CHECK(written(v, "compute.units") == 132);
}

TEST_CASE("hardware catalog: other datasheet figures", "[hardware]") {
    // NVIDIA H100 and A100 whitepapers / datasheets, dense.
    const auto pcie = read("h100-pcie");
    CHECK(written(pcie, "compute.float32.peak") == 51.2);
    CHECK(written(pcie, "compute.tfloat32.peak") == 378);
    CHECK(written(pcie, "compute.float16.peak") == 756);
    CHECK(written(pcie, "compute.int8.peak") == 1513);
    CHECK(si(pcie, "memory.dram.bandwidth") == Approx(2.0e12));
    CHECK(written(pcie, "power.tdp") == 350);
    const auto a100 = read("a100-sxm4-80gb");
    CHECK(written(a100, "compute.float32.peak") == 19.5);
    CHECK(written(a100, "compute.tfloat32.peak") == 156);
    CHECK(written(a100, "compute.bfloat16.peak") == 312);
    CHECK(written(a100, "compute.int8.peak") == 624);
    CHECK(written(a100, "compute.float64.vector.peak") == 9.7);  // below FP32, as it must be
    CHECK(si(a100, "memory.dram.bandwidth") == Approx(2.039e12));
    CHECK(written(a100, "power.tdp") == 400);
    CHECK(nnergy::find_value(a100, "compute.float8_e4m3.peak") == nullptr);  // Ampere has no FP8
    const auto l4 = read("l4");
    CHECK(written(l4, "compute.float32.peak") == 30.3);
    CHECK(written(l4, "compute.float16.peak") == 121);  // 242 with sparsity
    CHECK(written(l4, "power.tdp") == 72);
    // Google Cloud TPU pages, per chip.
    CHECK(written(read("tpu-v4"), "compute.bfloat16.peak") == 275);
    CHECK(si(read("tpu-v4"), "memory.dram.bandwidth") == Approx(1.2e12));
    CHECK(written(read("tpu-v5e"), "compute.bfloat16.peak") == 197);
    CHECK(si(read("tpu-v5e"), "memory.dram.bandwidth") == Approx(819e9));
    CHECK(written(read("coral-edge-tpu"), "compute.int8.peak") == 4);
    // CPU peaks derived from cores x clock x FLOP per cycle, as their sources state.
    CHECK(si(read("xeon-8490h"), "compute.float32.peak") == Approx(60 * 1.9e9 * 64));
    CHECK(si(read("epyc-9654"), "compute.float32.peak") == Approx(96 * 2.4e9 * 32));
}

TEST_CASE("hardware catalog: every promised product is present", "[hardware]") {
    const auto names = nnergy::hardware_catalog();
    for (const char* n : {"h100-sxm5", "h100-pcie", "a100-sxm4-80gb", "l4", "jetson-agx-orin",
                          "jetson-orin-nano", "xeon-8490h", "epyc-9654", "altra-max-m128",
                          "i7-12700k", "jetson-orin-cpu", "xeon-5th-gen-16vcpu", "tpu-v4",
                          "tpu-v5e", "coral-edge-tpu", "kpu-t64", "kpu-t256", "kpu-t768"}) {
        INFO(n);
        CHECK(std::find(names.begin(), names.end(), n) != names.end());
    }
}

namespace {

bool has(const nnergy::config_values& v, const std::string& key) {
    return nnergy::find_value(v, key) != nullptr;
}

std::string text(const nnergy::config_values& v, const std::string& key, std::string fallback) {
    const nnergy::config_value* x = nnergy::find_value(v, key);
    return x && x->kind == NNERGY_VALUE_STRING ? x->string_value : fallback;
}

struct class_events {
    std::vector<std::string> memory, control;
    bool pe_stream = false;  ///< KPU: elementwise work streams through the PEs
};

/// What each class architecture counts, now or once every event of docs/hardware.md is counted
/// ("Energy coefficients in the catalog"): a table must price all of them.
class_events events_of(const std::string& cls) {
    if (cls == "gpu")
        return {{"dram", "l2", "shared", "register_file"}, {"launch", "warp_instruction"}};
    if (cls == "cpu") return {{"register_file", "l1"}, {"launch", "instruction"}};
    if (cls == "tpu") return {{"dram", "weight_load", "accumulator"}, {"launch", "dma"}};
    if (cls == "kpu")
        return {{"tile_sram", "noc", "dram"}, {"launch", "token_routing", "dma"}, true};
    return {{"dram"}, {"launch"}};
}

}  // namespace

TEST_CASE("hardware catalog: every [energy] table prices every event of its class",
          "[hardware][energy]") {
    for (const auto& e : std::filesystem::directory_iterator(catalog_dir)) {
        if (e.path().extension() != ".toml") continue;
        const std::string name = e.path().stem().string();
        INFO(name);
        const nnergy::config_values v = nnergy::read_hardware_file(e.path());
        REQUIRE(has(v, "energy.static.idle_power"));
        const class_events ce = events_of(text(v, "class", "reference"));

        std::vector<std::pair<std::string, std::string>> wanted;  // (category, event)
        for (const nnergy::config_value& x : v) {
            const std::string& n = x.name;
            if (n.rfind("compute.", 0) == 0 && n.size() > 13 &&
                n.compare(n.size() - 5, 5, ".peak") == 0) {
                std::string p = n.substr(8, n.size() - 13);
                const bool vector = p.size() > 7 && p.compare(p.size() - 7, 7, ".vector") == 0;
                if (vector) p.resize(p.size() - 7);
                const std::string base = "compute." + p + (vector ? ".vector" : "");
                wanted.emplace_back(
                    "compute", text(v, base + ".unit", vector ? "vector" : "compute") + "." + p);
                if (ce.pe_stream && !vector) wanted.emplace_back("compute", "pe_stream." + p);
            }
            if (n.rfind("memory.", 0) == 0) {
                const size_t dot = n.find('.', 7);
                if (dot != std::string::npos) wanted.emplace_back("memory", n.substr(7, dot - 7));
            }
        }
        for (const std::string& m : ce.memory) wanted.emplace_back("memory", m);
        for (const std::string& c : ce.control) wanted.emplace_back("control", c);

        for (const auto& [category, event] : wanted) {
            const std::string id = category + "." + event;
            INFO("energy." << id);
            // The estimator falls back from <unit>.<precision> to <unit>.
            std::string key = "energy." + id;
            if (!has(v, key) && category == "compute")
                key = "energy.compute." + event.substr(0, event.rfind('.'));
            CHECK(has(v, key));
            CHECK(has(v, key + "_provenance"));
        }
        // Every coefficient says where it comes from.
        for (const nnergy::config_value& x : v)
            if (x.name.rfind("energy.", 0) == 0 && !x.unit.empty()) {
                INFO(x.name);
                CHECK(has(v, x.name + "_provenance"));
                CHECK(!x.source.empty());
            }
    }
}
