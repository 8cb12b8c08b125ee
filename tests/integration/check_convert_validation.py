#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Converts each shared validation file with tools/convert_validation.py and checks the result.

    check_convert_validation.py SCHEMA CONVERTER OUTDIR SOURCE...

For each source: the output validates against docs/measurements.schema.json; it has one run per
source entry (counted here independently of the converter); every number of every source
entry appears in its run (launch figures in microseconds as milliseconds); the top level's
description, env and idle power are kept.
"""
import json
import os
import subprocess
import sys

import jsonschema


def numbers(value):
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, dict):
        return [n for v in value.values() for n in numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in numbers(v)]
    return []


def source_entries(src):
    """(entry, is_microseconds) for every measured entry of a source file."""
    out = [(r, False) for r in src.get("runs", [])]
    for key in ("gemm", "elementwise", "conv"):
        out += [(r, False) for r in src.get(key, [])]
    out += [({k: v}, True) for k, v in src.get("launch", {}).items()]
    out += [({k: src[k]}, False) for k in ("gemm4096_fp32_tflops", "gemm4096_bf16_tflops",
                                           "stream_add_gbps") if k in src]
    return out


def close(a, b):
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1e-300)


def check(schema, converter, outdir, source):
    errors = []
    out = os.path.join(outdir, os.path.basename(os.path.dirname(source)) + "-"
                       + os.path.basename(source))
    r = subprocess.run([sys.executable, converter, source, "-o", out], capture_output=True,
                       text=True, check=False)
    if r.returncode != 0:
        return [f"converter exited {r.returncode}: {r.stderr.strip()}"]
    with open(source, encoding="utf-8") as f:
        src = json.load(f)
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    for e in jsonschema.validators.validator_for(schema)(schema).iter_errors(doc):
        errors.append(f"schema: {list(e.absolute_path)}: {e.message[:200]}")
    entries = source_entries(src)
    if len(doc["runs"]) != len(entries):
        errors.append(f"{len(doc['runs'])} runs for {len(entries)} source entries")
    # Runs come out in the source's order, so entry i is run i.
    for i, ((entry, micro), run) in enumerate(zip(entries, doc["runs"])):
        have = numbers(run)
        for x in numbers(entry):
            wanted = x / 1e3 if micro else x
            if not any(close(wanted, y) for y in have):
                errors.append(f"run {i}: figure {x} of {json.dumps(entry)[:120]} is lost")
    if doc.get("description") != src.get("description"):
        errors.append("description not kept")
    if "env" in src and doc.get("env") != src["env"]:
        errors.append("env not kept")
    if "idle_power_w" in src and [i["power_w"] for i in doc.get("idle", [])] != [
            src["idle_power_w"]]:
        errors.append("idle power not kept")
    print(f"{source}: {len(doc['runs'])} runs, {len(entries)} source entries, "
          f"{len(errors)} problem(s)")
    return errors


def main(argv):
    if len(argv) < 5:
        sys.exit(__doc__)
    with open(argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    os.makedirs(argv[3], exist_ok=True)
    bad = 0
    for source in argv[4:]:
        for e in check(schema, argv[2], argv[3], source):
            print(f"{source}: {e}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
