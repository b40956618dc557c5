#!/usr/bin/python3
"""One meaning per file: an experiment whose sweep: section is broken is
refused alike by `simloop run`, `simloop check` and `simloop sweep --list`:
exit status 2 and the same located message (FILE:LINE:COL and the key). The
same file with a good sweep section runs.

    sweep_section_test.py SIMLOOP WORK_DIR
"""
import pathlib
import re
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
WORK.mkdir(parents=True, exist_ok=True)



BASE = """name: sweep-section
machine: athlon-xp-2700
stack: freebsd6
workload:
  payload: 18
  packets: 2000
  dest: wire
output:
  dir: out
"""

# name: (sweep section, what the message must say)
CASES = {
    "unknown-key": ("sweep:\n  grid:\n    workload.payload: [18, 64]\n  repeat: 3\n",
                    r"sweep\.repeat: unknown key in sweep"),
    "bad-range": ("sweep:\n  grid:\n    workload.payload: {start: 64, stop: 18, num: 0}\n",
                  r"workload\.payload\.num: expected an integer in \[1, 1000000\]"),
    "not-a-config-key": ("sweep:\n  grid:\n    workload.paylod: [18, 64]\n",
                         r"workload\.paylod: no such key; did you mean 'workload\.payload'"),
    "bad-value": ("sweep:\n  grid:\n    workload.payload: [18, -64]\n",
                  r"workload\.payload: expected an integer"),
    "filter-does-not-parse": (
        "sweep:\n  grid:\n    workload.payload: [18, 64]\n  filter: [\"workload.payload <=\"]\n",
        r"sweep\.filter: "),
    "zero-repeats": ("sweep:\n  grid:\n    workload.payload: [18, 64]\n  repeats: 0\n",
                     r"sweep\.repeats: expected an integer in \[1, 1000000\]"),
    "zip-lengths": ("sweep:\n  zip:\n    workload.payload: [18, 64]\n    machine.clock_hz: [1e9]\n",
                    r"machine\.clock_hz: has 1 values but workload\.payload has 2"),
    "not-a-map": ("sweep: yes\n", r"sweep: expected a map"),
    "bad-point": ("sweep:\n  grid:\n    workload.payload: [18, 1600]\n",
                  r"sweep point 1 \(workload\.payload=1600\): "),
}


def simloop(*args):
    return subprocess.run([SIMLOOP, *args], cwd=WORK, capture_output=True, text=True,
                          timeout=300)


def commands(path):
    return {
        "check": ["check", path],
        "run": ["run", path, "-o", str(WORK / "out")],
        "sweep --list": ["sweep", "--list", path, "-o", str(WORK / "out")],
    }


# The control: a good sweep section is accepted by all three.
good = WORK / "good.yaml"
good.write_text(BASE + "sweep:\n  grid:\n    workload.payload: [18, 64]\n")
for sub, args in commands(str(good)).items():
    p = simloop("-q", *args)
    check(p.returncode == 0, f"good sweep: {sub}: exit {p.returncode}: {p.stderr}")

for name, (section, want) in CASES.items():
    path = WORK / f"{name}.yaml"
    path.write_text(BASE + section)
    messages = {}
    for sub, args in commands(str(path)).items():
        p = simloop(*args)
        check(p.returncode == 2, f"{name}: {sub}: exit {p.returncode}, expected 2: {p.stderr}")
        err = [l for l in p.stderr.splitlines() if l.startswith("[error]")]
        check(len(err) == 1, f"{name}: {sub}: expected one error line, got: {p.stderr}")
        msg = err[0] if err else ""
        check(re.search(re.escape(str(path)) + r"(:\d+:\d+)?: ", msg),
              f"{name}: {sub}: the message does not name the file: {msg}")
        check(re.search(want, msg), f"{name}: {sub}: /{want}/ not in: {msg}")
        messages[sub] = msg
    check(len(set(messages.values())) == 1,
          f"{name}: the three messages differ: {messages}")

finish()
