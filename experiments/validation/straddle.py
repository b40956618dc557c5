#!/usr/bin/env python3
"""What cachegrind's rule for an instruction that spans two lines changes.

cachegrind counts at most one I1 miss per instruction fetch, even when the
instruction spans two lines and both miss. simloop's I-cache model fetches
byte ranges line by line, so it would count two there. This script replays
a harness's real instruction stream (valgrind --tool=lackey --trace-mem=yes)
through an LRU cache both ways, for two packet counts, and prints the misses
per packet of each rule: their difference is all the rule can change.

    straddle.py HARNESS [harness options] --I1 SIZE,ASSOC,LINE [--I1 ...]

Example: straddle.py build/simloop-harness -l 1024 --dest broadcast --I1 4096,1,64
Needs valgrind; about half a minute a path (two traced runs of 1020 and 1060
packets).
"""
import os
import subprocess
import sys
import tempfile

WARMUP, PACKETS = 1000, (20, 60)


def misses(trace, size, assoc, line):
    """(misses counting a spanning fetch once, counting each line) of a trace."""
    sets = size // (line * assoc)
    cache = [[] for _ in range(sets)]

    def touch(ln):
        s = cache[ln % sets]
        if ln in s:
            s.remove(ln)
            s.insert(0, ln)
            return False
        s.insert(0, ln)
        if len(s) > assoc:
            s.pop()
        return True

    once = each = 0
    with open(trace) as f:
        for text in f:
            if not text.startswith("I "):
                continue
            addr, size_ = text[2:].strip().split(",")
            a, n = int(addr, 16), int(size_)
            first, last = a // line, (a + n - 1) // line
            m1 = touch(first)
            m2 = touch(last) if last != first else False
            once += m1 or m2
            each += m1 + m2
    return once, each


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    harness, rest = args[0], args[1:]
    geoms, opts = [], []
    i = 0
    while i < len(rest):
        if rest[i] == "--I1" and i + 1 < len(rest):
            geoms.append(tuple(int(x) for x in rest[i + 1].split(",")))
            i += 2
        else:
            opts.append(rest[i])
            i += 1
    if not geoms:
        sys.exit("straddle.py: give at least one --I1 SIZE,ASSOC,LINE")
    with tempfile.TemporaryDirectory() as tmp:
        traces = []
        for n in PACKETS:
            t = os.path.join(tmp, f"lackey-{n}.txt")
            subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={t}",
                            harness, *opts, "-n", str(n), "--warmup", str(WARMUP)],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            traces.append(t)
        span = PACKETS[1] - PACKETS[0]
        print(f"## {os.path.basename(harness)} {' '.join(opts)}")
        print("I1 geometry   misses/packet, spanning fetch once (cachegrind)   each line   difference")
        for g in geoms:
            lo, hi = misses(traces[0], *g), misses(traces[1], *g)
            once, each = (hi[0] - lo[0]) / span, (hi[1] - lo[1]) / span
            print(f"{','.join(map(str, g)):>12}   {once:10.2f}   {each:10.2f}   {each - once:+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
