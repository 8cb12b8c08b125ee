// SPDX-License-Identifier: Apache-2.0
// acme.architecture.npu: an architecture plugin for the fictional Acme NPU-1, written outside the
// nnergy tree with the C++ SDK only. It shows the parts every architecture plugin has: reading
// its hardware keys once at creation, answering map_kernel for each kernel, and reporting errors
// as sdk::error with a status code. It also uses the SDK's modeling kit (<nnergy/modeling.hpp>,
// the building blocks of the in-tree architectures) for the kernel's op class and description.
//
// The model (deliberately small):
//  - Kernels with multiply-accumulates run on the matrix engines: `units` systolic arrays of
//    `rows` x `cols`. Output channels are laid across the columns and output positions
//    (batch x spatial) across the rows, one row tile per engine:
//        column fill = channels / (ceil(channels / cols) * cols)
//        engines     = min(units, ceil(batch * spatial / rows))
//        utilization = column fill * engines / units
//        effective   = compute.<precision>.peak * utilization
//  - Kernels without MACs (elementwise, pooling) run on the vector unit at compute.vector.peak.
//  - Every kernel reads and writes its bytes through SRAM. Weights come from DRAM; activations
//    stay in SRAM between kernels while the kernel's bytes fit in memory.sram.capacity, and
//    spill to DRAM otherwise.
//  - Each kernel costs runtime.dispatch to launch.
//
// Hardware keys read (all quantities, in SI units once the host has converted them):
//   compute.<precision>.peak   OP/s or FLOP/s per supported precision (int8, float16, ...)
//   compute.matrix.units/rows/cols, compute.vector.peak, memory.sram.capacity,
//   memory.sram.bandwidth, memory.dram.bandwidth, runtime.dispatch
#include <algorithm>
#include <cmath>
#include <nnergy/modeling.hpp>
#include <nnergy/sdk.hpp>
#include <string>
#include <utility>
#include <vector>

namespace {
namespace sdk = nnergy::sdk;
namespace modeling = nnergy::modeling;

constexpr const char* k_name = "acme.architecture.npu";

// The precisions a hardware file may give a peak for, by the host's dtype names.
constexpr std::pair<nnergy_dtype, const char*> k_precisions[] = {
    {NNERGY_DTYPE_FLOAT32, "float32"},
    {NNERGY_DTYPE_TFLOAT32, "tfloat32"},
    {NNERGY_DTYPE_FLOAT16, "float16"},
    {NNERGY_DTYPE_BFLOAT16, "bfloat16"},
    {NNERGY_DTYPE_FLOAT8_E4M3, "float8_e4m3"},
    {NNERGY_DTYPE_FLOAT8_E5M2, "float8_e5m2"},
    {NNERGY_DTYPE_INT8, "int8"},
    {NNERGY_DTYPE_INT4, "int4"},
    {NNERGY_DTYPE_FLOAT64, "float64"}};

std::string precision_name(nnergy_dtype t) {
    for (const auto& [dtype, name] : k_precisions)
        if (dtype == t) return name;
    return "dtype #" + std::to_string(static_cast<int>(t));
}

class npu_architecture final : public sdk::architecture {
public:
    explicit npu_architecture(const sdk::context& ctx) : sdk::architecture(ctx) {
        const sdk::config_view hw = ctx.hardware();
        const std::string where = std::string(k_name) + " hardware";
        units_ = hw.require_number("compute.matrix.units", where);
        rows_ = hw.require_number("compute.matrix.rows", where);
        cols_ = hw.require_number("compute.matrix.cols", where);
        vector_peak_ = hw.require_number("compute.vector.peak", where);
        sram_capacity_ = hw.require_number("memory.sram.capacity", where);
        sram_bandwidth_ = hw.require_number("memory.sram.bandwidth", where);
        dram_bandwidth_ = hw.require_number("memory.dram.bandwidth", where);
        dispatch_s_ = hw.require_number("runtime.dispatch", where);
        for (const auto& [dtype, name] : k_precisions)
            if (auto peak = hw.number(std::string("compute.") + name + ".peak"))
                peaks_.emplace_back(dtype, *peak);
        if (peaks_.empty())
            throw sdk::error(where + ": no compute.<precision>.peak for any precision",
                             NNERGY_CODE_NOT_FOUND);
        for (double v : {units_, rows_, cols_, vector_peak_, sram_bandwidth_, dram_bandwidth_})
            if (!(v > 0))
                throw sdk::error(where + ": matrix sizes, peaks and bandwidths must be positive");
    }

    void map_kernel(const sdk::graph_view& graph, const sdk::partition_view& partition,
                    uint32_t kernel, const nnergy_map_options& options,
                    sdk::mapping_writer& out) const override {
        // The kit reads what every architecture starts from: statistics, anchor op, op class.
        const modeling::kernel_facts f =
            modeling::read_kernel(graph, partition, kernel, options.precision);
        const nnergy_kernel_stats& s = f.stats;
        const double bytes = s.input_bytes + s.output_bytes + s.weight_bytes;

        std::string unit;
        double peak = 0, utilization = 1, engines = 1, available = 1;
        if (s.macs > 0) {
            unit = "matrix_engine";
            peak = peak_for(options.precision);
            const double channels = std::max(1.0, s.channels);
            const double positions = std::max(1.0, s.batch * std::max(1.0, s.spatial));
            const double column_fill = channels / (std::ceil(channels / cols_) * cols_);
            engines = std::min(units_, std::ceil(positions / rows_));
            available = units_;
            utilization = column_fill * engines / units_;
        } else {
            unit = "vector_unit";
            peak = vector_peak_;
        }

        out.set("peak_flops_per_s", peak);
        out.set("effective_flops_per_s", peak * utilization);
        out.set("units_available", available);
        out.set("units_allocated", engines);
        out.set("utilization", utilization);
        out.set("launch_overhead_s", dispatch_s_);
        out.set_text("unit", unit);
        out.set_text("op_class", modeling::class_name(f.cls));
        out.set_text("confidence", modeling::to_string(modeling::provenance::theoretical));
        out.set_text("explanation", (f.what.empty() ? std::string("kernel") : f.what) + " on " +
                                        unit + " at " + precision_name(options.precision) + ", " +
                                        std::to_string(static_cast<int>(engines)) + " of " +
                                        std::to_string(static_cast<int>(available)) +
                                        " units, utilization " +
                                        std::to_string(static_cast<int>(utilization * 100)) + "%");

        out.add_level("sram", bytes, sram_bandwidth_);
        const double dram_bytes = bytes <= sram_capacity_ ? s.weight_bytes : bytes;
        if (dram_bytes > 0) out.add_level("dram", dram_bytes, dram_bandwidth_);
    }

private:
    double peak_for(nnergy_dtype precision) const {
        for (const auto& [dtype, peak] : peaks_)
            if (dtype == precision) return peak;
        std::string supported;
        for (const auto& p : peaks_)
            supported += (supported.empty() ? "" : ", ") + precision_name(p.first);
        throw sdk::error(std::string(k_name) + ": the hardware has no compute." +
                             precision_name(precision) + ".peak (supported: " + supported + ")",
                         NNERGY_CODE_UNIMPLEMENTED);
    }

    double units_ = 0, rows_ = 0, cols_ = 0, vector_peak_ = 0;
    double sram_capacity_ = 0, sram_bandwidth_ = 0, dram_bandwidth_ = 0, dispatch_s_ = 0;
    std::vector<std::pair<nnergy_dtype, double>> peaks_;  // per precision, read once
};

}  // namespace

NNERGY_PLUGIN_DEFINE("acme_vendor_arch", "0.1.0", "Acme (fictional example)", "Apache-2.0",
                     "Example out-of-tree architecture plugin for the nnergy SDK",
                     sdk::architecture_component<npu_architecture>(
                         "acme.architecture.npu",
                         "Acme NPU-1 (fictional): systolic matrix engines, SRAM, DRAM"))
