#!/usr/bin/python3
"""experiments/seed/README.md quotes `simloop explain`'s "real outputs for
this version": each quoted command, run from the source tree, prints what
the quote shows, line for line. Its -o output goes to a scratch directory
(the quote's "wrote" line names the file the command names).

    seed_explain_quotes_test.py SIMLOOP SOURCE_DIR

To bring the quotes up to date, run each command as it is written from the
source tree and paste its output below it.
"""
import difflib
import pathlib
import re
import subprocess
import sys
import tempfile

from checks import check, finish  # tests/checks.py

SIMLOOP, SRC = sys.argv[1], pathlib.Path(sys.argv[2])
readme = (SRC / "experiments" / "seed" / "README.md").read_text()
quotes = re.findall(r"```\n\$ (simloop -q explain [^\n]*)\n(.*?)```", readme, re.S)
check(len(quotes) >= 3, f"the explain quotes of experiments/seed/README.md: {len(quotes)} found")
with tempfile.TemporaryDirectory() as scratch:
    for i, (command, quoted) in enumerate(quotes):
        args = command.split()[1:]
        named = args[args.index("-o") + 1] if "-o" in args else None
        if named:
            args[args.index("-o") + 1] = str(pathlib.Path(scratch) / f"{i}.json")
        p = subprocess.run([SIMLOOP, *args], cwd=SRC, capture_output=True, text=True, timeout=600)
        out = p.stdout.replace(str(pathlib.Path(scratch) / f"{i}.json"), named or "")
        diff = list(difflib.unified_diff(quoted.splitlines(), out.splitlines(), "quoted", "printed",
                                         lineterm="", n=0))
        check(p.returncode == 0 and not diff,
              f"$ {command}: exit {p.returncode}, {len(diff)} diff lines\n" + "\n".join(diff[:40])
              + p.stderr)
finish()
