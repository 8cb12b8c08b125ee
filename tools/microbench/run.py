#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Microbenchmark harness: times every op class the partitioner emits on a CPU or an NVIDIA GPU
and writes a measurement file (nnergy.measurements/1, docs/measurements.md).

    /usr/bin/python3 tools/microbench/run.py --device cpu -o cpu.json
    /usr/bin/python3 tools/microbench/run.py --device cuda:0 -o gpu.json
    /usr/bin/python3 tools/microbench/run.py --device cpu --quick -o quick.json

Needs PyTorch (Debian 12: apt-get install python3-torch, run with /usr/bin/python3). What is
measured and why: docs/microbench.md.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import plan  # noqa: E402  (after the path above; the harness runs as a script)

HARNESS_VERSION = "1"
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))


def log(msg):
    print(f"microbench: {msg}", file=sys.stderr, flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="run.py", description="Times the partitioner's op classes on a CPU or GPU.",
        epilog="Examples:\n  /usr/bin/python3 tools/microbench/run.py --device cpu "
               "-o cpu.json\n  /usr/bin/python3 tools/microbench/run.py --device cuda "
               "--classes conv,depthwise_conv -o convs.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument("--quick", action="store_true",
                   help="one small shape per class: a smoke test in seconds")
    p.add_argument("--classes", default="all",
                   help="comma-separated op classes to measure: " + ",".join(plan.CLASSES))
    p.add_argument("--threads", default=None,
                   help="CPU thread counts, e.g. 1,2: the main pass uses the largest, the "
                        "thread sweep all (default: 1, powers of two, and every usable core)")
    p.add_argument("--main-threads", type=int, default=None,
                   help="thread count of the CPU main pass (default the largest of --threads; "
                        "1 on a machine other work shares keeps the main pass clean)")
    p.add_argument("--energy", choices=["auto", "none"], default="auto",
                   help="auto: energy through `nnergy measure` where it and a meter exist")
    p.add_argument("--nnergy", default=os.path.join(REPO_ROOT, "build", "bin", "nnergy"),
                   help="the nnergy binary whose `measure` command reads the meters")
    p.add_argument("--energy-method", choices=["auto", "window", "children"], default="auto",
                   help="window: read the meters around an in-process loop through `nnergy "
                        "measure --serve`; children: two child processes per case under `nnergy "
                        "measure` (slow: about 9 s of start-up per case); auto: window where "
                        "the binary serves windows (docs/microbench.md, \"Energy\")")
    p.add_argument("--energy-loop-s", type=float, default=2.0,
                   help="seconds each energy child calls its op (default 2)")
    p.add_argument("--machine", default=None,
                   help="machine.name in the file (default: the host name)")
    p.add_argument("--note", default="", help="machine.note in the file")
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="multiplies every run's timed-loop budget (default 1)")
    p.add_argument("--max-minutes", type=float, default=None,
                   help="stop measuring after this long and write what was measured")
    p.add_argument("--spread", action="store_true",
                   help="interleave the classes and spread each one's shapes, so that a pass "
                        "cut short by --max-minutes samples every class")
    p.add_argument("--energy-only", action="store_true",
                   help="measure only the cases that carry an energy run (a pass of the "
                        "energy figures alone, minutes rather than the whole plan)")
    p.add_argument("--list", action="store_true",
                   help="print the plan (runs per class) and exit without measuring")
    p.add_argument("-o", "--output", help="measurement file to write")
    p.add_argument("--hardware-entry", default=None,
                   help="CPU: also write a starting hardware entry for this machine from the "
                        "pass (peaks, bandwidths, caches; docs/calibrate.md)")
    # A child under `nnergy measure`: one case, a timed loop, a result file (meters.py).
    p.add_argument("--single", help=argparse.SUPPRESS)
    p.add_argument("--loop-s", type=float, default=2.0, help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not args.single and not args.list and not args.output:
        p.error("-o FILE is required")
    return args


def import_torch():
    try:
        import torch
    except ImportError:
        sys.exit(f"microbench: PyTorch is not importable by {sys.executable}. On Debian 12: "
                 "apt-get install python3-torch, then run with /usr/bin/python3 "
                 "(a pyenv or venv python does not see Debian's packages).")
    return torch


def check_device(torch, device):
    if device == "cpu":
        return "cpu"
    if not device.startswith("cuda"):
        sys.exit(f"microbench: --device {device!r}: expected cpu, cuda or cuda:N")
    if not torch.cuda.is_available():
        built = torch.version.cuda or "none"
        sys.exit(f"microbench: --device {device}: no CUDA GPU is visible to PyTorch "
                 f"(torch {torch.__version__}, built for CUDA {built}). Run the CPU pass with "
                 "--device cpu, or run on a machine with an NVIDIA GPU and a CUDA build of "
                 "PyTorch.")
    index = int(device.split(":", 1)[1]) if ":" in device else 0
    if index >= torch.cuda.device_count():
        sys.exit(f"microbench: --device {device}: only {torch.cuda.device_count()} GPU(s)")
    return f"cuda:{index}"


def thread_counts(arg, cores):
    if arg:
        counts = sorted({int(t) for t in arg.split(",") if t.strip()})
        if not counts or counts[0] < 1:
            sys.exit("microbench: --threads needs positive integers, e.g. 1,2")
        return counts
    counts = {1, cores}
    t = 2
    while t < cores:
        counts.add(t)
        t *= 2
    return sorted(counts)


def set_precision_flags(torch, precision):
    # fp32 means IEEE fp32 arithmetic; tf32 lets cuBLAS and cuDNN use TF32 tensor cores.
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def sig(x, digits=6):
    """Rounds to `digits` significant digits (the timers resolve no more)."""
    return float(f"{x:.{digits}g}")


def number(x):
    return int(x) if float(x).is_integer() and abs(x) < 2 ** 53 else sig(x, 9)


def time_case(torch, ops, timing, case, device, budget):
    op = ops.build(case, device)
    if device == "cpu":
        result = timing.time_host(op.fn, budget)
    elif case["mode"] == "cuda_graph":
        result = timing.time_cuda_graph(op.fn, budget, torch)
    else:
        result = timing.time_cuda_eager(op.fn, budget, torch)
    return op, result


def make_run(case, op, result, device):
    run = {"kind": "op", "op_class": case["op_class"], "name": case["name"],
           "params": op.params, "device": device, "precision": case["precision"],
           "batch": case["batch"], "mode": case["mode"]}
    if case.get("threads"):
        run["threads"] = case["threads"]
    for key in ("latency_ms_median", "latency_ms_min", "latency_ms_max", "wall_s"):
        run[key] = sig(result[key])
    for key in ("iters", "samples", "calls_per_sample"):
        run[key] = result[key]
    if "cpu_s" in result and case.get("threads"):
        run["cpu_share"] = round(result["cpu_s"] / (result["wall_s"] * case["threads"]), 3)
    run["flops"] = number(op.flops)
    run["bytes"] = number(op.bytes)
    return run


def describe(device, budget, quick, main_threads=None):
    common = (
        "Microbenchmarks of the partitioner's op classes (tools/microbench, docs/microbench.md). "
        "PyTorch inference_mode, random inputs and weights, default (contiguous NCHW) layouts, "
        "convolutions without bias and padding k//2, linears with bias. A run is one op call "
        f"at its batch; each run warms up, then times samples of calls_per_sample back-to-back "
        f"calls (a sample lasts >= {budget.sample_min_s * 1e3:g} ms) for about "
        f"{budget.target_s:g} s and at least {budget.min_samples} samples (3 for calls over "
        "0.3 s); latency median/min/max are over the samples' per-call means. flops and bytes "
        "count one call as docs/counting.md does (bytes: inputs, weights, outputs once; "
        "elementwise chains as one fused kernel, params.eager_bytes as run op by op). "
        "op_class dispatch: tiny ops whose time is the framework's per-op cost. ")
    if device == "cpu":
        text = common + (
            "CPU: host clock (time.perf_counter), torch.set_num_threads(threads) per run; "
            f"runs at {main_threads} thread(s) are the main pass, the others the thread sweep "
            "of the same shapes. bf16 = inputs and weights cast to bfloat16. cpu_share: the "
            "process's CPU time over the timed loop / (wall_s x threads).")
    else:
        text = common + (
            "GPU: CUDA-event timing. mode eager: back-to-back calls from Python (host dispatch "
            "shows when it is longer than the kernels); mode cuda_graph: up to 32 calls "
            "captured in one CUDA graph and replayed. precision fp32 sets "
            "torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32 to "
            "False, tf32 to True; fp16 and bf16 cast inputs and weights.")
    if quick:
        text += " QUICK pass: one small shape per class, a smoke test, not for fitting."
    return text


def run_single(args, torch):
    """Child mode: one case called in a loop for --loop-s seconds (under nnergy measure)."""
    import ops
    import timing
    device = check_device(torch, args.device)
    case = json.loads(args.single)
    if device == "cpu" and case.get("threads"):
        torch.set_num_threads(case["threads"])
    if device != "cpu":
        set_precision_flags(torch, case["precision"])
    sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)
    with torch.inference_mode():
        op = ops.build(case, device)
        iters, loop_s = (1, 0.0) if args.loop_s <= 0 else timing.loop_for(op.fn, args.loop_s,
                                                                            sync)
    with open(args.result, "w", encoding="utf-8") as f:
        json.dump({"iters": iters, "loop_s": loop_s}, f)
    return 0


def main(argv):
    args = parse_args(argv)
    torch = import_torch()
    if args.single:
        return run_single(args, torch)
    import machine
    import meters
    import ops
    import timing

    device = check_device(torch, args.device) if not args.list else args.device
    kind = "cpu" if device == "cpu" else "cuda"
    classes = set(plan.CLASSES) if args.classes == "all" else set(args.classes.split(","))
    unknown = classes - set(plan.CLASSES)
    if unknown:
        sys.exit(f"microbench: unknown op class(es) {sorted(unknown)}; known: "
                 + ",".join(plan.CLASSES))
    cores = machine.usable_cores()
    threads = thread_counts(args.threads, cores) if kind == "cpu" else [None]
    sdpa = ops.has_sdpa()
    if args.quick:
        cases = plan.quick_plan(kind, threads, classes, sdpa)
    elif kind == "cpu":
        if args.main_threads and args.main_threads not in threads:
            sys.exit(f"microbench: --main-threads {args.main_threads} is not among --threads")
        import entry
        caches = entry.cache_sizes()
        cases = plan.cpu_plan(threads, classes, sdpa, args.main_threads,
                              caches[max(caches)][0] if caches else 0)
    else:
        cases = plan.gpu_plan(classes, sdpa)
    if args.energy_only:
        cases = plan.energy_only(cases)
    if args.spread:
        cases = plan.spread(cases)

    if args.list:
        by_class = {}
        for c in cases:
            by_class[c["op_class"]] = by_class.get(c["op_class"], 0) + 1
        for cls, n in sorted(by_class.items()):
            print(f"{cls:20s} {n:5d}")
        print(f"{'total':20s} {len(cases):5d}  (energy runs: {sum(c['energy'] for c in cases)})")
        return 0

    if kind == "cpu":
        budget = timing.Budget(target_s=0.15 * args.time_scale)
        if args.quick:
            budget = timing.Budget(target_s=0.02, min_samples=3, max_samples=20)
    else:
        budget = timing.Budget(target_s=0.05 * args.time_scale, sample_min_s=0.0005)
        if args.quick:
            budget = timing.Budget(target_s=0.01, sample_min_s=0.0005, min_samples=3)

    name = args.machine or os.uname().nodename
    doc = {"schema": "nnergy.measurements/1",
           "description": describe(kind, budget, args.quick,
                                   (args.main_threads or max(threads)) if kind == "cpu" else None),
           "machine": machine.machine_block(torch, device, name, args.note),
           "env": machine.env_block(torch, device),
           "runs": []}
    env = doc["env"]
    env["harness"] = f"tools/microbench/run.py {HARNESS_VERSION}"
    env["command"] = " ".join([os.path.relpath(sys.argv[0], REPO_ROOT)] + list(argv))
    if kind == "cpu" and "/blas/libblas" in env.get("blas", ""):  # Debian's reference BLAS
        log("warning: libblas.so.3 is the reference BLAS; GEMMs will be ~20x slower than with "
            "OpenBLAS (apt-get install libopenblas0)")
    load = machine.load_average()
    if kind == "cpu" and load and load[0] > 0.5 * cores:
        log(f"warning: load average {load[0]:g} on {cores} cores: other work is running, and "
            "CPU figures (most of all with several threads) will be slower than the op's own; "
            "see load_average and cpu_share per run")
    meter = meters.EnergyMeter(args.energy, args.nnergy, device, args.energy_loop_s, log,
                               args.energy_method)
    if not meter.available:
        env["energy"] = meter.reason
    else:
        env["energy_method"] = meter.method
    sync = torch.cuda.synchronize if kind == "cuda" else (lambda: None)

    log(f"{len(cases)} runs on {device} ({doc['machine']['cpu'] if kind == 'cpu' else doc['machine']['gpu']})"
        f"{', threads ' + ','.join(map(str, threads)) if kind == 'cpu' else ''}")
    skipped = []
    start = time.perf_counter()
    last_report = start
    current_threads = None
    try:
        with torch.inference_mode():
            for i, case in enumerate(cases):
                if args.max_minutes and time.perf_counter() - start > 60 * args.max_minutes:
                    env["interrupted"] = (f"--max-minutes {args.max_minutes:g} reached after "
                                          f"{len(doc['runs'])} of {len(cases)} runs")
                    log(env["interrupted"])
                    break
                load = machine.load_average()
                if kind == "cpu" and case["threads"] != current_threads:
                    torch.set_num_threads(case["threads"])
                    current_threads = case["threads"]
                if kind == "cuda":
                    set_precision_flags(torch, case["precision"])
                label = (f"{case['op_class']}/{case['name']} {case['params'].get('source', '')} "
                         f"b{case['batch']} {case['precision']} {case['mode']}"
                         f"{' t' + str(case['threads']) if case.get('threads') else ''}")
                try:
                    op, result = time_case(torch, ops, timing, case, device, budget)
                except (RuntimeError, ValueError, MemoryError) as e:
                    skipped.append(f"{label}: {str(e).splitlines()[0][:200]}")
                    log(f"skipped {label}: {str(e).splitlines()[0][:200]}")
                    if kind == "cuda":
                        torch.cuda.empty_cache()
                    continue
                run = make_run(case, op, result, device)
                if load:
                    run["load_average"] = load[0]
                if case.get("energy") and meter.available:
                    energy, note = meter.measure_in_process(op.fn, sync) if meter.in_process \
                        else meter.measure(case)
                    if energy:
                        run["energy"] = {d: {k: (sig(v) if isinstance(v, float) else v)
                                             for k, v in e.items()} for d, e in energy.items()}
                    if note:
                        run["note"] = note
                del op
                doc["runs"].append(run)
                if kind == "cuda" and i % 50 == 49:
                    torch.cuda.empty_cache()
                now = time.perf_counter()
                if now - last_report > 30 or i == len(cases) - 1:
                    log(f"{i + 1}/{len(cases)} runs, {now - start:.0f} s")
                    last_report = now
    except KeyboardInterrupt:
        env["interrupted"] = f"after {len(doc['runs'])} of {len(cases)} runs"
        log("interrupted: writing the runs measured so far")
    finally:
        meter.close()
    elapsed = time.perf_counter() - start
    env["elapsed_s"] = round(elapsed, 1)
    env["load_average_end"] = machine.load_average()
    if skipped:
        env["skipped"] = skipped
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    if args.hardware_entry and kind == "cpu":
        import entry
        main_threads = args.main_threads or max(threads)
        text = entry.cpu_entry(doc, os.path.basename(args.output), main_threads)
        os.makedirs(os.path.dirname(os.path.abspath(args.hardware_entry)), exist_ok=True)
        with open(args.hardware_entry, "w", encoding="utf-8") as f:
            f.write(text)
        log(f"wrote {args.hardware_entry}: a starting entry for this machine")
        if "NOT a DRAM rate" in text:
            log("warning: no streaming run of the pass exceeded the last-level cache: the "
                "entry's memory.dram.bandwidth is a cache rate, marked so in its source")
    log(f"wrote {args.output}: {len(doc['runs'])} runs in {elapsed:.1f} s "
        f"({elapsed / 60:.1f} min){', ' + str(len(skipped)) + ' skipped' if skipped else ''}")
    return 1 if "interrupted" in env and not args.max_minutes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
