// SPDX-License-Identifier: Apache-2.0
// An energy estimator as a vendor might write one: it prices each kernel's time at a flat
// 100 W and reports energy_j and static_energy_j, but no idle_power_w. `nnergy validate` then
// cannot price the rest of a measured op call's period and must say so.
#include <nnergy/sdk.hpp>

namespace {
namespace sdk = nnergy::sdk;

class flat_power_estimator : public sdk::estimator {
public:
    using sdk::estimator::estimator;
    void estimate(const sdk::estimate_input& input, sdk::results_writer& out) const override {
        double joules = 0;
        for (uint32_t k = 0; k < input.kernel_count(); ++k)
            joules += 100.0 * out.kernel_number(k, "latency_s").value_or(0.0);
        out.total("energy_j", joules);
        out.total("static_energy_j", joules);
    }
};

}  // namespace

NNERGY_PLUGIN_DEFINE("fake_energy_no_idle", "0.1.0", "nnergy tests", "Apache-2.0",
                     "an energy estimator that reports no idle power",
                     sdk::estimator_component<flat_power_estimator>("fake.estimator.energy_no_idle",
                                                                    "100 W while a kernel runs"))
