#!/usr/bin/python3
"""Results that cannot be written end simloop with exit status 4 and a
message naming the file and the system's reason, never with another status:
`run -o`, `run --trace`, `sweep`, `compare -o`, `plot -o` and `calibrate -o`
(whose four files go together: none of them, and no directory it made, is
left behind) with every file
limited to 0 bytes (RLIMIT_FSIZE: "File too large"), and, where a file
system can be mounted
(root, a private mount namespace), on a full tmpfs ("No space left on
device (ENOSPC)").

    write_failure_test.py SIMLOOP WORK_DIR
"""
import os
import pathlib
import re
import resource
import shutil
import signal
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
WRITE_FAILED = 4



(WORK / "exp.yaml").write_text("""name: write-failure
machine: athlon-xp-2700
stack: freebsd6
workload:
  payload: 18
  packets: 2000
  dest: wire
seed: 1
output:
  dir: out
sweep:
  grid:
    workload.payload: [18, 64]
""")
(WORK / "data.csv").write_text("source,payload,kpps,dest\nbench,18,300,wire\n")
# A results CSV to plot, written where nothing is limited.
made = subprocess.run([SIMLOOP, "-q", "run", str(WORK / "exp.yaml"), "-o", str(WORK / "plotme")],
                      cwd=WORK, capture_output=True, text=True, timeout=300)
check(made.returncode == 0, f"run for the plot's input: {made.stderr}")
RESULTS = WORK / "plotme" / "write-failure.csv"
MEASURED = pathlib.Path(__file__).resolve().parent.parent / "experiments/validation/data/native-1.csv"


def no_file_may_grow():
    # write() past the limit fails with EFBIG instead of killing the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def expect_write_failed(name, p, out_dir, reason):
    check(p.returncode == WRITE_FAILED,
          f"{name}: exit {p.returncode}, expected {WRITE_FAILED}: {p.stderr}")
    err = [l for l in p.stderr.splitlines() if l.startswith("[error]")]
    check(err and re.search(re.escape(str(out_dir)) + r"/[^ :]+: ", err[-1]),
          f"{name}: the message does not name the file under {out_dir}: {p.stderr}")
    check(err and reason in err[-1], f"{name}: '{reason}' not in the message: {p.stderr}")


COMMANDS = {
    "run -o": lambda d: ["run", str(WORK / "exp.yaml"), "-o", str(d)],
    "sweep": lambda d: ["sweep", str(WORK / "exp.yaml"), "-j", "1", "-o", str(d)],
    "compare -o": lambda d: ["compare", str(WORK / "exp.yaml"), str(WORK / "data.csv"), "-o",
                             str(d / "compare.csv")],
    "plot -o": lambda d: ["plot", str(RESULTS), "-o", str(d / "p")],
    "calibrate -o": lambda d: ["calibrate", str(MEASURED), "--train", "payload=18,1024",
                               "--bootstrap", "0", "--name", "cal", "-o", str(d / "cal")],
    # The trace is written during the simulation: a failure there must come
    # out as this message, not abort the process.
    "run --trace": lambda d: ["run", str(WORK / "exp.yaml"), "--trace", str(d / "t.json"), "-o",
                              str(d)],
}

# Every file limited to 0 bytes.
for name, args in COMMANDS.items():
    d = WORK / ("fsize-" + name.replace(" ", "").replace("-", ""))
    d.mkdir()
    p = subprocess.run([SIMLOOP, "-q", *args(d)], cwd=WORK, capture_output=True, text=True,
                       timeout=300, preexec_fn=no_file_may_grow)
    expect_write_failed(f"{name} (RLIMIT_FSIZE 0)", p, d, "File too large")
    if name == "calibrate -o":
        check(not (d / "cal").exists(), f"calibrate -o (RLIMIT_FSIZE 0) left {d / 'cal'}")

# A full file system, where one can be mounted.
full = WORK / "full"
full.mkdir()
probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=16k tmpfs {full}"],
                       capture_output=True, text=True)
if probe.returncode != 0:
    print("no private tmpfs here (needs root and unshare): ENOSPC cases skipped")
else:
    for name, args in COMMANDS.items():
        cmd = " ".join(f"'{a}'" for a in [SIMLOOP, "-q", *args(full)])
        p = subprocess.run(
            ["unshare", "-m", "sh", "-c",
             f"mount -t tmpfs -o size=16k tmpfs {full} && "
             f"(head -c 1048576 /dev/zero > {full}/filler) 2>/dev/null; {cmd}; s=$?; "
             f"ls -A {full} | grep -v '^filler$' | sed 's/^/left: /'; exit $s"],
            cwd=WORK, capture_output=True, text=True, timeout=300)
        expect_write_failed(f"{name} (full tmpfs)", p, full, "No space left on device (ENOSPC)")
        # Nothing half-written: whatever failed left no file or directory.
        left = [l for l in p.stdout.splitlines() if l.startswith("left: ")]
        check(not left, f"{name} (full tmpfs) left {left}")

    # A disk that fills while a sweep runs (after its third row), and a
    # resume on a full disk: exit status 4 naming ENOSPC; the rows written
    # stay, and once there is room again --resume completes the results.
    (WORK / "mid.yaml").write_text(
        (WORK / "exp.yaml").read_text().replace("workload.payload: [18, 64]",
                                                "workload.payload: {start: 18, stop: 47, step: 1}"))
    (WORK / "mid-shrunk.yaml").write_text(
        (WORK / "exp.yaml").read_text().replace("workload.payload: [18, 64]",
                                                "workload.payload: {start: 18, stop: 37, step: 1}"))
    log = WORK / "mid.log"
    sweep = f"'{SIMLOOP}' -v sweep '{WORK}/mid.yaml' -j 1 -o {full}/o"
    script = f"""mount -t tmpfs -o size=2m tmpfs {full} || exit 99
{sweep} 2>{log} & pid=$!
until grep -q 'recorded point 2 ' {log}; do kill -0 $pid 2>/dev/null || break; sleep 0.02; done
head -c 4m /dev/zero > {full}/filler 2>/dev/null
wait $pid; echo "mid $?"
rows=$(grep -c '' {full}/o/write-failure-sweep.csv)
{SIMLOOP} -q sweep '{WORK}/mid-shrunk.yaml' -j 1 -o {full}/o --resume 2>{WORK}/full-resume.log
echo "resume $?"
rm {full}/filler
{sweep} --resume 2>/dev/null; echo "after $?"
echo "rows $rows $(grep -c '' {full}/o/write-failure-sweep.csv)"
"""
    p = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                       timeout=600)
    out = dict(l.split(" ", 1) for l in p.stdout.splitlines() if " " in l)
    err = [l for l in log.read_text().splitlines() if l.startswith("[error]")]
    check(out.get("mid") == str(WRITE_FAILED),
          f"sweep (disk filled mid-sweep): {p.stdout} {p.stderr} {err}")
    check(err and "No space left on device (ENOSPC)" in err[-1],
          f"sweep (disk filled mid-sweep): no ENOSPC in the last error: {err}")
    resume_err = (WORK / "full-resume.log").read_text()
    check(out.get("resume") == str(WRITE_FAILED) and "(ENOSPC)" in resume_err,
          f"sweep --resume on a full disk: {p.stdout} {resume_err}")
    check(out.get("after") == "0", f"sweep --resume with room again: {p.stdout}")
    rows = out.get("rows", "0 0").split()
    check(int(rows[0]) >= 4 and rows[1] == "31",
          f"rows before the disk filled stay, and the resume completes them: {p.stdout}")

# Where a plot goes: a missing directory is made; a file where the directory
# should be is bad input, said on an [error] line, never a traceback.
p = subprocess.run([SIMLOOP, "-q", "plot", str(RESULTS), "-o", "nodir/x"], cwd=WORK,
                   capture_output=True, text=True, timeout=300)
check(p.returncode == 0 and (WORK / "nodir" / "x.png").is_file(),
      f"plot -o nodir/x: exit {p.returncode}: {p.stderr}")
(WORK / "afile").write_text("")
p = subprocess.run([SIMLOOP, "-q", "plot", str(RESULTS), "-o", "afile/x"], cwd=WORK,
                   capture_output=True, text=True, timeout=300)
check(p.returncode == 2 and p.stderr.startswith("[error] afile: not a directory")
      and "Traceback" not in p.stderr, f"plot -o afile/x: exit {p.returncode}: {p.stderr}")

finish()
