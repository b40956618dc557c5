"""The breakdown plot: cycles per packet by stage, one stacked bar per
configuration (the mean over its repeats), labelled by what differs."""
import math

from .data import faulted, label_of, num, ok_rows, per_config, short_name, value_order
from .describe import drawn
from .keys import one_to_one, tag, value
from .style import stage_colour, stage_groups


def plot_breakdown(rows, ax, labels=(), series=None):
    """`labels`: the keys that differ across the rows, each bar's label; with
    `series` the bars are grouped by its value, a gap and its name between groups."""
    keys = ([series] if series else []) + [k for k in labels if k != series]
    # With a series, its value (and what differs with it: a machine zipped
    # with the stack) names each group of bars once, above them; the bars'
    # labels say the rest.
    with_series = [k for k in labels if series and k != series and one_to_one(rows, k, series)]
    tick_keys = [k for k in keys if not series or k not in [series] + with_series]
    stage_sets = stage_groups(rows)
    good = ok_rows(rows)
    shown = per_config(good, keys)
    bad = [r for r in rows if faulted(r)]
    # Faulted runs get a bar of their own: the cycles spent up to the fault, hatched.
    bars = shown + per_config(bad, keys)
    if series:  # grouped by the series' value, each group in the order it came
        order = sorted(range(len(bars)), key=lambda i: (value_order(value(bars[i], series) or ""), i))
        bars = [bars[i] for i in order]
    labeller = (lambda r: "\n".join(f"{short_name(k)}={value(r, k)}" for k in tick_keys if value(r, k) is not None)) \
        if tick_keys or series else label_of
    # A stage is one layer whatever each stack calls it (rows of two stacks:
    # each row has its own stack's column), labelled with the names it has.
    def layer_value(r, words):
        vals = [num(r, "cycles_" + w) for w in words]
        return sum(v for v in vals if math.isfinite(v))
    layers = []
    for _, words in stage_sets:
        used = [w for w in words if any(num(r, "cycles_" + w) > 0 for r in bars)]
        if used:
            layers.append(("/".join(used), used))
    stages = [label for label, _ in layers]
    bottoms = [0.0] * len(bars)
    # A gap of one bar between groups of the series.
    x, at, last = [], 0, None
    for b in bars:
        v = value(b, series) if series else None
        if series and last is not None and v != last:
            at += 1
        x.append(at)
        at, last = at + 1, v
    hatches = ["//" if faulted(b) else "" for b in bars]
    for stage, words in layers:
        vals = [layer_value(r, words) for r in bars]
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
    repeats = max((b["_runs"] for b in shown), default=1)
    ax.set_title("Where each packet's cycles go" + (" (mean over repeats)" if repeats > 1 else ""))
    if series:
        groups = []
        for xi, b in zip(x, bars):
            v = value(b, series)
            if groups and groups[-1]["value"] == v:
                groups[-1]["x"].append(xi)
            else:
                groups.append({"value": v, "x": [xi]})
        for g in groups[1:]:
            ax.axvline(g["x"][0] - 1, color="grey", linestyle=":", linewidth=1)
        names = []
        for g in groups:
            first = next(b for xi, b in zip(x, bars) if xi == g["x"][0])
            names.append(tag(first, [series] + with_series).replace(" ", "\n"))
        top = ax.secondary_xaxis("top")
        top.set_xticks([sum(g["x"]) / len(g["x"]) for g in groups])
        top.set_xticklabels(names, fontsize=8)
        top.tick_params(length=0)
        drawn(ax)["groups"] = [{"series": f"{short_name(series)}={g['value']}", "label": n.replace("\n", " "),
                                "x": g["x"]} for g, n in zip(groups, names)]
    if len(bars) > 6:
        ax.set_xlabel(f"{len(bars)} " + ("configurations" if keys else "runs") + (", kpps above each bar" if any(
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
    drawn(ax)["bar_labels"] = [labeller(r) for r in bars]
