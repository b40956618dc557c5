"""The breakdown plot: cycles per packet by stage, one stacked bar per run or point."""
import math

from .data import faulted, label_of, num, ok_rows, per_point, swept_columns
from .describe import drawn
from .style import stage_colour, stage_groups


def plot_breakdown(rows, ax):
    swept = swept_columns(rows)
    groups = stage_groups(rows)
    good = ok_rows(rows)
    shown = per_point(good) if good else []
    bad = [r for r in rows if faulted(r)]
    # Faulted runs get a bar of their own: the cycles spent up to the fault, hatched.
    bars = shown + per_point(bad)
    labeller = (lambda r: "\n".join(f"{k.split('.')[-1]}={r[k]}" for k in swept)) if swept else label_of
    # A stage is one layer whatever each stack calls it (rows of two stacks:
    # each row has its own stack's column), labelled with the names it has.
    def value(r, words):
        vals = [num(r, "cycles_" + w) for w in words]
        return sum(v for v in vals if math.isfinite(v))
    layers = []
    for _, words in groups:
        used = [w for w in words if any(num(r, "cycles_" + w) > 0 for r in bars)]
        if used:
            layers.append(("/".join(used), used))
    stages = [label for label, _ in layers]
    bottoms = [0.0] * len(bars)
    x = list(range(len(bars)))
    hatches = ["" if i < len(shown) else "//" for i in x]
    for stage, words in layers:
        vals = [value(r, words) for r in bars]
        colour = stage_colour(words[0])
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
