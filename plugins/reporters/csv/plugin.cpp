// SPDX-License-Identifier: Apache-2.0
// Entry point of the CSV reporter plugin.
#include "csv_reporter.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_reporter_csv", "0.1.0", "nnergy", "Apache-2.0", "Report as CSV",
                     nnergy::sdk::reporter_component<nnergy::csv::csv_reporter>(
                         "nnergy.reporter.csv",
                         "One row per kernel per run, and a totals file with one row per run, "
                         "as RFC 4180 CSV"))
