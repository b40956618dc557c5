#!/usr/bin/env python3
"""Taken conditional branches per hot 64-byte line, from a callgrind profile
taken with --collect-jumps=yes --dump-instr=yes.

A K7 keeps branch selectors only in L1, so each taken branch in a line that
comes back from L2 mispredicts once; this counts how many such branches a hot
line of real stack code holds. Hot: run at least 0.5 times per packet."""
import argparse
import re
import sys

JCND = re.compile(r"jcnd=(\d+)/(\d+) (\S+)")


def position(token, last):
    """A callgrind instruction position: absolute, relative (+/-) or '*'."""
    if token == "*":
        return last
    if token[0] in "+-":
        return last + int(token, 0)
    return int(token, 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("profile", help="callgrind output file")
    ap.add_argument("--packets", type=int, required=True, help="packets the profiled run sent")
    ap.add_argument("--line-bytes", type=int, default=64)
    a = ap.parse_args()
    with open(a.profile) as f:
        text = f.read().splitlines()
    if not any(line.startswith("positions: instr") for line in text):
        sys.exit(f"{a.profile}: not a callgrind profile with --dump-instr=yes")
    pos = 0
    pending = None  # the jump a jcnd= line announces, for the next cost line
    taken = {}  # jump instruction -> times taken
    runs = {}  # instruction -> times run
    for line in text:
        if line.startswith("jcnd="):
            m = JCND.match(line)
            pending = (int(m.group(1)), position(m.group(3), pos))
            continue
        if not line or line[0] not in "0123456789+-*":
            continue
        fields = line.split()
        pos = position(fields[0], pos)
        if len(fields) >= 3:
            runs[pos] = runs.get(pos, 0) + int(fields[2])
        if pending is not None:
            taken[pos] = taken.get(pos, 0) + pending[0]
            pending = None
    hot = {x for x, n in runs.items() if n >= 0.5 * a.packets}
    lines = {x // a.line_bytes for x in hot}
    sites = [x for x in hot if taken.get(x, 0) >= 0.5 * a.packets]
    if not lines:
        sys.exit(f"{a.profile}: no instruction ran {a.packets // 2} times; wrong --packets?")
    print(f"hot instructions {len(hot)} in {len(lines)} lines of {a.line_bytes} bytes; "
          f"conditional branches taken at least every other packet: {len(sites)}; "
          f"per hot line: {len(sites) / len(lines):.2f}")


if __name__ == "__main__":
    main()
