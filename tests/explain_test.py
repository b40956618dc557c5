#!/usr/bin/python3
"""simloop explain end to end: on several pairs of runs, every split of the
difference (stages, functions, kinds of cost, the kpps waterfall) sums to
the total; the waterfall is drawn from a real explanation; bad input exits 2
with a located message.

    explain_test.py SIMLOOP SOURCE_DIR WORK_DIR
"""
import json
import pathlib
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, SRC, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
WORK.mkdir(parents=True, exist_ok=True)



def near(a, b, rel=1e-6, abs_=1e-6):
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def explain(name, args):
    out = WORK / f"{name}.json"
    p = subprocess.run([SIMLOOP, "-q", "explain", *args, "--set", "workload.packets=4000",
                        "-o", str(out)], cwd=SRC, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr}")
    if p.returncode != 0:
        return None, p
    return json.loads(out.read_text()), p


PAIRS = {
    "icache": ["experiments/seed/icache-baseline.yaml", "experiments/seed/icache-padded.yaml"],
    "align": ["experiments/seed/align-copy-copydown.yaml", "experiments/seed/align-none-x86.yaml"],
    "dests": ["experiments/seed-athlon.yaml", "--a-set", "workload.dest=wire",
              "--b-set", "workload.dest=broadcast"],
    "interrupts": ["experiments/seed/icache-baseline.yaml", "--a-set", "interrupts.enabled=true",
                   "--b-set", "interrupts.enabled=false"],
    "loopback-self": ["experiments/seed/icache-padded.yaml", "--a-set", "workload.dest=loopback",
                      "--b-set", "workload.dest=self"],
    "clock": ["experiments/seed-athlon.yaml", "--b-set", "machine.clock_hz=3e9"],
}

for name, args in PAIRS.items():
    e, p = explain(name, args)
    if e is None:
        continue
    dk, dc = e["delta"]["kpps"], e["delta"]["cycles_per_packet"]
    check(near(dk, e["b"]["kpps"] - e["a"]["kpps"]), f"{name}: kpps delta")
    check(near(sum(s["delta"] for s in e["stages"]), dc, abs_=1e-6 * e["b"]["cycles_per_packet"]),
          f"{name}: stages sum to the cycles difference")
    check(near(sum(f["delta"] for f in e["functions"]), dc, abs_=1e-6 * e["b"]["cycles_per_packet"]),
          f"{name}: functions sum to the cycles difference")
    for f in e["functions"]:
        check(near(sum(f["kinds"].values()), f["delta"], abs_=1e-9 * e["b"]["cycles_per_packet"]),
              f"{name}: {f['function']}: kinds sum to its difference")
    kp = e["clock_kpps"] + sum(s["kpps"] for s in e["stages"])
    check(near(kp, dk, abs_=1e-6 * e["a"]["kpps"]), f"{name}: stage kpps parts sum to the kpps change")
    kf = e["clock_kpps"] + sum(x["kpps"] for x in e["parts"])
    check(near(kf, dk, abs_=1e-6 * e["a"]["kpps"]), f"{name}: function parts sum to the kpps change")
    w = e["waterfall"]
    check(near(w["from"] + sum(s["kpps"] for s in w["steps"]), w["to"], abs_=1e-6 * w["from"]),
          f"{name}: the waterfall lands on B")
    check("by stage" in p.stdout and "by function" in p.stdout, f"{name}: the table has its splits")
    if name == "clock":
        check(e["clock_kpps"] > 0, "clock: a faster clock is a part of its own")
    if name == "icache":
        # The padded layout costs I-cache stalls, and the sets that gained
        # misses name their symbols.
        cache = next(s for s in e["stages"] if s["stage"] == "cache")
        check(cache["delta"] > 0, "icache: padding adds cache stalls")
        gained = [s for s in e["icache_sets"] if s["misses_delta"] > 0]
        check(gained and all(s["symbols"] for s in gained), "icache: sets that gained misses, with symbols")
    if name == "interrupts":
        irq = next(s for s in e["stages"] if s["stage"] == "interrupt")
        check(irq["a"] > 0 and irq["b"] == 0, "interrupts: the handler's cycles go away")

# The waterfall from a real explanation.
stem = WORK / "icache-waterfall"
desc = WORK / "icache-waterfall-describe.json"
p = subprocess.run([SIMLOOP, "plot", str(WORK / "icache.json"), "-o", str(stem), "--describe", str(desc)],
                   capture_output=True, text=True, timeout=300)
check(p.returncode == 0, f"waterfall plot: exit {p.returncode}: {p.stderr}")
if p.returncode == 0:
    check(pathlib.Path(f"{stem}.png").stat().st_size > 1000, "waterfall png written")
    check(pathlib.Path(f"{stem}.svg").exists(), "waterfall svg written")
    d = json.loads(desc.read_text())
    bars = d["panels"][0]["bars"]
    e = json.loads((WORK / "icache.json").read_text())
    check(bars[0]["label"] == "A" and bars[-1]["label"] == "B", "waterfall: from A to B")
    check(near(bars[-1]["height"], e["b"]["kpps"]) and near(bars[0]["height"], e["a"]["kpps"]),
          "waterfall: its ends are the two rates")
    check(near(bars[0]["height"] + sum(b["height"] for b in bars[1:-1]), bars[-1]["height"],
               abs_=1e-6 * bars[0]["height"]), "waterfall: the bars between add up")

# Bad input: exit 2, located.
bad = WORK / "bad.json"
bad.write_text('{"result": {"kpps": 1,\n  oops}\n')
p = subprocess.run([SIMLOOP, "explain", str(bad), str(bad)], capture_output=True, text=True)
check(p.returncode == 2 and f"{bad}:2:" in p.stderr, f"bad JSON: exit 2 at line 2 ({p.returncode}: {p.stderr})")
old = WORK / "old.json"
old.write_text(json.dumps({"result": {"kpps": 1.0}}))
p = subprocess.run([SIMLOOP, "explain", str(old), str(old)], capture_output=True, text=True)
check(p.returncode == 2 and "/result/cycles_per_packet" in p.stderr, f"incomplete result: exit 2 ({p.stderr})")
p = subprocess.run([SIMLOOP, "explain", "experiments/seed-athlon.yaml"], cwd=SRC, capture_output=True, text=True)
check(p.returncode == 2 and "two runs" in p.stderr, f"one side only: exit 2 ({p.stderr})")
p = subprocess.run([SIMLOOP, "explain", "experiments/seed-athlon.yaml", "--b-set", "workload.nope=1"],
                   cwd=SRC, capture_output=True, text=True)
check(p.returncode == 2 and "nope" in p.stderr, f"bad --b-set: exit 2 ({p.stderr})")
p = subprocess.run([SIMLOOP, "plot", str(bad)], capture_output=True, text=True)
check(p.returncode == 2 and f"{bad}:1:1:" in p.stderr, f"plot of bad JSON: exit 2 located ({p.stderr})")

finish()
