#!/usr/bin/python3
"""plot -o STEM writes STEM.png and STEM.svg; a stem given with either
extension (-o plot.png) is the stem without it, not plot.png.png.

    plot_output_name_test.py SIMLOOP WORK_DIR
"""
import pathlib
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
r = subprocess.run([SIMLOOP, "-q", "run", "experiments/seed-athlon.yaml", "--set", "workload.packets=2000",
                    "-o", str(WORK)], capture_output=True, text=True, cwd=pathlib.Path(__file__).parent.parent)
check(r.returncode == 0, f"a run to plot: {r.stderr[-300:]}")
for given, stem in (("a", "a"), ("b.png", "b"), ("c.svg", "c"), ("d.pdf", "d.pdf")):
    r = subprocess.run([SIMLOOP, "plot", str(WORK / "seed-athlon.csv"), "-o", str(WORK / given)],
                       capture_output=True, text=True)
    made = sorted(p.name for p in WORK.glob(f"{given.split('.')[0]}*"))
    check(r.returncode == 0 and made == [f"{stem}.png", f"{stem}.svg"],
          f"-o {given}: wrote {made}, expected {stem}.png and {stem}.svg: {r.stderr[-300:]}")
finish()
