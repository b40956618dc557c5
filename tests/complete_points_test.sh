#!/bin/sh
# Measured points keep every path option: a jumbo-frame wire point (MTU 9000)
# is priced at its own MTU by compare (it used to be priced at 1500 and
# refused), its row says ether_mtu=9000, and a held-out payload past the
# training range is flagged as extrapolated.
set -e
simloop=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cd "$d"
"$simloop" -q measure native --dest wire -l 18,600,1400 -n 3000 -r 2 -o a.csv >/dev/null
"$simloop" -q measure native --dest wire --ether-mtu 9000 --max-linkhdr 32 -l 3000,8000 -n 3000 -r 2 \
  -o b.csv >/dev/null
grep -q '^native,0,8000,wire,.*,9000,32,' b.csv || { echo "FAIL: no ether_mtu/max_linkhdr in rows"; head -2 b.csv; exit 1; }
"$simloop" -q calibrate a.csv b.csv --source native --stat min --train payload=18,600,1400 \
  --train ether_mtu=1500 -o fit --name j >/dev/null 2>&1
"$simloop" -q compare fit/j-fit.json -o cmp.csv >out.txt
grep -q '^native,8000,wire,none,m_copy,0,full,0,9000,32,validation,' cmp.csv ||
  { echo "FAIL: the jumbo point's row"; cat cmp.csv; exit 1; }
grep -q 'extrapolated: payload 8000 above the trained 1400; extrapolated: ether_mtu 9000 above the trained 1500' cmp.csv ||
  { echo "FAIL: no extrapolation caveat"; cat cmp.csv; exit 1; }
grep -q '^2 held-out point(s) extrapolated' out.txt || { echo "FAIL: no count"; cat out.txt; exit 1; }
echo "jumbo points compared at their own MTU, extrapolation flagged"
