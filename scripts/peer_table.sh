#!/bin/bash
# The peer table of docs/PERFORMANCE.md from one tool: for each benchmark shape
# (scripts/gpu_shapes.sh), `mlactl bench` times mlactl's own kernel and, on the same shape,
# inputs and KV rotation, vLLM's Triton MLA decode (route triton_mla) and FlashMLA (route
# flashmla) through their adapters' serve mode (--peer; docs/executor-protocol.md, Timing).
# The batches are vLLM CUDA's on sm90 with 64-token pages (FlashMLA's): mlactl's own kernel
# runs the FLASHMLA route's plan. A peer with no path for a shape prints n/a and why.
#   [ROWS="F2 M1"] bash scripts/peer_table.sh MLACTL [OUT_DIR]
# Needs torch, the peer/ copy of vLLM's Triton file and a FlashMLA build
# (scripts/build_flashmla.sh). Prints a markdown table; each shape's JSON goes to OUT_DIR.
set -u
[ $# -ge 1 ] || { echo "usage: peer_table.sh MLACTL [OUT_DIR]" >&2; exit 2; }
M=$1
OUT_DIR=${2:-${OUT:-/tmp}}
cd "$(dirname "$0")/.." || exit 2
. scripts/gpu_shapes.sh
PY=${PYTHON:-python3}
start() {  # adapter, socket
  rm -f "$2"
  "$PY" "adapters/$1" --serve "$2" 2>>"$OUT_DIR/peer_serve.err" &
  for _ in $(seq 300); do [ -S "$2" ] && return 0; sleep 0.2; done
  echo "peer_table.sh: adapters/$1 did not start (see $OUT_DIR/peer_serve.err)" >&2
  return 1
}
start vllm_triton_mla.py /tmp/mlactl-peer-triton.sock || exit 1
start flashmla.py /tmp/mlactl-peer-flashmla.sock || exit 1
echo "| shape | mlactl µs (route) | vLLM Triton µs | FlashMLA µs | mlactl / Triton / FlashMLA % of copy roofline |"
echo "|---|---:|---:|---:|---|"
for row in ${ROWS:-M1 M2 M3 C1 S1 F1 F2}; do
  eval "args=\$${row}_ARGS"
  # every shape on sm90 with 64-token pages (F2's arguments name them already: once only)
  case " $args " in *" --arch "*) ;; *) args="$args --arch sm90" ;; esac
  case " $args " in *" --block-size "*) ;; *) args="$args --block-size 64" ;; esac
  # shellcheck disable=SC2086  # the shape's arguments are words
  "$M" --format json bench $args --kernel flashmla --num-cu 132 \
    --peer "triton:triton_mla=$PY adapters/via_socket.py /tmp/mlactl-peer-triton.sock" \
    --peer "flashmla:flashmla=$PY adapters/via_socket.py /tmp/mlactl-peer-flashmla.sock" > "$OUT_DIR/peer_$row.json" 2>"$OUT_DIR/peer_$row.err"
  "$PY" - "$row" "$OUT_DIR/peer_$row.json" <<'PY'
import json, sys
row, path = sys.argv[1], sys.argv[2]
try:
    j = json.load(open(path))
except Exception as e:
    print(f"| {row} | bench failed: {e} | | | |"); sys.exit(0)
cells, pct = [], []
for r in j.get("results", []):
    if r.get("status") in ("ok", "nonfinite"):
        us = r["kernels_us"]["median"]
        route = r["route"].get("route", r.get("requested"))
        cells.append(f"{us:.1f}" + ("" if "peer" in r else f" ({route})"))
        pct.append(f"{r['pct_copy_roofline']:.0f} %")
    else:
        cells.append("n/a: " + r.get("message", r.get("status", ""))[:90].replace("|", "/"))
        pct.append("—")
while len(cells) < 3:
    cells.append("n/a"); pct.append("—")
print(f"| {row} | {cells[0]} | {cells[1]} | {cells[2]} | {' / '.join(pct)} |")
PY
done
"$PY" adapters/via_socket.py /tmp/mlactl-peer-triton.sock QUIT >/dev/null 2>&1
"$PY" adapters/via_socket.py /tmp/mlactl-peer-flashmla.sock QUIT >/dev/null 2>&1
