#!/bin/sh
# A profile fitted to a kernel's measured totals puts its whole fixed cost of
# sending on sendto (and of receiving on soreceive): run's and explain's
# per-stage breakdowns name it as that, not as the socket layer.
#
#   tests/fitted_breakdown_test.sh SIMLOOP SOURCE_DIR
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
named() {  # FILE: the breakdown names the fitted cost, and no socket stage
  grep -Eq '^  send fixed +[0-9.]+ +[0-9.]+ %  \(the fitted fixed cost of sending, all on sendto' "$1" ||
    fail "no 'send fixed' stage: $(cat "$1")"
  if grep -Eq '^  socket ' "$1"; then fail "a socket stage: $(cat "$1")"; fi
}
# The shipped kernel fit.
"$simloop" -q run "$src/experiments/validation/results/kernel.yaml" --set workload.packets=2000 \
  -o out > run.txt
named run.txt
# One fitted here, with a receiver: its receive stage says what it holds.
printf 'source,payload,dest,ns_per_packet,null_syscall_ns\n' > m.csv
for p in 18:3000 64:3100 600:3500 1400:4100; do
  printf 'kernel,%s,loopback,%s,180\n' "${p%%:*}" "${p#*:}" >> m.csv
done
"$simloop" -q calibrate --source kernel --train payload=18,600,1400 -o fit --name k m.csv > /dev/null
grep -q '^fitted_fixed_costs: true' fit/k-stack.yaml || fail "the written stack: $(cat fit/k-stack.yaml)"
"$simloop" -q run fit/k.yaml --set workload.packets=2000 -o out > fitted.txt
named fitted.txt
if grep -q 'soreceive: [1-9]' fit/k-stack.yaml; then
  grep -Eq '^  receive .*\(with the fitted fixed cost of receiving' fitted.txt ||
    fail "the receive stage does not say it holds the fitted cost: $(cat fitted.txt)"
fi
# explain: the stage row of the difference names it too.
"$simloop" -q explain fit/k.yaml --set workload.packets=2000 --b-set stack.functions.sendto=5000 \
  > explain.txt
grep -Eq '^  send fixed .* kpps  \(the fitted fixed cost of sending' explain.txt ||
  fail "explain: no 'send fixed' stage row: $(cat explain.txt)"
# A profile that is not a fit keeps its stage names.
"$simloop" -q run "$src/experiments/netmap-2012.yaml" --set workload.packets=2000 -o out > plain.txt
grep -Eq '^  socket ' plain.txt && ! grep -q 'send fixed' plain.txt || fail "netmap-2012: $(cat plain.txt)"
echo ok
