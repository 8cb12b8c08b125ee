// SPDX-License-Identifier: Apache-2.0
/// \file cpu_architecture.hpp
/// \brief nnergy.architecture.cpu: maps kernels onto a CPU hardware file (cpu_model.hpp holds
/// the arithmetic; this class reads the graph and the runtime and writes mappings).
#pragma once

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <nnergy/modeling.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cpu_model.hpp"

namespace nnergy::cpu {

/// The mapping keys and events this architecture writes beyond the common ones (sdk::keys),
/// interned once.
namespace names {
inline const sdk::key first_touch_s{"first_touch_s"};
inline const sdk::key fork_join_s{"fork_join_s"};
inline const sdk::key instruction{"instruction"};
inline const sdk::key l1{"l1"};
inline const sdk::key weight_cast_s{"weight_cast_s"};
inline const sdk::key weight_prep_s{"weight_prep_s"};
}  // namespace names

/// Refuses a key of the runtime profile's `[table]` that is not among `known`: a misspelt key
/// would silently drop what it sets.
inline void reject_unknown_keys(const sdk::config_view& runtime, std::string_view table,
                                std::initializer_list<std::string_view> known) {
    const std::string prefix = std::string(table) + ".";
    for (const nnergy_named_value& v : runtime) {
        const std::string_view key = sdk::from_sv(v.name);
        if (key.substr(0, prefix.size()) != prefix) continue;
        if (std::find(known.begin(), known.end(), key.substr(prefix.size())) != known.end())
            continue;
        std::string expected;
        for (const std::string_view k : known) {
            if (!expected.empty()) expected += ", ";
            expected += k;
        }
        throw sdk::error(sdk::config_view::where(v) + ": unknown key '" + std::string(key) +
                             "' in [" + std::string(table) + "] (expected: " + expected + ")",
                         NNERGY_CODE_INVALID_ARGUMENT);
    }
}

/// [convolution.native] of a runtime profile (native_conv_rule); absent: no native path.
inline native_conv_rule read_native_conv(const sdk::config_view& runtime) {
    native_conv_rule r;
    reject_unknown_keys(runtime, "convolution.native",
                        {"precision", "max_batch", "max_input_elements", "max_kernel_extent",
                         "single_thread_pointwise_max_batch"});
    const std::optional<std::string> precision = runtime.string("convolution.native.precision");
    if (!precision) return r;
    const auto count = [&](const char* key, bool required) {
        const std::string full = std::string("convolution.native.") + key;
        const std::optional<double> v = runtime.number(full);
        if (!v) {
            if (!required) return -1.0;
            throw sdk::error(
                sdk::config_view::where(*runtime.find("convolution.native.precision")) +
                    ": [convolution.native] needs '" + key +
                    "' = { value, unit = \"count\", source }",
                NNERGY_CODE_INVALID_ARGUMENT);
        }
        if (!(*v >= 0) || !std::isfinite(*v))
            throw sdk::error(sdk::config_view::where(*runtime.find(full)) + ": '" + full +
                                 "' must be a non-negative count",
                             NNERGY_CODE_INVALID_ARGUMENT);
        return *v;
    };
    r.precision = *precision;
    r.max_batch = count("max_batch", true);
    r.max_input_elements = count("max_input_elements", true);
    r.max_kernel_extent = count("max_kernel_extent", true);
    r.single_thread_pointwise_max_batch = count("single_thread_pointwise_max_batch", false);
    return r;
}

/// [weights] prepack = "per_call" (eager frameworks) or "once" (the default), [weights] cast =
/// "per_call" (autocast) or "none" (the default), and the convolutions the runtime runs
/// natively.
inline cpu_runtime read_runtime(const sdk::config_view& runtime) {
    cpu_runtime r;
    r.native_conv = read_native_conv(runtime);
    if (const std::optional<double> grain = runtime.number("parallel.grain")) {
        if (!(*grain >= 0) || !std::isfinite(*grain))
            throw sdk::error(sdk::config_view::where(*runtime.find("parallel.grain")) +
                                 ": 'parallel.grain' must be a non-negative count of elements",
                             NNERGY_CODE_INVALID_ARGUMENT);
        r.parallel_grain = *grain;
    }
    if (const std::optional<std::string> cast = runtime.string("weights.cast")) {
        if (*cast != "per_call" && *cast != "none")
            throw sdk::error(sdk::config_view::where(*runtime.find("weights.cast")) +
                                 ": 'weights.cast' must be \"per_call\" or \"none\", got \"" +
                                 *cast + "\"",
                             NNERGY_CODE_INVALID_ARGUMENT);
        r.cast_weights_per_call = *cast == "per_call";
    }
    reject_unknown_keys(runtime, "allocator", {"fresh_above"});
    if (const std::optional<double> fresh = runtime.number("allocator.fresh_above")) {
        if (!(*fresh >= 0) || !std::isfinite(*fresh))
            throw sdk::error(sdk::config_view::where(*runtime.find("allocator.fresh_above")) +
                                 ": 'allocator.fresh_above' must be a non-negative size in bytes "
                                 "(a { value, unit = \"MiB\", source } quantity)",
                             NNERGY_CODE_INVALID_ARGUMENT);
        r.fresh_output_threshold = *fresh;
    }
    const std::optional<std::string> v = runtime.string("weights.prepack");
    if (!v || *v == "once") return r;
    if (*v == "per_call") {
        r.repack_weights_per_call = true;
        return r;
    }
    throw sdk::error(sdk::config_view::where(*runtime.find("weights.prepack")) +
                         ": 'weights.prepack' must be \"per_call\" or \"once\", got \"" + *v + "\"",
                     NNERGY_CODE_INVALID_ARGUMENT);
}

/// The geometry of the convolution node `n` (input 0 the data, input 1 the weights); none when
/// the node or its shapes do not say (no native path is then assumed).
inline std::optional<conv_geometry> read_conv_geometry(const sdk::graph_view& graph, uint32_t n) {
    if (graph.input_count(n) < 2) return std::nullopt;
    const uint32_t x = graph.input(n, 0), w = graph.input(n, 1);
    const size_t x_rank = graph.rank(x), w_rank = graph.rank(w);
    if (x_rank < 3 || w_rank < 3) return std::nullopt;
    conv_geometry g;
    g.batch = static_cast<double>(graph.dim(x, 0));
    g.input_elements = 1;
    for (size_t i = 0; i < x_rank; ++i) g.input_elements *= static_cast<double>(graph.dim(x, i));
    // A 1-D convolution is a 2-D one of height 1 (as PyTorch runs it).
    g.kernel_w = static_cast<double>(graph.dim(w, w_rank - 1));
    if (w_rank >= 4) g.kernel_h = static_cast<double>(graph.dim(w, w_rank - 2));
    g.groups = static_cast<double>(graph.attr_int(n, "group").value_or(1));
    const auto any_not = [&](const char* attr, int64_t expected) {
        const auto v = graph.attr_ints_view(n, attr);
        if (!v) return false;
        for (size_t i = 0; i < v->size; ++i)
            if (v->data[i] != expected) return true;
        return false;
    };
    g.strided = any_not("strides", 1);
    g.dilated = any_not("dilations", 1);
    g.padded = any_not("pads", 0);
    if (const auto pad = graph.attr_string(n, "auto_pad"))
        g.padded = g.padded || *pad == "SAME_UPPER" || *pad == "SAME_LOWER";
    return g;
}

class cpu_architecture : public modeling::class_architecture<cpu_hardware> {
public:
    explicit cpu_architecture(const sdk::context& ctx)
        : class_architecture(ctx, "nnergy.architecture.cpu"),
          runtime_(read_runtime(ctx.runtime())) {}

private:
    double units_available() const override { return hw_.threads; }

    void map_device_kernel(const sdk::graph_view& graph, const sdk::partition_view& partition,
                           uint32_t kernel, const nnergy_map_options&, const precision_units& units,
                           modeling::kernel_facts& f, sdk::mapping_writer& out) const override {
        cpu_kernel k = modeling::model_kernel<cpu_kernel>(f);
        // Weights stored wider than the compute precision (bytes_scale < 1).
        if (f.bytes_scale < 1 && f.bytes_scale > 0)
            k.stored_weight_bytes = k.weight_bytes / f.bytes_scale;
        const native_conv_rule& native = runtime_.native_conv;
        if (k.cls == op_class::conv && !native.precision.empty() &&
            f.stats.anchor_node != NNERGY_NO_NODE) {
            const std::optional<conv_geometry> g = read_conv_geometry(graph, f.stats.anchor_node);
            if (g && native.applies(*g, units.precision, hw_.threads)) {
                k.native_conv = true;
                // Columns: the reduction depth (C/groups x window) per output position.
                if (g->needs_columns() && k.out_channels > 0)
                    k.column_bytes = 2 * k.macs / k.out_channels *
                                     modeling::precision_storage_bytes(units.precision);
            }
        }

        if (runtime_.fresh_output_threshold > 0 && hw_.first_touch_bandwidth > 0 &&
            k.output_bytes > runtime_.fresh_output_threshold)
            k.fresh_output_bytes = fresh_output_bytes(graph, partition, kernel, f.bytes_scale);

        const cpu_mapping m = cpu::map_kernel(hw_, units, runtime_, k);
        modeling::write_common_keys(out, f, m, hw_.threads, m.fixed_time_s);
        if (m.reduction_depth > 0) out.set(sdk::keys::reduction_depth, m.reduction_depth);
        if (m.weight_prep_s > 0) out.set(names::weight_prep_s, m.weight_prep_s);
        if (m.weight_cast_s > 0) out.set(names::weight_cast_s, m.weight_cast_s);
        if (m.fork_join_s > 0) out.set(names::fork_join_s, m.fork_join_s);
        if (m.first_touch_s > 0) out.set(names::first_touch_s, m.first_touch_s);
        out.add_level(m.memory_level, m.memory_bytes, m.memory_bandwidth);
        add_events(k, m, units.precision, out);
    }

    /// The bytes of the kernel's outputs (tensors its member ops write and none of them reads)
    /// that are each above the runtime's fresh-memory threshold, as the kernel holds them.
    double fresh_output_bytes(const sdk::graph_view& graph, const sdk::partition_view& partition,
                              uint32_t kernel, double bytes_scale) const {
        const std::vector<uint32_t> nodes = partition.nodes(kernel);
        const auto read_inside = [&](uint32_t t) {
            for (const uint32_t n : nodes)
                for (size_t i = 0; i < graph.input_count(n); ++i)
                    if (graph.input(n, i) == t) return true;
            return false;
        };
        double fresh = 0;
        for (const uint32_t n : nodes)
            for (size_t i = 0; i < graph.output_count(n); ++i) {
                const uint32_t t = graph.output(n, i);
                if (t == NNERGY_NO_TENSOR) continue;
                const double bytes = graph.tensor_bytes(t) * bytes_scale;
                if (bytes > runtime_.fresh_output_threshold && !read_inside(t)) fresh += bytes;
            }
        return fresh;
    }

    /// Bytes one instruction of a vector unit works on: the register width.
    static double vector_bytes(std::string_view unit) noexcept {
        if (unit == "avx512") return 64;
        if (unit == "amx") return 1024;  // one 16 x 64-byte tile register
        if (unit == "neon" || unit == "neon_dot") return 16;
        return 32;  // avx2 and units without a known width
    }

    /// Events for the energy estimator (docs/hardware.md, "Energy"): the FLOPs on the unit
    /// that ran them; the bytes through the register file and L1 (every operand passes them)
    /// and at the level that serves the working set (fresh output pages zeroed there too);
    /// vector instructions fetched, decoded and issued (FMAs at 2 FLOP per lane, loads and
    /// stores one register width each); the dispatch of one op.
    static void add_events(const cpu_kernel& k, const cpu_mapping& m, std::string_view precision,
                           sdk::mapping_writer& out) {
        modeling::add_compute_event(out, m.unit, precision, k.flops);
        // Repacking the weights reads and writes them once more; casting reads them as stored
        // and writes them in the compute precision.
        const double bytes = m.memory_bytes + cpu::weight_traffic(k, m);
        // The system zeroes each fresh output page once before the op writes it: its bytes
        // are written once more through the caches, not through the op's registers.
        const double zeroed = m.first_touch_s > 0 ? k.fresh_output_bytes : 0.0;
        out.add_event(sdk::keys::memory, sdk::keys::register_file, bytes);
        out.add_event(sdk::keys::memory, names::l1, bytes + zeroed);
        if (m.memory_level != "l1") out.add_event("memory", m.memory_level, bytes + zeroed);
        double element = modeling::precision_storage_bytes(precision);
        if (element <= 0) element = 4;
        const double width = vector_bytes(m.unit);
        const double lanes = std::max(1.0, width / element);
        out.add_event(sdk::keys::control, names::instruction,
                      k.flops / (2 * lanes) + bytes / width);
        out.add_event(sdk::keys::control, sdk::keys::launch, 1);
    }

    cpu_runtime runtime_;
};

}  // namespace nnergy::cpu
