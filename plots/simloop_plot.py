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
  timeline      a trace of `simloop run --trace`: the CPU's spans over simulated time as a
                Gantt chart (one lane per nesting depth, slices coloured by stage, interrupts
                and sleep marked), with the NIC ring, netisr queue and socket buffer below
  waterfall     the JSON of `simloop explain -o`: bars from A's kpps to B's, one per part of
                the difference (the clock, then functions by kind of cost), largest first
A plot never averages over a swept key it does not show: with one such key
it draws a panel per value, with more it refuses and names them (pick values
with --where KEY=VALUE). Runs that faulted are drawn as marked points.
--describe FILE writes what was drawn (lines, bars, markers, legends,
annotations) as JSON, for tests and for readers of the figure.
Runs under Debian's /usr/bin/python3, which has matplotlib.
"""
import argparse
import csv
import json
import math
import os
import sys
import warnings
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

KINDS = ("breakdown", "payload", "padding", "distribution", "scatter", "crossover", "accuracy",
         "waterfall", "timeline")


class Refused(Exception):
    """Bad input or a plot that would mislead: a message and exit status 2."""


def die(msg):
    raise Refused(msg)


# Outputs are never written through a symbolic link (a link planted where a
# picture goes would have it written over whatever the link points to), and
# each is written whole: to a temporary file of an unpredictable name in its
# own directory, then renamed into place. A missing directory is made, as
# simloop run makes its output directory.
def refuse_link(path):
    if os.path.islink(path):
        die(f"{path}: is a symbolic link; simloop does not write through links")


def output_dir(path):
    d = os.path.dirname(path) or "."
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as err:
        die(f"{d}: cannot create the directory: {err.strerror}")
    if not os.path.isdir(d):
        die(f"{d}: not a directory")
    return d


def write_atomic(path, write):
    """Calls write(binary file) on a temporary file and renames it to path."""
    import tempfile
    d = output_dir(path)
    refuse_link(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    except OSError as err:
        die(f"{path}: cannot write: {err.strerror}")
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # replaces a link planted meanwhile, never writes through it
    except OSError as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        die(f"{path}: cannot write: {err.strerror}")
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save_figure(fig, stem):
    """The PNG and SVG of fig at stem; both refused before either is written."""
    paths = [f"{stem}.{ext}" for ext in ("png", "svg")]
    for path in paths:
        output_dir(path)
        refuse_link(path)
    for path, ext in zip(paths, ("png", "svg")):
        write_atomic(path, lambda f, ext=ext: fig.savefig(f, format=ext, dpi=120))
        print(f"wrote {path}")


# A sweep's CSV names a swept key by its path (options.align) and leaves out
# the metric that would repeat it (align): plots read either name.
ALIASES = {"payload": "workload.payload", "dest": "workload.dest", "align": "options.align",
           "copy": "options.copy"}


def read_rows(path):
    try:
        with open(path, newline="", encoding="utf-8", errors="strict") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        die(f"{path}: {e.strerror}")
    except (UnicodeDecodeError, csv.Error) as e:
        die(f"{path}: not a CSV of results ({e.__class__.__name__}: {e})")
    if not rows:
        die(f"{path}: no result rows")
    for r in rows:
        r.pop(None, None)  # fields past the header
        for short, key in ALIASES.items():
            if key in r and short not in r:
                r[short] = r[key]
        r["_file"] = path
    return rows


def faulted(row):
    """A run that did not end ok: faulted, failed or crashed."""
    return row.get("status", "ok") not in ("ok", "") or row.get("outcome", "ok") not in ("ok", "")


def ok_rows(rows):
    return [r for r in rows if not faulted(r)]


def swept_columns(rows):
    """The swept keys of a sweep CSV: the columns between point_hash and source."""
    cols = [c for c in rows[0] if not c.startswith("_")]
    if "point_hash" in cols and "source" in cols:
        return [c for c in cols[cols.index("point_hash") + 1:cols.index("source")] if c not in ALIASES]
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
    die("cannot tell which plot fits these columns; use --kind")


def label_of(row):
    parts = [row.get("experiment") or row.get("source", "run")]
    for key in ("payload", "dest", "align", "copy"):
        if row.get(key):
            parts.append(f"{key}={row[key]}")
    return "\n".join(parts)


def per_point(rows):
    """One averaged row per sweep point (rows of other files pass through)."""
    if not rows or "point" not in rows[0]:
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


DRAWN = {}  # id(ax) -> what was drawn on it, for --describe


def drawn(ax):
    return DRAWN.setdefault(id(ax), {"lines": [], "bars": [], "markers": [], "references": []})


def finite(values):
    return [v if isinstance(v, (int, float)) and math.isfinite(v) else None for v in values]


# Stages: the result columns cycles_<stage>, stacked in column order. Each
# stage keeps the colour of its place in that order in every plot, whether
# or not other stages are drawn beside it.
def stage_columns(rows):
    return [k[len("cycles_"):] for k in rows[0] if k.startswith("cycles_") and k != "cycles_per_packet"]


def stage_colour(stages, stage):
    cmap = plt.get_cmap("tab20")
    return matplotlib.colors.to_hex(cmap(stages.index(stage) % 20))


def mark_faults(ax, rows, x_of, y_default=0.0):
    """Faulted runs as red crosses at their rate (or at y_default when they have none)."""
    bad = [r for r in rows if faulted(r)]
    if not bad:
        return
    xs, ys = [], []
    for r in bad:
        xv = x_of(r)
        if xv is None or (isinstance(xv, float) and math.isnan(xv)):
            continue
        y = num(r, "kpps")
        xs.append(xv)
        ys.append(y if math.isfinite(y) else y_default)
    if not xs:
        return
    reasons = sorted({r.get("outcome") or r.get("status") or "fault" for r in bad})
    ax.plot(xs, ys, "X", color="red", markersize=9, linestyle="none",
            label=f"run did not end ok ({', '.join(reasons)})")
    drawn(ax)["markers"].append({"kind": "fault", "x": finite(xs), "y": finite(ys), "reasons": reasons})


def plot_breakdown(rows, ax):
    swept = swept_columns(rows)
    all_stages = stage_columns(rows)
    good = ok_rows(rows)
    shown = per_point(good) if good else []
    bad = [r for r in rows if faulted(r)]
    # Faulted runs get a bar of their own: the cycles spent up to the fault, hatched.
    bars = shown + per_point(bad)
    labeller = (lambda r: "\n".join(f"{k.split('.')[-1]}={r[k]}" for k in swept)) if swept else label_of
    stages = [s for s in all_stages if any(num(r, "cycles_" + s) > 0 for r in bars)]
    bottoms = [0.0] * len(bars)
    x = list(range(len(bars)))
    hatches = ["" if i < len(shown) else "//" for i in x]
    for stage in stages:
        vals = [num(r, "cycles_" + stage) for r in bars]
        vals = [v if math.isfinite(v) else 0.0 for v in vals]
        colour = stage_colour(all_stages, stage)
        ax.bar(x, vals, bottom=bottoms, color=colour, label=stage, width=0.6, hatch=None)
        for xi, h, v, b0 in zip(x, hatches, vals, bottoms):
            if h and v > 0:
                ax.bar([xi], [v], bottom=[b0], color=colour, hatch=h, edgecolor="black", width=0.6, linewidth=0)
        drawn(ax)["bars"].append({"stage": stage, "colour": colour, "values": vals})
        bottoms = [b + v for b, v in zip(bottoms, vals)]
    for xi, r, top in zip(x, bars, bottoms):
        if faulted(r):
            what = r.get("outcome") or r.get("status") or "fault"
            if top > 0:
                ax.annotate(what, (xi, top), ha="center", va="bottom", fontsize=7, color="red")
            else:  # it ended before a packet got through: say so where it shows
                top = 0.0
                ax.annotate(f"{what} after {r.get('packets', '?')} packets", (xi, 0.5),
                            xycoords=("data", "axes fraction"), ha="center", va="bottom", fontsize=9,
                            color="red")
            ax.plot([xi], [top], "X", color="red", markersize=12, clip_on=False)
            drawn(ax)["markers"].append({"kind": "fault", "x": [xi], "y": [top],
                                         "reasons": [r.get("outcome") or r.get("status") or "fault"]})
        elif "kpps" in r:
            ax.annotate(f"{num(r, 'kpps'):.0f}" + ("" if len(bars) > 6 else " kpps"), (xi, top), ha="center",
                        va="bottom", fontsize=9 if len(bars) <= 6 else 7)
    ax.set_xticks(x)
    ax.set_xticklabels([labeller(r) for r in bars], fontsize=8 if len(bars) <= 6 else 7,
                       rotation=0 if len(bars) <= 6 else 90)
    ax.set_ylabel("CPU cycles per packet (cycles)")
    ax.set_title("Where each packet's cycles go" + (" (mean over repeats)" if swept else ""))
    # The legend reads like the stack: its top entry is the top of the stack.
    handles, labels = ax.get_legend_handles_labels()
    order = [labels.index(s) for s in reversed(stages) if s in labels]
    if order:
        ax.legend([handles[i] for i in order], [labels[i] for i in order], loc="center left",
                  bbox_to_anchor=(1.0, 0.5), fontsize=8, title="stage")
    top = max(bottoms) if bottoms else 0
    ax.set_ylim(0, top * 1.12 if top > 0 else 1)
    if len(bars) == 1:
        ax.set_xlim(-1.5, 1.5)


def wire_bytes(payload):
    """Bytes a datagram occupies on Ethernet: UDP, IP and Ethernet headers, the
    60-byte minimum frame, FCS, preamble and inter-frame gap (models/wire.h)."""
    return max(payload + 8 + 20 + 14, 60) + 4 + 8 + 12


def link_bandwidth(rows):
    """The link's bit rate: a column, or the configuration in the JSON beside the results."""
    for r in rows:
        for key in ("workload.link.bandwidth_bps", "link_bandwidth_bps"):
            if r.get(key):
                return num(r, key)
    for path in dict.fromkeys(r["_file"] for r in rows):
        meta = os.path.splitext(path)[0] + ".json"
        try:
            with open(meta) as f:
                config = json.load(f).get("config", {})
            return float(config["workload"]["link"]["bandwidth_bps"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return None


def plot_payload(rows, ax):
    groups = defaultdict(lambda: defaultdict(list))
    enobufs = defaultdict(lambda: defaultdict(list))
    for r in ok_rows(rows):
        key = (r.get("source", "?"), r.get("dest", ""), r.get("align", ""), r.get("copy", ""))
        groups[key][num(r, "payload")].append(num(r, "kpps"))
        enobufs[key][num(r, "payload")].append(num(r, "enobufs"))
    slept_x, slept_y = [], []
    for key, by_size in sorted(groups.items()):
        sizes = sorted(by_size)
        stats = [mean_sd(by_size[s]) for s in sizes]
        style = "o-" if key[0] == "simulated" else "s--"
        label = " ".join(k for k in key if k)
        ax.errorbar(sizes, [m for m, _ in stats], yerr=[sd for _, sd in stats], fmt=style, capsize=3, label=label)
        drawn(ax)["lines"].append({"label": label, "x": sizes, "y": finite([m for m, _ in stats]),
                                   "sd": finite([sd for _, sd in stats])})
        for size, (m, _) in zip(sizes, stats):
            e = [v for v in enobufs[key][size] if math.isfinite(v)]
            if e and max(e) > 0:
                slept_x.append(size)
                slept_y.append(m)
    if slept_x:
        ax.plot(slept_x, slept_y, "v", color="tab:red", markersize=9, markerfacecolor="none", linestyle="none",
                label="ENOBUFS: the sender slept")
        drawn(ax)["markers"].append({"kind": "enobufs", "x": slept_x, "y": finite(slept_y)})
    # What the link can carry, where the datagrams go on a wire.
    bw = link_bandwidth(rows)
    sizes = sorted({num(r, "payload") for r in rows if math.isfinite(num(r, "payload"))})
    if bw and any(r.get("dest") == "wire" for r in rows) and sizes:
        xs = sorted(set(sizes) | set(range(int(sizes[0]), int(sizes[-1]) + 1, max(1, int(sizes[-1] - sizes[0]) // 200))))
        ys = [bw / (8 * wire_bytes(int(x))) / 1e3 for x in xs]
        label = f"line rate ({bw / 1e9:g} Gbit/s)" if bw >= 1e9 else f"line rate ({bw / 1e6:g} Mbit/s)"
        ax.plot(xs, ys, ":", color="black", linewidth=1, label=label)
        drawn(ax)["references"].append({"kind": "line_rate", "bandwidth_bps": bw, "x": xs, "y": ys})
    mark_faults(ax, rows, lambda r: num(r, "payload"))
    ax.set_xlabel("UDP payload (bytes)")
    ax.set_ylabel("transmit rate (kpps)")
    ax.set_title("Packet rate against payload size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def lines_against(rows, ax, x, group_keys, style="o-"):
    """Mean kpps against column x, one line per group, error bars over repeats."""
    groups = defaultdict(lambda: defaultdict(list))
    for r in ok_rows(rows):
        xv = num(r, x)
        if math.isnan(xv):
            continue
        groups[tuple(f"{k}={r.get(k)}" for k in group_keys if r.get(k))][xv].append(r)
    if not groups and not any(faulted(r) for r in rows):
        die(f"no numeric values in column {x}")
    kpps = {k: {v: [num(r, "kpps") for r in rs] for v, rs in by.items()} for k, by in groups.items()}
    for key, by_x in sorted(kpps.items()):
        xs = sorted(by_x)
        stats = [mean_sd(by_x[v]) for v in xs]
        label = " ".join(key) or None
        ax.errorbar(xs, [m for m, _ in stats], yerr=[sd for _, sd in stats], fmt=style, capsize=3,
                    markersize=4, label=label)
        drawn(ax)["lines"].append({"label": label, "x": xs, "y": finite([m for m, _ in stats]),
                                   "sd": finite([sd for _, sd in stats])})
    mark_faults(ax, rows, lambda r: num(r, x))
    ax.set_ylabel("transmit rate (kpps)")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[1]:
        ax.legend(fontsize=8)
    return groups


def plot_padding(rows, ax, x=None):
    x = x or padding_column(rows)
    if not x:
        die("no padding column (a column named like layout.pad_bytes); use --x COLUMN")
    if x not in rows[0]:
        die(f"no column {x} (columns: {', '.join(rows[0])})")
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
    ax.axhline(mean_sd([num(r, "kpps") for r in by_x[x0]])[0], color="tab:green", linestyle="--", linewidth=1,
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


def spread(rs):
    """How far a point's kpps could move without meaning anything: the standard
    deviation over its repeats or, when the repeats agree (a deterministic
    experiment) or there is one run, its rate's variation within a run."""
    vals = [num(r, "kpps") for r in rs]
    m, sd = mean_sd(vals)
    within = [num(r, "interval_kpps_cv") * m for r in rs if math.isfinite(num(r, "interval_kpps_cv"))]
    return max([sd] + within)


def counts(rs):
    """What a run's rate also depends on besides the stack's cycles: ENOBUFS sleeps and drops."""
    cols = ["enobufs"] + sorted(k for k in rs[0] if k.startswith("drop_"))
    return {c: mean_sd([num(r, c) for r in rs])[0] for c in cols if c in rs[0]}


def plot_crossover(rows, ax):
    groups = lines_against(rows, ax, "payload", ["source", "align"] if varying(rows, "source") else ["align"])
    ax.set_xlabel("UDP payload (bytes)")
    ax.set_xscale("log", base=2)
    ax.set_title("Alignment crossover: packet rate by alignment policy")
    # Where the leading policy changes: the crossover, marked on the x axis,
    # but only where the lead is larger than the spread on both sides and the
    # runs compared slept and dropped alike (else the sleeps, not alignment,
    # moved the rate).
    xs = sorted(set.intersection(*(set(by) for by in groups.values()))) if groups else []
    skipped = []

    def lead(x):
        ranked = sorted(groups, key=lambda k: mean_sd([num(r, "kpps") for r in groups[k][x]])[0], reverse=True)
        best, second = groups[ranked[0]][x], groups[ranked[1]][x]
        gap = mean_sd([num(r, "kpps") for r in best])[0] - mean_sd([num(r, "kpps") for r in second])[0]
        if counts(best) != counts(second):
            return ranked[0], f"{'/'.join(c for c in counts(best) if counts(best)[c] != counts(second)[c])} differ"
        if gap <= spread(best) + spread(second):
            return ranked[0], "within the spread"
        return ranked[0], None

    if len(groups) > 1:
        for i in range(1, len(xs)):
            (b0, why0), (b1, why1) = lead(xs[i - 1]), lead(xs[i])
            if b0 == b1:
                continue
            if why0 or why1:
                skipped.append({"between": [xs[i - 1], xs[i]], "why": why0 or why1})
                continue
            at = math.sqrt(xs[i - 1] * xs[i])
            ax.axvline(at, color="grey", ls=":", lw=1)
            ax.text(at, 0.97, f"{' '.join(b1)} faster to the right ", transform=ax.get_xaxis_transform(),
                    fontsize=8, ha="right", va="top", color="grey")
    drawn(ax)["crossovers_not_annotated"] = skipped


def point_label(r, swept):
    if swept:
        return "\n".join(f"{k.split('.')[-1]}={r[k]}" for k in swept)
    return label_of(r)


def plot_distribution(rows, ax):
    swept = swept_columns(rows)
    rows = ok_rows(rows) or die("no run ended ok: nothing to draw a distribution of")
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
    rows = ok_rows(rows)
    pred = [r for r in rows if r.get("source") == "simulated"]
    meas = [r for r in rows if r.get("source") not in ("simulated", None, "")]
    if not pred or not meas:
        die("scatter needs simulated rows and measured rows (e.g. a sweep CSV and a "
                 "simloop measure native CSV)")
    keys = [k for k in SHARED if k in pred[0] and k in meas[0]]
    p_by, m_by = defaultdict(list), defaultdict(list)
    for r in pred:
        p_by[tuple(r[k] for k in keys)].append(num(r, "kpps"))
    for r in meas:
        m_by[tuple(r[k] for k in keys)].append(num(r, "kpps"))
    common = sorted(set(p_by) & set(m_by))
    if not common:
        die(f"no simulated and measured rows share {', '.join(keys)}")
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
        # I1: a relative error only where cachegrind counts at least one miss.
        errs = sorted(abs(num(r, "error_pct")) for r in rs if r.get("error_pct") not in (None, ""))
        if errs:
            med = errs[len(errs) // 2] if len(errs) % 2 else (errs[len(errs) // 2 - 1] + errs[len(errs) // 2]) / 2
            label = f"{label} ({len(rs)}, median |error| {med:.1f} % of {len(errs)})"
        else:
            label = f"{label} ({len(rs)}, under 1 miss each)"
        ax.plot(xs, ys, marker, ms=6, alpha=0.8, label=label)
    if not vals:
        die("accuracy needs rows with measured and predicted values")
    lo, hi = min(0, min(vals)) if i1 else min(vals) / 1.15, max(vals) * 1.15
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


# The swept keys each kind shows (on an axis, as lines or as labels); any
# other swept key that varies would be averaged over, which a plot never does.
SHOWS = {
    "payload": {"workload.payload", "workload.dest", "options.align", "options.copy"},
    "crossover": {"workload.payload", "options.align"},
    "scatter": {"workload.payload", "workload.dest", "options.align", "options.copy"},
}


# The comparisons --where takes, longest first: KEY=VALUE (or ==), KEY!=VALUE,
# and the ranges KEY<N, KEY<=N, KEY>N, KEY>=N (sim/report/row_filter.h, which
# `simloop plot` checks every expression against before it starts this script).
WHERE_OPS = ("==", "!=", "<=", ">=", "<", ">", "=")
WHERE_FORMS = "KEY=VALUE, KEY!=VALUE, KEY<N, KEY<=N, KEY>N or KEY>=N"


def number(text):
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def parse_where(cond):
    at = min((i for i in (cond.find(c) for c in "=!<>") if i >= 0), default=-1)
    op = next((o for o in WHERE_OPS if cond.startswith(o, at)), None) if at >= 0 else None
    if op is None:
        die(f"--where {cond}: expected {WHERE_FORMS}")
    key, value = cond[:at].strip(), cond[at + len(op):].strip()
    if not key or not value or value[0] in "=!<>":
        die(f"--where {cond}: expected {WHERE_FORMS}")
    op = "==" if op == "=" else op
    if op not in ("==", "!=") and number(value) is None:
        die(f"--where {cond}: '{value}' is not a number: {op} compares numbers")
    return key, op, value


def holds(cell, op, value):
    a, b = number(cell), number(value)
    if a is not None and b is not None:
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    if op == "==":
        return cell == value
    if op == "!=":
        return cell != value
    return False


def where(rows, conditions):
    for cond in conditions or []:
        key, op, value = parse_where(cond)
        if key not in rows[0]:
            cols = [c for c in rows[0] if not c.startswith("_")]
            die(f"--where {cond}: no column {key} (columns: {', '.join(cols)})")
        kept = [r for r in rows if holds(r.get(key, ""), op, value)]
        if not kept:
            values = sort_values(sorted({r.get(key, "") for r in rows}))
            die(f"--where {cond}: no row has {key}{'=' if op == '==' else op}{value} "
                f"(values: {', '.join(values)})")
        rows = kept
    return rows


def hidden_keys(rows, kind, x=None):
    shows = SHOWS.get(kind)
    if shows is None:
        return []
    return [k for k in swept_columns(rows) if k not in shows and k != x and varying(rows, k)]


def sort_values(values):
    try:
        return sorted(values, key=float)
    except ValueError:
        return sorted(values)


def describe(fig, kind, facets, path):
    panels = []
    for ax in fig.axes:
        if id(ax) not in DRAWN and not ax.get_title():
            continue  # a twin axis, described with its panel
        legend = ax.get_legend()
        panels.append({
            "title": ax.get_title(),
            "xlabel": ax.get_xlabel(),
            "ylabel": ax.get_ylabel(),
            "legend": [t.get_text() for t in legend.get_texts()] if legend else [],
            "annotations": [t.get_text() for t in ax.texts],
            **drawn(ax),
        })
    text = json.dumps({"kind": kind, "facets": facets, "panels": panels}, indent=1)
    write_atomic(path, lambda f: f.write(text.encode()))


def read_explanation(path):
    try:
        with open(path, encoding="utf-8") as f:
            e = json.load(f)
    except OSError as err:
        die(f"{path}: {err.strerror}")
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        line, col = getattr(err, "lineno", 1), getattr(err, "colno", 1)
        die(f"{path}:{line}:{col}: not the JSON of simloop explain -o ({err.__class__.__name__})")
    w = e.get("waterfall") if isinstance(e, dict) else None
    if not isinstance(w, dict) or not all(k in w for k in ("from", "to", "steps")):
        die(f"{path}:1:1: expected the JSON of simloop explain -o (an object with \"waterfall\")")
    return e


def plot_waterfall(e, ax):
    """A's kpps, one floating bar per part of the difference, B's kpps."""
    w = e["waterfall"]
    start, end, steps = float(w["from"]), float(w["to"]), w["steps"]
    labels = ["A"] + [s["label"] for s in steps] + ["B"]
    level = start
    bars = [{"label": "A", "bottom": 0.0, "height": start}]
    for s in steps:
        k = float(s["kpps"])
        bars.append({"label": s["label"], "bottom": level, "height": k})
        level += k
    bars.append({"label": "B", "bottom": 0.0, "height": end})
    colours = ["#777777"] + ["#2a7f3f" if b["height"] >= 0 else "#b03a2e" for b in bars[1:-1]] + ["#777777"]
    xs = list(range(len(bars)))
    ax.bar(xs, [b["height"] for b in bars], bottom=[b["bottom"] for b in bars], color=colours,
           edgecolor="black", linewidth=0.5)
    for x, b in zip(xs, bars):
        top = b["bottom"] + max(b["height"], 0)
        text = f"{b['height']:+.1f}" if 0 < x < len(bars) - 1 else f"{b['height']:.1f}"
        ax.annotate(text, (x, top), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=8)
    lo = min(min(b["bottom"], b["bottom"] + b["height"]) for b in bars[1:-1]) if len(bars) > 2 else 0
    lo = min(lo, start, end)
    hi = max(start, end, max(b["bottom"] + max(b["height"], 0) for b in bars))
    pad = 0.15 * (hi - lo if hi > lo else max(hi, 1))
    ax.set_ylim(max(0.0, lo - pad), hi + pad)
    ax.set_ylabel("kpps")
    a, b = e["a"], e["b"]
    ax.set_title(f"kpps from A to B: {start:.1f} -> {end:.1f} ({end - start:+.1f})\n"
                 f"A: {a.get('label', '')}\nB: {b.get('label', '')}", fontsize=8)
    drawn(ax)["bars"] = [{"label": b["label"], "bottom": b["bottom"], "height": b["height"]}
                         for b in bars]
    drawn(ax)["ends"] = {"from": start, "to": end, "sum_of_steps": level - start}


def main_waterfall(args):
    if len(args.results) != 1:
        die("a waterfall draws one explanation (one JSON of simloop explain -o)")
    e = read_explanation(args.results[0])
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * (len(e["waterfall"]["steps"]) + 2) + 2), 5.5))
    plot_waterfall(e, ax)
    fig.tight_layout()
    stem = args.output or os.path.splitext(args.results[0])[0] + "-waterfall"
    save_figure(fig, stem)
    if args.describe:
        describe(fig, "waterfall", [], args.describe)


def read_trace(path):
    try:
        with open(path, encoding="utf-8") as f:
            t = json.load(f)
    except OSError as err:
        die(f"{path}: {err.strerror}")
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        line, col = getattr(err, "lineno", 1), getattr(err, "colno", 1)
        die(f"{path}:{line}:{col}: not a trace of simloop run --trace ({err.__class__.__name__})")
    if not isinstance(t, dict) or not isinstance(t.get("traceEvents"), list):
        die(f"{path}:1:1: expected a trace of simloop run --trace (an object with \"traceEvents\")")
    return t["traceEvents"]


def main_timeline(args):
    if len(args.results) != 1:
        die("a timeline draws one trace (the JSON of simloop run --trace)")
    events = [e for e in read_trace(args.results[0]) if e.get("ph") != "M"]
    if not events:
        die(f"{args.results[0]}: the trace holds no events")
    spans, open_, counters = defaultdict(list), [], defaultdict(lambda: ([], []))
    instants = []
    for e in events:
        ph, ts = e.get("ph"), float(e.get("ts", 0))
        if ph == "B":
            open_.append((e.get("name", ""), e.get("cat", ""), ts))
        elif ph == "E" and open_:
            name, cat, t0 = open_.pop()
            spans[len(open_)].append((t0, ts - t0, name, cat))
        elif ph == "X":
            spans[len(open_)].append((ts, float(e.get("dur", 0)), e.get("name", ""), "stage"))
        elif ph == "C":
            xs, ys = counters[e.get("name", "")]
            xs.append(ts)
            ys.append(next(iter(e.get("args", {}).values()), 0))
        elif ph == "i":
            instants.append((ts, e.get("name", "")))
    t_min = min(float(e.get("ts", 0)) for e in events)
    stages = sorted({n for lane in spans.values() for (_, _, n, c) in lane if c == "stage"})
    fig, (ax, axc) = plt.subplots(2, 1, figsize=(12, 6.5), sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1]})
    depth = max(spans) + 1 if spans else 1
    for d, lane in sorted(spans.items()):
        y = depth - 1 - d
        for cat_is_stage in (False, True):
            bars = [(t0 - t_min, dur) for (t0, dur, n, c) in lane if (c == "stage") == cat_is_stage]
            if not bars:
                continue
            if cat_is_stage:
                for st in stages:
                    b = [(t0 - t_min, dur) for (t0, dur, n, c) in lane if c == "stage" and n == st]
                    if b:
                        ax.broken_barh(b, (y + 0.1, 0.8), facecolors=stage_colour(stages, st),
                                       label=st if d == min(k for k in spans if any(
                                           x[2] == st and x[3] == "stage" for x in spans[k])) else None)
            else:
                colours = ["#d62728" if n == "interrupt" else "#bbbbbb" for (t0, dur, n, c) in lane
                           if c != "stage"]
                ax.broken_barh(bars, (y + 0.1, 0.8), facecolors=colours, edgecolor="black", linewidth=0.2)
    for ts, name in instants:
        ax.axvline(ts - t_min, color="black", linewidth=0.5, linestyle=":")
    ax.set_yticks([depth - 1 - d + 0.5 for d in sorted(spans)])
    ax.set_yticklabels([f"depth {d}" for d in sorted(spans)], fontsize=7)
    ax.set_title(f"CPU timeline, simulated time ({os.path.basename(args.results[0])}); "
                 "grey: calls, red: interrupt handlers, colours: stages", fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, fontsize=7, ncol=6, loc="upper center", bbox_to_anchor=(0.5, -0.02))
    for name, (xs, ys) in sorted(counters.items()):
        axc.step([x - t_min for x in xs], ys, where="post", label=name, linewidth=0.8)
    axc.set_xlabel("simulated time (µs from the window's start)")
    axc.set_ylabel("occupancy")
    if counters:
        axc.legend(fontsize=7)
    drawn(ax)["bars"] = [{"depth": d, "spans": len(v)} for d, v in sorted(spans.items())]
    drawn(axc)["lines"] = [{"label": n, "points": len(xs)} for n, (xs, _) in sorted(counters.items())]
    fig.tight_layout()
    stem = args.output or os.path.splitext(args.results[0])[0] + "-timeline"
    save_figure(fig, stem)
    if args.describe:
        describe(fig, "timeline", [], args.describe)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="CSV files written by simloop run, sweep or measure")
    ap.add_argument("--kind", choices=KINDS, help="plot kind (default: chosen from the columns)")
    ap.add_argument("--x", help="padding: the column on the x axis (default: a column named like *pad*)")
    ap.add_argument("--band", type=float, default=0.15, help="scatter: relative error band (default 0.15)")
    ap.add_argument("--where", action="append", metavar="KEY=VALUE",
                    help="only rows that satisfy it (repeatable): KEY=VALUE, KEY!=VALUE, KEY<N, "
                         "KEY<=N, KEY>N or KEY>=N, e.g. --where 'payload>=512'")
    ap.add_argument("--describe", metavar="FILE", help="write what was drawn as JSON")
    ap.add_argument("-o", "--output", help="output file stem (default: next to the results)")
    args = ap.parse_args()
    if args.describe:
        refuse_link(args.describe)
    if args.kind is None and args.results[0].endswith(".json"):
        try:
            with open(args.results[0], encoding="utf-8", errors="replace") as f:
                head = f.read(256)
        except OSError as err:
            die(f"{args.results[0]}: {err.strerror}")
        args.kind = "timeline" if '"traceEvents"' in head else "waterfall"
    if args.kind == "timeline":
        return main_timeline(args)
    if args.kind == "waterfall" or (args.kind is None and args.results[0].endswith(".json")):
        return main_waterfall(args)
    rows = []
    for path in args.results:
        rows += read_rows(path)
    rows = where(rows, args.where)
    kind = args.kind or choose_kind(ok_rows(rows) or rows)
    if kind not in ("breakdown", "accuracy") and "kpps" not in rows[0]:
        die(f"{kind} needs a kpps column")
    # A swept key the plot does not show: one panel per value if there is
    # one such key with few values, else a refusal that names them.
    hidden = hidden_keys(rows, kind, args.x)
    facet_key, facets = None, [None]
    if len(hidden) == 1 and len({r[hidden[0]] for r in rows}) <= 6:
        facet_key = hidden[0]
        facets = sort_values({r[facet_key] for r in rows})
    elif hidden:
        listing = "; ".join(f"{k}: {', '.join(sort_values({r[k] for r in rows}))}" for k in hidden)
        die(f"the {kind} plot would average over {', '.join(hidden)}, which it does not show "
            f"({listing}); pick with --where KEY=VALUE")
    stem = args.output or os.path.splitext(args.results[0])[0] + "-" + kind
    wide = kind == "breakdown" or (kind == "distribution" and len({r.get("point") for r in rows}) > 8)
    width = (10 if wide else 8) * (1 if len(facets) == 1 else min(len(facets), 3) * 0.7)
    height = 5 if kind not in ("scatter", "accuracy") else 6
    ncols = min(len(facets), 3)
    nrows = (len(facets) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height * nrows), squeeze=False, sharey=True)
    plot = {"breakdown": plot_breakdown, "payload": plot_payload, "distribution": plot_distribution,
            "crossover": plot_crossover, "accuracy": plot_accuracy,
            "padding": lambda r, a: plot_padding(r, a, args.x),
            "scatter": lambda r, a: plot_scatter(r, a, args.band)}[kind]
    for ax, value in zip(axes.flat, facets):
        part = rows if facet_key is None else [r for r in rows if r[facet_key] == value]
        plot(part, ax)
        if facet_key is not None:
            ax.set_title(f"{ax.get_title()}\n{facet_key} = {value}", fontsize=10)
    for ax in list(axes.flat)[len(facets):]:
        ax.remove()
    fig.tight_layout()
    save_figure(fig, stem)
    if args.describe:
        describe(fig, kind, [] if facet_key is None else [f"{facet_key}={v}" for v in facets], args.describe)


if __name__ == "__main__":
    # A warning is a bug of this script, not something for the reader.
    warnings.simplefilter("error")
    try:
        main()
    except Refused as e:
        print(f"simloop plot: {e}", file=sys.stderr)
        sys.exit(2)
