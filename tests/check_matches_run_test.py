#!/usr/bin/python3
"""`simloop check` refuses exactly what `simloop run` refuses, in the same
words: every shipped experiment, as shipped and one step beside it (each
alignment policy, each destination, the other stack's options), is checked
and run, and the two must agree. A refusal is exit status 2 with the same
message from both (naming the file and the key); an accepted file runs
(exit 0, or 3 for a run that ended early, which is a result). The bad-input
catalogue holds the same for every kind of bad input.

usage: check_matches_run_test.py SIMLOOP SOURCE_DIR WORK_DIR"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

SIMLOOP, SRC, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
failures = []
SHORT = ["--set", "workload.packets=300", "--set", "workload.duration_s=0"]


def simloop(*args):
    return subprocess.run([SIMLOOP, "-q", *map(str, args)], capture_output=True, text=True,
                          cwd=WORK, timeout=600, stdin=subprocess.DEVNULL)


def error_line(stderr):
    return "\n".join(l for l in stderr.splitlines() if l.startswith("[error]"))


experiments = sorted(p for p in (SRC / "experiments").rglob("*.yaml")
                     if re.search(r"^machine:", p.read_text(errors="replace"), re.M))
steps = [[]]
for align in ("none", "copy-down", "strict", "copy-down-unsafe"):
    steps.append(["--set", f"options.align={align}"])
for dest in ("loopback", "broadcast", "wire", "self"):
    steps.append(["--set", f"workload.dest={dest}"])
steps.append(["--set", "options.copy=m_dup"])
steps.append(["--set", "workload.payload=9000"])

pairs = agreed = refused = 0
for exp in experiments:
    for step in steps:
        pairs += 1
        what = f"{exp.relative_to(SRC)} {' '.join(step[1::2])}".strip()
        c = simloop("check", exp, *SHORT, *step)
        r = simloop("run", exp, *SHORT, *step, "-o", WORK / "out")
        if c.returncode == 2 or r.returncode == 2:
            if c.returncode != r.returncode:
                failures.append(f"{what}: check exit {c.returncode}, run exit {r.returncode}: "
                                f"{error_line(c.stderr) or error_line(r.stderr)}")
            elif error_line(c.stderr) != error_line(r.stderr):
                failures.append(f"{what}: check and run refuse it in other words:\n  check: "
                                f"{error_line(c.stderr)}\n  run:   {error_line(r.stderr)}")
            else:
                refused += 1
                agreed += 1
            continue
        if c.returncode != 0 or r.returncode not in (0, 3):
            failures.append(f"{what}: check exit {c.returncode}, run exit {r.returncode}: "
                            f"{(c.stderr + r.stderr)[-400:]}")
        else:
            agreed += 1

for f in failures:
    print("FAIL", f)
print(f"{len(experiments)} experiments x {len(steps)} steps: {agreed} of {pairs} agree "
      f"({refused} refused by both, alike)")
if not experiments:
    print("FAIL no shipped experiment found")
sys.exit(1 if failures or not experiments else 0)
