// SPDX-License-Identifier: Apache-2.0
/// \file kernel_facts.hpp
/// \brief What every architecture plugin reads of a kernel before its own model (statistics,
/// anchor op, op class, description, bytes in the compute precision), the mapping keys every
/// class architecture writes, and the frame of a class architecture.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "hardware_model.hpp"
#include "op_class.hpp"
#include "text.hpp"

namespace nnergy::modeling {

/// The element type of the kernel's anchor output (what its tensors are stored in).
inline nnergy_dtype anchor_dtype(const sdk::graph_view& graph, const nnergy_kernel_stats& stats) {
    if (stats.anchor_node == NNERGY_NO_NODE || stats.anchor_node >= graph.node_count() ||
        graph.output_count(stats.anchor_node) == 0)
        return NNERGY_DTYPE_UNDEFINED;
    const uint32_t t = graph.output(stats.anchor_node, 0);
    return t == NNERGY_NO_TENSOR ? NNERGY_DTYPE_UNDEFINED : graph.dtype(t);
}

/// "depthwise Conv 3x3 (conv_bn_relu)": the anchor op, its window, and the fusion pattern.
inline std::string describe(const sdk::graph_view& graph, const sdk::partition_view& partition,
                            uint32_t kernel, const nnergy_kernel_stats& stats) {
    std::string what;
    if (stats.anchor_node != NNERGY_NO_NODE && stats.anchor_node < graph.node_count()) {
        if (stats.is_depthwise) what = "depthwise ";
        what += graph.op_type(stats.anchor_node);
        // The window is read in place (graph_view::attr_ints would copy it).
        const int64_t* window = nullptr;
        size_t rank = 0;
        if (sdk::host().node_attr_ints(graph.handle(), stats.anchor_node,
                                       sdk::to_sv("kernel_shape"), &window, &rank) &&
            rank > 0) {
            what += ' ';
            for (size_t i = 0; i < rank; ++i) {
                if (i) what += 'x';
                what += std::to_string(window[i]);
            }
        }
    }
    const std::string_view pattern = partition.pattern(kernel);
    if (!pattern.empty() && sdk::host().kernel_node_count(partition.handle(), kernel) > 1) {
        if (what.empty()) {
            what = pattern;
        } else {
            what += " (";
            what += pattern;
            what += ')';
        }
    }
    return what;
}

/// What every architecture reads of a kernel before its own model: the statistics, the anchor
/// op and the op class, a description, and the bytes in the compute precision.
struct kernel_facts : kernel_work {
    nnergy_kernel_stats stats{};
    std::string_view anchor_op;  ///< empty without an anchor
    nnergy_dtype graph_dtype = NNERGY_DTYPE_UNDEFINED;
    double bytes_scale = 1;  ///< graph storage -> compute precision
};

inline kernel_facts read_kernel(const sdk::graph_view& graph, const sdk::partition_view& partition,
                                uint32_t kernel, nnergy_dtype precision, bool explain = true) {
    kernel_facts f;
    f.explain = explain;
    f.stats = partition.stats(kernel);
    const nnergy_kernel_stats& s = f.stats;
    if (s.anchor_node != NNERGY_NO_NODE && s.anchor_node < graph.node_count())
        f.anchor_op = graph.op_type(s.anchor_node);
    f.cls = classify(f.anchor_op, partition.pattern(kernel), s.macs, s.is_depthwise, s.groups);
    if (explain) f.what = describe(graph, partition, kernel, s);
    f.macs = s.macs;
    f.flops = s.flops;
    f.graph_dtype = anchor_dtype(graph, s);
    f.bytes_scale = bytes_scale(f.graph_dtype, precision);
    f.input_bytes = s.input_bytes * f.bytes_scale;
    f.output_bytes = s.output_bytes * f.bytes_scale;
    f.weight_bytes = s.weight_bytes * f.bytes_scale;
    f.outputs = std::max(1.0, s.total_threads);
    f.out_channels = std::max(1.0, s.channels);
    f.groups = static_cast<double>(std::max<int64_t>(1, s.groups));
    f.threads = available_threads(s.macs, s.total_threads, s.input_bytes, f.graph_dtype);
    if (f.cls == op_class::gemm && is_matrix_vector(f.outputs, f.out_channels)) {
        f.cls = op_class::gemv;
        // A matrix-vector kernel splits each output's reduction over threads as well.
        f.threads = std::max(f.threads, f.macs);
    }
    return f;
}

/// True when the kernel has nothing to run on the device: no MACs, no FLOPs and no bytes, as a
/// kernel of shape arithmetic whose values are known once the model is bound (the host computes
/// them; a compiler folds them). Such a kernel launches nothing and costs no time.
inline bool computes_nothing(const kernel_facts& f) noexcept {
    return f.stats.macs <= 0 && f.stats.flops <= 0 && f.dram_bytes() <= 0;
}

/// The mapping of a kernel that computes nothing (computes_nothing): every architecture writes
/// the same keys, with no unit, no time and no launch.
inline void write_no_device_work(sdk::mapping_writer& out, const kernel_facts& f,
                                 double units_available) {
    out.set_text("unit", "none");
    out.set_text("op_class", class_name(f.cls));
    out.set("peak_flops_per_s", 0.0);
    out.set("compute_efficiency", 0.0);
    out.set("effective_flops_per_s", 0.0);
    out.set("units_available", units_available);
    out.set("units_allocated", 0.0);
    out.set("utilization", 0.0);
    out.set("waves", 0.0);
    out.set("launch_overhead_s", 0.0);
    out.set("bytes_scale", f.bytes_scale);
    out.set_text("bottleneck", "none");
    if (f.explain) {
        std::string e = f.what.empty() ? std::string("kernel") : f.what;
        e += ": nothing to run on the device (shape arithmetic known when the model is bound)";
        out.set_text("explanation", e);
    }
    // Zero time follows from the host folding the values, not from a measurement.
    out.set_text("confidence", to_string(provenance::theoretical));
}

/// The start of every architecture's map_kernel: the kernel's facts, or nothing when it has no
/// device work, whose mapping is then written here.
inline std::optional<kernel_facts> read_device_kernel(
    const sdk::graph_view& graph, const sdk::partition_view& partition, uint32_t kernel,
    nnergy_dtype precision, double units_available, sdk::mapping_writer& out, bool explain = true) {
    kernel_facts f = read_kernel(graph, partition, kernel, precision, explain);
    if (!computes_nothing(f)) return f;
    write_no_device_work(out, f, units_available);
    return std::nullopt;
}

/// A model's kernel (a kernel_work extended with the model's own fields) holding the shared
/// facts of `f`. The description moves: only the model's explanation uses it.
template <class ModelKernel>
ModelKernel model_kernel(kernel_facts& f) {
    ModelKernel k;
    static_cast<kernel_work&>(k) = std::move(static_cast<kernel_work&>(f));
    return k;
}

/// The name of a compute event: "<unit>.<precision>" ("tensor_core.float16"), priced by the
/// hardware file's energy.compute.<unit>.<precision> or, failing that, energy.compute.<unit>.
inline std::string unit_event(std::string_view unit, std::string_view precision) {
    std::string s(unit);
    s += '.';
    s += precision;
    return s;
}

/// Counts `flops` on the unit's compute event (unit_event), its name built in a buffer each
/// thread keeps, so that mapping a kernel allocates nothing for it.
inline void add_compute_event(sdk::mapping_writer& out, std::string_view unit,
                              std::string_view precision, double flops) {
    thread_local std::string name;
    name.assign(unit);
    name += '.';
    name += precision;
    out.add_event("compute", name, flops);
}

/// The mapping keys every class architecture writes (docs/abi.md); `m` is the plugin's own
/// mapping with the usual field names.
template <class Mapping>
void write_common_keys(sdk::mapping_writer& out, const kernel_facts& f, const Mapping& m,
                       double units_available, double launch_overhead_s) {
    namespace k = sdk::keys;
    out.set_text(k::unit, m.unit);
    out.set_text(k::op_class, class_name(f.cls));
    out.set(k::peak_flops_per_s, m.peak_flops_per_s);
    out.set(k::compute_efficiency, m.compute_efficiency);
    out.set(k::effective_flops_per_s, m.effective_flops_per_s);
    out.set(k::units_available, units_available);
    out.set(k::units_allocated, m.units_allocated);
    out.set(k::utilization, m.utilization);
    out.set(k::waves, m.waves);
    out.set(k::launch_overhead_s, launch_overhead_s);
    out.set(k::bytes_scale, f.bytes_scale);
    out.set_text(k::bottleneck, m.bottleneck);
    if (f.explain) out.set_text(k::explanation, m.explanation);
    out.set_text(k::confidence, to_string(m.confidence));
}

/// The frame of every class architecture (cpu, gpu, tpu, kpu): the hardware file read into the
/// model's `Hardware` (with a `base` hardware_model), no plugin keys besides those the host
/// reads, and a map_kernel that checks the precision and writes kernels with no device work
/// itself before the model maps the rest.
template <class Hardware>
class class_architecture : public sdk::architecture {
public:
    class_architecture(const sdk::context& ctx, std::string_view plugin_name)
        : sdk::architecture(ctx), hw_(Hardware::from_config(ctx.hardware())) {
        // hardware and precision are read by the host; everything else would be a typo.
        ctx.config().expect_only({}, plugin_name);
    }

    const Hardware& hardware() const noexcept { return hw_; }

    void map_kernel(const sdk::graph_view& graph, const sdk::partition_view& partition,
                    uint32_t kernel, const nnergy_map_options& options,
                    sdk::mapping_writer& out) const final {
        const precision_units& units = hw_.base.require(options.precision);
        const bool explain = (options.flags & NNERGY_MAP_TOTALS_ONLY) == 0;
        std::optional<kernel_facts> f = read_device_kernel(
            graph, partition, kernel, options.precision, units_available(), out, explain);
        if (f) map_device_kernel(graph, partition, kernel, options, units, *f, out);
    }

protected:
    /// What `units_available` counts in mappings (SMs, cores, tiles).
    virtual double units_available() const { return hw_.base.units; }

    /// Maps a kernel with device work. `f.what` may be moved into the model's kernel.
    virtual void map_device_kernel(const sdk::graph_view& graph,
                                   const sdk::partition_view& partition, uint32_t kernel,
                                   const nnergy_map_options& options, const precision_units& units,
                                   kernel_facts& f, sdk::mapping_writer& out) const = 0;

    Hardware hw_;
};

}  // namespace nnergy::modeling
