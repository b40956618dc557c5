#!/usr/bin/python3
"""`simloop layout EXPERIMENT.yaml` on an experiment with layout.build
reports on the build as `simloop run` links it (nm map, profile, owners,
link map and order from the experiment): the same misses per packet as the
run. --nm, --owners and --hot-fraction replace the experiment's keys, and a
bad file given so is refused naming the option, the file and its line. With
a link map the build's function order is searched on the experiment's path.

    layout_build_experiment_test.py SIMLOOP DATA_DIR WORK_DIR
"""
import csv
import json
import pathlib
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, DATA, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
EXP = DATA / "experiments" / "validation" / "run-build" / "harness.yaml"
LINK = DATA / "experiments" / "validation" / "data" / "link-order"
OTHER = LINK / "c011-native-10144.nm.gz"  # another build of the same objects


def simloop(*args):
    return subprocess.run([SIMLOOP, "-q", *map(str, args)], cwd=WORK, capture_output=True,
                          text=True, timeout=600)


def layout(name, *args):
    """`simloop layout EXP --no-search`: (its JSON report or None, the process)."""
    out = WORK / f"{name}.json"
    p = simloop("layout", EXP, "--no-search", "-o", out, *args)
    check(p.returncode == 0, f"layout {name}: exit {p.returncode}: {p.stderr}")
    return (json.loads(out.read_text()) if p.returncode == 0 else None), p


def run_misses(name, *sets):
    d = WORK / f"run-{name}"
    cmd = ["run", EXP, "-o", d, "--set", f"name={name}", "--set", "workload.packets=5000"]
    for s in sets:
        cmd += ["--set", s]
    p = simloop(*cmd)
    check(p.returncode == 0, f"run {name}: exit {p.returncode}: {p.stderr}")
    if p.returncode != 0:
        return None
    with open(d / f"{name}.csv", newline="") as f:
        return float(next(csv.DictReader(f))["i1_misses_per_packet"])


def same(what, layout_report, run):
    if layout_report is None or run is None:
        return
    lo = layout_report["before"]["l1_misses_per_packet"]
    check(abs(lo - run) <= 0.01 * run + 0.05,
          f"{what}: layout predicts {lo} misses per packet, the run has {run}")


# The experiment's own build.
j, p = layout("experiment")
if j:
    check("layout.build: nm ../data/link-order/c006-inet-13168.nm.gz, profile "
          "../data/link-order/profile-loopback-18.txt" in j["layout"],
          f"the report does not name the experiment's build: {j['layout']!r}")
same("the experiment's build", j, run_misses("experiment"))

# --nm in place of layout.build.nm: what the run gives with that nm.
j, p = layout("nm", "--nm", OTHER)
if j:
    check(f"nm {OTHER}, profile ../data/link-order/profile-loopback-18.txt" in j["layout"],
          f"--nm does not replace layout.build.nm: {j['layout']!r}")
same("--nm", j, run_misses("nm", f"layout.build.nm={OTHER}"))

# --owners and --hot-fraction in place of theirs (no profile: whole symbols
# times the fraction).
owners = WORK / "owners.txt"
owners.write_text((DATA / "configs" / "harness" / "owners.txt").read_text())
j, p = layout("owners", "--owners", owners, "--hot-fraction", "0.5", "--set",
              'layout.build.profile=""')
if j:
    check(f"owners {owners}, hot_fraction 0.5" in j["layout"],
          f"--owners, --hot-fraction do not replace theirs: {j['layout']!r}")
same("--owners --hot-fraction", j,
     run_misses("owners", f"layout.build.owners={owners}", "layout.build.hot_fraction=0.5",
                'layout.build.profile=""'))

# A bad file given as an option: the option, the file and its line.
bad = WORK / "bad-owners.txt"
bad.write_text("sendto sendto\nudp_output\n")
p = simloop("layout", EXP, "--no-search", "--owners", bad)
check(p.returncode == 2, f"a bad --owners: exit {p.returncode}: {p.stderr}")
check(f"--owners: {bad}:2: expected 'symbol owner'" in p.stderr, f"a bad --owners: {p.stderr!r}")

# Without layout.build, --nm still needs --owners.
p = simloop("layout", DATA / "experiments" / "seed" / "icache-baseline.yaml", "--nm", OTHER)
check(p.returncode == 2 and "--nm needs --owners" in p.stderr,
      f"--nm without layout.build or --owners: exit {p.returncode}: {p.stderr}")

# With a link map the experiment's build is searched as a function order, on
# the experiment's own path: the same default-link prediction as the run and
# as --nm/--map/--path without an experiment; layout.build.order predicted
# beside as the run links it.
MAP = LINK / "c006-inet-13168.map.gz"
ADVICE = LINK / "advice-c006-inet-13168" / "advice.order"


def predicted(d):
    with open(d / "predicted.csv", newline="") as f:
        return {(r["order"], r["path"], r["i1"]): float(r["predicted_i1_misses_per_packet"])
                for r in csv.DictReader(f)}


j, p = layout("map", "--map", MAP)  # --no-search: the orders are predicted, not searched
check("path run-build: payload 18 B, loopback/none/m_copy/0/full/0" in p.stdout,
      f"layout EXP --map does not take the experiment's path: {p.stdout}")
p = simloop("layout", EXP, "--map", MAP, "--budget", "30", "--out-dir", WORK / "orders")
check(p.returncode == 0, f"layout EXP --map: exit {p.returncode}: {p.stderr}")
if p.returncode == 0:
    got = predicted(WORK / "orders")
    check(set(i for (_, _, i) in got) == {"16384,1,64"},
          f"without --I1 the search is not at the experiment's L1 only: {sorted(got)}")
    check((WORK / "orders" / "advice.order").stat().st_size > 0, "no advice.order written")
    if j:
        before = j["before"]["l1_misses_per_packet"]
        check(abs(got[("default link", "run-build", "16384,1,64")] - before) < 1e-9,
              f"the default link is predicted {got[('default link', 'run-build', '16384,1,64')]}"
              f", the report says {before}")
    plain = WORK / "plain"
    q = simloop("layout", "--nm", LINK / "c006-inet-13168.nm.gz", "--map", MAP, "--no-search",
                "--I1", "16384,1,64", "--out-dir", plain, "--path",
                f"name=run-build,profile={LINK / 'profile-loopback-18.txt'},payload=18,"
                "path=loopback/none/m_copy/0/full/0")
    check(q.returncode == 0, f"layout --nm --map --path: exit {q.returncode}: {q.stderr}")
    if q.returncode == 0:
        key = ("default link", "run-build", "16384,1,64")
        check(predicted(plain)[key] == got[key],
              f"an experiment's build and the same build by --nm differ: {predicted(plain)[key]}"
              f" against {got[key]}")

# layout.build.order with its map: predicted beside, as the run links it; a
# --path and --I1 of the user's own add to the experiment's.
j, p = layout("order", "--set", f"layout.build.map={MAP}", "--set",
              f"layout.build.order={ADVICE}", "--I1", "16384,1,64", "--I1", "16384,2,64",
              "--path", f"name=wire,profile={LINK / 'profile-wire-18.txt'},payload=18,path=wire",
              "--out-dir", WORK / "order")
if j:
    got = predicted(WORK / "order")
    key = ("layout.build.order", "run-build", "16384,1,64")
    check(key in got and abs(got[key] - j["before"]["l1_misses_per_packet"]) < 1e-9,
          f"layout.build.order predicted {got.get(key)}, the report (as run links it) "
          f"{j['before']['l1_misses_per_packet']}")
    check(("default link", "wire", "16384,2,64") in got, f"--path and --I1 not added: {got}")
same("layout.build.order", j,
     run_misses("order", f"layout.build.map={MAP}", f"layout.build.order={ADVICE}"))

# What the search cannot do is refused, naming why.
for args, says in (
        (["--set", "workload.service=simulated", "--map", MAP], "workload.service simulated"),
        (["--set", 'layout.build.profile=""', "--map", MAP], "set layout.build.profile"),
        (["--map", MAP, "--layout", DATA / "configs" / "layouts" / "freebsd6-i386-synthetic.yaml"],
         "give no --layout"),
        (["--map", MAP, "--path", f"name=run-build,profile={LINK / 'profile-wire-18.txt'},"
          "payload=18,path=wire"], "two paths are named 'run-build'")):
    p = simloop("layout", EXP, "--no-search", *args)
    check(p.returncode == 2 and says in p.stderr,
          f"layout EXP {args}: exit {p.returncode}, expected 2 and {says!r}: {p.stderr}")
p = simloop("layout", DATA / "experiments" / "seed" / "icache-baseline.yaml", "--map", MAP)
check(p.returncode == 2 and "has no layout.build" in p.stderr,
      f"--map on an experiment without layout.build: exit {p.returncode}: {p.stderr}")

# The help says so.
p = simloop("layout", "--help")
check("An experiment with layout.build" in p.stdout, "layout --help does not say how it "
      "takes an experiment's layout.build")
check("function order is searched too" in p.stdout,
      "layout --help does not say an experiment's build is searched with its link map")

finish()
