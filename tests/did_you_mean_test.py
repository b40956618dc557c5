#!/usr/bin/python3
"""A misspelt or shortened name is answered with the name it most likely
meant, and exit 2: experiment files (run, sweep), stack and machine names
(in a file, with its line, and in --set), and plot's --where and --series
columns and values.

    did_you_mean_test.py SIMLOOP WORK_DIR
"""
import pathlib
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)


def run(*args):
    return subprocess.run([SIMLOOP, *map(str, args)], capture_output=True, text=True, cwd=WORK)


def refused(args, meant, also=()):
    r = run(*args)
    said = f"did you mean '{meant}'?"
    check(r.returncode == 2 and said in r.stderr and all(a in r.stderr for a in also),
          f"simloop {' '.join(map(str, args))}: exit {r.returncode}, expected \"{said}\": {r.stderr[-400:]}")


SEED = "experiments/seed-athlon.yaml"
refused(["run", "experiments/seed-athlo.yaml"], SEED)
refused(["run", "seed-athlon"], SEED)
refused(["sweep", "experiments/sweep-payload-algn.yaml"], "experiments/sweep-payload-align.yaml")
refused(["run", SEED, "--set", "stack=linux-epyc-stak"], "linux-epyc-stack")
refused(["run", SEED, "--set", "stack=linux-epyc"], "linux-epyc-stack")
refused(["run", SEED, "--set", "machine=athlon-xp-270"], "athlon-xp-2700")
exp = WORK / "mine.yaml"
exp.write_text("name: mine\nmachine: athlon-xp-2700\nstack: freebsd6-warn\n"
               "workload: {payload: 18, packets: 1000}\n")
refused(["run", exp], "freebsd6-warm", also=[f"{exp}:3:8: stack"])
# Nothing near: no guess.
r = run("run", SEED, "--set", "stack=zzzzzz")
check(r.returncode == 2 and "did you mean" not in r.stderr, f"no guess for a name near none: {r.stderr[-300:]}")

# plot: --where and --series.
r = run("run", SEED, "--set", "workload.packets=2000", "-o", WORK / "res")
csvs = sorted((WORK / "res").glob("*.csv"))
if check(r.returncode == 0 and csvs, f"a run to plot: {r.stderr[-300:]}"):
    refused(["plot", csvs[0], "--where", "stak=freebsd6-warm", "-o", WORK / "p.png"], "stack")
    refused(["plot", csvs[0], "--where", "stack=freebsd7", "-o", WORK / "p.png"], "freebsd6")
    refused(["plot", csvs[0], "--kind", "payload", "--series", "machne", "-o", WORK / "p.png"], "machine")
finish()
