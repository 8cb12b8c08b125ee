// SPDX-License-Identifier: Apache-2.0
/// \file memory_estimator.hpp
/// \brief nnergy.estimator.memory: memory in use while each kernel runs (weights, live
/// activations, workspace), its peak over the pass, where that peak fits on the hardware, and
/// what int8 weights, half the batch or recomputation would save. The arithmetic is in
/// memory_model.hpp; this file reads the bound graph and partition into it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <nnergy/modeling.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "memory_model.hpp"

namespace nnergy::memory {

namespace detail {

/// Product of dims [from, rank) of tensor `t`, read one by one (no shape vector per tensor);
/// nothing when one is not positive.
inline std::optional<double> dims_product(const sdk::graph_view& g, uint32_t t, size_t from = 0) {
    double p = 1;
    const size_t rank = g.rank(t);
    for (size_t i = from; i < rank; ++i) {
        const int64_t d = g.dim(t, i);
        if (d <= 0) return std::nullopt;
        p *= static_cast<double>(d);
    }
    return p;
}

/// Bytes of one element of tensor `t` at the run's precision.
inline double element_bytes(const sdk::graph_view& g, uint32_t t, nnergy_dtype precision) {
    const nnergy_dtype d = g.dtype(t);
    return modeling::storage_bytes(d) * modeling::bytes_scale(d, precision);
}

/// Workspace of one node, and whether it scales with the batch.
struct workspace {
    double bytes = 0;
    bool batch_leading = false;
};

/// Reads the graph and partition: buffers, weights and per-kernel workspace.
class reader {
public:
    reader(const sdk::graph_view& g, const sdk::partition_view& p, nnergy_dtype precision)
        : g_(g), p_(p), precision_(precision) {}

    model_input read() {
        const size_t kernels = p_.kernel_count();
        node_kernel_.assign(g_.node_count(), no_kernel);
        in_.kernels.resize(kernels);
        // Host calls rather than partition_view::nodes() and graph_view::shape() here and
        // below: no vector per kernel or tensor each time a pass is read.
        for (uint32_t k = 0; k < kernels; ++k) {
            in_.kernels[k].name = p_.name(k);
            const size_t nodes = sdk::host().kernel_node_count(p_.handle(), k);
            for (size_t i = 0; i < nodes; ++i) {
                const uint32_t n = sdk::host().kernel_node(p_.handle(), k, i);
                if (n < node_kernel_.size()) node_kernel_[n] = k;
            }
        }
        in_.batch = bound_batch();
        const size_t tensors = g_.tensor_count();
        in_.buffers.reserve(tensors);
        std::vector<uint32_t> readers;
        for (uint32_t t = 0; t < tensors; ++t) {
            const nnergy_dtype dtype = g_.dtype(t);
            const double bytes = g_.tensor_bytes(t) * modeling::bytes_scale(dtype, precision_);
            const std::optional<uint32_t> producer = kernel_of(g_.producer(t));
            readers.clear();
            // Host calls rather than graph_view::consumers(): no vector per tensor per estimate.
            const size_t consumer_count = sdk::host().tensor_consumer_count(g_.handle(), t);
            for (size_t i = 0; i < consumer_count; ++i) {
                const std::optional<uint32_t> k =
                    kernel_of(sdk::host().tensor_consumer(g_.handle(), t, i));
                if (!k || k == producer) continue;
                // Kept sorted and unique, so the simulation need not sort a copy.
                const auto at = std::lower_bound(readers.begin(), readers.end(), *k);
                if (at == readers.end() || *at != *k) readers.insert(at, *k);
            }
            if (g_.is_initializer(t)) {
                // Initializers no node reads are dropped by every runtime's graph optimizer.
                if (consumer_count == 0) continue;
                in_.weight_bytes += bytes;
                const double element = modeling::storage_bytes(dtype);
                in_.weight_int8_bytes += modeling::is_floating(dtype) && element > 0
                                             ? g_.tensor_bytes(t) / element
                                             : bytes;
                continue;
            }
            // A tensor read only inside the kernel that wrote it (or not at all) stays on chip.
            const bool graph_output = g_.is_graph_output(t);
            if (readers.empty() && !graph_output) continue;
            buffer b;
            b.name = g_.tensor_name(t);
            b.bytes = bytes;
            b.producer = producer;
            b.readers = readers;
            b.graph_output = graph_output;
            b.batch_leading = leads_with_batch(t);
            in_.buffers.push_back(std::move(b));
        }
        for (uint32_t k = 0; k < kernels; ++k) {
            const bool attention = p_.pattern(k) == "attention";
            workspace most;
            const size_t nodes = sdk::host().kernel_node_count(p_.handle(), k);
            for (size_t i = 0; i < nodes; ++i) {
                const workspace w =
                    node_workspace(sdk::host().kernel_node(p_.handle(), k, i), k, attention);
                if (w.bytes > most.bytes) most = w;
            }
            // Nodes of a kernel run one after another and reuse one scratch buffer.
            in_.kernels[k].workspace_bytes = most.bytes;
            in_.kernels[k].workspace_batch_leading = most.batch_leading;
        }
        return std::move(in_);
    }

private:
    static constexpr uint32_t no_kernel = UINT32_MAX;

    std::optional<uint32_t> kernel_of(uint32_t node) const {
        if (node >= node_kernel_.size() || node_kernel_[node] == no_kernel) return std::nullopt;
        return node_kernel_[node];
    }

    /// The batch the graph was bound to: the first dimension of the first graph input that has
    /// one (tensor order, which is the frontend's input order).
    double bound_batch() const {
        for (uint32_t t = 0; t < g_.tensor_count(); ++t) {
            if (g_.is_initializer(t) || g_.producer(t) != NNERGY_NO_NODE) continue;
            if (sdk::host().tensor_consumer_count(g_.handle(), t) == 0 && !g_.is_graph_output(t))
                continue;
            if (g_.rank(t) > 0 && g_.dim(t, 0) > 0) return static_cast<double>(g_.dim(t, 0));
        }
        return 0;
    }

    bool leads_with_batch(uint32_t t) const {
        if (in_.batch <= 0) return false;
        return g_.rank(t) > 0 && static_cast<double>(g_.dim(t, 0)) == in_.batch;
    }

    /// True when tensor `t` is written and read only inside kernel `k`: never materialized.
    bool internal_to(uint32_t t, uint32_t k) const {
        if (t == NNERGY_NO_TENSOR || g_.is_initializer(t) || g_.is_graph_output(t)) return false;
        if (kernel_of(g_.producer(t)) != k) return false;
        const size_t consumers = sdk::host().tensor_consumer_count(g_.handle(), t);
        for (size_t i = 0; i < consumers; ++i)
            if (kernel_of(sdk::host().tensor_consumer(g_.handle(), t, i)) != k) return false;
        return true;
    }

    /// True when Softmax input `t` comes from a matrix product inside kernel `k`, through the
    /// scaling and masking ops of an attention block.
    bool fed_by_matmul(uint32_t t, uint32_t k) const {
        for (int hops = 0; hops < 8 && t != NNERGY_NO_TENSOR; ++hops) {
            const uint32_t n = g_.producer(t);
            if (kernel_of(n) != k) return false;
            const std::string_view op = g_.op_type(n);
            if (op == "MatMul" || op == "Gemm" || op == "Einsum") return true;
            if (op != "Mul" && op != "Div" && op != "Add" && op != "Sub" && op != "Where" &&
                op != "Cast")
                return false;
            // Follow the operand that is itself computed in this kernel (not a constant or mask).
            uint32_t next = NNERGY_NO_TENSOR;
            for (size_t i = 0; i < g_.input_count(n); ++i) {
                const uint32_t in = g_.input(n, i);
                if (in != NNERGY_NO_TENSOR && !g_.is_initializer(in) &&
                    kernel_of(g_.producer(in)) == k) {
                    next = in;
                    break;
                }
            }
            t = next;
        }
        return false;
    }

    workspace node_workspace(uint32_t n, uint32_t k, bool attention_kernel) const {
        const std::string_view op = g_.op_type(n);
        workspace w;
        if (op == "Conv" || op == "ConvInteger" || op == "QLinearConv") {
            // im2col: each output position gathers its (Cin/groups) x kh x kw input patch.
            const size_t x_at = 0, w_at = op == "QLinearConv" ? 3 : 1;
            if (g_.input_count(n) <= w_at || g_.output_count(n) < 1) return w;
            const uint32_t x = g_.input(n, x_at), wt = g_.input(n, w_at), y = g_.output(n, 0);
            if (x == NNERGY_NO_TENSOR || wt == NNERGY_NO_TENSOR || y == NNERGY_NO_TENSOR) return w;
            const size_t rank = g_.rank(wt);
            if (rank < 3 || g_.rank(y) != rank) return w;
            const std::optional<double> window = dims_product(g_, wt, 2);
            const std::optional<double> positions = dims_product(g_, y, 2);
            const int64_t channels = g_.dim(wt, 1), batch_dim = g_.dim(y, 0);
            if (!window || !positions || *window <= 1 || channels <= 0 || batch_dim <= 0) return w;
            const double batch = static_cast<double>(batch_dim);
            w.bytes = batch * *positions * static_cast<double>(channels) * *window *
                      element_bytes(g_, x, precision_);
            w.batch_leading = in_.batch > 0 && batch == in_.batch;
            return w;
        }
        if (op == "Softmax" && g_.input_count(n) >= 1) {
            // Attention scores, batch x heads x seq_q x seq_k: only when they never reach
            // memory as a tensor of their own (then they are an activation already).
            const uint32_t s = g_.input(n, 0);
            if (!internal_to(s, k)) return w;
            if (!attention_kernel && !fed_by_matmul(s, k)) return w;
            const std::optional<double> elements = dims_product(g_, s);
            if (!elements) return w;
            w.bytes = *elements * element_bytes(g_, s, precision_);
            w.batch_leading = leads_with_batch(s);
        }
        return w;
    }

    const sdk::graph_view& g_;
    const sdk::partition_view& p_;
    nnergy_dtype precision_;
    std::vector<uint32_t> node_kernel_;
    model_input in_;
};

/// Memory levels of the hardware description with a whole-device capacity
/// ("memory.<level>.capacity"; per-unit capacities such as an SM's L1 are not candidates),
/// smallest first (levels of equal capacity in the file's order), as fit() takes them.
inline std::vector<capacity_level> capacity_levels(const sdk::config_view& hw) {
    std::vector<capacity_level> levels;
    constexpr std::string_view prefix = "memory.", suffix = ".capacity";
    for (const nnergy_named_value& v : hw) {
        const std::string_view key = sdk::from_sv(v.name);
        if (key.size() <= prefix.size() + suffix.size() || key.substr(0, prefix.size()) != prefix ||
            key.substr(key.size() - suffix.size()) != suffix)
            continue;
        if (v.kind != NNERGY_VALUE_FLOAT && v.kind != NNERGY_VALUE_INT) continue;
        if (!(v.float_value > 0)) continue;
        const std::string_view level =
            key.substr(prefix.size(), key.size() - prefix.size() - suffix.size());
        levels.push_back({std::string(level), v.float_value});
    }
    std::stable_sort(
        levels.begin(), levels.end(),
        [](const capacity_level& a, const capacity_level& b) { return a.bytes < b.bytes; });
    return levels;
}

}  // namespace detail

/// Reads the bound graph and partition of a run into the model's input.
inline model_input read_model(const sdk::graph_view& graph, const sdk::partition_view& partition,
                              nnergy_dtype precision) {
    return detail::reader(graph, partition, precision).read();
}

class memory_estimator : public sdk::estimator {
public:
    explicit memory_estimator(const sdk::context& ctx) : sdk::estimator(ctx) {
        ctx.config().expect_only({}, "nnergy.estimator.memory");
    }

    void estimate(const sdk::estimate_input& input, sdk::results_writer& out) const override {
        const std::shared_ptr<const pass_memory> pass = pass_for(input);
        const model_result& r = pass->result;
        // A caller that keeps the totals (a sweep) reads no kernel's memory, and the pass is
        // cached, so these keyed writes were most of the estimator's cost there.
        if (!input.totals_only())
            for (uint32_t k = 0; k < r.kernels.size(); ++k) {
                const kernel_memory& m = r.kernels[k];
                out.kernel(k, "live_activation_bytes", m.live_activation_bytes);
                out.kernel(k, "workspace_bytes", m.workspace_bytes);
                out.kernel(k, "memory_in_use_bytes", m.memory_in_use_bytes);
            }
        out.total("peak_memory_bytes", r.peak_memory_bytes);
        out.total("peak_activation_bytes", r.peak_activation_bytes);
        out.total("weight_bytes", r.weight_bytes);
        out.total("peak_workspace_bytes", r.peak_workspace_bytes);
        out.total("activations_at_peak_bytes", r.activations_at_peak_bytes);
        out.total("workspace_at_peak_bytes", r.workspace_at_peak_bytes);
        if (r.peak_kernel) {
            out.total("peak_kernel", static_cast<double>(*r.peak_kernel));
            out.total_text("peak_kernel_name", pass->peak_kernel_name);
        }
        out.total_text("live_at_peak", pass->live_at_peak);
        const fit_verdict v = fit(r.peak_memory_bytes, *capacity_levels_for(input));
        if (!v.fits.empty()) {
            out.total_text("fits", v.fits);
            for (const auto& [level, fits] : v.fits_in)
                out.total("fits_in_" + level, fits ? 1.0 : 0.0);
        }
        out.total("saving_int8_weights_bytes", r.saving_int8_weights_bytes);
        out.total("saving_half_batch_bytes", r.saving_half_batch_bytes);
        out.total("saving_recompute_bytes", r.saving_recompute_bytes);
        if (v.fits == "does not fit")
            ctx().warn("peak memory of " + std::to_string(r.peak_memory_bytes / 1e9) +
                       " GB exceeds the device memory of the hardware description");
    }

private:
    /// What the pass needs in memory: it depends on the graph, the partition and the
    /// precision, never on the hardware, so a sweep over devices simulates it once.
    struct pass_memory {
        model_result result;
        std::string peak_kernel_name;  ///< copied: the cache outlives the host's partition
        std::string live_at_peak;
    };
    static std::shared_ptr<const pass_memory> simulate_pass(const sdk::estimate_input& input) {
        const model_input in = read_model(input.graph(), input.partition(), input.precision());
        auto pass = std::make_shared<pass_memory>();
        pass->result = simulate(in);
        if (pass->result.peak_kernel)
            pass->peak_kernel_name = std::string(in.kernels[*pass->result.peak_kernel].name);
        pass->live_at_peak = live_list(in, pass->result.live_at_peak);
        return pass;
    }

    /// The pass's memory, simulated once per graph, partition and precision the host names.
    std::shared_ptr<const pass_memory> pass_for(const sdk::estimate_input& input) const {
        const uint64_t graph = input.graph().identity(), partition = input.partition().identity();
        return passes_.get(
            {graph, partition, input.precision()}, graph != 0 && partition != 0,
            [&] { return simulate_pass(input); },
            [](const std::shared_ptr<const pass_memory>& p) {
                return 1 + p->result.kernels.size() + p->result.live_at_peak.size();
            });
    }

    /// The hardware's whole-device capacities, read once per hardware description (the reading
    /// scans the whole entry): kept under its identity (ABI 1.9), read afresh without one.
    std::shared_ptr<const std::vector<capacity_level>> capacity_levels_for(
        const sdk::estimate_input& input) const {
        const uint64_t id = input.hardware_identity();
        return capacities_.get(id, id != 0, [&] {
            return std::make_shared<const std::vector<capacity_level>>(
                detail::capacity_levels(input.hardware()));
        });
    }

    /// Room for a pass per configuration of a calibration (hundreds of small graphs, estimated
    /// again for every candidate), within about 4 million kernels' records (some 130 MB) for a
    /// sweep over large models.
    mutable modeling::recent_values<std::tuple<uint64_t, uint64_t, nnergy_dtype>,
                                    std::shared_ptr<const pass_memory>>
        passes_{4096, size_t{1} << 22};
    /// Room for every device of a large sweep, whose evaluations take the devices in turn.
    mutable modeling::recent_values<uint64_t, std::shared_ptr<const std::vector<capacity_level>>>
        capacities_{256};
};

}  // namespace nnergy::memory
