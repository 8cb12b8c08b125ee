// SPDX-License-Identifier: Apache-2.0
// MACs and FLOPs of every known op. docs/counting.md states each convention; keep the two in
// step. Every arithmetic operation, comparison and elementary function (exp, log, sqrt, erf,
// tanh) evaluated counts as one FLOP; ops that only move, copy or index data count none.
#include <string>

#include "op_rules.hpp"

namespace nnergy::detail {

namespace {

double elements(const std::vector<int64_t>& s) {
    double n = 1;
    for (int64_t d : s) n *= static_cast<double>(d);
    return n;
}

double product(const std::vector<int64_t>& s, size_t from, size_t to) {
    double n = 1;
    for (size_t i = from; i < to && i < s.size(); ++i) n *= static_cast<double>(s[i]);
    return n;
}

// FLOPs per output element of the elementwise ops with a fixed cost.
double elementwise_cost(const op_info& op, const node_ctx& c) {
    switch (op.id) {
        case op_id::Abs:
        case op_id::Ceil:
        case op_id::Floor:
        case op_id::Neg:
        case op_id::Relu:  // max(x, 0)
        case op_id::Sqrt:
        case op_id::Exp:
        case op_id::Log:
        case op_id::Erf:
        case op_id::Tanh:
        case op_id::Reciprocal:
        case op_id::Not:
        case op_id::Add:
        case op_id::Sub:
        case op_id::Mul:
        case op_id::Div:
        case op_id::Pow:
        case op_id::Equal:
        case op_id::Less:
        case op_id::Greater:
        case op_id::Where:  // one select
            return 1;
        case op_id::LeakyRelu:  // compare, multiply
        case op_id::PRelu:
        case op_id::Clip:  // max with the lower bound, min with the upper one
            return 2;
        case op_id::Softplus:  // log(exp(x) + 1)
            return 3;
        case op_id::Sigmoid:      // 1 / (1 + exp(-x)): negate, exp, add, divide
        case op_id::Elu:          // x < 0 ? alpha * (exp(x) - 1) : x: compare, exp, sub, mul
        case op_id::HardSigmoid:  // max(0, min(1, alpha * x + beta))
            return 4;
        case op_id::HardSwish:  // x * HardSigmoid(x)
            return 5;
        case op_id::Gelu: {
            // exact: 0.5 * x * (1 + erf(x / sqrt(2))): scale, erf, add, 2 multiplies = 5;
            // tanh form: x^3 (2), * 0.044715, + x, * sqrt(2/pi), tanh, + 1, * x, * 0.5 = 9.
            const std::string* approx = c.n().attr_string("approximate");
            return approx && *approx == "tanh" ? 9 : 5;
        }
        case op_id::Softmax:     // max, subtract, exp, sum, divide
        case op_id::LogSoftmax:  // max, subtract, exp, sum, subtract log-sum
            return 5;
        default:
            return 0;
    }
}

}  // namespace

void count_work(const op_info& op, const node_ctx& c, op_counts& out) {
    const double out_elements = c.has_output(0) ? elements(c.out_shape(0)) : 0;
    double macs = 0;
    double flops = 0;
    switch (op.id) {
        case op_id::Conv: {
            // Each output element: (C_in / group) x prod(kernel) MACs, plus one bias add.
            const auto& w = c.shape(1);
            macs = out_elements * product(w, 1, w.size());
            flops = 2 * macs + (c.has_input(2) ? out_elements : 0);
            break;
        }
        case op_id::ConvTranspose: {
            // Each input element scatters into (C_out / group) x prod(kernel) outputs.
            const auto& w = c.shape(1);
            macs = elements(c.shape(0)) * product(w, 1, w.size());
            flops = 2 * macs + (c.has_input(2) ? out_elements : 0);
            break;
        }
        case op_id::Gemm: {
            const auto& a = c.shape(0);
            const double k = static_cast<double>(c.attr_int("transA", 0) != 0 ? a[0] : a[1]);
            macs = out_elements * k;
            const bool bias = c.has_input(2) && c.attr_float("beta", 1.0) != 0.0;
            flops = 2 * macs + (bias ? out_elements : 0);
            break;
        }
        case op_id::MatMul: {
            // batch x M x N output elements, K MACs each.
            const auto& a = c.shape(0);
            macs = out_elements * static_cast<double>(a.back());
            flops = 2 * macs;
            break;
        }
        case op_id::BatchNormalization:
            flops = 2 * out_elements;  // inference: x * scale' + shift' (folded per channel)
            break;
        case op_id::LayerNormalization:
            // mean (add), centre (sub), variance (mul, add), normalize (mul), scale (mul),
            // bias (add) when present; per-row divisions and the rsqrt are left out.
            flops = (c.has_input(2) ? 7 : 6) * out_elements;
            break;
        case op_id::MaxPool:
        case op_id::AveragePool: {
            const auto* ks = c.n().attr_ints("kernel_shape");
            const double window = ks ? product(*ks, 0, ks->size()) : 0;
            // max: window - 1 comparisons; average: window - 1 adds and one divide.
            flops = out_elements * (op.id == op_id::MaxPool ? window - 1 : window);
            break;
        }
        case op_id::GlobalAveragePool:
        case op_id::ReduceMean:
            flops = elements(c.shape(0));  // (n - 1) adds + 1 divide per output = n
            break;
        case op_id::GlobalMaxPool:
        case op_id::ReduceMax:
        case op_id::ReduceMin:
        case op_id::ReduceSum:
            flops = elements(c.shape(0)) - out_elements;  // n - 1 per output
            break;
        case op_id::Max:
        case op_id::Min:
        case op_id::Sum:
            flops = out_elements * static_cast<double>(c.input_count() - 1);
            break;
        case op_id::Mean:
            flops = out_elements * static_cast<double>(c.input_count());
            break;
        default:
            flops = out_elements * elementwise_cost(op, c);
            break;
    }
    out.macs = macs;
    out.flops = flops;
}

}  // namespace nnergy::detail
