"""The end-to-end scripts' checks: each failed check is printed and noted,
and finish() ends the script with how many failed (exit 1 if any)."""
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def finish():
    print(f"{len(failures)} failures" if failures else "ok")
    sys.exit(1 if failures else 0)
