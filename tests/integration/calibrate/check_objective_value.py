#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""calibrate's objective before the fit is the entry's own errors in the objective's form:
with --objective relative-rms --fit-to energy, the root mean square of (estimate / measurement
- 1) over the energies only, computed here from `nnergy validate --ops` of the same files.

usage: check_objective_value.py NNERGY OUT_DIR HARDWARE OPS.json... -- CALIBRATE_ARGS...
"""
import math
import os
import re
import subprocess
import sys

from op_runs_check import command_line, validate_ops


def main():
    nnergy, out, hardware, files, extra = command_line(sys.argv[1:])
    doc = validate_ops(nnergy, hardware, files, os.path.join(out, "validate.json"))
    errors = [c["energy_j"]["error_pct"] / 100 for c in doc["configurations"]
              if c["energy_j"].get("error_pct") is not None]
    expected = math.sqrt(sum(e * e for e in errors) / len(errors))
    p = subprocess.run([nnergy, "calibrate", hardware] + files +
                       ["-o", os.path.join(out, "overlay.toml"), "--runs", "op",
                        "--objective", "relative-rms", "--fit-to", "energy",
                        "--max-sweeps", "1"] + extra, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: calibrate exited %d: %s" % (p.returncode, p.stderr[-600:]))
    m = re.search(r"RMS of \(estimate / measurement - 1\) of the energies: ([0-9.]+) ->",
                  p.stdout)
    if not m:
        sys.exit("FAIL: no relative-rms energy objective in calibrate's summary:\n" + p.stdout)
    before = float(m.group(1))
    print("objective before the fit: calibrate %.4f, from validate's %d energy errors %.4f" %
          (before, len(errors), expected))
    if abs(before - expected) > 5e-4:
        sys.exit("FAIL: calibrate's objective is not the RMS of the relative energy errors")
    print("ok")


if __name__ == "__main__":
    main()
