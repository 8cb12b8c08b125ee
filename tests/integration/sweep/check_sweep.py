#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the rows of an `nnergy sweep` output file (CSV or JSON Lines, by extension).

  check_sweep.py FILE --rows N [--columns a,b,...] [--errors N] [--configs N]

Every line is complete (ends with a newline, has every column), every configuration appears
once, --rows rows in all, --errors of them with status error (default 0), and every ok row has
positive latency, flops and macs. --configs N: the config column holds 0..N-1 exactly once.
"""
import argparse
import csv
import io
import json
import sys

FIXED = ["config", "model", "hardware", "class", "precision"]
TAIL = ["runtime", "status", "latency_s", "energy_j", "average_power_w", "edp_j_s",
        "peak_memory_bytes", "inferences_per_j", "fits", "flops", "macs", "params", "error"]


def read_rows(path):
    """The rows as dicts and the column names, failing on any incomplete line."""
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8")
    if text and not text.endswith("\n"):
        sys.exit(f"{path}: the last line is cut short (no newline)")
    if path.endswith(".jsonl"):
        rows, columns = [], None
        for n, line in enumerate(text.splitlines(), 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON: {e}")
            if columns is None:
                columns = list(row.keys())
            elif list(row.keys()) != columns:
                sys.exit(f"{path}:{n}: keys {list(row.keys())} differ from the first row's")
            rows.append(row)
        return rows, columns or []
    reader = csv.reader(io.StringIO(text, newline=""))
    lines = list(reader)
    if not lines:
        sys.exit(f"{path}: empty, not even a header")
    columns = lines[0]
    rows = []
    for n, fields in enumerate(lines[1:], 2):
        if len(fields) != len(columns):
            sys.exit(f"{path}:{n}: {len(fields)} fields, the header has {len(columns)}")
        rows.append(dict(zip(columns, fields)))
    return rows, columns


def key_of(row, columns):
    dims = columns[len(FIXED):columns.index("runtime")]
    return (row["model"], row["hardware"], row["precision"],
            tuple(str(row[d]) for d in dims), row["runtime"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--columns", default="")
    ap.add_argument("--errors", type=int, default=0)
    ap.add_argument("--configs", type=int)
    a = ap.parse_args()

    rows, columns = read_rows(a.file)
    if columns[:len(FIXED)] != FIXED or columns[-len(TAIL):] != TAIL:
        sys.exit(f"{a.file}: columns {columns} are not config, model, hardware, class, "
                 f"precision, dims..., {', '.join(TAIL)}")
    for c in filter(None, a.columns.split(",")):
        if c not in columns:
            sys.exit(f"{a.file}: no column '{c}' in {columns}")
    if len(rows) != a.rows:
        sys.exit(f"{a.file}: {len(rows)} rows, expected {a.rows}")
    keys = [key_of(r, columns) for r in rows]
    if len(set(keys)) != len(keys):
        sys.exit(f"{a.file}: a configuration appears twice")
    configs = [int(r["config"]) for r in rows]
    if len(set(configs)) != len(configs):
        sys.exit(f"{a.file}: a config index appears twice")
    if a.configs is not None and sorted(configs) != list(range(a.configs)):
        sys.exit(f"{a.file}: config indices are not 0..{a.configs - 1} once each")
    errors = [r for r in rows if r["status"] == "error"]
    if len(errors) != a.errors:
        sys.exit(f"{a.file}: {len(errors)} rows with status error, expected {a.errors}: "
                 f"{[r['error'] for r in errors][:3]}")
    for r in rows:
        if r["status"] == "error":
            if not r["error"]:
                sys.exit(f"{a.file}: config {r['config']} failed without a message")
            continue
        if r["status"] != "ok":
            sys.exit(f"{a.file}: config {r['config']}: status '{r['status']}'")
        for c in ("latency_s", "flops", "macs"):
            if not float(r[c]) > 0:
                sys.exit(f"{a.file}: config {r['config']}: {c} = {r[c]!r}, expected > 0")
    print(f"{a.file}: {len(rows)} rows, {len(errors)} failed, columns {columns}")


if __name__ == "__main__":
    main()
