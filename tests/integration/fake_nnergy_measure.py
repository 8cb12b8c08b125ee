#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for `nnergy measure` with one constant-power meter, for the harness's tests.

    fake_nnergy_measure.py measure [--gpu N] [--rapl] --json FILE -- COMMAND...

Runs COMMAND and writes a measurement file whose one command run has a `package-0` domain
drawing exactly 10 W for the whole command, so the energy the harness derives per call is
known: 10 W x the loop's length / its calls.
"""
import json
import subprocess
import sys
import time

POWER_W = 10.0


def main(argv):
    if len(argv) < 1 or argv[0] != "measure":
        print("usage: fake_nnergy_measure.py measure --json FILE -- COMMAND...", file=sys.stderr)
        return 2
    if "--help" in argv:
        print(__doc__)
        return 0
    args = argv[1:]
    dash = args.index("--")
    options, command = args[:dash], args[dash + 1:]
    out = options[options.index("--json") + 1]
    start = time.monotonic()
    rc = subprocess.run(command, check=False).returncode
    duration = time.monotonic() - start
    doc = {"schema": "nnergy.measurements/1", "machine": {"name": "fake"},
           "runs": [{"kind": "command", "name": " ".join(command), "exit_status": rc,
                     "duration_s": duration,
                     "energy": {"package-0": {"meter": "fake", "energy_j": POWER_W * duration,
                                              "mean_power_w": POWER_W, "window_s": duration,
                                              "method": "counter"}}}]}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
