#!/usr/bin/python3
"""What two plots count and how they scale, from their --describe JSON.

    plot_scale_test.py SIMLOOP SOURCE_DIR WORK_DIR timeline|distribution

timeline: a trace's packets are the datagrams sent. A send that failed with
ENOBUFS and was retried is one packet, not two, and a looped-back datagram
(whose counters are written after the send and again after the receiver)
is one packet: the title says "of the N sent" with N the run's datagrams.

distribution: repeats that barely differ look like it. The y axis spans at
least 2 % of the mean either side of the data (identical repeats, repeats
0.7 % apart), while a spread wider than that keeps the axis the data give.
"""
import csv
import json
import pathlib
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, SRC, WORK, PART = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]), sys.argv[4]
WORK.mkdir(parents=True, exist_ok=True)


def plot(args, stem):
    stem = WORK / stem
    p = subprocess.run([SIMLOOP, "plot", *args, "-o", str(stem), "--describe", f"{stem}.json"],
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"plot {stem.name}: exit {p.returncode}: {p.stderr}")
    return json.loads(pathlib.Path(f"{stem}.json").read_text())["panels"][0] if p.returncode == 0 else None


if PART == "timeline":
    cases = {
        # ttcp meets ENOBUFS on a slow link and sends again: attempts > datagrams.
        "enobufs": ["workload.payload=1400", "workload.link.bandwidth_bps=1e8"],
        "loopback": ["workload.dest=loopback"],
        "wire": [],
    }
    for name, sets in cases.items():
        trace = WORK / f"{name}.json"
        args = [SIMLOOP, "-q", "run", "experiments/seed-athlon.yaml", "-o", str(WORK / name), "--trace",
                str(trace), "--trace-window", "0:300", "--set", "workload.packets=300"]
        for s in sets:
            args += ["--set", s]
        p = subprocess.run(args, cwd=SRC, capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, f"{name}: run exit {p.returncode}: {p.stderr}")
        if p.returncode != 0:
            continue
        events = json.loads(trace.read_text())["traceEvents"]
        attempts = sum(1 for e in events if e["ph"] == "B" and e["name"] == "sendto()"
                       and not e.get("args", {}).get("resumed"))
        if name == "enobufs":
            check(attempts > 300, f"enobufs: the trace holds failed attempts ({attempts} for 300 datagrams)")
        panel = plot([str(trace), "--where", "packets=all"], f"{name}-all")
        if panel:
            check(panel["window"]["of"] == 300 and "all 300 packets sent in the trace" in panel["title"],
                  f"{name}: 300 datagrams sent: {panel['window']} {panel['title']!r}")
        panel = plot([str(trace), "--where", "packets=0:5"], f"{name}-5")
        if panel:
            check("packets 0 to 4 of the 300 sent in the trace" in panel["title"],
                  f"{name}: title of packets 0:5: {panel['title']!r}")
elif PART == "distribution":
    template = next(csv.DictReader(open(SRC / "tests/data/plots/sweep.csv")))

    def rows_file(name, kpps):
        path = WORK / f"{name}.csv"
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(template))
            w.writeheader()
            for i, k in enumerate(kpps):
                w.writerow({**template, "point": "0", "repeat": str(i), "kpps": str(k)})
        return path

    for name, kpps, forced in (("identical", [350.0] * 5, True),
                               ("close", [350.0, 351.2, 352.45, 350.6, 351.9], True),
                               ("wide", [300.0, 330.0, 350.0, 380.0, 400.0], False)):
        panel = plot([str(rows_file(name, kpps)), "--kind", "distribution"], name)
        if not panel:
            continue
        lo, hi = panel["ylim"]
        mean = sum(kpps) / len(kpps)
        check(lo <= min(kpps) and hi >= max(kpps), f"{name}: the data inside the axis {lo}..{hi}")
        if forced:
            check(hi - lo >= 0.04 * mean * 0.999,
                  f"{name}: y axis {lo:.2f}..{hi:.2f} spans {100 * (hi - lo) / mean:.2f} % of the mean, "
                  "expected at least 4 %")
        else:
            check(hi - lo < 1.5 * (max(kpps) - min(kpps)),
                  f"{name}: a wide spread keeps the data's axis ({lo:.1f}..{hi:.1f})")
else:
    check(False, f"unknown part {PART}")

finish()
