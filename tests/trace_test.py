#!/usr/bin/python3
"""simloop run --trace: the Chrome/Perfetto trace of a window of packets.

For several runs (wire with interrupts, broadcast, loopback without
interrupts, a run that sleeps on ENOBUFS, the Linux stack on the wire) the
trace must parse as JSON, its timestamps never run back, its spans nest (a
B/E span never overlaps another but by containing it, on the one CPU
track), and, with the window
covering every packet, the stage slices add up to the run's cycles of each
stage and all slices to the run's simulated time. An interrupts-on run has
interrupt spans; a partial window stays smaller, and no window of a run
that never sleeps has an idle gap. The timeline plot is drawn from a trace.

    trace_test.py SIMLOOP SOURCE_DIR WORK_DIR
"""
import json
import pathlib
import subprocess
import sys
from collections import defaultdict

from checks import check, finish  # tests/checks.py

SIMLOOP, SRC, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
WORK.mkdir(parents=True, exist_ok=True)



def run(name, exp, sets, window=None):
    trace = WORK / f"{name}.json"
    out = WORK / name
    args = [SIMLOOP, "-q", "run", exp, "-o", str(out), "--trace", str(trace)]
    for s in sets:
        args += ["--set", s]
    if window:
        args += ["--trace-window", window]
    p = subprocess.run(args, cwd=SRC, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr}")
    # The result at full precision (the CSV rounds).
    row = json.loads(next(out.glob("*.json")).read_text())["result"]
    return json.loads(trace.read_text()), row


def check_trace(name, t, row, whole):
    ev = [e for e in t["traceEvents"] if e["ph"] != "M"]
    ts = [e["ts"] for e in ev]
    check(all(b >= a - 1e-9 for a, b in zip(ts, ts[1:])), f"{name}: timestamps never run back")
    # Nesting: a stack of open B spans; X slices must lie inside the
    # innermost open span's time and not overlap each other.
    stack, last_end, ok = [], -1.0, True
    for e in ev:
        if e["ph"] == "B":
            stack.append(e)
        elif e["ph"] == "E":
            ok &= bool(stack)
            if stack:
                stack.pop()
        elif e["ph"] == "X":
            ok &= e["ts"] >= last_end - 1e-6 and e["dur"] >= 0
            last_end = e["ts"] + e["dur"]
    check(ok and not stack, f"{name}: spans nest (no overlap, every B has its E)")
    hz = float(row["cycles_per_packet"]) / float(row["ns_per_packet"]) * 1e9
    by_stage = defaultdict(float)
    for e in ev:
        if e["ph"] == "X" and e["cat"] == "stage":
            by_stage[e["name"]] += e["dur"] * 1e-6 * hz
    total_s = sum(by_stage.values()) / hz
    if whole:
        packets = int(row["packets"])
        for k, v in row.items():
            if k.startswith("cycles_") and k != "cycles_per_packet" and isinstance(v, (int, float)):
                want = float(v) * packets
                got = by_stage.get(k[len("cycles_"):], 0.0)
                check(abs(got - want) <= 1e-6 * max(1.0, float(row["cycles_per_packet"]) * packets),
                      f"{name}: {k}: slices {got:.1f} cycles, the run {want:.1f}")
        el = float(row["elapsed_s"])
        check(abs(total_s - el) <= 1e-6 * el, f"{name}: slices {total_s} s, the run {el} s")
    return ev


def idle_gaps(ev):
    """Stretches of the CPU track with nothing on it (µs from, µs to, what
    follows), longer than a nanosecond: a run that never sleeps has none."""
    depth, busy_to, gaps = 0, None, []
    for e in ev:
        if e["ph"] not in ("B", "E", "X"):
            continue
        if depth == 0 and e["ph"] in ("B", "X") and busy_to is not None and e["ts"] - busy_to > 1e-3:
            gaps.append((busy_to, e["ts"], e.get("name", "")))
        if e["ph"] == "B":
            depth += 1
        elif e["ph"] == "E":
            depth -= 1
            if depth == 0:
                busy_to = e["ts"]
        elif depth == 0:
            busy_to = max(busy_to or 0.0, e["ts"] + e["dur"])
    return gaps


cases = {
    "wire-irq": ("experiments/seed-athlon.yaml", ["workload.packets=3000"]),
    "broadcast": ("experiments/seed/icache-padded.yaml", ["workload.packets=3000", "workload.dest=broadcast"]),
    "loopback-noirq": ("experiments/seed/icache-baseline.yaml",
                       ["workload.packets=3000", "workload.dest=loopback", "interrupts.enabled=false"]),
    "enobufs": ("experiments/seed-athlon.yaml",
                ["workload.packets=3000", "workload.payload=1400", "workload.link.bandwidth_bps=1e8"]),
    # The Linux stack, its stages in its own words (cycles_skb, slices skb),
    # its sender waiting for send space.
    "linux-wire": ("experiments/linux-loopback.yaml",
                   ["workload.packets=3000", "workload.dest=wire", "workload.payload=1472",
                    "interrupts.enabled=true"]),
}
traces = {}
for name, (exp, sets) in cases.items():
    t, row = run(name, exp, sets, "0:3000")
    traces[name] = check_trace(name, t, row, whole=True)
    if name == "wire-irq":
        check(any(e["ph"] == "B" and e["name"] == "interrupt" for e in traces[name]),
              "wire-irq: interrupt spans")
        check(any(e["ph"] == "C" and e["name"] == "NIC ring" for e in traces[name]),
              "wire-irq: a NIC ring counter track")
        names = {e.get("name") for e in traces[name] if e["ph"] == "B"}
        check({"sendto()", "sendto", "udp_output", "ip_output", "ether_output"} <= names,
              f"wire-irq: the stack's spans ({sorted(n for n in names if n)})")
    if name == "loopback-noirq":
        check(not any(e["ph"] == "B" and e["name"] == "interrupt" for e in traces[name]),
              "loopback-noirq: no interrupt spans")
        check(any(e["ph"] == "B" and e["name"] == "netisr_dispatch" for e in traces[name]),
              "loopback-noirq: netisr spans")
    if name == "linux-wire":
        check(any(e["ph"] == "X" and e["name"] == "skb" for e in traces[name]), "linux-wire: skb slices")
        check(any(e["ph"] == "X" and e["name"] == "sleep" for e in traces[name]),
              "linux-wire: the sender sleeps for send space")
    if name == "enobufs":
        check(any(e["ph"] == "X" and e["name"] == "sleep" for e in traces[name]), "enobufs: sleep slices")
        check(any(e["ph"] == "i" and e["name"] == "ENOBUFS" for e in traces[name]), "enobufs: instants")

# A partial window: only those packets, far smaller.
t, row = run("window", "experiments/seed-athlon.yaml", ["workload.packets=3000"], "1000:1100")
part = check_trace("window", t, row, whole=False)
check(0 < len(part) < len(traces["wire-irq"]) / 10, "a 100-packet window is a tenth of 3000 packets' trace")
sends = sum(1 for e in part if e["ph"] == "B" and e["name"] == "sendto()"
            and not e.get("args", {}).get("resumed"))
resumed = sum(1 for e in traces["wire-irq"] if e.get("args", {}).get("resumed"))
check(resumed > 0, "wire-irq: handlers cut spans that resume after them")
check(sends == 100, f"window 1000:1100 holds 100 sendto() spans ({sends})")

# No idle gap in a run that never sleeps, whole or in part: a window ends
# with its last packet's work, not with a handler that ran after packets it
# does not hold (which left a gap of 4 to 90 µs before it).
for name in ("wire-irq", "broadcast", "loopback-noirq"):
    check(not idle_gaps(traces[name]), f"{name}: no idle gap ({idle_gaps(traces[name])[:3]})")
for window in ("0:5", "0:20", "100:120", "1000:1100", "0:1000"):
    t, row = run("gap-" + window.replace(":", "-"), "experiments/seed-athlon.yaml",
                 ["workload.packets=3000"], window)
    ev = check_trace(f"window {window}", t, row, whole=False)
    gaps = idle_gaps(ev)
    check(not gaps, f"window {window}: no idle gap, "
          f"{' '.join(f'{b - a:.1f} µs before {n} at {b:.1f} µs' for a, b, n in gaps)}")

# Bad window: exit 2.
p = subprocess.run([SIMLOOP, "run", "--set", "workload.packets=100", "--trace", str(WORK / "x.json"),
                    "--trace-window", "9:3"], cwd=SRC, capture_output=True, text=True)
check(p.returncode == 2 and "--trace-window" in p.stderr, f"bad window exits 2 ({p.returncode}: {p.stderr})")

# The timeline picture from a trace.
p = subprocess.run([SIMLOOP, "plot", str(WORK / "wire-irq.json"), "--kind", "timeline",
                    "-o", str(WORK / "timeline")], capture_output=True, text=True, timeout=300)
check(p.returncode == 0 and (WORK / "timeline.png").stat().st_size > 1000,
      f"timeline plot ({p.returncode}: {p.stderr})")

finish()
