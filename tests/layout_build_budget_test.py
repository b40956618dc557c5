#!/usr/bin/env python3
"""The order search's budget is in evaluations: the same inputs give the
same order however busy the machine is, and a time cap that cuts in is
said, in the output and in advice.json.

Usage: layout_build_budget_test.py SIMLOOP SOURCE_DIR WORK_DIR

Two runs of one search on the kept link-order data of one build, the second
beside a busy loop, must write byte-identical order files
and the same number of evaluations; a run whose time cap is 0 s must say
that the cap cut it short.
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

SIMLOOP, SRC, WORK = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
DATA = SRC / "experiments/validation/data/link-order"
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
EVALS = 120
ARGS = ["--nm", DATA / "c006-inet-13168.nm.gz", "--map", DATA / "c006-inet-13168.map.gz",
        "--path", f"name=wire-18,profile={DATA}/profile-wire-18.txt,payload=18,path=wire",
        "--path", f"name=self-1024,profile={DATA}/profile-self-1024.txt,payload=1024,path=self",
        "--I1", "16384,1,64", "--I1", "16384,2,64", "--max-evals", str(EVALS)]


def search(out, *more):
    cmd = [SIMLOOP, "-q", "layout", *map(str, ARGS), *more, "--out-dir", str(out)]
    out.mkdir()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    print(" ".join(map(str, cmd)))
    print(r.stdout + r.stderr)
    assert r.returncode == 0, f"exit {r.returncode}"
    return r.stdout, json.loads((out / "advice.json").read_text())


quiet_out, quiet = search(WORK / "quiet")
busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(1)]
try:
    busy_out, loaded = search(WORK / "busy")
finally:
    for b in busy:
        b.kill()
        b.wait()

for q in (quiet, loaded):
    assert q["max_evaluations"] == EVALS, q["max_evaluations"]
    assert not q["stopped_by_time"], "the time cap cut in: raise --budget"
assert f"of a budget of {EVALS}" in quiet_out and "deterministic" in quiet_out
a = (WORK / "quiet/advice.order").read_bytes()
b = (WORK / "busy/advice.order").read_bytes()
assert a == b, "two runs of the same search wrote different orders"
assert a, "no order to compare: the test needs a search that orders something"
assert quiet["evaluations"] == loaded["evaluations"], (quiet["evaluations"], loaded["evaluations"])

# A cap of 0 s cuts in before anything is evaluated: said, not hidden.
capped_out, capped = search(WORK / "capped", "--budget", "0")
assert capped["stopped_by_time"], "advice.json does not say the cap cut in"
assert "cut short by the time cap" in capped_out, "the output does not say the cap cut in"
print(f"same order twice ({len(a.splitlines())} names, {quiet['evaluations']} evaluations); "
      "the cap is reported")
