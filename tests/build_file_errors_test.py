#!/usr/bin/python3
"""Every bad file of an experiment's layout.build is refused at its own key:
the experiment file, the line and column of that key (nm, profile, owners,
map or order), the bad file and its line where it has one, exit status 2.

    build_file_errors_test.py SIMLOOP DATA_DIR WORK_DIR
"""
import gzip
import pathlib
import subprocess
import sys

from checks import check, finish  # tests/checks.py

SIMLOOP, DATA, WORK = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
WORK.mkdir(parents=True, exist_ok=True)
LINK = DATA / "experiments" / "validation" / "data" / "link-order"
GOOD = {
    "nm": LINK / "c006-inet-13168.nm.gz",
    "profile": LINK / "profile-loopback-18.txt",
    "owners": DATA / "configs" / "harness" / "owners.txt",
    "map": LINK / "c006-inet-13168.map.gz",
    "order": WORK / "good.order",
}
# Two functions of the build, as ld.lld's --symbol-ordering-file names them.
(WORK / "good.order").write_text(
    "_ZN7simloop3net5StackINS0_9NullProbeEE10udp_outputERNS0_6SocketEPNS0_4MbufEjt\n"
    "_ZN7simloop3net5StackINS0_9NullProbeEE9ip_outputEPNS0_4MbufEPNS0_5IfnetEjjb\n")

# Bad files, and the line of each that is at fault (None: it has none).
(WORK / "bad.nm").write_text("ffffffff81000000 0000000000000010 T ok\nnot an nm line\n")
(WORK / "bad-profile.txt").write_text("# hot ranges\n0 16 sendto\nzz 16 sendto\n")
(WORK / "bad-owners.txt").write_text("sendto sendto\nudp_output\n")
(WORK / "bad-owner-name.txt").write_text("sendto sendto\n# the next owner runs nothing\n"
                                         "udp_output no_such_owner\n")
(WORK / "bad.map").write_text("             VMA              LMA     Size Align Out     In      "
                              "Symbol\n            zz01             0001        4     1 .text\n")
# A gzip file cut short: it cannot be read to its end.
whole = gzip.compress(("udp_output\n" * 4096).encode())
(WORK / "cut.order.gz").write_bytes(whole[:len(whole) // 2])

(WORK / "wrap.nm").write_text("ffffffffffffff00 0000000000001000 T x\n")
(WORK / "empty.order").write_text("# no names\n")
(WORK / "foreign.order").write_text("udp_output\nip_output\n")

CASES = [  # key, bad file, its line at fault, what the message says
    ("nm", WORK / "bad.nm", ":2:", "expected 'address [size] type name'"),
    ("nm", pathlib.Path("/dev/zero"), None, "'/dev/zero' is a character device; expected a file"),
    ("nm", WORK, None, "is a directory; expected a file"),
    ("nm", WORK / "wrap.nm", ":1:", "runs past the top of memory"),
    ("order", WORK / "empty.order", None, "names no symbol"),
    ("order", WORK / "foreign.order", None, "none of its 2 names is a function of this build"),
    ("nm", WORK / "no-such.nm", None, "no file named"),
    ("profile", WORK / "bad-profile.txt", ":3:", "expected 'OFFSET BYTES SYMBOL'"),
    ("profile", WORK / "no-such-profile.txt", None, "no file named"),
    ("owners", WORK / "bad-owners.txt", ":2:", "expected 'symbol owner'"),
    ("owners", WORK / "bad-owner-name.txt", ":3:", "expected an owner"),
    ("map", WORK / "bad.map", "line 2", "expected 'VMA LMA SIZE ALIGN NAME'"),
    ("order", WORK / "cut.order.gz", None, "cannot read the file"),
]

KEYS = ["nm", "profile", "owners", "map", "order"]


def experiment(bad_key, bad_file):
    """The experiment's text, and the line and column of each layout.build key."""
    lines = ["name: build-file-errors", "machine: i7-870", "stack: freebsd-head-2012",
             "workload:", "  payload: 18", "  packets: 100", "  dest: loopback",
             "  service: full", "interrupts:", "  enabled: false", "layout:", "  build:",
             "    hot_fraction: 1.0"]
    where = {}
    for key in KEYS:
        where[key] = (len(lines) + 1, 5)
        lines.append(f"    {key}: {bad_file if key == bad_key else GOOD[key]}")
    return "\n".join(lines) + "\n", where


for key, bad, bad_line, want in CASES:
    text, where = experiment(key, bad)
    exp = WORK / f"bad-{key}-{bad.name}.yaml"
    exp.write_text(text)
    name = f"layout.build.{key} = {bad.name}"
    p = subprocess.run([SIMLOOP, "check", str(exp)], cwd=WORK, capture_output=True, text=True,
                       timeout=300)
    check(p.returncode == 2, f"{name}: exit {p.returncode}, expected 2: {p.stderr}")
    line, col = where[key]
    at = f"{exp}:{line}:{col}: layout.build.{key}: "
    check(at in p.stderr, f"{name}: '{at}' not in {p.stderr!r}")
    check(bad.name in p.stderr, f"{name}: the bad file not named in {p.stderr!r}")
    if bad_line is not None:
        after = p.stderr[p.stderr.find(bad.name):]
        check(bad.name in p.stderr and bad_line in after.splitlines()[0],
              f"{name}: its line '{bad_line}' not named after the file in {p.stderr!r}")
    check(want in p.stderr, f"{name}: '{want}' not in {p.stderr!r}")

# The good files together load.
text, _ = experiment(None, None)
(WORK / "good.yaml").write_text(text)
p = subprocess.run([SIMLOOP, "check", str(WORK / "good.yaml")], cwd=WORK, capture_output=True,
                   text=True, timeout=300)
check(p.returncode == 0, f"the good build: exit {p.returncode}: {p.stderr}")

finish()
