#!/bin/sh
# The wire path's layouts at the associative geometries: wire 18 B, whose
# hot code fits 16 KB 4-way and 32 KB 2-way in almost every build, measured
# on builds chosen because their hot lines conflict there. Writes the path
# "wire-18-assoc" into data/ (cachegrind counts, the base build's profile,
# the chosen builds' symbol maps, the search's scores), its results into
# results/icache-wire-18-assoc*, and icache-wire-assoc.md, which icache.sh
# puts at the end of icache.md.
# Usage: experiments/validation/icache_wire_assoc.sh [SIMLOOP]
#   LAYOUTS_BUILD  where the candidate builds go (default build-icache-wire)
#   CANDIDATES     how many candidate paddings to build (default 96)
#
# Fixed before any result was seen:
#   path        wire 18 B (align none, m_copy), as data/*-wire-18*.
#   geometries  16 KB 4-way and 32 KB 2-way.
#   layouts     CANDIDATES paddings drawn as icache.sh draws them (seed 17;
#               named wNNN-UNIT-PAD, since the code differs from the builds
#               of the other paths), plus the unpadded build (w-base). The
#               conflict count of icache_layouts.py select (hot lines of the
#               base build's profile beyond each set's ways) keeps every
#               build with a conflict at either geometry, then fills up to
#               12 builds with its least, most and between.
#   model       hot ranges and walks from a callgrind profile of w-base only.
#   noise       w-base measured again with 3000 and 13000 packets.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
simloop=${1:-${SIMLOOP:-$root/build/simloop}}
lbuild=${LAYOUTS_BUILD:-$root/build-icache-wire}
candidates=${CANDIDATES:-96}
data=$here/data
out=$here/results
py=$here/icache_layouts.py
name=wire-18-assoc
args="-l 18 --dest wire"
geoms="16384,4,64 32768,2,64"
cd "$root"

# 1. The builds.
cand=$(python3 "$py" candidates --count "$candidates" --units native,zone,inet,stack |
  sed 's/\bc\([0-9][0-9][0-9]\)-/w\1-/g')
layouts="w-base:0:;$cand"
cmake -S . -B "$lbuild" -G Ninja -DSIMLOOP_BUILD_TESTS=OFF -DSIMLOOP_BUILD_BENCH=OFF \
  "-DSIMLOOP_HARNESS_LAYOUTS=$layouts" >/dev/null
targets=$(echo "$layouts" | tr ';' '\n' | sed 's/:.*//; s/^/simloop-harness-/')
# shellcheck disable=SC2086
nice cmake --build "$lbuild" --target $targets >/dev/null
harness() { echo "$lbuild/simloop-harness-$1"; }

# 2. Every build's symbol map, and the base build's profile.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/nm"
for t in $targets; do
  "$simloop" -q measure native --harness "$lbuild/$t" -n 10 -o "$tmp/native.csv" >/dev/null
  mv "$tmp"/native.csv.*.nm "$tmp/nm/"
done
# shellcheck disable=SC2086
nice "$simloop" -q measure profile "$(harness w-base)" $args -o "$data/profile-$name.txt" >/dev/null

# 3. The search: every build that conflicts at either geometry, then more.
nmargs=""
for f in "$tmp"/nm/*.nm; do
  l=${f#"$tmp"/nm/native.csv.}
  nmargs="$nmargs ${l%.nm}=$f"
done
# shellcheck disable=SC2086
python3 "$py" select --profile "$data/profile-$name.txt" --geometries "$geoms" \
  --scores "$tmp/scores.csv" --nm $nmargs >/dev/null
keep=$(python3 - "$tmp/scores.csv" "$geoms" <<'PY'
import csv, sys
geoms = sys.argv[2].split()
rows = list(csv.DictReader(open(sys.argv[1])))
print(",".join(["w-base"] + [r["layout"] for r in rows
                             if r["layout"] != "w-base" and any(int(r[g]) for g in geoms)]))
PY
)
# shellcheck disable=SC2086
chosen=$(python3 "$py" select --profile "$data/profile-$name.txt" --geometries "$geoms" \
  --scores "$data/layout-search-$name.csv" --keep "$keep" --max 12 --per-geometry 4 --nm $nmargs)
for l in $chosen; do gzip -9n <"$tmp/nm/native.csv.$l.nm" >"$data/nm/$l.nm.gz"; done

# 4. cachegrind on the chosen builds, and the noise on the base build.
builds=""
for l in $chosen; do builds="$builds $(harness "$l")"; done
i1=""
for g in $geoms; do i1="$i1 --I1 $g"; done
# shellcheck disable=SC2086
nice "$simloop" -q measure cachegrind $builds $args $i1 -o "$data/cachegrind-$name.csv" >/dev/null
# shellcheck disable=SC2086
nice "$simloop" -q measure cachegrind "$(harness w-base)" $args $i1 --packets 3000,13000 \
  -o "$data/noise-$name.csv" >/dev/null
rm -f "$data"/cachegrind-"$name".csv.*.nm "$data"/noise-"$name".csv.*.nm
noise=$(python3 - "$data/cachegrind-$name.csv" "$data/noise-$name.csv" <<'PY'
import csv, sys
def rows(f):
    with open(f, newline="") as h:
        return {r["i1"]: float(r["i1_misses_per_packet"])
                for r in csv.DictReader(h) if r["layout"] == "w-base"}
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

# 6. Its section of the report.
table=$(python3 "$py" report --order "$geoms" "$name=$out/icache-$name-summary.csv")
table_entry=$(python3 "$py" report --order "$geoms" "$name=$out/icache-$name-entry-summary.csv")
{
  echo "### Wire layouts at the associative geometries"
  echo
  echo "Wire 18 B's hot code fits 16 KB 4-way and 32 KB 2-way in almost every build, so the"
  echo "builds above barely spread there. \`icache_wire_assoc.sh\` built $candidates more paddings"
  echo "of the current code (\`wNNN-*\`, and \`w-base\` unpadded), kept every build whose hot lines"
  echo "conflict at either geometry and filled up to 12 (\`data/layout-search-$name.csv\`), and"
  echo "measured them with cachegrind (noise $noise misses per packet); the model reads a callgrind"
  echo "profile of \`w-base\` only."
  echo
  echo "$table"
  echo
  echo "The model before (\`--fetch entry\`), on the same points:"
  echo
  echo "$table_entry"
  echo
  echo "Per point: \`results/icache-$name.txt\`."
} >"$here/icache-wire-assoc.md"
echo "wrote $here/icache-wire-assoc.md"
