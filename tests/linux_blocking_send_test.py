#!/usr/bin/python3
"""A blocking Linux sender on a NIC waits for send space instead of sleeping
as ttcp does on ENOBUFS: MTU-sized and jumbo datagrams on the wire and on
broadcast, with interrupts on and off, leave at the link's rate (within
1 %), with no ENOBUFS; with IP_RECVERR and a tiny ring the device's drops
are real ENOBUFS and ttcp's sleep still follows them.

    linux_blocking_send_test.py SIMLOOP EXPERIMENT WORK_DIR
"""
import csv
import json
import pathlib
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, EXPERIMENT, WORK = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
PREAMBLE_IFG_FCS = 8 + 12 + 4  # bytes a frame takes on the wire beyond its header and data


def run(name, *sets):
    cmd = [SIMLOOP, "-q", "run", EXPERIMENT, "-o", str(WORK / name), "--set", f"name={name}",
           "--set", "workload.packets=20000"]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr}")
    with open(WORK / name / f"{name}.csv", newline="") as f:
        return next(csv.DictReader(f))


for dest in ("wire", "broadcast"):
    for payload, mtu in ((1472, 1500), (8972, 9000)):
        for irq in ("false", "true"):
            name = f"{dest}-{payload}-irq-{irq}"
            r = run(name, f"workload.dest={dest}", f"workload.payload={payload}",
                    f"options.ether_mtu={mtu}", f"interrupts.enabled={irq}")
            frame = 14 + 20 + 8 + payload + PREAMBLE_IFG_FCS
            line_kpps = 1e9 / (8 * frame) / 1e3  # the experiment's 1 Gb/s link
            kpps = float(r["kpps"])
            check(abs(kpps - line_kpps) <= 0.01 * line_kpps,
                  f"{name}: {kpps:.2f} kpps, the link carries {line_kpps:.2f}")
            check(r["enobufs"] == "0", f"{name}: {r['enobufs']} ENOBUFS on a blocking socket")

# The trace of a blocked sender shows its waits, never an ENOBUFS the
# application did not see.
trace = WORK / "blocked-trace.json"
p = subprocess.run([SIMLOOP, "-q", "run", EXPERIMENT, "-o", str(WORK / "traced"), "--set",
                    "workload.dest=wire", "--set", "workload.payload=1472", "--set",
                    "workload.packets=2000", "--trace", str(trace)],
                   capture_output=True, text=True, timeout=300)
check(p.returncode == 0, f"traced run: exit {p.returncode}: {p.stderr}")
events = json.loads(trace.read_text())["traceEvents"] if trace.exists() else []
check(not any(e.get("name") == "ENOBUFS" for e in events),
      "the trace marks ENOBUFS where the Linux sender only waited for send space")

r = run("recverr", "workload.dest=wire", "workload.payload=1472", "options.linux.recverr=true",
        "options.nic_ring=8")
check(int(r["enobufs"]) > 0 and float(r["sleep_s"]) > 0,
      f"IP_RECVERR with a full ring: ENOBUFS {r['enobufs']}, asleep {r['sleep_s']} s")
finish()
