#!/usr/bin/python3
"""No plot averages what differs. Each plot kind of result rows is fed rows
that differ in one key that says what ran (the stack, the machine, the
experiment, the source, the destination, alignment, loop copy, and a key a
sweep varied), one value of it at 100 kpps and 1000 cycles of syscall per
packet, the other at 300 and 3000, over two payloads with two repeats each.
Every kind must draw the two apart (as lines, labels, bars, boxes or
panels), naming both values somewhere a reader sees them, and never draw
their average (200 kpps, 2000 cycles); or refuse, naming the key and how to
choose. Then: keys that differ independently are refused by name with
--where and --series; --series draws a key apart on every kind; the stack
and machine are in the labels or the title.

    plot_keys_test.py SIMLOOP WORK_DIR
"""
import csv
import json
import pathlib
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)


def run(*args):
    return subprocess.run([SIMLOOP, *map(str, args)], capture_output=True, text=True, cwd=WORK)


# A real run's row, for its columns.
r = run("-q", "run", "--set", "workload.packets=2000", "-o", WORK / "real")
check(r.returncode == 0, f"a run for its columns: {r.stderr}")
with open(WORK / "real" / "seed-athlon.csv", newline="") as f:
    TEMPLATE = next(csv.DictReader(f))
RUN_COLUMNS = list(TEMPLATE)

# key: (value A, value B); each a column of a run's row, or a swept key.
KEYS = {
    "stack": ("freebsd6", "linux-epyc-stack"),
    "machine": ("athlon-xp-2700", "linux-epyc-machine"),
    "experiment": ("first", "second"),
    "source": ("simulated", "native"),
    "dest": ("wire", "loopback"),
    "align": ("none", "copy-down"),
    "copy": ("m_copy", "m_dup"),
    "interrupts.handler_cycles": ("1000", "4000"),
}
KPPS, CYCLES = (100.0, 300.0), (1000.0, 3000.0)
AVERAGES = (200.0, 2000.0)


def row(key, i, payload, repeat):
    out = dict(TEMPLATE)
    for c in out:
        if c.startswith("cycles_"):
            out[c] = "0"
    out.update({"payload": str(payload), "kpps": str(KPPS[i]), "cycles_syscall": str(CYCLES[i]),
                "cycles_per_packet": str(CYCLES[i]), "seed": str(repeat + 1), "outcome": "ok"})
    if key in out:
        out[key] = KEYS[key][i]
    return out


def write(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header)
        w.writeheader()
        w.writerows(rows)


def files_for(key):
    """The rows of one key's two values: two run CSVs (one per value), or one
    sweep CSV where the key is swept."""
    if key in RUN_COLUMNS:
        paths = []
        for i in (0, 1):
            p = WORK / f"{key}-{i}.csv"
            write(p, RUN_COLUMNS, [row(key, i, pl, rep) for pl in (18, 256) for rep in (0, 1)])
            paths.append(p)
        return paths
    p = WORK / f"{key}-sweep.csv"
    header = ["point", "repeat", "point_hash", key, "workload.payload"] + \
        [c for c in RUN_COLUMNS if c != "payload"] + ["status", "error", "process_s"]
    rows, point = [], 0
    for i in (0, 1):
        for pl in (18, 256):
            for rep in (0, 1):
                x = row(key, i, pl, rep)
                x.update({"point": str(point), "repeat": str(rep), "point_hash": f"{point:016x}",
                          key: KEYS[key][i], "workload.payload": str(pl), "status": "ok", "error": "",
                          "process_s": "0.1"})
                del x["payload"]
                rows.append(x)
            point += 1
    write(p, header, rows)
    return [p]


# A measured run of the same paths, for the scatter.
MEASURED = WORK / "native.csv"
write(MEASURED, ["source", "repeat", "payload", "dest", "align", "copy", "kpps"],
      [{"source": "native", "repeat": rep, "payload": pl, "dest": d, "align": a, "copy": c, "kpps": 150}
       for pl in (18, 256) for rep in (0, 1) for d in ("wire", "loopback") for a in ("none", "copy-down")
       for c in ("m_copy", "m_dup")])
KINDS = {"payload": [], "breakdown": [], "distribution": [], "crossover": [],
         "padding": ["--x", "payload"], "scatter": [MEASURED]}


def plot(files, kind, extra, stem):
    desc = WORK / f"{stem}.json"
    r = run("plot", *files, "--kind", kind, *extra, "-o", WORK / stem, "--describe", desc)
    return r, (json.load(open(desc)) if r.returncode == 0 else None)


def numbers(d):
    """Every value drawn as data: line points, markers, bars, the runs of boxes."""
    out = []
    for p in d["panels"]:
        for ln in p.get("lines", []):
            out += ln.get("y", [])
        for m in p.get("markers", []):
            out += m.get("y", [])
        for b in p.get("bars", []):
            out += b.get("values", [])
        for g in p.get("groups", []):
            out += g.get("kpps", [])
    return [v for v in out if isinstance(v, (int, float))]


def texts(d):
    """Everything a reader sees named: titles, legends, annotations, labels, panels."""
    out = list(d["facets"])
    for p in d["panels"]:
        out += [p["title"], *p["legend"], *p["annotations"], *(x["text"] for x in p["labels"])]
        out += [m.get("label", "") for m in p.get("markers", [])]
        out += [g.get("label", "") for g in p.get("groups", [])]  # a breakdown's groups, named above them
    return " | ".join(out)


for key, values in KEYS.items():
    files = files_for(key)
    for kind, extra in KINDS.items():
        if kind == "scatter" and key == "source":
            continue  # the scatter's axes are its sources
        stem = f"{kind}-{key}"
        r, d = plot(files, kind, list(extra), stem)
        print(f"{kind} over {key}: " + (f"exit {r.returncode}" if r.returncode else
                                        f"{len(d['panels'])} panel(s), facets {d['facets']}"))
        if r.returncode != 0:
            check(r.returncode == 2 and key in r.stderr and "--where" in r.stderr,
                  f"{kind} over rows differing in {key}: refused, naming it and --where: "
                  f"{r.returncode} {r.stderr[-300:]}")
            continue
        drawn = numbers(d)
        averaged = [v for v in drawn if any(abs(v - a) < 1e-6 for a in AVERAGES)]
        check(not averaged, f"{kind} over rows differing in {key}: never their average ({averaged})")
        wanted = CYCLES if kind == "breakdown" else KPPS
        if kind != "scatter" or key not in ("source",):
            check(all(any(abs(v - w) < 1e-6 for v in drawn) for w in wanted),
                  f"{kind} over rows differing in {key}: both values drawn ({sorted(set(drawn))[:8]})")
        seen = texts(d)
        check(all(v in seen for v in values),
              f"{kind} over rows differing in {key}: both {values} named ({seen[:300]})")
        # And with --series of it, one panel with both values apart.
        if kind in ("crossover",) and key == "align":
            continue  # align is what the crossover compares already
        r, d = plot(files, kind, list(extra) + ["--series", key], stem + "-series")
        check(r.returncode == 0 and d and len(d["panels"]) == 1 and all(v in texts(d) for v in values)
              and not [v for v in numbers(d) if any(abs(v - a) < 1e-6 for a in AVERAGES)],
              f"{kind} --series {key}: one panel, both values named, none averaged: {r.returncode} "
              f"{r.stderr[-300:]}")

# The stack and machine the rows share are in the title.
r, d = plot(files_for("experiment"), "payload", [], "shared")
check(d and all("stack freebsd6" in p["title"] and "machine athlon-xp-2700" in p["title"] for p in d["panels"]),
      f"the shared stack and machine in the title: {d and [p['title'] for p in d['panels']]}")

# Two keys that differ independently of each other, neither of which the
# crossover shows: refused, naming both, with --where and --series.
both = []
for s, stack in enumerate(KEYS["stack"]):
    for m, machine in enumerate(KEYS["machine"]):
        for pl in (18, 256):
            x = row("stack", s, pl, 0)
            x.update({"stack": stack, "machine": machine, "kpps": str(100 + 100 * s + 10 * m)})
            both.append(x)
write(WORK / "both.csv", RUN_COLUMNS, both)
r, _ = plot([WORK / "both.csv"], "crossover", [], "both")
check(r.returncode == 2 and "stack" in r.stderr and "machine" in r.stderr and "--where" in r.stderr
      and "--series" in r.stderr, f"two independent keys refused by name: {r.returncode} {r.stderr}")
r, d = plot([WORK / "both.csv"], "crossover", ["--series", "stack"], "both-series")
check(r.returncode == 0 and d and d["facets"] == ["machine=athlon-xp-2700", "machine=linux-epyc-machine"],
      f"one drawn as lines, the other a panel each: {r.returncode} {r.stderr} {d and d['facets']}")
# Keys that differ together (a machine zipped with its stack) are one: named together.
together = [dict(x) for x in both if KEYS["stack"].index(x["stack"]) == KEYS["machine"].index(x["machine"])]
write(WORK / "together.csv", RUN_COLUMNS, together)
r, d = plot([WORK / "together.csv"], "crossover", [], "together")
check(r.returncode == 0 and d and d["facets"] == ["machine=athlon-xp-2700,stack=freebsd6",
                                                  "machine=linux-epyc-machine,stack=linux-epyc-stack"],
      f"keys that differ together are one panel each: {r.returncode} {r.stderr} {d and d['facets']}")
r, d = plot([WORK / "together.csv"], "payload", [], "together-lines")
check(d and sorted(ln["label"] for ln in d["panels"][0]["lines"])
      == ["simulated wire none m_copy machine=athlon-xp-2700 stack=freebsd6",
          "simulated wire none m_copy machine=linux-epyc-machine stack=linux-epyc-stack"],
      f"a line per stack, with its machine: {d and [ln['label'] for ln in d['panels'][0]['lines']]}")

finish()
