#!/usr/bin/python3
"""The rooms of docs/architecture.md hold.

Every `#include "..."` of a .h or .cc under sim/ and models/ opens
downwards: a file's room (the longest of the rooms below that is a prefix
of its path) may include its own files, those of the rooms of lower levels
and, within one level, only what SIDEWAYS allows. In CMakeLists.txt, each
target builds the sources of one room, no source is built into two
libraries, simloop's sources are listed once (in its add_executable), a
library links only libraries of rooms it may include, and a room that
includes a header links the library built from the header's .cc (or, for a
header without one, a library of the header's room), directly or through
PUBLIC dependencies.

    layers_test.py [SOURCE_DIR]

Prints every breach (an include as file:line -> the included file, the
including room and the included one) and exits 1 if there is any.
"""
import pathlib
import re
import sys

# Top first; rooms of one line are one level.
LEVELS = [
    ["sim/tools/cli"],
    ["sim/tools/sweep", "sim/tools/calibrate", "sim/tools/advise", "sim/tools/measure"],
    ["sim/engine"],
    ["sim/config"],
    ["models"],
    ["sim/layout"],
    # The stack list and each stack's kind.h (what it declares of itself to
    # the layers above), which may use the workload's Path and Dest.
    ["sim/stack"],
    ["sim/stack/workload"],
    ["sim/stack/bsd", "sim/stack/linux"],
    ["sim/stack/net"],
    # Beside everything: any room may use them; they use nothing above.
    ["sim/report", "sim/support"],
]
# The includes allowed within a level, one way only (docs/architecture.md
# lists the same).
SIDEWAYS = {
    # Calibration reads the rows native runs write (measure::NativeOptions).
    ("sim/tools/calibrate", "sim/tools/measure"),
    # The function order of a real build is searched with the advisor's model.
    ("sim/tools/measure", "sim/tools/advise"),
    # Results read numbers and report positions with the shared text helpers.
    ("sim/report", "sim/support"),
}
# Headers the build writes (from sim/version.h.in): they include nothing,
# so any room may.
GENERATED = {"version.h"}
# Headers a build supplies on its include path to add stacks of its own to
# sim/stack/stacks.h's list (tests/stacks/poll/extra_stacks.h is one).
GENERATED |= {"extra_stacks.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
ROOT = pathlib.Path(__file__).resolve().parent.parent


def rank_of():
    return {room: len(LEVELS) - i for i, level in enumerate(LEVELS) for room in level}


KIND = re.compile(r"^sim/stack/[a-z_]+/kind\.h$")


def room_of(path):
    if KIND.match(path):
        return "sim/stack"
    best = None
    for level in LEVELS:
        for room in level:
            if path.startswith(room + "/") and (best is None or len(room) > len(best)):
                best = room
    return best


def sources(root):
    for top in ("sim", "models"):
        for f in sorted((root / top).rglob("*")):
            if f.suffix in (".h", ".cc") and f.is_file():
                yield f.relative_to(root).as_posix()


def includes(root, path):
    for n, line in enumerate((root / path).read_text().splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield n, m.group(1)


def allowed(rank, room, target):
    return target == room or rank[target] < rank[room] or (room, target) in SIDEWAYS


def check_includes(root):
    """Breaches of the layer order, and the includes of other rooms' files
    that keep to it: {(room, included file): where}."""
    rank = rank_of()
    problems, uses = [], {}
    for path in sources(root):
        room = room_of(path)
        if room is None:
            problems.append(f"{path}: in no room")
            continue
        for n, inc in includes(root, path):
            if inc in GENERATED:
                continue
            if not (root / inc).is_file():
                problems.append(f"{path}:{n} -> {inc}: no such file (includes name it from the source root)")
                continue
            target = room_of(inc)
            if target is None:
                problems.append(f"{path}:{n} -> {inc}: in no room")
            elif not allowed(rank, room, target):
                how = "sideways" if rank[target] == rank[room] else "upwards"
                problems.append(f"{path}:{n} -> {inc} ({room} includes {target}, {how})")
            elif target != room:
                uses.setdefault((room, inc), f"{path}:{n}")
    return problems, uses


def cmake_commands(text):
    """(name, arguments) of each command, comments and quotes handled."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        m = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(").match(text, i)
        if not m:
            i += 1
            continue
        name, i, depth, args, cur = m.group(1).lower(), m.end(), 1, [], ""
        while i < n and depth > 0:
            c = text[i]
            if c == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                cur += text[i:j + 1]
                i = j + 1
                continue
            if c == "#":
                i = text.find("\n", i)
                i = n if i < 0 else i
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    break
            if c.isspace():
                if cur:
                    args.append(cur)
                cur = ""
            else:
                cur += c
            i += 1
        if cur:
            args.append(cur)
        yield name, args
        i += 1


KEYWORDS = {"STATIC", "SHARED", "MODULE", "OBJECT", "INTERFACE", "PUBLIC", "PRIVATE",
            "EXCLUDE_FROM_ALL", "LINK_PUBLIC", "LINK_PRIVATE", "IMPORTED", "GLOBAL"}


def plain_sources(args):
    return [a for a in args if a not in KEYWORDS and "$" not in a and re.search(r"\.(cc|h)$", a)]


def check_cmake(root, uses):
    problems = []
    commands = list(cmake_commands((root / "CMakeLists.txt").read_text()))
    srcs, libraries, kinds, links = {}, {}, {}, {}
    for name, args in commands:
        if name in ("add_library", "add_executable", "target_sources") and args and "$" not in args[0]:
            target = args[0]
            if name != "target_sources":
                kinds[target] = name
            srcs.setdefault(target, []).append((name, plain_sources(args[1:])))
        elif name == "target_link_libraries" and args:
            scope = "PUBLIC"
            for a in args[1:]:
                if a in ("PUBLIC", "PRIVATE", "INTERFACE"):
                    scope = a
                elif a.startswith("simloop"):
                    links.setdefault(args[0], []).append((a, scope))
    room_targets = {}
    for target, lists in srcs.items():
        files = [f for _, fs in lists for f in fs]
        rooms = {room_of(f) for f in files}
        if len(rooms) > 1:
            by_room = {}
            for f in files:
                by_room.setdefault(room_of(f), []).append(f)
            problems.append(f"CMakeLists.txt: {target} builds sources of {len(rooms)} rooms: " +
                            "; ".join(f"{r}: {' '.join(fs)}" for r, fs in sorted(by_room.items(), key=str)))
        for r in rooms:
            room_targets.setdefault(r, set()).add(target)
        if len(files) != len(set(files)):
            problems.append(f"CMakeLists.txt: {target} lists a source twice")
        if kinds.get(target) == "add_library":
            for f in files:
                libraries.setdefault(f, []).append(target)
    for f, targets in sorted(libraries.items()):
        if len(targets) > 1:
            problems.append(f"CMakeLists.txt: {f} is built into {', '.join(targets)}")
    lists = srcs.get("simloop", [])
    if len(lists) != 1 or lists[0][0] != "add_executable":
        problems.append("CMakeLists.txt: simloop's sources are listed in " +
                        ", ".join(f"{c}(simloop ...)" for c, _ in lists) +
                        ", not once in add_executable(simloop ...)")

    rank = rank_of()
    target_room = {t: next(iter(rs)) for t, rs in
                   ((t, {room_of(f) for _, fs in ls for f in fs}) for t, ls in srcs.items())
                   if len(rs) == 1}
    for target, deps in sorted(links.items()):
        for dep, _ in deps:
            a, b = target_room.get(target), target_room.get(dep)
            if a and b and not allowed(rank, a, b):
                problems.append(f"CMakeLists.txt: {target} ({a}) links {dep} ({b})")

    def reach(target):
        # Its own dependencies, then what those pass on (PUBLIC, INTERFACE).
        seen, todo = set(), [d for d, _ in links.get(target, [])]
        while todo:
            t = todo.pop()
            if t not in seen:
                seen.add(t)
                todo += [d for d, s in links.get(t, []) if s != "PRIVATE"]
        return seen

    # A room that includes a header links the library built from the
    # header's .cc, or one of the header's room's if the header has none.
    needs = {}
    for (room, inc), where in uses.items():
        cc = re.sub(r"\.h$", ".cc", inc)
        theirs = set(libraries.get(cc, [])) or room_targets.get(room_of(inc), set())
        needs.setdefault((room, frozenset(theirs)), f"{where} -> {inc}")
    for (room, theirs), where in sorted(needs.items(), key=lambda kv: (kv[0][0], sorted(kv[0][1]))):
        mine = room_targets.get(room, set())
        if mine and theirs and not any(reach(t) & theirs for t in mine):
            problems.append(f"CMakeLists.txt: {room} uses {' or '.join(sorted(theirs))} ({where}) "
                            f"but none of {', '.join(sorted(mine))} links it")
    return problems


def check_doc(root):
    """The document names the same sideways includes as SIDEWAYS."""
    text = (root / "docs/architecture.md").read_text()
    named = set(re.findall(r"`((?:sim/)?[a-z/]+)`\s*→\s*`((?:sim/)?[a-z/]+)`", text))
    problems = []
    for a, b in sorted(SIDEWAYS - named):
        problems.append(f"docs/architecture.md: does not say that {a} may include {b}")
    for a, b in sorted(named - SIDEWAYS):
        problems.append(f"docs/architecture.md: says that {a} may include {b}; this test does not allow it")
    return problems


def main(argv):
    root = pathlib.Path(argv[1]) if len(argv) > 1 else ROOT
    problems, uses = check_includes(root)
    problems += check_cmake(root, uses)
    problems += check_doc(root)
    for p in problems:
        print(p)
    rooms = sum(len(level) for level in LEVELS)
    edges = {(room, room_of(inc)) for room, inc in uses}
    print(f"{len(list(sources(root)))} files in {rooms} rooms, {len(edges)} room-to-room "
          f"edges that keep to the order, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
