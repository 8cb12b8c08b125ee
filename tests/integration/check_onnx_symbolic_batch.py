#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/onnx_symbolic_batch.py: the rewritten file binds its new symbol (the FLOPs scale with
it as they do with the original's batch), and a file that is not ONNX fails with a message.

    check_onnx_symbolic_batch.py TOOL NNERGY MODEL.onnx BAD.onnx OUTDIR
"""
import json
import os
import subprocess
import sys

tool, nnergy, model, bad, outdir = sys.argv[1:6]
out = os.path.join(outdir, "symbolic_batch_n.onnx")
failures = []


def flops(path, *args):
    r = subprocess.run([nnergy, "analyze", path, "--hw", "h100-sxm5", "--format", "json", *args],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        failures.append(f"nnergy analyze {path} {' '.join(args)}: exit {r.returncode}: "
                        f"{r.stderr.strip()[-300:]}")
        return None
    return json.loads(r.stdout)["runs"][0]["totals"]["flops"]


r = subprocess.run([sys.executable, tool, model, out, "--name", "n"], capture_output=True,
                   text=True, check=False)
if r.returncode != 0 or "is now 'n'" not in r.stdout:
    failures.append(f"rewrite failed: exit {r.returncode}: {r.stdout}{r.stderr}")
else:
    one = flops(model, "--batch", "1")
    four = flops(out, "--dim", "n=4")
    if one and four and abs(four / one - 4) > 1e-9:
        failures.append(f"FLOPs at n=4 are {four}, not 4 x {one}")
    # The old symbol is gone: binding it changes nothing, the new one is required.
    r2 = subprocess.run([nnergy, "analyze", out, "--hw", "h100-sxm5"], capture_output=True,
                        text=True, check=False)
    if r2.returncode == 0:
        failures.append("the rewritten file analyzed without binding 'n'")
r = subprocess.run([sys.executable, tool, bad, os.path.join(outdir, "never.onnx")],
                   capture_output=True, text=True, check=False)
if r.returncode == 0 or "not a readable ONNX model" not in r.stderr or "Traceback" in r.stderr:
    failures.append(f"a file that is not ONNX: exit {r.returncode}: {r.stderr.strip()[-300:]}")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
