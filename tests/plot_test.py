#!/usr/bin/python3
"""simloop plot draws every kind from small result files (a real sweep and a
real native measurement in tests/data/plots), and each image is non-trivial:
PNG and SVG written, the PNG of some size and of many colours. Then the
properties of what it drew, from its own --describe JSON, on results of real
sweeps and runs made here: no pooling over a swept key the plot does not
show, stage colours and legend order, line-rate and ENOBUFS markers, no
crossover claimed from runs that slept differently, faulted runs marked."""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

import matplotlib.image as mpimg

simloop, data = sys.argv[1], sys.argv[2]
sweep = os.path.join(data, "sweep.csv")
native = os.path.join(data, "native.csv")
cases = {
    "breakdown": [sweep, "--kind", "breakdown"],
    "payload": [sweep, "--kind", "payload"],
    "padding": [sweep, "--kind", "padding", "--x", "workload.payload"],
    "distribution": [sweep, "--kind", "distribution"],
    "scatter": [sweep, native, "--kind", "scatter"],
    "crossover": [sweep, "--kind", "crossover"],
    # Chosen from the columns: two sources make a scatter, payload x align a crossover.
    "auto-scatter": [sweep, native],
    "auto-crossover": [sweep],
}
failures = []

# One list of kinds on each side of the process boundary, kept in step: the
# script's KINDS is what `simloop plot --kind` accepts, and what its help names.
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plots", "simloop_plot.py")
kinds_src = re.search(r"^KINDS = \(([^)]*)\)", open(script).read(), re.M)
script_kinds = re.findall(r'"([a-z]+)"', kinds_src.group(1))
helptext = subprocess.run([simloop, "plot", "--help"], capture_output=True, text=True).stdout
m = re.search(r"--kind TEXT:\{([^}]*)\}\s*\n\s*(.*)\n", helptext)
if not m or m.group(1).split(",") != script_kinds:
    failures.append(f"--kind accepts {m and m.group(1)}, the script draws {script_kinds}")
elif re.split(r", | or ", m.group(2).strip()) != script_kinds:
    failures.append(f"--kind's help names {m.group(2)!r}, the script draws {script_kinds}")
for k in script_kinds:
    if not re.search(rf"^  {k} +\S", helptext, re.M):
        failures.append(f"plot --help does not describe the kind {k}")

with tempfile.TemporaryDirectory() as out:
    for name, args in cases.items():
        stem = os.path.join(out, name)
        r = subprocess.run([simloop, "plot", *args, "-o", stem], capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{name}: exit {r.returncode}: {r.stdout}{r.stderr}")
            continue
        png, svg = stem + ".png", stem + ".svg"
        if not (os.path.exists(png) and os.path.exists(svg)):
            failures.append(f"{name}: missing {png} or {svg}")
            continue
        size = os.path.getsize(png)
        img = mpimg.imread(png)
        colours = {tuple(p) for p in img.reshape(-1, img.shape[-1])[::7].tolist()}
        print(f"{name}: {size} bytes, {img.shape[1]}x{img.shape[0]}, {len(colours)} colours")
        if size < 20000:
            failures.append(f"{name}: PNG only {size} bytes")
        if len(colours) < 20:
            failures.append(f"{name}: only {len(colours)} colours")
        if os.path.getsize(svg) < 20000:
            failures.append(f"{name}: SVG only {os.path.getsize(svg)} bytes")
    # Bad input is refused with a message, not a traceback.
    r = subprocess.run([simloop, "plot", sweep, "--kind", "padding", "--x", "no.such"], capture_output=True,
                       text=True)
    if r.returncode == 0 or "no column no.such" not in r.stderr:
        failures.append(f"padding with a missing column: exit {r.returncode}: {r.stderr}")
    r = subprocess.run([simloop, "plot", sweep, "--kind", "scatter"], capture_output=True, text=True)
    if r.returncode == 0 or "measured rows" not in r.stderr:
        failures.append(f"scatter without measured rows: exit {r.returncode}: {r.stderr}")


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(*args):
    return subprocess.run([simloop, *args], capture_output=True, text=True)


def plot(*args, stem):
    r = run("plot", *args, "-o", stem, "--describe", stem + ".json")
    desc = json.load(open(stem + ".json")) if r.returncode == 0 else None
    return r, desc


def rows_of(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


BASE = """machine: athlon-xp-2700
stack: freebsd6
workload: {{payload: 18, packets: {packets}, dest: {dest}}}
interrupts: {{enabled: {irq}, handler_cycles: 2000, moderation: {{interval_s: 125e-6}}}}
options: {{align: {align}, copy: m_dup}}
"""


def sweep(out, name, body, **kw):
    exp = os.path.join(out, name + ".yaml")
    with open(exp, "w") as f:
        f.write(f"name: {name}\n" + BASE.format(**{"packets": 3000, "dest": "wire", "align": "none", "irq": "true", **kw}) + body)
    r = run("-q", "sweep", exp, "-o", out)
    if r.returncode not in (0, 3):
        failures.append(f"sweep {name}: exit {r.returncode}: {r.stdout}{r.stderr}")
    return os.path.join(out, name + "-sweep.csv")


with tempfile.TemporaryDirectory() as out:
    # Two swept keys the payload plot does not show: refused, naming both.
    grid = sweep(out, "grid", """sweep:
  grid:
    workload.payload: [18, 512]
    machine.clock_hz: [1e9, 2e9]
    interrupts.handler_cycles: [1000, 4000]
""")
    r, _ = plot(grid, "--kind", "payload", stem=os.path.join(out, "p0"))
    check(r.returncode == 2 and "machine.clock_hz" in r.stderr and "interrupts.handler_cycles" in r.stderr
          and "--where" in r.stderr, f"payload plot refuses to pool two hidden keys: {r.returncode} {r.stderr}")
    # One picked: a panel per value of the other; the lines are the means of exactly those rows.
    r, d = plot(grid, "--kind", "payload", "--where", "machine.clock_hz=2e9", stem=os.path.join(out, "p1"))
    check(r.returncode == 0 and d and d["facets"] == ["interrupts.handler_cycles=1000",
                                                      "interrupts.handler_cycles=4000"],
          f"one hidden key: a panel per value: {d and d['facets']} {r.stderr}")
    if d:
        rows = rows_of(grid)
        for panel, hc in zip(d["panels"], ("1000", "4000")):
            want = sorted(float(x["kpps"]) for x in rows
                          if x["machine.clock_hz"] == "2000000000" and x["interrupts.handler_cycles"] == hc)
            got = sorted(panel["lines"][0]["y"])
            check(len(want) == 2 and all(abs(a - b) < 1e-6 * b for a, b in zip(got, want)),
                  f"panel {hc}: drawn {got}, rows {want}")
    check(r.stderr == "", f"no warnings: {r.stderr!r}")
    # Ranges and inequality pick rows too, numbers compared as numbers: the
    # hidden keys down to one value each, payloads from 512 on.
    r, d = plot(grid, "--kind", "payload", "--where", "machine.clock_hz>1.5e9",
                "--where", "interrupts.handler_cycles!=1000", "--where", "workload.payload>=512",
                stem=os.path.join(out, "p-range"))
    check(r.returncode == 0 and d and not d["facets"] and len(d["panels"]) == 1,
          f"ranges pick one panel: {r.returncode} {d and d['facets']} {r.stderr}")
    if d and d["panels"] and d["panels"][0]["lines"]:
        line = d["panels"][0]["lines"][0]
        want = [float(x["kpps"]) for x in rows_of(grid) if x["machine.clock_hz"] == "2000000000"
                and x["interrupts.handler_cycles"] == "4000" and x["workload.payload"] == "512"]
        check([float(v) for v in line["x"]] == [512.0] and len(want) == 1 and abs(line["y"][0] - want[0]) < 1e-6 * want[0],
              f"ranges: drawn {line}, rows {want}")
    for bad, why in (("workload.payload=>5", "is not a comparison"),
                     ("workload.payload<big", "is not a number"), ("<512", "no column")):
        r, _ = plot(grid, "--kind", "payload", "--where", bad, stem=os.path.join(out, "p-bad"))
        check(r.returncode == 2 and f"--where {bad}:" in r.stderr and why in r.stderr,
              f"--where {bad}: exit {r.returncode}: {r.stderr!r}")

    # A wire sweep across the ENOBUFS cliff: the line rate, and ENOBUFS marked where the runs slept.
    wire = sweep(out, "wire", """sweep:
  grid:
    workload.payload: [18, 200, 600, 1400]
""", packets=20000)
    r, d = plot(wire, "--kind", "payload", stem=os.path.join(out, "w"))
    check(r.returncode == 0 and r.stderr == "", f"wire payload plot: {r.returncode} {r.stderr}")
    if d:
        p = d["panels"][0]
        refs = [x for x in p["references"] if x["kind"] == "line_rate"]
        check(len(refs) == 1 and refs[0]["bandwidth_bps"] == 1e9, "a 1 Gbit/s line-rate reference")
        if refs:
            i = refs[0]["x"].index(1400)
            check(abs(refs[0]["y"][i] - 1e9 / 8 / (1400 + 42 + 24) / 1e3) < 1e-9, "line rate at 1400 B")
        slept = sorted(float(x["workload.payload"]) for x in rows_of(wire) if float(x["enobufs"]) > 0)
        marked = sorted(x for m in p["markers"] if m["kind"] == "enobufs" for x in m["x"])
        check(marked == slept and slept, f"ENOBUFS marked at {marked}, the runs slept at {slept}")

    # The same stage has the same colour in every plot, and the legend lists
    # the stack from its top.
    r1, d1 = plot(grid, "--kind", "breakdown", stem=os.path.join(out, "b1"))
    r2, d2 = plot(wire, "--kind", "breakdown", stem=os.path.join(out, "b2"))
    if d1 and d2:
        c1 = {b["stage"]: b["colour"] for b in d1["panels"][0]["bars"]}
        c2 = {b["stage"]: b["colour"] for b in d2["panels"][0]["bars"]}
        common = set(c1) & set(c2)
        check(len(common) > 5 and all(c1[s] == c2[s] for s in common), "one colour per stage across plots")
        check(len(set(c1.values())) == len(c1), "distinct colours within a plot")
        stack = [b["stage"] for b in d1["panels"][0]["bars"]]
        check(d1["panels"][0]["legend"] == stack[::-1], f"legend in stack order: {d1['panels'][0]['legend']}")
    else:
        check(False, f"breakdown plots: {r1.stderr} {r2.stderr}")

    # The checked-in sweep's crossover at 1024 B comes with different ENOBUFS
    # sleeps: not claimed.
    r, d = plot(sweep_csv := os.path.join(data, "sweep.csv"), "--kind", "crossover", stem=os.path.join(out, "x"))
    if d:
        p = d["panels"][0]
        check(not any("faster" in a for a in p["annotations"]), f"no crossover claimed: {p['annotations']}")
        check(any("enobufs" in x["why"] for x in p["crossovers_not_annotated"]),
              f"skipped for ENOBUFS: {p['crossovers_not_annotated']}")
    else:
        check(False, f"crossover: {r.stderr}")

    # Faulted runs: marked points, not empty axes, and nothing on stderr.
    fault = sweep(out, "fault", """sweep:
  grid:
    options.align: [strict, none]
    workload.payload: [18, 64]
""", dest="broadcast", irq="false")
    r, d = plot(fault, "--kind", "payload", stem=os.path.join(out, "f"))
    check(r.returncode == 0 and r.stderr == "", f"payload plot with faults: {r.returncode} {r.stderr!r}")
    if d:
        marks = [m for m in d["panels"][0]["markers"] if m["kind"] == "fault"]
        check(marks and len(marks[0]["x"]) == 2 and "alignment-fault" in marks[0]["reasons"],
              f"the two faulted runs marked: {marks}")
    exp = os.path.join(out, "one.yaml")
    with open(exp, "w") as f:
        f.write("name: one\n" + BASE.format(packets=2000, dest="broadcast", align="strict", irq="false"))
    r = run("-q", "run", exp, "-o", out)
    check(r.returncode == 3, f"a strict-alignment run faults: {r.returncode}")
    r, d = plot(os.path.join(out, "one.csv"), stem=os.path.join(out, "one"))
    # It faulted on its first datagram: no cycles per packet to stack, but
    # the run is there, marked with how it ended.
    check(r.returncode == 0 and r.stderr == "" and d and d["kind"] == "breakdown"
          and d["panels"][0]["markers"][0]["reasons"] == ["alignment-fault"]
          and any(a.startswith("alignment-fault") for a in d["panels"][0]["annotations"]),
          f"a faulted run's breakdown: a marked run: {r.returncode} {r.stderr!r} {d}")


def lab(colour):
    """CIE L*a*b* of a "#rrggbb" colour (D65), for how far apart two colours look."""
    rgb = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92 for c in rgb]
    xyz = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
           (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)
    fx, fy, fz = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in xyz]
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def apart(c1, c2):
    return sum((a - b) ** 2 for a, b in zip(lab(c1), lab(c2))) ** 0.5


def intersecting(labels):
    """The pairs of drawn texts whose boxes overlap."""
    out = []
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            (a0, a1, a2, a3), (b0, b1, b2, b3) = a["box"], b["box"]
            if a0 < b2 and b0 < a2 and a1 < b3 and b1 < a3:
                out.append((a["text"], b["text"]))
    return out


# Plots that hid their data (issue 27), each held here.
with tempfile.TemporaryDirectory() as out:
    wire = sweep(out, "wire", """sweep:
  grid:
    workload.payload: [18, 200, 600, 1400]
""", packets=20000)
    logs = sweep(out, "logs", """sweep:
  grid:
    workload.payload: [16, 64, 256, 1024]
    interrupts.handler_cycles: [1000, 4000]
""")
    exp = os.path.join(out, "tr.yaml")
    with open(exp, "w") as f:
        f.write("name: tr\n" + BASE.format(packets=3000, dest="wire", align="none", irq="true"))
    trace = os.path.join(out, "tr-trace.json")
    r = run("-q", "run", exp, "-o", out, "--trace", trace)
    check(r.returncode == 0, f"run --trace: {r.returncode} {r.stderr}")

    # 1. The payload plot's y axis is the data's; the line rate is drawn,
    # labelled, only where it falls inside that axis.
    r, d = plot(wire, "--kind", "payload", stem=os.path.join(out, "w"))
    if d:
        p = d["panels"][0]
        tops = [y + sd for line in p["lines"] for y, sd in zip(line["y"], line["sd"])]
        check(max(tops) <= p["ylim"][1] <= 1.3 * max(tops),
              f"payload_y_axis_fits_data: y axis to {p['ylim'][1]:.0f}, data to {max(tops):.0f} kpps")
        ref = [x for x in p["references"] if x["kind"] == "line_rate"][0]
        inside = [x for x, y in zip(ref["x"], ref["y"]) if y <= p["ylim"][1]]
        check(ref.get("shown_x") == inside and (not inside or ("line rate (1 Gbit/s)" in p["legend"] and any(
            "line rate" in a for a in p["annotations"]))) and (inside or any("above this axis" in a for a in
                                                                            p["annotations"])),
              f"payload_line_rate_only_in_range: shown at {ref.get('shown_x', ref['x'])[:3]}..., "
              f"inside {inside[:3]}...")
    else:
        check(False, f"payload plot of the wire sweep: {r.stderr}")

    # 2. --series: a second swept key as lines in one panel; log-spaced
    # payloads on a log axis, others not.
    r, d = plot(logs, "--kind", "payload", "--series", "interrupts.handler_cycles", stem=os.path.join(out, "s"))
    check(r.returncode == 0 and d and d["facets"] == [] and len(d["panels"]) == 1
          and [ln["label"].split()[-1] for ln in d["panels"][0]["lines"]]
          == ["handler_cycles=1000", "handler_cycles=4000"],
          f"payload_series_one_panel: {r.returncode} {r.stderr} {d and [x['label'] for x in d['panels'][0]['lines']]}")
    if d:
        check(d["panels"][0]["xscale"] == "log", f"payload_log_x_when_log_spaced: {d['panels'][0]['xscale']}")
        check("handler_cycles" in d["panels"][0]["title"], f"series named in the title: {d['panels'][0]['title']}")
    r, d = plot(wire, "--kind", "payload", stem=os.path.join(out, "s1"))
    check(d and d["panels"][0]["xscale"] == "linear", f"payload_linear_x_when_not_log_spaced: {r.stderr}")
    r, d = plot(logs, "--kind", "padding", "--x", "workload.payload", "--series", "interrupts.handler_cycles",
                stem=os.path.join(out, "s2"))
    check(r.returncode == 0 and d and d["panels"][0]["xscale"] == "log" and len(d["panels"][0]["lines"]) == 2,
          f"padding_series_log_x: {r.returncode} {r.stderr}")
    # A breakdown's series: its bars grouped by the value, each group named.
    r, d = plot(logs, "--kind", "breakdown", "--series", "interrupts.handler_cycles", stem=os.path.join(out, "s3"))
    check(r.returncode == 0 and d and [g["series"] for g in d["panels"][0]["groups"]]
          == ["handler_cycles=1000", "handler_cycles=4000"] and all(len(g["x"]) == 4 for g in d["panels"][0]["groups"]),
          f"breakdown_series_groups_bars: {r.returncode} {r.stderr} {d and d['panels'][0].get('groups')}")
    r, _ = plot(trace, "--series", "stack", stem=os.path.join(out, "s4"))
    check(r.returncode == 2 and "--series" in r.stderr and "one run" in r.stderr,
          f"series_refused_on_one_run: {r.returncode} {r.stderr}")
    check("--series" in run("plot", "--help").stdout, "series_in_help")

    # 3. Titles say what is drawn: an alignment crossover only where align is compared.
    r, d = plot(wire, "--kind", "crossover", stem=os.path.join(out, "t1"))
    check(d and "lignment" not in d["panels"][0]["title"] and "nothing to cross" in d["panels"][0]["title"],
          f"title_no_crossover_without_align: {d and d['panels'][0]['title']} {r.stderr}")
    r, d = plot(wire, stem=os.path.join(out, "t2"))
    check(d and d["kind"] == "payload" and d["panels"][0]["title"].startswith("Packet rate against payload"),
          f"title_payload_sweep: {d and (d['kind'], d['panels'][0]['title'])}")
    r, d = plot(os.path.join(data, "sweep.csv"), stem=os.path.join(out, "t3"))
    check(d and d["kind"] == "crossover" and "Alignment crossover" in d["panels"][0]["title"],
          f"title_alignment_crossover: {d and d['panels'][0]['title']}")
    r, d = plot(logs, "--kind", "crossover", "--series", "interrupts.handler_cycles", stem=os.path.join(out, "t4"))
    check(d and d["panels"][0]["title"].startswith("Crossover by handler_cycles"),
          f"title_crossover_by_series: {d and d['panels'][0]['title']} {r.stderr}")
    r, d = plot(logs, "--kind", "breakdown", stem=os.path.join(out, "t5"))
    check(d and all("mean over repeats" not in x["title"] for x in d["panels"]),
          f"title_no_mean_of_one_run: {d and [x['title'] for x in d['panels']]}")

    # 5. Distinct colours per stage: any two stages of a breakdown or of a
    # timeline look different (CIE76 distance 20 or more), none like the
    # timeline's interrupt handlers or calls, and a stage has one colour in both.
    r, d = plot(logs, "--kind", "breakdown", stem=os.path.join(out, "c"))
    r2, d2 = plot(trace, "--where", "packets=all", stem=os.path.join(out, "c2"))
    if d and d2:
        bd = {b["stage"]: b["colour"] for b in d["panels"][0]["bars"]}
        tl = d2["panels"][0].get("stages", {})
        for what, colours in (("breakdown", bd), ("timeline", tl)):
            names = sorted(colours)
            close = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
                     if apart(colours[a], colours[b]) < 20]
            check(len(names) > 5 and not close, f"stage_colours_distinct ({what}): too alike {close}")
        close = [s for s in tl if min(apart(tl[s], "#d62728"), apart(tl[s], "#bbbbbb")) < 20]
        check(not close, f"stage_colours_not_the_handlers_or_calls: {close}")
        check(tl and all(bd[s] == tl[s] for s in set(bd) & set(tl)), "stage_colours_same_in_breakdown_and_timeline")
    else:
        check(False, f"breakdown and timeline: {r.stderr} {r2.stderr}")

    # 4. The timeline of a 1000-packet trace: by default a window in which
    # the typical stage slice is a few pixels wide, named in the title with
    # how to draw another.
    events = json.load(open(trace))["traceEvents"]
    durs = sorted(e["dur"] for e in events if e.get("ph") == "X" and e["dur"] > 0)
    r, d = plot(trace, stem=os.path.join(out, "tl"))
    if d:
        p = d["panels"][0]
        w = p.get("window", {"of": None, "packets": [0, None]})
        px = durs[len(durs) // 2] * p["width_px"] / (p["xlim"][1] - p["xlim"][0])
        check(w["of"] == 1000 and 1 <= w["packets"][1] < 200 and px >= 3,
              f"timeline_default_window_reads: packets {w['packets']} of {w['of']}, median slice {px:.1f} px")
        check(f"packets 0 to {(w['packets'][1] or 0) - 1} of the 1000" in p["title"]
              and "--where packets=" in p["title"],
              f"timeline_title_names_window: {p['title']}")
        # 6. Counters of different units on different axes: frames, packets, bytes apart.
        units = [{ln.get("unit") for ln in q["lines"]} for q in d["panels"][1:]]
        check(len(units) == 3 and all(len(u) == 1 for u in units)
              and sorted(str(u) for us in units for u in us) == ["bytes", "frames", "packets"],
              f"timeline_one_unit_per_axis: {units}")
    else:
        check(False, f"timeline: {r.stderr}")
    r, d = plot(trace, "--where", "packets=all", stem=os.path.join(out, "tl2"))
    check(d and d["panels"][0].get("window", {}).get("packets") == [0, 1000], f"timeline_all_packets: {r.stderr}")
    r, d = plot(trace, "--where", "packets=100:110", stem=os.path.join(out, "tl3"))
    check(d and d["panels"][0].get("window", {}).get("packets") == [100, 110]
          and "packets 100 to 109" in d["panels"][0]["title"], f"timeline_asked_window: {r.stderr}")
    r, _ = plot(trace, "--where", "packets=5:2000", stem=os.path.join(out, "tl4"))
    check(r.returncode == 2 and "packets=5:2000" in r.stderr, f"timeline_bad_window_refused: {r.stderr}")

    # 7. A breakdown of 40 points: no two labels drawn over one another.
    forty = sweep(out, "forty", """sweep:
  grid:
    workload.payload: {start: 18, stop: 1400, num: 40}
    options.align: [none]
""", packets=2000)
    r, d = plot(forty, "--kind", "breakdown", stem=os.path.join(out, "b40"))
    if d:
        p = d["panels"][0]
        hit = intersecting(p["labels"])
        shown = [x for x in p["labels"] if "payload=" in x["text"]]
        check(not hit and len(shown) >= 10, f"breakdown_40_labels_do_not_overlap: {len(shown)} bars labelled, "
                                            f"overlapping {hit[:4]}")
    else:
        check(False, f"breakdown of 40 points: {r.stderr}")

    # 8. The waterfall's axis starts at 0, or is marked broken where it does not.
    ex = os.path.join(out, "ex.json")
    r = run("-q", "explain", exp, "--a-set", "interrupts.handler_cycles=2000", "--b-set",
            "interrupts.handler_cycles=2200", "-o", ex)
    check(r.returncode == 0, f"explain: {r.returncode} {r.stderr}")
    r, d = plot(ex, stem=os.path.join(out, "wf"))
    if d:
        p = d["panels"][0]
        check(p["ylim"][0] == 0 or (p.get("axis_break") == p["ylim"][0] and "not 0" in p["ylabel"]
                                    and "not 0" in p["title"]),
              f"waterfall_axis_from_zero_or_broken: ylim {p['ylim']}, break {p.get('axis_break')}")
    else:
        check(False, f"waterfall: {r.stderr}")

    # 9. No box drawn from one run: one repeat per point is drawn as points, and said.
    r, d = plot(logs, "--kind", "distribution", "--where", "interrupts.handler_cycles=1000",
                stem=os.path.join(out, "d1"))
    check(d and not d["panels"][0].get("boxes") and "one run each" in d["panels"][0]["title"]
          and [len(m["x"]) for m in d["panels"][0]["markers"] if m["kind"] == "runs"] == [4],
          f"distribution_of_one_run_draws_points: {d and (d['panels'][0].get('boxes'), d['panels'][0]['title'])} "
          f"{r.stderr}")
    r, d = plot(os.path.join(data, "sweep.csv"), "--kind", "distribution", stem=os.path.join(out, "d2"))
    check(d and len(d["panels"][0].get("boxes", [])) == 8 and all(b["runs"] == 2 for b in d["panels"][0]["boxes"]),
          f"distribution_boxes_over_repeats: {d and d['panels'][0].get('boxes')}")

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
