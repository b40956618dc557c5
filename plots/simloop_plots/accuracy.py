"""Predicted against measured: the scatter and accuracy plots."""
from collections import defaultdict

from .data import mean_sd, num, ok_rows, short_name, value_order
from .describe import drawn, finite
from .keys import tag, value
from .output import die


SHARED = ("payload", "dest", "align", "copy")


def plot_scatter(rows, ax, band=0.15, series=None, labels=()):
    """A point per configuration of the simulated rows, against the measured
    rows of its path (SHARED): what else differs among the simulated rows
    (`labels`: the stack, the machine, ...) names its points, and `series`
    colours them."""
    rows = ok_rows(rows)
    pred = [r for r in rows if r.get("source") == "simulated"]
    meas = [r for r in rows if r.get("source") not in ("simulated", None, "")]
    if not pred or not meas:
        die("scatter needs simulated rows and measured rows (e.g. a sweep CSV and a "
                 "simloop measure native CSV)")
    keys = [k for k in SHARED if k in pred[0] and k in meas[0]]
    extra = [k for k in labels if k not in SHARED and k not in ("source", series)]
    p_by, m_by = defaultdict(list), defaultdict(list)
    for r in pred:
        p_by[(tuple(r[k] for k in keys), value(r, series) if series else None, tag(r, extra))].append(num(r, "kpps"))
    for r in meas:
        m_by[tuple(r[k] for k in keys)].append(num(r, "kpps"))
    common = sorted((k for k in p_by if k[0] in m_by), key=lambda k: (value_order(k[1] or ""), k[0], k[2]))
    if not common:
        die(f"no simulated and measured rows share {', '.join(keys)}")
    xs, ys, xe, ye = [], [], [], []
    for k in common:
        mm, ms = mean_sd(m_by[k[0]])
        pm, ps = mean_sd(p_by[k])
        xs.append(mm), ys.append(pm), xe.append(ms), ye.append(ps)
    for v in dict.fromkeys(k[1] for k in common):
        at = [i for i, k in enumerate(common) if k[1] == v]
        label = "runs (mean, sd over repeats)" if v is None else f"{short_name(series)}={v} (mean, sd over repeats)"
        ax.errorbar([xs[i] for i in at], [ys[i] for i in at], xerr=[xe[i] for i in at], yerr=[ye[i] for i in at],
                    fmt="o", capsize=3, label=label)
        drawn(ax)["markers"].append({"kind": "points", "label": label, "x": finite([xs[i] for i in at]),
                                     "y": finite([ys[i] for i in at])})
    for x, y, k in zip(xs, ys, common):
        ax.annotate(" ".join(v for v in k[0] + (k[2],) if v), (x, y), fontsize=7, xytext=(4, 4),
                    textcoords="offset points")
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


def predictor_of(rows):
    """What predicted the rows: their `predictor` column (simloop compare
    writes it), else, in a CSV from before it did, a fitted profile where
    some rows trained it and a simulation where none did."""
    named = [r.get("predictor") for r in rows if r.get("predictor")]
    if named:
        return "; ".join(dict.fromkeys(named))
    return "calibrated profile" if any(r.get("set") == "train" for r in rows) else "simulated"


def plot_accuracy(rows, ax, series=None):
    # Two kinds of comparison: kpps (simloop compare: training and held-out
    # points) and I1 misses per packet (simloop icache --measured: one group
    # per I1 geometry, nothing fitted to them).
    i1 = "measured_i1_misses_per_packet" in rows[0]
    metric = "i1_misses_per_packet" if i1 else "kpps"
    if i1:
        groups = {g: ("o", f"I1 {g}") for g in dict.fromkeys(r.get("i1") for r in rows)}
        key = "i1"
    else:
        fitted = any(r.get("set") == "train" for r in rows)
        groups = {"train": ("s", "training points"),
                  "validation": ("o", "held-out points" if fitted else "measured points (nothing fitted)")}
        key = "set"
    vals = []
    for name, (marker, label) in groups.items():
        rs = [r for r in rows if r.get(key) == name and r.get(f"measured_{metric}") not in (None, "")]
        if not rs:
            continue
        if series:  # a marker per value of the series, within the group
            for i, v in enumerate(sorted({value(r, series) for r in rs} - {None}, key=value_order)):
                part = [r for r in rs if value(r, series) == v]
                xs, ys = [num(r, f"measured_{metric}") for r in part], [num(r, f"predicted_{metric}") for r in part]
                named = f"{label}, {short_name(series)}={v} ({len(part)})"
                ax.plot(xs, ys, "osD^v<>p"[i % 8], ms=6, alpha=0.8, label=named)
                drawn(ax)["markers"].append({"kind": "points", "label": named, "x": finite(xs), "y": finite(ys)})
            vals += [num(r, f"measured_{metric}") for r in rs] + [num(r, f"predicted_{metric}") for r in rs]
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
        drawn(ax)["markers"].append({"kind": "points", "label": label, "x": finite(xs), "y": finite(ys)})
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
        ax.set_ylabel(f"predicted transmit rate (kpps, {predictor_of(rows)})")
        ax.set_title(f"Predicted against measured: {source}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
