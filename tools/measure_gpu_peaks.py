#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A GPU's datasheet facts as the device reports and runs them: what a new catalog entry cites.

    python3 tools/measure_gpu_peaks.py OUT.json

Records the device's properties (SMs, L2 size, memory, clocks, power limit: CUDA and NVML), its
idle power (NVML counter over 1 s), the streaming bandwidth of an fp32 `x + 1` (read and write
counted, 2^22 to 2^28 elements) and the 8192^3 matrix-product rate per precision (the shared H100
set's micro.json shapes, so the two machines compare directly), each the median of CUDA-event
timed calls after warm-up; the largest add and the fp16 product also get their power over a
loop of at least 2 s (NVML total-energy counter, idle included). Needs PyTorch with CUDA and
nvidia-ml-py (pynvml); the timing and counter steps are tools/gpu_protocol.py's.
"""
import json, statistics, sys
import torch, pynvml
from gpu_protocol import counter_loop, event_times_ms, idle_power_w

pynvml.nvmlInit()
nv = pynvml.nvmlDeviceGetHandleByIndex(0)
energy_mj = lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(nv)
props = torch.cuda.get_device_properties(0)


def nvml(f, *args, scale=1):
    try:
        return f(nv, *args) / scale
    except Exception as e:  # an NVML build without the query: say so in the file
        return f"unavailable: {e!r}"


doc = {"description": "tools/measure_gpu_peaks.py: device properties, idle power, streaming bandwidth "
       "(fp32 x + 1, 8 bytes per element) and 8192^3 matrix products; medians of CUDA-event timed "
       "calls after warm-up; power from NVML's total-energy counter over a loop of at least 2 s",
       "env": {"torch": torch.__version__, "gpu": props.name, "driver": pynvml.nvmlSystemGetDriverVersion(),
               "sm_count": props.multi_processor_count, "l2_cache_bytes": props.L2_cache_size,
               "memory_bytes": props.total_memory, "capability": f"{props.major}.{props.minor}",
               "max_sm_clock_mhz": nvml(getattr(pynvml, "nvmlDeviceGetMaxClockInfo", None), 1),
               "max_mem_clock_mhz": nvml(getattr(pynvml, "nvmlDeviceGetMaxClockInfo", None), 2),
               "power_limit_w": nvml(getattr(pynvml, "nvmlDeviceGetEnforcedPowerLimit", None), scale=1e3),
               "memory_bus_width_bits": nvml(getattr(pynvml, "nvmlDeviceGetMemoryBusWidth", None))},
       "runs": []}
doc["idle_power_w"] = idle_power_w(energy_mj)


def timed(f, n=20, warm=5):
    """The median call in seconds."""
    return statistics.median(event_times_ms(f, calls=n, warmups=warm)) / 1e3


def power(f):
    """(power over a loop of at least 2 s, the loop's time per call)."""
    joules, wall, calls = counter_loop(energy_mj, f, seconds=2.0, calls_per_sync=10)
    return joules / wall, wall / calls


with torch.inference_mode():
    for log2 in (22, 24, 26, 28):
        x = torch.randn(2 ** log2, device="cuda"); y = torch.empty_like(x)
        f = lambda: torch.add(x, 1.0, out=y)
        s = timed(f)
        run = {"kind": "stream_add", "elements": 2 ** log2, "bytes": 8 * 2 ** log2, "time_s": s,
               "gb_per_s": 8 * 2 ** log2 / s / 1e9}
        if log2 == 28:
            run["power_w"], run["loop_time_per_call_s"] = power(f)
        doc["runs"].append(run); print(json.dumps(run), flush=True)
        del x, y
    n = 8192
    for prec, dtype, tf32 in (("fp32", torch.float32, False), ("tf32", torch.float32, True),
                              ("fp16", torch.float16, False), ("bf16", torch.bfloat16, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n, n, device="cuda", dtype=dtype); b = torch.randn(n, n, device="cuda", dtype=dtype)
        f = lambda: torch.mm(a, b)
        s = timed(f, n=10, warm=3)
        run = {"kind": "gemm", "precision": prec, "m": n, "n": n, "k": n, "flops": 2 * n ** 3, "time_s": s,
               "tflop_per_s": 2 * n ** 3 / s / 1e12}
        if prec == "fp16":
            run["power_w"], run["loop_time_per_call_s"] = power(f)
        doc["runs"].append(run); print(json.dumps(run), flush=True)
        del a, b
    torch.backends.cuda.matmul.allow_tf32 = False

with open(sys.argv[1], "w") as f:
    json.dump(doc, f, indent=1)
print("idle", round(doc["idle_power_w"], 1), "W;", json.dumps(doc["env"]), flush=True)
