// SPDX-License-Identifier: Apache-2.0
// acme.reporter.budget: a reporter plugin written outside the nnergy tree with the C++ SDK only.
// It checks every run of a report against an energy and a latency budget per inference and
// writes one verdict line per run, then the kernels that spend most of the energy of each run
// over budget, so a release check can grep for "OVER". It shows what every reporter does:
// reading its configuration once at creation, walking the report document (docs/report.md)
// with value_view, and writing bytes to the host's output; and two things of ABI 1.4: colour
// only where the host allows it, and a companion output (a tab-separated file of the verdicts
// beside the main output, for a spreadsheet or a CI dashboard).
//
// Configuration ([[reporter]] keys):
//   energy_budget_j   joules per inference (per batch item) a run may spend (optional: without
//                     it, chosen by `--format acme.reporter.budget`, the verdicts are "no budget")
//   latency_budget_s  seconds per forward pass a run may take (optional)
//   top               kernels listed per run over budget (default 3)
#include <algorithm>
#include <cstdio>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <vector>

namespace {
namespace sdk = nnergy::sdk;

constexpr const char* k_name = "acme.reporter.budget";

std::string printf_string(const char* pattern, double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, pattern, value);
    return buf;
}

class budget_reporter final : public sdk::reporter {
public:
    explicit budget_reporter(const sdk::context& ctx) : sdk::reporter(ctx) {
        const sdk::config_view config = ctx.config();
        config.expect_only({"energy_budget_j", "latency_budget_s", "top"}, k_name);
        energy_budget_j_ = config.number("energy_budget_j");
        if (energy_budget_j_ && !(*energy_budget_j_ > 0))
            throw sdk::error(sdk::config_view::where(*config.find("energy_budget_j")) +
                             ": 'energy_budget_j' (joules per inference) must be positive");
        latency_budget_s_ = config.number("latency_budget_s");
        if (latency_budget_s_ && !(*latency_budget_s_ > 0))
            throw sdk::error(sdk::config_view::where(*config.find("latency_budget_s")) +
                             ": 'latency_budget_s' must be positive");
        top_ = config.integer("top").value_or(3);
        if (top_ < 0)
            throw sdk::error(sdk::config_view::where(*config.find("top")) +
                             ": 'top' must be 0 or more");
    }

    void report(const sdk::value_view& doc, sdk::output_writer& out) override {
        const bool color = out.allows_color();
        const auto paint = [color](const char* code, const std::string& s) {
            return color ? "\033[" + std::string(code) + "m" + s + "\033[0m" : s;
        };
        std::string text, table =
                              "run\thardware\tprecision\tbatch\tenergy_per_inference_j\t"
                              "latency_s\tverdict\n";
        const sdk::value_view runs = doc["runs"];
        size_t over = 0;
        for (size_t r = 0; r < runs.size(); ++r) {
            const sdk::value_view run = runs.at(r);
            const sdk::value_view totals = run["totals"];
            const std::string hardware(run["architecture"]["hardware"].as_string());
            const std::string precision(run["architecture"]["precision"].as_string());
            const sdk::value_view batch_value = run["dims"]["batch"];
            const double batch = batch_value.is_number() ? batch_value.as_number() : 1.0;
            if (!totals["energy_j"].is_number()) {
                text += "run " + std::to_string(r + 1) + " " + hardware +
                        ": no energy estimate (add nnergy.estimator.energy to the pipeline)\n";
                table += std::to_string(r + 1) + "\t" + hardware + "\t" + precision + "\t\t\t\t" +
                         "unknown\n";
                continue;
            }
            const double per_inference = totals["energy_j"].as_number() / batch;
            const double latency = totals["latency_s"].as_number();
            const bool energy_ok = !energy_budget_j_ || per_inference <= *energy_budget_j_;
            const bool latency_ok = !latency_budget_s_ || latency <= *latency_budget_s_;
            const bool budgeted = energy_budget_j_ || latency_budget_s_;
            const bool ok = energy_ok && latency_ok;
            over += !ok;
            text += "run " + std::to_string(r + 1) + " " + hardware + " " + precision + " batch " +
                    printf_string("%.0f", batch) + ": " + printf_string("%.4g", per_inference) +
                    " J/inference";
            if (energy_budget_j_)
                text += " (budget " + printf_string("%.4g", *energy_budget_j_) + ")";
            text += ", " + printf_string("%.4g", latency) + " s";
            if (latency_budget_s_)
                text += " (budget " + printf_string("%.4g", *latency_budget_s_) + ")";
            const std::string verdict = !budgeted ? "no budget" : ok ? "ok" : "over";
            text += " " +
                    (!budgeted ? verdict
                     : ok      ? paint("32", "OK")
                               : paint("31", "OVER")) +
                    "\n";
            table += std::to_string(r + 1) + "\t" + hardware + "\t" + precision + "\t" +
                     printf_string("%.0f", batch) + "\t" + printf_string("%.9g", per_inference) +
                     "\t" + printf_string("%.9g", latency) + "\t" + verdict + "\n";
            if (!energy_ok) text += hungriest_kernels(run["kernels"]);
        }
        text +=
            std::to_string(over) + " of " + std::to_string(runs.size()) + " run(s) over budget\n";
        out.write(text);
        out.companion("-budget.tsv").write(table);
    }

private:
    // The kernels that spend most energy, largest first, with their share of the run's.
    std::string hungriest_kernels(const sdk::value_view& kernels) const {
        std::vector<std::pair<double, size_t>> by_energy;
        double sum = 0;
        for (size_t k = 0; k < kernels.size(); ++k) {
            const sdk::value_view e = kernels.at(k)["metrics"]["energy_j"];
            if (!e.is_number()) continue;
            by_energy.emplace_back(e.as_number(), k);
            sum += e.as_number();
        }
        std::stable_sort(by_energy.begin(), by_energy.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
        std::string s;
        const size_t n = std::min(by_energy.size(), static_cast<size_t>(top_));
        for (size_t i = 0; i < n; ++i)
            s += "  " + std::string(kernels.at(by_energy[i].second)["name"].as_string()) + " " +
                 printf_string("%.3g J", by_energy[i].first) +
                 (sum > 0 ? printf_string(" (%.0f%%)", 100 * by_energy[i].first / sum) : "") + "\n";
        return s;
    }

    std::optional<double> energy_budget_j_;
    std::optional<double> latency_budget_s_;
    int64_t top_ = 3;
};

}  // namespace

NNERGY_PLUGIN_DEFINE("acme_budget_reporter", "0.1.0", "Acme Corp.", "Apache-2.0",
                     "Energy and latency budget check",
                     sdk::reporter_component<budget_reporter>(
                         k_name, "Checks each run against an energy and latency budget"))
