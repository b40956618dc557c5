#!/usr/bin/env python3
"""What goes into `simloop layout` on a real build is checked.

Usage: layout_build_checks_test.py SIMLOOP SOURCE_DIR WORK_DIR CASE

Each CASE feeds one mismatch made from the kept link-order data (or a
small file written here) and asserts that simloop refuses it with exit 2,
names the mismatch and writes nothing into --out-dir, or (unknown names in
an order, an empty advice) says so plainly.
"""
import gzip
import shutil
import subprocess
import sys
from pathlib import Path

SIMLOOP, SRC, WORK, CASE = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
DATA = SRC / "experiments/validation/data/link-order"
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
OUT = WORK / "out"
OUT.mkdir()


def path(name, payload, dest, profile=None):
    profile = profile or DATA / f"profile-{name}.txt"
    return ["--path", f"name={name},profile={profile},payload={payload},path={dest}"]


def layout(*args):
    cmd = [SIMLOOP, "-q", "layout", *map(str, args), "--out-dir", OUT]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(" ".join(map(str, cmd)))
    print(r.stdout + r.stderr)
    return r.returncode, r.stdout + r.stderr


def refused(args, *needles):
    rc, out = layout(*args)
    assert rc == 2, f"exit {rc}, expected 2"
    for n in needles:
        assert n in out, f"the message lacks {n!r}"
    assert not any(OUT.iterdir()), f"written: {sorted(p.name for p in OUT.iterdir())}"


WIRE = path("wire-18", 18, "wire")
I1 = ["--I1", "16384,1,64"]

if CASE == "profile_of_another_path":
    # The self-1024 profile given for the wire path.
    refused(["--nm", DATA / "base.nm.gz", "--map", DATA / "base.map.gz", *I1,
             *path("wire-18", 18, "wire", DATA / "profile-self-1024.txt")],
            "profile-self-1024.txt: a profile of payload 1024, dest self",
            "is payload 18, dest wire")
elif CASE == "nm_and_map_of_two_builds":
    # The base build's nm with the map of a build padded before inet.o.
    refused(["--nm", DATA / "base.nm.gz", "--map", DATA / "c006-inet-13168.map.gz", *I1, *WIRE],
            "base.nm.gz", "c006-inet-13168.map.gz", "not of one build",
            "at other addresses in nm than in the map")
elif CASE == "nm_without_code":
    # nm of a stripped build: no code symbol at all (a data symbol only).
    nm = WORK / "stripped.nm"
    nm.write_text("0000000000601000 0000000000000008 D some_data\n")
    refused(["--nm", nm, "--map", DATA / "base.map.gz", *I1, *WIRE],
            "stripped.nm: no code symbols")
    # nm cut down to the owned functions: the rest of the build's code is
    # missing, and a prediction from it would be far too low.
    owned = {l.split()[0] for l in (SRC / "configs/harness/owners.txt").read_text().splitlines()
             if l.strip() and not l.startswith("#")}
    with gzip.open(DATA / "base.nm.gz", "rt") as f:
        kept = [l for l in f if l.split()[-1] in owned]
    cut = WORK / "cut.nm"
    cut.write_text("".join(kept))
    refused(["--nm", cut, "--map", DATA / "base.map.gz", *I1, *WIRE],
            "cut.nm and --map", "are not in nm", "cut short, or of another program")
elif CASE == "order_with_unknown_names":
    # An order of five names, two of them no function of this build.
    with gzip.open(DATA / "base.nm.gz", "rt") as f:
        code = [l.split()[3] for l in f if len(l.split()) == 4 and l.split()[2] in "Tt"]
    order = WORK / "mixed.order"
    order.write_text("\n".join(code[100:103] + ["no_such_function", "_Z9not_hereiv"]) + "\n")
    rc, out = layout("--nm", DATA / "base.nm.gz", "--map", DATA / "base.map.gz", *I1, *WIRE,
                     "--order", f"mixed={order}", "--no-search")
    assert rc == 0, f"exit {rc}"
    assert "mixed.order: 2 of its 5 names are not functions of this build" in out, "no count"
    assert "no_such_function" in out and "_Z9not_hereiv" in out, "the names are not shown"
elif CASE == "empty_advice":
    # At 32 KB 2-way the base build's loopback path misses nothing: the
    # advice is empty, and says why.
    rc, out = layout("--nm", DATA / "base.nm.gz", "--map", DATA / "base.map.gz",
                     "--I1", "32768,2,64", *path("loopback-18", 18, "loopback"))
    assert rc == 0, f"exit {rc}"
    assert "advice: none, keep the default link" in out, "the empty advice is not said plainly"
    assert "the default link has no predicted misses" in out, "no reason given"
    assert "0 functions ordered" not in out
else:
    sys.exit(f"unknown case {CASE}")
print(f"{CASE}: checked")
