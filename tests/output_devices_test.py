#!/usr/bin/python3
"""Only an ordinary file is ever replaced or removed.

simloop often runs as root, where renaming a temporary file over /dev/null
would leave the system an ordinary file in its place. Device nodes, FIFOs,
sockets and directories are made in a scratch directory of this test (never
the system's own /dev), and every output of every command that writes one is
pointed at them:
- a character device or a FIFO is written in place, as a stream, and is
  still what it was afterwards (a FIFO's reader gets the whole output);
- /dev/stdout is written through the descriptor (`--trace /dev/stdout`);
- a block device, a socket or a directory is refused with exit status 2,
  naming it, and left as it was;
- what a sweep reads back (its results, manifest and lock) must be an
  ordinary file: a device there is refused, and a lock that is a device is
  never deleted;
- a name taken from the command line (layout --path name=) cannot leave
  --out-dir;
- an input that is a FIFO is refused at once, not waited on.

Needs root (mknod); exits 77 (skipped) otherwise.

usage: output_devices_test.py SIMLOOP SOURCE_DIR WORK_DIR"""
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading

SIMLOOP, src, work = sys.argv[1], sys.argv[2], sys.argv[3]
if os.geteuid() != 0:
    print("skipped: mknod needs root")
    sys.exit(77)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []
EXPERIMENT = os.path.join(src, "experiments", "seed-athlon.yaml")
SMALL = ["--set", "workload.packets=2000"]
TIMEOUT = 120  # a hang, not a slow command


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def simloop(*args, stdin=subprocess.DEVNULL, cwd=work):
    env = dict(os.environ, TMPDIR=os.path.join(work, "tmp"))
    os.makedirs(env["TMPDIR"], exist_ok=True)
    try:
        return subprocess.run([SIMLOOP, "-q", *args], capture_output=True, cwd=cwd, env=env,
                              stdin=stdin, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        fail(f"simloop {' '.join(args)}: still running after {TIMEOUT} s (it waited on something)")
        return None


def node(path, kind):
    """A fresh node of `kind` at `path`: null, full, block, fifo, socket, dir."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    if kind == "null":
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    elif kind == "full":
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    elif kind == "block":
        # A major number of the local/experimental range: no driver, so
        # nothing could be written even if it were opened.
        os.mknod(path, 0o600 | stat.S_IFBLK, os.makedev(240, 0))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        s.close()
    elif kind == "dir":
        os.makedirs(path)
    return path


def kind_of(path):
    st = os.lstat(path)
    for test, name in ((stat.S_ISCHR, "chr"), (stat.S_ISBLK, "block"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "dir"), (stat.S_ISREG, "file")):
        if test(st.st_mode):
            return name
    return "other"


def expect(p, status, what, says=None):
    if p is None:
        return False
    err = p.stderr.decode(errors="replace")
    if p.returncode != status:
        fail(f"{what}: exit status {p.returncode}, expected {status}: {err[-600:]}")
        return False
    if says is not None and says not in err:
        fail(f"{what}: the message does not say {says!r}: {err[-600:]}")
        return False
    return True


def still(path, kind, what):
    k = kind_of(path) if os.path.lexists(path) else "gone"
    want = {"null": "chr", "full": "chr"}.get(kind, kind)
    if k != want:
        fail(f"{what}: {path} is now {k}, was {want}")


def no_strays(directory, what):
    """No temporary file left beside an output."""
    for name in os.listdir(directory):
        if name.endswith(".tmp"):
            fail(f"{what}: a temporary file was left behind: {name}")


# --- run: the trace, -o's CSV and JSON, --long -------------------------------------------------
devs = os.path.join(work, "dev")
for kind in ("null", "full"):
    t = node(os.path.join(devs, f"trace-{kind}"), kind)
    p = simloop("run", EXPERIMENT, *SMALL, "-o", os.path.join(work, "out"), "--trace", t)
    expect(p, 0 if kind == "null" else 4, f"run --trace onto a {kind} device",
           None if kind == "null" else "No space left on device")
    still(t, kind, f"run --trace onto a {kind} device")
    no_strays(devs, f"run --trace onto a {kind} device")

for kind in ("block", "socket", "dir"):
    t = node(os.path.join(devs, f"trace-{kind}"), kind)
    p = simloop("run", EXPERIMENT, *SMALL, "-o", os.path.join(work, "out"), "--trace", t)
    expect(p, 2, f"run --trace onto a {kind}", t)
    still(t, kind, f"run --trace onto a {kind}")

out = os.path.join(work, "out-devs")
for name in ("seed-athlon.csv", "seed-athlon.json", "seed-athlon-long.csv"):
    node(os.path.join(out, name), "null")
p = simloop("run", EXPERIMENT, *SMALL, "-o", out, "--long")
expect(p, 0, "run -o DIR whose results are character devices")
for name in ("seed-athlon.csv", "seed-athlon.json", "seed-athlon-long.csv"):
    still(os.path.join(out, name), "null", f"run -o: {name}")
node(os.path.join(out, "seed-athlon.csv"), "block")
p = simloop("run", EXPERIMENT, *SMALL, "-o", out)
expect(p, 2, "run -o DIR whose CSV is a block device", "seed-athlon.csv: is a block device")
still(os.path.join(out, "seed-athlon.csv"), "block", "run -o: a block device")


# A FIFO: its reader gets the whole trace, and it stays a FIFO.
def read_all(path, into):
    with open(path, "rb") as f:
        into.append(f.read())


fifo = node(os.path.join(devs, "trace.fifo"), "fifo")
got = []
reader = threading.Thread(target=read_all, args=(fifo, got), daemon=True)
reader.start()
p = simloop("run", EXPERIMENT, *SMALL, "-o", os.path.join(work, "out"), "--trace", fifo,
            "--trace-window", "0:3")
reader.join(TIMEOUT)
if expect(p, 0, "run --trace onto a FIFO"):
    try:
        events = json.loads(got[0]) if got else None
        if not events or "traceEvents" not in events:
            fail("run --trace onto a FIFO: the reader got no trace")
    except ValueError as e:
        fail(f"run --trace onto a FIFO: the reader got no whole JSON: {e}")
still(fifo, "fifo", "run --trace onto a FIFO")

# /dev/stdout: the trace alone on standard output, the table on standard error.
p = simloop("run", EXPERIMENT, *SMALL, "-o", os.path.join(work, "out"), "--trace", "/dev/stdout",
            "--trace-window", "0:3")
if expect(p, 0, "run --trace /dev/stdout"):
    try:
        if "traceEvents" not in json.loads(p.stdout):
            fail("run --trace /dev/stdout: no trace on standard output")
    except ValueError:
        fail(f"run --trace /dev/stdout: standard output is not the trace alone: {p.stdout[:200]!r}")
    if b"kpps" not in p.stderr:
        fail("run --trace /dev/stdout: the table is not on standard error")

# --- explain -o, plot, merge --------------------------------------------------------------------
t = node(os.path.join(devs, "explain.json"), "null")
p = simloop("explain", EXPERIMENT, "--b-set", "options.align=copy-down", *SMALL, "-o", t)
expect(p, 0, "explain -o onto a character device")
still(t, "null", "explain -o")
t = node(os.path.join(devs, "explain-dir"), "dir")
p = simloop("explain", EXPERIMENT, "--b-set", "options.align=copy-down", *SMALL, "-o", t)
expect(p, 2, "explain -o onto a directory", "is a directory")

csv = os.path.join(work, "out", "seed-athlon.csv")
simloop("run", EXPERIMENT, *SMALL, "-o", os.path.join(work, "out"))
stem = os.path.join(devs, "plot")
for ext in ("png", "svg"):
    node(f"{stem}.{ext}", "null")
p = simloop("plot", csv, "-o", stem)
expect(p, 0, "plot -o onto character devices")
for ext in ("png", "svg"):
    still(f"{stem}.{ext}", "null", f"plot -o: {ext}")
node(f"{stem}.png", "socket")
p = simloop("plot", csv, "-o", stem)
expect(p, 2, "plot -o onto a socket", "plot.png: is a socket")
still(f"{stem}.png", "socket", "plot -o: a socket")

# --- sweep: its results, manifest and lock are read back ---------------------------------------
sweep_exp = os.path.join(work, "tiny.yaml")
with open(sweep_exp, "w") as f:
    f.write("name: tiny\nmachine: athlon-xp-2700\nstack: freebsd6\n"
            "workload: {payload: 18, packets: 1000, dest: wire}\nseed: 3\n"
            "sweep:\n  grid:\n    workload.payload: [18, 64]\n")
name = "tiny"
sw = os.path.join(work, "sweep-out")
p = simloop("check", sweep_exp)
if not expect(p, 0, "check of the test's sweep"):
    sys.exit(1)
for what, file in (("results", f"{name}-sweep.csv"), ("manifest", f"{name}-sweep.json"),
                   ("lock", f"{name}-sweep.lock")):
    for kind in ("null", "fifo"):
        shutil.rmtree(sw, ignore_errors=True)
        t = node(os.path.join(sw, file), kind)
        p = simloop("sweep", sweep_exp, "-j", "1", "-o", sw)
        expect(p, 2, f"sweep whose {what} is a {kind}", file)
        still(t, kind, f"sweep whose {what} is a {kind}")

# --keep-runs into a file; a run's file planted as a link.
shutil.rmtree(sw, ignore_errors=True)
os.makedirs(sw)
with open(os.path.join(sw, f"{name}-sweep-runs"), "w") as f:
    f.write("a file\n")
p = simloop("sweep", sweep_exp, "-j", "1", "-o", sw, "--keep-runs")
expect(p, 2, "sweep --keep-runs into a file", "is not a directory")
shutil.rmtree(sw, ignore_errors=True)
os.makedirs(os.path.join(sw, f"{name}-sweep-runs"))
os.symlink("/nonexistent", os.path.join(sw, f"{name}-sweep-runs", "planted.json"))
p = simloop("sweep", sweep_exp, "-j", "1", "-o", sw, "--keep-runs")
expect(p, 2, "sweep --keep-runs with a planted link", "planted.json")

# merge into a stream: the rows, and no manifest or lock beside the device.
shutil.rmtree(sw, ignore_errors=True)
if expect(simloop("sweep", sweep_exp, "-j", "1", "-o", sw), 0, "the test's sweep"):
    t = node(os.path.join(devs, "merged"), "null")
    p = simloop("merge", t, os.path.join(sw, f"{name}-sweep.csv"))
    expect(p, 0, "merge onto a character device")
    still(t, "null", "merge onto a character device")
    for extra in ("merged.json", "merged.lock"):
        if os.path.lexists(os.path.join(devs, extra)):
            fail(f"merge onto a character device: wrote {extra} beside it")
    p = simloop("merge", "/dev/stdout", os.path.join(sw, f"{name}-sweep.csv"))
    if expect(p, 0, "merge /dev/stdout") and not p.stdout.startswith(b"point,repeat"):
        fail(f"merge /dev/stdout: standard output is not the rows: {p.stdout[:80]!r}")

# --- inputs that are FIFOs: refused, not waited on ---------------------------------------------
fifo_in = node(os.path.join(devs, "input.fifo"), "fifo")
p = simloop("check", fifo_in)
expect(p, 2, "check of a FIFO", "input.fifo")
p = simloop("plot", fifo_in)
expect(p, 2, "plot of a FIFO", "input.fifo")
p = simloop("layout", "--nm", fifo_in, "--path",
            f"name=a,profile={fifo_in},payload=18")
expect(p, 2, "layout --nm FIFO", "input.fifo")
p = simloop("merge", os.path.join(work, "m.csv"), fifo_in)
expect(p, 2, "merge of a FIFO", "input.fifo")

# --- names from the command line stay in --out-dir ---------------------------------------------
esc = os.path.join(work, "esc", "out")
os.makedirs(esc, exist_ok=True)
profile = os.path.join(src, "tests", "data", "nm_sample.txt")
p = simloop("layout", "--nm", profile, "--path",
            f"name=/../../../ESCAPED,profile={profile},payload=18", "--out-dir", esc)
expect(p, 2, "layout --path name=/../..", "name")
for root, _, files in os.walk(work):
    for f in files:
        if f.startswith("ESCAPED"):
            fail(f"layout --path name=/../..: wrote {os.path.join(root, f)}")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("all outputs kept to ordinary files; devices, FIFOs and names left as they were")
