#!/bin/bash
# scripts/stall_sites.py on a small ncu source-page CSV made here: the shares by opcode,
# the mbarrier try-wait site with the samples of its loop's branch, the top list, and
# exit status 2 with a message for a missing file, a file with no source table and bad
# arguments. Usage: test_stall_sites.sh SOURCE_DIR PYTHON3
set -u
SRC=$1
PY=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh"  # check NAME CONDITION...; $fails
# 100 samples: the try-wait's branch 60 (long scoreboard), a wgmma wait 30 (barrier), an
# FMUL 10 (selected). ncu prints lines of its own before the table.
H='"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)","stall_barrier","stall_long_sb","stall_selected","stall_long_sb (Not Issued)"'
{
  echo '==PROF== Connected to process 1'
  echo '"Kernel Name","stage1"'
  echo "$H"
  echo '"0x7f0000000010","      SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR8+0x36440], R2","0","0","0","0","0","0"'
  echo '"0x7f0000000020"," @P0   BRA 0x7f0000000100","60","60","0","60","0","60"'
  echo '"0x7f0000000030","      WARPGROUP.DEPBAR.LE gsb0, 0x0","30","30","30","0","0","0"'
  echo '"0x7f0000000040","      FMUL R1, R2, R3","10","0","0","0","10","0"'
} > "$T/src.csv"
out=$("$PY" "$SRC/scripts/stall_sites.py" "$T/src.csv" --top 2); rc=$?
echo "$out"
check "exit 0" test $rc -eq 0
check "totals" grep -q "^4 instructions, 100 stall samples" <<< "$out"
check "BRA by opcode" grep -Eq "^  BRA +60.0 %  long_sb 60.0" <<< "$out"
check "wgmma wait by opcode" grep -Eq "^  WARPGROUP +30.0 %  barrier 30.0" <<< "$out"
check "mbarrier site" grep -Eq "^ +000010  \[UR8\+0x36440\] +60.0 %" <<< "$out"
check "top 2 only" test "$(sed -n '/^== top/,$p' <<< "$out" | grep -c " %  ")" -eq 2
check "top first" grep -Eq "^ +000020  60.0 % +@P0 +BRA" <<< "$out"
err=$("$PY" "$SRC/scripts/stall_sites.py" "$T/none.csv" 2>&1); rc=$?
check "missing file: 2" test $rc -eq 2
check "missing file: message" grep -q "none.csv: No such file" <<< "$err"
echo "no table" > "$T/plain.csv"
err=$("$PY" "$SRC/scripts/stall_sites.py" "$T/plain.csv" 2>&1); rc=$?
check "no table: 2 and message" test $rc -eq 2 -a -n "$(grep 'no ncu source table' <<< "$err")"
err=$("$PY" "$SRC/scripts/stall_sites.py" "$T/src.csv" --top 0 2>&1); rc=$?
check "--top 0: 2 and message" test $rc -eq 2 -a -n "$(grep -- '--top needs a positive integer' <<< "$err")"
err=$("$PY" "$SRC/scripts/stall_sites.py" 2>&1); rc=$?
check "no argument: usage" test $rc -eq 2 -a -n "$(grep 'usage: stall_sites.py CSV' <<< "$err")"
[ $fails -eq 0 ] && echo "test_stall_sites: all passed"
exit $fails
