#!/usr/bin/python3
"""Every file or folder docs/architecture.md names exists.

The recipes there ("how to add ...") name the files to touch; a file that
moved or went away would send a reader to nothing. A name in backquotes
that looks like a path (a '/' and an extension, or a trailing '/') is
checked; `a/b.{h,cc}` stands for both files, a glob must match one; names
with NAME or KIND in them are patterns, not files.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def paths(text):
    for m in re.finditer(r"`([^`\s]+)`", text):
        p = m.group(1)
        if "/" not in p or p.startswith(("http", "-", "--")) or "NAME" in p or "KIND" in p:
            continue
        p = p.split(":")[0].rstrip(".,")
        brace = re.match(r"(.*)\{([^}]*)\}(.*)", p)
        if brace:
            for alt in brace.group(2).split(","):
                yield brace.group(1) + alt + brace.group(3)
        elif re.search(r"\.[a-z]+$", p) or p.endswith("/"):
            yield p


def main(argv):
    doc = pathlib.Path(argv[1]) if len(argv) > 1 else ROOT / "docs/architecture.md"
    names = sorted(set(paths(doc.read_text())))
    # A glob must match something.
    missing = [p for p in names
               if not ((ROOT / p).exists() if "*" not in p else any(ROOT.glob(p)))]
    for p in missing:
        print(f"{doc.name}: names {p}, which does not exist")
    print(f"{len(names)} paths named, {len(missing)} missing")
    return 1 if missing or not names else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
