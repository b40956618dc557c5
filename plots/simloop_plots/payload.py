"""The payload plot: kpps against payload size, with the link's line rate."""
import json
import math
import os
from collections import defaultdict

from .axes import data_range, fit_ylim, mark_faults, set_xscale_for
from .data import mean_sd, num, ok_rows, short_name, value_order
from .describe import drawn, finite
from .keys import tag


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


def plot_payload(rows, ax, series=None, labels=()):
    """A line per configuration: the path (its values bare, as they read:
    wire none m_copy) and every other key that differs (labels: the stack,
    the machine, ...), named, the series' last."""
    named = [k for k in labels if k not in ("source", "dest", "align", "copy", series)]
    groups = defaultdict(lambda: defaultdict(list))
    enobufs = defaultdict(lambda: defaultdict(list))
    for r in ok_rows(rows):
        # The series' value once, named (align=none), not also bare among the others.
        key = tuple("" if short_name(series) == k else r.get(k, "") for k in ("dest", "align", "copy"))
        key = (r.get("source", "?"),) + key + (tag(r, named),)
        key += (f"{short_name(series)}={r.get(series)}" if series else "",)
        groups[key][num(r, "payload")].append(num(r, "kpps"))
        enobufs[key][num(r, "payload")].append(num(r, "enobufs"))
    slept_x, slept_y = [], []
    for key, by_size in sorted(groups.items(), key=lambda kv: kv[0][:5] + (value_order(kv[0][5]),)):
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
