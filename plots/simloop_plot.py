#!/usr/bin/python3
"""Plots simloop result files (CSV, one tidy row per run).

The kind of plot is chosen from the columns unless --kind says:
  breakdown     cycles per packet by stage, one stacked bar per configuration (mean over its repeats)
  payload       kpps against payload size (predicted, measured), with error bars over repeats;
                the y axis fits the data, the line rate drawn where it falls inside it
  padding       kpps against code padding, or any numeric column given with --x
  distribution  run-to-run spread of kpps over the repeats of each configuration (box plot; a
                configuration of one run is drawn as a point, not a box)
  scatter       predicted against measured kpps with the y = x line and an error band
                (a sweep CSV and a `simloop measure native` CSV, or one file with both)
  crossover     kpps against payload, one line per options.align (the alignment crossover),
                or per --series KEY
  accuracy      predicted against measured kpps per point of a `simloop compare` CSV, training
                and held-out points apart, with y = x and the 10 % and 15 % bands; or predicted
                against measured I1 misses per packet of a `simloop icache --measured` CSV
  timeline      a trace of `simloop run --trace`: the CPU's spans over simulated time as a
                Gantt chart (one lane per nesting depth, slices coloured by stage, interrupts
                and sleep marked), with the stack's counters below (the NIC ring, its input
                queue, its sockets' buffers), an axis per unit; the first few packets, so that
                slices can be told apart, unless --where packets=FROM:TO or packets=all
  waterfall     the JSON of `simloop explain -o`: bars from A's kpps to B's, one per part of
                the difference (the clock, then functions by kind of cost), largest first
A plot never averages rows that differ in what ran. Each key that differs
across its rows (a swept key, the stack, the machine, the experiment, the
destination, alignment and copy) is drawn on an axis, in the labels of its
lines, bars, boxes or points, or as a panel per value (one key, or keys that
vary together, up to six values); else the plot refuses, naming the keys
(pick values with --where KEY=VALUE, or draw one apart in one panel with
--series KEY, which every kind of rows takes). The stack and machine that
all rows share are named in the title. Runs that faulted are drawn as marked
points. Swept values that
grow by a constant factor (16, 64, 256, 1024) go on a log x axis. Each stage
has one colour of its own in every plot.
--describe FILE writes what was drawn (lines, bars, markers, legends,
annotations) as JSON, for tests and for readers of the figure.
Runs under Debian's /usr/bin/python3, which has matplotlib.
"""
import argparse
import os
import sys
import warnings

try:
    import matplotlib
except ImportError as e:
    # An installation that cannot draw: simloop's exit status 1, on an
    # [error] line like its other refusals, not a traceback.
    print(f"[error] simloop plot needs python3-matplotlib ({e}): apt-get install "
          "python3-matplotlib", file=sys.stderr)
    sys.exit(1)

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# The drawing is in simloop_plots/ beside this script, in the source tree and
# where it is installed (share/simloop/plots) alike.
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from simloop_plots.accuracy import plot_accuracy, plot_scatter  # noqa: E402
from simloop_plots.axes import thin_labels  # noqa: E402
from simloop_plots.breakdown import plot_breakdown  # noqa: E402
from simloop_plots.data import choose_kind, ok_rows, padding_column, read_rows, short_name  # noqa: E402
from simloop_plots.describe import describe  # noqa: E402
from simloop_plots.distribution import plot_distribution  # noqa: E402
from simloop_plots.lines import plot_crossover, plot_padding  # noqa: E402
from simloop_plots.output import Refused, die, refuse_link, save_figure  # noqa: E402
from simloop_plots.payload import finish_payload, plot_payload  # noqa: E402
from simloop_plots.keys import layout, value as value_of  # noqa: E402
from simloop_plots.select import series_column, where  # noqa: E402
from simloop_plots.style import set_stage_words  # noqa: E402
from simloop_plots.timeline import main_timeline  # noqa: E402
from simloop_plots.waterfall import main_waterfall  # noqa: E402

KINDS = ("breakdown", "payload", "padding", "distribution", "scatter", "crossover", "accuracy",
         "waterfall", "timeline")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="CSV files written by simloop run, sweep or measure")
    ap.add_argument("--kind", choices=KINDS, help="plot kind (default: chosen from the columns)")
    ap.add_argument("--x", help="padding: the column on the x axis (default: a column named like *pad*)")
    ap.add_argument("--band", type=float, default=0.15, help="scatter: relative error band (default 0.15)")
    ap.add_argument("--series", metavar="KEY",
                    help="draw the values of this key apart in one panel (instead of a panel per value): "
                         "a line per value (payload, padding, crossover), a group of bars (breakdown), "
                         "a colour (distribution, scatter), a marker (accuracy); e.g. --series stack")
    ap.add_argument("--where", action="append", metavar="KEY=VALUE",
                    help="only rows that satisfy it (repeatable): KEY=VALUE, KEY!=VALUE, KEY<N, "
                         "KEY<=N, KEY>N or KEY>=N, e.g. --where 'payload>=512'")
    ap.add_argument("--describe", metavar="FILE", help="write what was drawn as JSON")
    ap.add_argument("--stage-words", metavar="WORD=STAGE,...",
                    help="stacks' own names of stages (simloop plot gives them from its stacks' tables): "
                         "each is drawn as its stage, in its colour")
    ap.add_argument("-o", "--output", help="output file stem (default: next to the results)")
    args = ap.parse_args()
    set_stage_words(args.stage_words)
    if args.describe:
        refuse_link(args.describe)
    if args.kind is None and args.results[0].endswith(".json"):
        try:
            with open(args.results[0], encoding="utf-8", errors="replace") as f:
                head = f.read(256)
        except OSError as err:
            die(f"{args.results[0]}: {err.strerror}")
        args.kind = "timeline" if '"traceEvents"' in head else "waterfall"
    if args.series and (args.kind in ("timeline", "waterfall") or args.results[0].endswith(".json")):
        die("--series draws the values of a key apart; a timeline draws one run and a waterfall one "
            "explanation, in which nothing differs")
    if args.kind == "timeline":
        return main_timeline(args)
    if args.kind == "waterfall" or (args.kind is None and args.results[0].endswith(".json")):
        return main_waterfall(args)
    rows = []
    for path in args.results:
        rows += read_rows(path)
    rows = where(rows, args.where)
    kind = args.kind or choose_kind(ok_rows(rows) or rows)
    if kind not in ("breakdown", "accuracy") and "kpps" not in rows[0]:
        die(f"{rows[0]['_file']}:1: the {kind} plot needs a kpps column (columns: "
            f"{', '.join(c for c in rows[0] if not c.startswith('_'))})")
    # Every key that differs across the rows is drawn apart: on the x axis,
    # as lines or labels, or as a panel per value; else the plot refuses,
    # naming it (keys.py).
    series = series_column(rows, kind, args.series, args.x)
    lay = layout(rows, kind, (args.x or padding_column(rows)) if kind == "padding" else None, series)
    facets = lay.facets
    stem = args.output or os.path.splitext(args.results[0])[0] + "-" + kind
    configs = len({tuple(r.get(k) for k in lay.labels + lay.facet) for r in rows})
    wide = kind in ("breakdown", "distribution") and (kind == "breakdown" or configs > 8 or len(lay.labels) > 1)
    bars = configs / len(facets)
    # A bar or box as wide as its longest label line (about 0.07 inch a character at their size).
    longest = max((len(f"{short_name(k)}={value_of(r, k)}") for r in rows for k in lay.labels), default=0)
    per_bar = max(0.3, 0.07 * longest)
    width = (max(10, min(30, 3 + per_bar * bars)) if wide else 8) * (1 if len(facets) == 1 else min(len(facets), 3) * 0.7)
    height = 5 if kind not in ("scatter", "accuracy") else 6
    ncols = min(len(facets), 3)
    nrows = (len(facets) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height * nrows), squeeze=False, sharey=True)
    labels = lay.labels
    plot = {"breakdown": lambda r, a: plot_breakdown(r, a, labels, series),
            "distribution": lambda r, a: plot_distribution(r, a, labels, series),
            "crossover": lambda r, a: plot_crossover(r, a, series, labels),
            "payload": lambda r, a: plot_payload(r, a, series, labels),
            "accuracy": lambda r, a: plot_accuracy(r, a, series),
            "padding": lambda r, a: plot_padding(r, a, args.x, series, labels),
            "scatter": lambda r, a: plot_scatter(r, a, args.band, series, labels)}[kind]
    for ax, value in zip(axes.flat, facets):
        plot(lay.rows_of(rows, value), ax)
        title = ax.get_title()
        if lay.facet:
            title += "\n" + lay.facet_title(value)
        if lay.context:
            title += f"\n({lay.context})"
        if lay.facet or lay.context:
            ax.set_title(title, fontsize=10)
    if kind == "payload":
        finish_payload([(ax, lay.rows_of(rows, value)) for ax, value in zip(axes.flat, facets)])
    for ax in list(axes.flat)[len(facets):]:
        ax.remove()
    fig.tight_layout()
    thin_labels(fig)
    save_figure(fig, stem)
    if args.describe:
        describe(fig, kind, [",".join(f"{k}={v}" for k, v in zip(lay.facet, value)) for value in facets]
                 if lay.facet else [], args.describe)


if __name__ == "__main__":
    # A warning is a bug of this script, not something for the reader.
    warnings.simplefilter("error")
    try:
        main()
    except Refused as e:
        # As simloop's own refusals: an [error] line, 2 for bad input, 4 for
        # an output that could not be written.
        print(f"[error] {e}", file=sys.stderr)
        sys.exit(e.status)
