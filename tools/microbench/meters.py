# SPDX-License-Identifier: Apache-2.0
"""Energy per call through `nnergy measure`, which reads the machine's meters (NVML, RAPL, ...).

`nnergy measure [--gpu N] [--rapl] --json FILE -- COMMAND...` runs COMMAND and writes a
measurement file whose one run (kind "command") holds, per meter domain, the energy of the
whole command and its `duration_s`. To get the energy of one call, the harness runs the call in
a child process under `measure`: the child builds the op, warms it up, calls it in a loop for
`loop_s` seconds and writes the loop's length and call count to a small result file. The
energy outside the loop (interpreter start, imports, device initialization, exit) is charged
at the mean power of a baseline child that starts, builds a tiny op and exits without a loop;
what remains is the loop's energy, divided by its calls. Idle power is included, as in every
`energy_j` of the format.
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
        self.baseline_w = {}     # domain -> mean power of a child without a loop
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

    def _run_child(self, case, loop_s):
        """Runs one case under `nnergy measure`; returns (measure's run, child result, idle)."""
        with tempfile.TemporaryDirectory(prefix="nnergy-microbench-") as tmp:
            measured = os.path.join(tmp, "measure.json")
            result = os.path.join(tmp, "child.json")
            child = [sys.executable, RUN_PY, "--device", self.device, "--single",
                     json.dumps(case), "--loop-s", str(loop_s), "--result", result]
            cmd = [self.nnergy, "measure", *self._meter_flags(), "--json", measured, "--", *child]
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
            run, _, idle = self._run_child(BASELINE_CASE, 0.0)
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

    def measure(self, case):
        """(energy block, note) for one case, or (None, reason) when it could not be taken."""
        if not self.available:
            return None, self.reason
        try:
            run, child, _ = self._run_child(case, self.loop_s)
        except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
            return None, f"energy run failed: {e}"
        duration = run.get("duration_s") or 0
        loop_s, iters = child["loop_s"], child["iters"]
        block = {}
        for domain, e in (run.get("energy") or {}).items():
            if not isinstance(e, dict) or e.get("energy_j") is None:
                continue
            outside = max(0.0, duration - loop_s) * self.baseline_w.get(domain, 0.0)
            loop_j = e["energy_j"] - outside
            if loop_j <= 0:
                continue
            entry = {"meter": e.get("meter", "unknown"), "energy_j": loop_j / iters,
                     "mean_power_w": loop_j / loop_s, "window_s": loop_s}
            if e.get("method") in ("counter", "sampled"):
                entry["method"] = e["method"]
            if domain in self.idle_w:
                entry["idle_power_w"] = self.idle_w[domain]
            block[domain] = entry
        if not block:
            return None, "energy run gave no usable domain"
        note = (f"energy: nnergy measure over a child process calling this op for {loop_s:.2f} s "
                f"({iters} calls, {1e3 * loop_s / iters:.4g} ms per call); the child's "
                f"{max(0.0, duration - loop_s):.2f} s outside the loop are charged at the mean "
                "power of a child that only starts and exits, and subtracted")
        return block, note
