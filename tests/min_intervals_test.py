#!/usr/bin/python3
"""With --stat min, calibrate's intervals and compare's prediction
intervals contain the fit and the prediction they are intervals of. A
resample's minimum is never below the data's, so uncentred draws all lean
one way: on the stored validation data most prediction intervals then
missed their own prediction. With the median nothing is moved.

usage: min_intervals_test.py SIMLOOP SOURCE_DIR WORK_DIR"""
import csv
import glob
import json
import os
import shutil
import subprocess
import sys

simloop, src, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
data = sorted(glob.glob(os.path.join(src, "experiments", "validation", "data", "native-*.csv")))
failures = []

for stat in ("min", "median"):
    out = subprocess.run([simloop, "-q", "calibrate", *data, "--source", "native", "--stat", stat,
                          "--train", "payload=18,128,160,512,1400", "--bootstrap", "100",
                          "-o", work, "--name", stat], check=True, capture_output=True, text=True).stdout
    centred = "centred on the fit" in out
    if centred != (stat == "min"):
        failures.append(f"{stat}: the header says centred: {centred}")
    fit = json.load(open(os.path.join(work, f"{stat}-fit.json")))
    if len(fit["bootstrap"]) != 100:
        failures.append(f"{stat}: {len(fit['bootstrap'])} draws kept, not 100")
    outside = [p["name"] for p in fit["params"]
               if not p["interval_90"][0] <= p["value"] <= p["interval_90"][1]]
    if stat == "min" and outside:
        failures.append(f"min: fits outside their own interval: {outside}")
    if any(p["interval_90"][0] < 0 for p in fit["params"]):
        failures.append(f"{stat}: a negative bound")
    table = os.path.join(work, f"{stat}-compare.csv")
    subprocess.run([simloop, "-q", "compare", os.path.join(work, f"{stat}-fit.json"), "-o", table],
                   check=True, capture_output=True)
    rows = list(csv.DictReader(open(table)))
    missed = [r for r in rows
              if not float(r["predicted_kpps_lo"]) <= float(r["predicted_kpps"]) <= float(r["predicted_kpps_hi"])]
    print(f"{stat}: {len(fit['params'])} costs, {len(outside)} outside their interval; "
          f"{len(rows)} predictions, {len(missed)} outside theirs")
    if stat == "min" and missed:
        failures.append(f"min: {len(missed)} of {len(rows)} predictions outside their interval")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("every interval of the minimum holds its fit")
