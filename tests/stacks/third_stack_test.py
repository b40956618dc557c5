#!/usr/bin/python3
"""A third stack joins by its own folder and one line, and runs everywhere.

simloop-poll is simloop built with tests/stacks/poll added to the stack list
(tests/stacks/poll/extra_stacks.h). This test runs it through check, run,
sweep, explain, measure native and the key reference, and holds what each
says to what the poll stack is: no system call per datagram, its own keys,
its own refusals. It also holds that simloop itself knows nothing of it.

    third_stack_test.py SIMLOOP_POLL SIMLOOP
"""
import csv
import json
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent / "poll"
problems = []


def run(args, expect=0):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if p.returncode != expect:
        problems.append(f"{' '.join(map(str, args))}: exit {p.returncode}, expected {expect}\n"
                        f"{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p


def check(cond, what):
    if not cond:
        problems.append(what)


def main():
    poll, plain = sys.argv[1], sys.argv[2]
    exp = HERE / "poll.yaml"
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        run([poll, "check", exp])
        # run: the wire and loopback, with the result's own account.
        for dest in ("wire", "loopback"):
            out = d / dest
            run([poll, "-q", "run", exp, "--set", f"workload.dest={dest}", "-o", out])
            rows = list(csv.DictReader(open(out / "poll-wire.csv")))
            check(len(rows) == 1, f"run {dest}: one row, got {len(rows)}")
            r = rows[0]
            check(r.get("stack") == "poll-stack",
                  f"run {dest}: the row names the poll stack's profile: {r.get('stack')}")
            check(float(r["kpps"]) > 0, f"run {dest}: kpps {r['kpps']}")
            # No system call per datagram: the syscall stage is empty.
            check(float(r.get("cycles_syscall", 0) or 0) == 0,
                  f"run {dest}: the poll stack makes no system call, got "
                  f"{r.get('cycles_syscall')} cycles")
            res = json.load(open(out / "poll-wire.json"))
            check(json.dumps(res).count('"poll"') > 0, f"run {dest}: the result says stack.kind poll")
            if dest == "loopback":
                check(int(r["delivered"]) > 0, f"run loopback: datagrams delivered: {r['delivered']}")
        # Its breakdown speaks its words for the stages (its table's names).
        p = run([poll, "run", exp, "-o", d / "words"])
        check("  ring " in p.stdout and "transmit ring" in p.stdout and "  driver " not in p.stdout,
              f"run: the driver stage is the poll stack's ring:\n{p.stdout}")
        # Its own keys, and its refusals naming the key.
        run([poll, "check", exp, "--set", "options.poll.buffers=64"])
        p = run([poll, "check", exp, "--set", "options.poll.buffers=0"], expect=2)
        check("options.poll.buffers" in p.stderr, f"a bad poll key is named: {p.stderr}")
        p = run([poll, "check", exp, "--set", "workload.dest=broadcast"], expect=2)
        check("workload.dest" in p.stderr and "poll stack" in p.stderr,
              f"broadcast refused, naming workload.dest: {p.stderr}")
        p = run([poll, "check", exp, "--set", "options.linux.sndbuf=4096"], expect=2)
        check("applies to the linux stack only" in p.stderr,
              f"another stack's key is refused: {p.stderr}")
        p = run([poll, "check", exp, "--set", "options.copy=m_dup"], expect=2)
        check("applies to the bsd stack only" in p.stderr, f"a shared key it does not honour: {p.stderr}")
        # sweep: payloads and destinations, then resumed (nothing to redo).
        sw = d / "sweep"
        run([poll, "-q", "sweep", HERE / "poll-sweep.yaml", "-o", sw, "-j", "2"])
        rows = list(csv.DictReader(open(sw / "poll-sweep.csv")))
        rows = [{k.removeprefix("workload."): v for k, v in r.items()} for r in rows]
        check(len(rows) == 6, f"sweep: 6 points, got {len(rows)}")
        check(all(float(r["kpps"]) > 0 for r in rows), "sweep: every point has a rate")
        wire = {int(r["payload"]): float(r["kpps"]) for r in rows if r["dest"] == "wire"}
        check(wire.get(18, 0) >= wire.get(1472, 1e18),
              f"sweep: larger payloads copy more and take longer on the wire: {wire}")
        run([poll, "-q", "sweep", HERE / "poll-sweep.yaml", "-o", sw, "-j", "2", "--resume"])
        # explain: the wire against loopback, both on the poll stack.
        p = run([poll, "explain", exp, "--b-set", "workload.dest=loopback"])
        check("rx_poll" in p.stdout and "pkt_recv" in p.stdout,
              f"explain names the poll stack's functions:\n{p.stdout}")
        # explain against the BSD stack: its functions line up with BSD's by
        # the roles its table gives them (pkt_fill builds the datagram).
        bsd = HERE.parent.parent.parent / "experiments" / "seed-athlon.yaml"
        p = run([poll, "-q", "explain", bsd, exp, "--set", "workload.packets=2000", "-o",
                 d / "explain-bsd.json"])
        roles = {r["role"]: r for r in json.loads((d / "explain-bsd.json").read_text())["roles"]}
        udp = roles.get("UDP output", {})
        check("by role across stacks" in p.stdout
              and [f["function"] for f in udp.get("a_functions", [])] == ["udp_output"]
              and [f["function"] for f in udp.get("b_functions", [])] == ["pkt_fill"],
              f"explain against BSD: pkt_fill beside udp_output:\n{p.stdout}")
        # measure native: the real stack, timed in this process.
        p = run([poll, "measure", "native", "--stack", "poll", "-n", "20000", "--dest", "wire",
                 "--format", "csv"])
        rows = list(csv.DictReader(p.stdout.splitlines()))
        check(len(rows) == 1 and float(rows[0]["kpps"]) > 0 and rows[0]["stack"] == "poll",
              f"measure native --stack poll: {p.stdout}")
        # --split: each of its functions timed, in an instrumented run.
        p = run([poll, "measure", "native", "--stack", "poll", "--split", "-n", "20000",
                 "--dest", "loopback"])
        for fn in ("pkt_send", "pkt_fill", "rx_poll", "pkt_recv"):
            check(fn in p.stdout, f"measure native --split times {fn}:\n{p.stdout}")
        p = run([poll, "measure", "native", "--stack", "poll", "--harness", "x"], expect=2)
        check("--harness" in p.stderr, f"--harness refused on another stack: {p.stderr}")
        # The key reference lists its section and keys.
        p = run([poll, "config-reference"])
        check("options.poll.buffers" in p.stdout, "config-reference shows options.poll.buffers")
        # simloop itself has no poll stack.
        p = run([plain, "check", exp], expect=2)
        check("stack.kind" in p.stderr and "poll" in p.stderr,
              f"simloop without the poll stack refuses its profile at stack.kind: {p.stderr}")
    for pr in problems:
        print(pr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
