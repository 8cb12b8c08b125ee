// SPDX-License-Identifier: Apache-2.0
// Entry point of the GPU (SIMT) architecture plugin.
#include "gpu_architecture.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_architecture_gpu", "0.1.0", "nnergy", "Apache-2.0",
                     "SIMT architecture model for GPU hardware descriptions",
                     nnergy::sdk::architecture_component<nnergy::gpu::gpu_architecture>(
                         "nnergy.architecture.gpu",
                         "GPU mapping: tensor vs CUDA cores per op class and runtime math mode, "
                         "output tiles over SMs in waves, reduction depth, fixed time per kernel"))
