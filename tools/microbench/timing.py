# SPDX-License-Identifier: Apache-2.0
"""Timed loops: host clock on a CPU, CUDA events on a GPU, eager or a replayed CUDA graph.

Each run is a number of samples; a sample is `calls_per_sample` back-to-back calls, so that
calls shorter than the timer's resolution (a few microseconds of dispatch) are averaged in
groups while long calls are timed one by one. The reported median, min and max are over the
samples' per-call means. Sample counts follow a time budget per run: at least `min_samples`,
more while the run stays under `target_s`.
"""
import gc
import math
import statistics
import time
from dataclasses import dataclass


@dataclass
class Budget:
    target_s: float = 0.15       # timed loop per run
    sample_min_s: float = 0.001  # a sample lasts at least this long
    min_samples: int = 5
    max_samples: int = 200
    warmup_s: float = 0.02       # warm-up calls after the first, at most this long


def _summary(per_call_s, calls_per_sample, wall_s):
    return {
        "latency_ms_median": statistics.median(per_call_s) * 1e3,
        "latency_ms_min": min(per_call_s) * 1e3,
        "latency_ms_max": max(per_call_s) * 1e3,
        "iters": len(per_call_s) * calls_per_sample,
        "wall_s": wall_s,
        "samples": len(per_call_s),
        "calls_per_sample": calls_per_sample,
    }


def _plan_samples(call_s, budget):
    calls = max(1, math.ceil(budget.sample_min_s / max(call_s, 1e-9)))
    samples = int(budget.target_s / max(call_s * calls, 1e-9))
    min_samples = budget.min_samples if call_s < 0.3 else 3  # a few long calls suffice
    return calls, max(min_samples, min(budget.max_samples, samples))


def time_host(fn, budget, sync=lambda: None):
    """Per-call time of `fn` with the host clock (CPU work; `sync` waits for a device)."""
    start = time.perf_counter()
    fn()  # first call: allocations, primitive creation, lazy initialization
    sync()
    first = time.perf_counter() - start
    call_s = first
    warm_end = time.perf_counter() + budget.warmup_s
    for _ in range(3 if first < budget.warmup_s else 1):
        t0 = time.perf_counter()
        fn()
        sync()
        call_s = time.perf_counter() - t0
        if time.perf_counter() > warm_end:
            break
    calls, samples = _plan_samples(call_s, budget)
    per_call = []
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection inside a sample would be charged to the op
    try:
        cpu_start = time.process_time()
        loop_start = time.perf_counter()
        for _ in range(samples):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            per_call.append((time.perf_counter() - t0) / calls)
        wall = time.perf_counter() - loop_start
        cpu = time.process_time() - cpu_start
    finally:
        if gc_was_enabled:
            gc.enable()
    result = _summary(per_call, calls, wall)
    # CPU time of all the process's threads over the loop: with T threads busy for the whole
    # loop it is T x wall; much less means threads waited for a core other work held.
    result["cpu_s"] = cpu
    return result


def time_cuda_eager(fn, budget, torch):
    """Per-call device time of back-to-back eager calls, bracketed by CUDA events.

    The events measure the stream's time between them: when the host cannot issue kernels as
    fast as the device runs them, the host's dispatch time is what they show, as in a model.
    """
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    call_s = _event_time(torch, fn, 1)
    calls, samples = _plan_samples(call_s, budget)

    def sample_work():
        for _ in range(calls):
            fn()  # the output is dropped at once, as a model drops an intermediate
    return _event_samples(torch, sample_work, calls, samples)


def capture_graph(fn, torch, calls=1):
    """`calls` calls of `fn` captured as one CUDA graph: the graph and the last call's output,
    which must outlive the replays."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    # Warm up on a side stream before capturing (as PyTorch's CUDA graph notes advise):
    # lazy initialization such as cuBLAS workspaces must not happen inside the capture.
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    output = None
    with torch.cuda.graph(graph):
        for _ in range(calls):
            output = fn()
    return graph, output


def time_cuda_graph(fn, budget, torch):
    """Per-call device time of the calls captured into one CUDA graph and replayed."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    call_s = _event_time(torch, fn, 1)
    calls, samples = _plan_samples(call_s, budget)
    # Capture up to 32 calls in the graph; a sample replays it enough times for the
    # requested number of calls.
    per_graph = min(calls, 32)
    replays = max(1, math.ceil(calls / per_graph))
    graph, _ = capture_graph(fn, torch, per_graph)
    graph.replay()
    torch.cuda.synchronize()

    def replay():
        for _ in range(replays):
            graph.replay()
    return _event_samples(torch, replay, per_graph * replays, samples)


def _event_time(torch, work, calls):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / calls


def _event_samples(torch, sample_work, calls_per_sample, samples):
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(samples)]
    torch.cuda.synchronize()
    loop_start = time.perf_counter()
    for start, end in events:
        start.record()
        sample_work()
        end.record()
    torch.cuda.synchronize()
    wall = time.perf_counter() - loop_start
    per_call = [s.elapsed_time(e) / 1e3 / calls_per_sample for s, e in events]
    return _summary(per_call, calls_per_sample, wall)


def loop_for(fn, seconds, sync=lambda: None):
    """Calls `fn` until `seconds` have passed (energy windows); returns (calls, elapsed_s)."""
    fn()
    sync()
    chunk = 1
    calls = 0
    start = time.perf_counter()
    while True:
        for _ in range(chunk):
            fn()
        sync()
        calls += chunk
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls, elapsed
        # Grow the chunk so the clock is read about every 10 ms, not after every call.
        per_call = elapsed / calls
        chunk = max(1, min(chunk * 2, int(0.01 / max(per_call, 1e-9))))
