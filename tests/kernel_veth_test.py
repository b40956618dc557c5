#!/usr/bin/python3
"""measure kernel --path veth on this machine's kernel, and what it leaves.

As root: every veth path (unicast, connected, broadcast) delivers each
datagram sent, its rows say dest veth; the host namespace's links and named
namespaces are the same after a run as before, and after a run killed with
SIGKILL while it sends. Without root (or without ip), simloop must exit 2
saying so and write nothing; the rest is then skipped (77).
"""
import csv
import io
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def host_state():
    ip = shutil.which("ip") or "/usr/sbin/ip"
    links = subprocess.run([ip, "-o", "link"], capture_output=True, text=True, check=True)
    netns = subprocess.run([ip, "netns", "list"], capture_output=True, text=True, check=True)
    # Counters and states move between calls; what exists is the names.
    names = sorted(line.split(":")[1].strip() for line in links.stdout.splitlines())
    return names, sorted(netns.stdout.splitlines())


def namespace_links(pids):
    """The network namespaces the processes' threads are in or hold open."""
    out = set()
    for pid in pids:
        links = list(pathlib.Path(f"/proc/{pid}/task").glob("*/ns/net"))
        links += list(pathlib.Path(f"/proc/{pid}/fd").glob("*"))
        for link in links:
            try:
                target = os.readlink(link)
            except OSError:
                continue
            if target.startswith("net:["):
                out.add(target)
    return out


def all_pids():
    return [p.name for p in pathlib.Path("/proc").iterdir() if p.name.isdigit()]


def main(simloop):
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d) / "veth.csv"
        cmd = [simloop, "measure", "kernel", "--path", "veth,veth-connected,veth-broadcast",
               "-l", "18,1000", "-n", "3000", "--rounds", "3", "--format", "csv"]
        if os.geteuid() != 0:
            p = subprocess.run(cmd + ["-o", str(out)], capture_output=True, text=True, timeout=60)
            if p.returncode != 2 or "needs root" not in p.stderr or out.exists():
                print("FAIL without root: exit", p.returncode, p.stderr)
                return 1
            print("skipped: not root (refused with exit 2, nothing written)")
            return 77
        # Root without iproute2's ip, or in a container that denies new
        # network namespaces: simloop must refuse (exit 2, nothing written).
        if not (shutil.which("ip") or os.path.exists("/usr/sbin/ip") or os.path.exists("/sbin/ip")):
            p = subprocess.run(cmd + ["-o", str(out)], capture_output=True, text=True, timeout=60)
            if p.returncode != 2 or "iproute2" not in p.stderr or out.exists():
                print("FAIL without ip: exit", p.returncode, p.stderr)
                return 1
            print("skipped: no ip (refused with exit 2, nothing written)")
            return 77
        before = host_state()
        p = subprocess.run(cmd + ["-o", str(out)], capture_output=True, text=True, timeout=120)
        if p.returncode == 2 and "network namespace" in p.stderr and not out.exists():
            print("skipped:", p.stderr.strip())
            return 77
        if p.returncode != 0:
            print(p.stderr)
            return 1
        bad = []
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        for path in ("veth", "veth-connected", "veth-broadcast"):
            mine = [r for r in rows if r["path"] == path]
            if len(mine) != 2:
                bad.append(f"{path}: {len(mine)} rows, expected 2")
            for r in mine:
                if int(r["delivered"]) != int(r["packets"]) or int(r["packets"]) != 3000:
                    bad.append(f"{path} {r['payload']} B: {r['delivered']} of {r['packets']} "
                               "delivered")
                want_bytes = int(r["delivered"]) * int(r["payload"])
                if int(r["delivered_bytes"]) != want_bytes:
                    bad.append(f"{path} {r['payload']} B: {r['delivered_bytes']} bytes")
                want = "veth-broadcast" if path == "veth-broadcast" else "veth"
                if r["dest"] != want:
                    bad.append(f"{path}: dest {r['dest']}, expected {want}")
        if not out.exists():
            bad.append("-o wrote nothing")
        if host_state() != before:
            bad.append(f"host changed by a run: {before} -> {host_state()}")

        # Killed mid-run: the namespaces went with the process.
        host_ns = os.readlink("/proc/self/ns/net")
        k = subprocess.Popen([simloop, "measure", "kernel", "--path", "veth", "-l", "18",
                              "-n", "100000000", "--format", "csv"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # The run holds its two namespaces by file descriptors while it sends.
        seen = set()
        for _ in range(200):
            time.sleep(0.05)
            seen = namespace_links([k.pid]) - {host_ns}
            if len(seen) >= 2 or k.poll() is not None:
                break
        time.sleep(0.5)
        if len(seen) != 2:
            bad.append(f"the run held {len(seen)} namespaces of its own, expected 2")
        if k.poll() is not None:
            bad.append(f"the long run ended by itself (exit {k.returncode})")
        k.send_signal(signal.SIGKILL)
        k.wait()
        time.sleep(0.5)
        if host_state() != before:
            bad.append(f"host changed after SIGKILL: {before} -> {host_state()}")
        left = namespace_links(all_pids()) & seen
        if left:
            bad.append(f"namespaces still held after SIGKILL: {left}")
        for b in bad:
            print("FAIL", b)
        print(f"{len(rows)} rows checked; host links and named namespaces unchanged: "
              f"{not any('host changed' in b for b in bad)}")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
