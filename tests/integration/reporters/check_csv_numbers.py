#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a CSV report against the JSON report of the same run: every row names a kernel (or a
run) of the JSON, every number equals the JSON's number exactly, every text equals its text,
and every metric and total of the JSON has a column.

    check_csv_numbers.py KERNELS.csv TOTALS.csv REPORT.json
"""
import csv
import json
import math
import sys

RUN_COLUMNS = ["run", "hardware", "precision", "dims"]
KERNEL_FIELDS = ["macs", "flops", "input_bytes", "output_bytes", "weight_bytes",
                 "arithmetic_intensity"]

failures = []
compared = 0


def fail(msg):
    failures.append(msg)


def same(where, cell, value):
    """cell: the CSV text; value: the JSON value (absent: None)."""
    global compared
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        if cell != "":
            fail(f"{where}: CSV has {cell!r}, JSON has no value")
        return
    if isinstance(value, bool):
        if cell != ("true" if value else "false"):
            fail(f"{where}: CSV has {cell!r}, JSON has {value}")
        return
    if isinstance(value, (int, float)):
        compared += 1
        try:
            parsed = float(cell)
        except ValueError:
            fail(f"{where}: CSV has {cell!r}, not a number (JSON {value!r})")
            return
        if parsed != float(value):
            fail(f"{where}: CSV {cell} != JSON {value!r}")
        if isinstance(value, int) and cell != str(value):
            fail(f"{where}: CSV {cell!r} is not the JSON integer {value}")
        return
    if isinstance(value, str):
        if cell != value:
            fail(f"{where}: CSV {cell!r} != JSON {value!r}")
        return
    fail(f"{where}: JSON value {value!r} has no CSV form")


def dims_text(run, doc):
    dims = run.get("dims", doc["model"].get("dims", {}))
    return " ".join(f"{k}={v}" for k, v in dims.items())


def check_identity(where, row, index, run, doc):
    arch = run["architecture"]
    for col, want in (("run", str(index + 1)), ("hardware", arch.get("hardware", "")),
                      ("precision", arch.get("precision", "")), ("dims", dims_text(run, doc))):
        if row.get(col) != want:
            fail(f"{where}: column {col} is {row.get(col)!r}, expected {want!r}")


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames or [], list(reader)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kernels_csv, totals_csv, report = sys.argv[1:]
    with open(report, encoding="utf-8") as f:
        doc = json.load(f)
    runs = doc["runs"]

    header, rows = read(kernels_csv)
    fixed = RUN_COLUMNS + ["kernel", "name", "pattern", "ops"] + KERNEL_FIELDS
    if header[:len(fixed)] != fixed:
        fail(f"{kernels_csv}: header starts {header[:len(fixed)]}, expected {fixed}")
    metric_columns = {}
    for col in header[len(fixed):]:
        key = col[len("metrics."):] if col.startswith("metrics.") and col[8:] in fixed else col
        metric_columns[col] = key
    want_rows = sum(len(r["kernels"]) for r in runs)
    if len(rows) != want_rows:
        fail(f"{kernels_csv}: {len(rows)} rows, the JSON has {want_rows} kernels")
    for n, row in enumerate(rows, start=2):
        where = f"{kernels_csv}:{n}"
        run_index = int(row["run"]) - 1
        run = runs[run_index]
        matches = [k for k in run["kernels"] if str(k["index"]) == row["kernel"]]
        if len(matches) != 1:
            fail(f"{where}: run {row['run']} has no kernel {row['kernel']}")
            continue
        k = matches[0]
        check_identity(where, row, run_index, run, doc)
        same(where + " name", row["name"], k["name"])
        same(where + " pattern", row["pattern"], k["pattern"])
        same(where + " ops", row["ops"], "+".join(k["ops"]))
        for field in KERNEL_FIELDS:
            same(f"{where} {field}", row[field], k.get(field))
        metrics = k.get("metrics", {})
        for col, key in metric_columns.items():
            same(f"{where} {col}", row[col], metrics.get(key))
        missing = [m for m in metrics if not m.startswith("op.") and m not in metric_columns.values()]
        if missing:
            fail(f"{where}: metrics without a column: {missing}")

    header, rows = read(totals_csv)
    if header[:4] != RUN_COLUMNS:
        fail(f"{totals_csv}: header starts {header[:4]}, expected {RUN_COLUMNS}")
    columns = {c: (c[len("totals."):] if c.startswith("totals.") and c[7:] in RUN_COLUMNS else c)
               for c in header[4:]}
    if len(rows) != len(runs):
        fail(f"{totals_csv}: {len(rows)} rows, the JSON has {len(runs)} runs")
    for n, (row, run) in enumerate(zip(rows, runs), start=2):
        where = f"{totals_csv}:{n}"
        check_identity(where, row, n - 2, run, doc)
        for col, key in columns.items():
            same(f"{where} {col}", row[col], run["totals"].get(key))
        missing = [t for t in run["totals"] if t not in columns.values()]
        if missing:
            fail(f"{where}: totals without a column: {missing}")

    # A CSV without numbers would pass every comparison above.
    if compared < want_rows * 10:
        fail(f"only {compared} numbers compared for {want_rows} kernels")
    for f in failures[:40]:
        print(f, file=sys.stderr)
    if failures:
        sys.exit(f"{len(failures)} mismatch(es) between the CSV and the JSON report")
    print(f"{compared} numbers equal in the CSV and the JSON report")


if __name__ == "__main__":
    main()
