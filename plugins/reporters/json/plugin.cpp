// SPDX-License-Identifier: Apache-2.0
// Entry point of the JSON reporter plugin.
#include "json_reporter.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_reporter_json", "0.1.0", "nnergy", "Apache-2.0", "Report as JSON",
                     nnergy::sdk::reporter_component<nnergy::json::json_reporter>(
                         "nnergy.reporter.json",
                         "The whole report document (nnergy.report/1) as pretty-printed JSON"))
