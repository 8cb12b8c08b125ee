// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <nnergy/framework/concurrency.hpp>

namespace nnergy {

concurrency_summary analyze_concurrency(const partition& p, const std::vector<double>& latency_s) {
    const size_t n = p.kernels.size();
    const bool timed = latency_s.size() == n;
    concurrency_summary c;
    c.stage_of.assign(n, 0);
    // Kernels are in topological order and depend only on earlier ones, so one forward pass
    // settles each kernel's stage and the longest chain ending at it.
    std::vector<double> finish(n, 0);
    std::vector<uint32_t> via(n, UINT32_MAX);
    for (uint32_t k = 0; k < n; ++k) {
        const double own = timed ? latency_s[k] : 1.0;
        double start = 0;
        for (uint32_t d : p.kernels[k].dependencies) {
            c.stage_of[k] = std::max(c.stage_of[k], c.stage_of[d] + 1);
            if (via[k] == UINT32_MAX || finish[d] > start) {
                start = finish[d];
                via[k] = d;
            }
        }
        finish[k] = start + own;
        if (c.stage_of[k] >= c.stages.size()) c.stages.resize(c.stage_of[k] + 1);
        stage_summary& s = c.stages[c.stage_of[k]];
        const double threads = p.kernels[k].stats.total_threads;
        ++s.kernels;
        s.total_threads += threads;
        s.max_threads = std::max(s.max_threads, threads);
        if (timed) {
            s.latency_s = std::max(s.latency_s, latency_s[k]);
            c.serial_latency_s += latency_s[k];
        }
    }
    for (uint32_t s = 0; s < c.stages.size(); ++s)
        if (c.stages[s].kernels > c.stages[c.widest_stage].kernels) c.widest_stage = s;
    if (n == 0) return c;
    uint32_t last =
        static_cast<uint32_t>(std::max_element(finish.begin(), finish.end()) - finish.begin());
    for (uint32_t k = last; k != UINT32_MAX; k = via[k]) c.critical_path.push_back(k);
    std::reverse(c.critical_path.begin(), c.critical_path.end());
    if (timed) {
        c.critical_path_latency_s = finish[last];
        if (c.critical_path_latency_s > 0)
            c.speedup_bound = c.serial_latency_s / c.critical_path_latency_s;
    }
    return c;
}

}  // namespace nnergy
