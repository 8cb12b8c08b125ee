// SPDX-License-Identifier: Apache-2.0
/// \file op_class.hpp
/// \brief Op classes shared by the class architectures (GPU, CPU, TPU, KPU): each maps a kernel
/// to a class from its anchor op and fusion pattern, and keeps per-class constants as data.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nnergy::modeling {

/// What a kernel is, as far as an architecture cares: what unit it suits and how it behaves.
/// `gemv` is a matrix-vector product (a GEMM with one output row or column): libraries run it
/// as a streaming kernel, not as output tiles. `grouped_conv` is a convolution of several
/// groups, each wider than one channel: a small GEMM per group, whose short reduction and
/// narrow output tile a matrix unit poorly; `depthwise` is one channel per group.
/// `batch_norm` is inference batch normalization run as a kernel of its own (a per-channel
/// scale and shift, as eager frameworks run it): it reduces nothing, unlike `normalization`
/// (layer, group, instance norms), and libraries run it with kernels of their own.
/// `window_pool` is pooling over sliding windows (max, average, Lp pooling), which frameworks
/// may run with loops of their own rather than as a reduction; `pooling` keeps the global
/// pools, reductions and softmax.
enum class op_class {
    gemm,
    gemv,
    conv,
    grouped_conv,
    depthwise,
    attention,
    normalization,
    batch_norm,
    pooling,
    elementwise,
    window_pool
};
inline constexpr std::array<op_class, 11> all_classes{
    op_class::gemm,      op_class::gemv,        op_class::conv,          op_class::grouped_conv,
    op_class::depthwise, op_class::attention,   op_class::normalization, op_class::batch_norm,
    op_class::pooling,   op_class::elementwise, op_class::window_pool};

/// The class whose constants a class keeps where a hardware file gives none of its own: a
/// matrix-vector product the GEMM's, a grouped convolution the dense one's, a batch norm the
/// other normalizations', a sliding-window pool the other poolings'. The architectures' own physics
/// (per-group tiles, streaming) does the rest.
inline constexpr std::optional<op_class> general_class(op_class c) noexcept {
    switch (c) {
        case op_class::gemv:
            return op_class::gemm;
        case op_class::grouped_conv:
            return op_class::conv;
        case op_class::batch_norm:
            return op_class::normalization;
        case op_class::window_pool:
            return op_class::pooling;
        default:
            return std::nullopt;
    }
}

/// class_table::read fills the tables in all_classes order, so a general class must come first.
inline constexpr bool general_classes_come_first() noexcept {
    for (op_class c : all_classes)
        if (const std::optional<op_class> g = general_class(c); g && !(*g < c)) return false;
    return true;
}
static_assert(general_classes_come_first(),
              "a general class's table must be read before the classes that keep its constants");

inline std::string_view class_name(op_class c) noexcept {
    switch (c) {
        case op_class::gemm:
            return "gemm";
        case op_class::gemv:
            return "gemv";
        case op_class::conv:
            return "conv";
        case op_class::grouped_conv:
            return "grouped_conv";
        case op_class::depthwise:
            return "depthwise";
        case op_class::attention:
            return "attention";
        case op_class::normalization:
            return "normalization";
        case op_class::batch_norm:
            return "batch_norm";
        case op_class::pooling:
            return "pooling";
        case op_class::elementwise:
            return "elementwise";
        case op_class::window_pool:
            return "window_pool";
    }
    return "elementwise";
}

/// The class a name (class_name()'s spelling) stands for; none for a name that is no class.
inline std::optional<op_class> class_of_name(std::string_view name) noexcept {
    for (op_class c : all_classes)
        if (class_name(c) == name) return c;
    return std::nullopt;
}

/// The class names, comma-separated, for messages.
inline std::string class_names() {
    std::string s;
    for (op_class c : all_classes) {
        if (!s.empty()) s += ", ";
        s += class_name(c);
    }
    return s;
}

inline bool uses_matrix_tiles(op_class c) noexcept {
    return c == op_class::gemm || c == op_class::conv || c == op_class::grouped_conv ||
           c == op_class::attention;
}

/// The class of a kernel from its anchor op (the member with the most FLOPs), its fusion
/// pattern and whether it has multiply-accumulates.
inline op_class classify(std::string_view anchor_op, std::string_view pattern, double macs,
                         bool depthwise, int64_t groups) {
    if (pattern == "attention") return op_class::attention;
    if (macs > 0) {
        if (anchor_op == "Conv" || anchor_op == "ConvTranspose" || anchor_op == "ConvInteger" ||
            anchor_op == "QLinearConv")
            return depthwise    ? op_class::depthwise
                   : groups > 1 ? op_class::grouped_conv
                                : op_class::conv;
        return op_class::gemm;
    }
    if (anchor_op == "BatchNormalization") return op_class::batch_norm;
    if (anchor_op == "LayerNormalization" || anchor_op == "InstanceNormalization" ||
        anchor_op == "GroupNormalization" || anchor_op == "LpNormalization" ||
        anchor_op == "RMSNormalization" || pattern == "layernorm" || pattern == "add_layernorm")
        return op_class::normalization;
    if (anchor_op == "MaxPool" || anchor_op == "AveragePool" || anchor_op == "LpPool")
        return op_class::window_pool;
    if (anchor_op.find("Pool") != std::string_view::npos || anchor_op.substr(0, 6) == "Reduce" ||
        anchor_op == "Softmax" || anchor_op == "LogSoftmax" || anchor_op == "ArgMax" ||
        anchor_op == "ArgMin" || anchor_op == "TopK")
        return op_class::pooling;
    return op_class::elementwise;
}

/// True for a GEMM whose output is one row or one column (M or N is 1: a classifier head at
/// batch 1, a decoder step): BLAS libraries run such a product as a matrix-vector kernel that
/// streams the matrix, with every thread block on a slice of the rows.
inline bool is_matrix_vector(double outputs, double out_channels) noexcept {
    return outputs <= out_channels || out_channels <= 1;
}

/// Per op class constants of one device ([<section>.kernels.<class>]), overridden per unit
/// precision ([<section>.kernels.<class>.<precision>]): a TF32 convolution or a float16 GEMM
/// may behave differently from the class as a whole.
template <class Params>
class class_table {
public:
    const Params& params(op_class c, std::string_view precision) const {
        for (const override_entry& o : overrides_)
            if (o.cls == c && o.precision == precision) return o.params;
        // A class with no table of its own is its general class, precisions included.
        if (const std::optional<op_class> g = general_class(c);
            g && !has_own_[static_cast<size_t>(c)])
            return params(*g, precision);
        return classes_[static_cast<size_t>(c)];
    }

    /// `read(hw, prefix, fallback)` reads one table's keys ("gpu.kernels.conv.") over a
    /// fallback: the class's own table falls back to its general_class() table, or to
    /// `defaults` when it has none; an override falls back to its class. A class the file
    /// gives no key of its own (no [<section>.kernels.<class>] table) keeps its general
    /// class's per-precision tables too.
    template <class Reader>
    static class_table read(const sdk::config_view& hw, std::string_view section,
                            const std::vector<std::string>& precisions, const Params& defaults,
                            Reader read_params) {
        // Every key a class's table reads starts with its prefix: each class reads a view of
        // its own values, gathered in one pass, not the whole hardware file (hundreds of
        // values, searched once per key, class and precision).
        const std::string tables = std::string(section) + ".kernels.";
        auto starts_with = [](std::string_view s, std::string_view prefix) {
            return s.substr(0, prefix.size()) == prefix;
        };
        std::vector<nnergy_named_value> under_tables;
        for (const nnergy_named_value& v : hw)
            if (starts_with(sdk::from_sv(v.name), tables)) {
                under_tables.push_back(v);
                under_tables.back().struct_size = sizeof(nnergy_named_value);  // this copy's
            }
        // Sorted by name, each class's keys and each of its precisions' keys are one run of
        // them: found by a binary search, read in place. A stable sort keeps a key written
        // twice in its order, so a lookup finds what it found in the file's order.
        const auto by_name = [](const nnergy_named_value& a, const nnergy_named_value& b) {
            return sdk::from_sv(a.name) < sdk::from_sv(b.name);
        };
        std::stable_sort(under_tables.begin(), under_tables.end(), by_name);
        const auto run_of = [&](const nnergy_named_value* first, const nnergy_named_value* last,
                                std::string_view prefix) {
            first = std::lower_bound(first, last, prefix,
                                     [](const nnergy_named_value& v, std::string_view key) {
                                         return sdk::from_sv(v.name) < key;
                                     });
            const nnergy_named_value* end = first;
            while (end != last && starts_with(sdk::from_sv(end->name), prefix)) ++end;
            return std::pair{first, end};
        };
        const nnergy_named_value* const all_first = under_tables.data();
        const nnergy_named_value* const all_last = all_first + under_tables.size();
        class_table t;
        std::string prefix;
        for (op_class c : all_classes) {
            const std::string base = tables + std::string(class_name(c)) + ".";
            const auto [own_first, own_last] = run_of(all_first, all_last, base);
            const sdk::config_view own(own_first, static_cast<size_t>(own_last - own_first));
            Params& generic = t.classes_[static_cast<size_t>(c)];
            const std::optional<op_class> general = general_class(c);
            const Params& fallback = general ? t.classes_[static_cast<size_t>(*general)] : defaults;
            generic = read_params(own, base, fallback);
            for (const nnergy_named_value& v : own) {
                // Its own keys: "<base><key>", not "<base><precision>.<key>".
                if (sdk::from_sv(v.name).find('.', base.size()) == std::string_view::npos) {
                    t.has_own_[static_cast<size_t>(c)] = true;
                    break;
                }
            }
            for (const std::string& p : precisions) {
                prefix.assign(base);
                prefix += p;
                prefix += '.';
                const auto [first, last] = run_of(own_first, own_last, prefix);
                if (first != last)
                    t.overrides_.push_back({c, p, read_params(own, prefix, generic)});
            }
        }
        return t;
    }

private:
    struct override_entry {
        op_class cls;
        std::string precision;
        Params params;
    };
    std::array<Params, all_classes.size()> classes_{};
    std::array<bool, all_classes.size()> has_own_{};
    std::vector<override_entry> overrides_;
};

}  // namespace nnergy::modeling
