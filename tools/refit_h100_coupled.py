#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Re-runs the H100 entry's coupled `nnergy calibrate` fits until they agree, writing each
fit's values into configs/hardware/h100-sxm5.toml.

The eager op runs are priced as the longer of host dispatch and device time, so the per-class
dispatch costs and the kernel tables fitted to the same runs move each other, and the per-pass
cost fitted to the five models sits on top of both. Each fit below is one of the entry's
`*_is_calibrate_output` tests (tests/integration/calibrate/CMakeLists.txt, same arguments): run
in turn, each on the entry as the previous ones left it, until no fitted constant moves by more
than --tolerance percent in a whole round. The values are written as calibrate prints them; the
lines' units and sources stay as they are.

The energy coefficients come last (they read the kernel times and SM shares the tables give,
and move no latency): then run tools/scale_gpu_energy.py --write, which carries them to the
NVIDIA parts nobody here measured.

usage: tools/refit_h100_coupled.py [--nnergy BUILD/bin/nnergy] [--entry TOML] [--rounds N]
                                   [--tolerance PCT] [--dry-run]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASUREMENTS = os.path.join(ROOT, "tests", "data", "measurements")
OPS = os.path.join(MEASUREMENTS, "gpu-h100-sxm5.json")
MODELS = os.path.join(MEASUREMENTS, "h100-models.json")
# The energy fit (docs/calibrate.md, "Where the catalog stands"): its recipe names the
# measurements, the coefficients fitted and those scaled from them keeping their ratios.
ENERGY_FIT = ["--recipe", os.path.join(MEASUREMENTS, "h100-sxm5-energy.calibration.toml")]

# (what, calibrate arguments after the entry): the order is the dependency order, host costs
# first (they set how much of an eager op run is left to the device), the per-pass cost last.
FITS = [
    ("eager dispatch per class and type",
     [OPS, "--runs", "op", "--fit-to", "latency",
      "--fit", "runtime.pytorch-eager.dispatch.per_class.*", "--objective", "log-mean-abs"]),
    ("grouped convolutions",
     [OPS, "--runs", "op", "--fit-to", "latency", "--fit", "gpu.kernels.grouped_conv.*",
      "--fix", "runtime.*"]),
    ("strict fp32 convolutions",
     [OPS, "--runs", "op", "--fit-to", "latency", "--fit", "gpu.kernels.conv.float32.*",
      "--fix", "runtime.*"]),
    ("16-bit batch normalization",
     [OPS, "--runs", "op", "--fit-to", "latency", "--fit", "gpu.kernels.batch_norm.float16.*",
      "--fit", "gpu.kernels.batch_norm.bfloat16.*", "--fix", "runtime.*"]),
    ("eager host cost per forward pass",
     [MODELS, "--runs", "model", "--dim", "bert_base:seq=128",
      "--fit", "runtime.pytorch-eager.dispatch.per_call", "--objective", "log-mean-abs"]),
    ("energy coefficients", ENERGY_FIT),
]

HEADER = re.compile(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$")
QUANTITY = re.compile(r'^(\s*)("[^"]+"|[A-Za-z0-9_-]+)(\s*=\s*\{\s*value\s*=\s*)([^,}\s]+)')


def key_name(token):
    return token[1:-1] if token.startswith('"') else token


def literal_values(path):
    """{dotted key: the value's literal text} of every { value = ... } line of a TOML file."""
    out, section = {}, ""
    with open(path) as f:
        for line in f:
            if m := HEADER.match(line):
                section = m.group(1).strip()
            elif m := QUANTITY.match(line):
                out[section + "." + key_name(m.group(2))] = m.group(4)
    return out


def write_values(path, values):
    """Replaces the value of each dotted key in `values`; every key must be in the file."""
    lines, section, seen = [], "", set()
    with open(path) as f:
        for line in f:
            if m := HEADER.match(line):
                section = m.group(1).strip()
            elif (m := QUANTITY.match(line)) and section + "." + key_name(m.group(2)) in values:
                key = section + "." + key_name(m.group(2))
                line = line[:m.start(4)] + values[key] + line[m.end(4):]
                seen.add(key)
            lines.append(line)
    missing = sorted(set(values) - seen)
    if missing:
        sys.exit("%s: no line for %s" % (path, ", ".join(missing)))
    with open(path, "w") as f:
        f.writelines(lines)


def calibrate(nnergy, entry, args, workdir):
    overlay = os.path.join(workdir, "overlay.toml")
    p = subprocess.run([nnergy, "calibrate", entry] + args + ["-o", overlay],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("calibrate %s failed (exit %d):\n%s%s" % (" ".join(args), p.returncode,
                                                            p.stdout, p.stderr))
    with open(overlay, "rb") as f:
        tomllib.load(f)  # must parse
    fitted = literal_values(overlay)
    return {k: v for k, v in fitted.items() if not k.startswith("calibration.")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nnergy", default=os.path.join(ROOT, "build", "bin", "nnergy"))
    ap.add_argument("--entry", default=os.path.join(ROOT, "configs", "hardware", "h100-sxm5.toml"))
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--tolerance", type=float, default=0.2,
                    help="percent; stop after a round in which no constant moved more")
    ap.add_argument("--dry-run", action="store_true",
                    help="fit a copy of the entry; print the moves, change nothing")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        entry = a.entry
        if a.dry_run:
            entry = os.path.join(workdir, os.path.basename(a.entry))
            with open(a.entry) as src, open(entry, "w") as dst:
                dst.write(src.read())
        for round_number in range(1, a.rounds + 1):
            largest = 0.0
            for what, args in FITS:
                before = literal_values(entry)
                fitted = calibrate(a.nnergy, entry, args, workdir)
                moves = []
                for key, text in sorted(fitted.items()):
                    old = float(before[key])
                    new = float(text)
                    change = 100.0 * (new / old - 1.0) if old else (0.0 if new == 0 else 100.0)
                    largest = max(largest, abs(change))
                    if abs(change) > 0.0:
                        moves.append("    %-62s %10s -> %-10s %+7.2f%%" % (key, before[key], text,
                                                                          change))
                write_values(entry, fitted)
                print("round %d, %s: %d constants, %d moved" % (round_number, what, len(fitted),
                                                              len(moves)))
                for m in moves:
                    print(m)
            print("round %d: largest move %.3f%%" % (round_number, largest))
            if largest <= a.tolerance:
                print("converged: every fit reproduces the entry within %g%%" % a.tolerance)
                return
        sys.exit("not converged after %d rounds (largest move %.3f%%)" % (a.rounds, largest))


if __name__ == "__main__":
    main()
