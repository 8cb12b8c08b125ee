#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""check_leave_out_formats.py OUT.json OUT.md OUT.html: the leave-out section of the three files
`nnergy validate --leave-out model` wrote for one validation: the JSON figures agree with the
held-out errors listed, and Markdown and HTML carry the section with its rows."""
import json
import sys


def main(argv):
    json_file, md_file, html_file = argv
    doc = json.load(open(json_file, encoding="utf-8"))
    lo = doc["leave_out"]
    assert lo["unit"] == "model", lo["unit"]
    assert len(lo["groups"]) >= 2 and lo["parameters"], lo
    held = lo["held_out"]
    assert {c["model"] for c in held} == set(lo["groups"]), "a group was not held out"
    for row in lo["modes"]:
        if row["metric"] != "latency":
            continue
        errors = [abs(c["latency_error_pct"]) for c in held if c["mode"] == row["mode"]]
        assert len(errors) == row["configurations"], row
        assert abs(row["held_out_mape_pct"] - sum(errors) / len(errors)) < 1e-9, row
        assert abs(row["ratio"] - row["held_out_mape_pct"] / row["in_sample_mape_pct"]) < 1e-9
        entry = [m for m in doc["modes"] if m["mode"] == row["mode"]][0]
        assert abs(row["entry_mape_pct"] - entry["latency"]["mape_pct"]) < 1e-9, row
    md = open(md_file, encoding="utf-8").read()
    assert "## Leave one model out" in md, "no Markdown section"
    assert "| metric | mode | configurations | entry MAPE | in sample | held out | ratio |" in md
    for g in lo["groups"]:
        assert "\n| %s | " % g in md, "no Markdown row for %s" % g
    html = open(html_file, encoding="utf-8").read()
    assert "<h2>Leave one model out</h2>" in html, "no HTML section"
    for g in lo["groups"]:
        assert "<tr><td>%s</td>" % g in html, "no HTML row for %s" % g
    print("ok: %d groups held out, figures agree in JSON, Markdown and HTML" % len(lo["groups"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
