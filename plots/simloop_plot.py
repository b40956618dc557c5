#!/usr/bin/python3
"""Plots simloop result files (CSV, one tidy row per run).

The kind of plot is chosen from the columns unless --kind says:
  breakdown     cycles per packet by stage, one stacked bar per run (per point of a sweep)
  payload       kpps against payload size (predicted, measured), with error bars over repeats;
                the y axis fits the data, the line rate drawn where it falls inside it
  padding       kpps against code padding, or any numeric column given with --x
  distribution  run-to-run spread of kpps over the repeats of each point (box plot; a point
                of one run is drawn as a point, not a box)
  scatter       predicted against measured kpps with the y = x line and an error band
                (a sweep CSV and a `simloop measure native` CSV, or one file with both)
  crossover     kpps against payload, one line per options.align (the alignment crossover),
                or per --series KEY
  accuracy      predicted against measured kpps per point of a `simloop compare` CSV, training
                and held-out points apart, with y = x and the 10 % and 15 % bands; or predicted
                against measured I1 misses per packet of a `simloop icache --measured` CSV
  timeline      a trace of `simloop run --trace`: the CPU's spans over simulated time as a
                Gantt chart (one lane per nesting depth, slices coloured by stage, interrupts
                and sleep marked), with the NIC ring (frames), netisr queue (packets) and
                socket buffer (bytes) below, an axis each; the first few packets, so that
                slices can be told apart, unless --where packets=FROM:TO or packets=all
  waterfall     the JSON of `simloop explain -o`: bars from A's kpps to B's, one per part of
                the difference (the clock, then functions by kind of cost), largest first
A plot never averages over a swept key it does not show: with one such key
it draws a panel per value (or, with --series KEY, a line per value in one
panel), with more it refuses and names them (pick values with --where
KEY=VALUE). Runs that faulted are drawn as marked points. Swept values that
grow by a constant factor (16, 64, 256, 1024) go on a log x axis. Each stage
has one colour of its own in every plot.
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
import matplotlib.patches  # noqa: E402
import matplotlib.ticker  # noqa: E402
import matplotlib.transforms  # noqa: E402

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
    swept = swept_columns(rows)
    if "kpps" in rows[0] and varying(rows, "payload") and (
            varying(rows, "options.align") if swept else varying(rows, "align")):
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
# stage has a colour of its own, the same in every plot (breakdown, timeline):
# its place in the simulator's list of stages (models/cycle_account.h) picks
# it from a qualitative palette of clearly different colours, none of them the
# red of faults and interrupt handlers or the grey of calls. A stage the list
# does not know takes the next colour no stage has.
STAGES = ("user", "syscall", "socket", "udp", "ip", "ether", "driver", "loop", "netisr", "input", "receive",
          "copy", "mbuf", "unaligned", "cache", "interrupt", "sleep", "idle", "tlb", "branch")
PALETTE = ("#1f77b4", "#ffd92f", "#f0027f", "#2ca02c", "#e6550d", "#8c564b", "#cedb9c", "#984ea3", "#f7b6d2",
           "#17becf", "#fdae6b", "#637939", "#1b9e77", "#a6d854", "#393b79", "#d6616b", "#f781bf", "#9e9ac8",
           "#a6761d", "#6b6ecf", "#7fc97f", "#fdd0a2")
HANDLER_RED, CALL_GREY = "#d62728", "#bbbbbb"
_unknown_stages = []


def stage_columns(rows):
    return [k[len("cycles_"):] for k in rows[0] if k.startswith("cycles_") and k != "cycles_per_packet"]


def stage_colour(stage):
    if stage in STAGES:
        return PALETTE[STAGES.index(stage)]
    if stage not in _unknown_stages:
        _unknown_stages.append(stage)
    i = len(STAGES) + _unknown_stages.index(stage)
    if i < len(PALETTE):
        return PALETTE[i]
    spare = [matplotlib.colors.to_hex(c) for c in plt.get_cmap("tab20b").colors]
    return spare[(i - len(PALETTE)) % len(spare)]


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
        colour = stage_colour(stage)
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
                        va="bottom", fontsize=9 if len(bars) <= 6 else 7, rotation=0 if len(bars) <= 12 else 90,
                        gid="thin")
    ax.set_xticks(x)
    ax.set_xticklabels([labeller(r) for r in bars], fontsize=8 if len(bars) <= 6 else 7,
                       rotation=0 if len(bars) <= 6 else 90)
    ax.set_ylabel("CPU cycles per packet (cycles)")
    repeats = max((sum(1 for r in good if r.get("point") == b.get("point")) for b in shown), default=1)
    ax.set_title("Where each packet's cycles go" + (" (mean over repeats)" if swept and repeats > 1 else ""))
    if len(bars) > 6:
        ax.set_xlabel(f"{len(bars)} " + ("points" if swept else "runs") + (", kpps above each bar" if any(
            "kpps" in r for r in bars) else ""), fontsize=8)
    # The legend reads like the stack: its top entry is the top of the stack.
    handles, labels = ax.get_legend_handles_labels()
    order = [labels.index(s) for s in reversed(stages) if s in labels]
    if order:
        ax.legend([handles[i] for i in order], [labels[i] for i in order], loc="center left",
                  bbox_to_anchor=(1.0, 0.5), fontsize=8, title="stage")
    top = max(bottoms) if bottoms else 0
    ax.set_ylim(0, top * (1.12 if len(bars) <= 12 else 1.25) if top > 0 else 1)
    if len(bars) == 1:
        ax.set_xlim(-1.5, 1.5)


def overlaps(a, b):
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def thin(texts, renderer):
    """Shows every k-th of a row of labels, the smallest k at which none
    overlaps another; returns k (1: all shown)."""
    boxes = [t.get_window_extent(renderer) for t in texts]
    for k in range(1, len(texts) + 1):
        kept = boxes[::k]
        if not any(overlaps(a, b) for i, a in enumerate(kept) for b in kept[i + 1:]):
            for i, t in enumerate(texts):
                t.set_visible(i % k == 0)
            return k
    return len(texts)


def thin_labels(fig):
    """Labels that would be drawn over one another (tick labels of many bars,
    their values) thinned to every k-th, and the axis label says so; any text
    still over another that was kept is dropped, tick labels and values
    first, titles, axis labels and red notes (faults) never."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        ticks = shown_ticklabels(ax.xaxis, *ax.get_xlim())
        k = thin(ticks, renderer) if len(ticks) > 1 else 1
        values = [t for t in ax.texts if t.get_visible() and t.get_gid() == "thin"]
        kv = thin(values, renderer) if len(values) > 1 else 1
        if k > 1 or kv > 1:
            def every(n, what):
                return f"every {'other' if n == 2 else f'{n}th'} {what}"
            said = ([every(k, "tick labelled")] if k > 1 else []) + ([every(kv, "value shown")] if kv > 1 else [])
            ax.set_xlabel("; ".join([t for t in [ax.get_xlabel()] if t] + said), fontsize=8)
        fixed = [t for t in (ax.title, ax.xaxis.label, ax.yaxis.label) if t.get_text()]
        fixed += [t for t in ax.texts if t.get_visible() and t.get_gid() != "thin"]
        kept = [t.get_window_extent(renderer) for t in fixed]
        for t in shown_ticklabels(ax.yaxis, *ax.get_ylim()) + shown_ticklabels(ax.xaxis, *ax.get_xlim()) + [
                t for t in ax.texts if t.get_visible() and t.get_gid() == "thin"]:
            b = t.get_window_extent(renderer)
            if any(overlaps(b, o) for o in kept):
                t.set_visible(False)
            else:
                kept.append(b)


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


def plot_payload(rows, ax, series=None):
    groups = defaultdict(lambda: defaultdict(list))
    enobufs = defaultdict(lambda: defaultdict(list))
    for r in ok_rows(rows):
        # The series' value once, named (align=none), not also bare among the others.
        key = tuple("" if short_name(series) == k else r.get(k, "") for k in ("dest", "align", "copy"))
        key = (r.get("source", "?"),) + key + (f"{short_name(series)}={r.get(series)}" if series else "",)
        groups[key][num(r, "payload")].append(num(r, "kpps"))
        enobufs[key][num(r, "payload")].append(num(r, "enobufs"))
    slept_x, slept_y = [], []
    for key, by_size in sorted(groups.items(), key=lambda kv: kv[0][:4] + (value_order(kv[0][4]),)):
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
    mark_faults(ax, rows, lambda r: num(r, "payload"))
    sizes = sorted({num(r, "payload") for r in rows if math.isfinite(num(r, "payload"))})
    ax.set_xlabel("UDP payload (bytes)")
    set_xscale_for(ax, sizes)
    ax.set_ylabel("transmit rate (kpps)")
    ax.set_title("Packet rate against payload size" + (f", a line per {short_name(series)}" if series else ""))
    ax.grid(True, alpha=0.3)


def finish_payload(panels):
    """The payload panels' y axis (shared) and line rate, once all are drawn.
    The y axis is the data's, not the line rate's: at small payloads a
    1 Gbit/s link carries some 1,500 kpps, ten times what a stack sends, and
    an axis up to it would flatten every curve."""
    ranges = [data_range(ax) for ax, _ in panels]
    top = None
    for ax, _ in panels:
        top = fit_ylim(ax, min(lo for lo, _ in ranges), max(hi for _, hi in ranges))
    for ax, rows in panels:
        line_rate(ax, rows, top)
        if ax.get_legend_handles_labels()[1]:
            ax.legend(fontsize=8)


def line_rate(ax, rows, top):
    """What the link can carry, where the datagrams go on a wire: a labelled
    line where it falls inside the axis, else a note that it lies above."""
    bw = link_bandwidth(rows)
    sizes = sorted({num(r, "payload") for r in rows if math.isfinite(num(r, "payload"))})
    if bw and any(r.get("dest") == "wire" for r in rows) and sizes:
        xs = sorted(set(sizes) | set(range(int(sizes[0]), int(sizes[-1]) + 1, max(1, int(sizes[-1] - sizes[0]) // 200))))
        ys = [bw / (8 * wire_bytes(int(x))) / 1e3 for x in xs]
        rate = f"{bw / 1e9:g} Gbit/s" if bw >= 1e9 else f"{bw / 1e6:g} Mbit/s"
        shown = [(x, y) for x, y in zip(xs, ys) if top is None or y <= top]
        if shown:
            ax.plot([x for x, _ in shown], [y for _, y in shown], ":", color="black", linewidth=1,
                    label=f"line rate ({rate})")
            # Under its right end: the line falls to the right, so it stays clear of the text.
            x_end, y_end = shown[-1]
            ax.annotate(f"{rate} line rate", (x_end, y_end), xytext=(-2, -4), textcoords="offset points",
                        ha="right", va="top", fontsize=8)
        else:
            ax.annotate(f"{rate} line rate above this axis ({min(ys):,.0f} to {max(ys):,.0f} kpps)",
                        (0.99, 0.98), xycoords="axes fraction", ha="right", va="top", fontsize=8)
        drawn(ax)["references"].append({"kind": "line_rate", "bandwidth_bps": bw, "x": xs, "y": ys,
                                        "shown_x": [x for x, _ in shown]})


def short_name(key):
    """A swept key as a label names it: the last part of its path."""
    return key.split(".")[-1] if key else key


def value_order(text):
    """Sorts values as numbers where they are numbers (500 before 1000)."""
    value = text.partition("=")[2] if "=" in text else text
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


def log_spaced(values):
    """Swept values that grow by a roughly constant factor of about 2 or more
    (16, 64, 256, 1024; 1e8, 1e9, 1e10): a log axis spaces them evenly."""
    vs = sorted({v for v in values if math.isfinite(v)})
    if len(vs) < 3 or vs[0] <= 0:
        return False
    steps = [math.log(b / a) for a, b in zip(vs, vs[1:])]
    return min(steps) >= math.log(1.8) and max(steps) <= 1.5 * min(steps)


def set_xscale_for(ax, values):
    """A log x axis when the values are log-spaced, ticked at the values themselves."""
    vs = sorted({v for v in values if math.isfinite(v)})
    if not log_spaced(vs):
        return
    twos = all(v == 2 ** round(math.log2(v)) for v in vs)
    ax.set_xscale("log", base=2 if twos else 10)
    if len(vs) <= 12:
        ax.set_xticks(vs)
        ax.set_xticklabels([f"{v:g}" for v in vs])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())


def data_range(ax):
    """The lowest and highest y of the data drawn on ax so far (error bars included)."""
    lo, hi = math.inf, -math.inf
    for line in drawn(ax)["lines"]:
        for y, sd in zip(line["y"], line.get("sd") or [0] * len(line["y"])):
            if y is not None:
                lo, hi = min(lo, y - (sd or 0)), max(hi, y + (sd or 0))
    for m in drawn(ax)["markers"]:
        for y in m["y"]:
            if y is not None:
                lo, hi = min(lo, y), max(hi, y)
    return lo, hi


def fit_ylim(ax, lo, hi):
    """Sets the y axis to the data with a margin: from 0 unless the data sit
    far above it. Returns the top, or None when nothing was drawn."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    bottom = min(0.0, lo) if lo <= 0.5 * hi else lo
    pad = 0.08 * (hi - bottom if hi > bottom else max(abs(hi), 1.0))
    ax.set_ylim(bottom - pad if bottom else 0.0, hi + pad)
    return hi + pad


def lines_against(rows, ax, x, group_keys, style="o-"):
    """Mean kpps against column x, one line per group, error bars over repeats."""
    groups = defaultdict(lambda: defaultdict(list))
    for r in ok_rows(rows):
        xv = num(r, x)
        if math.isnan(xv):
            continue
        groups[tuple(f"{short_name(k)}={r.get(k)}" for k in group_keys if r.get(k))][xv].append(r)
    if not groups and not any(faulted(r) for r in rows):
        die(f"no numeric values in column {x}")
    kpps = {k: {v: [num(r, "kpps") for r in rs] for v, rs in by.items()} for k, by in groups.items()}
    for key, by_x in sorted(kpps.items(), key=lambda kv: tuple(value_order(k) for k in kv[0])):
        xs = sorted(by_x)
        stats = [mean_sd(by_x[v]) for v in xs]
        label = " ".join(key) or None
        ax.errorbar(xs, [m for m, _ in stats], yerr=[sd for _, sd in stats], fmt=style, capsize=3,
                    markersize=4, label=label)
        drawn(ax)["lines"].append({"label": label, "x": xs, "y": finite([m for m, _ in stats]),
                                   "sd": finite([sd for _, sd in stats])})
    mark_faults(ax, rows, lambda r: num(r, x))
    set_xscale_for(ax, [num(r, x) for r in rows])
    ax.set_ylabel("transmit rate (kpps)")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[1]:
        ax.legend(fontsize=8)
    return groups


def plot_padding(rows, ax, x=None, series=None):
    x = x or padding_column(rows)
    if not x:
        die("no padding column (a column named like layout.pad_bytes); use --x COLUMN")
    if x not in rows[0]:
        die(f"no column {x} (columns: {', '.join(rows[0])})")
    others = [k for k in swept_columns(rows) if k != x and varying(rows, k)]
    if series in others:  # the series named first, as it reads in the legend
        others = [series] + [k for k in others if k != series]
    groups = lines_against(rows, ax, x, ["source"] + others if varying(rows, "source") else others)
    ax.set_xlabel(axis_label(x))
    ax.set_title(("Packet rate against code padding" if "pad" in x.lower() else f"Packet rate against {x}")
                 + (f", a line per {', '.join(short_name(k) for k in others)}" if others else ""))
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


def plot_crossover(rows, ax, series=None):
    # The compared key: options.align unless --series names another. The
    # title says what is compared, and claims no crossover where one value is drawn.
    key = series or "align"
    keys = [key] + (["align"] if short_name(key) != "align" and varying(rows, "align") else [])
    groups = lines_against(rows, ax, "payload", ["source"] + keys if varying(rows, "source") else keys)
    ax.set_xlabel("UDP payload (bytes)")
    if not varying(rows, key):
        ax.set_title(f"Packet rate against payload size ({short_name(key)} = {rows[0].get(key)} only: "
                     "nothing to cross)")
    elif short_name(key) == "align":
        ax.set_title("Alignment crossover: packet rate by alignment policy")
    else:
        ax.set_title(f"Crossover by {short_name(key)}: packet rate against payload size")
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
            at = math.sqrt(xs[i - 1] * xs[i]) if ax.get_xscale() == "log" else (xs[i - 1] + xs[i]) / 2
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
    # A box needs repeats to summarise: a point of one run is drawn as that
    # run alone, and the title says so.
    boxed = [i for i, vals in enumerate(data, start=1) if len(vals) > 1]
    if boxed:
        ax.boxplot([data[i - 1] for i in boxed], positions=boxed, showmeans=True, widths=0.6)
    for i, vals in enumerate(data, start=1):
        ax.plot([i + (j - (len(vals) - 1) / 2) * 0.04 for j in range(len(vals))], vals, ".",
                color="C1" if len(vals) > 1 else "C0", alpha=0.7 if len(vals) > 1 else 1.0,
                markersize=6 if len(vals) > 1 else 9)
    drawn(ax)["boxes"] = [{"point": str(keys[i - 1]), "runs": len(data[i - 1])} for i in boxed]
    drawn(ax)["markers"].append({"kind": "runs", "x": [i for i, v in enumerate(data, start=1) for _ in v],
                                 "y": finite([y for v in data for y in v])})
    ax.set_xticks(range(1, len(keys) + 1))
    ax.set_xticklabels([point_label(first[k], swept) for k in keys], fontsize=7,
                       rotation=90 if len(keys) > 12 else 0)
    ax.set_xlim(0.5, len(keys) + 0.5)
    ax.set_ylabel("transmit rate (kpps)")
    lo, hi = min(len(v) for v in data), max(len(v) for v in data)
    if hi == 1:
        ax.set_title("Packet rate per point: one run each, so no spread to show (points, not boxes)")
    elif lo == 1:
        ax.set_title(f"Run-to-run spread of the packet rate (1 to {hi} repeats per point; "
                     "points of one run drawn alone, not as boxes)")
    else:
        n = f"{hi}" if lo == hi else f"{lo} to {hi}"
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


def hidden_keys(rows, kind, x=None, series=None):
    shows = SHOWS.get(kind)
    if shows is None:
        return []
    return [k for k in swept_columns(rows) if k not in shows and k not in (x, series) and varying(rows, k)]


# The kinds that draw lines against an x axis, and so can draw a swept key as a line per value.
SERIES_KINDS = ("payload", "padding", "crossover")


def series_column(rows, kind, key, x=None):
    """The column --series KEY names (align for options.align), checked."""
    if key is None:
        return None
    if kind not in SERIES_KINDS:
        die(f"--series draws lines per value; the {kind} plot has none (it fits {', '.join(SERIES_KINDS)})")
    full = ALIASES.get(key, key)
    col = next((c for c in (key, full) if c in rows[0]), None)
    if col is None:
        swept = swept_columns(rows)
        die(f"--series {key}: no column {key}" + (f" (swept keys: {', '.join(swept)})" if swept else ""))
    if full in ("workload.payload", x or ""):
        die(f"--series {key}: that is the x axis; name another swept key")
    return col


def sort_values(values):
    try:
        return sorted(values, key=float)
    except ValueError:
        return sorted(values)


def shown_ticklabels(axis, lo, hi):
    """The tick labels an axis draws: visible, not empty, at ticks inside its limits."""
    lo, hi = min(lo, hi), max(lo, hi)
    out = []
    for tick in axis.get_major_ticks():
        label = tick.label1
        if label.get_visible() and label.get_text() and lo <= tick.get_loc() <= hi:
            out.append(label)
    return out


def shown_texts(ax):
    """Every piece of text drawn in a panel: tick labels, annotations, title and axis labels."""
    texts = shown_ticklabels(ax.xaxis, *ax.get_xlim()) + shown_ticklabels(ax.yaxis, *ax.get_ylim())
    texts += [t for t in ax.texts if t.get_visible() and t.get_text()]
    texts += [t for t in (ax.title, ax.xaxis.label, ax.yaxis.label) if t.get_text()]
    return texts


def label_boxes(ax, renderer):
    """Where each text of a panel sits on the figure (pixels: x0, y0, x1, y1)."""
    out = []
    for t in shown_texts(ax):
        b = t.get_window_extent(renderer)
        out.append({"text": t.get_text(), "box": [b.x0, b.y0, b.x1, b.y1]})
    return out


def describe(fig, kind, facets, path):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    panels = []
    for ax in fig.axes:
        if id(ax) not in DRAWN and not ax.get_title():
            continue  # a twin axis, described with its panel
        legend = ax.get_legend()
        panels.append({
            "title": ax.get_title(),
            "xlabel": ax.get_xlabel(),
            "ylabel": ax.get_ylabel(),
            "xlim": list(ax.get_xlim()),
            "ylim": list(ax.get_ylim()),
            "width_px": ax.get_window_extent(renderer).width,
            "xscale": ax.get_xscale(),
            "yscale": ax.get_yscale(),
            "legend": [t.get_text() for t in legend.get_texts()] if legend else [],
            "annotations": [t.get_text() for t in ax.texts if t.get_visible()],
            "labels": label_boxes(ax, renderer),
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
    # The bars of A and B stand on 0. Zoomed in on the steps (when they are
    # small beside the rates), the axis is drawn broken: marks on the axis
    # and across A's and B's bars, and a note of where it starts.
    bottom = lo - pad
    if bottom <= 0.25 * hi:
        bottom = 0.0
    ax.set_ylim(bottom, hi + pad)
    ax.set_ylabel("kpps")
    if bottom > 0:
        ax.set_ylabel(f"kpps (axis broken: starts at {bottom:.0f}, not 0)")
        blend = matplotlib.transforms.blended_transform_factory(ax.transData, ax.transAxes)
        for x in (xs[0], xs[-1]):
            ax.add_patch(matplotlib.patches.Rectangle((x - 0.42, 0.035), 0.84, 0.025, transform=blend,
                                                      facecolor="white", edgecolor="none", zorder=3))
            for y in (0.035, 0.06):
                ax.plot([x - 0.42, x + 0.42], [y - 0.01, y + 0.01], transform=blend, color="black",
                        linewidth=0.8, zorder=4)
        for y in (0.035, 0.06):
            ax.plot([-0.012, 0.012], [y - 0.01, y + 0.01], transform=ax.transAxes, color="black",
                    linewidth=1, clip_on=False, zorder=4)
        drawn(ax)["axis_break"] = bottom
    a, b = e["a"], e["b"]
    broken = f"; the y axis starts at {bottom:.0f}, not 0" if bottom > 0 else ""
    ax.set_title(f"kpps from A to B: {start:.1f} -> {end:.1f} ({end - start:+.1f}){broken}\n"
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


# A trace's packets end where the counters are written (after each packet):
# the window of a timeline is a run of whole packets. Drawn whole, a trace of
# 1000 packets is a barcode; by default the timeline shows the first packets,
# as many as keep its typical stage slice a few pixels wide.
TIMELINE_PX = 1000  # about the width of the timeline's axes in pixels
SLICE_PX = 4        # the median stage slice at least this wide, by default


def timeline_window(args, ends, slices, t_min, t_max):
    """(first packet, end packet, from µs, to µs) of the trace to draw, and how it was chosen."""
    n = len(ends)
    spec = None
    for cond in args.where or []:
        key, sep, value = cond.partition("=")
        if key != "packets" or not sep:
            die(f"--where {cond}: a timeline takes --where packets=FROM:TO (packets of the trace, "
                f"0 to {n}) or --where packets=all")
        spec = value
    if spec == "all" or n == 0:
        return 0, n, t_min, t_max, "all"
    if spec is not None:
        a, sep, b = spec.partition(":")
        try:
            first, end = int(a or 0), int(b) if b else n
        except ValueError:
            die(f"--where packets={spec}: expected FROM:TO, whole packets (e.g. 0:20), or all")
        if not sep or not 0 <= first < end or end > n:
            die(f"--where packets={spec}: expected FROM:TO with 0 <= FROM < TO <= {n} (the trace's packets)")
        how = "asked"
    else:
        durs = sorted(d for d in slices if d > 0)
        median = durs[len(durs) // 2] if durs else (t_max - t_min) / max(n, 1)
        span = median * TIMELINE_PX / SLICE_PX
        first, end = 0, 1
        while end < n and ends[end] - t_min <= span:
            end += 1
        how = "default"
    t0 = t_min if first == 0 else ends[first - 1]
    t1 = ends[end - 1] if end < n else t_max
    return first, end, t0, t1, how


# The counters of a trace by unit: each unit has an axis of its own.
COUNTER_UNITS = ("frames", "packets", "bytes")


def main_timeline(args):
    if len(args.results) != 1:
        die("a timeline draws one trace (the JSON of simloop run --trace)")
    events = [e for e in read_trace(args.results[0]) if e.get("ph") != "M"]
    if not events:
        die(f"{args.results[0]}: the trace holds no events")
    spans, open_, counters, units = defaultdict(list), [], defaultdict(lambda: ([], [])), {}
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
            unit, value = next(iter(e.get("args", {}).items()), ("", 0))
            units[e.get("name", "")] = unit
            xs.append(ts)
            ys.append(value)
        elif ph == "i":
            instants.append((ts, e.get("name", "")))
    t_min = min(float(e.get("ts", 0)) for e in events)
    t_max = max(float(e.get("ts", 0)) + float(e.get("dur", 0)) for e in events)
    # A packet ends where the first counter is written after it.
    ends = counters[next(iter(counters))][0] if counters else []
    slices = [dur for lane in spans.values() for (_, dur, _, c) in lane if c == "stage"]
    first, end, w0, w1, how = timeline_window(args, ends, slices, t_min, t_max)
    # What falls in the window: spans that overlap it, counters up to its end
    # (from the last value before it), instants inside it.
    spans = {d: [s for s in lane if s[0] < w1 and s[0] + s[1] > w0] or [] for d, lane in spans.items()}
    spans = {d: lane for d, lane in spans.items() if lane}
    for name, (xs, ys) in list(counters.items()):
        keep = [i for i, x in enumerate(xs) if w0 <= x <= w1]
        before = [i for i, x in enumerate(xs) if x < w0]
        keep = before[-1:] + keep
        counters[name] = ([max(xs[i], w0) for i in keep], [ys[i] for i in keep])
    instants = [(ts, name) for ts, name in instants if w0 <= ts <= w1]
    stages = sorted({n for lane in spans.values() for (_, _, n, c) in lane if c == "stage"},
                    key=lambda s: (STAGES.index(s) if s in STAGES else len(STAGES), s))
    by_unit = defaultdict(list)
    for name in counters:
        by_unit[units.get(name, "")].append(name)
    unit_order = [u for u in COUNTER_UNITS if u in by_unit] + sorted(u for u in by_unit if u not in COUNTER_UNITS)
    fig, axs = plt.subplots(1 + len(unit_order), 1, figsize=(12, 4.5 + 1.3 * len(unit_order)), sharex=True,
                            gridspec_kw={"height_ratios": [3] + [1] * len(unit_order)}, squeeze=False)
    ax, count_axes = axs[0][0], [a[0] for a in axs[1:]]
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
                        ax.broken_barh(b, (y + 0.1, 0.8), facecolors=stage_colour(st),
                                       label=st if d == min(k for k in spans if any(
                                           x[2] == st and x[3] == "stage" for x in spans[k])) else None)
            else:
                colours = [HANDLER_RED if n == "interrupt" else CALL_GREY for (t0, dur, n, c) in lane
                           if c != "stage"]
                ax.broken_barh(bars, (y + 0.1, 0.8), facecolors=colours, edgecolor="black", linewidth=0.2)
    for ts, name in instants:
        ax.axvline(ts - t_min, color="black", linewidth=0.5, linestyle=":")
    ax.set_yticks([depth - 1 - d + 0.5 for d in sorted(spans)])
    ax.set_yticklabels([f"depth {d}" for d in sorted(spans)], fontsize=7)
    ax.set_xlim(w0 - t_min, w1 - t_min)
    n = len(ends)
    if how == "all":
        shown = f"all {n} packets of the trace" if n else "the whole trace"
    else:
        shown = f"packets {first} to {end - 1} of the {n} in the trace"
    change = ("; others: --where packets=FROM:TO, all: --where packets=all" if how != "all"
              else "; a closer look: --where packets=FROM:TO")
    ax.set_title(f"CPU timeline, simulated time ({os.path.basename(args.results[0])}): {shown} "
                 f"({w0 - t_min:.1f} to {w1 - t_min:.1f} µs){change}\n"
                 "grey: calls, red: interrupt handlers, colours: stages", fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, fontsize=7, ncol=min(len(handles), 10), loc="upper center",
                  bbox_to_anchor=(0.5, -0.02))
    for axc, unit in zip(count_axes, unit_order):
        for i, name in enumerate(sorted(by_unit[unit])):
            xs, ys = counters[name]
            axc.step([x - t_min for x in xs], ys, where="post", label=name, linewidth=0.8, color=f"C{i}")
            drawn(axc)["lines"].append({"label": name, "unit": unit, "points": len(xs)})
        names = sorted(by_unit[unit])
        axc.set_ylabel(f"{unit}" if unit else "value", fontsize=8)
        axc.set_title(f"{', '.join(names)} ({unit})" if unit else ", ".join(names), fontsize=8, loc="left")
        axc.legend(fontsize=7, loc="upper right")
        top = max(1, max((y for name in names for y in counters[name][1]), default=0))
        axc.set_ylim(-0.05 * top, top * 1.15)  # a counter at 0 drawn clear of the axis
    (count_axes[-1] if count_axes else ax).set_xlabel("simulated time (µs from the trace's start)")
    drawn(ax)["bars"] = [{"depth": d, "spans": len(v)} for d, v in sorted(spans.items())]
    drawn(ax)["stages"] = {st: stage_colour(st) for st in stages}
    drawn(ax)["handler_colour"] = HANDLER_RED
    drawn(ax)["window"] = {"packets": [first, end], "of": n, "us": [w0 - t_min, w1 - t_min], "how": how}
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
    ap.add_argument("--series", metavar="KEY",
                    help="payload, padding, crossover: a line per value of this swept key in one panel "
                         "(instead of a panel per value), e.g. --series machine.clock_hz")
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
    series = series_column(rows, kind, args.series, args.x or ("workload.payload" if kind != "padding" else None))
    # A short alias (align) stands for its swept key (options.align) and the other way round.
    shown_key = ALIASES.get(series, series) if series else None
    hidden = [k for k in hidden_keys(rows, kind, args.x, shown_key) if k != series]
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
    bars = len({r.get("point") or label_of(r) for r in rows}) / len(facets)
    width = (max(10, min(24, 3 + 0.3 * bars)) if wide else 8) * (1 if len(facets) == 1 else min(len(facets), 3) * 0.7)
    height = 5 if kind not in ("scatter", "accuracy") else 6
    ncols = min(len(facets), 3)
    nrows = (len(facets) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height * nrows), squeeze=False, sharey=True)
    plot = {"breakdown": plot_breakdown, "distribution": plot_distribution,
            "crossover": lambda r, a: plot_crossover(r, a, series),
            "payload": lambda r, a: plot_payload(r, a, series), "accuracy": plot_accuracy,
            "padding": lambda r, a: plot_padding(r, a, args.x, shown_key if shown_key in rows[0] else series),
            "scatter": lambda r, a: plot_scatter(r, a, args.band)}[kind]
    for ax, value in zip(axes.flat, facets):
        part = rows if facet_key is None else [r for r in rows if r[facet_key] == value]
        plot(part, ax)
        if facet_key is not None:
            ax.set_title(f"{ax.get_title()}\n{facet_key} = {value}", fontsize=10)
    if kind == "payload":
        finish_payload([(ax, rows if facet_key is None else [r for r in rows if r[facet_key] == value])
                        for ax, value in zip(axes.flat, facets)])
    for ax in list(axes.flat)[len(facets):]:
        ax.remove()
    fig.tight_layout()
    thin_labels(fig)
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
