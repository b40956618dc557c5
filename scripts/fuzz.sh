#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang-14 (ASan + UBSan, in
# build-fuzz/) and runs each for a given time, a few at a time, niced.
#
#   scripts/fuzz.sh [-t SECONDS] [-j JOBS] [-n] [TARGET...]
#
#   -t SECONDS  how long each target runs (default 60; 0: build them, run none)
#   -j JOBS     targets run at a time (default 2)
#   -n          do not configure and build first (build-fuzz is up to date)
#   TARGET      names as in fuzz/NAME_fuzz.cc (default: every target)
#
# Each target starts from its seeds (fuzz/corpus/NAME) and the corpus it grew
# before (build-fuzz/corpus/NAME). An input that crashes, leaks, times out or
# runs out of memory is copied to fuzz/regressions/NAME/, where the test
# fuzz.NAME.replay of the ordinary build replays it from then on. At the end
# a table gives, per target: CPU seconds, executions, corpus size and the
# failures found; the exit status is 1 if any target found one.
#
# A dictionary fuzz/NAME.dict is used if present; one holding the line
# "#@config-keys" also gets every key of docs/config-reference.md.
# Needs clang-14, libclang-rt-14-dev and ninja-build (scripts/install-deps.sh
# installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
jobs=2
build_first=1
while getopts "t:j:nh" opt; do
  case $opt in
    t) seconds=$OPTARG ;;
    j) jobs=$OPTARG ;;
    n) build_first= ;;
    *) sed -n '2,22p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

build=build-fuzz
if ! command -v clang++-14 > /dev/null; then
  echo "fuzz.sh: clang++-14 is needed (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 2
fi
if [ -n "$build_first" ]; then
  mkdir -p "$build"
  cmake -S . -B "$build" -G Ninja -DSIMLOOP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 > "$build/configure.log"
  nice cmake --build "$build" --target fuzz -j "$jobs"
fi

[ "$seconds" = 0 ] && exit 0

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in fuzz/*_fuzz.cc; do
    n=$(basename "$src" .cc)
    targets+=("${n%_fuzz}")
  done
fi

mkdir -p "$build/logs" "$build/dict"
# The keys of the configuration reference, each path and each last part.
grep -o '^| `[a-z0-9_.]*`' docs/config-reference.md | tr -d '|` ' |
  awk -F. '{ print "\"" $0 "\""; print "\"" $NF ":\"" }' | sort -u > "$build/dict/config-keys"

run_one() {
  local name=$1 seconds=$2 build=$3
  local exe="$build/fuzz/${name}_fuzz"
  local work="$build/corpus/$name" crashes="$build/crashes/$name"
  mkdir -p "$work" "$crashes"
  local seeds=()
  [ -d "fuzz/corpus/$name" ] && seeds=("fuzz/corpus/$name")
  local dict=()
  if [ -f "fuzz/$name.dict" ]; then
    cp "fuzz/$name.dict" "$build/dict/$name.dict"
    if grep -q '^#@config-keys' "fuzz/$name.dict"; then
      cat "$build/dict/config-keys" >> "$build/dict/$name.dict"
    fi
    dict=("-dict=$build/dict/$name.dict")
  fi
  local TIMEFORMAT='%U %S'
  { time nice -n 10 "$exe" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
      -max_len=16384 -print_final_stats=1 -artifact_prefix="$crashes/" "${dict[@]}" \
      "$work" "${seeds[@]}" > "$build/logs/$name.log" 2>&1 || true; } 2> "$build/logs/$name.cpu"
}
export -f run_one

printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c "run_one {} $seconds $build"

failed=0
printf '%-12s %10s %12s %8s %9s\n' target cpu_s executions corpus failures
for name in "${targets[@]}"; do
  read -r user sys < "$build/logs/$name.cpu" || true
  cpu=$(awk -v u="${user:-0}" -v s="${sys:-0}" 'BEGIN { printf "%.0f", u + s }')
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$build/logs/$name.log" |
    awk '{ print $2 }' | tail -1)
  corpus=$(find "$build/corpus/$name" -type f | wc -l)
  found=0
  for f in "$build/crashes/$name"/*; do
    [ -f "$f" ] || continue
    found=$((found + 1))
    mkdir -p "fuzz/regressions/$name"
    cp -n "$f" "fuzz/regressions/$name/"
    echo "  $name: $(basename "$f") kept in fuzz/regressions/$name/ (log: $build/logs/$name.log)"
    rm -f "$f"
  done
  [ "$found" -gt 0 ] && failed=1
  printf '%-12s %10s %12s %8s %9s\n' "$name" "$cpu" "${execs:-?}" "$corpus" "$found"
done
exit $failed
