#!/usr/bin/python3
"""Every refusal of bad input is an [error] line and exit status 2, whoever
words it: a command line CLI11 cannot parse, an unknown subcommand, and the
plotting script's refusals (no plot fits the columns, no kpps column, a
hidden swept key, a --series it cannot draw). Never a bare message, a
Python traceback or another status.

    error_lines_test.py SIMLOOP WORK_DIR
"""
import pathlib
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
WORK.mkdir(parents=True, exist_ok=True)

(WORK / "columns.csv").write_text("a,b\n1,2\n")
(WORK / "nokpps.csv").write_text("payload,cycles_user\n18,60\n64,60\n")
# Two swept keys the payload plot does not show.
rows = ["point,point_hash,machine.clock_hz,interrupts.handler_cycles,source,payload,kpps"]
for i, (hz, h, pay) in enumerate([(1e9, 1000, 18), (2e9, 2000, 64), (1e9, 2000, 18),
                                  (2e9, 1000, 64)]):
    rows.append(f"{i},h{i},{hz},{h},simulated,{pay},{300 + i}")
(WORK / "hidden.csv").write_text("\n".join(rows) + "\n")

CASES = {
    "unknown subcommand": (["runn"], "unknown subcommand 'runn'"),
    "unknown option": (["run", "--bogus"], "simloop run: The following argument was not expected"),
    "extra arguments": (["check", "a.yaml", "b.yaml"], "simloop check:"),
    "missing value": (["run", "--set"], "simloop run: --set"),
    "bad --kind": (["plot", "columns.csv", "--kind", "pie"], "simloop plot: --kind"),
    "nested subcommand": (["measure", "kernel", "--bogus"], "simloop measure kernel:"),
    "plot: no kind fits": (["plot", "columns.csv"],
                           "columns.csv:1: cannot tell which plot fits these columns (a, b)"),
    "plot: no kpps": (["plot", "nokpps.csv", "--kind", "payload"],
                      "nokpps.csv:1: the payload plot needs a kpps column"),
    "plot: hidden keys": (["plot", "hidden.csv", "--kind", "payload"], "would average over"),
    "plot: --series of no column": (["plot", "nokpps.csv", "--kind", "breakdown", "--series",
                                     "nosuch"], "--series nosuch: no column nosuch"),
}
for name, (args, want) in CASES.items():
    p = subprocess.run([SIMLOOP, *args], cwd=WORK, capture_output=True, text=True, timeout=300)
    lines = p.stderr.splitlines()
    check(p.returncode == 2, f"{name}: exit {p.returncode}, expected 2: {p.stderr}")
    check(lines and lines[0].startswith("[error] "),
          f"{name}: the message is not an [error] line: {p.stderr!r}")
    check(want in p.stderr, f"{name}: '{want}' not in {p.stderr!r}")
    check("Traceback" not in p.stderr, f"{name}: a traceback: {p.stderr}")

# --help and --version still succeed, quietly.
for args in (["--help"], ["run", "--help"], ["--version"]):
    p = subprocess.run([SIMLOOP, *args], cwd=WORK, capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and p.stderr == "", f"{' '.join(args)}: exit {p.returncode}: {p.stderr}")

finish()
