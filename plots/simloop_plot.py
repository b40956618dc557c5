#!/usr/bin/python3
"""Plots simloop result files (CSV, one tidy row per run).

The kind of plot is chosen from the columns unless --kind says:
  breakdown  cycles per packet by stage, one stacked bar per run
  payload    kpps against payload size (predicted, measured), with error bars over repeats
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

KINDS = ("breakdown", "payload")


def read_rows(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"simloop plot: {path}: {e.strerror}")
    if not rows:
        sys.exit(f"simloop plot: {path}: no result rows")
    return rows


def num(row, key):
    try:
        return float(row.get(key, "") or "nan")
    except ValueError:
        return math.nan


def choose_kind(rows):
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


def plot_breakdown(rows, ax):
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
            ax.annotate(f"{num(r, 'kpps'):.0f} kpps", (xi, top), ha="center", va="bottom", fontsize=9)
    ax.set_xticks(list(x))
    ax.set_xticklabels([label_of(r) for r in rows], fontsize=8)
    ax.set_ylabel("CPU cycles per packet")
    ax.set_title("Where each packet's cycles go")
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="CSV file written by simloop run or simloop measure")
    ap.add_argument("--kind", choices=KINDS, help="plot kind (default: chosen from the columns)")
    ap.add_argument("-o", "--output", help="output file stem (default: next to the results)")
    args = ap.parse_args()
    rows = read_rows(args.results)
    kind = args.kind or choose_kind(rows)
    stem = args.output or os.path.splitext(args.results)[0] + "-" + kind
    fig, ax = plt.subplots(figsize=(8 + (2 if kind == "breakdown" else 0), 5))
    {"breakdown": plot_breakdown, "payload": plot_payload}[kind](rows, ax)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{stem}.{ext}", dpi=120)
        print(f"wrote {stem}.{ext}")


if __name__ == "__main__":
    main()
