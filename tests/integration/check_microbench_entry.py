#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/microbench/entry.py: the starting entry's DRAM bandwidth comes from the smallest
streaming run beyond the last-level cache (from the best of those at least twice its size when
the runs reuse their output), and when no run exceeds the cache the figure's source says it is
not a DRAM rate. The CPU plan's sweep reaches 4x the cache. Needs no PyTorch."""
import sys

sys.path.insert(0, sys.argv[1])  # tools/microbench
import entry  # noqa: E402

MIB = 2 ** 20
entry.cache_sizes = lambda: {3: (32 * MIB, "0-1", "test: 32 MiB L3")}


def add_run(numel, ms):
    return {"kind": "op", "op_class": "elementwise", "name": "add", "precision": "fp32",
            "params": {"source": "bandwidth sweep", "numel": numel}, "batch": 1,
            "threads": 2, "latency_ms_median": ms, "flops": numel, "bytes": 12 * numel}


def entry_for(runs):
    matmul = {"kind": "op", "op_class": "gemm", "name": "matmul", "precision": "fp32",
              "params": {"source": "square", "m": 512, "n": 512, "k": 512}, "batch": 1,
              "threads": 2, "latency_ms_median": 1.0, "flops": 2 * 512 ** 3, "bytes": 3 << 20}
    doc = {"machine": {"name": "test", "cpu": "test cpu", "cores": 2},
           "env": {"cpu_flags": ["avx2", "fma"]}, "runs": [matmul] + runs}
    return entry.cpu_entry(doc, "test.json", 2)


failures = []
beyond = entry_for([add_run(1 << 20, 0.5), add_run(1 << 22, 4.0), add_run(1 << 24, 20.0)])
dram = [line for line in beyond.splitlines() if line.startswith("bandwidth") and
        "run 2:" in line]  # run 2: 4 Mi elements (48 MB), the smallest beyond 32 MiB
if not dram or "NOT a DRAM" in beyond:
    failures.append("with runs beyond the cache: " + beyond)
# Outputs reused (the sweep's adds since): the best rate among runs at least twice the cache.
def reused(numel, ms):
    run = add_run(numel, ms)
    run["params"]["reuse_output"] = True
    return run


best = entry_for([reused(1 << 22, 3.0), reused(1 << 24, 10.0), reused(1 << 26, 45.0)])
dram = [line for line in best.splitlines() if line.startswith("bandwidth") and "run 2:" in line
        and "output reused" in line]  # run 2: 16 Mi elements (201 MB) at 20 GB/s, not 48 MB
if not dram:
    failures.append("with reused outputs, not the best run beyond twice the cache: " + best)
within = entry_for([add_run(1 << 16, 0.05), add_run(1 << 20, 0.5)])
if "NOT a DRAM rate" not in within:
    failures.append("every run within the cache, yet no warning: " + within)
import plan  # noqa: E402

sizes = plan.cpu_add_sweep(300 * MIB)
if 12 * sizes[-1] < 4 * 300 * MIB or sizes[:len(plan.ADD_SWEEP_CPU)] != plan.ADD_SWEEP_CPU:
    failures.append(f"the sweep for a 300 MiB cache stops at {12 * sizes[-1] / 1e6:.0f} MB")
if plan.cpu_add_sweep(0) != plan.ADD_SWEEP_CPU:
    failures.append("an unknown cache changes the sweep")
adds = [c for c in plan.cpu_plan([1, 2], set(plan.CLASSES), True, None, 300 * MIB)
        if c["params"].get("source") == "bandwidth sweep"]
if not adds or not all(c["params"].get("reuse_output") for c in adds):
    failures.append("the CPU sweep's adds do not reuse their output")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
