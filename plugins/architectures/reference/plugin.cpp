// SPDX-License-Identifier: Apache-2.0
// Entry point of the reference architecture plugin.
#include "reference_architecture.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_architecture_reference", "0.1.0", "nnergy", "Apache-2.0",
                     "Roofline architecture model for any hardware description",
                     nnergy::sdk::architecture_component<nnergy::reference::reference_architecture>(
                         "nnergy.architecture.reference",
                         "Roofline mapping: peak x efficiency x utilization against DRAM "
                         "bandwidth, plus kernel launch cost"))
