#!/usr/bin/env python3
"""simloop run on real harness builds (layout.build, workload.service full).

same   `simloop run`, `simloop layout` and `simloop icache` on the same
       build (kept in data/link-order: its nm and link maps, the path's
       profile), the same paths and geometries: fails (exit 1) unless
       run's and layout's misses per packet are within --tolerance % of
       icache's (or within --floor misses where icache predicts fewer than
       one).
table  `simloop run` on every build cachegrind measured for the I-cache
       validation (icache.md's paths: data/cachegrind-PATH.csv, each
       build's data/nm map, the path's data/profile), beside cachegrind's
       counts: one row per path and geometry. With --update FILE, writes
       the table between its markers in FILE; with --check FILE, fails if
       FILE's table differs.
kpps   the README's worked example: one build (default c006-inet-13168)
       linked by default and in the advice of `simloop layout` (the
       relinked build's own nm map), run on one path: misses, cycles and
       kpps of each, beside cachegrind's counts of both builds (the
       README quotes it; its test docs.quotes.README runs it).
"""
import argparse
import csv
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
LINK = os.path.join(DATA, "link-order")
EXPERIMENT = os.path.join(HERE, "run-build", "harness.yaml")
MARK_BEGIN = "<!-- table: run_build.py table -->"
MARK_END = "<!-- end of run table -->"
# kpps prices the misses with the i7-870's own L2 (256 KB, 8 ways, neither
# inclusive nor exclusive): harness.yaml leaves L2 out to count as cachegrind
# does, which sends every L1 miss to memory. L1's misses are the same either
# way (the path's code is far smaller than L2).
L2_SETS = ["machine.cache.l2.enabled=true", "machine.cache.l2.size_bytes=262144",
           "machine.cache.l2.assoc=8", "machine.cache.l2.exclusive=false",
           "machine.cache.l2.back_invalidate=false"]
L2_NOTE = "256 KB 8-way"


def gunzip(src, dst):
    with gzip.open(src, "rt") as fi, open(dst, "w") as fo:
        fo.write(fi.read())
    return dst


def geometry_sets(i1):
    size, assoc, line = i1.split(",")
    return [f"machine.cache.l1.size_bytes={size}", f"machine.cache.l1.assoc={assoc}",
            f"machine.cache.l1.line_bytes={line}"]


def run(simloop, out_dir, name, nm, profile, payload, dest, i1, packets, extra=()):
    """One `simloop run` of a build: its result row."""
    d = os.path.join(out_dir, name)
    cmd = [simloop, "-q", "run", EXPERIMENT, "-o", d, "--set", f"name={name}",
           "--set", f"layout.build.nm={os.path.abspath(nm)}",
           "--set", f"layout.build.profile={os.path.abspath(profile)}",
           "--set", f"workload.payload={payload}", "--set", f"workload.dest={dest}",
           "--set", f"workload.packets={packets}"]
    for s in list(geometry_sets(i1)) + list(extra):
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    with open(os.path.join(d, f"{name}.csv"), newline="") as f:
        return next(csv.DictReader(f))


def icache(simloop, nm, profile, payload, dest, geoms, out):
    cmd = [simloop, "-q", "icache", nm, "--profile", profile, "-l", str(payload), "--dest", dest,
           "-o", out]
    for g in geoms:
        cmd += ["--I1", g]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    with open(out, newline="") as f:
        return {r["i1"]: float(r["predicted_i1_misses_per_packet"]) for r in csv.DictReader(f)}


def layout(simloop, nm, mapfile, name, profile, payload, dest, geoms, out_dir):
    cmd = [simloop, "-q", "layout", "--nm", nm, "--map", mapfile, "--no-search",
           "--path", f"name={name},profile={profile},payload={payload},path={dest}",
           "--out-dir", out_dir]
    for g in geoms:
        cmd += ["--I1", g]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    with open(os.path.join(out_dir, "predicted.csv"), newline="") as f:
        return {r["i1"]: float(r["predicted_i1_misses_per_packet"]) for r in csv.DictReader(f)
                if r["order"] == "default link"}


def cmd_same(a):
    geoms = a.i1 or ["16384,1,64", "16384,2,64"]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        nm = gunzip(os.path.join(LINK, f"{a.build}.nm.gz"), os.path.join(tmp, f"{a.build}.nm"))
        mapfile = gunzip(os.path.join(LINK, f"{a.build}.map.gz"),
                         os.path.join(tmp, f"{a.build}.map"))
        print(f"build {a.build}, {a.packets} packets a run; misses per packet")
        print(f"{'path':<12} {'I1':<12} {'icache':>9} {'layout':>9} {'run':>9} {'run-icache':>11}")
        for path in a.paths:
            payload, dest = path_fields(path)
            profile = os.path.join(LINK, f"profile-{path}.txt")
            ic = icache(a.simloop, nm, profile, payload, dest, geoms,
                        os.path.join(tmp, f"icache-{path}.csv"))
            lo = layout(a.simloop, nm, mapfile, path, profile, payload, dest, geoms,
                        os.path.join(tmp, f"layout-{path}"))
            for g in geoms:
                r = float(run(a.simloop, tmp, f"{path}-{g.replace(',', '-')}", nm, profile,
                              payload, dest, g, a.packets)["i1_misses_per_packet"])
                i = ic[g]
                print(f"{path:<12} {g:<12} {i:9.3f} {lo[g]:9.3f} {r:9.3f} "
                      f"{100 * (r - i) / i if i else 0:+10.2f}%")
                for what, v in (("run", r), ("layout", lo[g])):
                    ok = abs(v - i) <= (a.tolerance / 100 * i if i >= 1 else a.floor)
                    if not ok:
                        failures.append(f"{path} I1 {g}: {what} {v:.3f}, icache {i:.3f}")
    for f in failures:
        print("FAIL " + f)
    if not failures:
        print(f"run and layout within {a.tolerance} % of icache in every cell")
    return 1 if failures else 0


def path_fields(path):
    name, payload = path.rsplit("-", 1)
    return int(payload), name


def table_rows(a):
    """(path, i1, layouts, measured, run) for every kept cachegrind cell."""
    jobs = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in a.paths:
            with open(os.path.join(DATA, f"cachegrind-{path}.csv"), newline="") as f:
                rows = list(csv.DictReader(f))
            profile = os.path.join(DATA, f"profile-{path}.txt")
            if not rows or not os.path.exists(profile):
                continue
            for r in rows:
                if (r["align"], r["copy"]) != ("none", "m_copy"):
                    continue
                nm = os.path.join(DATA, "nm", f"{r['layout']}.nm.gz")
                jobs.append((path, r["i1"], r["layout"], float(r["i1_misses_per_packet"]), nm,
                             profile, int(r["payload"]), r["dest"]))

        def one(j):
            path, i1, lay, measured, nm, profile, payload, dest = j
            name = f"{path}-{lay}-{i1.replace(',', '-')}"
            got = run(a.simloop, tmp, name, nm, profile, payload, dest, i1, a.packets)
            return j[:4] + (float(got["i1_misses_per_packet"]),)

        with ThreadPoolExecutor(max_workers=a.jobs) as ex:
            return list(ex.map(one, jobs))


def format_table(cells, packets):
    by = {}
    for path, i1, lay, m, r in cells:
        by.setdefault((path, i1), []).append((m, r))
    out = ["| path | I1 | builds | cachegrind: min | max | run: median error | worst error |"
           " median abs error | worst abs error |",
           "|---|---|---|---|---|---|---|---|---|"]
    rel_all, abs_all = [], []
    for (path, i1), pts in sorted(by.items(), key=lambda kv: (kv[0][0], geom_key(kv[0][1]))):
        ms = [m for m, _ in pts]
        rel = [100 * (r - m) / m for m, r in pts if m >= 1]
        ab = [r - m for m, r in pts if m < 1]
        rel_all += rel
        abs_all += ab
        out.append(
            f"| {path} | {i1} | {len(pts)} | {fmt_count(min(ms))} | {fmt_count(max(ms))} | "
            f"{fmt_med(rel, '%')} | {fmt_worst(rel, '%')} | {fmt_med(ab, '')} | "
            f"{fmt_worst(ab, '')} |")
    out.append("")
    out.append(
        f"{len(cells)} cells ({packets} packets a run): relative error (cachegrind at least 1 miss "
        f"per packet, {len(rel_all)} cells) median {fmt_med(rel_all, ' %')}, worst "
        f"{fmt_worst(rel_all, ' %')}; absolute error elsewhere ({len(abs_all)} cells) median "
        f"{fmt_med(abs_all, '')}, worst {fmt_worst(abs_all, '')} misses per packet.")
    return "\n".join(out)


def geom_key(i1):
    return tuple(int(x) for x in i1.split(","))


def fmt_med(v, unit):
    digits = 1 if unit else 2  # percent, or misses per packet
    return f"{statistics.median(abs(x) for x in v):.{digits}f}{unit}" if v else "-"


def fmt_worst(v, unit):
    digits = 1 if unit else 2
    return f"{max(v, key=abs):+.{digits}f}{unit}" if v else "-"


def fmt_count(m):
    """cachegrind's count (two runs subtracted: -0.0001 is none)."""
    return f"{max(m, 0.0):.2f}"


def cmd_table(a):
    table = format_table(table_rows(a), a.packets)
    print(table)
    failed = 0
    for target in a.update + a.check:
        with open(target) as f:
            text = f.read()
        if text.count(MARK_BEGIN) != 1 or text.count(MARK_END) != 1:
            print(f"FAIL {target}: expected one '{MARK_BEGIN}' and one '{MARK_END}'")
            failed = 1
            continue
        head, rest = text.split(MARK_BEGIN + "\n", 1)
        old, tail = rest.split(MARK_END, 1)
        if target in a.check:
            if old.strip() != table.strip():
                print(f"FAIL {target}: its table differs from what the data give")
                failed = 1
            else:
                print(f"{target}: the table is what the data give")
            continue
        with open(target, "w") as f:
            f.write(head + MARK_BEGIN + "\n" + table + "\n" + MARK_END + tail)
        print(f"wrote the table into {target}")
    return failed


def measured_cell(path, layout, i1):
    """cachegrind's I1 misses per packet of a link-order build, or None."""
    for f in (f"cachegrind-{path}-default.csv", f"cachegrind-{path}.csv"):
        with open(os.path.join(LINK, f), newline="") as h:
            for r in csv.DictReader(h):
                if r["layout"] == layout and r["i1"] == i1:
                    return float(r["i1_misses_per_packet"])
    return None


def cmd_kpps(a):
    payload, dest = path_fields(a.path)
    profile = os.path.join(LINK, f"profile-{a.path}.txt")
    builds = [("default link", f"{a.build}.nm.gz"), ("advice", f"{a.build}-advice.nm.gz")]
    lines = []
    lines.append(f"build {a.build} on {a.path} (payload {payload} B, {dest}), I1 {a.i1[0]}, "
                 f"L2 {L2_NOTE}, {a.packets} packets; machine and stack of "
                 f"{os.path.relpath(EXPERIMENT, os.path.dirname(os.path.dirname(HERE)))}")
    lines.append(f"{'link':<14} {'run: misses/pkt':>16} {'cycles/pkt':>11} {'kpps':>9} "
                 f"{'cachegrind: misses/pkt':>23}")
    with tempfile.TemporaryDirectory() as tmp:
        res = []
        for label, nm in builds:
            r = run(a.simloop, tmp, label.replace(" ", "-"), os.path.join(LINK, nm), profile,
                    payload, dest, a.i1[0], a.packets, L2_SETS)
            res.append(r)
            m = measured_cell(a.path, nm[:-len(".nm.gz")], a.i1[0])
            lines.append(f"{label:<14} {float(r['i1_misses_per_packet']):16.2f} "
                         f"{float(r['cycles_per_packet']):11.0f} {float(r['kpps']):9.1f} "
                         f"{'-' if m is None else fmt_count(m):>23}")
    k0, k1 = float(res[0]["kpps"]), float(res[1]["kpps"])
    lines.append(f"predicted gain: {100 * (k1 - k0) / k0:+.1f} % kpps")
    print("\n".join(lines))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--simloop", required=True)
    p.add_argument("--packets", type=int, default=20000)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("same")
    s.add_argument("--build", default="c006-inet-13168")
    s.add_argument("--paths", nargs="+", default=["loopback-18", "wire-18"])
    s.add_argument("--i1", action="append")
    s.add_argument("--tolerance", type=float, default=1.0, help="percent")
    s.add_argument("--floor", type=float, default=0.05, help="misses per packet")
    t = sub.add_parser("table")
    t.add_argument("--jobs", type=int, default=2)
    t.add_argument("--paths", nargs="+",
                   default=["loopback-18", "self-1024", "broadcast-1024", "wire-18",
                            "wire-18-assoc"],
                   help="the paths of icache.md (data/cachegrind-PATH.csv, data/profile-PATH.txt)")
    t.add_argument("--update", action="append", default=[], metavar="FILE",
                   help="write the table between its markers in FILE (repeatable)")
    t.add_argument("--check", action="append", default=[], metavar="FILE",
                   help="fail unless FILE's table is what the data give (repeatable)")
    k = sub.add_parser("kpps")
    k.add_argument("--build", default="c006-inet-13168")
    k.add_argument("--path", default="loopback-18")
    k.add_argument("--i1", action="append", default=None)
    a = p.parse_args()
    if a.cmd == "kpps" and not a.i1:
        a.i1 = ["16384,1,64"]
    return {"same": cmd_same, "table": cmd_table, "kpps": cmd_kpps}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
