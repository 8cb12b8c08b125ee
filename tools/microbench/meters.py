# SPDX-License-Identifier: Apache-2.0
"""Energy per call through `nnergy measure`, which reads the machine's meters (NVML, RAPL, ...).

`nnergy measure [--gpu N] [--rapl] --json FILE -- COMMAND...` runs COMMAND and writes a
measurement file whose one run (kind "command") holds, per meter domain, the energy of the
whole command and its `duration_s`. To get the energy of one call, the harness runs the call in
two child processes under `measure`: each builds the op, warms it up, calls it in a loop and
writes the loop's length and call count to a small result file; one loops for a quarter of
`loop_s`, the other for `loop_s`. Everything outside the loops (interpreter start, imports,
device initialization, the device's power ramping down after the loop, exit) is the same in
both, so the difference of their energies over the difference of their loop lengths is the
loop's mean power, and that times the long loop's time per call is the energy of a call (the
long loop's own rate: on a shared machine the two loops need not run equally fast). The two
children do not start in exactly the same time: the difference of their durations outside the
loops is charged at the mean power of a baseline child that only starts, builds a tiny op and
exits.
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

RUN_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run.py")
BASELINE_CASE = {"op_class": "dispatch", "name": "add", "builder": "dispatch",
                 "params": {"op": "add"}, "batch": 1, "precision": "fp32", "mode": "eager"}


class EnergyMeter:
    def __init__(self, mode, nnergy, device, loop_s, log):
        self.device = device
        self.loop_s = loop_s
        self.log = log
        self.nnergy = nnergy
        self.reason = None       # why energy is absent, said once
        self.baseline_w = {}     # domain -> start-up power: a child that loops not at all
        self.idle_w = {}         # domain -> idle power, when measure reports it
        if mode == "none":
            self.reason = "energy not requested (--energy none)"
        elif not nnergy or not os.access(nnergy, os.X_OK):
            self.reason = f"no nnergy binary at {nnergy!r} (--nnergy PATH)"
        elif not self._has_measure():
            self.reason = f"{nnergy} has no 'measure' command"
        else:
            self._calibrate()
        if self.reason:
            log(f"energy: none recorded: {self.reason}")

    @property
    def available(self):
        return self.reason is None

    def _has_measure(self):
        try:
            r = subprocess.run([self.nnergy, "measure", "--help"], capture_output=True,
                               timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
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
        try:
            short_run, short, _ = self._run_child(case, self.loop_s * self.SHORT_FRACTION)
            long_run, long, _ = self._run_child(case, self.loop_s)
        except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
            return None, f"energy run failed: {e}"
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
            power_w = loop_j / loop_s
            entry = {"meter": e.get("meter", "unknown"), "energy_j": power_w * per_call_s,
                     "mean_power_w": power_w, "window_s": loop_s}
            if e.get("method") in ("counter", "sampled"):
                entry["method"] = e["method"]
            if domain in self.idle_w:
                entry["idle_power_w"] = self.idle_w[domain]
            block[domain] = entry
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
