// SPDX-License-Identifier: Apache-2.0
// Entry point of the memory estimator plugin.
#include "memory_estimator.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_estimator_memory", "0.1.0", "nnergy", "Apache-2.0",
                     "Peak memory estimator",
                     nnergy::sdk::estimator_component<nnergy::memory::memory_estimator>(
                         "nnergy.estimator.memory",
                         "Memory in use per kernel (weights, live activations, workspace), its "
                         "peak, where it fits, and what int8 weights, half the batch or "
                         "recomputation would save"))
