#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the microbenchmark harness's quick CPU pass and checks its measurement file.

    check_microbench.py SCHEMA RUN_PY TORCH_PYTHON OUTDIR [--energy FAKE_NNERGY METHOD]

Exit 77 (CTest's skip) when TORCH_PYTHON cannot import torch. Checks: the file validates
against docs/measurements.schema.json; every op class is present; the thread sweep holds the
same shape at several thread counts; flops, bytes and latencies are positive; the pass took
under 30 s; --device cuda fails with a clear message where no GPU is visible. With --energy,
the quick pass runs under a fake `nnergy measure` instead with --energy-method METHOD, and the
energy attached to a run must come out at 10 W over its loop: the fake draws 10 W in the loop
(window: in every window), and 1 W plus a 2 J tail around the loop of a child.
"""
import json
import os
import subprocess
import sys
import time

import jsonschema

SKIP = 77
CLASSES = ["conv", "depthwise_conv", "grouped_conv", "gemm", "gemv", "attention",
           "normalization", "pooling", "elementwise", "squeeze_excitation", "dispatch"]


def main(argv):
    if len(argv) not in (5, 8):
        sys.exit(__doc__)
    schema_path, run_py, torch_python, outdir = argv[1:5]
    fake, method = (argv[6], argv[7]) if len(argv) == 8 else (None, None)
    try:
        probe = subprocess.run([torch_python, "-c", "import torch"], capture_output=True,
                               check=False).returncode
    except OSError:
        probe = -1
    if probe != 0:
        print(f"SKIP: {torch_python} cannot import torch (apt-get install python3-torch)")
        return SKIP
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, f"microbench-quick-energy-{method}.json" if fake
                       else "microbench-quick.json")
    # One thread under the fake meter: two threads on a loaded two-core machine make a call's
    # time erratic, and what is checked there is the energy method, not the thread sweep.
    cmd = [torch_python, run_py, "--device", "cpu", "--quick", "--threads", "1" if fake else "1,2",
           "--machine", "ctest", "-o", out]
    cmd += ["--classes", "gemm", "--energy", "auto", "--nnergy", fake, "--energy-loop-s", "0.3",
            "--energy-method", method] if fake else ["--energy", "none"]
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - start
    print(r.stderr)
    if r.returncode != 0:
        print(f"FAIL: harness exited {r.returncode}")
        return 1
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    errors = [f"schema: {list(e.absolute_path)}: {e.message[:200]}"
              for e in jsonschema.validators.validator_for(schema)(schema).iter_errors(doc)]
    runs = doc["runs"]
    for i, run in enumerate(runs):
        if run["latency_ms_median"] <= 0 or run["flops"] < 0 or run["bytes"] < 0:
            errors.append(f"run {i}: non-positive figure")
        if run["op_class"] != "dispatch" and run["flops"] <= 0:
            errors.append(f"run {i} ({run['name']}): no FLOPs")
    if fake:
        energetic = [r for r in runs if "energy" in r]
        if not energetic:
            why = doc["env"].get("energy") or "; ".join(
                f"{r['name']}: {r['note']}" for r in runs if r.get("note"))
            errors.append(f"no run carries energy under the fake meter ({why or 'no reason given'})")
        if doc["env"].get("energy_method") != method:
            errors.append(f"env.energy_method {doc['env'].get('energy_method')!r}, not {method}")
        for run in energetic:
            e = run["energy"]["package-0"]
            if method == "window" and "--serve" not in run.get("note", ""):
                errors.append(f"{run['name']}: the note does not name the window method")
            # 10 W over the loop, whatever the child did outside it (the fake meter draws 1 W
            # outside the loop and 2 J after it, which only a method that cancels it survives).
            if abs(e["mean_power_w"] - 10.0) > 0.5:
                errors.append(f"{run['name']}: mean power {e['mean_power_w']} W, not 10 W")
            if not (0 < e["energy_j"] < 10.0):
                errors.append(f"{run['name']}: energy per call {e['energy_j']} J")
    else:
        present = {r["op_class"] for r in runs}
        missing = [c for c in CLASSES if c not in present]
        if missing:
            errors.append(f"op classes missing: {missing}")
        swept = {}
        for run in runs:
            key = (run["name"], json.dumps(run["params"], sort_keys=True), run["batch"],
                   run["precision"])
            swept.setdefault(key, set()).add(run.get("threads"))
        if not any(len(t) >= 2 for t in swept.values()):
            errors.append("no shape measured at two thread counts")
        # The pass itself, without the interpreter's start and torch's import.
        if doc["env"]["elapsed_s"] > 30:
            errors.append(f"the quick pass took {doc['env']['elapsed_s']} s (limit 30 s)")
        gpu = subprocess.run([torch_python, run_py, "--device", "cuda", "--quick", "-o",
                              os.path.join(outdir, "never.json")], capture_output=True,
                             text=True, check=False)
        cuda = subprocess.run([torch_python, "-c", "import torch,sys; "
                               "sys.exit(0 if torch.cuda.is_available() else 1)"],
                              check=False).returncode == 0
        if not cuda and (gpu.returncode == 0 or "no CUDA GPU" not in gpu.stderr):
            errors.append(f"--device cuda without a GPU: exit {gpu.returncode}, "
                          f"stderr {gpu.stderr.strip()[:200]!r}")
    for e in errors:
        print(f"FAIL: {e}")
    print(f"{out}: {len(runs)} runs in {elapsed:.1f} s, {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
