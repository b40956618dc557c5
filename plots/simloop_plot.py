#!/usr/bin/python3
"""Plots simloop result files (CSV, one tidy row per run).

The kind of plot is chosen from the columns unless --kind says:
  breakdown     cycles per packet by stage, one stacked bar per run (per point of a sweep)
  payload       kpps against payload size (predicted, measured), with error bars over repeats;
                the y axis fits the data, the line rate drawn where it falls inside it
  padding       kpps against code padding, or any numeric column given with --x
  distribution  run-to-run spread of kpps over the repeats of each point (box plot; a point
                of one run is drawn as a point, not a box)
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
A plot never averages over a swept key it does not show: with one such key
it draws a panel per value (or, with --series KEY, a line per value in one
panel), with more it refuses and names them (pick values with --where
KEY=VALUE). Runs that faulted are drawn as marked points. Swept values that
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
from simloop_plots.data import ALIASES, choose_kind, label_of, ok_rows, read_rows, sort_values  # noqa: E402
from simloop_plots.describe import describe  # noqa: E402
from simloop_plots.distribution import plot_distribution  # noqa: E402
from simloop_plots.lines import plot_crossover, plot_padding  # noqa: E402
from simloop_plots.output import Refused, die, refuse_link, save_figure  # noqa: E402
from simloop_plots.payload import finish_payload, plot_payload  # noqa: E402
from simloop_plots.select import hidden_keys, series_column, where  # noqa: E402
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
                    help="payload, padding, crossover: a line per value of this swept key in one panel "
                         "(instead of a panel per value), e.g. --series machine.clock_hz")
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
    # A swept key the plot does not show: one panel per value if there is
    # one such key with few values, else a refusal that names them.
    series = series_column(rows, kind, args.series, args.x or ("workload.payload" if kind != "padding" else None))
    # A short alias (align) stands for its swept key (options.align) and the other way round.
    shown_key = ALIASES.get(series, series) if series else None
    hidden = [k for k in hidden_keys(rows, kind, args.x, shown_key) if k != series]
    facet_key, facets = None, [None]
    if len(hidden) == 1 and len({r[hidden[0]] for r in rows}) <= 6:
        facet_key = hidden[0]
        facets = sort_values({r[facet_key] for r in rows})
    elif hidden:
        listing = "; ".join(f"{k}: {', '.join(sort_values({r[k] for r in rows}))}" for k in hidden)
        die(f"the {kind} plot would average over {', '.join(hidden)}, which it does not show "
            f"({listing}); pick with --where KEY=VALUE")
    stem = args.output or os.path.splitext(args.results[0])[0] + "-" + kind
    wide = kind == "breakdown" or (kind == "distribution" and len({r.get("point") for r in rows}) > 8)
    bars = len({r.get("point") or label_of(r) for r in rows}) / len(facets)
    width = (max(10, min(24, 3 + 0.3 * bars)) if wide else 8) * (1 if len(facets) == 1 else min(len(facets), 3) * 0.7)
    height = 5 if kind not in ("scatter", "accuracy") else 6
    ncols = min(len(facets), 3)
    nrows = (len(facets) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height * nrows), squeeze=False, sharey=True)
    plot = {"breakdown": plot_breakdown, "distribution": plot_distribution,
            "crossover": lambda r, a: plot_crossover(r, a, series),
            "payload": lambda r, a: plot_payload(r, a, series), "accuracy": plot_accuracy,
            "padding": lambda r, a: plot_padding(r, a, args.x, shown_key if shown_key in rows[0] else series),
            "scatter": lambda r, a: plot_scatter(r, a, args.band)}[kind]
    for ax, value in zip(axes.flat, facets):
        part = rows if facet_key is None else [r for r in rows if r[facet_key] == value]
        plot(part, ax)
        if facet_key is not None:
            ax.set_title(f"{ax.get_title()}\n{facet_key} = {value}", fontsize=10)
    if kind == "payload":
        finish_payload([(ax, rows if facet_key is None else [r for r in rows if r[facet_key] == value])
                        for ax, value in zip(axes.flat, facets)])
    for ax in list(axes.flat)[len(facets):]:
        ax.remove()
    fig.tight_layout()
    thin_labels(fig)
    save_figure(fig, stem)
    if args.describe:
        describe(fig, kind, [] if facet_key is None else [f"{facet_key}={v}" for v in facets], args.describe)


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
