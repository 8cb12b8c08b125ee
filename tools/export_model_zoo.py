#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Exports the model zoo fixtures the ONNX frontend tests read (tests/data/onnx/zoo/).

Needs Debian's python3-torch, python3-torchvision and python3-onnx (torch 1.13, torchvision 0.14,
onnx 1.12). Run from anywhere; the .onnx files are committed, so the build never runs this script.

Every model gets random, untrained weights (nothing is downloaded) and is exported in eval mode at
opset 17 with constant folding and a dynamic `batch` axis on its input and output; BatchNorm stays
a node of its own, so the graph holds exactly the model's parameters. The weights are then moved
to external data and the data file is deleted: the frontend only reads shapes and dtypes, and this
keeps each fixture at tens to hundreds of kilobytes. Initializers under EMBED_THRESHOLD bytes stay
inside the file, as do the Constant nodes (the int64 shapes of Reshape, Slice, ...).

Models:
  torchvision: resnet18, resnet50, mobilenet_v2, mobilenet_v3_small, efficientnet_b0, vit_b_16,
               alexnet, googlenet (without aux classifiers, as torchvision's published counts),
               input float [batch, 3, 224, 224].
  bert_encoder: BERT-style encoder, L=4 post-LayerNorm layers, hidden H=256, 4 heads, FFN F=1024,
               GELU, token embedding vocab V=1000 plus a learned position embedding for P=128
               positions and an embedding LayerNorm; input int64 token ids [batch, seq], output
               float [batch, seq, H].
  transformer_24l: the bert_encoder architecture at BERT-large size: L=24 layers, H=1024, 16 heads,
               F=4096, V=30522, P=512; same input and output.
  gpt_block:   one GPT-style decoder block, pre-LayerNorm, causal self-attention, H=512, 8 heads,
               F=2048, GELU; input and output float [batch, seq, H].
  bert_base:   HuggingFace's BertModel(BertConfig()), module for module and with its parameter
               names: L=12 layers, H=768, 12 heads, F=3072, GELU (erf), V=30522, P=512, T=2 token
               types, LayerNorm eps 1e-12, and the pooler (dense H->H and tanh on the first token);
               input int64 token ids [batch, seq] (token types all 0, positions 0..seq-1, no
               attention mask), outputs float last_hidden_state [batch, seq, H] and pooler_output
               [batch, H].

Hand counts of the transformer models (B = batch, S = seq; MACs of Linear and MatMul only, so
embedding lookups, LayerNorm, softmax, the attention scale, GELU and residual adds count nothing):
  one attention + FFN layer (q, k, v, out projections with bias; two LayerNorms):
    params = 4*(H*H + H) + (H*F + F) + (F*H + H) + 2*2*H = 4*H*H + 2*H*F + F + 9*H
    MACs   = B * (4*S*H*H        # q, k, v, out projections
                  + 2*S*S*H      # Q @ K^T and probs @ V over all heads
                  + 2*S*H*F)     # the two FFN Linears
  bert_encoder: params = V*H + P*H + 2*H + L*(4*H*H + 2*H*F + F + 9*H) = 3,448,320
                MACs   = L*B*(4*S*H*H + 2*S*S*H + 2*S*H*F)  = 436,207,616 at B=1, S=128
  transformer_24l: the bert_encoder formulas with L=24, H=1024, F=4096, V=30522, P=512:
                params = V*H + P*H + 2*H + L*(4*H*H + 2*H*F + F + 9*H) = 334,090,240
                MACs   = L*B*(4*S*H*H + 2*S*S*H + 2*S*H*F)  = 39,460,012,032 at B=1, S=128
  gpt_block:    params = 4*H*H + 2*H*F + F + 9*H            = 3,152,384
                MACs   = B*(4*S*H*H + 2*S*S*H + 2*S*H*F)    = 419,430,400 at B=1, S=128
  bert_base:    the bert_encoder formulas with L=12, H=768, F=3072, V=30522, P=512, plus T*H for
                the token type embedding and H*H + H for the pooler (whose Gemm on the first token
                adds B*H*H MACs):
                params = V*H + P*H + T*H + 2*H + L*(4*H*H + 2*H*F + F + 9*H) + H*H + H
                       = 109,482,240 (what HuggingFace reports for BertModel(BertConfig()))
                MACs   = L*B*(4*S*H*H + 2*S*S*H + 2*S*H*F) + B*H*H
                       = 11,174,215,680 at B=1, S=128; 89,393,725,440 at B=8, S=128

--heldout exports instead the held-out torchvision models measured on the H100
(tests/data/measurements/h100-heldout-models.json): efficientnet_b0, mobilenet_v3_large,
regnet_y_400mf, resnext50_32x4d, convnext_tiny, densenet121, into tests/data/onnx/heldout/, in
the same way (BatchNormalization kept, as PyTorch runs it: the measurements timed the modules, not
a folded graph), and checks each model's parameter count against the one the measurement file
records.

For each model the script prints the parameter count of the torch module and the Conv/Gemm/MatMul
MACs of the exported graph at batch 1 (seq 128), counted from a static-shape export; with
--reference it also compares the torchvision models against a TOML file of
[model] num_params = ..., gmacs = ... tables.
"""
import argparse
import io
import itertools
import math
import os
import sys
import warnings

import onnx
import torch
import torchvision
from onnx import external_data_helper, shape_inference
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "onnx", "zoo")
OPSET = 17
EMBED_THRESHOLD = 1024  # bytes; smaller tensors stay in the .onnx file
SEQ = 128  # sequence length the MACs are reported at


class SelfAttention(nn.Module):
    # Written out with Linear and matmul (not nn.MultiheadAttention) so the graph has plain MatMul
    # nodes whose MACs match the hand formulas above.
    def __init__(self, hidden, heads, causal):
        super().__init__()
        self.heads, self.head_dim, self.causal = heads, hidden // heads, causal
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)

    def split_heads(self, t):
        # [B, S, H] -> [B, heads, S, head_dim]
        return t.reshape(t.shape[0], t.shape[1], self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        q, k, v = self.split_heads(self.q(x)), self.split_heads(self.k(x)), self.split_heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        if self.causal:
            # Built from the runtime length so `seq` stays dynamic (no max-length mask buffer).
            pos = torch.arange(x.shape[1], device=x.device)
            scores = scores.masked_fill(pos.unsqueeze(0) > pos.unsqueeze(1), float("-inf"))
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.out(ctx.transpose(1, 2).reshape(x.shape[0], x.shape[1], x.shape[2]))


def feed_forward(hidden, ffn):
    return nn.Sequential(nn.Linear(hidden, ffn), nn.GELU(), nn.Linear(ffn, hidden))


class BertLayer(nn.Module):
    # Post-LayerNorm, as in the original BERT.
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attn = SelfAttention(hidden, heads, causal=False)
        self.ln1 = nn.LayerNorm(hidden)
        self.ffn = feed_forward(hidden, ffn)
        self.ln2 = nn.LayerNorm(hidden)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.ffn(x))


class BertEncoder(nn.Module):
    LAYERS, HIDDEN, HEADS, FFN, VOCAB, MAX_POS = 4, 256, 4, 1024, 1000, 128

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(self.VOCAB, self.HIDDEN)
        self.pos = nn.Embedding(self.MAX_POS, self.HIDDEN)
        self.ln = nn.LayerNorm(self.HIDDEN)
        self.layers = nn.ModuleList(
            BertLayer(self.HIDDEN, self.HEADS, self.FFN) for _ in range(self.LAYERS))

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.ln(self.tok(ids) + self.pos(pos))
        for layer in self.layers:
            x = layer(x)
        return x

    @classmethod
    def hand_counts(cls, b, s):
        h, f, n = cls.HIDDEN, cls.FFN, cls.LAYERS
        params = cls.VOCAB * h + cls.MAX_POS * h + 2 * h + n * (4 * h * h + 2 * h * f + f + 9 * h)
        macs = n * b * (4 * s * h * h + 2 * s * s * h + 2 * s * h * f)
        return params, macs


class Transformer24L(BertEncoder):
    # BERT-large size (without BERT's token type embedding and pooler, as bert_encoder).
    LAYERS, HIDDEN, HEADS, FFN, VOCAB, MAX_POS = 24, 1024, 16, 4096, 30522, 512


class GptBlock(nn.Module):
    # Pre-LayerNorm, as in GPT-2.
    HIDDEN, HEADS, FFN = 512, 8, 2048

    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(self.HIDDEN)
        self.attn = SelfAttention(self.HIDDEN, self.HEADS, causal=True)
        self.ln2 = nn.LayerNorm(self.HIDDEN)
        self.ffn = feed_forward(self.HIDDEN, self.FFN)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))

    @classmethod
    def hand_counts(cls, b, s):
        h, f = cls.HIDDEN, cls.FFN
        params = 4 * h * h + 2 * h * f + f + 9 * h
        macs = b * (4 * s * h * h + 2 * s * s * h + 2 * s * h * f)
        return params, macs


class BertBase(nn.Module):
    # HuggingFace's BertModel(BertConfig()) in eval mode (dropout is the identity), its modules
    # nested and named as there, so the parameter names (and a state dict) are HF's. Token types
    # are all 0 and positions 0..seq-1, both built from the input's runtime shape.
    LAYERS, HIDDEN, HEADS, FFN, VOCAB, MAX_POS, TYPES, EPS = 12, 768, 12, 3072, 30522, 512, 2, 1e-12

    def __init__(self):
        super().__init__()
        h, f, eps = self.HIDDEN, self.FFN, self.EPS
        self.embeddings = nn.ModuleDict({
            "word_embeddings": nn.Embedding(self.VOCAB, h),
            "position_embeddings": nn.Embedding(self.MAX_POS, h),
            "token_type_embeddings": nn.Embedding(self.TYPES, h),
            "LayerNorm": nn.LayerNorm(h, eps=eps)})
        self.encoder = nn.ModuleDict({"layer": nn.ModuleList(nn.ModuleDict({
            "attention": nn.ModuleDict({
                "self": nn.ModuleDict({n: nn.Linear(h, h) for n in ("query", "key", "value")}),
                "output": nn.ModuleDict({"dense": nn.Linear(h, h),
                                         "LayerNorm": nn.LayerNorm(h, eps=eps)})}),
            "intermediate": nn.ModuleDict({"dense": nn.Linear(h, f)}),
            "output": nn.ModuleDict({"dense": nn.Linear(f, h),
                                     "LayerNorm": nn.LayerNorm(h, eps=eps)}),
        }) for _ in range(self.LAYERS))})
        self.pooler = nn.ModuleDict({"dense": nn.Linear(h, h)})

    def split_heads(self, t):
        # [B, S, H] -> [B, heads, S, head_dim]
        return t.reshape(t.shape[0], t.shape[1], self.HEADS, -1).transpose(1, 2)

    def layer(self, m, x):
        qkv = m["attention"]["self"]
        q, k, v = (self.split_heads(qkv[n](x)) for n in ("query", "key", "value"))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.HIDDEN // self.HEADS)
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(x.shape)
        out = m["attention"]["output"]
        x = out["LayerNorm"](out["dense"](ctx) + x)
        ffn = nn.functional.gelu(m["intermediate"]["dense"](x))
        return m["output"]["LayerNorm"](m["output"]["dense"](ffn) + x)

    def forward(self, ids):
        e = self.embeddings
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = (e["word_embeddings"](ids) + e["token_type_embeddings"](torch.zeros_like(ids))
             + e["position_embeddings"](pos))
        x = e["LayerNorm"](x)
        for m in self.encoder["layer"]:
            x = self.layer(m, x)
        return x, torch.tanh(self.pooler["dense"](x[:, 0]))

    @classmethod
    def hand_counts(cls, b, s):
        h, f, n = cls.HIDDEN, cls.FFN, cls.LAYERS
        params = ((cls.VOCAB + cls.MAX_POS + cls.TYPES) * h + 2 * h
                  + n * (4 * h * h + 2 * h * f + f + 9 * h) + h * h + h)
        macs = n * b * (4 * s * h * h + 2 * s * s * h + 2 * s * h * f) + b * h * h
        return params, macs


def image_model(build):
    return (build, lambda: torch.randn(1, 3, 224, 224), "input", {0: "batch"})


def torchvision_model(name, **options):
    """torchvision's `name` with random weights, as an image model."""
    return image_model(lambda: getattr(torchvision.models, name)(weights=None, **options))


MODELS = {
    **{name: torchvision_model(name) for name in ("resnet18", "resnet50", "mobilenet_v2",
                                                   "mobilenet_v3_small", "efficientnet_b0",
                                                   "vit_b_16", "alexnet")},
    # init_weights=False: the default init draws truncated normals through scipy, slowly, and the
    # weights are discarded anyway.
    "googlenet": torchvision_model("googlenet", aux_logits=False, init_weights=False),
    "bert_encoder": (BertEncoder, lambda: torch.randint(0, BertEncoder.VOCAB, (1, SEQ)),
                     "input_ids", {0: "batch", 1: "seq"}),
    "transformer_24l": (Transformer24L, lambda: torch.randint(0, Transformer24L.VOCAB, (1, SEQ)),
                        "input_ids", {0: "batch", 1: "seq"}),
    "gpt_block": (GptBlock, lambda: torch.randn(1, SEQ, GptBlock.HIDDEN), "input",
                  {0: "batch", 1: "seq"}),
    "bert_base": (BertBase, lambda: torch.randint(0, BertBase.VOCAB, (1, SEQ)), "input_ids",
                  {0: "batch", 1: "seq"}),
}
# The held-out models (--heldout): measured on the H100, never part of any fit.
HELDOUT = {name: torchvision_model(name) for name in (
    "efficientnet_b0", "mobilenet_v3_large", "regnet_y_400mf", "resnext50_32x4d", "convnext_tiny",
    "densenet121")}
HELDOUT_OUT = os.path.join(ROOT, "tests", "data", "onnx", "heldout")
HELDOUT_MEASUREMENTS = os.path.join(ROOT, "tests", "data", "measurements",
                                    "h100-heldout-models.json")
HAND_COUNTS = {"bert_encoder": BertEncoder.hand_counts, "gpt_block": GptBlock.hand_counts,
               "transformer_24l": Transformer24L.hand_counts, "bert_base": BertBase.hand_counts}
# Models with more than one output: their names and dynamic axes (the others have one, "output",
# with the input's dynamic axes).
OUTPUTS = {"bert_base": {"last_hidden_state": {0: "batch", 1: "seq"},
                         "pooler_output": {0: "batch"}}}


def make_distinct(model):
    # Default inits leave many tensors equal (BatchNorm and LayerNorm ones and zeros, zeroed
    # biases). The exporter merges equal initializers, and the graph would then hold fewer
    # parameters than the model; a little noise keeps every tensor its own initializer.
    with torch.no_grad():
        for t in itertools.chain(model.parameters(), model.buffers()):
            if t.is_floating_point():
                t.add_(torch.rand_like(t) * 1e-3)


def export(model, example, input_name, axes, outputs=None):
    # axes: the input's dynamic axes; None exports static shapes. outputs: each output's name and
    # dynamic axes (default: one "output" with the input's axes).
    # TrainingMode.PRESERVE (the model is in eval mode) keeps BatchNormalization nodes: EVAL would
    # fold them into the preceding Conv, replacing BatchNorm's scale and bias by a Conv bias, so
    # the graph's parameter count would no longer be the model's.
    outputs = outputs or {"output": axes}
    buf = io.BytesIO()
    with warnings.catch_warnings():
        # The constant folding advice is for models exported in training mode, not this one.
        warnings.filterwarnings("ignore", message="It is recommended that constant folding")
        torch.onnx.export(model, (example,), buf, opset_version=OPSET, do_constant_folding=True,
                          training=torch.onnx.TrainingMode.PRESERVE,
                          input_names=[input_name], output_names=list(outputs),
                          dynamic_axes=None if axes is None else {input_name: axes, **outputs})
    return onnx.load_from_string(buf.getvalue())


def graph_macs(model):
    """Conv, Gemm and MatMul MACs of a static-shape model, by op type."""
    model = shape_inference.infer_shapes(model)
    shapes = {}
    for vi in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[vi.name] = [d.dim_value for d in dims]
    for t in model.graph.initializer:
        shapes[t.name] = list(t.dims)
    macs = {}
    for node in model.graph.node:
        if node.op_type not in ("Conv", "Gemm", "MatMul"):
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        a, b, y = shapes[node.input[0]], shapes[node.input[1]], shapes[node.output[0]]
        if node.op_type == "Conv":
            n = math.prod(y) * (a[1] // attrs.get("group", 1)) * math.prod(b[2:])
        elif node.op_type == "Gemm":
            n = math.prod(y) * (a[0] if attrs.get("transA", 0) else a[1])
        else:
            n = math.prod(y) * a[-1]  # every output element is a dot product over A's last axis
        macs[node.op_type] = macs.get(node.op_type, 0) + n
    return macs


def strip_weights(model, name, out):
    # Saving with external data drops the bytes from the proto; the data file is then deleted.
    path = os.path.join(out, name + ".onnx")
    data = name + ".onnx.data"
    external_data_helper.convert_model_to_external_data(
        model, all_tensors_to_one_file=True, location=data, size_threshold=EMBED_THRESHOLD)
    onnx.save_model(model, path)
    os.remove(os.path.join(out, data))
    return path


def read_reference(path):
    import tomllib  # Python 3.11
    with open(path, "rb") as f:
        return tomllib.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="models to export (default: all)")
    parser.add_argument("--reference", help="TOML of torchvision num_params and gmacs to compare")
    parser.add_argument("--heldout", action="store_true",
                        help="export the held-out models into tests/data/onnx/heldout instead")
    args = parser.parse_args()
    models, out = (HELDOUT, HELDOUT_OUT) if args.heldout else (MODELS, OUT)
    names = args.models or list(models)
    unknown = [n for n in names if n not in models]
    if unknown:
        parser.error("unknown model(s): " + ", ".join(unknown))
    reference = read_reference(args.reference) if args.reference else {}
    if args.heldout:
        import json
        for run in json.load(open(HELDOUT_MEASUREMENTS))["runs"]:
            reference.setdefault(run["name"], {"num_params": run["params"]["parameters"]})

    os.makedirs(out, exist_ok=True)
    failures = []
    print(f"{'model':20} {'params':>12} {'GMACs':>9} {'ref params':>12} {'ref GMACs':>9}  file")
    for name in names:
        build, make_input, input_name, axes = models[name]
        torch.manual_seed(0)
        model = build().eval()
        make_distinct(model)
        example = make_input()
        params = sum(p.numel() for p in model.parameters())
        # Not under torch.no_grad(): with grad disabled, nn.MultiheadAttention (vit_b_16) takes
        # its fused fast path, which has no ONNX export.
        outputs = OUTPUTS.get(name)
        macs = graph_macs(export(model, example, input_name, None, outputs))
        dynamic = export(model, example, input_name, axes, outputs)
        onnx.checker.check_model(dynamic)
        path = strip_weights(dynamic, name, out)
        total = sum(macs.values())

        ref_params, ref_gmacs = "", ""
        if name in HAND_COUNTS:
            ref_params, ref_macs = HAND_COUNTS[name](1, SEQ)
            ref_gmacs = f"{ref_macs / 1e9:.6f}"
            if (params, total) != (ref_params, ref_macs):
                failures.append(f"{name}: params {params} MACs {total} != hand formulas "
                                f"{ref_params} {ref_macs}")
        elif name in reference:
            ref_params, ref_gmacs = reference[name]["num_params"], reference[name].get("gmacs", "")
            if params != ref_params:
                failures.append(f"{name}: params {params} != reference {ref_params}")
            if ref_gmacs != "" and round(total / 1e9, 3) != ref_gmacs:
                failures.append(f"{name}: GMACs {total / 1e9:.3f} != reference {ref_gmacs}")
        by_op = ", ".join(f"{op} {n}" for op, n in sorted(macs.items()))
        print(f"{name:20} {params:12} {total / 1e9:9.6f} {ref_params:>12} {ref_gmacs:>9}  "
              f"{os.path.relpath(path, ROOT)} ({os.path.getsize(path) // 1024} KiB; {by_op})")
    for f in failures:
        print("MISMATCH " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
