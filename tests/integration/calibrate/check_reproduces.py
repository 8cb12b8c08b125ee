#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A catalog entry whose constants are nnergy calibrate's output: calibrating it again on the
same measurements must leave every fitted constant within --tolerance of the entry's value.

usage: check_reproduces.py NNERGY OUT_DIR ENTRY.toml [MEASUREMENTS...] [--recipe FILE]
       [--fit PATTERN ...] [--fix PATTERN ...] [--tie FOLLOWER=LEADER ...] [--runs model|op|all]
       [--dim SPEC ...] [--objective NAME] [--fit-to QUANTITIES] [--tolerance PCT]
(a --recipe gives the measurements, and what to fit, when the command line does not)
"""
import argparse
import os
import subprocess
import sys

from quantities import quantities


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nnergy")
    ap.add_argument("out")
    ap.add_argument("entry")
    ap.add_argument("measurements", nargs="*")
    ap.add_argument("--recipe", help="calibrate's --recipe")
    ap.add_argument("--fit", action="append", default=[],
                    help="the constants the entry's own calibration fitted (default: calibrate's)")
    ap.add_argument("--fix", action="append", default=[],
                    help="a constant the entry's own calibration held")
    ap.add_argument("--runs", help="calibrate's --runs")
    ap.add_argument("--dim", action="append", default=[], help="calibrate's --dim")
    ap.add_argument("--tie", action="append", default=[], help="calibrate's --tie")
    ap.add_argument("--objective", help="calibrate's --objective")
    ap.add_argument("--fit-to", help="calibrate's --fit-to")
    ap.add_argument("--tolerance", type=float, default=1.0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    overlay = os.path.join(a.out, "recalibrated.toml")
    p = subprocess.run([a.nnergy, "calibrate", a.entry] + a.measurements + ["-o", overlay] +
                       (["--recipe", a.recipe] if a.recipe else []) +
                       (["--runs", a.runs] if a.runs else []) +
                       [x for f in a.fit for x in ("--fit", f)] +
                       [x for f in a.fix for x in ("--fix", f)] +
                       [x for d in a.dim for x in ("--dim", d)] +
                       [x for t in a.tie for x in ("--tie", t)] +
                       (["--objective", a.objective] if a.objective else []) +
                       (["--fit-to", a.fit_to] if a.fit_to else []),
                       capture_output=True, text=True)
    print(p.stdout, p.stderr)
    if p.returncode != 0:
        sys.exit("FAIL: calibrate exited %d" % p.returncode)
    entry = quantities(a.entry)
    fitted = {k: v for k, v in quantities(overlay).items()
              if not k.startswith("calibration.")}
    if not fitted:
        sys.exit("FAIL: the overlay fits no constant")
    failures = []
    for key, value in sorted(fitted.items()):
        if key not in entry:
            failures.append("%s: fitted, but the entry has no such constant" % key)
            continue
        err = 100 * (value / entry[key] - 1)
        print("%-55s entry %-10g recalibrated %-10g %+.2f%%" % (key, entry[key], value, err))
        if abs(err) > a.tolerance:
            failures.append("%s: the entry has %g, calibrate gives %g (%+.2f%%)" %
                            (key, entry[key], value, err))
    if failures:
        sys.exit("FAIL: the entry is not calibrate's output (tolerance %g%%):\n  %s" %
                 (a.tolerance, "\n  ".join(failures)))
    print("ok: %d constants reproduced within %g%%" % (len(fitted), a.tolerance))


if __name__ == "__main__":
    main()
