#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs `nnergy measure` against fake meters and checks what it prints, writes and returns.

    check_measure.py NNERGY SCHEMA FAKE_NVML SCENARIO

NNERGY is the binary, SCHEMA docs/measurements.schema.json, FAKE_NVML the fake NVML library
(tests/fakes/nvml). Each measurement file written is validated against the schema. Exit 0 when
the scenario passes, 1 with the reason, 77 when it cannot run here (ctest reports a skip).
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

try:
    import jsonschema
except ImportError:  # scripts/install-deps.sh installs python3-jsonschema
    sys.exit("check_measure: python3-jsonschema is not installed (scripts/install-deps.sh)")

NNERGY, SCHEMA, FAKE_NVML, SCENARIO = sys.argv[1:5]
TMP = tempfile.mkdtemp(prefix="nnergy-measure-")


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def near(value, expected, tolerance, what):
    check(abs(value - expected) <= tolerance,
          f"{what}: {value} is not within {tolerance} of {expected}")


def env_with(nvml_script=None, nvml_library=None, powercap=None, hwmon=None):
    """The environment for a run: meters that are absent unless a fake is given."""
    env = dict(os.environ)
    env["NNERGY_NVML_LIBRARY"] = nvml_library or (FAKE_NVML if nvml_script else
                                                  os.path.join(TMP, "absent", "libnvidia-ml.so.1"))
    if nvml_script is not None:
        path = os.path.join(TMP, "nvml-script")
        with open(path, "w", encoding="utf-8") as f:
            f.write(nvml_script)
        env["NNERGY_FAKE_NVML_SCRIPT"] = path
    env["NNERGY_POWERCAP_ROOT"] = powercap or os.path.join(TMP, "absent-powercap")
    env["NNERGY_HWMON_ROOT"] = hwmon or os.path.join(TMP, "absent-hwmon")
    return env


def run(args, env=None, timeout=60):
    p = subprocess.run([NNERGY, *args], env=env, capture_output=True, text=True, timeout=timeout)
    print(f"$ nnergy {' '.join(args)}\n--- exit {p.returncode}\n--- stdout:\n{p.stdout}"
          f"--- stderr:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def load_valid(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    with open(SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(doc))
    for e in errors:
        print(f"{path}: {list(e.absolute_path)}: {e.message}")
    check(not errors, f"{path} does not match {SCHEMA}")
    check(len(doc["runs"]) == 1 and doc["runs"][0]["kind"] == "command", "one command run")
    return doc


def put(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")


TWO_GPUS = """count 2
energy 0 5000 10      # gpu0: a counter rising 100 mJ per 10 ms (10 W)
update_period_ms 0 10
unsupported energy 1  # gpu1: power sampling only, 150 W
power 1 150000
"""


def marker_not_created(marker):
    check(not os.path.exists(marker), "the command ran although nnergy refused")


# ---- scenarios -------------------------------------------------------------------------------

def exit_status():
    out = os.path.join(TMP, "out.json")
    rc, _, err = run(["measure", "--json", out, "--idle-ms", "100", "--", "sh", "-c", "exit 3"])
    check(rc == 3, f"exit {rc}, expected the command's 3")
    check("sh -c 'exit 3': exit status 3" in err, "the status line")
    run_ = load_valid(out)["runs"][0]
    check(run_["exit_status"] == 3 and run_["name"] == "sh -c 'exit 3'", "exit_status and name")
    check(run_["duration_s"] >= 0, "duration")


def killed():
    out = os.path.join(TMP, "out.json")
    rc, _, err = run(["measure", "--idle-ms", "0", "--json", out, "--", "sh", "-c",
                      "kill -TERM $$"], env_with())
    check(rc == 143, f"exit {rc}, expected 128 + SIGTERM = 143")
    check("killed by signal 15" in err, "the signal is named")
    check(load_valid(out)["runs"][0]["exit_status"] == 143, "exit_status 143 in the file")


def not_found():
    out = os.path.join(TMP, "out.json")
    rc, _, err = run(["measure", "--idle-ms", "0", "--json", out, "--",
                      "nnergy-no-such-command", "x"], env_with())
    check(rc == 127, f"exit {rc}, expected 127")
    check("cannot run 'nnergy-no-such-command': command not found" in err, "the message")
    run_ = load_valid(out)["runs"][0]
    check(run_["exit_status"] == 127 and "could not be started" in run_["note"], "the file says so")


def stdout_clean():
    rc, out, err = run(["measure", "--idle-ms", "0", "--", "echo", "hello"], env_with())
    check(rc == 0, f"exit {rc}")
    check(out == "hello\n", "the command's output alone on stdout")
    check("no meter is available: only the duration is measured" in err, "says no meter")
    for meter in ("NVML: cannot load", "RAPL: ", "hwmon: "):
        check(f"not metered: {meter}" in err, f"names the unavailable meter {meter!r}")


def fake_figures():
    out = os.path.join(TMP, "out.json")
    rc, _, err = run(["measure", "--json", out, "--items", "64", "--idle-ms", "200", "--",
                      "sleep", "0.3"], env_with(TWO_GPUS))
    check(rc == 0, f"exit {rc}")
    check(re.search(r"gpu0 +nvml +counter .*Fake GPU 0", err), "a gpu0 row, by counter")
    check(re.search(r"gpu1 +nvml +sampled .*Fake GPU 1", err), "a gpu1 row, sampled")
    check(re.search(r"items per joule \(64 items\): gpu0 [0-9.]+, gpu1 [0-9.]+", err),
          "items per joule")
    check("not metered: RAPL:" in err and "not metered: hwmon:" in err, "the meters left out")
    doc = load_valid(out)
    run_ = doc["runs"][0]
    e0, e1 = run_["energy"]["gpu0"], run_["energy"]["gpu1"]
    check(e0["method"] == "counter" and e1["method"] == "sampled", "methods")
    check(e0["window_s"] >= 0.3, "the window spans the command")
    # The scripted 10 W over the window: ~3 J for sleep 0.3, within one 10 ms update.
    check(2.9 <= e0["energy_j"] <= 4.5, f"gpu0 {e0['energy_j']} J for sleep 0.3 at 10 W")
    near(e0["energy_j"], 10 * e0["window_s"], 0.12, "gpu0 energy = 10 W x window")
    near(e0["mean_power_w"], 10, 0.5, "gpu0 mean power")
    near(e0["peak_power_w"], 10, 1e-6, "gpu0 peak power (NVML's power reading)")
    near(e0["idle_power_w"], 10, 0.6, "gpu0 idle power")
    near(e1["energy_j"], 150 * e1["window_s"], 0.01, "gpu1 energy = 150 W x window")
    near(e1["peak_power_w"], 150, 1e-6, "gpu1 peak power")
    check(run_["items"] == 64, "items")
    idle = {i["device"]: i for i in doc["idle"]}
    near(idle["gpu1"]["power_w"], 150, 1e-6, "gpu1 idle")
    check(idle["gpu0"]["window_s"] >= 0.2, "idle window")
    check(doc["machine"]["gpu"] == "Fake GPU 0, Fake GPU 1", "machine.gpu")
    near(doc["env"]["meters"]["gpu0"]["update_period_ms"], 10, 4, "detected update period")
    check(any("NVML" not in u for u in doc["env"]["unavailable_meters"]), "unavailable meters")


def gpu_select():
    out = os.path.join(TMP, "out.json")
    rc, _, err = run(["measure", "--gpu", "1", "--idle-ms", "0", "--json", out, "--", "true"],
                     env_with(TWO_GPUS))
    check(rc == 0, f"exit {rc}")
    check("not metered" not in err, "meters named: the others are not tried")
    check(set(load_valid(out)["runs"][0]["energy"]) == {"gpu1"}, "gpu1 alone")


def gpu_missing():
    marker = os.path.join(TMP, "ran")
    rc, _, err = run(["measure", "--gpu", "5", "--", "touch", marker], env_with(TWO_GPUS))
    check(rc == 4, f"exit {rc}, expected 4")
    check("GPU 5: no such GPU; NVML reports 2 GPUs: 0 (Fake GPU 0), 1 (Fake GPU 1)" in err,
          "the GPUs are listed")
    marker_not_created(marker)


def nvml_missing():
    marker = os.path.join(TMP, "ran")
    rc, _, err = run(["measure", "--gpu", "0", "--", "touch", marker],
                     env_with(nvml_library="/nonexistent/libnvidia-ml.so.1"))
    check(rc == 4, f"exit {rc}, expected 4")
    check("NVML: cannot load /nonexistent/libnvidia-ml.so.1" in err, "the library is named")
    marker_not_created(marker)


def fake_powercap(root, pkg_uj, dram_uj, range_uj):
    for zone, name, value in (("intel-rapl:0", "package-0", pkg_uj),
                              ("intel-rapl:0:0", "dram", dram_uj)):
        put(os.path.join(root, zone, "name"), name)
        put(os.path.join(root, zone, "energy_uj"), str(value))
        put(os.path.join(root, zone, "max_energy_range_uj"), str(range_uj))


def rapl():
    root = os.path.join(TMP, "powercap")
    rng = 262143328850
    fake_powercap(root, rng - 2000000, 1000, rng)
    out = os.path.join(TMP, "out.json")
    # The command moves the counters (rename: a reader never sees half a value); the package's
    # wraps past its range: 2 J to the top, 3 J after 0.
    script = (f"echo 3000000 > {root}/t && mv {root}/t {root}/intel-rapl:0/energy_uj && "
              f"echo 501000 > {root}/t && mv {root}/t {root}/intel-rapl:0:0/energy_uj")
    rc, _, err = run(["measure", "--rapl", "--idle-ms", "0", "--json", out, "--", "sh", "-c",
                      script], env_with(powercap=root))
    check(rc == 0, f"exit {rc}")
    check(re.search(r"package-0 +rapl +counter +5 J", err), "package-0: 5 J")
    energy = load_valid(out)["runs"][0]["energy"]
    near(energy["package-0"]["energy_j"], 5.0, 1e-6, "package-0 across the wrap")
    near(energy["dram-0"]["energy_j"], 0.5, 1e-6, "dram-0")


def rapl_denied():
    root = os.path.join(TMP, "powercap")
    fake_powercap(root, 1, 1, 10**9)
    os.chmod(os.path.join(root, "intel-rapl:0", "energy_uj"), 0)
    if os.access(os.path.join(root, "intel-rapl:0", "energy_uj"), os.R_OK):
        print("SKIP: running as root, which reads a mode-000 file "
              "(unit.RAPL: permission denied covers the message by injection)")
        sys.exit(77)
    marker = os.path.join(TMP, "ran")
    rc, _, err = run(["measure", "--rapl", "--", "touch", marker], env_with(powercap=root))
    check(rc == 4, f"exit {rc}, expected 4")
    check("intel-rapl:0/energy_uj: permission denied: reading RAPL energy needs root" in err,
          "the file and the remedy")
    marker_not_created(marker)


def rapl_missing():
    marker = os.path.join(TMP, "ran")
    rc, _, err = run(["measure", "--rapl", "--", "touch", marker], env_with())
    check(rc == 4, f"exit {rc}, expected 4")
    check(re.search(r"RAPL: .*absent-powercap does not exist: .*virtual machines", err),
          "says there is no powercap")
    marker_not_created(marker)


def jetson():
    root = os.path.join(TMP, "hwmon")
    put(os.path.join(root, "hwmon0", "name"), "ina3221")
    for ch, label, mv, ma in ((1, "VDD_GPU_SOC", 5000, 2000), (2, "VDD_CPU_CV", 5000, 400)):
        put(os.path.join(root, "hwmon0", f"in{ch}_label"), label)
        put(os.path.join(root, "hwmon0", f"in{ch}_input"), str(mv))
        put(os.path.join(root, "hwmon0", f"curr{ch}_input"), str(ma))
    out = os.path.join(TMP, "out.json")
    rc, _, err = run(["measure", "--jetson", "--idle-ms", "100", "--json", out, "--", "sleep",
                      "0.2"], env_with(hwmon=root))
    check(rc == 0, f"exit {rc}")
    check(re.search(r"VDD_GPU_SOC +hwmon +sampled", err), "a rail row")
    doc = load_valid(out)
    e = doc["runs"][0]["energy"]["VDD_GPU_SOC"]
    near(e["energy_j"], 10 * e["window_s"], 1e-6, "10 W x window")
    near(e["peak_power_w"], 10, 1e-9, "peak")
    near(doc["runs"][0]["energy"]["VDD_CPU_CV"]["mean_power_w"], 2, 1e-9, "2 W rail")
    check({i["device"] for i in doc["idle"]} == {"VDD_GPU_SOC", "VDD_CPU_CV"}, "idle per rail")


def short_window():
    out = os.path.join(TMP, "out.json")
    rc, _, err = run(["measure", "--gpu", "0", "--idle-ms", "0", "--json", out, "--", "true"],
                     env_with("energy 0 0 20\nupdate_period_ms 100\n"))
    check(rc == 0, f"exit {rc}")
    check("warning: gpu0: " in err, "a warning on stderr")
    run_ = load_valid(out)["runs"][0]
    check(re.search(r"gpu0: .*(power samples instead|fewer than 3 update periods)", run_["note"]),
          "the note says why the figure is uncertain")
    check(run_["energy"]["gpu0"]["energy_j"] > 0, "a figure, not 0 J")


def no_figure():
    out = os.path.join(TMP, "out.json")
    rc, _, err = run(["measure", "--gpu", "0", "--idle-ms", "0", "--json", out, "--", "sleep",
                      "0.05"], env_with("energy 0 1000 0\nunsupported power 0\n"))
    check(rc == 0, f"exit {rc}")
    check(re.search(r"gpu0 +nvml +- +- ", err), "the row shows no figure")
    check("no energy figure (not 0 J)" in err, "the warning")
    run_ = load_valid(out)["runs"][0]
    check("gpu0" not in run_["energy"], "no energy entry, rather than 0 J")
    check("no energy figure (not 0 J)" in run_["note"], "the note")


def forward_signal():
    p = subprocess.Popen([NNERGY, "measure", "--idle-ms", "0", "--", "sleep", "30"],
                         env=env_with(), stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    start = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        raise Failure("SIGTERM was not forwarded: still running after 10 s")
    print(err)
    check(p.returncode == 143, f"exit {p.returncode}, expected 143 (the child's SIGTERM)")
    check(time.monotonic() - start < 5, "stopped promptly")
    check("killed by signal 15" in err, "the figures are still printed")


def labels():
    out = os.path.join(TMP, "out.json")
    rc, _, _ = run(["measure", "--idle-ms", "0", "--json", out, "--model", "resnet50",
                    "--hw", "h100-sxm5", "--batch", "8", "--precision", "float16", "--mode",
                    "eager", "--device", "cuda:0", "--items", "8", "--", "true"], env_with())
    check(rc == 0, f"exit {rc}")
    doc = load_valid(out)
    run_ = doc["runs"][0]
    check(doc["machine"]["name"] == "h100-sxm5", "machine.name")
    for key, value in (("model", "resnet50"), ("batch", 8), ("precision", "fp16"),
                       ("mode", "eager"), ("device", "cuda:0"), ("items", 8)):
        check(run_.get(key) == value, f"{key}: {run_.get(key)!r}, expected {value!r}")


def bad_json_path():
    marker = os.path.join(TMP, "ran")
    rc, _, err = run(["measure", "--json", os.path.join(TMP, "no", "dir", "x.json"), "--",
                      "touch", marker], env_with())
    check(rc == 3, f"exit {rc}, expected 3")
    check("x.json: cannot write the file" in err, "the file is named")
    marker_not_created(marker)


def usage_errors():
    rc, _, err = run(["measure", "--precision", "float13", "--", "true"], env_with())
    check(rc == 2 and "--precision 'float13'" in err, "an unknown precision")
    rc, _, err = run(["measure", "--items", "0", "--", "true"], env_with())
    check(rc == 2 and "--items must be positive" in err, "items 0")
    rc, _, err = run(["measure"], env_with())
    check(rc == 2 and "command is required" in err, "no command")


def serve():
    """--serve: windows on request, one JSON line per answer; bad requests are answered, not
    fatal; a command is refused; a meter asked for and absent is an error."""
    script = "energy 0 0 500      # 500 W\nupdate_period_ms 0 20\nunsupported power 0\n"
    p = subprocess.Popen([NNERGY, "measure", "--gpu", "0", "--serve"], env=env_with(script),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)

    def ask(request):
        p.stdin.write(request + "\n")
        p.stdin.flush()
        line = p.stdout.readline()
        print(f"> {request}\n< {line}", end="")
        return json.loads(line)

    ready = json.loads(p.stdout.readline())
    check(ready.get("ready") is True and ready["domains"] == [{"meter": "nvml", "domain": "gpu0"}],
          f"the ready line names gpu0: {ready}")
    check("error" in ask("end"), "end without begin is an error answer")
    check(ask("begin") == {"begun": True}, "begin")
    check("error" in ask("begin"), "a second begin is an error answer")
    time.sleep(0.6)
    readings = ask("end")["readings"]
    check(len(readings) == 1 and readings[0]["domain"] == "gpu0", "one reading, gpu0")
    r = readings[0]
    check(r["method"] == "counter", "the counter")
    near(r["energy_j"], 500 * r["window_s"], 500 * 0.03, "energy over the window at 500 W")
    near(r["mean_power_w"], 500, 30, "mean power")
    # Between the first and the last update seen (20 ms apart): the power without the lag of
    # the window's ends.
    check(r["counter_span_s"] > 0.5, f"the updates span {r['counter_span_s']} s of 0.6 s")
    near(r["counter_power_w"], 500, 15, "the power between updates")
    check(r["samples"] >= 20, f"{r['samples']} power samples")
    check("unknown request 'measure'" in ask("measure").get("error", ""), "an unknown request")
    check(ask("begin") == {"begun": True}, "a second window")
    out, err = p.communicate("end\nquit\n", timeout=30)
    print(out, err)
    check(p.returncode == 0, f"exit {p.returncode} after quit")
    check(len(json.loads(out.splitlines()[0])["readings"]) == 1, "the second window's reading")
    rc, _, err = run(["measure", "--serve", "--", "true"], env_with(script))
    check(rc == 2 and "--serve runs no command" in err, "a command with --serve")
    rc, _, err = run(["measure", "--serve", "--rapl"], env_with())
    check(rc != 0 and "RAPL" in err, "an absent meter asked for")
    # The end of input stops it too, and an open window is closed quietly.
    p = subprocess.run([NNERGY, "measure", "--gpu", "0", "--serve"], env=env_with(script),
                       input="begin\n", capture_output=True, text=True, timeout=30)
    check(p.returncode == 0 and len(p.stdout.splitlines()) == 2, "end of input")


def main():
    scenarios = {f.__name__: f for f in (
        exit_status, killed, not_found, stdout_clean, fake_figures, gpu_select, gpu_missing,
        nvml_missing, rapl, rapl_denied, rapl_missing, jetson, short_window, no_figure,
        forward_signal, labels, bad_json_path, usage_errors, serve)}
    if SCENARIO not in scenarios:
        sys.exit(f"check_measure: unknown scenario {SCENARIO} ({', '.join(scenarios)})")
    try:
        scenarios[SCENARIO]()
    except Failure as e:
        print(f"FAIL: {SCENARIO}: {e}")
        return 1
    finally:
        subprocess.run(["chmod", "-R", "u+rwX", TMP], check=False)
        subprocess.run(["rm", "-rf", TMP], check=False)
    print(f"ok: {SCENARIO}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
