#!/usr/bin/env bash
# man/mlactl.1 against the binary: every long option of `mlactl --help` and of each
# subcommand's `--help` appears in the man page, every long option the man page names is
# one the binary has, and every defect id of `mlactl defects` (an `--inject` id) appears.
# Usage: man_page_options.sh MLACTL MANPAGE
# Prints "man_page_options: all passed" (the ctest's PASS_REGULAR_EXPRESSION) or one line
# per drift and exits 1.
set -u
mlactl=${1:?usage: man_page_options.sh MLACTL MANPAGE}
manpage=${2:?usage: man_page_options.sh MLACTL MANPAGE}

# long options the man page names that are not mlactl's (another program's)
not_mlactl_options=(--install)

fail=0
drift() {
  echo "man_page_options: $*"
  fail=1
}
in_list() {
  local x=$1
  shift
  local y
  for y in "$@"; do [[ $x == "$y" ]] && return 0; done
  return 1
}

# the page's text: \- is -, font escapes (\fB \fI \fR \fP) dropped
page=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$manpage") || {
  echo "man_page_options: cannot read $manpage"
  exit 1
}
# the page mentions OPT: --OPT not followed by another name character (--executor is not --executor-keep)
mentions() { grep -qE -- "(^|[^A-Za-z0-9-])$1([^A-Za-z0-9-]|\$)" <<<"$page"; }

# long options of one help text: the lines of its option lists ("  -o,--output FILE   ...")
options_of_help() {
  sed -nE 's/^[[:space:]]+(-[A-Za-z0-9],)?(--[A-Za-z0-9][A-Za-z0-9-]*).*/\2/p'
}

top_help=$("$mlactl" --help) || {
  echo "man_page_options: $mlactl --help failed"
  exit 1
}
verbs=$(sed -nE '/^(Subcommands|SUBCOMMANDS):/,/^$/p' <<<"$top_help" | sed -nE 's/^  ([a-z][a-z-]*) .*/\1/p')
[[ -n $verbs ]] || {
  echo "man_page_options: no subcommands in $mlactl --help"
  exit 1
}

declare -A binary_options=()
checked=0
check_help() { # VERB (empty: the global options) HELP-TEXT
  local verb=$1 help=$2 opt where
  where=${verb:-global}
  for opt in $(options_of_help <<<"$help"); do
    binary_options[$opt]=1
    checked=$((checked + 1))
    mentions "$opt" || drift "$where option $opt is missing from $manpage"
  done
}

check_help "" "$top_help"
for verb in $verbs; do
  help=$("$mlactl" "$verb" --help) || {
    drift "$mlactl $verb --help failed"
    continue
  }
  grep -q -- "^Usage: mlactl $verb " <<<"$help" || drift "$mlactl $verb --help is not $verb's help"
  mentions "$verb" || drift "subcommand $verb is missing from $manpage"
  check_help "$verb" "$help"
done

# the other way: every long option the page names is one of the binary's
for opt in $(grep -oE -- '(^|[^A-Za-z0-9-])--[A-Za-z0-9][A-Za-z0-9-]*' <<<"$page" | sed -E 's/^[^-]//' | sort -u); do
  [[ -n ${binary_options[$opt]:-} ]] && continue
  in_list "$opt" "${not_mlactl_options[@]}" && continue
  drift "$manpage names $opt, which no command of $mlactl has"
done

# every defect id (what --inject takes)
ids=$("$mlactl" defects --format csv | tail -n +2 | cut -d, -f1)
[[ -n $ids ]] || drift "no defect ids from $mlactl defects --format csv"
n_ids=0
for id in $ids; do
  n_ids=$((n_ids + 1))
  mentions "$id" || drift "defect id $id (--inject) is missing from $manpage"
done

if [[ $fail -ne 0 ]]; then
  exit 1
fi
echo "man_page_options: all passed ($checked options of $(wc -w <<<"$verbs") commands and the global ones, $n_ids defect ids)"
