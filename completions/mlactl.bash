# bash completion for mlactl (installed by `cmake --install` as
# share/bash-completion/completions/mlactl). Subcommand options come from the binary's
# own `--help`, so they never drift from the CLI; the subcommand list is checked
# against `mlactl --help` by the install test (tests/install/install_test.cmake).
_mlactl() {
  local cur prev cmds sub i
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  cmds="validate schema metadata windows route schedule run check defects bench"
  sub=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    case " $cmds " in *" ${COMP_WORDS[i]} "*) sub="${COMP_WORDS[i]}"; break ;; esac
  done
  case "$prev" in
    --format) COMPREPLY=($(compgen -W "table json csv svg jsonl" -- "$cur")); return ;;
    --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
    -o|--output)
      if [[ "$sub" == schema ]]; then COMPREPLY=($(compgen -W "validate metadata windows route schedule run check defects bench check-jsonl error" -- "$cur")); else COMPREPLY=($(compgen -f -- "$cur")); fi
      return ;;
    --backend) COMPREPLY=($(compgen -W "auto cpu gpu" -- "$cur")); return ;;
    --arch) COMPREPLY=($(compgen -W "gfx942 gfx950 sm90" -- "$cur")); return ;;
    --kv-dtype) COMPREPLY=($(compgen -W "auto bf16 fp16 fp8" -- "$cur")); return ;;
    --inject)
      COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" defects --format csv 2>/dev/null | tail -n +2 | cut -d, -f1)" -- "$cur"))
      return ;;
  esac
  if [[ -z "$sub" ]]; then
    if [[ "$cur" == -* ]]; then
      COMPREPLY=($(compgen -W "--format --compact --output --color --verbose --quiet --max-memory --version --help" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
    fi
    return
  fi
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" "$sub" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))  # batch files and fixture folders
  fi
}
complete -o filenames -F _mlactl mlactl
