#!/usr/bin/python3
"""Every result says whose machine it is:

- a measured machine names the host it was fitted on (machine.host), its
  rows carry that host's fingerprint (machine_host) and its JSON says which
  host ran the simulation (simulated_on);
- `run` and `sweep` warn once, naming the facts that differ, when this
  machine is not that host (SIMLOOP_THIS_HOST stands another host in), and
  say nothing when it is, or for a machine estimated from published figures;
- `simloop list` says how each machine's costs were made and on what host.

    host_facts_test.py SIMLOOP WORK_DIR
"""
import csv
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
PROFILE = {"cpu": "AMD EPYC", "clock_mhz": 2596.13, "kernel": "Linux 6.18.44-fc-v1272 x86_64"}


def stand_in(name, **facts):
    f = WORK / f"{name}.yaml"
    f.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in facts.items()))
    return f


def run(*args, host=None):
    env = dict(os.environ)
    env.pop("SIMLOOP_THIS_HOST", None)  # the suite's stand-in: this test names its own
    if host:
        env["SIMLOOP_THIS_HOST"] = str(host)
    return subprocess.run([SIMLOOP, *map(str, args)], capture_output=True, text=True, cwd=WORK, env=env)


def result(out):
    rows = list(csv.DictReader(open(next(out.glob("*.csv")), newline="")))
    return rows[0], json.load(open(next(out.glob("*.json"))))


LINUX = "experiments/linux-loopback.yaml"
same = stand_in("same", **PROFILE, caches="L1d 32K 8-way")
other = stand_in("other", cpu="AMD EPYC", clock_mhz=2100.0, kernel="Linux 6.18.44-fc-v1252 x86_64")
fp = {}
for name, host, warns in (("same", same, False), ("other", other, True)):
    out = WORK / name
    r = run("run", LINUX, "--set", "workload.packets=2000", "-o", out, host=host)
    if not check(r.returncode == 0, f"{name}: the Linux run: {r.stderr[-400:]}"):
        continue
    warned = re.findall(r"costs were measured on host \w+ .*not on this one", r.stderr)
    check(len(warned) == (1 if warns else 0), f"{name}: warned {len(warned)} times: {r.stderr[-600:]}")
    if warns and warned:
        check("clock 2596 MHz against 2100 MHz here (-19.1 %)" in r.stderr
              and "kernel 'Linux 6.18.44-fc-v1272 x86_64' against 'Linux 6.18.44-fc-v1252 x86_64' here"
              in r.stderr, f"the warning names the clock and the kernel: {r.stderr[-600:]}")
        check("run `simloop calibrate host`" in r.stderr and "machine: host" in r.stderr,
              f"the warning says the command that prices this host: {r.stderr[-600:]}")
    row, doc = result(out)
    check(re.fullmatch(r"[0-9a-f]{12}", row.get("machine_host", "")) is not None,
          f"{name}: the row names the profile's host: {row.get('machine_host')}")
    check(doc["config"]["machine"]["host"]["cpu"] == "AMD EPYC" and doc["machine_host"] == row["machine_host"],
          f"{name}: the JSON names the profile's host")
    fp[name] = (row["machine_host"], doc["simulated_on"]["fingerprint"])
    check(doc["simulated_on"]["clock_mhz"] == (2596.13 if name == "same" else 2100.0),
          f"{name}: simulated_on is the host that ran it: {doc['simulated_on']}")
if len(fp) == 2:
    check(fp["same"][0] == fp["other"][0], "the profile's fingerprint does not depend on where it runs")
    check(fp["same"][1] != fp["other"][1], "two hosts that differ have two fingerprints")

# This machine as it is: its facts are read, and the JSON carries them.
r = run("run", LINUX, "--set", "workload.packets=2000", "-o", WORK / "here")
if check(r.returncode == 0, f"the Linux run here: {r.stderr[-300:]}"):
    here = result(WORK / "here")[1]["simulated_on"]
    check(here["cpu"] and here["kernel"].startswith("Linux ") and here["clock_mhz"] > 0,
          f"this machine's facts: {here}")

# An estimated machine: no host, no warning.
r = run("run", "experiments/seed-athlon.yaml", "--set", "workload.packets=2000", "-o", WORK / "seed", host=other)
if check(r.returncode == 0 and "measured on host" not in r.stderr, f"seed-athlon: {r.stderr[-300:]}"):
    check(result(WORK / "seed")[0]["machine_host"] == "", "an estimated machine names no host")

# A sweep over both machines warns once, for the measured one.
study = WORK / "both.yaml"
study.write_text("""name: both
machine: athlon-xp-2700
stack: freebsd6
workload: {payload: 18, packets: 2000, dest: wire}
sweep:
  zip:
    machine: [athlon-xp-2700, linux-epyc-machine]
    stack: [freebsd6, linux-epyc-stack]
  grid:
    workload.payload: [18, 256]
""")
r = run("sweep", study, "-o", WORK / "both", host=other)
check(r.returncode == 0 and len(re.findall("measured on host", r.stderr)) == 1,
      f"the sweep warns once: {r.returncode} {r.stderr[-600:]}")

# simloop list: how each machine's costs were made, and on what host.
r = run("list", "--kind", "machines")
check(re.search(r"costs measured in 2025 on host [0-9a-f]{12} \(AMD EPYC, 2596 MHz, Linux 6\.18\.44-fc-v1272 x86_64\)",
                r.stdout) is not None and "costs estimated in 2006" in r.stdout,
      f"list names each machine's origin: {r.stdout}")
finish()
