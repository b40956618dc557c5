#!/usr/bin/env python3
"""Host profiles of one machine against each other: does a calibration
predict the next one's measurements?

    stability.py [--check REPORT.md] SIMLOOP DIR_A DIR_B [DIR_C ...]

Each DIR is what `simloop calibrate host -o DIR` wrote. For every ordered
pair (A, B) it prints the error of A's fits on B's measured points:
- Linux: A's fit (host-linux-fit.json, its predicted ns) against B's
  measured CPU ns per packet (host-linux-fit.json's measured_cpu_ns), point
  by point (both made on the same paths and payloads), and B's measured
  points against A's, which no model is in;
- BSD: `simloop compare A/host-bsd-fit.json B/native-split*.csv`, every
  point, read in the clock A's fit was made in.
The load averages each DIR's microbench.json recorded are printed beside.
Prints a Markdown table (the loads to standard error); with --check, fails
unless REPORT.md holds that table between its markers. Exits 2 on a
directory that is not a host profile.
"""
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile



def native_csvs(d):
    """A run's native measurements: native-split.csv, and the copy-down
    paths at a misaligning header offset where the run has them."""
    return [os.path.join(d, n) for n in ("native-split.csv", "native-split-misaligned.csv")
            if os.path.exists(os.path.join(d, n))]

def load(d):
    info = {"dir": d}
    try:
        b = json.load(open(os.path.join(d, "microbench.json")))
        info["load"] = (b.get("loadavg_before"), b.get("loadavg_after"))
    except (OSError, ValueError) as e:
        print(f"stability.py: {d}: not a host profile ({e})", file=sys.stderr)
        sys.exit(2)
    p = os.path.join(d, "host-linux-fit.json")
    info["linux"] = json.load(open(p)) if os.path.exists(p) else None
    return info


def linux_error(a, b):
    if not a["linux"] or not b["linux"]:
        return None
    pred = {(q["path"], q["payload"]): q["predicted_ns"] for q in a["linux"]["points"]}
    errs = [100 * (pred[(q["path"], q["payload"])] - q["measured_cpu_ns"]) / q["measured_cpu_ns"]
            for q in b["linux"]["points"] if (q["path"], q["payload"]) in pred]
    return errs


def linux_measured_difference(a, b):
    """B's measured CPU ns against A's, point by point: the kernel's own
    drift between the runs, with no model in it."""
    if not a["linux"] or not b["linux"]:
        return None
    meas = {(q["path"], q["payload"]): q["measured_cpu_ns"] for q in a["linux"]["points"]}
    return [100 * (q["measured_cpu_ns"] - meas[(q["path"], q["payload"])]) / meas[(q["path"], q["payload"])]
            for q in b["linux"]["points"] if (q["path"], q["payload"]) in meas]


def bsd_error(simloop, a, b):
    fit = json.load(open(os.path.join(a["dir"], "host-bsd-fit.json")))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cmp.csv")
        r = subprocess.run([simloop, "-q", "compare", os.path.join(a["dir"], "host-bsd-fit.json"),
                            *native_csvs(b["dir"]), "--time",
                            fit.get("time", "wall"), "-o", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"stability.py: compare failed: {r.stderr[-400:]}")
        return [float(row["error_pct"]) for row in csv.DictReader(open(out))]


def summary(errs):
    if not errs:
        return "—"
    a = sorted(abs(e) for e in errs)
    return f"{statistics.median(a):.2f} % / {a[-1]:.2f} % ({len(a)})"


END = "<!-- end of tables -->"


def begin(dirs):
    """The table's opening marker: one table per host, named by the
    fingerprint its runs are kept under (DIR's parent)."""
    fp = os.path.basename(os.path.dirname(os.path.abspath(dirs[0]["dir"])))
    return f"<!-- tables: stability.py {fp} -->"


def table(simloop, dirs):
    lines = [begin(dirs),
             "<!-- checked by validation.host_stability: stability.py --check recomputes it from "
             "the kept data -->",
             "| fit of | predicts | Linux: median / worst abs error (points) | "
             "Linux measured, B against A: median / worst | BSD: median / worst abs error (points) |",
             "|---|---|---:|---:|---:|"]
    for a in dirs:
        for b in dirs:
            if a is b:
                continue
            diff = summary(linux_measured_difference(a, b)).rsplit(" (", 1)[0]
            lines.append(f"| {name(a)} | {name(b)} | {summary(linux_error(a, b))} | {diff} | "
                         f"{summary(bsd_error(simloop, a, b))} |")
    lines.append(END)
    return "\n".join(lines) + "\n"


def name(d):
    """The run's name: its directory's, less the date."""
    n = os.path.basename(d["dir"].rstrip("/"))
    return n[11:] if len(n) > 11 and n[4] == "-" and n[10] == "-" else n


def main(argv):
    check = None
    if len(argv) > 2 and argv[1] == "--check":
        check, argv = argv[2], [argv[0]] + argv[3:]
    if len(argv) < 4:
        sys.exit(__doc__)
    simloop, dirs = argv[1], [load(d) for d in argv[2:]]
    text = table(simloop, dirs)
    for d in dirs:
        print(f"{name(d)}: load average before {d['load'][0]}, after {d['load'][1]}", file=sys.stderr)
    if check is None:
        print(text, end="")
        return
    doc = open(check).read()
    b = begin(dirs)
    if b not in doc or END not in doc[doc.index(b):]:
        sys.exit(f"stability.py: {check}: no table between {b} and {END}")
    at = doc.index(b)
    kept = doc[at:doc.index(END, at) + len(END)] + "\n"
    if kept != text:
        print(text, end="")
        sys.exit(f"stability.py: {check}'s table differs from what the kept data give "
                 "(printed above)")
    print(f"{check}: the table is what the kept data give")


if __name__ == "__main__":
    main(sys.argv)
