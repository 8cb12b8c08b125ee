#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Mutation fuzzing of `nnergy analyze`: bad input must give an error, never a crash, a hang, a
sanitizer report or a report with a number that is not one.

    tools/fuzz_analyze.py NNERGY OUT_DIR [--seconds 600] [--seed 1]
                          [--kinds json,onnx,hw,runtime,rules,pipeline,measurements] [--mild]

NNERGY is best a sanitizer build (cmake -DNNERGY_SANITIZE=ON; the binary and the plugin targets
are enough). Each run mutates one input and analyzes it:
  json     a bundled JSON graph, its tree (dims, attributes, ops, edges, top-level keys) or its
           bytes changed;
  onnx     the bytes of a test ONNX file changed;
  hw       numbers of a catalog hardware file replaced (0, -1, 1e-308, nan, inf, huge, wrong type);
  runtime  the same for a runtime profile (--runtime FILE);
  rules    the same for a fusion-rules file (--rules FILE);
  pipeline a bundled pipeline's numbers, names (hardware, precision, plugin) or lines changed,
           then `nnergy run` or, for one with a [sweep] table, `nnergy sweep`;
  measurements
           a measurement file's runs changed (numbers, names, a key dropped, a run doubled or
           dropped), then `nnergy validate` against the catalog entry its tests use;
  torchscript
           (with --torchscript-fixtures DIR: the folder the TorchScript tests write, with its
           manifest.json) a small traced or scripted archive's code (a number, an op, a line),
           pickles or tensor data changed and the archive written again, or its bytes changed.
Models run on a random catalog device, batch and precision, sometimes under a runtime profile.
With --mild, the changes stay plausible (small dims and attribute values, an op swapped for one
of its kind, an ONNX file's integers changed or a repeated entry dropped or doubled through its
protobuf structure, numbers of configuration files scaled rather than replaced), so that most
inputs pass the readers and reach shape inference, mapping and the estimators.

A finding is a run that: ends on a signal; prints a sanitizer report; exits with 70 (an internal
error) or a code docs/cli.md does not list; fails without a message; hangs for 60 s; or exits 0
with a report whose totals (latency_s, energy_j, flops, params) are missing numbers, not finite
or negative (for `sweep` rows and `validate` reports: any number that is not finite). Each distinct finding (by its kind and stack or last message) is kept in OUT_DIR
as the input that caused it and a .txt with the verdict, command and output.
Configuration files are mutated in a copy of their folder made of links to the others, so that
their relative references resolve; the repository's files are never written.
"""
import argparse
import collections
import copy
import glob
import hashlib
import io
import json
import math
import os
import random
import re
import subprocess
import sys
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_symbolic_batch import varint  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WEIRD_INTS = [0, -1, 1, 2, 3, 7, 2**31 - 1, 2**31, 2**32, 2**40, 2**53, 2**62, 2**63 - 1, -2**63,
              10**30]
WEIRD_NUMBERS = WEIRD_INTS + [0.5, -0.5, 1e-300, 1e300, 3.7]
OPS = ["Conv", "MatMul", "Gemm", "Add", "Relu", "Reshape", "Transpose", "Softmax", "Concat", "Slice",
       "Gather", "Expand", "Tile", "Pad", "MaxPool", "AveragePool", "GlobalAveragePool",
       "BatchNormalization", "LayerNormalization", "Split", "Squeeze", "Unsqueeze", "Resize",
       "ConvTranspose", "Einsum", "TopK", "ReduceMean", "Flatten", "Where", "Range", "Shape",
       "Cast", "CumSum", "NonZero", "ScatterND", "DepthToSpace", "SpaceToDepth", "DFT",
       "DeformConv", "NotAnOp"]
ATTRIBUTES = ["kernel_shape", "strides", "pads", "dilations", "group", "axis", "axes", "perm",
              "shape", "transA", "transB", "split", "keepdims", "output_padding", "allowzero", "k",
              "equation", "to", "mode", "num_outputs", "blocksize", "offset_group"]
TOML_VALUES = ["0", "-1", "0.0", "-0.0", "1e308", "1e-308", "nan", "inf", "-inf", "2e9", "1",
               "9223372036854775807", "-9223372036854775808", "0.5", "1e30", "\"x\"", "[]",
               "true", "1e-30", "100", "3"]
EXIT_CODES = (0, 1, 2, 3, 4, 5)  # docs/cli.md; 70 is an internal error
VALIDATE_EXIT_CODES = EXIT_CODES + (6,)  # 6: a mode with no configuration to compare
# Measurement files and the catalog entry their tests validate them against.
MEASUREMENTS = {"h100-models.json": "h100-sxm5", "h100-heldout-models.json": "h100-sxm5",
                "h100-op-profiles.json": "h100-sxm5", "h100-micro.json": "h100-sxm5",
                "gpu-h100-sxm5-energy.json": "h100-sxm5", "h200-models.json": "h200-sxm",
                "xeon-host-models.json": "xeon-5th-gen-16vcpu",
                "cpu-h100-host-xeon-16vcpu.json": "xeon-5th-gen-16vcpu"}
PIPELINE_STRINGS = ["float32", "float16", "bfloat16", "int8", "all", "fp16", "h100-sxm5", "l4",
                    "tpu-v4", "kpu-t64", "epyc-9654", "jetson-orin-nano", "coral-edge-tpu",
                    "nnergy.architecture.reference", "nnergy.architecture.gpu",
                    "nnergy.architecture.tpu", "nnergy.estimator.roofline",
                    "nnergy.estimator.energy", "nnergy.estimator.memory", "nnergy.reporter.text",
                    "nnergy.partitioner.fusion", "nnergy.partitioner.per_node", "batch", "seq",
                    "pytorch-eager", "cuda-graph", "", "x"]


def weird_value(rng):
    r = rng.random()
    if r < 0.6:
        return rng.choice(WEIRD_NUMBERS)
    if r < 0.7:
        return rng.choice(["", "x", "batch", "seq+1", "-1", "1e9", "\u00e9", "a" * 300])
    if r < 0.8:
        return None
    if r < 0.9:
        return [rng.choice(WEIRD_INTS) for _ in range(rng.randint(0, 6))]
    return {"k": rng.choice(WEIRD_INTS)}


MILD_INTS = [0, 1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 64, 100, 1000, -1, -2]
OP_KINDS = [
    ["Relu", "Sigmoid", "Tanh", "Gelu", "Erf", "Abs", "Neg", "Exp", "Log", "Sqrt", "Identity",
     "Softmax", "HardSwish", "Silu", "Cast", "LeakyRelu", "Softplus", "Clip"],
    ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "Where", "MatMul"],
    ["MaxPool", "AveragePool", "GlobalAveragePool", "LpPool", "GlobalMaxPool"],
    ["Conv", "ConvTranspose", "ConvInteger", "QLinearConv"],
    ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceL2", "ArgMax", "Softmax", "LogSoftmax"],
    ["MatMul", "Gemm", "Einsum", "MatMulInteger"],
]


def mild_value(old, rng):
    """A value near `old`'s kind: small integers, lists of the same length, symbols."""
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return rng.choice(MILD_INTS)
    if isinstance(old, float):
        return rng.choice([0.0, 0.5, 1e-5, 1.0, 2.0, -1.0])
    if isinstance(old, list) and old and all(isinstance(x, int) for x in old):
        out = list(old)
        out[rng.randrange(len(out))] = rng.choice(MILD_INTS)
        if rng.random() < 0.2:
            out.append(rng.choice(MILD_INTS))
        elif rng.random() < 0.2:
            out.pop()
        return out
    if isinstance(old, str):
        return rng.choice([old, "batch", "seq", "n + 1", "2*batch"])
    return rng.choice(MILD_INTS)


def mutate_graph_mildly(doc, rng):
    nodes = [n for n in doc.get("nodes", []) if isinstance(n, dict)]
    tensors = [t for t in doc.get("tensors", []) if isinstance(t, dict)]
    for _ in range(rng.randint(1, 2)):
        r = rng.random()
        if r < 0.3 and tensors:
            t = rng.choice(tensors)
            shape = t.get("shape")
            if isinstance(shape, list) and shape:
                k = rng.randrange(len(shape))
                shape[k] = mild_value(shape[k], rng) if rng.random() < 0.8 else "batch"
            elif rng.random() < 0.5:
                t["dtype"] = rng.choice(["float32", "float16", "bfloat16", "int8", "int64", "bool"])
        elif r < 0.65 and nodes:
            n = rng.choice(nodes)
            attrs = n.get("attributes")
            if isinstance(attrs, dict) and attrs:
                k = rng.choice(list(attrs))
                attrs[k] = mild_value(attrs[k], rng)
            else:
                n.setdefault("attributes", {})[rng.choice(ATTRIBUTES)] = rng.choice(
                    MILD_INTS + [[1, 1], [2, 2], [0, 0, 0, 0], [3, 3]])
        elif r < 0.85 and nodes:
            n = rng.choice(nodes)
            kinds = [k for k in OP_KINDS if n.get("op") in k]
            n["op"] = rng.choice(rng.choice(kinds) if kinds else rng.choice(OP_KINDS))
        elif nodes:
            # Another node's input instead of one of this node's: a new edge, maybe a cycle.
            n, other = rng.choice(nodes), rng.choice(nodes)
            ins, outs = n.get("inputs"), other.get("outputs")
            if isinstance(ins, list) and ins and isinstance(outs, list) and outs:
                ins[rng.randrange(len(ins))] = rng.choice(outs)
    return doc


def read_varint(buf, i):
    value, shift = 0, 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("bad varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def write_varint(value):
    return varint(value & ((1 << 64) - 1))  # a negative int64 as protobuf writes it


def parse_protobuf(buf, depth=0):
    """A protobuf message as [field, wire type, value] entries; a length-delimited value that
    parses whole as a message is one (a list), else bytes. Raises ValueError if `buf` is not
    a message."""
    fields, i = [], 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError("field 0")
        if wire == 0:
            value, i = read_varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        elif wire == 2:
            size, i = read_varint(buf, i)
            value, i = buf[i:i + size], i + size
            if i > len(buf):
                raise ValueError("truncated")
            if depth < 12 and value:
                try:
                    value = parse_protobuf(value, depth + 1)
                except ValueError:
                    pass
        else:
            raise ValueError("wire type")
        if i > len(buf):
            raise ValueError("truncated")
        fields.append([field, wire, value])
    return fields


def write_protobuf(fields):
    out = bytearray()
    for field, wire, value in fields:
        out += write_varint(field << 3 | wire)
        if wire == 0:
            out += write_varint(value)
        elif wire == 2:
            payload = write_protobuf(value) if isinstance(value, list) else value
            out += write_varint(len(payload)) + payload
        else:
            out += value
    return bytes(out)


def mutate_protobuf(data, rng):
    """An ONNX file's integers (dims, attribute values, types, indices) set to small or nearby
    values, or one repeated entry dropped or duplicated: the file still parses as protobuf."""
    try:
        root = parse_protobuf(data)
    except ValueError:
        return mutate_bytes(data, rng)
    varints, lists = [], []

    def walk(fields):
        lists.append(fields)
        for entry in fields:
            if entry[1] == 0:
                varints.append(entry)
            elif entry[1] == 2 and isinstance(entry[2], list):
                walk(entry[2])
    walk(root)
    for _ in range(rng.randint(1, 2)):
        if varints and rng.random() < 0.8:
            entry = rng.choice(varints)
            old = entry[2] - (1 << 64) if entry[2] >= 1 << 63 else entry[2]
            entry[2] = rng.choice([0, 1, 2, 3, -1, old + 1, old - 1, old * 2, 7, 64, 1 << 31])
        else:
            fields = rng.choice(lists)
            if fields:
                k = rng.randrange(len(fields))
                if rng.random() < 0.5:
                    fields.pop(k)
                else:
                    fields.insert(k, copy.deepcopy(fields[k]))
    return write_protobuf(root)


def scale_toml(text, rng):
    """Numbers of a configuration file scaled by plausible factors (or set to 0 or 1)."""
    def scaled(old):
        try:
            value = float(old.replace("_", ""))
        except ValueError:
            return old
        factor = rng.choice([0.5, 2, 10, 0.1, 1000, 0.001, 0, 1.5])
        new = value * factor if rng.random() < 0.9 else rng.choice([0, 1])
        return repr(int(new)) if new == int(new) and abs(new) < 2**53 else repr(new)
    return replace_toml_numbers(text, rng, scaled)


def mutate_graph(doc, rng):
    nodes = doc.get("nodes", [])
    tensors = doc.get("tensors", [])
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.25 and tensors:
            t = rng.choice(tensors)
            shape = t.get("shape")
            if isinstance(shape, list) and shape and rng.random() < 0.8:
                shape[rng.randrange(len(shape))] = weird_value(rng)
            elif rng.random() < 0.5:
                t["shape"] = [rng.choice(WEIRD_INTS) for _ in range(rng.randint(0, 9))]
            else:
                t[rng.choice(["dtype", "initializer", "name", "values", "constant"])] = weird_value(rng)
        elif r < 0.55 and nodes:
            n = rng.choice(nodes)
            attrs = n.get("attributes")
            if isinstance(attrs, dict) and attrs and rng.random() < 0.7:
                attrs[rng.choice(list(attrs))] = weird_value(rng)
            else:
                n.setdefault("attributes", {})[rng.choice(ATTRIBUTES)] = weird_value(rng)
        elif r < 0.7 and nodes:
            rng.choice(nodes)["op"] = rng.choice(OPS)
        elif r < 0.8 and nodes:
            n = rng.choice(nodes)
            key = rng.choice(["inputs", "outputs"])
            names = [t.get("name") for t in tensors if isinstance(t, dict)] or ["x"]
            edges = n.get(key) if isinstance(n.get(key), list) else []
            op = rng.random()
            if op < 0.3 and edges:
                edges.pop(rng.randrange(len(edges)))
            elif op < 0.6:
                edges.append(rng.choice(names + ["", "nope"]))
            elif edges:
                edges[rng.randrange(len(edges))] = rng.choice(names)
            n[key] = edges
        elif r < 0.9 and nodes:
            if rng.random() < 0.5:
                nodes.append(json.loads(json.dumps(rng.choice(nodes))))
            else:
                nodes.pop(rng.randrange(len(nodes)))
        else:
            doc[rng.choice(["inputs", "outputs", "name", "metadata", "schema"])] = weird_value(rng)
    return doc


def mutate_bytes(data, rng):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if not data:
            break
        r = rng.random()
        i = rng.randrange(len(data))
        if r < 0.4:
            data[i] = rng.randrange(256)
        elif r < 0.6:
            data[i] ^= 1 << rng.randrange(8)
        elif r < 0.7:
            del data[i:i + rng.randint(1, 64)]
        elif r < 0.8:
            j = rng.randrange(len(data))
            data[i:i] = data[j:j + rng.randint(1, 64)]
        elif r < 0.85:
            del data[i:]
        else:
            data[i:i] = bytes([rng.choice([0, 0xff, 0x7f, 0x80, 0x01])]) * rng.randint(1, 8)
    return bytes(data)


def replace_toml_numbers(text, rng, replacement):
    """One to three numbers of a TOML text replaced by replacement(old text)."""
    lines = text.split("\n")
    number = re.compile(r"(=\s*)([-+]?[0-9][0-9._eE+-]*)")
    candidates = [k for k, line in enumerate(lines)
                  if not line.lstrip().startswith("#") and number.search(line)]
    for _ in range(rng.randint(1, 3)):
        if not candidates:
            break
        k = rng.choice(candidates)
        hits = list(number.finditer(lines[k]))
        if not hits:
            continue  # already replaced by a value that is no number
        h = rng.choice(hits)
        lines[k] = lines[k][:h.start(2)] + replacement(h.group(2)) + lines[k][h.end(2):]
    return "\n".join(lines)


def mutate_toml(text, rng):
    return replace_toml_numbers(text, rng, lambda old: rng.choice(TOML_VALUES))


def mutate_pipeline(text, rng, mild):
    """A pipeline's numbers scaled (mild) or replaced, a quoted name swapped for another
    plausible one, or a line dropped or doubled."""
    r = rng.random()
    if r < 0.4:
        return scale_toml(text, rng) if mild else mutate_toml(text, rng)
    lines = text.split("\n")
    live = [k for k, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    if r < 0.8:
        quoted = [(k, m) for k in live for m in re.finditer(r'"([^"]*)"', lines[k])
                  if "output" not in lines[k]]
        if quoted:
            k, m = rng.choice(quoted)
            lines[k] = lines[k][:m.start(1)] + rng.choice(PIPELINE_STRINGS) + lines[k][m.end(1):]
    elif live:
        k = rng.choice(live)
        if rng.random() < 0.5:
            lines.pop(k)
        else:
            lines.insert(k, lines[k])
    return "\n".join(lines)


def mutate_measurements(doc, rng, mild):
    """One run of a measurement file changed: a number scaled (mild) or made odd, a name
    swapped for another run's, a key dropped; or a run doubled or dropped."""
    runs = doc.get("runs") if isinstance(doc, dict) else None
    if not isinstance(runs, list) or not runs:
        return doc
    run = rng.choice(runs)
    if not isinstance(run, dict):
        return doc
    r = rng.random()
    if r < 0.5:
        numbers = []

        def walk(container):
            items = container.items() if isinstance(container, dict) else enumerate(container)
            for key, value in items:
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    numbers.append((container, key))
                elif isinstance(value, (dict, list)):
                    walk(value)
        walk(run)
        if numbers:
            container, key = rng.choice(numbers)
            old = container[key]
            if mild:
                container[key] = old * rng.choice([0.5, 2, 10, 0.1, 0, -1, 1000])
            else:
                container[key] = weird_value(rng)
    elif r < 0.75:
        strings = [k for k, v in run.items() if isinstance(v, str)]
        if strings:
            key = rng.choice(strings)
            others = [x.get(key) for x in runs if isinstance(x, dict) and isinstance(x.get(key), str)]
            run[key] = rng.choice(others) if mild or rng.random() < 0.5 else weird_value(rng)
    elif r < 0.85 and run:
        run.pop(rng.choice(list(run)))
    elif r < 0.95:
        runs.append(copy.deepcopy(run))
    else:
        runs.remove(run)
    return doc


def mutate_torchscript_code(text, rng):
    """TorchScript source: a number replaced, a torch op swapped, a line dropped or doubled."""
    s = text.decode("utf-8", "replace")
    r = rng.random()
    numbers = list(re.finditer(r"\b\d+\b", s))
    ops = list(re.finditer(r"torch\.(\w+)", s))
    if r < 0.4 and numbers:
        m = rng.choice(numbers)
        s = s[:m.start()] + str(rng.choice([0, 1, 2, 3, -1, 7, 1000, 2**31, 2**63 - 1, 10**30])) \
            + s[m.end():]
    elif r < 0.6 and ops:
        m = rng.choice(ops)
        s = s[:m.start(1)] + rng.choice(["relu", "conv2d", "matmul", "add", "cat", "flatten",
                                         "view", "reshape", "linear", "softmax", "transpose",
                                         "mean", "zeros", "select", "slice", "nope"]) + s[m.end(1):]
    elif r < 0.8:
        lines = s.split("\n")
        if len(lines) > 2:
            k = rng.randrange(len(lines))
            if rng.random() < 0.5:
                del lines[k]
            else:
                lines.insert(k, lines[rng.randrange(len(lines))])
        s = "\n".join(lines)
    else:
        return mutate_bytes(text, rng)
    return s.encode()


def mutate_torchscript(data, rng):
    """One entry of a TorchScript archive changed (its code, a pickle, a tensor's data; rarely
    dropped) and the archive written again with valid checksums; or the archive's bytes."""
    if rng.random() < 0.1:
        return mutate_bytes(data, rng)
    source = zipfile.ZipFile(io.BytesIO(data))
    entries = source.infolist()
    r = rng.random()
    if r < 0.35:
        pick = [e for e in entries if e.filename.endswith(".pkl")]
    elif r < 0.7:
        pick = [e for e in entries if e.filename.endswith(".py")]
    elif r < 0.85:
        pick = [e for e in entries if "/data/" in e.filename]
    else:
        pick = entries
    target = rng.choice(pick or entries)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for e in entries:
            content = source.read(e.filename)
            if e is target:
                if rng.random() < 0.05:
                    continue
                content = (mutate_torchscript_code(content, rng) if e.filename.endswith(".py")
                           else mutate_bytes(content, rng))
            info = zipfile.ZipInfo(e.filename, e.date_time)
            info.compress_type = e.compress_type
            archive.writestr(info, content)
    return out.getvalue()


def non_finite_numbers(path, lines=False):
    """Where a JSON report (or JSON Lines rows) holds a number that is not finite, or why it
    cannot be read; empty when neither."""
    def refuse(token):
        raise ValueError(f"non-finite number {token}")
    try:
        with open(path) as f:
            texts = f.read().splitlines() if lines else [f.read()]
        for text in texts:
            if text.strip():
                json.loads(text, parse_constant=refuse)
    except (OSError, ValueError) as e:
        return f"output unreadable: {e}"
    return ""


def report_problems(path):
    try:
        with open(path) as f:
            totals = json.load(f).get("totals", {})
    except (OSError, ValueError) as e:
        return f"report unreadable: {e}"
    problems = []
    for key in ("latency_s", "energy_j", "flops", "params"):
        if key not in totals:
            continue
        v = totals[key]
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            problems.append(f"totals.{key}={v!r}")
    return "; ".join(problems)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("nnergy")
    ap.add_argument("out_dir")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default="json,onnx,hw,runtime,rules,pipeline,measurements")
    ap.add_argument("--mild", action="store_true", help="plausible changes that reach deeper")
    ap.add_argument("--torchscript-fixtures", metavar="DIR",
                    help="the TorchScript tests' fixture folder (with manifest.json): adds the "
                         "torchscript kind")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    kinds = args.kinds.split(",")
    archives = []  # (archive, its input shapes): the small fixtures, fast to load
    if args.torchscript_fixtures:
        with open(os.path.join(args.torchscript_fixtures, "manifest.json")) as f:
            for m in json.load(f)["models"]:
                for how in ("traced", "scripted"):
                    a = os.path.join(args.torchscript_fixtures, f"{m['name']}.{how}.pt")
                    if m["name"].startswith("tiny") and os.path.exists(a):
                        archives.append((a, m["input_shapes"]))
        if "torchscript" not in kinds:
            kinds.append("torchscript")
    elif "torchscript" in kinds:
        raise SystemExit("the torchscript kind needs --torchscript-fixtures DIR")
    work = os.path.join(args.out_dir, f"work-{args.seed}")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:intercept_tls_get_addr=0",
               UBSAN_OPTIONS="print_stacktrace=1", NNERGY_CONFIG_CACHE="off")

    graphs = [f for f in glob.glob(ROOT + "/configs/models/zoo/*.json") if os.path.getsize(f) < 130000]
    graphs += [ROOT + "/tests/data/json/" + f for f in ("large_add.json", "declared_dims.json",
                                                        "adaptive_pool.json")]
    onnx_files = [f for f in glob.glob(ROOT + "/tests/data/onnx/*.onnx") if "bad_" not in f]
    configs = {"hw": glob.glob(ROOT + "/configs/hardware/*.toml"),
               "runtime": glob.glob(ROOT + "/configs/runtimes/*.toml"),
               "rules": glob.glob(ROOT + "/configs/fusion/*.toml")}
    devices = [os.path.basename(f)[:-5] for f in configs["hw"]]
    pipelines = glob.glob(ROOT + "/configs/pipelines/*.toml")
    measurements = [ROOT + "/tests/data/measurements/" + f for f in MEASUREMENTS]
    # Pipelines read models and rules by relative paths; their reports go to the work folder.
    if not os.path.exists(os.path.join(work, "models")):
        os.symlink(ROOT + "/configs/models", os.path.join(work, "models"))
    os.makedirs(os.path.join(work, "pipelines"), exist_ok=True)
    for folder in ("fusion", "hardware", "runtimes"):
        copy = os.path.join(work, folder)
        if not os.path.isdir(copy):
            os.makedirs(copy)
            for f in glob.glob(ROOT + "/configs/" + folder + "/*"):
                os.symlink(f, os.path.join(copy, os.path.basename(f)))

    report = os.path.join(work, "report.json")
    end = time.time() + args.seconds
    runs = 0
    seen = set()
    exits = collections.Counter()  # by kind and exit code: how deep the inputs get
    while time.time() < end:
        kind = rng.choice(kinds)
        extra = []
        if rng.random() < 0.3:
            extra += ["--batch", str(rng.choice([1, 2, 8, 64, 0, 1000000]))]
        if rng.random() < 0.2:
            extra += ["--precision", rng.choice(["float16", "int8", "bfloat16", "all"])]
        if kind == "json":
            source = rng.choice(graphs)
            if args.mild:
                with open(source) as f:
                    data = json.dumps(mutate_graph_mildly(json.load(f), rng), indent=1).encode()
            elif rng.random() < 0.75:
                with open(source) as f:
                    data = json.dumps(mutate_graph(json.load(f), rng), indent=1).encode()
            else:
                with open(source, "rb") as f:
                    data = mutate_bytes(f.read(), rng)
            path = os.path.join(work, "model.json")
        elif kind == "onnx":
            source = rng.choice(onnx_files)
            with open(source, "rb") as f:
                data = (mutate_protobuf if args.mild else mutate_bytes)(f.read(), rng)
            path = os.path.join(work, "model.onnx")
        elif kind == "torchscript":
            source, shapes = rng.choice(archives)
            with open(source, "rb") as f:
                data = mutate_torchscript(f.read(), rng)
            path = os.path.join(work, "model.pt")
        elif kind == "pipeline":
            source = rng.choice(pipelines)
            with open(source) as f:
                text = re.sub(r'(?m)^(\s*output\s*=\s*)"([^"]*)"',
                              lambda m: m.group(1) + '"../out-' + os.path.basename(m.group(2)) + '"',
                              f.read())
            data = mutate_pipeline(text, rng, args.mild).encode()
            path = os.path.join(work, "pipelines", os.path.basename(source))
        elif kind == "measurements":
            source = rng.choice(measurements)
            with open(source) as f:
                doc = mutate_measurements(json.load(f), rng, args.mild)
            data = json.dumps(doc, indent=1).encode()
            if not args.mild and rng.random() < 0.1:
                data = mutate_bytes(data, rng)
            path = os.path.join(work, "measurements.json")
        else:
            source = rng.choice(configs[kind])
            with open(source) as f:
                data = (scale_toml if args.mild else mutate_toml)(f.read(), rng).encode()
            path = os.path.join(work, os.path.basename(os.path.dirname(source)),
                               os.path.basename(source))
            if not os.path.islink(path):
                raise SystemExit(f"{path}: expected a link into the copy of its folder")
            os.remove(path)
        with open(path, "wb") as f:
            f.write(data)

        model = path if kind in ("json", "onnx", "torchscript") else rng.choice(graphs)
        device = path if kind == "hw" else ("h100-sxm5" if rng.random() < 0.4 else rng.choice(devices))
        cmd = [args.nnergy, "analyze", model, "--hw", device, "--format", "json", "-o", report]
        if kind == "runtime":
            cmd += ["--runtime", path]
        elif rng.random() < 0.3:
            cmd += ["--runtime", rng.choice(["pytorch-eager", "cuda-graph", "fused", "pytorch-eager-cpu"])]
        if kind == "rules":
            cmd += ["--rules", path]
        if "bert" in model or "gpt" in model:
            cmd += ["--dim", "seq=16"]
        if "large_add" in model:
            cmd += ["--dim", "n=4096"]
        if kind == "torchscript":
            for shape in shapes:
                cmd += ["--input-shape", shape]
        cmd += extra
        # What the run writes and how it is checked: the report's totals, or every number.
        outputs, check_totals, codes = [report], True, EXIT_CODES
        if kind == "pipeline":
            check_totals = False
            if re.search(r"(?m)^\[sweep\]", data.decode(errors="replace")):
                rows = os.path.join(work, "rows.jsonl")
                cmd = [args.nnergy, "sweep", path, "-o", rows, "--jobs", "1"]
                outputs = [rows]
            else:
                cmd = [args.nnergy, "run", path]
                outputs = []  # the reports its [[reporter]] tables name (out-*.json)
        elif kind == "measurements":
            check_totals, codes = False, VALIDATE_EXIT_CODES
            cmd = [args.nnergy, "validate", "--hw", MEASUREMENTS[os.path.basename(source)], path,
                   "--models", ROOT + "/configs/models/zoo", "--dim", "bert_base:seq=128",
                   "--format", "json", "-o", report]
        for old in outputs + glob.glob(os.path.join(work, "out-*")):
            if os.path.exists(old):
                os.remove(old)
        verdict, output = None, ""
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
            output = p.stderr.decode(errors="replace")
            exits[(kind, p.returncode)] += 1
            if p.returncode < 0:
                verdict = f"signal {-p.returncode}"
            elif "Sanitizer" in output or "runtime error:" in output:
                verdict = "sanitizer"
            elif p.returncode == 70:
                verdict = "internal error"
            elif p.returncode not in codes:
                verdict = f"exit code {p.returncode}"
            elif p.returncode != 0 and not output.strip():
                verdict = "failed without a message"
            elif p.returncode == 0 and check_totals:
                problems = report_problems(report)
                verdict = f"bad totals: {problems}" if problems else None
            elif p.returncode == 0:
                if kind == "pipeline" and cmd[1] == "run":
                    # A .json file a non-JSON reporter was told to write is the pipeline's
                    # choice: only the JSON reporter's reports are checked.
                    outputs = [o for o in glob.glob(os.path.join(work, "out-*.json"))
                               if open(o, errors="replace").read(1) == "{"]
                problems = "; ".join(filter(None, (non_finite_numbers(o, o.endswith(".jsonl"))
                                                   for o in outputs if os.path.exists(o))))
                verdict = f"bad output: {problems}" if problems else None
        except subprocess.TimeoutExpired:
            verdict = "hang"
        if kind in configs:
            os.remove(path)
            os.symlink(source, path)
        runs += 1
        if not verdict:
            continue
        frames = re.findall(r"#\d+ 0x[0-9a-f]+ in (\S+)", output)[:3]
        signature = verdict.split(":")[0] + ":" + (" ".join(frames) if frames else
                                                    (output.strip().split("\n") or [""])[-1][:120])
        key = hashlib.md5(signature.encode()).hexdigest()[:10]
        if key in seen:
            continue
        seen.add(key)
        kept = os.path.join(args.out_dir, f"{kind}-{key}{os.path.splitext(path)[1]}")
        with open(kept, "wb") as f:
            f.write(data)
        with open(kept + ".txt", "w") as f:
            f.write(f"{verdict}\nmutated from {source}\n{' '.join(cmd)}\n\n{output[-6000:]}")
        print(f"[run {runs}] {verdict}: {kept}", flush=True)
    print(f"{runs} runs, {len(seen)} distinct findings; exit codes by kind: "
          + ", ".join(f"{k} {c}: {n}" for (k, c), n in sorted(exits.items())), flush=True)


if __name__ == "__main__":
    main()
