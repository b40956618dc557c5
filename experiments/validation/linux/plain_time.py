"""perf's split on the plain run's time base, as calibrate --source linux
puts it: measure kernel --split times every slice twice, perf off and then
on, and writes the plain half's thread CPU time per datagram beside each
row (plain_cpu_ns_per_packet). Where every group of rows (one repeat of one
path, payload and knobs) has it, each row's self time is scaled so that the
group sums to it: perf's shares of a total nobody profiled. Rows measured
before the plain run keep perf's own time, all of them: one base per file.
"""


def group(row):
    return (row["path"], row["payload"], row.get("sendmmsg") or "1", row.get("segments") or "1",
            row.get("nft_rules") or "", row["repeat"])


def scaler(rows):
    """A function row -> the factor its self_ns_per_packet is multiplied by."""
    perf, plain = {}, {}
    for r in rows:
        g = group(r)
        perf[g] = perf.get(g, 0.0) + float(r["self_ns_per_packet"])
        if r.get("plain_cpu_ns_per_packet"):
            plain[g] = float(r["plain_cpu_ns_per_packet"])
    if not perf or set(plain) != set(perf):
        return lambda row: 1.0
    k = {g: plain[g] / perf[g] for g in perf if perf[g] > 0}
    return lambda row: k.get(group(row), 1.0)
