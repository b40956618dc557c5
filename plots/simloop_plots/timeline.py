"""The timeline plot of `simloop run --trace`: the CPU's spans as a Gantt
chart, with the queues' counters below."""
import json
import os
from collections import defaultdict

import matplotlib.pyplot as plt

from .describe import describe, drawn
from .output import die, save_figure
from .style import CALL_GREY, HANDLER_RED, stage_colour, stage_order


def read_trace(path):
    try:
        with open(path, encoding="utf-8") as f:
            t = json.load(f)
    except OSError as err:
        die(f"{path}: {err.strerror}")
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        line, col = getattr(err, "lineno", 1), getattr(err, "colno", 1)
        die(f"{path}:{line}:{col}: not a trace of simloop run --trace ({err.__class__.__name__})")
    if not isinstance(t, dict) or not isinstance(t.get("traceEvents"), list):
        die(f"{path}:1:1: expected a trace of simloop run --trace (an object with \"traceEvents\")")
    return t["traceEvents"]


# A trace's packets end where the counters are written (after each packet):
# the window of a timeline is a run of whole packets, each a datagram sent. A
# send attempt that failed (ENOBUFS, then a retry) is no packet of its own:
# its time goes to the datagram its retry sends. Drawn whole, a trace of
# 1000 packets is a barcode; by default the timeline shows the first packets,
# as many as keep its typical stage slice a few pixels wide.
TIMELINE_PX = 1000  # about the width of the timeline's axes in pixels
SLICE_PX = 4        # the median stage slice at least this wide, by default


FAILED_SEND = ("ENOBUFS", "alignment fault")


def packet_ends(events):
    """Where each datagram sent ends: the last counter written in its send
    attempt (each attempt a sendto() span, not one a handler resumed), over
    the attempts no ENOBUFS or fault marks as failed. A trace without
    sendto() spans: wherever the first counter is written."""
    counter = next((e.get("name", "") for e in events if e.get("ph") == "C"), None)
    attempts = []  # [end, failed]
    for e in events:
        ph = e.get("ph")
        if ph == "B" and e.get("name") == "sendto()" and not e.get("args", {}).get("resumed"):
            attempts.append([None, False])
        elif attempts and ph == "C" and e.get("name") == counter:
            attempts[-1][0] = float(e.get("ts", 0))
        elif attempts and ph == "i" and e.get("name") in FAILED_SEND:
            attempts[-1][1] = True
    if not attempts:
        return [float(e.get("ts", 0)) for e in events if e.get("ph") == "C" and e.get("name") == counter]
    return [end for end, failed in attempts if end is not None and not failed]


def timeline_window(args, ends, slices, t_min, t_max):
    """(first packet, end packet, from µs, to µs) of the trace to draw, and how it was chosen."""
    n = len(ends)
    spec = None
    for cond in args.where or []:
        key, sep, value = cond.partition("=")
        if key != "packets" or not sep:
            die(f"--where {cond}: a timeline takes --where packets=FROM:TO (packets of the trace, "
                f"0 to {n}) or --where packets=all")
        spec = value
    if spec == "all" or n == 0:
        return 0, n, t_min, t_max, "all"
    if spec is not None:
        a, sep, b = spec.partition(":")
        try:
            first, end = int(a or 0), int(b) if b else n
        except ValueError:
            die(f"--where packets={spec}: expected FROM:TO, whole packets (e.g. 0:20), or all")
        if not sep or not 0 <= first < end or end > n:
            die(f"--where packets={spec}: expected FROM:TO with 0 <= FROM < TO <= {n} (the trace's packets)")
        how = "asked"
    else:
        durs = sorted(d for d in slices if d > 0)
        median = durs[len(durs) // 2] if durs else (t_max - t_min) / max(n, 1)
        span = median * TIMELINE_PX / SLICE_PX
        first, end = 0, 1
        while end < n and ends[end] - t_min <= span:
            end += 1
        how = "default"
    t0 = t_min if first == 0 else ends[first - 1]
    t1 = ends[end - 1] if end < n else t_max
    return first, end, t0, t1, how


# The counters of a trace by unit: each unit has an axis of its own.
COUNTER_UNITS = ("frames", "packets", "bytes")


def main_timeline(args):
    if len(args.results) != 1:
        die("a timeline draws one trace (the JSON of simloop run --trace)")
    events = [e for e in read_trace(args.results[0]) if e.get("ph") != "M"]
    if not events:
        die(f"{args.results[0]}: the trace holds no events")
    spans, open_, counters, units = defaultdict(list), [], defaultdict(lambda: ([], [])), {}
    instants = []
    for e in events:
        ph, ts = e.get("ph"), float(e.get("ts", 0))
        if ph == "B":
            open_.append((e.get("name", ""), e.get("cat", ""), ts))
        elif ph == "E" and open_:
            name, cat, t0 = open_.pop()
            spans[len(open_)].append((t0, ts - t0, name, cat))
        elif ph == "X":
            spans[len(open_)].append((ts, float(e.get("dur", 0)), e.get("name", ""), "stage"))
        elif ph == "C":
            xs, ys = counters[e.get("name", "")]
            unit, value = next(iter(e.get("args", {}).items()), ("", 0))
            units[e.get("name", "")] = unit
            xs.append(ts)
            ys.append(value)
        elif ph == "i":
            instants.append((ts, e.get("name", "")))
    t_min = min(float(e.get("ts", 0)) for e in events)
    t_max = max(float(e.get("ts", 0)) + float(e.get("dur", 0)) for e in events)
    ends = packet_ends(events)
    slices = [dur for lane in spans.values() for (_, dur, _, c) in lane if c == "stage"]
    first, end, w0, w1, how = timeline_window(args, ends, slices, t_min, t_max)
    # What falls in the window: spans that overlap it, counters up to its end
    # (from the last value before it), instants inside it.
    spans = {d: [s for s in lane if s[0] < w1 and s[0] + s[1] > w0] or [] for d, lane in spans.items()}
    spans = {d: lane for d, lane in spans.items() if lane}
    for name, (xs, ys) in list(counters.items()):
        keep = [i for i, x in enumerate(xs) if w0 <= x <= w1]
        before = [i for i, x in enumerate(xs) if x < w0]
        keep = before[-1:] + keep
        counters[name] = ([max(xs[i], w0) for i in keep], [ys[i] for i in keep])
    instants = [(ts, name) for ts, name in instants if w0 <= ts <= w1]
    stages = sorted({n for lane in spans.values() for (_, _, n, c) in lane if c == "stage"}, key=stage_order)
    by_unit = defaultdict(list)
    for name in counters:
        by_unit[units.get(name, "")].append(name)
    unit_order = [u for u in COUNTER_UNITS if u in by_unit] + sorted(u for u in by_unit if u not in COUNTER_UNITS)
    fig, axs = plt.subplots(1 + len(unit_order), 1, figsize=(12, 4.5 + 1.3 * len(unit_order)), sharex=True,
                            gridspec_kw={"height_ratios": [3] + [1] * len(unit_order)}, squeeze=False)
    ax, count_axes = axs[0][0], [a[0] for a in axs[1:]]
    depth = max(spans) + 1 if spans else 1
    for d, lane in sorted(spans.items()):
        y = depth - 1 - d
        for cat_is_stage in (False, True):
            bars = [(t0 - t_min, dur) for (t0, dur, n, c) in lane if (c == "stage") == cat_is_stage]
            if not bars:
                continue
            if cat_is_stage:
                for st in stages:
                    b = [(t0 - t_min, dur) for (t0, dur, n, c) in lane if c == "stage" and n == st]
                    if b:
                        ax.broken_barh(b, (y + 0.1, 0.8), facecolors=stage_colour(st),
                                       label=st if d == min(k for k in spans if any(
                                           x[2] == st and x[3] == "stage" for x in spans[k])) else None)
            else:
                colours = [HANDLER_RED if n == "interrupt" else CALL_GREY for (t0, dur, n, c) in lane
                           if c != "stage"]
                ax.broken_barh(bars, (y + 0.1, 0.8), facecolors=colours, edgecolor="black", linewidth=0.2)
    for ts, name in instants:
        ax.axvline(ts - t_min, color="black", linewidth=0.5, linestyle=":")
    ax.set_yticks([depth - 1 - d + 0.5 for d in sorted(spans)])
    ax.set_yticklabels([f"depth {d}" for d in sorted(spans)], fontsize=7)
    ax.set_xlim(w0 - t_min, w1 - t_min)
    n = len(ends)
    if how == "all":
        shown = f"all {n} packets sent in the trace" if n else "the whole trace"
    else:
        shown = f"packets {first} to {end - 1} of the {n} sent in the trace"
    change = ("; others: --where packets=FROM:TO, all: --where packets=all" if how != "all"
              else "; a closer look: --where packets=FROM:TO")
    ax.set_title(f"CPU timeline, simulated time ({os.path.basename(args.results[0])}): {shown} "
                 f"({w0 - t_min:.1f} to {w1 - t_min:.1f} µs){change}\n"
                 "grey: calls, red: interrupt handlers, colours: stages", fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, fontsize=7, ncol=min(len(handles), 10), loc="upper center",
                  bbox_to_anchor=(0.5, -0.02))
    for axc, unit in zip(count_axes, unit_order):
        for i, name in enumerate(sorted(by_unit[unit])):
            xs, ys = counters[name]
            axc.step([x - t_min for x in xs], ys, where="post", label=name, linewidth=0.8, color=f"C{i}")
            drawn(axc)["lines"].append({"label": name, "unit": unit, "points": len(xs)})
        names = sorted(by_unit[unit])
        axc.set_ylabel(f"{unit}" if unit else "value", fontsize=8)
        axc.set_title(f"{', '.join(names)} ({unit})" if unit else ", ".join(names), fontsize=8, loc="left")
        axc.legend(fontsize=7, loc="upper right")
        top = max(1, max((y for name in names for y in counters[name][1]), default=0))
        axc.set_ylim(-0.05 * top, top * 1.15)  # a counter at 0 drawn clear of the axis
    (count_axes[-1] if count_axes else ax).set_xlabel("simulated time (µs from the trace's start)")
    drawn(ax)["bars"] = [{"depth": d, "spans": len(v)} for d, v in sorted(spans.items())]
    drawn(ax)["stages"] = {st: stage_colour(st) for st in stages}
    drawn(ax)["handler_colour"] = HANDLER_RED
    drawn(ax)["window"] = {"packets": [first, end], "of": n, "us": [w0 - t_min, w1 - t_min], "how": how}
    fig.tight_layout()
    stem = args.output or os.path.splitext(args.results[0])[0] + "-timeline"
    save_figure(fig, stem)
    if args.describe:
        describe(fig, "timeline", [], args.describe)
