#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Constants of a hardware file that are copies of others ("as <key>" in their source) must
keep the value they copy: recalibrating the original leaves a stale copy otherwise. With
--ratio R, each copy must be R times its original instead (to the 4 digits an overlay writes).

usage: check_same_values.py ENTRY.toml [--ratio R] COPY=ORIGINAL...
"""
import sys

from quantities import quantities


def main():
    args = sys.argv[1:]
    ratio = None
    if len(args) > 2 and args[1] == "--ratio":
        ratio = float(args[2])
        args = [args[0]] + args[3:]
    if len(args) < 2 or any("=" not in a for a in args[1:]):
        sys.exit(__doc__)
    values = quantities(args[0])
    bad = []
    for pair in args[1:]:
        copy, original = pair.split("=", 1)
        for key in (copy, original):
            if key not in values:
                bad.append(f"{key}: not in {args[0]}")
        if copy not in values or original not in values:
            continue
        if ratio is None and values[copy] != values[original]:
            bad.append(f"{copy} is {values[copy]}, but {original}, which it copies, is "
                       f"{values[original]}")
        if ratio is not None and abs(values[copy] / (ratio * values[original]) - 1) > 1e-3:
            bad.append(f"{copy} is {values[copy]}, not {ratio} x {original} "
                       f"({values[original]})")
    if bad:
        print("FAIL:\n  " + "\n  ".join(bad))
        return 1
    print(f"ok: {len(args) - 1} copies agree with their originals")
    return 0


if __name__ == "__main__":
    sys.exit(main())
