#!/usr/bin/python3
"""The code simloop explain names for an I-cache set is code the path runs,
and explain and simloop layout name the same code for a set: the seed's
baseline and padded layouts on the wire path, where the receive side
(udp_input, soreceive) never runs although its code shares those sets.

    explain_owners_test.py SIMLOOP SOURCE_DIR WORK_DIR
"""
import json
import pathlib
import subprocess
import sys

import yaml

from checks import check, finish  # tests/checks.py

SIMLOOP, SRC, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
WORK.mkdir(parents=True, exist_ok=True)
SEED = SRC / "experiments" / "seed"
# The code around the stack's functions (sim/layout/code.h): it runs on every path.
AROUND = {"syscall_entry", "syscall_exit", "user_loop", "header_access", "cksum", "mbuf_alloc",
          "mbuf_free", "copy"}


def simloop(*args):
    p = subprocess.run([SIMLOOP, "-q", *args], cwd=WORK, capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        sys.exit(f"simloop {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p


# Symbol -> owner, from the layout both experiments link.
layout = yaml.safe_load((SRC / "configs" / "layouts" / "freebsd6-i386-synthetic.yaml").read_text())
owner_of = {f["symbol"]: f.get("owner", "") for o in layout["objects"]
            for f in o.get("functions", [])}
user = yaml.safe_load((SRC / "configs" / "layouts" / "ttcp-user.yaml").read_text())
owner_of.update({f["symbol"]: f.get("owner", "") for o in user["objects"]
                 for f in o.get("functions", [])})

runs = {}
for name in ("icache-baseline", "icache-padded"):
    simloop("run", str(SEED / f"{name}.yaml"), "--set", "workload.dest=wire", "-o", str(WORK / name))
    runs[name] = next((WORK / name).glob("*.json"))
    simloop("layout", str(SEED / f"{name}.yaml"), "--set", "workload.dest=wire", "--no-search",
            "-o", str(WORK / f"{name}-layout.json"))
simloop("explain", str(runs["icache-baseline"]), str(runs["icache-padded"]), "-o",
        str(WORK / "explain.json"))
e = json.loads((WORK / "explain.json").read_text())

# The stack functions each run entered (a per-call cost), and the code around them.
ran = set(AROUND)
for name, path in runs.items():
    for f in json.loads(path.read_text())["functions"]:
        if f["event"] > 0:
            ran.add(f["function"])
check("udp_input" not in ran and "soreceive" not in ran,
      f"the wire path is not expected to receive: {sorted(ran)}")

named = 0
for s in e["icache_sets"]:
    for sym in s["symbols"]:
        named += 1
        check(sym in owner_of, f"set {s['set']}: {sym} is no symbol of the layouts")
        check(owner_of.get(sym) in ran,
              f"set {s['set']}: explain names {sym} ({owner_of.get(sym)}), code the wire path "
              f"never runs")
check(named > 0, "explain named no code for any set")

# Where layout reports a set, explain names the code of every line layout
# finds missing there. (The run may miss more lines in it: layout replays a
# short steady-state trace, the run also starts cold and takes its
# interrupts when they come; the check above holds those to code that runs.)
compared = 0
for side, name in (("misses_a", "icache-baseline"), ("misses_b", "icache-padded")):
    lay = json.loads((WORK / f"{name}-layout.json").read_text())
    sets = {c["set"]: c["lines"] for c in lay["before"]["conflicts"]}
    for s in e["icache_sets"]:
        if s[side] <= 0 or s["set"] not in sets:
            continue
        lines = sets[s["set"]]
        listed = {y for line in lines for y in line["symbol"].split(",")}
        missing = {y for line in lines if line["misses_per_packet"] > 0
                   for y in line["symbol"].split(",")}
        check(missing <= set(s["symbols"]),
              f"{name}: set {s['set']}: explain names {s['symbols']}, layout finds "
              f"{sorted(missing)} missing (of {sorted(listed)})")
        compared += 1
check(compared >= 4, f"only {compared} sets in both explain and layout")
# The sets of the report: in the padded layout, 36, 38 and 40 hold free,
# rt_check and uma_zalloc_arg, and nothing of udp_input.
for s in e["icache_sets"]:
    if s["set"] in (36, 38, 40):
        check(s["symbols"] == ["free", "rt_check", "uma_zalloc_arg"],
              f"set {s['set']}: {s['symbols']}")

finish()
