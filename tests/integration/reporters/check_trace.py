#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a trace written by nnergy.reporter.trace against the JSON report of the same run:
it parses as the JSON trace event format, every event has the fields its phase needs, complete
events on one thread are in time order and never overlap, counter values are finite and
non-negative, each run's device track has one event per kernel and ends at the run's
totals.latency_s, and the host track is there exactly when the report has host dispatch times.
With --throttled yes, every run must have kernels stretched to the power limit, and no device
event may have been moved by the reporter (the estimator laid the stretched timeline out).

    check_trace.py TRACE.json REPORT.json [--host yes|no] [--throttled yes]
"""
import json
import math
import sys

failures = []


def fail(msg):
    failures.append(msg)


def finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def close(a, b):
    """Equal times in microseconds up to the trace's picosecond rounding."""
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b)) + 1e-5


def main():
    args = sys.argv[1:]
    want_host = None
    want_throttled = False
    if "--throttled" in args:
        i = args.index("--throttled")
        want_throttled = args[i + 1] == "yes"
        del args[i:i + 2]
    if "--host" in args:
        i = args.index("--host")
        want_host = args[i + 1] == "yes"
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    with open(args[0], encoding="utf-8") as f:
        trace = json.load(f)
    with open(args[1], encoding="utf-8") as f:
        doc = json.load(f)

    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        sys.exit("no traceEvents array")
    if trace.get("displayTimeUnit") != "ns":
        fail(f"displayTimeUnit is {trace.get('displayTimeUnit')!r}, expected 'ns'")
    events = trace["traceEvents"]

    thread_names = {}
    process_names = {}
    complete = {}
    counters = {}
    for n, e in enumerate(events):
        where = f"event {n}"
        if not isinstance(e, dict):
            fail(f"{where}: not an object")
            continue
        for field in ("name", "ph", "pid", "tid"):
            if field not in e:
                fail(f"{where}: no '{field}'")
        if not isinstance(e.get("name"), str) or not isinstance(e.get("pid"), int) or \
                not isinstance(e.get("tid"), int):
            fail(f"{where}: name must be a string, pid and tid integers: {e}")
            continue
        ph = e["ph"]
        key = (e["pid"], e["tid"])
        if ph == "M":
            if not isinstance(e.get("args"), dict):
                fail(f"{where}: metadata without args")
            elif e["name"] == "thread_name":
                thread_names[key] = e["args"].get("name")
            elif e["name"] == "process_name":
                process_names[e["pid"]] = e["args"].get("name")
        elif ph == "X":
            if not finite(e.get("ts")) or not finite(e.get("dur")) or e["ts"] < 0 or e["dur"] < 0:
                fail(f"{where}: complete event needs finite ts >= 0 and dur >= 0: {e}")
                continue
            complete.setdefault(key, []).append(e)
        elif ph == "C":
            if not finite(e.get("ts")) or e["ts"] < 0:
                fail(f"{where}: counter needs a finite ts >= 0: {e}")
                continue
            values = e.get("args")
            if not isinstance(values, dict) or not values:
                fail(f"{where}: counter without values")
                continue
            for k, v in values.items():
                if not finite(v) or v < 0:
                    fail(f"{where}: counter value {k}={v!r} is not finite and non-negative")
            counters.setdefault((e["pid"], e["name"]), []).append(e)
        else:
            fail(f"{where}: unexpected phase {ph!r}")

    # Per thread: sorted, and each complete event ends before the next begins.
    for key, track in complete.items():
        for a, b in zip(track, track[1:]):
            if b["ts"] < a["ts"]:
                fail(f"track {key}: {b['name']} at {b['ts']} comes after {a['name']} at {a['ts']}")
            if a["ts"] + a["dur"] > b["ts"]:
                fail(f"track {key}: {a['name']} ends at {a['ts'] + a['dur']}, after "
                     f"{b['name']} starts at {b['ts']}")
    for key, track in counters.items():
        for a, b in zip(track, track[1:]):
            if b["ts"] < a["ts"]:
                fail(f"counter {key}: sample at {b['ts']} after one at {a['ts']}")

    runs = doc["runs"]
    if sorted(process_names) != list(range(1, len(runs) + 1)):
        fail(f"processes {sorted(process_names)}, expected one per run (1..{len(runs)})")
    for r, run in enumerate(runs):
        pid = r + 1
        arch = run["architecture"]
        name = process_names.get(pid, "")
        for part in (arch["hardware"], arch["precision"]):
            if part not in name:
                fail(f"process {pid} is named {name!r}, without {part!r}")
        device = [k for k, v in thread_names.items() if k[0] == pid and v == "device kernels"]
        host = [k for k, v in thread_names.items() if k[0] == pid and v.startswith("host dispatch")]
        if len(device) != 1:
            fail(f"run {pid}: {len(device)} device kernel tracks")
            continue
        kernels = run["kernels"]
        track = complete.get(device[0], [])
        if len(track) != len(kernels):
            fail(f"run {pid}: {len(track)} kernel events for {len(kernels)} kernels")
        for e, k in zip(track, kernels):
            a = e.get("args", {})
            for field in ("name", "pattern", "ops", "flops", "bytes", "bottleneck", "energy_j"):
                if field not in a:
                    fail(f"run {pid} kernel {e['name']}: no args.{field}")
            if a.get("name") != k["name"]:
                fail(f"run {pid}: kernel event {a.get('name')!r} for kernel {k['name']!r}")
            m = k.get("metrics", {})
            if "energy_j" in m and a.get("energy_j") != m["energy_j"]:
                fail(f"run {pid} {k['name']}: energy_j {a.get('energy_j')} != {m['energy_j']}")
            if not close(e["dur"], m.get("latency_s", 0) * 1e6):
                fail(f"run {pid} {k['name']}: dur {e['dur']} us != latency_s {m.get('latency_s')}")
        if want_throttled:
            if not run["totals"].get("throttled_kernels"):
                fail(f"run {pid}: no kernel was throttled; the check needs a throttled run")
            for e in track:
                if "shifted_us" in e.get("args", {}):
                    fail(f"run {pid} {e['name']}: moved {e['args']['shifted_us']} us by the "
                         "reporter; the report's start_s should already place it")
        latency = run["totals"].get("latency_s")
        if track and latency is not None:
            end = max(e["ts"] + e["dur"] for e in track)
            if not close(end, latency * 1e6):
                fail(f"run {pid}: device track ends at {end} us, totals.latency_s is "
                     f"{latency * 1e6} us")
        has_dispatch = any("host_dispatch_s" in k.get("metrics", {}) for k in kernels)
        if has_dispatch != bool(host):
            fail(f"run {pid}: host track {'missing' if has_dispatch else 'without dispatch times'}")
        if want_host is not None and want_host != has_dispatch:
            fail(f"run {pid}: the report {'lacks' if want_host else 'has'} host dispatch times")
        if host:
            dispatched = sum(k["metrics"].get("host_dispatch_s", 0) for k in kernels) * 1e6
            total = sum(e["dur"] for e in complete.get(host[0], []))
            if not close(total, dispatched):
                fail(f"run {pid}: host track holds {total} us of dispatch, the report {dispatched}")
        memory = counters.get((pid, "memory"), [])
        weights = run["totals"].get("weight_bytes")
        if weights is not None:
            if not memory:
                fail(f"run {pid}: no memory counter")
            elif memory[-1]["args"]["in_use_bytes"] != weights:
                fail(f"run {pid}: memory ends at {memory[-1]['args']}, weights are {weights}")
            peak = max(s["args"]["in_use_bytes"] for s in memory)
            if peak != run["totals"].get("peak_memory_bytes"):
                fail(f"run {pid}: memory counter peaks at {peak}, "
                     f"peak_memory_bytes is {run['totals'].get('peak_memory_bytes')}")
        if "energy_j" in run["totals"] and not counters.get((pid, "power")):
            fail(f"run {pid}: no power counter")

    for f in failures[:40]:
        print(f, file=sys.stderr)
    if failures:
        sys.exit(f"{len(failures)} problem(s) in {args[0]}")
    print(f"{len(events)} events, {len(runs)} run(s): the trace is well formed and matches the report")


if __name__ == "__main__":
    main()
