#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Fits the per-op-class constants of the GPU architecture model to H100 measurements.

Data (the shared H100 validation set):
  op_profiles.json  torch.profiler self device time per ATen op and input shapes (fp32, eager):
                    convolutions (cuDNN, TF32 allowed), addmm (fp32 CUDA cores; with one
                    output row a matrix-vector kernel, class gemv), depthwise
                    convolutions, batch/layer norm, elementwise, pooling, attention.
  micro.json        square GEMMs (fp32, TF32, fp16, bf16) and 72 convolution shapes (fp32 with
                    TF32, fp16), timed around single eager calls, so small cases show the
                    eager call floor instead of the device time: a case is fitted as
                    max(model, floor) with the floor fitted too.

The model is the one of plugins/architectures/gpu/gpu_model.hpp:
  t = fixed_time[class] + max(flops / (peak x unit_eff x class_eff x tile_util x K/(K+k_half)
                                       x W/(W+tiles_half)),
                              bytes / (dram_bw x mem_eff))
with tile_util from tile_m x tile_n output tiles over 132 SMs in W waves (tiles per SM). Op
classes, not models, are fitted: no model latency from models.json enters the fit.

Prints the fitted constants as TOML for configs/hardware/h100-sxm5.toml and the error per
class; --write regenerates the tables of a hardware file, --check (a test) fails unless they
are the fit's output. usage: tools/fit_h100_gpu.py [--validation DIR] [--check|--write TOML]
"""
import argparse
import ast
import contextlib
import difflib
import io
import json
import math
import os
import random
import sys

from convert_validation import guessed_conv_stride

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SMS = 132
PEAK = {"float32": 66.9e12, "tfloat32": 494.7e12, "float16": 989.4e12, "bfloat16": 989.4e12}
UNIT_EFF = {"float32": 0.772, "tfloat32": 0.715, "float16": 0.713, "bfloat16": 0.701}
VECTOR_PEAK = {"float32": 66.9e12, "float16": 133.8e12}
DRAM = 3.35e12 * 0.887
MIN_TENSOR_CHANNELS = 8
TENSOR_CORE_UNITS = ("tfloat32", "float16", "bfloat16")


def model_time(p, s):
    """Seconds for sample s under class parameters p (mirrors gpu_model.hpp)."""
    if s["tiles"] and s.get("cin", 64) < MIN_TENSOR_CHANNELS:
        # Too few input channels for tensor-core tiles: cuDNN runs a CUDA-core kernel.
        compute = s["flops"] / (VECTOR_PEAK["float32" if s["unit"] == "tfloat32" else s["unit"]] *
                                UNIT_EFF["float32"] * p["narrow_eff"])
    elif s["tiles"]:
        n = max(1.0, s["n"])
        m = max(1.0, s["outputs"] / n)
        tiles = math.ceil(m / p["tile_m"]) * math.ceil(n / p["tile_n"])
        k = s["macs"] / max(1.0, s["outputs"])
        # Split-K: a problem with fewer tiles than SMs splits its reduction over idle SMs.
        splits = 1
        if p["split_k"] > 0 and tiles < SMS:
            splits = max(1, min(SMS // tiles, int(k // p["split_k"])))
        waves = max(1.0, math.ceil(tiles * splits / SMS))
        util = min(1.0, m * n * splits / (waves * SMS * p["tile_m"] * p["tile_n"]))
        k /= splits
        eff = UNIT_EFF[s["unit"]] * p["eff"] * k / (k + p["k_half"])
        # Few resident tiles per SM cannot hide its latencies.
        eff *= waves / (waves + p["tiles_half"])
        compute = s["flops"] / (PEAK[s["unit"]] * eff * util)
    else:
        compute = s["flops"] / (VECTOR_PEAK.get(s["unit"], 66.9e12) * UNIT_EFF["float32"] *
                                p["eff"])
    memory = s["bytes"] / (DRAM * p["mem_eff"])
    return p["fixed"] + max(compute, memory)


def profile_samples(validation):
    profiles = json.load(open(os.path.join(validation, "op_profiles.json")))["profiles"]
    out = []
    seen = set()
    for name, prof in profiles.items():
        for o in prof["ops"]:
            op = o["op"]
            if not op.startswith("aten::"):
                continue
            shapes = ast.literal_eval(o["shapes"])
            t = o["self_device_us_total"] / o["count"] * 1e-6
            key = (op, o["shapes"])
            if key in seen:
                continue
            seen.add(key)
            s = None
            if op == "aten::cudnn_convolution":
                x, w = shapes[0], shapes[1]
                n_, cin, h, _ = x
                cout, cpg, kh, kw = w
                groups = cin // cpg
                stride = guessed_conv_stride(cin, cout, kh, h, groups)
                oh = h // stride
                outputs = n_ * cout * oh * oh
                macs = outputs * cpg * kh * kw
                byts = 4 * (math.prod(x) + math.prod(w) + outputs)
                s = dict(cls="conv", unit="tfloat32", tiles=True, outputs=outputs, n=cout,
                         macs=macs, flops=2 * macs, bytes=byts, cin=cpg)
            elif op == "aten::_conv_depthwise2d":
                x, w = shapes[0], shapes[1]
                n_, c, h, _ = x
                kh = w[2]
                outputs = n_ * c * h * h  # stride unknown: upper bound of the work
                macs = outputs * kh * kh
                s = dict(cls="depthwise", unit="float32", tiles=False, outputs=outputs, n=c,
                         macs=macs, flops=2 * macs, bytes=4 * (math.prod(x) + outputs))
            elif op == "aten::addmm":
                bias, a, b = shapes[0], shapes[1], shapes[2]
                m, k = a
                n = b[1]
                macs = m * n * k
                # One output row: cuBLAS runs a matrix-vector kernel (gemvx), not output tiles.
                gemv = m == 1 or n == 1
                s = dict(cls="gemv" if gemv else "gemm", unit="float32", tiles=not gemv,
                         outputs=m * n, n=n, macs=macs, flops=2 * macs,
                         bytes=4 * (m * k + k * n + m * n))
            elif op == "aten::_efficient_attention_forward":
                b_, sq, h, d = shapes[0]
                macs = 2 * b_ * h * sq * sq * d
                s = dict(cls="attention", unit="float32", tiles=True, outputs=b_ * h * sq * sq,
                         n=sq, macs=macs, flops=2 * macs, bytes=4 * 4 * b_ * sq * h * d)
            elif op in ("aten::cudnn_batch_norm", "aten::native_layer_norm"):
                e = math.prod(shapes[0])
                # FLOPs as docs/counting.md counts them: 2 per element for an inference batch
                # norm, 7 for a layer norm with bias.
                per = 2 if op == "aten::cudnn_batch_norm" else 7
                s = dict(cls="normalization", unit="float32", tiles=False, flops=per * e,
                         bytes=8 * e)
            elif op in ("aten::clamp_min_", "aten::clamp", "aten::add_", "aten::add",
                        "aten::gelu", "aten::hardtanh_"):
                e = math.prod(shapes[0])
                reads = 2 if op in ("aten::add_", "aten::add") and shapes[1] == shapes[0] else 1
                s = dict(cls="elementwise", unit="float32", tiles=False, flops=e,
                         bytes=4 * e * (reads + 1))
            elif op in ("aten::max_pool2d_with_indices", "aten::mean",
                        "aten::adaptive_avg_pool2d"):
                e = math.prod(shapes[0])
                out_e = e // 4 if "max_pool" in op else e // (shapes[0][-1] * shapes[0][-2])
                s = dict(cls="pooling", unit="float32", tiles=False, flops=e,
                         bytes=4 * (e + out_e))
            if s:
                s.update(t=t, where="%s %s %s" % (name, op, o["shapes"][:48]), floor=0.0)
                out.append(s)
    return out


def micro_samples(validation):
    micro = json.load(open(os.path.join(validation, "micro.json")))
    out = []
    for c in micro["conv"]:
        oh = c["hw"] // c["stride"]
        outputs = c["batch"] * c["cout"] * oh * oh
        macs = c["macs"]
        bpe = 4 if c["dtype"] == "float32" else 2
        byts = bpe * (c["batch"] * c["cin"] * c["hw"] ** 2 + outputs +
                      c["cout"] * c["cin"] // c["groups"] * c["k"] ** 2)
        depthwise = c["groups"] > 1
        unit = "tfloat32" if c["dtype"] == "float32" and not depthwise else c["dtype"]
        out.append(dict(cls="depthwise" if depthwise else "conv", unit=unit, tiles=not depthwise,
                        outputs=outputs, n=c["cout"], macs=macs, flops=2 * macs, bytes=byts,
                        cin=c["cin"] // c["groups"],
                        t=c["ms"] * 1e-3, floor=1.0,
                        where="micro conv %s %dx%d k%d s%d g%d b%d" % (
                            c["dtype"], c["cin"], c["cout"], c["k"], c["stride"], c["groups"],
                            c["batch"])))
    for g in micro["gemm"]:
        unit = "tfloat32" if g["tf32"] else g["dtype"]
        n = g["n"]
        macs = g["m"] * g["n"] * g["k"]
        bpe = 4 if g["dtype"] == "float32" else 2
        out.append(dict(cls="gemm", unit=unit, tiles=True, outputs=g["m"] * n, n=n, macs=macs,
                        flops=2 * macs, bytes=bpe * 3 * n * n, t=g["ms"] * 1e-3, floor=1.0,
                        where="micro gemm %s%s %d" % (g["dtype"], " tf32" if g["tf32"] else "",
                                                      n)))
    return out


def error(p, s, floor):
    est = model_time(p, s)
    if s["floor"]:
        est = max(est, floor)
    return math.log(est / s["t"])


# Tile-shape parameters: their optimum is often far from the start and the descent stalls on
# the way, so the fit also starts from random tile shapes. Fixed time and memory efficiency
# always start from the device-wide values: the op data alone cannot tell a short fixed time
# with slow memory from the reverse.
SHAPE_KEYS = ("tile_m", "tile_n", "k_half", "split_k", "eff", "tiles_half")


def fit(samples, start, grid, floor, restarts=24):
    """Coordinate descent over the grid until no single change helps, from the start and from
    `restarts` seeded random tile shapes (classes with at least 10 samples)."""

    def cost(p):
        return sum(abs(error(p, s, floor)) for s in samples) / len(samples)

    def descend(p):
        c = cost(p)
        improved = True
        while improved:
            improved = False
            for key, values in grid.items():
                for v in values:
                    trial = dict(p, **{key: v})
                    ct = cost(trial)
                    if ct < c - 1e-12:
                        p, c, improved = trial, ct, True
        return p, c

    rng = random.Random(0)
    best = descend(dict(start))
    for _ in range(restarts if len(samples) >= 10 else 0):
        seed = dict(start, **{k: rng.choice(v) for k, v in grid.items() if k in SHAPE_KEYS})
        trial = descend(seed)
        if trial[1] < best[1] - 1e-12:
            best = trial
    # A parameter whose every grid value gives the same error is not identified by the data
    # (memory efficiency of a compute-bound class): it keeps the start value, and says so.
    p, c = best
    flat = set()
    for key, values in grid.items():
        if len(values) > 1 and all(abs(cost(dict(p, **{key: v})) - c) < 1e-12 for v in values):
            flat.add(key)
            p = dict(p, **{key: start[key]})
    return p, c, flat


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--validation", default=os.path.join(ROOT, "tests", "data", "validation",
                                                          "h100"),
                    help="folder with micro.json and op_profiles.json (default: the copy in "
                    "tests/data, identical to the shared validation set)")
    action = ap.add_mutually_exclusive_group()
    action.add_argument("--check", metavar="TOML",
                        help="exit 1 unless the file's [gpu.kernels] tables are the fit's output")
    action.add_argument("--write", metavar="TOML",
                        help="replace the file's [gpu.kernels] tables with the fit's output")
    args = ap.parse_args()
    samples = profile_samples(args.validation) + micro_samples(args.validation)
    # The eager-call floor of the micro timings: the median of the smallest cases.
    small = sorted(s["t"] for s in samples if s["floor"] and s["flops"] < 2e8)
    floor = small[len(small) // 2] if small else 0.0
    print("# micro.json single-call floor: %.1f us" % (floor * 1e6), file=sys.stderr)

    # Fixed times above 6 us only fit the eager-call floor of micro-only groups (fp16 GEMM and
    # convolution), not device time; attention (profiled) may go higher.
    us = [x * 1e-6 for x in (0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6)]
    splits = [0, 64, 128, 256, 512, 1024]
    # Resident tiles per SM at which an SM reaches half its rate.
    HALF_TILES = [0, 0.5, 1, 1.5, 2, 3, 4]
    fr = [0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    grids = {
        "conv": dict(tiles_half=HALF_TILES, tile_m=[32, 64, 128, 256], tile_n=[32, 64, 128, 256],
                     k_half=[0, 32, 64, 128, 256, 512, 1024], split_k=splits,
                     eff=[0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], fixed=us, narrow_eff=fr),
        "gemm": dict(tiles_half=HALF_TILES, tile_m=[32, 64, 128, 256], tile_n=[32, 64, 128, 256],
                     k_half=[0, 32, 64, 128, 256, 512, 1024], split_k=splits,
                     eff=[0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], fixed=us),
        # Normalizations stream their tensor once in and once out: the rate is the memory
        # system's, not the ALUs' (fitting a compute efficiency instead makes large batches
        # compute-bound at a few % of peak).
        "normalization": dict(fixed=us, eff=[1.0]),
        "attention": dict(tile_m=[32, 64, 128], tile_n=[32, 64, 128],
                          k_half=[0, 64, 128, 256, 512, 1024, 2048],
                          eff=[0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0],
                          fixed=us + [x * 1e-6 for x in (8, 10, 12)]),
    }
    fractions = [0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    results = {}
    held = {}  # group -> {parameter: source} for what the fit did not vary
    def group_of(s):
        # bf16 and fp16 run the same tensor-core kernels at the same rate on Hopper: one fit
        # from both data sets, written as the tables of both precisions.
        if not s["tiles"]:
            return (s["cls"], "")
        return (s["cls"], "float16" if s["unit"] == "bfloat16" else s["unit"])

    groups = []
    for s in samples:
        if group_of(s) not in groups:
            groups.append(group_of(s))
    profiled = {(s["cls"], s["unit"]) for s in samples if not s["floor"]}
    for cls, unit in groups:
        mine = [s for s in samples if group_of(s) == (cls, unit)]
        start = dict(tile_m=128, tile_n=128, k_half=0, eff=1.0, fixed=2e-6, mem_eff=1.0,
                     split_k=0, narrow_eff=1.0, tiles_half=0)
        # Tiled kernels stream their operands at no less than half the DRAM rate: lower values
        # only fit the extra setup kernels of small split-K GEMMs (scale, memset, epilogue),
        # and would make every memory-bound GEMM slow.
        grid = dict(grids.get(cls, dict(fixed=us, eff=fractions)),
                    mem_eff=[f for f in fractions if f >= 0.5] if cls in grids and
                    cls != "normalization" else fractions)
        base = next((g for g in results if g.split(".")[0] == cls), None)
        if (cls, unit) not in profiled and base:
            # Only single-call micro timings: small cases show the eager-call floor, not the
            # device. Keep the profiled group's tiling and fixed time, fit the rate from the
            # cases that clearly exceed the floor.
            start = dict(results[base])
            grid = {k: v for k, v in grid.items() if k in ("eff", "k_half")}
            mine = [s for s in mine if s["t"] > 1.5 * floor] or mine
        if (cls, unit) not in profiled and cls == "gemm" and unit in TENSOR_CORE_UNITS:
            # Square GEMMs cannot tell tile shapes apart, and tensor-core GEMMs do not run the
            # small SIMT tiles of the fp32 profile: cuBLAS and CUTLASS use 128 x 128 output
            # tiles on Hopper tensor cores (CUTLASS's default sm90 GEMM tile shape). The
            # profile's occupancy term (tiles_half) belongs to its small SIMT tiles too.
            start.update(tile_m=128, tile_n=128, tiles_half=0)
        cls = cls + ("." + unit if unit else "")
        p, c, flat = fit(mine, start, grid, floor)
        results[cls] = p
        held[cls] = {}
        for key in start:
            if key in grid and len(grid[key]) > 1 and key not in flat:
                continue
            tensor_gemm = (cls.split(".")[0] == "gemm" and unit in TENSOR_CORE_UNITS and
                           (cls.split(".")[0], unit) not in profiled)
            if tensor_gemm and key in ("tile_m", "tile_n"):
                why = ("assumed: CUTLASS's default sm90 GEMM tile, 128 x 128 (square micro "
                       "GEMMs cannot tell tile shapes apart)")
            elif tensor_gemm and key == "tiles_half":
                why = ("assumed: no occupancy term for 128 x 128 tensor-core tiles (square micro "
                       "GEMMs cannot show one)")
            elif key == "eff" and cls == "normalization":
                why = "assumed: memory-bound class, compute efficiency held at 1"
            elif base and (cls.split(".")[0], unit) not in profiled:
                why = ("fitted for %s by tools/fit_h100_gpu.py (this group has only single-call "
                       "micro timings)" % base)
            else:
                why = "assumed: the fit's default, which this group's data cannot identify"
            held[cls][key] = why
        print("%-14s %3d samples  mean |log error| %.3f  -> %s" % (
            cls, len(mine), c, {k: (round(v * 1e6, 2) if k == "fixed" else v)
                                for k, v in p.items()}), file=sys.stderr)
        for s in mine:
            e = error(p, s, floor)
            if abs(e) > 0.5:
                print("    %+5.0f%%  %s" % (100 * (math.exp(e) - 1), s["where"]), file=sys.stderr)
    # The group with profiled (device-timed) data is the class default; others override it
    # for their unit precision.
    generic = {"conv": "conv.tfloat32", "gemm": "gemm.float32", "attention": "attention.float32"}
    origin = {g: sorted(set(s["where"].split()[0] if s["where"].startswith("micro") else
                            "op_profiles" for s in samples
                            if ".".join(x for x in group_of(s) if x) == g))
              for g in results}
    units = {g: sorted(set(s["unit"] for s in samples
                           if ".".join(x for x in group_of(s) if x) == g)) for g in results}

    def emit(table, group, p, twin_of=None):
        cls = group.split(".")[0]
        fitted = "fitted: tools/fit_h100_gpu.py to shared validation h100 %s (%s)" % (
            " and ".join("micro.json" if o == "micro" else "op_profiles.json"
                         for o in origin[group]),
            " with ".join(cls + "." + u for u in units[group])
            if "." in group and len(units[group]) > 1 else group)
        if twin_of and "bfloat16" not in units[group]:
            fitted = ("fitted for %s by tools/fit_h100_gpu.py (no bfloat16 data; bf16 and fp16 "
                      "run the same tensor-core kernels at the same rate)" % group)

        def line(name, key, fmt, unit, scale=1.0):
            src = held[group].get(key, fitted)
            print(('%s = { value = ' + fmt + ', unit = "%s", source = "%s" }') % (
                name, p[key] * scale, unit, src))

        print("[gpu.kernels.%s]" % table)
        line("fixed_time", "fixed", "%.1f", "us", 1e6)
        line("efficiency", "eff", "%.2f", "1")
        line("memory_efficiency", "mem_eff", "%.2f", "1")
        if cls in ("conv", "gemm", "attention"):
            line("tile_m", "tile_m", "%d", "count")
            line("tile_n", "tile_n", "%d", "count")
            line("k_half", "k_half", "%d", "count")
            line("split_k_depth", "split_k", "%d", "count")
            line("tiles_half", "tiles_half", "%.1f", "count")
            if cls == "conv":
                line("narrow_efficiency", "narrow_eff", "%.2f", "1")
        print('provenance = "fitted"\n')

    tables = io.StringIO()
    with contextlib.redirect_stdout(tables):
        for group, p in results.items():
            table = group
            for cls, g in generic.items():
                if group == g:
                    table = cls
            emit(table, group, p)
            if group.endswith(".float16"):
                emit(group[:-len("float16")] + "bfloat16", group, p, twin_of=group)
    fitted_tables = tables.getvalue().rstrip("\n") + "\n"
    if not (args.check or args.write):
        sys.stdout.write(fitted_tables)
        return 0
    path = args.check or args.write
    text = open(path).read()
    # The tables run from the first [gpu.kernels.*] header to the last fitted table's end, or
    # to the first "# ---- " comment after them: tables from other fits (nnergy calibrate's
    # grouped convolutions) follow under such a heading.
    first = text.find("[gpu.kernels.")
    end_marker = 'provenance = "fitted"\n'
    others = text.find("\n# ---- ", first) if first >= 0 else -1
    stop = others + 1 if others >= 0 else len(text)
    if first < 0 or text.rfind(end_marker, 0, stop) < first:
        print("%s: no [gpu.kernels.*] tables ending in %s" % (path, end_marker.strip()),
              file=sys.stderr)
        return 1
    last = text.rfind(end_marker, 0, stop) + len(end_marker)
    if args.write:
        with open(path, "w") as f:
            f.write(text[:first] + fitted_tables + text[last:])
        return 0
    if text[first:last] == fitted_tables:
        print("%s: [gpu.kernels] tables are the fit's output" % path)
        return 0
    sys.stderr.writelines(difflib.unified_diff(
        text[first:last].splitlines(True), fitted_tables.splitlines(True), path + " (committed)",
        "tools/fit_h100_gpu.py (fitted)"))
    print("%s: [gpu.kernels] tables differ from the fit's output; regenerate with --write" % path,
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
