#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""nnergy calibrate recovers known constants from synthetic measurements.

A "truth" overlay moves some constants of a catalog entry away from the entry's values. The
measurements are the truth's own estimates (nnergy validate --format json on a file of the
configurations), so a fit that finds the truth reproduces them exactly. calibrate starts from
the catalog entry and must land within --tolerance of every true value, with the residual MAPE
near zero; then the overlay it wrote, used as --hw BASE+OVERLAY, must reproduce the synthetic
measurements.

usage: check_recovery.py NNERGY OUT_DIR --hw BASE --truth TRUTH.toml --mode MODE --device DEV
       --model M [--model M ...] --batch B [...] --precision P [...] [--energy] [--fit PATTERN ...]
       [--dim ARG ...] [--calibrate-arg=ARG ...] [--tolerance PCT]
"""
import argparse
import json
import os
import subprocess
import sys
import tomllib

from quantities import quantities


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nnergy")
    ap.add_argument("out")
    ap.add_argument("--hw", required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--device", required=True)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--batch", action="append", type=int, required=True)
    ap.add_argument("--precision", action="append", required=True)
    ap.add_argument("--energy", action="store_true", help="the measurements carry energies")
    ap.add_argument("--fit", action="append", default=[])
    ap.add_argument("--dim", action="append", default=[])
    ap.add_argument("--calibrate-arg", action="append", default=[],
                    help="one more argument for calibrate (--calibrate-arg=--tie=A=B)")
    ap.add_argument("--tolerance", type=float, default=3.0, help="percent")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    runs = []
    for model in a.model:
        for batch in a.batch:
            for precision in a.precision:
                run_ = {"kind": "model", "name": model, "device": a.device,
                        "precision": precision, "batch": batch, "mode": a.mode,
                        "latency_ms_median": 1.0}
                if a.energy:
                    run_["energy"] = {"gpu0": {"meter": "nvml", "energy_j": 1.0}}
                runs.append(run_)
    template = {"schema": "nnergy.measurements/1", "machine": {"name": "synthetic"},
                "runs": runs}
    template_file = os.path.join(a.out, "template.json")
    json.dump(template, open(template_file, "w"), indent=1)

    dims = [x for d in a.dim for x in ("--dim", d)]
    truth_report = json.loads(run([a.nnergy, "validate", "--hw", a.truth, template_file,
                                   "--format", "json"] + dims))
    predicted = {}
    for c in truth_report["configurations"]:
        key = (c["model"], c["batch"], c["precision"])
        predicted[key] = (c["latency_s"]["predicted"], c["energy_j"]["predicted"])
    for r in runs:
        latency_s, energy_j = predicted[(r["name"], r["batch"], r["precision"])]
        r["latency_ms_median"] = 1e3 * latency_s
        if a.energy:
            if energy_j is None:
                sys.exit("FAIL: the truth gave no energy for %s" % r["name"])
            r["energy"]["gpu0"]["energy_j"] = energy_j
    synthetic = os.path.join(a.out, "synthetic.json")
    json.dump(template, open(synthetic, "w"), indent=1)

    overlay = os.path.join(a.out, "calibrated.toml")
    fit = [x for f in a.fit for x in ("--fit", f)]
    text = run([a.nnergy, "calibrate", a.hw, synthetic, "-o", overlay] + fit + dims +
               a.calibrate_arg)
    print(text)

    truth = quantities(a.truth)
    fitted = quantities(overlay)
    failures = []
    moved = [k for k in truth if not k.startswith("calibration.")]
    if not moved:
        sys.exit("FAIL: the truth overlay moves no constant")
    for key in moved:
        if key not in fitted:
            failures.append("%s: not in the calibrated overlay (true value %g)" % (key, truth[key]))
            continue
        if truth[key] == 0:
            # A count that is off must stay off (docs/calibrate.md, "What is fitted").
            print("%-55s true 0          fitted %-10g" % (key, fitted[key]))
            if fitted[key] != 0:
                failures.append("%s: fitted %g, true 0 (off)" % (key, fitted[key]))
            continue
        err = 100 * (fitted[key] / truth[key] - 1)
        print("%-55s true %-10g fitted %-10g %+.2f%%" % (key, truth[key], fitted[key], err))
        if abs(err) > a.tolerance:
            failures.append("%s: fitted %g, true %g (%+.2f%%, tolerance %g%%)" %
                            (key, fitted[key], truth[key], err, a.tolerance))
    residual = tomllib.load(open(overlay, "rb"))["calibration"]["residuals"][a.mode]
    for metric in ("latency_mape",) + (("energy_mape",) if a.energy else ()):
        if metric not in residual:
            failures.append("no %s in [calibration.residuals.%s]" % (metric, a.mode))
        elif residual[metric]["value"] > 0.5:
            failures.append("%s after the fit: %g%% (expected < 0.5%%)" %
                            (metric, residual[metric]["value"]))

    # The overlay as --hw BASE+FILE reproduces the synthetic measurements.
    check = json.loads(run([a.nnergy, "validate", "--hw", "%s+%s" % (a.hw, overlay), synthetic,
                            "--format", "json"] + dims))
    for m in check["modes"]:
        if m["latency"]["mape_pct"] > 0.5:
            failures.append("validate --hw %s+OVERLAY: latency MAPE %.2f%% (expected < 0.5%%)" %
                            (a.hw, m["latency"]["mape_pct"]))
    if failures:
        sys.exit("FAIL:\n  " + "\n  ".join(failures))
    print("ok: %d constants recovered within %g%%" % (len(moved), a.tolerance))


if __name__ == "__main__":
    main()
