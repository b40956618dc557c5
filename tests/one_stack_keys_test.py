#!/usr/bin/python3
"""A key of one stack swept beside a stack axis:

- in a grid beside `stack`, it is refused before any run, naming the key,
  the stack that does not take it and the zip that would say it;
- in the zip with `stack`, a value for the stack that does not take it is
  refused, and `~` there runs the point without it: its results leave the
  key's cell empty, the other stack's points differ by the key, and
  shards, --resume and --list work as for any sweep;
- `~` beside a stack that takes the key keeps the experiment's own value.

    one_stack_keys_test.py SIMLOOP WORK_DIR
"""
import csv
import pathlib
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)

HEAD = """name: keys
machine: athlon-xp-2700
stack: freebsd6
workload: {payload: 64, packets: 3000, dest: broadcast}
options: {copy: m_copy}
sweep:
"""


def study(name, sweep):
    f = WORK / f"{name}.yaml"
    f.write_text(HEAD.replace("name: keys", f"name: {name}") + sweep)
    return f


def run(*args):
    return subprocess.run([SIMLOOP, *map(str, args)], capture_output=True, text=True, cwd=WORK)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# A grid of a BSD key beside the stack axis: refused before any run.
grid = study("grid", """  grid:
    stack: [freebsd6, linux-epyc-stack]
    options.copy: [m_copy, m_dup]
""")
r = run("sweep", grid, "-o", WORK / "grid-out")
check(r.returncode == 2, f"a grid of options.copy beside stack exits 2: {r.returncode} {r.stderr[-500:]}")
check("options.copy" in r.stderr and "linux-epyc-stack" in r.stderr and "zip" in r.stderr
      and "~" in r.stderr, f"the refusal names the key, the stack and the zip with ~: {r.stderr[-500:]}")
check(not (WORK / "grid-out" / "grid-sweep.csv").exists(), "no results were written")

# In the zip, a Linux value of a BSD key: refused.
bad = study("bad", """  zip:
    stack: [freebsd6, freebsd6, linux-epyc-stack]
    options.copy: [m_copy, m_dup, m_copy]
""")
r = run("sweep", bad, "-o", WORK / "bad-out")
check(r.returncode == 2 and "options.copy=m_copy beside stack=linux-epyc-stack" in r.stderr
      and "give ~" in r.stderr, f"a Linux value of options.copy is refused: {r.returncode} {r.stderr[-500:]}")

# In the zip with ~ at the Linux point: it runs.
zip_ = study("zip", """  zip:
    stack: [freebsd6, freebsd6, linux-epyc-stack]
    options.copy: [m_copy, m_dup, ~]
  grid:
    workload.payload: [64, 512]
""")
out = WORK / "zip-out"
r = run("sweep", zip_, "-j", "2", "-o", out)
check(r.returncode == 0, f"the zip with ~ runs: {r.returncode} {r.stderr[-800:]}")
res = rows(out / "zip-sweep.csv") if r.returncode == 0 else []
check(len(res) == 6 and all(x["status"] == "ok" for x in res), f"six runs ok: {[x['status'] for x in res]}")
cells = sorted({(x["stack"], x["options.copy"]) for x in res})
check(cells == [("freebsd6", "m_copy"), ("freebsd6", "m_dup"), ("linux-epyc-stack", "")],
      f"the Linux rows leave options.copy empty: {cells}")
bsd = {(x["options.copy"], x["workload.payload"]): float(x["kpps"]) for x in res if x["stack"] == "freebsd6"}
check(len(bsd) == 4 and bsd[("m_copy", "512")] != bsd[("m_dup", "512")],
      f"the BSD points differ by options.copy: {bsd}")

# --list, shards and resume.
r = run("sweep", zip_, "--list", "-o", WORK / "list-out")
listed = [ln for ln in r.stdout.splitlines() if ln and not ln.startswith("#")][1:]
check(r.returncode == 0 and len(listed) == 6
      and sorted(ln.rsplit(",", 2)[1:] for ln in listed)[-1] == ["linux-epyc-stack", "~"],
      f"--list prints six runs, ~ where a point leaves the key out: {r.returncode} {r.stdout[-400:]} {r.stderr[-300:]}")
shards = WORK / "shards"
for k in (1, 2):
    r = run("sweep", zip_, "-q", "--shard", f"{k}/2", "-o", shards)
    check(r.returncode == 0, f"shard {k}/2: {r.stderr[-300:]}")
r = run("merge", shards / "merged.csv", *sorted(shards.glob("zip-sweep-shard-*-of-2.csv")))
same = ("point", "stack", "options.copy", "workload.payload", "kpps")
if check(r.returncode == 0, f"merge: {r.stderr[-300:]}"):
    check([tuple(x[k] for k in same) for x in rows(shards / "merged.csv")]
          == [tuple(x[k] for k in same) for x in res], "the shards merged are the sweep")
lines = (out / "zip-sweep.csv").read_text().splitlines(keepends=True)
(out / "zip-sweep.csv").write_text("".join(lines[:3]))
r = run("sweep", zip_, "-q", "--resume", "-o", out)
check(r.returncode == 0 and [tuple(x[k] for k in same) for x in rows(out / "zip-sweep.csv")]
      == [tuple(x[k] for k in same) for x in res], f"a resume completes it: {r.stderr[-300:]}")

# ~ beside a stack that takes the key: the experiment's own value (m_copy).
keep = study("keep", """  zip:
    stack: [freebsd6, freebsd6]
    options.copy: [~, m_copy]
""")
r = run("sweep", keep, "-o", WORK / "keep-out")
if check(r.returncode == 0, f"~ on the BSD stack runs: {r.stderr[-400:]}"):
    k = rows(WORK / "keep-out" / "keep-sweep.csv")
    check(len(k) == 2 and k[0]["kpps"] == k[1]["kpps"] and k[0]["options.copy"] == "",
          f"~ keeps the experiment's value: {[(x['options.copy'], x['kpps']) for x in k]}")
finish()
