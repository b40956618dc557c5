#!/usr/bin/python3
"""What simloop compare predicts and what its accuracy plot says predicted it.

    compare_predictor_test.py SIMLOOP SOURCE_DIR WORK_DIR connected|label

connected: measured points of a kernel loop on the connected path (send()
on a connect()ed socket) are simulated with workload.connected on a stack
that has that path (Linux: faster than the unconnected points, no "not
simulated" caveat), and on one that has not (BSD) left out of the table's
errors and of the CSV the plot draws, the table saying so; a file of such
points alone is refused.

label: the accuracy plot's y axis names the predictor: an experiment's
simulation (its name and stack profile, never "calibrated") for compare
EXPERIMENT, the calibrated profile for compare NAME-fit.json, and, for a
CSV written before compare named it, "calibrated profile" only where
points trained a fit.
"""
import csv
import json
import pathlib
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, SRC, WORK, PART = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]), sys.argv[4]
WORK.mkdir(parents=True, exist_ok=True)

LINUX = SRC / "experiments" / "validation" / "linux" / "linux-epyc.yaml"
(WORK / "bsd.yaml").write_text("""name: compare-bsd
machine: athlon-xp-2700
stack: freebsd6
workload:
  payload: 18
  packets: 3000
  dest: loopback
seed: 1
""")
# A kernel loop's points, both paths, two repeats each (ns as measured).
lines = ["source,repeat,payload,dest,path,packets,ns_per_packet"]
for path, ns in (("unconnected", 5800), ("connected", 5500)):
    for payload in (18, 256, 1024):
        for r in range(2):
            lines.append(f"kernel,{r},{payload},loopback,{path},100000,{ns + payload / 10 + r}")
(WORK / "kernel.csv").write_text("\n".join(lines) + "\n")
(WORK / "connected.csv").write_text("\n".join(l for l in lines if "unconnected" not in l) + "\n")


def compare(exp, data, out):
    p = subprocess.run([SIMLOOP, "-q", "compare", str(exp), str(data), "-o", str(out)], cwd=WORK,
                       capture_output=True, text=True, timeout=600)
    rows = list(csv.DictReader(open(out))) if p.returncode == 0 and out.exists() else []
    return p, rows


def ylabel(csv_path):
    stem = WORK / (csv_path.stem + "-plot")
    p = subprocess.run([SIMLOOP, "plot", str(csv_path), "--kind", "accuracy", "-o", str(stem),
                        "--describe", str(stem) + ".json"], capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"plot {csv_path.name}: exit {p.returncode}: {p.stderr}")
    if p.returncode != 0:
        return "", []
    panel = json.loads(pathlib.Path(str(stem) + ".json").read_text())["panels"][0]
    return panel["ylabel"], panel["legend"]


if PART == "connected":
    # Linux: the connected points are simulated connected.
    p, rows = compare(LINUX, WORK / "kernel.csv", WORK / "linux.csv")
    check(p.returncode == 0, f"linux: exit {p.returncode}: {p.stderr}")
    check("not simulated" not in p.stdout, f"linux: a point not simulated:\n{p.stdout}")
    pred = {(r["payload"], r["path"]): float(r["predicted_kpps"]) for r in rows}
    check(len(pred) == 6, f"linux: 6 points in the CSV, not {len(pred)}")
    for payload in ("18", "256", "1024"):
        u, c = pred.get((payload, "unconnected")), pred.get((payload, "connected"))
        check(u and c and c > u * 1.02,
              f"linux: payload {payload}: connected predicted {c} kpps, unconnected {u}: "
              "the connected path (one route lookup) is faster")
    # BSD: no connected path; its points are left out of the errors and the CSV.
    p, rows = compare(WORK / "bsd.yaml", WORK / "kernel.csv", WORK / "bsd.csv")
    check(p.returncode == 0, f"bsd: exit {p.returncode}: {p.stderr}")
    check(sorted(r["path"] for r in rows) == ["unconnected"] * 3,
          f"bsd: the CSV holds the unconnected points only: {[r['path'] for r in rows]}")
    table = [l for l in p.stdout.splitlines() if "path=connected" in l]
    check(len(table) == 3 and all("left out" in l and "%" not in l for l in table),
          f"bsd: each connected point on a line saying it is left out, with no error:\n{p.stdout}")
    if rows:
        _, legend = ylabel(WORK / "bsd.csv")
        check(any("(3," in l for l in legend), f"bsd: the plot draws the 3 simulated points: {legend}")
    p, _ = compare(WORK / "bsd.yaml", WORK / "connected.csv", WORK / "none.csv")
    check(p.returncode == 2 and "connected path" in p.stderr and not (WORK / "none.csv").exists(),
          f"bsd, connected points only: exit {p.returncode} (expected 2): {p.stderr}")
elif PART == "label":
    p, rows = compare(LINUX, WORK / "kernel.csv", WORK / "linux.csv")
    check(p.returncode == 0, f"linux: exit {p.returncode}: {p.stderr}")
    label, legend = ylabel(WORK / "linux.csv")
    check("calibrated" not in label and "simulated" in label and "linux-epyc" in label,
          f"compare EXPERIMENT: y label names the simulation: {label!r}")
    check(not any("held-out" in l for l in legend), f"compare EXPERIMENT: nothing was held out: {legend}")
    # A fit: calibrated, by its name.
    fit_dir = WORK / "fit"
    p = subprocess.run([SIMLOOP, "-q", "calibrate", str(SRC / "experiments/validation/data/native-1.csv"),
                        "--train", "payload=18,1024", "--bootstrap", "0", "--name", "tiny", "-o", str(fit_dir)],
                       capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"calibrate: exit {p.returncode}: {p.stderr}")
    p = subprocess.run([SIMLOOP, "-q", "compare", str(fit_dir / "tiny-fit.json"), "-o", str(WORK / "fit.csv")],
                       capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"compare fit: exit {p.returncode}: {p.stderr}")
    if p.returncode == 0:
        label, _ = ylabel(WORK / "fit.csv")
        check("calibrated profile tiny" in label, f"compare NAME-fit.json: y label {label!r}")
    # An older CSV, without the predictor column.
    label, _ = ylabel(SRC / "tests" / "data" / "compare_native.csv")
    check("calibrated profile" in label, f"an older fit's CSV: y label {label!r}")
    old = WORK / "old-simulated.csv"
    with open(WORK / "linux.csv") as f, open(old, "w", newline="") as g:
        r = csv.DictReader(f)
        w = csv.DictWriter(g, [c for c in r.fieldnames if c != "predictor"], extrasaction="ignore")
        w.writeheader()
        w.writerows(r)
    label, _ = ylabel(old)
    check("calibrated" not in label and "simulated" in label, f"an older simulation's CSV: y label {label!r}")
else:
    check(False, f"unknown part {PART}")

finish()
