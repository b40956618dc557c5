#!/usr/bin/env python3
"""The code layout of this machine's kernel UDP path, read from /proc/kallsyms.

Every kernel symbol that configs/stacks/linux-perf-symbols.yaml maps to a
function of the simulated Linux stack is placed at its running address
(KASLR included: the I-cache is indexed by these virtual addresses), its
size the gap to the next text symbol. Helpers the table leaves unmapped
(fdget, the slab allocator, the copy routines...) are placed too, owned by
the function perf charged most of their samples to in the kept split
(data/split.csv); the copy routines own the copy, and the system call's
entry and exit symbols own syscall_entry and syscall_exit.

A PREDICTION: nothing measures which bytes of these functions run, so each
function's hot bytes are its whole size (the layout's default). Run as root
(kallsyms shows zeros to others).

Usage: kallsyms_layout.py [--kallsyms FILE] [--symbols YAML] [--split CSV] -o OUT.yaml
"""
import argparse
import collections
import csv
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

# The copy routines and the system call's own code, by owner.
FIXED_OWNERS = {
    "copy": ["_copy_from_iter", "_copy_to_iter", "rep_movs_alternative", "copy_user_generic"],
    "syscall_entry": ["entry_SYSCALL_64", "entry_SYSCALL_64_after_hwframe", "do_syscall_64",
                      "x64_sys_call"],
    "syscall_exit": ["syscall_exit_to_user_mode", "exit_to_user_mode_loop",
                     "syscall_return_via_sysret", "entry_SYSRETQ_unsafe_stack",
                     "entry_SYSRETQ_end"],
}


def fail(msg):
    print(f"kallsyms_layout.py: {msg}", file=sys.stderr)
    sys.exit(2)


def read_symbol_map(path):
    """function -> [kernel symbols], from the functions: section (flow lists)."""
    out, section, cur = {}, None, None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].rstrip()
            if not line:
                continue
            if not line.startswith(" ") and line.endswith(":"):
                section = line[:-1]
                continue
            if not line.startswith(" "):
                section = line.split(":", 1)[0]
                continue
            if section != "functions":
                continue
            m = re.match(r"\s+([A-Za-z0-9_.]+):\s*\[(.*)$", line)
            if m:
                cur = m.group(1)
                out[cur] = []
                rest = m.group(2)
            elif cur is not None:
                rest = line.strip()
            else:
                fail(f"{path}:{n}: expected 'FUNCTION: [SYMBOL, ...]'")
            out[cur] += [s.strip() for s in rest.replace("]", "").split(",") if s.strip()]
    if not out:
        fail(f"{path}: no functions: section")
    return out


def read_kallsyms(path):
    """Text symbols sorted by address: [(address, name)]."""
    syms = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3 or parts[1] not in "tTwW":
                continue
            addr = int(parts[0], 16)
            if addr:
                syms.append((addr, parts[2]))
    if not syms:
        fail(f"{path}: no text symbol with an address (run as root)")
    syms.sort()
    return syms


def helper_owners(split_csv, min_samples):
    """unmapped symbol -> the function perf charged most of its samples to
    (symbols with fewer than min_samples samples in all are left out)."""
    votes = collections.defaultdict(collections.Counter)
    with open(split_csv) as f:
        for r in csv.DictReader(f):
            if r["kind"] == "unmapped" and r["charged_to"] not in ("", "user"):
                votes[r["name"]][r["charged_to"]] += int(r["samples"])
    return {s: c.most_common(1)[0][0] for s, c in votes.items() if sum(c.values()) >= min_samples}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kallsyms", default="/proc/kallsyms")
    ap.add_argument("--symbols", default=os.path.join(ROOT, "configs/stacks/linux-perf-symbols.yaml"))
    ap.add_argument("--split", default=os.path.join(HERE, "data/split.csv"))
    ap.add_argument("--min-samples", type=int, default=50,
                    help="leave out helpers with fewer samples than this in the split")
    ap.add_argument("--name", default="linux-kallsyms")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()

    owner_of = {}
    for fn, syms in read_symbol_map(a.symbols).items():
        for s in syms:
            owner_of[s] = fn
    for owner, syms in FIXED_OWNERS.items():
        for s in syms:
            owner_of.setdefault(s, owner)
    for s, fn in helper_owners(a.split, a.min_samples).items():
        owner_of.setdefault(s, "syscall_entry" if fn == "syscall_entry" else fn)

    syms = read_kallsyms(a.kallsyms)
    count = collections.Counter(name for _, name in syms)
    placed, skipped = [], []
    for i, (addr, name) in enumerate(syms):
        if name not in owner_of:
            continue
        if count[name] > 1:
            skipped.append(name)  # two static functions of one name: which runs is unknown
            continue
        nxt = next((b for b, _ in syms[i + 1:] if b > addr), None)
        if nxt is None:
            continue
        placed.append((addr, name, nxt - addr, owner_of[name]))
    if not placed:
        fail("no symbol of the table is in the kernel's symbols")
    base = placed[0][0] & ~0xFFF
    end = placed[-1][0] + placed[-1][2]
    size = (end - base + 0xFFF) & ~0xFFF
    missing = sorted(set(owner_of) - {p[1] for p in placed} - set(skipped))

    kernel = os.uname().release
    lines = [
        f"# This machine's kernel ({kernel}): the UDP path's functions at their running",
        "# addresses, read from /proc/kallsyms by",
        "# experiments/validation/linux/kallsyms_layout.py; each size is the gap to the",
        "# next text symbol. Owners: configs/stacks/linux-perf-symbols.yaml; helpers it",
        "# leaves unmapped are owned by the function perf charged most of their samples",
        f"# to (experiments/validation/linux/data/split.csv), if it has {a.min_samples} samples.",
        "# A PREDICTION: nothing measured which bytes run, so every function is hot",
        "# whole, and the addresses are of one boot (KASLR moves them).",
        f"# Not placed: {len(skipped)} symbol(s) with a duplicate name"
        + (f" ({', '.join(sorted(set(skipped)))})" if skipped else "")
        + f", {len(missing)} not in this kernel.",
        f"name: {a.name}",
        f"description: Linux {kernel} UDP path from /proc/kallsyms, a prediction (whole functions hot)",
        f"text_base: {base:#x}",
        "objects:",
        "  - name: vmlinux",
        f"    size: {size}",
        "    align: 4096",
        "    functions:",
    ]
    for addr, name, sz, owner in placed:
        lines.append(f"      - {{symbol: {name}, owner: {owner}, offset: {addr - base:#x}, size: {sz}}}")
    out = a.output
    d = os.path.dirname(os.path.abspath(out))
    if os.path.islink(out):
        fail(f"{out}: a symbolic link: not written through")
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".kallsyms-layout-")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    print(f"wrote {out}: {len(placed)} functions over {size} bytes from {base:#x}")


if __name__ == "__main__":
    main()
