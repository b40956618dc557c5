#!/usr/bin/python3
"""calibrate --source linux on the kept Linux split (measured with the plain
run beside each profiled slice): the totals are the plain run's, said so on
standard output and in the fit's JSON; --totals perf gives perf's own,
higher; a user-space share that getrusage contradicts over the run is
refused; rows from before the plain run fit on perf's totals and say so.

    linux_time_base_test.py SIMLOOP SPLIT_CSV WORK_DIR
"""
import csv
import io
import json
import pathlib
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, SPLIT, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
TRAIN = ["--train", "path=unconnected", "--train", "payload=18,256,1472,12000,40000"]


def calibrate(csv_path, *extra, name="t"):
    out = WORK / name
    r = subprocess.run([SIMLOOP, "calibrate", "--source", "linux", str(csv_path), "-o", str(out),
                        "--name", name, *TRAIN, *extra], capture_output=True, text=True, timeout=300)
    fit = out / f"{name}-fit.json"
    return r, (json.loads(fit.read_text()) if fit.is_file() else None)


def copy_with(rows, fields, name, edit=None, drop=()):
    p = WORK / name
    keep = [f for f in fields if f not in drop]
    with open(p, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keep, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(edit(dict(r)) if edit else r)
    shutil.copy(str(SPLIT) + ".machine.json", str(p) + ".machine.json")
    return p


rows = list(csv.DictReader(io.StringIO(SPLIT.read_text())))
fields = list(rows[0].keys())
check("plain_cpu_ns_per_packet" in fields, f"the kept split has the plain run's columns: {fields}")

r, plain = calibrate(SPLIT, name="plain")
check(r.returncode == 0, f"plain: exit {r.returncode}: {r.stderr[-600:]}")
check("time: perf's shares of the thread CPU time without perf" in r.stdout, f"says its time base: {r.stdout[:400]}")
r, perf = calibrate(SPLIT, "--totals", "perf", name="perf")
check(r.returncode == 0 and "perf's own overhead included" in r.stdout, f"--totals perf: {r.stdout[:400]} {r.stderr[-400:]}")
if plain and perf:
    check(plain["time_base"] == "plain" and perf["time_base"] == "perf", "the JSON says the base")
    check(plain["perf_over_plain"] > 1.0, f"perf slows what it samples: {plain['perf_over_plain']}")
    for q, p in zip(plain["points"], perf["points"]):
        check(q["measured_cpu_ns"] < p["measured_cpu_ns"],
              f"{q['path']} {q['payload']}: plain {q['measured_cpu_ns']} below perf's {p['measured_cpu_ns']}")
        check(abs(q["measured_perf_cpu_ns"] - p["measured_cpu_ns"]) < 1e-6 * p["measured_cpu_ns"],
              f"{q['path']} {q['payload']}: perf's time kept beside the plain one")
    # The shares are perf's either way.
    q, p = plain["points"][0], perf["points"][0]
    for fn in ("udp_sendmsg", "udp_recvmsg"):
        check(abs(q["share"][fn]["measured"] - p["share"][fn]["measured"]) < 0.005,
              f"{fn}: the same share on both bases: {q['share'][fn]} {p['share'][fn]}")

# The user share is checked over the whole run (getrusage's ticks are too
# coarse for one point's slices), and said.
r, _ = calibrate(SPLIT, name="plain-again")
check("user share: perf " in r.stdout and "getrusage" in r.stdout, f"says the user check: {r.stdout[:500]}")


# A user share getrusage contradicts: refused, saying both.
def heavy_user(r):
    r["plain_user_ns_per_packet"] = str(0.4 * float(r["plain_cpu_ns_per_packet"]))
    return r
bad = copy_with(rows, fields, "user.csv", heavy_user)
r, _ = calibrate(bad, name="user")
check(r.returncode == 2 and "user space" in r.stderr and "getrusage 40.0 %" in r.stderr,
      f"a contradicted user share is refused: {r.returncode} {r.stderr[-600:]}")
check(not (WORK / "user").exists(), "nothing written when refused")
r, _ = calibrate(bad, "--totals", "perf", name="user-perf")
check(r.returncode == 0, f"--totals perf fits it anyway: {r.stderr[-400:]}")

# Rows from before the plain run: perf's totals, said; plain asked of them: refused.
old = copy_with(rows, fields, "old.csv", drop=("plain_cpu_ns_per_packet", "plain_user_ns_per_packet"))
r, fit = calibrate(old, name="old")
check(r.returncode == 0 and fit and fit["time_base"] == "perf", f"old rows: {r.stderr[-400:]}")
r, _ = calibrate(old, "--totals", "plain", name="old-plain")
check(r.returncode == 2 and "--totals perf" in r.stderr, f"plain of old rows: {r.stderr[-400:]}")
finish()
