// SPDX-License-Identifier: Apache-2.0
// Entry point of the energy estimator plugin.
#include "energy_estimator.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_estimator_energy", "0.1.0", "nnergy", "Apache-2.0",
                     "Energy, power and energy-delay estimator",
                     nnergy::sdk::estimator_component<nnergy::energy::energy_estimator>(
                         "nnergy.estimator.energy",
                         "Energy per kernel and inference from the architecture's events and the "
                         "hardware file's energy table; power, throttling, EDP"))
