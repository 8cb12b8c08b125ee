// SPDX-License-Identifier: Apache-2.0
// The reference architecture: reading hardware descriptions and the roofline mapping of
// docs/hardware.md, checked against values computed by hand in the comments.
#include <catch2/catch.hpp>

#include "fake_host.hpp"
#include "reference_architecture.hpp"

using nnergy::modeling::compute_occupancy;
using nnergy::modeling::hardware_model;
using nnergy::modeling::kernel_work;
using nnergy::modeling::provenance;

namespace {

// A made-up chip with round numbers: 4 tiles of 100 threads; fp32 1 TFLOP/s at 50%; fp16 matrix
// 4 TFLOP/s at 50% and vector 1 TFLOP/s at the file default 80%; DRAM 100 GB/s at 80%; 2 us
// launch.
fake::config toy() {
    fake::config c;
    c.text("schema", "nnergy.hardware/1", 1)
        .text("name", "toy", 2)
        .text("class", "reference", 3)
        .number("compute.units", 4, 5)
        .text("compute.unit_name", "tile", 6)
        .number("compute.threads_per_unit", 100, 7)
        .text("compute.float32.unit", "fpu", 9)
        .number("compute.float32.peak", 1e12, 10)
        .number("compute.float32.efficiency", 0.5, 11)
        .text("compute.float32.efficiency_provenance", "measured", 12)
        .text("compute.float16.unit", "mxu", 14)
        .number("compute.float16.peak", 4e12, 15)
        .number("compute.float16.efficiency", 0.5, 16)
        .text("compute.float16.efficiency_provenance", "fitted", 17)
        .text("compute.float16.vector.unit", "vpu", 19)
        .number("compute.float16.vector.peak", 1e12, 20)
        .number("memory.dram.bandwidth", 1e11, 22)
        .number("efficiency.compute", 0.8, 24)
        .text("efficiency.compute_provenance", "fitted", 25)
        .number("efficiency.memory", 0.8, 26)
        .text("efficiency.memory_provenance", "measured", 27)
        .number("overhead.kernel_launch", 2e-6, 29)
        .text("overhead.kernel_launch_provenance", "measured", 30);
    return c;
}

template <class F>
nnergy::sdk::error error_of(F&& f) {
    try {
        f();
    } catch (const nnergy::sdk::error& e) {
        return e;
    }
    FAIL("expected an nnergy::sdk::error");
    return nnergy::sdk::error("unreachable");
}

}  // namespace

TEST_CASE("occupancy: waves and the partly empty last wave", "[reference]") {
    // Capacity 4 x 100 = 400 threads.
    auto o = compute_occupancy(600, 4, 100);  // 2 waves, 600 of 800 slots busy
    CHECK(o.waves == 2);
    CHECK(o.utilization == Approx(0.75));
    CHECK(o.units_allocated == 4);

    o = compute_occupancy(800, 4, 100);  // exactly two full waves
    CHECK(o.waves == 2);
    CHECK(o.utilization == Approx(1.0));

    o = compute_occupancy(150, 4, 100);  // one wave on 2 tiles, 150 of 400 slots
    CHECK(o.waves == 1);
    CHECK(o.utilization == Approx(0.375));
    CHECK(o.units_allocated == 2);

    o = compute_occupancy(0, 4, 100);  // a scalar output still takes one thread
    CHECK(o.utilization == Approx(1.0 / 400));
    CHECK(o.units_allocated == 1);
}

TEST_CASE("the limiting term: fixed cost over no or less work, else the larger time",
          "[reference]") {
    using nnergy::modeling::limit;
    using nnergy::modeling::limiting_term;
    CHECK(limiting_term(0, 0, 0) == limit::overhead);  // nothing to do
    CHECK(limiting_term(0, 0, 1e-6) == limit::overhead);
    CHECK(limiting_term(1e-6, 2e-6, 3e-6) == limit::overhead);
    CHECK(limiting_term(3e-6, 2e-6, 1e-6) == limit::compute);
    CHECK(limiting_term(2e-6, 3e-6, 1e-6) == limit::memory);
    CHECK(limiting_term(2e-6, 2e-6, 2e-6) == limit::compute);  // ties: compute, not overhead
}

TEST_CASE("hardware description: precisions, defaults and provenance", "[reference]") {
    const fake::config c = toy();
    const hardware_model hw = hardware_model::from_config(c.view());
    CHECK(hw.name == "toy");
    CHECK(hw.file == "toy.toml");
    CHECK(hw.units == 4);
    CHECK(hw.available_precisions() == "float32, float16");
    const auto* fp16 = hw.find("float16");
    REQUIRE(fp16);
    CHECK(fp16->matrix.name == "mxu");
    CHECK(fp16->matrix.efficiency == 0.5);
    CHECK(fp16->matrix.efficiency_provenance == provenance::fitted);
    REQUIRE(fp16->vector);
    CHECK(fp16->vector->name == "vpu");
    // No efficiency of its own: the file default [efficiency] compute and its provenance.
    CHECK(fp16->vector->efficiency == 0.8);
    CHECK(fp16->vector->efficiency_provenance == provenance::fitted);
    CHECK(fp16->vector->threads_per_unit == 100);
    CHECK(hw.dram_bandwidth == 1e11);
    CHECK(hw.memory_efficiency == 0.8);
    CHECK(hw.launch_overhead_s == 2e-6);
}

TEST_CASE("minimal hardware file: a plain roofline", "[reference]") {
    fake::config c;
    c.text("name", "bare")
        .number("compute.float32.peak", 1e12)
        .number("memory.dram.bandwidth", 1e11);
    const hardware_model hw = hardware_model::from_config(c.view());
    kernel_work k;
    k.flops = 1e9;
    k.input_bytes = 1e6;
    k.threads = 7;
    // One unit of one thread: always fully used; no efficiency, no launch cost.
    auto m = nnergy::reference::map_kernel(hw, hw.require(NNERGY_DTYPE_FLOAT32), k);
    CHECK(m.utilization == 1);
    CHECK(m.effective_flops_per_s == 1e12);
    CHECK(m.compute_time_s == Approx(1e-3));
    CHECK(m.launch_overhead_s == 0);
    CHECK(m.bottleneck == "compute");
    CHECK(m.confidence == provenance::theoretical);
}

TEST_CASE("compute-bound kernel", "[reference]") {
    const fake::config c = toy();
    const hardware_model hw = hardware_model::from_config(c.view());
    kernel_work k;
    k.what = "MatMul";
    k.macs = 5e8;
    k.flops = 1e9;
    k.input_bytes = 1e6;
    k.threads = 600;
    const auto m = nnergy::reference::map_kernel(hw, hw.require(NNERGY_DTYPE_FLOAT32), k);
    // utilization 0.75 (2 waves); effective 1e12 x 0.5 x 0.75 = 3.75e11 FLOP/s;
    // compute 1e9 / 3.75e11 = 2.667 ms; memory 1e6 / (1e11 x 0.8) = 12.5 us.
    CHECK(m.unit == "fpu");
    CHECK(m.peak_flops_per_s == 1e12);
    CHECK(m.effective_flops_per_s == Approx(3.75e11));
    CHECK(m.utilization == Approx(0.75));
    CHECK(m.units_available == 4);
    CHECK(m.units_allocated == 4);
    CHECK(m.dram_bandwidth_bytes_per_s == Approx(8e10));
    CHECK(m.compute_time_s == Approx(1e9 / 3.75e11));
    CHECK(m.memory_time_s == Approx(1.25e-5));
    CHECK(m.bottleneck == "compute");
    CHECK(m.confidence == provenance::measured);  // fp32 efficiency is measured
    // Ridge 3.75e11 / 8e10 = 4.69 FLOP/B; AI 1e9 / 1e6 = 1000 FLOP/B.
    CHECK(m.explanation ==
          "MatMul on fpu: 4 of 4 tiles busy in 2 waves (75% of thread slots), AI 1000 FLOP/B "
          "above ridge 4.69 FLOP/B -> compute-bound");
}

TEST_CASE("elementwise kernel uses the vector unit and is launch-bound", "[reference]") {
    const fake::config c = toy();
    const hardware_model hw = hardware_model::from_config(c.view());
    kernel_work k;
    k.what = "Add";
    k.macs = 0;
    k.flops = 1e3;
    k.input_bytes = 1e3;
    k.threads = 50;
    const auto m = nnergy::reference::map_kernel(hw, hw.require(NNERGY_DTYPE_FLOAT16), k);
    // vpu 1e12 x 0.8 x (50 / 400) = 1e11 FLOP/s -> 10 ns; memory 1e3 / 8e10 = 12.5 ns;
    // launch 2 us dominates.
    CHECK(m.unit == "vpu");
    CHECK(m.effective_flops_per_s == Approx(1e11));
    CHECK(m.units_allocated == 1);
    CHECK(m.compute_time_s == Approx(1e-8));
    CHECK(m.memory_time_s == Approx(1.25e-8));
    CHECK(m.bottleneck == "overhead");
    CHECK(m.confidence == provenance::measured);  // the launch cost is measured
}

TEST_CASE("architecture plugin writes the mapping keys", "[reference]") {
    fake::install();
    fake::config hw = toy();
    fake::config cfg;  // the host keeps `hardware` and `precision` to itself
    const nnergy_create_args args = fake::create_args(cfg, &hw);
    nnergy::reference::reference_architecture arch{nnergy::sdk::context(args)};

    // conv1 (Conv 3x3, float32 output) fused with relu1; the graph is float32, run in float16.
    fake::graph g;
    g.tensor_dtypes = {NNERGY_DTYPE_FLOAT32, NNERGY_DTYPE_FLOAT32};
    g.nodes.push_back({"conv1", "Conv", {0}, {{"kernel_shape", {3, 3}}}});
    g.nodes.push_back({"relu1", "Relu", {1}, {}});
    fake::partition p;
    fake::kernel k{"conv1", "conv_relu", {0, 1}, {}};
    k.stats.macs = 5e5;
    k.stats.flops = 1e6;
    k.stats.input_bytes = 4e7;
    k.stats.output_bytes = 4e7;
    k.stats.weight_bytes = 2e7;
    k.stats.total_threads = 1e6;
    k.stats.anchor_node = 0;
    k.stats.all_counted = true;
    p.kernels.push_back(k);

    fake::mapping m;
    nnergy_map_options opt{sizeof(nnergy_map_options), NNERGY_DTYPE_FLOAT16, 0};
    nnergy::sdk::mapping_writer out(reinterpret_cast<nnergy_mapping*>(&m));
    arch.map_kernel(nnergy::sdk::graph_view(reinterpret_cast<const nnergy_graph*>(&g)),
                    nnergy::sdk::partition_view(reinterpret_cast<const nnergy_partition*>(&p)), 0,
                    opt, out);

    // 1e8 graph bytes in float32 -> 5e7 in float16. 1e6 threads over 400 slots: 2500 full
    // waves. mxu 4e12 x 0.5 = 2e12 FLOP/s; ridge 2e12 / 8e10 = 25; AI 1e6 / 5e7 = 0.02.
    CHECK(m.texts["unit"] == "mxu");
    CHECK(m.numbers["peak_flops_per_s"] == 4e12);
    CHECK(m.numbers["effective_flops_per_s"] == Approx(2e12));
    CHECK(m.numbers["utilization"] == Approx(1.0));
    CHECK(m.numbers["units_available"] == 4);
    CHECK(m.numbers["units_allocated"] == 4);
    CHECK(m.numbers["launch_overhead_s"] == 2e-6);
    CHECK(m.numbers["bytes_scale"] == 0.5);
    REQUIRE(m.levels.size() == 1);
    CHECK(m.levels[0].name == "dram");
    CHECK(m.levels[0].bytes == Approx(5e7));
    CHECK(m.levels[0].bandwidth == Approx(8e10));
    CHECK(m.texts["bottleneck"] == "memory:dram");
    CHECK(m.texts["confidence"] == "measured");
    CHECK(m.texts["explanation"] ==
          "Conv 3x3 (conv_relu) on mxu: 4 of 4 tiles busy in 2500 waves (100% of thread slots), "
          "AI 0.02 FLOP/B below ridge 25 FLOP/B -> memory-bound");
    CHECK(m.numbers["threads"] == 1e6);

    SECTION("a precision the hardware lacks is UNIMPLEMENTED, through the C boundary") {
        nnergy_map_options int8{sizeof(nnergy_map_options), NNERGY_DTYPE_INT8, 0};
        nnergy_status* st =
            nnergy::sdk::detail::architecture_map<nnergy::reference::reference_architecture>(
                static_cast<nnergy::sdk::component_base*>(&arch),
                reinterpret_cast<const nnergy_graph*>(&g),
                reinterpret_cast<const nnergy_partition*>(&p), 0, &int8,
                reinterpret_cast<nnergy_mapping*>(&m));
        REQUIRE(st);
        CHECK(fake::api().status_code(st) == NNERGY_CODE_UNIMPLEMENTED);
        CHECK(fake::str(fake::api().status_message(st)) ==
              "hardware 'toy' (toy.toml) has no compute precision 'int8' (available: float32, "
              "float16)");
        fake::api().status_release(st);
    }
}

TEST_CASE("hardware description errors name the file, line and key", "[reference]") {
    SECTION("missing DRAM bandwidth") {
        fake::config c = toy();
        c.without("memory.dram.bandwidth");
        auto e = error_of([&] { hardware_model::from_config(c.view()); });
        CHECK(e.code() == NNERGY_CODE_NOT_FOUND);
        CHECK(std::string(e.what()) ==
              "hardware 'toy' (toy.toml): missing required number 'memory.dram.bandwidth'");
    }
    SECTION("no precision at all") {
        fake::config c;
        c.text("name", "empty").number("memory.dram.bandwidth", 1e9);
        auto e = error_of([&] { hardware_model::from_config(c.view()); });
        CHECK(std::string(e.what()).find("no compute precision") != std::string::npos);
    }
    SECTION("efficiency above 100%") {
        fake::config c = toy();
        c.without("compute.float32.efficiency").number("compute.float32.efficiency", 1.5, 40);
        auto e = error_of([&] { hardware_model::from_config(c.view()); });
        CHECK(std::string(e.what()) ==
              "toy.toml:40: 'compute.float32.efficiency' must be a fraction in (0, 1] (write "
              "unit = \"1\" or \"%\"), got 1.5");
    }
    SECTION("a misspelled precision") {
        fake::config c = toy();
        c.number("compute.fp16.peak", 1e12, 41);
        auto e = error_of([&] { hardware_model::from_config(c.view()); });
        CHECK(std::string(e.what()).rfind("toy.toml:41: 'compute.fp16.peak': unknown precision "
                                          "'fp16'",
                                          0) == 0);
    }
    SECTION("an unknown provenance") {
        fake::config c = toy();
        c.without("efficiency.memory_provenance").text("efficiency.memory_provenance", "guess", 42);
        auto e = error_of([&] { hardware_model::from_config(c.view()); });
        CHECK(std::string(e.what()) ==
              "toy.toml:42: 'efficiency.memory_provenance' must be \"measured\", \"fitted\" or "
              "\"theoretical\", got \"guess\"");
    }
    SECTION("zero units") {
        fake::config c = toy();
        c.without("compute.units").number("compute.units", 0, 43);
        auto e = error_of([&] { hardware_model::from_config(c.view()); });
        CHECK(std::string(e.what()) == "toy.toml:43: 'compute.units' must be at least 1, got 0");
    }
    SECTION("a fraction of a unit") {
        fake::config c = toy();
        c.without("compute.units").number("compute.units", 12.8, 43);
        auto e = error_of([&] { hardware_model::from_config(c.view()); });
        CHECK(std::string(e.what()) ==
              "toy.toml:43: 'compute.units' must be a whole count, got 12.8");
    }
    SECTION("no precision requested") {
        fake::config c = toy();
        const hardware_model hw = hardware_model::from_config(c.view());
        auto e = error_of([&] { hw.require(NNERGY_DTYPE_UNDEFINED); });
        CHECK(e.code() == NNERGY_CODE_INVALID_ARGUMENT);
    }
}

TEST_CASE("threads: outputs, or inputs for kernels without multiply-accumulates", "[reference]") {
    using nnergy::modeling::available_threads;
    // A MatMul keeps its 4096 outputs even with 4 MB of input.
    CHECK(available_threads(1e6, 4096, 4e6, NNERGY_DTYPE_FLOAT32) == 4096);
    // ReduceMean of 1M float32 values to one: 4e6 B / 4 B = 1M threads, not 1.
    CHECK(available_threads(0, 1, 4e6, NNERGY_DTYPE_FLOAT32) == 1e6);
    // float16 elements are 2 bytes.
    CHECK(available_threads(0, 1, 4e6, NNERGY_DTYPE_FLOAT16) == 2e6);
    // Elementwise Add of two 1000-element tensors: 2000 inputs > 1000 outputs.
    CHECK(available_threads(0, 1000, 8000, NNERGY_DTYPE_FLOAT32) == 2000);
    // Unknown element type counts as 4 bytes; nothing at all is still one thread.
    CHECK(available_threads(0, 0, 400, NNERGY_DTYPE_UNDEFINED) == 100);
    CHECK(available_threads(0, 0, 0, NNERGY_DTYPE_FLOAT32) == 1);
}

TEST_CASE("bytes follow the compute precision for floating point tensors", "[reference]") {
    using nnergy::modeling::bytes_scale;
    CHECK(bytes_scale(NNERGY_DTYPE_FLOAT32, NNERGY_DTYPE_FLOAT16) == 0.5);
    CHECK(bytes_scale(NNERGY_DTYPE_FLOAT32, NNERGY_DTYPE_TFLOAT32) == 1.0);  // stored as fp32
    CHECK(bytes_scale(NNERGY_DTYPE_FLOAT32, NNERGY_DTYPE_INT8) == 0.25);
    CHECK(bytes_scale(NNERGY_DTYPE_FLOAT16, NNERGY_DTYPE_FLOAT32) == 2.0);
    CHECK(bytes_scale(NNERGY_DTYPE_INT64, NNERGY_DTYPE_FLOAT16) == 1.0);  // indices keep size
    CHECK(bytes_scale(NNERGY_DTYPE_UNDEFINED, NNERGY_DTYPE_FLOAT16) == 1.0);
}

TEST_CASE("architecture plugin takes no configuration keys", "[reference]") {
    fake::install();
    fake::config hw = toy();
    fake::config cfg;
    cfg.file("pipe.toml").text("hardwre", "h100-sxm5", 17);
    const nnergy_create_args args = fake::create_args(cfg, &hw);
    CHECK_THROWS_WITH(nnergy::reference::reference_architecture{nnergy::sdk::context(args)},
                      "pipe.toml:17: unknown key 'hardwre' for nnergy.architecture.reference (it "
                      "takes no keys)");
}
