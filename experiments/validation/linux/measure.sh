#!/bin/sh
# This machine's own kernel, function by function, for calibrating the
# simulated Linux stack: measure kernel --split on 127.0.0.1, both paths,
# eighteen payloads, under perf (needs root). Writes data/split.csv (one row per
# repeat, path, payload and charge) with data/split.csv.machine.json,
# data/split.microbench.json (the host's microbenchmarks) and
# data/machine.txt (CPU, kernel, load before and after).
# Usage: experiments/validation/linux/measure.sh [SIMLOOP]
#   OUT      the files' name in data/ (default split: split.csv, split.machine.txt)
#   PACKETS  timed datagrams per payload and repeat (default 100000)
#   REPEATS  independent runs (default 5)
#
# Fixed before this data set was measured (after a pilot run that showed
# where the kernel changes how it builds a datagram; none of its numbers is
# used):
#   payloads  18 to 1472 B (a 1500-byte MTU's largest), 3000 and 6000 B
#             (heads from kmalloc's caches), 9000 to 16000 B (heads of whole
#             pages: kmalloc_large), 20000 to 32000 B (data in the socket's
#             page frag, its page reused), 40000 B and up (a new page each
#             datagram), to 65507 B (lo's largest datagram)
#   paths     unconnected (sendto with the address) and connected (send)
#   training  unconnected at 18, 256, 1472, 12000 and 40000 B; every other
#             point held out, those above 40000 B by extrapolation
#   statistic the median over repeats of each quantity
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
simloop=${1:-${SIMLOOP:-$root/build/simloop}}
case $simloop in /*) ;; */*) simloop=$PWD/$simloop ;; esac
packets=${PACKETS:-100000}
repeats=${REPEATS:-5}
out=${OUT:-split}
payloads=18,64,256,512,1024,1472,3000,6000,9000,12000,16000,20000,24000,32000,40000,50000,60000,65507
data=$here/data
mkdir -p "$data"
cd "$root"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# The load average lags by minutes; the number of runnable threads now does not.
running_before=$(sed -n 's/^procs_running //p' /proc/stat)
t0=$(date +%s)
# The host's microbenchmarks, beside the data: what a profile fitted to
# them is carried to another host by (calibrate host --from).
"$simloop" measure microbench -o "$data/$out.microbench.json"
"$simloop" measure kernel --split --path unconnected,connected \
  -l $payloads -n "$packets" -r "$repeats" \
  --format csv -o "$data/$out.csv" >/dev/null
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
running_after=$(sed -n 's/^procs_running //p' /proc/stat)
{
  echo "command: $(basename "$simloop") measure kernel --split --path unconnected,connected -l $payloads -n $packets -r $repeats"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ) ($(($(date +%s) - t0)) s)"
  echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores, $(sed -n 's/^cpu MHz[[:space:]]*: //p' /proc/cpuinfo | head -1) MHz"
  echo "kernel: $(uname -srm)"
  echo "loadavg before: $load_before"
  echo "loadavg after: $load_after"
  echo "runnable threads before, after (this script's included): $running_before, $running_after"
} >"$data/$out.machine.txt"
cat "$data/$out.machine.txt"
