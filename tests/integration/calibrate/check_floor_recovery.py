#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""nnergy calibrate recovers known constants from op runs timed above a floor.

The op runs of a measurement file (single eager calls) get synthetic latencies: the larger of a
"truth" overlay's estimate and a timing floor, as a method that times one call with the host's
path to the kernel measures them. With the floor in the file (`latency_floor_ms`), calibrate
must land within --tolerance of every true value, with the residual MAPE near zero. Without it,
the same latencies read as device time: the fit must miss the truth by more than the
tolerance, which shows that the floor, not luck, made the first fit right.

usage: check_floor_recovery.py NNERGY OUT_DIR --hw BASE --truth TRUTH.toml
       --runs FILE --precision P [...] --floor-us US [--fit PATTERN ...] [--tolerance PCT]
"""
import argparse
import copy
import json
import os
import sys

from check_recovery import run
from quantities import quantities


def fitted_errors(nnergy, hw, measurements, overlay, fit, truth):
    """calibrate's output: {key: percent from the truth}, and the latency residual."""
    print(run([nnergy, "calibrate", hw, measurements, "-o", overlay, "--runs", "op"] + fit))
    fitted = quantities(overlay)
    errors = {}
    for key, true in truth.items():
        if key not in fitted:
            sys.exit("FAIL: %s: not in the calibrated overlay %s" % (key, overlay))
        errors[key] = 100 * (fitted[key] / true - 1)
        print("%-45s true %-8g fitted %-10g %+.2f%%" % (key, true, fitted[key], errors[key]))
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nnergy")
    ap.add_argument("out")
    ap.add_argument("--hw", required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--runs", required=True, help="a measurement file whose op runs are used")
    ap.add_argument("--precision", action="append", required=True)
    ap.add_argument("--floor-us", type=float, required=True)
    ap.add_argument("--fit", action="append", default=[])
    ap.add_argument("--tolerance", type=float, default=2.0, help="percent")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    source = json.load(open(a.runs))
    runs = []
    for r in source["runs"]:
        if r.get("kind") == "op" and r.get("precision") in a.precision and r.get("mode") == "eager":
            r = copy.deepcopy(r)
            r.pop("latency_floor_ms", None)
            r.pop("energy", None)
            runs.append(r)
    if not runs:
        sys.exit("FAIL: %s has no eager op run in %s" % (a.runs, ", ".join(a.precision)))
    doc = {"schema": "nnergy.measurements/1", "machine": {"name": "synthetic"}, "runs": runs}
    template = os.path.join(a.out, "template.json")
    json.dump(doc, open(template, "w"), indent=1)

    # The truth's estimate of each run, then the floor over it.
    report = json.loads(run([a.nnergy, "validate", "--hw", a.truth, template, "--ops",
                             "--format", "json"]))
    estimate = {}
    for c in report["configurations"]:
        for s in c["sources"]:
            estimate[int(s.rsplit(" run ", 1)[1])] = c["latency_s"]["predicted"]
    floor_ms = a.floor_us / 1e3
    at_floor = 0
    for i, r in enumerate(runs):
        ms = 1e3 * estimate[i]
        at_floor += ms < floor_ms
        r["latency_ms_median"] = max(ms, floor_ms)
    print("%d op runs, %d of them at the floor of %g us" % (len(runs), at_floor, a.floor_us))
    if not 0 < at_floor < len(runs):
        sys.exit("FAIL: the floor must hold some runs and not all (%d of %d)" %
                 (at_floor, len(runs)))
    without = os.path.join(a.out, "without-floor.json")
    json.dump(doc, open(without, "w"), indent=1)
    for r in runs:
        r["latency_floor_ms"] = floor_ms
    with_floor = os.path.join(a.out, "with-floor.json")
    json.dump(doc, open(with_floor, "w"), indent=1)

    truth = {k: v for k, v in quantities(a.truth).items() if not k.startswith("calibration.")}
    if not truth:
        sys.exit("FAIL: the truth overlay moves no constant")
    fit = [x for f in a.fit for x in ("--fit", f)]
    failures = []
    print("== with latency_floor_ms")
    overlay = os.path.join(a.out, "with-floor.toml")
    for key, err in fitted_errors(a.nnergy, a.hw, with_floor, overlay, fit, truth).items():
        if abs(err) > a.tolerance:
            failures.append("with the floor, %s is %+.2f%% from the truth (tolerance %g%%)" %
                            (key, err, a.tolerance))
    check = json.loads(run([a.nnergy, "validate", "--hw", "%s+%s" % (a.hw, overlay), with_floor,
                            "--ops", "--format", "json"]))
    for m in check["modes"]:
        if m["latency"]["mape_pct"] > 0.5:
            failures.append("validate --hw %s+OVERLAY: latency MAPE %.2f%% (expected < 0.5%%)" %
                            (a.hw, m["latency"]["mape_pct"]))
    print("== the same latencies without it")
    missed = fitted_errors(a.nnergy, a.hw, without, os.path.join(a.out, "without-floor.toml"),
                           fit, truth)
    if all(abs(err) <= a.tolerance for err in missed.values()):
        failures.append("without the floor the fit found the truth too: the floor made no "
                        "difference, so this check shows nothing")
    if failures:
        sys.exit("FAIL:\n  " + "\n  ".join(failures))
    print("ok: %d constants recovered within %g%% with the floor; missed without it" %
          (len(truth), a.tolerance))


if __name__ == "__main__":
    main()
