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
Misbehaviour (--misbehave): timeout, crash, exit, shape, dtype, nan, missing.
"""
import os
import signal
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_ref as ref  # noqa: E402

FAULTS = ["window-long", "window-short", "broadcast", "drop-split", "swap-partials", "stale-metadata", "pad-block"]
MISBEHAVE = ["timeout", "crash", "exit", "shape", "dtype", "nan", "missing"]


def request_lengths(t):
    """Per row: its request's full KV length (the longest row of the request)."""
    full = {}
    for r, req in enumerate(t["row_request"]):
        full[int(req)] = max(full.get(int(req), 0), int(t["seq_lens"][r]))
    return np.array([full[int(req)] for req in t["row_request"]], np.int64)


def planted(c, fault):
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
        out, lse = ref.run_worklist(c)
    ref.write_result(d, out, lse)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
