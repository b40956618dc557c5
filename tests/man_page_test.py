#!/usr/bin/python3
"""The man page the build wrote is simloop's --help as it is now.

It renders without a warning from groff or man, and names every
subcommand (nested ones too) and every long option that `simloop [SUB...]
--help` prints: the lists come from the program's --help, so a page left
behind by a changed command line fails.

    man_page_test.py SIMLOOP PAGE
"""
import os
import re
import subprocess
import sys

simloop, page = sys.argv[1], sys.argv[2]
failures = []


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


# No warnings: groff with every warning on, and man as a user reads it.
g = run(["groff", "-man", "-Tutf8", "-ww", "-z", page])
if g.returncode != 0 or g.stderr.strip():
    failures.append(f"groff -ww warns: {g.stderr.strip()}")
env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
m = run(["man", "--warnings", "-l", page], env=env)
if m.returncode != 0 or m.stderr.strip():
    failures.append(f"man --warnings -l: exit {m.returncode}: {m.stderr.strip()}")
if "SUBCOMMANDS" not in m.stdout:
    failures.append("man -l: no SUBCOMMANDS section")

# The text as rendered, wide and unhyphenated, with roff's dashes as typed.
r = run(["groff", "-man", "-Tutf8", "-rHY=0", "-rLL=400n", "-P-cbou", page])
text = r.stdout.replace("\u2010", "-").replace("\u2212", "-")


def subcommands(path):
    """The subcommands `simloop PATH --help` lists, and its long options."""
    out = run([simloop, *path, "--help"]).stdout
    subs, opts, heading = [], [], None
    for line in out.splitlines():
        if re.match(r"^\S.*:$", line):
            heading = line[:-1]
        elif heading == "Subcommands" and re.match(r"^  \S", line):
            subs.append(line.split()[0])
        elif heading == "Options" and re.match(r"^  -", line):
            opts += re.findall(r"--[A-Za-z0-9][-A-Za-z0-9_]*", line.split(" ")[2])
    return subs, opts


todo, seen = [[]], 0
while todo:
    path = todo.pop(0)
    subs, opts = subcommands(path)
    seen += 1
    name = " ".join(["simloop", *path])
    if path and not re.search(rf"^\s*{re.escape(name)}\s*$", text, re.M):
        failures.append(f"no section for '{name}'")
    for o in opts:
        if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text):
            failures.append(f"'{name} --help' prints {o}; the page does not name it")
    todo += [path + [s] for s in subs]

if seen < 10:
    failures.append(f"only {seen} commands found in --help")
for f in failures:
    print("FAIL", f)
print(f"{seen} commands checked against {page}")
sys.exit(1 if failures else 0)
