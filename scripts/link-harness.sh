#!/bin/sh
# Links a native harness build in a given function order, as `simloop layout
# --map ... --out-dir DIR` advises it (DIR/advice.order, or a baseline's
# order file), with ld.lld's --symbol-ordering-file.
#
#   scripts/link-harness.sh BUILD_DIR NAME ORDER_FILE [PAD_BYTES:BEFORE_UNIT]
#
# BUILD_DIR is a CMake build directory of this tree configured (or to be
# configured) with -DSIMLOOP_HARNESS_LINK_ORDER=ON; the build is added to its
# SIMLOOP_HARNESS_LAYOUTS as NAME (with the padding of the layout advised on,
# if it had one) and linked as BUILD_DIR/simloop-harness-NAME, its link map
# beside it (.map). Prints the build's path.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 BUILD_DIR NAME ORDER_FILE [PAD_BYTES:BEFORE_UNIT]" >&2; exit 2; }
build=$1 name=$2 order=$3 pad=${4:-0:}
root=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$order" ] || { echo "$order: no such order file" >&2; exit 2; }
case $name in *[!A-Za-z0-9_-]*|'') echo "NAME '$name': letters, digits, - and _ only" >&2; exit 2;; esac
case $pad in [0-9]*:*) ;; *) echo "padding '$pad': expected PAD_BYTES:BEFORE_UNIT" >&2; exit 2;; esac
order=$(cd "$(dirname "$order")" && pwd)/$(basename "$order")
case $order in *:*|*\;*) echo "$order: the path may hold no ':' or ';'" >&2; exit 2;; esac
# The layouts already configured there, this one replaced.
layouts=""
if [ -f "$build/CMakeCache.txt" ]; then
  layouts=$(sed -n 's/^SIMLOOP_HARNESS_LAYOUTS:STRING=//p' "$build/CMakeCache.txt" |
    tr ';' '\n' | grep -v "^$name:" | paste -sd';' -)
fi
[ -n "$layouts" ] || layouts="base:0:"
command -v ld.lld >/dev/null 2>&1 || { echo "$0: ld.lld not found on PATH (the link uses it)" >&2; exit 2; }
mkdir -p "$build"
log=$build/link-harness-$name.log
quiet() {  # "$@" with its output in $log; its end shown if it fails
  if ! "$@" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "$0: failed: $* (its whole output: $log)" >&2
    exit 1
  fi
}
quiet cmake -S "$root" -B "$build" -DSIMLOOP_HARNESS_LINK_ORDER=ON -DSIMLOOP_BUILD_TESTS=OFF \
  "-DSIMLOOP_HARNESS_LAYOUTS=$layouts;$name:$pad:$order"
quiet cmake --build "$build" --target "simloop-harness-$name"
echo "$build/simloop-harness-$name"
