#!/usr/bin/python3
"""options.linux.sendmmsg=N in the engine: the sender's system call entry
and exit, and its user loop, are charged once per N datagrams, each datagram's functions
(udp_sendmsg, ___sys_sendmsg, copy_msghdr_from_user) once per datagram,
__sys_sendto never, and every datagram and byte arrives. Each function
working for a call's later message is charged stack.in_call_factor of its
cycles: 1 gives each datagram the sendto() loop's, 0.5 gives
(1 + (N - 1) / 2) / N of them (on the wire, where the sender sleeps in
calls, between that and the sendto() loop's: a message after a sleep pays
in full). On loopback unconnected and connected, to
the wire with interrupts on, over 10x the packets, and at 2 a call.

    linux_sendmmsg_engine_test.py SIMLOOP EXPERIMENT OUTDIR
"""
import csv
import pathlib
import subprocess
import sys

simloop, exp, out = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
N = 8
PAYLOAD = 100
problems = []


def run(tag, sets):
    d = out / tag
    args = [simloop, "-q", "run", exp, "--long", "-o", str(d),
            "--set", f"workload.payload={PAYLOAD}"]
    for s in sets:
        args += ["--set", s]
    subprocess.run(args, check=True, capture_output=True, timeout=600)
    row = next(csv.DictReader(open(d / "linux-loopback.csv")))
    events = {r["function"]: float(r["value"])
              for r in csv.DictReader(open(d / "linux-loopback-long.csv"))
              if r["metric"] == "cycles_event"}
    return row, events


def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


HALF = 0.5


cases = {
    "loopback": ["workload.packets=20000"],
    "loopback, 2 a call": ["workload.packets=20000"],
    "connected": ["workload.packets=20000", "workload.connected=true"],
    "wire, interrupts on": ["workload.packets=20000", "workload.dest=wire",
                            "interrupts.enabled=true"],
    "10x packets": ["workload.packets=200000"],
}
for what, sets in cases.items():
    n = 2 if "2 a call" in what else N
    tag = what.replace(" ", "-").replace(",", "")
    base, bev = run(f"{tag}-1", sets)
    row, ev = run(f"{tag}-{n}", sets + [f"options.linux.sendmmsg={n}", "stack.in_call_factor=1"])
    _, hev = run(f"{tag}-{n}-half", sets + [f"options.linux.sendmmsg={n}",
                                            f"stack.in_call_factor={HALF}"])
    packets = int(row["packets"])
    if row["outcome"] != "ok":
        problems.append(f"{what}: outcome {row['outcome']} {row.get('detail', '')}")
    # The sender's entry and exit: once a call.
    if not close(float(row["cycles_syscall"]) * n, float(base["cycles_syscall"])):
        problems.append(f"{what}: system call cycles a datagram {row['cycles_syscall']} with "
                        f"sendmmsg={n}, {base['cycles_syscall']} with sendto()")
    if not close(float(row["cycles_user"]) * n, float(base["cycles_user"])):
        problems.append(f"{what}: user loop cycles a datagram {row['cycles_user']} with "
                        f"sendmmsg={n}, {base['cycles_user']} with sendto()")
    # On loopback the softirq and the receiver's read of each message run
    # inside the call, the last message's included.
    receive = [] if "wire" in what else ["net_rx_action", "__netif_receive_skb_core",
                                         "udp_recvmsg"]
    for fn in ["udp_sendmsg", "ip_make_skb", "udp_send_skb"] + receive:
        if not close(ev.get(fn, 0), bev.get(fn, 0)):
            problems.append(f"{what}: {fn} {ev.get(fn, 0)} cycles a datagram with sendmmsg, "
                            f"{bev.get(fn, 0)} with sendto()")
        # A run's window may open inside a call: within a call's worth.
        want = bev.get(fn, 0) * (1 + (n - 1) * HALF) / n
        # On the wire the sender sleeps in calls for send space: the message
        # after a sleep pays in full, so the mean lies between.
        slept = "wire" in what and want * (1 - 1e-3) <= hev.get(fn, 0) <= bev.get(fn, 0)
        if not slept and not close(hev.get(fn, 0), want, 1e-3):
            problems.append(f"{what}: {fn} {hev.get(fn, 0)} cycles a datagram at in_call_factor "
                            f"{HALF}, want {want}")
    if ev.get("__sys_sendto", 0) != 0:
        problems.append(f"{what}: __sys_sendto charged with sendmmsg={n}")
    if ev.get("___sys_sendmsg", 0) <= 0 or ev.get("copy_msghdr_from_user", 0) <= 0:
        problems.append(f"{what}: the per-message functions are not charged")
    if bev.get("___sys_sendmsg", 0) != 0:
        problems.append(f"{what}: ___sys_sendmsg charged with sendto()")
    # Every datagram arrives (on the wire: leaves the NIC; when the run ends
    # the peer lacks only the frames still in flight, which with sendmmsg
    # may be up to a call's n more than with sendto()).
    got = int(row["delivered"])
    if got != packets or ("wire" not in what and int(row["delivered_bytes"]) != packets * PAYLOAD):
        problems.append(f"{what}: {got} of {packets} datagrams, {row['delivered_bytes']} bytes")
    in_flight, base_in_flight = packets - int(row["peer_frames"]), packets - int(base["peer_frames"])
    if "wire" in what and not 0 <= in_flight <= base_in_flight + n:
        problems.append(f"{what}: the peer has {row['peer_frames']} frames of {packets}, "
                        f"{base['peer_frames']} with sendto()")
    if "wire" not in what and row["peer_frames"] != base["peer_frames"]:
        problems.append(f"{what}: the peer has {row['peer_frames']} frames, {base['peer_frames']} "
                        "with sendto()")
    if float(row["kpps"]) <= 0:
        problems.append(f"{what}: no rate")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
