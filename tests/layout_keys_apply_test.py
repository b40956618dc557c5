#!/usr/bin/python3
"""Advice on an experiment can be applied: `simloop layout EXPERIMENT -o J`
gives experiment keys whenever it advises a change, and `simloop run` with
those keys gives the rate and the L1 misses it predicted. On the seed's
padded experiment (its own pad in nfs_diskless.o, the advice's pad
elsewhere: layout.more_pads), the baseline (no pad), the moved experiment
(layout.move_to_end), and one step beside: the padded experiment to
loopback with interrupts off, to broadcast, with its pad at offset 0, and
with a 32 KB L1.

    layout_keys_apply_test.py SIMLOOP
"""
import csv
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = {
    "padded": ("experiments/seed/icache-padded.yaml", []),
    "baseline": ("experiments/seed/icache-baseline.yaml", []),
    "padded, loopback, interrupts off": ("experiments/seed/icache-padded.yaml",
                                         ["workload.dest=loopback", "interrupts.enabled=false"]),
    "padded at offset 0": ("experiments/seed/icache-padded.yaml", ["layout.pad_offset=0"]),
    "moved": ("experiments/seed/icache-moved.yaml", []),
    "padded, broadcast": ("experiments/seed/icache-padded.yaml", ["workload.dest=broadcast"]),
    "padded, 32 KB L1": ("experiments/seed/icache-padded.yaml",
                         ["machine.cache.l1.size_bytes=32768"]),
}
RATE = 0.01     # relative: the run's warm-up and cold misses
MISSES = 0.5    # per packet, or 2 % of the run's


def main(simloop):
    bad = []
    for name, (exp, sets) in CASES.items():
        args = [a for s in sets for a in ("--set", s)]
        with tempfile.TemporaryDirectory() as tmp:
            j = pathlib.Path(tmp) / "advice.json"
            subprocess.run([simloop, "-q", "layout", exp, "--max-evals", "1500", "-o", str(j),
                            *args], cwd=ROOT, check=True, capture_output=True, timeout=600)
            adv = json.loads(j.read_text())
            rec = adv["recommendation"]
            keys = rec["experiment_keys"]
            if not rec["changed"]:
                bad.append(f"{name}: no change advised (the test needs one)")
                continue
            if not keys:
                bad.append(f"{name}: a change advised ({rec['padding']}) with no experiment keys")
                continue
            out = pathlib.Path(tmp) / "run"
            run = [simloop, "-q", "run", exp, "-o", str(out), *args]
            for k in keys:
                run += ["--set", k]
            subprocess.run(run, cwd=ROOT, check=True, capture_output=True, timeout=600)
            row = next(csv.DictReader(open(next(out.glob("*.csv")))))
            kpps, misses = float(row["kpps"]), float(row["i1_misses_per_packet"])
            want_kpps = adv["after"]["kpps"]
            want_misses = adv["after"]["l1_misses_per_packet"]
            ok = (abs(kpps - want_kpps) <= RATE * want_kpps and
                  abs(misses - want_misses) <= max(MISSES, 0.02 * misses))
            print(f"{name:34} keys {len(keys)} (padding {rec['padding']}): predicted "
                  f"{want_kpps:.1f} kpps, {want_misses:.2f} misses; run {kpps:.1f} kpps, "
                  f"{misses:.2f} misses  {'ok' if ok else 'DIFFERS'}")
            if not ok:
                bad.append(f"{name}: run with the keys differs from the prediction")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
