#!/usr/bin/env python3
"""A test executor with switches: the numpy reference (adapters/numpy_ref.py) with one
field failure planted, or a misbehaving executor, to prove that mlactl catches each.
Not an adapter for real kernels; CI runs it (tests/cli/cases_executor.cmake).

Planted faults (--fault, route triton_mla, on the TRITON_MLA metadata the kernel gets):
  window-long     every causal row reads one position past its end (seq_len + 1 where the
                  request has it)
  window-short    every row stops one position early (seq_len - 1)
  broadcast       every row reads its whole request (seed 000: the verify flatten's
                  seq_len = s for every token)
  drop-split      the second KV split of every row with two or more is never computed
  swap-partials   the first split's partials of the first two rows with two or more splits
                  are swapped
  stale-metadata  the block tables of another batch: row r reads request r+1's blocks
  pad-block       a padding row reads block -1 (its block table is -1) and, as a kernel
                  without a bounds check, writes it over the real row before it
The probe's blind spots (issue 37 item 4; docs/executor-protocol.md § The position probe):
  scale           softmax scale 1/sqrt(576) instead of the case's (FlashMLA without
                  softmax_scale): a global numeric fault, no KV position is wrong
  rope-q          q's rope dims (512..575) ignored: invisible on the probe's inputs (q is 0
                  there), seen by the random-input comparison
  past-end        every row whose window ends at its request's end reads one slot more: the
                  slot after its last one (the next slot of the page, the next page's first
                  slot or another request's key, as the placement has it)
  heads-long      window-long on heads [H/2, H) only (a second head tile's off-by-one)
  pad-nan         padding rows written NaN (vllm #57094: 0/0 in TRITON_MLA's seq_len-0 rows)
  read-poison     every row with KV also reads an unused (NaN-filled) slot: NaN in every
                  real row, padding rows 0
Misbehaviour (--misbehave): timeout, crash, exit, shape, dtype, nan, missing.
"""
import math
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import need_numpy  # noqa: E402,F401  (one line, not a traceback, where numpy is missing)
import numpy as np  # noqa: E402
import numpy_ref as ref  # noqa: E402

FAULTS = ["window-long", "window-short", "broadcast", "drop-split", "swap-partials", "stale-metadata", "pad-block",
          "scale", "rope-q", "past-end", "heads-long", "pad-nan", "read-poison"]
MISBEHAVE = ["timeout", "crash", "exit", "shape", "dtype", "nan", "missing"]


def request_lengths(t):
    """Per row: its request's full KV length (the longest row of the request)."""
    full = {}
    for r, req in enumerate(t["row_request"]):
        full[int(req)] = max(full.get(int(req), 0), int(t["seq_lens"][r]))
    return np.array([full[int(req)] for req in t["row_request"]], np.int64)


def last_slot(t, r):
    """The token slot of row r's last KV entry, through its block table."""
    n, page = int(t["seq_lens"][r]), t["page"]
    return int(t["block_table"][r][(n - 1) // page]) * page + (n - 1) % page


def with_extra_key(c, t, out, lse, slot_of_row):
    """Rows in slot_of_row recomputed over their keys plus the token slot given (one pass, no splits)."""
    q, kv = c.q(), c.kv()
    nb, page, D = kv.shape
    flat = kv.reshape(-1, D)
    for r, extra in slot_of_row.items():
        n = int(t["seq_lens"][r])
        pos = np.arange(n)
        slots = t["block_table"][r][pos // page] * page + pos % page
        keys = flat[np.concatenate([slots, [extra]]).astype(np.int64)]
        o, l = ref.attend(q[r:r + 1], keys, c.view["v_dim"], c.scale)
        out[r], lse[r] = o[0], l[0]
    return out, lse


def planted_probe_class(c, fault):
    """The faults of the probe's blind spots (docs/executor-protocol.md § The position probe)."""
    t = ref.triton_rows(c)
    real = t["row_padding"] == 0
    if fault == "scale":
        c.scale = 1.0 / math.sqrt(576.0)
        return ref.run_triton(c, t)
    if fault == "rope-q":
        q = c.q()
        q[..., 512:] = 0.0
        c.q = lambda: q
        return ref.run_triton(c, t)
    if fault == "heads-long":
        out, lse = ref.run_triton(c, t)
        full = request_lengths(t)
        lt = dict(t, seq_lens=np.where(real & (t["seq_lens"] < full), t["seq_lens"] + 1, t["seq_lens"]))
        lo, ll = ref.run_triton(c, lt)
        h = c.view["heads"] // 2
        out[:, h:], lse[:, h:] = lo[:, h:], ll[:, h:]
        return out, lse
    out, lse = ref.run_triton(c, t)
    if fault == "past-end":
        full = request_lengths(t)
        nslots = c.kv().shape[0] * t["page"]
        ends = {r: last_slot(t, r) + 1 for r in range(len(real))
                if real[r] and t["seq_lens"][r] > 0 and t["seq_lens"][r] == full[r]}
        return with_extra_key(c, t, out, lse, {r: x for r, x in ends.items() if x < nslots})
    if fault == "pad-nan":
        out[~real], lse[~real] = np.nan, np.nan
        return out, lse
    if fault == "read-poison":
        kv = c.kv()
        poisoned = np.flatnonzero(np.isnan(kv.reshape(-1, kv.shape[-1])).any(-1))
        if len(poisoned) == 0:
            raise SystemExit("faulty: read-poison needs an unused (NaN) slot: use a page size that leaves one")
        return with_extra_key(c, t, out, lse, {r: int(poisoned[0]) for r in range(len(real)) if real[r] and t["seq_lens"][r] > 0})
    raise ValueError(fault)


def planted(c, fault):
    if fault in ("scale", "rope-q", "past-end", "heads-long", "pad-nan", "read-poison"):
        return planted_probe_class(c, fault)
    t = ref.triton_rows(c)
    lens, real = t["seq_lens"].copy(), t["row_padding"] == 0
    hook = None
    if fault == "window-long":
        full = request_lengths(t)
        lens = np.where(real & (lens < full), lens + 1, lens)
    elif fault == "window-short":
        lens = np.where(real & (lens > 0), lens - 1, lens)
    elif fault == "broadcast":
        lens = np.where(real, request_lengths(t), lens)
    elif fault == "stale-metadata":
        bt = t["block_table"].copy()
        reqs = t["row_request"]
        first = {}
        for r, q in enumerate(reqs):
            first.setdefault(int(q), r)
        order = sorted(first)
        for r, q in enumerate(reqs):
            if real[r]:
                nxt = order[(order.index(int(q)) + 1) % len(order)]
                bt[r] = t["block_table"][first[nxt]]
        t["block_table"] = bt
    elif fault == "drop-split":
        def hook(parts):
            for r in parts:
                if len(parts[r]) >= 2:
                    del parts[r][1]
    elif fault == "swap-partials":
        def hook(parts):
            multi = [r for r in sorted(parts) if len(parts[r]) >= 2 and real[r]]
            if len(multi) >= 2:
                a, b = multi[0], multi[1]
                (ia, pa), (ib, pb) = parts[a][0], parts[b][0]
                parts[a][0], parts[b][0] = (ia, pb), (ib, pa)
    elif fault == "pad-block":
        pass
    t["seq_lens"] = lens
    out, lse = ref.run_triton(c, t, hook)
    if fault == "pad-block":
        # the padding rows' block tables are -1: the kernel reads block -1 (the cache's
        # last block through a raw pointer) and stores the row one slot early
        kv = c.kv()
        for r in range(len(real)):
            if not real[r] and r > 0 and real[r - 1]:
                keys = kv[-1]
                o, l = ref.attend(c.q()[r:r + 1], keys, c.view["v_dim"], c.scale)
                out[r - 1], lse[r - 1] = o[0], l[0]
    return out, lse


def main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault", choices=FAULTS)
    ap.add_argument("--misbehave", choices=MISBEHAVE)
    ap.add_argument("case_dir")
    a = ap.parse_args(argv)
    d = a.case_dir
    c = ref.Case(d)
    rows, H, V = c.m["outputs"]["out"]["shape"]
    m = a.misbehave
    if m == "timeout":
        time.sleep(3600)
    if m == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if m == "exit":
        sys.stderr.write("faulty: CUDA error: an illegal memory access was encountered\n")
        return 3
    if m == "missing":
        return 0
    if m == "shape":
        np.save(os.path.join(d, "out.npy"), np.zeros((rows, H, V - 1), np.float32))
        return 0
    if m == "dtype":
        np.save(os.path.join(d, "out.npy"), np.zeros((rows, H, V), np.float64))
        return 0
    if m == "nan":
        np.save(os.path.join(d, "out.npy"), np.full((rows, H, V), np.nan, np.float32))
        return 0
    if a.fault:
        if c.route != "triton_mla":
            ref.unsupported(d, "planted faults act on TRITON_MLA metadata (--kernel triton_mla)")
            return 0
        out, lse = planted(c, a.fault)
    else:
        out, lse = ref.keep_padding_contract(c, *ref.run_worklist(c))
    ref.write_result(d, out, lse)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
