#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Fits the H100's energy coefficients ([energy] of configs/hardware/h100-sxm5.toml) to
micro-benchmarks, never to model measurements: the GEMM and streaming-add calls of the shared
H100 validation set (micro.json) and the single-op calls of the microbench harness's energy pass
on the same GPU (tests/data/measurements/gpu-h100-sxm5-energy.json: convolutions of every kind,
GEMMs, attention, normalization, pooling, elementwise at batch 64).

The physics is the energy estimator's (plugins/estimators/energy/energy_model.hpp):
  E(call) = P_idle x period + P_active x busy share x working time
            + P_active x (1 - gating) x (idle share x working time + fixed time)
            + sum(count(event) x pJ(event))
with the events, kernel time and busy share of SMs exactly as the GPU architecture maps the call
(each call is analyzed by the nnergy binary as the graph `nnergy validate` prices it with):
FLOPs per unit and precision (CUDA-core fp32, TF32/fp16/bf16 tensor cores), bytes through L2,
bytes from HBM. `period` is the time one call occupies in the measured loop (energy per call /
power); kernels shorter than it leave the GPU idle for the rest. Which bytes come from HBM is the
architecture's own rule (its `dram` events): what fits in the L2 stays there across the loop's
calls, what does not streams from HBM.

The kernel time is the architecture's, not the measured one, because the estimator charges busy
power over its own time: the fit finds the coefficients that make the estimator's energy right.

A non-negative least-squares fit on relative error. Coefficients the data cannot identify are
not fitted: the file states their basis as "scaled" or "theoretical". L2 bytes are one of them:
the busy SMs that move them absorb their energy (a free fit puts L2 at 0 pJ/B), so L2 is priced
from first principles and taken off each call before the fit. Leave-one-out: each call is
refitted without it and predicted, so a fit that only matches its own points shows.

usage: tools/fit_h100_energy.py [--validation DIR] [--op-runs FILE] [--nnergy BIN]
                                [--check|--write TOML]
"""
import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FITTED = ["static", "busy", "clocked_idle", "cuda_core.float32", "tensor_core.tfloat32", "tensor_core.float16",
          "tensor_core.bfloat16", "dram_extra"]

# Events the micro benchmarks cannot separate from the fitted ones: priced from first
# principles (docs/hardware.md, "Energy"), their energy is taken off each call before the fit.
# Horowitz, "Computing's energy problem", ISSCC 2014: a 64-bit read of an 8 KB SRAM costs 10 pJ
# at 45 nm (1.25 pJ/B); scaled to TSMC 4N by 0.2 (feature size and supply voltage).
THEORETICAL = {
    # The data cannot tell L2 traffic from the busy SMs that move it (a free fit puts it at 0).
    "l2": (6.5e-12, "pJ/B", 1e12,
           "theoretical: Horowitz ISSCC 2014, 1 MB SRAM 64-bit read 100 pJ at 45 nm = 12.5 pJ/B, "
           "x 0.2 for TSMC 4N = 2.5 pJ/B for the L2 slice, plus 4 pJ/B for the crossbar to the SMs "
           "(on-chip wire about 0.1 pJ/bit/mm at 45 nm over about 10 mm, x 0.5 as wires scale "
           "less than logic)"),
    "shared": (0.25e-12, "pJ/B", 1e12,
               "theoretical: Horowitz ISSCC 2014, 8 KB SRAM 64-bit read 10 pJ at 45 nm = 1.25 "
               "pJ/B, x 0.2 for TSMC 4N (feature size and supply voltage)"),
    "register_file": (0.10e-12, "pJ/B", 1e12,
                      "theoretical: as shared memory, x 0.4 for a register bank a fraction of "
                      "its size next to the datapath"),
    "warp_instruction": (10e-12, "pJ", 1e12,
                         "theoretical: fetch, decode and scheduling of one warp instruction, "
                         "tens of pJ in GPU power models at 40-45 nm (GPUWattch, ISCA 2013), x "
                         "0.2 for TSMC 4N"),
}


def model_runs(nnergy, hardware, micro, workdir):
    """Each micro-benchmark call as the GPU architecture maps it: one JSON graph per call (a
    MatMul of two n x n inputs, or an add of a scalar to a vector) analyzed by `nnergy` with the
    CUDA-graph runtime (TF32 matmuls for the TF32 GEMMs). Returns, per call, the kernel's events,
    its latency and the busy share of its SMs."""
    root = ROOT
    runtime = os.path.join(root, "configs/runtimes/cuda-graph.toml")
    text = open(runtime).read()
    tf32 = os.path.join(workdir, "cuda-graph-tf32.toml")
    with open(tf32, "w") as f:
        f.write(text.replace('float32_matmul = "float32"', 'float32_matmul = "tfloat32"')
                .replace('fusion_rules = "../fusion/', 'fusion_rules = "%s/configs/fusion/' % root))

    def graph(name, tensors, node):
        path = os.path.join(workdir, name + ".json")
        with open(path, "w") as f:
            json.dump({"schema": "nnergy.graph/1", "name": name,
                       "inputs": [t["name"] for t in tensors if not t.get("initializer")
                                  and t["name"] != "y"],
                       "outputs": ["y"], "tensors": tensors, "nodes": [node]}, f)
        return path

    def analyze(path, precision, runtime_file):
        return mapped_kernels(nnergy, path, hardware, precision, runtime_file)[0]

    runs = []
    for g in micro["gemm"]:
        n, dt = g["m"], g["dtype"]
        t = [{"name": "a", "dtype": dt, "shape": [n, n]}, {"name": "b", "dtype": dt, "shape": [n, n]},
             {"name": "y", "dtype": dt, "shape": [n, n]}]
        path = graph("mm_%s_%d" % (dt, n), t, {"name": "mm", "op": "MatMul",
                                                "inputs": ["a", "b"], "outputs": ["y"]})
        runs.append(analyze(path, dt, tf32 if g["tf32"] else runtime))
    for e in micro["elementwise"]:
        n, dt = e["numel"], e["dtype"]
        t = [{"name": "x", "dtype": dt, "shape": [n]},
             {"name": "one", "dtype": dt, "shape": [1], "initializer": True},
             {"name": "y", "dtype": dt, "shape": [n]}]
        path = graph("add_%s_%d" % (dt, n), t, {"name": "add", "op": "Add",
                                                 "inputs": ["x", "one"], "outputs": ["y"]})
        runs.append(analyze(path, dt, runtime))
    return runs


def mapped_kernels(nnergy, graph, hardware, precision, runtime_file):
    """(events, time, busy share of the SMs) of each kernel the GPU architecture maps `graph` to
    (`nnergy analyze`), kernels that run on no unit left out."""
    out = graph + ".report.json"
    subprocess.run([nnergy, "--quiet", "analyze", graph, "--hw", hardware, "--precision",
                    precision, "--runtime", runtime_file, "--format", "json", "-o", out],
                   check=True)
    kernels = []
    for k in json.load(open(out))["runs"][0]["kernels"]:
        m = k["mapping"]
        if m.get("unit") == "none":
            continue
        events = {(e["category"], e["event"]): e["count"] for e in m.get("events", [])}
        # The latency estimator's time: the energy estimator's throttling depends on this file.
        time = k["metrics"].get("latency_unthrottled_s", k["metrics"]["latency_s"])
        overhead = min(time, m.get("launch_overhead_s", 0.0))
        kernels.append((events, time, m["units_allocated"] / m["units_available"], overhead))
    return kernels


def static_features(x, time, share, overhead):
    """Adds one kernel's static features over `time`, of which `overhead` is its fixed
    per-kernel time: the SMs it keeps busy draw active power while it works, and every SM waits
    clocked but idle over the fixed time (estimate_kernel in energy_model.hpp)."""
    working = max(0.0, time - overhead)
    x["busy"] += working * share
    x["clocked_idle"] += working * (1 - share) + (time - working)


def theoretical_energy(events):
    return sum(THEORETICAL[name][0] * count for (category, name), count in events.items()
               if name in THEORETICAL)


def samples(validation, nnergy, hardware):
    """(name, fitted features, energy left for them, measured energy) per call. The events are
    the GPU architecture's own for the call; the theoretical events' energy is taken off."""
    micro = json.load(open(os.path.join(validation, "micro.json")))
    with tempfile.TemporaryDirectory() as workdir:
        runs = model_runs(nnergy, hardware, micro, workdir)
    calls = [("gemm %s%s %d^3" % (g["dtype"], " tf32" if g["tf32"] else "", g["m"]), g)
             for g in micro["gemm"]]
    calls += [("add %s %d" % (e["dtype"], e["numel"]), e) for e in micro["elementwise"]]
    out = []
    for (name, call), (events, latency, share, overhead) in zip(calls, runs):
        period = call["energy_j"] / call["power_w"]  # the call's share of the measured loop
        busy_time = min(latency, period)
        x = {"static": period, "busy": 0.0, "clocked_idle": 0.0}
        static_features(x, busy_time, share, overhead * busy_time / latency if latency else 0.0)
        add_events(x, events)
        out.append((name, x, call["energy_j"] - theoretical_energy(events), call["energy_j"]))
    return out


def op_run_samples(op_runs, nnergy, hardware):
    """(name, fitted features, energy left for them, measured energy) per op run with energy
    (the microbench harness's energy pass, docs/microbench.md). Each run's graph is the one
    `nnergy validate --ops` prices it with, analyzed at the run's precision; the events are the
    GPU architecture's, and so is the kernels' time (capped at the call's period: its energy
    over the loop's power), as for the micro-benchmark calls."""
    runs = json.load(open(op_runs))["runs"]
    out = []
    with tempfile.TemporaryDirectory() as workdir:
        graphs = os.path.join(workdir, "graphs")
        subprocess.run([nnergy, "--quiet", "validate", "--hw", hardware, "--ops", op_runs,
                        "--write-graphs", graphs, "--format", "json", "-o",
                        os.path.join(workdir, "validate.json")], check=True)
        stem = os.path.splitext(os.path.basename(op_runs))[0]
        eager = os.path.join(ROOT, "configs/runtimes/pytorch-eager.toml")
        for index, run in enumerate(runs):
            energy = [e for e in (run.get("energy") or {}).values()
                      if isinstance(e, dict) and e.get("energy_j") and e.get("mean_power_w")]
            if run.get("kind") != "op" or not energy:
                continue
            graph = os.path.join(graphs, "%s-run-%d.json" % (stem, index))
            if not os.path.exists(graph):
                sys.exit("%s: run %d has no graph from nnergy validate --ops" % (op_runs, index))
            kernels = mapped_kernels(nnergy, graph, hardware, run["precision"], eager)
            measured = sum(e["energy_j"] for e in energy)
            period = sum(e["energy_j"] / e["mean_power_w"] for e in energy) / len(energy)
            modeled = sum(time for _, time, _, _ in kernels) or 1.0
            busy_time = min(modeled, period)
            x = {"static": period, "busy": 0.0, "clocked_idle": 0.0}
            events = {}
            for kernel_events, time, share, overhead in kernels:
                scale = busy_time / modeled
                static_features(x, time * scale, share, overhead * scale)
                for key, count in kernel_events.items():
                    events[key] = events.get(key, 0.0) + count
            add_events(x, events)
            name = "%s %s %s b%d" % (run["op_class"], run["params"].get("source", run["name"]),
                                     run["precision"], run["batch"])
            out.append((name, x, measured - theoretical_energy(events), measured))
    return out


def add_events(x, events):
    """The fitted event features of one call: FLOPs per unit and precision, bytes through L2,
    and the bytes the GPU architecture says come from HBM (those of a call whose tensors do not
    stay in the L2 across the loop's calls)."""
    for (category, event), count in events.items():
        if category == "compute":
            # 16-bit CUDA-core work is priced at half the fp32 energy (the file says so).
            if event in ("cuda_core.float16", "cuda_core.bfloat16"):
                x["cuda_core.float32"] = x.get("cuda_core.float32", 0) + count / 2
            elif event == "cuda_core.tfloat32":
                x["cuda_core.float32"] = x.get("cuda_core.float32", 0) + count
            else:
                x[event] = x.get(event, 0) + count
    x["l2"] = events.get(("memory", "l2"), 0.0)
    x["dram_extra"] = events.get(("memory", "dram"), 0.0)


def solve(m, b):
    n = len(b)
    a = [row[:] + [b[i]] for i, row in enumerate(m)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(a[r][c]))
        a[c], a[p] = a[p], a[c]
        for r in range(n):
            if r != c and a[c][c] != 0:
                f = a[r][c] / a[c][c]
                for k in range(c, n + 1):
                    a[r][k] -= f * a[c][k]
    return [a[i][n] / a[i][i] if a[i][i] != 0 else 0.0 for i in range(n)]


def nnls(rows, keys):
    """Least squares on relative error with every coefficient >= 0 (active set)."""
    active = list(keys)
    while True:
        scale = {k: max(abs(x.get(k, 0.0)) / y for _, x, y, _ in rows) or 1.0 for k in active}
        a = [[x.get(k, 0.0) / y / scale[k] for k in active] for _, x, y, _ in rows]
        m = [[sum(r[i] * r[j] for r in a) for j in range(len(active))] for i in range(len(active))]
        v = [sum(r[i] for r in a) for i in range(len(active))]
        s = solve(m, v)
        coef = {k: s[i] / scale[k] for i, k in enumerate(active)}
        negative = [k for k in active if coef[k] < 0]
        if not negative:
            return {k: coef.get(k, 0.0) for k in keys}
        active.remove(min(negative, key=lambda k: coef[k]))


def predict(coef, x):
    return sum(coef.get(k, 0.0) * v for k, v in x.items())


def gating(coef):
    """The share of an idle SM's active power saved while another kernel runs."""
    if coef["busy"] <= 0:
        return 0.0
    return min(1.0, max(0.0, 1 - coef["clocked_idle"] / coef["busy"]))


def table(coef, micro_calls, op_calls, loo_mape, mape):
    pj = 1e12
    data = "%d GEMM and streaming-add calls of shared validation h100 micro.json" % micro_calls
    if op_calls:
        data += " and %d single-op calls of tests/data/measurements/gpu-h100-sxm5-energy.json" \
            % op_calls
    fit = "fitted: tools/fit_h100_energy.py to %s (in-sample %.1f%%, leave-one-out %.1f%%)" \
        % (data, mape, loo_mape)
    lines = [
        "[energy]",
        "# Regenerate with tools/fit_h100_energy.py --write (a test checks it). Events are the GPU",
        "# architecture's: FLOPs per unit and precision, bytes through L2 and from HBM, launches.",
        "",
        "[energy.static]",
        'idle_power = { value = %.1f, unit = "W", source = "%s: power of the clocked GPU '
        'between and around kernels, with nothing to compute", note = "the idle power with '
        'clocks down is 73 W ([power] idle); in a forward pass the clocks stay up" }'
        % (coef["static"], fit),
        'idle_power_provenance = "fitted"',
        'active_power = { value = %.1f, unit = "W", source = "%s: power of the SMs a kernel '
        'keeps busy, all of them, over the kernel\'s time as the GPU architecture models it" }'
        % (coef["busy"], fit),
        'active_power_provenance = "fitted"',
        'power_gating = { value = %.0f, unit = "%%", source = "%s: the SMs a running kernel '
        'leaves idle draw %.1f W of the %.1f W they would draw busy" }'
        % (100 * gating(coef), fit, coef["clocked_idle"], coef["busy"]),
        'power_gating_provenance = "fitted"',
        "",
        "[energy.compute]",
    ]
    for key in ("cuda_core.float32", "tensor_core.tfloat32", "tensor_core.float16",
                "tensor_core.bfloat16"):
        lines.append('"%s" = { value = %.3f, unit = "pJ/FLOP", source = "%s" }'
                     % (key, coef[key] * pj, fit))
        lines.append('"%s_provenance" = "fitted"' % key)
    half = coef["cuda_core.float32"] * pj / 2
    fp16 = coef["tensor_core.float16"] * pj
    lines += [
        '"cuda_core.float16" = { value = %.3f, unit = "pJ/FLOP", source = "scaled: half the '
        'fitted fp32 CUDA-core energy (a 16-bit operation moves and multiplies half the bits); '
        'elementwise work in the micro set is too small to show its own" }' % half,
        '"cuda_core.float16_provenance" = "scaled"',
        '"cuda_core.bfloat16" = { value = %.3f, unit = "pJ/FLOP", source = "scaled: as '
        'cuda_core.float16" }' % half,
        '"cuda_core.bfloat16_provenance" = "scaled"',
        '"cuda_core.tfloat32" = { value = %.3f, unit = "pJ/FLOP", source = "equal to '
        'cuda_core.float32: work without MACs in a TF32 run executes in fp32 on CUDA cores" }'
        % (coef["cuda_core.float32"] * pj),
        '"cuda_core.tfloat32_provenance" = "fitted"',
        '"tensor_core.float8_e4m3" = { value = %.3f, unit = "pJ/FLOP", source = "scaled: half '
        'the fitted fp16 tensor-core energy (8-bit operands, twice the rate at the same '
        'power); FP8 not measured" }' % (fp16 / 2),
        '"tensor_core.float8_e4m3_provenance" = "scaled"',
        '"tensor_core.float8_e5m2" = { value = %.3f, unit = "pJ/FLOP", source = "scaled: as '
        'tensor_core.float8_e4m3" }' % (fp16 / 2),
        '"tensor_core.float8_e5m2_provenance" = "scaled"',
        '"tensor_core.int8" = { value = %.3f, unit = "pJ/op", source = "scaled: as '
        'tensor_core.float8_e4m3 (same peak rate, 8-bit operands); INT8 not measured" }'
        % (fp16 / 2),
        '"tensor_core.int8_provenance" = "scaled"',
        '"tensor_core.float64" = { value = %.3f, unit = "pJ/FLOP", source = "scaled: twice '
        'the fitted fp32 CUDA-core energy (64-bit operands); FP64 not measured" }'
        % (2 * coef["cuda_core.float32"] * pj),
        '"tensor_core.float64_provenance" = "scaled"',
        '"fp64_core.float64" = { value = %.3f, unit = "pJ/FLOP", source = "scaled: as '
        'tensor_core.float64" }' % (2 * coef["cuda_core.float32"] * pj),
        '"fp64_core.float64_provenance" = "scaled"',
        "",
        "[energy.memory]",
    ] + [
        '%s = { value = %s, unit = "%s", source = "%s" }\n%s_provenance = "theoretical"'
        % (k, "%.2f" % (THEORETICAL[k][0] * THEORETICAL[k][2]), THEORETICAL[k][1],
           THEORETICAL[k][3], k) for k in ("shared", "register_file", "l2")
    ] + [
        'dram = { value = %.2f, unit = "pJ/B", source = "%s: a byte from HBM3 on top of its L2 '
        'path (calls whose operands exceed the L2)" }' % (coef["dram_extra"] * pj, fit),
        'dram_provenance = "fitted"',
        "",
        "[energy.control]",
        'launch = { value = 0, unit = "uJ", source = "%s: per-kernel energy beyond static power '
        'is not identified (tiny kernels cost their time at the idle power)" }' % fit,
        'launch_provenance = "fitted"',
        'warp_instruction = { value = %.1f, unit = "pJ", source = "%s" }'
        % (THEORETICAL["warp_instruction"][0] * 1e12, THEORETICAL["warp_instruction"][3]),
        'warp_instruction_provenance = "theoretical"',
    ]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--validation", default=os.path.join(ROOT, "tests/data/validation/h100"))
    ap.add_argument("--nnergy", default=os.path.join(ROOT, "build/bin/nnergy"),
                    help="the nnergy binary whose GPU architecture maps each benchmark call")
    ap.add_argument("--op-runs",
                    default=os.path.join(ROOT, "tests/data/measurements/gpu-h100-sxm5-energy.json"),
                    help="a measurement file of the microbench harness's energy pass on the "
                         "H100: its op runs with energy join the fit ('none': micro.json alone)")
    action = ap.add_mutually_exclusive_group()
    action.add_argument("--check", metavar="TOML")
    action.add_argument("--write", metavar="TOML")
    args = ap.parse_args()

    hardware = args.check or args.write or os.path.join(ROOT, "configs/hardware/h100-sxm5.toml")
    rows = samples(args.validation, args.nnergy, hardware)
    micro_calls = len(rows)
    if args.op_runs != "none":
        rows += op_run_samples(args.op_runs, args.nnergy, hardware)
    coef = nnls(rows, FITTED)
    # Errors are relative to the measured energy of the call (theoretical events included).
    errors = [(predict(coef, x) - y) / total for _, x, y, total in rows]
    mape = 100 * sum(abs(e) for e in errors) / len(errors)
    loo = []
    for i in range(len(rows)):
        c = nnls(rows[:i] + rows[i + 1:], FITTED)
        _, x, y, total = rows[i]
        loo.append((predict(c, x) - y) / total)
    loo_mape = 100 * sum(abs(e) for e in loo) / len(loo)
    report = sys.stderr if (args.check or args.write) else sys.stdout
    for (name, x, y, total), e, l in zip(rows, errors, loo):
        print("%-22s measured %9.5f J  fitted %+6.1f%%  held out %+6.1f%%" %
              (name, total, 100 * e, 100 * l), file=report)
    print("energy fit: in-sample MAPE %.1f%%, leave-one-out MAPE %.1f%% over %d calls" %
          (mape, loo_mape, len(rows)), file=report)
    text = table(coef, micro_calls, len(rows) - micro_calls, loo_mape, mape)
    if not (args.check or args.write):
        sys.stdout.write(text)
        return 0
    path = args.check or args.write
    current = open(path).read()
    first = current.find("[energy]\n")
    end = 'warp_instruction_provenance = "theoretical"\n'
    last = current.find(end, first)
    if first < 0 or last < 0:
        if args.check:
            print("%s: no [energy] table written by this tool" % path, file=sys.stderr)
            return 1
        with open(path, "a") as f:
            f.write("\n" + text)
        return 0
    last += len(end)
    if args.write:
        with open(path, "w") as f:
            f.write(current[:first] + text + current[last:])
        return 0
    if current[first:last] == text:
        print("%s: [energy] is the fit's output" % path)
        return 0
    sys.stderr.writelines(difflib.unified_diff(
        current[first:last].splitlines(True), text.splitlines(True), path + " (committed)",
        "tools/fit_h100_energy.py (fitted)"))
    print("%s: [energy] differs from the fit's output; regenerate with --write" % path,
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
