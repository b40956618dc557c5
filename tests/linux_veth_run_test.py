#!/usr/bin/python3
"""simloop run of the Linux stack to a veth peer (workload.dest veth).

Checks what a user reads: every datagram delivered with its bytes, on the
default run and beside it (interrupts on, ten times the packets, a
connected sender); veth_xmit and the input route once per datagram and no
loopback_xmit; a payload over the pair's MTU refused with exit 2 naming the
key, and accepted once options.linux.veth_mtu makes room.
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def run(simloop, exp, sets):
    with tempfile.TemporaryDirectory() as d:
        cmd = [simloop, "-q", "run", exp, "-o", d]
        for s in sets:
            cmd += ["--set", s]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            return p.returncode, p.stderr, None
        name = [f for f in os.listdir(d) if f.endswith(".json")][0]
        with open(os.path.join(d, name)) as f:
            return 0, p.stderr, json.load(f)


def costs(exp):
    """The fixed cycles per call of the experiment's Linux profile: the run's
    cycles per packet over them is each function's calls per datagram."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(exp)))
    text = open(os.path.join(root, "configs", "stacks", "linux-epyc-stack.yaml")).read()
    return {m[1]: float(m[2]) for m in re.finditer(r"^  (\w+): ([0-9.]+)", text, re.M)}


def main(simloop, exp):
    bad = []
    cost = costs(exp)
    base = ["workload.dest=veth", "workload.payload=1000", "workload.packets=5000"]
    cases = {"default": [], "interrupts on": ["interrupts.enabled=true"],
             "10x packets": ["workload.packets=50000"],
             "connected": ["workload.connected=true"]}
    per_call = {}
    for name, extra in cases.items():
        rc, err, j = run(simloop, exp, base + extra)
        if rc != 0:
            bad.append(f"{name}: exit {rc}: {err.strip()}")
            continue
        res = j["result"]
        n = 50000 if name == "10x packets" else 5000
        if res["delivered"] < n or res["delivered_bytes"] != res["delivered"] * 1000:
            bad.append(f"{name}: {res['delivered']} delivered ({res['delivered_bytes']} B) "
                       f"of {n}")
        calls = {f["function"]: f["event"] / cost[f["function"]] for f in j["functions"]
                 if cost.get(f["function"])}
        per_call[name] = calls
        for fn in ("veth_xmit", "ip_route_input_noref", "__netif_rx", "process_backlog"):
            c = calls.get(fn)
            if c is None or abs(c - 1) > 0.01:
                bad.append(f"{name}: {fn} {c} calls per datagram, expected 1")
        for fn in ("loopback_xmit",):
            if calls.get(fn, 0):
                bad.append(f"{name}: {fn} runs ({calls[fn]} per datagram)")
        want_route = 0 if name == "connected" else 1
        got = calls.get("ip_route_output_flow", 0) or 0
        if abs(got - want_route) > 0.01:
            bad.append(f"{name}: ip_route_output_flow {got} per datagram, expected {want_route}")
    rc, err, _ = run(simloop, exp, ["workload.dest=veth", "workload.payload=1473"])
    if rc != 2 or "workload.payload" not in err or "options.linux.veth_mtu (1500)" not in err:
        bad.append(f"1473 B over a 1500-byte veth: exit {rc}, {err.strip()!r}")
    rc, err, j = run(simloop, exp, ["workload.dest=veth", "workload.payload=1473",
                                    "options.linux.veth_mtu=9000", "workload.packets=2000"])
    if rc != 0 or j["result"]["delivered"] < 2000:
        bad.append(f"1473 B over a 9000-byte veth: exit {rc} {err.strip()}")
    for b in bad:
        print("FAIL", b)
    print(f"{len(cases)} veth runs and 2 MTU cases checked")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
