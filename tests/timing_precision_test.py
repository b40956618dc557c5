#!/usr/bin/python3
"""A run's results are the engine's, not SimGrid's rounding of time.

SimGrid ends every activity that finishes within its timing precision
(surf/precision, 1e-9 s by default) of another at the same instant. The
host's CPU must not depend on it: an interrupt that comes due a fraction
of a nanosecond before the sender's batch ends still preempts the batch,
and one due is served by one handler. So every case below gives the same
row, bit for bit but for wall time, at the default precision and at
1e-18 s. The cases put interrupts close to batch ends: moderation as
shipped (200k packets), one per frame, long handlers that overlap the next due with a
batch of one datagram, ENOBUFS sleeps, and the Linux stack's blocking sends.

usage: timing_precision_test.py SIMLOOP SOURCE_DIR WORK_DIR"""
import csv
import os
import shutil
import subprocess
import sys

simloop, src, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
SEED = os.path.join(src, "experiments", "seed-athlon.yaml")
NETMAP = os.path.join(src, "experiments", "netmap-2012.yaml")
LINUX = os.path.join(src, "experiments", "linux-loopback.yaml")
CASES = {
    "seed": (SEED, ["workload.packets=200000"]),
    "per-frame": (SEED, ["interrupts.moderation.interval_s=0"]),
    "long-handler": (NETMAP, ["interrupts.enabled=true", "interrupts.moderation.interval_s=20e-6",
                              "interrupts.handler_cycles=50000", "engine.max_batch=1"]),
    "enobufs": (SEED, ["options.nic_ring=8", "workload.enobufs_sleep_s=1e-5"]),
    "linux-blocking": (LINUX, ["workload.dest=wire", "options.linux.sndbuf=4000",
                               "workload.link.bandwidth_bps=1e8", "interrupts.enabled=true",
                               "interrupts.moderation.interval_s=0",
                               "interrupts.handler_cycles=2000"]),
}
failures = []


def row(name, exp, sets, precision):
    out = os.path.join(work, f"{name}-{precision}")
    args = [simloop, "-q", "run", exp, "-o", out]
    for s in ["workload.packets=20000"] + sets:
        args += ["--set", s]
    if precision:
        args.append(f"--cfg=surf/precision:{precision}")
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    [f] = [f for f in os.listdir(out) if f.endswith(".csv")]
    with open(os.path.join(out, f)) as fh:
        [r] = list(csv.DictReader(fh))
    r.pop("wall_s")
    return r


for name, (exp, sets) in CASES.items():
    a, b = row(name, exp, sets, None), row(name, exp, sets, "1e-18")
    if int(a["interrupts"]) == 0:
        failures.append(f"{name}: no interrupts ran, so the case tests nothing")
    diff = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
    if diff:
        failures.append(f"{name}: default precision against 1e-18 s: {diff}")
    print(f"{name}: {a['kpps']} kpps, {a['interrupts']} interrupts, same at both precisions: "
          f"{not diff}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
