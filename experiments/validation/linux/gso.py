#!/usr/bin/env python3
"""UDP GSO (UDP_SEGMENT) on the simulated Linux stack against this machine's
kernel, validated as changes: measure, fit, update, check.

measure SIMLOOP  simloop measure kernel --split with --gso-segments (needs
                 root and perf) in the runs of RUNS, each under three
                 minutes: data/knob-gso-NAME.csv with its .machine.json.
fit SIMLOOP      the two new functions' cycles (__udp_gso_segment once per
                 GSO send, skb_segment once per segment built) from the
                 TRAINING points only: each one's perf time per datagram
                 (its helpers' included, as calibrate --source linux
                 counts it) over the simulated stack's calls per datagram,
                 the median over the training points. Then
                 udp_rmem_release, from the training points and the same
                 payloads without GSO: what udp_recvmsg saves per datagram
                 at 64 segments, less calibrate's copy_linear_skb (its
                 bytes at the copy-out rate), over the simulated releases
                 saved; and udp_recvmsg's own cycles,
                 calibrate's less that (calibrate prices udp_rmem_release
                 0). Prints them.
update SIMLOOP   writes those cycles into configs/stacks/linux-epyc-stack.yaml
                 (those four keys only: a datagram read alone costs what
                 calibrate says) and the tables into gso.md, between its
                 markers.
check SIMLOOP    recomputes the fit and the tables from the kept data with
                 the installed profile; fails if the profile's four costs or
                 gso.md's tables differ from them.

Fixed before any of the data was measured: the runs below, the training
points (unconnected, 64 and 1000 B, 64 segments per send), the statistic
(the median over repeats), the measure (CPU time perf sampled per datagram,
as experiments/validation/linux/report.py uses), and the bounds:
  - change: the predicted change in kpps from no GSO to N segments (same
    path and payload, the same run) within 10 % of the measured change, or
    within 1 % of the rate where the measured change is under 10 % of it;
    required of every held-out point;
  - absolute: the median error of the held-out points' rates within 5 %.
A constant baseline stands beside the model: it predicts no change (every
rate that of the same path and payload without GSO).

udp_rmem_release, and the split of udp_recvmsg it needs, came after the
first results, which broke both bounds; it is fitted on the training points
and their runs without GSO only.
The first results broke both bounds (gso.md says by how much and why: the
existing functions' per-call costs, fitted without GSO, do not hold when a
send's datagrams run back to back). The bounds are therefore reported, met
or not, and the check holds gso.md to what the data say (its tables, and
the two costs the profile holds), not to the bounds; that choice was made
after those results.
"""
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import md_tables
import plain_time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
DATA = os.path.join(HERE, "data")
PROFILE = os.path.join(ROOT, "configs", "stacks", "linux-epyc-stack.yaml")
EXPERIMENT = os.path.join(HERE, "linux-epyc.yaml")
REPORT = os.path.join(HERE, "gso.md")
KEY = "options.linux.udp_segment"
PACKETS, REPEATS = 100000, 5
# name -> (payloads, segment counts); every run has both paths and no GSO (1).
RUNS = {
    "a": ([64, 256], [1, 2, 8, 32, 64, 128]),
    "b": ([700, 1000], [1, 2, 8, 32, 64]),
    "c": ([1400], [1, 4, 16, 46]),
}
TRAIN = {("unconnected", 64, 64), ("unconnected", 1000, 64)}
TRAIN_PAYLOADS = (64, 1000)
TRAIN_SEGMENTS = 64
# The simulated calls per datagram of a send of N segments
# (tests/linux_gso_test.cc, FunctionEntriesPerSend, holds the stack to them).
CALLS = {"__udp_gso_segment": lambda n: 1.0 / n, "skb_segment": lambda n: 1.0}
# udp_recvmsg's share of a read that a burst read back to back does not
# repeat per datagram: udp_rmem_release (the receive queue spliced and the
# memory of what was read given back). perf shows no sample of it (its time
# is udp_recvmsg's), and calibrate prices it 0, as it runs once per read in
# every sendto() loop. It is what udp_recvmsg saves per datagram from no GSO
# to 64 segments, beside copy_linear_skb (a linear datagram's copy, which a
# paged segment does not run; calibrate prices it from the paged training
# payload), over the simulated releases per datagram saved.
SPLIT = ("udp_rmem_release",)
MACHINE = os.path.join(ROOT, "configs", "machines", "linux-epyc-machine.yaml")
CHANGE_REL, CHANGE_RATE, ABS_MEDIAN = 10.0, 1.0, 5.0
BEGIN, END = "<!-- tables: gso.py tables -->", "<!-- end of tables -->"


def rel(p):
    return os.path.relpath(p, ROOT)


def csvs():
    return [os.path.join(DATA, f"knob-gso-{n}.csv") for n in RUNS]


def cmd_measure(simloop):
    os.makedirs(DATA, exist_ok=True)
    for name, (payloads, segs) in RUNS.items():
        out = os.path.join(DATA, f"knob-gso-{name}.csv")
        cmd = [simloop, "measure", "kernel", "--split", "--format", "csv",
               "--path", "unconnected,connected",
               "--payload", ",".join(map(str, payloads)),
               "--gso-segments", ",".join(map(str, segs)),
               "-n", str(PACKETS), "-r", str(REPEATS), "-o", rel(out)]
        print(" ".join([rel(simloop) if simloop.startswith(ROOT) else simloop] + cmd[1:]),
              flush=True)
        r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL)
        if r.returncode != 0:
            return r.returncode
        with open(os.path.join(DATA, f"knob-gso-{name}.load.txt"), "w") as f:
            f.write(open("/proc/loadavg").read())
    return 0


def measured():
    """(path, payload, segments) -> {"cpu_ns", "fn_ns": {fn: ns}} per
    datagram, the median over repeats; and the clock in Hz."""
    groups, clock = {}, None
    for path in csvs():
        with open(path + ".machine.json") as f:
            mhz = json.load(f)["cpu_mhz"]
        if clock is not None and abs(mhz * 1e6 - clock) > 1e-3 * clock:
            sys.exit(f"{rel(path)}: measured at {mhz} MHz, the files before at {clock / 1e6}")
        clock = mhz * 1e6
        with open(path) as f:
            rows = list(csv.DictReader(f))
            scale = plain_time.scaler(rows)
            for row in rows:
                key = (row["path"], int(row["payload"]), int(row["segments"]))
                rep = groups.setdefault(key, {}).setdefault((path, row["repeat"]),
                                                           {"cpu": 0.0, "fn": {}})
                ns = float(row["self_ns_per_packet"]) * scale(row)
                rep["cpu"] += ns
                to = row["charged_to"]
                rep["fn"][to] = rep["fn"].get(to, 0.0) + ns
    out = {}
    for key, reps in groups.items():
        fns = {fn for r in reps.values() for fn in r["fn"]}
        out[key] = {
            "cpu_ns": statistics.median(r["cpu"] for r in reps.values()),
            "fn_ns": {fn: statistics.median(r["fn"].get(fn, 0.0) for r in reps.values())
                      for fn in fns},
        }
    return out, clock


def copy_to_user_cycles_per_byte():
    """The machine's rate for a copy out to the user: copy.cycles_per_byte
    and copy.to_user_extra_cycles_per_byte."""
    got = {}
    with open(MACHINE) as f:
        for line in f:
            mm = re.match(r"^  (cycles_per_byte|to_user_extra_cycles_per_byte): ([0-9.]+)", line)
            if mm:
                got[mm.group(1)] = float(mm.group(2))
    if "cycles_per_byte" not in got:
        sys.exit(f"{rel(MACHINE)}: no copy.cycles_per_byte")
    return got["cycles_per_byte"] + got.get("to_user_extra_cycles_per_byte", 0.0)


def fit(m, clock, simloop, installed):
    """Each new function's cycles per call from the training points and,
    for udp_rmem_release, their runs without GSO (same path and payload)."""
    cycles = {}
    for fn, calls in CALLS.items():
        v = [m[k]["fn_ns"].get(fn, 0.0) * 1e-9 * clock / calls(k[2]) for k in sorted(TRAIN)]
        cycles[fn] = round(statistics.median(v), 1)
    cpb = copy_to_user_cycles_per_byte()
    linear = float(installed["copy_linear_skb"])
    rel_ = []
    for k in sorted(TRAIN):
        base = (k[0], k[1], 1)
        # Without GSO udp_recvmsg's time holds one linear copy per datagram.
        before = m[base]["fn_ns"]["udp_recvmsg"] * 1e-9 * clock - (linear + k[1] * cpb)
        saved = before - m[k]["fn_ns"]["udp_recvmsg"] * 1e-9 * clock
        fewer = releases(simloop, *base) - releases(simloop, *k)
        if fewer <= 0:
            sys.exit(f"{k}: the simulated stack releases no less often with GSO "
                     f"({fewer:+.4f} a datagram): udp_rmem_release cannot be fitted")
        rel_.append(saved / fewer)
    cycles["udp_rmem_release"] = round(statistics.median(rel_), 1)
    return cycles


def releases(simloop, path, payload, segments):
    """The simulated stack's udp_rmem_release calls per datagram (priced 1
    cycle for the count)."""
    j = run_json(simloop, path, payload, segments, ["stack.functions.udp_rmem_release=1"])
    for fn in j["functions"]:
        if fn["function"] == "udp_rmem_release":
            return fn["event"]
    return 0.0


def run_json(simloop, path, payload, segments, extra=()):
    """simloop run's JSON for one point with the installed profile."""
    sets = [f"workload.payload={payload}", f"workload.packets={max(4000, 64 * segments)}",
            f"{KEY}={segments}", *extra]
    if path == "connected":
        sets.append("workload.connected=true")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [simloop, "-q", "run", rel(EXPERIMENT), "-o", tmp]
        for s in sets:
            cmd += ["--set", s]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)}: {r.stderr.strip()}")
        with open(os.path.join(tmp, "linux-epyc.json")) as f:
            return json.load(f)


def predicted(simloop, path, payload, segments, functions=False):
    """simloop run's ns per datagram with the installed profile (and with
    `functions`, each function's ns per datagram)."""
    j = run_json(simloop, path, payload, segments)
    ns = j["result"]["ns_per_packet"]
    if not functions:
        return ns
    # The run's ledger as perf's split names it: the kernel inlines
    # udp_rmem_release and copy_linear_skb, so perf counts them in udp_recvmsg.
    as_perf = {"syscall_entry": "syscall_entry", "syscall_exit": "syscall_entry",
               "user_loop": "user", "udp_rmem_release": "udp_recvmsg",
               "copy_linear_skb": "udp_recvmsg"}
    per_cycle = ns / j["result"]["cycles_per_packet"]
    by_fn = {}
    for fn in j["functions"]:
        name = as_perf.get(fn["function"], fn["function"])
        by_fn[name] = by_fn.get(name, 0.0) + fn["cycles_per_packet"] * per_cycle
    return ns, by_fn


def label(key):
    path, payload, n = key
    if key in TRAIN:
        return "training"
    if n == 1:
        return "no GSO"
    parts = []
    if n > TRAIN_SEGMENTS:
        parts.append("segments extrapolated")
    elif n < TRAIN_SEGMENTS:
        parts.append("segments interpolated")
    if payload > max(TRAIN_PAYLOADS):
        parts.append("payload extrapolated")
    elif payload not in TRAIN_PAYLOADS:
        parts.append("payload interpolated")
    if path == "connected":
        parts.append("connected")
    return "held out: " + ", ".join(parts)


def evaluate(simloop):
    m, clock = measured()
    pred = {k: predicted(simloop, *k) for k in sorted(m)}
    rows = []
    for k in sorted(m):
        path, payload, n = k
        base = (path, payload, 1)
        meas_kpps, pred_kpps = 1e6 / m[k]["cpu_ns"], 1e6 / pred[k]
        meas0, pred0 = 1e6 / m[base]["cpu_ns"], 1e6 / pred[base]
        dm, dp = meas_kpps - meas0, pred_kpps - pred0
        small = abs(dm) < 0.10 * meas_kpps
        ok = abs(dp - dm) <= CHANGE_REL / 100 * abs(dm) or (
            small and abs(dp - dm) <= CHANGE_RATE / 100 * meas_kpps)
        rows.append({
            "key": k, "label": label(k), "meas_kpps": meas_kpps, "pred_kpps": pred_kpps,
            "meas0": meas0, "dm": dm, "dp": dp, "ok": ok or n == 1,
            "abs_err": 100 * (pred_kpps - meas_kpps) / meas_kpps,
            "const_err": 100 * (meas0 - meas_kpps) / meas_kpps,
            "change_err": 100 * (dp - dm) / dm if dm != 0 else 0.0,
            "skb_segment_ns": m[k]["fn_ns"].get("skb_segment", 0.0),
            "gso_ns": m[k]["fn_ns"].get("__udp_gso_segment", 0.0),
        })
    return rows, fit(m, clock, simloop, profile_cycles()), clock, m


def tables(simloop):
    rows, cycles, clock, m = evaluate(simloop)
    held = [r for r in rows if r["label"].startswith("held out")]
    failed = [r for r in held if not r["ok"]]
    med = statistics.median(abs(r["abs_err"]) for r in held) if held else 0.0
    med_const = statistics.median(abs(r["const_err"]) for r in held) if held else 0.0
    out = [BEGIN, "", "<!-- checked by validation.linux_gso_changes: gso.py check recomputes "
           "these tables from data/knob-gso-*.csv and the installed profile -->", "",
           f"Fitted from the training points ({clock / 1e6:.6g} MHz): "
           + ", ".join(f"`{fn}` {c:.1f} cycles" for fn, c in cycles.items()) + ".", "",
           "| path | payload B | segments | set | measured kpps | predicted kpps | error | "
           "constant's error | measured change | predicted change | change error | within |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        path, payload, n = r["key"]
        within = "—" if n == 1 else ("yes" if r["ok"] else "**no**")
        change = "—" if n == 1 else f"{r['dm']:+.1f}"
        pchange = "—" if n == 1 else f"{r['dp']:+.1f}"
        cerr = "—" if n == 1 else f"{r['change_err']:+.1f} %"
        out.append(f"| {path} | {payload} | {n} | {r['label']} | {r['meas_kpps']:.1f} | "
                   f"{r['pred_kpps']:.1f} | {r['abs_err']:+.1f} % | {r['const_err']:+.1f} % | "
                   f"{change} | {pchange} | {cerr} | {within} |")
    out += ["", f"Held-out points: {len(held)}; changes within the bound: "
            f"{len(held) - len(failed)} of {len(held)}. Absolute error, median over them: "
            f"model {med:.2f} %, constant baseline (no change) {med_const:.2f} % "
            f"(bound {ABS_MEDIAN:g} %). Both bounds are "
            f"{'met' if not failed and med <= ABS_MEDIAN else '**not met**'}.", ""]
    out += diagnosis(simloop, m) + [END]
    summary = {"held": len(held), "failed": len(failed), "median": med, "cycles": cycles}
    return "\n".join(out) + "\n", summary


DIAG = [("unconnected", 64, 1), ("unconnected", 64, 64)]


def diagnosis(simloop, m):
    """Where the time per datagram goes, measured against simulated, without
    GSO and at 64 segments: the functions that differ most."""
    sim = {k: predicted(simloop, *k, functions=True)[1] for k in DIAG}
    names = set()
    for k in DIAG:
        names |= set(m[k]["fn_ns"]) | set(sim[k])
    names.discard("")
    def gap(n):
        k = DIAG[-1]
        return abs(sim[k].get(n, 0.0) - m[k]["fn_ns"].get(n, 0.0))
    top = sorted(names, key=lambda n: (-gap(n), n))[:12]
    out = ["<!-- checked by validation.linux_gso_changes: the same data, simloop run's ledger -->",
           "", "ns per datagram by function, unconnected 64 B (perf against the simulated run's "
           "ledger), the twelve that differ most at 64 segments:", "",
           "| function | measured, no GSO | simulated, no GSO | measured, 64 segments | "
           "simulated, 64 segments |", "|---|---:|---:|---:|---:|"]
    for n in top:
        vals = []
        for k in DIAG:
            vals += [m[k]["fn_ns"].get(n, 0.0), sim[k].get(n, 0.0)]
        out.append(f"| `{n}` | " + " | ".join(f"{v:.1f}" for v in vals) + " |")
    tot = []
    for k in DIAG:
        tot += [sum(v for n, v in m[k]["fn_ns"].items()), sum(sim[k].values())]
    out += ["| all | " + " | ".join(f"{v:.1f}" for v in tot) + " |", ""]
    return out


def profile_cycles():
    got = {}
    with open(PROFILE) as f:
        for line in f:
            mm = re.match(r"^  (\S+): (\S+)", line)
            if mm and mm.group(1) in (*CALLS, *SPLIT, "udp_recvmsg", "copy_linear_skb"):
                got[mm.group(1)] = mm.group(2)
    return got


def with_receive_split(cycles, installed):
    """The fit, and udp_recvmsg's own cycles: what calibrate fitted for it
    (with udp_rmem_release's, which it prices 0: a read of one datagram
    costs what calibrate says) less udp_rmem_release's."""
    for fn in ("udp_recvmsg", *SPLIT):
        if not re.match(r"^[0-9.]+$", installed.get(fn, "")):
            sys.exit(f"{rel(PROFILE)}: {fn} is {installed.get(fn)}, not a number")
    total = sum(float(installed[fn]) for fn in ("udp_recvmsg", *SPLIT))
    out = dict(cycles)
    out["udp_recvmsg"] = round(total - sum(cycles[fn] for fn in SPLIT), 1)
    if out["udp_recvmsg"] < 0:
        sys.exit(f"udp_recvmsg would cost {out['udp_recvmsg']} cycles: the split "
                 f"({', '.join(f'{fn} {cycles[fn]}' for fn in SPLIT)}) exceeds its {total}")
    return out


NOTES = {
    "udp_recvmsg": "calibrate's cycles less udp_rmem_release's: gso.py fit",
    "udp_rmem_release": "inlined into udp_recvmsg: priced from the GSO runs by gso.py fit",
}


def cmd_fit(simloop):
    m, clock = measured()
    installed = profile_cycles()
    for fn, c in with_receive_split(fit(m, clock, simloop, installed), installed).items():
        print(f"{fn}: {c:.1f} cycles")
    return 0


def cmd_update(simloop):
    m, clock = measured()
    installed = profile_cycles()
    cycles = with_receive_split(fit(m, clock, simloop, installed), installed)
    with open(PROFILE) as f:
        lines = f.readlines()
    for i, line in enumerate(lines):
        for fn, c in cycles.items():
            if line.startswith(f"  {fn}:"):
                note = NOTES.get(fn, "UDP GSO: experiments/validation/linux/gso.py fit "
                                     "(training points only)")
                lines[i] = f"  {fn}: {c:.1f}  # {note}\n"
    md_tables.write_atomic(PROFILE, "".join(lines))
    text, s = tables(simloop)
    md_tables.put_tables(REPORT, text, BEGIN, END, "gso.py")
    print(text)
    return 0


def cmd_tables(simloop):
    print(tables(simloop)[0])
    return 0


def cmd_check(simloop):
    m, clock = measured()
    installed = profile_cycles()
    cycles = with_receive_split(fit(m, clock, simloop, installed), installed)
    failed = []
    for fn, c in cycles.items():
        if installed.get(fn) != f"{c:.1f}":
            failed.append(f"{rel(PROFILE)}: {fn} is {installed.get(fn)}, the fit gives {c:.1f}")
    text, s = tables(simloop)
    kept = md_tables.kept_tables(REPORT, BEGIN, END)
    if kept is None:
        failed.append("gso.md: no tables between the markers")
    elif kept != text:
        failed.append("gso.md's tables differ from what the kept data give "
                      "(regenerate: gso.py update SIMLOOP)")
    # Reported, met or not (see the docstring); gso.md's tables say which.
    print(f"{'ok' if not s['failed'] else 'not met (reported as such)'} changes: "
          f"{s['held'] - s['failed']} of {s['held']} held-out points within the bound")
    print(f"{'ok' if s['median'] <= ABS_MEDIAN else 'not met (reported as such)'} absolute "
          f"median: {s['median']:.2f} % (bound {ABS_MEDIAN:g} %)")
    for f_ in failed:
        print("FAIL " + f_)
    return 1 if failed else 0


def main():
    cmds = {"measure": cmd_measure, "fit": cmd_fit, "tables": cmd_tables, "update": cmd_update,
            "check": cmd_check}
    md_tables.dispatch(cmds, __doc__)


if __name__ == "__main__":
    main()
