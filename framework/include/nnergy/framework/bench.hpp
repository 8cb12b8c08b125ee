// SPDX-License-Identifier: Apache-2.0
/// \file bench.hpp
/// \brief `nnergy bench`: times each pipeline stage on synthetic graphs of growing size.
#pragma once

#include <cstddef>
#include <filesystem>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/registry.hpp>
#include <nnergy/framework/shape_inference.hpp>
#include <vector>

namespace nnergy {

/// Builds synthetic CNN graphs of about `sizes[i]` nodes, writes each as a JSON graph, then times
/// parse (JSON frontend), shape inference and counting, partition and estimate (reference
/// architecture + roofline estimator on h100-sxm5), reporting medians of `repeats` runs and peak
/// resident memory. Returns the process exit code.
int run_bench(registry& reg, const std::vector<size_t>& sizes, int repeats);

/// Times loading each model file (frontend chosen by extension) plus shape inference and
/// counting with `dims` bound, reporting the median of `repeats` runs, the file size and the
/// process's peak resident memory, and the first load apart (a frontend's start-up, such as
/// libtorch's for TorchScript, falls on it). `frontend_options` go to each frontend (the input
/// shapes of TorchScript models). Run one file per process to read its memory alone.
int run_bench_models(registry& reg, const std::vector<std::filesystem::path>& files,
                     const dim_bindings& dims, int repeats,
                     const config_values& frontend_options = {});

/// Evaluations per second of a sweep from one loaded model: every catalog device x batch
/// 1/8/64 x float32/float16/bfloat16/int8 where offered, each mapped by the architecture of the
/// device's class (as `nnergy analyze` picks it) and estimated by the roofline, once per entry
/// of `thread_counts` threads (each thread with its own plugin instances).
int run_bench_sweep(registry& reg, const std::filesystem::path& file, int repeats,
                    const std::vector<int>& thread_counts);

/// The wall time of `nnergy sweep` (a new process) on a generated pipeline: `model` on every
/// catalog entry x every precision it offers x batch 1, 2, ... up to 1,000 configurations or
/// more, written to a temporary CSV, once per entry of `thread_counts` (--jobs), the median of
/// `repeats` runs.
int run_bench_sweep_command(const std::filesystem::path& model,
                            const std::vector<int>& thread_counts, int repeats);

/// Start-up figures, each the median of `repeats` new processes: `nnergy --version` (the
/// process alone), `nnergy plugins` (every plugin library opened), and `nnergy analyze MODEL
/// --hw h100-sxm5` writing a JSON report, with the time from the process's spawn to the moment
/// the frontend starts reading the model (the run logs it when NNERGY_SPAWN_NS is set).
/// `input_shapes` (`--input-shape` values) go to that analysis: a TorchScript model needs them.
int run_bench_startup(const std::filesystem::path& model, int repeats,
                      const std::vector<std::string>& input_shapes = {});

/// `nnergy bench --compare OLD ARGS...`: runs `bench ARGS` with this binary and with OLD (one
/// after the other, the same cases), and prints each figure row of the two beside the ratio
/// this / old, column by column. `global_args` go before `bench` on both command lines.
int run_bench_compare(const std::string& old_binary, const std::vector<std::string>& global_args,
                      const std::vector<std::string>& bench_args);

}  // namespace nnergy
