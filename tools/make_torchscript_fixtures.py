#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the TorchScript test fixtures and their ONNX twins (tests/integration, torchscript):
each model traced (torch.jit.trace) and scripted (torch.jit.script) to .pt, exported to .onnx
from the same module without constant folding (the exporter's BatchNorm folding would change
the parameter count), and a manifest.json with PyTorch's own parameter count
(sum(p.numel() for p in model.parameters())) and each input's shape.

Uses Debian's python3-torch and python3-torchvision; random weights, so nothing is downloaded.
The files are written at test time (the weights would be too large to commit).

usage: tools/make_torchscript_fixtures.py OUTDIR [--models a,b,...] [--traced-only]

`--models resnet50 --traced-only` writes the archive CI times (`nnergy bench --startup`): a
100 MB traced ResNet-50, no scripted copy and no ONNX twin.
"""
import argparse
import json
import math
import os
import sys

import torch
from torch import nn


class TinyEncoder(nn.Module):
    """A BERT-like encoder: token, position (arange over the sequence, on the input's device)
    and token-type (zeros_like) embeddings, multi-head self-attention written out (view,
    permute, transpose, matmul, softmax), GELU feed-forward, layer norms, a pooled head."""

    def __init__(self, vocab=1000, width=64, heads=4, layers=2, classes=10, positions=64):
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Embedding(positions, width)
        self.token_type = nn.Embedding(2, width)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "qkv": nn.Linear(width, 3 * width), "proj": nn.Linear(width, width),
                "norm1": nn.LayerNorm(width), "ff1": nn.Linear(width, 4 * width),
                "ff2": nn.Linear(4 * width, width), "norm2": nn.LayerNorm(width)}))
        self.head = nn.Linear(width, classes)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.embed(ids) + self.position(pos) + self.token_type(torch.zeros_like(ids))
        b, s, w = x.shape
        for blk in self.blocks:
            q, k, v = blk["qkv"](x).chunk(3, dim=-1)
            q = q.view(b, s, self.heads, w // self.heads).permute(0, 2, 1, 3)
            k = k.view(b, s, self.heads, w // self.heads).permute(0, 2, 1, 3)
            v = v.view(b, s, self.heads, w // self.heads).permute(0, 2, 1, 3)
            att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(w // self.heads), dim=-1)
            y = (att @ v).permute(0, 2, 1, 3).reshape(b, s, w)
            x = blk["norm1"](x + blk["proj"](y))
            x = blk["norm2"](x + blk["ff2"](nn.functional.gelu(blk["ff1"](x))))
        return self.head(x.mean(dim=1))


class TinyAlexNet(nn.Module):
    """AlexNet's shape at a small size: convolutions and max pooling, adaptive average pooling
    to an output larger than 1x1 (windows of 4x4 here), a linear head."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(inplace=True))
        self.pool = nn.AdaptiveAvgPool2d((3, 3))
        self.head = nn.Linear(32 * 3 * 3, classes)

    def forward(self, x):
        return self.head(torch.flatten(self.pool(self.features(x)), 1))


class TinyTransformer(nn.Module):
    """nn.TransformerEncoder's post-norm ReLU layers and a pre-norm GELU layer (traced for
    inference as their fused op), then a decoder layer whose cross-attention reads them."""

    def __init__(self, width=64, heads=4):
        super().__init__()
        layer = nn.TransformerEncoderLayer(width, heads, 2 * width, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.pre_norm = nn.TransformerEncoderLayer(width, heads, 2 * width, batch_first=True,
                                                   norm_first=True, activation="gelu")
        self.decoder = nn.TransformerDecoderLayer(width, heads, 2 * width, batch_first=True)

    def forward(self, x):
        return self.decoder(x, self.pre_norm(self.encoder(x)))


# Every model scripts. (Scripted torchvision Swin pads its windows and then branches on the
# padded sizes, changing a list of shift sizes in place; scripted nn.MultiheadAttention and
# nn.Transformer layers branch on the inputs' rank, type, device and identity and on whether
# gradients are on. The frontend answers both kinds of question for the shapes given.)
NOT_SCRIPTED = set()
# Models without an ONNX twin: PyTorch 1.13's exporter has no symbolic for the in-place zero_
# Swin V2 applies to the middle third of its qkv bias. (Swin V1's window padding, a pads table
# the exporter reshapes, reverses and transposes, folds since the host folds Slice and
# Transpose of any rank.)
NO_ONNX = {"tiny_swin_v2"}
# Models with work done once per forward pass whatever the batch: Swin V2 computes its relative
# position bias with a small MLP over the window's coordinates.
MACS_PER_PASS = {"tiny_swin_v2"}


def models(names):
    import torchvision.models as tv
    zoo = {
        "resnet18": (lambda: tv.resnet18(), [[1, 3, 224, 224]], torch.float32),
        # Not among the fixtures (100 MB): the model of the TorchScript speed figure.
        "resnet50": (lambda: tv.resnet50(), [[1, 3, 224, 224]], torch.float32),
        "mobilenet_v2": (lambda: tv.mobilenet_v2(), [[1, 3, 224, 224]], torch.float32),
        "efficientnet_b0": (lambda: tv.efficientnet_b0(), [[1, 3, 224, 224]], torch.float32),
        "mobilenet_v3_small": (lambda: tv.mobilenet_v3_small(), [[1, 3, 224, 224]],
                               torch.float32),
        # Its auxiliary heads hold parameters that only training reads; scripted, its forward
        # returns a named tuple whose aux logits are None outside training.
        "googlenet": (lambda: tv.googlenet(aux_logits=True, init_weights=False),
                      [[1, 3, 224, 224]], torch.float32),
        "tiny_alexnet": (lambda: TinyAlexNet(), [[1, 3, 48, 48]], torch.float32),
        "tiny_encoder": (lambda: TinyEncoder(), [[1, 32]], torch.int64),
        "tiny_transformer": (lambda: TinyTransformer(), [[1, 16, 64]], torch.float32),
        # torchvision's Swin, small: windows padded to multiples of 7, shifted by roll, a
        # relative position bias gathered by index, the shifted windows' mask built in place.
        "tiny_swin": (lambda: tv.swin_transformer.SwinTransformer(
            patch_size=[4, 4], embed_dim=24, depths=[2, 2], num_heads=[2, 4],
            window_size=[7, 7], num_classes=10), [[1, 3, 56, 56]], torch.float32),
        # torchvision's Swin V2, small: cosine attention (F.normalize, a clamped logit scale)
        # and a relative position bias from a small MLP over log-spaced coordinates.
        "tiny_swin_v2": (lambda: tv.swin_transformer.SwinTransformer(
            patch_size=[4, 4], embed_dim=24, depths=[2, 2], num_heads=[2, 4],
            window_size=[8, 8], num_classes=10,
            block=tv.swin_transformer.SwinTransformerBlockV2,
            downsample_layer=tv.swin_transformer.PatchMergingV2), [[1, 3, 64, 64]], torch.float32),
        # torchvision's ViT, small: a class token expanded to the batch, nn.MultiheadAttention
        # (its fused inference op in the archive), GELU MLPs.
        "tiny_vit": (lambda: tv.vision_transformer.VisionTransformer(
            image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128),
            [[1, 3, 64, 64]], torch.float32),
    }
    for name in names:
        if name not in zoo:
            sys.exit("unknown model %r (known: %s)" % (name, ", ".join(zoo)))
        yield name, zoo[name]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--models",
                    default="resnet18,mobilenet_v2,mobilenet_v3_small,efficientnet_b0,"
                    "googlenet,tiny_alexnet,tiny_encoder,tiny_transformer,tiny_vit,tiny_swin,"
                    "tiny_swin_v2")
    ap.add_argument("--traced-only", action="store_true",
                    help="write the traced archives only (no scripted copy, no ONNX twin)")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    torch.manual_seed(0)
    manifest = {"torch": torch.__version__, "models": []}
    for name, (make, shapes, dtype) in models(args.models.split(",")):
        model = make().eval()
        inputs = tuple(torch.randint(0, 100, s) if dtype == torch.int64 else torch.randn(*s)
                       for s in shapes)
        base = os.path.join(args.outdir, name)
        with torch.no_grad():
            torch.jit.trace(model, inputs).save(base + ".traced.pt")
            scripted = name not in NOT_SCRIPTED and not args.traced_only
            if scripted:
                torch.jit.script(model).save(base + ".scripted.pt")
        # Outside no_grad: there nn.MultiheadAttention takes its fused inference op, which the
        # exporter cannot write (the archives above keep it, as users' traces do).
        onnx = name not in NO_ONNX and not args.traced_only
        if onnx:
            torch.onnx.export(model, inputs, base + ".onnx", opset_version=13,
                              do_constant_folding=False, input_names=["input"],
                              dynamic_axes={"input": {0: "batch"}})
        manifest["models"].append({
            "name": name,
            "params": sum(p.numel() for p in model.parameters()),
            "input_shapes": ["x".join(str(d) for d in s) for s in shapes],
            "scripted": scripted,
            "onnx": onnx,
            "macs_per_pass": name in MACS_PER_PASS,
        })
        print("%s: %d parameters" % (name, manifest["models"][-1]["params"]))
    with open(os.path.join(args.outdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
