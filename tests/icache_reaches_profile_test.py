#!/usr/bin/python3
"""Every function a profile of today's harness says runs per packet is fetched
by the I-cache model's replay, on every path below: no owners-file gap leaves
code out of the prediction. Then the check itself: an owners file without
m_adj under the receive functions that call it makes `simloop icache` name
m_adj as never fetched (its only owner's event, if_simloop, never comes
inside udp_input, so the model fetched none of it).

    icache_reaches_profile_test.py SIMLOOP HARNESS OWNERS

Needs valgrind (exit 77, skipped, without it). About half a minute.
"""
import os
import shutil
import subprocess
import sys
import tempfile

PATHS = {
    "loopback-18": ["-l", "18", "--dest", "loopback"],
    "loopback-600": ["-l", "600", "--dest", "loopback"],
    "self-1024": ["-l", "1024", "--dest", "self"],
    "self-300-copy-down": ["-l", "300", "--dest", "self", "--align", "copy-down"],
    "broadcast-1024": ["-l", "1024", "--dest", "broadcast", "--copy", "m_copy"],
    "broadcast-256-dup": ["-l", "256", "--dest", "broadcast", "--copy", "m_dup"],
    "wire-18": ["-l", "18", "--dest", "wire"],
}
NEVER = "is never fetched"
ADJ = "_ZN7simloop3net3bsd5MbufsINS0_9NullProbeEE3adjEPNS1_4MbufEi"


def icache(simloop, harness, args, profile, owners):
    r = subprocess.run([simloop, "-q", "icache", harness, *args, "--profile", profile,
                        "--owners", owners, "--I1", "4096,1,64"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"simloop icache {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r.stderr


def main():
    simloop, harness, owners = sys.argv[1:4]
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: skipped")
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        profiles = {}
        for name, args in PATHS.items():
            profiles[name] = os.path.join(tmp, f"{name}.txt")
            subprocess.run([simloop, "-q", "measure", "profile", harness, *args, "--packets",
                            "200,1200", "-o", profiles[name]], check=True,
                           stdout=subprocess.DEVNULL)
            err = icache(simloop, harness, args, profiles[name], owners)
            print(f"{name}: {'code left out' if NEVER in err else 'every hot function fetched'}")
            if NEVER in err:
                failures.append(f"{name}: {err.strip()}")
        # The check: m_adj listed under if_simloop alone.
        gap = os.path.join(tmp, "owners.txt")
        with open(owners) as f, open(gap, "w") as g:
            for line in f:
                w = line.split()
                if len(w) == 2 and w[0] == ADJ and w[1] != "if_simloop":
                    continue
                g.write(line)
        err = icache(simloop, harness, PATHS["self-1024"], profiles["self-1024"], gap)
        print(f"self-1024 with m_adj under if_simloop alone: {err.strip()}")
        if NEVER not in err or ADJ not in err:
            failures.append("the owners file without m_adj under udp_input: no warning naming it")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
