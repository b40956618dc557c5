#!/usr/bin/env python3
"""The knobs a Linux engineer turns, predicted as changes and checked on
this machine's kernel: options.linux.sendmmsg (datagrams per sendmmsg(2)
call).

measure SIMLOOP  (root) simloop measure kernel --sendmmsg over every batch
                 size, payload and path below, interleaved slice by slice in
                 one run: data/knob-sendmmsg.csv (thread CPU time per
                 datagram); and under perf at the training batch
                 (--split): data/knob-sendmmsg-split.csv.
fit SIMLOOP      the cycles of __sys_sendmmsg (per call) and of the two
                 per-message functions (___sys_sendmsg,
                 copy_msghdr_from_user), and the stack's in_call_factor,
                 from the TRAINING points only; with --write, adds them to
                 configs/stacks/linux-epyc-stack.yaml (no other cost there
                 moves).
tables SIMLOOP   the report's tables: every point's predicted change in kpps
                 against the measured change, beside a constant baseline.
update SIMLOOP   writes the tables into knobs.md, between its markers.
check SIMLOOP    recomputes everything from the kept data; fails if the
                 profile's costs are not the fit's or knobs.md's tables
                 (each claim marked met or not met) differ from what the
                 data give.

Fixed before the data were measured: training = the unconnected path at 18
and 1472 B with 2 and 64 datagrams per call (two batch sizes: a call's cost
and a message's cannot be told apart with one); everything else held out:
batch sizes 4, 8, 16, 32 (between) and 128, 256 (beyond), payloads 700 and
4000 B, and the whole connected path. The change is measured within one
run: CPU time per datagram with the knob against the sendto() (send())
channel of the same payload and path, repeat by repeat; the median over
repeats. Claims: each held-out change within 10 % of the measured change,
or within 1 % of the rate where the change is under 10 % of it; absolute
errors of the rate with the knob, median at most 5 %.

Pricing: the per-message functions from perf's self time per datagram at
64 a call (perf's shares of the plain run's time, plain_time.py), as a
first message pays them; the in-call factor (what a later message's
functions cost, against a first one's) and the call's cost together by
least squares on the training points' measured change, the factor in
[0.1, 1] and the cost not below 0. Simplified: the user's loop is
charged once a call (perf: two thirds of it is the sendto() wrapper and
the loop; the rest, the recv() wrapper, stays per datagram in the kernel).
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
DATA = os.path.join(HERE, "data", "knob-sendmmsg.csv")
SPLIT = os.path.join(HERE, "data", "knob-sendmmsg-split.csv")
REPORT = os.path.join(HERE, "knobs.md")
STACK = os.path.join(ROOT, "configs", "stacks", "linux-epyc-stack.yaml")
EXPERIMENT = os.path.join(HERE, "linux-epyc.yaml")

BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
PAYLOADS = [18, 700, 1472, 4000]
PATHS = ["unconnected", "connected"]
TRAIN_BATCHES = [2, 64]
TRAIN_PAYLOADS = [18, 1472]
TRAIN_PATH = "unconnected"
SPLIT_BATCH = 64
MEASURE = ["--sendmmsg", ",".join(map(str, BATCHES)), "--payload", ",".join(map(str, PAYLOADS)),
           "--path", ",".join(PATHS), "--packets", "60000", "--warmup", "2000", "--repeats", "3",
           "--rounds", "10"]
MEASURE_SPLIT = ["--split", "--sendmmsg", f"1,{SPLIT_BATCH}", "--payload",
                 ",".join(map(str, TRAIN_PAYLOADS)), "--path", TRAIN_PATH, "--packets", "100000",
                 "--repeats", "2"]
PER_CALL = "__sys_sendmmsg"
PER_MESSAGE = ["___sys_sendmsg", "copy_msghdr_from_user"]
FACTOR = "in_call_factor"
BOUNDS = {"change_rel": 10.0, "change_of_rate": 1.0, "abs_median": 5.0}
BEGIN, END = "<!-- tables: knobs.py tables -->", "<!-- end of tables -->"
CHECKED = ("<!-- checked by validation.linux_sendmmsg_changes: knobs.py check recomputes it "
           "from the kept data -->")


def rel(p):
    return os.path.relpath(p, ROOT)


def is_train(path, payload, batch):
    return path == TRAIN_PATH and payload in TRAIN_PAYLOADS and batch in TRAIN_BATCHES


def cmd_measure(simloop):
    for out, args in ((DATA, MEASURE), (SPLIT, MEASURE_SPLIT)):
        cmd = [simloop, "measure", "kernel"] + args + ["-o", out, "--format", "csv"]
        print("+", " ".join([rel(simloop) if os.path.isabs(simloop) else simloop] + cmd[1:]))
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def changes(paths, point):
    """Each point's CPU ns per datagram and its change against the same
    point at one datagram a call, from `paths`' rows: point(row) is a tuple
    whose last item is the batch size. -> ({point: {"cpu": median over
    repeats, "base": the sendto() point's median, "delta": median over
    repeats of (CPU ns with the batch) - (CPU ns with 1)}}, highest load)."""
    by, load = {}, 0.0
    for path in paths:
        for r in csv.DictReader(open(path)):
            if r["fault"] or int(r["delivered"]) != int(r["packets"]):
                raise SystemExit(f"{rel(path)}: a row with a fault or datagrams lost: {r}")
            by.setdefault(point(r), {})[int(r["repeat"])] = float(r["cpu_ns_per_packet"])
            load = max(load, float(r["loadavg_1m"]))
    out = {}
    for key, reps in by.items():
        base = by[key[:-1] + (1,)]
        out[key] = {"cpu": statistics.median(reps.values()),
                    "base": statistics.median(base.values()),
                    "delta": statistics.median(reps[k] - base[k] for k in reps)}
    return out, load


def measured():
    """changes() of the kept data: (path, payload, batch) -> ..."""
    return changes([DATA], lambda r: (r["path"], int(r["payload"]), int(r["sendmmsg"])))


def mhz():
    return json.load(open(DATA + ".machine.json"))["cpu_mhz"]


def read_stack(path=STACK):
    return open(path).read()


def with_costs(text, costs):
    """The profile's text with `costs` set (function -> cycles, and FACTOR ->
    the stack's in_call_factor): replaced where the key is listed, else a
    function added after the last function and the factor before the
    checksum's line."""
    lines = text.split("\n")
    for fn, v in costs.items():
        if fn == FACTOR:
            line = f"{FACTOR}: {v:.3f}  # sendmmsg: knobs.py fit"
            idx = [i for i, ln in enumerate(lines) if ln.startswith(f"{FACTOR}:")]
            if idx:
                lines[idx[0]] = line
            else:
                lines.insert(next(i for i, ln in enumerate(lines) if ln.startswith("cksum")), line)
            continue
        line = f"  {fn}: {v:.1f}  # sendmmsg: knobs.py fit"
        idx = [i for i, ln in enumerate(lines) if re.match(rf"\s+{re.escape(fn)}:", ln)]
        if idx:
            lines[idx[0]] = line
        else:
            last = max(i for i, ln in enumerate(lines) if re.match(r"\s+\S+:\s", ln)
                       and i < next(j for j, l2 in enumerate(lines) if l2.startswith("cksum")))
            lines.insert(last + 1, line)
    return "\n".join(lines)


def point_sets(point):
    """The --set keys of a (path, payload, batch) point of the kept data."""
    path, payload, batch = point
    sets = [f"workload.payload={payload}", f"options.linux.sendmmsg={batch}"]
    return sets + (["workload.connected=true"] if path == "connected" else [])


def simulate(simloop, points, stack_text=None, sets=point_sets):
    """point -> simulated ns per datagram on the validation's experiment,
    with sets(point)'s keys and the profile `stack_text` (None: the
    shipped one)."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        stack = []
        if stack_text is not None:
            stack = ["--set", f"stack={os.path.join(tmp, 'linux-epyc-stack.yaml')}"]
            open(os.path.join(tmp, "linux-epyc-stack.yaml"), "w").write(stack_text)
        for point in points:
            d = os.path.join(tmp, "run")
            cmd = [simloop, "-q", "run", rel(EXPERIMENT), "-o", d, "--set",
                   "workload.packets=4096"] + stack
            for s in sets(point):
                cmd += ["--set", s]
            r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)}: {r.stderr.strip()}")
            j = json.load(open(os.path.join(d, "linux-epyc.json")))
            out[point] = j["result"]["ns_per_packet"]
    return out


def split_per_message():
    """Per-datagram self ns (helpers included) of the sendmmsg functions at
    the training batch (perf; the median over repeats, then the mean over
    the training payloads). At 64 datagrams a call, the call's own share of
    __sys_sendmmsg is a 64th: its self time there is its loop, per message
    (the put_user of each msg_len)."""
    every = list(csv.DictReader(open(SPLIT)))
    scale = plain_time.scaler(every)
    rows = [r for r in every if int(r["sendmmsg"]) == SPLIT_BATCH]
    out = {}
    for fn in [PER_CALL] + PER_MESSAGE:
        per_payload = []
        for payload in TRAIN_PAYLOADS:
            reps = sorted({r["repeat"] for r in rows if int(r["payload"]) == payload})
            per_payload.append(statistics.median(
                sum(float(r["self_ns_per_packet"]) * scale(r) for r in rows if r["charged_to"] == fn
                    and int(r["payload"]) == payload and r["repeat"] == rep) for rep in reps))
        out[fn] = statistics.fmean(per_payload)
    return out


def fit(simloop, meas=None):
    """The per-message functions priced from perf's self time per datagram
    at the training batch (scaled to the plain run's total;
    __sys_sendmmsg's loop with ___sys_sendmsg), as the first message of a
    call pays them: perf's figure is the mean over one first message and
    SPLIT_BATCH - 1 later ones. Then the in-call factor and the call's own
    cost (__sys_sendmmsg) by least squares on the training points'
    measured change, the factor in [0.1, 1] and the cost not below 0. The
    simulated change is linear in both: the runs at factor 1 and 0.1 give
    what the later messages' functions cost. The prices depend on the
    factor, so the fit is repeated until the factor holds still. `meas`:
    another run's measured changes, keyed as measured()'s (default: the
    kept data)."""
    cyc = mhz() / 1e3
    perf = split_per_message()
    if meas is None:
        meas, _ = measured()
    train = [(TRAIN_PATH, p, b) for p in TRAIN_PAYLOADS for b in TRAIN_BATCHES]
    bases = [(TRAIN_PATH, p, 1) for p in TRAIN_PAYLOADS]
    w, lo = 1.0, 0.1
    for rounds in range(1, 9):
        share = (1 + (SPLIT_BATCH - 1) * w) / SPLIT_BATCH
        costs = {PER_CALL: 0.0,
                 PER_MESSAGE[0]: (perf[PER_MESSAGE[0]] + perf[PER_CALL]) * cyc / share,
                 PER_MESSAGE[1]: perf[PER_MESSAGE[1]] * cyc / share}
        text = with_costs(read_stack(), costs)
        full = simulate(simloop, train + bases, with_costs(text, {FACTOR: 1.0}))
        low = simulate(simloop, train, with_costs(text, {FACTOR: lo}))
        # measured change = (full - base) - (1 - w) * later + call / batch, in
        # ns; later = what the later messages' functions cost at factor 1.
        rows = []
        for (path, p, b) in train:
            later = (full[(path, p, b)] - low[(path, p, b)]) / (1 - lo)
            y = meas[(path, p, b)]["delta"] - (full[(path, p, b)] - full[(path, p, 1)]) + later
            rows.append((later, 1.0 / b, y))
        new_w, call = lsq2(rows)
        if call < 0:
            call = 0.0
            new_w = sum(v * y for v, _, y in rows) / sum(v * v for v, _, _ in rows)
        new_w = min(1.0, max(lo, new_w))
        if abs(new_w - w) < 5e-4:
            break
        w = new_w
    else:
        raise SystemExit(f"knobs.py fit: the in-call factor did not hold still in {rounds} "
                         f"rounds (last {w:.4f}, then {new_w:.4f})")
    # The prices above are the ones for w: the factor written is w too.
    costs[PER_CALL] = call * cyc
    costs[FACTOR] = w
    resid = {f"{p} B x{b}": (y - w * v - call * x) * cyc
             for (_, p, b), (v, x, y) in zip(train, rows)}
    return costs, {"perf": perf, "residual": resid, "rounds": rounds}


def lsq2(rows):
    """Least squares of y = a * v + c * x over (v, x, y): (a, c)."""
    svv = sum(v * v for v, _, _ in rows)
    sxx = sum(x * x for _, x, _ in rows)
    svx = sum(v * x for v, x, _ in rows)
    svy = sum(v * y for v, _, y in rows)
    sxy = sum(x * y for _, x, y in rows)
    det = svv * sxx - svx * svx
    return (svy * sxx - sxy * svx) / det, (sxy * svv - svy * svx) / det


def cmd_fit(simloop, write=False):
    costs, d = fit(simloop)
    print(f"perf at {SPLIT_BATCH} a call, ns per datagram: " +
          ", ".join(f"{fn} {v:.1f}" for fn, v in d["perf"].items()))
    print("measured change less the fitted simulated change, cycles per datagram: " +
          ", ".join(f"{k} {v:+.0f}" for k, v in d["residual"].items()))
    print(f"the factor held still after {d['rounds']} rounds")
    print(f"fitted on {', '.join(f'{TRAIN_PATH} {p} B' for p in TRAIN_PAYLOADS)} with "
          f"sendmmsg {', '.join(map(str, TRAIN_BATCHES))} (cycles at {mhz():.2f} MHz):")
    for fn, v in costs.items():
        print(f"  {fn:<24} {v:8.3f}" if fn == FACTOR else f"  {fn:<24} {v:8.1f}")
    if write:
        text = with_costs(read_stack(), costs)
        open(STACK, "w").write(text)
        print(f"wrote {rel(STACK)}")


def rows(simloop):
    meas, load = measured()
    sim = simulate(simloop, sorted(meas))
    out = []
    for (path, payload, batch) in sorted(meas):
        if batch == 1:
            continue
        m = meas[(path, payload, batch)]
        base_k = 1e6 / m["base"]
        meas_k = 1e6 / (m["base"] + m["delta"])
        pred_base = 1e6 / sim[(path, payload, 1)]
        pred_k = 1e6 / sim[(path, payload, batch)]
        out.append({"path": path, "payload": payload, "batch": batch,
                    "set": "train" if is_train(path, payload, batch) else "held out",
                    "base_kpps": base_k, "meas_change": meas_k - base_k,
                    "pred_change": pred_k - pred_base,
                    "abs_err": 100 * (pred_k - meas_k) / meas_k})
    return out, load


def verdict(r, pred):
    """Whether a predicted change meets the claim, and the error in words."""
    meas = r["meas_change"]
    err = pred - meas
    if abs(meas) >= 0.1 * r["base_kpps"]:
        ok = abs(err) <= BOUNDS["change_rel"] / 100 * abs(meas)
        return ok, f"{100 * err / meas:+.1f} % of change"
    ok = abs(err) <= BOUNDS["change_of_rate"] / 100 * r["base_kpps"]
    return ok, f"{100 * err / r['base_kpps']:+.2f} % of rate"


def tables(simloop):
    rs, load = rows(simloop)
    train = [r for r in rs if r["set"] == "train"]
    const = statistics.fmean(r["meas_change"] / r["base_kpps"] for r in train)
    out = [f"Measured: `simloop measure kernel {' '.join(MEASURE)}` "
           f"(data/knob-sendmmsg.csv, load average up to {load:.2f}); predicted: `simloop run "
           f"linux-epyc.yaml --set options.linux.sendmmsg=N` on the installed profile. "
           f"Changes are in kpps against the sendto() (connected: send()) channel of the same "
           f"payload and path; the constant baseline predicts every change as the training "
           f"points' mean relative change ({100 * const:+.2f} % of the rate).", "",
           CHECKED,
           "| path | payload (B) | sendmmsg | set | sendto kpps (CPU) | measured change | "
           "predicted change | model error | constant error | abs error |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    held = [r for r in rs if r["set"] == "held out"]
    fails = []
    for r in rs:
        ok, e = verdict(r, r["pred_change"])
        _, ce = verdict(r, const * r["base_kpps"])
        mark = "" if ok or r["set"] == "train" else " **over**"
        if not ok and r["set"] != "train":
            fails.append(f"{r['path']} {r['payload']} B sendmmsg {r['batch']}: {e}")
        out.append(f"| {r['path']} | {r['payload']} | {r['batch']} | {r['set']} | "
                   f"{r['base_kpps']:.1f} | {r['meas_change']:+.1f} | {r['pred_change']:+.1f} | "
                   f"{e}{mark} | {ce} | {r['abs_err']:+.2f} % |")
    ok_model = sum(verdict(r, r["pred_change"])[0] for r in held)
    ok_const = sum(verdict(r, const * r["base_kpps"])[0] for r in held)
    med = statistics.median(abs(r["abs_err"]) for r in held)
    worst = max(abs(r["abs_err"]) for r in held)
    out += ["", CHECKED, "| held-out points | within the change bound: model | constant | "
            "abs error median / worst |", "|---|---:|---:|---:|",
            f"| {len(held)} | {ok_model} | {ok_const} | {med:.2f} / {worst:.2f} % |", ""]
    s = {"held_out": len(held), "within": ok_model, "abs_median": med, "fails": fails}
    met = lambda ok: "met" if ok else "**not met**"
    out += [CHECKED, "| claim | bound | model | met? |", "|---|---:|---:|---|",
            f"| held-out changes within 10 % of the measured change (1 % of the rate where it "
            f"is under 10 %) | {len(held)} of {len(held)} | {ok_model} of {len(held)} | "
            f"{met(ok_model == len(held))} |",
            f"| absolute error of the rate with the knob, median | {BOUNDS['abs_median']:.0f} % | "
            f"{med:.2f} % | {met(med <= BOUNDS['abs_median'])} |", ""]
    out += split_table()
    return "\n".join(out), s


def split_table():
    """perf's self ns per datagram, function by function, with sendto() and
    with 64 datagrams a call (the training payloads; median over repeats)."""
    rows = list(csv.DictReader(open(SPLIT)))
    scale = plain_time.scaler(rows)
    reps = sorted({r["repeat"] for r in rows})
    per = {}
    for r in rows:
        k = (int(r["payload"]), int(r["sendmmsg"]), r["charged_to"] or "(no caller named)")
        per.setdefault(k, {}).setdefault(r["repeat"], 0.0)
        per[k][r["repeat"]] += float(r["self_ns_per_packet"]) * scale(r)
    def ns(p, b, fn):
        v = per.get((p, b, fn), {})
        return statistics.median(v.get(x, 0.0) for x in reps)
    fns = sorted({k[2] for k in per})
    out = [f"Where the time goes: perf's self ns per datagram (`simloop measure kernel "
           f"{' '.join(MEASURE_SPLIT)}`, data/knob-sendmmsg-split.csv; perf's shares of the thread CPU time with perf off), with "
           f"sendto() and with {SPLIT_BATCH} datagrams a call, the functions whose time moves "
           f"most:", "",
           CHECKED,
           "| function | " + " | ".join(f"{p} B sendto | {p} B x{SPLIT_BATCH}"
                                        for p in TRAIN_PAYLOADS) + " |",
           "|---|" + "---:|" * (2 * len(TRAIN_PAYLOADS))]
    moved = sorted(fns, key=lambda f: -max(abs(ns(p, SPLIT_BATCH, f) - ns(p, 1, f))
                                           for p in TRAIN_PAYLOADS))
    total = {(p, b): sum(ns(p, b, f) for f in fns) for p in TRAIN_PAYLOADS for b in (1, SPLIT_BATCH)}
    for f in moved[:16]:
        out.append(f"| {f} | " + " | ".join(f"{ns(p, 1, f):.1f} | {ns(p, SPLIT_BATCH, f):.1f}"
                                             for p in TRAIN_PAYLOADS) + " |")
    out.append("| all | " + " | ".join(f"{total[(p, 1)]:.0f} | {total[(p, SPLIT_BATCH)]:.0f}"
                                       for p in TRAIN_PAYLOADS) + " |")
    return out + [""]


def cmd_tables(simloop):
    print(tables(simloop)[0], end="")


def splice(text, table):
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:a] + "\n" + table + text[b:]


def cmd_update(simloop):
    table, _ = tables(simloop)
    md_tables.write_atomic(REPORT, splice(open(REPORT).read(), table))
    print(f"wrote {rel(REPORT)}")


def cmd_check(simloop):
    problems = []
    costs, _ = fit(simloop)
    text = read_stack()
    for fn, v in costs.items():
        m = re.search(rf"^\s*{re.escape(fn)}:\s*([-0-9.]+)", text, re.M)
        if m is None or abs(float(m.group(1)) - v) > (0.00051 if fn == FACTOR else 0.051):
            problems.append(f"{rel(STACK)}: {fn} is {m.group(1) if m else 'missing'}, the fit "
                            f"says {f'{v:.3f}' if fn == FACTOR else f'{v:.1f}'} (knobs.py fit --write)")
    table, s = tables(simloop)
    report = open(REPORT).read()
    if splice(report, table) != report:
        problems.append(f"{rel(REPORT)}: its tables are not what the kept data give "
                        "(knobs.py update)")
    # The claims are reported, met or not, in the tables above: what the
    # report says of them is what the kept data say.
    for p in problems:
        print(p)
    return 1 if problems else 0


def main():
    cmds = {"measure": cmd_measure, "fit": cmd_fit, "tables": cmd_tables, "update": cmd_update,
            "check": cmd_check}
    if len(sys.argv) < 3 or sys.argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    simloop = os.path.abspath(sys.argv[2])
    if sys.argv[1] == "fit":
        return cmd_fit(simloop, write="--write" in sys.argv[3:]) or 0
    return cmds[sys.argv[1]](simloop) or 0


if __name__ == "__main__":
    sys.exit(main())
