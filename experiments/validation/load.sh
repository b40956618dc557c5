#!/bin/sh
# Measurements under load: the same points measured on a quiet machine and
# with a parallel build of this project running, each calibrated in wall
# time and in thread CPU time, and the held-out errors set side by side.
#
# Usage: experiments/validation/load.sh MODE [SIMLOOP]
#   MODE quiet   measure as the machine is (run it when nothing else runs)
#   MODE loaded  measure while this script compiles the project with -j2
#                in a scratch build directory (a real parallel build)
# Writes experiments/validation/results/load-MODE-*.{csv,txt}; with both
# modes done, results/load-summary.txt holds the table.
#
# Fixed before any data were measured: native loopback and kernel loopback
# (unconnected), payloads 18 600 1400 train, 200 and 1000 held out; 5
# repeats, the min statistic; each repeat's slices interleave the payloads.
set -eu
mode=${1:?quiet or loaded}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
simloop=${2:-$root/build/simloop}
out=$here/results
mkdir -p "$out"
tmp=$(mktemp -d)
load_pid=
cleanup() {
  # dash's kill takes no "--": a negative pid right after the signal is
  # the process group (with "--" it failed, and the build outlived us).
  if [ -n "$load_pid" ]; then
    kill -TERM "-$load_pid" 2>/dev/null || true
    # Its compilers end with it; their directory can go once they have.
    sleep 1
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

case $mode in
quiet) ;;
loaded)
  # In a session of its own (setsid may fork: the group's id is the pid the
  # new session's shell writes), so that the whole build stops with it.
  setsid sh -c "echo \$\$ >'$tmp/load.pid'
                cmake -S '$root' -B '$tmp/build' >/dev/null 2>&1 &&
                while :; do cmake --build '$tmp/build' -j2 --clean-first >/dev/null 2>&1; done" \
    </dev/null >/dev/null 2>&1 &
  sleep 30  # the compilers running before anything is timed
  load_pid=$(cat "$tmp/load.pid")
  ;;
*) echo "load.sh: MODE is quiet or loaded, not '$mode'" >&2; exit 2 ;;
esac

payloads=18,200,600,1000,1400
"$simloop" -q measure native -l $payloads -n 300000 -r 5 -o "$tmp/native.csv" >/dev/null
"$simloop" -q measure kernel -l $payloads -n 30000 -r 5 -o "$tmp/kernel.csv" >/dev/null
cp "$tmp/native.csv" "$out/load-$mode-native.csv"
cp "$tmp/kernel.csv" "$out/load-$mode-kernel.csv"

for source in native kernel; do
  for clock in wall cpu; do
    name=load-$mode-$source-$clock
    "$simloop" -q calibrate "$tmp/$source.csv" --source $source --stat min --time $clock \
      --train payload=18,600,1400 -o "$tmp/fit" --name "$name" >/dev/null 2>&1
    "$simloop" -q compare "$tmp/fit/$name-fit.json" -o "$out/$name-compare.csv" \
      >"$out/$name-compare.txt"
  done
done

# The summary, once both modes are there.
summary=$out/load-summary.txt
if [ -f "$out/load-quiet-native-wall-compare.txt" ] && [ -f "$out/load-loaded-native-wall-compare.txt" ]; then
  {
    echo "Held-out payloads 200 and 1000 (trained on 18 600 1400), min of 5 repeats."
    python3 - "$out" <<'PY'
import csv, pathlib, sys
out = pathlib.Path(sys.argv[1])
def load(mode):
    rows = list(csv.DictReader(open(out / f"load-{mode}-native.csv")))
    return max(float(r["loadavg_1m"]) for r in rows)
print(f"1-minute load average while measuring: quiet {load('quiet'):.2f}, loaded {load('loaded'):.2f}")
PY
    printf '%-8s %-5s %18s %18s %10s\n' source clock "quiet median |e|" "loaded median |e|" "difference"
    for source in native kernel; do
      for clock in wall cpu; do
        q=$(sed -n 's/^validation *[0-9]* points: median |error| \([0-9.]*\) %.*/\1/p' \
          "$out/load-quiet-$source-$clock-compare.txt")
        l=$(sed -n 's/^validation *[0-9]* points: median |error| \([0-9.]*\) %.*/\1/p' \
          "$out/load-loaded-$source-$clock-compare.txt")
        d=$(python3 -c "print(f'{abs($l - $q):.2f}')")
        printf '%-8s %-5s %17s%% %17s%% %9s\n' $source $clock "$q" "$l" "$d"
      done
    done
  } >"$summary"
  cat "$summary"
fi
