"""link_order.py pick: the layouts with the most predicted misses, written as
layouts.txt lists them, whichever entry comes last; bad input refused with
exit 2 at its file, line and key."""
import os
import subprocess
import sys
import tempfile

from checks import check, finish

root = sys.argv[1]
py = os.path.join(root, "experiments", "validation", "link_order.py")
layouts = "base:0:;pad-stack-192:192:stack;c000-zone-64:64:zone;c001-inet-32:32:inet"
rows = {"base": 1.0, "pad-stack-192": 5.0, "c000-zone-64": 3.0, "c001-inet-32": 0.5}


def pick(*args):
    return subprocess.run([sys.executable, py, "pick", *args], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as d:
    csvs = []
    for path in ("loopback-18", "wire-18"):
        f = os.path.join(d, f"icache-{path}.csv")
        with open(f, "w") as h:
            h.write("layout,i1,predicted_i1_misses_per_packet\n")
            for name, v in rows.items():
                h.write(f"{name},16384;1;64,{v}\n")
        csvs.append(f)
    r = pick("--count", "2", "--layouts", layouts, *csvs)
    check(r.returncode == 0, f"pick exits 0 (got {r.returncode}: {r.stderr})")
    check(r.stdout == "pad-stack-192 192:stack\nc000-zone-64 64:zone\n",
          f"pick prints the two worst as NAME PAD:UNIT (got {r.stdout!r})")
    # The worst listed last among the layouts: nothing after it to match.
    r = pick("--count", "1", "--layouts",
             "base:0:;c000-zone-64:64:zone;c001-inet-32:32:inet;pad-stack-192:192:stack",
             *csvs)
    check(r.returncode == 0 and r.stdout == "pad-stack-192 192:stack\n",
          f"the last layout entry picked (got {r.returncode}, {r.stdout!r}, {r.stderr})")
    r = pick("--count", "9", "--layouts", layouts, *csvs)
    check(r.returncode == 2 and "--count 9: only 4 layouts" in r.stderr,
          f"too large a count refused (got {r.returncode}, {r.stderr})")
    r = pick("--count", "1", "--layouts", "base:0:;pad-stack-192:192:stack", *csvs)
    check(r.returncode == 2 and f"{csvs[0]}:4: layout 'c000-zone-64' is not one of --layouts"
          in r.stderr, f"a layout not in --layouts refused at its line (got {r.stderr})")
    r = pick("--count", "1", "--layouts", layouts + ";oops", *csvs)
    check(r.returncode == 2 and "entry 'oops': expected NAME:PAD_BYTES:BEFORE_UNIT" in r.stderr,
          f"a bad --layouts entry refused (got {r.stderr})")
    bad = os.path.join(d, "bad.csv")
    with open(bad, "w") as h:
        h.write("layout,misses\nbase,1\n")
    r = pick("--count", "1", "--layouts", layouts, bad)
    check(r.returncode == 2 and f"{bad}:1: no column 'predicted_i1_misses_per_packet'"
          in r.stderr, f"a CSV without the column refused (got {r.stderr})")
finish()
