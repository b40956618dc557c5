#!/usr/bin/python3
"""interval_kpps_cv measures how the send rate moves over equal slices of a
run, so for a steady run it stays small and does not grow with the run's
length: on every destination (wire, loopback, self, broadcast), at 20k,
100k and 200k packets, with an interrupt per completion and with interrupts
off. A run that sleeps on ENOBUFS (1472-byte datagrams on the wire) is
bursty, but its cv must not grow with length either: longer slices average
over more sleeps.

usage: interval_cv_test.py SIMLOOP SOURCE_DIR WORK_DIR"""
import csv
import os
import shutil
import subprocess
import sys

simloop, src, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
experiment = os.path.join(src, "experiments", "seed-athlon.yaml")
SIZES = (20000, 100000, 200000)
STEADY_CV = 0.01  # a steady run: the rate moves by well under 1 % between slices
failures = []


def run(packets, *sets):
    out = os.path.join(work, f"{packets}-{'-'.join(sets)}".replace("=", "_"))
    args = [simloop, "-q", "run", experiment, "-o", out, "--set", "interrupts.moderation.interval_s=0",
            "--set", f"workload.packets={packets}"]
    for s in sets:
        args += ["--set", s]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"simloop run {' '.join(sets)} at {packets} packets: exit status {r.returncode}\n"
                 f"{r.stderr}")
    with open(os.path.join(out, "seed-athlon.csv")) as f:
        row = next(csv.DictReader(f))
    return float(row["interval_kpps_cv"]), float(row["kpps"]), int(row["enobufs"])


for dest in ("wire", "loopback", "self", "broadcast"):
    # Interrupts on (one per completion) and off (the driver reaps as it queues).
    for irq in ("interrupts.enabled=true", "interrupts.enabled=false"):
        cvs = {}
        what = f"{dest} irq {'on' if irq.endswith('true') else 'off'}"
        for n in SIZES:
            cv, kpps, enobufs = run(n, f"workload.dest={dest}", irq)
            cvs[n] = cv
            print(f"{what:18} {n:7} packets: {kpps:9.3f} kpps, interval_kpps_cv {cv:.3g}, "
                  f"ENOBUFS {enobufs}")
            if enobufs != 0:
                failures.append(f"{what} {n}: {enobufs} ENOBUFS: not the steady run this test needs")
            if cv > STEADY_CV:
                failures.append(f"{what} {n}: cv {cv:.3g} > {STEADY_CV} for a steady run")
        base = cvs[SIZES[0]]
        for n in SIZES[1:]:
            # Not growing: at most the shorter run's cv, with room for rounding.
            if cvs[n] > 1.5 * base + 1e-3:
                failures.append(f"{what}: cv grew with run length: {base:.3g} at {SIZES[0]} "
                                f"packets, {cvs[n]:.3g} at {n}")

# Bursty (ENOBUFS sleeps), but no more so in a longer run.
cvs = {}
for n in SIZES:
    cv, kpps, enobufs = run(n, "workload.dest=wire", "workload.payload=1472")
    cvs[n] = cv
    print(f"wire 1472 B {n:7} packets: {kpps:9.3f} kpps, interval_kpps_cv {cv:.3g}, ENOBUFS {enobufs}")
    if enobufs == 0:
        failures.append(f"wire 1472 B {n}: no ENOBUFS: not the sleeping run this case needs")
for n in SIZES[1:]:
    if cvs[n] > 1.5 * cvs[SIZES[0]]:
        failures.append(f"wire 1472 B: cv grew with run length: {cvs[SIZES[0]]:.3g} at {SIZES[0]} "
                        f"packets, {cvs[n]:.3g} at {n}")

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
