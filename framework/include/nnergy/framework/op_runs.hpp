// SPDX-License-Identifier: Apache-2.0
/// \file op_runs.hpp
/// \brief The one-op graphs of measured op runs (docs/measurements.md, kind "op"): what the
/// microbenchmark harness (docs/microbench.md) ran, as a graph the estimators can price, so that
/// op-level measurements validate and calibrate op classes directly.
#pragma once

#include <cstdint>
#include <nnergy/framework/graph.hpp>
#include <string>
#include <vector>

namespace nnergy {

/// A short, unique name of an op run: its `name` and its shape parameters
/// (`conv2d(cin=3,cout=64,groups=1,hw=224,k=7,stride=2) [resnet stem]`), the layer it was taken
/// from in brackets; the harness's derived notes (`out_hw`, `kernels`, `eager_bytes`,
/// `for_class`) left out.
std::string op_run_label(const std::string& name, const std::string& params_json);

/// The graph of one op run at its batch: the operator the harness calls (a convolution without
/// bias, padding k/2; a linear layer x[batch*seq, k] W^T + b; attention as
/// softmax(q k^T * scale [+ mask]) v; an elementwise chain on batch*numel elements; torchvision's
/// squeeze-excitation; the tiny ops of the dispatch class), with concrete shapes and every
/// floating-point tensor stored as `storage` (the harness casts inputs and weights to the run's
/// precision before it times the op).
/// Throws nnergy::error (invalid_input) naming the run's name, class and the parameter that is
/// missing or has the wrong type, or listing the ops it knows for an op it does not.
graph op_run_graph(const std::string& name, const std::string& op_class,
                   const std::string& params_json, int64_t batch,
                   nnergy_dtype storage = NNERGY_DTYPE_FLOAT32);

/// The op names op_run_graph knows, for messages and docs.
const std::vector<std::string>& op_run_names();

}  // namespace nnergy
