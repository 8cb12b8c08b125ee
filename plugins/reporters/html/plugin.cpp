// SPDX-License-Identifier: Apache-2.0
// Entry point of the HTML reporter plugin.
#include "html_reporter.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_reporter_html", "0.1.0", "nnergy", "Apache-2.0",
                     "Report as one self-contained HTML page",
                     nnergy::sdk::reporter_component<nnergy::html::html_reporter>(
                         "nnergy.reporter.html",
                         "One HTML file with inline SVG charts (roofline, energy, memory, EDP, "
                         "runs compared) and a sortable kernel table; fetches nothing"))
