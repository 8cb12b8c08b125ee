#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the bundled models in configs/models/ (schema nnergy.graph/1, docs/json-graph.md).

Usage: scripts/make_models.py [OUTPUT_DIR]   (default: configs/models next to this script)

The models are small, realistic blocks with symbolic batch (and sequence) dimensions. Weights
are declared with dtype and shape only; integer shape constants carry their values. Tensors
between nodes are left undeclared: the reader declares them and shape inference fills them in.
Their parameter and MAC counts are derived by hand in docs/json-graph.md.
"""
import json
import os
import sys


class Model:
    def __init__(self, name, description):
        self.name = name
        self.metadata = {"description": description, "producer": "scripts/make_models.py"}
        self.inputs, self.outputs, self.tensors, self.nodes = [], [], [], []

    def tensor(self, name, dtype, shape, initializer=False, values=None):
        t = {"name": name, "dtype": dtype, "shape": shape}
        if initializer:
            t["initializer"] = True
        if values is not None:
            t["values"] = values
        self.tensors.append(t)
        return name

    def input(self, name, shape, dtype="float32"):
        self.inputs.append(name)
        return self.tensor(name, dtype, shape)

    def output(self, name, shape, dtype="float32"):
        self.outputs.append(name)
        return self.tensor(name, dtype, shape)

    def weight(self, name, shape, dtype="float32"):
        return self.tensor(name, dtype, shape, initializer=True)

    def shape_constant(self, name, values):
        return self.tensor(name, "int64", [len(values)], initializer=True, values=values)

    def node(self, name, op, inputs, output=None, **attributes):
        output = output or name + ".out"
        n = {"name": name, "op": op, "inputs": inputs, "outputs": [output]}
        if attributes:
            n["attributes"] = attributes
        self.nodes.append(n)
        return output

    def dumps(self):
        def line(obj):
            return json.dumps(obj, separators=(", ", ": "))

        out = ["{", '  "schema": "nnergy.graph/1",', '  "name": %s,' % json.dumps(self.name)]
        out.append('  "metadata": {')
        items = list(self.metadata.items())
        for i, (k, v) in enumerate(items):
            out.append("    %s: %s%s" % (json.dumps(k), json.dumps(v), "," if i + 1 < len(items) else ""))
        out.append("  },")
        out.append('  "inputs": %s,' % line(self.inputs))
        out.append('  "outputs": %s,' % line(self.outputs))
        for key, rows in (("tensors", self.tensors), ("nodes", self.nodes)):
            out.append('  "%s": [' % key)
            for i, r in enumerate(rows):
                out.append("    " + line(r) + ("," if i + 1 < len(rows) else ""))
            out.append("  ]" + ("," if key == "tensors" else ""))
        out.append("}")
        return "\n".join(out) + "\n"


def conv_bn_relu(m, prefix, x, c_in, c_out, stride, relu=True):
    """Conv 3x3 (no bias: the batch norm has one) + BatchNormalization (+ Relu)."""
    w = m.weight(prefix + ".conv.weight", [c_out, c_in, 3, 3])
    y = m.node(prefix + ".conv", "Conv", [x, w], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
               strides=[stride, stride])
    y = batch_norm(m, prefix + ".bn", y, c_out)
    return m.node(prefix + ".relu", "Relu", [y]) if relu else y


def batch_norm(m, prefix, x, c):
    params = [m.weight("%s.%s" % (prefix, p), [c]) for p in ("scale", "bias", "mean", "var")]
    return m.node(prefix, "BatchNormalization", [x] + params, epsilon=1e-05)


def linear(m, prefix, x, d_in, d_out):
    """MatMul + Add, as exporters write nn.Linear on 3-D activations."""
    w = m.weight(prefix + ".weight", [d_in, d_out])
    b = m.weight(prefix + ".bias", [d_out])
    y = m.node(prefix + ".matmul", "MatMul", [x, w])
    return m.node(prefix + ".add", "Add", [y, b])


def layer_norm(m, prefix, x, d, epsilon):
    scale = m.weight(prefix + ".scale", [d])
    bias = m.weight(prefix + ".bias", [d])
    return m.node(prefix, "LayerNormalization", [x, scale, bias], axis=-1, epsilon=epsilon)


def attention(m, prefix, x, d_model, heads_shape, merged_shape, scale_op):
    """Multi-head self-attention: projections, head split, softmax(QK^T * s)V, merge, output.
    The scale is a scalar weight (1/sqrt(head size), applied with Mul, or sqrt(head size) with
    Div); like every weight it is declared by dtype and shape only."""
    q = linear(m, prefix + ".q", x, d_model, d_model)
    k = linear(m, prefix + ".k", x, d_model, d_model)
    v = linear(m, prefix + ".v", x, d_model, d_model)
    # [b, s, d] -> [b, s, h, d/h] -> [b, h, s, d/h]; K goes straight to [b, h, d/h, s].
    qh = m.node(prefix + ".q.heads", "Transpose",
                [m.node(prefix + ".q.split", "Reshape", [q, heads_shape])], perm=[0, 2, 1, 3])
    kt = m.node(prefix + ".k.heads", "Transpose",
                [m.node(prefix + ".k.split", "Reshape", [k, heads_shape])], perm=[0, 2, 3, 1])
    vh = m.node(prefix + ".v.heads", "Transpose",
                [m.node(prefix + ".v.split", "Reshape", [v, heads_shape])], perm=[0, 2, 1, 3])
    scores = m.node(prefix + ".scores", "MatMul", [qh, kt])
    s = m.weight(prefix + ".scale_value", [])
    scaled = m.node(prefix + ".scale", scale_op, [scores, s])
    probs = m.node(prefix + ".softmax", "Softmax", [scaled], axis=-1)
    context = m.node(prefix + ".context", "MatMul", [probs, vh])
    merged = m.node(prefix + ".merge", "Reshape",
                    [m.node(prefix + ".unheads", "Transpose", [context], perm=[0, 2, 1, 3]),
                     merged_shape])
    return linear(m, prefix + ".out", merged, d_model, d_model)


def hybrid_cnn_transformer():
    """CNN stem (two conv-bn-relu, max pool) -> 64 tokens of width 64 -> one pre-norm
    transformer encoder block (4 heads) -> mean over tokens -> 10-way classifier."""
    m = Model("hybrid_cnn_transformer",
              "Quickstart model: CNN stem feeding a pre-norm transformer encoder block, "
              "3x32x32 input, 64 channels, 64 tokens, 4 heads, 10 classes")
    x = m.input("image", ["batch", 3, 32, 32])
    tokens_shape = m.shape_constant("shape.tokens", [0, 64, 64])
    heads_shape = m.shape_constant("shape.heads", [0, 64, 4, 16])

    y = conv_bn_relu(m, "stem1", x, 3, 64, stride=2)    # [b, 64, 16, 16]
    y = conv_bn_relu(m, "stem2", y, 64, 64, stride=1)   # [b, 64, 16, 16]
    y = m.node("stem.pool", "MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])  # [b, 64, 8, 8]
    y = m.node("tokens.flatten", "Reshape", [y, tokens_shape])        # [b, 64 ch, 64 pos]
    t = m.node("tokens.transpose", "Transpose", [y], perm=[0, 2, 1])  # [b, 64 tok, 64 ch]

    h = layer_norm(m, "enc.ln1", t, 64, 1e-05)
    a = attention(m, "enc.attn", h, 64, heads_shape, tokens_shape, "Mul")  # scale 1/sqrt(16)
    r1 = m.node("enc.residual1", "Add", [t, a])
    h = layer_norm(m, "enc.ln2", r1, 64, 1e-05)
    h = linear(m, "enc.mlp.fc1", h, 64, 256)
    h = m.node("enc.mlp.gelu", "Gelu", [h])
    h = linear(m, "enc.mlp.fc2", h, 256, 64)
    r2 = m.node("enc.residual2", "Add", [r1, h])                      # [b, 64 tok, 64 ch]

    y = m.node("head.transpose", "Transpose", [r2], perm=[0, 2, 1])   # [b, 64 ch, 64 tok]
    y = m.node("head.pool", "GlobalAveragePool", [y])                 # [b, 64, 1]
    y = m.node("head.flatten", "Flatten", [y], axis=1)                # [b, 64]
    w = m.weight("head.fc.weight", [10, 64])
    b = m.weight("head.fc.bias", [10])
    m.node("head.fc", "Gemm", [y, w, b], output="logits", transB=1)
    m.output("logits", ["batch", 10])
    return m


def cnn_block():
    """ResNet-18 layer2.0: a basic block that halves the resolution, with a 1x1 projection."""
    m = Model("cnn_block",
              "ResNet basic block with stride-2 projection shortcut (ResNet-18 layer2.0), "
              "64x56x56 -> 128x28x28")
    x = m.input("x", ["batch", 64, 56, 56])
    y = conv_bn_relu(m, "block.1", x, 64, 128, stride=2)
    y = conv_bn_relu(m, "block.2", y, 128, 128, stride=1, relu=False)
    w = m.weight("downsample.conv.weight", [128, 64, 1, 1])
    s = m.node("downsample.conv", "Conv", [x, w], kernel_shape=[1, 1], strides=[2, 2])
    s = batch_norm(m, "downsample.bn", s, 128)
    y = m.node("residual", "Add", [y, s])
    m.node("relu", "Relu", [y], output="y")
    m.output("y", ["batch", 128, 28, 28])
    return m


def transformer_encoder():
    """One BERT encoder layer (post-norm), hidden 256, 4 heads, FFN 1024, GELU written with
    Erf the way exporters emit it."""
    m = Model("transformer_encoder",
              "BERT-style encoder layer: hidden 256, 4 heads of 64, FFN 1024, post-norm, "
              "erf GELU; symbolic batch and seq")
    x = m.input("hidden_states", ["batch", "seq", 256])
    heads_shape = m.shape_constant("shape.heads", [0, 0, 4, 64])
    merged_shape = m.shape_constant("shape.hidden", [0, 0, 256])

    a = attention(m, "attn", x, 256, heads_shape, merged_shape, "Div")  # scale sqrt(64)
    h = layer_norm(m, "attn.ln", m.node("attn.residual", "Add", [a, x]), 256, 1e-12)
    f = linear(m, "ffn.fc1", h, 256, 1024)
    # gelu(f) = f * 0.5 * (1 + erf(f / sqrt(2)))
    sqrt2 = m.weight("ffn.gelu.sqrt2", [])
    one = m.weight("ffn.gelu.one", [])
    half = m.weight("ffn.gelu.half", [])
    g = m.node("ffn.gelu.div", "Div", [f, sqrt2])
    g = m.node("ffn.gelu.erf", "Erf", [g])
    g = m.node("ffn.gelu.add", "Add", [g, one])
    g = m.node("ffn.gelu.mul", "Mul", [f, g])
    g = m.node("ffn.gelu.half", "Mul", [g, half])
    f = linear(m, "ffn.fc2", g, 1024, 256)
    r = m.node("ffn.residual", "Add", [f, h])
    ln_s = m.weight("ffn.ln.scale", [256])
    ln_b = m.weight("ffn.ln.bias", [256])
    m.node("ffn.ln", "LayerNormalization", [r, ln_s, ln_b], output="layer_output", axis=-1,
           epsilon=1e-12)
    m.output("layer_output", ["batch", "seq", 256])
    return m


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "configs", "models")
    os.makedirs(out_dir, exist_ok=True)
    for make in (hybrid_cnn_transformer, cnn_block, transformer_encoder):
        m = make()
        path = os.path.join(out_dir, m.name + ".json")
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(m.dumps())
        print(path)


if __name__ == "__main__":
    main()
