#!/usr/bin/env python3
"""A host profile carried to another host by that host's microbenchmarks,
against what was measured there.

    transfer.py [--check REPORT.md] SIMLOOP DIR_A DIR_B

DIR_A and DIR_B are two `simloop calibrate host -o DIR` outputs (each with
its microbench.json and measured CSVs). A's profile is carried three ways
with `simloop calibrate host --from DIR_A --bench DIR_B/microbench.json
--scale S` (micro: each cost by the microbenchmark that stands for it;
clock: by the cpuinfo clocks alone; none: A's costs as measured), and each
carried profile predicts B's measured points:
- Linux: each point of B's host-linux-fit.json (path and payload), run with
  `simloop run DIR/host-linux.yaml`, against B's measured CPU ns per packet;
- BSD: `simloop compare DIR/host-bsd.yaml DIR_B/native-split*.csv --stat
  min`, every point the experiment stands for (not the send-only ones),
  against B's measured ns.
B's full measurements are used only as the points to predict. Prints a
Markdown table; with --check, fails unless REPORT.md holds that table
between its markers. Exit 2 on a directory that is not a host profile.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

# One statistic and one set of measured files for both reports (this directory).
from stability import native_csvs, summary


def sh(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"transfer.py: {' '.join(cmd)}: exit {r.returncode}: {r.stderr[-600:]}")
    return r.stdout


def linux_errors(simloop, prof, b_dir):
    fit = os.path.join(b_dir, "host-linux-fit.json")
    if not os.path.exists(fit) or not os.path.exists(os.path.join(prof, "host-linux.yaml")):
        return []
    errs = []
    with tempfile.TemporaryDirectory() as tmp:
        for q in json.load(open(fit))["points"]:
            out = os.path.join(tmp, f"{q['path']}-{q['payload']}")
            sh([simloop, "-q", "run", os.path.join(prof, "host-linux.yaml"),
                "--set", f"workload.payload={q['payload']}",
                "--set", f"workload.connected={'true' if q['path'] == 'connected' else 'false'}",
                "--set", "workload.packets=4000", "-o", out])
            row = next(csv.DictReader(open(os.path.join(out, "host-linux.csv"))))
            ns = float(row["ns_per_packet"])
            errs.append(100 * (ns - q["measured_cpu_ns"]) / q["measured_cpu_ns"])
    return errs


def bsd_errors(simloop, prof, b_dir):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cmp.csv")
        sh([simloop, "-q", "compare", os.path.join(prof, "host-bsd.yaml"),
            *native_csvs(b_dir), "--stat", "min", "-o", out])
        # A point the experiment cannot stand for (send-only: no receiver in
        # the run) is left out, as compare says.
        return [float(r["error_pct"]) for r in csv.DictReader(open(out))
                if "not simulated" not in r.get("caveat", "")]




END = "<!-- end of tables -->"


def run_name(d):
    """FINGERPRINT/RUN, the way hosts.md names a kept run."""
    d = os.path.abspath(d)
    return f"{os.path.basename(os.path.dirname(d))}/{os.path.basename(d)}"


def table(simloop, a_dir, b_dir):
    lines = [f"<!-- tables: transfer.py {run_name(a_dir)} {run_name(b_dir)} -->",
             "<!-- checked by validation.host_transfer: transfer.py --check recomputes it from "
             "the kept data -->",
             "| A's profile scaled by | factors: ns on B over ns on A | Linux: median / worst abs "
             "error (points) | BSD: median / worst (points) |",
             "|---|---|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for scale in ("micro", "clock", "none"):
            prof = os.path.join(tmp, scale)
            sh([simloop, "-q", "calibrate", "host", "--from", a_dir, "--bench",
                os.path.join(b_dir, "microbench.json"), "--scale", scale, "-o", prof])
            c = json.load(open(os.path.join(prof, "host.json")))["carried_from"]
            factors = (f"core {c['core']:.3f}, system call {c['syscall']:.3f}, copy {c['copy']:.3f}, "
                       f"kernel code {c.get('kernel', c['core']):.3f}, "
                       f"kernel copy {c.get('kernel_copy', c.get('kernel', c['core'])):.3f}")
            lines.append(f"| {scale} | {factors} | {summary(linux_errors(simloop, prof, b_dir))} | "
                         f"{summary(bsd_errors(simloop, prof, b_dir))} |")
    lines.append(END)
    return "\n".join(lines) + "\n"


def main(argv):
    check = None
    if len(argv) > 2 and argv[1] == "--check":
        check, argv = argv[2], [argv[0]] + argv[3:]
    if len(argv) != 4:
        sys.exit(__doc__)
    simloop, a_dir, b_dir = argv[1:]
    for d in (a_dir, b_dir):
        if not os.path.exists(os.path.join(d, "microbench.json")):
            print(f"transfer.py: {d}: no microbench.json: not a calibrate host output",
                  file=sys.stderr)
            sys.exit(2)
    text = table(simloop, a_dir, b_dir)
    if check is None:
        print(text, end="")
        return
    doc = open(check).read()
    b = text.split("\n", 1)[0]
    if b not in doc or END not in doc[doc.index(b):]:
        sys.exit(f"transfer.py: {check}: no table between {b} and {END}")
    at = doc.index(b)
    if doc[at:doc.index(END, at) + len(END)] + "\n" != text:
        print(text, end="")
        sys.exit(f"transfer.py: {check}'s table differs from what the kept data give "
                 "(printed above)")
    print(f"{check}: the table for {run_name(a_dir)} -> {run_name(b_dir)} is what the kept data give")


if __name__ == "__main__":
    main(sys.argv)
