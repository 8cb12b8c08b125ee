#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Converts the shared validation files to measurement files (nnergy.measurements/1).

    tools/convert_validation.py SOURCE.json -o OUT.json
                                [--kind models|micro|op-profiles|xeon-models] [--machine NAME]

Sources (the shared validation set, also under tests/data/validation/):
  h100/models.json      whole models on one H100: kind "model" runs with NVML energy
  h100/micro.json       GEMM, streaming add and convolution sweeps: kind "op" runs (the
                        GEMMs and convolutions with their single-call timing floor,
                        latency_floor_ms); the per-kernel launch figures: op_class "dispatch"
                        runs
  h100/op_profiles.json per-op device time inside four models (torch.profiler): kind "op"
                        runs of mode "device", one per op and input shapes
  xeon-host/models.json whole models on the H100 machine's host CPU: kind "model" runs; its
                        measured peaks (4096^3 GEMM, streaming add): kind "op" runs

No figure is lost: every source key of an entry lands in a format key or, where the format has
none (throughput, TFLOP/s, GB/s), is kept under its own name on the run; the top level's
description, env and idle power are kept. The kind is guessed from the file's keys when not
given. `--machine` names the machine (`machine.name`) for a file measured by the same protocol on
another machine (tools/measure_torchvision_gpu.py writes the models format).
"""
import argparse
import ast
import json
import math
import re
import sys

PRECISION = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
ELEMENT_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}
H100_MACHINE = "h100-sxm5"
XEON_MACHINE = "xeon-5th-gen-16vcpu"


def precision_of(dtype, tf32=False):
    p = PRECISION[dtype]
    return "tf32" if p == "fp32" and tf32 else p


# ------------------------------------------------------------------ h100/models.json


def convert_h100_models(src):
    env = dict(src.get("env", {}))
    idle_w = src.get("idle_power_w")
    doc = header(src, H100_MACHINE, env, gpu=env.get("gpu"), cpu=env.get("host_cpu"))
    if idle_w is not None:
        doc["idle"] = [{"device": "gpu0", "meter": "nvml", "power_w": idle_w}]
    for r in src["runs"]:
        run = {"kind": "model", "name": r["model"], "device": "cuda:0",
               "precision": r["precision"], "batch": r["batch"], "mode": r["mode"],
               "params": {"parameters": r["params"], "input": r["input"]},
               "latency_ms_median": r["latency_ms_median"],
               "latency_ms_min": r["latency_ms_min"], "latency_ms_max": r["latency_ms_max"],
               "iters": r["iters"], "wall_s": r["wall_s"], "items": r["batch"],
               "throughput_inf_per_s": r["throughput_inf_per_s"]}
        energy = {"meter": "nvml", "energy_j": r["energy_per_inference_j"],
                  "mean_power_w": r["mean_power_counter_w"], "window_s": r["wall_s"],
                  "method": "counter"}
        if idle_w is not None:
            energy["idle_power_w"] = idle_w
        run["energy"] = {"gpu0": energy}
        run["note"] = ("energy: NVML total-energy counter over the iters-call loop (wall_s), "
                       "divided by iters; fp32 convolutions may use TF32 (cuDNN default), fp32 "
                       "matmuls do not")
        check_keys(r, {"model", "precision", "batch", "mode", "params", "input",
                       "latency_ms_median", "latency_ms_min", "latency_ms_max", "iters",
                       "wall_s", "throughput_inf_per_s", "energy_per_inference_j",
                       "mean_power_counter_w"})
        doc["runs"].append(run)
    check_keys(src, {"description", "env", "idle_power_w", "runs"})
    return doc


# ------------------------------------------------------------------ h100/micro.json


def gemm_bytes(m, n, k, precision):
    return ELEMENT_BYTES[precision] * (m * k + k * n + m * n)


def conv_class(cin, groups):
    if groups == 1:
        return "conv"
    return "depthwise_conv" if groups == cin else "grouped_conv"


# Single eager calls timed with CUDA events record the host's path to the kernel too: a call
# whose kernels take less shows this floor instead of device time. The source does not time an
# empty call, so the floor is the median of its GEMMs and convolutions of under 2e8 FLOPs, whose
# device time (a few us) is far below it.
FLOOR_MAX_FLOPS = 2e8


def single_call_floor_ms(src):
    """The floor and the number of calls it is the median of (None, 0 without such calls)."""
    small = sorted([r["ms"] for r in src.get("gemm", [])
                    if 2 * r["m"] * r["n"] * r["k"] < FLOOR_MAX_FLOPS] +
                   [r["ms"] for r in src.get("conv", []) if 2 * r["macs"] < FLOOR_MAX_FLOPS])
    return (small[len(small) // 2], len(small)) if small else (None, 0)


FLOOR_NOTE = ("latency_floor_ms: median latency of the set's %d GEMMs and convolutions of under "
              "2e8 FLOPs, single eager calls whose device time is far below it")


def convert_h100_micro(src):
    doc = header(src, H100_MACHINE, {})
    runs = doc["runs"]
    floor_ms, floor_cases = single_call_floor_ms(src)

    def floored(run):
        if floor_ms is None:
            return run
        run["note"] += "; " + FLOOR_NOTE % floor_cases
        out = {}
        for key, value in run.items():
            out[key] = value
            if key == "latency_ms_median":
                out["latency_floor_ms"] = floor_ms
        return out

    for r in src.get("gemm", []):
        check_keys(r, {"dtype", "tf32", "m", "n", "k", "ms", "tflops", "energy_j", "power_w"})
        precision = precision_of(r["dtype"], r["tf32"])
        m, n, k = r["m"], r["n"], r["k"]
        runs.append(floored({
            "kind": "op", "op_class": "gemv" if m == 1 or n == 1 else "gemm", "name": "matmul",
            "params": {"m": m, "n": n, "k": k, "dtype": r["dtype"], "tf32": r["tf32"],
                       "source": "square"},
            "device": "cuda:0", "precision": precision, "batch": 1, "mode": "eager",
            "latency_ms_median": r["ms"], "flops": 2 * m * n * k,
            "bytes": gemm_bytes(m, n, k, precision), "tflops": r["tflops"],
            "energy": {"gpu0": {"meter": "nvml", "energy_j": r["energy_j"],
                                "mean_power_w": r["power_w"], "method": "counter"}},
            "note": "latency: CUDA-event median; energy: NVML counter over a >= 0.6 s loop, "
                    "per call"}))
    for r in src.get("elementwise", []):
        check_keys(r, {"dtype", "numel", "bytes_moved", "ms", "gbps", "energy_j", "power_w"})
        precision = precision_of(r["dtype"])
        runs.append({
            "kind": "op", "op_class": "elementwise", "name": "add_scalar",
            "params": {"ops": ["add_scalar"], "numel": r["numel"], "dtype": r["dtype"],
                       "bytes_moved": r["bytes_moved"], "source": "bandwidth sweep"},
            "device": "cuda:0", "precision": precision, "batch": 1, "mode": "eager",
            "latency_ms_median": r["ms"], "flops": r["numel"], "bytes": r["bytes_moved"],
            "gbps": r["gbps"],
            "energy": {"gpu0": {"meter": "nvml", "energy_j": r["energy_j"],
                                "mean_power_w": r["power_w"], "method": "counter"}},
            "note": "torch.add(x, 1.0, out=y): bytes read + written"})
    for r in src.get("conv", []):
        check_keys(r, {"dtype", "cin", "cout", "hw", "k", "stride", "groups", "batch", "ms",
                       "macs", "tflops"})
        cin, cout, hw, k, s, g, b = (r["cin"], r["cout"], r["hw"], r["k"], r["stride"],
                                     r["groups"], r["batch"])
        # cuDNN's defaults allow TF32 for fp32 convolutions: the math is TF32.
        precision = precision_of(r["dtype"], tf32=True)
        ho = (hw + 2 * (k // 2) - k) // s + 1
        moved = ELEMENT_BYTES[precision] * (b * cin * hw * hw + cout * (cin // g) * k * k
                                            + b * cout * ho * ho)
        runs.append(floored({
            "kind": "op", "op_class": conv_class(cin, g), "name": "conv2d",
            "params": {"cin": cin, "cout": cout, "hw": hw, "k": k, "stride": s, "groups": g,
                       "dtype": r["dtype"], "macs": r["macs"], "out_hw": ho},
            "device": "cuda:0", "precision": precision, "batch": b, "mode": "eager",
            "latency_ms_median": r["ms"], "flops": 2 * r["macs"], "bytes": moved,
            "tflops": r["tflops"],
            "note": "nn.Conv2d without bias, padding k//2, cuDNN defaults (float32 with TF32 "
                    "allowed); latency: CUDA-event median"}))
    launch = src.get("launch", {})
    for key, mode in (("eager_us_per_tiny_kernel", "eager"),
                      ("graph_us_per_tiny_kernel", "cuda_graph")):
        if key in launch:
            runs.append({
                "kind": "op", "op_class": "dispatch", "name": "add",
                "params": {"op": "add_", "ops": ["add"], "numel": 1, "repeats": 100,
                           "for_class": "elementwise", "source_key": key},
                "device": "cuda:0", "precision": "fp32", "batch": 1, "mode": mode,
                "latency_ms_median": launch[key] / 1e3, "flops": 1,
                "note": "a 1-element in-place add repeated 100 times, per kernel"})
    check_keys(launch, {"eager_us_per_tiny_kernel", "graph_us_per_tiny_kernel"})
    check_keys(src, {"description", "gemm", "elementwise", "conv", "launch"})
    return doc


# ------------------------------------------------------------------ h100/op_profiles.json

PROFILED_ELEMENTWISE = {"aten::clamp_min_": "relu", "aten::clamp": "clamp", "aten::gelu": "gelu",
                        "aten::hardtanh_": "clamp"}
# FLOPs per element, as docs/counting.md counts them (a clamp is a max and a min).
ELEMENTWISE_FLOPS = {"relu": 1, "clamp": 2, "gelu": 5}
# What the profile holds but no op run prices: copies of the class token (cat), the profiler's
# own buffer requests, and the CUDA kernels listed under each aten op (their time is the op's).
PROFILED_ELSEWHERE = ("aten::cat",)


def shape_text(shape):
    """An elementwise op's input shape, so that two shapes of one size are two runs."""
    return "x".join(str(d) for d in shape)


def guessed_conv_stride(cin, cout, k, hw, groups):
    """The stride of a torchvision convolution when the profile cannot show it: stems and patch
    embeddings, and the downsampling convolutions of ResNets and MobileNets (tools/fit_h100_gpu.py
    reads the profiles with it too)."""
    if k == 16:
        return 16
    if k == 7:
        return 2
    if groups == 1 and cin == 3:
        return 2  # the 3x3/2 stem of MobileNetV2
    if groups == 1 and cout == 2 * cin and k in (1, 3) and cin >= 64:
        return 2  # a ResNet downsample (1x1 shortcut, or the 3x3 of a basic block)
    stage = {64: 56, 128: 28, 256: 14, 512: 7}
    if groups == 1 and k == 3 and cin == cout and stage.get(cout) and hw == 2 * stage[cout]:
        return 2
    return 1


def convert_h100_op_profiles(src):
    """Each aten op of a profile, with its input shapes, becomes one op run: its device time per
    call (self device time over the calls) at mode "device". An (op, shapes) pair profiled in
    more than one model is kept once, from the first (the same kernels run either way)."""
    doc = header(src, H100_MACHINE, {})
    runs = doc["runs"]
    seen = set()
    for profile, prof in src["profiles"].items():
        check_keys(prof, {"ops", "kernels_per_iter", "kernel_time_us_per_iter"})
        batch_of = re.search(r"_b(\d+)$", profile)
        if not batch_of:
            raise ValueError(f"profile '{profile}': no _b<batch> at the end of its name")
        batch = int(batch_of.group(1))
        ops = [o for o in prof["ops"] if o["op"].startswith("aten::")]
        for i, o in enumerate(ops):
            check_keys(o, {"op", "shapes", "count", "self_device_us_total"})
            op = o["op"]
            key = (op, o["shapes"])
            if key in seen or op in PROFILED_ELSEWHERE:
                continue
            shapes = ast.literal_eval(o["shapes"])
            x = shapes[0]
            run = {"kind": "op", "device": "cuda:0", "precision": "fp32", "mode": "device",
                   "batch": x[0] if x else batch}
            params = {}
            if op in ("aten::cudnn_convolution", "aten::_conv_depthwise2d"):
                w = shapes[1]
                n_, cin, hw, _ = x
                cout, cpg, k, _ = w
                groups = cin // cpg
                # The op's output is the next op's input: its spatial size gives the stride.
                following = ast.literal_eval(ops[i + 1]["shapes"]) if i + 1 < len(ops) else []
                out = following[0] if following else []
                if len(out) == 4 and out[0] == n_ and out[1] == cout and out[2] <= hw:
                    stride, how = hw // out[2], "the next op's input"
                else:
                    stride, how = guessed_conv_stride(cin, cout, k, hw, groups), "guessed"
                pad = 0 if k == stride else k // 2  # patch embeddings are unpadded
                params = {"cin": cin, "cout": cout, "hw": hw, "k": k, "stride": stride,
                          "groups": groups, "pad": pad, "stride_from": how}
                out_hw = (hw + 2 * pad - k) // stride + 1
                flops = 2 * n_ * cout * out_hw * out_hw * cpg * k * k
                run.update(name="conv2d", op_class=conv_class(cin, groups))
                if groups == 1:
                    run["precision"] = "tf32"  # cuDNN's default allows TF32
            elif op == "aten::addmm":
                _, a, b = shapes[0], shapes[1], shapes[2]
                m, k = a
                n = b[1]
                if m % batch:
                    raise ValueError(f"profile '{profile}': {op} {o['shapes']}: {m} rows is "
                                     f"no multiple of batch {batch}")
                params = {"k": k, "n": n, "seq": m // batch}
                flops = 2 * m * n * k + m * n  # the bias add
                run.update(name="linear", op_class="gemv" if m == 1 or n == 1 else "gemm",
                           batch=batch)
            elif op == "aten::_efficient_attention_forward":
                b_, sq, heads, d = x
                params = {"seq": sq, "heads": heads, "head_dim": d, "impl": "sdpa"}
                scores = b_ * heads * sq * sq
                flops = 2 * 2 * scores * d + 6 * scores  # two products, the scale, softmax
                run.update(name="attention", op_class="attention")
            elif op == "aten::cudnn_batch_norm":
                params = {"c": x[1], "hw": x[2]}
                flops = 2 * math.prod(x)
                run.update(name="batch_norm", op_class="normalization")
            elif op == "aten::native_layer_norm":
                params = {"seq": x[1], "d": x[2]}
                flops = 7 * math.prod(x)
                run.update(name="layer_norm", op_class="normalization")
            elif op == "aten::max_pool2d_with_indices":
                # torchvision's ResNet stem pool: 3x3, stride 2, padding 1.
                params = {"c": x[1], "hw": x[2], "k": 3, "stride": 2, "pad": 1}
                out_hw = (x[2] + 2 - 3) // 2 + 1
                flops = 8 * x[0] * x[1] * out_hw * out_hw  # comparisons
                run.update(name="max_pool2d", op_class="pooling")
            elif op in ("aten::mean", "aten::adaptive_avg_pool2d"):
                params = {"c": x[1], "hw": x[2]}
                flops = math.prod(x)
                run.update(name="global_avg_pool", op_class="pooling")
            elif op in ("aten::add", "aten::add_"):
                # A broadcast operand (a bias, a position embedding) is read once, as a scalar.
                name = "add" if shapes[1] == x else "add_scalar"
                params = {"numel": math.prod(x[1:]), "ops": [name], "shape": shape_text(x)}
                flops = math.prod(x)
                run.update(name=name, op_class="elementwise")
            elif op in PROFILED_ELEMENTWISE:
                params = {"numel": math.prod(x[1:]), "ops": [PROFILED_ELEMENTWISE[op]],
                          "shape": shape_text(x)}
                flops = ELEMENTWISE_FLOPS[PROFILED_ELEMENTWISE[op]] * math.prod(x)
                run.update(name=PROFILED_ELEMENTWISE[op], op_class="elementwise")
            else:
                raise ValueError(f"profile '{profile}': no op run for {op} {o['shapes']}")
            seen.add(key)
            params.update(op=op, source=profile)
            run["params"] = params
            run["latency_ms_median"] = o["self_device_us_total"] / o["count"] / 1e3
            run["flops"] = flops
            run["iters"] = o["count"]
            run["note"] = (f"torch.profiler self device time of {op}, input shapes "
                           f"{o['shapes']}, {o['count']} calls over the profile's iterations")
            runs.append(run)
    check_keys(src, {"description", "profiles"})
    return doc


# ------------------------------------------------------------------ xeon-host/models.json


def convert_xeon_models(src):
    env = {"threads": 16, "bf16": "torch.autocast('cpu', bfloat16)"}
    doc = header(src, XEON_MACHINE, env,
                 cpu="Intel Xeon (family 6 model 207), 16 vCPU under KVM, AVX-512 + AMX")
    doc["machine"]["cores"] = 16
    for r in src["runs"]:
        check_keys(r, {"model", "batch", "precision", "latency_ms_median", "latency_ms_min",
                       "n"})
        doc["runs"].append({
            "kind": "model", "name": r["model"], "device": "cpu", "precision": r["precision"],
            "batch": r["batch"], "mode": "eager", "threads": 16,
            "latency_ms_median": r["latency_ms_median"], "latency_ms_min": r["latency_ms_min"],
            "iters": r["n"], "items": r["batch"]})
    # The measured peaks: op runs that keep the source's figure under its own key.
    n = 4096
    for key, precision in (("gemm4096_fp32_tflops", "fp32"), ("gemm4096_bf16_tflops", "bf16")):
        if key in src:
            flops = 2 * n ** 3
            doc["runs"].append({
                "kind": "op", "op_class": "gemm", "name": "matmul",
                "params": {"m": n, "n": n, "k": n, "source": "peak", "source_key": key},
                "device": "cpu", "precision": precision, "batch": 1, "mode": "eager",
                "threads": 16, "latency_ms_median": flops / (src[key] * 1e12) * 1e3,
                "flops": flops, "bytes": gemm_bytes(n, n, n, precision), "tflops": src[key],
                "note": "latency derived from the recorded TFLOP/s (flops / rate)"})
    if "stream_add_gbps" in src:
        doc["runs"].append({
            "kind": "op", "op_class": "elementwise", "name": "add",
            "params": {"numel": 2 ** 27, "source": "peak", "source_key": "stream_add_gbps"},
            "device": "cpu", "precision": "fp32", "batch": 1, "mode": "eager", "threads": 16,
            "gbps": src["stream_add_gbps"],
            "note": "a 2^27-element add, bandwidth counting bytes read and written; the source "
                    "gives the rate only, so no latency is derived"})
    check_keys(src, {"description", "gemm4096_fp32_tflops", "gemm4096_bf16_tflops",
                     "stream_add_gbps", "runs"})
    return doc


# ------------------------------------------------------------------ common


def header(src, machine_name, env, gpu=None, cpu=None):
    machine = {"name": machine_name, "note": "converted from the shared validation set by "
                                             "tools/convert_validation.py"}
    if cpu:
        machine["cpu"] = cpu
    if gpu:
        machine["gpu"] = gpu
    doc = {"schema": "nnergy.measurements/1", "description": src.get("description", ""),
           "machine": machine, "env": env, "runs": []}
    return doc


def check_keys(entry, known):
    """A source key this converter does not place would be a lost figure: refuse."""
    unknown = set(entry) - known
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)} in {json.dumps(entry)[:200]}")


def source_entries(src):
    """How many runs a source gives: its runs or sweep entries, launch figures and peaks."""
    if "runs" in src and "idle_power_w" in src:
        return len(src["runs"])
    if "profiles" in src:
        return sum(1 for p in src["profiles"].values() for o in p["ops"]
                   if o["op"].startswith("aten::"))
    if "gemm" in src or "conv" in src:
        return (len(src.get("gemm", [])) + len(src.get("elementwise", []))
                + len(src.get("conv", [])) + len(src.get("launch", {})))
    peaks = [k for k in ("gemm4096_fp32_tflops", "gemm4096_bf16_tflops", "stream_add_gbps")
             if k in src]
    return len(src.get("runs", [])) + len(peaks)


def guess_kind(src):
    if "profiles" in src:
        return "op-profiles"
    if "gemm" in src or "conv" in src or "launch" in src:
        return "micro"
    if "idle_power_w" in src or "env" in src:
        return "models"
    return "xeon-models"


CONVERTERS = {"models": convert_h100_models, "micro": convert_h100_micro,
              "op-profiles": convert_h100_op_profiles, "xeon-models": convert_xeon_models}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--kind", choices=sorted(CONVERTERS))
    p.add_argument("--machine", help="machine.name (default: the shared set's machine)")
    args = p.parse_args(argv)
    with open(args.source, encoding="utf-8") as f:
        src = json.load(f)
    kind = args.kind or guess_kind(src)
    try:
        doc = CONVERTERS[kind](src)
    except (KeyError, ValueError) as e:
        sys.exit(f"convert_validation: {args.source}: {e}")
    if args.machine:
        doc["machine"]["name"] = args.machine
        doc["machine"]["note"] = "converted by tools/convert_validation.py"
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"convert_validation: {args.source} ({kind}): {len(doc['runs'])} runs "
          f"(source entries: {source_entries(src)}) -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
