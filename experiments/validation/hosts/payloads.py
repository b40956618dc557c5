#!/usr/bin/env python3
"""The Linux fit of `calibrate host` across payloads, with one copy rate and
with the L1 data cache the copies see (machine.copy.l1d_*), on payloads it
was not trained on.

    payloads.py [--check REPORT.md [--l1d-no-worse]] SIMLOOP CSV [CSV ...]

Each CSV is a `measure kernel --split` run of many payloads on both paths,
with its FILE.machine.json beside it (its l1d said). For each, the fit is
made as `calibrate host` makes it (trained on the unconnected path at 18,
256, 1472, 12000 and 40000 B; every other point held out) twice: with
--l1d (the L1d the copies see, its misses priced apart) and without (one
rate per copied byte). The first CSV's fits also
predict the others' points (another run on the same host). Prints a
Markdown table of every point and a summary; with --check, fails unless
REPORT.md holds the same tables between its markers (named by the first
CSV: FINGERPRINT/payloads/FILE), and with --l1d-no-worse too, unless the
L1 model is no worse than one rate on the held-out points (what the page
claims for that host). Exits 2 on a CSV without its machine.json.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

TRAIN = ["--train", "path=unconnected", "--train", "payload=18,256,1472,12000,40000"]


def mark(csv):
    """The marker of csv's tables: FINGERPRINT/payloads/FILE."""
    parts = os.path.abspath(csv).split(os.sep)
    return f"<!-- tables: payloads.py {'/'.join(parts[-3:])} -->"


END = "<!-- end of tables -->"


def fit(simloop, csv, l1d, out):
    """calibrate's fit JSON for `csv`, with --l1d or without."""
    mj = csv + ".machine.json"
    if not os.path.exists(mj):
        print(f"payloads.py: {mj}: missing (measure kernel -o writes it)", file=sys.stderr)
        sys.exit(2)
    p = subprocess.run([simloop, "-q", "calibrate", csv, "--source", "linux", *TRAIN,
                        *(["--l1d"] if l1d else []), "--bootstrap", "0", "-o", out,
                        "--name", "fit"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"payloads.py: calibrate failed on {csv}: {p.stderr[-2000:]}")
    return json.load(open(os.path.join(out, "fit-fit.json")))


def points(f):
    return {(q["path"], q["payload"]): q for q in f["points"]}


def gap(q):
    return max(abs(v["predicted"] - v["measured"]) for v in q["share"].values()) * 100


def summary(rows, col):
    held = [abs(r[col]) for r in rows if r["set"] != "train"]
    train = [abs(r[col]) for r in rows if r["set"] == "train"]
    return statistics.median(held), max(held), max(train)


def tables(simloop, csvs):
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        fits = {}
        for i, csv in enumerate(csvs):
            for keep in (False, True):
                d = os.path.join(tmp, f"{i}-{keep}")
                os.makedirs(d)
                fits[(i, keep)] = fit(simloop, csv, keep, d)
    l1d = json.load(open(csvs[0] + ".machine.json")).get("l1d")
    first = {k: points(fits[(0, k)]) for k in (False, True)}
    out.append(f"Fitted on {os.path.basename(csvs[0])} ({fits[(0, True)]['cpu_model']}, "
               f"{fits[(0, True)]['kernel']}; L1d {l1d['bytes'] if l1d else '?'} B, "
               f"{l1d['ways'] if l1d else '?'}-way). Errors are the prediction against the "
               "loop's CPU time without perf; gaps the largest share difference, in points.\n")
    for i, csv in enumerate(csvs):
        own = points(fits[(i, True)])
        rows = []
        for key, q in own.items():
            r = {"path": key[0], "payload": key[1], "set": q["set"],
                 "cpu": q["measured_cpu_ns"]}
            for k, name in ((False, "one"), (True, "l1d")):
                p = first[k].get(key)
                r[name] = 100 * (p["predicted_ns"] - r["cpu"]) / r["cpu"] if p else float("nan")
                r[name + "_gap"] = gap(points(fits[(i, k)])[key]) if i == 0 else float("nan")
            rows.append(r)
        rows.sort(key=lambda r: (r["path"] != "unconnected", r["payload"]))
        label = "its own points" if i == 0 else f"{os.path.basename(csv)} (another run)"
        out.append(f"\n{os.path.basename(csvs[0])}'s fits on {label}:\n")
        out.append("| path | payload (B) | set | CPU ns | one rate: error | gap | L1d: error | gap |")
        out.append("|---|---:|---|---:|---:|---:|---:|---:|")
        for r in rows:
            g1 = f"{r['one_gap']:.2f}" if r["one_gap"] == r["one_gap"] else "-"
            g2 = f"{r['l1d_gap']:.2f}" if r["l1d_gap"] == r["l1d_gap"] else "-"
            out.append(f"| {r['path']} | {r['payload']} | {r['set']} | {r['cpu']:.1f} | "
                       f"{r['one']:+.2f} % | {g1} | {r['l1d']:+.2f} % | {g2} |")
        one, two = summary(rows, "one"), summary(rows, "l1d")
        out.append("")
        out.append("| model | held out: median | held out: worst | training: worst |")
        out.append("|---|---:|---:|---:|")
        out.append(f"| one rate | {one[0]:.2f} % | {one[1]:.2f} % | {one[2]:.2f} % |")
        out.append(f"| L1d | {two[0]:.2f} % | {two[1]:.2f} % | {two[2]:.2f} % |")
        if i == 0:
            verdict = (one, two)
    return "\n".join(out) + "\n", verdict


def main(argv):
    check, no_worse = None, False
    if len(argv) > 1 and argv[1] == "--check":
        check, argv = argv[2], [argv[0]] + argv[3:]
        if len(argv) > 1 and argv[1] == "--l1d-no-worse":
            no_worse, argv = True, [argv[0]] + argv[2:]
    if len(argv) < 3:
        sys.exit(__doc__)
    text, (one, two) = tables(argv[1], argv[2:])
    print(text, end="")
    if check is None:
        return 0
    report = open(check).read()
    m = mark(argv[2])
    if m not in report:
        sys.exit(f"payloads.py: {check}: no {m} marker")
    kept = report.split(m, 1)[1].split(END, 1)[0].strip()
    if kept != text.strip():
        sys.exit(f"payloads.py: {check}'s tables differ from what the kept data give "
                 "(printed above)")
    # What the page claims where it says so: the cache model no worse than
    # one rate where it was not trained, in median and worst.
    if no_worse and (two[0] > one[0] or two[1] > one[1]):
        sys.exit(f"payloads.py: the L1d model ({two[0]:.2f} % / {two[1]:.2f} %) is worse than "
                 f"one rate ({one[0]:.2f} % / {one[1]:.2f} %) on the held-out points")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
