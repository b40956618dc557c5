#!/usr/bin/python3
"""The layout advisor's promise: the L1 I-cache misses per packet that
`simloop layout` predicts are those `simloop run` reports, on every
destination, with interrupts on and off.

    advisor_matches_run.py SIMLOOP

The run counts cold misses too, so the two agree to within a small
tolerance, not exactly (page colouring is off in the seed experiment)."""
import csv
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXPERIMENT = "experiments/seed/icache-baseline.yaml"
TOLERANCE = 0.002  # relative: cold misses over the run's 100000 packets


def main(simloop):
    bad = 0
    for dest in ("loopback", "broadcast", "wire", "self"):
        for irq in ("true", "false"):
            sets = ["--set", f"workload.dest={dest}", "--set", f"interrupts.enabled={irq}"]
            advice = subprocess.run([simloop, "-q", "layout", EXPERIMENT, "--no-search", *sets],
                                    cwd=ROOT, capture_output=True, text=True, check=True).stdout
            m = re.search(r"predicted per packet \(steady state\): ([0-9.]+) L1 misses", advice)
            if not m:
                print(f"{dest} irq={irq}: no prediction in\n{advice}")
                return 1
            predicted = float(m.group(1))
            with tempfile.TemporaryDirectory() as out:
                subprocess.run([simloop, "-q", "run", EXPERIMENT, "-o", out, *sets], cwd=ROOT,
                               capture_output=True, check=True)
                row = next(csv.DictReader(open(next(pathlib.Path(out).glob("*.csv")))))
            simulated = float(row["i1_misses_per_packet"])
            ok = abs(predicted - simulated) <= TOLERANCE * max(simulated, 1)
            bad += not ok
            print(f"{dest:9} interrupts {irq:5}: advisor {predicted:8.3f}  run {simulated:8.3f}"
                  f"  {'ok' if ok else 'DIFFERS'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
