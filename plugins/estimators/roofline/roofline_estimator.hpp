// SPDX-License-Identifier: Apache-2.0
/// \file roofline_estimator.hpp
/// \brief nnergy.estimator.roofline: per-kernel roofline latency, kernels executed one after
/// another (runtime models that overlap host and device come separately).
#pragma once

#include <initializer_list>
#include <nnergy/sdk.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "roofline_model.hpp"

namespace nnergy::roofline {

class roofline_estimator : public sdk::estimator {
public:
    explicit roofline_estimator(const sdk::context& ctx) : sdk::estimator(ctx) {
        if (const nnergy_named_value* r = ctx.config().find("runtime"))
            throw sdk::error(sdk::config_view::where(*r) +
                                 ": runtime models are not implemented in this estimator; kernels "
                                 "run back to back on "
                                 "the device",
                             NNERGY_CODE_UNIMPLEMENTED);
        ctx.config().expect_only({}, "nnergy.estimator.roofline");
    }

    void estimate(const sdk::estimate_input& input, sdk::results_writer& out) const override {
        const sdk::partition_view partition = input.partition();
        double latency = 0, compute = 0, memory = 0, overhead = 0;
        size_t uncounted = 0;
        // Reused from kernel to kernel, so their strings keep their buffers.
        kernel_input in;
        kernel_estimate e;
        std::string key;
        for (uint32_t k = 0; k < input.kernel_count(); ++k) {
            const nnergy_kernel_stats stats = partition.stats(k);
            const sdk::mapping_view mapping = input.mapping(k);
            in.label.assign("kernel '");
            in.label += partition.name(k);
            in.label += "' (#";
            in.label += std::to_string(k);
            in.label += ')';
            in.flops = stats.flops;
            in.effective_flops_per_s = mapping.number("effective_flops_per_s");
            in.launch_overhead_s = mapping.number_or("launch_overhead_s", 0.0);
            const std::vector<sdk::mapping_view::level> levels = mapping.levels();
            in.levels.resize(levels.size());
            for (size_t i = 0; i < levels.size(); ++i) {
                in.levels[i].level = levels[i].name;
                in.levels[i].bytes = levels[i].bytes;
                in.levels[i].bandwidth_bytes_per_s = levels[i].bandwidth_bytes_per_s;
            }

            estimate_kernel(in, e);
            out.kernel(k, "latency_s", e.latency_s);
            out.kernel(k, "compute_time_s", e.compute_time_s);
            out.kernel(k, "memory_time_s", e.memory_time_s);
            for (const auto& [level, t] : e.level_times_s) {
                key.assign("memory_time_");
                key += level;
                key += "_s";
                out.kernel(k, key, t);
            }
            out.kernel(k, "overhead_s", e.overhead_s);
            out.kernel_text(k, "bottleneck", e.bottleneck);
            if (!stats.all_counted) {
                out.kernel_text(k, "note", "contains uncounted ops");
                ++uncounted;
            }
            latency += e.latency_s;
            compute += e.compute_time_s;
            memory += e.memory_time_s;
            overhead += e.overhead_s;
        }
        out.total("latency_s", latency);
        out.total("compute_time_s", compute);
        out.total("memory_time_s", memory);
        out.total("overhead_s", overhead);
        if (uncounted)
            ctx().warn(std::to_string(uncounted) +
                       " kernel(s) contain ops the counter does not know; their latency "
                       "covers only the counted work");
    }
};

}  // namespace nnergy::roofline
