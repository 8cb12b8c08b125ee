# SPDX-License-Identifier: Apache-2.0
"""A starting hardware entry for the CPU a pass ran on (run.py --hardware-entry).

Every number comes from the pass itself (the best matrix rate, the streaming bandwidth beyond
and within the last-level cache, cited by run index) or from the machine (core count, vector
width from the CPU flags, cache sizes from sysfs). Op-class constants are left out: `nnergy
calibrate` fits them to the same pass (docs/calibrate.md, "calibrate --here").
"""
import os

SYS_CACHE = "/sys/devices/system/cpu/cpu0/cache"


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def cache_sizes():
    """{level: (bytes, shared, source)} of the unified and data caches of cpu0, from sysfs."""
    out = {}
    if not os.path.isdir(SYS_CACHE):
        return out
    for entry in sorted(os.listdir(SYS_CACHE)):
        base = os.path.join(SYS_CACHE, entry)
        level, kind, size = (_read(os.path.join(base, k)) for k in ("level", "type", "size"))
        if not level or not size or kind not in ("Unified", "Data"):
            continue
        factor = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(size[-1], 1)
        digits = size[:-1] if size[-1] in "KMG" else size
        if not digits.isdigit():
            continue
        shared = _read(os.path.join(base, "shared_cpu_list")) or ""
        out[int(level)] = (int(digits) * factor, shared,
                           f"{base}/size: {size}, shared by cpus {shared or '?'}")
    return out


def _count_cpus(cpu_list):
    """How many CPUs a sysfs list such as "0,8" or "0-1" names."""
    n = 0
    for part in cpu_list.split(","):
        if "-" in part:
            low, high = part.split("-", 1)
            if low.isdigit() and high.isdigit():
                n += int(high) - int(low) + 1
        elif part.isdigit():
            n += 1
    return n


def smt_ways():
    """(hardware threads per core, source) of cpu0, from sysfs; None where it does not say."""
    path = "/sys/devices/system/cpu/cpu0/topology/thread_siblings_list"
    siblings = _read(path)
    n = _count_cpus(siblings) if siblings else 0
    return (n, f"{path}: {siblings}") if n >= 1 else None


def _q(value, unit, source):
    return '{ value = %.4g, unit = "%s", source = "%s" }' % (value, unit, source.replace('"', "'"))


def _rate(run):
    return run["flops"] / (run["latency_ms_median"] * 1e-3)


def _bandwidth(run):
    return run["bytes"] / (run["latency_ms_median"] * 1e-3)


def cpu_entry(doc, measurements_name, main_threads):
    """The TOML text of a starting entry for the pass `doc` (a nnergy.measurements/1 object)."""
    runs = [(i, r) for i, r in enumerate(doc["runs"])
            if r.get("threads") == main_threads and r.get("latency_ms_median")]
    cite = f"measured: {measurements_name}"
    flags = set(doc.get("env", {}).get("cpu_flags", []))
    lanes = 16 if "avx512f" in flags else 8 if ("avx2" in flags or "avx" in flags) else 4
    unit = "avx512" if lanes == 16 else "avx2" if lanes == 8 else "simd"
    machine = doc["machine"]
    lines = [
        "# SPDX-License-Identifier: Apache-2.0",
        f"# Starting entry for '{machine['name']}', written by tools/microbench/run.py "
        "--hardware-entry from the pass",
        f"# {measurements_name}: peaks and bandwidths are the pass's own best rates at "
        f"{main_threads} thread(s), cited by run.",
        "# Op-class constants are not here: nnergy calibrate fits them (docs/calibrate.md).",
        'schema = "nnergy.hardware/1"',
        f'name = "{machine["name"]}"',
        'class = "cpu"',
        f'description = "{machine.get("cpu", "CPU")} ({main_threads} threads of the pass)"',
        "",
        "[compute]",
        "units = " + _q(main_threads, "count", f"{cite}: the pass's main thread count"),
        'unit_name = "thread"',
        "threads_per_unit = " + _q(2 * lanes, "count",
                                   f"CPU flags {sorted(flags & {'avx512f', 'avx2', 'avx', 'fma'})}: "
                                   f"{lanes} float32 lanes x 2 FMA units per core"),
    ]
    for prec, name in (("fp32", "float32"), ("bf16", "bfloat16")):
        matrix = [(i, r) for i, r in runs
                  if r["precision"] == prec and r.get("op_class") in ("gemm", "conv")
                  and r.get("flops")]
        if not matrix:
            continue
        i, best = max(matrix, key=lambda ir: _rate(ir[1]))
        lines += ["", f"[compute.{name}]", f'unit = "{unit}"',
                  "peak = " + _q(_rate(best) / 1e12, "TFLOP/s",
                                 f"{cite} run {i}: {best['name']} {best['params'].get('source', '')}, "
                                 f"the best {prec} matrix rate of the pass"),
                  "efficiency = " + _q(100, "%", "peak is itself the measured rate"),
                  'efficiency_provenance = "measured"']
    caches = cache_sizes()
    sweep = [(i, r) for i, r in runs
             if r["precision"] == "fp32" and r.get("params", {}).get("source") == "bandwidth sweep"
             and r.get("bytes")]
    if not sweep:  # a quick pass: whatever streaming ops it ran
        sweep = [(i, r) for i, r in runs
                 if r["precision"] == "fp32" and r.get("op_class") == "elementwise"
                 and r.get("bytes") and "numel" in r.get("params", {})]
    last_level = max(caches) if caches else None
    llc_bytes = caches[last_level][0] if last_level else 0
    beyond = [(i, r) for i, r in sweep if r["bytes"] > llc_bytes] if llc_bytes else []
    within = [(i, r) for i, r in sweep if llc_bytes and llc_bytes / 8 <= r["bytes"] <= llc_bytes]
    dram = beyond or sorted(sweep, key=lambda ir: ir[1]["bytes"])[-1:]
    reused = [(i, r) for i, r in beyond if r["params"].get("reuse_output")]
    if reused:
        # Outputs written into one buffer (no first touch per call): the best rate of the runs
        # at least twice the cache, where none of the data can stay in it.
        far = [(i, r) for i, r in reused if r["bytes"] >= 2 * llc_bytes] or reused
        i, r = max(far, key=lambda ir: _bandwidth(ir[1]))
    elif dram:
        # The smallest size beyond the cache: larger ones add page faults of fresh outputs.
        i, r = min(dram, key=lambda ir: ir[1]["bytes"])
    if dram:
        what = (f"{cite} run {i}: {r['name']} of {r['params']['numel']} float32 elements, "
                "bytes read and written"
                + (", output reused" if r["params"].get("reuse_output") else ""))
        if not beyond and llc_bytes:
            # Every streaming run fit the last-level cache: the largest is no DRAM figure.
            what += (f"; NOT a DRAM rate: its {r['bytes'] / 1e6:.0f} MB fit the "
                     f"{llc_bytes / 2 ** 20:.0f} MiB last-level cache and no run of the pass "
                     "exceeded it (replace it with a measurement beyond the cache)")
        lines += ["", "[memory.dram]", "bandwidth = " + _q(_bandwidth(r) / 1e9, "GB/s", what)]
    for level, (size, shared, source) in sorted(caches.items()):
        if level < 2:
            continue
        lines += ["", f"[memory.l{level}]"]
        per_unit = level == 2 and "," not in shared and "-" not in shared
        key = "capacity_per_unit" if per_unit else "capacity"
        mib = size % (1024 ** 2) == 0
        lines.append(f'{key} = {{ value = {size // (1024 ** 2 if mib else 1024)}, unit = '
                     f'"{"MiB" if mib else "KiB"}", source = "{source}" }}')
        if level == last_level and within:
            i, r = max(within, key=lambda ir: _bandwidth(ir[1]))
            lines.append("bandwidth = " + _q(_bandwidth(r) / 1e9, "GB/s",
                                             f"{cite} run {i}: {r['name']} of "
                                             f"{r['params']['numel']} float32 elements, within "
                                             "this cache"))
    # Hardware threads per core, when the pass ran on every CPU the OS has (then the peaks are
    # all cores' and fewer threads reach the cores they keep busy); the OS sees the siblings
    # here, so it gives threads a core each first.
    smt = smt_ways()
    if smt and smt[0] > 1 and main_threads == os.cpu_count() and main_threads % smt[0] == 0:
        lines += ["", "[cpu]",
                  "smt = " + _q(smt[0], "count", f"{smt[1]}: hardware threads per core"),
                  'thread_placement = "spread"']
    lines += ["", "[efficiency]",
              "memory = " + _q(100, "%", "memory.dram.bandwidth is itself the measured rate"),
              'memory_provenance = "measured"', ""]
    return "\n".join(lines)
