# Bash completion for simloop: subcommands, options, experiments, keys.
#
# simloop itself answers (`simloop __complete WORD...` prints what may stand
# in place of the last word), so completion knows what the simloop on PATH
# knows: its subcommands and options, the experiments of its data directory
# and of the working directory, the keys of its schema and their values, its
# machines and stacks, and the columns of a results CSV.
#
# Installed as share/bash-completion/completions/simloop; without installing:
#   source scripts/simloop-completion.bash

_simloop() {
  local cword=${COMP_CWORD:-0} i w
  # Bash splits words at = and : (COMP_WORDBREAKS): join them back, so that
  # simloop sees `--set stack=fr` as the two words --set and stack=fr.
  local -a words=()
  local prev_break=0 joined
  for ((i = 1; i <= cword && i < ${#COMP_WORDS[@]}; i++)); do
    w=${COMP_WORDS[i]}
    if ((${#words[@]} > 0)) && { [[ $w == "=" || $w == ":" ]] || ((prev_break)); }; then
      words[${#words[@]} - 1]+=$w
    else
      words+=("$w")
    fi
    [[ $w == "=" || $w == ":" ]] && prev_break=1 || prev_break=0
  done
  ((cword >= ${#COMP_WORDS[@]})) && words+=("")
  ((${#words[@]} == 0)) && words+=("")
  joined=${words[${#words[@]} - 1]}
  local typed=${COMP_WORDS[cword]:-}
  [[ $typed == "=" || $typed == ":" ]] && typed=""
  # Bash replaces only the part after the last break: drop what precedes it.
  local cut=$((${#joined} - ${#typed}))

  COMPREPLY=()
  local line files=0 dirs=0 nospace=0
  while IFS= read -r line; do
    case $line in
      @files) files=1 ;;
      @dirs) dirs=1 ;;
      @nospace) nospace=1 ;;
      *) COMPREPLY+=("${line:cut}") ;;
    esac
  done < <("${SIMLOOP:-simloop}" __complete "${words[@]}" 2>/dev/null)

  if ((files || dirs)); then
    local -a found
    if ((dirs)); then
      mapfile -t found < <(compgen -d -- "$typed")
    else
      mapfile -t found < <(compgen -f -- "$typed")
    fi
    COMPREPLY+=("${found[@]}")
    type compopt &>/dev/null && compopt -o filenames 2>/dev/null
  fi
  if ((nospace)); then
    type compopt &>/dev/null && compopt -o nospace 2>/dev/null
  fi
  return 0
}

complete -F _simloop simloop
