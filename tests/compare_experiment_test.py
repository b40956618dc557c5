#!/usr/bin/python3
"""simloop compare EXPERIMENT DATA --columns ... end to end, its standard
output a pipe (as in a script): the table is printed once, each measured
point once (in the table), and nothing else repeats it; -q leaves no
per-point lines on the log either.

    compare_experiment_test.py SIMLOOP WORK_DIR
"""
import pathlib
import re
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
WORK.mkdir(parents=True, exist_ok=True)



# A short run of the seed host (the compare simulates each point).
(WORK / "exp.yaml").write_text("""name: compare-points
machine: athlon-xp-2700
stack: freebsd6
workload:
  payload: 18
  packets: 3000
  dest: wire
seed: 1
output:
  dir: out
""")
# Seven points in a tool's own column names, two repeats each.
payloads = [18, 64, 128, 256, 512, 1024, 1400]
rows = ["Size,Rate,Path,Host"]
for p in payloads:
    for r in range(2):
        rows.append(f"{p},{300 - p / 10 + r:.1f},wire,\"bench host, ttcp\"")
(WORK / "data.csv").write_text("\n".join(rows) + "\n")
cmd = [str(WORK / "exp.yaml"), str(WORK / "data.csv"), "--columns",
       "payload=Size,kpps=Rate,dest=Path,source=Host"]

for quiet in ([], ["-q"]):
    name = "compare" + (" -q" if quiet else "")
    p = subprocess.run([SIMLOOP, *quiet, "compare", *cmd], cwd=WORK, capture_output=True,
                       text=True, timeout=600)
    check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr}")
    out = p.stdout
    check(out.count("simulated against the measured points") == 1,
          f"{name}: the table's title {out.count('simulated against the measured points')} "
          f"times on stdout:\n{out}")
    # Every line on stdout is printed once: a list of the points printed
    # again (by a child inheriting the parent's buffer, or in a loop) repeats
    # lines.
    lines = [l for l in out.splitlines() if l.strip()]
    repeated = sorted({l for l in lines if lines.count(l) > 1})
    check(not repeated, f"{name}: lines repeated on stdout: {repeated}")
    for pay in payloads:
        label = re.compile(rf"^payload={pay} dest=wire\b", re.M)
        n = len(label.findall(out))
        check(n == 1, f"{name}: point payload={pay} on {n} lines of stdout, expected 1 (the table)")
        # its row: measured, predicted, error
        check(re.search(rf"^payload={pay} dest=wire.* [0-9.]+ +[0-9.]+ +[-+][0-9.]+%$", out, re.M),
              f"{name}: no table row for payload={pay}:\n{out}")
    if quiet:
        check(not re.search(r"payload=\d+ dest=", p.stderr),
              f"{name}: per-point lines on the log despite -q:\n{p.stderr}")

finish()
