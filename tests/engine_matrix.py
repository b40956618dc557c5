#!/usr/bin/python3
"""Every combination of the engine's options ends with a named outcome and
accounts for every cycle.

For the minimal experiment (a name, a machine, a stack) and for every
combination of destination x interrupts x alignment policy x loop copy x
receiver x I-cache model, plus the interrupt settings that once aborted
runs, and for every shipped experiment, `simloop run` with a few thousand
packets must:
  - exit 0 (outcome ok) or 3 (a named early end, e.g. alignment-fault);
  - write a result row whose cycles_<stage> columns sum to
    cycles_per_packet, with nothing left unexplained (cycles_idle is 0).

    engine_matrix.py SIMLOOP [--packets N] [-j JOBS]
"""
import argparse
import concurrent.futures
import itertools
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUTCOMES = {"ok": 0, "alignment-fault": 3, "error": 3}

MINIMAL = "name: minimal\nmachine: athlon-xp-2700\nstack: freebsd6\n"
# The Linux stack, with a test profile (round prices, every function priced).
LINUX = f"name: minimal-linux\nmachine: athlon-xp-2700\nstack: {ROOT}/tests/data/stacks/linux-test.yaml\n"


# The I-cache model on, with the synthetic kernel and ttcp's user code.
CACHE_SETS = ["machine.cache.enabled=true", "layout.kernel=freebsd6-i386-synthetic",
              "layout.user=ttcp-user"]


def path_sets(dest, irq, align, receive):
    """A path's keys: where the datagrams go, interrupts (priced when on),
    the alignment policy and whether a receiver reads them."""
    sets = [f"workload.dest={dest}", f"interrupts.enabled={str(irq).lower()}",
            f"options.align={align}", f"workload.receive={str(receive).lower()}"]
    if irq:
        sets.append("interrupts.handler_cycles=2000")
    return sets


def listed_models(simloop):
    """The optional timing models of models::OptionalModels, as the schema
    lists them: every machine section with an `enabled` key but the I-cache."""
    ref = subprocess.run([simloop, "config-reference"], capture_output=True, text=True,
                         check=True).stdout
    found = re.findall(r"`machine\.([a-z0-9_]+)\.enabled`", ref)
    return sorted(set(found) - {"cache"})


def cases(packets, models=()):
    out = []
    for dest, irq, align, copy, receive, cache in itertools.product(
            ["loopback", "broadcast", "wire", "self"], [False, True],
            ["none", "copy-down", "strict", "copy-down-unsafe"], ["m_copy", "m_dup"],
            [True, False], [False, True]):
        sets = path_sets(dest, irq, align, receive) + [f"options.copy={copy}"]
        if cache:
            sets += CACHE_SETS
        name = f"{dest}/irq={int(irq)}/{align}/{copy}/rx={int(receive)}/cache={int(cache)}"
        out.append((name, None, sets))
    # The optional timing models on, small enough to stall often: their
    # stages must still account for every cycle, on every path.
    for dest, irq, cache in itertools.product(["loopback", "broadcast", "wire", "self"],
                                              [False, True], [False, True]):
        sets = [f"workload.dest={dest}", f"interrupts.enabled={str(irq).lower()}",
                "interrupts.handler_cycles=2000", "machine.dtlb.enabled=true",
                "machine.dtlb.entries=2", "machine.branch.enabled=true",
                "machine.branch.btb_entries=4", "machine.branch.ras_depth=2"]
        if cache:
            sets += CACHE_SETS
        out.append((f"models/{dest}/irq={int(irq)}/cache={int(cache)}", None, sets))
    # Each listed model on by itself, on every destination: its stage must
    # account for its cycles alone, and its result must not depend on where
    # the process put its data (each run is made twice, in environments of
    # different sizes, and must give the same row).
    for model, dest, cache in itertools.product(models, ["loopback", "broadcast", "wire", "self"],
                                                [False, True]):
        sets = [f"workload.dest={dest}", "interrupts.enabled=true",
                "interrupts.handler_cycles=2000", f"machine.{model}.enabled=true"]
        if cache:
            sets += CACHE_SETS
        out.append((f"model={model}/{dest}/cache={int(cache)}", None, sets + [TWICE]))
    # Interrupt settings that once aborted or stalled runs.
    irq = ["interrupts.enabled=true"]
    for extra in (["interrupts.handler_cycles=2000"],
                  ["interrupts.handler_cycles=2000", "interrupts.moderation.interval_s=0"],
                  ["interrupts.handler_cycles=3e5", "interrupts.moderation.interval_s=125e-6"],
                  ["interrupts.handler_cycles=2000", "machine.clock_hz=1e6"],
                  ["interrupts.handler_cycles=2000", "options.nic_ring=4",
                   "workload.enobufs_sleep_s=1e-4"],
                  ["interrupts.handler_cycles=1e6", "options.nic_ring=8",
                   "interrupts.moderation.interval_s=1e-4", "workload.enobufs_sleep_s=1e-3"]):
        for dest in ("wire", "broadcast"):
            out.append((f"{dest}/" + ",".join(extra), None, irq + extra + [f"workload.dest={dest}"]))
    for f in sorted(ROOT.glob("experiments/*.yaml")) + sorted(ROOT.glob("experiments/seed/*.yaml")):
        out.append((str(f.relative_to(ROOT)), f, []))
    # Random page colouring with packets still queued at the end (the stack
    # frees them through the I-cache's page map as the run is torn down).
    variance = ROOT / "experiments/seed/variance.yaml"
    for dest in ("loopback", "broadcast"):
        out.append((f"variance/{dest}/rx=0", variance,
                    [f"workload.dest={dest}", "workload.receive=false"]))
    # The Linux stack on every destination, interrupts on and off, both
    # alignment policies it takes, with and without a receiver, sendto()
    # or a connected send(), the optional models on and off.
    for dest, irq, align, receive, connected, models in itertools.product(
            ["loopback", "broadcast", "wire", "self"], [False, True], ["none", "strict"],
            [True, False], [False, True], [False, True]):
        sets = path_sets(dest, irq, align, receive) + [
            f"workload.connected={str(connected).lower()}"]
        if models:
            sets += ["machine.dtlb.enabled=true", "machine.dtlb.entries=2",
                     "machine.branch.enabled=true", "machine.branch.btb_entries=4"]
        name = (f"linux/{dest}/irq={int(irq)}/{align}/rx={int(receive)}/conn={int(connected)}"
                f"/models={int(models)}")
        out.append((name, LINUX, sets))
    return [(n, f, s + [f"workload.packets={packets}", "workload.duration_s=0"]) for n, f, s in out]


# A marker in a case's sets: run it twice and compare the rows.
TWICE = "#twice"


def simulate(simloop, exp, sets, tmp, env_pad=0):
    """One run: its process and its result row (None if it wrote none).
    `env_pad` bytes of environment move where the process puts its data."""
    d = pathlib.Path(tempfile.mkdtemp(dir=tmp))
    if exp is None or isinstance(exp, str):
        text = exp or MINIMAL
        exp = d / "minimal.yaml"
        exp.write_text(text)
    cmd = [simloop, "-q", "run", str(exp), "-o", str(d)] + [a for s in sets for a in ("--set", s)]
    env = dict(os.environ, SIMLOOP_TEST_PAD="x" * env_pad)
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    results = list(d.glob("*.json"))
    row = json.loads(results[0].read_text())["result"] if results else None  # full precision
    return p, row


def run(simloop, name, exp, sets, tmp):
    twice = TWICE in sets
    sets = [s for s in sets if s != TWICE]
    p, row = simulate(simloop, exp, sets, tmp)
    problems = []
    if row is None:
        return [f"{name}: exit {p.returncode}, no result; {p.stderr.strip()[-300:]}"]
    if twice:
        _, again = simulate(simloop, exp, sets, tmp, env_pad=40000)
        differ = sorted(k for k in set(row) | set(again or {})
                        if k != "wall_s" and row.get(k) != (again or {}).get(k))
        if differ:
            problems.append(f"the same run again differs in {', '.join(differ)}: the result "
                            "depends on where the process put its data")
    outcome = row["outcome"]
    if outcome not in OUTCOMES:
        problems.append(f"unnamed outcome {outcome!r}")
    elif p.returncode != OUTCOMES[outcome]:
        problems.append(f"exit {p.returncode} for outcome {outcome}")
    cpp = float(row["cycles_per_packet"])
    stages = {k: float(v) for k, v in row.items()
              if k.startswith("cycles_") and k != "cycles_per_packet"}
    total = sum(stages.values())
    if abs(total - cpp) > 1e-6 * max(cpp, 1):
        problems.append(f"stages sum to {total}, cycles_per_packet is {cpp}")
    if abs(stages.get("cycles_idle", 0)) > 1e-6 * max(cpp, 1):
        problems.append(f"{stages['cycles_idle']} cycles per packet unexplained (cycles_idle)")
    if outcome == "ok" and int(row["packets"]) <= 0:
        problems.append("outcome ok but no packet sent")
    if "i1_misses_per_packet" in row:
        # The I-cache model's shortcuts (the replay, the fetch model's memo)
        # must change nothing: the same run with every event followed and
        # every line fetched gives the same row.
        q, full = simulate(simloop, exp, sets + ["engine.icache_replay=false"], tmp)
        if full is None or q.returncode != p.returncode:
            problems.append(f"without replay: exit {q.returncode}; {q.stderr.strip()[-300:]}")
        else:
            differ = sorted(k for k in set(row) | set(full)
                            if k != "wall_s" and row.get(k) != full.get(k))
            if differ:
                problems.append(f"replay changes {', '.join(differ)}")
    return [f"{name}: {x}" for x in problems]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("simloop")
    ap.add_argument("--packets", type=int, default=3000)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    a = ap.parse_args()
    todo = cases(a.packets, listed_models(a.simloop))
    failures = []
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for probs in pool.map(lambda c: run(a.simloop, *c, tmp), todo):
            failures += probs
    for f in failures:
        print(f)
    print(f"{len(todo)} runs, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
