# SPDX-License-Identifier: Apache-2.0
"""The quantities of a hardware TOML file, for the calibrate checks."""
import tomllib


def quantities(path):
    """{dotted key: value as written} of every { value, unit, source } in the file."""
    def walk(table, prefix):
        out = {}
        for k, v in table.items():
            key = prefix + k
            if isinstance(v, dict) and "value" in v and "unit" in v:
                out[key] = v["value"]
            elif isinstance(v, dict):
                out.update(walk(v, key + "."))
        return out
    with open(path, "rb") as f:
        return walk(tomllib.load(f), "")
