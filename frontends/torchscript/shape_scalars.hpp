// SPDX-License-Identifier: Apache-2.0
// Scripted code computes numbers from its inputs' sizes (window counts, paddings, whether a
// window is shifted) and branches on them. Where such a number depends only on the sizes the
// user gave, never on tensor data or on a size left symbolic, it is a constant of this run:
// folding it lets libtorch fold the branches that test it, as it folds those on training flags.
//
// Compiled as C++17 with the reader (libtorch 1.13's headers).
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace nnergy::torchscript {

/// A tensor input of the forward pass, as the evaluation feeds it.
struct evaluation_input {
    torch::jit::Value* value = nullptr;
    c10::ScalarType dtype = c10::ScalarType::Float;
    /// Its sizes; a negative one is symbolic (the caller makes the leading dimension one even
    /// where a number was given: it becomes the symbol `batch`).
    std::vector<int64_t> sizes;
};

struct shape_scalar_folding {
    size_t folded = 0;   ///< values replaced by constants
    std::string reason;  ///< empty, or why the graph could not be evaluated (nothing folded then)
};

/// Runs the forward pass three times on zero-filled inputs of `device` (the meta device keeps
/// shapes but no data: nothing is computed), the symbolic sizes 1, 2 and 1031 on the meta
/// device (1, 2 and 3 on others), and replaces with a constant every int, float, bool and
/// string value that
///   - was computed in every run, with the same value every time it was computed, and
///   - depends on tensors only through their metadata (size, rank, element type, device), on
///     no tensor whose shape depends on data, and on no branch or loop taken on data.
/// A number that depends on a symbolic size differs between the runs and stays computed: sizes
/// 1 and 2 tell remainders and comparisons with 1 apart, 1 and 1031 quotients and comparisons
/// with anything up to 1031.
/// `self` is the module the graph's first input stands for. Nothing is changed when the
/// evaluation fails (an op that cannot run on `device`, a raised exception): `reason` says why.
shape_scalar_folding fold_shape_scalars(const std::shared_ptr<torch::jit::Graph>& graph,
                                        const c10::IValue& self,
                                        const std::vector<evaluation_input>& inputs,
                                        c10::Device device);

}  // namespace nnergy::torchscript
