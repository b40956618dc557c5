"""Colours and units: each stage's colour, the same in every plot, and the
unit an axis label names."""
import matplotlib
import matplotlib.pyplot as plt


def unit_of(column):
    c = column.lower()
    if "bytes" in c or "pad" in c or "payload" in c:
        return "bytes"
    if c.endswith("_hz"):
        return "Hz"
    if c.endswith("_s"):
        return "s"
    if "cycles" in c:
        return "cycles"
    return ""


def axis_label(column):
    u = unit_of(column)
    return f"{column} ({u})" if u else column


# Stages: the result columns cycles_<stage>, stacked in the order of the
# simulator's list of stages (models/cycle_account.h). Each stage has a colour
# of its own, the same in every plot (breakdown, timeline): its place in that
# list picks it from a qualitative palette of clearly different colours, none
# of them the red of faults and interrupt handlers or the grey of calls. A
# stage the list does not know takes the next colour no stage has.
STAGES = ("user", "syscall", "socket", "udp", "ip", "ether", "driver", "loop", "netisr", "input", "receive",
          "copy", "mbuf", "unaligned", "cache", "interrupt", "sleep", "idle", "tlb", "branch")
PALETTE = ("#1f77b4", "#ffd92f", "#f0027f", "#2ca02c", "#e6550d", "#8c564b", "#cedb9c", "#984ea3", "#f7b6d2",
           "#17becf", "#fdae6b", "#637939", "#1b9e77", "#a6d854", "#393b79", "#d6616b", "#f781bf", "#9e9ac8",
           "#a6761d", "#6b6ecf", "#7fc97f", "#fdd0a2")
HANDLER_RED, CALL_GREY = "#d62728", "#bbbbbb"
_unknown_stages = []
# A stack's own words for stages (a Linux row's cycles_skb holds the mbuf
# stage), word -> stage: simloop plot gives them from its stacks' tables
# (--stage-words), so a stage has its colour and place under either name.
STAGE_WORDS = {}


def set_stage_words(text):
    """WORD=STAGE,... as simloop plot passes them."""
    for pair in filter(None, (text or "").split(",")):
        word, _, stage = pair.partition("=")
        if word and stage:
            STAGE_WORDS[word] = stage


def stage_of(word):
    return STAGE_WORDS.get(word, word)


def stage_order(word):
    stage = stage_of(word)
    return (STAGES.index(stage) if stage in STAGES else len(STAGES), word)


def stage_columns(rows):
    """The stage columns of every row (files of different stacks name some
    stages differently), in the stages' order, without the cycles_ prefix."""
    seen = {}
    for r in rows:
        for k in r:
            if k.startswith("cycles_") and k != "cycles_per_packet":
                seen.setdefault(k[len("cycles_"):], None)
    return sorted(seen, key=stage_order)


def stage_groups(rows):
    """The stage columns grouped by stage: [(stage, [words])], in order; one
    stage's words are its names in the different stacks' rows."""
    groups = {}
    for word in stage_columns(rows):
        groups.setdefault(stage_of(word), []).append(word)
    return list(groups.items())


def stage_colour(stage):
    stage = stage_of(stage)
    if stage in STAGES:
        return PALETTE[STAGES.index(stage)]
    if stage not in _unknown_stages:
        _unknown_stages.append(stage)
    i = len(STAGES) + _unknown_stages.index(stage)
    if i < len(PALETTE):
        return PALETTE[i]
    spare = [matplotlib.colors.to_hex(c) for c in plt.get_cmap("tab20b").colors]
    return spare[(i - len(PALETTE)) % len(spare)]
