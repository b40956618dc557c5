#!/usr/bin/python3
"""Plots simloop result files (CSV, one tidy row per run).

The kind of plot is chosen from the columns unless --kind says:
  breakdown     cycles per packet by stage, one stacked bar per run (per point of a sweep)
  payload       kpps against payload size (predicted, measured), with error bars over repeats
  padding       kpps against code padding, or any numeric column given with --x
  distribution  run-to-run spread of kpps over the repeats of each point (box plot)
  scatter       predicted against measured kpps with the y = x line and an error band
                (a sweep CSV and a `simloop measure native` CSV, or one file with both)
  crossover     kpps against payload, one line per options.align (the alignment crossover)
  accuracy      predicted against measured kpps per point of a `simloop compare` CSV, training
                and held-out points apart, with y = x and the 10 % and 15 % bands; or predicted
                against measured I1 misses per packet of a `simloop icache --measured` CSV
Runs under Debian's /usr/bin/python3, which has matplotlib.
"""
import argparse
import csv
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

KINDS = ("breakdown", "payload", "padding", "distribution", "scatter", "crossover", "accuracy")


def read_rows(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"simloop plot: {path}: {e.strerror}")
    if not rows:
        sys.exit(f"simloop plot: {path}: no result rows")
    # Runs that faulted or crashed have no rate to draw.
    return [r for r in rows if r.get("status", "ok") in ("ok", "")] or rows


def swept_columns(rows):
    """The swept keys of a sweep CSV: the columns between point_hash and source."""
    cols = list(rows[0])
    if "point_hash" in cols and "source" in cols:
        return cols[cols.index("point_hash") + 1:cols.index("source")]
    return []


def varying(rows, key):
    return key in rows[0] and len({r.get(key) for r in rows}) > 1


def mean_sd(values):
    m = sum(values) / len(values)
    sd = math.sqrt(sum((x - m) ** 2 for x in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return m, sd


def unit_of(column):
    c = column.lower()
    if "bytes" in c or "pad" in c or "payload" in c:
        return "bytes"
    if c.endswith("_hz"):
        return "Hz"
    if c.endswith("_s"):
        return "s"
    if "cycles" in c:
        return "cycles"
    return ""


def axis_label(column):
    u = unit_of(column)
    return f"{column} ({u})" if u else column


def num(row, key):
    try:
        return float(row.get(key, "") or "nan")
    except ValueError:
        return math.nan


def padding_column(rows):
    for key in rows[0]:
        if "pad" in key.lower() and varying(rows, key):
            return key
    return None


def choose_kind(rows):
    if "predicted_kpps" in rows[0] or "measured_i1_misses_per_packet" in rows[0]:
        return "accuracy"
    sources = {r.get("source") for r in rows}
    if "simulated" in sources and len(sources) > 1:
        return "scatter"
    if "kpps" in rows[0] and padding_column(rows):
        return "padding"
    if "kpps" in rows[0] and varying(rows, "payload") and varying(rows, "align"):
        return "crossover"
    payloads = {r.get("payload") for r in rows}
    if "kpps" in rows[0] and len(payloads) > 1:
        return "payload"
    if any(k.startswith("cycles_") for k in rows[0]):
        return "breakdown"
    sys.exit("simloop plot: cannot tell which plot fits these columns; use --kind")


def label_of(row):
    parts = [row.get("experiment") or row.get("source", "run")]
    for key in ("payload", "dest", "align", "copy"):
        if row.get(key):
            parts.append(f"{key}={row[key]}")
    return "\n".join(parts)


def per_point(rows):
    """One averaged row per sweep point (rows of other files pass through)."""
    if "point" not in rows[0]:
        return rows
    groups = defaultdict(list)
    for r in rows:
        groups[int(r["point"])].append(r)
    out = []
    for point in sorted(groups):
        rs = groups[point]
        avg = dict(rs[0])
        for k in rs[0]:
            if not (k == "kpps" or k.startswith("cycles_")):
                continue  # parameters stay as written
            vals = [num(r, k) for r in rs]
            if all(not math.isnan(v) for v in vals):
                avg[k] = str(sum(vals) / len(vals))
        out.append(avg)
    return out


def plot_breakdown(rows, ax):
    swept = swept_columns(rows)
    rows = per_point(rows)
    if swept:
        global label_of
        label_of = lambda r: "\n".join(f"{k.split('.')[-1]}={r[k]}" for k in swept)  # noqa: E731
    stages = [k[len("cycles_"):] for k in rows[0] if k.startswith("cycles_") and k != "cycles_per_packet"]
    stages = [s for s in stages if any(num(r, "cycles_" + s) > 0 for r in rows)]
    cmap = plt.get_cmap("tab20")
    bottoms = [0.0] * len(rows)
    x = range(len(rows))
    for i, stage in enumerate(stages):
        vals = [num(r, "cycles_" + stage) for r in rows]
        ax.bar(x, vals, bottom=bottoms, color=cmap(i % 20), label=stage, width=0.6)
        bottoms = [b + v for b, v in zip(bottoms, vals)]
    for xi, r, top in zip(x, rows, bottoms):
        if "kpps" in r:
            ax.annotate(f"{num(r, 'kpps'):.0f}" + ("" if len(rows) > 6 else " kpps"), (xi, top), ha="center",
                    va="bottom", fontsize=9 if len(rows) <= 6 else 7)
    ax.set_xticks(list(x))
    ax.set_xticklabels([label_of(r) for r in rows], fontsize=8 if len(rows) <= 6 else 7,
                       rotation=0 if len(rows) <= 6 else 90)
    ax.set_ylabel("CPU cycles per packet (cycles)")
    ax.set_title("Where each packet's cycles go" + (" (mean over repeats)" if swept else ""))
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, title="stage")
    ax.set_ylim(0, max(bottoms) * 1.12)
    if len(rows) == 1:
        ax.set_xlim(-1.5, 1.5)


def plot_payload(rows, ax):
    groups = defaultdict(lambda: defaultdict(list))
    for r in rows:
        key = (r.get("source", "?"), r.get("dest", ""), r.get("align", ""), r.get("copy", ""))
        groups[key][num(r, "payload")].append(num(r, "kpps"))
    for key, by_size in sorted(groups.items()):
        sizes = sorted(by_size)
        means = [sum(v) / len(v) for v in (by_size[s] for s in sizes)]
        errs = []
        for s in sizes:
            v = by_size[s]
            m = sum(v) / len(v)
            errs.append(math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0)
        style = "o-" if key[0] == "simulated" else "s--"
        ax.errorbar(sizes, means, yerr=errs, fmt=style, capsize=3, label=" ".join(k for k in key if k))
    ax.set_xlabel("UDP payload (bytes)")
    ax.set_ylabel("transmit rate (kpps)")
    ax.set_title("Packet rate against payload size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def lines_against(rows, ax, x, group_keys, style="o-"):
    """Mean kpps against column x, one line per group, error bars over repeats."""
    groups = defaultdict(lambda: defaultdict(list))
    for r in rows:
        xv = num(r, x)
        if math.isnan(xv):
            continue
        groups[tuple(f"{k}={r.get(k)}" for k in group_keys if r.get(k))][xv].append(num(r, "kpps"))
    if not groups:
        sys.exit(f"simloop plot: no numeric values in column {x}")
    for key, by_x in sorted(groups.items()):
        xs = sorted(by_x)
        stats = [mean_sd(by_x[v]) for v in xs]
        ax.errorbar(xs, [m for m, _ in stats], yerr=[sd for _, sd in stats], fmt=style, capsize=3,
                    markersize=4, label=" ".join(key) or None)
    ax.set_ylabel("transmit rate (kpps)")
    ax.grid(True, alpha=0.3)
    if any(groups):
        ax.legend(fontsize=8)
    return groups


def plot_padding(rows, ax, x=None):
    x = x or padding_column(rows)
    if not x:
        sys.exit("simloop plot: no padding column (a column named like layout.pad_bytes); use --x COLUMN")
    if x not in rows[0]:
        sys.exit(f"simloop plot: no column {x} (columns: {', '.join(rows[0])})")
    others = [k for k in swept_columns(rows) if k != x and varying(rows, k)]
    groups = lines_against(rows, ax, x, ["source"] + others if varying(rows, "source") else others)
    ax.set_xlabel(axis_label(x))
    ax.set_title("Packet rate against code padding" if "pad" in x.lower() else f"Packet rate against {x}")
    if len(groups) != 1:
        return
    # One line: mark its first point's rate, and show the I-cache misses that
    # explain the rest on a second axis.
    by_x = next(iter(groups.values()))
    x0 = min(by_x)
    ax.axhline(mean_sd(by_x[x0])[0], color="tab:green", linestyle="--", linewidth=1,
               label=f"at {x} = {x0:g}")
    ax.legend(fontsize=8, loc="lower left")
    if "i1_misses_per_packet" in rows[0]:
        misses = defaultdict(list)
        for r in rows:
            xv, m = num(r, x), num(r, "i1_misses_per_packet")
            if not (math.isnan(xv) or math.isnan(m)):
                misses[xv].append(m)
        if misses:
            ax2 = ax.twinx()
            xs = sorted(misses)
            ax2.plot(xs, [mean_sd(misses[v])[0] for v in xs], color="tab:red", linewidth=0.8,
                     alpha=0.6)
            ax2.set_ylabel("I-cache misses per packet", color="tab:red")
            ax2.tick_params(axis="y", colors="tab:red")


def plot_crossover(rows, ax):
    groups = lines_against(rows, ax, "payload", ["source", "align"] if varying(rows, "source") else ["align"])
    ax.set_xlabel("UDP payload (bytes)")
    ax.set_xscale("log", base=2)
    ax.set_title("Alignment crossover: packet rate by alignment policy")
    # Where the leading policy changes: the crossover, marked on the x axis.
    means = {k: {x: sum(v) / len(v) for x, v in by.items()} for k, by in groups.items()}
    xs = sorted(set.intersection(*(set(m) for m in means.values()))) if means else []
    best = [max(means, key=lambda k: means[k][x]) for x in xs]
    for i in range(1, len(xs)):
        if best[i] != best[i - 1]:
            at = math.sqrt(xs[i - 1] * xs[i])
            ax.axvline(at, color="grey", ls=":", lw=1)
            ax.text(at, 0.97, f"{' '.join(best[i])} faster to the right ", transform=ax.get_xaxis_transform(),
                    fontsize=8, ha="right", va="top", color="grey")


def point_label(r, swept):
    if swept:
        return "\n".join(f"{k.split('.')[-1]}={r[k]}" for k in swept)
    return label_of(r)


def plot_distribution(rows, ax):
    swept = swept_columns(rows)
    groups = defaultdict(list)
    first = {}
    for r in rows:
        key = r.get("point") or label_of(r)
        groups[key].append(num(r, "kpps"))
        first.setdefault(key, r)
    keys = sorted(groups, key=lambda k: int(k) if str(k).isdigit() else k)
    data = [groups[k] for k in keys]
    ax.boxplot(data, showmeans=True, widths=0.6)
    for i, vals in enumerate(data, start=1):
        ax.plot([i + (j - (len(vals) - 1) / 2) * 0.04 for j in range(len(vals))], vals, ".", color="C1",
                alpha=0.7)
    ax.set_xticks(range(1, len(keys) + 1))
    ax.set_xticklabels([point_label(first[k], swept) for k in keys], fontsize=7,
                       rotation=90 if len(keys) > 12 else 0)
    ax.set_ylabel("transmit rate (kpps)")
    n = max(len(v) for v in data)
    ax.set_title(f"Run-to-run spread of the packet rate ({n} repeats per point)")
    ax.grid(True, axis="y", alpha=0.3)


SHARED = ("payload", "dest", "align", "copy")


def plot_scatter(rows, ax, band=0.15):
    pred = [r for r in rows if r.get("source") == "simulated"]
    meas = [r for r in rows if r.get("source") not in ("simulated", None, "")]
    if not pred or not meas:
        sys.exit("simloop plot: scatter needs simulated rows and measured rows (e.g. a sweep CSV and a "
                 "simloop measure native CSV)")
    keys = [k for k in SHARED if k in pred[0] and k in meas[0]]
    p_by, m_by = defaultdict(list), defaultdict(list)
    for r in pred:
        p_by[tuple(r[k] for k in keys)].append(num(r, "kpps"))
    for r in meas:
        m_by[tuple(r[k] for k in keys)].append(num(r, "kpps"))
    common = sorted(set(p_by) & set(m_by))
    if not common:
        sys.exit(f"simloop plot: no simulated and measured rows share {', '.join(keys)}")
    xs, ys, xe, ye = [], [], [], []
    for k in common:
        mm, ms = mean_sd(m_by[k])
        pm, ps = mean_sd(p_by[k])
        xs.append(mm), ys.append(pm), xe.append(ms), ye.append(ps)
    ax.errorbar(xs, ys, xerr=xe, yerr=ye, fmt="o", capsize=3, label="runs (mean, sd over repeats)")
    for x, y, k in zip(xs, ys, common):
        ax.annotate(" ".join(v for v in k if v), (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points")
    ends = [v - e for v, e in zip(xs + ys, xe + ye) if v - e > 0] + xs + ys
    lo = min(ends) / 1.5
    hi = max(v + e for v, e in zip(xs + ys, xe + ye)) * 1.5
    line = [lo, hi]
    ax.plot(line, line, "k-", lw=1, label="y = x")
    ax.fill_between(line, [v * (1 - band) for v in line], [v * (1 + band) for v in line], color="grey",
                    alpha=0.2, label=f"±{band * 100:.0f} %")
    if hi / lo > 20:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(f"measured transmit rate (kpps, {meas[0].get('source')})")
    ax.set_ylabel("predicted transmit rate (kpps, simulated)")
    ax.set_title("Predicted against measured packet rate")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def plot_accuracy(rows, ax):
    # Two kinds of comparison: kpps (simloop compare: training and held-out
    # points) and I1 misses per packet (simloop icache --measured: one group
    # per I1 geometry, nothing fitted to them).
    i1 = "measured_i1_misses_per_packet" in rows[0]
    metric = "i1_misses_per_packet" if i1 else "kpps"
    if i1:
        groups = {g: ("o", f"I1 {g}") for g in dict.fromkeys(r.get("i1") for r in rows)}
        key = "i1"
    else:
        groups = {"train": ("s", "training points"), "validation": ("o", "held-out points")}
        key = "set"
    vals = []
    for name, (marker, label) in groups.items():
        rs = [r for r in rows if r.get(key) == name and r.get(f"measured_{metric}") not in (None, "")]
        if not rs:
            continue
        xs, ys = [num(r, f"measured_{metric}") for r in rs], [num(r, f"predicted_{metric}") for r in rs]
        vals += xs + ys
        errs = sorted(abs(num(r, "error_pct")) for r in rs)
        med = errs[len(errs) // 2] if len(errs) % 2 else (errs[len(errs) // 2 - 1] + errs[len(errs) // 2]) / 2
        ax.plot(xs, ys, marker, ms=6, alpha=0.8, label=f"{label} ({len(rs)}, median |error| {med:.1f} %)")
    if not vals:
        sys.exit("simloop plot: accuracy needs rows with measured and predicted values")
    lo, hi = min(vals) / 1.15, max(vals) * 1.15
    line = [lo, hi]
    ax.plot(line, line, "k-", lw=1, label="y = x")
    for band, alpha in ((0.10, 0.25), (0.15, 0.12)):
        ax.fill_between(line, [v * (1 - band) for v in line], [v * (1 + band) for v in line], color="grey",
                        alpha=alpha, lw=0, label=f"±{band * 100:.0f} %")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    if i1:
        ax.set_xlabel("measured I1 misses per packet (cachegrind)")
        ax.set_ylabel("predicted I1 misses per packet (simloop's I-cache model)")
        ax.set_title("I-cache model against cachegrind, per harness layout")
    else:
        source = rows[0].get("source", "measured")
        ax.set_xlabel(f"measured transmit rate (kpps, {source}, one value per point over its repeats)")
        ax.set_ylabel("predicted transmit rate (kpps, calibrated profile)")
        ax.set_title(f"Predicted against measured: {source}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="CSV files written by simloop run, sweep or measure")
    ap.add_argument("--kind", choices=KINDS, help="plot kind (default: chosen from the columns)")
    ap.add_argument("--x", help="padding: the column on the x axis (default: a column named like *pad*)")
    ap.add_argument("--band", type=float, default=0.15, help="scatter: relative error band (default 0.15)")
    ap.add_argument("-o", "--output", help="output file stem (default: next to the results)")
    args = ap.parse_args()
    rows = []
    for path in args.results:
        rows += read_rows(path)
    kind = args.kind or choose_kind(rows)
    if kind not in ("breakdown", "accuracy") and "kpps" not in rows[0]:
        sys.exit(f"simloop plot: {kind} needs a kpps column")
    stem = args.output or os.path.splitext(args.results[0])[0] + "-" + kind
    wide = kind == "breakdown" or (kind == "distribution" and len({r.get("point") for r in rows}) > 8)
    fig, ax = plt.subplots(figsize=(10 if wide else 8, 5 if kind not in ("scatter", "accuracy") else 6))
    plot = {"breakdown": plot_breakdown, "payload": plot_payload, "distribution": plot_distribution,
            "crossover": plot_crossover, "accuracy": plot_accuracy,
            "padding": lambda r, a: plot_padding(r, a, args.x),
            "scatter": lambda r, a: plot_scatter(r, a, args.band)}[kind]
    plot(rows, ax)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{stem}.{ext}", dpi=120)
        print(f"wrote {stem}.{ext}")


if __name__ == "__main__":
    main()
