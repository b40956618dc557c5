"""The distribution plot: the run-to-run spread of kpps at each point."""
import math
from collections import defaultdict

from .data import label_of, num, ok_rows, swept_columns
from .describe import drawn, finite
from .output import die


def point_label(r, swept):
    if swept:
        return "\n".join(f"{k.split('.')[-1]}={r[k]}" for k in swept)
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
    set_min_span(ax, [y for v in data for y in v])
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
