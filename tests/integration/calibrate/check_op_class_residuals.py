#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""calibrate's per-class residuals are validate's per-class errors: the overlay's
[calibration.residuals.<mode>.op_class.<class>] latency_mape_before is what `validate --ops`
of the entry gives that class, and latency_mape what `validate --ops` of the entry with the
overlay gives it; every class of the op runs has its table.

usage: check_op_class_residuals.py NNERGY OUT_DIR HARDWARE OPS.json... -- CALIBRATE_ARGS...
"""
import os
import subprocess
import sys
import tomllib

from op_runs_check import command_line, validate_ops


def per_class(nnergy, hardware, files, report):
    doc = validate_ops(nnergy, hardware, files, report)
    return {(c["mode"], c["op_class"]): c["latency"]["mape_pct"] for c in doc["op_classes"]}


def main():
    nnergy, out, hardware, files, extra = command_line(sys.argv[1:])
    overlay = os.path.join(out, "overlay.toml")
    subprocess.run([nnergy, "--quiet", "calibrate", hardware] + files + ["-o", overlay] + extra,
                   check=True, stdout=subprocess.DEVNULL)
    before = per_class(nnergy, hardware, files, os.path.join(out, "before.json"))
    after = per_class(nnergy, hardware + "+" + overlay, files, os.path.join(out, "after.json"))
    residuals = tomllib.load(open(overlay, "rb"))["calibration"]["residuals"]
    failures = []
    for (mode, op_class), mape in after.items():
        table = residuals.get(mode, {}).get("op_class", {}).get(op_class)
        if table is None:
            failures.append(f"no residuals for {mode} {op_class}")
            continue
        # The overlay writes two decimals.
        for key, expected in (("latency_mape_before", before[(mode, op_class)]),
                              ("latency_mape", mape)):
            written = table[key]["value"]
            if abs(written - expected) > 0.006:
                failures.append(f"{mode} {op_class} {key}: {written}, validate says {expected:.3f}")
    if len(after) < 2:
        failures.append(f"only {len(after)} class(es): the check needs op runs of several")
    for f in failures:
        print(f)
    print(f"{len(after)} classes checked")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
