#!/usr/bin/python3
"""calibrate host stopped mid-run (SIGTERM, SIGINT or SIGHUP to it alone, as
kill or a supervisor sends): it stops the measurement it was running,
exits 128 + the signal saying so, and leaves nothing behind: no measuring process
running on, no temporary directory, no half-written profile.

    calibrate_host_stop_test.py SIMLOOP WORK_DIR
"""
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

from checks import check, finish  # tests/checks.py

SIMLOOP, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
# The kernel half too where it can run (root with perf): its perf and its
# own temporary directory are what a stop must not leave behind.
kernel = os.geteuid() == 0 and shutil.which("perf") is not None


def descendants(pid):
    """Every process whose ancestry reaches pid (from /proc)."""
    parents = {}
    for d in pathlib.Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
                parents[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    out, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - out
        out |= frontier
    return out


for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    tmp = WORK / f"tmp-{sig.name}"
    tmp.mkdir()
    out = WORK / f"profile-{sig.name}"
    args = [SIMLOOP, "calibrate", "host", "-o", str(out), "--native-packets", "200000",
            "--kernel-packets", "1000000"] + ([] if kernel else ["--skip-kernel"])
    # A session of its own, so that the signal reaches the command alone
    # (as kill sends it), not its children through a terminal's group.
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "TMPDIR": str(tmp)}, start_new_session=True)
    # Once a measurement is under way (its measure child is running; not
    # the brief perf --version before the microbenchmarks).
    def measuring():
        for k in descendants(p.pid):
            try:
                if b"measure" in pathlib.Path(f"/proc/{k}/cmdline").read_bytes():
                    return True
            except OSError:
                pass
        return False
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None and not measuring():
        time.sleep(0.1)
    time.sleep(1.0)
    kids = descendants(p.pid)
    check(p.poll() is None and kids, f"{sig.name}: a measurement was running: {kids}")
    p.send_signal(sig)
    try:
        stdout, stderr = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        stdout, stderr = p.communicate()
        check(False, f"{sig.name}: still running a minute after the signal")
    # perf, attached to the measuring process, ends when it does, within
    # a moment; an exited process not yet reaped (a zombie) has ended.
    def running(k):
        try:
            return pathlib.Path(f"/proc/{k}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False
    deadline = time.time() + 10
    while time.time() < deadline and any(running(k) for k in kids):
        time.sleep(0.2)
    left = [k for k in kids if running(k)]
    # As a shell expects of a program a signal ended: 128 + its number.
    check(p.returncode == 128 + sig.value, f"{sig.name}: exit {p.returncode}")
    check("stopped by" in stderr and "nothing was written" in stderr,
          f"{sig.name}: says it was stopped: {stderr[-400:]}")
    check(not left, f"{sig.name}: no process of it left running: {left}")
    check(not any(tmp.iterdir()), f"{sig.name}: no temporary files left: {sorted(tmp.rglob('*'))[:5]}")
    check(not out.exists(), f"{sig.name}: no profile written: {sorted(out.glob('*')) if out.exists() else ''}")
finish()
