#!/usr/bin/python3
"""Each stack's outputs speak its own words.

A Linux run's outputs (the table and breakdown simloop run prints, the CSV,
the JSON, the long CSV, the trace, simloop explain's table and JSON, the
plots drawn from them) hold no word only the BSD stack has: its mbufs, its
netisr, its sockbuf, its loop copy (m_copy, m_dup). A BSD run's outputs
still hold them. Rows of both stacks in one CSV, whether one file with the
union of their columns or two files plotted together, draw each stage once,
in the same colour under either stack's name.

    stack_words_test.py SIMLOOP SOURCE_DIR WORK_DIR
"""
import csv
import json
import pathlib
import re
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, SRC, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
WORK.mkdir(parents=True, exist_ok=True)

# Words of the BSD stack alone (its structures and functions), as outputs
# would quote them.
BSD_ONLY = re.compile(r"mbuf|netisr|sockbuf|socket buffer|m_copy|m_dup")


def simloop(*args):
    p = subprocess.run([SIMLOOP, "-q", *args], cwd=SRC, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"simloop {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p.stdout


def run(name, exp, sets):
    """Runs `exp`, returns {output name: its text}: what it printed and every
    file it wrote (result CSV and JSON, long CSV, trace)."""
    out = WORK / name
    args = ["run", exp, "-o", str(out), "--long", "--trace", str(out / "trace.json")]
    for s in sets:
        args += ["--set", s]
    texts = {"stdout": simloop(*args)}
    for f in sorted(out.iterdir()):
        texts[f.name] = f.read_text()
    return texts


def bsd_words(texts):
    return sorted({m.group(0) for t in texts.values() for m in BSD_ONLY.finditer(t)})


def result_csv(name):
    return next(p for p in (WORK / name).glob("*.csv") if not p.name.endswith("-long.csv"))


LINUX = "experiments/linux-loopback.yaml"
BSD = "experiments/seed-athlon.yaml"
linux_runs = {
    # With a receiver, through the softirq; on the wire with interrupts and a
    # full send buffer the sender waits on; broadcast, a clone looped back.
    "linux-loopback": ["workload.packets=3000"],
    "linux-wire": ["workload.packets=3000", "workload.dest=wire", "workload.payload=1472",
                   "interrupts.enabled=true"],
    "linux-broadcast": ["workload.packets=3000", "workload.dest=broadcast", "interrupts.enabled=true"],
    # No receiver: the receive buffer fills and drops.
    "linux-rcvbuf": ["workload.packets=3000", "workload.receive=false"],
}
for name, sets in linux_runs.items():
    texts = run(name, LINUX, sets)
    check(not bsd_words(texts), f"{name}: no BSD word in its outputs ({bsd_words(texts)}): " +
          "; ".join(f"{k}: {BSD_ONLY.search(v).group(0)!r} at {BSD_ONLY.search(v).start()}"
                    for k, v in texts.items() if BSD_ONLY.search(v)))
    header = next(csv.reader(open(result_csv(name))))
    check({"cycles_skb", "cycles_softirq", "drop_backlog_full", "drop_rcvbuf_full"} <= set(header)
          and "copy" not in header, f"{name}: the CSV names Linux's stages and drops, and no copy ({header})")
    check("  skb " in texts["stdout"], f"{name}: the breakdown says skb:\n{texts['stdout']}")

# The trace's counters: the send buffer a blocked sender waits on fills on
# the wire; the backlog and receive queue are Linux's queues.
trace = json.loads((WORK / "linux-wire" / "trace.json").read_text())
counters = {e["name"] for e in trace["traceEvents"] if e["ph"] == "C"}
check(counters == {"NIC ring", "backlog", "receive queue", "send buffer"},
      f"linux-wire: the trace counts Linux's queues ({sorted(counters)})")
sndbuf = max((e["args"]["bytes"] for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == "send buffer"),
             default=0)
row = json.loads((WORK / "linux-wire" / "linux-loopback.json").read_text())["result"]
check(sndbuf >= 212992 and row["sleep_s"] > 0,
      f"linux-wire: the send buffer fills to its 212992 bytes ({sndbuf}) and the sender waits ({row['sleep_s']} s)")
rows = list(csv.DictReader(open(result_csv("linux-rcvbuf"))))
check(int(rows[0]["drop_rcvbuf_full"]) > 0, f"linux-rcvbuf: a full receive buffer drops ({rows[0]})")

# explain of two Linux runs, its table and its JSON.
e_json = WORK / "explain-linux.json"
out = simloop("explain", LINUX, LINUX, "--set", "workload.packets=3000", "--b-set", "workload.payload=512",
              "-o", str(e_json))
check(not BSD_ONLY.search(out + e_json.read_text()), f"explain of Linux runs: no BSD word:\n{out}")
named = {s["stage"] for s in json.loads(e_json.read_text())["stages"]}
check({"skb", "softirq"} <= named, f"explain of Linux runs: its stages are Linux's ({sorted(named)})")

# A BSD run's outputs keep its words.
texts = run("bsd-loopback", BSD, ["workload.packets=3000", "workload.dest=loopback", "workload.receive=true"])
words = bsd_words(texts)
check({"mbuf", "netisr", "sockbuf", "m_copy", "socket buffer"} <= set(words),
      f"bsd-loopback: its outputs say mbuf, netisr, sockbuf, m_copy ({words})")
header = next(csv.reader(open(result_csv("bsd-loopback"))))
check({"cycles_mbuf", "cycles_netisr", "copy", "drop_netisr_full"} <= set(header) and "cycles_skb" not in header,
      f"bsd-loopback: the CSV's columns are the BSD stack's ({header})")

# explain of a BSD run against a Linux one names a stage by both words.
out = simloop("explain", "experiments/validation/linux/bsd-epyc.yaml", LINUX, "--set", "workload.packets=3000")
check("mbuf/skb" in out and "netisr/softirq" in out, f"explain BSD against Linux: both words:\n{out}")


def breakdown(name, *files):
    desc = WORK / f"{name}.describe.json"
    simloop("plot", *map(str, files), "--kind", "breakdown", "-o", str(WORK / name), "--describe", str(desc))
    panel = json.loads(desc.read_text())["panels"][0]
    return {b["stage"]: b for b in panel["bars"]}, panel["legend"]


# Plots of each stack alone, then of both: two files in either order, and
# one file holding the union of their columns (each row empty where its
# stack has no such column), as a CSV tool that joins them writes it.
bsd_csv, linux_csv = result_csv("bsd-loopback"), result_csv("linux-loopback")
bsd_bars, _ = breakdown("plot-bsd", bsd_csv)
linux_bars, legend = breakdown("plot-linux", linux_csv)
check("skb" in linux_bars and "softirq" in linux_bars and not BSD_ONLY.search(" ".join(legend)),
      f"the Linux breakdown's stages are Linux's ({legend})")
check(linux_bars["skb"]["colour"] == bsd_bars["mbuf"]["colour"]
      and linux_bars["softirq"]["colour"] == bsd_bars["netisr"]["colour"],
      "a stage has one colour under either stack's word")
union = WORK / "union.csv"
cols, all_rows = [], []
for f in (bsd_csv, linux_csv):
    for r in csv.DictReader(open(f)):
        all_rows.append(r)
        cols += [k for k in r if k not in cols]
with open(union, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    w.writerows(all_rows)
for name, files in {"plot-union": [union], "plot-bsd-linux": [bsd_csv, linux_csv],
                    "plot-linux-bsd": [linux_csv, bsd_csv]}.items():
    bars, legend = breakdown(name, *files)
    first = 0 if files[0] != linux_csv else 1  # the BSD bar's index
    check("mbuf/skb" in bars and "netisr/softirq" in bars and "mbuf" not in bars and "skb" not in bars,
          f"{name}: one layer a stage, named by both stacks ({legend})")
    if "mbuf/skb" in bars:
        vals = bars["mbuf/skb"]["values"]
        bsd_v, linux_v = vals[first], vals[1 - first]
        check(abs(bsd_v - bsd_bars["mbuf"]["values"][0]) < 1e-6
              and abs(linux_v - linux_bars["skb"]["values"][0]) < 1e-6
              and bars["mbuf/skb"]["colour"] == bsd_bars["mbuf"]["colour"],
              f"{name}: each row's own column, in the stage's colour ({vals})")
    totals = [sum(b["values"][i] for b in bars.values()) for i in range(2)]
    want = [sum(b["values"][0] for b in bsd_bars.values()), sum(b["values"][0] for b in linux_bars.values())]
    if first == 1:
        want.reverse()
    check(all(abs(t - w) < 1e-6 * w for t, w in zip(totals, want)),
          f"{name}: each bar holds its run's cycles ({totals} against {want})")

# The timeline of a Linux trace: its stages in their colours, its counters.
desc = WORK / "timeline.describe.json"
simloop("plot", str(WORK / "linux-wire" / "trace.json"), "-o", str(WORK / "timeline"), "--describe", str(desc))
d = json.loads(desc.read_text())
stages = d["panels"][0]["stages"]
check(stages.get("skb") == bsd_bars["mbuf"]["colour"] and not BSD_ONLY.search(json.dumps(d)),
      f"the Linux timeline: skb in the mbuf stage's colour, no BSD word ({stages})")

finish()
