#!/usr/bin/python3
"""simloop explain across stacks lines functions up by role: the BSD seed
(seed-athlon) against the Linux loopback run puts BSD's udp_output and
Linux's udp_sendmsg in one row, every function of each run is in exactly
one role row, the rows sum to the functions' totals, and the table shows
the rows with each side's functions. Between runs of one stack the table
has no such section.

    explain_roles_test.py SIMLOOP SOURCE_DIR WORK_DIR
"""
import json
import pathlib
import re
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, SRC, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
WORK.mkdir(parents=True, exist_ok=True)
PACKETS = "workload.packets=4000"


def simloop(*args):
    p = subprocess.run([SIMLOOP, "-q", *args], cwd=SRC, capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        sys.exit(f"simloop {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p


def near(a, b, scale):
    return abs(a - b) <= 1e-6 * max(1.0, abs(scale))


# Each side run once, so the test knows every function each result lists.
results = {}
for name in ("seed-athlon", "linux-loopback"):
    simloop("run", f"experiments/{name}.yaml", "--set", PACKETS, "-o", str(WORK / name))
    results[name] = next((WORK / name).glob("*.json"))
p = simloop("explain", str(results["seed-athlon"]), str(results["linux-loopback"]), "-o",
            str(WORK / "explain.json"))
e = json.loads((WORK / "explain.json").read_text())
fns = {n: [f["function"] for f in json.loads(path.read_text())["functions"]]
       for n, path in results.items()}

check(e["stacks"] == ["bsd", "linux"], f"the sides' stacks: {e['stacks']}")
rows = e["roles"]
row_of = {}
for side, key, name in (("A", "a_functions", "seed-athlon"), ("B", "b_functions", "linux-loopback")):
    seen = [f["function"] for r in rows for f in r[key]]
    for f in seen:
        row_of.setdefault((side, f), [r["role"] for r in rows if f in [g["function"] for g in r[key]]])
    check(sorted(seen) == sorted(fns[name]),
          f"{side}: each function of {name} is in exactly one role row: "
          f"missing {sorted(set(fns[name]) - set(seen))}, "
          f"twice {sorted({f for f in seen if seen.count(f) > 1})}, "
          f"not its {sorted(set(seen) - set(fns[name]))}")
check(row_of.get(("A", "udp_output")) == ["UDP output"]
      and row_of.get(("B", "udp_sendmsg")) == ["UDP output"],
      f"udp_output and udp_sendmsg in the UDP output row: {row_of.get(('A', 'udp_output'))}, "
      f"{row_of.get(('B', 'udp_sendmsg'))}")
expect = {("A", "sendto"): "system call", ("B", "__sys_sendto"): "system call",
          ("B", "ip_route_output_flow"): "route", ("A", "ip_output"): "IP output",
          ("B", "ip_output"): "IP output", ("A", "looutput"): "device",
          ("B", "loopback_xmit"): "device", ("A", "netisr_dispatch"): "softirq",
          ("B", "net_rx_action"): "softirq", ("A", "udp_input"): "UDP input",
          ("B", "udp_rcv"): "UDP input", ("A", "soreceive"): "receive",
          ("B", "udp_recvmsg"): "receive", ("B", "__alloc_skb"): "buffers",
          ("A", "mbuf_alloc"): "buffers", ("B", "kmem_cache_alloc"): "buffers"}
for (side, f), role in expect.items():
    check(row_of.get((side, f)) == [role], f"{side}: {f} in {role}, not {row_of.get((side, f))}")
check(all(r["role"] != "other" for r in rows), "every function of both stacks says its role")

# The rows sum to the functions' totals, each row to its functions, and the
# kpps parts (with the clock's) to the change in rate.
cpp = e["b"]["cycles_per_packet"]
for k in ("a", "b", "delta"):
    check(near(sum(r[k] for r in rows), sum(f[k] for f in e["functions"]), cpp),
          f"role rows sum to the function lines' {k}")
check(near(sum(r["a"] for r in rows), e["a"]["cycles_per_packet"], cpp), "rows sum to A's cycles")
check(near(sum(r["b"] for r in rows), cpp, cpp), "rows sum to B's cycles")
for r in rows:
    for k, key in (("a", "a_functions"), ("b", "b_functions")):
        check(near(sum(f["cycles"] for f in r[key]), r[k], cpp), f"{r['role']}: {k} is its functions'")
check(near(e["clock_kpps"] + sum(r["kpps"] for r in rows), e["delta"]["kpps"], e["a"]["kpps"]),
      "role kpps parts sum to the kpps change")
for f in e["functions"]:
    check(f.get("role") not in (None, "other"), f"{f['function']}: its role in the function lines")

# The table: the section, a row per role, each side's functions under it.
text = p.stdout
check("by role across stacks" in text, f"the table has the role section:\n{text}")
section = text.split("by role across stacks", 1)[-1].split("\nby function", 1)[0]
m = re.search(r"\n  UDP output .*\n    A  (.*)\n    B  (.*)\n", section)
check(m is not None and "udp_output" in m.group(1) and "udp_sendmsg" in m.group(2),
      f"the UDP output row lists udp_output (A) and udp_sendmsg (B):\n{section}")
check(re.search(r"\n  route .*\n    A  \(none\)\n", section) is not None,
      f"BSD has no route function of its own (ip_output looks it up):\n{section}")

# One stack on both sides: no role section (the function lines line up by name).
same = simloop("explain", "experiments/seed-athlon.yaml", "--set", PACKETS, "--b-set", "machine.clock_hz=3e9")
check("by role" not in same.stdout and "by function" in same.stdout,
      f"one stack: no role section:\n{same.stdout}")
finish()
