// SPDX-License-Identifier: Apache-2.0
// The GPU architecture model (op classes, units, tiles, split-K) on the H100 catalog file, and
// the execution-runtime timelines of the roofline estimator.
#include <catch2/catch.hpp>

#include "catalog_file.hpp"
#include "gpu_model.hpp"
#include "runtime_model.hpp"

using nnergy::test::loaded;
namespace gpu = nnergy::gpu;
namespace roofline = nnergy::roofline;

TEST_CASE("gpu: kernels are classified by anchor op and pattern", "[gpu]") {
    CHECK(gpu::classify("Conv", "conv_bn_act", 1e6, false, 1) == gpu::op_class::conv);
    CHECK(gpu::classify("Conv", "conv", 1e6, true, 32) == gpu::op_class::depthwise);
    CHECK(gpu::classify("Conv", "conv", 1e6, false, 32) == gpu::op_class::grouped_conv);
    CHECK(gpu::classify("MatMul", "linear", 1e6, false, 1) == gpu::op_class::gemm);
    CHECK(gpu::classify("MatMul", "attention", 1e6, false, 1) == gpu::op_class::attention);
    CHECK(gpu::classify("BatchNormalization", "batchnormalization", 0, false, 1) ==
          gpu::op_class::batch_norm);
    CHECK(gpu::classify("LayerNormalization", "layernorm", 0, false, 1) ==
          gpu::op_class::normalization);
    CHECK(gpu::classify("MaxPool", "maxpool", 0, false, 1) == gpu::op_class::window_pool);
    CHECK(gpu::classify("AveragePool", "averagepool", 0, false, 1) == gpu::op_class::window_pool);
    CHECK(gpu::classify("GlobalAveragePool", "globalaveragepool", 0, false, 1) ==
          gpu::op_class::pooling);
    CHECK(gpu::classify("Softmax", "softmax", 0, false, 1) == gpu::op_class::pooling);
    CHECK(gpu::classify("Relu", "relu", 0, false, 1) == gpu::op_class::elementwise);
    // One output row or column makes a GEMM a matrix-vector product.
    CHECK(nnergy::modeling::is_matrix_vector(1000, 1000));
    CHECK(nnergy::modeling::is_matrix_vector(4096, 1));
    CHECK_FALSE(nnergy::modeling::is_matrix_vector(8 * 1000, 1000));
    CHECK_FALSE(nnergy::modeling::is_matrix_vector(197 * 768, 768));
}

TEST_CASE("gpu: a small problem splits its reduction over idle SMs", "[gpu]") {
    gpu::class_params p;
    p.tile_m = p.tile_n = 128;
    // 7x7 output, 512 channels: 4 tiles on 132 SMs.
    const gpu::tiling plain = gpu::tile(49 * 512, 512, 4608, 132, p);
    CHECK(plain.tiles == 4);
    CHECK(plain.splits == 1);
    CHECK(plain.sms_busy == 4);
    p.split_k_depth = 256;
    const gpu::tiling split = gpu::tile(49 * 512, 512, 4608, 132, p);
    CHECK(split.splits == 18);  // K 4608 / 256, below the 33 that idle SMs would allow
    CHECK(split.sms_busy == 72);
    CHECK(split.utilization == Approx(plain.utilization * 18));
    // A large problem runs in waves and is never split.
    const gpu::tiling big = gpu::tile(64.0 * 3136 * 256, 256, 576, 132, p);
    CHECK(big.splits == 1);
    CHECK(big.waves == std::ceil(big.tiles / 132));
}

namespace {

struct h100 {
    loaded file{"h100-sxm5"};
    gpu::gpu_hardware hw = gpu::gpu_hardware::from_config(file.view());
    gpu::math_modes pytorch{true, false};  // cuDNN TF32 on, matmul TF32 off

    gpu::gpu_mapping map(const char* precision, gpu::gpu_kernel k) const {
        return gpu::map_kernel(hw, *hw.base.find(precision), pytorch, k);
    }
};

gpu::gpu_kernel conv(double batch, double cin, double cout, double hw, double window) {
    gpu::gpu_kernel k;
    k.cls = gpu::op_class::conv;
    k.outputs = batch * cout * hw * hw;
    k.out_channels = cout;
    k.macs = k.outputs * cin * window * window;
    k.flops = 2 * k.macs;
    k.input_bytes = 4 * (batch * cin * hw * hw + k.outputs + cout * cin * window * window);
    k.input_channels = cin;
    return k;
}

}  // namespace

TEST_CASE("gpu: units follow the op class, the precision and the runtime's math", "[gpu]") {
    const h100 g;
    CHECK(g.hw.tensor_core_min_channels == 8);
    // fp32 convolutions run on TF32 tensor cores under PyTorch's defaults, fp32 GEMMs do not.
    const gpu::gpu_mapping c = g.map("float32", conv(8, 64, 64, 56, 3));
    CHECK(c.unit == "tensor_core");
    CHECK(c.unit_precision == "tfloat32");
    gpu::gpu_kernel mm;
    mm.cls = gpu::op_class::gemm;
    mm.outputs = 197.0 * 3072;
    mm.out_channels = 3072;
    mm.macs = mm.outputs * 768;
    mm.flops = 2 * mm.macs;
    mm.input_bytes = 4 * (197 * 768 + 768 * 3072 + mm.outputs);
    const gpu::gpu_mapping m = g.map("float32", mm);
    CHECK(m.unit == "cuda_core");
    CHECK(m.unit_precision == "float32");
    CHECK(g.map("float16", mm).unit == "tensor_core");
    // A 3-channel stem cannot feed tensor-core tiles.
    const gpu::gpu_mapping stem = g.map("float32", conv(1, 3, 64, 112, 7));
    CHECK(stem.unit == "cuda_core");
    CHECK_THAT(stem.explanation, Catch::Contains("too few input channels"));
    // It runs as threads, not tiles: the explanation says which slots it fills.
    CHECK_THAT(stem.explanation, Catch::Contains("of thread slots"));
    // Depthwise convolutions run on CUDA cores even in fp16.
    gpu::gpu_kernel dw = conv(1, 1, 144, 56, 3);
    dw.cls = gpu::op_class::depthwise;
    dw.input_channels = 0;
    CHECK(g.map("float16", dw).unit == "cuda_core");
}

TEST_CASE("gpu: larger batches use the GPU better, and every kernel pays a fixed time", "[gpu]") {
    const h100 g;
    const gpu::gpu_mapping b1 = g.map("float32", conv(1, 256, 256, 14, 3));
    const gpu::gpu_mapping b64 = g.map("float32", conv(64, 256, 256, 14, 3));
    CHECK(b64.utilization > b1.utilization);
    const double per_image_b1 = std::max(b1.compute_time_s, b1.memory_time_s);
    const double per_image_b64 = std::max(b64.compute_time_s, b64.memory_time_s) / 64;
    CHECK(per_image_b64 < per_image_b1 / 4);
    CHECK(b1.fixed_time_s > 0);
    CHECK(b1.confidence == nnergy::modeling::provenance::fitted);
    gpu::gpu_kernel relu;
    relu.cls = gpu::op_class::elementwise;
    relu.flops = 1000;
    relu.input_bytes = 8000;
    relu.threads = 1000;
    const gpu::gpu_mapping r = g.map("float32", relu);
    CHECK(r.bottleneck == "overhead");
}

TEST_CASE("gpu: a few tiles per SM run below the SM's rate", "[gpu]") {
    const h100 g;
    auto gemm = [](double m, double n, double k) {
        gpu::gpu_kernel x;
        x.cls = gpu::op_class::gemm;
        x.outputs = m * n;
        x.out_channels = n;
        x.macs = m * n * k;
        x.flops = 2 * x.macs;
        x.input_bytes = 4 * (m * k + k * n + m * n);
        return x;
    };
    const gpu::class_params& p = g.hw.params(gpu::op_class::gemm, "float32");
    REQUIRE(p.tiles_half > 0);  // fitted to the fp32 addmm profile (tools/fit_h100_gpu.py)
    // ViT-B/16 at batch 1: 197 tokens x 768 features, a wave or two of small SIMT tiles.
    const gpu::gpu_mapping few = g.map("float32", gemm(197, 768, 768));
    const gpu::gpu_mapping many = g.map("float32", gemm(12608, 768, 768));
    CHECK(few.compute_efficiency ==
          Approx(many.compute_efficiency * few.waves / (few.waves + p.tiles_half) *
                 (many.waves + p.tiles_half) / many.waves));
    CHECK(few.compute_efficiency < 0.6 * many.compute_efficiency);
    // Hundreds of tiles per SM hide the latencies: the term all but vanishes.
    CHECK(many.waves / (many.waves + p.tiles_half) > 0.9);
}

TEST_CASE("gpu: a matrix-vector product streams its matrix instead of filling tiles", "[gpu]") {
    const h100 g;
    // VGG-16's first classifier layer at batch 1: 1 x 25088 by 25088 x 4096, 411 MB of fp32
    // weights, as a GEMV (cuBLAS gemvx in the H100 profile) and as the same product in tiles.
    gpu::gpu_kernel v;
    v.cls = gpu::op_class::gemv;
    v.outputs = 4096;
    v.out_channels = 4096;
    v.macs = 25088.0 * 4096;
    v.flops = 2 * v.macs;
    v.weight_bytes = 4 * v.macs;
    v.input_bytes = 4 * 25088;
    v.output_bytes = 4 * 4096;
    v.threads = v.macs;
    gpu::gpu_kernel tiled = v;
    tiled.cls = gpu::op_class::gemm;
    tiled.threads = v.outputs;

    const gpu::class_params& p = g.hw.params(gpu::op_class::gemv, "float32");
    const gpu::gpu_mapping m = g.map("float32", v);
    CHECK(m.unit == "cuda_core");
    CHECK(m.bottleneck == "memory:dram");
    CHECK(m.utilization > 0.99);  // every SM busy: a thread per multiply-add
    const double bandwidth = 3.35e12 * 0.887 * p.memory_efficiency;
    CHECK(m.memory_time_s == Approx(v.dram_bytes() / bandwidth));
    CHECK(p.memory_efficiency > 0.5);  // the matrix streams near the DRAM rate
    // Tiles would leave all but one row of every tile empty and make it compute-bound.
    const gpu::gpu_mapping t = g.map("float32", tiled);
    CHECK(t.utilization < 0.05);
    CHECK(std::max(t.compute_time_s, t.memory_time_s) > 2 * m.memory_time_s);
    // fp16 weights: half the bytes, still on CUDA cores (no tensor-core GEMV).
    gpu::gpu_kernel half = v;
    half.weight_bytes /= 2;
    half.input_bytes /= 2;
    half.output_bytes /= 2;
    const gpu::gpu_mapping h = g.map("float16", half);
    CHECK(h.unit == "cuda_core");
    CHECK(h.memory_time_s == Approx(m.memory_time_s / 2));
}

TEST_CASE("gpu: a device without GEMV figures keeps its GEMM ones", "[gpu]") {
    nnergy::test::loaded file{"h100-sxm5"};
    std::vector<nnergy_named_value> without;
    for (const nnergy_named_value& v : file.named)
        if (nnergy::sdk::from_sv(v.name).rfind("gpu.kernels.gemv.", 0) != 0) without.push_back(v);
    REQUIRE(without.size() < file.named.size());
    const gpu::gpu_hardware hw =
        gpu::gpu_hardware::from_config(nnergy::sdk::config_view(without.data(), without.size()));
    const gpu::class_params& gemm = hw.params(gpu::op_class::gemm, "float32");
    const gpu::class_params& gemv = hw.params(gpu::op_class::gemv, "float32");
    CHECK(gemv.fixed_time_s == gemm.fixed_time_s);
    CHECK(gemv.memory_efficiency == gemm.memory_efficiency);
    // With its own table, the file's GEMV figures apply.
    const gpu::gpu_hardware full = gpu::gpu_hardware::from_config(file.view());
    CHECK(full.params(gpu::op_class::gemv, "float32").memory_efficiency ==
          Approx(file.number("gpu.kernels.gemv.memory_efficiency")));
}

TEST_CASE(
    "gpu: a device without grouped-convolution or batch-norm figures keeps the general "
    "ones",
    "[gpu]") {
    nnergy::test::loaded file{"h100-sxm5"};
    std::vector<nnergy_named_value> without;
    for (const nnergy_named_value& v : file.named) {
        const std::string_view name = nnergy::sdk::from_sv(v.name);
        if (name.rfind("gpu.kernels.grouped_conv.", 0) != 0 &&
            name.rfind("gpu.kernels.batch_norm.", 0) != 0 &&
            name.rfind("gpu.kernels.gemv.", 0) != 0)
            without.push_back(v);
    }
    REQUIRE(without.size() < file.named.size());
    const gpu::gpu_hardware hw =
        gpu::gpu_hardware::from_config(nnergy::sdk::config_view(without.data(), without.size()));
    const gpu::class_params& conv = hw.params(gpu::op_class::conv, "tfloat32");
    const gpu::class_params& grouped = hw.params(gpu::op_class::grouped_conv, "tfloat32");
    CHECK(grouped.efficiency == hw.params(gpu::op_class::conv, "").efficiency);
    CHECK(grouped.tile_n == conv.tile_n);
    const gpu::class_params& norm = hw.params(gpu::op_class::normalization, "float16");
    const gpu::class_params& batch_norm = hw.params(gpu::op_class::batch_norm, "float16");
    CHECK(batch_norm.fixed_time_s == norm.fixed_time_s);
    CHECK(batch_norm.memory_efficiency == norm.memory_efficiency);
    // Without a table of its own, a matrix-vector product keeps the GEMM's per-precision
    // tables too, not only its general one.
    CHECK(hw.params(gpu::op_class::gemv, "float16").tile_m ==
          Approx(file.number("gpu.kernels.gemm.float16.tile_m")));  // 128, the generic 32
    CHECK(hw.params(gpu::op_class::gemv, "float32").tile_m ==
          Approx(file.number("gpu.kernels.gemm.tile_m")));
    const gpu::gpu_hardware full = gpu::gpu_hardware::from_config(file.view());
    CHECK(full.params(gpu::op_class::batch_norm, "float16").fixed_time_s ==
          Approx(file.number("gpu.kernels.batch_norm.float16.fixed_time")));
    CHECK(full.params(gpu::op_class::grouped_conv, "tfloat32").efficiency ==
          Approx(file.number("gpu.kernels.grouped_conv.tfloat32.efficiency")));
    // The file has no sliding-window pooling table: such pools keep the pooling one.
    const gpu::class_params& window = full.params(gpu::op_class::window_pool, "float16");
    CHECK(window.fixed_time_s == Approx(file.number("gpu.kernels.pooling.fixed_time")));
    CHECK(window.memory_efficiency ==
          full.params(gpu::op_class::pooling, "float16").memory_efficiency);
}

TEST_CASE("gpu: a grouped convolution pads each group's tiles", "[gpu]") {
    gpu::class_params p;
    p.tile_m = 32;
    p.tile_n = 16;
    // ResNeXt-50 layer1 at batch 1: 56x56 outputs, 128 channels in 32 groups of 4.
    const double pixels = 56 * 56;
    const gpu::tiling dense = gpu::tile(pixels * 128, 128, 36, 132, p);
    const gpu::tiling grouped = gpu::tile(pixels * 128, 128, 36, 132, p, 32);
    CHECK(dense.tiles == std::ceil(pixels / 32) * 8);
    CHECK(grouped.tiles == std::ceil(pixels / 32) * 32);  // 4 of each tile's 16 columns used
    CHECK(grouped.utilization < dense.utilization / 3);
    // Groups as wide as a tile pad nothing: the same tiles as the dense problem.
    const gpu::tiling wide = gpu::tile(pixels * 128, 128, 36, 132, p, 8);
    CHECK(wide.tiles == dense.tiles);
    CHECK(wide.utilization == Approx(dense.utilization));
}

TEST_CASE("gpu: grouped convolutions run on tensor cores only with enough channels per group",
          "[gpu]") {
    const h100 g;
    gpu::gpu_kernel k = conv(8, 4, 128, 56, 3);  // per group: 4 input channels
    k.cls = gpu::op_class::grouped_conv;
    k.groups = 32;
    k.out_channels = 128;
    const gpu::gpu_mapping narrow = g.map("float16", k);
    CHECK(narrow.unit == "cuda_core");
    k = conv(8, 32, 1024, 7, 3);  // 32 groups of 32 channels
    k.cls = gpu::op_class::grouped_conv;
    k.groups = 32;
    const gpu::gpu_mapping wide = g.map("float32", k);
    CHECK(wide.unit == "tensor_core");
    CHECK(wide.unit_precision == "tfloat32");  // cuDNN's TF32 applies as to dense convolutions
    // The H100's grouped table, not its conv table, prices the kernel.
    CHECK(wide.fixed_time_s ==
          Approx(g.file.number("gpu.kernels.grouped_conv.tfloat32.fixed_time")));
}

TEST_CASE("gpu: what a repeated forward pass moves to and from DRAM", "[gpu]") {
    nnergy::modeling::kernel_work k;
    k.input_bytes = 8e6;
    k.output_bytes = 4e6;
    k.weight_bytes = 2e6;
    const double l2 = 50e6;
    // Small activations and weights that all fit: nothing leaves the L2.
    CHECK(gpu::dram_traffic(k, {30e6, 20e6}, l2) == 0);
    // The graph's weights do not fit beside its largest activations: they stream every pass.
    CHECK(gpu::dram_traffic(k, {40e6, 20e6}, l2) == 2e6);
    // Activations larger than the L2 stream as well.
    k.input_bytes = 60e6;
    CHECK(gpu::dram_traffic(k, {40e6, 64e6}, l2) == 64e6 + 2e6);
    // No L2 in the file: every byte is DRAM traffic.
    CHECK(gpu::dram_traffic(k, {0, 0}, 0) == k.dram_bytes());
}

TEST_CASE("runtime: eager issue overlaps device execution as a two-stage pipeline", "[runtime]") {
    roofline::runtime_profile p;
    p.mode = roofline::runtime_mode::eager;
    p.dispatch_per_kernel_s = 10e-6;
    p.dispatch_per_view_s = 1e-6;
    p.per_call_s = 5e-6;
    p.kernel_gap_s = 0;
    // Host-bound: tiny kernels wait for the host.
    std::vector<roofline::issued_kernel> tiny(3, roofline::issued_kernel{2e-6, 0});
    roofline::runtime_timeline t = roofline::run_timeline(p, tiny);
    CHECK(t.host_s == Approx(35e-6));
    CHECK(t.kernels[0].start_s == Approx(15e-6));
    CHECK(t.latency_s == Approx(37e-6));  // the last kernel runs after the host issued it
    // Device-bound: long kernels queue up behind each other.
    std::vector<roofline::issued_kernel> big(3, roofline::issued_kernel{100e-6, 2});
    t = roofline::run_timeline(p, big);
    CHECK(t.kernels[0].host_dispatch_s == Approx(12e-6));
    CHECK(t.kernels[1].start_s == Approx(t.kernels[0].end_s));
    CHECK(t.latency_s == Approx(17e-6 + 300e-6));
    CHECK(t.device_busy_s == Approx(300e-6));
}

TEST_CASE("runtime: a replayed graph adds only gaps, and views launch nothing", "[runtime]") {
    roofline::runtime_profile p;
    p.mode = roofline::runtime_mode::graph;
    p.kernel_gap_s = 1e-6;
    p.dispatch_per_kernel_s = 50e-6;  // ignored: nothing is dispatched from the host
    const std::vector<roofline::issued_kernel> k{{3e-6, 0}, {0, 1}, {4e-6, 0}};
    const roofline::runtime_timeline t = roofline::run_timeline(p, k);
    CHECK(t.latency_s == Approx(3e-6 + 4e-6 + 2e-6));
    CHECK(t.host_s == 0);
    CHECK(t.kernels[1].end_s == t.kernels[1].start_s);
}

TEST_CASE("runtime: catalog profiles read, and bad ones are refused", "[runtime]") {
    const loaded eager("pytorch-eager", "runtimes");
    const roofline::runtime_profile e = roofline::runtime_profile::from_config(eager.view());
    CHECK(e.mode == roofline::runtime_mode::eager);
    CHECK(e.dispatch_per_kernel_s > 7.8e-6);  // more than micro.json's bare 1-element add
    CHECK(eager.view().string("math.float32_conv") == std::string("tfloat32"));
    CHECK(eager.view().string("math.float32_matmul") == std::string("float32"));
    const loaded graph("cuda-graph", "runtimes");
    CHECK(roofline::runtime_profile::from_config(graph.view()).mode ==
          roofline::runtime_mode::graph);
    const loaded fused("fused", "runtimes");
    CHECK(roofline::runtime_profile::from_config(fused.view()).mode ==
          roofline::runtime_mode::fused);

    fake::config bad;
    bad.file("rt.toml").text("name", "x", 1).text("mode", "lazy", 3);
    CHECK_THROWS_WITH(
        roofline::runtime_profile::from_config(nnergy::sdk::config_view(bad.data(), bad.size())),
        Catch::Contains("rt.toml:3: unknown runtime mode 'lazy'"));
    fake::config no_dispatch;
    no_dispatch.file("rt.toml").text("name", "x", 1).text("mode", "eager", 2);
    CHECK_THROWS_WITH(roofline::runtime_profile::from_config(
                          nnergy::sdk::config_view(no_dispatch.data(), no_dispatch.size())),
                      Catch::Contains("needs dispatch.per_kernel"));
}
