#!/usr/bin/python3
"""`simloop icache` and `simloop layout --nm` read a build's files (nm map,
profile, owners, link map, order) gzip-compressed as layout.build does, with
the same reader: the same predictions as from the plain files, and a
LAYOUT.nm.gz map named LAYOUT as LAYOUT.nm is.

    build_files_gzip_test.py SIMLOOP DATA_DIR WORK_DIR
"""
import csv
import gzip
import pathlib
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, DATA, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
shutil.rmtree(WORK, ignore_errors=True)
(WORK / "plain").mkdir(parents=True)
(WORK / "gz").mkdir()
LINK = DATA / "experiments" / "validation" / "data" / "link-order"
BUILD = "c006-inet-13168"

# The same files, plain and compressed here.
texts = {
    f"{BUILD}.nm": gzip.decompress((LINK / f"{BUILD}.nm.gz").read_bytes()),
    f"{BUILD}.map": gzip.decompress((LINK / f"{BUILD}.map.gz").read_bytes()),
    "profile.txt": (LINK / "profile-loopback-18.txt").read_bytes(),
    "owners.txt": (DATA / "configs" / "harness" / "owners.txt").read_bytes(),
    # Three functions of the build, by the names ld.lld's ordering file takes.
    "first.order": b"_ZN7simloop3net5StackINS0_9NullProbeEE10udp_outputERNS0_6SocketEPNS0_4MbufEjt\n"
                   b"_ZN7simloop3net5StackINS0_9NullProbeEE9ip_outputEPNS0_4MbufEPNS0_5IfnetEjjb\n"
                   b"_ZN7simloop3net5StackINS0_9NullProbeEE12ether_outputEPNS0_5IfnetEPNS0_4MbufEjb\n",
}
plain, gz = {}, {}
for name, data in texts.items():
    plain[name] = WORK / "plain" / name
    plain[name].write_bytes(data)
    gz[name] = WORK / "gz" / (name + ".gz")
    gz[name].write_bytes(gzip.compress(data))


def simloop(*args):
    # errors="replace": a message may quote the bytes of a compressed file.
    p = subprocess.run([SIMLOOP, "-q", *map(str, args)], cwd=WORK, capture_output=True,
                       text=True, errors="replace", timeout=600)
    return p


def rows(file):
    with open(file, newline="") as f:
        return list(csv.DictReader(f))


# simloop icache: a LAYOUT.nm.gz map, a compressed profile and owners file.
for kind, f in (("plain", plain), ("gz", gz)):
    p = simloop("icache", f[f"{BUILD}.nm"], "--profile", f["profile.txt"], "--owners",
                f["owners.txt"], "--I1", "16384,1,64", "-o", WORK / f"icache-{kind}.csv")
    check(p.returncode == 0, f"icache, {kind} files: exit {p.returncode}: {p.stderr}")
if (WORK / "icache-gz.csv").exists() and (WORK / "icache-plain.csv").exists():
    a, b = rows(WORK / "icache-plain.csv"), rows(WORK / "icache-gz.csv")
    check(a == b, f"icache: compressed files predict otherwise: {a} != {b}")
    check(b and b[0]["layout"] == BUILD, f"icache: {BUILD}.nm.gz is not named {BUILD}: {b}")

# simloop layout --nm alone (a report on the default experiment).
out = {}
for kind, f in (("plain", plain), ("gz", gz)):
    p = simloop("layout", "--nm", f[f"{BUILD}.nm"], "--owners", f["owners.txt"], "--no-search")
    check(p.returncode == 0, f"layout --nm, {kind} files: exit {p.returncode}: {p.stderr}")
    out[kind] = [l for l in p.stdout.splitlines() if "predicted per packet" in l]
check(out["plain"] and out["plain"] == out["gz"],
      f"layout --nm: compressed files predict otherwise: {out}")

# simloop layout --nm --map --path --order: a real build's prediction.
for kind, f in (("plain", plain), ("gz", gz)):
    p = simloop("layout", "--nm", f[f"{BUILD}.nm"], "--map", f[f"{BUILD}.map"], "--owners",
                f["owners.txt"], "--path",
                f"name=loopback,profile={f['profile.txt']},payload=18,path=loopback",
                "--order", f"first={f['first.order']}", "--I1", "16384,1,64", "--no-search",
                "--out-dir", WORK / f"layout-{kind}")
    check(p.returncode == 0, f"layout --nm --map, {kind} files: exit {p.returncode}: {p.stderr}")
if (WORK / "layout-gz" / "predicted.csv").exists() and \
        (WORK / "layout-plain" / "predicted.csv").exists():
    a, b = rows(WORK / "layout-plain" / "predicted.csv"), rows(WORK / "layout-gz" / "predicted.csv")
    check(a == b, f"layout --nm --map: compressed files predict otherwise: {a} != {b}")
    check(any(r["order"] == "first" for r in b), f"layout --order: no row of the order: {b}")

# A compressed file cut short is refused, naming it.
whole = gz["profile.txt"].read_bytes()
cut = WORK / "cut-profile.txt.gz"
cut.write_bytes(whole[:len(whole) // 2])
p = simloop("icache", gz[f"{BUILD}.nm"], "--profile", cut, "--I1", "16384,1,64")
check(p.returncode == 2, f"icache, a cut profile: exit {p.returncode}: {p.stderr}")
check(f"{cut}: cannot read the file" in p.stderr, f"icache, a cut profile: {p.stderr!r}")

finish()
