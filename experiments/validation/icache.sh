#!/bin/sh
# The I-cache model against cachegrind on native harness builds (the same
# objects linked with a padding object at different places), for four paths
# through the stack and many I1 geometries. Regenerates data/ (cachegrind
# counts, profiles, each build's symbol map, the layout search's scores),
# results/icache-* and icache.md, which run.sh puts into report.md.
# Usage: experiments/validation/icache.sh [SIMLOOP]
#   LAYOUTS_BUILD  where the candidate builds go (default build-icache-layouts)
#   CANDIDATES     how many candidate paddings to build (default 64)
#   REQUIRED, MORE the two lists of I1 geometries (for a quick check only)
#
# Fixed before any result was seen:
#   paths       loopback 18 B; self 1024 B; broadcast 1024 B (m_copy, the
#               receiver reads); wire 18 B.
#   geometries  the six the model must rank layouts on (direct-mapped 4, 8 and
#               16 KB; 16 KB 4-way; 32 KB 2-way and 8-way), then others to
#               check it more widely (2 KB direct-mapped, 8 and 16 KB 2-way,
#               the Athlon's 64 KB 2-way, 32- and 128-byte lines).
#   layouts     CANDIDATES paddings (16 to 16384 bytes before one of the
#               native, zone, inet or stack units, drawn with seed 17), plus
#               the builds CMake defines. For each path, a conflict count
#               that needs no cache model (hot lines of the path's profile
#               beyond each set's ways, placed with each build's nm map)
#               picks, for each of the six geometries, the least and most
#               conflicting builds and two between: at most 16 builds a path.
#   model       hot ranges and walks from a callgrind profile of the base
#               build only; nothing of the model is fitted to cachegrind.
#   noise       each path's base build measured again with other packet
#               counts (3000 and 13000 instead of 2000 and 12000): the
#               largest difference is the noise two layouts must exceed to
#               be ordered.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
simloop=${1:-${SIMLOOP:-$root/build/simloop}}
lbuild=${LAYOUTS_BUILD:-$root/build-icache-layouts}
candidates=${CANDIDATES:-64}
data=$here/data
out=$here/results
py=$here/icache_layouts.py
mkdir -p "$data" "$out"
cd "$root"

required=${REQUIRED:-"4096,1,64 8192,1,64 16384,1,64 16384,4,64 32768,2,64 32768,8,64"}
more=${MORE-"2048,1,64 8192,2,64 16384,2,64 65536,2,64 8192,2,32 16384,4,32 16384,2,128"}
paths="loopback-18:-l:18:--dest:loopback self-1024:-l:1024:--dest:self broadcast-1024:-l:1024:--dest:broadcast:--copy:m_copy wire-18:-l:18:--dest:wire"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)

# 1. The candidate builds, in a build directory of their own.
defined=$(sed -n 's/^ *"\(base:0:;[^"]*\)"$/\1/p' CMakeLists.txt)
cand=$(python3 "$py" candidates --count "$candidates" --units native,zone,inet,stack)
cmake -S . -B "$lbuild" -G Ninja -DSIMLOOP_BUILD_TESTS=OFF \
  "-DSIMLOOP_HARNESS_LAYOUTS=$defined;$cand" >/dev/null
targets=$(echo "$defined;$cand" | tr ';' '\n' | sed 's/:.*//' |
  sed 's/^base$/simloop-harness/; t; s/^/simloop-harness-/')
# shellcheck disable=SC2086
nice cmake --build "$lbuild" --target $targets >/dev/null
harness() { [ "$1" = base ] && echo "$lbuild/simloop-harness" || echo "$lbuild/simloop-harness-$1"; }

# Every build's symbol map as simloop reads it (nm, and the PLT sections
# nm does not list), compressed: the search and the model read them. Only
# this script's maps are replaced: data/nm also keeps the wire layouts of
# icache_wire_assoc.sh (w-*), which run_build.py's table reads.
own=$(echo "$targets" | sed 's/^simloop-harness$/base/; s/^simloop-harness-//')
mkdir -p "$data/nm"
for f in "$data"/nm/*.nm.gz; do
  case $(basename "$f") in w-* | w[0-9]*) ;; *) rm -f "$f" ;; esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in $targets; do
  "$simloop" -q measure native --harness "$lbuild/$t" -n 10 -o "$tmp/native.csv" >/dev/null
  for f in "$tmp"/native.csv.*.nm; do
    name=${f#"$tmp"/native.csv.}
    gzip -9n <"$f" >"$data/nm/${name%.nm}.nm.gz"
    rm -f "$f"
  done
done

all_geoms="$required $more"
i1=""
for g in $all_geoms; do i1="$i1 --I1 $g"; done
summaries=""
entry_summaries=""
for p in $paths; do
  name=${p%%:*}
  args=$(echo "${p#*:}" | tr ':' ' ')
  # 2. The path's profile, from the base build.
  # shellcheck disable=SC2086
  nice "$simloop" -q measure profile "$(harness base)" $args -o "$data/profile-$name.txt" >/dev/null
  # 3. The search.
  nmargs=""
  for l in $own; do nmargs="$nmargs $l=$data/nm/$l.nm.gz"; done
  # shellcheck disable=SC2086
  chosen=$(python3 "$py" select --profile "$data/profile-$name.txt" --geometries "$required" \
    --scores "$data/layout-search-$name.csv" --nm $nmargs)
  builds=""
  for l in $chosen; do builds="$builds $(harness "$l")"; done
  # 4. cachegrind on the chosen builds, and the noise on the base build.
  # shellcheck disable=SC2086
  nice "$simloop" -q measure cachegrind $builds $args $i1 -o "$data/cachegrind-$name.csv" >/dev/null
  # shellcheck disable=SC2086
  nice "$simloop" -q measure cachegrind "$(harness base)" $args $i1 --packets 3000,13000 \
    -o "$data/noise-$name.csv" >/dev/null
  rm -f "$data"/cachegrind-"$name".csv.*.nm "$data"/noise-"$name".csv.*.nm
  noise=$(python3 - "$data/cachegrind-$name.csv" "$data/noise-$name.csv" <<'PY'
import csv, sys
def rows(f):
    with open(f, newline="") as h:
        return {r["i1"]: float(r["i1_misses_per_packet"])
                for r in csv.DictReader(h) if r["layout"] == "base"}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
print(f"{max(max(abs(a[k] - b[k]) for k in a), 0.01):.4f}")
PY
)
  # 5. The model beside it, and the model before (whole owners at entry).
  for fetch in call-sites entry; do
    suffix=""
    [ "$fetch" = entry ] && suffix="-entry"
    # shellcheck disable=SC2086
    "$simloop" -q icache $builds $args $i1 --profile "$data/profile-$name.txt" \
      --measured "$data/cachegrind-$name.csv" --noise "$noise" --fetch "$fetch" \
      -o "$out/icache-$name$suffix.csv" --summary "$out/icache-$name$suffix-summary.csv" \
      >"$out/icache-$name$suffix.txt"
  done
  summaries="$summaries $name=$out/icache-$name-summary.csv"
  entry_summaries="$entry_summaries $name=$out/icache-$name-entry-summary.csv"
  echo "$name: noise $noise misses per packet; layouts $chosen" >>"$out/icache-noise.txt.new"
done
mv "$out/icache-noise.txt.new" "$out/icache-noise.txt"

# 6. The last level against cachegrind's (instructions only: a D1 large
# enough that data never reaches it).
llg="4096,1,64"
: >"$out/icache-ll.txt"
for ll in 8192,2,64 16384,4,64; do
  for p in loopback-18 self-1024; do
    args=$(echo "$paths" | tr ' ' '\n' | sed -n "s/^$p://p" | tr ':' ' ')
    chosen=$(sed -n "s/^$p: noise [0-9.]* misses per packet; layouts //p" "$out/icache-noise.txt")
    builds=""
    for l in $chosen; do builds="$builds $(harness "$l")"; done
    # shellcheck disable=SC2086
    nice "$simloop" -q measure cachegrind $builds $args --I1 "$llg" --D1 1048576,16,64 --LL "$ll" \
      -o "$data/cachegrind-ll-$p-$ll.csv" >/dev/null
    rm -f "$data"/cachegrind-ll-"$p"-"$ll".csv.*.nm
    echo "### $p, I1 $llg, LL $ll" >>"$out/icache-ll.txt"
    # shellcheck disable=SC2086
    "$simloop" -q icache $builds $args --I1 "$llg" --LL "$ll" --profile "$data/profile-$p.txt" \
      --measured "$data/cachegrind-ll-$p-$ll.csv" | grep "LL $ll" >>"$out/icache-ll.txt"
  done
done
t1=$(date +%s)
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# 7. The report.
# shellcheck disable=SC2086
table=$(python3 "$py" report --order "$required $more" $summaries)
# shellcheck disable=SC2086
table_entry=$(python3 "$py" report --order "$required $more" $entry_summaries)
{
  echo "## I-cache model against cachegrind"
  echo
  echo "Regenerated by \`experiments/validation/icache.sh\` ($(date -u +%Y-%m-%d), simloop $("$simloop" --version); $((t1 - t0)) s, load average $load_before before, $load_after after)."
  echo
  echo "Harness builds (\`simloop-harness*\`) are the same objects linked with a padding object at"
  echo "a different place. $candidates paddings were drawn and built; for each path, a conflict count"
  echo "that needs no cache model (the hot lines of the path's profile beyond each set's ways)"
  echo "chose the builds of least and most conflict and two between at each of the six geometries"
  echo "below the line (\`data/layout-search-*.csv\` holds every score). cachegrind counts I1 misses"
  echo "per packet (two runs, 2000 and 12000 packets, subtracted); \`simloop icache\` predicts them"
  echo "from each build's \`nm\` map and a callgrind profile of the base build: which bytes run, and"
  echo "what one call of each routine runs in order (its walk: the caller up to each call, the"
  echo "callee, the rest of the caller, loops as often as they run). Every point is held out:"
  echo "nothing is fitted. Errors are relative where cachegrind counts at least one miss per packet,"
  echo "absolute (misses per packet) elsewhere; two layouts are ordered only where they differ by"
  echo "more than the path's noise (\`results/icache-noise.txt\`)."
  echo
  echo "### The model (fetch call-sites)"
  echo
  echo "$table"
  echo
  echo "### The model before (each owner's hot bytes at entry, \`--fetch entry\`), on the same points"
  echo
  echo "$table_entry"
  echo
  echo "### The last level"
  echo
  echo "cachegrind's LL sees only I1 (and D1) misses and never evicts a line from I1: neither"
  echo "inclusive nor exclusive. With \`machine.cache.l2.exclusive: false\` and"
  echo "\`back_invalidate: false\` the model's L2 does the same; against cachegrind with a 1 MB D1"
  echo "(so that data never reaches LL), instruction misses of the last level per packet:"
  echo
  echo '```'
  cat "$out/icache-ll.txt"
  echo '```'
  echo
  echo "Per path: \`results/icache-PATH.txt\` (every point), \`results/icache-PATH-summary.csv\`."
  # The wire path's own layouts at the associative geometries (icache_wire_assoc.sh).
  if [ -f "$here/icache-wire-assoc.md" ]; then
    echo
    cat "$here/icache-wire-assoc.md"
  fi
  # simloop run on the same builds (run_build.py; its ctest checks this table).
  echo
  echo "### \`simloop run\` on the same builds"
  echo
  echo "An experiment can take its code layout from a harness build (\`layout.build.nm\`, with the"
  echo "path's callgrind profile as \`layout.build.profile\`) and serve the host as the harness's loop"
  echo "does (\`workload.service: full\`: after every send the netisr, \`recvfrom()\` until it says"
  echo "EWOULDBLOCK, transmit completion; interrupts off). \`simloop run\` of"
  echo "\`run-build/harness.yaml\` on each build above, at cachegrind's geometry (no L2, no"
  echo "next-line fetch), beside cachegrind's counts; its misses include the cold ones of the first"
  echo "packets. \`run_build.py same\` holds run's misses to \`simloop icache\`'s and \`simloop"
  echo "layout\`'s within 1 % on one build (ctest \`validation.run_predicts_a_build_as_icache_does\`);"
  echo "ctest \`validation.run_against_cachegrind_table\` recomputes this table:"
  echo
  echo "    python3 experiments/validation/run_build.py --simloop build/simloop --packets 5000 \\"
  echo "        table --check experiments/validation/icache.md"
  echo
  echo "<!-- table: run_build.py table -->"
  python3 "$here/run_build.py" --simloop "$simloop" --packets 5000 table
  echo "<!-- end of run table -->"
} >"$here/icache.md"
echo "wrote $here/icache.md"
