// SPDX-License-Identifier: Apache-2.0
// The operator names of the default ONNX domain, so a misspelt op in a rules file is an error
// rather than a rule that silently never matches.
#pragma once

#include <string_view>

namespace nnergy::fusion {

/// True when `op_type` names an operator of the default ONNX domain (any opset).
bool is_onnx_op(std::string_view op_type) noexcept;

}  // namespace nnergy::fusion
