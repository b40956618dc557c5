#!/usr/bin/python3
"""measure kernel --nft-rules on this machine's kernel, end to end.

Runs the kernel loop with 0 and 40 rules, each in a namespace of its own,
under perf, and checks what a user reads: rows of both counts (the
nft_rules column), netfilter's functions sampled with rules and never
without, every datagram delivered, the host's own ruleset the same after as
before, and no namespace left behind. Without root or nft, simloop must exit
2 naming which; the test is then skipped (77), as it measures nothing.
"""
import csv
import io
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

NF = ("nf_hook_slow", "nft_do_chain", "nft_rule_eval")


def ruleset():
    if shutil.which("nft") is None:
        return None
    return subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True).stdout


def main(simloop):
    before = ruleset()
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d) / "nft.csv"
        p = subprocess.run([simloop, "measure", "kernel", "--split", "--nft-rules", "0,40",
                            "-l", "18", "-n", "20000", "--period", "20000", "--rounds", "4",
                            "-o", str(out), "--format", "csv"],
                           capture_output=True, text=True, timeout=300)
        if p.returncode == 2 and any(w in p.stderr for w in ("root", "nft", "perf", "kallsyms")):
            print("skipped:", p.stderr.strip().splitlines()[-1])
            return 77
        if p.returncode != 0:
            print(p.stderr)
            return 1
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        bad = []
        if ruleset() != before:
            bad.append("the host's ruleset changed")
        counts = {r["nft_rules"] for r in rows}
        if counts != {"0", "40"}:
            bad.append(f"rule counts in the rows: {sorted(counts)}")
        for n in ("0", "40"):
            seen = {r["charged_to"] for r in rows if r["nft_rules"] == n}
            nf = seen & set(NF)
            if n == "0" and nf:
                bad.append(f"no rules, yet samples charged to {sorted(nf)}")
            if n == "40" and "nft_do_chain" not in nf:
                bad.append(f"40 rules, yet nft_do_chain has no samples ({sorted(seen)})")
        if not out.exists() or not pathlib.Path(str(out) + ".machine.json").exists():
            bad.append("-o wrote no rows or machine")
    for b in bad:
        print("FAIL", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
