#!/usr/bin/python3
"""Sweeps of a million points: planned without resolving each point.

- A million points are listed, whole and as a shard, with every index once,
  the settings of the product in order, and hashes that depend only on the
  settings (the same point listed by two sweeps has the same hash).
- Past the points checked one by one, a point the loader refuses is not a
  refusal of the whole sweep: it is listed, and when it runs it is a row with
  status error, beside the points that run.
- Up to that many, the same kind of point refuses the sweep before it runs.
- Results whose manifest hashes points by another rule are not resumed into.

    large_sweep_test.py SIMLOOP WORK_DIR
"""
import csv
import json
import pathlib
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)

BASE = """name: big
machine: athlon-xp-2700
stack: freebsd6
workload: {payload: 18, packets: 200, dest: wire}
output: {dir: out}
"""


def simloop(*args):
    return subprocess.run([SIMLOOP, *args], cwd=WORK, capture_output=True, text=True,
                          timeout=600)


def listed(text):
    rows = [l for l in text.splitlines() if l and not l.startswith("#")]
    return list(csv.DictReader(rows))


# A million points: 1000 payloads x 2 alignments x 500 interrupt costs.
million = WORK / "million.yaml"
million.write_text(BASE + """sweep:
  grid:
    workload.payload: {start: 18, stop: 1017, step: 1}
    options.align: [none, copy-down]
    interrupts.per_packet_cycles: {start: 0, stop: 499, step: 1}
""")
p = simloop("-q", "sweep", "--list", str(million))
check(p.returncode == 0, f"--list of a million points: exit {p.returncode}: {p.stderr[-2000:]}")
rows = listed(p.stdout)
check(len(rows) == 1000000, f"{len(rows)} runs listed, expected 1000000")
if len(rows) == 1000000:
    check(all(int(r["point"]) == i for i, r in enumerate(rows[:5000])), "indices out of order")
    last = rows[-1]
    check((last["point"], last["workload.payload"], last["options.align"],
           last["interrupts.per_packet_cycles"]) == ("999999", "1017", "copy-down", "499"),
          f"the last point: {last}")
    # Point 1000 * 1 + 500 + 7: payload 19, copy-down, 7 cycles.
    r = rows[1000 + 500 + 7]
    check((r["workload.payload"], r["options.align"], r["interrupts.per_packet_cycles"]) ==
          ("19", "copy-down", "7"), f"point 1507: {r}")
    hashes = {r["point_hash"] for r in rows}
    check(len(hashes) == 1000000, f"{1000000 - len(hashes)} points share a hash")
    # A shard lists its own points, each as the whole sweep lists it.
    s = simloop("-q", "sweep", "--list", "--shard", "7/1000", str(million))
    check(s.returncode == 0, f"--shard 7/1000: exit {s.returncode}: {s.stderr}")
    shard = listed(s.stdout)
    check(len(shard) == 1000, f"shard 7/1000 lists {len(shard)} runs, expected 1000")
    check(all(int(r["point"]) % 1000 == 6 and r == rows[int(r["point"])] for r in shard),
          "a shard's runs differ from the whole sweep's")
    # The same point in a smaller sweep (the base's alignment swept no more,
    # a filter): the same hash and seed.
    small = WORK / "small.yaml"
    small.write_text(BASE + """sweep:
  grid:
    interrupts.per_packet_cycles: [7, 499]
    workload.payload: [19, 1017]
  filter: "workload.payload > 18"
""")
    q = simloop("-q", "sweep", "--list", str(small))
    check(q.returncode == 0, f"small: exit {q.returncode}: {q.stderr}")
    few = listed(q.stdout)
    check(len(few) == 4, f"small lists {len(few)} runs")
    if len(few) == 4:
        # (7, 19): none is the base's alignment, so it is the point 19/none/7.
        r = rows[1000 * 1 + 7]
        check((r["workload.payload"], r["options.align"]) == ("19", "none"), f"point 1007: {r}")
        check(few[0]["point_hash"] == r["point_hash"] and few[0]["seed"] != "",
              f"the same configuration, another hash: {few[0]} / {r}")

# Past the points checked one by one: 1472 B fits an MTU of 1500, 1473 B
# does not. Listed; run, its points are rows, the bad one with status error.
edge = WORK / "edge.yaml"
edge.write_text(BASE + """sweep:
  grid:
    workload.payload: [1472, 1473]
    interrupts.per_packet_cycles: {start: 0, stop: 10004, step: 1}
""")
p = simloop("-q", "sweep", "--list", str(edge))
check(p.returncode == 0, f"edge --list: exit {p.returncode}: {p.stderr}")
check(len(listed(p.stdout)) == 20010, "edge: not every point is listed")
p = simloop("check", str(edge))
check(p.returncode == 0 and "20010 points (each value checked" in p.stderr,
      f"edge check: exit {p.returncode}: {p.stderr[-500:]}")
# Shard 1/10005 holds points 0 (1472 B) and 10005 (1473 B).
p = simloop("sweep", "--shard", "1/10005", "-j", "2", str(edge), "-o", str(WORK / "edge"))
check(p.returncode == 3, f"edge sweep: exit {p.returncode}, expected 3 (a run failed): {p.stderr}")
res = WORK / "edge" / "big-sweep-shard-1-of-10005.csv"
if res.exists():
    got = {r["point"]: r for r in csv.DictReader(res.open())}
    check(sorted(got) == ["0", "10005"], f"edge rows: {sorted(got)}")
    if sorted(got) == ["0", "10005"]:
        check(got["0"]["status"] == "ok", f"point 0: {got['0']}")
        check(got["10005"]["status"] == "error" and "ether_mtu" in got["10005"]["error"],
              f"point 10005: {got['10005']}")
    m = json.loads((WORK / "edge" / "big-sweep-shard-1-of-10005.json").read_text())
    check(m.get("points_checked") is False, f"points_checked: {m.get('points_checked')}")
else:
    check(False, f"no results: {p.stderr}")
# The same kind of point in a sweep small enough to check is refused first.
few = WORK / "few.yaml"
few.write_text(BASE + """sweep:
  grid:
    workload.payload: [1472, 1473]
    interrupts.per_packet_cycles: [0, 1]
""")
p = simloop("sweep", "--list", str(few))
check(p.returncode == 2 and "sweep point 2 (workload.payload=1473" in p.stderr,
      f"few: exit {p.returncode}: {p.stderr}")

# After a sweep of more points than a table is printed for: one line.
many = WORK / "many.yaml"
many.write_text(BASE.replace("packets: 200", "packets: 1") +
                "sweep:\n  grid:\n    workload.payload: {start: 18, stop: 267, step: 1}\n")
p = simloop("sweep", "-j", "2", str(many), "-o", str(WORK / "many"))
check(p.returncode == 0 and "250 points, 250 with a run that ended ok" in p.stdout and
      "workload.payload  runs" not in p.stdout,
      f"many: exit {p.returncode}: {p.stdout[-500:]} {p.stderr[-500:]}")
p = simloop("sweep", "-j", "2", "--shard", "2/2", str(many), "-o", str(WORK / "many"))
check(p.returncode == 0 and "workload.payload  runs" in p.stdout and p.stdout.count("\n") > 125,
      f"many, a shard of 125 points: exit {p.returncode}: {p.stdout[-300:]}")

# Results of a manifest that hashes its points by another rule.
ok = WORK / "ok.yaml"
ok.write_text(BASE + "sweep:\n  grid:\n    workload.payload: [18, 64]\n")
p = simloop("-q", "sweep", str(ok), "-o", str(WORK / "ok"))
check(p.returncode == 0, f"ok sweep: exit {p.returncode}: {p.stderr}")
mpath = WORK / "ok" / "big-sweep.json"
m = json.loads(mpath.read_text())
m["point_hash_rule"] = "fnv1a64 of the point's resolved configuration without output.*"
mpath.write_text(json.dumps(m, indent=2) + "\n")
before = (WORK / "ok" / "big-sweep.csv").read_text()
p = simloop("sweep", "--resume", str(ok), "-o", str(WORK / "ok"))
check(p.returncode == 2 and "follow another rule" in p.stderr,
      f"resume across hash rules: exit {p.returncode}: {p.stderr}")
check((WORK / "ok" / "big-sweep.csv").read_text() == before, "the results were touched")

finish()
