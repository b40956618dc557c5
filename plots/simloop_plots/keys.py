"""What ran: the keys that tell result rows apart (a sweep's swept keys, and
the columns of every run's row that say what ran: source, experiment,
machine, stack and the path), which of them differ across the rows drawn,
and how a plot shows each one: on an axis, as a line or a label, or as a
panel. A plot never averages rows that differ in one of them."""
from collections import defaultdict

from .data import ALIASES, short_name, sort_values, swept_columns
from .output import die

# The columns of a run's row (simloop run, sweep, measure) that say what ran.
IDENTITY = ("source", "experiment", "machine", "machine_host", "stack", "payload", "dest", "align",
            "copy")
# A swept key read by its short name where a row names it so (options.align as align).
SHORT = {full: short for short, full in ALIASES.items()}
# The most panels a plot draws of one key before it asks for --where.
MAX_FACETS = 6


def value(row, key):
    """A row's value of a key, or None where its file has no such column."""
    v = row.get(key)
    if v is None and key in ALIASES:
        v = row.get(ALIASES[key])
    return v if v not in (None, "") else None


def config_keys(rows):
    """Every key that says what a row ran, once each (align, not also options.align),
    in the order a reader meets them: the identity columns, then the swept keys."""
    keys = [k for k in IDENTITY if any(value(r, k) is not None for r in rows)]
    first = {}
    for r in rows:
        first.setdefault(r["_file"], r)
    for r in first.values():
        for k in swept_columns([r]):
            k = SHORT.get(k, k)
            if k not in keys:
                keys.append(k)
    return keys


def differs(rows, key):
    """Whether rows that have the key hold more than one value of it."""
    return len({value(r, key) for r in rows} - {None}) > 1


def varying_keys(rows):
    return [k for k in config_keys(rows) if differs(rows, k)]


def one_to_one(rows, a, b):
    """Whether a and b split the rows alike: each value of one goes with one value of the other."""
    ab, ba = defaultdict(set), defaultdict(set)
    for r in rows:
        va, vb = value(r, a), value(r, b)
        if va is not None and vb is not None:
            ab[va].add(vb)
            ba[vb].add(va)
    return all(len(s) == 1 for s in ab.values()) and all(len(s) == 1 for s in ba.values())


def tag(row, keys):
    """The row's values of keys, each named: "stack=freebsd6 machine=athlon-xp-2700"."""
    return " ".join(f"{short_name(k)}={value(row, k)}" for k in keys if value(row, k) is not None)


def context(rows, shown):
    """What every row has alike that a reader needs to know: the stack and the
    machine, where no label or panel says them. "" when they are shown or absent."""
    parts = []
    for key in ("stack", "machine"):
        values = {value(r, key) for r in rows} - {None}
        if len(values) == 1 and key not in shown:
            parts.append(f"{key} {values.pop()}")
    return ", ".join(parts)


# The keys each kind tells apart itself: as lines (payload, crossover, padding),
# as labelled points (scatter), as one bar or box per configuration (breakdown,
# distribution) or as one point per row (accuracy). None: every key.
DRAWS = {
    "payload": {"source", "experiment", "machine", "stack", "dest", "align", "copy"},
    "crossover": {"source", "align"},
    "scatter": {"source", "payload", "dest", "align", "copy"},
    "padding": None,
    "breakdown": None,
    "distribution": None,
    "accuracy": None,
}
X_AXIS = {"payload": "payload", "crossover": "payload"}


class Layout:
    """How a plot shows the keys that differ across its rows: `labels` are
    told apart in its lines, labels or points (named in their labels),
    `facet` is a panel per value (one key, or keys that split the rows
    alike), `context` is what all rows have alike."""

    def __init__(self, labels, facet, facets, context_text):
        self.labels, self.facet, self.facets, self.context = labels, facet, facets, context_text

    def rows_of(self, rows, facet_value):
        """A panel's rows: those of its value, and those without the keys (a
        measured run beside simulated ones of each stack)."""
        if not self.facet:
            return rows
        return [r for r in rows if all(value(r, k) in (v, None) for k, v in zip(self.facet, facet_value))]

    def facet_title(self, facet_value):
        return ", ".join(f"{k} = {v}" for k, v in zip(self.facet, facet_value))


def layout(rows, kind, x=None, series=None):
    """The Layout of a kind over rows, or a refusal naming the keys it would
    average over and how to choose (--where, --series)."""
    x = x or X_AXIS.get(kind)
    x = SHORT.get(x, x)
    draws = DRAWS.get(kind, None)
    varying = [k for k in varying_keys(rows) if k != x]
    if draws is None:
        labels = varying
        hidden = []
    else:
        labels = [k for k in varying if k in draws or k == series]
        hidden = [k for k in varying if k not in labels]
    # A key that splits the rows as a labelled one does is told apart with
    # it (a machine zipped with the stack): named beside it, not a panel.
    for k in list(hidden):
        if any(one_to_one(rows, k, shown) for shown in labels):
            hidden.remove(k)
            labels.append(k)
    shown = set(labels) | ({x} if x else set())
    if not hidden:
        return Layout(labels, [], [None], context(rows, shown))
    # Keys that split the rows alike are one panel each.
    groups = []
    for k in hidden:
        for g in groups:
            if one_to_one(rows, k, g[0]):
                g.append(k)
                break
        else:
            groups.append([k])
    if len(groups) == 1:
        facet = groups[0]
        values = sorted({tuple(value(r, k) for k in facet) for r in rows
                         if all(value(r, k) is not None for k in facet)},
                        key=lambda t: [sort_key(v) for v in t])
        if len(values) <= MAX_FACETS:
            return Layout(labels, facet, values, context(rows, shown | set(facet)))
    listing = "; ".join(f"{k}: {', '.join(sort_values({value(r, k) for r in rows} - {None}))}" for k in hidden)
    first = hidden[0]
    some = sort_values({value(r, first) for r in rows} - {None})[0]
    how = f"choose with --where KEY=VALUE (e.g. --where {first}={some})"
    if kind in SERIES_KINDS:
        how += f", or draw one as {SERIES_KINDS[kind]} with --series KEY (e.g. --series {first})"
    die(f"the {kind} plot would average over {', '.join(hidden)}, which it does not show ({listing}); {how}")


def sort_key(v):
    try:
        return (0, float(v), "")
    except ValueError:
        return (1, 0.0, v)


# What --series draws on each kind of rows.
SERIES_KINDS = {
    "payload": "a line per value",
    "padding": "a line per value",
    "crossover": "a line per value",
    "scatter": "a colour per value",
    "breakdown": "a group of bars per value",
    "distribution": "a colour of box per value",
    "accuracy": "a marker per value",
}
