#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerates the model zoo (configs/models/zoo/NAME.json) from the ONNX fixtures its index names.

configs/models/zoo/index.toml lists each model as a table [NAME] with the `source` ONNX file
(relative to the repository root) and a `description`. Every graph is written by the nnergy
binary itself, `nnergy convert SOURCE -o configs/models/zoo/NAME.json`, so the graphs carry what
the ONNX frontend reads: shapes, element types and integer shape constants, never weights.

Usage: tools/make_model_zoo.py [--nnergy PATH] [--check]
  --nnergy PATH  the nnergy binary (default: build/bin/nnergy under the repository root)
  --check        convert into a temporary directory and compare with the checked-in graphs
                 instead of writing them; exit 1 listing each graph that differs, is missing,
                 or has no entry in the index

Needs Python 3.11 (tomllib) and an nnergy build with the ONNX frontend.
"""
import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import tomllib

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
ZOO = os.path.join(ROOT, "configs", "models", "zoo")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nnergy", default=os.path.join(ROOT, "build", "bin", "nnergy"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    with open(os.path.join(ZOO, "index.toml"), "rb") as f:
        index = tomllib.load(f)

    out_dir = tempfile.mkdtemp(prefix="nnergy-zoo-") if args.check else ZOO
    problems = []
    total = 0
    for name, entry in sorted(index.items()):
        source = os.path.join(ROOT, entry["source"])
        out = os.path.join(out_dir, name + ".json")
        run = subprocess.run([args.nnergy, "--quiet", "convert", source, "-o", out],
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"{name}: nnergy convert {entry['source']} failed ({run.returncode}):\n"
                     f"{run.stderr}")
        size = os.path.getsize(out)
        total += size
        print(f"{name:20} {size / 1e3:8.1f} kB  from {entry['source']}")
        if args.check:
            checked_in = os.path.join(ZOO, name + ".json")
            if not os.path.exists(checked_in):
                problems.append(f"{name}: configs/models/zoo/{name}.json is missing")
            elif not filecmp.cmp(out, checked_in, shallow=False):
                problems.append(f"{name}: configs/models/zoo/{name}.json differs from what "
                                "nnergy convert writes now")
    for f in sorted(os.listdir(ZOO)):
        if f.endswith(".json") and f[:-5] not in index:
            problems.append(f"configs/models/zoo/{f} has no entry in index.toml")
    print(f"total {total / 1e6:.2f} MB")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
