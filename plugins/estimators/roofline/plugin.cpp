// SPDX-License-Identifier: Apache-2.0
// Entry point of the roofline estimator plugin.
#include "roofline_estimator.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_estimator_roofline", "0.1.0", "nnergy", "Apache-2.0",
                     "Roofline latency estimator",
                     nnergy::sdk::estimator_component<nnergy::roofline::roofline_estimator>(
                         "nnergy.estimator.roofline",
                         "Latency per kernel: max(compute, memory) + launch overhead, kernels "
                         "run one after another"))
