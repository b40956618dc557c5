#!/bin/sh
# This machine's own kernel, function by function, for calibrating the
# simulated Linux stack: measure kernel --split on 127.0.0.1, both paths,
# six payloads, under perf (needs root). Writes data/split.csv (one row per
# repeat, path, payload and charge) with data/split.csv.machine.json, and
# data/machine.txt (CPU, kernel, load before and after).
# Usage: experiments/validation/linux/measure.sh [SIMLOOP]
#   OUT      the files' name in data/ (default split: split.csv, split.machine.txt)
#   PACKETS  timed datagrams per payload and repeat (default 100000)
#   REPEATS  independent runs (default 5)
#
# Fixed before any result was seen:
#   payloads  18 64 256 512 1024 1472 B (1472: a 1500-byte MTU's largest)
#   paths     unconnected (sendto with the address) and connected (send)
#   training  unconnected at 18, 256 and 1472 B; every other point held out
#   statistic the median over repeats of each quantity
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
simloop=${1:-${SIMLOOP:-$root/build/simloop}}
case $simloop in /*) ;; */*) simloop=$PWD/$simloop ;; esac
packets=${PACKETS:-100000}
repeats=${REPEATS:-5}
out=${OUT:-split}
data=$here/data
mkdir -p "$data"
cd "$root"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
"$simloop" measure kernel --split --path unconnected,connected \
  -l 18,64,256,512,1024,1472 -n "$packets" -r "$repeats" \
  --format csv -o "$data/$out.csv" >/dev/null
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "command: $(basename "$simloop") measure kernel --split --path unconnected,connected -l 18,64,256,512,1024,1472 -n $packets -r $repeats"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ) ($(($(date +%s) - t0)) s)"
  echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores, $(sed -n 's/^cpu MHz[[:space:]]*: //p' /proc/cpuinfo | head -1) MHz"
  echo "kernel: $(uname -srm)"
  echo "loadavg before: $load_before"
  echo "loadavg after: $load_after"
} >"$data/$out.machine.txt"
cat "$data/$out.machine.txt"
