# The scripts' tests' shared check: `check NAME CONDITION...` prints "ok   NAME" or
# "FAIL NAME" and counts the failures in $fails. Sourced by tests/scripts/test_*.sh.
# shellcheck shell=bash
fails=0
check() {
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
