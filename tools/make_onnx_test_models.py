#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the small ONNX models the ONNX frontend tests read (tests/data/onnx/).

Needs only python3-onnx (Debian). Run from anywhere; the files are committed, so the build never
runs this script. Each model is a few kilobytes at most.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "onnx")


def weight(name, shape, dtype=np.float32):
    # Deterministic contents: only shapes matter to the tests.
    return numpy_helper.from_array(np.zeros(shape, dtype=dtype), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def model(graph, opset=13, extra_opsets=()):
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(graph, opset_imports=opsets, producer_name="nnergy-tests",
                          producer_version="1")
    m.ir_version = 8  # what ONNX 1.12 writes for opsets up to 17
    return m


def save(m, name, check=True):
    if check:
        onnx.checker.check_model(m)
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def conv_bn_relu():
    # x[batch, 3, 32, 32] -> Conv 3->16 3x3 pad 1 -> BatchNormalization -> Relu -> y[batch, 16, 32, 32]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 32, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16, 32, 32])
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"],
                         name="bn", epsilon=1e-5),
        helper.make_node("Relu", ["n"], ["y"], name="relu"),
    ]
    inits = [weight("w", (16, 3, 3, 3)), weight("b", (16,)), weight("gamma", (16,)),
             weight("beta", (16,)), weight("mean", (16,)), weight("var", (16,))]
    vi = [helper.make_tensor_value_info("c", TensorProto.FLOAT, ["batch", 16, 32, 32])]
    g = helper.make_graph(nodes, "conv_bn_relu", [x], [y], inits, value_info=vi)
    save(model(g), "conv_bn_relu.onnx")


def mlp():
    # x[batch, 16] -> Gemm 16->32 -> Relu -> MatMul 32->10 -> Add -> y[batch, 10]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1, alpha=1.0),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["m"], name="fc2"),
        helper.make_node("Add", ["m", "b2"], ["y"], name="bias2"),
    ]
    inits = [weight("w1", (32, 16)), weight("b1", (32,)), weight("w2", (32, 10)),
             weight("b2", (10,))]
    g = helper.make_graph(nodes, "mlp", [x], [y], inits)
    save(model(g), "mlp.onnx")


def transformer_block():
    # x[batch, seq, 32]: a shape sub-graph (Shape -> Gather -> Unsqueeze -> Concat) builds the
    # target of a Reshape that splits the features into 4 heads of 8, as exporters write it.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 32])
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="q_proj"),
        helper.make_node("Shape", ["x"], ["x_shape"], name="shape"),
        helper.make_node("Gather", ["x_shape", "idx0"], ["b"], name="gather_b", axis=0),
        helper.make_node("Gather", ["x_shape", "idx1"], ["s"], name="gather_s", axis=0),
        helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"], name="unsq_b"),
        helper.make_node("Unsqueeze", ["s", "axes0"], ["s1"], name="unsq_s"),
        # A Constant node with a small integer tensor: the head split [4, 8].
        helper.make_node("Constant", [], ["heads"], name="heads_const",
                         value=numpy_helper.from_array(np.array([4, 8], dtype=np.int64))),
        helper.make_node("Concat", ["b1", "s1", "heads"], ["qshape"], name="concat", axis=0),
        helper.make_node("Reshape", ["q", "qshape"], ["q4"], name="reshape"),
        helper.make_node("Transpose", ["q4"], ["qt"], name="transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["q4"], ["kt"], name="transpose_k", perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["qt", "kt"], ["scores"], name="scores"),
        helper.make_node("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "qt"], ["ctx"], name="context"),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="transpose_back", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "merge"], ["merged"], name="merge_heads"),
        helper.make_node("Add", ["merged", "x"], ["res"], name="residual"),
        helper.make_node("LayerNormalization", ["res", "ln_g", "ln_b"], ["y"], name="ln",
                         axis=-1, epsilon=1e-5),
    ]
    inits = [weight("wq", (32, 32)), ints("idx0", 0), ints("idx1", 1), ints("axes0", [0]),
             ints("merge", [0, 0, 32]), weight("ln_g", (32,)), weight("ln_b", (32,))]
    g = helper.make_graph(nodes, "transformer_block", [x], [y], inits)
    save(model(g, opset=17), "transformer_block.onnx")


def com_microsoft():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])
    nodes = [
        helper.make_node("FastGelu", ["x"], ["g"], name="fast_gelu", domain="com.microsoft"),
        helper.make_node("Relu", ["g"], ["y"], name="relu"),
    ]
    vi = [helper.make_tensor_value_info("g", TensorProto.FLOAT, ["batch", 16])]
    g = helper.make_graph(nodes, "ms_domain", [x], [y], value_info=vi)
    save(model(g, extra_opsets=[("com.microsoft", 1)]), "com_microsoft.onnx", check=False)


def if_node():
    # Control flow: an If choosing between two sub-graphs. The output shape is declared.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    then_out = helper.make_tensor_value_info("t_out", TensorProto.FLOAT, ["batch", 8])
    else_out = helper.make_tensor_value_info("e_out", TensorProto.FLOAT, ["batch", 8])
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t_out"], name="then_relu")],
                               "then", [], [then_out])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e_out"], name="else_neg")],
                               "else", [], [else_out])
    nodes = [
        helper.make_node("If", ["cond"], ["z"], name="branch", then_branch=then_g,
                         else_branch=else_g),
        helper.make_node("Relu", ["z"], ["y"], name="relu"),
    ]
    vi = [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 8])]
    g = helper.make_graph(nodes, "if_model", [x, cond], [y], value_info=vi)
    save(model(g), "if_node.onnx")


def external_data():
    # The weights live in an external file that is not shipped: only shapes are needed.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 256])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 512])
    w = TensorProto()
    w.name = "w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([256, 512])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "external_data_weights.bin"), ("offset", "0"),
                 ("length", str(256 * 512 * 4))):
        e = w.external_data.add()
        e.key, e.value = k, v
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")]
    g = helper.make_graph(nodes, "external_data", [x], [y], [w])
    save(model(g), "external_data.onnx", check=False)


def opset18():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "new_opset",
                          [x], [y])
    save(model(g, opset=18), "opset18.onnx", check=False)


def bad_files():
    # Truncated: the MLP cut in the middle of its first weight.
    with open(os.path.join(OUT, "mlp.onnx"), "rb") as f:
        data = f.read()
    with open(os.path.join(OUT, "bad_truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(OUT, "bad_not_onnx.onnx"), "wb") as f:
        f.write(b"this is a text file, not an ONNX model\n")
    # A valid protobuf of another ONNX message: a GraphProto saved on its own.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y])
    with open(os.path.join(OUT, "bad_wrong_message.onnx"), "wb") as f:
        f.write(g.SerializeToString())
    # A node reading a tensor nothing declares.
    g = helper.make_graph([helper.make_node("Add", ["x", "bias_typo"], ["y"], name="add_bias")],
                          "missing_input", [x], [y], [weight("bias", (4,))])
    path = save(model(g), "bad_missing_input.onnx", check=False)
    # The same with a byte that is not UTF-8 in the name (protobuf's Python API refuses such a
    # string, so the serialized bytes are patched): messages show it as \xd6.
    with open(path, "rb") as f:
        data = f.read()
    with open(os.path.join(OUT, "bad_name_bytes.onnx"), "wb") as f:
        f.write(data.replace(b"bias_typo", b"bias\xd6typo"))
    # An initializer whose dims [4, 4] need 64 bytes of FLOAT, with 16 bytes of raw_data.
    w = TensorProto()
    w.name = "w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([4, 4])
    w.raw_data = np.zeros(4, dtype=np.float32).tobytes()
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")],
                          "inconsistent", [x], [y], [w])
    save(model(g), "bad_inconsistent_initializer.onnx", check=False)


def main():
    os.makedirs(OUT, exist_ok=True)
    conv_bn_relu()
    mlp()
    transformer_block()
    com_microsoft()
    if_node()
    external_data()
    opset18()
    bad_files()
    return 0


if __name__ == "__main__":
    sys.exit(main())
