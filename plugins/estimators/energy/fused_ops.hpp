// SPDX-License-Identifier: Apache-2.0
/// \file fused_ops.hpp
/// \brief Energy, delay and EDP per operator inside a fused kernel, and what fusing them saved
/// (docs/report.md, "Energy keys"). Without host calls, so it can be tested alone.
///
/// A fused kernel's compute energy is shared by FLOPs. Its other energy (memory, control,
/// static) and its time belong to the anchor (the op with most FLOPs) and to each fused op in
/// proportion to a weight: 1 for the anchor and for ops of no known kind, and the hardware file's
/// modifier energy.fused.<kind> for the others: how much of a kernel's data movement and time a
/// fused op of that kind costs next to its anchor. A ReLU applied as results leave a systolic
/// array or a domain-flow tile costs almost nothing; on a GPU it is a few instructions of the
/// epilogue. The benefit of fusion is what each fused op would cost as a kernel of its own (its
/// bytes to and from memory, a launch, static power over its own time) minus what it costs fused.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy::energy {

/// Kinds of ops that fuse into a kernel's epilogue or prologue.
inline std::string_view fused_kind(std::string_view op) noexcept {
    using namespace std::string_view_literals;
    // Arrays of views built at compile time: asked once per fused op of every evaluation.
    static constexpr std::string_view activations[] = {
        "Relu"sv,      "LeakyRelu"sv, "PRelu"sv, "Sigmoid"sv,        "HardSigmoid"sv, "Tanh"sv,
        "Gelu"sv,      "Elu"sv,       "Selu"sv,  "Celu"sv,           "Softplus"sv,    "Softsign"sv,
        "HardSwish"sv, "Mish"sv,      "Clip"sv,  "ThresholdedRelu"sv};
    static constexpr std::string_view normalizations[] = {
        "BatchNormalization"sv, "LayerNormalization"sv, "InstanceNormalization"sv,
        "GroupNormalization"sv, "RMSNormalization"sv,   "LpNormalization"sv};
    static constexpr std::string_view poolings[] = {
        "MaxPool"sv,    "AveragePool"sv, "GlobalAveragePool"sv, "GlobalMaxPool"sv, "Softmax"sv,
        "LogSoftmax"sv, "ReduceMean"sv,  "ReduceSum"sv,         "ReduceMax"sv};
    static constexpr std::string_view elementwise[] = {
        "Add"sv, "Sub"sv, "Mul"sv,   "Div"sv,  "Pow"sv,     "Sqrt"sv,  "Reciprocal"sv, "Neg"sv,
        "Abs"sv, "Exp"sv, "Log"sv,   "Erf"sv,  "Cast"sv,    "Where"sv, "Max"sv,        "Min"sv,
        "Sin"sv, "Cos"sv, "Equal"sv, "Less"sv, "Greater"sv, "Not"sv};
    for (std::string_view a : activations)
        if (op == a) return "activation";
    for (std::string_view n : normalizations)
        if (op == n) return "normalization";
    for (std::string_view p : poolings)
        if (op == p) return "pooling";
    for (std::string_view e : elementwise)
        if (op == e) return "elementwise";
    return {};
}

/// One member op of a fused kernel.
struct fused_op {
    double flops = 0;
    double bytes = 0;  ///< its own input and output bytes, as a kernel of its own would move them
    bool anchor = false;
    double weight = 1;  ///< share of the kernel's non-compute energy and time
};

struct fused_op_estimate {
    double energy_j = 0;
    double latency_s = 0;
    double edp_j_s = 0;
    double standalone_j = 0;  ///< the op as a kernel of its own (0 for the anchor)
};

/// What a kernel of its own costs per byte and per launch, and its static power.
struct standalone_costs {
    double joules_per_byte = 0;  ///< the kernel's memory energy per byte it moves
    double launch_j = 0;
    double launch_s = 0;
    double bytes_per_s = 0;  ///< the kernel's bandwidth
    double static_power_w = 0;
};

/// Shares the kernel's energy and time among its ops; the shares sum to the kernel's. Writes
/// into `out`, which keeps its buffer when reused.
inline void split_kernel(const std::vector<fused_op>& ops, double compute_j, double other_j,
                         double latency_s, const standalone_costs& c,
                         std::vector<fused_op_estimate>& out) {
    out.assign(ops.size(), fused_op_estimate{});
    double flops = 0, weights = 0;
    for (const fused_op& o : ops) {
        flops += o.flops;
        weights += o.weight;
    }
    for (size_t i = 0; i < ops.size(); ++i) {
        const fused_op& o = ops[i];
        const double w = weights > 0 ? o.weight / weights : 1.0 / static_cast<double>(ops.size());
        const double f = flops > 0 ? o.flops / flops : w;
        fused_op_estimate& e = out[i];
        e.energy_j = compute_j * f + other_j * w;
        e.latency_s = latency_s * w;
        e.edp_j_s = e.energy_j * e.latency_s;
        if (!o.anchor) {
            const double time = c.launch_s + (c.bytes_per_s > 0 ? o.bytes / c.bytes_per_s : 0.0);
            e.standalone_j =
                compute_j * f + o.bytes * c.joules_per_byte + c.launch_j + c.static_power_w * time;
        }
    }
}

inline std::vector<fused_op_estimate> split_kernel(const std::vector<fused_op>& ops,
                                                   double compute_j, double other_j,
                                                   double latency_s, const standalone_costs& c) {
    std::vector<fused_op_estimate> out;
    split_kernel(ops, compute_j, other_j, latency_s, c, out);
    return out;
}

}  // namespace nnergy::energy
