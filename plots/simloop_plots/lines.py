"""kpps against a column, a line per group: the padding and crossover plots."""
import math
from collections import defaultdict

from .axes import mark_faults, set_xscale_for
from .data import faulted, mean_sd, num, ok_rows, padding_column, short_name, value_order, varying
from .describe import drawn, finite
from .output import die
from .style import axis_label


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


def plot_padding(rows, ax, x=None, series=None, labels=()):
    """A line per configuration: every key that differs but the x axis (labels)."""
    x = x or padding_column(rows)
    if not x:
        die("no padding column (a column named like layout.pad_bytes); use --x COLUMN")
    if x not in rows[0]:
        die(f"no column {x} (columns: {', '.join(rows[0])})")
    same_as_x = {x, short_name(x)}
    others = [k for k in labels if k not in same_as_x and k != "source"]
    if series in others:  # the series named first, as it reads in the legend
        others = [series] + [k for k in others if k != series]
    groups = lines_against(rows, ax, x, ["source"] + others if "source" in labels else others)
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


def plot_crossover(rows, ax, series=None, labels=()):
    # The compared key: options.align unless --series names another (and
    # beside it what differs with it, labels). The title says what is
    # compared, and claims no crossover where one value is drawn.
    key = series or "align"
    keys = [key] + [k for k in labels if k not in (key, "source")]
    groups = lines_against(rows, ax, "payload", ["source"] + keys if "source" in labels else keys)
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
