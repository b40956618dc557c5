#!/usr/bin/python3
"""Stacks and machines compared as sweep axes, end to end, on the shipped
study experiments/compare-bsd-linux.yaml (the BSD and the Linux stack, each
on its machine, over payloads with repeats):

- the sweep runs both stacks, noting once the BSD key the Linux points
  leave out, and its rows say which stack and machine ran;
- shards merged are the whole sweep, row for row;
- a resume completes an interrupted study, and a BSD-only study grown by the
  stack axis keeps its rows (a point choosing the base's stack is the base);
- --from-sweep runs a Linux point alone to the same rate;
- `run --set stack=...` switches the default experiment's stack, a --set of
  the other stack's key stays an error, and --unset leaves a key out;
- `explain` lists the configuration keys B changes, a machine or stack as
  one line, and warns when the two machines are of other eras or sources.

    compare_stacks_test.py SIMLOOP SOURCE_DIR WORK_DIR
"""
import csv
import json
import pathlib
import re
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, SOURCE, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
STUDY = SOURCE / "experiments" / "compare-bsd-linux.yaml"
# What identifies a run and what it predicted (not its wall time).
SAME = ("point", "repeat", "point_hash", "stack", "machine", "workload.payload", "kpps",
        "cycles_per_packet", "status")


def run(*args, cwd=WORK):
    return subprocess.run([SIMLOOP, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ident(rs):
    return [tuple(r[k] for k in SAME) for r in rs]


# The whole study.
full = WORK / "full"
r = run("sweep", STUDY, "-j", "2", "-o", full)
check(r.returncode == 0, f"the study runs: exit {r.returncode}: {r.stderr[-800:]}")
notes = re.findall(r"options\.copy: left out: stack=linux-epyc-stack runs the linux stack", r.stderr)
check(len(notes) == 1, f"the BSD key the Linux points leave out is noted once: {notes} {r.stderr[-800:]}")
whole = rows(full / "compare-bsd-linux-sweep.csv")
check(len(whole) == 24 and all(x["status"] == "ok" for x in whole), f"24 runs ok: {len(whole)}")
# Each row holds its own stack's columns (the Linux rows' cycles_skb too, in
# a study whose base is BSD): its stages add up to its cycles per packet.
STAGE_SKIP = {"cycles_per_packet", "cycles_interrupt_pct"}
for x in whole:
    stages = sum(float(v) for k, v in x.items() if k.startswith("cycles_") and k not in STAGE_SKIP and v)
    check(abs(stages - float(x["cycles_per_packet"])) <= 1e-3 * float(x["cycles_per_packet"]) + 0.5,
          f"{x['stack']} {x['workload.payload']}: stages sum to {stages}, cycles_per_packet {x['cycles_per_packet']}")
check(all(x["cycles_skb"] for x in whole if x["stack"] == "linux-epyc-stack"),
      "the Linux rows have their skb stage")
by = {}
for x in whole:
    by.setdefault((x["stack"], x["machine"], x["workload.payload"]), []).append(float(x["kpps"]))
check(sorted({k[:2] for k in by}) == [("freebsd6-warm", "athlon-xp-2700"),
                                       ("linux-epyc-stack", "linux-epyc-machine")],
      f"each stack on its machine: {sorted(by)}")
check(all(len(v) == 4 for v in by.values()), "four repeats a point")
bsd_spread = [max(v) - min(v) for k, v in by.items() if k[0] == "freebsd6-warm"]
lnx_spread = [max(v) - min(v) for k, v in by.items() if k[0] == "linux-epyc-stack"]
check(all(s > 0 for s in bsd_spread) and all(s == 0 for s in lnx_spread),
      f"the BSD host's repeats differ, the Linux host's cannot: {bsd_spread} {lnx_spread}")
check(by[("freebsd6-warm", "athlon-xp-2700", "18")] != by[("linux-epyc-stack", "linux-epyc-machine", "18")],
      "the two stacks differ")
manifest = json.load(open(full / "compare-bsd-linux-sweep.json"))
check(manifest["keys"] == ["workload.payload", "machine", "stack", "machine.cache.enabled"],
      f"the swept keys: {manifest['keys']}")

# Its plot: a line per stack, each named with its machine, never their mean.
r = run("plot", full / "compare-bsd-linux-sweep.csv", "--kind", "payload", "--describe", WORK / "p.json")
if check(r.returncode == 0, f"the study's payload plot: {r.stderr[-300:]}"):
    lines = json.load(open(WORK / "p.json"))["panels"][0]["lines"]
    labels = sorted(ln["label"] for ln in lines)
    check(len(lines) == 2 and any("stack=freebsd6-warm" in x and "machine=athlon-xp-2700" in x for x in labels)
          and any("stack=linux-epyc-stack" in x and "machine=linux-epyc-machine" in x for x in labels),
          f"a line per stack and machine: {[ln['label'] for ln in lines]}")

# Shards, merged, are the whole study.
shards = WORK / "shards"
for k in (1, 2, 3):
    r = run("sweep", STUDY, "-q", "--shard", f"{k}/3", "-o", shards)
    check(r.returncode == 0, f"shard {k}/3: exit {r.returncode}: {r.stderr[-400:]}")
merged = shards / "merged.csv"
r = run("merge", merged, *sorted(shards.glob("compare-bsd-linux-sweep-shard-*-of-3.csv")))
check(r.returncode == 0, f"merge: {r.stderr[-400:]}")
check(ident(rows(merged)) == ident(whole), "shards merged are the whole study, row for row")

# An interrupted study (its last rows lost) completed by --resume.
cut = WORK / "cut"
cut.mkdir()
for f in ("compare-bsd-linux-sweep.csv", "compare-bsd-linux-sweep.json"):
    shutil.copy(full / f, cut / f)
lines = open(cut / "compare-bsd-linux-sweep.csv").read().splitlines(keepends=True)
open(cut / "compare-bsd-linux-sweep.csv", "w").write("".join(lines[:11]))
r = run("sweep", STUDY, "-q", "--resume", "-o", cut)
check(r.returncode == 0, f"resume: exit {r.returncode}: {r.stderr[-400:]}")
r = run("sweep", STUDY, "--resume", "-o", cut)
check("kept 24 rows, 0 runs to add" in r.stderr, f"a second resume has nothing to do: {r.stderr[-400:]}")
check(ident(rows(cut / "compare-bsd-linux-sweep.csv")) == ident(whole), "resumed rows are the study's")

# A study of one stack, grown by the stack axis: its rows are kept (a point
# choosing the base's stack by its name is the base). The shipped study's
# machine is a map, which no name equals, so this one names its own.
grow = WORK / "grow"
grow.mkdir()
mine = grow / "study.yaml"
HEAD = """name: grow
machine: athlon-xp-2700
stack: freebsd6
workload: {payload: 18, packets: 5000, dest: wire}
options: {copy: m_dup}
sweep:
  grid:
"""
open(mine, "w").write(HEAD + "    workload.payload: [18, 512]\n")
r = run("sweep", mine, "-q", "-o", grow / "out")
check(r.returncode == 0, f"BSD alone: exit {r.returncode}: {r.stderr[-400:]}")
first = rows(grow / "out" / "grow-sweep.csv")
open(mine, "w").write(HEAD + "    stack: [freebsd6, linux-epyc-stack]\n    workload.payload: [18, 512]\n")
r = run("sweep", mine, "--resume", "-o", grow / "out")
check(r.returncode == 0 and "kept 2 rows, 2 runs to add, dropped 0 rows" in r.stderr,
      f"the stack axis added: the BSD rows kept: {r.stderr[-600:]}")
grown = rows(grow / "out" / "grow-sweep.csv")
ran = ("point_hash", "repeat", "seed", "kpps", "cycles_per_packet")
check([tuple(x[k] for k in ran) for x in grown if x["stack"] == "freebsd6"]
      == [tuple(x[k] for k in ran) for x in first], "the BSD rows are kept as they ran")
check([x["stack"] for x in grown] == ["freebsd6", "freebsd6", "linux-epyc-stack", "linux-epyc-stack"]
      and all(x["status"] == "ok" for x in grown), f"and the Linux rows added: {[x['stack'] for x in grown]}")

# One Linux run alone from the study's manifest.
csv_path = full / "compare-bsd-linux-sweep.csv"
lnx = next(x for x in whole if x["stack"] == "linux-epyc-stack" and x["workload.payload"] == "256")
r = run("run", "--from-sweep", csv_path, "--point", lnx["point"], "--repeat", lnx["repeat"], "-o", WORK / "one")
check(r.returncode == 0, f"--from-sweep a Linux point: {r.stderr[-400:]}")
if r.returncode == 0:
    again = rows(WORK / "one" / "compare-bsd-linux.csv")[0]
    check(again["stack"] == "linux-epyc-stack" and again["kpps"] == lnx["kpps"],
          f"the same run: {again['stack']} {again['kpps']} against {lnx['kpps']}")

# The default experiment on the other stack, one --set.
r = run("run", "--set", "stack=linux-epyc-stack", "--set", "workload.packets=5000", "-o", WORK / "d")
check(r.returncode == 0 and "options.copy: left out" in r.stderr,
      f"run --set stack=linux-epyc-stack: exit {r.returncode}: {r.stderr[-400:]}")
r = run("run", "--set", "stack=linux-epyc-stack", "--set", "options.copy=m_dup", "-o", WORK / "d")
check(r.returncode == 2 and "--set options.copy: applies to the bsd stack only" in r.stderr,
      f"a --set of the other stack's key stays an error: {r.returncode} {r.stderr[-300:]}")
r = run("check", STUDY, "--unset", "options.copy")
check(r.returncode == 0 and json.loads(r.stdout)["options"]["copy"] == "m_copy",
      f"check --unset: {r.returncode} {r.stderr[-300:]}")
r = run("check", STUDY, "--unset", "options.align", "--unset", "workload.duration_s")
check(r.returncode == 2 and "--unset workload.duration_s:" in r.stderr and "does not set it" in r.stderr,
      f"--unset of a key the file does not set: {r.returncode} {r.stderr[-300:]}")
r = run("sweep", STUDY, "--list", "--unset", "variance")
check(r.returncode == 0, f"sweep --unset: {r.returncode} {r.stderr[-300:]}")

# explain names what differs in the configuration, and warns when the two
# machines are of other eras or their costs were made otherwise.
r = run("explain", SOURCE / "experiments" / "seed-athlon.yaml", "--set", "workload.packets=5000",
        "--b-set", "machine=linux-epyc-machine", "--b-set", "stack=linux-epyc-stack", "--b-set",
        "workload.dest=loopback", "-o", WORK / "e.json")
check(r.returncode == 0, f"explain across hosts: {r.stderr[-400:]}")
block = r.stdout[r.stdout.find("configuration:"):r.stdout.find("\n\n", r.stdout.find("configuration:"))]
check(re.search(r"^configuration: B differs from A in 3 keys$", block, re.M)
      and re.search(r"^  machine +athlon-xp-2700 -> linux-epyc-machine, and \d+ of its keys$", block, re.M)
      and re.search(r"^  stack +freebsd6 -> linux-epyc-stack \(the bsd stack -> the linux\), and \d+ of its "
                    r"keys$", block, re.M)
      and re.search(r"^  workload.dest +wire -> loopback$", block, re.M),
      f"the keys that differ, each machine and stack as one: {block!r}")
check("A's machine is athlon-xp-2700 (2006, estimated costs) and B's linux-epyc-machine (2025, measured "
      "costs): B-A compares two hosts of other eras" in r.stderr, f"the era warning: {r.stderr[-600:]}")
e = json.load(open(WORK / "e.json"))
check([d["key"] for d in e.get("config_differences", [])] == ["machine", "stack", "workload.dest"]
      and len(e.get("warnings", [])) == 1, f"both in the explanation's JSON: {e.get('config_differences')}")
r = run("explain", SOURCE / "experiments" / "seed-athlon.yaml", "--set", "workload.packets=5000",
        "--b-set", "machine=i7-870")
check(r.returncode == 0 and "(2006, estimated costs) and B's i7-870 (2012, estimated costs): B-A compares two "
      "hosts of other eras, not one change" in r.stderr, f"two estimated machines six years apart: {r.stderr[-300:]}")
r = run("explain", SOURCE / "experiments" / "seed-athlon.yaml", "--set", "workload.packets=5000",
        "--b-set", "machine.clock_hz=3e9")
check(r.returncode == 0 and "[warning]" not in r.stderr
      and re.search(r"^configuration: B differs from A in 1 key\n  machine.clock_hz  2.166e\+09 -> 3e\+09$",
                    r.stdout, re.M), f"one machine, one key: {r.stdout[:400]} {r.stderr[-300:]}")

finish()
