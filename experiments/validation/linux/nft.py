#!/usr/bin/env python3
"""nftables rules in the output path, validated as changes: measure, fit, update, check.

measure SIMLOOP  (root, perf, nft) three runs of simloop measure kernel --nft-rules:
                 data/knob-nft-split.csv, the training points under perf (the fit's
                 rows); data/knob-nft.csv, every point timed in thread CPU time
                 without perf; data/knob-nft-all.csv, every path and payload under
                 perf at 0, 10, 100 and 200 rules; data/knob-nft.machine.txt, the
                 commands and load, and whether the host's own ruleset (nft list
                 ruleset) is the same after as before (it must be).
fit SIMLOOP      simloop calibrate --source linux on data/knob-nft-split.csv with the
                 training split below; prints the new functions' cycles.
tables SIMLOOP   prints the tables (NFT_SESSION=NAME: that session's data against
                 the installed profile).
update SIMLOOP   writes those cycles into configs/stacks/linux-epyc-stack.yaml
                 (the three netfilter keys only) and the tables into nft.md.
check SIMLOOP    recomputes everything from the kept data (no root, no perf): the
                 profile's keys must be the fit's, nft.md's tables what the data
                 give, and the rates' median error within its bound; the changes'
                 claim is printed met or not, as the tables say.

Fixed before anything was measured:
  rules     `ip daddr 198.18.X.Y counter` (no datagram matches: every rule is
            evaluated), 0 = no table in the namespace at all
  training  path unconnected, payloads 18 and 1472 B, 0, 10 and 100 rules
  held out  1, 5, 20 and 50 rules (interpolated), 200 (extrapolated), the
            payloads 700 and 4000 B, and the connected path at every count
  bounds    a held-out change (kpps with N rules minus kpps without, same path
            and payload, same run) within 10 % of the measured change, or within
            1 % of the rate without rules where the change is under 10 % of it;
            absolute errors of the predicted rate: median <= 5 %
Changed after results were seen (nft.md says how): the measured rate with N
rules. It was perf's rate without rules plus the thread CPU time the rules add;
it is perf's rate without rules over the ratio of thread CPU times (with N
rules over without: the median over repeats of each repeat's ratio), because
the split's CPU time was the thread's times a factor (1.19 here, when it was
perf's own; about 0.98 since the split's time is its plain half, perf off)
that the rules do not change (the tables print it per count).
The model's prediction is `simloop run` of experiments/linux-loopback.yaml with
options.linux.nft_rules=N on the installed profile. Beside it, two baselines
that know nothing of the stack's functions: the constant (no change), and a
line through the origin in the rule count fitted to the training points' added
thread CPU time (a cost per rule, none for the hook).
"""
import collections
import csv
import functools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import md_tables

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
# NFT_SESSION=NAME measures into (and tables read from) data/knob-nft-NAME*.csv
# instead: another session, against the installed profile.
SESSION = os.environ.get("NFT_SESSION", "")
TAG = "knob-nft" + (f"-{SESSION}" if SESSION else "")
DATA = os.path.join(HERE, "data", TAG + ".csv")
SPLIT = os.path.join(HERE, "data", TAG + "-split.csv")
ALL = os.path.join(HERE, "data", TAG + "-all.csv")
STACK = os.path.join(ROOT, "configs", "stacks", "linux-epyc-stack.yaml")
EXP = os.path.join(ROOT, "experiments", "linux-loopback.yaml")
REPORT = os.path.join(HERE, "nft.md")
RULES = [0, 1, 5, 10, 20, 50, 100, 200]
PAYLOADS = [18, 700, 1472, 4000]
TRAIN = ["path=unconnected", "payload=18,1472", "nft_rules=0,10,100"]
KEYS = ["nf_hook_slow", "nft_do_chain", "nft_rule_eval"]
BOUNDS = {"change": 10.0, "small_change_rate": 1.0, "abs_median": 5.0}
BEGIN, END = "<!-- tables: nft.py update -->", "<!-- end of tables -->"


def rel(p):
    return os.path.relpath(p, ROOT)


def run(cmd, **kw):
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"nft.py: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def host_ruleset():
    return subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True).stdout


def cmd_measure(simloop):
    before = host_ruleset()
    notes = [f"load before: {open('/proc/loadavg').read().strip()}"]
    packets = os.environ.get("PACKETS", "20000")
    repeats = os.environ.get("REPEATS", "5")
    common = [simloop, "measure", "kernel", "--format", "csv"]
    # The fit's rows: the training points under perf.
    split = common + ["--split", "--path", "unconnected", "-l", "18,1472",
                      "--nft-rules", "0,10,100", "-n", "40000", "-r", repeats, "-o", rel(SPLIT)]
    # The changes: every point timed in thread CPU time, without perf.
    timed = common + ["--path", "unconnected,connected", "-l", ",".join(map(str, PAYLOADS)),
                      "--nft-rules", ",".join(map(str, RULES)), "-n", packets, "-r", repeats,
                      "-o", rel(DATA)]
    # Every path and payload under perf: the rates the profile's own measure gives.
    every = common + ["--split", "--path", "unconnected,connected", "-l",
                      ",".join(map(str, PAYLOADS)), "--nft-rules", "0,10,100,200", "-n", packets,
                      "-r", repeats, "-o", rel(ALL)]
    for cmd in (split, timed, every):
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        notes.append("command: " + " ".join(["simloop"] + cmd[1:]))
        notes.append(f"load after it: {open('/proc/loadavg').read().strip()}")
    after = host_ruleset()
    if before != after:
        sys.exit("nft.py: the host's own ruleset changed during the measurement")
    notes.append(f"host ruleset (nft list ruleset) the same before and after: "
                 f"{len(before.splitlines())} lines")
    with open(os.path.join(HERE, "data", TAG + ".machine.txt"), "w") as f:
        f.write("\n".join(notes) + "\n")


def calibrate(simloop, data=None):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [simloop, "-q", "calibrate", "--source", "linux", rel(data or SPLIT), "-o", tmp,
               "--name", "nft"]
        for t in TRAIN:
            cmd += ["--train", t]
        run(cmd)
        with open(os.path.join(tmp, "nft-fit.json")) as f:
            return json.load(f)


def fitted_keys(fit):
    return {k: round(fit["values"].get("fixed:" + k, 0.0), 1) for k in KEYS}


def profile_keys():
    out = {}
    with open(STACK) as f:
        for line in f:
            m = re.match(r"\s+(\w+):\s*([0-9.]+)", line)
            if m and m.group(1) in KEYS:
                out[m.group(1)] = float(m.group(2))
    return out


@functools.lru_cache(maxsize=None)
def simulate(simloop, path, payload, rules):
    """simloop run's ns per packet on the installed profile."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [simloop, "-q", "run", rel(EXP), "-o", tmp, "--set", f"workload.payload={payload}",
               "--set", "workload.packets=4000", "--set", f"options.linux.nft_rules={rules}"]
        if path == "connected":
            cmd += ["--set", "workload.connected=true"]
        run(cmd)
        with open(os.path.join(tmp, "linux-loopback.json")) as f:
            return json.load(f)["result"]["ns_per_packet"]


def timed(data):
    """Thread CPU ns per packet without perf, by (path, payload, rules): the
    median over repeats, and the median over repeats of each repeat's time
    with the rules over its time without (the two interleaved in the same
    slices) and of their difference."""
    d = collections.defaultdict(dict)
    with open(data) as f:
        for r in csv.DictReader(f):
            d[(r["path"], int(r["payload"]), int(r["nft_rules"]))][r["repeat"]] = float(
                r["cpu_ns_per_packet"])
    med = {k: statistics.median(v.values()) for k, v in d.items()}
    ratio, added = {}, {}
    for (p, l, n), v in d.items():
        z = d[(p, l, 0)]
        ratio[(p, l, n)] = statistics.median(v[r] / z[r] for r in v)
        added[(p, l, n)] = statistics.median(v[r] - z[r] for r in v)
    return med, ratio, added


def trains(path, payload, rules):
    return path == "unconnected" and payload in (18, 1472) and rules in (0, 10, 100)


def within(err, change, rate):
    """The bound on a change: 10 % of it, or 1 % of the rate where it is under 10 % of it."""
    return abs(err) <= (0.1 * abs(change) if abs(change) >= 0.1 * rate else 0.01 * rate)


def points(simloop, every, data=None):
    perf = {(q["path"], q["payload"], q.get("nft_rules", 0)): q["measured_cpu_ns"]
            for q in every["points"]}
    t, ratio, add = timed(data or DATA)
    # The line baseline: ns per rule, least squares through the origin over
    # the training points' added time (thread CPU ns with N rules minus without).
    tr = [(n, add[(p, l, n)]) for (p, l, n) in t if n and trains(p, l, n)]
    slope = sum(n * d for n, d in tr) / sum(n * n for n, d in tr)
    out = []
    for (path, payload, rules), ns in sorted(t.items()):
        if rules == 0:
            continue
        base = perf[(path, payload, 0)]
        added = add[(path, payload, rules)]
        # perf's sampling inflates CPU time in proportion (ratios below): the
        # rules' relative cost, measured without perf, at perf's level.
        m0, mn = 1e6 / base, 1e6 / (base * ratio[(path, payload, rules)])
        p0 = 1e6 / simulate(simloop, path, payload, 0)
        pn = 1e6 / simulate(simloop, path, payload, rules)
        dm, dp = mn - m0, pn - p0
        line = 1e6 / (base * (1 + slope * rules / t[(path, payload, 0)])) - m0
        r = {"path": path, "payload": payload, "rules": rules,
             "set": "train" if trains(path, payload, rules) else "held out",
             "added": added, "m0": m0, "mn": mn, "p0": p0, "pn": pn, "dm": dm, "dp": dp,
             "err_change": 100 * (dp - dm) / abs(dm), "err_rate": 100 * (dp - dm) / m0,
             "ok": within(dp - dm, dm, m0), "abs": 100 * (pn - mn) / mn, "line": line,
             "line_ok": within(line - dm, dm, m0), "const_ok": within(-dm, dm, m0)}
        if (path, payload, rules) in perf:
            r["perf_dm"] = 1e6 / perf[(path, payload, rules)] - m0
        out.append(r)
    ratios = collections.defaultdict(list)
    for k, v in perf.items():
        ratios[k[2]].append(v / t[k])
    return out, slope, ratios


def tables(simloop, fit, every):
    rs, slope, ratios = points(simloop, every)
    keys = fitted_keys(fit)
    held = [r for r in rs if r["set"] == "held out"]
    lines = [BEGIN, "",
             f"Fit: `simloop calibrate --source linux {rel(SPLIT)} "
             f"{' '.join('--train ' + t for t in TRAIN)}`, statistic {fit['stat']}; "
             f"{fit['cpu_model']} ({fit['kernel']}) at {fit['clock_hz'] / 1e6:.2f} MHz; load "
             f"average up to {max(fit['loadavg_1m'], every['loadavg_1m']):.2f} during the "
             f"measurements. New keys of `configs/stacks/linux-epyc-stack.yaml` (cycles): "
             + ", ".join(f"`{k}: {v}`" for k, v in keys.items()) + ".", "",
             "Measured rate without rules: 1e6 / the CPU ns per packet perf sampled "
             f"(`{rel(ALL)}`, the measure the profile is fitted to). Measured rate with N "
             "rules: that time times the ratio of the thread CPU time with N rules to that "
             f"without, measured without perf (`{rel(DATA)}`: same path and payload, "
             "interleaved in the same slices of one run; the median over repeats of each "
             "repeat's ratio), which has no sampling error; `added ns` is the median of "
             "the repeats' differences of thread CPU times. perf's CPU time is the "
             "thread's times a factor that does not depend on the rules (below). "
             "Predicted: `simloop run experiments/linux-loopback.yaml --set "
             "options.linux.nft_rules=N` at the point's payload and path. `perf alone`: the "
             "change perf's own samples give, where measured (10, 100 and 200 rules).", "",
             "| path | payload (B) | rules | set | added ns | kpps, 0 rules | measured change "
             "| predicted change | error, % of change | error, % of rate | met | rate error | "
             "line | constant | perf alone |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in rs:
        perf = f"{r['perf_dm']:+.2f}" if "perf_dm" in r else ""
        lines.append(
            f"| {r['path']} | {r['payload']} | {r['rules']} | {r['set']} | {r['added']:.0f} | "
            f"{r['m0']:.2f} | {r['dm']:+.2f} | {r['dp']:+.2f} | {r['err_change']:+.1f} % | "
            f"{r['err_rate']:+.2f} % | {'yes' if r['ok'] else 'no'} | {r['abs']:+.2f} % | "
            f"{r['line']:+.2f} ({'yes' if r['line_ok'] else 'no'}) | +0.00 "
            f"({'yes' if r['const_ok'] else 'no'}) | {perf} |")
    s = {"held_met": sum(r["ok"] for r in held), "held": len(held),
         "abs_median": statistics.median(abs(r["abs"]) for r in held),
         "abs_worst": max(abs(r["abs"]) for r in held),
         "line_met": sum(r["line_ok"] for r in held),
         "const_met": sum(r["const_ok"] for r in held)}
    lines += ["", "Changes in kpps. Line: the training points' added time fitted as "
              f"{slope:.2f} ns per rule (least squares through the origin), added to the "
              "point's own time without rules; constant: no change.", "",
              "The split run's CPU ns (its plain half, perf off) over the timed run's thread CPU ns, "
              "over every path and payload "
              "(mean, lowest, highest): "
              + "; ".join(f"{n} rules {statistics.fmean(v):.3f} ({min(v):.3f} to {max(v):.3f})"
                          for n, v in sorted(ratios.items())) + ".", "",
              "| claim (held-out points) | bound | model | line | constant |",
              "|---|---|---:|---:|---:|",
              f"| changes within bound | all | {s['held_met']} of {s['held']} | "
              f"{s['line_met']} of {s['held']} | {s['const_met']} of {s['held']} |",
              f"| rates: median abs error | <= {BOUNDS['abs_median']:g} % | "
              f"{s['abs_median']:.2f} % (worst {s['abs_worst']:.2f} %) | | |", ""]
    lines += second_session(simloop) + [END]
    return "\n".join(lines) + "\n", s, keys


SECOND = os.path.join(HERE, "data", "knob-nft-2")


def second_session(simloop):
    """Another session's changes against the installed profile (nothing fitted to
    it), summarised, when its files are kept and these tables are the first's."""
    if SESSION or not os.path.exists(SECOND + ".csv"):
        return []
    every = calibrate(simloop, SECOND + "-all.csv")
    rs, _, ratios = points(simloop, every, SECOND + ".csv")
    held = [r for r in rs if r["set"] == "held out"]
    miss = [f"{r['path']} {r['payload']} B / {r['rules']}" for r in held if not r["ok"]]
    return [f"A second session (`{rel(SECOND)}*.csv`, `NFT_SESSION=2 nft.py measure`, load "
            f"average up to {every['loadavg_1m']:.2f}; `NFT_SESSION=2 nft.py tables` prints its "
            "table) against this profile: held-out changes within bound "
            f"{sum(r['ok'] for r in held)} of {len(held)} (line "
            f"{sum(r['line_ok'] for r in held)}, constant {sum(r['const_ok'] for r in held)}); "
            "rates' median abs error "
            f"{statistics.median(abs(r['abs']) for r in held):.2f} %; perf over thread CPU "
            "time " + ", ".join(f"{statistics.fmean(v):.3f}" for n, v in sorted(ratios.items()))
            + " at " + ", ".join(str(n) for n in sorted(ratios)) + " rules. Missed: "
            + "; ".join(miss) + ".", ""]


def cmd_tables(simloop):
    """The tables, printed: with NFT_SESSION, another session's data against the
    installed profile (the keys shown are that session's own fit)."""
    print(tables(simloop, calibrate(simloop), calibrate(simloop, ALL))[0], end="")


def cmd_fit(simloop):
    fit = calibrate(simloop)
    for k, v in fitted_keys(fit).items():
        print(f"{k}: {v}")


def write_keys(keys):
    with open(STACK) as f:
        text = f.read()
    for k, v in keys.items():
        pat = re.compile(rf"^(  {k}:)\s*[^\n]*$", re.M)
        line = f"  {k}: {v}  # measure kernel --nft-rules: experiments/validation/linux/nft.py"
        text, n = pat.subn(line, text)
        if n == 0:
            sys.exit(f"nft.py: {rel(STACK)} has no key {k}")
    md_tables.write_atomic(STACK, text)


def cmd_update(simloop):
    fit = calibrate(simloop)
    write_keys(fitted_keys(fit))
    text, _, _ = tables(simloop, fit, calibrate(simloop, ALL))
    md_tables.put_tables(REPORT, text, BEGIN, END, "nft.py")


def cmd_check(simloop):
    fit = calibrate(simloop)
    text, s, keys = tables(simloop, fit, calibrate(simloop, ALL))
    failed = []
    if profile_keys() != keys:
        failed.append(f"{rel(STACK)}: {profile_keys()} is not the fit's {keys} "
                      "(nft.py update SIMLOOP)")
    with open(REPORT) as f:
        md = f.read()
    kept = md[md.index(BEGIN):md.index(END) + len(END)] + "\n" if BEGIN in md and END in md else ""
    if kept != text:
        failed.append("nft.md's tables differ from what the kept data give (nft.py update SIMLOOP)")
    # Reported as the data say (nft.md's claims table), not a failure: the
    # check holds the report to the data, and the rates' median to its bound.
    print(f"{'ok' if s['held_met'] == s['held'] else 'not met (reported as such)'} held-out "
          f"changes: {s['held_met']} of {s['held']} within bound")
    if s["abs_median"] > BOUNDS["abs_median"]:
        failed.append(f"held-out rates: median abs error {s['abs_median']:.2f} % > 5 %")
    else:
        print(f"ok held-out rates: median abs error {s['abs_median']:.2f} %")
    for f_ in failed:
        print("FAIL " + f_)
    return 1 if failed else 0


def main():
    cmds = {"measure": cmd_measure, "fit": cmd_fit, "tables": cmd_tables, "update": cmd_update,
            "check": cmd_check}
    md_tables.dispatch(cmds, __doc__)


if __name__ == "__main__":
    main()
