// SPDX-License-Identifier: Apache-2.0
// Entry point of the Markdown reporter plugin.
#include "markdown_reporter.hpp"

NNERGY_PLUGIN_DEFINE("nnergy_reporter_markdown", "0.1.0", "nnergy", "Apache-2.0",
                     "Report as Markdown",
                     nnergy::sdk::reporter_component<nnergy::markdown::markdown_reporter>(
                         "nnergy.reporter.markdown",
                         "A GitHub-flavoured Markdown summary: totals per run, energy by "
                         "category, top kernels by latency and energy, runs compared"))
