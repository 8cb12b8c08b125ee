#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An overlay's values take effect: the same estimate on the base entry and on the overlay.

    check_overlay_effect.py analyze NNERGY BASE OVERLAY MODEL
        the overlay (its conv efficiency lower than the base's) makes MODEL slower
    check_overlay_effect.py validate NNERGY BASE OVERLAY MEASUREMENTS
        calibrate's overlay gives a lower latency MAPE than the base, on the runs it was fit to
"""
import json
import subprocess
import sys


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True, check=False)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    return json.loads(r.stdout)


mode, nnergy, base, overlay, what = sys.argv[1:6]
if mode == "analyze":
    def latency(hw):
        return run(nnergy, "analyze", what, "--hw", hw, "--batch", "1",
                   "--format", "json")["runs"][0]["totals"]["latency_s"]
    a, b = latency(base), latency(overlay)
    print(f"{what}: {a * 1e3:.3f} ms on {base}, {b * 1e3:.3f} ms on {overlay}")
    ok = b > 1.1 * a
else:
    def mape(hw):
        modes = run(nnergy, "validate", "--hw", hw, what, "--format", "json")["modes"]
        return modes[0]["latency"]["mape_pct"]
    a, b = mape(base), mape(f"{base}+{overlay}")
    print(f"latency MAPE {a:.3f} on {base}, {b:.3f} with {overlay}")
    ok = b < a
if not ok:
    print("FAIL: the overlay did not change the estimate as it should")
sys.exit(0 if ok else 1)
