#!/usr/bin/env python3
"""simloop run with UDP GSO, on a path beside the validation's: a connected
socket, interrupts on, and ten times the packets. Every datagram is
delivered and counted (packets are datagrams, not sends), the new
functions are priced as often as the stack calls them (__udp_gso_segment
once per send of N, skb_segment once per datagram), the rate holds when
the run is ten times longer, and GSO raises it.
Usage: linux_gso_run_test.py SIMLOOP SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile

simloop, src = sys.argv[1], sys.argv[2]
exp = os.path.join(src, "experiments", "linux-loopback.yaml")
stack = os.path.join(src, "configs", "stacks", "linux-epyc-stack.yaml")
PAYLOAD, N, PACKETS = 300, 8, 20000


def cost(fn):
    with open(stack) as f:
        for line in f:
            if line.startswith(f"  {fn}:"):
                return float(line.split(":")[1].split("#")[0])
    sys.exit(f"{fn}: no cost in {stack}")


def run(segments, packets):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [simloop, "-q", "run", exp, "-o", tmp, "--set", f"workload.payload={PAYLOAD}",
               "--set", f"workload.packets={packets}", "--set", "workload.connected=true",
               "--set", "interrupts.enabled=true", "--set", f"options.linux.udp_segment={segments}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr}")
        with open(os.path.join(tmp, "linux-loopback.json")) as f:
            return json.load(f)


failed = []
short, long_, plain = run(N, PACKETS), run(N, 10 * PACKETS), run(1, PACKETS)
for j, packets in ((short, PACKETS), (long_, 10 * PACKETS), (plain, PACKETS)):
    res = j["result"]
    if res["packets"] != packets or res["delivered"] != packets:
        failed.append(f"{packets} packets: {res['packets']} counted, {res['delivered']} delivered")
    if res["delivered_bytes"] != packets * PAYLOAD:
        failed.append(f"{packets} packets: {res['delivered_bytes']} bytes delivered")
fns = {f["function"]: f["cycles_per_packet"] for f in long_["functions"]}
for fn, per in (("__udp_gso_segment", 1 / N), ("skb_segment", 1.0)):
    want = cost(fn) * per
    if abs(fns.get(fn, 0) - want) > 1e-6 * max(want, 1):
        failed.append(f"{fn}: {fns.get(fn, 0)} cycles per datagram, expected {want}")
k_short, k_long = short["result"]["kpps"], long_["result"]["kpps"]
if abs(k_long - k_short) > 0.005 * k_short:
    failed.append(f"kpps {k_short} over {PACKETS} packets, {k_long} over ten times as many")
if not k_short > 1.5 * plain["result"]["kpps"]:
    failed.append(f"GSO of {N}: {k_short} kpps, without it {plain['result']['kpps']}")
for f in failed:
    print("FAIL " + f)
print("ok" if not failed else "")
sys.exit(1 if failed else 0)
