// SPDX-License-Identifier: Apache-2.0
// Entry point of the TPU (systolic array) architecture plugin.
#include "tpu_architecture.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_architecture_tpu", "0.1.0", "nnergy", "Apache-2.0",
                     "Systolic-array architecture model for TPU hardware descriptions",
                     nnergy::sdk::architecture_component<nnergy::tpu::tpu_architecture>(
                         "nnergy.architecture.tpu",
                         "TPU mapping: weight-stationary MXU tiles with fill/drain and padding, "
                         "waves over the MXUs, vector unit for non-matmul and badly mapped work, "
                         "on-chip memory re-reads and parameter caching"))
