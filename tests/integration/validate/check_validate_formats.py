#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_validate_formats.py OUT.json OUT.md OUT.html CONFIGS: the three files `nnergy validate`
wrote for one validation agree with docs/validate.md: the JSON document's keys and counts, the
Markdown and HTML tables."""
import json
import sys


def main(argv):
    json_file, md_file, html_file, configs = argv[0], argv[1], argv[2], int(argv[3])
    with open(json_file, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["schema"] == "nnergy.validation/1", doc["schema"]
    assert len(doc["configurations"]) == configs, len(doc["configurations"])
    for c in doc["configurations"]:
        lat = c["latency_s"]
        assert lat["measured"] > 0 and lat["predicted"] > 0, c
        expected = 100 * (lat["predicted"] / lat["measured"] - 1)
        assert abs(lat["error_pct"] - expected) < 1e-9, c
        assert set(c) >= {"model", "precision", "batch", "mode", "device", "runtime", "sources",
                          "energy_j"}, c
    total = 0
    for m in doc["modes"]:
        n = m["latency"]["configurations"]
        total += n
        errors = [abs(c["latency_s"]["error_pct"]) for c in doc["configurations"]
                  if c["mode"] == m["mode"]]
        assert abs(m["latency"]["mape_pct"] - sum(errors) / len(errors)) < 1e-9, m
        worst = doc["configurations"][m["latency"]["worst"]["configuration"]]
        assert abs(abs(worst["latency_s"]["error_pct"]) - max(errors)) < 1e-9, m
    assert total == configs, total
    assert isinstance(doc["skipped"], list) and isinstance(doc["thresholds"], list)
    with open(md_file, encoding="utf-8") as f:
        md = f.read()
    assert md.startswith("# Validation on "), md[:80]
    assert "| metric | mode | runtime | configurations | MAPE |" in md
    assert md.count("\n| ") >= configs + 2 * len(doc["modes"]), "rows missing"
    with open(html_file, encoding="utf-8") as f:
        html = f.read()
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert html.count("<tr>") >= configs + 1 + len(doc["modes"]), "rows missing"
    print(f"ok: {configs} configurations in JSON, Markdown and HTML")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
