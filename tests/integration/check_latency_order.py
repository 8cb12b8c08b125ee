#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs `nnergy compare` on each model and batch and checks that the devices, listed fastest
part first, come out in that order of latency (a later one never faster). For parts whose order
the hardware itself decides (the same die with fewer SMs, lower clocks and less memory
bandwidth), a reversal is a modelling error, not a property of the part. With --within X, the
devices' order is not checked but the slowest must be within X times the fastest: where the
host decides the time (eager PyTorch at batch 1), devices with the same host model come out
alike.

usage: check_latency_order.py NNERGY OUTDIR --devices a,b,c --models m1,m2 --batches 1,64
                              [--runtime PROFILE] [--within X]
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("nnergy")
    ap.add_argument("outdir")
    ap.add_argument("--devices", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--batches", required=True)
    ap.add_argument("--runtime")
    ap.add_argument("--within", type=float)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    devices = a.devices.split(",")
    failures = []
    for model in a.models.split(","):
        for batch in a.batches.split(","):
            out = os.path.join(a.outdir, f"order-{model}-{batch}.json")
            cmd = [a.nnergy, "compare", model, "--hw", a.devices, "--batch", batch,
                   "--format", "json", "-o", out]
            if a.runtime:
                cmd += ["--runtime", a.runtime]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"{' '.join(cmd)}: exit {run.returncode}: {run.stderr}")
            with open(out, encoding="utf-8") as f:
                latency = {d["hardware"]: d["latency_s"] for d in json.load(f)["devices"]}
            where = f"{model} batch {batch}"
            if a.within:
                fast = min(devices, key=lambda d: latency[d])
                slow = max(devices, key=lambda d: latency[d])
                if latency[slow] > latency[fast] * a.within:
                    failures.append(f"{where}: {slow} ({latency[slow]:.4g} s) is more than "
                                    f"{a.within}x {fast} ({latency[fast]:.4g} s)")
                continue
            for before, after in zip(devices, devices[1:]):
                if latency[after] < latency[before]:
                    failures.append(f"{where}: {after} ({latency[after]:.4g} s) is faster than "
                                    f"{before} ({latency[before]:.4g} s)")
    for f in failures:
        print(f)
    if failures:
        sys.exit(1)
    what = f"within {a.within}x" if a.within else "in order"
    print(f"latency of {a.devices} {what} on {a.models} at batch {a.batches}")


if __name__ == "__main__":
    main()
