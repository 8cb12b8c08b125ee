// SPDX-License-Identifier: Apache-2.0
// Compares nnergy's model latencies with measurements, per execution runtime:
//   calibration_check --nnergy BIN --measured models.json --zoo DIR --hw NAME
//                     [--runtime MODE=PROFILE]... [--max-mape MODE=PERCENT]...
//                     [--max-energy-mape MODE=PERCENT]... [--dims MODEL=NAME=VALUE]...
// models.json holds runs {model, precision fp32|fp16|bf16, batch, mode, latency_ms_median}; a run
// without a mode is "eager" (the CPU measurements have only that one). Every run
// whose model has DIR/<model>.onnx and whose mode has a runtime profile is estimated with
// `nnergy analyze --runtime PROFILE` (one call per model, precision and mode, sweeping the
// batches). Prints every error and the mean absolute percentage error (MAPE) per mode; fails when
// a mode's MAPE exceeds its --max-mape, or when a mode has no configuration at all. Runs with an
// energy_per_inference_j are compared with the report's totals.energy_j the same way
// (--max-energy-mape).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

std::pair<std::string, std::string> split_pair(const std::string& s) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos) {
        std::fprintf(stderr, "expected NAME=VALUE, got '%s'\n", s.c_str());
        std::exit(2);
    }
    return {s.substr(0, eq), s.substr(eq + 1)};
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

int main(int argc, char** argv) {
    std::string nnergy, measured_file, zoo, hw, out_dir = ".";
    std::map<std::string, std::string> runtimes;
    std::map<std::string, double> max_mape, max_energy_mape;
    std::multimap<std::string, std::string> dims;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--nnergy")
            nnergy = next();
        else if (a == "--measured")
            measured_file = next();
        else if (a == "--zoo")
            zoo = next();
        else if (a == "--hw")
            hw = next();
        else if (a == "--out")
            out_dir = next();
        else if (a == "--runtime")
            runtimes.insert(split_pair(next()));
        else if (a == "--max-mape") {
            auto [mode, pct] = split_pair(next());
            max_mape[mode] = std::stod(pct);
        } else if (a == "--max-energy-mape") {
            auto [mode, pct] = split_pair(next());
            max_energy_mape[mode] = std::stod(pct);
        } else if (a == "--dims") {
            auto [model, binding] = split_pair(next());
            dims.emplace(model, binding);
        } else {
            std::fprintf(stderr, "unknown argument '%s'\n", a.c_str());
            return 2;
        }
    }
    std::ifstream in(measured_file);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", measured_file.c_str());
        return 2;
    }
    const nlohmann::json measured = nlohmann::json::parse(in);

    // (model, precision, mode) -> batch -> measured ms; energy per inference where measured
    std::map<std::tuple<std::string, std::string, std::string>, std::map<int64_t, double>> groups;
    std::map<std::tuple<std::string, std::string, std::string, int64_t>, double> energies;
    for (const auto& r : measured.at("runs")) {
        const std::string model = r.at("model"), mode = r.value("mode", "eager");
        if (!runtimes.count(mode)) continue;
        if (!std::filesystem::exists(std::filesystem::path(zoo) / (model + ".onnx"))) continue;
        groups[{model, r.at("precision"), mode}][r.at("batch").get<int64_t>()] =
            r.at("latency_ms_median").get<double>();
        if (r.contains("energy_per_inference_j"))
            energies[{model, r.at("precision"), mode, r.at("batch").get<int64_t>()}] =
                r.at("energy_per_inference_j").get<double>();
    }

    std::map<std::string, std::vector<double>> errors, energy_errors;
    int failures = 0;
    const std::string report = (std::filesystem::path(out_dir) / "calibration.json").string();
    for (const auto& [key, batches] : groups) {
        const auto& [model, precision, mode] = key;
        std::string batch_list;
        for (const auto& [b, ms] : batches)
            batch_list += (batch_list.empty() ? "" : ",") + std::to_string(b);
        std::string cmd = quote(nnergy) + " --quiet analyze " +
                          quote((std::filesystem::path(zoo) / (model + ".onnx")).string()) +
                          " --hw " + quote(hw) + " --batch " + batch_list + " --precision " +
                          (precision == "fp16"   ? "float16"
                           : precision == "bf16" ? "bfloat16"
                                                 : "float32") +
                          " --runtime " + quote(runtimes.at(mode)) + " --format json -o " +
                          quote(report);
        auto [lo, hi] = dims.equal_range(model);
        for (auto it = lo; it != hi; ++it) cmd += " --dim " + quote(it->second);
        if (std::system(cmd.c_str()) != 0) {
            std::fprintf(stderr, "FAIL: %s\n", cmd.c_str());
            ++failures;
            continue;
        }
        std::ifstream rep(report);
        const nlohmann::json doc = nlohmann::json::parse(rep);
        for (const auto& run : doc.at("runs")) {
            const int64_t b = run.at("dims").at("batch").get<int64_t>();
            const double est = run.at("totals").at("latency_s").get<double>() * 1e3;
            const double meas = batches.at(b);
            const double err = (est - meas) / meas;
            errors[mode].push_back(std::fabs(err));
            std::printf("%-13s %-4s b%-3lld %-10s measured %8.3f ms  estimated %8.3f ms  %+5.0f%%",
                        model.c_str(), precision.c_str(), static_cast<long long>(b), mode.c_str(),
                        meas, est, 100 * err);
            const auto measured_energy = energies.find({model, precision, mode, b});
            const auto& totals = run.at("totals");
            if (measured_energy != energies.end() && totals.contains("energy_j")) {
                const double j = totals.at("energy_j").get<double>();
                const double eerr = (j - measured_energy->second) / measured_energy->second;
                energy_errors[mode].push_back(std::fabs(eerr));
                std::printf("   energy measured %8.4f J  estimated %8.4f J  %+5.0f%%",
                            measured_energy->second, j, 100 * eerr);
            }
            std::printf("\n");
        }
    }
    for (const auto& [mode, profile] : runtimes) {
        const std::vector<double>& e = errors[mode];
        if (e.empty()) {
            std::fprintf(stderr, "FAIL: no configuration measured in mode '%s'\n", mode.c_str());
            ++failures;
            continue;
        }
        double sum = 0;
        for (double x : e) sum += x;
        const double mape = 100 * sum / static_cast<double>(e.size());
        std::printf("%-10s (%s) MAPE %5.1f%% over %zu configurations\n", mode.c_str(),
                    profile.c_str(), mape, e.size());
        if (max_mape.count(mode) && mape > max_mape.at(mode)) {
            std::fprintf(stderr, "FAIL: %s MAPE %.1f%% exceeds %.1f%%\n", mode.c_str(), mape,
                         max_mape.at(mode));
            ++failures;
        }
    }
    for (const auto& [mode, profile] : runtimes) {
        const std::vector<double>& e = energy_errors[mode];
        if (e.empty()) {
            if (max_energy_mape.count(mode)) {
                std::fprintf(stderr, "FAIL: no energy estimate to compare in mode '%s'\n",
                             mode.c_str());
                ++failures;
            }
            continue;
        }
        double sum = 0;
        for (double x : e) sum += x;
        const double mape = 100 * sum / static_cast<double>(e.size());
        std::printf("%-10s (%s) energy MAPE %5.1f%% over %zu configurations\n", mode.c_str(),
                    profile.c_str(), mape, e.size());
        if (max_energy_mape.count(mode) && mape > max_energy_mape.at(mode)) {
            std::fprintf(stderr, "FAIL: %s energy MAPE %.1f%% exceeds %.1f%%\n", mode.c_str(), mape,
                         max_energy_mape.at(mode));
            ++failures;
        }
    }
    return failures ? 1 : 0;
}
