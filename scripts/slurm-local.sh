#!/usr/bin/env bash
# Try the README's Slurm and GNU parallel sweep recipes on this machine.
#
#   scripts/slurm-local.sh [--only slurm|parallel] [--experiment FILE] [--keep]
#
# Brings up a one-node Slurm cluster (munged as the munge user, slurmctld
# and slurmd with a slurm.conf generated in a temporary directory, ports of
# their own, nothing of the system's configuration touched), submits the
# README's array job exactly as the README writes it, waits for it, merges
# the shards with the README's merge command, and checks that the merged
# results equal the unsharded sweep row for row. Then the same for the
# README's GNU parallel recipe with local workers (-S :). Everything is torn
# down at the end, also on failure or Ctrl-C.
#
# Needs root (slurmd starts jobs as their user), Debian's slurm-wlm, munge
# and parallel (scripts/install-deps.sh installs them), and `simloop` on
# PATH or SIMLOOP=/path/to/simloop. Without them it says what is missing and
# exits 77 (skipped), except under CI (CI set), where a skip is a failure.
#
# Exit status: 0 the recipes ran and matched, 1 they did not, 77 skipped.
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
readme="$here/README.md"
experiment="$here/experiments/sweep-payload-align.yaml"
only=""
keep=0
while (($#)); do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    --experiment) experiment=$(realpath "$2"); shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "slurm-local: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { echo "slurm-local: $*"; }

skip() {
  if [[ -n "${CI:-}" ]]; then
    log "FAIL: cannot run under CI: $*"
    exit 1
  fi
  log "SKIP: $*"
  exit 77
}

simloop_bin=${SIMLOOP:-$(command -v simloop || true)}
[[ -n "$simloop_bin" && -x "$simloop_bin" ]] || skip "no simloop on PATH (or set SIMLOOP=/path/to/simloop)"
missing=()
want=(python3)
[[ "$only" != parallel ]] && want+=(munged slurmctld slurmd sbatch scontrol runuser)
[[ "$only" != slurm ]] && want+=(parallel)
for c in "${want[@]}"; do
  command -v "$c" >/dev/null || missing+=("$c")
done
((${#missing[@]} == 0)) || skip "missing ${missing[*]} (scripts/install-deps.sh installs slurm-wlm, munge and parallel)"
if [[ "$only" != parallel && $(id -u) -ne 0 ]]; then
  skip "the Slurm recipe needs root (slurmd starts each job as its user)"
fi

tmp=$(mktemp -d /tmp/simloop-slurm-local.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
  local rc=$?
  if [[ -f "$tmp/slurm.conf" ]]; then
    SLURM_CONF="$tmp/slurm.conf" scancel --quiet --full "${jobid:-0}" 2>/dev/null
  fi
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null
  done
  # munged, slurmctld and slurmd fork into the background: their pid files.
  for f in "$tmp"/run/*.pid; do
    [[ -f "$f" ]] && kill "$(cat "$f")" 2>/dev/null
  done
  sleep 0.5
  for f in "$tmp"/run/*.pid; do
    [[ -f "$f" ]] && kill -9 "$(cat "$f")" 2>/dev/null
  done
  if ((keep)) || ((rc != 0 && rc != 77)); then
    log "kept $tmp (logs in $tmp/log)"
  else
    rm -rf "$tmp"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$tmp/bin" "$tmp/run" "$tmp/log"
ln -s "$(realpath "$simloop_bin")" "$tmp/bin/simloop"
export PATH="$tmp/bin:$PATH"

# The recipes as the README writes them: the fenced block after a marker.
recipe() {
  awk -v m="<!-- recipe: $1 -->" '
    $0 == m { on = 1; next }
    on && /^```/ { if (inblock) exit; inblock = 1; next }
    on && inblock { print }' "$readme"
}

# A working directory like a user's checkout: experiments/ holds the
# shipped sweep the recipes name, configs/ the machines.
work="$tmp/work"
mkdir -p "$work/experiments"
ln -s "$here/configs" "$work/configs"
cp "$here/experiments/sweep-payload-align.yaml" "$work/experiments/sweep-payload-align.yaml"

# Results are named after the experiment's name (<name>-sweep.csv), which
# need not be its file's: ask simloop. Another experiment than the shipped
# one is run from where it is (so that whatever it refers to by a relative
# path is found), its path and results' names put into the recipes.
shipped_rel=experiments/sweep-payload-align.yaml
exp_arg=$shipped_rel
if [[ "$(realpath "$experiment")" != "$(realpath "$here/$shipped_rel")" ]]; then
  exp_arg=$experiment
fi
name=$(cd "$work" && simloop -q check "$exp_arg" |
  /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["name"])') || {
  log "FAIL: simloop check $exp_arg refused the experiment"; exit 1; }
for_experiment() {  # the README's recipe text on stdin, for this experiment
  local text e r
  text=$(cat)
  e=$(printf '%q' "$exp_arg")
  r=$(printf '%q' "$name-sweep")
  text=${text//experiments\/sweep-payload-align.yaml/"$e"}
  text=${text//sweep-payload-align-sweep/"$r"}
  printf '%s\n' "$text"
}

rows_equal() {  # MERGED WHOLE: equal row for row, but for wall times
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import csv, sys
def rows(p):
    with open(p, newline="") as f:
        r = list(csv.DictReader(f))
    return [{k: v for k, v in row.items() if k not in ("wall_s", "process_s")} for row in r]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
same = sum(1 for x, y in zip(a, b) if x == y)
print(f"slurm-local: rows compared: {max(len(a), len(b))}, equal: {same} ({sys.argv[1]} against the unsharded sweep)")
if len(a) != len(b) or same != len(a) or not a:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            print(f"slurm-local: row {i + 1} differs: {[k for k in x if x[k] != y.get(k)]}")
            break
    sys.exit(1)
EOF
}

# The unsharded sweep to compare against.
log "unsharded sweep of $exp_arg (results $name-sweep.csv)"
(cd "$work" && simloop sweep "$exp_arg" -q -o whole/) || {
  log "FAIL: the unsharded sweep failed"; exit 1; }
whole="$work/whole/$name-sweep.csv"
log "unsharded: $(($(wc -l < "$whole") - 1)) rows"
failed=0

free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  echo 0
}

start_slurm() {
  local node cpus ctld_port d_port key
  node=$(hostname -s)
  cpus=$(nproc)
  ctld_port=$(free_port)
  d_port=$(free_port)
  [[ "$d_port" == "$ctld_port" ]] && d_port=$((ctld_port + 1))

  # munged as the munge user, on a socket of its own.
  mkdir -p "$tmp/munge"
  key=/etc/munge/munge.key
  if [[ ! -r "$key" ]]; then
    key="$tmp/munge/munge.key"
    dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
  fi
  cp "$key" "$tmp/munge/key"
  chown -R munge: "$tmp/munge"
  chmod 711 "$tmp/munge"
  chmod 600 "$tmp/munge/key"
  runuser -u munge -- munged --socket="$tmp/munge/munge.socket" --key-file="$tmp/munge/key" \
    --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munge/munged.log" \
    --seed-file="$tmp/munge/munged.seed" || { log "munged did not start"; return 1; }
  cp "$tmp/munge/munged.pid" "$tmp/run/munged.pid"

  mkdir -p "$tmp/state" "$tmp/spool"
  cat >"$tmp/slurm.conf" <<EOF
ClusterName=simloop-local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/munge.socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$tmp/slurm.conf"
  slurmctld -f "$SLURM_CONF" || { log "slurmctld did not start"; return 1; }
  slurmd -f "$SLURM_CONF" || { log "slurmd did not start"; return 1; }
  local state=""
  for _ in $(seq 60); do
    state=$(scontrol show node "$node" -o 2>/dev/null | sed -n 's/.*State=\([A-Z+_]*\).*/\1/p')
    [[ "$state" == IDLE* ]] && break
    sleep 0.5
  done
  if [[ "$state" != IDLE* ]]; then
    log "node $node is '${state:-unknown}', not idle"
    return 1
  fi
  log "one-node cluster up: $node, $cpus CPUs, slurmctld :$ctld_port, slurmd :$d_port"
}

run_slurm() {
  start_slurm || return 1
  local job merge states
  job=$(recipe slurm-job | for_experiment)
  merge=$(recipe slurm-merge | for_experiment)
  [[ -n "$job" && -n "$merge" ]] || { log "no Slurm recipe in $readme"; return 1; }
  printf '%s\n' "$job" >"$work/sweep.sbatch"
  jobid=$(cd "$work" && sbatch --parsable --output="$tmp/log/slurm-%A_%a.out" sweep.sbatch) || {
    log "sbatch refused the README's job"; return 1; }
  jobid=${jobid%%;*}
  local tasks
  tasks=$(sed -n 's/^#SBATCH --array=1-\([0-9]*\).*/\1/p' "$work/sweep.sbatch")
  log "submitted array job $jobid ($tasks tasks)"
  # Done when no task is pending or running.
  for _ in $(seq 1200); do
    states=$(scontrol show job "$jobid" -o 2>/dev/null | grep -o 'JobState=[A-Z_]*' | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
    if [[ -n "$states" && "$states" != *PENDING* && "$states" != *RUNNING* && "$states" != *COMPLETING* && "$states" != *CONFIGURING* ]]; then
      break
    fi
    sleep 0.5
  done
  local done_n
  done_n=$(scontrol show job "$jobid" -o | grep -c 'JobState=COMPLETED')
  log "array job $jobid finished: $done_n of $tasks tasks completed ($states)"
  if ((done_n != tasks)); then
    tail -n 20 "$tmp"/log/slurm-*.out "$tmp/log/slurmd.log" 2>/dev/null
    return 1
  fi
  (cd "$work" && eval "$merge") || { log "the README's merge command failed"; return 1; }
  rows_equal "$work/results/$name-sweep.csv" "$whole"
}

run_parallel() {
  local recipe_text
  recipe_text=$(recipe parallel | for_experiment)
  [[ -n "$recipe_text" ]] || { log "no GNU parallel recipe in $readme"; return 1; }
  # The README's recipe, with this machine as its only host.
  recipe_text=$(printf '%s\n' "$recipe_text" | sed 's/^HOSTS=.*/HOSTS=:/')
  rm -rf "$work/results"
  log "GNU parallel recipe with local workers (-S :)"
  (cd "$work" && eval "$recipe_text") </dev/null || { log "the README's parallel recipe failed"; return 1; }
  log "parallel: $(ls "$work"/results/*-shard-*.csv | wc -l) shards written"
  rows_equal "$work/results/$name-sweep.csv" "$whole"
}

if [[ "$only" != parallel ]]; then
  if run_slurm; then log "Slurm recipe: OK"; else log "Slurm recipe: FAILED"; failed=1; fi
fi
if [[ "$only" != slurm ]]; then
  if run_parallel; then log "GNU parallel recipe: OK"; else log "GNU parallel recipe: FAILED"; failed=1; fi
fi
exit $failed
