#!/usr/bin/env python3
"""The order search cannot lose to a baseline it knows.

Usage: layout_build_baselines_test.py SIMLOOP SOURCE_DIR WORK_DIR LAYOUT [I1 ...]
                                     [--every-start-repaired]

On the kept link-order data of LAYOUT (its nm and link maps, the three
paths' profiles; or a directory LAYOUT of its own with its paths.txt and
profiles), at the geometries given: the output and predicted.csv
carry the baselines (default link, C3, call order over all paths and per
path) beside the advice; the advice keeps every cell at or below the
default link's, and costs no more than any baseline that does too, nor
than any start the search repaired; advice.json names the starts.
"""
import csv
import json
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

SIMLOOP, SRC, WORK, LAYOUT = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
REPAIRED = "--every-start-repaired" in sys.argv
GEOMS = [a for a in sys.argv[5:] if not a.startswith("--")] or ["16384,1,64", "16384,2,64"]
DATA = SRC / "experiments/validation/data/link-order"
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
PATHS = [("loopback-18", 18, "loopback"), ("wire-18", 18, "wire"), ("self-1024", 1024, "self")]
if (DATA / LAYOUT).is_dir():
    # A build kept with its own profiles: paths.txt lists "NAME PAYLOAD PATH".
    DATA = DATA / LAYOUT
    PATHS = [tuple(l.split()) for l in (DATA / "paths.txt").read_text().splitlines() if l.strip()]
cmd = [SIMLOOP, "-q", "layout", "--nm", DATA / f"{LAYOUT}.nm.gz", "--map",
       DATA / f"{LAYOUT}.map.gz", "--max-evals", "600", "--out-dir", WORK]
for name, payload, dest in PATHS:
    cmd += ["--path", f"name={name},profile={DATA}/profile-{name}.txt,payload={payload},path={dest}"]
for g in GEOMS:
    cmd += ["--I1", g]
r = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=1200)
print(" ".join(map(str, cmd)))
print(r.stdout + r.stderr)
assert r.returncode == 0, f"exit {r.returncode}"

cells = defaultdict(dict)  # order -> (path, i1) -> misses
with open(WORK / "predicted.csv") as f:
    for row in csv.DictReader(f):
        cells[row["order"]][(row["path"], row["i1"])] = float(row["predicted_i1_misses_per_packet"])
baselines = ["default link", "C3", "call order all"] + [f"call order {p[0]}" for p in PATHS]
for b in baselines + ["advice"]:
    assert b in cells, f"predicted.csv has no {b!r} order"
    assert f"{b} " in r.stdout.split("cost (misses summed")[-1], f"the cost line lacks {b!r}"
default = cells["default link"]
cost = {o: sum(c.values()) for o, c in cells.items()}
eps = 1e-6
advice = cells["advice"]
assert all(advice[k] <= default[k] + eps for k in default), "the advice loses a cell to the default"
for b in baselines:
    if all(cells[b][k] <= default[k] + eps for k in default):
        assert cost["advice"] <= cost[b] + eps, f"advice {cost['advice']} loses to {b} {cost[b]}"
j = json.loads((WORK / "advice.json").read_text())
names = [s["name"] for s in j["starts"]]
assert "C3" in names and "call order all" in names, names
for s in j["starts"]:
    if s["within_default"]:
        assert cost["advice"] <= s["cost_repaired"] + eps, (s, cost["advice"])
if REPAIRED:
    # The case the repair is for: every call order breaks a cell, and the
    # advice still orders functions.
    for s in j["starts"]:
        if s["name"].startswith("call order"):
            assert s["repair_steps"] > 0, f"{s['name']} needed no repair: not the case meant"
    assert any(not f.startswith("simloop_order_pad_") for f in j["order"]), "empty advice"
c3 = (WORK / "c3.order").read_text().split()
assert c3 and len(set(c3)) == len(c3), "c3.order: empty, or a name twice"
print("costs: " + ", ".join(f"{o} {cost[o]:.2f}" for o in baselines + ["advice"]))
print(f"advice from {j['start']}: never above the default link, no dearer than a baseline within it")
