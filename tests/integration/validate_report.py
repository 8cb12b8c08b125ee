#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Validates nnergy JSON reports against docs/report.schema.json.

    validate_report.py SCHEMA FILE...     each file must be a report (schema nnergy.report/1)
    validate_report.py SCHEMA --any FILE  validate FILE if it is a report, ignore other JSON

Exit 0 when every report is valid; 1 with every violation listed (file, JSON path, message).
"""
import json
import sys

try:
    import jsonschema
except ImportError:  # scripts/install-deps.sh installs python3-jsonschema
    sys.exit("validate_report: python3-jsonschema is not installed (scripts/install-deps.sh)")


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    with open(argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)
    only_reports = argv[2] == "--any"
    files = argv[3:] if only_reports else argv[2:]
    bad = 0
    checked = 0
    for name in files:
        try:
            with open(name, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{name}: not readable JSON: {e}")
            bad += 1
            continue
        if only_reports and not (isinstance(doc, dict) and doc.get("schema") == "nnergy.report/1"):
            continue
        checked += 1
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errors[:20]:
            path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
            print(f"{name}: {path or '(root)'}: {e.message[:300]}")
        if len(errors) > 20:
            print(f"{name}: ... and {len(errors) - 20} more")
        bad += bool(errors)
    print(f"validate_report: {checked} report(s) checked, {bad} invalid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
