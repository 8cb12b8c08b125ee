// SPDX-License-Identifier: Apache-2.0
// Compares a JSON report's totals with the counts a generated model was written with:
//
//   check_counts REPORT EXPECTED_TOML
//
// EXPECTED_TOML (written by nnergy_modern_models next to the model) holds `params`, the float
// initializers' elements, and `macs` at batch 1, seq 128, both from the model's hand formula.
// Parameters must be equal; MACs within 0.5% (the bound for hand-derived counts).
#include <toml++/toml.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: check_counts REPORT EXPECTED_TOML\n");
        return 2;
    }
    try {
        std::ifstream f(argv[1]);
        if (!f) throw std::runtime_error(std::string(argv[1]) + ": cannot open the report");
        const nlohmann::json r = nlohmann::json::parse(f);
        const auto& totals = r.at("runs").at(0).at("totals");
        const double params = totals.at("params").get<double>();
        const double macs = totals.at("macs").get<double>();

        const toml::table e = toml::parse_file(argv[2]);
        const auto want_params = e["params"].value<int64_t>();
        const auto want_macs = e["macs"].value<int64_t>();
        if (!want_params || !want_macs)
            throw std::runtime_error(std::string(argv[2]) + ": needs integer params and macs");

        int failures = 0;
        const auto wp = static_cast<double>(*want_params), wm = static_cast<double>(*want_macs);
        std::printf("params %.0f, expected %.0f\n", params, wp);
        if (params != wp) {
            std::fprintf(stderr, "FAIL: params %.0f differ from the expected %.0f (by %+.0f)\n",
                         params, wp, params - wp);
            ++failures;
        }
        const double rel = std::fabs(macs - wm) / wm;
        std::printf("macs %.0f, expected %.0f: %.4f%% apart\n", macs, wm, rel * 100);
        if (!(rel <= 0.005)) {
            std::fprintf(stderr, "FAIL: macs %.0f are not within 0.5%% of the expected %.0f\n",
                         macs, wm);
            ++failures;
        }
        return failures == 0 ? 0 : 1;
    } catch (const std::exception& ex) {
        std::fprintf(stderr, "check_counts: %s\n", ex.what());
        return 1;
    }
}
