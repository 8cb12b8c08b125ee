// SPDX-License-Identifier: Apache-2.0
// Checks a JSON report for internal consistency (and optional expected values):
//   check_report REPORT [--batch N] [--kernel-batch N] [--macs M] [--params P]
//                [--reference FILE MODEL]
// --runs N checks the number of runs; --run-batches B1,B2,... each run's bound batch (its
// `dims`) and its kernels' parallelism.batch, for sweeps.
// --batch checks the bound dimension; --kernel-batch also checks that every kernel's
// parallelism.batch is N (true of batch-first models such as CNNs, not of attention blocks
// whose heads or sequence lead some tensors).
// --energy 1 checks the energy estimate of every run: totals.energy_j positive and finite, equal
// to its kernels' energy_j plus the device idle energy, and no kernel with negative energy. Its
// memory-bound advice, where given, must equal what the kernels' mappings and metrics give
// (docs/report.md); --energy 2 also requires that advice in every run.
// --reference reads a published count (tests/data/reference/torchvision_counts.toml): the
// model's `num_params` must equal totals.params exactly, and totals.macs (conv, linear and
// matmul MACs: the only ops with MACs, docs/counting.md) must be within 0.5% of `gmacs`, or
// within its rounding (it is published to 0.001 GMACs) where that is wider.
// --memory 1 requires the memory estimator's totals; --peak-memory B also its exact peak. A
// report with totals.peak_memory_bytes must have it equal weight_bytes plus the peak kernel's
// live_activation_bytes and workspace_bytes, and no kernel's memory_in_use_bytes above it.
// Totals must equal the sums of their kernels, every kernel must carry a mapping and a positive
// latency, and the keys of docs/report.md must be present.
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {
int failures = 0;

void expect(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "FAIL: %s\n", what.c_str());
        ++failures;
    }
}

bool close(double a, double b) {
    return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)) + 1e-15;
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: check_report REPORT [--batch N] [--macs M] [--params P]\n");
        return 2;
    }
    double batch = -1, kernel_batch = -1, macs = -1, params = -1, reference_macs = -1;
    double run_count = -1, peak_memory = -1;
    bool need_memory = false;
    bool energy = false, need_memory_advice = false;
    std::vector<double> run_batches;
    for (int i = 2; i + 1 < argc; i += 2) {
        std::string k = argv[i];
        if (k == "--run-batches") {
            std::string list = argv[i + 1];
            for (std::size_t at = 0; at <= list.size();) {
                std::size_t comma = std::min(list.find(',', at), list.size());
                run_batches.push_back(std::stod(list.substr(at, comma - at)));
                at = comma + 1;
            }
            continue;
        }
        if (k == "--reference" && i + 2 < argc) {
            const toml::table ref = toml::parse_file(argv[i + 1]);
            const std::string model = argv[i + 2];
            auto p = ref[model]["num_params"].value<int64_t>();
            auto g = ref[model]["gmacs"].value<double>();
            if (!p || !g) {
                std::fprintf(stderr, "%s: no num_params/gmacs for [%s]\n", argv[i + 1],
                             model.c_str());
                return 2;
            }
            params = static_cast<double>(*p);
            reference_macs = *g * 1e9;
            ++i;
            continue;
        }
        double v = std::stod(argv[i + 1]);
        if (k == "--batch")
            batch = v;
        else if (k == "--kernel-batch")
            kernel_batch = batch = v;
        else if (k == "--runs")
            run_count = v;
        else if (k == "--macs")
            macs = v;
        else if (k == "--params")
            params = v;
        else if (k == "--memory")
            need_memory = v != 0;
        else if (k == "--peak-memory")
            peak_memory = v;
        else if (k == "--energy") {
            energy = v != 0;
            need_memory_advice = v >= 2;
        }
    }
    std::ifstream f(argv[1]);
    if (!f) {
        std::fprintf(stderr, "cannot open %s\n", argv[1]);
        return 1;
    }
    nlohmann::json r = nlohmann::json::parse(f);
    expect(r.at("schema") == "nnergy.report/1", "schema is nnergy.report/1");
    const auto& runs = r.at("runs");
    expect(!runs.empty(), "at least one run");
    expect(r.at("totals") == runs.at(0).at("totals"), "top-level totals equal the first run's");
    if (batch > 0) expect(r.at("model").at("dims").at("batch") == batch, "model.dims.batch");
    if (run_count >= 0) expect(static_cast<double>(runs.size()) == run_count, "number of runs");
    if (!run_batches.empty()) {
        expect(runs.size() == run_batches.size(), "one --run-batches value per run");
        for (std::size_t r = 0; r < std::min(runs.size(), run_batches.size()); ++r) {
            const auto& run = runs.at(r);
            expect(run.at("dims").at("batch") == run_batches[r],
                   "run " + std::to_string(r) + " dims.batch");
            for (const auto& k : run.at("kernels"))
                expect(k.at("parallelism").at("batch").get<double>() == run_batches[r],
                       "run " + std::to_string(r) + " kernel parallelism.batch");
        }
        expect(r.at("model").at("dims").at("batch") == run_batches.front(),
               "model.dims is the first run's");
    }
    for (const auto& run : runs) {
        const auto& t = run.at("totals");
        for (const char* key : {"params", "macs", "flops", "latency_s"})
            expect(t.contains(key) && t.at(key).get<double>() > 0,
                   std::string("totals.") + key + " present and positive");
        double sum_macs = 0, sum_flops = 0, sum_latency = 0;
        for (const auto& k : run.at("kernels")) {
            const std::string name = k.at("name");
            sum_macs += k.at("macs").get<double>();
            sum_flops += k.at("flops").get<double>();
            const auto& m = k.at("metrics");
            // Only a kernel with nothing to run on the device (folded shape arithmetic) is free.
            const bool no_work = k.at("mapping").value("unit", "") == "none";
            expect(
                m.contains("latency_s") && (no_work ? m.at("latency_s").get<double>() == 0
                                                    : m.at("latency_s").get<double>() > 0),
                "kernel " + name +
                    (no_work ? " (no device work) has latency_s 0" : " has a positive latency_s"));
            if (no_work) {
                expect(k.at("flops").get<double>() == 0 && k.at("macs").get<double>() == 0,
                       "kernel " + name + " without device work has no FLOPs");
                expect(k.at("mapping").value("bottleneck", "") == "none" &&
                           k.at("mapping").value("confidence", "") == "theoretical",
                       "kernel " + name +
                           " without device work has bottleneck none, confidence theoretical");
            }
            sum_latency += m.value("latency_s", 0.0);
            expect(k.at("mapping").contains("effective_flops_per_s"),
                   "kernel " + name + " mapping has effective_flops_per_s");
            expect(!k.at("ops").empty(), "kernel " + name + " has ops");
            if (kernel_batch > 0)
                expect(k.at("parallelism").at("batch").get<double>() == kernel_batch,
                       "kernel " + name + " parallelism.batch equals the bound batch");
        }
        expect(close(sum_macs, t.at("macs")), "totals.macs equals the sum of kernel macs");
        expect(close(sum_flops, t.at("flops")), "totals.flops equals the sum of kernel flops");
        expect(close(sum_latency, t.at("latency_s")),
               "totals.latency_s equals the sum of kernel latencies (serial execution)");
        // Concurrency: every kernel in one stage; the critical path is no longer than the
        // serial sum; the bound is at least 1.
        const auto& c = run.at("concurrency");
        double staged = 0;
        for (const auto& st : c.at("per_stage")) staged += st.at("kernels").get<double>();
        expect(staged == static_cast<double>(run.at("kernels").size()),
               "concurrency.per_stage covers every kernel once");
        expect(c.at("stages").get<double>() == static_cast<double>(c.at("per_stage").size()),
               "concurrency.stages counts per_stage");
        if (c.contains("speedup_bound")) {
            expect(c.at("critical_path_latency_s").get<double>() <=
                       c.at("serial_latency_s").get<double>() * (1 + 1e-9),
                   "critical path no longer than the serial latency");
            expect(c.at("speedup_bound").get<double>() >= 1 - 1e-9, "speedup bound >= 1");
            expect(close(c.at("serial_latency_s").get<double>(), sum_latency),
                   "concurrency.serial_latency_s equals the sum of kernel latencies");
        }
        const bool has_memory = t.contains("peak_memory_bytes");
        if (need_memory || peak_memory >= 0)
            expect(has_memory, "totals.peak_memory_bytes present (memory estimator)");
        if (has_memory) {
            const double peak = t.at("peak_memory_bytes").get<double>();
            const double weights = t.value("weight_bytes", -1.0);
            const auto& kernels = run.at("kernels");
            const double at = t.value("peak_kernel", -1.0);
            expect(weights >= 0 && at >= 0 && at < static_cast<double>(kernels.size()),
                   "totals.weight_bytes and a valid totals.peak_kernel");
            if (weights >= 0 && at >= 0 && at < static_cast<double>(kernels.size())) {
                const auto& pk = kernels.at(static_cast<std::size_t>(at));
                const auto& m = pk.at("metrics");
                expect(close(peak, weights + m.value("live_activation_bytes", -1.0) +
                                       m.value("workspace_bytes", -1.0)),
                       "totals.peak_memory_bytes equals weight_bytes + the peak kernel's "
                       "live_activation_bytes + workspace_bytes");
                expect(close(peak, weights + t.value("activations_at_peak_bytes", -1.0) +
                                       t.value("workspace_at_peak_bytes", -1.0)),
                       "totals.peak_memory_bytes equals weights + activations + workspace at "
                       "the peak");
                expect(t.value("peak_kernel_name", "") == pk.at("name").get<std::string>(),
                       "totals.peak_kernel_name names the peak kernel");
                for (const auto& k : kernels) {
                    const auto& km = k.at("metrics");
                    const double in_use = km.value("memory_in_use_bytes", -1.0);
                    expect(in_use >= 0 && in_use <= peak * (1 + 1e-12),
                           "kernel " + k.at("name").get<std::string>() +
                               " memory_in_use_bytes within the peak");
                    expect(close(in_use, weights + km.value("live_activation_bytes", -1.0) +
                                             km.value("workspace_bytes", -1.0)),
                           "kernel " + k.at("name").get<std::string>() +
                               " memory_in_use_bytes = weights + live activations + workspace");
                }
            }
            if (peak_memory >= 0)
                expect(close(peak, peak_memory),
                       "totals.peak_memory_bytes " + std::to_string(peak) +
                           " equals the expected " + std::to_string(peak_memory));
        }
        if (energy) {
            const double e = t.value("energy_j", -1.0);
            expect(std::isfinite(e) && e > 0, "totals.energy_j present, finite and positive");
            expect(t.value("dynamic_energy_j", -1.0) > 0, "totals.dynamic_energy_j positive");
            double sum_energy = 0;
            for (const auto& k : run.at("kernels")) {
                const double ke = k.at("metrics").value("energy_j", -1.0);
                expect(std::isfinite(ke) && ke >= 0,
                       "kernel " + k.at("name").get<std::string>() + " has energy_j >= 0");
                sum_energy += ke;
            }
            expect(close(sum_energy + t.value("device_idle_energy_j", 0.0), e),
                   "totals.energy_j equals the kernels' energy_j plus the device idle energy");
            // The memory-bound saving, from the report: per kernel bound by a memory level,
            // its static power over the time that level adds beyond its compute (at the unit's
            // effective rate) and its other levels, plus its DRAM energy.
            double memory_saving = 0;
            for (const auto& k : run.at("kernels")) {
                const auto& m = k.at("mapping");
                const std::string bottleneck = m.value("bottleneck", "");
                if (bottleneck.rfind("memory:", 0) != 0) continue;
                const std::string level = bottleneck.substr(7);
                const auto& km = k.at("metrics");
                const double latency =
                    km.value("latency_unthrottled_s", km.at("latency_s").get<double>());
                const double working = std::max(0.0, latency - m.value("launch_overhead_s", 0.0));
                double rate = m.value("effective_flops_per_s", 0.0);
                if (!(rate > 0)) rate = m.value("peak_flops_per_s", 0.0);
                const double flops = k.value("flops", 0.0);
                double needed = flops > 0 && rate > 0 ? flops / rate : 0.0;
                if (!level.empty() && m.contains("levels"))
                    for (const auto& l : m.at("levels")) {
                        const double bytes = l.value("bytes", 0.0);
                        const double bandwidth = l.value("bandwidth_bytes_per_s", 0.0);
                        if (l.value("level", "") != level && bytes > 0 && bandwidth > 0)
                            needed = std::max(needed, bytes / bandwidth);
                    }
                const double static_power =
                    km.value("energy.static_j", 0.0) / km.at("latency_s").get<double>();
                memory_saving += static_power * std::max(0.0, working - needed) +
                                 km.value("energy.memory.dram_j", 0.0);
            }
            // The utilization saving: the three compute-bound kernels whose idle slots take the
            // most static energy (static power over 1 - utilization of the working time, at
            // most the kernel's under-utilization energy).
            std::vector<double> idle_slots;
            for (const auto& k : run.at("kernels")) {
                const auto& m = k.at("mapping");
                const auto& km = k.at("metrics");
                const double u = m.value("utilization", 0.0);
                if (m.value("bottleneck", "") != "compute" || !(u > 0 && u < 1)) continue;
                const double latency = km.at("latency_s").get<double>();
                const double working =
                    std::max(0.0, latency - std::max(0.0, m.value("launch_overhead_s", 0.0)));
                const double static_power = km.value("energy.static_j", 0.0) / latency;
                idle_slots.push_back(std::min(km.value("underutilization_energy_j", 0.0),
                                              static_power * working * (1 - u)));
            }
            std::sort(idle_slots.rbegin(), idle_slots.rend());
            double utilization_saving = 0;
            for (size_t i = 0; i < std::min<size_t>(3, idle_slots.size()); ++i)
                utilization_saving += idle_slots[i];
            if (t.contains("advice.utilization_saving_j"))
                expect(std::fabs(t.at("advice.utilization_saving_j").get<double>() -
                                 utilization_saving) <= 1e-9 * utilization_saving + 1e-15,
                       "totals.advice.utilization_saving_j " +
                           std::to_string(t.at("advice.utilization_saving_j").get<double>()) +
                           " equals its three largest idle-slot energies " +
                           std::to_string(utilization_saving));
            else
                expect(idle_slots.empty() || idle_slots.front() <= 0.02 * e,
                       "totals.advice.utilization_saving_j present: a kernel's idle slots take "
                       "more than 2% of the energy");
            if (t.contains("advice.memory_bound_saving_j"))
                expect(std::fabs(t.at("advice.memory_bound_saving_j").get<double>() -
                                 memory_saving) <= 1e-9 * memory_saving + 1e-15,
                       "totals.advice.memory_bound_saving_j " +
                           std::to_string(t.at("advice.memory_bound_saving_j").get<double>()) +
                           " equals its kernels' wait and DRAM energy " +
                           std::to_string(memory_saving));
            else
                expect(!need_memory_advice, "totals.advice.memory_bound_saving_j present");
        }
        if (macs > 0) expect(close(macs, t.at("macs")), "totals.macs equals the expected value");
        if (params > 0)
            expect(close(params, t.at("params")),
                   "totals.params " + std::to_string(t.at("params").get<double>()) +
                       " equals the expected " + std::to_string(params));
        if (reference_macs > 0) {
            const double got = t.at("macs").get<double>();
            const double rel = std::fabs(got - reference_macs) / reference_macs;
            std::printf("macs %.0f vs reference %.0f: %.3f%% apart\n", got, reference_macs,
                        100 * rel);
            const double rounding = 0.0005e9 / reference_macs;
            expect(rel <= std::max(0.005, rounding),
                   "totals.macs within 0.5% (or the rounding) of the reference gmacs");
        }
    }
    if (failures == 0) std::printf("report %s: consistent\n", argv[1]);
    return failures == 0 ? 0 : 1;
}
