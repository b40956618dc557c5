"""link_order.sh refuses, before it builds anything, what it cannot run with:
exit 2 and a message naming the variable or tool and what was expected."""
import os
import shutil
import subprocess
import sys
import tempfile

from checks import check, finish

root = sys.argv[1]
script = os.path.join(root, "experiments", "validation", "link_order.sh")


def run(args, env_extra, path=None):
    env = dict(os.environ, LINK_BUILD=os.path.join(d, "link-build"), **env_extra)
    if path is not None:
        env["PATH"] = path
    return subprocess.run(["/bin/sh", script, *args], capture_output=True, text=True, env=env,
                          cwd=tempfile.gettempdir())


with tempfile.TemporaryDirectory() as d:
    r = run([os.path.join(d, "no-simloop")], {})
    check(r.returncode == 2 and f"SIMLOOP '{d}/no-simloop': no such program" in r.stderr,
          f"a missing simloop refused (got {r.returncode}: {r.stderr})")
    # A relative path is taken from where the script is started, not the tree.
    r = run(["no-such-dir/simloop"], {})
    check(r.returncode == 2 and
          f"SIMLOOP '{tempfile.gettempdir()}/no-such-dir/simloop'" in r.stderr,
          f"a relative simloop path read from the working directory (got {r.stderr})")
    for var, val, want in (("BAD", "0", "BAD '0': expected at least 1"),
                           ("CANDIDATES", "many", "CANDIDATES 'many': expected a whole number"),
                           ("BUDGET", "9s", "BUDGET '9s': expected a whole number")):
        r = run(["/bin/true"], {var: val})
        check(r.returncode == 2 and want in r.stderr, f"{var}={val!r} refused (got {r.stderr})")
    r = run(["/bin/true"], {"BAD": "99", "CANDIDATES": "1"})
    check(r.returncode == 2 and "BAD 99: more than the 7 layouts built (6 CMakeLists.txt defines, "
          "CANDIDATES 1)" in r.stderr, f"BAD beyond the layouts refused (got {r.stderr})")
    # Only what the script needs before its checks on PATH: cmake is missing.
    os.symlink(shutil.which("dirname"), os.path.join(d, "dirname"))
    r = run(["/bin/true"], {}, path=d)
    check(r.returncode == 2 and "cmake not found on PATH" in r.stderr,
          f"a missing tool named (got {r.returncode}: {r.stderr})")
    check(not os.path.exists(os.path.join(d, "link-build")), "nothing configured or built")
finish()
