#!/bin/sh
# Shipped files reached from any directory: a relative experiment path is
# taken from the working directory if it is there, else from the data
# directory, and the log says which; `simloop list` lists what is shipped.
#
#   tests/list_and_paths_test.sh SIMLOOP SOURCE_DIR
set -eu
simloop=$1
src=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cd "$d"
fail() {
  echo "FAIL: $*"
  exit 1
}

# Not here: the data directory's (this build's source tree), said so.
"$simloop" check experiments/netmap-2012.yaml > out.json 2> err.txt || fail "check: $(cat err.txt)"
grep -q '"name": "netmap-2012"' out.json || fail "check: not the shipped netmap-2012"
grep -q 'experiment experiments/netmap-2012.yaml: not in the working directory; from the data directory' err.txt ||
  fail "no line says the data directory was used: $(cat err.txt)"
"$simloop" -q sweep --list experiments/sweep-payload-align.yaml -o out > /dev/null || fail "sweep --list"
"$simloop" -q run experiments/seed/align-none-x86.yaml --set workload.packets=2000 -o out > /dev/null ||
  fail "run"
test -s out/align-none-x86.csv || fail "run wrote no results"

# Here: the working directory's own copy comes first, and a machine it names
# by a relative path is found in the data directory.
mkdir experiments
sed -e 's/^name: netmap-2012/name: my-netmap/' \
  -e 's#^machine: i7-870#machine: configs/machines/i7-870.yaml#' \
  "$src/experiments/netmap-2012.yaml" > experiments/netmap-2012.yaml
"$simloop" check experiments/netmap-2012.yaml > out.json 2> err.txt || fail "own copy: $(cat err.txt)"
grep -q '"name": "my-netmap"' out.json || fail "the working directory's copy was not used"
grep -q 'experiment experiments/netmap-2012.yaml: from the working directory' err.txt ||
  fail "no line says the working directory was used: $(cat err.txt)"

# simloop list: each kind, each file with its description.
"$simloop" list > list.txt
for want in '^experiments ' '^  experiments/seed-athlon.yaml +ttcp tiny UDP transmit' \
  '^  experiments/seed/icache-baseline.yaml +seed host, I-cache model on' \
  '^machines ' '^  athlon-xp-2700 +AMD Athlon XP 2700' '^stacks ' '^  freebsd6 +FreeBSD 6 UDP send path' \
  '^layouts ' '^  freebsd6-i386-synthetic +SYNTHETIC'; do
  grep -Eq "$want" list.txt || fail "simloop list: no line /$want/: $(cat list.txt)"
done
if grep -q results/ list.txt; then fail "simloop list lists files runs wrote"; fi
"$simloop" list --kind machines > m.txt
grep -q '^machines' m.txt && ! grep -q '^experiments' m.txt || fail "--kind machines: $(cat m.txt)"
set +e
"$simloop" list --kind machine > /dev/null 2>&1
rc=$?
set -e
test $rc -eq 2 || fail "--kind machine exits $rc, not 2"
"$simloop" list --help | grep -q 'experiments, machines, stacks, layouts or' || fail "list --help"
echo "ok"
