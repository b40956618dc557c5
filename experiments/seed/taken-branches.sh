#!/bin/sh
# Taken conditional branches per hot line of the real stack's code (the basis
# of refill_cycles in configs/machines/athlon-xp-2700.yaml). Runs the native
# harness under callgrind for each path; needs valgrind and a build.
#   experiments/seed/taken-branches.sh [path/to/simloop-harness]
set -eu
here=$(dirname "$0")
harness=${1:-build/simloop-harness}
[ -x "$harness" ] || { echo "no harness at $harness: build first (cmake --build build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
packets=10000 warmup=1000
for dest in wire loopback; do
  valgrind --tool=callgrind --collect-jumps=yes --dump-instr=yes \
    --callgrind-out-file="$tmp/$dest.out" \
    "$harness" --payload 18 --dest "$dest" --packets $packets --warmup $warmup \
    >/dev/null 2>"$tmp/$dest.err" || { cat "$tmp/$dest.err" >&2; exit 1; }
  printf '%s, 18 B: ' "$dest"
  python3 "$here/taken_branches.py" "$tmp/$dest.out" --packets $((packets + warmup))
done
