# SPDX-License-Identifier: Apache-2.0
"""What the checks that compare calibrate with validate on op runs share: their command line and
validate's JSON report of the runs."""
import json
import os
import subprocess


def command_line(argv):
    """NNERGY OUT_DIR HARDWARE OPS.json... -- CALIBRATE_ARGS... as (nnergy, out, hardware,
    files, calibrate_args); OUT_DIR is made."""
    cut = argv.index("--")
    (nnergy, out, hardware), files, extra = argv[:3], argv[3:cut], argv[cut + 1:]
    os.makedirs(out, exist_ok=True)
    return nnergy, out, hardware, files, extra


def validate_ops(nnergy, hardware, files, report):
    """`nnergy validate --ops` of the files on the hardware, as its JSON report (written to
    `report`)."""
    subprocess.run([nnergy, "--quiet", "validate", "--hw", hardware, "--ops"] + files +
                   ["--format", "json", "-o", report], check=True)
    with open(report) as f:
        return json.load(f)
