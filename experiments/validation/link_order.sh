#!/bin/sh
# Function-order advice on real harness builds, linked and measured.
# Harness builds with each function in a section of its own, linked by
# ld.lld with a link map (-DSIMLOOP_HARNESS_LINK_ORDER=ON), padded before one
# unit as icache.sh pads them; the model picks the worst of them; `simloop
# layout` advises a function order for each on three paths at once; the
# advice and the baselines (hot functions in call order, from each path's
# profile and from all three) are linked with scripts/link-harness.sh and
# measured with cachegrind. Keeps everything the check needs in
# data/link-order/ and writes link-order.md.
# Usage: experiments/validation/link_order.sh [SIMLOOP]
# Rewrites data/link-order/ and link-order.md beside it: run it from a copy
# of the tree (git clone) to keep the committed ones.
#   LINK_BUILD   where the builds go (default build-link-order)
#   CANDIDATES   paddings drawn (default 12), BAD how many to advise on (3)
#   BUDGET       seconds of search per layout at most (default 600; the search
#                stops at 2000 orders evaluated, or where no move helps)
# Needs cmake, ld.lld, valgrind, python3, gzip and awk (ninja is used for a
# new LINK_BUILD if found); CMAKE_BUILD_PARALLEL_LEVEL limits the build jobs.
#
# Fixed before any result was seen:
#   paths       loopback 18 B, wire 18 B, self 1024 B, weight 1 each
#   geometries  I1 16 KB direct-mapped, 16 KB 2-way, 32 KB 2-way, 64 B lines
#   layouts     the builds CMake defines and CANDIDATES paddings (seed 17);
#               the BAD ones with the most predicted misses summed over
#               paths and geometries (default link, base profile)
#   profiles    callgrind, of the base build only, one per path
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
simloop=${1:-${SIMLOOP:-$root/build/simloop}}
lbuild=${LINK_BUILD:-$root/build-link-order}
candidates=${CANDIDATES:-12}
bad=${BAD:-3}
budget=${BUDGET:-600}
fail() { echo "link_order.sh: $*" >&2; exit 2; }
for v in "CANDIDATES=$candidates" "BAD=$bad" "BUDGET=$budget"; do
  case ${v#*=} in '' | *[!0-9]*) fail "${v%%=*} '${v#*=}': expected a whole number" ;; esac
done
[ "$bad" -ge 1 ] || fail "BAD '$bad': expected at least 1 layout to advise on"
# Paths given relative to where the script was started from, as the user
# typed them: the script runs from the tree's root.
case $simloop in
  /*) ;;
  */*) simloop=$(pwd)/$simloop ;;
  *) simloop=$(command -v "$simloop" || echo "$simloop") ;;
esac
case $lbuild in /*) ;; *) lbuild=$(pwd)/$lbuild ;; esac
if [ ! -f "$simloop" ] || [ ! -x "$simloop" ]; then
  fail "SIMLOOP '$simloop': no such program (build simloop first, or pass its path)"
fi
for t in cmake ld.lld valgrind python3 gzip awk; do
  command -v "$t" >/dev/null 2>&1 ||
    fail "$t not found on PATH (needed: cmake, ld.lld, valgrind, python3, gzip, awk)"
done
data=$here/data/link-order
py=$here/link_order.py
geoms="16384,1,64 16384,2,64 32768,2,64"
paths="loopback-18:18:loopback wire-18:18:wire self-1024:1024:self"
mkdir -p "$data"
cd "$root"
i1=""
for g in $geoms; do i1="$i1 --I1 $g"; done
t0=$(date +%s)

# 1. The candidate builds.
defined=$(sed -n 's/^ *"\(base:0:;[^"]*\)"$/\1/p' CMakeLists.txt)
[ -n "$defined" ] ||
  fail "CMakeLists.txt: no default SIMLOOP_HARNESS_LAYOUTS line (expected one \"base:0:;...\")"
cand=$(python3 "$here/icache_layouts.py" candidates --count "$candidates" --units native,zone,inet,stack)
ndefined=$(echo "$defined" | tr ';' '\n' | grep -c .)
[ "$bad" -le $((ndefined + candidates)) ] ||
  fail "BAD $bad: more than the $((ndefined + candidates)) layouts built ($ndefined CMakeLists.txt defines, CANDIDATES $candidates)"
mkdir -p "$lbuild"
log=$lbuild/link_order.log
quiet() {  # "$@" with its output in $log; its end shown if it fails
  if ! "$@" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    fail "failed: $* (its whole output: $log)"
  fi
}
# Ninja for a new build directory if there is one; an existing one keeps its
# generator (scripts/link-harness.sh makes one with CMake's default).
gen=""
if [ ! -f "$lbuild/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then gen="-GNinja"; fi
# shellcheck disable=SC2086
quiet cmake -S . -B "$lbuild" $gen -DSIMLOOP_BUILD_TESTS=OFF -DSIMLOOP_HARNESS_LINK_ORDER=ON \
  "-DSIMLOOP_HARNESS_LAYOUTS=$defined;$cand"
names=$(echo "$defined;$cand" | tr ';' '\n' | sed 's/:.*//')
harness() { [ "$1" = base ] && echo "$lbuild/simloop-harness" || echo "$lbuild/simloop-harness-$1"; }
targets=""
for n in $names; do targets="$targets $(basename "$(harness "$n")")"; done
# shellcheck disable=SC2086
quiet nice cmake --build "$lbuild" --target $targets
tmp=$(mktemp -d)
before_pid=""
# On any exit, the cachegrind runs started in the background end too.
cleanup() {
  if [ -n "$before_pid" ]; then kill "$before_pid" 2>/dev/null || :; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
nm_of() {  # the symbol map as simloop reads it (nm and PLT lines)
  "$simloop" -q measure native --harness "$1" -n 10 -o "$tmp/native.csv" >/dev/null
  mv "$tmp"/native.csv.*.nm "$2"
}

# 2. One profile per path, of the base build.
pathargs=""
for p in $paths; do
  name=${p%%:*} rest=${p#*:}
  payload=${rest%%:*} dest=${rest#*:}
  nice "$simloop" -q measure profile "$(harness base)" -l "$payload" --dest "$dest" \
    -o "$data/profile-$name.txt" >/dev/null
  pathargs="$pathargs --path name=$name,profile=$data/profile-$name.txt,payload=$payload,path=$dest"
done

# 3. The worst layouts by the model (the default link, every path and geometry).
: >"$tmp/predicted"
for n in $names; do nm_of "$(harness "$n")" "$tmp/$n.nm"; done
for p in $paths; do
  name=${p%%:*} rest=${p#*:}
  # shellcheck disable=SC2046,SC2086
  "$simloop" -q icache $(for n in $names; do echo "$tmp/$n.nm"; done) -l "${rest%%:*}" \
    --dest "${rest#*:}" $i1 --profile "$data/profile-$name.txt" -o "$tmp/icache-$name.csv" >/dev/null
done
python3 "$py" pick --count "$bad" --layouts "$defined;$cand" "$tmp"/icache-*.csv >"$data/layouts.txt"
echo "$paths" | tr ' ' '\n' >"$data/paths.txt"
echo "$geoms" | tr ' ' '\n' >"$data/geometries.txt"

# The default links measured meanwhile (cachegrind is the slow part).
(
  c=""
  trap 'if [ -n "$c" ]; then kill "$c" 2>/dev/null || :; fi; exit 143' TERM
  for p in $paths; do
    name=${p%%:*} rest=${p#*:}
    builds=""
    while read -r l padunit; do builds="$builds $(harness "$l")"; done <"$data/layouts.txt"
    # shellcheck disable=SC2086
    nice "$simloop" -q measure cachegrind $builds -l "${rest%%:*}" --dest "${rest#*:}" $i1 \
      -o "$data/cachegrind-$name-default.csv" >/dev/null &
    c=$!
    wait "$c"
    rm -f "$data"/cachegrind-"$name"-default.csv.*.nm
  done
) &
before_pid=$!

# 4. Advice for each, and the links: advice and baselines.
measured_builds=""
while read -r l padunit; do
  gzip -9n <"$tmp/$l.nm" >"$data/$l.nm.gz"
  # The map's .text only (its input sections): what simloop layout reads.
  awk 'NR == 1 { print; next } $5 ~ /^\./ { t = ($5 == ".text") } t && ($5 ~ /^\./ || $5 ~ /:\(/)' \
    "$(harness "$l").map" | gzip -9n >"$data/$l.map.gz"
  out=$data/advice-$l
  # Only this run's orders are linked: none left from an earlier run.
  rm -rf "$out"
  mkdir -p "$out"
  # shellcheck disable=SC2086
  nice "$simloop" -q layout --nm "$tmp/$l.nm" --map "$(harness "$l").map" $pathargs $i1 \
    --budget "$budget" --max-evals 2000 --out-dir "$out" >"$out/layout.txt"
  for o in "$out"/*.order; do
    kind=$(basename "$o" .order)
    b=$("$root/scripts/link-harness.sh" "$lbuild" "$l-$kind" "$o" "$padunit")
    # The advice's own symbol map: the check predicts it with simloop icache.
    if [ "$kind" = advice ]; then
      nm_of "$b" "$tmp/linked.nm"
      gzip -9n <"$tmp/linked.nm" >"$data/$l-$kind.nm.gz"
    fi
  done
  measured_builds="$measured_builds $l"
done <"$data/layouts.txt"

# 5. cachegrind: each layout's advice and the all-paths baseline on every
# path; a path's own baseline on that path.
for p in $paths; do
  name=${p%%:*} rest=${p#*:}
  builds=""
  for l in $measured_builds; do
    builds="$builds $(harness "$l-advice") $(harness "$l-call-order-all")"
    builds="$builds $(harness "$l-call-order-$name")"
  done
  # shellcheck disable=SC2086
  nice "$simloop" -q measure cachegrind $builds -l "${rest%%:*}" --dest "${rest#*:}" $i1 \
    -o "$data/cachegrind-$name.csv" >/dev/null
  rm -f "$data"/cachegrind-"$name".csv.*.nm
done
wait "$before_pid" || fail "the default links' cachegrind runs failed (their error above)"
before_pid=""
t1=$(date +%s)

# 6. The report, from the kept data only.
python3 "$py" check --simloop "$simloop" --write "$here/link-order.md"
echo "link_order.sh: $((t1 - t0)) s of builds, profiles, searches and cachegrind runs"
