#!/usr/bin/python3
"""options.linux.nft_rules beside the validated points: the connected path,
interrupts on, ten times the shipped experiment's packets.

Each function's fixed cycles per packet over its price in the profile is its
calls per packet: with N rules, nft_rule_eval runs N times a datagram and
nf_hook_slow and nft_do_chain once; with none, none of them runs, and the
rules cost the rate something. Nothing runs at an undetermined cost.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

RULES = 30


def prices(root):
    out = {}
    with open(os.path.join(root, "configs", "stacks", "linux-epyc-stack.yaml")) as f:
        for line in f:
            m = re.match(r"\s+(\w+):\s*([0-9.]+)", line)
            if m:
                out[m.group(1)] = float(m.group(2))
    return out


def run(simloop, root, rules):
    with tempfile.TemporaryDirectory() as d:
        cmd = [simloop, "-q", "run", os.path.join(root, "experiments", "linux-loopback.yaml"),
               "-o", d, "--set", "workload.connected=true", "--set", "interrupts.enabled=true",
               "--set", "workload.packets=1000000", "--set", f"options.linux.nft_rules={rules}"]
        subprocess.run(cmd, check=True)
        with open(os.path.join(d, "linux-loopback.json")) as f:
            return json.load(f)


def main(simloop, root):
    price = prices(root)
    bad = []
    res = {}
    for n in (0, RULES):
        j = run(simloop, root, n)
        res[n] = j
        fns = {f["function"]: f for f in j["functions"]}
        if j.get("undetermined_costs"):
            bad.append(f"{n} rules: undetermined costs {j['undetermined_costs']}")
        want = {"nf_hook_slow": 1, "nft_do_chain": 1, "nft_rule_eval": RULES} if n else {}
        for fn in ("nf_hook_slow", "nft_do_chain", "nft_rule_eval"):
            got = fns.get(fn, {}).get("event", 0.0) / price[fn] if price.get(fn) else None
            expect = want.get(fn, 0)
            if got is None or abs(got - expect) > 0.01 * max(expect, 1):
                bad.append(f"{n} rules: {fn} runs {got} times a packet, expected {expect}")
    k0, kn = res[0]["result"]["kpps"], res[RULES]["result"]["kpps"]
    print(f"kpps: {k0:.2f} without rules, {kn:.2f} with {RULES}")
    if not kn < k0:
        bad.append(f"{RULES} rules do not lower the rate ({kn} against {k0})")
    for b in bad:
        print("FAIL", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
