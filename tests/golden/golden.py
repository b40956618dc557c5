#!/usr/bin/python3
"""Golden outputs of the shipped experiments.

Each `<experiment>.golden` file holds the exact terminal output and result
CSV of one `simloop run` of a shipped experiment. The wall time column is
left out (it is the only value that differs between identical runs) and the
output directory is written as OUT.

    golden.py SIMLOOP check NAME    # run one experiment, diff against its file
    golden.py SIMLOOP regen [NAME]  # rewrite the files (on purpose, in a
                                    # commit that says why the numbers moved)
"""
import csv
import difflib
import io
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# Columns that differ between two identical runs.
VOLATILE = {"wall_s"}


def experiments():
    """Every shipped experiment, by golden name (its path with / as -)."""
    files = sorted(ROOT.glob("experiments/*.yaml")) + sorted(ROOT.glob("experiments/seed/*.yaml"))
    return {str(f.relative_to(ROOT / "experiments")).replace("/", "-")[: -len(".yaml")]: f
            for f in files}


def render(simloop, exp):
    rel = exp.relative_to(ROOT)
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([simloop, "-q", "run", str(rel), "-o", out], cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
        text = [f"$ simloop run {rel}", f"exit {p.returncode}"]
        text += p.stdout.replace(out, "OUT").splitlines()
        if p.stderr.strip():
            text += ["--- stderr"] + p.stderr.replace(out, "OUT").splitlines()
        for f in sorted(pathlib.Path(out).glob("*.csv")):
            rows = list(csv.reader(io.StringIO(f.read_text())))
            keep = [i for i, h in enumerate(rows[0]) if h not in VOLATILE]
            text.append(f"--- {f.name}")
            text += [",".join(r[i] for i in keep) for r in rows]
    return "\n".join(text) + "\n"


def main(argv):
    if len(argv) < 3 or argv[2] not in ("check", "regen"):
        print(__doc__, file=sys.stderr)
        return 2
    simloop, mode = argv[1], argv[2]
    exps = experiments()
    names = argv[3:] or sorted(exps)
    bad = 0
    for name in names:
        if name not in exps:
            print(f"golden: no shipped experiment named {name}", file=sys.stderr)
            return 2
        got = render(simloop, exps[name])
        path = HERE / f"{name}.golden"
        if mode == "regen":
            path.write_text(got)
            print(f"wrote {path.relative_to(ROOT)}")
            continue
        want = path.read_text() if path.exists() else ""
        if got != want:
            bad += 1
            sys.stdout.writelines(difflib.unified_diff(
                want.splitlines(True), got.splitlines(True), f"{name}.golden (expected)",
                f"{name} (this build)"))
            print(f"golden: {name} differs; if the change is on purpose, rerun with regen "
                  "and say why in the commit")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
