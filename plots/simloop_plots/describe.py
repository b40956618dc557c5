"""--describe: what each panel shows (lines, bars, markers, references,
labels and where they sit), recorded as it is drawn and written as JSON."""
import json
import math

from .output import write_atomic


DRAWN = {}  # id(ax) -> what was drawn on it, for --describe


def drawn(ax):
    return DRAWN.setdefault(id(ax), {"lines": [], "bars": [], "markers": [], "references": []})


def finite(values):
    return [v if isinstance(v, (int, float)) and math.isfinite(v) else None for v in values]


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
