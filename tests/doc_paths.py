#!/usr/bin/python3
"""Every file or folder docs/architecture.md names exists, and every C++
name it qualifies (`net::FnTable`, `stacks::fn_tables()`) is still declared.

The recipes there ("how to add ...") name the files to touch; a file that
moved or went away would send a reader to nothing. A name in backquotes
that looks like a path (a '/' and an extension, or a trailing '/') is
checked; `a/b.{h,cc}` stands for both files, a glob must match one; names
with NAME or KIND in them are patterns, not files. A qualified name is
checked by its last part, which must be a word of some source file under
sim/, models/ or tests/ (a list the document names that went away, such as
`net::kFnTables`, would otherwise live on in it).
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


def cxx_names(text):
    for m in re.finditer(r"`([^`\n]+)`", text):
        for name in re.findall(r"\b((?:[A-Za-z_]\w*::)+[A-Za-z_]\w*)", m.group(1)):
            if "NAME" not in name and "KIND" not in name:
                yield name


def undeclared(names):
    words = set()
    for d in ("sim", "models", "tests"):
        for f in (ROOT / d).rglob("*"):
            if f.suffix in (".h", ".cc"):
                words.update(re.findall(r"\w+", f.read_text(errors="replace")))
    return [n for n in names if n.split("::")[-1] not in words]


def main(argv):
    doc = pathlib.Path(argv[1]) if len(argv) > 1 else ROOT / "docs/architecture.md"
    names = sorted(set(paths(doc.read_text())))
    # A glob must match something.
    missing = [p for p in names
               if not ((ROOT / p).exists() if "*" not in p else any(ROOT.glob(p)))]
    for p in missing:
        print(f"{doc.name}: names {p}, which does not exist")
    print(f"{len(names)} paths named, {len(missing)} missing")
    cxx = sorted(set(cxx_names(doc.read_text())))
    gone = undeclared(cxx)
    for n in gone:
        print(f"{doc.name}: names {n}, which no source declares")
    print(f"{len(cxx)} C++ names, {len(gone)} not in the sources")
    return 1 if missing or gone or not names else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
