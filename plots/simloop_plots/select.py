"""Which rows and keys a plot draws: --where, --series, and the swept keys
each kind shows."""
import math

from .data import ALIASES, sort_values, swept_columns, varying
from .output import die


# The swept keys each kind shows (on an axis, as lines or as labels); any
# other swept key that varies would be averaged over, which a plot never does.
SHOWS = {
    "payload": {"workload.payload", "workload.dest", "options.align", "options.copy"},
    "crossover": {"workload.payload", "options.align"},
    "scatter": {"workload.payload", "workload.dest", "options.align", "options.copy"},
}


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


def where(rows, conditions):
    for cond in conditions or []:
        key, op, value = parse_where(cond)
        if key not in rows[0]:
            cols = [c for c in rows[0] if not c.startswith("_")]
            die(f"--where {cond}: no column {key} (columns: {', '.join(cols)})")
        kept = [r for r in rows if holds(r.get(key, ""), op, value)]
        if not kept:
            values = sort_values(sorted({r.get(key, "") for r in rows}))
            die(f"--where {cond}: no row has {key}{'=' if op == '==' else op}{value} "
                f"(values: {', '.join(values)})")
        rows = kept
    return rows


def hidden_keys(rows, kind, x=None, series=None):
    shows = SHOWS.get(kind)
    if shows is None:
        return []
    return [k for k in swept_columns(rows) if k not in shows and k not in (x, series) and varying(rows, k)]


# The kinds that draw lines against an x axis, and so can draw a swept key as a line per value.
SERIES_KINDS = ("payload", "padding", "crossover")


def series_column(rows, kind, key, x=None):
    """The column --series KEY names (align for options.align), checked."""
    if key is None:
        return None
    if kind not in SERIES_KINDS:
        die(f"--series draws lines per value; the {kind} plot has none (it fits {', '.join(SERIES_KINDS)})")
    full = ALIASES.get(key, key)
    col = next((c for c in (key, full) if c in rows[0]), None)
    if col is None:
        swept = swept_columns(rows)
        die(f"--series {key}: no column {key}" + (f" (swept keys: {', '.join(swept)})" if swept else ""))
    if full in ("workload.payload", x or ""):
        die(f"--series {key}: that is the x axis; name another swept key")
    return col
