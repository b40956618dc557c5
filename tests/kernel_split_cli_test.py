#!/usr/bin/python3
"""measure kernel --split on this machine's kernel, end to end.

Runs the kernel loop of both paths under perf and checks what a user reads:
each simulated Linux function that the UDP path always runs has samples,
every sample is in a row (none dropped), the hypervisor's share is said, and
-o writes the rows and the machine beside them. Without root, perf or
kernel symbols, simloop must exit 2 naming which; the test is then skipped
(77), as it measures nothing.
"""
import csv
import io
import json
import pathlib
import subprocess
import sys
import tempfile

# Functions every datagram runs through on loopback, on both paths.
ALWAYS = ["__sys_sendto", "udp_sendmsg", "__ip_append_data", "ip_finish_output2",
          "loopback_xmit", "__netif_receive_skb_core", "__udp4_lib_lookup",
          "__udp_enqueue_schedule_skb", "__sys_recvfrom", "udp_recvmsg"]


def main(simloop, symbols):
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d) / "split.csv"
        p = subprocess.run([simloop, "measure", "kernel", "--split", "--symbols", symbols,
                            "-l", "18,1000", "--path", "unconnected,connected", "-n", "30000",
                            "--period", "20000", "--rounds", "3", "-o", str(out),
                            "--format", "csv"], capture_output=True, text=True, timeout=300)
        if p.returncode == 2 and any(w in p.stderr for w in ("root", "perf", "kallsyms")):
            print("skipped:", p.stderr.strip().splitlines()[-1])
            return 77
        if p.returncode != 0:
            print(p.stderr)
            return 1
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        bad = []
        for path in ("unconnected", "connected"):
            for payload in ("18", "1000"):
                mine = [r for r in rows if r["path"] == path and r["payload"] == payload]
                fns = {r["name"] for r in mine if r["kind"] == "function"}
                missing = [f for f in ALWAYS if f not in fns]
                # Generous: a function of the path may miss a sample or two.
                if len(missing) > 2:
                    bad.append(f"{path} {payload} B: no samples in {missing}")
                share = sum(float(r["share"]) for r in mine)
                if abs(share - 1) > 1e-3:  # each share is written to 6 digits
                    bad.append(f"{path} {payload} B: shares sum to {share}, not 1")
                if not any(r["kind"] == "unmapped" and r["charged_to"] for r in mine):
                    bad.append(f"{path} {payload} B: no unmapped helper listed under a caller")
        if rows != list(csv.DictReader(io.StringIO(out.read_text()))):
            bad.append("-o wrote other rows than stdout")
        machine = json.loads(pathlib.Path(str(out) + ".machine.json").read_text())
        for k in ("cpu_model", "kernel", "perf", "hypervisor"):
            if k not in machine:
                bad.append(f"machine.json has no '{k}'")
        for b in bad:
            print("FAIL", b)
        print(f"{len(rows)} rows, {len(bad)} problems")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
