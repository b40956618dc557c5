#!/usr/bin/env python3
"""How many datagrams a small receive buffer holds: the kernel's count
against the simulated stack's, per UDP GSO burst.

    rcvbuf.py measure SIMLOOP        # as root: measure the kernel, write data/rcvbuf.csv
    rcvbuf.py table SIMLOOP          # the Markdown table from the kept data
    rcvbuf.py check SIMLOOP          # fail unless rcvbuf.md holds that table

Each point is a receive buffer (setsockopt SO_RCVBUF, which the kernel
doubles), a payload and a GSO segment count: the sender's one send makes
that many datagrams arrive together, the receiver reads after it, and
what does not fit is dropped. That count depends on each skb's truesize
and the kernel's admission rule, not on time, so the simulation should get
it exactly. The simulated stack runs with its default small skb head (640
bytes) and with this kernel's (576, /proc/slabinfo's skbuff_small_head).
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "rcvbuf.csv")
REPORT = os.path.join(HERE, "rcvbuf.md")
POINTS = [(rb, seg, pay) for rb in (4096, 16384) for seg in (4, 16, 64) for pay in (500, 1400)
          if seg * pay <= 65507]
PACKETS = 20000
BEGIN, END = "<!-- table: rcvbuf.py -->", "<!-- end of table -->"


def sh(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"rcvbuf.py: {' '.join(map(str, cmd))}: exit {r.returncode}: {r.stderr[-600:]}")
    return r.stdout


def measure(simloop):
    rows = []
    for rb, seg, pay in POINTS:
        out = sh([simloop, "-q", "measure", "kernel", "-l", str(pay), "--gso-segments", str(seg),
                  "--so-rcvbuf", str(rb), "-n", str(PACKETS), "--warmup", "1000", "--format", "csv"])
        r = next(csv.DictReader(out.splitlines()))
        rows.append({"so_rcvbuf": rb, "segments": seg, "payload": pay, "sent": r["packets"],
                     "delivered": r["delivered"], "kernel": r.get("kernel", "")})
    os.makedirs(os.path.dirname(DATA), exist_ok=True)
    with open(DATA, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {DATA}")


def simulated(simloop, rb, seg, pay, head):
    with tempfile.TemporaryDirectory() as tmp:
        sh([simloop, "-q", "run", os.path.join(HERE, "..", "..", "linux-loopback.yaml"),
            "--set", f"options.linux.udp_segment={seg}", "--set", f"workload.payload={pay}",
            "--set", f"options.linux.so_rcvbuf={rb}", "--set", f"options.linux.small_head_cache={head}",
            "--set", f"workload.packets={PACKETS}", "-o", tmp])
        res = json.load(open(os.path.join(tmp, "linux-loopback.json")))["result"]
        return int(res["delivered"]), int(res["packets"])


def table(simloop):
    rows = list(csv.DictReader(open(DATA)))
    kernel = rows[0]["kernel"] if rows and rows[0].get("kernel") else "this kernel"
    lines = [BEGIN, f"<!-- checked by validation.linux_rcvbuf: rcvbuf.py check; kernel: {kernel} -->",
             "| SO_RCVBUF | segments | payload | kernel: datagrams kept per burst | simulated, head 576 | simulated, head 640 |",
             "|---:|---:|---:|---:|---:|---:|"]
    exact = {576: 0, 640: 0}
    for r in rows:
        rb, seg, pay = int(r["so_rcvbuf"]), int(r["segments"]), int(r["payload"])
        k = int(r["delivered"]) * seg / int(r["sent"])
        cells = []
        for head in (576, 640):
            d, n = simulated(simloop, rb, seg, pay, head)
            s = d * seg / n
            exact[head] += abs(s - k) < 0.05
            cells.append(f"{s:.2f}")
        lines.append(f"| {rb} | {seg} | {pay} | {k:.2f} | {cells[0]} | {cells[1]} |")
    lines.append(f"\nThe same count as the kernel: {exact[576]} of {len(rows)} points with the "
                 f"576-byte head, {exact[640]} of {len(rows)} with 640.")
    lines.append(END)
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) != 3 or argv[1] not in ("measure", "table", "check"):
        sys.exit(__doc__)
    mode, simloop = argv[1], argv[2]
    if mode == "measure":
        measure(simloop)
        return
    text = table(simloop)
    if mode == "table":
        print(text, end="")
        return
    doc = open(REPORT).read()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"rcvbuf.py: {REPORT}: no table between {BEGIN} and {END}")
    if doc[doc.index(BEGIN):doc.index(END) + len(END)] + "\n" != text:
        print(text, end="")
        sys.exit(f"rcvbuf.py: {REPORT}'s table differs from what the kept data give (printed above)")
    print(f"{REPORT}: the table is what the kept data give")


if __name__ == "__main__":
    main(sys.argv)
