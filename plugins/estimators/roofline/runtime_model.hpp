// SPDX-License-Identifier: Apache-2.0
/// \file runtime_model.hpp
/// \brief Execution-runtime models: how kernel latencies add up to a model's latency when a
/// framework issues them (docs/pipelines.md, [runtime]). Without host calls, to test alone.
///
/// - eager: a framework dispatches every op from the host. Host issue and device execution
///   form a two-stage pipeline: kernel i starts at max(host has issued it, kernel i-1 ended).
///   Small batches are host-bound, large ones device-bound.
/// - graph: the kernels were captured once (CUDA graph) and are replayed: a small gap between
///   kernels, one launch per forward pass.
/// - fused: a compiling runtime; as graph, over the partitioner's fused kernels.
/// - inline: the host runs each kernel itself (a CPU framework): dispatch and execution
///   alternate on the same cores and never overlap.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <nnergy/dtype.hpp>
#include <nnergy/modeling/op_class.hpp>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnergy::roofline {

enum class runtime_mode { none, eager, graph, fused, inline_host };

/// A runtime profile, in seconds.
struct runtime_profile {
    runtime_mode mode = runtime_mode::none;
    std::string name;
    double dispatch_per_kernel_s = 0;  ///< host time to issue one op that launches a kernel
    /// Host time of the module layer around each such op in a model (PyTorch's nn.Module
    /// call), which an op called directly does not pay.
    double dispatch_per_module_s = 0;
    /// Host time to issue one op of a class (dispatch.per_class.<class>), where the profile or
    /// the machine gives it; below 0: dispatch_per_kernel_s.
    std::array<double, modeling::all_classes.size()> dispatch_per_class_s = unset_classes();
    /// The same for one class at one precision of the run (dispatch.per_class.<class>.<precision>,
    /// the tensors' type, whatever unit runs the kernel): a framework may take another path for
    /// another type (PyTorch runs a 16-bit batch norm with its own kernel, a 32-bit one through
    /// cuDNN). Few entries, searched in order.
    struct class_precision_dispatch {
        modeling::op_class op_class;
        nnergy_dtype precision;
        double seconds;
    };
    std::vector<class_precision_dispatch> dispatch_per_class_precision;
    bool has_class_dispatch = false;  ///< some class has a time of its own
    double dispatch_per_view_s = 0;   ///< host time of a view op (reshape, permute): no kernel
    /// The time asked for is one of many calls issued back to back (dispatch.repeated_calls,
    /// as a microbenchmark times a single op): an eager host then issues the next call while the
    /// device runs this one, so a call takes the longer of the two, not their sum.
    bool repeated_calls = false;
    double per_call_s = 0;    ///< fixed host cost of one forward pass (entry, sync)
    double kernel_gap_s = 0;  ///< device idle time between consecutive kernels

    /// The host time to issue one op of class `c` at `precision` (the class's at that precision,
    /// else the class's, else per_kernel).
    double dispatch_for(modeling::op_class c,
                        nnergy_dtype precision = NNERGY_DTYPE_UNDEFINED) const noexcept {
        for (const class_precision_dispatch& d : dispatch_per_class_precision)
            if (d.op_class == c && d.precision == precision) return d.seconds;
        const double v = dispatch_per_class_s[static_cast<size_t>(c)];
        return v >= 0 ? v : dispatch_per_kernel_s;
    }

    static runtime_profile from_config(const sdk::config_view& rt) {
        runtime_profile p;
        if (rt.size() == 0) return p;
        p.name = rt.string("name").value_or("");
        const std::optional<std::string> mode = rt.string("mode");
        const std::string where =
            rt.find("mode") ? sdk::config_view::where(*rt.find("mode")) : "runtime profile";
        if (!mode)
            throw sdk::error("runtime profile '" + p.name +
                                 "' has no mode (expected mode = \"eager\", \"graph\", "
                                 "\"fused\" or \"inline\")",
                             NNERGY_CODE_INVALID_ARGUMENT);
        if (*mode == "eager")
            p.mode = runtime_mode::eager;
        else if (*mode == "graph")
            p.mode = runtime_mode::graph;
        else if (*mode == "fused")
            p.mode = runtime_mode::fused;
        else if (*mode == "inline")
            p.mode = runtime_mode::inline_host;
        else
            throw sdk::error(where + ": unknown runtime mode '" + *mode +
                                 "' (expected \"eager\", \"graph\", \"fused\" or "
                                 "\"inline\")",
                             NNERGY_CODE_INVALID_ARGUMENT);
        p.dispatch_per_kernel_s = time(rt, "dispatch.per_kernel");
        p.dispatch_per_module_s = time(rt, "dispatch.per_module");
        p.read_class_dispatch(rt, "dispatch.per_class.");
        p.dispatch_per_view_s = time(rt, "dispatch.per_view");
        p.repeated_calls = switch_value(rt, "dispatch.repeated_calls").value_or(false);
        p.per_call_s = time(rt, "dispatch.per_call");
        p.kernel_gap_s = time(rt, "launch.kernel_gap");
        if ((p.mode == runtime_mode::eager || p.mode == runtime_mode::inline_host) &&
            !rt.find("dispatch.per_kernel"))
            throw sdk::error(where + ": an " + *mode +
                                 " runtime needs dispatch.per_kernel = { value, "
                                 "unit = \"us\", source }",
                             NNERGY_CODE_INVALID_ARGUMENT);
        return p;
    }

    /// The profile on one machine: a hardware entry may give the costs this runtime has there
    /// (`runtime.<profile name>.dispatch.per_kernel`, ...; docs/hardware.md), since the host CPU
    /// and the framework build decide them. Keys it does not give keep the profile's value.
    runtime_profile on_machine(const sdk::config_view& hw) const {
        runtime_profile p = *this;
        if (name.empty() || hw.size() == 0) return p;
        const std::string prefix = "runtime." + name + ".";
        // One pass over the entry picks out this runtime's keys, in their order; the lookups
        // below search those few, not the whole entry (an estimate of a one-op graph, as a
        // calibration makes thousands of, would otherwise spend most of its time here).
        std::vector<nnergy_named_value> own_values;
        for (const nnergy_named_value& v : hw) {
            const std::string_view key = sdk::from_sv(v.name);
            if (key.size() > prefix.size() && key[0] == prefix[0] && key.starts_with(prefix)) {
                own_values.push_back(v);
                // Packed at this header's size: the view steps by the first element's size.
                own_values.back().struct_size = sizeof(nnergy_named_value);
            }
        }
        if (own_values.empty()) return p;
        const sdk::config_view own(own_values.data(), own_values.size());
        p.dispatch_per_kernel_s =
            override_time(own, prefix, "dispatch.per_kernel", p.dispatch_per_kernel_s);
        p.dispatch_per_module_s =
            override_time(own, prefix, "dispatch.per_module", p.dispatch_per_module_s);
        p.read_class_dispatch(own, prefix + "dispatch.per_class.");
        p.dispatch_per_view_s =
            override_time(own, prefix, "dispatch.per_view", p.dispatch_per_view_s);
        p.per_call_s = override_time(own, prefix, "dispatch.per_call", p.per_call_s);
        if (const std::optional<bool> r = switch_value(own, prefix + "dispatch.repeated_calls"))
            p.repeated_calls = *r;
        p.kernel_gap_s = override_time(own, prefix, "launch.kernel_gap", p.kernel_gap_s);
        return p;
    }

private:
    static std::array<double, modeling::all_classes.size()> unset_classes() noexcept {
        std::array<double, modeling::all_classes.size()> a{};
        a.fill(-1);
        return a;
    }

    /// The keys `<prefix><class>` and `<prefix><class>.<precision>` of `values`, in one pass (a
    /// file gives few or none of them); a name that is no op class or no precision is an error
    /// naming the file and line. Read over an earlier source (a machine over its profile), a
    /// class's plain time also replaces that source's times of the class per precision: the
    /// machine measured the class, the profile's split by type is not of this machine.
    void read_class_dispatch(const sdk::config_view& values, const std::string& prefix) {
        std::array<bool, modeling::all_classes.size()> plain_here{};
        std::vector<class_precision_dispatch> typed_here;
        for (const nnergy_named_value& v : values) {
            const std::string_view key = sdk::from_sv(v.name);
            if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0) continue;
            const std::string_view rest = key.substr(prefix.size());
            const size_t dot = rest.find('.');
            const std::optional<modeling::op_class> c =
                modeling::class_of_name(rest.substr(0, dot));
            if (!c)
                throw sdk::error(sdk::config_view::where(v) + ": '" + std::string(key) +
                                     "': unknown op class (expected one of " +
                                     modeling::class_names() + ")",
                                 NNERGY_CODE_INVALID_ARGUMENT);
            has_class_dispatch = true;
            if (dot == std::string_view::npos) {
                dispatch_per_class_s[static_cast<size_t>(*c)] = time(values, key);
                plain_here[static_cast<size_t>(*c)] = true;
                continue;
            }
            const std::optional<nnergy_dtype> precision =
                sdk::dtype_from_canonical_name(rest.substr(dot + 1));
            if (!precision)
                throw sdk::error(sdk::config_view::where(v) + ": '" + std::string(key) +
                                     "': unknown precision '" + std::string(rest.substr(dot + 1)) +
                                     "' (expected a precision name such as float32, tfloat32, "
                                     "float16, bfloat16)",
                                 NNERGY_CODE_INVALID_ARGUMENT);
            typed_here.push_back({*c, *precision, time(values, key)});
        }
        std::erase_if(dispatch_per_class_precision, [&](const class_precision_dispatch& d) {
            return plain_here[static_cast<size_t>(d.op_class)];
        });
        for (const class_precision_dispatch& t : typed_here) {
            auto same = [&](const class_precision_dispatch& d) {
                return d.op_class == t.op_class && d.precision == t.precision;
            };
            auto it = std::find_if(dispatch_per_class_precision.begin(),
                                   dispatch_per_class_precision.end(), same);
            if (it != dispatch_per_class_precision.end())
                it->seconds = t.seconds;  // the machine's value over the profile's
            else
                dispatch_per_class_precision.push_back(t);
        }
    }

    static double override_time(const sdk::config_view& hw, const std::string& prefix,
                                std::string_view key, double fallback) {
        std::string full = prefix;
        full += key;
        return hw.find(full) ? time(hw, full) : fallback;
    }

    /// A yes/no key, written 1 or 0 (as `--set` writes it) or true or false; anything else is
    /// an error naming the file and line, not a silent "no".
    static std::optional<bool> switch_value(const sdk::config_view& values, std::string_view key) {
        const nnergy_named_value* v = values.find(key);
        if (!v) return std::nullopt;
        if (v->kind == NNERGY_VALUE_BOOL) return v->bool_value;
        if ((v->kind == NNERGY_VALUE_INT || v->kind == NNERGY_VALUE_FLOAT) &&
            (v->float_value == 0 || v->float_value == 1))
            return v->float_value == 1;
        throw sdk::error(sdk::config_view::where(*v) + ": '" + std::string(key) +
                             "' must be 1 or 0 (true or false)",
                         NNERGY_CODE_INVALID_ARGUMENT);
    }

    static double time(const sdk::config_view& rt, std::string_view key) {
        const std::optional<double> v = rt.number(key);
        if (!v) return 0;
        if (!(*v >= 0) || !std::isfinite(*v))
            throw sdk::error(sdk::config_view::where(*rt.find(key)) + ": '" + std::string(key) +
                                 "' must be a non-negative time",
                             NNERGY_CODE_INVALID_ARGUMENT);
        return *v;
    }
};

/// One kernel as the runtime sees it.
struct issued_kernel {
    double device_s = 0;     ///< the kernel's own latency (0: no device work, a view only)
    double views = 0;        ///< view ops folded into it, each dispatched by the host
    double dispatch_s = -1;  ///< host time to issue its op; below 0: the profile's per_kernel
};

struct kernel_timing {
    double host_dispatch_s = 0;
    double start_s = 0;  ///< on the device
    double end_s = 0;
};

struct runtime_timeline {
    double latency_s = 0;
    double host_s = 0;         ///< host issue time of the whole pass
    double device_busy_s = 0;  ///< sum of kernel latencies
    double device_idle_s = 0;  ///< waiting for the host, or in gaps
    std::vector<kernel_timing> kernels;
};

/// Lays kernels out in order (the partition's topological order, one stream).
inline runtime_timeline run_timeline(const runtime_profile& p,
                                     const std::vector<issued_kernel>& kernels) {
    runtime_timeline t;
    t.kernels.resize(kernels.size());
    const bool host_issues = p.mode == runtime_mode::eager || p.mode == runtime_mode::inline_host;
    double host = host_issues ? p.per_call_s : 0.0;
    double device = host_issues ? 0.0 : p.per_call_s;
    size_t launched = 0;
    for (size_t i = 0; i < kernels.size(); ++i) {
        const issued_kernel& k = kernels[i];
        kernel_timing& kt = t.kernels[i];
        const bool launches = k.device_s > 0;
        if (host_issues) {
            const double issue = k.dispatch_s >= 0 ? k.dispatch_s : p.dispatch_per_kernel_s;
            kt.host_dispatch_s = (launches ? issue + p.dispatch_per_module_s : 0.0) +
                                 k.views * p.dispatch_per_view_s;
            // Inline: the host dispatches only once it has finished the previous kernel.
            if (p.mode == runtime_mode::inline_host) host = std::max(host, device);
            host += kt.host_dispatch_s;
        }
        if (!launches) {
            kt.start_s = kt.end_s = device;
            continue;
        }
        const double ready = device + p.kernel_gap_s;
        kt.start_s = host_issues ? std::max(host, ready) : ready;
        kt.end_s = kt.start_s + k.device_s;
        t.device_busy_s += k.device_s;
        ++launched;
        device = kt.end_s;
    }
    // The host's own time: inline, its dispatch work only (it also ran the kernels).
    t.host_s = host;
    if (p.mode == runtime_mode::inline_host) {
        t.host_s = p.per_call_s;
        for (const kernel_timing& kt : t.kernels) t.host_s += kt.host_dispatch_s;
    }
    t.latency_s = std::max(host, device);
    if (p.mode == runtime_mode::eager && p.repeated_calls) {
        // Calls back to back: the host issues the next while the device runs this one.
        t.latency_s =
            std::max(host, t.device_busy_s + static_cast<double>(launched) * p.kernel_gap_s);
    }
    t.device_idle_s = std::max(0.0, t.latency_s - t.device_busy_s);
    return t;
}

}  // namespace nnergy::roofline
