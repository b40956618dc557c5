#!/usr/bin/python3
"""simloop plot draws every kind from small result files (a real sweep and a
real native measurement in tests/data/plots), and each image is non-trivial:
PNG and SVG written, the PNG of some size and of many colours."""
import os
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
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
