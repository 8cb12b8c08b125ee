# SPDX-License-Identifier: Apache-2.0
"""What a pass measures: shapes taken from real networks, per op class, and the plans that
expand them over batches, precisions, modes and thread counts.

Every shape names its source (`params.source`) so that a fit can hold out whole networks. The
shapes are chosen to span what the next step fits: dense, 1x1, depthwise and grouped
convolutions at their real channel counts and resolutions; transformer linears at real token
counts, matrix-vector products (classifier heads, a decoder step, squeeze-excitation), square
matrix products for peak throughput, attention at real sequence lengths, and elementwise work
from 1 element (pure dispatch) to far past the last-level cache (pure bandwidth).
"""

# ------------------------------------------------------------------ shape catalogs
# Convolutions: (cin, cout, hw, k, stride, groups, source). Padding is k // 2.

DENSE_CONV = [
    (3, 64, 224, 7, 2, 1, "resnet stem"),
    (64, 64, 56, 3, 1, 1, "resnet18 layer1"),
    (128, 128, 56, 3, 2, 1, "resnet50 layer2.0 conv2"),
    (128, 128, 28, 3, 1, 1, "resnet18 layer2"),
    (256, 256, 14, 3, 1, 1, "resnet18 layer3"),
    (512, 512, 7, 3, 1, 1, "resnet18 layer4"),
    (3, 32, 224, 3, 2, 1, "mobilenet_v2 / efficientnet_b0 stem"),
    (3, 64, 224, 3, 1, 1, "vgg16 conv1_1"),
    (64, 64, 224, 3, 1, 1, "vgg16 conv1_2"),
    (128, 128, 112, 3, 1, 1, "vgg16 conv2_2"),
    (256, 256, 56, 3, 1, 1, "vgg16 conv3_2"),
    (512, 512, 28, 3, 1, 1, "vgg16 conv4_2"),
    (512, 512, 14, 3, 1, 1, "vgg16 conv5_2"),
]

POINTWISE_CONV = [
    (64, 256, 56, 1, 1, 1, "resnet50 layer1 conv3"),
    (256, 64, 56, 1, 1, 1, "resnet50 layer1 conv1"),
    (256, 512, 56, 1, 2, 1, "resnet50 layer2.0 downsample"),
    (512, 128, 28, 1, 1, 1, "resnet50 layer2 conv1"),
    (128, 512, 28, 1, 1, 1, "resnet50 layer2 conv3"),
    (1024, 256, 14, 1, 1, 1, "resnet50 layer3 conv1"),
    (256, 1024, 14, 1, 1, 1, "resnet50 layer3 conv3"),
    (2048, 512, 7, 1, 1, 1, "resnet50 layer4 conv1"),
    (512, 2048, 7, 1, 1, 1, "resnet50 layer4 conv3"),
    (16, 96, 112, 1, 1, 1, "mobilenet_v2 block2 expand"),
    (24, 144, 56, 1, 1, 1, "mobilenet_v2 block3 expand"),
    (144, 24, 56, 1, 1, 1, "mobilenet_v2 block3 project"),
    (32, 192, 28, 1, 1, 1, "mobilenet_v2 block4 expand"),
    (192, 32, 28, 1, 1, 1, "mobilenet_v2 block4 project"),
    (64, 384, 14, 1, 1, 1, "mobilenet_v2 block8 expand"),
    (384, 64, 14, 1, 1, 1, "mobilenet_v2 block8 project"),
    (160, 960, 7, 1, 1, 1, "mobilenet_v2 block15 expand"),
    (960, 160, 7, 1, 1, 1, "mobilenet_v2 block15 project"),
    (320, 1280, 7, 1, 1, 1, "mobilenet_v2 last conv"),
    (40, 240, 28, 1, 1, 1, "efficientnet_b0 stage4 expand"),
    (240, 40, 28, 1, 1, 1, "efficientnet_b0 stage4 project"),
    (112, 672, 14, 1, 1, 1, "efficientnet_b0 stage6 expand"),
    (960, 160, 7, 1, 1, 1, "mobilenet_v3_large last block project"),
]

DEPTHWISE_CONV = [
    (32, 32, 112, 3, 1, 32, "mobilenet_v2 block1"),
    (96, 96, 112, 3, 2, 96, "mobilenet_v2 block2"),
    (144, 144, 56, 3, 1, 144, "mobilenet_v2 block3"),
    (144, 144, 56, 3, 2, 144, "mobilenet_v2 block4"),
    (192, 192, 28, 3, 1, 192, "mobilenet_v2 block5"),
    (384, 384, 14, 3, 1, 384, "mobilenet_v2 block8"),
    (576, 576, 14, 3, 1, 576, "mobilenet_v2 block13"),
    (960, 960, 7, 3, 1, 960, "mobilenet_v2 block15"),
    (72, 72, 56, 5, 2, 72, "mobilenet_v3_large block4"),
    (120, 120, 28, 5, 1, 120, "mobilenet_v3_large block5"),
    (240, 240, 28, 5, 1, 240, "efficientnet_b0 stage4"),
    (672, 672, 14, 5, 1, 672, "efficientnet_b0 stage6"),
    (1152, 1152, 7, 5, 1, 1152, "efficientnet_b0 stage7"),
    (96, 96, 56, 7, 1, 96, "convnext_tiny stage1"),
    (384, 384, 14, 7, 1, 384, "convnext_tiny stage3"),
]

GROUPED_CONV = [
    (48, 48, 56, 3, 1, 6, "regnet_y_400mf stage1 (group width 8)"),
    (104, 104, 56, 3, 2, 13, "regnet_y_400mf stage2.0 (group width 8)"),
    (208, 208, 14, 3, 1, 26, "regnet_y_400mf stage3 (group width 8)"),
    (440, 440, 7, 3, 1, 55, "regnet_y_400mf stage4 (group width 8)"),
    (120, 120, 28, 3, 1, 5, "regnet_y_1_6gf stage2 (group width 24)"),
    (336, 336, 14, 3, 1, 14, "regnet_y_1_6gf stage3 (group width 24)"),
    (888, 888, 7, 3, 1, 37, "regnet_y_1_6gf stage4 (group width 24)"),
    (448, 448, 28, 3, 1, 4, "regnet_y_16gf stage2 (group width 112)"),
    (1232, 1232, 14, 3, 1, 11, "regnet_y_16gf stage3 (group width 112)"),
    (128, 128, 56, 3, 1, 32, "resnext50_32x4d layer1"),
    (256, 256, 28, 3, 1, 32, "resnext50_32x4d layer2"),
    (512, 512, 14, 3, 1, 32, "resnext50_32x4d layer3"),
    (1024, 1024, 7, 3, 1, 32, "resnext50_32x4d layer4"),
]

# Linears: (k, n, seq, source). m = batch x seq.
TRANSFORMER_LINEAR = [
    (768, 2304, 128, "bert_base qkv (fused)"),
    (768, 768, 128, "bert_base attention out"),
    (768, 3072, 128, "bert_base mlp fc1"),
    (3072, 768, 128, "bert_base mlp fc2"),
    (768, 2304, 197, "vit_b_16 qkv"),
    (768, 3072, 197, "vit_b_16 mlp fc1"),
    (3072, 768, 197, "vit_b_16 mlp fc2"),
    (1024, 4096, 197, "vit_l_16 mlp fc1"),
    (768, 2304, 1024, "gpt2 c_attn (prefill 1024)"),
    (3072, 768, 1024, "gpt2 mlp c_proj (prefill 1024)"),
    (768, 50257, 128, "gpt2 lm_head (128 tokens)"),
]

# Matrix-vector products at batch 1 (skinny GEMMs at larger batches).
VECTOR_LINEAR = [
    (2048, 1000, 1, "resnet50 fc"),
    (512, 1000, 1, "resnet18 fc"),
    (1280, 1000, 1, "mobilenet_v2 / efficientnet_b0 classifier"),
    (25088, 4096, 1, "vgg16 classifier fc1"),
    (4096, 4096, 1, "vgg16 classifier fc2"),
    (768, 2304, 1, "gpt2 c_attn (decode step)"),
    (768, 3072, 1, "gpt2 mlp c_fc (decode step)"),
    (3072, 768, 1, "gpt2 mlp c_proj (decode step)"),
    (768, 50257, 1, "gpt2 lm_head (decode step)"),
    (4096, 11008, 1, "llama-7b mlp up (decode step)"),
]

# Square products: peak matrix throughput per precision.
SQUARE_SIZES_CPU = [128, 256, 512, 1024, 2048]
SQUARE_SIZES_GPU = [256, 512, 1024, 2048, 4096, 8192]

# Attention: (seq, seq_kv, heads, head_dim, causal, source).
ATTENTION = [
    (128, 128, 12, 64, False, "bert_base"),
    (197, 197, 12, 64, False, "vit_b_16"),
    (197, 197, 16, 64, False, "vit_l_16"),
    (1024, 1024, 12, 64, True, "gpt2 prefill 1024"),
    (1, 1024, 12, 64, False, "gpt2 decode step, 1024 cached"),
    (2048, 2048, 32, 128, True, "llama-7b prefill 2048"),
]

# Squeeze-excitation: (c, squeeze, hw, act, gate, source).
SQUEEZE_EXCITATION = [
    (72, 24, 28, "relu", "hardsigmoid", "mobilenet_v3_large block4"),
    (120, 32, 28, "relu", "hardsigmoid", "mobilenet_v3_large block6"),
    (672, 168, 14, "relu", "hardsigmoid", "mobilenet_v3_large block12"),
    (960, 240, 7, "relu", "hardsigmoid", "mobilenet_v3_large block15"),
    (96, 4, 56, "silu", "sigmoid", "efficientnet_b0 stage2"),
    (240, 10, 28, "silu", "sigmoid", "efficientnet_b0 stage4"),
    (480, 20, 14, "silu", "sigmoid", "efficientnet_b0 stage5"),
    (1152, 48, 7, "silu", "sigmoid", "efficientnet_b0 stage7"),
    (440, 110, 7, "relu", "sigmoid", "regnet_y_400mf stage4"),
]

# The squeeze-excitation blocks' two FCs as plain linears (the tiny GEMVs on their own).
SE_LINEAR = [
    (672, 168, 1, "mobilenet_v3_large block12 se fc1"),
    (168, 672, 1, "mobilenet_v3_large block12 se fc2"),
    (96, 4, 1, "efficientnet_b0 stage2 se fc1"),
    (4, 96, 1, "efficientnet_b0 stage2 se fc2"),
    (1152, 48, 1, "efficientnet_b0 stage7 se fc1"),
    (48, 1152, 1, "efficientnet_b0 stage7 se fc2"),
]

# Normalizations.
BATCH_NORM = [(64, 112, "resnet stem bn"), (256, 56, "resnet50 layer1"),
              (512, 28, "resnet50 layer2"), (2048, 7, "resnet50 layer4"),
              (32, 112, "mobilenet_v2 stem bn"), (960, 7, "mobilenet_v2 block15")]
LAYER_NORM = [(128, 768, "bert_base"), (197, 768, "vit_b_16"), (1024, 768, "gpt2 prefill"),
              (1, 768, "gpt2 decode step"), (197, 1024, "vit_l_16")]

# Pooling (pooling includes softmax and reductions, as the partitioner classes them).
MAX_POOL = [(64, 112, 3, 2, 1, "resnet stem maxpool"), (64, 224, 2, 2, 0, "vgg16 pool1"),
            (512, 28, 2, 2, 0, "vgg16 pool4")]
GLOBAL_AVG_POOL = [(2048, 7, "resnet50 head"), (512, 7, "resnet18 head"),
                   (1280, 7, "mobilenet_v2 head"), (960, 7, "mobilenet_v3_large head")]
SOFTMAX = [(12 * 128, 128, "bert_base attention scores"), (12 * 197, 197, "vit_b_16 scores"),
           (12 * 1024, 1024, "gpt2 prefill scores"), (1, 1000, "imagenet logits")]

# Elementwise work from real layers: (ops, numel per item, source).
ELEMENTWISE_MODEL = [
    (["add"], 256 * 56 * 56, "resnet50 layer1 residual add"),
    (["add", "relu"], 256 * 56 * 56, "resnet50 layer1 residual add + relu"),
    (["add"], 2048 * 7 * 7, "resnet50 layer4 residual add"),
    (["relu"], 64 * 112 * 112, "resnet stem relu"),
    (["add"], 197 * 768, "vit_b_16 residual add"),
    (["gelu"], 197 * 3072, "vit_b_16 mlp gelu"),
    (["add", "gelu"], 128 * 3072, "bert_base fc1 bias + gelu"),
    (["silu"], 96 * 112 * 112, "efficientnet_b0 stage2 silu"),
    (["hardswish"], 16 * 112 * 112, "mobilenet_v3_large stem hardswish"),
    (["sigmoid", "mul"], 32 * 112 * 112, "silu as sigmoid + mul"),
]
# Chains of n identical adds: the per-kernel cost of an unfused chain.
CHAIN_LENGTHS = [1, 2, 4, 8]
CHAIN_NUMEL = 256 * 56 * 56
# Bandwidth sweep of a two-operand add: 1 element to far past the last-level cache.
ADD_SWEEP_CPU = [2 ** e for e in range(0, 25, 2)]
# The CPU sweep reaches past 4x the last-level cache (a DRAM rate, not a cache one), within this.
CPU_SWEEP_MAX_BYTES = 4e9


def cpu_add_sweep(llc_bytes):
    """The CPU bandwidth sweep's sizes: ADD_SWEEP_CPU, then powers of 4 until a float32 add (12
    bytes an element) moves 4x the last-level cache of `llc_bytes` (0: unknown)."""
    sizes = list(ADD_SWEEP_CPU)
    while llc_bytes and 12 * sizes[-1] < 4 * llc_bytes and 12 * sizes[-1] * 4 <= CPU_SWEEP_MAX_BYTES:
        sizes.append(sizes[-1] * 4)
    return sizes
ADD_SWEEP_GPU = [2 ** e for e in range(0, 29, 2)]

DISPATCH_NAMES = ["add", "add_scalar", "mul", "relu", "sigmoid", "gelu", "linear", "matmul",
                  "conv2d", "conv2d_depthwise", "batch_norm", "layer_norm", "softmax",
                  "max_pool2d", "global_avg_pool", "view", "transpose_contiguous", "cat"]

CLASSES = ["conv", "depthwise_conv", "grouped_conv", "gemm", "gemv", "attention",
           "normalization", "pooling", "elementwise", "squeeze_excitation", "dispatch"]


# ------------------------------------------------------------------ case construction


def _case(op_class, name, builder, params, batch, precision, **extra):
    c = {"op_class": op_class, "name": name, "builder": builder, "params": params,
         "batch": batch, "precision": precision}
    c.update(extra)
    return c


def conv_class(cin, groups):
    if groups == 1:
        return "conv"
    return "depthwise_conv" if groups == cin else "grouped_conv"


def conv_cases(catalog):
    for cin, cout, hw, k, stride, groups, source in catalog:
        params = {"cin": cin, "cout": cout, "hw": hw, "k": k, "stride": stride,
                  "groups": groups, "source": source}
        yield conv_class(cin, groups), "conv2d", "conv2d", params


def linear_cases(catalog):
    for k, n, seq, source in catalog:
        yield "linear", "linear", {"k": k, "n": n, "seq": seq, "bias": True, "source": source}


def matmul_class(params, batch):
    # The partitioner's rule (is_matrix_vector): a product with one output row is a GEMV.
    m = params.get("m", batch * params.get("seq", 1))
    return "gemv" if m == 1 or params.get("n") == 1 else "gemm"


def attention_params(entry, impl):
    seq, skv, heads, d, causal, source = entry
    return {"seq": seq, "seq_kv": skv, "heads": heads, "head_dim": d, "causal": causal,
            "impl": impl, "source": source}


def base_shapes(device, sdpa, llc_bytes=0):
    """Every (op_class or None, name, builder, params) of a pass, before batch and precision.

    op_class None means "decide from the batch" (linears: GEMV at one row, else GEMM).
    """
    for cls, name, builder, params in conv_cases(DENSE_CONV + POINTWISE_CONV + DEPTHWISE_CONV
                                                 + GROUPED_CONV):
        yield cls, name, builder, params
    for name, builder, params in linear_cases(TRANSFORMER_LINEAR + VECTOR_LINEAR + SE_LINEAR):
        yield None, name, builder, params
    for s in (SQUARE_SIZES_GPU if device == "cuda" else SQUARE_SIZES_CPU):
        yield "gemm", "matmul", "matmul", {"m": s, "n": s, "k": s, "source": "square"}
    for entry in ATTENTION:
        yield "attention", "attention", "attention", attention_params(entry, "math")
        if sdpa:
            yield "attention", "attention", "attention", attention_params(entry, "sdpa")
    for c, hw, source in BATCH_NORM:
        yield "normalization", "batch_norm", "batch_norm", {"c": c, "hw": hw, "source": source}
    for seq, d, source in LAYER_NORM:
        yield "normalization", "layer_norm", "layer_norm", {"seq": seq, "d": d, "source": source}
    for c, hw, k, stride, pad, source in MAX_POOL:
        yield "pooling", "max_pool2d", "max_pool2d", {"c": c, "hw": hw, "k": k,
                                                      "stride": stride, "pad": pad,
                                                      "source": source}
    for c, hw, source in GLOBAL_AVG_POOL:
        yield "pooling", "global_avg_pool", "global_avg_pool", {"c": c, "hw": hw,
                                                                "source": source}
    for rows, cols, source in SOFTMAX:
        yield "pooling", "softmax", "softmax", {"rows": rows, "cols": cols, "source": source}
    for ops, numel, source in ELEMENTWISE_MODEL:
        yield "elementwise", "+".join(ops), "elementwise", {"ops": ops, "numel": numel,
                                                            "source": source}
    for n in CHAIN_LENGTHS:
        yield "elementwise", "+".join(["add"] * n), "elementwise", {
            "ops": ["add"] * n, "numel": CHAIN_NUMEL, "source": f"chain of {n} adds"}
    for numel in (ADD_SWEEP_GPU if device == "cuda" else cpu_add_sweep(llc_bytes)):
        params = {"ops": ["add"], "numel": numel, "source": "bandwidth sweep"}
        if device != "cuda":
            # One output buffer for every call: a fresh one would be first-touched (page
            # faults) each call, which is not the DRAM rate a model's kernels see.
            params["reuse_output"] = True
        yield "elementwise", "add", "elementwise", params
    for c, sq, hw, act, gate, source in SQUEEZE_EXCITATION:
        yield "squeeze_excitation", "squeeze_excitation", "squeeze_excitation", {
            "c": c, "squeeze": sq, "hw": hw, "act": act, "gate": gate, "source": source}
    for op in DISPATCH_NAMES:
        yield "dispatch", op, "dispatch", {"op": op}


# ------------------------------------------------------------------ work estimates


def estimate_work(builder, p, batch):
    """(FLOPs, bytes at 4 bytes per element) of one call, cheaply, to size batches."""
    if builder == "conv2d":
        ho = (p["hw"] + 2 * (p["k"] // 2) - p["k"]) // p["stride"] + 1
        macs = batch * p["cout"] * ho * ho * p["cin"] // p["groups"] * p["k"] ** 2
        elems = batch * (p["cin"] * p["hw"] ** 2 + p["cout"] * ho * ho)
        elems += p["cout"] * p["cin"] // p["groups"] * p["k"] ** 2
        return 2 * macs, 4 * elems
    if builder == "linear":
        m = batch * p["seq"]
        return 2 * m * p["n"] * p["k"], 4 * (m * p["k"] + p["n"] * p["k"] + m * p["n"])
    if builder == "matmul":
        return 2 * batch * p["m"] * p["n"] * p["k"], 4 * 3 * batch * p["m"] * p["k"]
    if builder == "attention":
        scores = batch * p["heads"] * p["seq"] * p["seq_kv"]
        return 4 * scores * p["head_dim"], 4 * 3 * scores  # math impl materializes scores
    if builder == "batch_norm" or builder == "global_avg_pool" or builder == "max_pool2d":
        n = batch * p["c"] * p["hw"] ** 2
        return 2 * n, 8 * n
    if builder == "layer_norm":
        n = batch * p["seq"] * p["d"]
        return 7 * n, 8 * n
    if builder == "softmax":
        n = batch * p["rows"] * p["cols"]
        return 5 * n, 8 * n
    if builder == "elementwise":
        n = batch * p["numel"]
        return n * len(p["ops"]), 12 * n * len(p["ops"])
    if builder == "squeeze_excitation":
        n = batch * p["c"] * p["hw"] ** 2
        return 2 * n, 8 * n
    return 0, 0


# ------------------------------------------------------------------ plans

# CPU: a batch is measured when one call stays under these (about 0.1-0.2 s on a small CPU),
# so that big shapes (VGG, GPT-2 prefill) run at batch 1 only and the pass keeps its budget.
CPU_MAX_FLOPS = 4e9
CPU_MAX_BYTES = 400e6
# bf16 on a CPU without native bf16 arithmetic (AVX2) runs through conversions: a subset of
# batch-1 shapes, kept small.
CPU_BF16_MAX_FLOPS = 1.5e9
CPU_BF16_CLASSES = {"conv", "depthwise_conv", "grouped_conv", "gemm", "gemv", "attention",
                    "normalization", "elementwise"}
# Shapes measured at every thread count, for the thread scaling and fork/join fit.
THREAD_SWEEP_SOURCES = {
    "resnet18 layer1", "resnet18 layer4", "resnet50 layer1 conv1", "resnet50 layer4 conv1",
    "mobilenet_v2 block3", "mobilenet_v2 block15", "efficientnet_b0 stage4",
    "regnet_y_400mf stage1 (group width 8)", "resnext50_32x4d layer3",
    "bert_base mlp fc1", "vit_b_16 qkv", "resnet50 fc", "gpt2 mlp c_fc (decode step)",
    "efficientnet_b0 stage7 se fc1", "square", "bert_base", "gpt2 decode step, 1024 cached",
    "resnet50 layer4", "vit_b_16", "resnet stem maxpool", "resnet50 head",
    "bert_base attention scores", "resnet50 layer1 residual add", "vit_b_16 mlp gelu",
    "bandwidth sweep", "efficientnet_b0 stage5", "mobilenet_v3_large block15",
}
THREAD_SWEEP_DISPATCH = {"add", "linear", "conv2d", "layer_norm", "softmax"}
# Cases that also get an energy run (a child process under `nnergy measure`): a few large,
# representative calls per class, long enough for a counter to resolve.
ENERGY_SOURCES = {
    "resnet18 layer1", "vgg16 conv4_2", "resnet50 layer1 conv1", "mobilenet_v2 block3",
    "efficientnet_b0 stage6", "regnet_y_1_6gf stage3 (group width 24)", "resnext50_32x4d layer2",
    "bert_base mlp fc1", "gpt2 lm_head (decode step)", "vgg16 classifier fc1",
    "efficientnet_b0 stage7 se fc1", "vit_b_16", "gpt2 prefill 1024", "resnet50 layer1",
    "resnet stem maxpool", "vit_b_16 mlp gelu", "mobilenet_v3_large block12",
}


# Shapes whose batch-1 call exceeds this are left to GPUs (a 7B model's 2048-token attention).
CPU_SKIP_FLOPS = 20e9


def _cpu_batches(builder, params):
    if estimate_work(builder, params, 1)[0] > CPU_SKIP_FLOPS:
        return []
    out = [1]
    flops, moved = estimate_work(builder, params, 8)
    if builder not in ("dispatch", "matmul") and params.get("source") != "bandwidth sweep" \
            and flops <= CPU_MAX_FLOPS and moved <= CPU_MAX_BYTES:
        out.append(8)
    return out


def cpu_plan(threads_list, classes, sdpa, main_threads=None, llc_bytes=0):
    """Main pass at `main_threads` (default the largest count); the thread sweep at the others."""
    main_threads = main_threads or max(threads_list)
    cases = []
    for cls, name, builder, params in base_shapes("cpu", sdpa, llc_bytes):
        for batch in _cpu_batches(builder, params):
            op_class = cls or matmul_class(params, batch)
            if op_class not in classes:
                continue
            precisions = ["fp32"]
            flops, _ = estimate_work(builder, params, batch)
            if (op_class in CPU_BF16_CLASSES and batch == 1 and flops <= CPU_BF16_MAX_FLOPS
                    and params.get("source") != "bandwidth sweep"
                    and not params.get("source", "").startswith("chain")):
                precisions.append("bf16")
            sweep = (params.get("op") in THREAD_SWEEP_DISPATCH if op_class == "dispatch"
                     else params.get("source") in THREAD_SWEEP_SOURCES) and batch == 1
            for precision in precisions:
                thread_counts = [main_threads]
                if sweep and precision == "fp32":
                    thread_counts += [t for t in threads_list if t != main_threads]
                for t in thread_counts:
                    cases.append(_case(op_class, name, builder, params, batch, precision,
                                       mode="eager", threads=t,
                                       energy=(params.get("source") in ENERGY_SOURCES
                                               and t == main_threads and precision == "fp32"
                                               and batch == _cpu_batches(builder, params)[-1])))
    return cases


# GPU: every shape at batch 1, 8 and 64 unless one call would move more than this.
GPU_MAX_BYTES = 8e9
GPU_MATRIX_PRECISIONS = ["fp32", "tf32", "fp16", "bf16"]
GPU_OTHER_PRECISIONS = ["fp32", "fp16", "bf16"]
GPU_MATRIX_CLASSES = {"conv", "depthwise_conv", "grouped_conv", "gemm", "gemv", "attention"}


def gpu_plan(classes, sdpa):
    cases = []
    for cls, name, builder, params in base_shapes("cuda", sdpa):
        batches = [1] if builder in ("dispatch", "matmul") or \
            params.get("source") == "bandwidth sweep" else [1, 8, 64]
        for batch in batches:
            if estimate_work(builder, params, batch)[1] > GPU_MAX_BYTES:
                continue
            op_class = cls or matmul_class(params, batch)
            if op_class not in classes:
                continue
            if op_class == "dispatch":
                precisions = ["fp32"]
            elif op_class in GPU_MATRIX_CLASSES:
                precisions = GPU_MATRIX_PRECISIONS
            else:
                precisions = GPU_OTHER_PRECISIONS
            # A CUDA graph removes the host's dispatch, which matters at small work: graphs
            # at batch 1, eager everywhere. A view launches no kernel, so has no graph.
            modes = ["eager", "cuda_graph"] if batch == 1 and params.get("op") != "view" \
                else ["eager"]
            for precision in precisions:
                for mode in modes:
                    cases.append(_case(op_class, name, builder, params, batch, precision,
                                       mode=mode, threads=None,
                                       energy=(params.get("source") in ENERGY_SOURCES
                                               and mode == "eager" and batch == 64
                                               and precision in ("fp16", "tf32"))))
    if "gemm" in classes:
        cases += occupancy_sweep()
    return cases


# Busy-SM power: square GEMMs of s x s output tiles of 128 x 128 with a long reduction, so that
# each runs long on about s^2 SMs. Energy at each size separates the power of busy SMs from
# the per-FLOP energy, which GEMMs that fill the GPU cannot (docs/hardware.md, "Energy").
OCCUPANCY_TILES = (1, 2, 4, 8, 11)
OCCUPANCY_K = 65536


def occupancy_sweep():
    cases = []
    for s in OCCUPANCY_TILES:
        params = {"m": 128 * s, "n": 128 * s, "k": OCCUPANCY_K,
                  "source": "occupancy sweep (%d tiles of 128 x 128)" % (s * s)}
        for precision in ("fp16", "tf32"):
            cases.append(_case("gemm", "matmul", "matmul", params, 1, precision, mode="eager",
                               threads=None, energy=True))
    return cases


def energy_only(cases):
    """The cases that carry an energy run, in plan order (--energy-only: the energy pass)."""
    return [c for c in cases if c["energy"]]


QUICK_SHAPES = {
    "conv": (64, 64, 14, 3, 1, 1, "quick"),
    "depthwise_conv": (64, 64, 14, 3, 1, 64, "quick"),
    "grouped_conv": (64, 64, 14, 3, 1, 8, "quick"),
}


def quick_plan(device, threads_list, classes, sdpa):
    """One small shape per class (and both thread counts on a CPU): a smoke test in seconds."""
    main_threads = max(threads_list) if device == "cpu" else None
    cases = []
    modes = ["eager"] if device == "cpu" else ["eager", "cuda_graph"]

    def add(op_class, name, builder, params, batch=1, precision="fp32", sweep=False,
            energy=False):
        if op_class not in classes:
            return
        thread_counts = [main_threads]
        if sweep and device == "cpu":
            thread_counts += [t for t in threads_list if t != main_threads]
        for mode in modes:
            if mode == "cuda_graph" and params.get("op") == "view":
                continue  # no kernel to capture
            for t in thread_counts:
                cases.append(_case(op_class, name, builder, params, batch, precision,
                                   mode=mode, threads=t,
                                   energy=energy and t == main_threads and mode == "eager"))

    for cls, entry in QUICK_SHAPES.items():
        _, name, builder, params = next(conv_cases([entry]))
        add(cls, name, builder, params, sweep=cls == "conv")
    add("conv", "conv2d", "conv2d", dict(next(conv_cases([(64, 128, 14, 1, 1, 1, "quick")]))[3]),
        batch=2)
    add("gemm", "linear", "linear", {"k": 256, "n": 256, "seq": 16, "bias": True,
                                     "source": "quick"}, sweep=True, energy=True)
    add("gemm", "linear", "linear", {"k": 256, "n": 256, "seq": 16, "bias": True,
                                     "source": "quick"}, precision="bf16")
    add("gemv", "linear", "linear", {"k": 256, "n": 256, "seq": 1, "bias": True,
                                     "source": "quick"})
    add("gemm", "matmul", "matmul", {"m": 128, "n": 128, "k": 128, "source": "square"})
    add("attention", "attention", "attention",
        attention_params((32, 32, 2, 16, True, "quick"), "math"))
    add("normalization", "layer_norm", "layer_norm", {"seq": 16, "d": 64, "source": "quick"})
    add("normalization", "batch_norm", "batch_norm", {"c": 16, "hw": 14, "source": "quick"})
    add("pooling", "max_pool2d", "max_pool2d", {"c": 16, "hw": 14, "k": 3, "stride": 2,
                                                "pad": 1, "source": "quick"})
    add("pooling", "softmax", "softmax", {"rows": 16, "cols": 64, "source": "quick"})
    add("elementwise", "add+relu", "elementwise", {"ops": ["add", "relu"], "numel": 4096,
                                                   "source": "quick"}, sweep=True)
    add("squeeze_excitation", "squeeze_excitation", "squeeze_excitation",
        {"c": 32, "squeeze": 8, "hw": 7, "act": "silu", "gate": "sigmoid", "source": "quick"})
    add("dispatch", "add", "dispatch", {"op": "add"}, sweep=True)
    add("dispatch", "conv2d", "dispatch", {"op": "conv2d"})
    add("dispatch", "view", "dispatch", {"op": "view"})
    return cases


def spread(cases):
    """The same cases reordered so that any prefix samples every class evenly: classes take
    turns, and each class's runs are visited in a low-discrepancy order (golden-ratio stride)
    across its shapes, batches and precisions. A pass cut short by --max-minutes then holds
    some runs of every class instead of all of the first few classes."""
    golden = 0.6180339887498949
    by_class = {}
    for c in cases:
        by_class.setdefault(c["op_class"], []).append(c)
    queues = []
    for runs in by_class.values():
        order = sorted(range(len(runs)), key=lambda i: (i * golden) % 1.0)
        queues.append([runs[i] for i in order])
    out = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out

