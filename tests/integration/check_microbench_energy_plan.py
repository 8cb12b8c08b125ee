#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""--energy-only (tools/microbench/plan.py energy_only): exactly the plan's cases with an energy
run, and the committed GPU energy pass (what the H100's energy coefficients are calibrated on) holds runs of
those cases only, each with its energy. Needs no PyTorch: the plans are pure Python.

With --max-power W, every run's power must be at most W (a GPU's power limit: power that the
device's own limit does not allow is the meter method's error, not the op's).

usage: check_microbench_energy_plan.py TOOLS_MICROBENCH_DIR ENERGY_PASS_JSON [--max-power W]"""
import argparse
import json
import sys

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("microbench_dir")
parser.add_argument("energy_pass")
parser.add_argument("--max-power", type=float, metavar="W")
args = parser.parse_args()
sys.path.insert(0, args.microbench_dir)  # tools/microbench
import plan  # noqa: E402

failures = []
cases = plan.gpu_plan(set(plan.CLASSES), True)
chosen = plan.energy_only(cases)
if not chosen or any(not c["energy"] for c in chosen) \
        or len(chosen) != sum(1 for c in cases if c["energy"]):
    failures.append("energy_only is not the plan's cases with an energy run")


def key(op_class, source, precision, batch, mode):
    return (op_class, source, precision, batch, mode)


planned = {key(c["op_class"], c["params"].get("source"), c["precision"], c["batch"], c["mode"])
           for c in chosen}
doc = json.load(open(args.energy_pass))
runs = doc["runs"]
for i, r in enumerate(runs):
    k = key(r["op_class"], r["params"].get("source"), r["precision"], r["batch"], r["mode"])
    if k not in planned:
        failures.append(f"{args.energy_pass}: run {i} {k} is not an energy case of the GPU plan")
    e = (r.get("energy") or {}).get("gpu0") or {}
    if not e.get("energy_j") or not e.get("mean_power_w"):
        failures.append(f"{args.energy_pass}: run {i} {k} has no energy")
    elif args.max_power is not None and e["mean_power_w"] > args.max_power:
        failures.append(f"{args.energy_pass}: run {i} {k} draws {e['mean_power_w']:.1f} W, "
                        f"over the {args.max_power:g} W limit")
if "--energy-only" not in doc["env"].get("command", ""):
    failures.append(f"{args.energy_pass}: env.command is not an --energy-only pass")
print(f"GPU plan: {len(cases)} runs, {len(chosen)} with energy; the committed pass holds "
      f"{len(runs)} of them")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
