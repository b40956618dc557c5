"""What plots share on their axes: faulted runs marked, a log x axis for
log-spaced values, a y axis fitted to the data, labels thinned until none
overlaps."""
import math

import matplotlib.ticker

from .data import faulted, num
from .describe import drawn, finite, shown_ticklabels


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
