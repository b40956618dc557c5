#!/usr/bin/python3
"""simloop measure microbench: the JSON calibrate host records (the clock,
the null system call, the AF_UNIX round trip, the kernel's copy, memcpy at six sizes, the caches, the load), on
standard output and to -o; -o never through a link, and calibrate host
--from takes what it wrote as a host's microbenchmarks (--bench).

    measure_microbench_test.py SIMLOOP WORK_DIR
"""
import json
import pathlib
import shutil
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)


def run(*args):
    return subprocess.run([SIMLOOP, *map(str, args)], capture_output=True, text=True, timeout=120)


r = run("measure", "microbench")
check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-400:]}")
b = json.loads(r.stdout) if r.returncode == 0 else {}
for k in ("clock", "null_syscall", "memcpy", "caches", "host", "loadavg_before", "loadavg_after"):
    check(k in b, f"has {k}: {sorted(b)}")
check([c.get("bytes") for c in b.get("memcpy", [])] == [64, 256, 1024, 4096, 16384, 65536],
      f"memcpy sizes: {b.get('memcpy')}")
check(b.get("clock", {}).get("measured_mhz", 0) > 0 and b.get("null_syscall", {}).get("cpu_ns", 0) > 0,
      f"a clock and a null system call: {b.get('clock')} {b.get('null_syscall')}")
# The kernel's own code: a round trip through an AF_UNIX datagram pair costs
# more than the two system calls it makes.
ks = b.get("kernel_socket", {})
check(ks.get("cpu_ns", 0) > 2 * b.get("null_syscall", {}).get("cpu_ns", 0) > 0,
      f"a kernel socket round trip beside the null system call: {ks} {b.get('null_syscall')}")
# The kernel's own copy: a pread of a page costs more than one of 256 B, and
# its ns per byte is what the two say.
kc = b.get("kernel_copy", {})
check(kc.get("cpu_ns_4096", 0) > kc.get("cpu_ns_256", 0) > 0 and
      abs(kc.get("ns_per_byte", 0) * 3840 - (kc.get("cpu_ns_4096", 0) - kc.get("cpu_ns_256", 0))) < 1e-6,
      f"the kernel's copy to user space: {kc}")
import os
if os.path.isdir("/sys/devices/system/cpu/vulnerabilities"):
    v = b.get("vulnerabilities", {})
    check(len(v) > 0 and all(isinstance(x, str) and x for x in v.values()),
          f"the kernel's mitigations, from sysfs: {v}")

out = WORK / "mb.json"
r = run("measure", "microbench", "-o", out)
check(r.returncode == 0 and json.loads(out.read_text()).get("host") == b.get("host"), f"-o: {r.stderr[-300:]}")
(WORK / "target").write_text("keep\n")
(WORK / "link.json").symlink_to(WORK / "target")
r = run("measure", "microbench", "-o", WORK / "link.json")
check(r.returncode == 2 and (WORK / "target").read_text() == "keep\n", f"-o through a link: {r.returncode} {r.stderr[-300:]}")
finish()
