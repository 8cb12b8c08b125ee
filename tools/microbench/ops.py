# SPDX-License-Identifier: Apache-2.0
"""Operator builders: one case (a plain dict) -> a callable plus the work of one call.

A case names an operator (`name`), its shape (`params`), the batch and the precision. `build`
allocates the tensors once and returns an `Op` whose `fn` runs exactly one call, so the timed
loop measures the operator and not tensor creation. FLOPs and bytes follow docs/counting.md:
a MAC is 2 FLOPs, bias adds and each op's own elementwise work are added, and bytes are the
call's inputs, weights and outputs counted once each (what a fused kernel must move).
"""
import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
          "bf16": torch.bfloat16}


@dataclass
class Op:
    fn: Callable[[], object]
    flops: float
    bytes: float
    params: dict  # the case's params with derived values added (m, out hw, eager bytes)


def element_bytes(dtype):
    return torch.tensor([], dtype=dtype).element_size()


def _randn(shape, dtype, device):
    # Created in fp32 then cast, so every precision sees the same value distribution.
    return torch.randn(*shape, device=device).to(dtype)


# ---------------------------------------------------------------- convolutions


def conv_out(hw, k, stride):
    pad = k // 2
    return (hw + 2 * pad - k) // stride + 1


def build_conv2d(p, batch, dtype, device):
    cin, cout, hw, k = p["cin"], p["cout"], p["hw"], p["k"]
    stride, groups = p.get("stride", 1), p.get("groups", 1)
    x = _randn((batch, cin, hw, hw), dtype, device)
    # Without bias: in the CNNs these shapes come from, a batch normalization follows.
    w = _randn((cout, cin // groups, k, k), dtype, device)
    pad = k // 2
    ho = conv_out(hw, k, stride)
    macs = batch * cout * ho * ho * (cin // groups) * k * k
    eb = element_bytes(dtype)
    moved = eb * (x.numel() + w.numel() + batch * cout * ho * ho)

    def fn():
        return F.conv2d(x, w, None, stride, pad, 1, groups)
    return Op(fn, 2.0 * macs, moved, dict(p, out_hw=ho))


# ---------------------------------------------------------------- matrix products


def build_linear(p, batch, dtype, device):
    """nn.Linear: x[m, k] @ W[n, k]^T + b, with m = batch x seq (tokens of the call)."""
    k, n, seq = p["k"], p["n"], p.get("seq", 1)
    bias = p.get("bias", True)
    m = batch * seq
    x = _randn((m, k), dtype, device)
    w = _randn((n, k), dtype, device)
    b = _randn((n,), dtype, device) if bias else None
    flops = 2.0 * m * n * k + (m * n if bias else 0)
    moved = element_bytes(dtype) * (m * k + n * k + (n if bias else 0) + m * n)

    def fn():
        return F.linear(x, w, b)
    return Op(fn, flops, moved, dict(p, m=m))


def build_matmul(p, batch, dtype, device):
    """A plain (batched when batch > 1) matrix product a[m, k] @ b[k, n]."""
    m, n, k = p["m"], p["n"], p["k"]
    a = _randn((batch, m, k) if batch > 1 else (m, k), dtype, device)
    b = _randn((k, n), dtype, device)
    flops = 2.0 * batch * m * n * k
    moved = element_bytes(dtype) * (batch * m * k + k * n + batch * m * n)

    def fn():
        return torch.matmul(a, b)
    return Op(fn, flops, moved, dict(p))


def has_sdpa():
    return hasattr(F, "scaled_dot_product_attention")


def build_attention(p, batch, dtype, device):
    """softmax(q k^T / sqrt(d) [+ causal mask]) v over [batch, heads, seq, head_dim].

    impl "math" runs the three steps as separate ops (what eager PyTorch 1.x runs and what an
    exporter writes); impl "sdpa" calls F.scaled_dot_product_attention (PyTorch >= 2.0), which
    picks a fused kernel (flash or memory-efficient) where it can.
    """
    sq, heads, d = p["seq"], p["heads"], p["head_dim"]
    skv = p.get("seq_kv", sq)
    causal = bool(p.get("causal", False)) and sq > 1
    impl = p.get("impl", "math")
    q = _randn((batch, heads, sq, d), dtype, device)
    kk = _randn((batch, heads, skv, d), dtype, device)
    v = _randn((batch, heads, skv, d), dtype, device)
    scale = 1.0 / math.sqrt(d)
    scores = batch * heads * sq * skv
    # Two matrix products, the scale, the softmax (5 per element) and the mask's select.
    flops = 2.0 * 2 * scores * d + scores * (1 + 5 + (1 if causal else 0))
    moved = element_bytes(dtype) * (q.numel() + kk.numel() + v.numel() + q.numel())
    if impl == "sdpa":
        if not has_sdpa():
            raise RuntimeError("F.scaled_dot_product_attention needs PyTorch >= 2.0")

        def fn():
            return F.scaled_dot_product_attention(q, kk, v, is_causal=causal)
    else:
        mask = None
        if causal:
            mask = torch.ones(sq, skv, dtype=torch.bool, device=device).triu(skv - sq + 1)

        def fn():
            s = torch.matmul(q, kk.transpose(-2, -1)) * scale
            if mask is not None:
                s = s.masked_fill(mask, float("-inf"))
            return torch.matmul(torch.softmax(s, dim=-1), v)
    return Op(fn, flops, moved, dict(p, seq_kv=skv, impl=impl, causal=causal))


# ---------------------------------------------------------------- normalizations, pooling


def build_batch_norm(p, batch, dtype, device):
    c, hw = p["c"], p["hw"]
    x = _randn((batch, c, hw, hw), dtype, device)
    mean, var = _randn((c,), dtype, device), torch.rand(c, device=device).to(dtype) + 0.5
    w, b = _randn((c,), dtype, device), _randn((c,), dtype, device)
    out = x.numel()

    def fn():
        return F.batch_norm(x, mean, var, w, b, False, 0.0, 1e-5)
    return Op(fn, 2.0 * out, element_bytes(dtype) * (2 * out + 4 * c), dict(p))


def build_layer_norm(p, batch, dtype, device):
    seq, d = p["seq"], p["d"]
    x = _randn((batch, seq, d), dtype, device)
    w, b = _randn((d,), dtype, device), _randn((d,), dtype, device)
    out = x.numel()

    def fn():
        return F.layer_norm(x, (d,), w, b, 1e-5)
    return Op(fn, 7.0 * out, element_bytes(dtype) * (2 * out + 2 * d), dict(p))


def build_max_pool2d(p, batch, dtype, device):
    c, hw, k, stride = p["c"], p["hw"], p["k"], p["stride"]
    pad = p.get("pad", 0)
    x = _randn((batch, c, hw, hw), dtype, device)
    ho = (hw + 2 * pad - k) // stride + 1
    out = batch * c * ho * ho

    def fn():
        return F.max_pool2d(x, k, stride, pad)
    return Op(fn, float((k * k - 1) * out), element_bytes(dtype) * (x.numel() + out),
              dict(p, out_hw=ho))


def build_global_avg_pool(p, batch, dtype, device):
    c, hw = p["c"], p["hw"]
    x = _randn((batch, c, hw, hw), dtype, device)

    def fn():
        return F.adaptive_avg_pool2d(x, 1)
    return Op(fn, float(x.numel()), element_bytes(dtype) * (x.numel() + batch * c), dict(p))


def build_softmax(p, batch, dtype, device):
    """Softmax over the last axis of [batch x rows, cols] (attention scores, logits)."""
    rows, cols = p["rows"], p["cols"]
    x = _randn((batch * rows, cols), dtype, device)

    def fn():
        return torch.softmax(x, dim=-1)
    return Op(fn, 5.0 * x.numel(), element_bytes(dtype) * 2 * x.numel(), dict(p))


# ---------------------------------------------------------------- elementwise chains

# FLOPs per element of each op (docs/counting.md; SiLU = Sigmoid + Mul) and whether it reads
# a second full-size operand (a residual or a gate).
ELEMENTWISE = {
    "add": (1, True), "mul": (1, True), "add_scalar": (1, False), "relu": (1, False),
    "gelu": (5, False), "sigmoid": (4, False), "silu": (5, False), "hardswish": (5, False),
    "tanh": (1, False),
}


def _apply(op, t, other):
    if op == "add":
        return torch.add(t, other)
    if op == "mul":
        return torch.mul(t, other)
    if op == "add_scalar":
        return torch.add(t, 1.0)
    if op == "relu":
        return torch.relu(t)
    if op == "gelu":
        return F.gelu(t)
    if op == "sigmoid":
        return torch.sigmoid(t)
    if op == "silu":
        return F.silu(t)
    if op == "hardswish":
        return F.hardswish(t)
    if op == "tanh":
        return torch.tanh(t)
    raise ValueError(f"unknown elementwise op {op!r}")


def build_elementwise(p, batch, dtype, device):
    """A chain of elementwise ops on `numel` elements per item, one eager kernel per op.

    bytes counts the chain as the partitioner's fused kernel does (the input, the shared second
    operand once, the final output); params.eager_bytes is what the unfused eager ops move.
    """
    ops = p["ops"]
    n = batch * p["numel"]
    x = _randn((n,), dtype, device)
    binary = any(ELEMENTWISE[o][1] for o in ops)
    other = _randn((n,), dtype, device) if binary else None
    eb = element_bytes(dtype)
    flops = float(sum(ELEMENTWISE[o][0] for o in ops) * n)
    moved = eb * n * (2 + (1 if binary else 0))
    eager = eb * n * sum(3 if ELEMENTWISE[o][1] else 2 for o in ops)

    if p.get("reuse_output"):
        # The bandwidth sweep's add writes into one buffer: no output to first-touch per call.
        if ops != ["add"]:
            raise ValueError(f"reuse_output is for a single add, not {ops}")
        out = torch.empty_like(x)
        return Op(lambda: torch.add(x, other, out=out), flops, float(moved),
                  dict(p, kernels=1, eager_bytes=eager))

    def fn():
        t = x
        for op in ops:
            t = _apply(op, t, other)
        return t
    return Op(fn, flops, float(moved), dict(p, kernels=len(ops), eager_bytes=eager))


# ---------------------------------------------------------------- squeeze-excitation


def build_squeeze_excitation(p, batch, dtype, device):
    """torchvision's SqueezeExcitation: pool, 1x1 conv, act, 1x1 conv, gate, scale the input.

    Six eager kernels, two of them matrix-vector products per image (the tiny GEMVs).
    """
    c, sq, hw = p["c"], p["squeeze"], p["hw"]
    act, gate = p.get("act", "relu"), p.get("gate", "sigmoid")
    x = _randn((batch, c, hw, hw), dtype, device)
    w1, b1 = _randn((sq, c, 1, 1), dtype, device), _randn((sq,), dtype, device)
    w2, b2 = _randn((c, sq, 1, 1), dtype, device), _randn((c,), dtype, device)
    act_fn = {"relu": torch.relu, "silu": F.silu}[act]
    gate_fn = {"sigmoid": torch.sigmoid, "hardsigmoid": F.hardsigmoid}[gate]
    plane = batch * c * hw * hw
    flops = (plane  # global average pool
             + batch * (2 * c * sq + sq) + batch * sq * (1 if act == "relu" else 5)
             + batch * (2 * sq * c + c) + batch * c * 4  # sigmoid and hardsigmoid: 4
             + plane)  # the scale
    weights = w1.numel() + b1.numel() + w2.numel() + b2.numel()
    moved = element_bytes(dtype) * (2 * plane + weights)

    def fn():
        s = F.adaptive_avg_pool2d(x, 1)
        s = act_fn(F.conv2d(s, w1, b1))
        s = gate_fn(F.conv2d(s, w2, b2))
        return x * s
    return Op(fn, float(flops), float(moved), dict(p, act=act, gate=gate, kernels=6))


# ---------------------------------------------------------------- dispatch cost


# Tiny shapes: each call is dominated by the framework's per-op work (argument parsing,
# dispatch, output allocation, a kernel launch on a GPU), which is what these runs measure.
DISPATCH_OPS = {
    "add": ("elementwise", "elementwise", {"numel": 1, "ops": ["add"]}),
    "add_scalar": ("elementwise", "elementwise", {"numel": 1, "ops": ["add_scalar"]}),
    "mul": ("elementwise", "elementwise", {"numel": 1, "ops": ["mul"]}),
    "relu": ("elementwise", "elementwise", {"numel": 1, "ops": ["relu"]}),
    "sigmoid": ("elementwise", "elementwise", {"numel": 1, "ops": ["sigmoid"]}),
    "gelu": ("elementwise", "elementwise", {"numel": 1, "ops": ["gelu"]}),
    "linear": ("gemm", "linear", {"k": 8, "n": 8, "seq": 1}),
    "matmul": ("gemm", "matmul", {"m": 8, "n": 8, "k": 8}),
    "conv2d": ("conv", "conv2d", {"cin": 4, "cout": 4, "hw": 8, "k": 3}),
    "conv2d_depthwise": ("depthwise_conv", "conv2d",
                         {"cin": 4, "cout": 4, "hw": 8, "k": 3, "groups": 4}),
    "batch_norm": ("normalization", "batch_norm", {"c": 4, "hw": 8}),
    "layer_norm": ("normalization", "layer_norm", {"seq": 1, "d": 8}),
    "softmax": ("pooling", "softmax", {"rows": 1, "cols": 8}),
    "max_pool2d": ("pooling", "max_pool2d", {"c": 4, "hw": 8, "k": 3, "stride": 2}),
    "global_avg_pool": ("pooling", "global_avg_pool", {"c": 4, "hw": 8}),
    "view": ("data_movement", None, {"numel": 8}),
    "transpose_contiguous": ("data_movement", None, {"numel": 64}),
    "cat": ("data_movement", None, {"numel": 2}),
}


def build_dispatch(p, batch, dtype, device):
    op = p["op"]
    for_class, builder, tiny = DISPATCH_OPS[op]
    if builder is not None:
        inner = BUILDERS[builder](tiny, batch, dtype, device)
        return Op(inner.fn, inner.flops, inner.bytes, dict(p, for_class=for_class, **inner.params))
    eb = element_bytes(dtype)
    if op == "view":
        x = _randn((2, 4), dtype, device)
        # No kernel and no data: the framework's bookkeeping alone.
        return Op(lambda: x.view(8), 0.0, 0.0, dict(p, for_class=for_class, **tiny))
    if op == "transpose_contiguous":
        x = _randn((8, 8), dtype, device)
        return Op(lambda: x.t().contiguous(), 0.0, eb * 128.0,
                  dict(p, for_class=for_class, **tiny))
    if op == "cat":
        a, b = _randn((1,), dtype, device), _randn((1,), dtype, device)
        return Op(lambda: torch.cat((a, b)), 0.0, eb * 4.0, dict(p, for_class=for_class, **tiny))
    raise ValueError(f"unknown dispatch op {op!r}")


BUILDERS = {
    "conv2d": build_conv2d,
    "linear": build_linear,
    "matmul": build_matmul,
    "attention": build_attention,
    "batch_norm": build_batch_norm,
    "layer_norm": build_layer_norm,
    "max_pool2d": build_max_pool2d,
    "global_avg_pool": build_global_avg_pool,
    "softmax": build_softmax,
    "elementwise": build_elementwise,
    "squeeze_excitation": build_squeeze_excitation,
    "dispatch": build_dispatch,
}


def build(case, device):
    """The Op for one case on `device` (a torch.device or string)."""
    builder = case["builder"]
    dtype = DTYPES[case["precision"]]
    return BUILDERS[builder](case["params"], case["batch"], dtype, device)
