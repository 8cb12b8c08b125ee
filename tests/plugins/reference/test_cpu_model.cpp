// SPDX-License-Identifier: Apache-2.0
// The CPU architecture model (units, output blocks over cores, cache levels, weight repacking)
// on catalog files, and the inline runtime timeline (a CPU framework runs its own kernels).
#include <catch2/catch.hpp>

#include "catalog_file.hpp"
#include "cpu_architecture.hpp"
#include "cpu_model.hpp"
#include "runtime_model.hpp"

using nnergy::test::loaded;
namespace cpu = nnergy::cpu;
namespace roofline = nnergy::roofline;

namespace {

/// A convolution as the CPU model sees it, float32 bytes.
cpu::cpu_kernel conv(double batch, double cin, double cout, double hw, double window) {
    cpu::cpu_kernel k;
    k.cls = nnergy::modeling::op_class::conv;
    k.outputs = batch * cout * hw * hw;
    k.macs = k.outputs * cin * window * window;
    k.flops = 2 * k.macs;
    k.input_bytes = 4 * batch * cin * hw * hw;
    k.output_bytes = 4 * k.outputs;
    k.weight_bytes = 4 * cout * cin * window * window;
    k.threads = k.outputs;
    return k;
}

cpu::cpu_kernel elementwise(double elements) {
    cpu::cpu_kernel k;
    k.cls = nnergy::modeling::op_class::elementwise;
    k.flops = elements;
    k.input_bytes = k.output_bytes = 4 * elements;
    k.outputs = k.threads = elements;
    return k;
}

struct host_cpu {
    loaded file{"xeon-5th-gen-16vcpu"};
    cpu::cpu_hardware hw = cpu::cpu_hardware::from_config(file.view());
    cpu::cpu_mapping map(const char* precision, const cpu::cpu_kernel& k,
                         bool repack = false) const {
        cpu::cpu_runtime rt;
        rt.repack_weights_per_call = repack;
        rt.parallel_grain = 32768;  // the eager profile's
        return cpu::map_kernel(hw, *hw.base.find(precision), rt, k);
    }
};

}  // namespace

TEST_CASE("cpu: matrix work on the matrix unit, depthwise and elementwise on the vector unit",
          "[cpu]") {
    const host_cpu c;
    CHECK(c.map("float32", conv(1, 64, 64, 56, 3)).unit == "avx512");
    CHECK(c.map("bfloat16", conv(1, 64, 64, 56, 3)).unit == "amx");
    cpu::cpu_kernel dw = conv(1, 1, 32, 112, 3);
    dw.cls = nnergy::modeling::op_class::depthwise;
    CHECK(c.map("bfloat16", dw).unit == "avx512");
    CHECK(c.map("bfloat16", elementwise(1e6)).unit == "avx512");
}

TEST_CASE("cpu: compute time follows the fitted class constants of the file", "[cpu]") {
    const host_cpu c;
    const cpu::cpu_kernel k = conv(8, 256, 256, 14, 3);  // K = 2304, many blocks per core
    const double peak = c.file.number("compute.float32.peak");
    // Short reductions run below the unit's rate: K / (K + k_half).
    const double eff = c.file.number("cpu.kernels.conv.efficiency") * 2304 /
                       (2304 + c.file.number("cpu.kernels.conv.k_half"));
    const cpu::cpu_mapping m = c.map("float32", k);
    CHECK(m.utilization == Approx(1.0));
    CHECK(m.reduction_depth == Approx(2304));
    CHECK(m.compute_efficiency == Approx(eff));
    CHECK(m.compute_time_s == Approx(k.flops / (peak * eff)));
    // bfloat16 convolutions on AMX too, with their own k_half.
    const double k_half = c.file.number("cpu.kernels.conv.bfloat16.k_half");
    const double bf16_eff = c.file.number("cpu.kernels.conv.bfloat16.efficiency");
    const cpu::cpu_mapping b = c.map("bfloat16", k);
    CHECK(b.compute_efficiency == Approx(bf16_eff * 2304 / (2304 + k_half)));
    const cpu::cpu_mapping shallow = c.map("bfloat16", conv(8, 16, 256, 14, 1));
    CHECK(shallow.compute_efficiency < b.compute_efficiency);
}

TEST_CASE("cpu: the 8490H runs each class at the measured 5th-gen host's rate per core and GHz",
          "[cpu]") {
    // xeon-8490h borrows the 5th-gen host's class tables, whose efficiencies are shares of that
    // host's measured matmul rates, and states as its unit efficiency the share of the derived
    // peak those rates are: a class runs as fast per core and GHz on both. The host's cores are
    // its vCPUs over its hardware threads per core; its clock, 2.30 GHz, is what its one-thread
    // fp32 matmul rate implies (the file's [cpu] comment: no key holds it).
    const host_cpu host;
    const double host_core_ghz =
        host.file.number("compute.units") / host.file.number("cpu.smt") * 2.30;
    const loaded spr("xeon-8490h");
    const cpu::cpu_hardware hw = cpu::cpu_hardware::from_config(spr.view());
    const double spr_core_ghz = spr.number("cpu.cores") * spr.number("cpu.base_clock") / 1e9;
    const cpu::cpu_kernel dense = conv(8, 256, 256, 14, 3);
    cpu::cpu_kernel depthwise = conv(8, 1, 256, 14, 3);
    depthwise.cls = nnergy::modeling::op_class::depthwise;
    for (const char* precision : {"float32", "bfloat16"})
        for (const cpu::cpu_kernel& k : {dense, depthwise}) {
            const cpu::cpu_mapping there = host.map(precision, k);
            const cpu::cpu_mapping here = cpu::map_kernel(hw, *hw.base.find(precision), {}, k);
            INFO(precision << " " << nnergy::modeling::class_name(k.cls));
            CHECK(here.unit == there.unit);
            CHECK(here.peak_flops_per_s * here.compute_efficiency / spr_core_ghz ==
                  Approx(there.peak_flops_per_s * there.compute_efficiency / host_core_ghz)
                      .epsilon(0.01));
        }
}

TEST_CASE("cpu: a kernel with few outputs leaves cores idle", "[cpu]") {
    const host_cpu c;
    // 64 outputs in blocks of 32 float32 lanes: 2 of 16 cores, 64 of 512 lane slots.
    cpu::cpu_kernel k = conv(1, 512, 64, 1, 1);
    const cpu::cpu_mapping m = c.map("float32", k);
    CHECK(m.units_allocated == 2);
    CHECK(m.utilization == Approx(64.0 / (16 * 32)));
    CHECK(m.explanation.find("2 of 16 vCPUs") != std::string::npos);
}

TEST_CASE("cpu: the smallest cache holding the working set serves its bytes", "[cpu]") {
    const host_cpu c;
    REQUIRE(c.hw.caches.size() == 2);  // L2 (per core) and L3 (the chip), smallest first
    CHECK(c.hw.caches[0].name == "l2");
    CHECK(c.hw.caches[0].capacity == Approx(16 * 2 * 1024.0 * 1024));
    CHECK(c.hw.caches[1].name == "l3");
    CHECK(c.hw.caches[1].capacity == Approx(300 * 1024.0 * 1024));
    const cpu::cpu_mapping small = c.map("float32", elementwise(1e5));  // 0.8 MB
    CHECK(small.memory_level == "l2");
    CHECK(small.memory_bandwidth == Approx(c.file.number("memory.l2.bandwidth")));
    const cpu::cpu_mapping mid = c.map("float32", elementwise(1e7));  // 80 MB > 32 MiB of L2
    CHECK(mid.memory_level == "l3");
    CHECK(mid.memory_time_s == Approx(8e7 / c.file.number("memory.l3.bandwidth")));
    CHECK(mid.bottleneck == "memory:l3");
    const cpu::cpu_mapping big = c.map("float32", elementwise(1e8));  // 800 MB > 300 MiB of L3
    CHECK(big.memory_level == "dram");
    CHECK(big.memory_time_s == Approx(8e8 / c.file.number("memory.dram.bandwidth")));
    CHECK(big.bottleneck == "memory:dram");

    // A file without cache bandwidths sends everything to DRAM.
    const loaded spr("xeon-8490h");
    const cpu::cpu_hardware hw = cpu::cpu_hardware::from_config(spr.view());
    CHECK(hw.caches.empty());
    CHECK(cpu::map_kernel(hw, *hw.base.find("float32"), {}, elementwise(1e5)).memory_level ==
          "dram");
}

TEST_CASE("cpu: weights are repacked on every call only when the runtime says so", "[cpu]") {
    const host_cpu c;
    const cpu::cpu_kernel k = conv(1, 512, 512, 7, 3);
    const cpu::cpu_mapping once = c.map("float32", k, false);
    const cpu::cpu_mapping per_call = c.map("float32", k, true);
    CHECK(once.weight_prep_s == 0);
    const double bw = c.file.number("cpu.kernels.conv.weight_prep_bandwidth");
    CHECK(per_call.weight_prep_s == Approx(k.weight_bytes / bw));
    CHECK(per_call.fixed_time_s == Approx(once.fixed_time_s + per_call.weight_prep_s));
    // Elementwise kernels have no weights to repack.
    CHECK(c.map("float32", elementwise(1e5), true).weight_prep_s == 0);

    const loaded eager("pytorch-eager-cpu", "runtimes");
    CHECK(cpu::read_runtime(eager.view()).repack_weights_per_call);
    CHECK_FALSE(cpu::read_runtime(nnergy::sdk::config_view()).repack_weights_per_call);
    fake::config bad;
    bad.file("rt.toml").text("weights.prepack", "sometimes", 7);
    CHECK_THROWS_WITH(cpu::read_runtime(bad.view()),
                      Catch::Contains("rt.toml:7: 'weights.prepack' must be"));
}

TEST_CASE("cpu: the eager runtime's native convolutions follow PyTorch's rule", "[cpu]") {
    const loaded eager("pytorch-eager-cpu", "runtimes");
    const cpu::native_conv_rule rule = cpu::read_runtime(eager.view()).native_conv;
    REQUIRE(rule.precision == "float32");
    const auto conv_of = [](double batch, double c, double hw, double k) {
        cpu::conv_geometry g;
        g.batch = batch;
        g.input_elements = batch * c * hw * hw;
        g.kernel_h = g.kernel_w = k;
        return g;
    };
    // A squeeze-excitation 1x1 convolution of one image: 960 input elements.
    CHECK(rule.applies(conv_of(1, 960, 1, 1), "float32", 16));
    CHECK_FALSE(rule.applies(conv_of(1, 960, 1, 1), "bfloat16", 16));  // bf16: always oneDNN
    CHECK_FALSE(rule.applies(conv_of(8, 960, 1, 1), "float32", 16));   // batch 8
    CHECK(rule.applies(conv_of(1, 64, 14, 1), "float32", 16));         // 12544 elements
    CHECK_FALSE(rule.applies(conv_of(1, 384, 14, 1), "float32", 16));  // 75264 elements
    CHECK_FALSE(rule.applies(conv_of(1, 4, 8, 5), "float32", 16));     // 5x5: oneDNN
    cpu::conv_geometry grouped = conv_of(1, 4, 8, 3);
    grouped.groups = 2;
    CHECK_FALSE(rule.applies(grouped, "float32", 16));
    // One thread keeps an unstrided 1x1 convolution of a batch below 16 native, whatever its size.
    CHECK(rule.applies(conv_of(8, 256, 56, 1), "float32", 1));
    CHECK_FALSE(rule.applies(conv_of(16, 256, 56, 1), "float32", 1));
    cpu::conv_geometry strided = conv_of(8, 256, 56, 1);
    strided.strided = true;
    CHECK_FALSE(rule.applies(strided, "float32", 1));
    // No [convolution.native]: every convolution goes to the library.
    CHECK_FALSE(cpu::read_runtime(nnergy::sdk::config_view())
                    .native_conv.applies(conv_of(1, 960, 1, 1), "float32", 16));

    fake::config missing;
    missing.file("rt.toml").text("convolution.native.precision", "float32", 3);
    CHECK_THROWS_WITH(cpu::read_runtime(missing.view()),
                      Catch::Contains("rt.toml:3: [convolution.native] needs 'max_batch'"));
    fake::config typo;
    typo.file("rt.toml").number("convolution.native.max_batchs", 1, 5);
    CHECK_THROWS_WITH(cpu::read_runtime(typo.view()),
                      Catch::Contains("rt.toml:5: unknown key 'convolution.native.max_batchs'"));
}

TEST_CASE("cpu: a native convolution is priced as the GEMM it runs", "[cpu]") {
    const host_cpu c;
    cpu::cpu_runtime rt;
    rt.repack_weights_per_call = true;
    rt.parallel_grain = 32768;  // the eager profile's: too few outputs to split over threads
    // 960 -> 240 channels on a 1x1 image: one output position, a matrix-vector product.
    cpu::cpu_kernel k = conv(1, 960, 240, 1, 1);
    k.out_channels = 240;
    const cpu::cpu_mapping library = cpu::map_kernel(c.hw, *c.hw.base.find("float32"), rt, k);
    CHECK(library.fixed_time_s ==
          Approx(c.file.number("cpu.kernels.conv.fixed_time") + library.weight_prep_s));
    CHECK(library.weight_prep_s > 0);
    k.native_conv = true;
    const cpu::cpu_mapping native = cpu::map_kernel(c.hw, *c.hw.base.find("float32"), rt, k);
    CHECK(cpu::pricing_class(k) == nnergy::modeling::op_class::gemv);
    CHECK(native.weight_prep_s == 0);  // the GEMM reads the weights as they are
    CHECK(native.fixed_time_s ==
          c.hw.params(nnergy::modeling::op_class::gemv, "float32").fixed_time_s);
    CHECK(native.fixed_time_s < library.fixed_time_s);
    CHECK(native.explanation.find("[conv as gemv, the runtime's native path]") !=
          std::string::npos);
    // Many output positions make it a GEMM; the column buffer's traffic adds to its bytes.
    cpu::cpu_kernel wide = conv(1, 64, 384, 14, 1);
    wide.out_channels = 384;
    wide.native_conv = true;
    CHECK(cpu::pricing_class(wide) == nnergy::modeling::op_class::gemm);
    const double bytes = cpu::map_kernel(c.hw, *c.hw.base.find("float32"), rt, wide).memory_bytes;
    wide.column_bytes = 1e6;
    CHECK(cpu::map_kernel(c.hw, *c.hw.base.find("float32"), rt, wide).memory_bytes ==
          Approx(bytes + 1e6));
}

TEST_CASE("cpu: autocast casts stored weights on every call", "[cpu]") {
    const host_cpu c;
    cpu::cpu_runtime rt;
    cpu::cpu_kernel k = conv(1, 512, 512, 7, 3);
    k.weight_bytes /= 2;                         // bf16 compute
    k.stored_weight_bytes = 2 * k.weight_bytes;  // float32 as stored
    const nnergy::modeling::precision_units& bf16 = *c.hw.base.find("bfloat16");
    CHECK(cpu::map_kernel(c.hw, bf16, rt, k).weight_cast_s == 0);  // the runtime casts nothing
    rt.cast_weights_per_call = true;
    const cpu::cpu_mapping m = cpu::map_kernel(c.hw, bf16, rt, k);
    REQUIRE(c.hw.weight_cast_bandwidth == Approx(c.file.number("cpu.weight_cast_bandwidth")));
    CHECK(m.weight_cast_s == Approx(k.stored_weight_bytes / c.hw.weight_cast_bandwidth));
    CHECK(m.explanation.find("weights cast") != std::string::npos);
    // The cast reads the stored bytes and writes the compute ones: energy events count them.
    CHECK(cpu::weight_traffic(k, m) == Approx(3 * k.weight_bytes));
    rt.repack_weights_per_call = true;
    const cpu::cpu_mapping both = cpu::map_kernel(c.hw, bf16, rt, k);
    REQUIRE(both.weight_prep_s > 0);
    CHECK(cpu::weight_traffic(k, both) == Approx(3 * k.weight_bytes + 2 * k.weight_bytes));
    CHECK(cpu::weight_traffic(k, cpu::map_kernel(c.hw, bf16, {}, k)) == 0);

    const loaded eager("pytorch-eager-cpu", "runtimes");
    CHECK(cpu::read_runtime(eager.view()).cast_weights_per_call);
    fake::config bad;
    bad.file("rt.toml").text("weights.cast", "always", 5);
    CHECK_THROWS_WITH(
        cpu::read_runtime(bad.view()),
        Catch::Contains("rt.toml:5: 'weights.cast' must be \"per_call\" or \"none\""));
}

namespace {

/// The validation host run on `threads` of its 16 vCPUs, as validate sets it for an op run.
struct host_on_threads {
    loaded file{"xeon-5th-gen-16vcpu"};
    cpu::cpu_hardware hw;
    explicit host_on_threads(double threads) {
        static const std::string key = "cpu.threads";
        nnergy_named_value v{};
        v.struct_size = sizeof v;
        v.name = fake::sv(key);
        v.kind = NNERGY_VALUE_FLOAT;
        v.float_value = threads;
        file.named.push_back(v);
        hw = cpu::cpu_hardware::from_config(file.view());
    }
    cpu::cpu_mapping map(const cpu::cpu_kernel& k, double grain = 32768) const {
        cpu::cpu_runtime rt;
        rt.parallel_grain = grain;
        return cpu::map_kernel(hw, *hw.base.find("float32"), rt, k);
    }
};

}  // namespace

TEST_CASE("cpu: threads keep the cores busy that their placement allows", "[cpu]") {
    // One hardware thread per core: every thread is a core.
    CHECK(cpu::busy_cores(5, 16, 1, false) == 5);
    CHECK(cpu::busy_cores(5, 16, 1, true) == 5);
    // Two per core, placed by an OS that sees the siblings: a core each first.
    CHECK(cpu::busy_cores(4, 16, 2, false) == 4);
    CHECK(cpu::busy_cores(12, 16, 2, false) == 8);
    // Placed blind: the expected count of the 8 cores holding at least one of t threads,
    // 8 (1 - C(14, t) / C(16, t)).
    CHECK(cpu::busy_cores(1, 16, 2, true) == Approx(1));
    CHECK(cpu::busy_cores(2, 16, 2, true) == Approx(8 * (1 - 91.0 / 120)));
    CHECK(cpu::busy_cores(4, 16, 2, true) == Approx(8 * (1 - 1001.0 / 1820)));
    CHECK(cpu::busy_cores(8, 16, 2, true) == Approx(8 * (1 - 3003.0 / 12870)));
    CHECK(cpu::busy_cores(16, 16, 2, true) == Approx(8));
}

TEST_CASE("cpu: fewer threads reach the busy cores' compute and what each core streams", "[cpu]") {
    const host_on_threads all(16), one(1), eight(8);
    CHECK(all.hw.compute_share == Approx(1));
    CHECK(one.hw.compute_share == Approx(1.0 / 8));  // one core of the 8 behind 16 vCPUs
    CHECK(eight.hw.compute_share == Approx((1 - 3003.0 / 12870)));
    // A large convolution: compute-bound, 8x longer on one thread, not 16x.
    const cpu::cpu_kernel k = conv(8, 256, 256, 28, 3);
    const double t16 = all.map(k).compute_time_s, t1 = one.map(k).compute_time_s;
    CHECK(t1 / t16 == Approx(8));
    // A 48 MB stream from L3: one core streams its 20.9 GB/s, all of them the level's rate.
    const cpu::cpu_kernel add = elementwise(6e6);  // 48 MB: beyond 16 x 2 MiB of L2
    const double per_core = one.file.number("memory.per_core_bandwidth");
    CHECK(per_core == Approx(20.9e9));
    CHECK(one.map(add).memory_level == "l3");
    const double eff =
        one.hw.params(nnergy::modeling::op_class::elementwise, "float32").memory_efficiency;
    CHECK(one.map(add).memory_bandwidth == Approx(per_core * eff));
    CHECK(all.map(add).memory_bandwidth == Approx(all.file.number("memory.l3.bandwidth") * eff));
    // The threads' cores bring their own L2: 2 MiB each.
    CHECK(one.hw.caches[0].capacity == Approx(2 * 1024.0 * 1024));
    CHECK(one.map(add).units_allocated == 1);
}

TEST_CASE("cpu: an op split over threads pays the team's fork and join", "[cpu]") {
    const host_on_threads all(16), one(1);
    const double fork_join = all.file.number("cpu.fork_join_time");
    REQUIRE(fork_join > 0);
    const cpu::cpu_kernel big = elementwise(1e6), small = elementwise(1000);
    CHECK(all.map(big).fork_join_s == Approx(fork_join));
    CHECK(all.map(big).fixed_time_s ==
          Approx(all.file.number("cpu.kernels.elementwise.fixed_time") + fork_join));
    CHECK(all.map(big).explanation.find("fork/join") != std::string::npos);
    // Below the runtime's grain the calling thread runs it alone; on one thread nothing forks.
    CHECK(all.map(small).fork_join_s == 0);
    CHECK(one.map(big).fork_join_s == 0);
    // The eager profile's grain is ATen's.
    const loaded eager("pytorch-eager-cpu", "runtimes");
    CHECK(cpu::read_runtime(eager.view()).parallel_grain == 32768);
    fake::config bad;
    bad.file("rt.toml").number("parallel.grain", -1, 4);
    CHECK_THROWS_WITH(cpu::read_runtime(bad.view()),
                      Catch::Contains("rt.toml:4: 'parallel.grain' must be a non-negative"));
}

TEST_CASE("cpu: an output above the runtime's fresh-memory threshold pays its first touch",
          "[cpu]") {
    const host_on_threads all(16), one(1);
    const double bw = all.file.number("cpu.first_touch_bandwidth");
    const double serial = all.file.number("cpu.first_touch_serial");
    REQUIRE(bw > 0);
    REQUIRE(serial > 0);
    REQUIRE(serial < 1);
    cpu::cpu_kernel add = elementwise(16777216);  // a 64 MiB output
    add.fresh_output_bytes = add.output_bytes;
    // One thread faults its pages at one core's rate; sixteen keep the 8 cores busy, which
    // share all but the serial part.
    CHECK(one.map(add).first_touch_s == Approx(add.output_bytes / bw));
    const cpu::cpu_mapping m = all.map(add);
    CHECK(m.first_touch_s == Approx(add.output_bytes / bw * (serial + (1 - serial) / 8)));
    CHECK(m.fixed_time_s == Approx(all.file.number("cpu.kernels.elementwise.fixed_time") +
                                   all.file.number("cpu.fork_join_time") + m.first_touch_s));
    CHECK(m.explanation.find("fresh output pages") != std::string::npos);
    // An output the runtime reuses costs nothing more.
    CHECK(all.map(elementwise(16777216)).first_touch_s == 0);
    // An entry without the rate charges nothing.
    const loaded spr("xeon-8490h");
    const cpu::cpu_hardware plain = cpu::cpu_hardware::from_config(spr.view());
    CHECK(cpu::map_kernel(plain, *plain.base.find("float32"), {}, add).first_touch_s == 0);

    // The eager profile's threshold is glibc's largest mmap threshold.
    const loaded eager("pytorch-eager-cpu", "runtimes");
    CHECK(cpu::read_runtime(eager.view()).fresh_output_threshold == 32.0 * 1024 * 1024);
    CHECK(cpu::read_runtime(nnergy::sdk::config_view()).fresh_output_threshold == 0);
    fake::config bad;
    bad.file("rt.toml").number("allocator.fresh_above", -1, 6);
    CHECK_THROWS_WITH(cpu::read_runtime(bad.view()),
                      Catch::Contains("rt.toml:6: 'allocator.fresh_above' must be a non-negative "
                                      "size in bytes"));
    fake::config typo;
    typo.file("rt.toml").number("allocator.fresh_abov", 1 << 25, 5);
    CHECK_THROWS_WITH(cpu::read_runtime(typo.view()),
                      Catch::Contains("rt.toml:5: unknown key 'allocator.fresh_abov' in "
                                      "[allocator] (expected: fresh_above)"));
}

TEST_CASE("cpu: thread and first-touch keys out of range are refused with file, line and key",
          "[cpu]") {
    const auto refused = [](auto&& add, const char* what) {
        fake::config hw;
        hw.file("cpu.toml")
            .text("name", "toy", 1)
            .number("compute.units", 8, 2)
            .number("compute.float32.peak", 1e12, 3)
            .number("memory.dram.bandwidth", 1e11, 4);
        add(hw);
        CHECK_THROWS_WITH(cpu::cpu_hardware::from_config(hw.view()), Catch::Contains(what));
    };
    refused([](fake::config& h) { h.number("cpu.threads", 9, 7); },
            "cpu.toml:7: 'cpu.threads' must be a whole count of at most compute.units");
    refused([](fake::config& h) { h.number("cpu.threads", 2.5, 7); },
            "cpu.toml:7: 'cpu.threads' must be a whole count");
    // Fractional units without cpu.threads (whose default they are) name the units' line.
    const auto fractional_units = [] {
        fake::config hw;
        hw.file("cpu.toml")
            .text("name", "toy", 1)
            .number("compute.units", 12.8, 2)
            .number("compute.float32.peak", 1e12, 3)
            .number("memory.dram.bandwidth", 1e11, 4);
        cpu::cpu_hardware::from_config(hw.view());
    };
    CHECK_THROWS_WITH(fractional_units(),
                      Catch::Contains("cpu.toml:2: 'compute.units' must be a whole count"));
    refused([](fake::config& h) { h.number("cpu.smt", 1.5, 8); },
            "cpu.toml:8: 'cpu.smt' (hardware threads per core) must be a whole count");
    refused([](fake::config& h) { h.text("cpu.thread_placement", "random", 9); },
            "cpu.toml:9: 'cpu.thread_placement' must be \"spread\" or \"unaware\", got "
            "\"random\"");
    refused([](fake::config& h) { h.number("cpu.first_touch_serial", 1.5, 7); },
            "cpu.toml:7: 'cpu.first_touch_serial' is a share of the time, at most 100 %");
}

TEST_CASE("cpu: bad class constants are refused with file, line and key", "[cpu]") {
    fake::config hw;
    hw.file("cpu.toml")
        .text("name", "toy", 1)
        .text("class", "cpu", 2)
        .number("compute.float32.peak", 1e12, 3)
        .number("memory.dram.bandwidth", 1e11, 4)
        .number("cpu.kernels.conv.efficiency", 1.5, 9);
    CHECK_THROWS_WITH(cpu::cpu_hardware::from_config(hw.view()),
                      Catch::Contains("cpu.toml:9: 'cpu.kernels.conv.efficiency' must be a "
                                      "fraction in (0, 1]"));
    fake::config neg;
    neg.file("cpu.toml")
        .text("name", "toy", 1)
        .number("compute.float32.peak", 1e12, 3)
        .number("memory.dram.bandwidth", 1e11, 4)
        .number("memory.l2.bandwidth", -5, 6);
    CHECK_THROWS_WITH(cpu::cpu_hardware::from_config(neg.view()),
                      Catch::Contains("cpu.toml:6: 'memory.l2.bandwidth' must be at least 0"));
}

TEST_CASE("runtime: inline dispatch and execution alternate on the host", "[runtime]") {
    roofline::runtime_profile p;
    p.mode = roofline::runtime_mode::inline_host;
    p.dispatch_per_kernel_s = 5e-6;
    p.dispatch_per_view_s = 1e-6;
    p.per_call_s = 100e-6;
    std::vector<roofline::issued_kernel> ks(3);
    ks[0].device_s = 10e-6;
    ks[1].device_s = 0;  // a view: dispatched, runs nothing
    ks[1].views = 1;
    ks[2].device_s = 20e-6;
    const roofline::runtime_timeline t = roofline::run_timeline(p, ks);
    CHECK(t.kernels[0].start_s == Approx(105e-6));
    CHECK(t.kernels[2].start_s == Approx(105e-6 + 10e-6 + 1e-6 + 5e-6));
    CHECK(t.latency_s == Approx(100e-6 + 5e-6 + 10e-6 + 1e-6 + 5e-6 + 20e-6));
    CHECK(t.host_s == Approx(100e-6 + 5e-6 + 1e-6 + 5e-6));
    CHECK(t.device_busy_s == Approx(30e-6));
    // The module layer around each op adds to the dispatch of ops that launch a kernel only.
    roofline::runtime_profile modules = p;
    modules.dispatch_per_module_s = 3e-6;
    const roofline::runtime_timeline tm = roofline::run_timeline(modules, ks);
    CHECK(tm.kernels[0].host_dispatch_s == Approx(8e-6));
    CHECK(tm.kernels[1].host_dispatch_s == Approx(1e-6));
    CHECK(tm.latency_s == Approx(t.latency_s + 2 * 3e-6));
    // Eager with the same costs overlaps dispatch with execution: never slower.
    p.mode = roofline::runtime_mode::eager;
    CHECK(roofline::run_timeline(p, ks).latency_s < t.latency_s);

    const loaded cpu_eager("pytorch-eager-cpu", "runtimes");
    CHECK(roofline::runtime_profile::from_config(cpu_eager.view()).mode ==
          roofline::runtime_mode::inline_host);
}

TEST_CASE("runtime: host dispatch per op class, from the profile or the machine", "[runtime]") {
    fake::config rt;
    rt.text("name", "toy-eager")
        .text("mode", "eager")
        .number("dispatch.per_kernel", 5e-6)
        .number("dispatch.per_class.conv", 20e-6);
    const roofline::runtime_profile p = roofline::runtime_profile::from_config(rt.view());
    REQUIRE(p.has_class_dispatch);
    CHECK(p.dispatch_for(nnergy::modeling::op_class::conv) == Approx(20e-6));
    CHECK(p.dispatch_for(nnergy::modeling::op_class::elementwise) == Approx(5e-6));  // per_kernel
    // A machine's entry replaces or adds classes for this profile only.
    fake::config hw;
    hw.number("runtime.toy-eager.dispatch.per_class.elementwise", 2e-6)
        .number("runtime.other.dispatch.per_class.conv", 99e-6);
    const roofline::runtime_profile m = p.on_machine(hw.view());
    CHECK(m.dispatch_for(nnergy::modeling::op_class::elementwise) == Approx(2e-6));
    CHECK(m.dispatch_for(nnergy::modeling::op_class::conv) == Approx(20e-6));
    // The timeline issues each kernel at its own cost.
    std::vector<roofline::issued_kernel> ks(2);
    ks[0].device_s = ks[1].device_s = 1e-6;
    ks[0].dispatch_s = m.dispatch_for(nnergy::modeling::op_class::conv);
    const roofline::runtime_timeline t = roofline::run_timeline(m, ks);
    CHECK(t.kernels[0].host_dispatch_s == Approx(20e-6));
    CHECK(t.kernels[1].host_dispatch_s == Approx(5e-6));  // no class given: per_kernel
    // Without per-class keys nothing changes.
    CHECK_FALSE(
        roofline::runtime_profile::from_config(nnergy::sdk::config_view()).has_class_dispatch);
    // A misspelt class is an error naming the file and line, in a profile or a machine's entry.
    fake::config typo;
    typo.file("rt.toml")
        .text("name", "toy-eager", 1)
        .text("mode", "eager", 2)
        .number("dispatch.per_kernel", 5e-6, 3)
        .number("dispatch.per_class.convv", 20e-6, 4);
    CHECK_THROWS_WITH(roofline::runtime_profile::from_config(typo.view()),
                      Catch::Contains("rt.toml:4: 'dispatch.per_class.convv': unknown op class"));
    fake::config machine;
    machine.file("hw.toml").number("runtime.toy-eager.dispatch.per_class.pool", 1e-6, 9);
    CHECK_THROWS_WITH(p.on_machine(machine.view()),
                      Catch::Contains("hw.toml:9: 'runtime.toy-eager.dispatch.per_class.pool'"));
}

TEST_CASE("runtime: eager calls issued back to back take the longer of host and device",
          "[runtime]") {
    roofline::runtime_profile p;
    p.mode = roofline::runtime_mode::eager;
    p.dispatch_per_kernel_s = 30e-6;
    p.kernel_gap_s = 1e-6;
    std::vector<roofline::issued_kernel> ks(2);
    ks[0].device_s = ks[1].device_s = 10e-6;
    // One pass: the last kernel starts once the host has issued it, 60 us in.
    CHECK(roofline::run_timeline(p, ks).latency_s == Approx(70e-6));
    // Back to back, the host issues the next call while the device runs this one.
    p.repeated_calls = true;
    CHECK(roofline::run_timeline(p, ks).latency_s == Approx(60e-6));
    ks[0].device_s = ks[1].device_s = 100e-6;  // device-bound: the kernels and their gaps
    CHECK(roofline::run_timeline(p, ks).latency_s == Approx(202e-6));
    // The flag is read from the profile and from a machine's entry.
    fake::config rt;
    rt.text("name", "toy-eager")
        .text("mode", "eager")
        .number("dispatch.per_kernel", 5e-6)
        .number("dispatch.repeated_calls", 1);
    const roofline::runtime_profile from_profile =
        roofline::runtime_profile::from_config(rt.view());
    CHECK(from_profile.repeated_calls);
    fake::config hw;
    hw.number("runtime.toy-eager.dispatch.repeated_calls", 0);
    CHECK_FALSE(from_profile.on_machine(hw.view()).repeated_calls);
    fake::config yes;
    yes.boolean("runtime.toy-eager.dispatch.repeated_calls", true);
    roofline::runtime_profile off = from_profile;
    off.repeated_calls = false;
    CHECK(off.on_machine(yes.view()).repeated_calls);
    // Anything but 1 or 0 (true or false) is an error naming the file and key, not a "no".
    for (double bad : {-1.0, 0.5, 2.0}) {
        fake::config wrong;
        wrong.number("runtime.toy-eager.dispatch.repeated_calls", bad, 12);
        CHECK_THROWS_WITH(from_profile.on_machine(wrong.view()),
                          Catch::Contains(":12") &&
                              Catch::Contains("'runtime.toy-eager.dispatch.repeated_calls' must "
                                              "be 1 or 0"));
    }
    fake::config text;
    text.text("runtime.toy-eager.dispatch.repeated_calls", "yes", 3);
    CHECK_THROWS_WITH(from_profile.on_machine(text.view()), Catch::Contains("must be 1 or 0"));
}

TEST_CASE("runtime: host dispatch per op class and precision", "[runtime]") {
    using nnergy::modeling::op_class;
    fake::config rt;
    rt.text("name", "toy-eager")
        .text("mode", "eager")
        .number("dispatch.per_kernel", 5e-6)
        .number("dispatch.per_class.batch_norm", 20e-6)
        .number("dispatch.per_class.batch_norm.float16", 40e-6);
    const roofline::runtime_profile p = roofline::runtime_profile::from_config(rt.view());
    REQUIRE(p.has_class_dispatch);
    // The class's time at the run's precision, else the class's, else per_kernel.
    CHECK(p.dispatch_for(op_class::batch_norm, NNERGY_DTYPE_FLOAT16) == Approx(40e-6));
    CHECK(p.dispatch_for(op_class::batch_norm, NNERGY_DTYPE_FLOAT32) == Approx(20e-6));
    CHECK(p.dispatch_for(op_class::batch_norm) == Approx(20e-6));
    CHECK(p.dispatch_for(op_class::conv, NNERGY_DTYPE_FLOAT16) == Approx(5e-6));
    // The profile on a machine whose entry gives `per_class` (keys under
    // runtime.toy-eager.dispatch.per_class.).
    const auto on_machine = [&](std::initializer_list<std::pair<const char*, double>> per_class) {
        fake::config hw;
        for (const auto& [key, seconds] : per_class)
            hw.number(std::string("runtime.toy-eager.dispatch.per_class.") + key, seconds);
        return p.on_machine(hw.view());
    };
    // A machine's entry replaces a class's time at a precision, or adds one.
    const roofline::runtime_profile m =
        on_machine({{"batch_norm.float16", 30e-6}, {"conv.bfloat16", 25e-6}});
    CHECK(m.dispatch_for(op_class::batch_norm, NNERGY_DTYPE_FLOAT16) == Approx(30e-6));
    CHECK(m.dispatch_for(op_class::conv, NNERGY_DTYPE_BFLOAT16) == Approx(25e-6));
    CHECK(m.dispatch_for(op_class::conv, NNERGY_DTYPE_FLOAT32) == Approx(5e-6));
    // A machine's plain class time replaces the profile's times of that class at every
    // precision, but not those the machine gives itself.
    const roofline::runtime_profile q = on_machine({{"batch_norm", 12e-6}});
    CHECK(q.dispatch_for(op_class::batch_norm, NNERGY_DTYPE_FLOAT16) == Approx(12e-6));
    CHECK(q.dispatch_for(op_class::batch_norm, NNERGY_DTYPE_FLOAT32) == Approx(12e-6));
    const roofline::runtime_profile r =
        on_machine({{"batch_norm.float16", 33e-6}, {"batch_norm", 12e-6}});
    CHECK(r.dispatch_for(op_class::batch_norm, NNERGY_DTYPE_FLOAT16) == Approx(33e-6));
    CHECK(r.dispatch_for(op_class::batch_norm, NNERGY_DTYPE_FLOAT32) == Approx(12e-6));
    // A precision that is none is an error naming the file, the line and the key.
    fake::config typo;
    typo.file("hw.toml").number("runtime.toy-eager.dispatch.per_class.conv.float61", 1e-6, 7);
    CHECK_THROWS_WITH(p.on_machine(typo.view()),
                      Catch::Contains("hw.toml:7: 'runtime.toy-eager.dispatch.per_class.conv."
                                      "float61': unknown precision 'float61'"));
}
