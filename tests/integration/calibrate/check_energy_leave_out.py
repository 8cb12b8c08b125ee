#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Energy coefficients calibrated on op runs hold on runs they never saw: each op run with an
energy (--leave-out run), or each op class in turn (--leave-out class), is left out, the
coefficients are refitted without it (calibrate with the given arguments) and predict it.
Prints the held-out and the in-sample energy MAPE (the entry's own coefficients on the same
runs), per class with --leave-out class; fails when the held-out MAPE exceeds --max-ratio times
the in-sample one, or --max-mape.

A coefficient no remaining run depends on is not identified and keeps the entry's value (bf16
tensor cores without the GEMMs): that class's held-out error is then partly in sample.

usage: check_energy_leave_out.py NNERGY OUT_DIR ENTRY.toml OPS.json... [--leave-out run|class]
       [--max-ratio R] [--max-mape PCT] -- CALIBRATE_ARGS...
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr[-600:]))


def main():
    argv = sys.argv[1:]
    calibrate_args = []
    if "--" in argv:
        cut = argv.index("--")
        argv, calibrate_args = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser()
    ap.add_argument("nnergy")
    ap.add_argument("out")
    ap.add_argument("entry")
    ap.add_argument("ops", nargs="+")
    ap.add_argument("--leave-out", choices=("run", "class"), default="run")
    ap.add_argument("--max-ratio", type=float, default=1.5)
    ap.add_argument("--max-mape", type=float, default=100.0)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    documents = [json.load(open(p)) for p in a.ops]

    def has_energy(r):
        return r.get("kind") == "op" and any(
            isinstance(e, dict) and e.get("energy_j") for e in (r.get("energy") or {}).values())

    # Each group: a name and the runs it holds, as (file index, run index).
    groups = {}
    for f, d in enumerate(documents):
        for i, r in enumerate(d["runs"]):
            if has_energy(r):
                name = r["op_class"] if a.leave_out == "class" else "%s run %d" % (
                    os.path.basename(a.ops[f]), i)
                groups.setdefault(name, set()).add((f, i))

    def split(keep, where, stem):
        paths = []
        for f, d in enumerate(documents):
            part = dict(d, runs=[r for i, r in enumerate(d["runs"]) if keep(f, i)])
            path = os.path.join(where, "%s-%d.json" % (stem, f))
            if part["runs"]:
                json.dump(part, open(path, "w"))
                paths.append(path)
        return paths

    def energy_errors(hardware, paths, where):
        report = os.path.join(where, "validate.json")
        run([a.nnergy, "--quiet", "validate", "--hw", hardware, "--ops"] + paths +
            ["--format", "json", "-o", report])
        return [abs(c["energy_j"]["error_pct"]) for c in json.load(open(report))["configurations"]
                if c["energy_j"].get("error_pct") is not None]

    def refit_without(index, name):
        """(held-out errors, in-sample errors) of the group's runs."""
        members = groups[name]
        where = os.path.join(a.out, "group-%d" % index)
        os.makedirs(where, exist_ok=True)
        train = split(lambda f, i: (f, i) not in members, where, "train")
        overlay = os.path.join(where, "without.toml")
        run([a.nnergy, "--quiet", "calibrate", a.entry] + train + ["-o", overlay] +
            calibrate_args)
        test = split(lambda f, i: (f, i) in members, where, "test")
        return energy_errors(overlay, test, where), energy_errors(a.entry, test, where)

    names = sorted(groups)
    # The refits are independent: one per core.
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(refit_without, range(len(names)), names))
    held_out, in_sample = [], []
    for name, (h, i) in zip(names, results):
        if a.leave_out == "class":
            print("%-20s %3d runs: held out %5.1f %%, in sample %5.1f %%" %
                  (name, len(h), sum(h) / len(h), sum(i) / len(i)))
        held_out += h
        in_sample += i
    h = sum(held_out) / len(held_out)
    i = sum(in_sample) / len(in_sample)
    print("energy of %d op runs, each %s left out in turn: held out %.1f %%, in sample "
          "%.1f %%, ratio %.2fx" % (len(held_out), a.leave_out, h, i, h / i))
    if h > a.max_ratio * i or h > a.max_mape:
        sys.exit("FAIL: held-out MAPE %.1f %% against %.1f %% in sample (at most %.2fx, %.0f %%)"
                 % (h, i, a.max_ratio, a.max_mape))
    print("ok")


if __name__ == "__main__":
    main()
