#!/usr/bin/env bash
# The bad-input catalogue: every kind of bad input run through every
# subcommand that reads it. Each case must end with exit status 2 and a
# located message (FILE:LINE:COL, FILE:LINE and a column, --set KEY, or the
# file as a whole for a directory or an unreadable path) that matches what
# the case expects, with no raw control bytes and no more than 4 KB of it,
# under a memory limit and a time limit (bounds, not timings).
#
#   tests/catalogue/run.sh SIMLOOP SOURCE_DIR WORK_DIR [sanitized]
#
# Prints one line per failing case and a tally by subcommand; exits 1 if
# any case failed. Cases marked as expected failures (xfail) name the
# behaviour they wait for; they are counted apart and never fail the run.
set -uo pipefail

bin=$1
src=$2
work=$3
sanitized=${4:-}
rm -rf "$work"
mkdir -p "$work/out"
cd "$work" || exit 1

mem_kb=2000000  # 2 GB of address space (ASan: its own RSS limit instead)
limit_s=120     # a hang, not a slow run: every case takes well under a second

declare -A pass fail xfail
subs=()
failures=0
located='^\[error\] ([^ :]+:[0-9]+(:[0-9]+)?: |--set [^ ]+: |--train [^ ]+: |--where [^ ]+: |--(I1|D1/--LL|path|shard|trace-window)( [^ ]+)?: |[^ :]+: (is a directory|is not a regular file|is not a directory|is a (character|block) device|is a (FIFO|socket)|no symbol of|no code symbols|names no symbol|none of its [0-9]+ names|cannot read|no manifest|this is also one of the merge.s inputs)|[^ :]+: too large: [0-9]+ bytes|[^ :]+: sweep point [0-9]+ \(|[^ :]+: points\[[0-9]+\] )|^\[error\] simloop: unknown subcommand'

# run_case SUB NAME REGEX ARGS...: simloop ARGS must exit 2, and its
# standard error match REGEX and the located form.
run_case() {
  local sub=$1 name=$2 regex=$3
  shift 3
  [[ " ${subs[*]} " == *" $sub "* ]] || subs+=("$sub")
  local rc why=""
  if [ -n "$sanitized" ]; then
    ASAN_OPTIONS=hard_rss_limit_mb=2048:detect_leaks=1 timeout "$limit_s" "$bin" "$@" \
      > case.out 2> case.err < /dev/null
    rc=$?
  else
    (ulimit -v $mem_kb; exec timeout "$limit_s" "$bin" "$@") > case.out 2> case.err < /dev/null
    rc=$?
  fi
  if [ $rc -ne 2 ]; then
    why="exit status $rc"
  elif ! grep -Eq -- "$regex" case.err; then
    why="message does not match /$regex/"
  elif ! grep -Eq -- "$located" case.err; then
    why="message not located"
  elif LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' case.err || [ "$(tr -d '\000' < case.err | wc -c)" -ne "$(wc -c < case.err)" ]; then
    why="raw control bytes in the message"
  elif [ "$(wc -c < case.err)" -gt 4096 ]; then
    why="message of $(wc -c < case.err) bytes"
  fi
  if [ -z "$why" ]; then
    if [ -n "${XFAIL:-}" ]; then
      echo "XPASS $sub $name (expected to fail: $XFAIL)"
    fi
    pass[$sub]=$((${pass[$sub]:-0} + 1))
  elif [ -n "${XFAIL:-}" ]; then
    xfail[$sub]=$((${xfail[$sub]:-0} + 1))
  else
    fail[$sub]=$((${fail[$sub]:-0} + 1))
    failures=$((failures + 1))
    echo "FAIL $sub $name: $why"
    echo "  simloop $*" | head -c 400
    echo
    head -c 600 case.err | sed 's/^/  | /'
  fi
}

# Every subcommand that reads an experiment file.
exp_subs=(check run sweep layout speed explain)
exp_args() {  # SUB FILE: the command line that reads FILE
  case $1 in
    check) echo "check $2" ;;
    run) echo "run $2 -o $work/out" ;;
    sweep) echo "sweep --list $2 -o $work/out" ;;
    layout) echo "layout $2" ;;
    speed) echo "speed $2" ;;
    explain) echo "explain $2 $2" ;;
  esac
}

# file_case NAME REGEX [SUBS...]: the file NAME.yaml (already written) through
# every subcommand that reads it.
file_case() {
  local name=$1 regex=$2
  shift 2
  local list=("$@")
  [ ${#list[@]} -eq 0 ] && list=("${exp_subs[@]}")
  for sub in "${list[@]}"; do
    # shellcheck disable=SC2046
    run_case "$sub" "$name" "$regex" $(exp_args "$sub" "$work/$name.yaml")
  done
}

# set_case NAME REGEX --set ...: the sets on a good experiment, through every
# subcommand that takes --set.
set_case() {
  local name=$1 regex=$2
  shift 2
  for sub in "${exp_subs[@]}"; do
    # shellcheck disable=SC2046
    run_case "$sub" "$name" "$regex" $(exp_args "$sub" "$work/base.yaml") "$@"
  done
}

# ---- a good experiment, and the control: it passes where the cases fail ----
cat > base.yaml << 'EOF'
name: catalogue
description: a good experiment that every case below breaks in one way
machine: athlon-xp-2700
stack: freebsd6
layout:
  kernel: freebsd6-i386-synthetic
workload:
  payload: 18
  packets: 2000
  dest: wire
interrupts:
  enabled: true
  moderation: {interval_s: 125e-6}
output:
  dir: out
sweep:
  grid:
    workload.payload: [18, 64]
EOF
for args in "check base.yaml" "sweep --list base.yaml -o $work/out" "run base.yaml -o $work/out" \
  "check base.yaml --set stack=freebsd6-warm --set machine=i7-870"; do
  # shellcheck disable=SC2086
  if ! "$bin" $args > /dev/null 2> control.err; then
    echo "FAIL control: simloop $args refused the good experiment:"
    sed 's/^/  | /' control.err
    exit 1
  fi
done

# with NAME TEXT: NAME.yaml is the good experiment with TEXT appended.
with() { { cat base.yaml; printf '%s\n' "$2"; } > "$1.yaml"; }
# without NAME SED: the good experiment edited by a sed script.
edited() { sed "$2" base.yaml > "$1.yaml"; }

# ---- malformed, empty, wrong shape ----
with malformed 'workload2: [unclosed'
file_case malformed 'malformed\.yaml:[0-9]+:[0-9]+: YAML syntax error'
: > empty.yaml
file_case empty 'empty\.yaml:1:1: the file holds no YAML document'
printf '# only a comment\n\n   # and another\n' > comments.yaml
file_case comments 'comments\.yaml:1:1: the file holds no YAML document'
printf -- '- machine: athlon-xp-2700\n- stack: freebsd6\n' > toplist.yaml
file_case toplist 'toplist\.yaml:1:1: experiment: expected a map of keys at the top level'
printf 'just text\n' > topscalar.yaml
file_case topscalar "topscalar\.yaml:1:1: experiment: expected a map of keys at the top level, got 'just text'"
head -c 4096 /bin/true > binary.yaml
file_case binary 'binary\.yaml:1:1: byte 0x7f is not UTF-8 text'
{ cat base.yaml; printf 'description2: "\001\002\033[31mred"\n'; } > control.yaml
file_case control 'control\.yaml:[0-9]+:[0-9]+: byte 0x01 is not UTF-8 text'
{ cat base.yaml; printf 'description: caf\xe9\n'; } > latin1.yaml
file_case latin1 'latin1\.yaml:[0-9]+:[0-9]+: byte 0xe9 is not UTF-8 text'
mkdir -p directory.yaml
file_case directory 'directory\.yaml: is a directory'
file_case missing 'missing\.yaml: cannot read the file'
with second-document $'---\nname: other'
file_case second-document 'second-document\.yaml:[0-9]+:1: a second YAML document'

# ---- one meaning per file ----
with duplicate-top 'machine: i7-870'
file_case duplicate-top 'duplicate-top\.yaml:[0-9]+:1: machine: the key appears twice in this map, at line 3 and here'
edited duplicate-field 's/^  packets: 2000/  packets: 2000\n  payload: 64/'
file_case duplicate-field 'duplicate-field\.yaml:[0-9]+:3: payload: the key appears twice in this map, at line 8 and here'

# ---- unknown keys at every level ----
with unknown-top 'paylod: 64'
file_case unknown-top "unknown-top\.yaml:[0-9]+:1: paylod: unknown key 'paylod' in the top level"
edited unknown-workload 's/^  packets: 2000/  packetz: 2000/'
file_case unknown-workload "unknown-workload\.yaml:9:3: workload\.packetz: unknown key .*did you mean 'packets'"
edited unknown-deep 's/^  moderation: {interval_s: 125e-6}/  moderation: {intervall_s: 125e-6}/'
file_case unknown-deep "unknown-deep\.yaml:[0-9]+:[0-9]+: interrupts\.moderation\.intervall_s: unknown key .*did you mean 'interval_s'"
edited unknown-machine 's/^machine: athlon-xp-2700/machine: {use: athlon-xp-2700, cache: {l1: {sise_bytes: 65536}}}/'
file_case unknown-machine "unknown-machine\.yaml:3:[0-9]+: machine\.cache\.l1\.sise_bytes: unknown key .*did you mean 'size_bytes'"
edited unknown-stack 's/^stack: freebsd6/stack: {use: freebsd6, functions: {ip_outptu: 300}}/'
file_case unknown-stack "unknown-stack\.yaml:4:[0-9]+: stack\.functions\.ip_outptu: unknown key .*did you mean 'ip_output'"

# ---- wrong types ----
edited type-number 's/^  payload: 18/  payload: eighteen/'
file_case type-number "type-number\.yaml:8:12: workload\.payload: expected an integer .*got 'eighteen'"
edited type-section 's/^workload:/workload: 5\nworkload_was:/'
file_case type-section "type-section\.yaml:7:11: workload: expected a map of keys, got '5'"
edited type-list 's/^  dest: wire/  dest: [wire]/'
file_case type-list "type-list\.yaml:10:9: workload\.dest: expected one of loopback, broadcast, wire, self, veth, got a list"
edited type-bool 's/^  enabled: true/  enabled: maybe/'
file_case type-bool "type-bool\.yaml:12:12: interrupts\.enabled: expected true or false, got 'maybe'"
edited type-machine 's/^machine: athlon-xp-2700/machine: [athlon-xp-2700]/'
file_case type-machine "type-machine\.yaml:3:10: machine: expected a name, a path, or a map of fields, got a list"

# ---- out of range ----
for v in -1 1e400 .nan 123456789012345678901 70000; do
  edited "range$v" "s/^  payload: 18/  payload: $v/"
  file_case "range$v" "range${v//./\\.}\.yaml:8:12: workload\.payload: expected an integer in \[0, "
done
edited range-clock 's/^machine: athlon-xp-2700/machine: {use: athlon-xp-2700, clock_hz: 1e20}/'
file_case range-clock "range-clock\.yaml:3:[0-9]+: machine\.clock_hz: expected a number in"
edited cache-geometry 's/^machine: athlon-xp-2700/machine: {use: athlon-xp-2700, cache: {enabled: true, l1: {size_bytes: 100}}}/'
file_case cache-geometry "cache-geometry\.yaml:3:[0-9]+: machine\.cache\.l1\.size_bytes: l1\.size_bytes must be a power of two"
edited dtlb-page 's/^machine: athlon-xp-2700/machine: {use: athlon-xp-2700, dtlb: {enabled: true, page_bytes: 1000}}/'
file_case dtlb-page "dtlb-page\.yaml:3:[0-9]+: machine\.dtlb\.page_bytes: expected a power of two, got 1000"
edited mtu 's/^  payload: 18/  payload: 1600/'
file_case mtu "mtu\.yaml:[0-9]+:[0-9]+: workload\.payload: 1600 bytes \+ 28 bytes of headers exceed"

# ---- names are data, not paths ----
edited name-path 's|^name: catalogue|name: ../../escape|'
file_case name-path "name-path\.yaml:1:7: name: must not start with '\.' or '-'"
edited name-slash 's|^name: catalogue|name: a/b|'
file_case name-slash "name-slash\.yaml:1:7: name: expected only letters, digits"
edited name-empty 's|^name: catalogue|name: ""|'
file_case name-empty "name-empty\.yaml:1:7: name: expected a name"
long=$(printf 'n%.0s' $(seq 1 300))
edited name-long "s|^name: catalogue|name: $long|"
file_case name-long "name-long\.yaml:1:7: name: expected at most 100 characters"

# ---- missing references, broken referenced files ----
edited ref-machine 's/^machine: athlon-xp-2700/machine: athlon-xp-2701/'
file_case ref-machine "ref-machine\.yaml:3:10: machine: no machine named 'athlon-xp-2701'"
edited ref-stack 's|^stack: freebsd6|stack: ./nowhere/stack.yaml|'
file_case ref-stack "ref-stack\.yaml:4:8: stack: no stack named '\./nowhere/stack\.yaml'"
edited ref-layout 's/^  kernel: freebsd6-i386-synthetic/  kernel: no-such-layout/'
file_case ref-layout "ref-layout\.yaml:6:3: layout\.kernel: no layout named 'no-such-layout'"
edited ref-longname "s/^machine: athlon-xp-2700/machine: $long/"
file_case ref-longname "ref-longname\.yaml:3:10: machine: no machine named 'nnnn.*\.\.\. \(300 bytes\)'"
mkdir -p refs/dir.yaml
printf 'clock_hz: [1e9\n' > refs/broken-machine.yaml
printf 'clock_hz: 1e9\nclock_hx: 2\n' > refs/unknown-machine.yaml
head -c 2000 /bin/true > refs/binary-layout.yaml
printf 'objects: &o\n  - *o\n' > refs/recursive-layout.yaml
edited ref-dir 's|^machine: athlon-xp-2700|machine: refs/dir.yaml|'
file_case ref-dir "ref-dir\.yaml:3:10: machine: 'refs/dir\.yaml' is a directory"
edited ref-broken 's|^machine: athlon-xp-2700|machine: refs/broken-machine.yaml|'
file_case ref-broken 'refs/broken-machine\.yaml:[0-9]+:[0-9]+: YAML syntax error'
edited ref-unknown 's|^machine: athlon-xp-2700|machine: refs/unknown-machine.yaml|'
file_case ref-unknown "refs/unknown-machine\.yaml:2:1: machine\.clock_hx: unknown key .*did you mean 'clock_hz'"
edited ref-binary 's|^  kernel: freebsd6-i386-synthetic|  kernel: refs/binary-layout.yaml\nmachine_cache_was:|; s|^machine: athlon-xp-2700|machine: {use: athlon-xp-2700, cache: {enabled: true}}|'
sed -i '/^machine_cache_was:/d' ref-binary.yaml
file_case ref-binary 'refs/binary-layout\.yaml:1:1: byte 0x7f is not UTF-8 text'
edited ref-recursive 's|^  kernel: freebsd6-i386-synthetic|  kernel: refs/recursive-layout.yaml|; s|^machine: athlon-xp-2700|machine: {use: athlon-xp-2700, cache: {enabled: true}}|'
file_case ref-recursive 'refs/recursive-layout\.yaml:[0-9]+:[0-9]+: .*a recursive alias'

# ---- alias bombs, deep nesting, huge files ----
edited alias-self 's/^  grid:/  grid: \&r\n    again: *r/'
file_case alias-self 'alias-self\.yaml:[0-9]+:[0-9]+: again: a recursive alias'
with alias-sweep $'  zip: &r\n    x: *r'
file_case alias-sweep 'alias-sweep\.yaml:[0-9]+:[0-9]+: x: a recursive alias'
{
  cat base.yaml
  echo "bomb:"
  echo "  l0: &l0 [1, 2]"
  for i in $(seq 1 40); do echo "  l$i: &l$i {a: *l$((i - 1)), b: *l$((i - 1))}"; done
} > alias-bomb.yaml
file_case alias-bomb 'alias-bomb\.yaml:[0-9]+:[0-9]+: [ab]: the document has more than [0-9]+ nodes'
{
  head -n -3 base.yaml
  echo "sweep:"
  echo "  grid:"
  echo "    workload.payload: &p [18, 64]"
  echo "  zip: &l0 {workload.packets: [1000, 2000]}"
  for i in $(seq 1 40); do echo "  b$i: &l$i {a: *l$((i - 1)), b: *l$((i - 1))}"; done
} > alias-bomb-sweep.yaml
file_case alias-bomb-sweep 'alias-bomb-sweep\.yaml:[0-9]+:[0-9]+: [^ ]+: the document has more than [0-9]+ nodes'
{ cat base.yaml; printf 'deep: '; printf '[%.0s' $(seq 1 5000); printf ']%.0s' $(seq 1 5000); echo; } > deep-flow.yaml
file_case deep-flow 'deep-flow\.yaml:[0-9]+:[0-9]+: maps and lists nest deeper than'
{
  cat base.yaml
  ind=""
  for i in $(seq 1 100); do echo "${ind}d$i:"; ind="$ind  "; done
  echo "${ind}x: 1"
} > deep-block.yaml
file_case deep-block 'deep-block\.yaml:[0-9]+:[0-9]+: d[0-9]+: maps and lists nest deeper than 64 levels'
{ cat base.yaml; yes '# filler filler filler filler filler filler filler filler filler filler' | head -n 80000; } > huge.yaml
file_case huge 'huge\.yaml:[0-9]+:[0-9]+: the file goes on past [0-9]+ bytes'

# ---- the sweep section (refused alike by check, run and sweep) ----
with sweep-unknown $'  zip:\n    workload.paylod: [1, 2]'
file_case sweep-unknown "sweep-unknown\.yaml:[0-9]+:5: workload\.paylod: no such key; did you mean 'workload\.payload'" check run sweep
with sweep-key $'  repeat: 3'
file_case sweep-key 'sweep-key\.yaml:[0-9]+:3: sweep\.repeat: unknown key in sweep' check run sweep
edited sweep-range 's/^    workload.payload: \[18, 64\]/    workload.payload: [18, -64]/'
file_case sweep-range "sweep-range\.yaml:[0-9]+:[0-9]+: workload\.payload: expected an integer" check run sweep
with sweep-zip $'  zip:\n    workload.packets: [1000, 2000]\n    machine.clock_hz: [1e9]'
file_case sweep-zip 'sweep-zip\.yaml:[0-9]+:5: machine\.clock_hz: has 1 values but workload\.packets has 2' check run sweep
with sweep-filter $'  filter: ["workload.payload <= big"]'
file_case sweep-filter "sweep-filter\.yaml:[0-9]+:[0-9]+: sweep\.filter: workload\.payload is a number" check run sweep
with sweep-repeats $'  repeats: 0'
file_case sweep-repeats 'sweep-repeats\.yaml:[0-9]+:[0-9]+: sweep\.repeats: expected an integer in \[1, 1000000\]' check run sweep
{ head -n -3 base.yaml; echo 'sweep: yes'; } > sweep-scalar.yaml
file_case sweep-scalar "sweep-scalar\.yaml:[0-9]+:8: sweep: expected a map" check run sweep
edited sweep-point 's/^    workload.payload: \[18, 64\]/    workload.payload: [18, 1600]/'
file_case sweep-point 'sweep point 1 \(workload\.payload=1600\): .*1600 bytes \+ 28 bytes of headers' check run sweep

# ---- --set ----
set_case set-noeq '--set name: expected path\.to\.key=value' --set name
set_case set-unknown "--set workload\.paylod: no such key; did you mean 'workload\.payload'" --set workload.paylod=64
set_case set-section "--set workload: is a section; set one of its keys" --set workload=64
set_case set-type "--set workload\.payload: expected an integer .*got 'big'" --set workload.payload=big
set_case set-range "--set workload\.payload: expected an integer in \[0, " --set workload.payload=1e400
set_case set-quoted "--set workload\.payload: expected an integer .*got the quoted string '18'" --set 'workload.payload="18"'
set_case set-stack "--set stack: no stack named 'freebsd5'" --set stack=freebsd5
set_case set-stack-map "--set machine: expected a name, a path, got a map" --set 'machine={clock_hz: 1e9}'
set_case set-longname "--set machine: no machine named 'nnnn.*\(300 bytes\)'" --set "machine=$long"
set_case set-name-abs "--set name: must not start|--set name: expected only letters" --set name=/tmp/escape
set_case set-name-dots "--set name: must not start with '\.' or '-'" --set name=../escape
set_case set-name-long "--set name: expected at most 100 characters" --set "name=$long"
set_case set-passwd "/etc/passwd:1:1: .*expected a map of keys, got 'root:.*\.\.\. \([0-9]+ bytes\)'" --set layout.kernel=/etc/passwd --set machine.cache.enabled=true
set_case set-geometry "--set machine\.cache\.l1\.size_bytes: l1\.size_bytes must be a power of two" --set machine.cache.l1.size_bytes=100 --set machine.cache.enabled=true
set_case set-dtlb-page "--set machine\.dtlb\.page_bytes: expected a power of two, got 3000" --set machine.dtlb.page_bytes=3000
set_case set-btb-entries "--set machine\.branch\.btb_entries: expected a power of two, got 48" --set machine.branch.btb_entries=48
set_case set-ras-depth "--set machine\.branch\.ras_depth: expected an integer in \[1, 256\], got '0'" --set machine.branch.ras_depth=0
set_case set-binary "--set description2: no such key" --set $'description2=\x01\x02'
set_case set-yaml "--set workload\.payload: cannot parse the value" --set 'workload.payload=[1'

# ---- the command line itself ----
run_case main bogus "unknown subcommand 'bogus'" bogus
run_case main chek "unknown subcommand 'chek'; did you mean 'check'" chek base.yaml

# ---- CSV and JSON readers: calibrate, compare, plot, merge ----
printf 'source,payload,dest,ns_per_packet\nkernel,18,loopback,3000\nkernel,64,loopback,3100\nkernel,256,loopback,3500\n' > good.csv
printf 'payload,kpps\n18,300\n64,290\n' > nosource.csv
printf 'source,payload,dest,ns_per_packet\nkernel,18,loopback\n' > ragged.csv
printf 'source,payload,dest,ns_per_packet\nkernel,18,loopback,fast\n' > nan.csv
printf '{"rows": []}\n' > json.csv
: > empty.csv
printf 'source,payload,dest,ns_per_packet\n' > headonly.csv
head -c 3000 /bin/true > binary.csv
mkdir -p dir.csv
csv_cases() {  # SUB PREFIX...: the bad CSVs through a subcommand
  local sub=$1
  shift
  run_case "$sub" nodest "nosource\.csv:1: missing column 'dest'" "$@" nosource.csv
  run_case "$sub" ragged 'ragged\.csv:2: 3 fields, the header has 4' "$@" ragged.csv
  run_case "$sub" nan "nan\.csv:2: column '?ns_per_packet'?: expected a number, got 'fast'" "$@" nan.csv
  run_case "$sub" json 'json\.csv:1:1: this looks like JSON' "$@" json.csv
  run_case "$sub" empty 'empty\.csv:1:1: no header line' "$@" empty.csv
  run_case "$sub" header-only 'headonly\.csv:2: no result rows' "$@" headonly.csv
  run_case "$sub" binary 'binary\.csv:1:1: byte 0x7f is not UTF-8 text' "$@" binary.csv
  run_case "$sub" directory 'dir\.csv: is a directory' "$@" dir.csv
  run_case "$sub" missing 'nowhere\.csv: cannot read the file' "$@" nowhere.csv
  truncate -s 9M huge-measured.csv
  run_case "$sub" too-large 'huge-measured\.csv: too large: 9437184 bytes, past the limit of 8 MiB' "$@" huge-measured.csv
}
csv_cases calibrate calibrate --source kernel --train payload=18 -o "$work/out"
run_case calibrate train-unknown "--train paylod: no such column in good\.csv; did you mean 'payload'" \
  calibrate --source kernel --train paylod=18 -o "$work/out" good.csv
printf 'source,payload,dest,ns_per_packet,Host,Load,Notes\nkernel,18,loopback,3000,a,1,x\n' > unknown-columns.csv
run_case calibrate unknown-columns "unknown-columns\.csv:1: 3 unknown columns 'Host', 'Load', 'Notes'" \
  calibrate --source kernel --train payload=18 -o "$work/out" unknown-columns.csv
printf 'source,payload,dest,align,copy,ns_per_packet,ether_mtu\nnative,18,wire,none,m_copy,3000,20\n' > mtu.csv
run_case calibrate mtu-range "mtu\.csv:2: column 'ether_mtu': expected a whole number 68\.\.9216, got '20'" \
  calibrate --source kernel --train payload=18 -o "$work/out" mtu.csv
run_case calibrate cpu-time-missing "good\.csv:1: --time cpu needs column 'cpu_ns_per_packet'" \
  calibrate --source kernel --train payload=18 --time cpu -o "$work/out" good.csv
"$bin" -q calibrate --source kernel --train payload=18,64 -o "$work/out" --name cat good.csv > /dev/null 2>&1 ||
  echo "FAIL calibrate: the good CSV was refused"
cp "$work/out/cat-fit.json" fit.json 2> /dev/null || echo '{}' > fit.json
head -c 1000 /bin/true > binary.json
printf '{"source": "kernel",\n  "names": [1,\n' > truncated.json
printf '{"hello": "world"}\n' > notfit.json
run_case compare fit-binary 'binary\.json:1:1: byte 0x7f is not UTF-8 text' compare binary.json good.csv
run_case compare fit-truncated 'truncated\.json:[0-9]+:[0-9]+: not JSON' compare truncated.json good.csv
run_case compare fit-other 'notfit\.json:1:1: not a fit written by simloop calibrate' compare notfit.json good.csv
run_case compare fit-directory 'dir\.csv: is a directory' compare dir.csv good.csv
csv_cases compare compare fit.json
run_case compare unknown-columns "unknown-columns\.csv:1: 3 unknown columns 'Host', 'Load', 'Notes'" \
  compare fit.json unknown-columns.csv
run_case compare cpu-time-missing "good\.csv:1: --time cpu needs column 'cpu_ns_per_packet'" \
  compare fit.json good.csv --time cpu

# ---- measure kernel --split: its symbol table, checked before anything runs ----
printf 'functions:\n  udp_sendmsgg: [udp_sendmsg]\n' > symbols-fn.yaml
run_case measure symbols-unknown-function \
  "symbols-fn\.yaml:2:3: functions\.udp_sendmsgg: not a function of the Linux stack; did you mean 'udp_sendmsg'" \
  measure kernel --split --symbols symbols-fn.yaml -n 10
printf 'functions:\n  udp_sendmsg: [udp_sendmsg]\n  ip_output: [udp_sendmsg]\n' > symbols-twice.yaml
run_case measure symbols-twice "symbols-twice\.yaml:3:[0-9]+: .*udp_sendmsg" \
  measure kernel --split --symbols symbols-twice.yaml -n 10
plot_cases() {
  run_case plot binary 'binary\.csv:1:1: byte 0x7f is not UTF-8 text' plot binary.csv -o "$work/out/p"
  run_case plot json 'json\.csv:1:1: this looks like JSON' plot json.csv -o "$work/out/p"
  run_case plot empty 'empty\.csv:1:1: no header line' plot empty.csv -o "$work/out/p"
  run_case plot ragged 'ragged\.csv:2: 3 fields, the header has 4' plot ragged.csv -o "$work/out/p"
  printf 'payload,kpps\n18,fast\n' > kpps.csv
  run_case plot kpps "kpps\.csv:2: column kpps: expected a number, got 'fast'" plot kpps.csv -o "$work/out/p"
  run_case plot directory 'dir\.csv: is a directory' plot dir.csv -o "$work/out/p"
  run_case plot header-only 'headonly\.csv:2: no result rows' plot headonly.csv -o "$work/out/p"
  printf 'payload,kpps\n18,300\n' > where.csv
  run_case plot where-malformed "--where payload=>5: '=>' is not a comparison" plot where.csv --where 'payload=>5' -o "$work/out/p"
  printf '{"result": {}}\n' > result.json
  run_case plot result-json 'result\.json:1:1: this looks like JSON' plot result.json -o "$work/out/p"
  truncate -s 17M huge-results.csv
  run_case plot too-large 'huge-results\.csv: too large: 17825792 bytes, past the limit of 16 MiB' plot huge-results.csv -o "$work/out/p"
  printf 'a,b\n1,2\n' > no-kind.csv
  run_case plot no-kind 'no-kind\.csv:1: cannot tell which plot fits these columns \(a, b\)' plot no-kind.csv -o "$work/out/p"
}
plot_cases

# merge reads shard CSVs and their manifests (the store's readers).
run_case merge binary 'binary\.json:1:1: not a manifest' merge "$work/out/m.csv" binary.csv
run_case merge ragged 'ragged\.csv: no manifest' merge "$work/out/m.csv" ragged.csv
run_case merge directory 'dir\.csv: no manifest' merge "$work/out/m.csv" dir.csv
run_case merge over-input "good\\.csv: this is also one of the merge's inputs" merge good.csv good.csv

# explain reads result JSONs.
printf '{"result": {"kpps": 1,\n oops}\n' > broken-result.json
run_case explain broken-json 'broken-result\.json:2:[0-9]+: not valid JSON' explain broken-result.json broken-result.json
printf '{"result": {"kpps": 350}}\n' > old-result.json
run_case explain incomplete-json 'old-result\.json:1:1: the result has no number at /result/cycles_per_packet' explain old-result.json old-result.json

# ---- files that are not ordinary files, and the limits of every input ----
mkfifo fifo.yaml fifo.csv fifo.nm 2> /dev/null
if [ -p fifo.yaml ]; then
  file_case fifo 'fifo\.yaml: is not a regular file \(a FIFO\)'
  run_case plot fifo 'fifo\.csv: is not a regular file \(a FIFO\)' plot fifo.csv -o "$work/out/p"
  run_case calibrate fifo 'fifo\.csv: is not a regular file \(a FIFO\)' \
    calibrate --source kernel --train payload=18 -o "$work/out" fifo.csv
  run_case merge fifo 'fifo\.csv: no manifest' merge "$work/out/m.csv" fifo.csv
fi
edited ref-device 's|^machine: athlon-xp-2700|machine: /dev/zero|'
file_case ref-device "ref-device\.yaml:3:10: machine: '/dev/zero' is a character device; expected a machine file"
# The Linux stack's own refusals, where check, run and sweep all see them.
printf 'name: linux-align\nmachine: linux-epyc-machine\nstack: linux-epyc-stack\nworkload: {payload: 18, packets: 2000, dest: loopback}\noptions:\n  align: copy-down\nsweep:\n  grid:\n    workload.payload: [18, 64]\n' > linux-align.yaml
file_case linux-align 'linux-align\.yaml:[0-9]+:[0-9]+: options\.align: the linux stack takes alignment policy none or strict' check run sweep

# A real build's files: layout --nm and layout.build.
lo="$src/experiments/validation/data/link-order"
owners="$src/configs/harness/owners.txt"
prof="$lo/profile-loopback-18.txt"
nm="$lo/c006-inet-13168.nm.gz"
build=(layout --nm "$nm" --owners "$owners" --no-search)
run_case layout i1-huge "--I1: cache geometry '1099511627776,1,64': expected SIZE in \[64, " \
  "${build[@]}" --path "name=a,profile=$prof,payload=18" --I1 1099511627776,1,64
run_case layout path-name-escapes "--path '[^']*': name: (must not start with|expected only letters)" \
  "${build[@]}" --path "name=/../../../ESCAPED,profile=$prof,payload=18" --out-dir "$work/esc/out"
run_case layout path-name-dots "--path '[^']*': name: must not start with" \
  "${build[@]}" --path "name=..,profile=$prof,payload=18" --out-dir "$work/esc/out"
run_case layout path-repeated "--path '[^']*': payload: given twice" \
  "${build[@]}" --path "name=a,profile=$prof,payload=18,payload=64"
run_case layout nm-fifo 'fifo\.nm: is a FIFO; expected a text file' \
  layout --nm fifo.nm --owners "$owners" --path "name=a,profile=$prof,payload=18"
run_case layout nm-device '/dev/zero: is a character device; expected a text file' \
  layout --nm /dev/zero --owners "$owners" --path "name=a,profile=$prof,payload=18"
: > empty.nm
run_case layout nm-empty 'empty\.nm: no code symbols' \
  "${build[@]/$nm/empty.nm}" --path "name=a,profile=$prof,payload=18"
printf 'ffffffffffffff00 0000000000001000 T udp_output\n' > wrap.nm
run_case layout nm-wrap 'wrap\.nm:1: udp_output at 0xffffffffffffff00 with size 0x1000 runs past the top of memory' \
  "${build[@]/$nm/wrap.nm}" --path "name=a,profile=$prof,payload=18"
printf 'fffffffffffffff0 10 udp_output\n' > wrapped-profile.txt
run_case layout profile-offset 'wrapped-profile\.txt:1: expected an offset and a length within a function' \
  "${build[@]}" --path "name=a,profile=wrapped-profile.txt,payload=18"
printf '# nothing\n' > empty.order
run_case layout order-empty 'empty\.order: names no symbol' \
  layout --nm "$nm" --map "$lo/c006-inet-13168.map.gz" --owners "$owners" --no-search \
  --path "name=a,profile=$prof,payload=18" --order "e=empty.order"
seq -f 'no_such_function_%g' 1 50000 > unknown.order
run_case layout order-unknown 'unknown\.order: none of its 50000 names is a function of this build' \
  layout --nm "$nm" --map "$lo/c006-inet-13168.map.gz" --owners "$owners" --no-search \
  --path "name=a,profile=$prof,payload=18" --order "u=unknown.order"

# A sweep: a shard with no point; rows whose status no sweep writes.
run_case sweep shard-empty '--shard 3/3: the sweep has 2 points, so shard 3 has none' \
  sweep base.yaml --shard 3/3 -o "$work/out"
rm -rf bogus-sweep && mkdir -p bogus-sweep
if "$bin" -q sweep base.yaml -j 1 -o "$work/bogus-sweep" > /dev/null 2>&1; then
  awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "status") c = i }
    NR == 2 { $c = "bogus" } { print }' bogus-sweep/catalogue-sweep.csv > bogus.tmp &&
    mv bogus.tmp bogus-sweep/catalogue-sweep.csv
  run_case sweep status-bogus "catalogue-sweep\.csv:2: status 'bogus': expected ok, fault, error or crashed" \
    sweep base.yaml -j 1 --resume -o "$work/bogus-sweep"
  run_case merge status-bogus "catalogue-sweep\.csv:2: status 'bogus'" \
    merge "$work/out/merged.csv" bogus-sweep/catalogue-sweep.csv
else
  echo "FAIL sweep: the good experiment's sweep failed"
  failures=$((failures + 1))
fi
# A manifest whose points were edited after its sweep wrote it.
rm -rf edited-sweep
if "$bin" -q sweep base.yaml -j 1 -o "$work/edited-sweep" > /dev/null 2>&1; then
  h=$(sed -n '2p' edited-sweep/catalogue-sweep.csv | cut -d, -f3)
  sed -i "s/\"$h\"/\"0123456789abcdef\"/" edited-sweep/catalogue-sweep.json
  run_case sweep manifest-edited "catalogue-sweep\.json: points\[0\] is '0123456789abcdef', but this sweep's point 0 is '$h'" \
    sweep base.yaml -j 1 --resume -o "$work/edited-sweep"
fi
# run: a trace window the run never reaches.
run_case run trace-window-past '--trace-window 5000:5010: the run sends 2000 packets' \
  run base.yaml -o "$work/out" --trace "$work/out/t.json" --trace-window 5000:5010

# ---- the tally ----
echo
printf '%-10s %7s %7s %7s\n' subcommand passed failed xfail
tp=0
tf=0
tx=0
for s in "${subs[@]}"; do
  printf '%-10s %7d %7d %7d\n' "$s" "${pass[$s]:-0}" "${fail[$s]:-0}" "${xfail[$s]:-0}"
  tp=$((tp + ${pass[$s]:-0}))
  tf=$((tf + ${fail[$s]:-0}))
  tx=$((tx + ${xfail[$s]:-0}))
done
echo "catalogue: $tp passed, $tf failed, $tx expected failures"

# The README states the tally: its table and its total must be this run's.
readme_rows=$(sed -n 's/^| `\([^`]*\)` | \([0-9]*\) | \([0-9]*\) |$/\1 \2 \3/p; s/^| unknown subcommands | \([0-9]*\) | \([0-9]*\) |$/main \1 \2/p' "$src/README.md" |
  sed 's/^sweep --list /sweep /; s/^measure kernel --split /measure /')
for s in "${subs[@]}"; do
  want="$s ${pass[$s]:-0} ${xfail[$s]:-0}"
  # A here-string, not a pipe: with pipefail, grep -q leaving early would
  # end printf by SIGPIPE and fail a row that is there.
  if ! grep -qx -- "$want" <<< "$readme_rows"; then
    echo "FAIL README.md's catalogue table: expected a row '$want' (subcommand, passed, expected failures)"
    failures=$((failures + 1))
  fi
done
if ! grep -q "In all $tp cases pass" "$src/README.md"; then
  echo "FAIL README.md does not say 'In all $tp cases pass'"
  failures=$((failures + 1))
fi
[ "$failures" -eq 0 ]
