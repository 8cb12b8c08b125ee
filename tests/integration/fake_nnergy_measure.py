#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for `nnergy measure` with one scripted meter, for the harness's tests.

    fake_nnergy_measure.py measure [--gpu N] [--rapl] --json FILE -- COMMAND...
    fake_nnergy_measure.py measure [--gpu N] [--rapl] --serve

Runs COMMAND and writes a measurement file whose one command run has a `package-0` domain
with a known power: when COMMAND is a harness child (`--result FILE` among its arguments), it
draws 10 W during the child's loop (the `loop_s` the child wrote), 1 W for the rest of its
run, and 2 J more after a loop (as a device ramping down after heavy work); anything else draws
1 W. The energy per call the harness derives is right only if it separates the loop from the
rest: 10 W x the loop's length / its calls. With --serve it answers begin/end requests as
`nnergy measure --serve` does, for a domain that draws 10 W: the harness's window is its loop.
"""
import json
import subprocess
import sys
import time

LOOP_W = 10.0
OTHER_W = 1.0
TAIL_J = 2.0


def main(argv):
    if len(argv) < 1 or argv[0] != "measure":
        print("usage: fake_nnergy_measure.py measure --json FILE -- COMMAND...", file=sys.stderr)
        return 2
    if "--help" in argv:
        print(__doc__)
        return 0
    args = argv[1:]
    if "--serve" in args:
        return serve()
    dash = args.index("--")
    options, command = args[:dash], args[dash + 1:]
    out = options[options.index("--json") + 1]
    start = time.monotonic()
    rc = subprocess.run(command, check=False).returncode
    duration = time.monotonic() - start
    loop_s = 0.0
    if "--result" in command:
        try:
            with open(command[command.index("--result") + 1], encoding="utf-8") as f:
                loop_s = min(float(json.load(f)["loop_s"]), duration)
        except (OSError, ValueError, KeyError, IndexError):
            pass
    energy_j = LOOP_W * loop_s + OTHER_W * (duration - loop_s) + (TAIL_J if loop_s > 0 else 0)
    doc = {"schema": "nnergy.measurements/1", "machine": {"name": "fake"},
           "runs": [{"kind": "command", "name": " ".join(command), "exit_status": rc,
                     "duration_s": duration,
                     "energy": {"package-0": {"meter": "fake", "energy_j": energy_j,
                                              "mean_power_w": energy_j / duration,
                                              "window_s": duration,
                                              "method": "counter"}}}]}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return rc


def serve():
    def say(obj):
        print(json.dumps(obj), flush=True)

    say({"ready": True, "domains": [{"meter": "fake", "domain": "package-0"}], "unavailable": []})
    begun = None
    for line in sys.stdin:
        request = line.strip()
        if request == "quit":
            break
        if request == "begin":
            begun = time.monotonic()
            say({"begun": True})
        elif request == "end" and begun is not None:
            window = time.monotonic() - begun
            begun = None
            # Counter updates every 10 ms: the span between the first and last seen.
            span = max(0.0, window - 0.02)
            reading = {"domain": "package-0", "meter": "fake", "device": "fake",
                       "method": "counter", "energy_j": LOOP_W * window, "window_s": window,
                       "mean_power_w": LOOP_W, "peak_power_w": LOOP_W, "samples": 0,
                       "warnings": []}
            if span > 0:
                reading.update(counter_power_w=LOOP_W, counter_span_s=span)
            say({"readings": [reading]})
        else:
            say({"error": f"unknown request '{request}'"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
