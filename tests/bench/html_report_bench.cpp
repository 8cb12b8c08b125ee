// SPDX-License-Identifier: Apache-2.0
// A benchmark, not a test: how long nnergy.reporter.html takes to render a large model's report,
// and how big the page is. The goal is under 200 ms and under 2 MB for 500 kernels.
//
//   nnergy_html_report_bench [--kernels N] [--repeats R] [--out FILE]
//
// It writes a synthetic JSON graph of N kernels (transformer-style blocks of five kernels each:
// two GEMMs with bias and activation, a residual add with layer norm, a softmax and a gate GEMM
// with sigmoid; the feature width changes from block to block, so the bottlenecks vary), runs the
// default analyze pipeline on it (fusion partitioner, reference architecture on h100-sxm5 at
// float16, roofline, energy and memory estimators), then times the HTML reporter alone on the
// resulting document.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <nnergy/framework/registry.hpp>
#include <nnergy/framework/report.hpp>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

constexpr int kernels_per_block = 5;

/// Feature width of block b: 64 to 1024 in steps of 64, in a scrambled order, so the kernels'
/// shapes, arithmetic intensities and bottlenecks differ from block to block.
int width(int b) { return 64 * (1 + (b * 7) % 16); }

/// A chain of `blocks` blocks on a [batch, 128, D] activation, D changing from block to block.
std::string synthetic_graph(int blocks) {
    std::string tensors, nodes;
    auto tensor = [&](const std::string& name, const std::string& shape, bool init) {
        tensors += (tensors.empty() ? "" : ",\n") + std::string("    {\"name\": \"") + name +
                   "\", \"dtype\": \"float32\", \"shape\": " + shape +
                   (init ? ", \"initializer\": true}" : "}");
    };
    auto node = [&](const std::string& name, const std::string& op,
                    const std::vector<std::string>& in, const std::string& out,
                    const std::string& attributes = "") {
        std::string ins;
        for (const std::string& i : in) ins += (ins.empty() ? "\"" : ", \"") + i + "\"";
        nodes += (nodes.empty() ? "" : ",\n") + std::string("    {\"name\": \"") + name +
                 "\", \"op\": \"" + op + "\", \"inputs\": [" + ins + "], \"outputs\": [\"" + out +
                 "\"]" + (attributes.empty() ? "" : ", \"attributes\": " + attributes) + "}";
    };
    auto dims = [](int a, int b) {
        return "[" + std::to_string(a) + ", " + std::to_string(b) + "]";
    };
    auto vec = [](int a) { return "[" + std::to_string(a) + "]"; };
    tensor("x", "[\"batch\", 128, " + std::to_string(width(0)) + "]", false);
    std::string x = "x";
    for (int b = 0; b < blocks; ++b) {
        const std::string p = "block" + std::to_string(b);
        const int d = width(b), h = 4 * d, next = width(b + 1);
        tensor(p + ".fc1.w", dims(d, h), true);
        tensor(p + ".fc1.b", vec(h), true);
        tensor(p + ".fc2.w", dims(h, d), true);
        tensor(p + ".fc2.b", vec(d), true);
        tensor(p + ".ln.scale", vec(d), true);
        tensor(p + ".ln.bias", vec(d), true);
        tensor(p + ".gate.w", dims(d, next), true);
        tensor(p + ".gate.b", vec(next), true);
        // Kernel 1: fc1 with bias and ReLU.
        node(p + ".fc1", "MatMul", {x, p + ".fc1.w"}, p + ".fc1.mm");
        node(p + ".fc1.add", "Add", {p + ".fc1.mm", p + ".fc1.b"}, p + ".fc1.y");
        node(p + ".fc1.relu", "Relu", {p + ".fc1.y"}, p + ".fc1.out");
        // Kernel 2: fc2 with bias and tanh.
        node(p + ".fc2", "MatMul", {p + ".fc1.out", p + ".fc2.w"}, p + ".fc2.mm");
        node(p + ".fc2.add", "Add", {p + ".fc2.mm", p + ".fc2.b"}, p + ".fc2.y");
        node(p + ".fc2.tanh", "Tanh", {p + ".fc2.y"}, p + ".fc2.out");
        // Kernel 3: the residual add and layer norm.
        node(p + ".res", "Add", {p + ".fc2.out", x}, p + ".res.y");
        node(p + ".ln", "LayerNormalization", {p + ".res.y", p + ".ln.scale", p + ".ln.bias"},
             p + ".ln.out", "{\"axis\": -1}");
        // Kernel 4: a softmax over the features (memory-bound).
        node(p + ".softmax", "Softmax", {p + ".ln.out"}, p + ".softmax.out", "{\"axis\": -1}");
        // Kernel 5: a gate GEMM to the next block's width, with bias and sigmoid.
        node(p + ".gate", "MatMul", {p + ".softmax.out", p + ".gate.w"}, p + ".gate.mm");
        node(p + ".gate.add", "Add", {p + ".gate.mm", p + ".gate.b"}, p + ".gate.y");
        node(p + ".gate.sigmoid", "Sigmoid", {p + ".gate.y"}, p + ".out");
        x = p + ".out";
    }
    return "{\n  \"schema\": \"nnergy.graph/1\",\n  \"name\": \"synthetic_" +
           std::to_string(blocks * kernels_per_block) + "_kernels\",\n  \"inputs\": [\"x\"],\n" +
           "  \"outputs\": [\"" + x + "\"],\n  \"tensors\": [\n" + tensors +
           "\n  ],\n  \"nodes\": [\n" + nodes + "\n  ]\n}\n";
}

fs::path find_config(const std::string& rel) {
    for (const fs::path& dir : nnergy::config_dirs())
        if (fs::is_regular_file(dir / rel)) return dir / rel;
    throw nnergy::error("cannot find configs/" + rel);
}

void write(const fs::path& file, const std::string& text) {
    std::ofstream f(file, std::ios::binary);
    f << text;
    if (!f) throw nnergy::error("cannot write '" + file.string() + "'");
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int run(int argc, char** argv) {
    int kernels = 500, repeats = 20;
    fs::path out;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if ((a == "--kernels" || a == "--repeats" || a == "--out") && i + 1 < argc) {
            const std::string v = argv[++i];
            if (a == "--out")
                out = v;
            else if (a == "--kernels")
                kernels = std::atoi(v.c_str());
            else
                repeats = std::atoi(v.c_str());
        } else {
            std::fprintf(stderr, "usage: %s [--kernels N] [--repeats R] [--out FILE]\n", argv[0]);
            return 2;
        }
    }
    if (kernels < kernels_per_block || repeats < 1) {
        std::fprintf(stderr, "--kernels must be at least %d and --repeats at least 1\n",
                     kernels_per_block);
        return 2;
    }
    const int blocks = kernels / kernels_per_block;

    const fs::path dir =
        fs::temp_directory_path() / ("nnergy-html-bench-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path model = dir / "model.json";
    write(model, synthetic_graph(blocks));
    const fs::path pipeline = dir / "pipeline.toml";
    write(pipeline, "[model]\npath = \"" + model.string() +
                        "\"\ndims = { batch = 1 }\n\n[partitioner]\n"
                        "plugin = \"nnergy.partitioner.fusion\"\nrules = \"" +
                        find_config("fusion/default.toml").string() +
                        "\"\n\n[[architecture]]\nplugin = \"nnergy.architecture.reference\"\n"
                        "hardware = \"h100-sxm5\"\nprecision = \"float16\"\n\n"
                        "[[estimator]]\nplugin = \"nnergy.estimator.roofline\"\n\n"
                        "[[estimator]]\nplugin = \"nnergy.estimator.energy\"\n\n"
                        "[[estimator]]\nplugin = \"nnergy.estimator.memory\"\n");

    const nnergy::pipeline_spec spec = nnergy::parse_pipeline(pipeline);
    nnergy::registry reg;
    nnergy::run_options options;
    nnergy::load_plugins(reg, spec, options);
    const auto t_pipeline = std::chrono::steady_clock::now();
    const nnergy::report_value doc = nnergy::run_pipeline(spec, reg, options);
    const double pipeline_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_pipeline).count();
    fs::remove_all(dir);

    const nnergy::component_entry* entry = reg.find(NNERGY_KIND_REPORTER, "nnergy.reporter.html");
    if (!entry) {
        std::fprintf(stderr,
                     "nnergy.reporter.html not found: build the nnergy_reporter_html target\n");
        return 4;
    }
    const nnergy::report_value* runs = doc.get("runs");
    const nnergy::report_value* kernel_list =
        runs && !runs->items().empty() ? runs->items()[0].get("kernels") : nullptr;
    const size_t kernel_count = kernel_list ? kernel_list->items().size() : 0;

    nnergy::component_instance reporter(*entry, {});
    std::vector<double> times;
    std::string html;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        html = std::move(nnergy::run_reporter(reporter, doc, "-").front().bytes);
        times.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    if (!out.empty()) write(out, html);
    const double render_ms = median(times) * 1e3;
    const double max_ms = *std::max_element(times.begin(), times.end()) * 1e3;
    const double mb = static_cast<double>(html.size()) / 1e6;
    std::printf(
        "nnergy.reporter.html bench: synthetic graph, %zu kernels, batch=1, float16 on "
        "h100-sxm5 (pipeline %.0f ms)\n",
        kernel_count, pipeline_s * 1e3);
    std::printf("render %.2f ms median of %d (max %.2f ms), page %.3f MB (%zu bytes)\n", render_ms,
                repeats, max_ms, mb, html.size());
    std::printf("goal: under 200 ms and under 2 MB: %s\n",
                render_ms < 200 && html.size() < 2000000 ? "met" : "NOT MET");
    if (!out.empty()) std::printf("page written to %s\n", out.string().c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nnergy_html_report_bench: %s\n", e.what());
        return 1;
    }
}
