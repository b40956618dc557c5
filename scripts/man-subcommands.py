#!/usr/bin/python3
"""The sections of simloop's man page that help2man cannot write itself.

help2man reads only `simloop --help`; this runs `simloop SUB --help` for
every subcommand the program lists, nested ones too (`simloop measure
--help` lists native, kernel, ...), and writes them as a help2man include
file: a [SUBCOMMANDS] section with a subsection per subcommand (its usage,
description, positionals and options, as --help prints them), then
[ENVIRONMENT] and [FILES].

    man-subcommands.py SIMLOOP [OUT.h2m]
"""
import re
import subprocess
import sys

COLUMN = 30  # where CLI11 starts an option's or a subcommand's description
HEADING = re.compile(r"^(Positionals|Options|Subcommands):$")


def help_text(simloop, path):
    return subprocess.run([simloop, *path, "--help"], check=True, capture_output=True,
                          text=True).stdout


def parse(text):
    """A --help text as (description lines, usage, {heading: [(name, [lines])]}, footer)."""
    lines = text.splitlines()
    usage_at = next(i for i, line in enumerate(lines) if line.startswith("Usage: "))
    description, usage = lines[:usage_at], lines[usage_at][len("Usage: "):]
    sections, footer, items = {}, [], None
    for line in lines[usage_at + 1:]:
        m = HEADING.match(line)
        if m:
            items = sections.setdefault(m.group(1), [])
        elif items is not None and line.startswith("  "):
            if not line.strip():
                continue
            if line.startswith(" " * COLUMN) and items:
                items[-1][1].append(line.strip())
            else:
                # A name too long for its column is alone on its line.
                cut = COLUMN if line[:COLUMN].endswith(" ") else len(line)
                name, desc = line[:cut].strip(), line[cut:].strip()
                items.append((name, [desc] if desc else []))
        elif line.strip() and items is not None:
            items, footer = None, [line]
        elif line.strip() and footer:
            footer.append(line)
    return description, usage, sections, footer


def subcommands(sections):
    return [name for name, _ in sections.get("Subcommands", [])]


def roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    # Long lists (TEXT:{a,b,...}, DEST/ALIGN/COPY) may break after , and /.
    text = text.replace(",", ",\\:").replace("/", "/\\:")
    # A line of . or ' is a request to roff, one of [ a section to help2man.
    return "\\&" + text if text.startswith((".", "'", "[")) else text


def option_name(name):
    """`-o,--output TEXT` as bold names and the type as is."""
    names, _, rest = name.partition(" ")
    bold = ",".join(f"\\fB{roff(n)}\\fR" for n in names.split(","))
    return bold + (" " + roff(rest) if rest else "")


def description(lines):
    """Paragraphs of plain lines; `  NAME  text` lines (a table) as tagged items."""
    out, in_table = [], False
    for line in lines:
        m = re.match(r"^  (\S+)\s{2,}(\S.*)$", line)
        if not line.strip():
            out.append(".PP")
            in_table = False
        elif m:
            out += [".TP", f"\\fB{roff(m.group(1))}\\fR", roff(m.group(2))]
            in_table = True
        elif in_table and line.startswith("    "):
            out.append(roff(line.strip()))
        else:
            if in_table:
                out.append(".PP")
                in_table = False
            out.append(roff(line))
    return out


def section(simloop, path, top_footer):
    desc, usage, sections, footer = parse(help_text(simloop, path))
    usage = re.sub(r"^\S+", "simloop", usage)
    out = [f'.SS "simloop {" ".join(path)}"', f"\\fB{roff(usage)}\\fR", ".PP"]
    out += description(desc)
    for heading in ("Positionals", "Options", "Subcommands"):
        items = [(n, d) for n, d in sections.get(heading, []) if n != "-h,--help"]
        if not items:
            continue
        out += [".PP", f"{heading}:", ".RS"]
        for name, lines in items:
            out += [".TP", option_name(name) if heading != "Subcommands" else roff(name)]
            out += [roff(line) for line in lines] if heading != "Subcommands" else [
                f"See \\fBsimloop {roff(' '.join(path + [name]))}\\fR below."]
        out.append(".RE")
    if footer and footer != top_footer:
        out += [".PP"] + [roff(line) for line in footer]
    return out, subcommands(sections)


def main():
    simloop = sys.argv[1]
    _, _, top_sections, top_footer = parse(help_text(simloop, []))
    # From here on no hyphenation (option names stay whole) and a ragged right
    # margin (a line with a long list in it is not stretched).
    out = ["[SUBCOMMANDS]", ".nh", ".ad l",
           "Each subcommand's own \\fB\\-\\-help\\fR, as \\fBsimloop SUBCOMMAND \\-\\-help\\fR "
           "prints it (options of simloop itself, such as \\fB\\-v\\fR, come before or after the "
           "subcommand)."]
    todo = [[name] for name in subcommands(top_sections)]
    while todo:
        path = todo.pop(0)
        lines, nested = section(simloop, path, top_footer)
        out += lines
        todo[0:0] = [path + [n] for n in nested]
    out += [
        "[ENVIRONMENT]",
        ".TP", "\\fBSIMLOOP_DATA_DIR\\fR",
        "The data directory: machines, stacks, layouts, experiments and the plotting script. "
        "Without it, simloop reads \\fIPREFIX\\fR/share/simloop beside its own "
        "\\fIPREFIX\\fR/bin, else the source tree it was built from.",
        "[FILES]",
        ".TP", "\\fIPREFIX\\fR/share/simloop/",
        "The shipped experiments (experiments/), machines, stacks and layouts (configs/), "
        "plotting script and documentation; \\fBsimloop list\\fR names them.",
        ".TP", "\\fIPREFIX\\fR/libexec/simloop/",
        "Harness builds that simloop runs itself (measure, icache).",
        ".TP", "\\fIPREFIX\\fR/share/bash\\-completion/completions/simloop",
        "Bash completion of subcommands, options, experiments, configuration keys and their "
        "values, machines, stacks and result columns (it asks simloop itself). Without "
        "installing: \\fBsource scripts/simloop\\-completion.bash\\fR from a checkout.",
    ]
    text = "\n".join(out) + "\n"
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
