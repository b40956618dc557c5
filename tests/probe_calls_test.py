#!/usr/bin/python3
"""The probe sees every call the code makes: for every destination, alignment
policy, loop copy and service of the native harness's loop, the probe's
entries of each function of the stack equal the calls callgrind counts of
that function in the same run.

    probe_calls_test.py PROBE_CALLS OWNERS [--packets N] [--show PATH ...]

PROBE_CALLS is simloop-probe-calls (tests/probe_calls_main.cc): the harness's
loop with a counting probe, built with no inlining so that every function
of the stack is a function callgrind can count (the release harness inlines
some of them). OWNERS is configs/harness/owners.txt: the I-cache model
fetches an owner's code at the probe's entry, so each function below must
be listed under its owner there (where the release harness keeps it out of
line). Also compared: the probe's allocations and frees (mbufs and
clusters) with the calls of Zone::alloc and Zone::free.

Needs valgrind (exit 77, skipped, without it). About a minute on two cores.
"""
import argparse
import collections
import concurrent.futures
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Each function of the BSD stack's table (net::bsd::kFns), as the function
# of the code whose call it reports: (class, method).
FUNCTIONS = {
    "sendto": ("bsd::Stack", "sendto"),
    "sosend_dgram": ("bsd::Stack", "sosend_dgram"),
    "m_uiotombuf": ("bsd::Mbufs", "uiotombuf"),
    "udp_output": ("bsd::Stack", "udp_output"),
    "ip_output": ("bsd::Stack", "ip_output"),
    "ether_output": ("bsd::Stack", "ether_output"),
    "ether_output_frame": ("bsd::Stack", "ether_output_frame"),
    "looutput": ("bsd::Stack", "looutput"),
    "if_simloop": ("bsd::Stack", "if_simloop"),
    "netisr_dispatch": ("bsd::Stack", "netisr_run"),
    "ip_input": ("bsd::Stack", "ip_input"),
    "udp_input": ("bsd::Stack", "udp_input"),
    "sbappend": ("bsd::Stack", "sbappendaddr"),
    "soreceive": ("bsd::Stack", "recvfrom"),
    "nic_txeof": ("bsd::Stack", "nic_txeof"),
}
HELPERS = {"alloc": "simloop::net::Zone::alloc(", "free": "simloop::net::Zone::free("}

DESTS = ("loopback", "broadcast", "wire", "self")
ALIGNS = ("none", "copy-down", "strict", "copy-down-unsafe")
COPIES = ("m_copy", "m_dup")
SERVICES = ("full", "send-only")


# The Linux stack's functions are found in its sources: each FnScope's Fn
# in the member function that opens it, each Fn's name in its table.
LINUX_SOURCES = ("sim/stack/linux/stack_impl.h", "sim/stack/linux/stack_input_impl.h",
                 "sim/stack/linux/stack_nf_impl.h")


def linux_functions(src):
    fns_h = open(os.path.join(src, "sim/stack/linux/fns.h")).read()
    enum = re.search(r"enum class Fn : \w+ \{(.*?)\};", fns_h, re.S).group(1)
    enum_names = [m.group(1) for m in re.finditer(r"^\s*([a-z_0-9]+),", enum, re.M)]
    table = re.search(r"kFns\s*(?:=|\{)(.*?)\};", fns_h, re.S).group(1)
    table_names = re.findall(r'\{"([^"]+)"', table)
    if len(enum_names) != len(table_names):
        raise SystemExit(f"fns.h: {len(enum_names)} Fn values, {len(table_names)} table rows")
    name_of = dict(zip(enum_names, table_names))
    out = {}
    for rel in LINUX_SOURCES:
        method = None
        for line in open(os.path.join(src, rel)):
            m = re.match(r"^[A-Za-z].*::([a-z_0-9]+)\(", line)
            if m:
                method = m.group(1)
            m = re.search(r"FnScope<P> scope\(probe_, Fn::([a-z_0-9]+)\)", line)
            if m and method:
                out[name_of[m.group(1)]] = ("lnx::Stack", method)
    return out


def symbol(cls, method, probe):
    return f"simloop::net::{cls}<simloop::net::{probe}>::{method}("


def callgrind_calls(path):
    """Calls of each function (demangled name) in a callgrind output file,
    summed over every call site."""
    names, calls, cfn = {}, collections.Counter(), None
    with open(path) as f:
        for line in f:
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if m:
                kind, i, name = m.groups()
                if name:
                    names[i] = name
                if kind == "cfn":
                    cfn = i
                continue
            if line.startswith("calls="):
                calls[names[cfn]] += int(line[len("calls="):].split()[0])
    return calls


def count_of(calls, prefix):
    return sum(n for name, n in calls.items() if name.startswith(prefix))


def run_path(prog, path, packets, tmp, functions=None, stack="bsd"):
    functions = FUNCTIONS if functions is None else functions
    helpers = HELPERS if stack == "bsd" else {}
    dest, align, copy, service = path
    out = os.path.join(tmp, "callgrind." + "-".join(path))
    args = [prog, "--stack", stack, "--dest", dest, "--align", align, "--copy", copy,
            "--service", service, "-n", str(packets), "--warmup", "10"]
    p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *args],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return path, None, f"exit {p.returncode}: {p.stderr[-2000:]}"
    probe, info = {}, {}
    for line in p.stdout.splitlines():
        w = line.split(" ", 2)
        if w[0] == "fn":
            probe[w[1]] = int(w[2])
        elif w[0] in HELPERS:
            if w[0] in helpers:
                probe[w[0]] = int(w[1])
        else:
            info[w[0]] = " ".join(w[1:])
    calls = callgrind_calls(out)
    os.unlink(out)
    rows = []
    for fn, (cls, method) in functions.items():
        rows.append((fn, f"{cls}::{method}", probe.get(fn),
                     count_of(calls, symbol(cls, method, "CountingProbe"))))
    for h, prefix in helpers.items():
        rows.append((f"({h})", prefix.rstrip("(").split("::", 2)[2], probe.get(h),
                     count_of(calls, prefix)))
    missing = [fn for fn in probe if fn not in functions and fn not in helpers]
    note = f"the probe reports functions this test does not know: {missing}" if missing else ""
    return path, (rows, info), note


def table(path, rows, info):
    lines = [f"### {' '.join(path)} ({info.get('packets', '?')} timed packets, "
             f"fault: {info.get('fault', '?')})",
             f"{'function':20} {'code':26} {'probe':>7} {'callgrind':>9}"]
    for fn, code, probe, cg in rows:
        mark = "" if probe == cg else "   <-- differ"
        lines.append(f"{fn:20} {code:26} {probe if probe is not None else '-':>7} {cg:>9}{mark}")
    return "\n".join(lines)


def check_owners(owners_file):
    """Each function above is listed under its owner in the harness's symbol
    map (the release harness's instantiation, Stack<NullProbe>)."""
    listed = collections.defaultdict(set)
    mangled = []
    with open(owners_file) as f:
        for line in f:
            w = line.split("#", 1)[0].split()
            if len(w) == 2:
                mangled.append(w)
    demangled = subprocess.run(["c++filt"], input="\n".join(s for s, _ in mangled),
                               capture_output=True, text=True, check=True).stdout.splitlines()
    for (_, owner), name in zip(mangled, demangled):
        listed[name.split("(", 1)[0] + "("].add(owner)
    bad = []
    for fn, (cls, method) in FUNCTIONS.items():
        owners = listed.get(symbol(cls, method, "NullProbe"), set())
        if fn not in owners:
            bad.append(f"{owners_file}: {cls}::{method} is not listed under {fn} "
                       f"(listed under: {sorted(owners) or 'nothing'})")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("probe_calls")
    ap.add_argument("owners")
    ap.add_argument("--packets", type=int, default=300)
    ap.add_argument("--show", nargs="*", default=["wire-none-m_copy-full",
                                                  "loopback-none-m_copy-full"],
                    help="paths whose whole table is printed (DEST-ALIGN-COPY-SERVICE)")
    ap.add_argument("--only", default="", help="only the paths whose name matches this regex")
    ap.add_argument("--stack", default="bsd", choices=("bsd", "linux"),
                    help="linux: the Linux stack's functions, found in its sources (--source)")
    ap.add_argument("--source", default=".", help="the source tree (with --stack linux)")
    a = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: skipped")
        return 77
    if a.stack == "linux":
        # Linux keeps IP headers aligned (none or strict) and loops a
        # broadcast back as a clone (m_copy); its owners are not the harness's.
        functions, failures = linux_functions(a.source), []
        if len(functions) < 30:
            failures.append(f"only {len(functions)} Linux functions found in {LINUX_SOURCES}")
        space = itertools.product(DESTS, ("none", "strict"), ("m_copy",), SERVICES)
    else:
        functions, failures = FUNCTIONS, check_owners(a.owners)
        space = itertools.product(DESTS, ALIGNS, COPIES, SERVICES)
    paths = [p for p in space if re.search(a.only, "-".join(p))]
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(
            lambda p: run_path(a.probe_calls, p, a.packets, tmp, functions, a.stack), paths))
    for path, got, note in results:
        name = "-".join(path)
        if got is None:
            failures.append(f"{name}: the run failed: {note}")
            continue
        rows, info = got
        differ = [r for r in rows if r[2] != r[3]]
        if note:
            failures.append(f"{name}: {note}")
        if differ:
            failures.append(f"{name}: {', '.join(r[0] for r in differ)} differ")
        if differ or name in a.show:
            print(table(path, rows, info))
        else:
            print(f"{name}: {len(rows)} functions agree "
                  f"({', '.join(f'{r[0]} {r[2]}' for r in rows if r[2])})")
    for f in failures:
        print("FAIL:", f)
    print(f"{len(paths)} paths, {len(failures)} failures" if failures else
          f"{len(paths)} paths: every function's probe entries are its calls")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
