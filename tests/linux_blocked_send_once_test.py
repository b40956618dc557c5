#!/usr/bin/python3
"""A Linux send that blocks for send space runs once: Linux sleeps inside
the call (sock_alloc_send_pskb) and goes on, so each function of the send
path, the sender's loop and the system call's entry and exit are charged
once per datagram, as on a run where no send blocks. The wait shows as
the CPU's idle time.

    linux_blocked_send_once_test.py SIMLOOP EXPERIMENT OUTDIR
"""
import csv
import pathlib
import subprocess
import sys

simloop, exp, out = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
SEND_STAGES = {"socket", "udp", "ip", "ether"}
problems = []


def run(tag, sets):
    d = out / tag
    args = [simloop, "-q", "run", exp, "--long", "-o", str(d), "--set", "workload.dest=wire",
            "--set", "workload.packets=20000"]
    for s in sets:
        args += ["--set", s]
    subprocess.run(args, check=True, capture_output=True, timeout=300)
    row = next(csv.DictReader(open(d / "linux-loopback.csv")))
    events = {r["function"]: float(r["value"])
              for r in csv.DictReader(open(d / "linux-loopback-long.csv"))
              if r["metric"] == "cycles_event"}
    return row, events


for irq in ("false", "true"):
    base_row, base = run(f"free-{irq}", ["workload.payload=18", f"interrupts.enabled={irq}"])
    for payload in (785, 1472, 8000):
        sets = [f"workload.payload={payload}", f"interrupts.enabled={irq}"]
        if payload > 1472:
            sets.append("options.ether_mtu=9000")
        row, ev = run(f"blocked-{irq}-{payload}", sets)
        what = f"{payload} B, interrupts {irq}"
        # Every send blocks: the CPU is idle most of the run, waiting.
        cpp = float(row["cycles_per_packet"])
        if float(row["cycles_sleep"]) < 0.3 * cpp:
            problems.append(f"{what}: sends do not block (sleep {row['cycles_sleep']} of {cpp})")
        for fn in ["user_loop", "syscall_entry", "syscall_exit", "__sys_sendto", "udp_sendmsg",
                   "ip_route_output_flow", "ip_make_skb", "__ip_append_data", "udp_send_skb",
                   "ip_send_skb", "ip_output"]:
            if abs(ev.get(fn, 0) - base.get(fn, 0)) > 1e-6 * max(1.0, base.get(fn, 0)):
                problems.append(f"{what}: {fn} charged {ev.get(fn, 0)} cycles a datagram, "
                                f"{base.get(fn, 0)} when no send blocks")
        if base_row["cycles_sleep"] not in ("0", "0.0") and float(base_row["cycles_sleep"]) > 0.05 * \
                float(base_row["cycles_per_packet"]):
            problems.append(f"18 B, interrupts {irq}: the reference run blocks too")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
