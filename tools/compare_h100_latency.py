#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Compares nnergy's latency estimates on h100-sxm5 with the H100 measurements.

Reads the measured model latencies (models.json of the shared H100 validation set: resnet18,
resnet50, mobilenet_v2, vit_b_16 and bert_base at batch 1/8/64, fp32/fp16, eager PyTorch and a
replayed CUDA graph), estimates each configuration whose model has a fixture in
tests/data/onnx/zoo with `nnergy analyze`, and prints every error and the mean absolute
percentage error (MAPE) per execution mode. A report, not a test: it exits 0 whatever the error.

usage: tools/compare_h100_latency.py [--nnergy PATH] [--models FILE] [--pipeline-args ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nnergy", default=os.path.join(ROOT, "build", "bin", "nnergy"))
    ap.add_argument("--models", default=os.path.join(ROOT, "..", "shared", "validation", "h100",
                                                     "models.json"))
    ap.add_argument("--hw", default="h100-sxm5")
    args = ap.parse_args()

    runs = json.load(open(args.models))["runs"]
    errors = {}
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        for r in runs:
            fixture = os.path.join(ROOT, "tests", "data", "onnx", "zoo", r["model"] + ".onnx")
            if not os.path.exists(fixture):
                continue
            precision = {"fp16": "float16", "fp32": "float32"}[r["precision"]]
            runtime = {"eager": "pytorch-eager", "cuda_graph": "cuda-graph"}[r["mode"]]
            cmd = [args.nnergy, "--quiet", "analyze", fixture, "--hw", args.hw, "--batch",
                   str(r["batch"]), "--precision", precision, "--runtime", runtime,
                   "--format", "json", "-o", report]
            if "seq" in open(fixture, "rb").read(4096).decode("latin-1"):
                cmd += ["--dim", "seq=128"]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stderr.strip(), file=sys.stderr)
                continue
            estimate = json.load(open(report))["totals"]["latency_s"] * 1e3
            measured = r["latency_ms_median"]
            error = (estimate - measured) / measured
            errors.setdefault(r["mode"], []).append(abs(error))
            print("%-13s %-4s b%-3d %-10s measured %8.3f ms  estimated %8.3f ms  %+5.0f%%" %
                  (r["model"], r["precision"], r["batch"], r["mode"], measured, estimate,
                   100 * error))
    for mode, e in sorted(errors.items()):
        print("%-10s MAPE %5.1f%% over %d configurations" % (mode, 100 * sum(e) / len(e), len(e)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
