// SPDX-License-Identifier: Apache-2.0
// Entry point of the trace reporter plugin.
#include "trace_reporter.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_reporter_trace", "0.1.0", "nnergy", "Apache-2.0",
                     "Report as a Chrome/Perfetto trace",
                     nnergy::sdk::reporter_component<nnergy::trace::trace_reporter>(
                         "nnergy.reporter.trace",
                         "The estimated timeline in the JSON trace event format (Perfetto, "
                         "chrome://tracing): host dispatch, device kernels, memory and power"))
