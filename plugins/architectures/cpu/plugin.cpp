// SPDX-License-Identifier: Apache-2.0
// Entry point of the CPU (stored-program) architecture plugin.
#include "cpu_architecture.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_architecture_cpu", "0.1.0", "nnergy", "Apache-2.0",
                     "Stored-program architecture model for CPU hardware descriptions",
                     nnergy::sdk::architecture_component<nnergy::cpu::cpu_architecture>(
                         "nnergy.architecture.cpu",
                         "CPU mapping: matrix unit (AVX-512, AMX, SME) vs vector unit per op "
                         "class, output blocks over cores, cache level holding the working set, "
                         "fixed time and per-call weight repacking per kernel"))
