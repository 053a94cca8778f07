#!/bin/bash
# A before/after comparison of two builds in one GPU call, as docs/bench_notes.md's method
# asks (correctness first, then both binaries alternated on the same card). Usage:
#   bash scripts/gpu_ab.sh OLD_DIR NEW_DIR [ROUNDS]
# OLD_DIR holds the old build's mlactl; NEW_DIR the new build's mlactl and gpu_tests.
# ROUNDS (default 2): how many times each (shape, option) runs per build, alternated.
# AB_SHAPES (environment, optional): "NAME|bench options;NAME|bench options;..." in place of
# the default C1 and M2 rows; AB_FORMS: "|--pv-precision once|..." the options each shape
# runs with ('|'-separated, an empty field is the default; default: none, P once);
# AB_TESTS: the gpu_tests arguments (default --wgmma; "all" runs every leg).
# Every run gets `--block-size 16 --num-cu 132` (issue 19's table) unless its shape or form
# names that option itself (F2: --block-size 64); a run that fails prints bench's first
# error line beside its "error".
# Steps, each named in the output:
#   correctness  NEW_DIR/gpu_tests (a failure is reported; the timings still run)
#   ab           per round, shape and option: old then new, `bench --format json`,
#                stage 1 + reduce median µs
#   summary      per shape and option: each build's medians over the rounds and new/old - 1
# gpu_tests' full log goes to $OUT/gpu_ab_tests.txt ($OUT: the device tool's folder; else /tmp).
# Exit status: 77 when the card is missing (mlactl bench says so), 2 on a usage error,
# 1 when gpu_tests failed, else 0.
set -u
[ $# -ge 2 ] || { echo "usage: gpu_ab.sh OLD_DIR NEW_DIR [ROUNDS]" >&2; exit 2; }
OLD=$1
NEW=$2
ROUNDS=${3:-2}
case "$ROUNDS" in ''|*[!0-9]*|0) echo "gpu_ab.sh: ROUNDS must be a positive integer, not '$ROUNDS'" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.." || exit 2
. scripts/gpu_shapes.sh
[ -x "$OLD/mlactl" ] || { echo "gpu_ab.sh: $OLD/mlactl is missing or not executable" >&2; exit 2; }
[ -x "$NEW/mlactl" ] || { echo "gpu_ab.sh: $NEW/mlactl is missing or not executable" >&2; exit 2; }
SHAPES=${AB_SHAPES:-"C1|$C1_ARGS;M2|$M2_ARGS"}
FORMS=${AB_FORMS-"|--pv-precision once"}
TESTS=${AB_TESTS:---wgmma}
[ "$TESTS" = all ] && TESTS=""
LOG=${OUT:-/tmp}/gpu_ab_tests.txt  # the device tool's $OUT brings it back
bad=0
echo "== device"; nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1
for b in "$OLD" "$NEW"; do echo "$b: $("$b/mlactl" --version 2>/dev/null | sed -n 2p)"; done
if [ -x "$NEW/gpu_tests" ]; then
  echo "== correctness: $NEW/gpu_tests $TESTS"
  # shellcheck disable=SC2086  # TESTS is a word list
  "$NEW/gpu_tests" $TESTS > "$LOG" 2>&1; rc=$?
  tail -1 "$LOG"
  [ $rc -eq 77 ] && { echo "gpu_ab.sh: no GPU"; exit 77; }
  [ $rc -eq 0 ] || bad=1
else
  echo "== correctness: $NEW/gpu_tests missing, skipped"
fi
RES=$(mktemp)
ERR=$(mktemp)
trap 'rm -f "$RES" "$ERR"' EXIT
IFS=';' read -r -a shape_list <<< "$SHAPES"
IFS='|' read -r -a form_list <<< "$FORMS"
[ ${#form_list[@]} -gt 0 ] || form_list=("")
[[ "$FORMS" == *"|" ]] && form_list+=("")  # a trailing empty field
echo "== ab ($ROUNDS rounds, old then new)"
for r in $(seq "$ROUNDS"); do
  for entry in "${shape_list[@]}"; do
    name=${entry%%|*}
    opts=${entry#*|}
    for form in "${form_list[@]}"; do
      for side in old new; do
        [ $side = old ] && b=$OLD || b=$NEW
        defaults=""
        [[ " $opts $form " == *" --block-size "* ]] || defaults="--block-size 16"
        [[ " $opts $form " == *" --num-cu "* ]] || defaults="$defaults --num-cu 132"
        # shellcheck disable=SC2086  # opts, defaults and form are word lists
        out=$("$b/mlactl" --format json bench $opts $defaults $form 2>"$ERR"); rc=$?
        [ $rc -eq 77 ] && { echo "gpu_ab.sh: no GPU"; exit 77; }
        us=$(printf '%s' "$out" | python3 -c 'import json,sys
try:
    r = json.load(sys.stdin)["results"][0]
    print("%.1f" % r["kernels_us"]["median"])
except Exception:
    print("error")')
        why=""
        [ "$us" = error ] && why=" (exit $rc: $(grep -m1 . "$ERR"))"
        echo "$r $side $name ${form:-default}: $us$why"
        printf '%s\t%s\t%s\t%s\n' "$name" "${form:-default}" "$side" "$us" >> "$RES"
      done
    done
  done
done
echo "== summary (stage 1 + reduce, median µs of each round)"
python3 - "$RES" <<'EOF'
import sys
rows = {}
for line in open(sys.argv[1]):
    name, form, side, us = line.rstrip("\n").split("\t")
    rows.setdefault((name, form), {"old": [], "new": []})[side].append(us)
for (name, form), v in rows.items():
    def num(xs):
        return [float(x) for x in xs if x != "error"]
    o, n = num(v["old"]), num(v["new"])
    delta = "%+.1f %%" % (100 * (sum(n) / len(n)) / (sum(o) / len(o)) - 100) if o and n else "n/a"
    print("%-4s %-28s old %-20s new %-20s new/old %s" % (name, form, ", ".join(v["old"]), ", ".join(v["new"]), delta))
EOF
exit $bad
