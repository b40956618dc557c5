#!/bin/sh
# Builds the example sender the way `simloop layout` needs a program built:
# every function in a section of its own (-ffunction-sections), linked by
# ld.lld with a link map (-Map), statically, so that the C library's code the
# loop runs is in the map too (its sections stay where the linker puts them).
# With ORDER_FILE, the functions are placed in that order
# (--symbol-ordering-file), as `simloop layout --out-dir` writes orders.
#
#   experiments/program/build.sh OUT [ORDER_FILE]
#
# Writes OUT (the program) and OUT.map. CC defaults to cc.
set -eu
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 OUT [ORDER_FILE]" >&2; exit 2; }
out=$1 order=${2:-}
src=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-cc}
command -v ld.lld >/dev/null 2>&1 || { echo "$0: ld.lld not found on PATH (apt install lld)" >&2; exit 2; }
[ -z "$order" ] || [ -f "$order" ] || { echo "$0: $order: no such order file" >&2; exit 2; }
mkdir -p "$(dirname "$out")"
objs=$(mktemp -d)
trap 'rm -rf "$objs"' EXIT
# The objects in this order: the link places their sections so by default.
for f in udp_sender tags record stats link; do
  "$cc" -O2 -Wall -Wextra -ffunction-sections -c "$src/$f.c" -o "$objs/$f.o"
done
set -- -static -fuse-ld=lld "-Wl,-Map=$out.map"
[ -z "$order" ] || set -- "$@" "-Wl,--symbol-ordering-file=$order"
"$cc" "$@" "$objs/udp_sender.o" "$objs/tags.o" "$objs/record.o" "$objs/stats.o" "$objs/link.o" -o "$out"
