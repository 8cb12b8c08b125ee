#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Makes the leading dimension of an ONNX model's graph inputs and outputs symbolic.

    tools/onnx_symbolic_batch.py IN.onnx OUT.onnx [--name batch] [--tensor NAME]...

An export without dynamic axes (torch.onnx.export without dynamic_axes) fixes the batch at
the example's size, so nnergy would price every batch as that one. This rewrites dim 0 of each
graph input and output (or only the tensors named) from its fixed value to `--name`. It edits
the protobuf wire format directly, so it needs no onnx package; nothing else in the file
changes. A Reshape whose target shape is a constant holding the batch would still be fixed:
check the rewritten file with `nnergy analyze --batch N`.
"""
import argparse
import sys


def read_varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def varint(value):
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fields(buf):
    """(field number, wire type, raw value bytes or int) for each field of a message."""
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = read_varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire} at byte {i}")
        yield number, wire, value


def encode(number, wire, value):
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(value)
    if wire == 2:
        return key + varint(len(value)) + bytes(value)
    return key + bytes(value)


def rewrite(buf, path, fn):
    """Applies fn to every submessage at the field path (a list of field numbers)."""
    out = bytearray()
    for number, wire, value in fields(buf):
        if wire == 2 and number == path[0]:
            value = fn(value) if len(path) == 1 else rewrite(value, path[1:], fn)
        out += encode(number, wire, value)
    return bytes(out)


def name_of(value_info):
    for number, wire, value in fields(value_info):
        if number == 1 and wire == 2:
            return bytes(value).decode()
    return ""


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--name", default="batch", help="the symbol (default batch)")
    p.add_argument("--tensor", action="append", help="only these graph inputs/outputs")
    args = p.parse_args(argv)
    with open(args.input, "rb") as f:
        model = f.read()
    changed = []

    def first_dim_symbolic(shape):
        out, done = bytearray(), False
        for number, wire, value in fields(shape):
            if number == 1 and wire == 2 and not done:  # the first Dimension
                value = encode(2, 2, args.name.encode())
                done = True
            out += encode(number, wire, value)
        return bytes(out)

    def value_info(vi):
        name = name_of(vi)
        if args.tensor and name not in args.tensor:
            return vi
        changed.append(name)
        # ValueInfoProto.type(2) -> TypeProto.tensor_type(1) -> shape(2)
        return rewrite(vi, [2, 1, 2], first_dim_symbolic)

    graph_input, graph_output = 11, 12
    try:
        model = rewrite(model, [7, graph_input], value_info)
        model = rewrite(model, [7, graph_output], value_info)
    except (ValueError, IndexError) as e:
        sys.exit(f"onnx_symbolic_batch: {args.input}: not a readable ONNX model "
                 f"(protobuf: {e or 'truncated'})")
    if not changed:
        sys.exit(f"onnx_symbolic_batch: {args.input}: no graph input or output rewritten")
    with open(args.output, "wb") as f:
        f.write(model)
    print(f"{args.output}: dim 0 of {', '.join(changed)} is now '{args.name}'")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
