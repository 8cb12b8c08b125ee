// SPDX-License-Identifier: Apache-2.0
#include <nnergy/framework/evaluate.hpp>

namespace nnergy {

evaluation_worker::evaluation_worker(const evaluation_plan& plan)
    : plan_(plan), partitioner_(*plan.partitioner, plan.partitioner_config, {}, plan.base_dir) {
    for (size_t e = 0; e < plan.estimators.size(); ++e)
        estimators_.push_back(
            std::make_unique<component_instance>(*plan.estimators[e], plan.estimator_configs[e],
                                                 config_values{}, plan.base_dir, plan.runtime));
}

const component_instance& evaluation_worker::architecture(size_t device,
                                                          const component_entry& entry,
                                                          const config_values& config,
                                                          const config_values& hardware) {
    std::unique_ptr<component_instance>& a = architectures_[device];
    if (!a)
        a = std::make_unique<component_instance>(entry, config, hardware, plan_.base_dir,
                                                 plan_.runtime);
    return *a;
}

nnergy_results evaluation_worker::evaluate(const component_instance& architecture,
                                           const bound_graph& g, const partition& p,
                                           nnergy_dtype precision) {
    const std::vector<nnergy_mapping> mappings = map_kernels(architecture, g, p, precision);
    nnergy_results results;
    for (const auto& e : estimators_)
        run_estimator(*e, architecture, g, p, mappings, precision, results);
    return results;
}

evaluation_totals totals_of(const nnergy_results& results, const bound_graph& g) {
    evaluation_totals t;
    for (const auto& [k, v] : results.totals) {
        if (k == "latency_s")
            t.latency_s = v;
        else if (k == "energy_j")
            t.energy_j = v;
        else if (k == "average_power_w")
            t.average_power_w = v;
        else if (k == "edp_j_s")
            t.edp_j_s = v;
        else if (k == "peak_memory_bytes")
            t.peak_memory_bytes = v;
    }
    for (const auto& [k, v] : results.total_texts)
        if (k == "fits") t.fits = v;
    // Work per joule as the report computes it: the bound batch, or one inference.
    if (t.energy_j && *t.energy_j > 0) {
        const auto batch = g.bindings.find("batch");
        const double items = batch != g.bindings.end() ? static_cast<double>(batch->second) : 1.0;
        t.inferences_per_j = items / *t.energy_j;
    }
    for (const op_counts& c : g.counts) {
        t.macs += c.macs;
        t.flops += c.flops;
    }
    t.params = g.total_params;
    return t;
}

}  // namespace nnergy
