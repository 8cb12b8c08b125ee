// SPDX-License-Identifier: Apache-2.0
// Entry point of the KPU (domain flow) architecture plugin.
#include "kpu_architecture.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_architecture_kpu", "0.1.0", "nnergy", "Apache-2.0",
                     "Domain flow architecture model for KPU hardware descriptions",
                     nnergy::sdk::architecture_component<nnergy::kpu::kpu_architecture>(
                         "nnergy.architecture.kpu",
                         "KPU mapping: output-stationary blocks over tiles in waves with "
                         "pipeline fill and drain, elementwise streaming, tile SRAM, NoC and "
                         "DRAM traffic with spills, program setup per kernel"))
