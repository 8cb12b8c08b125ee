#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A table calibrated on op runs holds on op shapes it never saw: for each family of shapes
(the models an op run's shape comes from), the table is refitted without that family's runs,
starting from another table's values (not from the entry's fit), and predicts them. Fails when
the held-out MAPE exceeds --max-ratio times the in-sample MAPE of the entry's own table on the
same runs, or --max-mape.

usage: check_op_family_leave_out.py NNERGY OUT_DIR ENTRY.toml OPS.json --op-class CLASS
       --precision P --table gpu.kernels.conv.float32 --start-from gpu.kernels.conv
       --family NAME=PREFIX[,PREFIX...] ... [--fix PATTERN ...] [--fit-to QUANTITIES]
       [--max-ratio R] [--max-mape PCT]
"""
import argparse
import json
import os
import subprocess
import sys
import tomllib


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr[-600:]))


def table_of(path, dotted):
    with open(path, "rb") as f:
        t = tomllib.load(f)
    for part in dotted.split("."):
        t = t.get(part, {})
    return {k: v for k, v in t.items() if isinstance(v, dict) and "value" in v}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nnergy")
    ap.add_argument("out")
    ap.add_argument("entry")
    ap.add_argument("ops")
    ap.add_argument("--op-class", required=True)
    ap.add_argument("--precision", required=True)
    ap.add_argument("--table", required=True, help="the calibrated table, e.g. gpu.kernels.conv.float32")
    ap.add_argument("--start-from", required=True, help="the table whose values each refit starts from")
    ap.add_argument("--family", action="append", required=True, help="NAME=PREFIX[,PREFIX...] of params.source")
    ap.add_argument("--fix", action="append", default=[])
    ap.add_argument("--fit-to", help="calibrate's --fit-to")
    ap.add_argument("--max-ratio", type=float, default=1.5)
    ap.add_argument("--max-mape", type=float, default=100.0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    fitted = table_of(a.entry, a.table)
    start = table_of(a.entry, a.start_from)
    if not fitted:
        sys.exit("FAIL: %s has no [%s]" % (a.entry, a.table))
    lines = ['schema = "nnergy.hardware/1"', 'base = "%s"' % os.path.abspath(a.entry),
             "", "[%s]" % a.table]
    for key in fitted:
        if key not in start:
            sys.exit("FAIL: [%s] has no %s to start from" % (a.start_from, key))
        lines.append('%s = { value = %r, unit = "%s", source = "the [%s] value" }'
                     % (key, start[key]["value"], start[key]["unit"], a.start_from))
    start_overlay = os.path.join(a.out, "start.toml")
    with open(start_overlay, "w") as f:
        f.write("\n".join(lines) + "\n")

    document = json.load(open(a.ops))
    families = [(f.split("=", 1)[0], tuple(f.split("=", 1)[1].split(","))) for f in a.family]

    def family(run_):
        source = run_.get("params", {}).get("source", "")
        for name, prefixes in families:
            if source.startswith(prefixes):
                return name
        return None

    def mine(run_):
        return run_.get("kind") == "op" and run_.get("op_class") == a.op_class and \
            run_.get("precision") == a.precision

    def errors(hardware, path):
        report = os.path.join(a.out, "validate.json")
        run([a.nnergy, "--quiet", "validate", "--hw", hardware, "--ops", path, "--format", "json",
             "-o", report])
        return [abs(c["latency_s"]["error_pct"]) for c in json.load(open(report))["configurations"]
                if c["latency_s"].get("error_pct") is not None]

    held_out, in_sample = [], []
    for name, _ in families:
        train = dict(document, runs=[r for r in document["runs"] if not (mine(r) and family(r) == name)])
        test = dict(document, runs=[r for r in document["runs"] if mine(r) and family(r) == name])
        if not test["runs"]:
            sys.exit("FAIL: no %s %s op runs of family %s" % (a.op_class, a.precision, name))
        train_path = os.path.join(a.out, "train-%s.json" % name)
        test_path = os.path.join(a.out, "test-%s.json" % name)
        json.dump(train, open(train_path, "w"))
        json.dump(test, open(test_path, "w"))
        overlay = os.path.join(a.out, "without-%s.toml" % name)
        run([a.nnergy, "--quiet", "calibrate", a.entry + "+" + start_overlay, train_path, "--runs",
             "op", "--fit", a.table + ".*", "-o", overlay] + [x for f in a.fix for x in ("--fix", f)] +
            (["--fit-to", a.fit_to] if a.fit_to else []))
        h = errors(overlay, test_path)  # stacked: overlay -> start -> entry
        i = errors(a.entry, test_path)
        print("%-8s %3d runs: held out %5.1f %%, in sample %5.1f %%" %
              (name, len(h), sum(h) / len(h), sum(i) / len(i)))
        held_out += h
        in_sample += i
    h = sum(held_out) / len(held_out)
    i = sum(in_sample) / len(in_sample)
    print("%s %s op runs (%d): held out %.1f %%, in sample %.1f %%, ratio %.2fx" %
          (a.op_class, a.precision, len(held_out), h, i, h / i))
    if h > a.max_ratio * i or h > a.max_mape:
        sys.exit("FAIL: held-out MAPE %.1f %% against %.1f %% in sample (at most %.2fx, %.0f %%)"
                 % (h, i, a.max_ratio, a.max_mape))
    print("ok")


if __name__ == "__main__":
    main()
