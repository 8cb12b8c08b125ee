// SPDX-License-Identifier: Apache-2.0
// Shape inference rules, one per known op (ONNX semantics), and constant folding of the small
// integer tensors that feed Reshape, Expand, Slice and friends.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

#include "op_rules.hpp"

namespace nnergy::detail {

// ---- helpers shared by the rules ----

std::string shape_string(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(s[i]);
    }
    return out + "]";
}

void node_ctx::set_values(size_t i, std::vector<int64_t> v) const {
    if (!has_output(i) || v.size() > max_folded_elements) return;
    const nnergy_dtype t = b_.dtypes[n_.outputs[i]];
    if (!is_integer(t) && t != NNERGY_DTYPE_BOOL) return;
    b_.int_values[n_.outputs[i]] = std::move(v);
}

std::string node_ctx::describe_input(size_t i) const {
    const uint32_t t = n_.inputs[i];
    return "input '" + g_.tensors[t].name + "' " + shape_string(b_.shapes[t]);
}

void node_ctx::fail(const std::string& message) const {
    throw error(g_.describe_node(index_) + ": " + message);
}

const std::vector<int64_t>& node_ctx::need_values(size_t i, std::string_view what) const {
    const auto& v = values(i);
    if (!v)
        throw needs_declared{std::string(what) + " (input '" + g_.tensors[n_.inputs[i]].name +
                             "') is not a constant the host can fold"};
    return *v;
}

std::vector<int64_t> node_ctx::attr_ints(std::string_view name, size_t count,
                                         int64_t fallback) const {
    const std::vector<int64_t>* v = n_.attr_ints(name);
    if (!v) return std::vector<int64_t>(count, fallback);
    if (v->size() != count)
        fail("attribute '" + std::string(name) + "' has " + std::to_string(v->size()) +
             " entries, expected " + std::to_string(count));
    return *v;
}

int64_t node_ctx::normalize_axis(int64_t axis, int64_t rank, std::string_view what) const {
    if (axis < -rank || axis >= rank)
        fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
             std::to_string(rank) +
             (rank > 0
                  ? " (valid: " + std::to_string(-rank) + " to " + std::to_string(rank - 1) + ")"
                  : std::string(" (a scalar has no axes)")));
    return axis < 0 ? axis + rank : axis;
}

std::string node_ctx::op_version_name() const {
    return n_.op_type + "-" + std::to_string(version());
}

int64_t checked_elements(const std::vector<int64_t>& s, const node_ctx& ctx) {
    int64_t n = 1;
    for (int64_t d : s) {
        if (d < 0) ctx.fail("negative dimension in " + shape_string(s));
        if (__builtin_mul_overflow(n, d, &n))
            ctx.fail("shape " + shape_string(s) + " has more elements than int64 can count");
    }
    return n;
}

namespace {

// The number of steps of `stride` (> 0) that start within `distance`: ceil(distance / stride),
// with no distance + stride - 1 that could leave 64 bits (a file's strides, steps and deltas can
// be anything, INT64_MIN's magnitude included).
uint64_t steps_within(uint64_t distance, uint64_t stride) {
    return distance == 0 ? 0 : 1 + (distance - 1) / stride;
}

// |v| of any int64, INT64_MIN included.
uint64_t magnitude(int64_t v) {
    return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

// ceil(a / b) for b > 0, over all of int64.
int64_t ceil_div(int64_t a, int64_t b) {
    if (a > 0) return static_cast<int64_t>(steps_within(static_cast<uint64_t>(a), magnitude(b)));
    return static_cast<int64_t>(0 - magnitude(a) / magnitude(b));
}

// Dimension arithmetic that fails naming the node instead of wrapping: a file's repeats, pads
// or block sizes can be anything.
int64_t checked_mul(const node_ctx& c, int64_t a, int64_t b, std::string_view what) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r))
        c.fail(std::string(what) + " overflows 64 bits (" + std::to_string(a) + " x " +
               std::to_string(b) + ")");
    return r;
}
int64_t checked_add(const node_ctx& c, int64_t a, int64_t b, std::string_view what) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r))
        c.fail(std::string(what) + " overflows 64 bits (" + std::to_string(a) + " + " +
               std::to_string(b) + ")");
    return r;
}
// A dimension computed in floating point (a scale times a size), range-checked before the cast.
int64_t checked_dim(const node_ctx& c, double d, std::string_view what) {
    if (!(d >= 0) || d >= 9.2e18)
        c.fail(std::string(what) + " gives a dimension of " + std::to_string(d) +
               ", outside 0 to 2^63");
    return static_cast<int64_t>(d);
}

// Multidirectional (numpy) broadcasting of the inputs in [first, last).
std::vector<int64_t> broadcast_inputs(const node_ctx& c, size_t first, size_t last) {
    size_t rank = 0;
    for (size_t k = first; k < last; ++k)
        if (c.has_input(k)) rank = std::max(rank, c.shape(k).size());
    std::vector<int64_t> out(rank, 1);
    for (size_t k = first; k < last; ++k) {
        if (!c.has_input(k)) continue;
        const auto& s = c.shape(k);
        const size_t offset = rank - s.size();
        for (size_t j = 0; j < s.size(); ++j) {
            int64_t& o = out[offset + j];
            if (s[j] == o || s[j] == 1) continue;
            if (o == 1) {
                o = s[j];
                continue;
            }
            std::string list;
            for (size_t q = first; q < last; ++q) {
                if (!c.has_input(q)) continue;
                if (!list.empty()) list += ", ";
                list += c.describe_input(q);
            }
            c.fail("inputs cannot be broadcast together: " + list);
        }
    }
    return out;
}

// Flat index into an input of shape `in` (right-aligned, broadcast) for every element of `out`.
std::vector<size_t> broadcast_map(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
    size_t total = 1;
    for (int64_t d : out) total *= static_cast<size_t>(d);
    std::vector<size_t> map(total, 0);
    const size_t offset = out.size() - in.size();
    std::vector<size_t> stride(out.size(), 0);
    size_t s = 1;
    for (size_t j = in.size(); j-- > 0;) {
        stride[offset + j] = in[j] == 1 ? 0 : s;
        s *= static_cast<size_t>(in[j]);
    }
    std::vector<int64_t> idx(out.size(), 0);
    for (size_t e = 0; e < total; ++e) {
        size_t flat = 0;
        for (size_t j = 0; j < out.size(); ++j) flat += static_cast<size_t>(idx[j]) * stride[j];
        map[e] = flat;
        for (size_t j = out.size(); j-- > 0;) {
            if (++idx[j] < out[j]) break;
            idx[j] = 0;
        }
    }
    return map;
}

// Folds an elementwise op over integer inputs [first, last) whose values are all known.
// `f` returns false when the value cannot be represented (overflow, division by zero).
template <typename F>
void fold_elementwise(const node_ctx& c, size_t first, size_t last,
                      const std::vector<int64_t>& out_shape, F f) {
    size_t total = 1;
    for (int64_t d : out_shape) total *= static_cast<size_t>(d);
    if (total > max_folded_elements) return;
    std::vector<std::vector<size_t>> maps;
    for (size_t k = first; k < last; ++k) {
        if (!c.has_input(k) || !c.values(k)) return;
        maps.push_back(broadcast_map(c.shape(k), out_shape));
    }
    std::vector<int64_t> result(total);
    std::vector<int64_t> args(last - first);
    for (size_t e = 0; e < total; ++e) {
        for (size_t k = first; k < last; ++k) args[k - first] = (*c.values(k))[maps[k - first][e]];
        if (!f(args, result[e])) return;
    }
    c.set_values(0, std::move(result));
}

// ---- op versions ----

// Under a declared opset: `name` is input `slot` from opset `since` on and an attribute before
// it (axes of the reductions, Squeeze's axes, Split's sizes, Pad's pads). A node that uses the
// form its resolved version does not define is an error; without a declared opset both are read.
void check_form(const node_ctx& c, size_t slot, std::string_view name, int since) {
    if (!c.versioned()) return;
    const std::string what(name);
    if (c.version() >= since && c.n().find_attribute(name))
        c.fail(c.op_version_name() + " takes " + what + " as input " + std::to_string(slot) +
               ", not as an attribute (the attribute form ended with opset " +
               std::to_string(since - 1) + ")");
    if (c.version() < since && c.has_input(slot))
        c.fail(c.op_version_name() + " takes " + what + " as an attribute; the " + what +
               " input arrived in opset " + std::to_string(since) +
               " and this model imports opset " + std::to_string(c.g().opset()));
}

// Under a declared opset, an attribute the resolved version does not define yet is an error.
void check_attr_since(const node_ctx& c, std::string_view name, int since) {
    if (c.versioned() && c.version() < since && c.n().find_attribute(name))
        c.fail("attribute '" + std::string(name) + "' arrived with " + c.n().op_type + "-" +
               std::to_string(since) + "; this node is " + c.op_version_name() + " (opset " +
               std::to_string(c.g().opset()) + ")");
}

// Under a declared opset, an input the resolved version does not define yet is an error.
void check_input_since(const node_ctx& c, size_t slot, std::string_view name, int since) {
    if (c.versioned() && c.version() < since && c.has_input(slot))
        c.fail("input " + std::to_string(slot) + " (" + std::string(name) + ") arrived with " +
               c.n().op_type + "-" + std::to_string(since) + "; this node is " +
               c.op_version_name() + " (opset " + std::to_string(c.g().opset()) + ")");
}

// A string attribute's value, checked against the values its op accepts; `since` gives, per
// value, the version that introduced it (0: every version).
std::string string_choice(const node_ctx& c, std::string_view name, std::string_view fallback,
                          std::initializer_list<std::pair<std::string_view, int>> allowed) {
    const std::string* a = c.n().attr_string(name);
    const std::string v = a ? *a : std::string(fallback);
    std::string list;
    for (const auto& [value, since] : allowed) {
        if (v == value) {
            if (c.versioned() && c.version() < since)
                c.fail(std::string(name) + " '" + v + "' arrived with " + c.n().op_type + "-" +
                       std::to_string(since) + "; this node is " + c.op_version_name());
            return v;
        }
        list += (list.empty() ? "" : ", ") + std::string(value);
    }
    c.fail(std::string(name) + " '" + v + "' is not one of " + list);
}

void same_shape(const node_ctx& c) {
    for (size_t k = 0; k < c.output_count(); ++k) c.set_shape(k, c.shape(0));
}

// ---- convolutions and pooling ----

struct window {
    size_t spatial = 0;
    std::vector<int64_t> kernel, strides, dilations, pads;
    std::string auto_pad;
};

window read_window(const node_ctx& c, const std::vector<int64_t>& kernel) {
    window w;
    w.spatial = kernel.size();
    w.kernel = kernel;
    w.strides = c.attr_ints("strides", w.spatial, 1);
    w.dilations = c.attr_ints("dilations", w.spatial, 1);
    w.pads = c.attr_ints("pads", 2 * w.spatial, 0);
    const std::string* ap = c.n().attr_string("auto_pad");
    w.auto_pad = ap ? *ap : "NOTSET";
    if (w.auto_pad != "NOTSET" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER" &&
        w.auto_pad != "VALID")
        c.fail("auto_pad '" + w.auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    for (size_t i = 0; i < w.spatial; ++i) {
        if (w.strides[i] < 1) c.fail("strides must be >= 1");
        if (w.dilations[i] < 1) c.fail("dilations must be >= 1");
        if (w.kernel[i] < 1) c.fail("kernel dimensions must be >= 1");
    }
    for (int64_t p : w.pads)
        if (p < 0) c.fail("pads must be >= 0");
    return w;
}

// Output length of one spatial axis of a convolution or pooling window.
int64_t window_output(const node_ctx& c, const window& w, size_t i, int64_t in, bool ceil_mode) {
    const int64_t s = w.strides[i];
    const int64_t extent =
        checked_add(c, checked_mul(c, w.kernel[i] - 1, w.dilations[i], "the window extent"), 1,
                    "the window extent");
    int64_t out = 0;
    if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
        out = ceil_div(in, s);
    } else {
        const int64_t begin = w.auto_pad == "VALID" ? 0 : w.pads[i];
        const int64_t end = w.auto_pad == "VALID" ? 0 : w.pads[i + w.spatial];
        const int64_t padded =
            checked_add(c, checked_add(c, in, begin, "the padded input"), end, "the padded input");
        const int64_t span = padded - extent;
        if (span < 0)
            c.fail("window of extent " + std::to_string(extent) + " on axis " +
                   std::to_string(i + 2) + " does not fit the padded input (" +
                   std::to_string(padded) + ")");
        out = (ceil_mode ? ceil_div(span, s) : span / s) + 1;
        // A last window that would start in the end padding is dropped (PyTorch, ONNX 1.16).
        int64_t last_start = 0;
        if (ceil_mode &&
            (__builtin_mul_overflow(out - 1, s, &last_start) || last_start >= in + begin))
            --out;
    }
    return out;
}

// Inputs at slots xi (data), wi (weight) and bi (bias, absent when out of range): the
// quantized convolutions keep their operands elsewhere.
void infer_conv(const node_ctx& c, bool transpose, size_t xi = 0, size_t wi = 1, size_t bi = 2) {
    const auto& x = c.shape(xi);
    const auto& w = c.shape(wi);
    if (x.size() < 3) c.fail(c.describe_input(xi) + " must have rank >= 3 (N, C, spatial...)");
    if (w.size() != x.size())
        c.fail("weight " + c.describe_input(wi) + " must have the input's rank " +
               std::to_string(x.size()));
    const int64_t group = c.attr_int("group", 1);
    if (group < 1) c.fail("group must be >= 1");
    const int64_t channels = x[1];
    int64_t out_channels = 0;
    if (!transpose) {
        if (channels != checked_mul(c, w[1], group, "weight channels x group"))
            c.fail("input channels " + std::to_string(channels) + " of " + c.describe_input(xi) +
                   " differ from weight channels " + std::to_string(w[1]) + " x group " +
                   std::to_string(group) + " of " + c.describe_input(wi));
        out_channels = w[0];
        if (out_channels % group != 0)
            c.fail("output channels " + std::to_string(out_channels) +
                   " are not divisible by group " + std::to_string(group));
    } else {
        if (channels != w[0])
            c.fail("input channels " + std::to_string(channels) + " of " + c.describe_input(xi) +
                   " differ from weight dimension 0 of " + c.describe_input(wi));
        if (channels % group != 0)
            c.fail("input channels " + std::to_string(channels) + " are not divisible by group " +
                   std::to_string(group));
        out_channels = checked_mul(c, w[1], group, "output channels");
    }
    const std::vector<int64_t> kernel(w.begin() + 2, w.end());
    if (const auto* ks = c.n().attr_ints("kernel_shape"); ks && *ks != kernel)
        c.fail("kernel_shape " + shape_string(*ks) + " differs from the weight's spatial dims " +
               shape_string(kernel));
    if (c.has_input(bi)) {
        const auto& b = c.shape(bi);
        if (b.size() != 1 || b[0] != out_channels)
            c.fail("bias " + c.describe_input(bi) + " must have shape [" +
                   std::to_string(out_channels) + "]");
    }
    const window win = read_window(c, kernel);
    std::vector<int64_t> out{x[0], out_channels};
    if (!transpose) {
        for (size_t i = 0; i < win.spatial; ++i)
            out.push_back(window_output(c, win, i, x[i + 2], false));
    } else {
        const auto output_padding = c.attr_ints("output_padding", win.spatial, 0);
        for (size_t i = 0; i < win.spatial; ++i)
            if (output_padding[i] < 0 ||
                output_padding[i] >= std::max(win.strides[i], win.dilations[i]))
                c.fail("output_padding " + shape_string(output_padding) +
                       " must be >= 0 and smaller than the stride or dilation of its axis");
        const std::vector<int64_t>* output_shape = c.n().attr_ints("output_shape");
        for (size_t i = 0; i < win.spatial; ++i) {
            int64_t o = 0;
            if (output_shape) {
                if (output_shape->size() < win.spatial)
                    c.fail("output_shape has fewer entries than spatial dims");
                o = (*output_shape)[output_shape->size() - win.spatial + i];
            } else if (win.auto_pad == "SAME_UPPER" || win.auto_pad == "SAME_LOWER") {
                o = checked_mul(c, x[i + 2], win.strides[i], "the output extent");
            } else {
                const bool valid = win.auto_pad == "VALID";
                const char* what = "the output extent";
                const int64_t extent =
                    checked_add(c, checked_mul(c, kernel[i] - 1, win.dilations[i], what), 1, what);
                const int64_t pads =
                    valid ? 0 : checked_add(c, win.pads[i], win.pads[i + win.spatial], what);
                o = checked_add(c,
                                checked_add(c, checked_mul(c, win.strides[i], x[i + 2] - 1, what),
                                            output_padding[i], what),
                                extent, what);
                o = checked_add(c, o, -pads, what);
            }
            if (o < 1) c.fail("output spatial dimension " + std::to_string(o) + " is < 1");
            out.push_back(o);
        }
    }
    c.set_shape(0, std::move(out));
}

void infer_pool(const node_ctx& c, op_id id) {
    // Window attributes each pool gained over time: dilations (MaxPool-10, LpPool-18,
    // AveragePool-19) and ceil_mode (MaxPool-10, AveragePool-10, LpPool-18).
    const int since = id == op_id::LpPool ? 18 : 10;
    check_attr_since(c, "dilations", id == op_id::AveragePool ? 19 : since);
    check_attr_since(c, "ceil_mode", since);
    const auto& x = c.shape(0);
    if (x.size() < 3) c.fail(c.describe_input(0) + " must have rank >= 3 (N, C, spatial...)");
    const std::vector<int64_t>* ks = c.n().attr_ints("kernel_shape");
    if (!ks) c.fail("attribute 'kernel_shape' is required");
    if (ks->size() != x.size() - 2)
        c.fail("kernel_shape " + shape_string(*ks) + " does not match the " +
               std::to_string(x.size() - 2) + " spatial dims of " + c.describe_input(0));
    const window win = read_window(c, *ks);
    const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
    std::vector<int64_t> out{x[0], x[1]};
    for (size_t i = 0; i < win.spatial; ++i)
        out.push_back(window_output(c, win, i, x[i + 2], ceil_mode));
    c.set_shape(0, out);
    c.set_shape(1, std::move(out));  // MaxPool's optional indices
}

/// PyTorch's adaptive pools (host domain): the last len(output_size) dims become output_size;
/// window i of a dim of size D spans [floor(i D / O), ceil((i + 1) D / O)), so windows overlap
/// where O does not divide D.
void infer_adaptive_pool(const node_ctx& c) {
    const auto& x = c.shape(0);
    const std::vector<int64_t>* size = c.n().attr_ints("output_size");
    if (!size || size->empty() || size->size() > 3)
        c.fail("attribute 'output_size' is required: 1 to 3 output sizes, one per pooled dim");
    if (x.size() < size->size() + 1)
        c.fail(c.describe_input(0) + " must have rank >= " + std::to_string(size->size() + 1) +
               " (the " + std::to_string(size->size()) + " pooled dims after at least one other)");
    std::vector<int64_t> out(x.begin(), x.end() - static_cast<std::ptrdiff_t>(size->size()));
    for (size_t j = 0; j < size->size(); ++j) {
        const int64_t o = (*size)[j];
        const int64_t d = x[x.size() - size->size() + j];
        if (o < 1) c.fail("output_size " + shape_string(*size) + " must be positive");
        if (d < 1)
            c.fail("pooled dim " + std::to_string(j) + " of " + c.describe_input(0) +
                   " is empty: there is nothing to pool");
        out.push_back(o);
    }
    c.set_shape(0, std::move(out));
}

void infer_global_pool(const node_ctx& c) {
    const auto& x = c.shape(0);
    if (x.size() < 3) c.fail(c.describe_input(0) + " must have rank >= 3 (N, C, spatial...)");
    std::vector<int64_t> out(x.size(), 1);
    out[0] = x[0];
    out[1] = x[1];
    c.set_shape(0, std::move(out));
}

// ---- matrix products and normalization ----

void infer_gemm(const node_ctx& c) {
    const auto& a = c.shape(0);
    const auto& b = c.shape(1);
    if (a.size() != 2 || b.size() != 2)
        c.fail("Gemm needs 2-D inputs, got " + c.describe_input(0) + " and " + c.describe_input(1));
    const bool ta = c.attr_int("transA", 0) != 0;
    const bool tb = c.attr_int("transB", 0) != 0;
    const int64_t m = ta ? a[1] : a[0];
    const int64_t k = ta ? a[0] : a[1];
    const int64_t kb = tb ? b[1] : b[0];
    const int64_t n = tb ? b[0] : b[1];
    if (k != kb)
        c.fail("inner dimensions differ: " + c.describe_input(0) + (ta ? " (transposed)" : "") +
               " x " + c.describe_input(1) + (tb ? " (transposed)" : "") + " (" +
               std::to_string(k) + " vs " + std::to_string(kb) + ")");
    if (c.has_input(2)) {
        const auto& cs = c.shape(2);
        const std::vector<int64_t> mn{m, n};
        bool ok = cs.size() <= 2;
        for (size_t j = 0; ok && j < cs.size(); ++j) {
            const int64_t d = cs[cs.size() - 1 - j];
            ok = d == 1 || d == mn[1 - j];
        }
        if (!ok)
            c.fail("bias " + c.describe_input(2) + " cannot be broadcast to " + shape_string(mn));
    }
    c.set_shape(0, {m, n});
}

void infer_matmul(const node_ctx& c, size_t ai = 0, size_t bi = 1) {
    std::vector<int64_t> a = c.shape(ai);
    std::vector<int64_t> b = c.shape(bi);
    if (a.empty() || b.empty()) c.fail("MatMul inputs must have rank >= 1");
    const bool a_vec = a.size() == 1;
    const bool b_vec = b.size() == 1;
    if (a_vec) a.insert(a.begin(), 1);
    if (b_vec) b.push_back(1);
    const int64_t m = a[a.size() - 2];
    const int64_t k = a[a.size() - 1];
    const int64_t kb = b[b.size() - 2];
    const int64_t n = b[b.size() - 1];
    if (k != kb)
        c.fail("inner dimensions differ: " + c.describe_input(ai) + " x " + c.describe_input(bi) +
               " (" + std::to_string(k) + " vs " + std::to_string(kb) + ")");
    const size_t batch_rank = std::max(a.size(), b.size()) - 2;
    std::vector<int64_t> out(batch_rank, 1);
    for (const auto* s : {&a, &b}) {
        const size_t r = s->size() - 2;
        for (size_t j = 0; j < r; ++j) {
            int64_t& o = out[batch_rank - r + j];
            const int64_t d = (*s)[j];
            if (d == o || d == 1) continue;
            if (o != 1)
                c.fail("batch dimensions cannot be broadcast: " + c.describe_input(ai) + " x " +
                       c.describe_input(bi));
            o = d;
        }
    }
    if (!a_vec) out.push_back(m);
    if (!b_vec) out.push_back(n);
    c.set_shape(0, std::move(out));
}

void infer_batch_norm(const node_ctx& c) {
    const auto& x = c.shape(0);
    if (x.size() < 2) c.fail(c.describe_input(0) + " must have rank >= 2 (N, C, ...)");
    const int64_t ch = x[1];
    for (size_t k = 1; k <= 4; ++k) {
        const auto& s = c.shape(k);
        if (s.size() != 1 || s[0] != ch)
            c.fail(c.describe_input(k) + " must have shape [" + std::to_string(ch) +
                   "] (the channels of " + c.describe_input(0) + ")");
    }
    c.set_shape(0, x);
    for (size_t k = 1; k < c.output_count(); ++k) c.set_shape(k, {ch});
}

void infer_layer_norm(const node_ctx& c) {
    const auto& x = c.shape(0);
    const int64_t r = c.rank(0);
    const int64_t axis = c.normalize_axis(c.attr_int("axis", -1), r, "axis");
    // Scale and bias broadcast onto the normalized dims x[axis:].
    for (size_t k = 1; k <= 2; ++k) {
        if (!c.has_input(k)) continue;
        const auto& s = c.shape(k);
        bool ok = static_cast<int64_t>(s.size()) <= r - axis;
        for (size_t j = 0; ok && j < s.size(); ++j) {
            const int64_t d = s[s.size() - 1 - j];
            ok = d == 1 || d == x[x.size() - 1 - j];
        }
        if (!ok)
            c.fail(c.describe_input(k) + " cannot be broadcast onto the normalized dims of " +
                   c.describe_input(0));
    }
    c.set_shape(0, x);
    std::vector<int64_t> stat(x.begin(), x.begin() + axis);
    stat.resize(x.size(), 1);
    c.set_shape(1, stat);
    c.set_shape(2, std::move(stat));
}

// ---- shape manipulation ----

void infer_reshape(const node_ctx& c) {
    const auto& x = c.shape(0);
    std::vector<int64_t> target;
    if (c.has_input(1)) {
        target = c.need_values(1, "the target shape");
    } else if (const auto* attr = c.n().attr_ints("shape")) {
        target = *attr;  // opset < 5
    } else {
        c.fail("needs a target shape (input 1)");
    }
    const bool allowzero = c.attr_int("allowzero", 0) != 0;
    const int64_t in_elements = checked_elements(x, c);
    const auto bad = [&](const std::string& why) {
        c.fail("cannot reshape " + c.describe_input(0) + " (" + std::to_string(in_elements) +
               " elements) to " + shape_string(target) + ": " + why);
    };
    std::vector<int64_t> out(target.size());
    size_t inferred = target.size();
    bool has_zero = false;
    int64_t known = 1;
    for (size_t i = 0; i < target.size(); ++i) {
        const int64_t v = target[i];
        if (v == -1) {
            if (inferred != target.size()) bad("more than one -1");
            inferred = i;
            continue;
        }
        if (v < -1) bad("dimension " + std::to_string(v) + " is invalid");
        int64_t d = v;
        if (v == 0 && !allowzero) {
            if (i >= x.size())
                bad("0 at position " + std::to_string(i) + " copies a missing input dimension");
            d = x[i];
        }
        has_zero = has_zero || (v == 0 && allowzero);
        out[i] = d;
        if (__builtin_mul_overflow(known, d, &known)) bad("too many elements");
    }
    if (inferred != target.size()) {
        if (has_zero) bad("-1 together with a literal 0 (allowzero) is ambiguous");
        if (known == 0 || in_elements % known != 0)
            bad("the other dimensions (" + std::to_string(known) +
                " elements) do not divide the input");
        out[inferred] = in_elements / known;
    } else if (known != in_elements) {
        bad("element counts differ (" + std::to_string(known) + ")");
    }
    c.set_shape(0, std::move(out));
    if (c.values(0)) c.set_values(0, *c.values(0));
}

void infer_flatten(const node_ctx& c) {
    const auto& x = c.shape(0);
    const int64_t r = c.rank(0);
    int64_t axis = c.attr_int("axis", 1);
    if (axis < -r || axis > r)
        c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r) +
               " (valid: " + std::to_string(-r) + " to " + std::to_string(r) + ")");
    if (axis < 0) axis += r;
    const std::vector<int64_t> outer(x.begin(), x.begin() + axis);
    const std::vector<int64_t> inner(x.begin() + axis, x.end());
    c.set_shape(0, {checked_elements(outer, c), checked_elements(inner, c)});
}

// The elements of a folded (row-major) tensor at each combination of per-axis indices, in
// row-major order of the result: a strided walk, for Slice and Transpose of small integer
// tensors.
std::vector<int64_t> walk_values(const std::vector<int64_t>& values,
                                 const std::vector<int64_t>& out_shape,
                                 const std::vector<int64_t>& strides, int64_t offset = 0) {
    int64_t count = 1;
    for (int64_t d : out_shape) count *= d;
    std::vector<int64_t> out;
    if (count <= 0) return out;
    out.reserve(static_cast<size_t>(count));
    std::vector<int64_t> at(out_shape.size(), 0);
    for (int64_t n = 0; n < count; ++n) {
        int64_t k = offset;
        for (size_t a = 0; a < at.size(); ++a) k += at[a] * strides[a];
        out.push_back(
            k >= 0 && static_cast<size_t>(k) < values.size() ? values[static_cast<size_t>(k)] : 0);
        for (size_t a = at.size(); a-- > 0;) {
            if (++at[a] < out_shape[a]) break;
            at[a] = 0;
        }
    }
    return out;
}

std::vector<int64_t> gather_values(const std::vector<int64_t>& values,
                                   const std::vector<int64_t>& shape,
                                   const std::vector<std::vector<int64_t>>& index) {
    const size_t r = shape.size();
    std::vector<int64_t> strides(r, 1);
    for (size_t a = r; a-- > 1;) strides[a - 1] = strides[a] * shape[a];
    // Each axis's indices are an arithmetic progression: a start offset and a stride.
    std::vector<int64_t> out_shape(r), walk(r);
    int64_t offset = 0;
    for (size_t a = 0; a < r; ++a) {
        out_shape[a] = static_cast<int64_t>(index[a].size());
        if (index[a].empty()) return {};
        offset += index[a][0] * strides[a];
        walk[a] = index[a].size() > 1 ? (index[a][1] - index[a][0]) * strides[a] : 0;
    }
    return walk_values(values, out_shape, walk, offset);
}

void infer_transpose(const node_ctx& c) {
    const auto& x = c.shape(0);
    const size_t r = x.size();
    std::vector<int64_t> perm;
    if (const auto* p = c.n().attr_ints("perm")) {
        perm = *p;
    } else {
        for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    }
    if (perm.size() != r)
        c.fail("perm " + shape_string(perm) + " does not match the rank of " + c.describe_input(0));
    std::vector<bool> seen(r, false);
    std::vector<int64_t> out(r);
    for (size_t i = 0; i < r; ++i) {
        const int64_t p = perm[i];
        if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)])
            c.fail("perm " + shape_string(perm) + " is not a permutation of 0.." +
                   std::to_string(r - 1));
        seen[static_cast<size_t>(p)] = true;
        out[i] = x[static_cast<size_t>(p)];
    }
    if (c.values(0)) {
        // Output element (o_0, ..., o_r-1) is the input element with index o_i on axis perm[i].
        std::vector<int64_t> in_strides(r, 1);
        for (size_t a = r; a-- > 1;) in_strides[a - 1] = in_strides[a] * x[a];
        std::vector<int64_t> strides(r);
        for (size_t i = 0; i < r; ++i) strides[i] = in_strides[static_cast<size_t>(perm[i])];
        std::vector<int64_t> v = walk_values(*c.values(0), out, strides);
        c.set_shape(0, std::move(out));
        c.set_values(0, std::move(v));
        return;
    }
    c.set_shape(0, std::move(out));
}

void infer_concat(const node_ctx& c) {
    const auto axis_attr = c.n().attr_int("axis");
    if (!axis_attr) c.fail("attribute 'axis' is required");
    const auto& first = c.shape(0);
    const int64_t r = c.rank(0);
    if (r == 0) c.fail("cannot concatenate scalars (" + c.describe_input(0) + ")");
    const auto axis = static_cast<size_t>(c.normalize_axis(*axis_attr, r, "axis"));
    std::vector<int64_t> out = first;
    out[axis] = 0;
    bool fold = true;
    for (size_t k = 0; k < c.input_count(); ++k) {
        const auto& s = c.shape(k);
        bool ok = s.size() == first.size();
        for (size_t j = 0; ok && j < s.size(); ++j) ok = j == axis || s[j] == first[j];
        if (!ok)
            c.fail(c.describe_input(k) + " does not match " + c.describe_input(0) +
                   " outside axis " + std::to_string(axis));
        out[axis] = checked_add(c, out[axis], s[axis], "the concatenated axis");
        fold = fold && c.values(k).has_value();
    }
    if (fold && r == 1) {
        std::vector<int64_t> v;
        for (size_t k = 0; k < c.input_count(); ++k)
            v.insert(v.end(), c.values(k)->begin(), c.values(k)->end());
        c.set_shape(0, std::move(out));
        c.set_values(0, std::move(v));
        return;
    }
    c.set_shape(0, std::move(out));
}

// Axes from the `axes` attribute (before opset `input_since`) or input 1 (from it); nullopt
// when neither.
std::optional<std::vector<int64_t>> read_axes(const node_ctx& c, int input_since) {
    check_form(c, 1, "axes", input_since);
    if (c.has_input(1)) return c.need_values(1, "axes");
    if (const auto* a = c.n().attr_ints("axes")) return *a;
    return std::nullopt;
}

// Normalizes axes against `rank` and rejects repeats.
std::vector<int64_t> normalize_axes(const node_ctx& c, std::vector<int64_t> axes, int64_t rank) {
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t& a : axes) {
        a = c.normalize_axis(a, rank, "axis");
        if (seen[static_cast<size_t>(a)]) c.fail("axis " + std::to_string(a) + " is repeated");
        seen[static_cast<size_t>(a)] = true;
    }
    return axes;
}

void infer_squeeze(const node_ctx& c) {
    const auto& x = c.shape(0);
    std::vector<bool> drop(x.size(), false);
    if (auto axes = read_axes(c, 13)) {
        for (int64_t a : normalize_axes(c, *axes, c.rank(0))) {
            if (x[static_cast<size_t>(a)] != 1)
                c.fail("cannot squeeze axis " + std::to_string(a) + " of " + c.describe_input(0) +
                       ": its size is not 1");
            drop[static_cast<size_t>(a)] = true;
        }
    } else {
        for (size_t j = 0; j < x.size(); ++j) drop[j] = x[j] == 1;
    }
    std::vector<int64_t> out;
    for (size_t j = 0; j < x.size(); ++j)
        if (!drop[j]) out.push_back(x[j]);
    c.set_shape(0, std::move(out));
    if (c.values(0)) c.set_values(0, *c.values(0));
}

void infer_unsqueeze(const node_ctx& c) {
    const auto& x = c.shape(0);
    auto axes = read_axes(c, 13);
    if (!axes) c.fail("needs axes (attribute 'axes' or input 1)");
    const auto rank = static_cast<int64_t>(x.size() + axes->size());
    std::vector<bool> is_new(static_cast<size_t>(rank), false);
    for (int64_t a : normalize_axes(c, *axes, rank)) is_new[static_cast<size_t>(a)] = true;
    std::vector<int64_t> out;
    size_t next = 0;
    for (size_t j = 0; j < static_cast<size_t>(rank); ++j) out.push_back(is_new[j] ? 1 : x[next++]);
    c.set_shape(0, std::move(out));
    if (c.values(0)) c.set_values(0, *c.values(0));
}

void infer_reduce(const node_ctx& c, op_id id) {
    const auto& x = c.shape(0);
    const bool keepdims = c.attr_int("keepdims", 1) != 0;
    // ReduceSum took its axes as an input from opset 13, the other reductions from 18; the
    // no-op option for empty axes came with the input.
    const int since = id == op_id::ReduceSum ? 13 : 18;
    check_attr_since(c, "noop_with_empty_axes", since);
    std::vector<int64_t> axes = read_axes(c, since).value_or(std::vector<int64_t>{});
    std::vector<bool> reduce(x.size(), false);
    if (axes.empty()) {
        if (c.attr_int("noop_with_empty_axes", 0) != 0) {
            c.set_shape(0, x);
            return;
        }
        std::fill(reduce.begin(), reduce.end(), true);
    } else {
        for (int64_t a : normalize_axes(c, axes, c.rank(0))) reduce[static_cast<size_t>(a)] = true;
    }
    std::vector<int64_t> out;
    for (size_t j = 0; j < x.size(); ++j) {
        if (!reduce[j])
            out.push_back(x[j]);
        else if (keepdims)
            out.push_back(1);
    }
    c.set_shape(0, out);
    const bool foldable = id == op_id::ReduceProd || id == op_id::ReduceSum ||
                          id == op_id::ReduceMax || id == op_id::ReduceMin;
    if (!foldable || !c.values(0)) return;
    // Shape arithmetic such as ReduceProd(Shape(x)) (element counts) folds exactly.
    const auto& v = *c.values(0);
    std::vector<int64_t> kept(x.size());  // the reduced input with reduced axes set to 1
    for (size_t j = 0; j < x.size(); ++j) kept[j] = reduce[j] ? 1 : x[j];
    std::vector<int64_t> result(static_cast<size_t>(checked_elements(kept, c)));
    std::vector<bool> seen(result.size(), false);
    std::vector<int64_t> idx(x.size(), 0);
    for (int64_t e : v) {
        size_t flat = 0;
        for (size_t j = 0; j < x.size(); ++j)
            flat =
                flat * static_cast<size_t>(kept[j]) + static_cast<size_t>(reduce[j] ? 0 : idx[j]);
        int64_t& r = result[flat];
        if (!seen[flat]) {
            r = e;
            seen[flat] = true;
        } else if (id == op_id::ReduceProd) {
            if (__builtin_mul_overflow(r, e, &r)) return;
        } else if (id == op_id::ReduceSum) {
            if (__builtin_add_overflow(r, e, &r)) return;
        } else {
            r = id == op_id::ReduceMax ? std::max(r, e) : std::min(r, e);
        }
        for (size_t j = x.size(); j-- > 0;) {
            if (++idx[j] < x[j]) break;
            idx[j] = 0;
        }
    }
    if (v.empty()) {  // empty reductions yield the identity
        if (id == op_id::ReduceProd) std::fill(result.begin(), result.end(), 1);
        if (id != op_id::ReduceProd && id != op_id::ReduceSum) return;
    }
    c.set_values(0, std::move(result));
}

void infer_shape_op(const node_ctx& c) {
    check_attr_since(c, "start", 15);
    check_attr_since(c, "end", 15);
    const auto& x = c.shape(0);
    const int64_t r = c.rank(0);
    const auto clamp = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
    const int64_t start = clamp(c.attr_int("start", 0));
    const int64_t end = clamp(c.attr_int("end", r));
    std::vector<int64_t> v;
    for (int64_t i = start; i < end; ++i) v.push_back(x[static_cast<size_t>(i)]);
    c.set_shape(0, {static_cast<int64_t>(v.size())});
    c.set_values(0, std::move(v));
}

void infer_gather(const node_ctx& c) {
    const auto& data = c.shape(0);
    const auto& idx = c.shape(1);
    const int64_t r = c.rank(0);
    if (r == 0) c.fail("cannot gather from a scalar (" + c.describe_input(0) + ")");
    const auto axis = static_cast<size_t>(c.normalize_axis(c.attr_int("axis", 0), r, "axis"));
    std::vector<int64_t> out(data.begin(), data.begin() + static_cast<int64_t>(axis));
    out.insert(out.end(), idx.begin(), idx.end());
    out.insert(out.end(), data.begin() + static_cast<int64_t>(axis) + 1, data.end());
    const int64_t dim = data[axis];
    std::vector<int64_t> indices;
    if (c.values(1)) {
        indices = *c.values(1);
        for (int64_t& i : indices) {
            if (i < -dim || i >= dim)
                c.fail("index " + std::to_string(i) + " is out of range for axis " +
                       std::to_string(axis) + " of " + c.describe_input(0));
            if (i < 0) i += dim;
        }
    }
    if (c.values(0) && c.values(1)) {
        const std::vector<int64_t> outer_dims(data.begin(),
                                              data.begin() + static_cast<int64_t>(axis));
        const std::vector<int64_t> inner_dims(data.begin() + static_cast<int64_t>(axis) + 1,
                                              data.end());
        const int64_t outer = checked_elements(outer_dims, c);
        const int64_t inner = checked_elements(inner_dims, c);
        const auto& src = *c.values(0);
        std::vector<int64_t> v;
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t i : indices)
                for (int64_t q = 0; q < inner; ++q)
                    v.push_back(src[static_cast<size_t>((o * dim + i) * inner + q)]);
        c.set_shape(0, std::move(out));
        c.set_values(0, std::move(v));
        return;
    }
    c.set_shape(0, std::move(out));
}

void infer_slice(const node_ctx& c) {
    const auto& x = c.shape(0);
    const int64_t r = c.rank(0);
    std::vector<int64_t> starts, ends, axes, steps;
    check_form(c, 1, "starts", 10);
    check_form(c, 2, "ends", 10);
    check_form(c, 3, "axes", 10);
    if (c.has_input(1) || c.has_input(2)) {
        if (!c.has_input(1) || !c.has_input(2)) c.fail("needs both starts and ends inputs");
        starts = c.need_values(1, "starts");
        ends = c.need_values(2, "ends");
        if (c.has_input(3)) axes = c.need_values(3, "axes");
        if (c.has_input(4)) steps = c.need_values(4, "steps");
    } else {
        const auto* s = c.n().attr_ints("starts");
        const auto* e = c.n().attr_ints("ends");
        if (!s || !e) c.fail("needs starts and ends (inputs 1 and 2)");
        starts = *s;
        ends = *e;
        if (const auto* a = c.n().attr_ints("axes")) axes = *a;
    }
    if (axes.empty())
        for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size())
        c.fail("starts, ends, axes and steps must have the same length");
    axes = normalize_axes(c, axes, r);
    std::vector<int64_t> out = x;
    std::vector<int64_t> first(x.size(), 0), step(x.size(), 1);
    for (size_t i = 0; i < axes.size(); ++i) {
        const auto a = static_cast<size_t>(axes[i]);
        const int64_t d = x[a];
        const int64_t st = steps[i];
        if (st == 0) c.fail("slice step 0 on axis " + std::to_string(a));
        int64_t s = starts[i];
        int64_t e = ends[i];
        // Far-negative bounds (INT64_MIN is common) become -1 without overflowing.
        if (s < 0) s = s < -d ? -1 : s + d;
        if (e < 0) e = e < -d ? -1 : e + d;
        // Counted in unsigned arithmetic: a step near either end of int64 (INT64_MAX,
        // INT64_MIN) must not overflow on the way.
        int64_t len = 0;
        if (st > 0) {
            s = std::clamp(s, int64_t{0}, d);
            e = std::clamp(e, int64_t{0}, d);
            if (e > s) len = static_cast<int64_t>(steps_within(magnitude(e - s), magnitude(st)));
        } else if (d > 0) {
            s = std::clamp(s, int64_t{0}, d - 1);
            e = std::clamp(e, int64_t{-1}, d - 1);
            if (s > e) len = static_cast<int64_t>(steps_within(magnitude(s - e), magnitude(st)));
        }
        out[a] = len;
        first[a] = s;
        step[a] = st;
    }
    if (c.values(0)) {
        // Small integer tensors of any rank fold (Swin's exporter slices a [4, 2] pads table
        // backwards before padding with it): output element o reads input element
        // first + o * step along every axis.
        std::vector<std::vector<int64_t>> index(out.size());
        for (size_t a = 0; a < out.size(); ++a)
            for (int64_t i = 0; i < out[a]; ++i) index[a].push_back(first[a] + i * step[a]);
        std::vector<int64_t> v = gather_values(*c.values(0), x, index);
        c.set_shape(0, std::move(out));
        c.set_values(0, std::move(v));
        return;
    }
    c.set_shape(0, std::move(out));
}

void infer_split(const node_ctx& c) {
    const auto& x = c.shape(0);
    const auto axis =
        static_cast<size_t>(c.normalize_axis(c.attr_int("axis", 0), c.rank(0), "axis"));
    const int64_t d = x[axis];
    const auto n = static_cast<int64_t>(c.output_count());
    check_form(c, 1, "split", 13);
    check_attr_since(c, "num_outputs", 18);
    const auto num = c.n().attr_int("num_outputs");
    if (num && (c.has_input(1) || c.n().find_attribute("split")))
        c.fail("takes either split sizes or num_outputs, not both");
    if (num && *num < 1) c.fail("num_outputs " + std::to_string(*num) + " must be >= 1");
    if (num && *num != n)
        c.fail("num_outputs " + std::to_string(*num) + " differs from the " + std::to_string(n) +
               " outputs the node lists");
    std::vector<int64_t> sizes;
    if (c.has_input(1)) {
        sizes = c.need_values(1, "split sizes");
    } else if (const auto* s = c.n().attr_ints("split")) {
        sizes = *s;
    } else if (num) {
        // Split-18: chunks of ceil(d / n), the last one smaller.
        const int64_t chunk = ceil_div(d, n);
        const int64_t last = d - chunk * (n - 1);
        if (last < 0)
            c.fail("num_outputs " + std::to_string(n) + " cannot split axis " +
                   std::to_string(axis) + " of " + c.describe_input(0) + " into chunks of " +
                   std::to_string(chunk) + " (the last chunk would be " + std::to_string(last) +
                   ")");
        sizes.assign(static_cast<size_t>(n - 1), chunk);
        sizes.push_back(last);
    } else {
        if (c.versioned() && c.version() >= 18)
            c.fail(c.op_version_name() + " needs split sizes (input 1) or num_outputs");
        if (d % n != 0)
            c.fail("axis " + std::to_string(axis) + " of " + c.describe_input(0) +
                   " does not split evenly into " + std::to_string(n) + " outputs");
        sizes.assign(static_cast<size_t>(n), d / n);
    }
    if (static_cast<int64_t>(sizes.size()) != n)
        c.fail(std::to_string(sizes.size()) + " split sizes for " + std::to_string(n) + " outputs");
    int64_t total = 0;
    for (int64_t s : sizes) {
        if (s < 0) c.fail("negative split size " + std::to_string(s));
        total += s;
    }
    if (total != d)
        c.fail("split sizes " + shape_string(sizes) + " do not add up to axis " +
               std::to_string(axis) + " of " + c.describe_input(0));
    for (size_t k = 0; k < sizes.size(); ++k) {
        std::vector<int64_t> out = x;
        out[axis] = sizes[k];
        c.set_shape(k, std::move(out));
    }
}

void infer_expand(const node_ctx& c) {
    const auto& x = c.shape(0);
    const auto& target = c.need_values(1, "the target shape");
    const size_t rank = std::max(x.size(), target.size());
    std::vector<int64_t> out(rank, 1);
    for (size_t j = 0; j < rank; ++j) {
        const int64_t a = j + x.size() >= rank ? x[j + x.size() - rank] : 1;
        const int64_t b = j + target.size() >= rank ? target[j + target.size() - rank] : 1;
        if (b < 0) c.fail("target shape " + shape_string(target) + " has a negative dimension");
        if (a != b && a != 1 && b != 1)
            c.fail("cannot expand " + c.describe_input(0) + " to " + shape_string(target));
        out[j] = a == 1 ? b : a;
    }
    c.set_shape(0, std::move(out));
}

void infer_tile(const node_ctx& c) {
    const auto& x = c.shape(0);
    const auto& repeats = c.need_values(1, "repeats");
    if (repeats.size() != x.size())
        c.fail("repeats " + shape_string(repeats) + " do not match the rank of " +
               c.describe_input(0));
    std::vector<int64_t> out(x.size());
    for (size_t j = 0; j < x.size(); ++j) {
        if (repeats[j] < 0) c.fail("negative repeat " + std::to_string(repeats[j]));
        out[j] = checked_mul(c, x[j], repeats[j], "dimension " + std::to_string(j) + " x repeats");
    }
    c.set_shape(0, std::move(out));
}

void infer_pad(const node_ctx& c) {
    const auto& x = c.shape(0);
    const int64_t r = c.rank(0);
    check_form(c, 1, "pads", 11);
    check_input_since(c, 3, "axes", 18);
    if (c.versioned() && c.version() >= 11 && c.n().find_attribute("value"))
        c.fail(c.op_version_name() +
               " takes the constant value as input 2, not the 'value' "
               "attribute (the attribute form ended with opset 10)");
    string_choice(c, "mode", "constant",
                  {{"constant", 0}, {"reflect", 0}, {"edge", 0}, {"wrap", 19}});
    std::vector<int64_t> pads;
    if (c.has_input(1)) {
        pads = c.need_values(1, "pads");
    } else if (const auto* p = c.n().attr_ints("pads")) {
        pads = *p;  // opset < 11
    } else {
        c.fail("needs pads (input 1)");
    }
    std::vector<int64_t> axes;
    if (c.has_input(3)) {
        axes = normalize_axes(c, c.need_values(3, "axes"), r);
    } else {
        for (int64_t j = 0; j < r; ++j) axes.push_back(j);
    }
    if (pads.size() != 2 * axes.size())
        c.fail("pads " + shape_string(pads) + " need 2 entries per padded axis (" +
               std::to_string(axes.size()) + " axes)");
    std::vector<int64_t> out = x;
    for (size_t i = 0; i < axes.size(); ++i) {
        const auto a = static_cast<size_t>(axes[i]);
        const std::string what = "padded axis " + std::to_string(a);
        out[a] = checked_add(c, checked_add(c, x[a], pads[i], what), pads[i + axes.size()], what);
        if (out[a] < 0)
            c.fail("pads " + shape_string(pads) + " crop axis " + std::to_string(a) + " below 0");
    }
    c.set_shape(0, std::move(out));
}

void infer_range(const node_ctx& c) {
    int64_t v[3];
    for (size_t k = 0; k < 3; ++k) {
        const auto& vals = c.need_values(k, k == 0 ? "start" : k == 1 ? "limit" : "delta");
        if (vals.size() != 1) c.fail(c.describe_input(k) + " must be a scalar");
        v[k] = vals[0];
    }
    if (v[2] == 0) c.fail("delta is 0");
    // max(ceil((limit - start) / delta), 0)
    int64_t diff = 0;
    if (__builtin_sub_overflow(v[1], v[0], &diff)) c.fail("limit - start overflows");
    int64_t n = 0;
    // A negative delta counts down: the same count on magnitudes (a delta or a difference of
    // INT64_MIN has no positive int64).
    if ((v[2] > 0 && diff > 0) || (v[2] < 0 && diff < 0))
        n = static_cast<int64_t>(steps_within(magnitude(diff), magnitude(v[2])));
    c.set_shape(0, {n});
    if (static_cast<size_t>(n) <= max_folded_elements) {
        std::vector<int64_t> vals(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) vals[static_cast<size_t>(i)] = v[0] + i * v[2];
        c.set_values(0, std::move(vals));
    }
}

void infer_constant(const node_ctx& c) {
    const node& n = c.n();
    if (auto v = n.attr_int("value_int")) {
        c.set_shape(0, {});
        c.set_values(0, {*v});
    } else if (const auto* vs = n.attr_ints("value_ints")) {
        c.set_shape(0, {static_cast<int64_t>(vs->size())});
        c.set_values(0, *vs);
    } else if (n.attr_float("value_float")) {
        c.set_shape(0, {});
    } else if (const attribute* a = n.find_attribute("value_floats")) {
        const auto* fs = std::get_if<std::vector<double>>(&a->value);
        if (!fs) c.fail("attribute 'value_floats' must be a list of floats");
        c.set_shape(0, {static_cast<int64_t>(fs->size())});
    } else {
        throw needs_declared{
            "its value is a tensor attribute the graph does not carry (only "
            "value_int, value_ints, value_float and value_floats are read)"};
    }
}

void infer_constant_of_shape(const node_ctx& c) {
    std::vector<int64_t> s = c.need_values(0, "the shape");
    for (int64_t d : s)
        if (d < 0) c.fail("shape " + shape_string(s) + " has a negative dimension");
    // The fill value is read when the graph carries it as an integer ("value": 7 or [7]);
    // integer outputs then fold (torch exports ConstantOfShape(...) -> ones for Expand).
    std::optional<int64_t> fill = c.n().attr_int("value");
    if (const auto* vs = c.n().attr_ints("value"); vs && vs->size() == 1) fill = (*vs)[0];
    const int64_t count = checked_elements(s, c);
    c.set_shape(0, std::move(s));
    if (fill && static_cast<size_t>(count) <= max_folded_elements)
        c.set_values(0, std::vector<int64_t>(static_cast<size_t>(count), *fill));
}

// ---- ops added for exported PyTorch / TensorFlow graphs ----

void infer_arg_reduce(const node_ctx& c) {
    const auto& x = c.shape(0);
    const auto axis =
        static_cast<size_t>(c.normalize_axis(c.attr_int("axis", 0), c.rank(0), "axis"));
    std::vector<int64_t> out = x;
    if (c.attr_int("keepdims", 1) != 0)
        out[axis] = 1;
    else
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
    c.set_shape(0, std::move(out));
}

void infer_topk(const node_ctx& c) {
    const auto& x = c.shape(0);
    std::vector<int64_t> kv;
    check_form(c, 1, "k", 10);
    if (c.has_input(1)) {
        kv = c.need_values(1, "K");
        if (kv.size() != 1) c.fail("K " + c.describe_input(1) + " must hold one value");
    } else if (auto k = c.n().attr_int("k")) {
        kv.push_back(*k);  // TopK-1
    } else {
        c.fail("needs K (input 1 or attribute 'k')");
    }
    const auto axis =
        static_cast<size_t>(c.normalize_axis(c.attr_int("axis", -1), c.rank(0), "axis"));
    if (kv[0] < 0 || kv[0] > x[axis])
        c.fail("K = " + std::to_string(kv[0]) + " is outside [0, " + std::to_string(x[axis]) +
               "] for axis " + std::to_string(axis) + " of " + c.describe_input(0));
    std::vector<int64_t> out = x;
    out[axis] = kv[0];
    c.set_shape(0, out);
    c.set_shape(1, std::move(out));
}

void infer_nonzero(const node_ctx& c) {
    const auto& x = c.shape(0);
    if (!c.values(0))
        throw needs_declared{
            "the number of non-zero elements depends on the values of " + c.describe_input(0) +
            ", which are not constants the host can fold (declare the output shape, e.g. [" +
            std::to_string(x.size()) + ", nonzero_count], and bind the symbol)"};
    const auto& v = *c.values(0);
    std::vector<std::vector<int64_t>> coords;
    std::vector<int64_t> idx(x.size(), 0);
    for (int64_t e : v) {
        if (e != 0) coords.push_back(idx);
        for (size_t j = x.size(); j-- > 0;) {
            if (++idx[j] < x[j]) break;
            idx[j] = 0;
        }
    }
    const auto count = static_cast<int64_t>(coords.size());
    std::vector<int64_t> out_values;
    for (size_t j = 0; j < x.size(); ++j)  // row j holds the j-th coordinate of every hit
        for (const auto& p : coords) out_values.push_back(p[j]);
    c.set_shape(0, {static_cast<int64_t>(x.size()), count});
    c.set_values(0, std::move(out_values));
}

void infer_channel_norm(const node_ctx& c, bool grouped) {
    const auto& x = c.shape(0);
    if (x.size() < 3) c.fail(c.describe_input(0) + " must have rank >= 3 (N, C, spatial...)");
    const int64_t ch = x[1];
    int64_t param = ch;
    std::string per = "one per channel";
    if (grouped) {
        const auto groups = c.n().attr_int("num_groups");
        if (!groups || *groups < 1) c.fail("attribute 'num_groups' (>= 1) is required");
        if (ch % *groups != 0)
            c.fail("channels " + std::to_string(ch) + " of " + c.describe_input(0) +
                   " are not divisible by num_groups " + std::to_string(*groups));
        // GroupNormalization-18 takes per-group scale and bias, -21 per-channel ones; without a
        // declared opset either is read.
        const bool per_group =
            c.versioned() ? c.version() < 21 : c.shape(1).size() == 1 && c.shape(1)[0] == *groups;
        if (per_group) {
            param = *groups;
            per = "one per group";
        }
        if (c.versioned()) per = c.op_version_name() + ": " + per;
    }
    for (size_t k = 1; k <= 2; ++k) {
        const auto& s = c.shape(k);
        if (s.size() != 1 || s[0] != param)
            c.fail(c.describe_input(k) + " must have shape [" + std::to_string(param) + "] (" +
                   per + ")");
    }
    c.set_shape(0, x);
}

// Float values of input `i` when a Constant node with value_float(s) produces it: the graph
// keeps no float initializer values, so only this form of constant scales can be read.
std::optional<std::vector<double>> float_constant(const node_ctx& c, size_t i) {
    const uint32_t t = c.n().inputs[i];
    const auto& producers = c.g().producers();
    if (t >= producers.size() || producers[t] == NNERGY_NO_NODE) return std::nullopt;
    const node& p = c.g().nodes[producers[t]];
    if (p.op_type != "Constant" || !(p.domain.empty() || p.domain == "ai.onnx"))
        return std::nullopt;
    if (auto v = p.attr_float("value_float")) return std::vector<double>{*v};
    if (const attribute* a = p.find_attribute("value_floats"))
        if (const auto* fs = std::get_if<std::vector<double>>(&a->value)) return *fs;
    return std::nullopt;
}

// Resize (opset 10+) and Upsample: output dims from `sizes` or floor(in x scale).
void infer_resize(const node_ctx& c, bool upsample) {
    const auto& x = c.shape(0);
    const int64_t r = c.rank(0);
    if (!upsample) {
        // Resize-18 added axes, keep_aspect_ratio_policy and antialias; -19 the
        // half_pixel_symmetric mapping (which moves sample points, not the output size).
        check_attr_since(c, "axes", 18);
        check_attr_since(c, "keep_aspect_ratio_policy", 18);
        check_attr_since(c, "antialias", 18);
        check_attr_since(c, "coordinate_transformation_mode", 11);
        string_choice(c, "mode", "nearest", {{"nearest", 0}, {"linear", 0}, {"cubic", 11}});
        string_choice(c, "coordinate_transformation_mode", "half_pixel",
                      {{"half_pixel", 0},
                       {"half_pixel_symmetric", 19},
                       {"pytorch_half_pixel", 0},
                       {"align_corners", 0},
                       {"asymmetric", 0},
                       {"tf_half_pixel_for_nn", 0},
                       {"tf_crop_and_resize", 0}});
        if (c.versioned() && c.version() == 10 && c.input_count() > 2)
            c.fail("Resize-10 takes (X, scales); roi and sizes arrived with Resize-11");
    }
    std::vector<int64_t> axes;
    if (const auto* a = c.n().attr_ints("axes"); a && !upsample) {
        axes = normalize_axes(c, *a, r);
    } else {
        for (int64_t j = 0; j < r; ++j) axes.push_back(j);
    }
    std::vector<int64_t> out = x;
    // Resize-10 took (X, scales); later opsets (X, roi, scales, sizes).
    const size_t scales_slot =
        upsample || (c.versioned() ? c.version() == 10 : c.input_count() == 2) ? 1 : 2;
    if (!upsample && c.has_input(3)) {
        const auto& sizes = c.need_values(3, "sizes");
        if (sizes.size() != axes.size())
            c.fail("sizes " + shape_string(sizes) + " need one entry per resized axis (" +
                   std::to_string(axes.size()) + ")");
        const std::string* policy = c.n().attr_string("keep_aspect_ratio_policy");
        const std::string p = policy ? *policy : "stretch";
        if (p != "stretch" && p != "not_larger" && p != "not_smaller")
            c.fail("keep_aspect_ratio_policy '" + p +
                   "' is not one of stretch, not_larger, not_smaller");
        if (p == "stretch") {
            for (size_t i = 0; i < axes.size(); ++i) out[static_cast<size_t>(axes[i])] = sizes[i];
        } else {
            // One scale for every axis, the smallest (not_larger) or largest (not_smaller).
            double scale = p == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
            for (size_t i = 0; i < axes.size(); ++i) {
                const double s = static_cast<double>(sizes[i]) /
                                 static_cast<double>(x[static_cast<size_t>(axes[i])]);
                scale = p == "not_larger" ? std::min(scale, s) : std::max(scale, s);
            }
            for (int64_t a : axes) {
                auto& d = out[static_cast<size_t>(a)];
                d = checked_dim(c, std::round(scale * static_cast<double>(d)), "the scale");
            }
        }
    } else {
        std::vector<double> scales;
        if (c.has_input(scales_slot) && !c.shape(scales_slot).empty() &&
            c.shape(scales_slot)[0] == 0) {
            c.fail("needs scales or sizes (input 2 is empty and input 3 is absent)");
        } else if (c.has_input(scales_slot)) {
            auto v = float_constant(c, scales_slot);
            if (!v)
                throw needs_declared{"scales (input '" +
                                     c.g().tensors[c.n().inputs[scales_slot]].name +
                                     "') are not constants the host can read"};
            scales = std::move(*v);
        } else if (const attribute* a = c.n().find_attribute("scales")) {
            const auto* fs = std::get_if<std::vector<double>>(&a->value);
            if (!fs) c.fail("attribute 'scales' must be a list of floats");
            scales = *fs;  // Upsample opset 7
        } else {
            c.fail(upsample ? "needs scales (input 1 or attribute 'scales')"
                            : "needs scales (input 2) or sizes (input 3)");
        }
        if (scales.size() != axes.size())
            c.fail("scales need one entry per resized axis (" + std::to_string(axes.size()) +
                   "), got " + std::to_string(scales.size()));
        for (size_t i = 0; i < axes.size(); ++i) {
            if (!(scales[i] > 0)) c.fail("scales must be > 0");
            auto& d = out[static_cast<size_t>(axes[i])];
            d = checked_dim(c, std::floor(static_cast<double>(d) * scales[i]), "the scale");
        }
    }
    c.set_shape(0, std::move(out));
}

void infer_gather_elements(const node_ctx& c) {
    if (c.rank(0) != c.rank(1) || c.rank(0) == 0)
        c.fail("indices " + c.describe_input(1) + " must have the rank of " + c.describe_input(0));
    c.normalize_axis(c.attr_int("axis", 0), c.rank(0), "axis");
    c.set_shape(0, c.shape(1));
}

void infer_gather_nd(const node_ctx& c) {
    const auto& data = c.shape(0);
    const auto& idx = c.shape(1);
    const int64_t b = c.attr_int("batch_dims", 0);
    if (idx.empty()) c.fail("indices " + c.describe_input(1) + " must have rank >= 1");
    const int64_t last = idx.back();
    if (b < 0 || b >= static_cast<int64_t>(idx.size()) || b >= c.rank(0))
        c.fail("batch_dims " + std::to_string(b) + " must be below the ranks of the inputs");
    if (last < 1 || b + last > c.rank(0))
        c.fail("the last dimension of " + c.describe_input(1) + " (" + std::to_string(last) +
               ") must be in [1, rank - batch_dims] of " + c.describe_input(0));
    for (size_t j = 0; j < static_cast<size_t>(b); ++j)
        if (idx[j] != data[j])
            c.fail("batch dimensions of " + c.describe_input(1) + " and " + c.describe_input(0) +
                   " differ");
    std::vector<int64_t> out(idx.begin(), idx.end() - 1);
    out.insert(out.end(), data.begin() + b + last, data.end());
    c.set_shape(0, std::move(out));
}

void infer_scatter(const node_ctx& c, bool nd) {
    // reduction came with opset 16 (none, add, mul); max and min with 18.
    check_attr_since(c, "reduction", 16);
    string_choice(c, "reduction", "none",
                  {{"none", 0}, {"add", 0}, {"mul", 0}, {"max", 18}, {"min", 18}});
    if (!nd) {
        if (c.shape(1) != c.shape(2) || c.rank(1) != c.rank(0))
            c.fail("indices " + c.describe_input(1) + " and updates " + c.describe_input(2) +
                   " must have one shape, of the rank of " + c.describe_input(0));
        c.normalize_axis(c.attr_int("axis", 0), c.rank(0), "axis");
    } else {
        // updates.shape = indices.shape[:-1] + data.shape[indices.shape[-1]:]
        const auto& data = c.shape(0);
        const auto& idx = c.shape(1);
        if (idx.empty() || idx.back() < 1 || idx.back() > c.rank(0))
            c.fail("the last dimension of " + c.describe_input(1) + " must be in [1, rank of " +
                   c.describe_input(0) + "]");
        std::vector<int64_t> want(idx.begin(), idx.end() - 1);
        want.insert(want.end(), data.begin() + idx.back(), data.end());
        if (c.shape(2) != want)
            c.fail("updates " + c.describe_input(2) + " must have shape " + shape_string(want));
    }
    c.set_shape(0, c.shape(0));
}

void infer_one_hot(const node_ctx& c) {
    const auto& idx = c.shape(0);
    const auto& dv = c.need_values(1, "depth");
    if (dv.size() != 1) c.fail("depth " + c.describe_input(1) + " must hold one value");
    if (dv[0] < 1) c.fail("depth " + std::to_string(dv[0]) + " must be >= 1");
    const auto& values = c.shape(2);
    if (checked_elements(values, c) != 2)
        c.fail("values " + c.describe_input(2) + " must hold two elements (off, on)");
    const auto r = static_cast<int64_t>(idx.size()) + 1;
    const auto axis = c.normalize_axis(c.attr_int("axis", -1), r, "axis");
    std::vector<int64_t> out = idx;
    out.insert(out.begin() + axis, dv[0]);
    c.set_shape(0, std::move(out));
}

void infer_depth_space(const node_ctx& c, bool to_space) {
    const auto& x = c.shape(0);
    if (x.size() != 4) c.fail(c.describe_input(0) + " must have rank 4 (N, C, H, W)");
    const int64_t b = c.attr_int("blocksize", 0);
    if (b < 1) c.fail("attribute 'blocksize' (>= 1) is required");
    std::vector<int64_t> out = x;
    const int64_t square = checked_mul(c, b, b, "blocksize^2");
    if (to_space) {
        if (x[1] % square != 0)
            c.fail("channels " + std::to_string(x[1]) +
                   " are not divisible by blocksize^2 = " + std::to_string(square));
        out = {x[0], x[1] / square, checked_mul(c, x[2], b, "the height"),
               checked_mul(c, x[3], b, "the width")};
    } else {
        if (x[2] % b != 0 || x[3] % b != 0)
            c.fail("height and width of " + c.describe_input(0) +
                   " are not divisible by blocksize " + std::to_string(b));
        out = {x[0], checked_mul(c, x[1], square, "the channels"), x[2] / b, x[3] / b};
    }
    c.set_shape(0, std::move(out));
}

// Every label's extent, checking repeats agree; ellipsis dims broadcast like numpy.
einsum_spec resolve_einsum(const node_ctx& c, const std::string& eq) {
    const auto label_of = [](char ch) -> int {
        if (ch >= 'a' && ch <= 'z') return ch - 'a';
        if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
        return -1;
    };
    const auto bad = [&](const std::string& why) { c.fail("equation '" + eq + "': " + why); };
    std::string spec;
    for (char ch : eq)
        if (ch != ' ') spec += ch;
    const size_t arrow = spec.find("->");
    const std::string lhs = spec.substr(0, arrow);
    std::vector<std::string> terms(1);
    for (char ch : lhs) {
        if (ch == ',')
            terms.emplace_back();
        else
            terms.back() += ch;
    }
    if (terms.size() != c.input_count())
        bad(std::to_string(terms.size()) + " operand terms for " + std::to_string(c.input_count()) +
            " inputs");
    // First pass: the ellipsis rank of every term.
    std::vector<int64_t> ell_rank(terms.size(), -1);
    size_t max_ell = 0;
    for (size_t k = 0; k < terms.size(); ++k) {
        const std::string& t = terms[k];
        const size_t dots = t.find("...");
        size_t letters = 0;
        for (char ch : t)
            if (ch != '.') {
                if (label_of(ch) < 0) bad("'" + std::string(1, ch) + "' is not a letter");
                ++letters;
            }
        const size_t rank = c.shape(k).size();
        if (dots == std::string::npos) {
            if (letters != rank)
                bad("term '" + t + "' has " + std::to_string(letters) + " labels for " +
                    c.describe_input(k));
            continue;
        }
        if (t.find("...", dots + 3) != std::string::npos || letters + 3 != t.size())
            bad("term '" + t + "' has a malformed ellipsis");
        if (letters > rank) bad("term '" + t + "' has more labels than " + c.describe_input(k));
        ell_rank[k] = static_cast<int64_t>(rank - letters);
        max_ell = std::max(max_ell, rank - letters);
    }
    einsum_spec e;
    e.extent.assign(52 + max_ell, -1);
    std::vector<int> count(52 + max_ell, 0);
    for (size_t k = 0; k < terms.size(); ++k) {
        const auto& s = c.shape(k);
        std::vector<int> labels;
        size_t dim = 0;
        for (size_t p = 0; p < terms[k].size();) {
            if (terms[k][p] == '.') {
                const auto er = static_cast<size_t>(ell_rank[k]);
                for (size_t q = 0; q < er; ++q) {
                    const int l = static_cast<int>(52 + max_ell - er + q);
                    int64_t& x = e.extent[static_cast<size_t>(l)];
                    const int64_t d = s[dim++];
                    if (x == -1 || x == 1)
                        x = d;
                    else if (d != 1 && d != x)
                        bad("ellipsis dims of " + c.describe_input(k) + " do not broadcast");
                    labels.push_back(l);
                }
                p += 3;
                continue;
            }
            const int l = label_of(terms[k][p++]);
            int64_t& x = e.extent[static_cast<size_t>(l)];
            const int64_t d = s[dim++];
            if (x != -1 && x != d)
                bad("label '" + std::string(1, terms[k][p - 1]) + "' is " + std::to_string(x) +
                    " in one place and " + std::to_string(d) + " in " + c.describe_input(k));
            x = d;
            if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
        }
        for (int l : labels) ++count[static_cast<size_t>(l)];
        e.operands.push_back(std::move(labels));
    }
    if (arrow != std::string::npos) {
        const std::string rhs = spec.substr(arrow + 2);
        for (size_t p = 0; p < rhs.size();) {
            if (rhs[p] == '.') {
                if (rhs.compare(p, 3, "...") != 0) bad("malformed ellipsis in the output");
                for (size_t q = 0; q < max_ell; ++q) e.output.push_back(static_cast<int>(52 + q));
                p += 3;
                continue;
            }
            const int l = label_of(rhs[p]);
            if (l < 0 || e.extent[static_cast<size_t>(l)] == -1)
                bad("output label '" + std::string(1, rhs[p]) + "' is not an input label");
            if (std::find(e.output.begin(), e.output.end(), l) != e.output.end())
                bad("output label '" + std::string(1, rhs[p]) + "' is repeated");
            e.output.push_back(l);
            ++p;
        }
    } else {
        // Implicit output: ellipsis dims, then labels used once, in alphabetical order.
        for (size_t q = 0; q < max_ell; ++q) e.output.push_back(static_cast<int>(52 + q));
        for (char ch = 'A'; ch <= 'z'; ++ch) {
            const int l = label_of(ch);
            if (l >= 0 && count[static_cast<size_t>(l)] == 1) e.output.push_back(l);
        }
    }
    return e;
}

void infer_einsum(const node_ctx& c) {
    const einsum_spec e = parse_einsum(c);
    std::vector<int64_t> out;
    for (int l : e.output) out.push_back(e.extent[static_cast<size_t>(l)]);
    c.set_shape(0, std::move(out));
}

void infer_quant_outputs(const node_ctx& c) {
    c.set_shape(0, c.shape(0));
    c.set_shape(1, {});  // DynamicQuantizeLinear's per-tensor scale and zero point
    c.set_shape(2, {});
}

// QuantizeLinear / DequantizeLinear: the scale (input 1) and zero point (input 2) fix the
// granularity: per tensor (one element), per axis (-13: 1-D of x[axis]) or blocked (-21:
// x's shape with ceil(x[axis] / block_size) on the axis).
void infer_quantize_linear(const node_ctx& c) {
    const auto& x = c.shape(0);
    const auto& s = c.shape(1);
    check_attr_since(c, "axis", 13);
    check_attr_since(c, "block_size", 21);
    if (c.n().op_type == "DequantizeLinear") {
        // DequantizeLinear has no `saturate` at any version, and `output_dtype` only from -23,
        // past the newest opset read.
        for (const char* name : {"saturate", "output_dtype"})
            if (c.versioned() && c.n().find_attribute(name))
                c.fail("attribute '" + std::string(name) + "' is not defined for " +
                       c.op_version_name() + " (opset " + std::to_string(c.g().opset()) + ")");
    } else {
        check_attr_since(c, "output_dtype", 21);
        check_attr_since(c, "saturate", 19);
    }
    if (c.has_input(2) && c.shape(2) != s)
        c.fail("zero point " + c.describe_input(2) + " must have the shape of scale " +
               c.describe_input(1));
    const int64_t block = c.attr_int("block_size", 0);
    if (block < 0) c.fail("block_size " + std::to_string(block) + " must be >= 0");
    const bool per_tensor = block == 0 && (s.empty() || (s.size() == 1 && s[0] == 1));
    if (!per_tensor) {
        if (c.versioned() && c.version() < 13)
            c.fail(c.op_version_name() + " takes a scalar scale only, not " + c.describe_input(1) +
                   " (per-axis scales arrived with opset 13)");
        const auto axis =
            static_cast<size_t>(c.normalize_axis(c.attr_int("axis", 1), c.rank(0), "axis"));
        if (block == 0) {
            if (s.size() != 1 || s[0] != x[axis])
                c.fail("scale " + c.describe_input(1) + " must be a scalar or 1-D of length " +
                       std::to_string(x[axis]) + " (axis " + std::to_string(axis) + " of " +
                       c.describe_input(0) + ")");
        } else {
            std::vector<int64_t> want = x;
            want[axis] = ceil_div(x[axis], block);
            if (s != want)
                c.fail("scale " + c.describe_input(1) + " must have shape " + shape_string(want) +
                       " for blocks of " + std::to_string(block) + " on axis " +
                       std::to_string(axis) + " of " + c.describe_input(0));
        }
    }
    same_shape(c);
}

// Col2Im-18: [N, C x prod(block), L] -> [N, C, image...]; L must equal the number of block
// positions the strided, dilated, padded image holds.
void infer_col2im(const node_ctx& c) {
    const auto& x = c.shape(0);
    const auto& image = c.need_values(1, "image_shape");
    const auto& block = c.need_values(2, "block_shape");
    if (x.size() != 3) c.fail(c.describe_input(0) + " must have rank 3 (N, C x prod(block), L)");
    if (image.empty() || image.size() != block.size())
        c.fail("image_shape " + shape_string(image) + " and block_shape " + shape_string(block) +
               " must be non-empty and of one length");
    const size_t n = image.size();
    int64_t block_elems = 1;
    for (size_t i = 0; i < n; ++i) {
        if (image[i] < 1 || block[i] < 1)
            c.fail("image_shape " + shape_string(image) + " and block_shape " +
                   shape_string(block) + " must be positive");
        block_elems = checked_mul(c, block_elems, block[i], "prod(block_shape)");
    }
    if (x[1] % block_elems != 0)
        c.fail("dimension 1 of " + c.describe_input(0) +
               " is not a multiple of prod(block_shape) = " + std::to_string(block_elems));
    const window w = read_window(c, block);
    int64_t blocks = 1;
    for (size_t i = 0; i < n; ++i)
        blocks = checked_mul(c, blocks, window_output(c, w, i, image[i], false), "the block count");
    if (x[2] != blocks)
        c.fail("dimension 2 of " + c.describe_input(0) + " must be the number of blocks, " +
               std::to_string(blocks) + ", that image_shape " + shape_string(image) + " holds");
    std::vector<int64_t> out{x[0], x[1] / block_elems};
    out.insert(out.end(), image.begin(), image.end());
    c.set_shape(0, std::move(out));
}

// CenterCropPad-18: the axes it names take the sizes of input 1; the rest stay.
void infer_center_crop_pad(const node_ctx& c) {
    const auto& x = c.shape(0);
    const auto& sizes = c.need_values(1, "shape");
    std::vector<int64_t> axes;
    if (const auto* a = c.n().attr_ints("axes")) {
        axes = normalize_axes(c, *a, c.rank(0));
    } else {
        for (int64_t j = 0; j < c.rank(0); ++j) axes.push_back(j);
    }
    if (sizes.size() != axes.size())
        c.fail("shape " + shape_string(sizes) + " needs one entry per axis (" +
               std::to_string(axes.size()) + ")");
    std::vector<int64_t> out = x;
    for (size_t i = 0; i < axes.size(); ++i) {
        if (sizes[i] < 0) c.fail("shape " + shape_string(sizes) + " has a negative dimension");
        out[static_cast<size_t>(axes[i])] = sizes[i];
    }
    c.set_shape(0, std::move(out));
}

// DeformConv-19: Conv's output shape; the offsets (and mask) must give each output position
// offset_group x prod(kernel) sampling points (x spatial rank coordinates for offsets).
void infer_deform_conv(const node_ctx& c) {
    infer_conv(c, false, 0, 1, 3);
    const auto& x = c.shape(0);
    const auto& w = c.shape(1);
    const auto& y = c.out_shape(0);
    const int64_t og = c.attr_int("offset_group", 1);
    if (og < 1 || x[1] % og != 0)
        c.fail("offset_group " + std::to_string(og) + " must be >= 1 and divide the channels " +
               std::to_string(x[1]) + " of " + c.describe_input(0));
    int64_t points = og;
    for (size_t i = 2; i < w.size(); ++i) points = checked_mul(c, points, w[i], "sampling points");
    const auto spatial = static_cast<int64_t>(x.size() - 2);
    const auto expect = [&](size_t slot, int64_t channels, const char* what) {
        std::vector<int64_t> want{x[0], channels};
        want.insert(want.end(), y.begin() + 2, y.end());
        if (c.shape(slot) != want)
            c.fail(std::string(what) + " " + c.describe_input(slot) + " must have shape " +
                   shape_string(want));
    };
    expect(2, checked_mul(c, points, spatial, "offset channels"), "offset");
    if (c.has_input(4)) expect(4, points, "mask");
}

// AffineGrid-20: theta [N, 2, 3] (or [N, 3, 4]) and size (N, C, H, W) (or (N, C, D, H, W))
// give the grid [N, H, W, 2] (or [N, D, H, W, 3]).
void infer_affine_grid(const node_ctx& c) {
    const auto& theta = c.shape(0);
    const auto& size = c.need_values(1, "size");
    if (size.size() != 4 && size.size() != 5)
        c.fail("size " + shape_string(size) + " must be (N, C, H, W) or (N, C, D, H, W)");
    const auto r = static_cast<int64_t>(size.size() - 2);
    if (theta.size() != 3 || theta[0] != size[0] || theta[1] != r || theta[2] != r + 1)
        c.fail("theta " + c.describe_input(0) + " must have shape [" + std::to_string(size[0]) +
               ", " + std::to_string(r) + ", " + std::to_string(r + 1) + "] for size " +
               shape_string(size));
    for (int64_t d : size)
        if (d < 1) c.fail("size " + shape_string(size) + " must be positive");
    std::vector<int64_t> out{size[0]};
    out.insert(out.end(), size.begin() + 2, size.end());
    out.push_back(r);
    c.set_shape(0, std::move(out));
}

// GridSample (-16: 4-D, -20: N-D): X [N, C, D1..Dr] sampled at grid [N, O1..Or, r] gives
// [N, C, O1..Or].
void infer_grid_sample(const node_ctx& c) {
    const auto& x = c.shape(0);
    const auto& grid = c.shape(1);
    if (x.size() < 3) c.fail(c.describe_input(0) + " must have rank >= 3 (N, C, spatial...)");
    if (c.versioned() && c.version() < 20 && x.size() != 4)
        c.fail(c.op_version_name() +
               " samples 4-D inputs only (N-D arrived with GridSample-20), not " +
               c.describe_input(0));
    const auto r = static_cast<int64_t>(x.size() - 2);
    if (grid.size() != x.size() || grid[0] != x[0] || grid.back() != r)
        c.fail("grid " + c.describe_input(1) + " must have shape [" + std::to_string(x[0]) +
               ", out spatial..., " + std::to_string(r) + "] for " + c.describe_input(0));
    // -16 names the modes bilinear and bicubic, -20 linear and cubic.
    const bool old = c.versioned() && c.version() < 20;
    if (old)
        string_choice(c, "mode", "bilinear", {{"bilinear", 0}, {"nearest", 0}, {"bicubic", 0}});
    else if (c.versioned())
        string_choice(c, "mode", "linear", {{"linear", 0}, {"nearest", 0}, {"cubic", 0}});
    else
        string_choice(
            c, "mode", "linear",
            {{"linear", 0}, {"nearest", 0}, {"cubic", 0}, {"bilinear", 0}, {"bicubic", 0}});
    std::vector<int64_t> out{x[0], x[1]};
    out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
    c.set_shape(0, std::move(out));
}

void infer_dft(const node_ctx& c) {
    const dft_params p = read_dft(c);
    const bool inverse = c.attr_int("inverse", 0) != 0;
    const bool onesided = c.attr_int("onesided", 0) != 0;
    std::vector<int64_t> out = c.shape(0);
    // DFT-20 defines the inverse of a one-sided transform as a real signal of dft_length.
    const bool irfft = onesided && inverse && (!c.versioned() || c.version() >= 20);
    out[p.axis] = irfft || !onesided ? p.length : p.length / 2 + 1;
    out.back() = irfft ? 1 : 2;
    c.set_shape(0, std::move(out));
}

// Elementwise folding of one integer input.
template <typename F>
void fold_unary(const node_ctx& c, F f) {
    if (!c.values(0)) return;
    std::vector<int64_t> v = *c.values(0);
    for (int64_t& e : v)
        if (!f(e)) return;
    c.set_values(0, std::move(v));
}

bool checked(bool overflow) { return !overflow; }

}  // namespace

dft_params read_dft(const node_ctx& c) {
    const auto& x = c.shape(0);
    const int64_t r = c.rank(0);
    if (r < 2 || (x.back() != 1 && x.back() != 2))
        c.fail(c.describe_input(0) +
               " must have rank >= 2 and a last dimension of 1 (real) or 2 (complex)");
    check_form(c, 2, "axis", 20);  // DFT-20 moved the axis to input 2 (default -2; -17: 1)
    int64_t axis = 0;
    if (c.has_input(2)) {
        const auto& v = c.need_values(2, "axis");
        if (v.size() != 1) c.fail("axis " + c.describe_input(2) + " must hold one value");
        axis = v[0];
    } else if (auto a = c.n().attr_int("axis")) {
        axis = *a;
    } else {
        axis = c.versioned() && c.version() < 20 ? 1 : -2;
    }
    // The last dimension holds real and imaginary parts and is no signal axis.
    if (axis < -r || axis == -1 || axis > r - 2)
        c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r) +
               " (valid: " + std::to_string(-r) + " to -2 and 0 to " + std::to_string(r - 2) +
               "; the last dimension holds real and imaginary parts)");
    if (axis < 0) axis += r;
    const auto a = static_cast<size_t>(axis);
    const bool irfft = c.attr_int("onesided", 0) != 0 && c.attr_int("inverse", 0) != 0 &&
                       (!c.versioned() || c.version() >= 20);
    int64_t length = irfft ? checked_mul(c, 2, x[a] - 1, "the signal length") : x[a];
    if (c.has_input(1)) {
        const auto& v = c.need_values(1, "dft_length");
        if (v.size() != 1) c.fail("dft_length " + c.describe_input(1) + " must hold one value");
        length = v[0];
    }
    if (length < 1) c.fail("dft_length " + std::to_string(length) + " must be >= 1");
    return {a, length, x.back() == 1 || irfft};
}

einsum_spec parse_einsum(const node_ctx& c) {
    const std::string* eq = c.n().attr_string("equation");
    if (!eq) c.fail("attribute 'equation' is required");
    return resolve_einsum(c, *eq);
}

void infer_shapes(const op_info& op, const node_ctx& c) {
    switch (op.id) {
        case op_id::Ceil:
        case op_id::Elu:
        case op_id::Erf:
        case op_id::Exp:
        case op_id::Floor:
        case op_id::HardSigmoid:
        case op_id::HardSwish:
        case op_id::LeakyRelu:
        case op_id::Log:
        case op_id::Reciprocal:
        case op_id::Relu:
        case op_id::Sigmoid:
        case op_id::Softplus:
        case op_id::Sqrt:
        case op_id::Tanh:
        case op_id::Not:
        case op_id::Dropout:
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
        case op_id::IsInf:
        case op_id::IsNaN:
        case op_id::BitwiseNot:
        case op_id::Selu:
        case op_id::Celu:
        case op_id::Softsign:
        case op_id::Mish:
        case op_id::ThresholdedRelu:
        case op_id::Shrink:
        case op_id::LRN:
            same_shape(c);
            return;
        case op_id::DequantizeLinear:
        case op_id::QuantizeLinear:
            infer_quantize_linear(c);
            return;
        case op_id::Col2Im:
            infer_col2im(c);
            return;
        case op_id::CenterCropPad:
            infer_center_crop_pad(c);
            return;
        case op_id::DeformConv:
            infer_deform_conv(c);
            return;
        case op_id::AffineGrid:
            infer_affine_grid(c);
            return;
        case op_id::GridSample:
            infer_grid_sample(c);
            return;
        case op_id::DFT:
            infer_dft(c);
            return;
        case op_id::Clip:
            // Clip-11 moved min and max from attributes to inputs 1 and 2.
            check_form(c, 1, "min", 11);
            check_form(c, 2, "max", 11);
            same_shape(c);
            return;
        case op_id::Gelu:
            string_choice(c, "approximate", "none", {{"none", 0}, {"tanh", 0}});
            same_shape(c);
            return;
        case op_id::Abs:
            same_shape(c);
            fold_unary(c, [](int64_t& e) {
                if (e == std::numeric_limits<int64_t>::min()) return false;
                e = e < 0 ? -e : e;
                return true;
            });
            return;
        case op_id::Sign:
            same_shape(c);
            fold_unary(c, [](int64_t& e) {
                e = (e > 0) - (e < 0);
                return true;
            });
            return;
        case op_id::Trilu:
        case op_id::ReverseSequence:
            if (c.rank(0) < 2) c.fail(c.describe_input(0) + " must have rank >= 2");
            same_shape(c);
            return;
        case op_id::EyeLike:
            if (c.rank(0) != 2) c.fail(c.describe_input(0) + " must have rank 2");
            same_shape(c);
            return;
        case op_id::CumSum: {
            // The output has the input's shape whatever the axis, so an axis whose value is
            // not in the file (external data that is absent) still infers.
            const auto& a = c.values(1);
            if (a && a->size() != 1)
                c.fail("axis (input 1) must hold one value, not " + std::to_string(a->size()));
            if (a) c.normalize_axis((*a)[0], c.rank(0), "axis");
            same_shape(c);
            return;
        }
        case op_id::Hardmax:
        case op_id::LpNormalization:
            c.normalize_axis(c.attr_int("axis", -1), c.rank(0), "axis");
            same_shape(c);
            return;
        case op_id::MeanVarianceNormalization: {
            const auto* a = c.n().attr_ints("axes");
            normalize_axes(c, a ? *a : std::vector<int64_t>{0, 2, 3}, c.rank(0));
            same_shape(c);
            return;
        }
        case op_id::InstanceNormalization:
            infer_channel_norm(c, false);
            return;
        case op_id::GroupNormalization:
            infer_channel_norm(c, true);
            return;
        case op_id::ArgMax:
        case op_id::ArgMin:
            infer_arg_reduce(c);
            return;
        case op_id::TopK:
            infer_topk(c);
            return;
        case op_id::Size: {
            c.set_shape(0, {});
            c.set_values(0, {checked_elements(c.shape(0), c)});
            return;
        }
        case op_id::NonZero:
            infer_nonzero(c);
            return;
        case op_id::Einsum:
            infer_einsum(c);
            return;
        case op_id::Resize:
            infer_resize(c, false);
            return;
        case op_id::Upsample:
            check_form(c, 1, "scales", 9);  // Upsample-9 moved scales to input 1
            infer_resize(c, true);
            return;
        case op_id::GatherElements:
            infer_gather_elements(c);
            return;
        case op_id::GatherND:
            infer_gather_nd(c);
            return;
        case op_id::ScatterElements:
            infer_scatter(c, false);
            return;
        case op_id::ScatterND:
            infer_scatter(c, true);
            return;
        case op_id::OneHot:
            infer_one_hot(c);
            return;
        case op_id::DepthToSpace:
            infer_depth_space(c, true);
            return;
        case op_id::SpaceToDepth:
            infer_depth_space(c, false);
            return;
        case op_id::DynamicQuantizeLinear:
            infer_quant_outputs(c);
            return;
        case op_id::MatMulInteger:
            infer_matmul(c);
            return;
        case op_id::QLinearMatMul:
            infer_matmul(c, 0, 3);
            return;
        case op_id::ConvInteger:
            infer_conv(c, false, 0, 1, 99);
            return;
        case op_id::QLinearConv:
            infer_conv(c, false, 0, 3, 8);
            return;
        case op_id::Neg:
            same_shape(c);
            if (c.values(0)) {
                std::vector<int64_t> v = *c.values(0);
                for (int64_t& e : v) {
                    if (e == std::numeric_limits<int64_t>::min()) return;
                    e = -e;
                }
                c.set_values(0, std::move(v));
            }
            return;
        case op_id::Cast:
        case op_id::CastLike:
            check_attr_since(c, "saturate", 19);  // float8 conversions (Cast-19, CastLike-19)
            [[fallthrough]];
        case op_id::Identity:
            same_shape(c);
            if (c.values(0) && (is_integer(c.dtype(0)) || c.dtype(0) == NNERGY_DTYPE_BOOL))
                c.set_values(0, *c.values(0));
            return;
        case op_id::Softmax:
        case op_id::LogSoftmax:
            if (auto axis = c.n().attr_int("axis")) c.normalize_axis(*axis, c.rank(0), "axis");
            same_shape(c);
            return;
        case op_id::Add:
        case op_id::Sub:
        case op_id::Mul:
        case op_id::Div:
        case op_id::Pow:
        case op_id::Equal:
        case op_id::Less:
        case op_id::Greater:
        case op_id::Where:
        case op_id::Max:
        case op_id::Min:
        case op_id::Sum:
        case op_id::Mean:
        case op_id::Mod:
        case op_id::BitShift:
        case op_id::BitwiseAnd:
        case op_id::BitwiseOr:
        case op_id::BitwiseXor:
        case op_id::LessOrEqual:
        case op_id::GreaterOrEqual:
        case op_id::And:
        case op_id::Or:
        case op_id::Xor: {
            auto out = broadcast_inputs(c, 0, c.input_count());
            c.set_shape(0, out);
            const auto fold = [&](auto f) { fold_elementwise(c, 0, c.input_count(), out, f); };
            using args = const std::vector<int64_t>&;
            switch (op.id) {
                case op_id::Add:
                    fold([](args a, int64_t& r) {
                        return checked(__builtin_add_overflow(a[0], a[1], &r));
                    });
                    break;
                case op_id::Sub:
                    fold([](args a, int64_t& r) {
                        return checked(__builtin_sub_overflow(a[0], a[1], &r));
                    });
                    break;
                case op_id::Mul:
                    fold([](args a, int64_t& r) {
                        return checked(__builtin_mul_overflow(a[0], a[1], &r));
                    });
                    break;
                case op_id::Div:  // integer division truncates toward zero, as in C
                    fold([](args a, int64_t& r) {
                        if (a[1] == 0 ||
                            (a[1] == -1 && a[0] == std::numeric_limits<int64_t>::min()))
                            return false;
                        r = a[0] / a[1];
                        return true;
                    });
                    break;
                case op_id::Equal:
                    fold([](args a, int64_t& r) {
                        r = a[0] == a[1];
                        return true;
                    });
                    break;
                case op_id::Less:
                    fold([](args a, int64_t& r) {
                        r = a[0] < a[1];
                        return true;
                    });
                    break;
                case op_id::Greater:
                    fold([](args a, int64_t& r) {
                        r = a[0] > a[1];
                        return true;
                    });
                    break;
                case op_id::LessOrEqual:
                    fold([](args a, int64_t& r) {
                        r = a[0] <= a[1];
                        return true;
                    });
                    break;
                case op_id::GreaterOrEqual:
                    fold([](args a, int64_t& r) {
                        r = a[0] >= a[1];
                        return true;
                    });
                    break;
                case op_id::And:
                    fold([](args a, int64_t& r) {
                        r = a[0] != 0 && a[1] != 0;
                        return true;
                    });
                    break;
                case op_id::Or:
                    fold([](args a, int64_t& r) {
                        r = a[0] != 0 || a[1] != 0;
                        return true;
                    });
                    break;
                case op_id::Xor:
                    fold([](args a, int64_t& r) {
                        r = (a[0] != 0) != (a[1] != 0);
                        return true;
                    });
                    break;
                case op_id::Mod: {
                    // fmod = 0: the result takes the divisor's sign (Python); 1: the dividend's.
                    const bool fmod = c.attr_int("fmod", 0) != 0;
                    fold([fmod](args a, int64_t& r) {
                        if (a[1] == 0 ||
                            (a[1] == -1 && a[0] == std::numeric_limits<int64_t>::min()))
                            return false;
                        r = a[0] % a[1];
                        if (!fmod && r != 0 && ((r < 0) != (a[1] < 0))) r += a[1];
                        return true;
                    });
                    break;
                }
                case op_id::Where:
                    fold([](args a, int64_t& r) {
                        r = a[0] != 0 ? a[1] : a[2];
                        return true;
                    });
                    break;
                case op_id::Max:
                    fold([](args a, int64_t& r) {
                        r = *std::max_element(a.begin(), a.end());
                        return true;
                    });
                    break;
                case op_id::Min:
                    fold([](args a, int64_t& r) {
                        r = *std::min_element(a.begin(), a.end());
                        return true;
                    });
                    break;
                default:
                    break;
            }
            return;
        }
        case op_id::PRelu: {
            const auto out = broadcast_inputs(c, 0, 2);
            if (out != c.shape(0))
                c.fail("slope " + c.describe_input(1) + " must broadcast onto " +
                       c.describe_input(0));
            c.set_shape(0, out);
            return;
        }
        case op_id::Conv:
            infer_conv(c, false);
            return;
        case op_id::ConvTranspose:
            infer_conv(c, true);
            return;
        case op_id::MaxPool:
        case op_id::AveragePool:
        case op_id::LpPool:
            infer_pool(c, op.id);
            return;
        case op_id::GlobalAveragePool:
        case op_id::GlobalMaxPool:
        case op_id::GlobalLpPool:
            infer_global_pool(c);
            return;
        case op_id::AdaptiveAveragePool:
        case op_id::AdaptiveMaxPool:
            infer_adaptive_pool(c);
            return;
        case op_id::Gemm:
            infer_gemm(c);
            return;
        case op_id::MatMul:
            infer_matmul(c);
            return;
        case op_id::BatchNormalization:
            infer_batch_norm(c);
            return;
        case op_id::LayerNormalization:
            infer_layer_norm(c);
            return;
        case op_id::Reshape:
            infer_reshape(c);
            return;
        case op_id::Flatten:
            infer_flatten(c);
            return;
        case op_id::Transpose:
            infer_transpose(c);
            return;
        case op_id::Concat:
            infer_concat(c);
            return;
        case op_id::Squeeze:
            infer_squeeze(c);
            return;
        case op_id::Unsqueeze:
            infer_unsqueeze(c);
            return;
        case op_id::ReduceMax:
        case op_id::ReduceMean:
        case op_id::ReduceMin:
        case op_id::ReduceSum:
        case op_id::ReduceL1:
        case op_id::ReduceL2:
        case op_id::ReduceLogSum:
        case op_id::ReduceLogSumExp:
        case op_id::ReduceProd:
        case op_id::ReduceSumSquare:
            infer_reduce(c, op.id);
            return;
        case op_id::Shape:
            infer_shape_op(c);
            return;
        case op_id::Gather:
            infer_gather(c);
            return;
        case op_id::Slice:
            infer_slice(c);
            return;
        case op_id::Split:
            infer_split(c);
            return;
        case op_id::Expand:
            infer_expand(c);
            return;
        case op_id::Tile:
            infer_tile(c);
            return;
        case op_id::Pad:
            infer_pad(c);
            return;
        case op_id::Range:
            infer_range(c);
            return;
        case op_id::Constant:
            infer_constant(c);
            return;
        case op_id::ConstantOfShape:
            infer_constant_of_shape(c);
            return;
    }
}

}  // namespace nnergy::detail
