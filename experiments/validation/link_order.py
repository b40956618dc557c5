#!/usr/bin/env python3
"""Function-order advice against cachegrind, from the data link_order.sh keeps.

pick   the layouts with the most predicted misses, summed over the rows of
       `simloop icache -o` CSVs (every path and geometry), printed as
       layouts.txt lists them: NAME PAD_BYTES:BEFORE_UNIT, one a line.
check  for each advised layout in data/link-order: `simloop layout` on its
       kept nm and link maps and the kept profiles predicts the default link
       and every kept order (no build, no cachegrind), beside cachegrind's
       counts of the linked builds; prints the report. With --write, writes
       it; else compares it with link-order.md and fails (exit 1) if any
       figure or verdict differs.
"""
import argparse
import csv
import gzip
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
REL_BAND, ABS_BAND = 10.0, 1.0  # the I-cache validation's: 10 % where >= 1 miss


def cmd_pick(a):
    """Prints `NAME PAD:UNIT`, one line per layout picked: layouts.txt."""
    entries = {}
    for e in a.layouts.split(";"):
        f = e.split(":")
        if len(f) != 3 or not f[0] or not f[1].isdigit():
            print(f"--layouts: entry '{e}': expected NAME:PAD_BYTES:BEFORE_UNIT", file=sys.stderr)
            return 2
        entries[f[0]] = f"{f[1]}:{f[2]}"
    total = defaultdict(float)
    for f in a.csvs:
        with open(f, newline="") as h:
            rows = csv.DictReader(h)
            for key in ("layout", "predicted_i1_misses_per_packet"):
                if key not in (rows.fieldnames or []):
                    print(f"{f}:1: no column '{key}' (expected `simloop icache -o` CSV)",
                          file=sys.stderr)
                    return 2
            for n, r in enumerate(rows, start=2):
                if r["layout"] not in entries:
                    print(f"{f}:{n}: layout '{r['layout']}' is not one of --layouts",
                          file=sys.stderr)
                    return 2
                total[r["layout"]] += float(r["predicted_i1_misses_per_packet"])
    if len(total) < a.count:
        print(f"--count {a.count}: only {len(total)} layouts in {' '.join(a.csvs)}",
              file=sys.stderr)
        return 2
    for l in sorted(total, key=lambda l: (-total[l], l))[:a.count]:
        print(l, entries[l])
    return 0


def lines(path):
    with open(path) as f:
        return [l.split() for l in f if l.strip() and not l.startswith("#")]


def gunzip(src, dst):
    with gzip.open(src, "rt") as fi, open(dst, "w") as fo:
        fo.write(fi.read())
    return dst


def within_band(pred, meas):
    if meas >= 1:
        return abs(pred - meas) <= REL_BAND / 100 * meas
    return abs(pred - meas) <= ABS_BAND


def measured_rows(data, path):
    m = {}
    for suffix in ("-default", ""):
        f = os.path.join(data, f"cachegrind-{path}{suffix}.csv")
        if not os.path.exists(f):
            continue
        with open(f, newline="") as h:
            for r in csv.DictReader(h):
                m[(r["layout"], r["i1"])] = float(r["i1_misses_per_packet"])
    return m


def report(a):
    data = a.data
    layouts = lines(os.path.join(data, "layouts.txt"))
    paths = [p[0].split(":") for p in lines(os.path.join(data, "paths.txt"))]
    geoms = [g[0] for g in lines(os.path.join(data, "geometries.txt"))]
    out = []
    out.append("| layout | path | I1 | before: measured | predicted | advice: predicted | "
               "measured | within band | call order, own path | call order, all paths |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    sums = defaultdict(float)
    counts = defaultdict(int)
    cells = 0
    address_checks = []
    with tempfile.TemporaryDirectory() as tmp:
        for l, padunit in layouts:
            nm = gunzip(os.path.join(data, f"{l}.nm.gz"), os.path.join(tmp, f"{l}.nm"))
            mp = gunzip(os.path.join(data, f"{l}.map.gz"), os.path.join(tmp, f"{l}.map"))
            adv = os.path.join(data, f"advice-{l}")
            cmd = [a.simloop, "-q", "layout", "--nm", nm, "--map", mp, "--no-search",
                   "--out-dir", os.path.join(tmp, l)]
            for name, payload, dest in paths:
                cmd += ["--path", f"name={name},profile={os.path.join(data, f'profile-{name}.txt')},"
                        f"payload={payload},path={dest}"]
            for g in geoms:
                cmd += ["--I1", g]
            kinds = ["advice", "call-order-all"] + [f"call-order-{p[0]}" for p in paths]
            for k in kinds:
                cmd += ["--order", f"kept-{k}={os.path.join(adv, k + '.order')}"]
            subprocess.run(cmd, check=True, capture_output=True, text=True)
            pred = {}
            with open(os.path.join(tmp, l, "predicted.csv"), newline="") as h:
                for r in csv.DictReader(h):
                    pred[(r["order"], r["path"], r["i1"])] = \
                        float(r["predicted_i1_misses_per_packet"])
            # The relinked builds' own nm maps put every hot function where
            # the prediction moved it: the same figures from `simloop icache`.
            for k in ("advice",):
                linked = gunzip(os.path.join(data, f"{l}-{k}.nm.gz"),
                                os.path.join(tmp, f"{l}-{k}.nm"))
                for name, payload, dest in paths:
                    ic = os.path.join(tmp, f"ic-{l}-{k}-{name}.csv")
                    cmd = [a.simloop, "-q", "icache", linked, "-l", payload, "--dest", dest,
                           "--profile", os.path.join(data, f"profile-{name}.txt"), "-o", ic]
                    for g in geoms:
                        cmd += ["--I1", g]
                    subprocess.run(cmd, check=True, capture_output=True, text=True)
                    with open(ic, newline="") as h:
                        for r in csv.DictReader(h):
                            got = float(r["predicted_i1_misses_per_packet"])
                            want = pred[(f"kept-{k}", name, r["i1"])]
                            address_checks.append(abs(got - want) < 1e-9)
            for name, payload, dest in paths:
                meas = measured_rows(data, name)
                for g in geoms:
                    mb = meas.get((l, g))
                    ma = meas.get((f"{l}-advice", g))
                    mo = meas.get((f"{l}-call-order-{name}", g))
                    mall = meas.get((f"{l}-call-order-all", g))
                    pb = pred[("default link", name, g)]
                    pa = pred[("kept-advice", name, g)]
                    fmt = lambda v: "-" if v is None else f"{v:.2f}"
                    band = "-" if ma is None else ("yes" if within_band(pa, ma) else "**no**")
                    out.append(f"| {l} | {name} | {g} | {fmt(mb)} | {pb:.2f} | {pa:.2f} | "
                               f"{fmt(ma)} | {band} | {fmt(mo)} | {fmt(mall)} |")
                    if None in (mb, ma, mo, mall):
                        continue
                    cells += 1
                    sums["before"] += mb
                    sums["advice"] += ma
                    sums["advice_pred"] += pa
                    sums["own"] += mo
                    sums["all"] += mall
                    counts["band"] += within_band(pa, ma)
                    counts["better"] += ma <= mb + a.noise
                    counts["strictly"] += ma < mb - a.noise
                    counts["not_worse_than_own"] += ma <= mo + a.noise
                    counts["not_worse_than_all"] += ma <= mall + a.noise
    out.append("")
    out.append(f"Summed over the {cells} measured cells (misses per packet): before "
               f"{sums['before']:.2f}; advice {sums['advice']:.2f} measured "
               f"({sums['advice_pred']:.2f} predicted); hot functions in call order "
               f"{sums['own']:.2f} from the path's own profile, {sums['all']:.2f} from all paths.")
    out.append("")
    out.append(f"- the advice measured no worse than before (noise {a.noise}): "
               f"{counts['better']} of {cells} cells, fewer misses in {counts['strictly']}")
    out.append(f"- the advice's prediction within the band (within {REL_BAND:.0f} % where "
               f"cachegrind counts at least 1 miss, within {ABS_BAND:.0f} miss elsewhere): "
               f"{counts['band']} of {cells} cells")
    out.append(f"- the advice no worse than call order from the path's own profile: "
               f"{counts['not_worse_than_own']} of {cells} cells; from all paths: "
               f"{counts['not_worse_than_all']} of {cells}")
    out.append(f"- summed, the advice at least as good as call order (own path): "
               f"{'yes' if sums['advice'] <= sums['own'] + a.noise else '**no**'}; "
               f"(all paths): {'yes' if sums['advice'] <= sums['all'] + a.noise else '**no**'}")
    out.append(f"- the relinked advice builds' own nm maps give `simloop icache` the predicted "
               f"figures: {sum(address_checks)} of {len(address_checks)} path and geometry cells")
    return "\n".join(out)


BEGIN, END = "<!-- table: link_order.py check -->", "<!-- end of table -->"


def cmd_check(a):
    table = report(a)
    print(table)
    md = os.path.join(HERE, "link-order.md")
    if a.write:
        head = open(a.write).read().split(BEGIN)[0] if os.path.exists(a.write) else ""
        tail = open(a.write).read().split(END, 1)[1] if os.path.exists(a.write) and \
            END in open(a.write).read() else "\n"
        with open(a.write, "w") as f:
            f.write(head + BEGIN + "\n" + table + "\n" + END + tail)
        return 0
    text = open(md).read()
    if BEGIN not in text or END not in text:
        print(f"FAIL {md}: no table between the markers")
        return 1
    kept = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    if kept != table.strip():
        print(f"FAIL {md}: its table differs from the one the data gives")
        for x, y in zip(kept.splitlines(), table.strip().splitlines()):
            if x != y:
                print(f"  kept: {x}\n  data: {y}")
        return 1
    print(f"\n{md}: every figure and verdict agrees with the data")
    return 0


def cmd_same(a):
    """`simloop layout`'s default link against `simloop icache`, cell by cell."""
    data = a.data
    paths = [p[0].split(":") for p in lines(os.path.join(data, "paths.txt"))]
    geoms = [g[0] for g in lines(os.path.join(data, "geometries.txt"))]
    compared, differ = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for l, _ in lines(os.path.join(data, "layouts.txt")):
            nm = gunzip(os.path.join(data, f"{l}.nm.gz"), os.path.join(tmp, f"{l}.nm"))
            mp = gunzip(os.path.join(data, f"{l}.map.gz"), os.path.join(tmp, f"{l}.map"))
            i1 = [x for g in geoms for x in ("--I1", g)]
            cmd = [a.simloop, "-q", "layout", "--nm", nm, "--map", mp, "--no-search",
                   "--out-dir", os.path.join(tmp, l), *i1]
            for name, payload, dest in paths:
                cmd += ["--path", f"name={name},profile={os.path.join(data, f'profile-{name}.txt')},"
                        f"payload={payload},path={dest}"]
            subprocess.run(cmd, check=True, capture_output=True, text=True)
            with open(os.path.join(tmp, l, "predicted.csv"), newline="") as h:
                lay = {(r["path"], r["i1"]): float(r["predicted_i1_misses_per_packet"])
                       for r in csv.DictReader(h) if r["order"] == "default link"}
            for name, payload, dest in paths:
                ic = os.path.join(tmp, f"ic-{l}-{name}.csv")
                subprocess.run([a.simloop, "-q", "icache", nm, "-l", payload, "--dest", dest,
                                "--profile", os.path.join(data, f"profile-{name}.txt"), "-o", ic,
                                *i1], check=True, capture_output=True, text=True)
                with open(ic, newline="") as h:
                    for r in csv.DictReader(h):
                        compared += 1
                        got, want = lay[(name, r["i1"])], float(r["predicted_i1_misses_per_packet"])
                        print(f"{l} {name} {r['i1']}: layout {got:.4f}, icache {want:.4f}")
                        if got != want:
                            differ.append(f"{l} {name} {r['i1']}")
    for d in differ:
        print(f"FAIL {d}: simloop layout and simloop icache differ")
    print(f"{compared} cells compared, {len(differ)} differ")
    return 1 if differ or compared == 0 else 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("pick")
    k.add_argument("--count", type=int, default=3)
    k.add_argument("--layouts", required=True,
                   help="the builds' SIMLOOP_HARNESS_LAYOUTS entries, NAME:PAD_BYTES:BEFORE_UNIT;...")
    k.add_argument("csvs", nargs="+")
    c = sub.add_parser("check")
    c.add_argument("--simloop", required=True)
    c.add_argument("--data", default=os.path.join(HERE, "data", "link-order"))
    c.add_argument("--noise", type=float, default=0.01)
    c.add_argument("--write", default="", help="write the table into this Markdown file")
    m = sub.add_parser("same-as-icache")
    m.add_argument("--simloop", required=True)
    m.add_argument("--data", default=os.path.join(HERE, "data", "link-order"))
    a = p.parse_args()
    return {"pick": cmd_pick, "check": cmd_check, "same-as-icache": cmd_same}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
