// SPDX-License-Identifier: Apache-2.0
// Entry point of the text reporter plugin.
#include "text_reporter.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_reporter_text", "0.1.0", "nnergy", "Apache-2.0",
                     "Report as fixed-width text tables",
                     nnergy::sdk::reporter_component<nnergy::text::text_reporter>(
                         "nnergy.reporter.text",
                         "Per-kernel table, totals and unknown ops as readable text"))
