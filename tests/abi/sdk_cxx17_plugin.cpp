// SPDX-License-Identifier: Apache-2.0
// A plugin with one component of each kind, written with sdk.hpp and compiled as C++17 (the
// SDK's standard, not the host's C++20). test_negotiation.cpp loads it and drives every
// component through the host, so each SDK trampoline, view and writer is exercised once.
//
// The model is deliberately trivial so a test can predict it from the host's own kernel
// statistics: one kernel per node; an architecture running at its peak; latency per kernel =
// max(flops / peak, bytes / bandwidth).
#include <algorithm>
#include <nnergy/reading/file_bytes.hpp>    // compiled as C++17 here too
#include <nnergy/reporting/validation.hpp>  // and this
#include <nnergy/sdk.hpp>
#include <string>
#include <vector>

namespace {
namespace sdk = nnergy::sdk;

/// Builds a fixed two-node graph, x[1,8] -> MatMul(W[8,4]) -> Relu -> z, whatever the file says.
class test_frontend : public sdk::frontend {
public:
    using sdk::frontend::frontend;
    void load(std::string_view path, sdk::graph_builder& out) override {
        if (path.empty()) throw sdk::error("test.sdk.frontend: empty path");
        using dims = std::vector<sdk::graph_builder::dim>;
        uint32_t x = out.add_tensor("x", NNERGY_DTYPE_FLOAT32, dims{{1, {}}, {8, {}}});
        uint32_t w = out.add_tensor("W", NNERGY_DTYPE_FLOAT32, dims{{8, {}}, {4, {}}});
        uint32_t y = out.add_tensor("y", NNERGY_DTYPE_FLOAT32, std::nullopt);
        uint32_t z = out.add_tensor("z", NNERGY_DTYPE_FLOAT32, std::nullopt);
        out.set_initializer(w);
        out.add_input(x);
        out.add_output(z);
        out.add_node("mm", "MatMul", "", {x, w}, {y});
        out.add_node("act", "Relu", "", {y}, {z});
        out.metadata("producer", "test.sdk.frontend");
    }
};

class test_partitioner : public sdk::partitioner {
public:
    using sdk::partitioner::partitioner;
    void partition(const sdk::graph_view& graph, sdk::partition_builder& out) override {
        for (uint32_t n = 0; n < graph.node_count(); ++n)
            out.add_kernel(std::string(graph.node_name(n)), "single", {n});
    }
};

class test_architecture : public sdk::architecture {
public:
    explicit test_architecture(const sdk::context& ctx)
        : sdk::architecture(ctx),
          peak_(ctx.hardware().require_number("compute.float32.peak", "test.sdk.architecture")),
          bandwidth_(
              ctx.hardware().require_number("memory.dram.bandwidth", "test.sdk.architecture")) {
        if (ctx.config().boolean("fail").value_or(false))
            throw sdk::error("test.sdk.architecture: asked to fail by its configuration");
    }
    void map_kernel(const sdk::graph_view&, const sdk::partition_view& partition, uint32_t kernel,
                    const nnergy_map_options& options, sdk::mapping_writer& out) const override {
        if (options.precision != NNERGY_DTYPE_FLOAT32)
            throw sdk::error("test.sdk.architecture: only float32", NNERGY_CODE_UNIMPLEMENTED);
        nnergy_kernel_stats s = partition.stats(kernel);
        out.set("peak_flops_per_s", peak_);
        out.set("effective_flops_per_s", peak_);
        out.set_text("unit", "test_unit");
        out.add_level("dram", s.input_bytes + s.output_bytes + s.weight_bytes, bandwidth_);
    }

private:
    double peak_;
    double bandwidth_;
};

class test_estimator : public sdk::estimator {
public:
    using sdk::estimator::estimator;
    void estimate(const sdk::estimate_input& input, sdk::results_writer& out) const override {
        double total = 0;
        for (uint32_t k = 0; k < input.kernel_count(); ++k) {
            sdk::mapping_view m = input.mapping(k);
            double compute = input.partition().stats(k).flops / *m.number("effective_flops_per_s");
            double memory = 0;
            for (const auto& level : m.levels())
                memory += level.bytes / level.bandwidth_bytes_per_s;
            double latency = std::max(compute, memory);
            out.kernel(k, "latency_s", latency);
            out.kernel_text(k, "bottleneck", compute >= memory ? "compute" : "memory:dram");
            total += latency;
        }
        out.total("latency_s", total);
    }
};

class test_reporter : public sdk::reporter {
public:
    using sdk::reporter::reporter;
    void report(const sdk::value_view& report, sdk::output_writer& out) override {
        out.write("schema=" + std::string(report["schema"].as_string()));
        out.write(" kernels=" + std::to_string(report["runs"].at(0)["kernels"].size()) + "\n");
        // ABI 1.4: where the output goes, whether colour is welcome, and a companion output.
        out.write("path=" + std::string(out.path()) + " color=" + (out.allows_color() ? "1" : "0") +
                  "\n");
        out.companion("-count.txt").write("kernels=");
        out.companion("-count.txt")
            .write(std::to_string(report["runs"].at(0)["kernels"].size()) + "\n");
        if (report["bad_suffix"]) out.companion("sub/dir.txt");
    }
};

}  // namespace

NNERGY_PLUGIN_DEFINE(
    "nnergy_abi_sdk_plugin", "0.1.0", "nnergy tests", "Apache-2.0",
    "every component kind, written with the C++17 SDK",
    sdk::frontend_component<test_frontend>("test.sdk.frontend", "fixed two-node graph", ".sdktest"),
    sdk::partitioner_component<test_partitioner>("test.sdk.partitioner", "one kernel per node"),
    sdk::architecture_component<test_architecture>("test.sdk.architecture", "runs at peak"),
    sdk::estimator_component<test_estimator>("test.sdk.estimator", "max(compute, memory)"),
    sdk::reporter_component<test_reporter>("test.sdk.reporter", "one line"))
