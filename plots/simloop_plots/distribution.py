"""The distribution plot: the run-to-run spread of kpps of each configuration."""
import math

from matplotlib.lines import Line2D

from .data import label_of, num, ok_rows, short_name, value_order
from .describe import drawn, finite
from .keys import one_to_one, tag, value
from .output import die


def point_label(r, keys):
    if keys:
        return "\n".join(f"{short_name(k)}={value(r, k)}" for k in keys if value(r, k) is not None)
    return label_of(r)


# The y axis spans at least this fraction of the mean either side of the
# data's middle: repeats 0.7 % apart are drawn as close as they are, not
# stretched over the whole axis into a cliff.
MIN_HALF_SPAN = 0.02


def set_min_span(ax, values):
    vals = [v for v in values if math.isfinite(v)]
    if not vals:
        return
    mean = sum(vals) / len(vals)
    lo, hi = min(vals), max(vals)
    half = MIN_HALF_SPAN * abs(mean)
    if half > 0 and (hi - lo) * 1.1 / 2 < half:
        mid = (lo + hi) / 2
        ax.set_ylim(mid - half, mid + half)


def plot_distribution(rows, ax, labels=(), series=None):
    """A box (or, of one run, a point) per configuration: the values of the
    keys that differ (`labels`), each box's label. With `series` the boxes
    are ordered and coloured by its value, with a legend."""
    names = ([series] if series else []) + [k for k in labels if k != series]
    rows = ok_rows(rows) or die("no run ended ok: nothing to draw a distribution of")
    # With a series, its value and what differs with it are in the legend,
    # the boxes' labels say the rest.
    with_series = [k for k in labels if series and k != series and one_to_one(rows, k, series)]
    tick_keys = [k for k in names if not series or k not in [series] + with_series]
    groups = {}
    first = {}
    for r in rows:
        key = tuple(value(r, k) for k in names)
        groups.setdefault(key, []).append(num(r, "kpps"))
        first.setdefault(key, r)
    keys = list(groups)
    if series:
        keys.sort(key=lambda k: value_order(k[0] or ""))
    data = [groups[k] for k in keys]
    values = list(dict.fromkeys(k[0] for k in keys)) if series else [None]
    colour = {v: f"C{i % 10}" for i, v in enumerate(values)}
    # A box needs repeats to summarise: a configuration of one run is drawn as
    # that run alone, and the title says so.
    boxed = [i for i, vals in enumerate(data, start=1) if len(vals) > 1]
    for v in values:
        mine = [i for i in boxed if not series or keys[i - 1][0] == v]
        if not mine:
            continue
        style = {"color": colour[v]} if series else {}
        ax.boxplot([data[i - 1] for i in mine], positions=mine, showmeans=True, widths=0.6,
                   boxprops=style, whiskerprops=style, capprops=style, medianprops=style if series else None)
    for i, vals in enumerate(data, start=1):
        c = colour[keys[i - 1][0]] if series else ("C1" if len(vals) > 1 else "C0")
        ax.plot([i + (j - (len(vals) - 1) / 2) * 0.04 for j in range(len(vals))], vals, ".",
                color=c, alpha=0.7 if len(vals) > 1 else 1.0, markersize=6 if len(vals) > 1 else 9)
    if series:
        ax.legend([Line2D([], [], color=colour[v], marker="s", linestyle="none") for v in values],
                  [tag(next(first[k] for k in keys if k[0] == v), [series] + with_series) for v in values],
                  fontsize=8)
    drawn(ax)["boxes"] = [{"point": point_label(first[keys[i - 1]], names).replace("\n", " "),
                           "runs": len(data[i - 1])} for i in boxed]
    drawn(ax)["groups"] = [{"label": point_label(first[k], names).replace("\n", " "), "runs": len(groups[k]),
                            "kpps": finite(groups[k])} for k in keys]
    drawn(ax)["markers"].append({"kind": "runs", "x": [i for i, v in enumerate(data, start=1) for _ in v],
                                 "y": finite([y for v in data for y in v])})
    ax.set_xticks(range(1, len(keys) + 1))
    ax.set_xticklabels([point_label(first[k], tick_keys) if tick_keys or not series else "" for k in keys], fontsize=7,
                       rotation=90 if len(keys) > 12 else 0)
    ax.set_xlim(0.5, len(keys) + 0.5)
    set_min_span(ax, [y for v in data for y in v])
    ax.set_ylabel("transmit rate (kpps)")
    lo, hi = min(len(v) for v in data), max(len(v) for v in data)
    what = "configuration" if names else "point"
    if hi == 1:
        ax.set_title(f"Packet rate per {what}: one run each, so no spread to show (points, not boxes)")
    elif lo == 1:
        ax.set_title(f"Run-to-run spread of the packet rate (1 to {hi} repeats per {what}; "
                     f"{what}s of one run drawn alone, not as boxes)")
    else:
        n = f"{hi}" if lo == hi else f"{lo} to {hi}"
        ax.set_title(f"Run-to-run spread of the packet rate ({n} repeats per {what})")
    ax.grid(True, axis="y", alpha=0.3)
