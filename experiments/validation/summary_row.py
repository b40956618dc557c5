#!/usr/bin/python3
"""One row of a validation report's table: a held-out group's summary from
`simloop compare --summary`, the model beside the constant predictor.
Usage: summary_row.py SUMMARY.csv GROUP LABEL"""
import csv
import sys

csv_path, group, label = sys.argv[1:4]
for r in csv.DictReader(open(csv_path, newline="")):
    if r["group"] == group:
        relying = r["relying"]
        beats = r["beats_constant"] + (
            ", %s rely on undetermined costs" % relying if relying != "0" else "")
        print("| %s | %s | %.2f %% | %+.2f %% | %.2f %% | %.2f %% | %s |" % (
            label, r["points"], float(r["median_abs_pct"]), float(r["worst_pct"]),
            float(r["constant_median_abs_pct"]), float(r["constant_worst_abs_pct"]), beats))
