#!/usr/bin/python3
"""Files of one idea: no source file of the program, its plots or its
scripts is longer than 700 lines. A file that grows past the cap is split
along its ideas (sweep/plan.cc from runner.cc, sweep/store_lock.cc from
store.cc, the result columns' values beside their docs), not trimmed.

Tests are not held to it: a scenario file reads best whole.

usage: file_size_test.py SOURCE_DIR"""
import pathlib
import sys

CAP = 700
ROOMS = ("sim", "models", "plots", "fuzz", "scripts", "bench")
SUFFIXES = {".cc", ".h", ".py", ".sh", ".in"}

src = pathlib.Path(sys.argv[1])
over = []
count = 0
for room in ROOMS:
    for f in sorted((src / room).rglob("*")):
        if f.suffix not in SUFFIXES or not f.is_file():
            continue
        count += 1
        n = sum(1 for _ in f.open(encoding="utf-8", errors="replace"))
        if n > CAP:
            over.append((n, f.relative_to(src)))
for n, f in sorted(over, reverse=True):
    print(f"FAIL {f}: {n} lines, over the cap of {CAP}")
if count == 0:
    print("FAIL no source files found under", ", ".join(ROOMS))
    sys.exit(1)
print(f"{count} files, {len(over)} over {CAP} lines")
sys.exit(1 if over else 0)
