# SPDX-License-Identifier: Apache-2.0
"""Energy per call through `nnergy measure`, which reads the machine's meters (NVML, RAPL, ...).

Two methods (run.py --energy-method):

window (the default where `nnergy measure --serve` exists): one long-lived
`nnergy measure [--gpu N | --rapl] --serve` answers `begin` and `end` requests on its standard
input with the meters' readings. The harness warms the op up in its own process, opens a window,
calls the op in a loop for `loop_s`, synchronizes and closes the window. A counter's power
between the first and the last update seen in the window (`counter_power_w`) is the loop's
power, free of the lag of up to one update period at the window's ends (NVML's counter moves
every 100 ms on an H100); without two updates, the window's mean power. That times the loop's
time per call is the energy of a call. A case costs its loop and a short warm-up: no process
starts.

children: each case runs in two child processes under `nnergy measure --json FILE -- ...`; each
builds the op, warms it up, calls it in a loop and writes the loop's length and call count to a
small result file; one loops for a quarter of `loop_s`, the other for `loop_s`. Everything
outside the loops (interpreter start, imports, device initialization, the device's power ramping
down after the loop, exit) is the same in both, so the difference of their energies over the
difference of their loop lengths is the loop's mean power, and that times the long loop's time
per call is the energy of a call (the long loop's own rate: on a shared machine the two loops
need not run equally fast). The two children do not start in exactly the same time: the
difference of their durations outside the loops is charged at the mean power of a baseline
child that only starts, builds a tiny op and exits. About 9 s of start-up per case on the H100.

Idle power is included, as in every `energy_j` of the format.

Charging the time outside the loop at the power of a child that only starts and exits (the
harness's first method) misses what the device draws after a heavy loop while it ramps down:
on an H100 that put GEMM loops of 1.5 s at up to 890 W, above the 700 W limit.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

RUN_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run.py")
BASELINE_CASE = {"op_class": "dispatch", "name": "add", "builder": "dispatch",
                 "params": {"op": "add"}, "batch": 1, "precision": "fp32", "mode": "eager"}


WARMUP_S = 0.25     # window method: calls before the window opens, to reach steady power
IDLE_S = 0.5        # window method: the idle window at start-up


class EnergyMeter:
    def __init__(self, mode, nnergy, device, loop_s, log, method="auto"):
        self.device = device
        self.loop_s = loop_s
        self.log = log
        self.nnergy = nnergy
        self.reason = None       # why energy is absent, said once
        self.baseline_w = {}     # domain -> start-up power: a child that loops not at all
        self.idle_w = {}         # domain -> idle power, when measure reports it
        self.server = None       # window method: the `nnergy measure --serve` process
        self.method = None       # "window" or "children"
        self.help_text = ""      # `nnergy measure --help`: does it serve windows?
        if mode == "none":
            self.reason = "energy not requested (--energy none)"
        elif not nnergy or not os.access(nnergy, os.X_OK):
            self.reason = f"no nnergy binary at {nnergy!r} (--nnergy PATH)"
        elif not self._has_measure():
            self.reason = f"{nnergy} has no 'measure' command"
        elif method == "window" or (method == "auto" and "--serve" in self.help_text):
            self.method = "window"
            self._start_server()
        else:
            self._calibrate()
            if not self.reason:
                self.method = "children"
        if self.reason:
            log(f"energy: none recorded: {self.reason}")

    @property
    def available(self):
        return self.reason is None

    @property
    def in_process(self):
        """True when measure_in_process() takes the energy (window method)."""
        return self.method == "window"

    # ---- window method -----------------------------------------------------------------------

    def _start_server(self):
        cmd = [self.nnergy, "measure", *self._meter_flags(), "--serve"]
        why = "no ready line"
        # Its messages go to a file: a pipe nobody reads during the pass could fill and block it.
        errors = tempfile.TemporaryFile(mode="w+")
        try:
            self.server = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=errors, text=True)
            ready = json.loads(self.server.stdout.readline() or "null")
        except (OSError, ValueError) as e:
            ready = None
            why = str(e)
        if not isinstance(ready, dict) or not ready.get("ready"):
            if self.server:
                self.server.kill()
                self.server.communicate()
                errors.seek(0)
                why = errors.read().strip()[-300:] or why
                self.server = None
            self.reason = f"nnergy measure --serve did not start: {why}"
            return
        if not ready.get("domains"):
            self.close()
            self.reason = "nnergy measure found no meter on this machine: " + "; ".join(
                ready.get("unavailable") or [])
            return
        idle = self._window(lambda: time.sleep(IDLE_S))
        if isinstance(idle, str):
            self.close()
            self.reason = f"the idle window failed: {idle}"
            return
        self.idle_w = {d: p for d, (p, _, _) in idle.items()}
        self.log("energy: nnergy measure --serve, domains " + ", ".join(
            f"{d} (idle {w:.1f} W)" for d, w in self.idle_w.items()))

    def _ask(self, request):
        self.server.stdin.write(request + "\n")
        self.server.stdin.flush()
        line = self.server.stdout.readline()
        if not line:
            raise RuntimeError("nnergy measure --serve exited")
        return json.loads(line)

    def _window(self, work):
        """Runs work() inside a window: {domain: (power_w, seconds, reading)}, or why not."""
        try:
            begun = self._ask("begin")
            if "error" in begun:
                return begun["error"]
            try:
                work()
            except (RuntimeError, ValueError, MemoryError) as e:
                self._ask("end")  # closes the window; its reading is of no use
                return f"the op failed in the energy loop: {str(e).splitlines()[0][:200]}"
            ended = self._ask("end")
        except (OSError, ValueError, RuntimeError) as e:
            return str(e)
        if "error" in ended:
            return ended["error"]
        out = {}
        for r in ended.get("readings", []):
            span = r.get("counter_span_s") or 0
            if r.get("counter_power_w") and span >= 0.5 * r["window_s"]:
                out[r["domain"]] = (r["counter_power_w"], span, r)
            elif r.get("mean_power_w"):
                out[r["domain"]] = (r["mean_power_w"], r["window_s"], r)
        return out

    def measure_in_process(self, fn, sync):
        """(energy block, note) for an op this process calls (window method)."""
        import timing
        timing.loop_for(fn, WARMUP_S, sync)
        loop = {}

        def work():
            loop["iters"], loop["loop_s"] = timing.loop_for(fn, self.loop_s, sync)

        got = self._window(work)
        if isinstance(got, str):
            return None, f"energy window failed: {got}"
        if not got or not loop.get("iters"):
            return None, "energy window gave no usable domain"
        per_call_s = loop["loop_s"] / loop["iters"]
        block = {domain: self._entry(domain, r, power_w, per_call_s, seconds)
                 for domain, (power_w, seconds, r) in got.items()}
        spans = ", ".join(f"{d} {s:.2f} s" for d, (_, s, _) in got.items())
        note = (f"energy: nnergy measure --serve, a window around {loop['loop_s']:.2f} s of calls "
                f"({loop['iters']} calls) after {WARMUP_S:g} s of warm-up; the power between the "
                f"first and last counter updates seen in it ({spans}), times the loop's "
                f"{1e3 * per_call_s:.4g} ms per call")
        return block, note

    def _entry(self, domain, reading, power_w, per_call_s, window_s):
        """A run's energy block for one domain: the loop's power times the time per call."""
        entry = {"meter": reading.get("meter", "unknown"), "energy_j": power_w * per_call_s,
                 "mean_power_w": power_w, "window_s": window_s}
        if reading.get("method") in ("counter", "sampled"):
            entry["method"] = reading["method"]
        if domain in self.idle_w:
            entry["idle_power_w"] = self.idle_w[domain]
        return entry

    def close(self):
        if self.server:
            try:
                self.server.communicate("quit\n", timeout=30)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                self.server.kill()
            self.server = None

    # ---- children method ---------------------------------------------------------------------

    def _has_measure(self):
        try:
            r = subprocess.run([self.nnergy, "measure", "--help"], capture_output=True,
                               text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
        self.help_text = r.stdout
        return r.returncode == 0

    def _meter_flags(self):
        if self.device.startswith("cuda"):
            index = self.device.split(":", 1)[1] if ":" in self.device else "0"
            return ["--gpu", index]
        return ["--rapl"]

    def _run_child(self, case, loop_s, idle=False):
        """Runs one case under `nnergy measure`; returns (measure's run, child result, idle)."""
        with tempfile.TemporaryDirectory(prefix="nnergy-microbench-") as tmp:
            measured = os.path.join(tmp, "measure.json")
            result = os.path.join(tmp, "child.json")
            child = [sys.executable, RUN_PY, "--device", self.device, "--single",
                     json.dumps(case), "--loop-s", str(loop_s), "--result", result]
            # Only the baseline child measures the idle power first (half a second each).
            idle_flags = [] if idle else ["--idle-ms", "0"]
            cmd = [self.nnergy, "measure", *self._meter_flags(), *idle_flags, "--json", measured,
                   "--", *child]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
            if r.returncode != 0 or not os.path.exists(measured) or not os.path.exists(result):
                raise RuntimeError(f"nnergy measure exited {r.returncode}: "
                                   f"{(r.stderr or r.stdout).strip()[-400:]}")
            with open(measured, encoding="utf-8") as f:
                doc = json.load(f)
            with open(result, encoding="utf-8") as f:
                child_result = json.load(f)
        runs = doc.get("runs") or []
        if not runs:
            raise RuntimeError("nnergy measure wrote no run")
        idle = {e["device"]: e["power_w"] for e in doc.get("idle", []) if "power_w" in e}
        return runs[0], child_result, idle

    def _calibrate(self):
        try:
            run, _, idle = self._run_child(BASELINE_CASE, 0.0, idle=True)
        except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
            self.reason = f"the baseline measurement failed: {e}"
            return
        duration = run.get("duration_s") or 0
        energy = {d: e for d, e in (run.get("energy") or {}).items()
                  if isinstance(e, dict) and e.get("energy_j") is not None}
        if not energy or duration <= 0:
            self.reason = "nnergy measure found no meter on this machine"
            return
        self.baseline_w = {d: e["energy_j"] / duration for d, e in energy.items()}
        self.idle_w = idle
        self.log("energy: nnergy measure, domains " + ", ".join(
            f"{d} (start-up {w:.1f} W)" for d, w in self.baseline_w.items()))

    SHORT_FRACTION = 0.25  # the short child's loop, as a fraction of loop_s

    def measure(self, case):
        """(energy block, note) for one case, or (None, reason) when it could not be taken."""
        if not self.available:
            return None, self.reason
        # On a loaded machine one slow call can stretch the short loop past the long one; the
        # pair is then taken once more before the case goes without energy.
        for _ in range(2):
            try:
                short_run, short, _ = self._run_child(case, self.loop_s * self.SHORT_FRACTION)
                long_run, long, _ = self._run_child(case, self.loop_s)
            except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
                return None, f"energy run failed: {e}"
            if long["loop_s"] - short["loop_s"] > 0.5 * long["loop_s"]:
                break
        # The loops' power comes from the difference; a call's share of it from the long loop's
        # own rate (on a shared machine the two loops need not run at the same rate).
        loop_s = long["loop_s"] - short["loop_s"]
        if loop_s <= 0 or long["iters"] <= 0:
            return None, (f"energy run: the long loop ({long['loop_s']:.3f} s) was not longer "
                          f"than the short one ({short['loop_s']:.3f} s)")
        per_call_s = long["loop_s"] / long["iters"]
        block = {}
        for domain, e in (long_run.get("energy") or {}).items():
            e_short = (short_run.get("energy") or {}).get(domain)
            if not isinstance(e, dict) or e.get("energy_j") is None \
                    or not isinstance(e_short, dict) or e_short.get("energy_j") is None:
                continue
            # What the children spent outside their loops cancels but for their difference in
            # start-up time, charged at start-up power.
            outside_s = (long_run.get("duration_s", 0) - long["loop_s"]) \
                - (short_run.get("duration_s", 0) - short["loop_s"])
            loop_j = e["energy_j"] - e_short["energy_j"] \
                - outside_s * self.baseline_w.get(domain, 0.0)
            if loop_j <= 0:
                continue
            block[domain] = self._entry(domain, e, loop_j / loop_s, per_call_s, loop_s)
        if not block:
            return None, "energy run gave no usable domain"
        note = (f"energy: nnergy measure over two child processes calling this op in a loop, "
                f"for {long['loop_s']:.2f} s ({long['iters']} calls) and {short['loop_s']:.2f} s "
                f"({short['iters']} calls); the difference of their energies over the "
                f"{loop_s:.2f} s between the loops is the loop's power, so what each child "
                "spends outside its loop cancels (their difference in start-up time is charged "
                "at the power of a child that only starts and exits), times the long loop's "
                f"{1e3 * per_call_s:.4g} ms per call")
        return block, note
