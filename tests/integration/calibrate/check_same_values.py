#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Constants of a hardware file that are copies of others ("as <key>" in their source) must
keep the value they copy: recalibrating the original leaves a stale copy otherwise.

usage: check_same_values.py ENTRY.toml COPY=ORIGINAL...
"""
import sys

from quantities import quantities


def main():
    if len(sys.argv) < 3 or any("=" not in a for a in sys.argv[2:]):
        sys.exit(__doc__)
    values = quantities(sys.argv[1])
    bad = []
    for pair in sys.argv[2:]:
        copy, original = pair.split("=", 1)
        for key in (copy, original):
            if key not in values:
                bad.append(f"{key}: not in {sys.argv[1]}")
        if copy in values and original in values and values[copy] != values[original]:
            bad.append(f"{copy} is {values[copy]}, but {original}, which it copies, is "
                       f"{values[original]}")
    if bad:
        print("FAIL:\n  " + "\n  ".join(bad))
        return 1
    print(f"ok: {len(sys.argv) - 2} copies agree with their originals")
    return 0


if __name__ == "__main__":
    sys.exit(main())
