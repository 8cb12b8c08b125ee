// SPDX-License-Identifier: Apache-2.0
// An energy estimator whose arithmetic overflows, as a vendor's might on a model far larger
// than it was written for: from the second kernel on, each kernel's energy is infinite. The
// host must refuse to report such an estimate (analyze and sweep), naming the first kernel.
#include <limits>
#include <nnergy/sdk.hpp>

namespace {
namespace sdk = nnergy::sdk;

class overflowing_estimator : public sdk::estimator {
public:
    using sdk::estimator::estimator;
    void estimate(const sdk::estimate_input& input, sdk::results_writer& out) const override {
        double joules = 0;
        for (uint32_t k = 0; k < input.kernel_count(); ++k) {
            const double latency = out.kernel_number(k, "latency_s").value_or(0.0);
            const double energy =
                k == 0 ? 100.0 * latency : std::numeric_limits<double>::infinity();
            out.kernel(k, "energy_j", energy);
            joules += energy;
        }
        out.total("energy_j", joules);
    }
};

}  // namespace

NNERGY_PLUGIN_DEFINE(
    "fake_energy_overflow", "0.1.0", "nnergy tests", "Apache-2.0",
    "an energy estimator whose energy overflows to infinity",
    sdk::estimator_component<overflowing_estimator>("fake.estimator.energy_overflow",
                                                    "infinite energy after the first kernel"))
