#!/usr/bin/python3
"""Nothing simloop writes goes through a symbolic link, and its temporary
files have no predictable names.

A link planted where an output goes (run's CSV, JSON, long CSV, trace and
SimGrid's trace file; a
sweep's lock, its CSV on --resume, its manifest; merge's output; plot's PNG
and SVG) is refused with exit status 2 and a message naming it, and the file
the link points to is left as it was (or, for a dangling link, not created).
Links planted at `<output>.tmp.<pid>` for the next few hundred pids (the
names temporary files once had) are never written through either. A plot
into a directory that does not exist makes it, as run does; calibrate's
--name is a name, not a path; a sweep's lock goes when the sweep ends.

usage: output_links_test.py SIMLOOP SOURCE_DIR WORK_DIR"""
import glob
import os
import re
import shutil
import subprocess
import sys

simloop, src, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []
PRECIOUS = "precious: must not be written\n"
LINK_MESSAGE = "is a symbolic link; simloop does not write through links"
EXPERIMENT = os.path.join(src, "experiments", "seed-athlon.yaml")
SMALL = ["--set", "workload.packets=2000"]


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def simloop_run(*args, cwd=work):
    env = dict(os.environ, TMPDIR=os.path.join(work, "tmp"))
    os.makedirs(env["TMPDIR"], exist_ok=True)
    return subprocess.run([simloop, "-q", *args], capture_output=True, text=True, cwd=cwd, env=env)


def target(name):
    """A file a planted link points to, with known contents."""
    path = os.path.join(work, "targets", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(PRECIOUS)
    return path


def plant(link, name):
    """A link at `link` to a fresh target; returns the target's path."""
    t = target(name)
    os.makedirs(os.path.dirname(link) or ".", exist_ok=True)
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(t, link)
    return t


def untouched(t):
    with open(t, "rb") as f:
        return f.read() == PRECIOUS.encode()


def expect_refused(what, r, link, t, dangling=False):
    if r.returncode != 2:
        fail(f"{what}: exit status {r.returncode}, expected 2\n{r.stderr}")
    if f"{link}: {LINK_MESSAGE}" not in r.stderr:
        fail(f"{what}: the message does not name {link} as a link:\n{r.stderr}")
    if dangling:
        if os.path.exists(t):
            fail(f"{what}: the dangling link's target {t} was created")
    elif not untouched(t):
        fail(f"{what}: the link's target {t} was written")
    if not os.path.islink(link):
        fail(f"{what}: the link {link} was replaced")


def next_pids(n=400):
    with open("/proc/sys/kernel/ns_last_pid") as f:
        last = int(f.read())
    return range(last + 1, last + 1 + n)


def plant_pid_links(outputs, tag):
    """Links at <output>.tmp.<pid> for the next pids; returns their targets."""
    ts = []
    pids = next_pids()
    for out in outputs:
        for pid in pids:
            link = f"{out}.tmp.{pid}"
            t = os.path.join(work, "targets", f"{tag}-{os.path.basename(out)}-{pid}")
            os.makedirs(os.path.dirname(link) or ".", exist_ok=True)
            os.symlink(t, link)  # dangling: a write through it would create t
            ts.append((link, t))
    return ts


def check_pid_links(what, planted):
    written = [t for _, t in planted if os.path.exists(t)]
    if written:
        fail(f"{what}: wrote through {len(written)} planted .tmp.<pid> links, e.g. {written[0]}")
    for link, _ in planted:
        if os.path.lexists(link):
            os.unlink(link)


def no_temporaries_left(what, d):
    left = [p for p in glob.glob(os.path.join(d, "*")) + glob.glob(os.path.join(d, ".*"))
            if p.endswith(".tmp") or re.search(r"\.tmp\.\d+$", p)]
    if left:
        fail(f"{what}: temporary files left behind: {left}")


# ---- simloop run: each final output a link ----
out = os.path.join(work, "run")
for suffix, extra in ((".csv", []), (".json", []), ("-long.csv", ["--long"]),
                      ("trace", ["--trace", os.path.join(out, "t.json"), "--trace-window", "0:10"])):
    link = os.path.join(out, "t.json") if suffix == "trace" else os.path.join(out, "seed-athlon" + suffix)
    for dangling in (False, True):
        shutil.rmtree(out, ignore_errors=True)
        t = plant(link, f"run{suffix}")
        if dangling:
            os.unlink(t)
        r = simloop_run("run", EXPERIMENT, *SMALL, "-o", out, *extra)
        expect_refused(f"run, {os.path.basename(link)} a {'dangling ' if dangling else ''}link", r,
                       link, t, dangling)

# SimGrid's own trace file (--cfg): SimGrid opens it, so simloop refuses first.
shutil.rmtree(out, ignore_errors=True)
link = os.path.join(out, "run.trace")
t = plant(link, "simgrid-trace")
r = simloop_run("run", EXPERIMENT, *SMALL, "-o", out, "--cfg=tracing:yes",
                f"--cfg=tracing/filename:{link}")
expect_refused("run --cfg=tracing/filename, a link", r, link, t)

# ---- simloop run: temporaries at predictable names ----
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
planted = plant_pid_links([os.path.join(out, "seed-athlon.csv"), os.path.join(out, "seed-athlon.json")],
                          "run")
r = simloop_run("run", EXPERIMENT, *SMALL, "-o", out)
if r.returncode != 0:
    fail(f"run: exit status {r.returncode}\n{r.stderr}")
check_pid_links("run", planted)
for name in ("seed-athlon.csv", "seed-athlon.json"):
    p = os.path.join(out, name)
    if os.path.islink(p) or not os.path.isfile(p) or os.path.getsize(p) == 0:
        fail(f"run: {p} is not a regular file with the results")
no_temporaries_left("run", out)

# ---- simloop sweep ----
exp = os.path.join(work, "small.yaml")
with open(exp, "w") as f:
    f.write("name: small\nmachine: athlon-xp-2700\nstack: freebsd6\n"
            "workload: {payload: 18, packets: 1000, dest: wire}\nseed: 3\n"
            "sweep:\n  grid:\n    workload.payload: [18, 64]\n")
sweep_out = os.path.join(work, "sweep")
csv_path = os.path.join(sweep_out, "small-sweep.csv")
lock = os.path.join(sweep_out, "small-sweep.lock")
manifest = os.path.join(sweep_out, "small-sweep.json")

os.makedirs(sweep_out)
planted = plant_pid_links([csv_path, manifest], "sweep")
r = simloop_run("sweep", exp, "-j", "1", "-o", sweep_out)
if r.returncode != 0:
    fail(f"sweep: exit status {r.returncode}\n{r.stderr}")
check_pid_links("sweep", planted)
no_temporaries_left("sweep", sweep_out)
if os.path.lexists(lock):
    fail(f"sweep: its lock {lock} was left behind")
with open(csv_path) as f:
    good_rows = f.read()
if len(good_rows.splitlines()) != 3:
    fail(f"sweep: expected a header and 2 rows in {csv_path}:\n{good_rows}")

for dangling in (False, True):
    if os.path.lexists(lock):
        os.unlink(lock)
    t = plant(lock, "lock")
    if dangling:
        os.unlink(t)
    r = simloop_run("sweep", exp, "-j", "1", "-o", sweep_out, "--resume")
    expect_refused(f"sweep --resume, the lock a {'dangling ' if dangling else ''}link", r, lock, t,
                   dangling)
    os.unlink(lock)

# The results CSV a link on --resume: refused, the file it points to kept.
t = target("sweep-csv")
with open(t, "w") as f:
    f.write(good_rows)
os.unlink(csv_path)
os.symlink(t, csv_path)
r = simloop_run("sweep", exp, "-j", "1", "-o", sweep_out, "--resume")
if r.returncode != 2 or f"{csv_path}: {LINK_MESSAGE}" not in r.stderr:
    fail(f"sweep --resume, the CSV a link: exit status {r.returncode}, expected 2 naming it\n{r.stderr}")
with open(t) as f:
    if f.read() != good_rows:
        fail("sweep --resume, the CSV a link: the file it points to was written")
if not os.path.islink(csv_path):
    fail("sweep --resume, the CSV a link: the link was replaced")
os.unlink(csv_path)
shutil.copy(t, csv_path)

# The manifest a link: refused before anything is written.
saved = open(manifest).read()
os.unlink(manifest)
t = plant(manifest, "sweep-manifest")
r = simloop_run("sweep", exp, "-j", "1", "-o", sweep_out, "--resume")
expect_refused("sweep --resume, the manifest a link", r, manifest, t)
os.unlink(manifest)
with open(manifest, "w") as f:
    f.write(saved)

# ---- simloop merge: its output a link ----
merged = os.path.join(work, "merged", "m.csv")
t = plant(merged, "merge")
r = simloop_run("merge", merged, csv_path)
expect_refused("merge, the output a link", r, merged, t)

# ---- simloop run --from-sweep: the stored configuration's temporary ----
# An experiment file gone since the sweep makes run use the stored
# configuration, through a temporary file in TMPDIR.
os.rename(exp, exp + ".gone")
tmpdir = os.path.join(work, "tmp")
os.makedirs(tmpdir, exist_ok=True)
planted = []
for pid in next_pids():
    link = os.path.join(tmpdir, f"simloop-point-0-{pid}.yaml.tmp.{pid}")
    t = os.path.join(work, "targets", f"point-{pid}")
    os.symlink(t, link)
    planted.append((link, t))
r = simloop_run("run", "--from-sweep", csv_path, "--point", "0", "-o", os.path.join(work, "rerun"))
if r.returncode != 0:
    fail(f"run --from-sweep: exit status {r.returncode}\n{r.stderr}")
check_pid_links("run --from-sweep", planted)
if os.listdir(tmpdir):
    fail(f"run --from-sweep: left in TMPDIR: {os.listdir(tmpdir)}")

# ---- simloop plot ----
plot_csv = os.path.join(src, "tests", "data", "plots", "sweep.csv")
pdir = os.path.join(work, "p")
for ext in ("png", "svg"):
    shutil.rmtree(pdir, ignore_errors=True)
    link = os.path.join(pdir, f"x.{ext}")
    t = plant(link, f"plot.{ext}")
    r = simloop_run("plot", plot_csv, "--kind", "breakdown", "-o", os.path.join(pdir, "x"))
    expect_refused(f"plot, x.{ext} a link", r, link, t)
    if ext == "svg" and os.path.exists(os.path.join(pdir, "x.png")):
        fail("plot: the PNG was written though the SVG's place is a link")
shutil.rmtree(pdir, ignore_errors=True)
t = plant(os.path.join(pdir, "d.json"), "describe")
r = simloop_run("plot", plot_csv, "--kind", "breakdown", "-o", os.path.join(pdir, "y"),
                "--describe", os.path.join(pdir, "d.json"))
expect_refused("plot --describe, a link", r, os.path.join(pdir, "d.json"), t)

# Into a directory that does not exist: made, as run makes its own.
nodir = os.path.join(work, "nodir", "deeper")
r = simloop_run("plot", plot_csv, "--kind", "breakdown", "-o", os.path.join(nodir, "x"))
if r.returncode != 0 or "Traceback" in r.stderr:
    fail(f"plot -o nodir/x: exit status {r.returncode}\n{r.stderr}")
for ext in ("png", "svg"):
    p = os.path.join(nodir, f"x.{ext}")
    if not os.path.isfile(p) or os.path.getsize(p) < 1000:
        fail(f"plot -o nodir/x: {p} not written")
no_temporaries_left("plot", nodir)
# A directory that cannot be made (a file is in the way): a clear refusal.
blocker = os.path.join(work, "afile")
open(blocker, "w").close()
r = simloop_run("plot", plot_csv, "--kind", "breakdown", "-o", os.path.join(blocker, "x"))
if r.returncode != 2 or "Traceback" in r.stderr or blocker not in r.stderr:
    fail(f"plot -o afile/x: exit status {r.returncode}, expected 2 naming {blocker}\n{r.stderr}")

# ---- simloop calibrate --name: a name, never a path ----
cal = os.path.join(work, "cal")
os.makedirs(os.path.join(cal, "a", "b"))
measured = os.path.join(cal, "good.csv")
with open(measured, "w") as f:
    f.write("source,payload,dest,ns_per_packet\nkernel,18,loopback,3000\n"
            "kernel,64,loopback,3100\nkernel,256,loopback,3500\n")
r = simloop_run("calibrate", "--source", "kernel", "--train", "payload=18,64", "-o",
                os.path.join(cal, "a", "b"), "--name", "fine", measured)
if r.returncode != 0 or not os.path.isfile(os.path.join(cal, "a", "b", "fine.yaml")):
    fail(f"calibrate --name fine: exit status {r.returncode}\n{r.stderr}")
for name in ("../../x", os.path.join(cal, "abs"), ".hidden", "-dash", "a/b", "x" * 101):
    before = sorted(os.path.relpath(os.path.join(d, f), work)
                    for d, _, fs in os.walk(work) for f in fs)
    r = simloop_run("calibrate", "--source", "kernel", "--train", "payload=18,64", "-o",
                    os.path.join(cal, "a", "b"), "--name", name, measured)
    after = sorted(os.path.relpath(os.path.join(d, f), work)
                   for d, _, fs in os.walk(work) for f in fs)
    if r.returncode != 2 or "--name" not in r.stderr and "profile name" not in r.stderr:
        fail(f"calibrate --name {name!r}: exit status {r.returncode}, expected 2 naming --name\n"
             f"{r.stderr}")
    if after != before:
        fail(f"calibrate --name {name!r}: wrote {sorted(set(after) - set(before))}")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
print("every output refused a link; no temporary at a predictable name")
