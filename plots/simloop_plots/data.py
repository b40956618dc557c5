"""Result rows: reading a CSV of results, the swept keys, runs that did not
end ok, means over repeats, and how values sort and are named."""
import csv
import math

from .output import die


# A sweep's CSV names a swept key by its path (options.align) and leaves out
# the metric that would repeat it (align): plots read either name.
ALIASES = {"payload": "workload.payload", "dest": "workload.dest", "align": "options.align",
           "copy": "options.copy"}


def read_rows(path):
    try:
        with open(path, newline="", encoding="utf-8", errors="strict") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        die(f"{path}: {e.strerror}")
    except (UnicodeDecodeError, csv.Error) as e:
        die(f"{path}: not a CSV of results ({e.__class__.__name__}: {e})")
    if not rows:
        die(f"{path}: no result rows")
    for r in rows:
        r.pop(None, None)  # fields past the header
        for short, key in ALIASES.items():
            if key in r and short not in r:
                r[short] = r[key]
        r["_file"] = path
    return rows


def faulted(row):
    """A run that did not end ok: faulted, failed or crashed."""
    return row.get("status", "ok") not in ("ok", "") or row.get("outcome", "ok") not in ("ok", "")


def ok_rows(rows):
    return [r for r in rows if not faulted(r)]


def swept_columns(rows):
    """The swept keys of a sweep CSV: the columns between point_hash and source."""
    cols = [c for c in rows[0] if not c.startswith("_")]
    if "point_hash" in cols and "source" in cols:
        return [c for c in cols[cols.index("point_hash") + 1:cols.index("source")] if c not in ALIASES]
    return []


def varying(rows, key):
    return key in rows[0] and len({r.get(key) for r in rows}) > 1


def mean_sd(values):
    m = sum(values) / len(values)
    sd = math.sqrt(sum((x - m) ** 2 for x in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return m, sd


def num(row, key):
    try:
        return float(row.get(key, "") or "nan")
    except ValueError:
        return math.nan


def padding_column(rows):
    for key in rows[0]:
        if "pad" in key.lower() and varying(rows, key):
            return key
    return None


def choose_kind(rows):
    if "predicted_kpps" in rows[0] or "measured_i1_misses_per_packet" in rows[0]:
        return "accuracy"
    sources = {r.get("source") for r in rows}
    if "simulated" in sources and len(sources) > 1:
        return "scatter"
    if "kpps" in rows[0] and padding_column(rows):
        return "padding"
    swept = swept_columns(rows)
    if "kpps" in rows[0] and varying(rows, "payload") and (
            varying(rows, "options.align") if swept else varying(rows, "align")):
        return "crossover"
    payloads = {r.get("payload") for r in rows}
    if "kpps" in rows[0] and len(payloads) > 1:
        return "payload"
    if any(k.startswith("cycles_") for k in rows[0]):
        return "breakdown"
    cols = [c for c in rows[0] if not c.startswith("_")]
    die(f"{rows[0]['_file']}:1: cannot tell which plot fits these columns ({', '.join(cols[:12])}"
        f"{', ...' if len(cols) > 12 else ''}): expected kpps with payload, padding or align "
        "varying, or cycles_* columns; or name one with --kind")


def label_of(row):
    parts = [row.get("experiment") or row.get("source", "run")]
    for key in ("payload", "dest", "align", "copy"):
        if row.get(key):
            parts.append(f"{key}={row[key]}")
    return "\n".join(parts)


def per_config(rows, keys):
    """One row per configuration (the values of `keys`, the keys that differ),
    its kpps and cycles the mean over its runs (`_runs` of them), in the order
    configurations first appear."""
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) or r.get(ALIASES.get(k, k)) for k in keys), []).append(r)
    out = []
    for rs in groups.values():
        avg = dict(rs[0])
        for k in rs[0]:
            if not (k == "kpps" or k.startswith("cycles_")):
                continue  # parameters stay as written
            vals = [num(r, k) for r in rs]
            if all(not math.isnan(v) for v in vals):
                avg[k] = str(sum(vals) / len(vals))
        avg["_runs"] = len(rs)
        out.append(avg)
    return out


def short_name(key):
    """A swept key as a label names it: its path without its section
    (handler_cycles, cache.enabled: not the bare "enabled")."""
    if not key:
        return key
    parts = key.split(".")
    return parts[-1] if len(parts) <= 2 else ".".join(parts[1:])


def value_order(text):
    """Sorts values as numbers where they are numbers (500 before 1000)."""
    value = text.partition("=")[2] if "=" in text else text
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


def sort_values(values):
    try:
        return sorted(values, key=float)
    except ValueError:
        return sorted(values)
