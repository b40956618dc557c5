#!/bin/sh
# compare keeps the measured file's own source label: the comparison CSV's
# source column and the table say where the numbers came from, for a fit
# (NAME-fit.json) and for an experiment simulated at the measured points.
#
#   tests/compare_source_test.sh SIMLOOP
set -eu
simloop=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cd "$d"
fail() {
  echo "FAIL: $*"
  exit 1
}
printf 'source,payload,dest,ns_per_packet\n' > m.csv
for p in 18:3000 64:3100 600:3500 1400:4100; do
  printf 'iperf3 on lab-box,%s,loopback,%s\n' "${p%%:*}" "${p#*:}" >> m.csv
done
"$simloop" -q calibrate --source kernel --train payload=18,600 -o fit --name lab m.csv > /dev/null
"$simloop" -q compare fit/lab-fit.json -o c.csv > table.txt || fail "compare the fit: $(cat table.txt)"
/usr/bin/python3 - c.csv << 'PY' || fail "compare's CSV: $(cat c.csv)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and all(r["source"] == "iperf3 on lab-box" for r in rows), [r["source"] for r in rows]
PY
grep -q '^measured: iperf3 on lab-box$' table.txt || fail "the table does not name the source: $(cat table.txt)"
cat > exp.yaml << 'YAML'
name: small
machine: athlon-xp-2700
stack: freebsd6
workload: {payload: 18, packets: 2000, dest: loopback, receive: true}
YAML
"$simloop" -q compare exp.yaml m.csv -o e.csv > etable.txt || fail "compare the experiment: $(cat etable.txt)"
grep -q 'simulated against the measured points of iperf3 on lab-box' etable.txt ||
  fail "the experiment's table does not name the source: $(cat etable.txt)"
/usr/bin/python3 - e.csv << 'PY' || fail "compare's CSV for the experiment: $(cat e.csv)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 4 and all(r["source"] == "iperf3 on lab-box" for r in rows), [r["source"] for r in rows]
PY
echo ok
