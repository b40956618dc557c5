#!/usr/bin/python3
"""Each stack takes the payloads it carries, and refuses the others naming
workload.payload: the Linux stack sends up to IP's largest datagram (65507
B) through lo, a device's datagrams up to its MTU; the BSD stack up to a
jumbo frame's payload (9188 B). The datagrams that arrive are whole.

    payload_limits_test.py SIMLOOP ROOT OUTDIR
"""
import csv
import pathlib
import subprocess
import sys

simloop, root, out = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
problems = []


def run(exp, sets, expect):
    args = [simloop, "-q", "run", str(root / "experiments" / exp), "-o", str(out)]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if p.returncode != expect:
        problems.append(f"{' '.join(sets)}: exit {p.returncode}, expected {expect}: {p.stderr}")
    return p


def row(name):
    return list(csv.DictReader(open(out / f"{name}.csv")))[0]


# Linux: lo and the host's own address carry IP's largest datagram, whole.
for dest in ("loopback", "self"):
    for payload in (9189, 30000, 65507):
        run("linux-loopback.yaml", [f"workload.dest={dest}", f"workload.payload={payload}",
                                    "workload.packets=3000"], 0)
        r = row("linux-loopback")
        if r["outcome"] != "ok" or int(r["delivered"]) != 3000 or \
                int(r["delivered_bytes"]) != 3000 * payload:
            problems.append(f"linux {dest} {payload} B: outcome {r['outcome']}, delivered "
                            f"{r['delivered']} ({r['delivered_bytes']} B)")
# One byte more than IP carries: refused by the key's range.
p = run("linux-loopback.yaml", ["workload.payload=65508"], 2)
if "workload.payload" not in p.stderr or "65507" not in p.stderr:
    problems.append(f"65508 B not refused at workload.payload: {p.stderr}")
# A device's path: its MTU, and no fragmentation.
for dest in ("wire", "broadcast"):
    run("linux-loopback.yaml", [f"workload.dest={dest}", "workload.payload=1472",
                                "workload.packets=3000"], 0)
    p = run("linux-loopback.yaml", [f"workload.dest={dest}", "workload.payload=1473"], 2)
    if "options.ether_mtu" not in p.stderr or "fragmentation" not in p.stderr:
        problems.append(f"linux {dest} 1473 B: not refused for the MTU: {p.stderr}")
# BSD: a jumbo frame's payload and no more, on every path.
for dest in ("loopback", "wire"):
    run("seed-athlon.yaml", [f"workload.dest={dest}", "options.ether_mtu=9216",
                             "workload.payload=9188", "workload.packets=3000"], 0)
    p = run("seed-athlon.yaml", [f"workload.dest={dest}", "options.ether_mtu=9216",
                                 "workload.payload=9189"], 2)
    if "workload.payload" not in p.stderr or "bsd stack" not in p.stderr:
        problems.append(f"bsd {dest} 9189 B: not refused naming the stack: {p.stderr}")
for pr in problems:
    print(pr)
sys.exit(1 if problems else 0)
