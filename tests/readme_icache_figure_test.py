#!/usr/bin/python3
"""The README's Limits state the I-cache model's error as its validation
measures it: the figures of experiments/validation/icache.md (which ctest
validation.run_against_cachegrind_table and
validation.icache_against_cachegrind recompute from the data), quoted as
they are there. A validation that moves leaves the README wrong until its
figures move too.

    readme_icache_figure_test.py SOURCE_DIR
"""
import pathlib
import re
import sys

from checks import check, finish  # tests/checks.py

SRC = pathlib.Path(sys.argv[1])
readme = (SRC / "README.md").read_text()
icache = (SRC / "experiments" / "validation" / "icache.md").read_text()
limits = readme[readme.find("## Limits"):]
# The README wraps its lines: compare with whitespace made single spaces.
flat = re.sub(r"\s+", " ", limits)

run = re.search(r"(\d+) cells \(\d+ packets a run\): relative error \(cachegrind at least 1 miss per "
                r"packet, (\d+) cells\) median ([\d.]+) %, worst ([-+]?[\d.]+) %", icache)
check(run is not None, "icache.md's run table has its summary line")
if run:
    cells, relative, median, worst = run.groups()
    for what, text in (("cells", f"{cells} cells"), ("relative cells", f"{relative} cells"),
                       ("median", f"{median} % in the median"), ("worst", f"worst {worst} %")):
        check(text in flat, f"README's Limits quote icache.md's {what}: {text!r} not found")
met = re.search(r"### The model \(fetch call-sites\).*?met on (\d+) of (\d+) path and geometry pairs", icache, re.S)
check(met is not None, "icache.md's call-sites table has its targets line")
if met:
    text = f"met on {met.group(1)} of {met.group(2)} path and geometry pairs"
    check(text in flat, f"README's Limits quote the ranking targets: {text!r} not found")
check("14-19 %" not in flat, "README's Limits no longer give the entry model's old 14-19 %")
finish()
