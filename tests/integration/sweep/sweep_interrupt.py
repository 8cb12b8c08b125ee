#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Interrupts `nnergy sweep` with SIGINT after its first rows, then resumes it.

  sweep_interrupt.py NNERGY PIPELINE WORKDIR

An uninterrupted run gives the reference set of configurations. The interrupted run must exit
130 with fewer rows, every line complete, and say it was interrupted; `--resume` must exit 0 and
leave a file holding every configuration of the reference exactly once, with no broken line.
Also: the progress bar appears when standard error is a terminal, and not with --quiet.
"""
import csv
import io
import os
import pty
import select
import signal
import subprocess
import sys
import time


def fail(msg):
    sys.exit(f"FAIL: {msg}")


def rows_of(path):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    if text and not text.endswith("\n"):
        fail(f"{path}: the last line is cut short")
    lines = list(csv.reader(io.StringIO(text, newline="")))
    header, rows = lines[0], lines[1:]
    for n, r in enumerate(rows, 2):
        if len(r) != len(header):
            fail(f"{path}:{n}: {len(r)} fields, header has {len(header)}")
    runtime = header.index("runtime")
    keys = [tuple(r[1:3] + r[4:runtime + 1]) for r in rows]
    return header, rows, keys


def main():
    nnergy, pipeline, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    ref, out = os.path.join(work, "reference.csv"), os.path.join(work, "interrupted.csv")
    for f in (ref, out):
        if os.path.exists(f):
            os.remove(f)

    r = subprocess.run([nnergy, "sweep", pipeline, "-o", ref, "--jobs", "2"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"reference run exited {r.returncode}: {r.stderr}")
    header, ref_rows, ref_keys = rows_of(ref)
    total = len(ref_rows)
    if total < 10:
        fail(f"the reference sweep has {total} rows; the test needs a bigger one")

    # Slowed down so that SIGINT lands midway.
    env = dict(os.environ, NNERGY_SWEEP_DELAY_MS="40")
    p = subprocess.Popen([nnergy, "sweep", pipeline, "-o", out, "--jobs", "2"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        if os.path.exists(out):
            with open(out, "rb") as f:
                if f.read().count(b"\n") >= 3:  # the header and two rows
                    break
        if p.poll() is not None:
            fail(f"the sweep ended (rc {p.returncode}) before it could be interrupted")
        time.sleep(0.005)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=60)
    if p.returncode != 130:
        fail(f"interrupted sweep exited {p.returncode}, expected 130\n{stdout}\n{stderr}")
    if "interrupted" not in stdout:
        fail(f"the summary does not say it was interrupted:\n{stdout}")
    h, rows, keys = rows_of(out)
    if h != header:
        fail("the interrupted run's header differs")
    if not 0 < len(rows) < total:
        fail(f"interrupted run wrote {len(rows)} of {total} rows")
    print(f"interrupted after {len(rows)} of {total} rows")

    r = subprocess.run([nnergy, "sweep", pipeline, "-o", out, "--resume", "--jobs", "2"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"resumed run exited {r.returncode}: {r.stderr}")
    if f"resumed: {len(rows)} configurations" not in r.stdout:
        fail(f"the resumed summary does not count the {len(rows)} rows kept:\n{r.stdout}")
    h, rows, keys = rows_of(out)
    if len(keys) != len(set(keys)):
        fail("a configuration appears twice after --resume")
    if sorted(keys) != sorted(ref_keys):
        fail(f"after --resume: {len(keys)} configurations, the reference has {total}")
    configs = sorted(int(r[0]) for r in rows)
    if configs != list(range(total)):
        fail("config indices are not 0..N-1 once each after --resume")
    print(f"resumed: {total} configurations, each once")

    # A second --resume finds nothing to do and leaves the file as it is.
    before = open(out, "rb").read()
    r = subprocess.run([nnergy, "sweep", pipeline, "-o", out, "--resume"],
                       capture_output=True, text=True)
    if r.returncode != 0 or open(out, "rb").read() != before:
        fail(f"a --resume with nothing left changed the file or failed ({r.returncode})")

    # A progress bar on a terminal; none with --quiet.
    def stderr_on_tty(args):
        master, slave = pty.openpty()
        q = subprocess.Popen([nnergy] + args, env=env, stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        seen = b""
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            elif q.poll() is not None:
                break
        q.wait()
        os.close(master)
        return q.returncode, seen.decode("utf-8", "replace")
    bar_out = os.path.join(work, "bar.csv")
    rc, seen = stderr_on_tty(["sweep", pipeline, "-o", bar_out, "--jobs", "2"])
    if rc != 0 or f"/{total}" not in seen or "configs/s" not in seen:
        fail(f"no progress bar on a terminal (rc {rc}): {seen!r}")
    rc, seen = stderr_on_tty(["--quiet", "sweep", pipeline, "-o", bar_out, "--jobs", "2"])
    if rc != 0 or "configs/s" in seen:
        fail(f"a progress bar despite --quiet (rc {rc}): {seen!r}")
    print("progress bar on a terminal only without --quiet")


if __name__ == "__main__":
    main()
