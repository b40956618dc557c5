#!/usr/bin/python3
"""simloop calibrate host, quick: tiny packet counts into -o a temporary
directory (the kernel part skipped unless root with perf, where it runs too),
then:

- the profile's files: machines with `costs: measured`, a year and this
  host's facts, the stacks, the measured CSVs, microbench.json, host.json;
- the step lines with their elapsed time, and the wall time;
- `machine: host` / `stack: host-bsd` in an experiment, and --set
  machine=host, resolve through XDG_DATA_HOME to this host's profile;
- the Linux fit's machine with the BSD fit's stack is warned of, once;
- without a profile, the error names the command that makes one;
- `simloop list` shows the profile with its date and fingerprint;
- `--from` carries the profile by the microbenchmarks: each cost scaled by
  the factor it prints, `--scale none` leaving them, never onto itself.

    calibrate_host_test.py SIMLOOP WORK_DIR
"""
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
# A stand-in host, so that the fingerprint is known and never this machine's own.
HOST = WORK / "host.yaml"
HOST.write_text('cpu: "Test CPU"\nclock_mhz: 1000\nkernel: "Linux 0.0 test"\ncaches: "L1d 32K 8-way"\n')
XDG = WORK / "xdg"
EMPTY = WORK / "empty-xdg"
EMPTY.mkdir()


def run(*args, xdg=XDG, timeout=120):
    env = dict(os.environ, SIMLOOP_THIS_HOST=str(HOST), XDG_DATA_HOME=str(xdg))
    return subprocess.run([SIMLOOP, *map(str, args)], capture_output=True, text=True, cwd=WORK,
                          env=env, timeout=timeout)


# Its fingerprint, as simloop computes it: from the error without a profile.
r = run("run", "--set", "machine=host", "--set", "workload.packets=100", "-o", WORK / "none", xdg=EMPTY)
check(r.returncode == 2, f"no profile: exit {r.returncode}: {r.stderr[-400:]}")
check("simloop calibrate host" in r.stderr, f"no profile: the error names the command: {r.stderr[-400:]}")
m = re.search(r"this host \(([0-9a-f]{12}):", r.stderr)
check(m is not None, f"no profile: the error names the fingerprint: {r.stderr[-400:]}")
fp = m.group(1) if m else "unknown"

out = XDG / "simloop" / "hosts" / fp
args = ["calibrate", "host", "-o", out, "--l1d", "--kernel-packets", "500", "--kernel-repeats", "1",
        "--native-packets", "20", "--native-repeats", "1", "--bootstrap", "0"]
if os.geteuid() != 0 or shutil.which("perf") is None:
    args.append("--skip-kernel")
r = run(*args, timeout=300)
check(r.returncode == 0, f"calibrate host: exit {r.returncode}: {r.stdout[-800:]} {r.stderr[-800:]}")
steps = re.findall(r"^\[(\d)/(\d) +[0-9.]+ s\] ", r.stdout, re.M)
check(len(steps) >= 6, f"a line per step with its elapsed time: {r.stdout[:600]}")
check(re.search(r"^wall time: [0-9.]+ s$", r.stdout, re.M), f"the wall time: {r.stdout[-400:]}")
# Whether the Linux half ran is what simloop says, not a guess from here:
# root with perf can still be refused (no kallsyms, perf_event_open blocked).
kernel = "skipped the Linux stack" not in r.stdout
if "--skip-kernel" in args:
    check(not kernel, f"says what it skipped: {r.stdout[:800]}")

names = ["host-bsd-machine.yaml", "host-bsd-stack.yaml", "host-bsd.yaml", "host-bsd-fit.json",
         "native-split.csv", "microbench.json", "host.json"]
if kernel:
    names += ["host-linux-machine.yaml", "host-linux-stack.yaml", "host-linux.yaml", "kernel-split.csv"]
for n in names:
    check((out / n).is_file(), f"wrote {n}: {sorted(p.name for p in out.glob('*'))}")
check(not list(out.glob(".*")), f"no temporaries left: {list(out.glob('.*'))}")
# The copy-down paths are measured again where copy-down acts (a header
# offset that misaligns the IP header), in a file of their own, and the fit
# trains and is compared on them.
if (out / "native-split-misaligned.csv").is_file() and (out / "native-split.csv").is_file():
    import csv
    rows = list(csv.DictReader((out / "native-split-misaligned.csv").open()))
    moved = {(r["dest"], r["align"]) for r in rows if r["max_linkhdr"] == "14"}
    check(moved == {("loopback", "copy-down"), ("broadcast", "copy-down"), ("self", "copy-down")}
          and len(moved) and all(r["max_linkhdr"] == "14" for r in rows),
          f"copy-down paths at max_linkhdr 14: {sorted(moved)}")
    rest = list(csv.DictReader((out / "native-split.csv").open()))
    check(rest and all(r["max_linkhdr"] == "16" for r in rest), "and the rest at the default 16")
    cmp = (out / "host-bsd-compare.txt").read_text() if (out / "host-bsd-compare.txt").is_file() else ""
    check("max_linkhdr=14" in cmp, f"compare reports the misaligned points: {cmp[:300]}")
else:
    check(False, f"native-split-misaligned.csv written: {sorted(p.name for p in out.glob('*'))}")
if (out / "host-bsd-machine.yaml").is_file():
    text = (out / "host-bsd-machine.yaml").read_text()
    for want in ("costs: measured", "year: 20", "host:", 'cpu: "Test CPU"', 'caches: "L1d 32K 8-way"'):
        check(want in text, f"the machine file has {want!r}: {text[:600]}")
if (out / "microbench.json").is_file():
    b = json.loads((out / "microbench.json").read_text())
    for k in ("clock", "null_syscall", "memcpy", "caches", "loadavg_before", "loadavg_after"):
        check(k in b, f"microbench.json has {k}: {sorted(b)}")
    check([c["bytes"] for c in b.get("memcpy", [])] == [64, 256, 1024, 4096, 16384, 65536],
          f"memcpy sizes: {b.get('memcpy')}")
    check(b.get("null_syscall", {}).get("wall_ns", 0) > 0, f"a null system call: {b.get('null_syscall')}")
    # The clock again after each measuring step (the kernel's when it was
    # measured), so a run says whether its clock held still.
    during = [c.get("after") for c in b.get("clock", {}).get("during", [])]
    check(during == ["microbenchmarks"] + (["measure kernel"] if kernel else []) + ["measure native"] and
          all(c.get("measured_mhz_imul", 0) > 0 for c in b["clock"]["during"]),
          f"the clock during the run: {b.get('clock')}")
info = json.loads((out / "host.json").read_text()) if (out / "host.json").is_file() else {}
check(info.get("fingerprint") == fp, f"host.json names the fingerprint {fp}: {info.get('fingerprint')}")

# Never through a link, nor over what is not a directory.
(WORK / "link").symlink_to(WORK / "elsewhere")
(WORK / "file").write_text("x\n")
for bad in ("link", "file"):
    r = run("calibrate", "host", "-o", WORK / bad, "--skip-kernel")
    check(r.returncode == 2 and not (WORK / "elsewhere").exists(), f"-o {bad}: {r.returncode} {r.stderr[-300:]}")

# Names an experiment uses, found through XDG_DATA_HOME.
exp = WORK / "mine.yaml"
# (machine host is the Linux fit's where the kernel was measured, else the BSD fit's)
stack = "host-linux" if kernel else "host-bsd"
exp.write_text(f"name: mine\nmachine: host\nstack: {stack}\nworkload: {{payload: 18, packets: 200}}\n")
r = run("run", exp, "-o", WORK / "mine")
check(r.returncode == 0, f"machine: host, stack: {stack}: {r.stderr[-600:]}")
res = list((WORK / "mine").glob("*.json"))
if check(len(res) == 1, f"one result: {res}"):
    doc = json.loads(res[0].read_text())
    check(doc["result"].get("machine_host") == fp, f"priced on this host: {doc['result'].get('machine_host')}")
check("measured on host" not in r.stderr, f"no other-host warning: {r.stderr[-400:]}")
r = run("run", "--set", "machine=host-bsd", "--set", "stack=host-bsd", "--set", "workload.packets=200",
        "-o", WORK / "set")
check(r.returncode == 0, f"--set machine=host-bsd: {r.stderr[-600:]}")
check("mixes two fits" not in r.stderr, f"one fit's pair: no warning: {r.stderr[-400:]}")
# machine: host with the BSD stack: the Linux fit's machine where the Linux
# half ran (two fits mixed, said once), else the BSD fit's own (nothing said).
r = run("run", "--set", "machine=host", "--set", "stack=host-bsd", "--set", "workload.packets=200",
        "-o", WORK / "mixed")
check(r.returncode == 0, f"--set machine=host stack=host-bsd: {r.stderr[-600:]}")
if kernel:
    check(r.stderr.count("mixes two fits") == 1 and "machine: host-bsd for stack: host-bsd" in r.stderr,
          f"the mixed pair is warned of, once: {r.stderr[-600:]}")
else:
    check("mixes two fits" not in r.stderr, f"machine: host is the BSD fit's here: {r.stderr[-400:]}")
if kernel:
    r = run("run", "--set", "machine=host", "--set", "stack=host-linux", "--set",
            "workload.packets=200", "-o", WORK / "linux")
    check(r.returncode == 0, f"--set machine=host stack=host-linux: {r.stderr[-600:]}")
else:
    r = run("run", "--set", "machine=host", "--set", "stack=host-linux", "-o", WORK / "linux")
    check(r.returncode == 2 and "simloop calibrate host" in r.stderr,
          f"no Linux stack in a profile without it: {r.returncode} {r.stderr[-400:]}")

# Carried to a host by its microbenchmarks alone (--from): the costs scaled
# by the factors it prints, --scale none leaving them as they were, never
# onto the profile it reads, and --bench only with -o.
def functions(path):
    out, on = {}, False
    for line in path.read_text().splitlines():
        if line.startswith("functions:"):
            on = True
        elif on and line.startswith("  ") and ":" in line:
            k, v = line.strip().split(":", 1)
            try:
                out[k] = float(v.split("#")[0])
            except ValueError:
                pass
        elif on and not line.startswith(" "):
            on = False
    return out


def copy_factors(stdout):
    """The copy's factors a carry printed: memcpy's for the BSD stack, the
    kernel's own copy for the Linux stack. Each carry measures this host
    again, so each run's factors are its own."""
    m = re.search(r"system call x[0-9.]+, copy per byte x([0-9.]+)", stdout)
    kc = re.search(r"the kernel's copy per byte x([0-9.]+)", stdout)
    return {"host-bsd": float(m.group(1)) if m else 1.0,
            "host-linux": float(kc.group(1)) if kc else 1.0}


carried = {}
copy_factor = {"host-bsd": 1.0, "host-linux": 1.0}
for scale in ("micro", "none"):
    r = run("calibrate", "host", "--from", out, "--scale", scale, "-o", WORK / f"carried-{scale}")
    check(r.returncode == 0, f"--from --scale {scale}: exit {r.returncode}: {r.stderr[-600:]}")
    m = re.search(r"core work x([0-9.]+), system call x([0-9.]+), copy per byte x([0-9.]+), "
                  r"kernel code x([0-9.]+) \(by ([^)]*\)?)\)", r.stdout)
    check(m is not None, f"--from prints its factors: {r.stdout[:600]}")
    # The BSD stack's functions follow the core; the Linux stack's, kernel
    # code, the kernel's own microbenchmark (recorded on both sides here).
    carried[scale] = ({"host-bsd": float(m.group(1)), "host-linux": float(m.group(4))} if m
                      else {"host-bsd": 1.0, "host-linux": 1.0}, WORK / f"carried-{scale}")
    if m and scale == "micro":
        check(m.group(5).startswith("the kernel socket round trip"),
              f"both sides have the kernel's microbenchmark: {m.group(5)}")
        # The Linux stack's copies by the kernel's own copy (a pread), the
        # BSD stack's by memcpy: each machine's per-byte cost by its own.
        kc = re.search(r"the kernel's copy per byte x([0-9.]+) \(by ([^)]*)\)", r.stdout)
        check(kc is not None and kc.group(2) == "the kernel's copy to user space",
              f"the kernel's copy factor, from both sides' pread: {r.stdout[:900]}")
        copy_factor = copy_factors(r.stdout)
def clock_hz(path):
    m = re.search(r"^clock_hz: *([0-9.e+]+)", path.read_text(), re.M)
    return float(m.group(1)) if m else 0.0


def per_byte(path):
    mm = re.search(r"^  cycles_per_byte: *([0-9.e+-]+)", path.read_text(), re.M)
    return float(mm.group(1)) if mm else -1.0


KNOWN_PB = 0.125
known_src, known_pb = WORK / "known-per-byte", WORK / "carried-known-per-byte"
shutil.copytree(out, known_src)
for f in known_src.glob("host-*-machine.yaml"):
    t = f.read_text()
    check(re.search(r"^  cycles_per_byte: ", t, re.M) is not None, f"{f.name} has a copy rate: {t[:600]}")
    f.write_text(re.sub(r"^  cycles_per_byte: *[0-9.e+-]+", f"  cycles_per_byte: {KNOWN_PB}", t, flags=re.M))
r = run("calibrate", "host", "--from", known_src, "--scale", "micro", "-o", known_pb)
check(r.returncode == 0, f"--from a source with a known copy rate: {r.returncode} {r.stderr[-400:]}")
known_factor = copy_factors(r.stdout)

for fit in ["host-bsd"] + (["host-linux"] if kernel else []):
    a = functions(out / f"{fit}-stack.yaml")
    check(len(a) > 5, f"{fit}: the stack's functions read: {a}")
    factors, d = carried["micro"]
    core = factors[fit]
    # Cycles follow the clock the carried machine is priced at (the
    # stand-in host's); costs in ns (clock_hz 1e9) do not.
    a_clock = clock_hz(out / f"{fit}-machine.yaml")
    for scale, want in (("none", 1.0), ("micro", core)):
        b_clock = clock_hz(carried[scale][1] / f"{fit}-machine.yaml")
        if a_clock != 1e9:
            check(b_clock == 1000e6, f"{fit} --scale {scale}: priced at the stand-in's clock: {b_clock}")
            want *= b_clock / a_clock
        b = functions(carried[scale][1] / f"{fit}-stack.yaml")
        bad = [k for k in a if abs(b.get(k, -1) - a[k] * want) > 1e-3 * max(1.0, a[k] * want) + 1e-4]
        check(not bad, f"{fit} --scale {scale}: each function x{want:.4f}: {bad[:3]} {a.get(bad[0]) if bad else ''} -> {b.get(bad[0]) if bad else ''}")
    # The copy's rate is carried by its own factor. The quick fit above can
    # put it at 0 (20 packets a point), so a source with a known rate is
    # carried too: a 0 carried as 0 proves nothing on its own.
    a_pb, b_pb = per_byte(out / f"{fit}-machine.yaml"), per_byte(d / f"{fit}-machine.yaml")
    ratio = clock_hz(d / f"{fit}-machine.yaml") / a_clock if a_clock != 1e9 else 1
    for src_pb, got_pb, factor in ((a_pb, b_pb, copy_factor[fit]),
                                   (KNOWN_PB, per_byte(known_pb / f"{fit}-machine.yaml"),
                                    known_factor[fit])):
        want_pb = src_pb * factor * ratio
        check(src_pb >= 0 and abs(got_pb - want_pb) <= 2e-3 * want_pb + 1e-4,
              f"{fit}: copy.cycles_per_byte x{factor:.4f}: {src_pb} -> {got_pb} (want {want_pb})")
    text = (d / f"{fit}-machine.yaml").read_text()
    check("Carried by simloop calibrate host --from" in text and 'cpu: "Test CPU"' in text,
          f"{fit}: the carried machine says where it came from and whose it is: {text[:500]}")
# The Linux machine names this host's L1 data cache (the stand-in's), and a
# carry puts the destination's in its place.
if kernel:
    src = WORK / "l1d-source"
    shutil.copytree(out, src)
    mt = (src / "host-linux-machine.yaml").read_text()
    check("l1d_bytes: 32768" in mt and "l1d_ways: 8" in mt,
          f"the Linux machine has the stand-in's L1d: {mt[:900]}")
    (src / "host-linux-machine.yaml").write_text(
        mt.replace("l1d_bytes: 32768", "l1d_bytes: 49152").replace("l1d_ways: 8", "l1d_ways: 12"))
    r = run("calibrate", "host", "--from", src, "-o", WORK / "carried-l1d")
    check(r.returncode == 0, f"--from a source with another L1d: {r.returncode} {r.stderr[-400:]}")
    ct = (WORK / "carried-l1d" / "host-linux-machine.yaml").read_text()
    check(re.search(r"l1d_bytes: 32768\b", ct) is not None and re.search(r"l1d_ways: 8\b", ct) is not None,
          f"the carried machine has this host's L1d: {ct[:900]}")
    # A machine without the cache on stays without it when carried.
    bsd = (WORK / "carried-l1d" / "host-bsd-machine.yaml").read_text()
    check(re.search(r"l1d_bytes: *[1-9]", bsd) is None, f"the carried BSD machine keeps the cache off: {bsd[:900]}")
    # Without --l1d, the Linux fit of the same rows has one rate and says no L1d.
    r = run("calibrate", out / "kernel-split.csv", "--source", "linux", "--train", "path=unconnected",
            "--train", "payload=18,256,1472,12000,40000", "-o", WORK / "one-rate", "--name", "one")
    check(r.returncode == 0, f"calibrate without --l1d: {r.returncode} {r.stderr[-400:]}")
    one = (WORK / "one-rate" / "one-machine.yaml").read_text() if r.returncode == 0 else ""
    check("l1d" not in one, f"without --l1d the machine says no L1d: {one[:900]}")
r = run("calibrate", "host", "--skip-kernel", "--l1d", "-o", WORK / "skip-l1d")
check(r.returncode == 2 and "--skip-kernel" in r.stderr, f"--l1d with --skip-kernel: {r.returncode} {r.stderr[-300:]}")
info = json.loads((carried["micro"][1] / "host.json").read_text())
check(info.get("carried_from", {}).get("fingerprint") == fp, f"host.json names the source: {info.get('carried_from')}")
# A source from before the multiplies were recorded: its core factor is by
# the adds on both sides, and refused where this host folds adds (a chain
# of them runs faster than any clock here).
old = WORK / "adds-only"
shutil.copytree(out, old)
mb = json.loads((old / "microbench.json").read_text())
mb["clock"].pop("measured_mhz_imul", None)
mb.pop("kernel_socket", None)
mb.pop("kernel_copy", None)
(old / "microbench.json").write_text(json.dumps(mb))
here = json.loads(run("measure", "microbench").stdout)["clock"]
r = run("calibrate", "host", "--from", old, "-o", WORK / "carried-adds")
if here["measured_mhz"] > 1.2 * here["measured_mhz_imul"]:
    check(r.returncode == 2 and "--scale clock" in r.stderr and not (WORK / "carried-adds").exists(),
          f"adds against a core that folds them: {r.returncode} {r.stderr[-400:]}")
else:
    check(r.returncode == 0 and "has no kernel socket round trip" in r.stdout and
          "by the kernel code's factor" in r.stdout and "has no kernel copy figure" in r.stdout,
          f"adds on both sides, kernel code by the null system call: {r.returncode} {r.stdout[-400:]}")
r = run("calibrate", "host", "--from", out, "-o", out)
check(r.returncode == 2 and "is the profile being carried" in r.stderr, f"not onto itself: {r.returncode} {r.stderr[-300:]}")
r = run("calibrate", "host", "--from", WORK / "empty-xdg", "-o", WORK / "carried-bad")
check(r.returncode == 2 and "microbench.json" in r.stderr and not (WORK / "carried-bad").exists(),
      f"--from a directory without microbench.json: {r.returncode} {r.stderr[-300:]}")
r = run("calibrate", "host", "--from", out, "-o", WORK / "file")
check(r.returncode == 2 and "not a directory" in r.stderr, f"--from -o a file: {r.returncode} {r.stderr[-300:]}")
r = run("calibrate", "host", "--from", out, "--bench", out / "microbench.json")
check(r.returncode == 2 and "-o DIR" in r.stderr, f"--bench without -o: {r.returncode} {r.stderr[-300:]}")

# Without a profile: the error says how to make one.
r = run("run", exp, "-o", WORK / "none2", xdg=EMPTY)
check(r.returncode == 2 and "simloop calibrate host" in r.stderr, f"no profile: {r.stderr[-400:]}")

# simloop list: the profile, its date and fingerprint.
r = run("list", "--kind", "hosts")
check(r.returncode == 0, f"list: {r.stderr[-400:]}")
check(re.search(rf"^  {fp}  20\d\d-\d\d-\d\dT[0-9:]+Z  \(this host\)  Test CPU", r.stdout, re.M),
      f"list shows the profile: {r.stdout}")
check("machine: host" in r.stdout, f"list names what reaches it: {r.stdout}")
r = run("list", "--kind", "hosts", xdg=EMPTY)
check("(none under" in r.stdout and "simloop calibrate host" in r.stdout, f"list, none: {r.stdout}")
# Made again without a perf (or root) into the hosts directory itself (no
# -o): the Linux part is skipped, saying why, the rest completes, and the
# Linux files of the profile before do not outlive it.
if kernel:
    r = run(*args[:2], *args[4:], "--perf", WORK / "no-such-perf", timeout=300)
    check(r.returncode == 0, f"without perf: exit {r.returncode}: {r.stderr[-600:]}")
    check("skipped the Linux stack: no usable perf program" in r.stdout, f"says why: {r.stdout[:900]}")
    left = sorted(p.name for p in out.glob("*"))
    check((out / "host-bsd-machine.yaml").is_file() and not any("linux" in n or "kernel" in n for n in left),
          f"without perf, no Linux files left: {left}")
    r = run("run", "--set", "machine=host", "--set", "stack=host-bsd", "--set", "workload.packets=200",
            "-o", WORK / "bsd-only")
    check(r.returncode == 0, f"machine host is the BSD fit's now: {r.stderr[-600:]}")
    r = run("run", "--set", "machine=host", "--set", "stack=host-linux", "-o", WORK / "linux2")
    check(r.returncode == 2 and "simloop calibrate host" in r.stderr,
          f"no Linux stack in a profile without it: {r.returncode} {r.stderr[-400:]}")
# Carried into the hosts directory (no -o): it replaces the profile there
# whole, the measured fits and CSVs of the one before not left beside it.
shutil.copytree(out, WORK / "source")
r = run("calibrate", "host", "--from", WORK / "source")
check(r.returncode == 0, f"--from into the hosts directory: {r.returncode} {r.stderr[-400:]}")
left = sorted(p.name for p in out.glob("*"))
check("host-bsd-stack.yaml" in left and not any(n.endswith("-fit.json") or n.endswith("split.csv") for n in left),
      f"only the carried files: {left}")
info = json.loads((out / "host.json").read_text())
check("carried_from" in info and "machine: host-bsd" in info.get("names", []), f"host.json: {info}")
finish()
