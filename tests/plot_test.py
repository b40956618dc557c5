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

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
