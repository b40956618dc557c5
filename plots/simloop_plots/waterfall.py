"""The waterfall plot of `simloop explain -o`: A's kpps to B's, a bar per part."""
import json
import os

import matplotlib.patches
import matplotlib.pyplot as plt
import matplotlib.transforms

from .describe import describe, drawn
from .output import die, save_figure


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
