"""Which rows and keys a plot draws: --where and --series (what each kind
shows of the keys that differ is in keys.py)."""
import difflib
import math

from .data import ALIASES, sort_values
from .keys import SERIES_KINDS, SHORT, X_AXIS, config_keys, value
from .output import die


# The comparisons --where takes, longest first: KEY=VALUE (or ==), KEY!=VALUE,
# and the ranges KEY<N, KEY<=N, KEY>N, KEY>=N (sim/report/row_filter.h, which
# `simloop plot` checks every expression against before it starts simloop_plot.py).
WHERE_OPS = ("==", "!=", "<=", ">=", "<", ">", "=")
WHERE_FORMS = "KEY=VALUE, KEY!=VALUE, KEY<N, KEY<=N, KEY>N or KEY>=N"


def number(text):
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def parse_where(cond):
    at = min((i for i in (cond.find(c) for c in "=!<>") if i >= 0), default=-1)
    op = next((o for o in WHERE_OPS if cond.startswith(o, at)), None) if at >= 0 else None
    if op is None:
        die(f"--where {cond}: expected {WHERE_FORMS}")
    key, value = cond[:at].strip(), cond[at + len(op):].strip()
    if not key or not value or value[0] in "=!<>":
        die(f"--where {cond}: expected {WHERE_FORMS}")
    op = "==" if op == "=" else op
    if op not in ("==", "!=") and number(value) is None:
        die(f"--where {cond}: '{value}' is not a number: {op} compares numbers")
    return key, op, value


def holds(cell, op, value):
    a, b = number(cell), number(value)
    if a is not None and b is not None:
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    if op == "==":
        return cell == value
    if op == "!=":
        return cell != value
    return False


def did_you_mean(word, choices):
    """ "; did you mean 'X'?" for the choice nearest a misspelt word, or ""."""
    near = difflib.get_close_matches(word, [c for c in choices if c], n=1, cutoff=0.6)
    return f"; did you mean '{near[0]}'?" if near else ""


def where(rows, conditions):
    for cond in conditions or []:
        key, op, value = parse_where(cond)
        if key not in rows[0]:
            cols = [c for c in rows[0] if not c.startswith("_")]
            die(f"--where {cond}: no column {key}{did_you_mean(key, cols)} "
                f"(columns: {', '.join(cols)})")
        kept = [r for r in rows if holds(r.get(key, ""), op, value)]
        if not kept:
            values = sort_values(sorted({r.get(key, "") for r in rows}))
            near = did_you_mean(value, values) if op == "==" else ""
            die(f"--where {cond}: no row has {key}{'=' if op == '==' else op}{value}{near} "
                f"(values: {', '.join(values)})")
        rows = kept
    return rows


def series_column(rows, kind, key, x=None):
    """The key --series KEY names, checked: as keys.py names it (align for
    options.align), and a key some row has that is not the x axis."""
    if key is None:
        return None
    if kind not in SERIES_KINDS:
        die(f"--series draws a value of a key apart; the {kind} plot draws one run (it fits "
            f"{', '.join(SERIES_KINDS)})")
    full = ALIASES.get(key, key)
    name = SHORT.get(full, full)
    if all(value(r, name) is None for r in rows):
        keys = config_keys(rows)
        cols = [c for c in rows[0] if not c.startswith("_")]
        die(f"--series {key}: no column {key}{did_you_mean(full, cols)}"
            + (f" (keys that say what ran: {', '.join(keys)})" if keys else ""))
    x = SHORT.get(x, x) if x else None
    if name == (x or X_AXIS.get(kind)):
        die(f"--series {key}: that is the x axis; name another key")
    return name
