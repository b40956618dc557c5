#!/usr/bin/env python3
"""Layouts for the I-cache validation, and its report.

candidates  print NAME:PAD:UNIT harness builds (SIMLOOP_HARNESS_LAYOUTS
            entries): paddings before units of the harness, drawn at random
            with a fixed seed.
select      score every built candidate by a conflict count that needs no
            cache model: for each I1 geometry, the hot lines of the path's
            profile (its hot ranges, placed with the build's nm map) beyond
            each set's ways. Picks, for each geometry, the builds of least
            and most conflict and some between, so that the measured misses
            of the set spread; writes every score to a CSV.
report      the validation's tables, from the per-geometry summaries that
            `simloop icache --summary` writes.
check       the model against the cachegrind counts kept in data/: for each
            path with data, `simloop icache` on the kept symbol maps (no
            build, no cachegrind), then the table; fails (exit 1) if on an
            associative geometry whose measured misses spread by at least
            30 % the median error exceeds --max-median or tau-b falls below
            --min-tau. Then the model's bias: the mean signed error
            (predicted minus measured misses per packet) at each geometry,
            over every path and layout; with --max-bias, fails where its
            magnitude exceeds that.
"""
import argparse
import csv
import gzip
import os
import random
import subprocess
import sys
import tempfile
from collections import defaultdict


def parse_nm(path):
    opener = gzip.open if path.endswith(".gz") else open
    syms = {}
    with opener(path, "rt") as f:
        for line in f:
            w = line.split()
            if len(w) == 4 and w[2] in "TtWwi":
                syms.setdefault(w[3], int(w[0], 16))
    return syms


def parse_profile(path):
    hot = defaultdict(list)
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0]
            w = line.split()
            if len(w) == 3 and w[0].startswith("0x"):
                hot[w[2]].append((int(w[0], 16), int(w[1])))
    return hot


def overflow(lines, size, assoc, line_bytes):
    sets = size // (assoc * line_bytes)
    per_set = defaultdict(int)
    for l in lines:
        per_set[l % sets] += 1
    return sum(max(0, n - assoc) for n in per_set.values())


def hot_lines(hot, syms, line_bytes):
    lines = set()
    for sym, ranges in hot.items():
        if sym not in syms:
            continue
        base = syms[sym]
        for off, n in ranges:
            a = base + off
            lines.update(range(a // line_bytes, (a + n - 1) // line_bytes + 1))
    return lines


def cmd_candidates(a):
    rng = random.Random(a.seed)
    units = a.units.split(",")
    seen = set()
    out = []
    while len(out) < a.count:
        unit = rng.choice(units)
        pad = 16 * rng.randint(1, a.max_pad // 16)
        name = f"c{len(out):03d}-{unit}-{pad}"
        if (unit, pad) in seen:
            continue
        seen.add((unit, pad))
        out.append(f"{name}:{pad}:{unit}")
    print(";".join(out))


def cmd_select(a):
    hot = parse_profile(a.profile)
    geoms = [tuple(int(x) for x in g.split(",")) for g in a.geometries.split()]
    rows = []
    for name, nm in (x.split("=", 1) for x in a.nm):
        syms = parse_nm(nm)
        row = {"layout": name}
        for g in geoms:
            row[",".join(map(str, g))] = overflow(hot_lines(hot, syms, g[2]), *g)
        rows.append(row)
    chosen = []
    if a.keep:
        chosen += [k for k in a.keep.split(",") if any(r["layout"] == k for r in rows)]
    # For each geometry: the least and most conflicting builds, then the
    # quantiles between, until the set is full.
    for level in range(a.per_geometry):
        for g in geoms:
            key = ",".join(map(str, g))
            ranked = sorted(rows, key=lambda r: (r[key], r["layout"]))
            if ranked[-1][key] == 0:
                continue  # the hot lines fit: no layout conflicts here
            k = a.per_geometry - 1
            idx = [0, len(ranked) - 1][level] if level < 2 else \
                round((level - 1) * (len(ranked) - 1) / k)
            pick = ranked[idx]["layout"]
            if pick not in chosen and len(chosen) < a.max:
                chosen.append(pick)
    with open(a.scores, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["layout"] + [",".join(map(str, g)) for g in geoms] +
                           ["selected"])
        w.writeheader()
        for r in rows:
            w.writerow({**r, "selected": int(r["layout"] in chosen)})
    print(" ".join(chosen))


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


TARGET_ERR, TARGET_TAU, TARGET_SPREAD = 10.0, 0.8, 30.0


def read_summaries(specs):
    cells = []
    for spec in specs:
        path, fname = spec.split("=", 1)
        with open(fname, newline="") as f:
            for r in csv.DictReader(f):
                r["path"] = path
                cells.append(r)
    return cells


def cmd_report(a):
    print(report_table(read_summaries(a.summaries), a.order))


def report_table(cells, order_spec):
    """Markdown tables: one row per path and geometry, from the summaries."""
    target_err, target_tau, target_spread = TARGET_ERR, TARGET_TAU, TARGET_SPREAD
    out = []
    geoms = []
    for r in cells:
        if r["i1"] not in geoms:
            geoms.append(r["i1"])
    # The required geometries first, in the order given.
    order = order_spec.split() if order_spec else []
    geoms.sort(key=lambda g: (order.index(g) if g in order else len(order), g))
    out.append("| I1 | path | layouts | measured misses/packet | spread | median / worst error "
               "(points >= 1 miss) | abs. error, other points | Kendall tau-b | targets |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    verdicts = []
    for g in geoms:
        for r in [c for c in cells if c["i1"] == g]:
            hi, lo = num(r["measured_max"]), num(r["measured_min"])
            spread = num(r["spread_pct"])
            rel_n, abs_n = int(r["relative_points"]), int(r["absolute_points"])
            tau = num(r["kendall_tau_b"])
            err = (f"{num(r['median_abs_error_pct']):.1f} % / {num(r['worst_error_pct']):+.1f} %"
                   if rel_n else "-")
            aerr = (f"{num(r['median_abs_error']):.2f} / {num(r['worst_abs_error']):+.2f} ({abs_n})"
                    if abs_n else "-")
            if hi < 1:
                verdict = "fits (under 1 miss)"
            elif spread < target_spread:
                verdict = f"spread under {target_spread:.0f} %"
            else:
                ok = (rel_n > 0 and num(r["median_abs_error_pct"]) <= target_err and
                      tau == tau and tau >= target_tau)
                verdict = "**met**" if ok else "**missed**"
                verdicts.append(ok)
            out.append(f"| {g} | {r['path']} | {r['layouts']} | {lo:.2f}-{hi:.2f} | "
                       f"{spread:.0f} % | {err} | {aerr} | "
                       f"{'n/a' if tau != tau else f'{tau:.2f}'} | {verdict} |")
    out.append("")
    out.append(f"Targets (median error <= {target_err:.0f} %, tau-b >= {target_tau}) where the "
               f"spread is at least {target_spread:.0f} %: met on {sum(verdicts)} of "
               f"{len(verdicts)} path and geometry pairs.")
    return "\n".join(out)


def bias_by_geometry(cells):
    """Geometry -> (points, mean signed error over every path's layouts)."""
    sums = defaultdict(lambda: [0, 0.0])
    for c in cells:
        if c.get("mean_signed_error", "") in ("", None):
            continue
        n = int(c["layouts"])
        sums[c["i1"]][0] += n
        sums[c["i1"]][1] += n * num(c["mean_signed_error"])
    order = sorted(sums, key=lambda g: tuple(int(x) for x in g.split(",")))
    return {g: (sums[g][0], sums[g][1] / sums[g][0]) for g in order if sums[g][0]}


def bias_table(cells):
    """The model's bias by geometry, over every path, and each path's."""
    out = ["| I1 | points | mean signed error (misses/packet) | by path |", "|---|---|---|---|"]
    for g, (n, bias) in bias_by_geometry(cells).items():
        each = ", ".join(f"{c['path']} {num(c['mean_signed_error']):+.2f}"
                         for c in cells if c["i1"] == g)
        out.append(f"| {g} | {n} | {bias:+.2f} | {each} |")
    return "\n".join(out)


def path_noise(measured, noise_csv):
    """The largest difference between the base build's two measurements."""
    def base_rows(f):
        with open(f, newline="") as h:
            return {r["i1"]: float(r["i1_misses_per_packet"])
                    for r in csv.DictReader(h) if r["layout"] == "base"}
    a, b = base_rows(measured), base_rows(noise_csv)
    common = [k for k in a if k in b]
    return max([abs(a[k] - b[k]) for k in common] + [0.01])


def cmd_check(a):
    data = a.data
    paths = a.paths.split() if a.paths else sorted(
        f[len("cachegrind-"):-len(".csv")] for f in os.listdir(data)
        if f.startswith("cachegrind-") and f.endswith(".csv") and not f.startswith("cachegrind-ll-"))
    cells = []
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            measured = os.path.join(data, f"cachegrind-{path}.csv")
            with open(measured, newline="") as f:
                rows = list(csv.DictReader(f))
            if not rows:
                continue
            layouts, geoms = [], []
            for r in rows:
                if r["layout"] not in layouts:
                    layouts.append(r["layout"])
                if r["i1"] not in geoms:
                    geoms.append(r["i1"])
            nms = []
            for l in layouts:
                src = os.path.join(data, "nm", f"{l}.nm.gz")
                dst = os.path.join(tmp, f"{l}.nm")
                with gzip.open(src, "rt") as fi, open(dst, "w") as fo:
                    fo.write(fi.read())
                nms.append(dst)
            first = rows[0]
            noise_csv = os.path.join(data, f"noise-{path}.csv")
            noise = path_noise(measured, noise_csv) if os.path.exists(noise_csv) else 0.01
            summary = os.path.join(tmp, f"{path}-summary.csv")
            extra = ["--owners", a.owners] if a.owners else []
            # The path's other fields, where its rows name them.
            for column, option in (("misalign", "--sockaddr-misalign"), ("service", "--service"),
                                   ("buffer_misalign", "--buffer-misalign")):
                if first.get(column, ""):
                    extra += [option, first[column]]
            cmd = [a.simloop, "-q", "icache", *nms, *extra, "-l", first["payload"], "--dest",
                   first["dest"], "--align", first["align"], "--copy", first["copy"],
                   "--profile", os.path.join(data, f"profile-{path}.txt"), "--measured", measured,
                   "--noise", f"{noise:.4f}", "--fetch", a.fetch, "--summary", summary]
            for g in geoms:
                cmd += ["--I1", g]
            if a.output_dir:
                cmd += ["-o", os.path.join(a.output_dir, f"icache-{path}{a.suffix}.csv")]
            text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            if a.output_dir:
                with open(os.path.join(a.output_dir, f"icache-{path}{a.suffix}.txt"), "w") as f:
                    f.write(text)
            if a.summary_dir:
                with open(summary) as fi, open(os.path.join(
                        a.summary_dir, f"icache-{path}{a.suffix}-summary.csv"), "w") as fo:
                    fo.write(fi.read())
            for c in read_summaries([f"{path}={summary}"]):
                c["noise"] = noise
                cells.append(c)
    print(report_table(cells, a.order))
    print()
    print(bias_table(cells))
    if a.max_bias is not None:
        for g, (n, bias) in bias_by_geometry(cells).items():
            if abs(bias) > a.max_bias:
                failures.append(f"I1 {g}: mean signed error {bias:+.2f} misses per packet, "
                                f"beyond +-{a.max_bias}")
    for c in cells:
        size, assoc, line = (int(x) for x in c["i1"].split(","))
        if assoc == 1 or num(c["measured_max"]) < 1 or num(c["spread_pct"]) < TARGET_SPREAD:
            continue
        med, tau = num(c["median_abs_error_pct"]), num(c["kendall_tau_b"])
        if not med <= a.max_median:
            failures.append(f"{c['path']} I1 {c['i1']}: median error {med:.1f} % > {a.max_median} %")
        if not tau >= a.min_tau:
            failures.append(f"{c['path']} I1 {c['i1']}: tau-b {tau:.2f} < {a.min_tau}")
    checked = sum(1 for c in cells if int(c["i1"].split(",")[1]) > 1 and
                  num(c["measured_max"]) >= 1 and num(c["spread_pct"]) >= TARGET_SPREAD)
    print(f"\nassociative geometries with a spread of at least {TARGET_SPREAD:.0f} %: {checked}; "
          f"bounds: median error <= {a.max_median} %, tau-b >= {a.min_tau}")
    if checked == 0:
        failures.append("no associative geometry with a spread to check")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("candidates")
    c.add_argument("--seed", type=int, default=17)
    c.add_argument("--count", type=int, default=64)
    c.add_argument("--max-pad", type=int, default=16384)
    c.add_argument("--units", default="native,stage_timer,zone,inet,stack")
    s = sub.add_parser("select")
    s.add_argument("--profile", required=True)
    s.add_argument("--geometries", required=True)
    s.add_argument("--nm", nargs="+", required=True, help="LAYOUT=NM_FILE")
    s.add_argument("--per-geometry", type=int, default=4)
    s.add_argument("--max", type=int, default=16)
    s.add_argument("--keep", default="base")
    s.add_argument("--scores", required=True)
    r = sub.add_parser("report")
    r.add_argument("--order", default="")
    r.add_argument("summaries", nargs="+", help="PATH=SUMMARY_CSV")
    k = sub.add_parser("check")
    k.add_argument("--simloop", required=True)
    k.add_argument("--data", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "data"))
    k.add_argument("--paths", default="", help="space-separated (default: every path in data)")
    k.add_argument("--fetch", default="call-sites", choices=["call-sites", "entry"])
    k.add_argument("--order", default="")
    k.add_argument("--max-median", type=float, default=10.0)
    k.add_argument("--min-tau", type=float, default=0.8)
    k.add_argument("--output-dir", default="", help="keep each path's rows and printout here")
    k.add_argument("--summary-dir", default="", help="keep each path's summary CSV here")
    k.add_argument("--suffix", default="")
    k.add_argument("--owners", default="", help="the owners file (default: simloop's)")
    k.add_argument("--max-bias", type=float, default=None,
                   help="fail where a geometry's mean signed error exceeds this, in misses")
    a = p.parse_args()
    return {"candidates": cmd_candidates, "select": cmd_select, "report": cmd_report,
            "check": cmd_check}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
