#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""An op run's energy is priced over the time one call took in the measured loop (energy per
call over mean power, docs/validate.md): a longer period adds the entry's idle power over the
difference; a period shorter than the estimate charges static power over the period only.

usage: check_op_run_period.py NNERGY MEASUREMENTS.json OUT_DIR
"""
import copy
import json
import os
import subprocess
import sys

IDLE_W = 142.5  # configs/hardware/h100-sxm5.toml, [energy.static] idle_power


def predicted(nnergy, doc, run, power_w, out, name):
    d = copy.deepcopy(doc)
    r = copy.deepcopy(run)
    for e in r["energy"].values():
        e["mean_power_w"] = power_w
    d["runs"] = [r]
    path = os.path.join(out, name + ".json")
    with open(path, "w") as f:
        json.dump(d, f)
    report = os.path.join(out, name + ".report.json")
    subprocess.run([nnergy, "--quiet", "validate", "--hw", "h100-sxm5", path, "--ops",
                    "--format", "json", "-o", report], check=True)
    c = json.load(open(report))["configurations"][0]
    return c["latency_s"]["predicted"], c["energy_j"]["predicted"]


def main():
    nnergy, measurements, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    doc = json.load(open(measurements))
    # The largest streaming add of the micro set: long enough to price, energy measured.
    run = max((r for r in doc["runs"] if r.get("name") == "add_scalar" and r.get("energy")),
              key=lambda r: r["params"]["numel"])
    energy = sum(e["energy_j"] for e in run["energy"].values())
    latency, _ = predicted(nnergy, doc, run, 500.0, out, "probe")
    # Periods of 2x and 3x the estimated latency, then a third of it.
    slow = [predicted(nnergy, doc, run, energy / (f * latency), out, "period-%d" % f)[1]
            for f in (2, 3)]
    added = slow[1] - slow[0]
    expected = IDLE_W * latency
    failures = []
    if abs(added / expected - 1) > 1e-3:
        failures.append("a period longer by %.4g s added %.6g J, expected idle power x that = "
                        "%.6g J" % (latency, added, expected))
    short = predicted(nnergy, doc, run, energy / (latency / 3), out, "period-third")[1]
    at_latency = predicted(nnergy, doc, run, energy / latency, out, "period-1")[1]
    if not short < at_latency:
        failures.append("a period of a third of the estimate gave %.6g J, not less than the "
                        "%.6g J at the estimate" % (short, at_latency))
    if abs(slow[0] - at_latency - expected) / expected > 1e-3:
        failures.append("a period of twice the estimate gave %.6g J, expected %.6g J" %
                        (slow[0], at_latency + expected))
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("ok: estimated %.4g s; period 1x %.6g J, 2x %.6g J, 3x %.6g J, 1/3x %.6g J" %
          (latency, at_latency, slow[0], slow[1], short))
    return 0


if __name__ == "__main__":
    sys.exit(main())
