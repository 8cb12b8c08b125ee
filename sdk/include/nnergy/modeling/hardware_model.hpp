// SPDX-License-Identifier: Apache-2.0
/// \file hardware_model.hpp
/// \brief The part of a hardware description (docs/hardware.md) every architecture model reads:
/// compute units per precision with their efficiencies and provenance, DRAM bandwidth, launch
/// cost; occupancy of a kernel on those units; the facts every model knows about a kernel; and
/// the rule that decides what limits it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nnergy/dtype.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "op_class.hpp"
#include "text.hpp"

namespace nnergy::modeling {

/// Where a constant comes from, best first. The confidence of a mapping is the provenance of
/// the constant that bounds it.
enum class provenance { measured, fitted, theoretical };

inline std::string_view to_string(provenance p) noexcept {
    switch (p) {
        case provenance::measured:
            return "measured";
        case provenance::fitted:
            return "fitted";
        case provenance::theoretical:
            return "theoretical";
    }
    return "theoretical";
}

/// Precision names are the dtype names of the ABI (docs/hardware.md).
inline std::string_view precision_name(nnergy_dtype d) noexcept {
    return d == NNERGY_DTYPE_UNDEFINED ? std::string_view() : sdk::dtype_name(d);
}

/// Names a hardware file may use under [compute.<precision>]: every numeric dtype.
inline bool is_precision_name(std::string_view name) noexcept {
    for (int d = NNERGY_DTYPE_FLOAT32; d <= NNERGY_DTYPE_TFLOAT32; ++d) {
        auto dt = static_cast<nnergy_dtype>(d);
        if (dt != NNERGY_DTYPE_BOOL && precision_name(dt) == name) return true;
    }
    return false;
}

/// Bytes one element occupies in memory; tf32 is stored as fp32. 0 for non-numeric types.
inline double storage_bytes(nnergy_dtype d) noexcept {
    switch (d) {
        case NNERGY_DTYPE_FLOAT64:
        case NNERGY_DTYPE_INT64:
        case NNERGY_DTYPE_UINT64:
            return 8;
        case NNERGY_DTYPE_FLOAT32:
        case NNERGY_DTYPE_TFLOAT32:
        case NNERGY_DTYPE_INT32:
        case NNERGY_DTYPE_UINT32:
            return 4;
        case NNERGY_DTYPE_FLOAT16:
        case NNERGY_DTYPE_BFLOAT16:
        case NNERGY_DTYPE_INT16:
        case NNERGY_DTYPE_UINT16:
            return 2;
        case NNERGY_DTYPE_INT8:
        case NNERGY_DTYPE_UINT8:
        case NNERGY_DTYPE_FLOAT8_E4M3:
        case NNERGY_DTYPE_FLOAT8_E5M2:
        case NNERGY_DTYPE_BOOL:
            return 1;
        case NNERGY_DTYPE_INT4:
        case NNERGY_DTYPE_UINT4:
            return 0.5;
        default:
            return 0;
    }
}

/// Bytes one element of a precision named as in hardware files ("float16", "tfloat32")
/// occupies; 0 for an unknown name.
inline double precision_storage_bytes(std::string_view precision) noexcept {
    for (int d = NNERGY_DTYPE_FLOAT32; d <= NNERGY_DTYPE_TFLOAT32; ++d)
        if (precision_name(static_cast<nnergy_dtype>(d)) == precision)
            return storage_bytes(static_cast<nnergy_dtype>(d));
    return 0;
}

inline bool is_floating(nnergy_dtype d) noexcept {
    return d == NNERGY_DTYPE_FLOAT32 || d == NNERGY_DTYPE_FLOAT16 || d == NNERGY_DTYPE_BFLOAT16 ||
           d == NNERGY_DTYPE_FLOAT64 || d == NNERGY_DTYPE_FLOAT8_E4M3 ||
           d == NNERGY_DTYPE_FLOAT8_E5M2 || d == NNERGY_DTYPE_TFLOAT32;
}

/// Factor applied to a kernel's bytes when it runs in `precision` but the graph stores its
/// (floating point) tensors as `graph_dtype`: a float32 graph run in float16 moves half the
/// bytes. Integer and boolean tensors (indices, masks) keep their size.
inline double bytes_scale(nnergy_dtype graph_dtype, nnergy_dtype precision) noexcept {
    if (!is_floating(graph_dtype)) return 1.0;
    double from = storage_bytes(graph_dtype);
    double to = storage_bytes(precision);
    return from > 0 && to > 0 ? to / from : 1.0;
}

/// One execution unit of one precision ("tensor_core" for float16 matrix work).
struct execution_unit {
    std::string name;
    double peak_flops_per_s = 0;
    double efficiency = 1;  ///< achievable fraction of the peak at full utilization
    provenance efficiency_provenance = provenance::theoretical;
    double threads_per_unit = 1;  ///< independent outputs one unit needs to be fully busy
};

/// The units a precision runs on: `matrix` for kernels with multiply-accumulates, `vector` (when
/// the file has one) for kernels without.
struct precision_units {
    std::string precision;
    execution_unit matrix;
    std::optional<execution_unit> vector;

    const execution_unit& unit_for(double macs) const {
        return macs <= 0 && vector ? *vector : matrix;
    }
};

/// The part of a hardware description every architecture model reads.
class hardware_model {
public:
    std::string name;
    std::string hw_class;
    std::string file;  ///< the file it came from, for messages
    double units = 1;  ///< parallel compute units (SMs, cores)
    std::string unit_name = "unit";
    std::vector<precision_units> precisions;  ///< in the order the host lists the keys
    double dram_bandwidth = 0;                ///< datasheet B/s
    double memory_efficiency = 1;
    provenance memory_provenance = provenance::theoretical;
    double launch_overhead_s = 0;
    provenance overhead_provenance = provenance::theoretical;

    /// Reads a flattened hardware description (quantities already in SI units). Throws
    /// sdk::error naming the file, line and key for a missing or invalid value.
    static hardware_model from_config(const sdk::config_view& hw) {
        hardware_model m;
        for (const nnergy_named_value& v : hw) {
            if (!v.file.size) continue;
            m.file = std::string(sdk::from_sv(v.file));
            break;
        }
        m.name = hw.string("name").value_or("");
        m.hw_class = hw.string("class").value_or("");
        const std::string ctx = m.context();

        m.units = optional_number(hw, "compute.units", 1, 1);
        // Units are counted (SMs, cores): kernels are spread over whole ones.
        if (m.units != std::floor(m.units))
            throw sdk::error(sdk::config_view::where(*hw.find("compute.units")) +
                             ": 'compute.units' must be a whole count, got " +
                             format("%g", m.units));
        m.unit_name = hw.string("compute.unit_name").value_or("unit");
        const double default_threads = optional_number(hw, "compute.threads_per_unit", 1, 1);
        const auto [default_eff, default_eff_prov] =
            efficiency(hw, "efficiency.compute", "efficiency.compute_provenance", std::nullopt);

        // Precisions are the tables [compute.<name>] that have a peak.
        for (const nnergy_named_value& v : hw) {
            std::string_view key = sdk::from_sv(v.name);
            constexpr std::string_view prefix = "compute.", suffix = ".peak";
            if (key.size() <= prefix.size() + suffix.size() ||
                key.substr(0, prefix.size()) != prefix ||
                key.substr(key.size() - suffix.size()) != suffix)
                continue;
            std::string_view p =
                key.substr(prefix.size(), key.size() - prefix.size() - suffix.size());
            if (p.find('.') != std::string_view::npos) continue;  // compute.<p>.vector.peak
            if (!is_precision_name(p))
                throw sdk::error(sdk::config_view::where(v) + ": '" + std::string(key) +
                                 "': unknown precision '" + std::string(p) +
                                 "' (expected a dtype name: float32, tfloat32, float16, "
                                 "bfloat16, float8_e4m3, float8_e5m2, int8, int4, float64, ...)");
            precision_units pu;
            pu.precision = std::string(p);
            const std::string base = "compute." + pu.precision;
            pu.matrix =
                read_unit(hw, base, "compute", default_threads, default_eff, default_eff_prov, ctx);
            if (hw.contains(base + ".vector.peak"))
                pu.vector = read_unit(hw, base + ".vector", "vector", default_threads, default_eff,
                                      default_eff_prov, ctx);
            m.precisions.push_back(std::move(pu));
        }
        if (m.precisions.empty())
            throw sdk::error(ctx +
                                 ": no compute precision: add a table [compute.<precision>] "
                                 "with peak = { value, unit = \"TFLOP/s\", source }",
                             NNERGY_CODE_NOT_FOUND);

        m.dram_bandwidth = hw.require_number("memory.dram.bandwidth", ctx);
        check_positive(hw, "memory.dram.bandwidth", m.dram_bandwidth);
        std::tie(m.memory_efficiency, m.memory_provenance) =
            efficiency(hw, "efficiency.memory", "efficiency.memory_provenance", std::nullopt);
        m.launch_overhead_s = optional_number(hw, "overhead.kernel_launch", 0, 0);
        m.overhead_provenance =
            read_provenance(hw, "overhead.kernel_launch_provenance", provenance::theoretical);
        return m;
    }

    /// "hardware 'h100-sxm5' (configs/hardware/h100-sxm5.toml)", for messages.
    std::string context() const {
        std::string s = "hardware '" + (name.empty() ? std::string("<unnamed>") : name) + "'";
        if (!file.empty()) s += " (" + file + ")";
        return s;
    }

    const precision_units* find(std::string_view precision) const noexcept {
        for (const precision_units& p : precisions)
            if (p.precision == precision) return &p;
        return nullptr;
    }

    std::string available_precisions() const {
        std::string s;
        for (const precision_units& p : precisions) {
            if (!s.empty()) s += ", ";
            s += p.precision;
        }
        return s;
    }

    /// The precision's units, or an UNIMPLEMENTED error listing what the hardware offers.
    const precision_units& require(nnergy_dtype precision) const {
        std::string_view pname = precision_name(precision);
        if (precision == NNERGY_DTYPE_UNDEFINED)
            throw sdk::error("no compute precision requested for " + context() +
                                 ": set precision = \"...\" in the [[architecture]] table "
                                 "(available: " +
                                 available_precisions() + ")",
                             NNERGY_CODE_INVALID_ARGUMENT);
        if (const precision_units* p = find(pname)) return *p;
        throw sdk::error(context() + " has no compute precision '" + std::string(pname) +
                             "' (available: " + available_precisions() + ")",
                         NNERGY_CODE_UNIMPLEMENTED);
    }

    // Checked readers of optional values, shared with architectures built on this model.

    static void check_positive(const sdk::config_view& hw, std::string_view key, double v) {
        if (!(v > 0) || !std::isfinite(v))
            throw sdk::error(sdk::config_view::where(*hw.find(key)) + ": '" + std::string(key) +
                             "' must be a positive number, got " + format("%g", v));
    }

    static double optional_number(const sdk::config_view& hw, std::string_view key, double fallback,
                                  double minimum) {
        std::optional<double> v = hw.number(key);
        if (!v) return fallback;
        if (!(*v >= minimum) || !std::isfinite(*v))
            throw sdk::error(sdk::config_view::where(*hw.find(key)) + ": '" + std::string(key) +
                             "' must be at least " + format("%g", minimum) + ", got " +
                             format("%g", *v));
        return *v;
    }

    static provenance read_provenance(const sdk::config_view& hw, std::string_view key,
                                      provenance fallback) {
        std::optional<std::string> s = hw.string(key);
        if (!s) return fallback;
        if (*s == "measured") return provenance::measured;
        if (*s == "fitted") return provenance::fitted;
        if (*s == "theoretical") return provenance::theoretical;
        throw sdk::error(sdk::config_view::where(*hw.find(key)) + ": '" + std::string(key) +
                         "' must be \"measured\", \"fitted\" or \"theoretical\", got \"" + *s +
                         "\"");
    }

    /// An efficiency in (0, 1] with its provenance; `fallback` when the key is absent, else 1
    /// (theoretical). A value without a provenance key is taken as theoretical.
    static std::pair<double, provenance> efficiency(
        const sdk::config_view& hw, std::string_view key, std::string_view provenance_key,
        std::optional<std::pair<double, provenance>> fallback) {
        std::optional<double> v = hw.number(key);
        if (!v) return fallback.value_or(std::pair{1.0, provenance::theoretical});
        if (!(*v > 0 && *v <= 1))
            throw sdk::error(sdk::config_view::where(*hw.find(key)) + ": '" + std::string(key) +
                             "' must be a fraction in (0, 1] (write unit = \"1\" or \"%\"), got " +
                             format("%g", *v));
        return {*v, read_provenance(hw, provenance_key, provenance::theoretical)};
    }

    /// A fraction in (0, 1] without its own provenance key; `fallback` when absent.
    static double optional_fraction(const sdk::config_view& hw, std::string_view key,
                                    double fallback) {
        return efficiency(hw, key, "", std::pair{fallback, provenance::theoretical}).first;
    }

private:
    static execution_unit read_unit(const sdk::config_view& hw, const std::string& base,
                                    const char* default_name, double default_threads,
                                    double default_eff, provenance default_eff_prov,
                                    const std::string& ctx) {
        execution_unit u;
        u.name = hw.string(base + ".unit").value_or(default_name);
        u.peak_flops_per_s = hw.require_number(base + ".peak", ctx);
        check_positive(hw, base + ".peak", u.peak_flops_per_s);
        std::tie(u.efficiency, u.efficiency_provenance) =
            efficiency(hw, base + ".efficiency", base + ".efficiency_provenance",
                       std::pair{default_eff, default_eff_prov});
        u.threads_per_unit = optional_number(hw, base + ".threads_per_unit", default_threads, 1);
        return u;
    }
};

/// How many units a kernel keeps busy. The chip holds units x threads_per_unit threads at once;
/// a kernel with more threads runs in waves, and the last wave may be partly empty.
struct occupancy {
    double waves = 1;
    double utilization = 1;  ///< busy fraction of the chip's thread slots, averaged over waves
    double units_allocated = 1;
};

inline occupancy compute_occupancy(double total_threads, double units, double threads_per_unit) {
    // A kernel always has at least one thread: a scalar output still runs somewhere.
    const double threads = std::max(1.0, std::isfinite(total_threads) ? total_threads : 1.0);
    const double capacity = units * threads_per_unit;
    occupancy o;
    o.waves = std::max(1.0, std::ceil(threads / capacity));
    o.utilization = std::min(1.0, threads / (o.waves * capacity));
    o.units_allocated = std::min(units, std::ceil(threads / threads_per_unit));
    return o;
}

/// Threads a kernel can spread over. Outputs are independent, so every kernel has at least
/// one thread per output element. A kernel without multiply-accumulates (elementwise,
/// reduction, pooling) can also split its inputs among threads and combine partial results,
/// so it has one per input element (input bytes / element size) when that is more: a
/// reduction to a scalar is not one serial thread. Kernels with multiply-accumulates keep their
/// output parallelism: matrix units tile outputs, and splitting the reduction is not modeled.
inline double available_threads(double macs, double total_threads, double input_bytes,
                                nnergy_dtype element) {
    double threads = std::isfinite(total_threads) ? std::max(1.0, total_threads) : 1.0;
    if (macs > 0) return threads;
    double size = storage_bytes(element);
    if (size <= 0) size = 4;  // unknown element type: assume 32-bit
    return std::max(threads, std::floor(input_bytes / size));
}

/// What every architecture model knows about a kernel before mapping it; each model's kernel
/// extends it with what only that model reads. Bytes are in the compute precision.
struct kernel_work {
    std::string what;  ///< "Conv 3x3 (conv_bn_relu)", for the explanation
    op_class cls = op_class::elementwise;
    double macs = 0;
    double flops = 0;
    double input_bytes = 0;
    double output_bytes = 0;
    double weight_bytes = 0;
    double outputs = 1;       ///< output elements of the anchor op (M x N of the GEMM view)
    double out_channels = 1;  ///< N of the GEMM view
    double groups = 1;        ///< convolution groups (depthwise: N)
    double threads = 1;       ///< parallel work items (available_threads)
    /// False when the caller keeps the totals only (NNERGY_MAP_TOTALS_ONLY): models then skip
    /// the description and the explanation, which nothing reads.
    bool explain = true;

    double dram_bytes() const noexcept { return input_bytes + output_bytes + weight_bytes; }
};

/// Reads a class architecture's per-class table ([<section>.kernels.<class>] with per-precision
/// overrides for every precision of the file): each class falls back to `defaults`, whose fixed
/// time is the file's kernel launch cost.
template <class Params, class Reader>
class_table<Params> read_class_table(const sdk::config_view& hw, std::string_view section,
                                     const hardware_model& base, Reader read_params) {
    Params defaults;
    defaults.fixed_time_s = base.launch_overhead_s;
    std::vector<std::string> precisions;
    for (const precision_units& p : base.precisions) precisions.push_back(p.precision);
    return class_table<Params>::read(hw, section, precisions, defaults, read_params);
}

/// What limits a kernel, the rule every architecture model applies to its terms: the fixed cost
/// (launch, setup) when it exceeds the work or there is no work, else the larger of compute and
/// memory time (compute on a tie).
enum class limit { overhead, compute, memory };
inline limit limiting_term(double compute_s, double memory_s, double fixed_s) noexcept {
    const double work = std::max(compute_s, memory_s);
    if (work == 0 || fixed_s > work) return limit::overhead;
    return compute_s >= memory_s ? limit::compute : limit::memory;
}

}  // namespace nnergy::modeling
