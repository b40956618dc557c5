#!/usr/bin/python3
"""The recipes of docs/architecture.md ("How to add ...") name files that
exist: every path in backticks under that heading (with `{h,cc}` expanded)
is a file or directory of the source tree, unless it is a pattern of the
thing being added (NAME, KIND, `*`).

usage: recipes_test.py SOURCE_DIR"""
import pathlib
import re
import sys

src = pathlib.Path(sys.argv[1])
doc = (src / "docs" / "architecture.md").read_text()
at = doc.find("## How to add")
if at < 0:
    print("FAIL docs/architecture.md has no 'How to add' section")
    sys.exit(1)
recipes = doc[at:]
missing, checked = [], 0
for token in re.findall(r"`([^`\s]+)`", recipes):
    token = token.rstrip(".,:;")
    if "/" not in token or token.startswith(("-", "$", "--")) or "://" in token:
        continue
    if re.search(r"NAME|KIND|\*|<|\.\.\.", token):
        continue  # a pattern of what a recipe adds
    m = re.match(r"(.*)\{([^}]*)\}(.*)", token)
    paths = [m.group(1) + alt + m.group(3) for alt in m.group(2).split(",")] if m else [token]
    for p in paths:
        p = p.lstrip("./") if p.startswith("./") else p
        if p.startswith("build/"):
            continue  # what the build makes
        checked += 1
        if not (src / p).exists():
            missing.append(p)
for p in missing:
    print(f"FAIL docs/architecture.md's recipes name {p}, which is not in the tree")
print(f"{checked} paths named by the recipes, {len(missing)} missing")
sys.exit(1 if missing or checked == 0 else 0)
