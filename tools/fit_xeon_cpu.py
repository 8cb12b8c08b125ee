#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Fits the CPU architecture's constants for the validation host (xeon-5th-gen-16vcpu).

Data: the shared xeon-host/models.json, eager PyTorch latencies (16 threads) of ResNet-18 and
ResNet-50 at batch 1 and 8, fp32 and bf16 autocast. There are no per-op profiles for this host,
so the constants are fitted to whole-model latencies, with the model itself: the real nnergy
binary runs the bundled ONNX models with candidate values written into copies of
configs/hardware/xeon-5th-gen-16vcpu.toml and configs/runtimes/pytorch-eager-cpu.toml.

Fitted (each a physical rate or cost, shared by every model, none per model):
  conv efficiency, fp32 (AVX-512) and bf16 (AMX): achieved fraction of the measured GEMM peak
  conv weight_prep_bandwidth, fp32 and bf16: per-call weight reorder (and bf16 cast) rate
  dispatch.per_kernel: Python dispatch + OpenMP fork/join of one op
  conv k_half, bf16: AMX tiles reach their rate only over a deep reduction (tile loads and
    stores per output tile are amortized over K)

Six constants against eight latencies is a thin fit, so the script also reports a
leave-one-model-out check: fitted on one ResNet, the error on the other.

usage: tools/fit_xeon_cpu.py --nnergy build/bin/nnergy [--validation DIR] [--write]
"""
import argparse
import itertools
import json
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HW = os.path.join(ROOT, "configs/hardware/xeon-5th-gen-16vcpu.toml")
RT = os.path.join(ROOT, "configs/runtimes/pytorch-eager-cpu.toml")
ZOO = os.path.join(ROOT, "tests/data/onnx/zoo")
PRECISION = {"fp32": "float32", "bf16": "bfloat16"}

# (file, table, key): where each parameter lives, and its search range (log grid).
PARAMS = {
    "conv_eff_fp32": ("hw", "cpu.kernels.conv", "efficiency", 20, 100),
    "conv_prep_fp32": ("hw", "cpu.kernels.conv", "weight_prep_bandwidth", 1, 200),
    "conv_eff_bf16": ("hw", "cpu.kernels.conv.bfloat16", "efficiency", 5, 100),
    "conv_prep_bf16": ("hw", "cpu.kernels.conv.bfloat16", "weight_prep_bandwidth", 1, 200),
    "dispatch_us": ("rt", "dispatch", "per_kernel", 1, 200),
    "conv_k_half_bf16": ("hw", "cpu.kernels.conv.bfloat16", "k_half", 1, 5000),
}
# Tied parameters: (file, table, key) that take another parameter's value.
TIED = {}


def targets():
    """(parameter, file, table, key) for every place a parameter is written."""
    for name, (where, table, key, _, _) in PARAMS.items():
        yield name, where, table, key
        for t in TIED.get(name, []):
            yield (name,) + t


def set_value(text, table, key, value):
    """Replaces `key = { value = X` inside [table] with the candidate value."""
    lines = text.split("\n")
    current = None
    for i, line in enumerate(lines):
        m = re.match(r"^\[([^\]]+)\]\s*$", line.strip())
        if m:
            current = m.group(1)
            continue
        if current == table and re.match(r"^%s\s*=\s*\{\s*value\s*=" % re.escape(key), line):
            lines[i] = re.sub(r"value\s*=\s*[-0-9.eE+]+", "value = %.6g" % value, line, count=1)
            return "\n".join(lines)
    sys.exit("fit_xeon_cpu: no '%s' in [%s]" % (key, table))


class evaluator:
    def __init__(self, nnergy, runs):
        self.nnergy = nnergy
        self.runs = runs
        self.tmp = tempfile.mkdtemp(prefix="fit_xeon_")
        self.hw_text = open(HW).read()
        rt = open(RT).read()
        # The copy sits elsewhere: point its fusion rules back at the repository's.
        self.rt_text = rt.replace('"../fusion/', '"%s/configs/fusion/' % ROOT)

    def latencies(self, p, models):
        hw, rt = self.hw_text, self.rt_text
        for name, where, table, key in targets():
            if where == "rt":
                rt = set_value(rt, table, key, p[name])
            else:
                hw = set_value(hw, table, key, p[name])
        hw_file = os.path.join(self.tmp, "hw.toml")
        rt_file = os.path.join(self.tmp, "rt.toml")
        open(hw_file, "w").write(hw)
        open(rt_file, "w").write(rt)
        out = {}
        for model in models:
            cmd = [self.nnergy, "analyze", os.path.join(ZOO, model + ".onnx"), "--hw", hw_file,
                   "--runtime", rt_file, "--format", "json", "--batch", "1", "--batch", "8",
                   "--precision", "float32", "--precision", "bfloat16"]
            report = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                               text=True).stdout)
            for run in report["runs"]:
                dims = run["dims"]
                batch = int(dims.get("batch", dims.get("N", 1)))
                prec = run["architecture"]["precision"]
                out[(model, batch, prec)] = run["totals"]["latency_s"] * 1e3
        return out

    def errors(self, p, runs):
        models = sorted({r["model"] for r in runs})
        est = self.latencies(p, models)
        errs = []
        for r in runs:
            e = est[(r["model"], r["batch"], PRECISION[r["precision"]])]
            errs.append((r, e, (e - r["latency_ms_median"]) / r["latency_ms_median"]))
        return errs


def score(errs):
    # Log error: over- and under-estimates by the same factor weigh the same.
    return math.sqrt(sum(math.log1p(e) ** 2 for _, _, e in errs) / len(errs))


def fit(ev, runs, start):
    p = dict(start)
    best = score(ev.errors(p, runs))
    for sweep in range(4):
        improved = False
        for name, (_, _, _, lo, hi) in PARAMS.items():
            # Log grid around the current value, narrowing each sweep.
            span = 4.0 / (2 ** sweep)
            cands = [p[name] * span ** (i / 4.0) for i in range(-4, 5)]
            for c in cands:
                c = min(hi, max(lo, c))
                q = dict(p, **{name: c})
                s = score(ev.errors(q, runs))
                if s < best - 1e-6:
                    best, p, improved = s, q, True
        if not improved and sweep > 1:
            break
    return p, best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nnergy", required=True)
    ap.add_argument("--validation", default=os.path.join(ROOT, "../shared/validation"))
    ap.add_argument("--write", action="store_true",
                    help="write the fitted values into the two TOML files")
    a = ap.parse_args()
    data = json.load(open(os.path.join(a.validation, "xeon-host/models.json")))
    runs = data["runs"]
    ev = evaluator(a.nnergy, runs)
    start = {"conv_eff_fp32": 70, "conv_prep_fp32": 10, "conv_eff_bf16": 40,
             "conv_prep_bf16": 5, "dispatch_us": 20,
             "conv_k_half_bf16": 100}

    for held_out in sorted({r["model"] for r in runs}):
        train = [r for r in runs if r["model"] != held_out]
        test = [r for r in runs if r["model"] == held_out]
        p, _ = fit(ev, train, start)
        errs = ev.errors(p, test)
        mape = 100 * sum(abs(e) for _, _, e in errs) / len(errs)
        print("held out %s: MAPE %.1f%% (%s)" % (held_out, mape, ", ".join(
            "b%d %s %+.0f%%" % (r["batch"], r["precision"], 100 * e) for r, _, e in errs)))

    p, s = fit(ev, runs, start)
    errs = ev.errors(p, runs)
    print("\nall runs: MAPE %.1f%%" % (100 * sum(abs(e) for _, _, e in errs) / len(errs)))
    for r, e, err in errs:
        print("  %-9s b%-2d %s measured %7.2f ms  estimated %7.2f ms  %+5.1f%%" % (
            r["model"], r["batch"], r["precision"], r["latency_ms_median"], e, 100 * err))
    print("\nfitted:")
    for name, (where, table, key, _, _) in PARAMS.items():
        print("  [%s] %s = %.4g   (%s)" % (table, key, p[name], name))
    if a.write:
        hw, rt = open(HW).read(), open(RT).read()
        for name, where, table, key in targets():
            v = float("%.3g" % p[name])
            if where == "rt":
                rt = set_value(rt, table, key, v)
            else:
                hw = set_value(hw, table, key, v)
        open(HW, "w").write(hw)
        open(RT, "w").write(rt)


if __name__ == "__main__":
    main()
