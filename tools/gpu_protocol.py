# SPDX-License-Identifier: Apache-2.0
"""The timing and energy steps of the shared H100 set's protocol (tests/data/validation/h100),
shared by the tools that measure a GPU by it: measure_torchvision_gpu.py, measure_gpu_peaks.py
and profile_bert_capture.py. Needs PyTorch with CUDA; energy from NVML's total-energy counter
(nvidia-ml-py).
"""
import time

import torch

from microbench.timing import capture_graph  # tools/microbench, beside this file


def event_times_ms(fn, calls, warmups):
    """`fn` called `warmups` times, then `calls` times each between two CUDA events, the device
    synchronized after each: the calls' times in milliseconds."""
    for _ in range(warmups):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return times


def capture(fn):
    """One call of `fn` captured as a CUDA graph, as the microbenchmark harness captures its ops:
    the graph and the captured call's output, which must outlive the replays."""
    return capture_graph(fn, torch)


def counter_loop(energy_mj, fn, seconds=2.0, calls_per_sync=5):
    """`fn` called in a loop of at least `seconds`, the device synchronized every
    `calls_per_sync` calls: (joules the counter read, the loop's wall time in s, calls)."""
    e0 = energy_mj()
    t0 = time.perf_counter()
    calls = 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(calls_per_sync):
            fn()
        torch.cuda.synchronize()
        calls += calls_per_sync
    wall = time.perf_counter() - t0
    return (energy_mj() - e0) / 1e3, wall, calls


def idle_power_w(energy_mj, seconds=1.0):
    """The counter's power over `seconds` with nothing running."""
    e0 = energy_mj()
    t0 = time.perf_counter()
    time.sleep(seconds)
    return (energy_mj() - e0) / 1e3 / (time.perf_counter() - t0)
