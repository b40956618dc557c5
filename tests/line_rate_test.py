#!/usr/bin/python3
"""No run goes faster than its link. Where datagrams go on the wire, a run
counts the frames that left the NIC and ends when the last one has, so its
kpps is at most the line rate: payloads of 18, 512 and 1472 B, on both
stacks, with interrupts off and on, over 1000 and 10000 packets; and
broadcast, and a Linux sender whose tiny ring drops frames it never hears
of (no IP_RECVERR). A run the link holds back goes at the line rate (within
0.1 %), and interrupt_pct is the interrupt stage's share of the cycles.

    line_rate_test.py SIMLOOP SOURCE_DIR WORK_DIR
"""
import json
import pathlib
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, SRC, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
STACKS = {"bsd": SRC / "experiments" / "seed-athlon.yaml",
          "linux": SRC / "experiments" / "linux-loopback.yaml"}
ETHER_IP_UDP = 14 + 20 + 8
FCS_PREAMBLE_IFG = 4 + 8 + 12


def run(name, stack, *sets):
    out = WORK / name
    cmd = [SIMLOOP, "-q", "run", str(STACKS[stack]), "-o", str(out), "--set", f"name={name}"]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr}")
    doc = out / f"{name}.json"
    return json.loads(doc.read_text()) if doc.exists() else None


def line_kpps(doc):
    payload = doc["result"]["payload"]
    frame = max(payload + ETHER_IP_UDP, 60) + FCS_PREAMBLE_IFG
    return doc["config"]["workload"]["link"]["bandwidth_bps"] / (8 * frame) / 1e3


def bounded(name, doc):
    if doc is None:
        return
    kpps, line = doc["result"]["kpps"], line_kpps(doc)
    check(kpps <= line * (1 + 1e-9), f"{name}: {kpps:.6f} kpps, above the line rate {line:.6f}")
    # Every cycle of a handler is in the interrupt stage (no cache model here).
    r = doc["result"]
    share = 100 * r["cycles_interrupt"] / r["cycles_per_packet"]
    check(abs(r["interrupt_pct"] - share) <= 1e-6 * max(1, share),
          f"{name}: interrupt_pct {r['interrupt_pct']} against cycles_interrupt's share {share}")
    return kpps, line


for stack in STACKS:
    for payload in (18, 512, 1472):
        for irq in ("false", "true"):
            for packets in (1000, 10000):
                name = f"{stack}-{payload}-irq-{irq}-{packets}"
                doc = run(name, stack, "workload.dest=wire", f"workload.payload={payload}",
                          f"interrupts.enabled={irq}", f"workload.packets={packets}")
                got = bounded(name, doc)
                # The Linux sender blocks for send space: at 1472 B the link
                # holds it back, and it goes at the link's rate.
                if got and stack == "linux" and payload == 1472:
                    check(got[0] >= got[1] * 0.999, f"{name}: {got[0]:.3f} kpps, the link "
                          f"carries {got[1]:.3f}")

# Broadcast, on both stacks: the frame leaves as on the wire.
for stack in STACKS:
    name = f"{stack}-broadcast-1472"
    bounded(name, run(name, stack, "workload.dest=broadcast", "workload.payload=1472",
                      "workload.packets=5000"))

# A ring too small for the send buffer: Linux drops frames the sender never
# hears of; they are not sent, and the rate is still the link's at most.
name = "linux-tiny-ring-1472"
doc = run(name, "linux", "workload.dest=wire", "workload.payload=1472", "options.nic_ring=4",
          "workload.packets=5000")
got = bounded(name, doc)
if doc:
    r = doc["result"]
    check(r["drop_nic_full"] > 0 and r["packets"] == 5000 - r["drop_nic_full"],
          f"{name}: packets {r['packets']} are the 5000 sent less the ring's "
          f"{r['drop_nic_full']} drops")

# A CPU-bound run is not slowed by more than the last frame's time on the wire.
name = "bsd-18-cpu-bound"
doc = run(name, "bsd", "workload.packets=20000")
if doc:
    r = doc["result"]
    frame_s = 8 * (60 + FCS_PREAMBLE_IFG) / doc["config"]["workload"]["link"]["bandwidth_bps"]
    check(r["sleep_s"] <= frame_s * (1 + 1e-9),
          f"{name}: waited {r['sleep_s']} s at the end, more than one frame's {frame_s} s")

finish()
