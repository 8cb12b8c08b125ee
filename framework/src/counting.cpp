// SPDX-License-Identifier: Apache-2.0
// MACs and FLOPs of every known op. docs/counting.md states each convention; keep the two in
// step. Every arithmetic operation, comparison and elementary function (exp, log, sqrt, erf,
// tanh) evaluated counts as one FLOP; ops that only move, copy or index data count none.
#include <algorithm>
#include <cmath>
#include <numeric>
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
        case op_id::Acos:
        case op_id::Acosh:
        case op_id::Asin:
        case op_id::Asinh:
        case op_id::Atan:
        case op_id::Atanh:
        case op_id::Cos:
        case op_id::Cosh:
        case op_id::Sin:
        case op_id::Sinh:
        case op_id::Tan:
        case op_id::Round:
        case op_id::Sign:
        case op_id::IsInf:
        case op_id::IsNaN:
        case op_id::BitwiseNot:
        case op_id::Mod:
        case op_id::BitShift:
        case op_id::BitwiseAnd:
        case op_id::BitwiseOr:
        case op_id::BitwiseXor:
        case op_id::LessOrEqual:
        case op_id::GreaterOrEqual:
        case op_id::And:
        case op_id::Or:
        case op_id::Xor:
        case op_id::Hardmax:  // one comparison per element
            return 1;
        case op_id::ThresholdedRelu:   // compare, select
        case op_id::DequantizeLinear:  // subtract the zero point, multiply by the scale
            return 2;
        case op_id::Softsign:         // x / (1 + |x|): abs, add, divide
        case op_id::Shrink:           // two compares, one add or subtract
        case op_id::LpNormalization:  // |x|^p or x*x, row-sum add, divide (per-row root left out)
            return 3;
        case op_id::Selu:            // compare, exp, subtract, two multiplies
        case op_id::Mish:            // x * tanh(log(1 + exp(x))): exp, add, log, tanh, multiply
        case op_id::QuantizeLinear:  // divide, round, add zero point, saturate (max, min)
        case op_id::MeanVarianceNormalization:  // mean add, centre, square, variance add, divide
            return 5;
        case op_id::Celu:  // max(0,x) + min(0, alpha*(exp(x/alpha)-1)): 7 operations
            return 7;
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
        case op_id::Conv:
        case op_id::ConvInteger: {
            // Each output element: (C_in / group) x prod(kernel) MACs, plus one bias add.
            const auto& w = c.shape(1);
            macs = out_elements * product(w, 1, w.size());
            flops = 2 * macs + (op.id == op_id::Conv && c.has_input(2) ? out_elements : 0);
            break;
        }
        case op_id::DeformConv: {
            // Conv's MACs on the sampled values, plus the sampling: every input channel is
            // read at prod(kernel) offset points per output position, each a bilinear blend of
            // 2^r neighbours (2^r multiplies, 2^r - 1 adds), times the mask when given. The
            // per-point blend weights are left out, as Resize leaves out its weights.
            const auto& w = c.shape(1);
            const double kernel = product(w, 2, w.size());
            macs = out_elements * product(w, 1, w.size());
            const double positions = product(c.out_shape(0), 2, c.out_shape(0).size()) *
                                     static_cast<double>(c.shape(0)[0]);
            const double samples = positions * static_cast<double>(c.shape(0)[1]) * kernel;
            const double corners = std::pow(2.0, static_cast<double>(w.size() - 2));
            flops = 2 * macs + (c.has_input(3) ? out_elements : 0) +
                    samples * (2 * corners - 1 + (c.has_input(4) ? 1 : 0));
            break;
        }
        case op_id::AffineGrid: {
            // Each grid coordinate is a row of theta dotted with the homogeneous position
            // (r + 1 MACs); generating the base positions is left out.
            const auto& theta = c.shape(0);
            macs = out_elements * static_cast<double>(theta.back());
            flops = 2 * macs;
            break;
        }
        case op_id::GridSample: {
            // As Resize: a weighted sum of 2^r (linear) or 4^r (cubic) neighbours per output
            // element; nearest copies. Un-normalizing the grid coordinates is left out.
            const std::string* mode = c.n().attr_string("mode");
            const std::string m =
                mode ? *mode : (c.versioned() && c.version() < 20 ? "bilinear" : "linear");
            const double r = static_cast<double>(c.rank(0) - 2);
            double n = 0;
            if (m == "linear" || m == "bilinear") n = std::pow(2.0, r);
            if (m == "cubic" || m == "bicubic") n = std::pow(4.0, r);
            flops = n > 0 ? out_elements * (2 * n - 1) : 0;
            break;
        }
        case op_id::DFT: {
            // A fast transform of length L costs 5 L log2(L) FLOPs on complex data (the usual
            // radix-2 count), half that when the signal is real; one transform per line of
            // the other signal dims, padding or truncation to dft_length free.
            const dft_params p = read_dft(c);
            const auto& x = c.shape(0);
            const double line = static_cast<double>(x[p.axis]) * static_cast<double>(x.back());
            const double lines = line > 0 ? elements(x) / line : 0;
            const auto len = static_cast<double>(p.length);
            flops = lines * (p.real ? 2.5 : 5.0) * len * std::log2(len);
            break;
        }
        case op_id::Col2Im:
            // Overlapping blocks sum into the image: one add per column element.
            flops = elements(c.shape(0));
            break;
        case op_id::QLinearConv: {
            // As Conv on x (input 0) and w (input 3), bias input 8; requantizing each output
            // (multiply by the combined scale, add the zero point) adds 2 per element.
            const auto& w = c.shape(3);
            macs = out_elements * product(w, 1, w.size());
            flops = 2 * macs + (c.has_input(8) ? out_elements : 0) + 2 * out_elements;
            break;
        }
        case op_id::MatMulInteger:
        case op_id::QLinearMatMul: {
            const auto& a = c.shape(0);
            macs = out_elements * static_cast<double>(a.back());
            flops = 2 * macs + (op.id == op_id::QLinearMatMul ? 2 * out_elements : 0);
            break;
        }
        case op_id::Einsum: {
            // Operands are contracted left to right; each pairwise step costs the product of
            // the extents of every label either side holds (for two operands: all labels).
            // A single operand only sums: in - out adds.
            const einsum_spec e = parse_einsum(c);
            if (e.operands.size() == 1) {
                flops = elements(c.shape(0)) - out_elements;
                break;
            }
            std::vector<int> acc = e.operands[0];
            for (size_t k = 1; k < e.operands.size(); ++k) {
                std::vector<int> all = acc;
                for (int l : e.operands[k])
                    if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);
                double step = 1;
                for (int l : all) step *= static_cast<double>(e.extent[static_cast<size_t>(l)]);
                macs += step;
                // Keep the labels later operands or the output still need.
                acc.clear();
                for (int l : all) {
                    bool needed = std::find(e.output.begin(), e.output.end(), l) != e.output.end();
                    for (size_t q = k + 1; !needed && q < e.operands.size(); ++q)
                        needed = std::find(e.operands[q].begin(), e.operands[q].end(), l) !=
                                 e.operands[q].end();
                    if (needed) acc.push_back(l);
                }
            }
            flops = 2 * macs;
            break;
        }
        case op_id::InstanceNormalization:
        case op_id::GroupNormalization:
            // As LayerNormalization with bias: mean add, centre, square, variance add,
            // normalize, scale, bias.
            flops = 7 * out_elements;
            break;
        case op_id::LRN: {
            // Sum of squares over `size` channels (size multiplies, size - 1 adds), then
            // bias + alpha / size * sum (2), pow (1), divide (1).
            const double size = static_cast<double>(c.attr_int("size", 1));
            flops = out_elements * (2 * size + 3);
            break;
        }
        case op_id::LpPool: {
            // Per window element |x|^p (abs, pow) and an add; the root replaces the last add.
            const auto* ks = c.n().attr_ints("kernel_shape");
            const double window = ks ? product(*ks, 0, ks->size()) : 0;
            flops = out_elements * 3 * window;
            break;
        }
        case op_id::GlobalLpPool:
            flops = 3 * elements(c.shape(0));
            break;
        case op_id::ReduceProd:
        case op_id::ArgMax:
        case op_id::ArgMin:
            flops = elements(c.shape(0)) - out_elements;  // n - 1 per output
            break;
        case op_id::ReduceL1:         // abs each, n - 1 adds
        case op_id::ReduceSumSquare:  // square each, n - 1 adds
            flops = 2 * elements(c.shape(0)) - out_elements;
            break;
        case op_id::ReduceL2:         // square each, n - 1 adds, one sqrt
        case op_id::ReduceLogSumExp:  // exp each, n - 1 adds, one log
            flops = 2 * elements(c.shape(0));
            break;
        case op_id::ReduceLogSum:  // n - 1 adds, one log
            flops = elements(c.shape(0));
            break;
        case op_id::TopK:
            flops = elements(c.shape(0));  // one comparison per input element
            break;
        case op_id::CumSum: {
            // len - 1 adds along each line of the scanned axis; with the axis unknown (its value
            // in absent external data), one add per element, high by one add per line.
            const auto& a = c.values(1);
            if (!a) {
                flops = out_elements;
                break;
            }
            const auto axis = (*a)[0];
            const auto& x = c.shape(0);
            const double len =
                static_cast<double>(x[static_cast<size_t>(axis < 0 ? axis + c.rank(0) : axis)]);
            flops = len > 0 ? out_elements - out_elements / len : 0;
            break;
        }
        case op_id::ScatterElements:
        case op_id::ScatterND: {
            // A reduction (add, mul, max, min) combines each update once; plain writes are free.
            const std::string* red = c.n().attr_string("reduction");
            flops = red && *red != "none" ? elements(c.shape(2)) : 0;
            break;
        }
        case op_id::Resize:
        case op_id::Upsample: {
            // Interpolation over the k axes whose size changes: a weighted sum of 2^k
            // (linear) or 4^k (cubic) neighbours, n multiplies and n - 1 adds; nearest copies.
            // The weights themselves are per-axis constants and left out.
            const std::string* mode = c.n().attr_string("mode");
            const std::string m = mode ? *mode : "nearest";
            int k = 0;
            const size_t rank = std::min(c.shape(0).size(), c.out_shape(0).size());
            for (size_t j = 0; j < rank; ++j) k += c.shape(0)[j] != c.out_shape(0)[j] ? 1 : 0;
            double n = 0;
            if (m == "linear" || m == "bilinear" || m == "trilinear") n = std::pow(2.0, k);
            if (m == "cubic") n = std::pow(4.0, k);
            flops = n > 0 ? out_elements * (2 * n - 1) : 0;
            break;
        }
        case op_id::DynamicQuantizeLinear:
            // min and max over x (one comparison each per element), then QuantizeLinear's
            // 5 per element; the scalar scale and zero point arithmetic is left out.
            flops = 7 * elements(c.shape(0));
            break;
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
        case op_id::AdaptiveAveragePool:
        case op_id::AdaptiveMaxPool: {
            // The windows' elements summed over every output: average, window - 1 adds and one
            // divide; max, window - 1 comparisons (as AveragePool and MaxPool). Along a dim of
            // size d pooled to o the window sizes sum to d + o - gcd(d, o): d when o divides
            // it, and each of the o - gcd windows that starts inside an element counts it twice.
            const auto& x = c.shape(0);
            const auto* size = c.n().attr_ints("output_size");
            const size_t s = size && size->size() <= x.size() ? size->size() : 0;
            double windows = product(x, 0, x.size() - s);
            for (size_t j = 0; j < s; ++j) {
                const int64_t d = x[x.size() - s + j], o = (*size)[j];
                windows *= static_cast<double>(d) + static_cast<double>(o) -
                           static_cast<double>(std::gcd(d, o));
            }
            flops = op.id == op_id::AdaptiveMaxPool ? windows - out_elements : windows;
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
