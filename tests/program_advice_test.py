#!/usr/bin/python3
"""Link-order advice for a program of one's own, end to end, on the example
sender (experiments/program): built with -ffunction-sections and linked by
ld.lld with a map (experiments/program/build.sh), profiled by callgrind on
its own command line (measure profile --program), advised on (layout --nm
--map --path), relinked in the advised order and in the baselines' orders,
and measured by cachegrind (measure cachegrind --program).

Checks that can fail: the profile names the program and its loop; the
advice orders functions; measured, the advised build has no cell above the
default link's and none more than a miss above call order's or C3's; the
model's default-link figure is within 50 % of cachegrind's at each geometry
(what it is here is printed); `simloop icache` on the four builds gives
layout's predictions beside cachegrind's counts; and the refusals of bad
input, each with exit status 2 and what is wrong.

    program_advice_test.py SIMLOOP SOURCE_DIR WORK_DIR

Exit 77 (skipped) without ld.lld, valgrind or a static C library.
"""
import csv
import pathlib
import re
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, SRC, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
BUILD = SRC / "experiments" / "program" / "build.sh"
GEOMETRIES = ["16384,1,64", "8192,2,64", "8192,1,64", "4096,2,64"]
I1 = [w for g in GEOMETRIES for w in ("--I1", g)]
PACKETS = ["--packets", "200,1200"]

for tool in ("ld.lld", "valgrind", "cc"):
    if shutil.which(tool) is None:
        print(f"skipped: {tool} is not installed")
        sys.exit(77)


def run(*args, ok=True):
    r = subprocess.run([*map(str, args)], capture_output=True, text=True, cwd=WORK, timeout=600)
    if ok:
        check(r.returncode == 0, f"{' '.join(map(str, args))}: exit {r.returncode}: {r.stderr[-800:]}")
    return r


def build(name, order=None):
    r = run(BUILD, WORK / name, *([order] if order else []), ok=False)
    if r.returncode != 0 and "static" in r.stderr and "cannot find -lc" in r.stderr:
        print("skipped: no static C library (libc6-dev's libc.a)")
        sys.exit(77)
    check(r.returncode == 0, f"build.sh {name}: {r.stderr[-800:]}")
    return WORK / name


def measured(program):
    """cachegrind's I1 misses per iteration, by geometry."""
    out = WORK / f"{program.name}.csv"
    run(SIMLOOP, "measure", "cachegrind", "--program", *I1, *PACKETS, "-o", out, "--",
        program, "-q", "-n", "{n}")
    rows = list(csv.DictReader(out.open())) if out.is_file() else []
    check(rows and all(r["program"] == f"{program} -q -n {{n}}" for r in rows),
          f"the rows name the program's command: {rows[:1]}")
    return {r["i1"]: float(r["i1_misses_per_packet"]) for r in rows}


default = build("sender")
check((WORK / "sender.map").is_file(), "build.sh writes the link map beside the program")
prof = WORK / "sender.prof"
r = run(SIMLOOP, "measure", "profile", "--program", "-o", prof, *PACKETS, "--", default, "-q",
        "-n", "{n}")
check("1 loop around the iterations" in r.stdout, f"the profile finds the loop: {r.stdout}")
text = prof.read_text() if prof.is_file() else ""
check(f"# program: {default} -q -n {{n}}" in text, f"the profile's head names the program: {text[:400]}")
check(re.search(r"^walk send_loop 0x[0-9a-f]+ 0$", text, re.M) is not None,
      "send_loop is the loop (a walk of 0 calls an iteration)")

advice_dir = WORK / "advice"
r = run(SIMLOOP, "layout", "--nm", default, "--map", WORK / "sender.map", "--path",
        f"name=send,profile={prof}", *I1, "--out-dir", advice_dir)
check(f"the program `{default} -q -n {{n}}` (its loop: send_loop)" in r.stdout,
      f"the path is the program's: {r.stdout[:600]}")
m = re.search(r"^advice: (\d+) functions ordered", r.stdout, re.M)
check(m is not None and int(m.group(1)) > 0, f"the advice orders functions: {r.stdout[-1500:]}")
predicted = {}
if (advice_dir / "predicted.csv").is_file():
    for row in csv.DictReader((advice_dir / "predicted.csv").open()):
        predicted[(row["order"], row["i1"])] = float(row["predicted_i1_misses_per_packet"])

builds = {"default link": default}
for order, file in (("advice", "advice.order"), ("C3", "c3.order"),
                    ("call order send", "call-order-send.order")):
    if (advice_dir / file).is_file():
        builds[order] = build("sender-" + file.removesuffix(".order"), advice_dir / file)
got = {name: measured(program) for name, program in builds.items()}
print(f"{'order':<16} " + " ".join(f"{g:>11}" for g in GEOMETRIES) + "   (measured / predicted)")
for name, cells in got.items():
    print(f"{name:<16} " + " ".join(
        f"{cells.get(g, float('nan')):5.0f}/{predicted.get((name, g), float('nan')):<5.0f}"
        for g in GEOMETRIES))
base = got.get("default link", {})
check(len(base) == len(GEOMETRIES) and any(v > 1 for v in base.values()),
      f"the default link misses at the geometries shown: {base}")
adv = got.get("advice", {})
for g in GEOMETRIES:
    check(g in adv and adv[g] <= base.get(g, 0) + 0.5,
          f"advice at {g}: {adv.get(g)} measured, above the default link's {base.get(g)}")
    for other in ("C3", "call order send"):
        check(g in adv and adv[g] <= got.get(other, {}).get(g, 0) + 1,
              f"advice at {g}: {adv.get(g)} measured, more than a miss above {other}'s "
              f"{got.get(other, {}).get(g)}")
    p = predicted.get(("default link", g))
    check(p is not None and base.get(g, 0) > 0 and abs(p - base[g]) <= 0.5 * base[g],
          f"the default link at {g}: predicted {p}, measured {base.get(g)}")

# simloop icache on the program's builds: the same predictions as layout's,
# beside cachegrind's rows, in one command (a CSV per build, or all in one);
# the symbol maps cachegrind -o left beside its CSVs name the same layouts.
cg_all = WORK / "all-cachegrind.csv"
cg_rows = [row for program in builds.values() if (WORK / f"{program.name}.csv").is_file()
           for row in csv.DictReader((WORK / f"{program.name}.csv").open())]
if cg_rows:
    with cg_all.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(cg_rows[0]))
        w.writeheader()
        w.writerows(cg_rows)
each_csv = [w for p in builds.values() for w in ("--measured", WORK / f"{p.name}.csv")]
for form, args, measured_args in (
        ("programs", [str(p) for p in builds.values()], each_csv),
        ("maps", [str(WORK / f"{p.name}.csv.{p.name}.nm") for p in builds.values()],
         ["--measured", cg_all])):
    ic_out = WORK / f"icache-{form}.csv"
    r = run(SIMLOOP, "icache", "--profile", prof, *measured_args, *I1, "-o", ic_out, *args)
    check(f"I1 misses per iteration of the program `{default} -q -n {{n}}`" in r.stdout,
          f"icache ({form}) says it predicts the program's iterations: {r.stdout[:300]}")
    check(all(f"I1 {g}: {len(builds)} layouts" in r.stdout for g in GEOMETRIES),
          f"icache ({form}) compares every geometry: {r.stdout[-1200:]}")
    rows = list(csv.DictReader(ic_out.open())) if ic_out.is_file() else []
    check(len(rows) == len(builds) * len(GEOMETRIES), f"icache ({form}): {len(rows)} rows")
    for row in rows:
        name = next((n for n, p in builds.items() if p.name == row["layout"]), None)
        want_p, want_m = predicted.get((name, row["i1"])), got.get(name, {}).get(row["i1"])
        check(want_p is not None and abs(float(row["predicted_i1_misses_per_packet"]) - want_p) < 1,
              f"icache ({form}) {row['layout']} {row['i1']}: predicted "
              f"{row['predicted_i1_misses_per_packet']}, layout {want_p}")
        check(want_m is not None and row.get("measured_i1_misses_per_packet") and
              abs(float(row["measured_i1_misses_per_packet"]) - want_m) < 0.01,
              f"icache ({form}) {row['layout']} {row['i1']}: measured "
              f"{row.get('measured_i1_misses_per_packet')}, cachegrind {want_m}")

# Linked dynamically, the C library's code is in no symbol of the program:
# the profile says how much of an iteration it leaves out.
objs = []
for f in ("udp_sender", "tags", "record", "stats", "link"):
    objs.append(WORK / f"{f}.o")
    run("cc", "-O2", "-ffunction-sections", "-c", SRC / "experiments" / "program" / f"{f}.c", "-o",
        objs[-1])
run("cc", "-fuse-ld=lld", f"-Wl,-Map={WORK / 'dynamic.map'}", *objs, "-o", WORK / "dynamic")
r = run(SIMLOOP, "measure", "profile", "--program", *PACKETS, "-o", WORK / "dynamic.prof", "--",
        WORK / "dynamic", "-q", "-n", "{n}")
m = re.search(r"(\d+) % of what an iteration of .* is outside its own code", r.stderr)
check(m is not None and 20 <= int(m.group(1)) <= 95,
      f"a dynamic build: the share left out is said: {r.stderr[-600:]}")
check("outside its own code" not in run(SIMLOOP, "measure", "profile", "--program", *PACKETS, "-o",
                                        WORK / "again.prof", "--", default, "-q", "-n",
                                        "{n}").stderr,
      "a static build: nothing left out to warn of")

# Bad input: exit 2, saying what is wrong.
bad = [
    (["measure", "profile", "--program", "-o", "x.prof", "--", default, "-n", "5"],
     "has no {n}"),
    # The command as a shell would take it again: a word with a space quoted.
    (["measure", "profile", "--program", "-o", "x.prof", "--", default, "-t", "a b=c'd"],
     f"`{default} -t 'a b=c'\\''d'` has no {{n}}"),
    (["measure", "profile", "--program", "-l", "100", "-o", "x.prof", "--", default, "-n", "{n}"],
     "--payload: an option of a harness's path"),
    (["measure", "cachegrind", "--program", "--", WORK / "absent", "{n}"], "absent: no such file"),
    (["measure", "profile", "--program", "--", WORK / "run-{n}", "{n}"],
     "is replaced in the program's arguments, not in its path"),
    (["layout", "--nm", default, "--map", WORK / "sender.map", "--path",
      f"name=h,profile={WORK / 'headless.prof'},path=wire"], "payload is required"),
    (["layout", "--nm", default, "--map", WORK / "sender.map", "--path",
      f"name=send,profile={prof}", "--owners", WORK / "owners.txt"], "no function is owned by user_loop"),
    (["measure", "profile", default, default], "needs --program"),
    (["icache", "--profile", prof, "-l", "100", default], "--payload: an option of a harness's path"),
    (["icache", "--profile", prof], "name its builds"),
    (["icache", "--profile", prof, "--owners", WORK / "owners.txt", default],
     "no function is owned by user_loop"),
    (["icache", "--profile", WORK / "headless.prof", "--measured", cg_all, default],
     "rows of a program's runs"),
    (["icache", "--profile", WORK / "other.prof", default], "no function of the profile's loops"),
    (["layout", "--nm", default, "--map", WORK / "sender.map", "--path",
      f"name=send,profile={prof},payload=18"], "is a profile of the program"),
    (["layout", "--nm", default, "--map", WORK / "sender.map", "--path",
      f"name=send,profile={prof}", "--path", f"name=harness,profile={WORK / 'headless.prof'},payload=18"],
     "mix profiles of a program"),
]
(WORK / "owners.txt").write_text("send_loop sendto\n")
(WORK / "other.prof").write_text(text.replace("send_loop", "no_such_loop"))
# A profile with no program in its head is a harness's.
(WORK / "headless.prof").write_text(re.sub(r"^# program: .*\n", "", text, flags=re.M))
for args, want in bad:
    r = run(SIMLOOP, *args, ok=False)
    check(r.returncode == 2 and want in r.stderr,
          f"{' '.join(map(str, args))}: exit {r.returncode}, wanted 2 and {want!r}: {r.stderr[-400:]}")
# A profile of another program than the nm's: its loop is not in the build.
other = WORK / "other.prof"
r = run(SIMLOOP, "layout", "--nm", default, "--map", WORK / "sender.map", "--path",
        f"name=send,profile={other}", ok=False)
check(r.returncode == 2 and "no_such_loop" not in r.stdout and "is not in this build" in r.stderr,
      f"a profile of another program: {r.returncode} {r.stderr[-400:]}")
finish()
