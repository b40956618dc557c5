#!/bin/bash
# The bash completion completes: it is sourced into a bash without start-up
# files, with the built simloop first on PATH, and its function is called
# with COMP_WORDS and COMP_CWORD as bash sets them.
#
#   bash_completion_test.sh SIMLOOP COMPLETION_SCRIPT
set -u
simloop=$1 script=$(readlink -f "$2")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ln -s "$(readlink -f "$simloop")" "$dir/simloop"
cd "$dir" || exit 1
# A stack simloop lists, to be offered after stack=.
stack=$("$dir/simloop" list --kind stacks | sed -n 2p | awk '{print $1}')
[[ -n $stack ]] || { echo "FAIL simloop list --kind stacks names no stack"; exit 1; }

PATH="$dir:$PATH" STACK=$stack bash --norc --noprofile -c '
source "$1" || exit 1
fails=0
# complete WORD... : COMPREPLY for the last word, one a line.
complete_words() {
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _simloop
  printf "%s\n" "${COMPREPLY[@]}"
}
# expect PATTERN WORD... : some candidate matches the extended regex.
expect() {
  local pattern=$1
  shift
  local got
  got=$(complete_words "$@")
  if grep -Eq -- "$pattern" <<<"$got"; then
    echo "ok   [$*] -> $(tr "\n" " " <<<"$got" | cut -c1-100)"
  else
    echo "FAIL [$*]: nothing matches /$pattern/; got: $(tr "\n" " " <<<"$got" | cut -c1-300)"
    fails=$((fails + 1))
  fi
}
# only PATTERN WORD... : every candidate matches, and there is one.
only() {
  local pattern=$1
  shift
  local got
  got=$(complete_words "$@")
  if [[ -n $got ]] && ! grep -Evq -- "$pattern" <<<"$got"; then
    echo "ok   [$*] -> $(tr "\n" " " <<<"$got" | cut -c1-100)"
  else
    echo "FAIL [$*]: expected only /$pattern/; got: $(tr "\n" " " <<<"$got" | cut -c1-300)"
    fails=$((fails + 1))
  fi
}
only "^sweep$" simloop sw
expect "^run$" simloop ""
only "^native$" simloop measure n
only "^--set$" simloop run --se
expect "^--verbose$" simloop run --verb
expect "seed-athlon" simloop run seed-a
expect "^experiments/seed-athlon\.yaml$" simloop sweep experiments/se
expect "^machine\.clock" simloop run --set machine.cl
only "^machine\.clock[^=]*=$" simloop run --set machine.cl
expect "^stack=$" simloop run --set st
# After stack=, as a test writes it and as bash splits it at the =.
expect "^stack=$STACK$" simloop run --set stack=
expect "^$STACK$" simloop run --set stack =
expect "^$STACK$" simloop run --set stack = "${STACK:0:3}"
expect "^[a-z0-9.-]+$" simloop explain A.yaml --a-set machine = ""
expect "^options\.align=none$" simloop run --set options.align=
expect "^workload\.payload$" simloop sweep x.yaml --unset workload.pay
only "^(experiments|hosts|layouts|machines|stacks)$" simloop list --kind ""
expect "^breakdown$" simloop plot r.csv --kind b
expect "^payload$" simloop plot r.csv --where pay
expect "^kpps$" simloop plot --series kp
exit $((fails > 0))
' bash "$script"
