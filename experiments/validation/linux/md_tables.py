"""What the Linux validation scripts share: a report's tables between two
markers, files written whole or not at all, and the command dispatch."""
import os
import sys


def write_atomic(path, text):
    """Writes `text` to `path` through a temporary beside it: a reader sees
    the old file or the new one, never half of it."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def kept_tables(path, begin, end):
    """The block from `begin` to `end` (both kept) and its newline, as the
    tables functions return it; None if a marker is missing."""
    with open(path) as f:
        md = f.read()
    at = md.find(begin)
    stop = md.find(end, at) if at >= 0 else -1
    if stop < 0:  # the end sought after the begin: a page may hold several
        return None
    return md[at:stop + len(end)] + "\n"


def put_tables(path, text, begin, end, who):
    """Replaces the block from `begin` to `end` (and its newline) by `text`;
    exits naming `who` and the file if a marker is missing."""
    with open(path) as f:
        md = f.read()
    at = md.find(begin)
    stop = md.find(end, at) if at >= 0 else -1
    if stop < 0:
        sys.exit(f"{who}: {path}: no markers '{begin}' and '{end}'")
    write_atomic(path, md[:at] + text + md[stop + len(end) + 1:])


def dispatch(cmds, doc):
    """`SCRIPT COMMAND SIMLOOP`: runs cmds[COMMAND](absolute SIMLOOP) and
    exits with its status; the usage (`doc`) and 2 on anything else."""
    if len(sys.argv) != 3 or sys.argv[1] not in cmds:
        print(doc, file=sys.stderr)
        sys.exit(2)
    sys.exit(cmds[sys.argv[1]](os.path.abspath(sys.argv[2])) or 0)
