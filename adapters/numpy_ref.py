#!/usr/bin/env python3
"""numpy reference executor for mlactl's external-executor protocol (docs/executor-protocol.md).

Usage: mlactl run ... --executor "python3 adapters/numpy_ref.py [--mode worklist|triton]"
mlactl appends the case directory as the last argument.

--mode worklist (default, every route): runs mlactl's work list under the route's kernel
  view exactly as the kernel contract says (docs/design.md §4.3, §5): stage 1 per work
  (causal rule from kv_offset, online softmax), then the reduce of split tiles.
--mode triton (route triton_mla only): runs what vLLM's TRITON_MLA decode gets instead of
  mlactl's work list: the per-row block table, seq_lens, page size and num_kv_splits
  (vllm/v1/attention/ops/triton_decode_attention.py's decode_attention_fwd semantics: each
  row cut into ceil(len / num_kv_splits) chunks, merged by LSE).

Runs on Debian's python3-numpy (CI) and anywhere numpy is. Where it has been run: CI
(Debian 12, numpy 1.24), every fixture mlactl's own executors pass.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import need_numpy  # noqa: E402,F401  (one line and exit 4 when this python3 has no numpy)
import numpy as np  # noqa: E402

PROTOCOL = 1
NAME = "numpy-reference"


class Fault(Exception):
    """A read outside a buffer: what a device kernel would fault on."""


def fp8_table(encoding):
    t = np.zeros(256, np.float64)
    fnuz = encoding == "fp8_e4m3fnuz"
    bias = 8 if fnuz else 7
    for code in range(256):
        if (fnuz and code == 0x80) or (not fnuz and (code & 0x7F) == 0x7F):
            t[code] = np.nan
            continue
        e, m = (code >> 3) & 0xF, code & 7
        v = (m / 8.0) * 2.0 ** (1 - bias) if e == 0 else (1 + m / 8.0) * 2.0 ** (e - bias)
        t[code] = -v if code & 0x80 else v
    return t


def decode(raw, encoding, scale):
    """Storage bits (.npy uint16 / uint8) -> float64 values, as every mlactl executor sees them."""
    if encoding == "bf16":
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if encoding == "fp16":
        return raw.view(np.float16).astype(np.float64)
    if encoding.startswith("fp8"):
        return fp8_table(encoding)[raw] * float(scale)
    raise ValueError("unknown encoding " + encoding)


class Case:
    def __init__(self, d):
        self.dir = d
        with open(os.path.join(d, "manifest.json")) as f:
            self.m = json.load(f)
        if self.m.get("protocol") != PROTOCOL:
            raise SystemExit(f"{NAME}: manifest protocol {self.m.get('protocol')}, this adapter speaks {PROTOCOL}")
        self.view = self.m["view"]
        self.route = self.m["route"]
        self.scale = float(self.m["model"]["softmax_scale"])

    def array(self, entry):
        return np.load(os.path.join(self.dir, entry["file"]))

    def q(self):
        e = self.m["inputs"]["q"]
        return decode(self.array(e), e["encoding"], e["scale"])

    def kv(self):
        e = self.m["inputs"]["kv_cache"]
        return decode(self.array(e), e["encoding"], e["scale"])

    def meta(self, name):
        return self.array(self.m["metadata"]["arrays"][name])

    def work(self, name):
        return self.array(self.m["worklist"][name])


def attend(q, keys, v_dim, scale, limits=None):
    """q [n_q, H, D], keys [n, D] -> out [n_q, H, V], lse [n_q, H]; row i sees keys[:limits[i]]."""
    n_q, H, _ = q.shape
    n = keys.shape[0]
    if n == 0:
        return np.zeros((n_q, H, v_dim)), np.full((n_q, H), -np.inf)
    s = scale * np.einsum("qhd,nd->qhn", q, keys)
    vis = np.ones((n_q, 1, n), bool) if limits is None else (np.arange(n)[None, :] < np.asarray(limits)[:, None])[:, None, :]
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(np.where(vis & ~np.isnan(s), s, -np.inf), axis=-1, keepdims=True)
        m_safe = np.where(np.isfinite(m), m, 0.0)
        p = np.where(vis, np.exp(s - m_safe), 0.0)
        l = p.sum(-1)
        # like a device kernel's P·V: masked entries have p = 0 but their V rows are read
        acc = np.einsum("qhn,nv->qhv", p, keys[:, :v_dim])
        empty = l == 0
        out = np.where(empty[..., None], 0.0, acc / np.where(empty, 1.0, l)[..., None])
        lse = np.where(empty, -np.inf, m[..., 0] + np.log(np.where(empty, 1.0, l)))
    return out, lse


def merge(parts):
    """[(out [.., V], lse [..])] -> merged (out, lse): LSE = M + ln sum exp(lse_k - M); +inf when the sum is 0 or NaN."""
    lses = np.stack([p[1] for p in parts])
    with np.errstate(invalid="ignore", over="ignore"):
        M = np.fmax.reduce(lses, axis=0)
        S = np.exp(lses - M).sum(0)
        L = np.where((S == 0) | np.isnan(S), np.inf, M + np.log(np.where(S == 0, 1.0, S)))
        out = sum(np.exp(p[1] - L)[..., None] * p[0] for p in parts)
    return out, L


def run_worklist(c):
    v = c.view
    H, D, V = v["heads"], v["head_dim"], v["v_dim"]
    if v["page_size"] != 1:
        raise Fault(f"the work-list contract runs KV unit 1 (token slots), got page size {v['page_size']}")
    q = c.q()
    rows = q.shape[0]
    kvflat = c.kv().reshape(-1)
    idx = c.work("kv_indices")
    info = c.work("work_info").reshape(-1, 8)
    indptr = c.work("work_indptr")
    rindptr, fmap, pmap = c.work("reduce_indptr"), c.work("reduce_final_map").reshape(-1, 2), c.work("reduce_partial_map")
    nparts = int(c.m["worklist"]["num_partial_rows"])
    out = np.full((rows, H, V), np.nan)
    lse = np.full((rows, H), np.nan)
    pout = np.full((max(1, nparts), H, V), np.nan)
    plse = np.full((max(1, nparts), H), np.nan)
    for cgrp in range(len(indptr) - 1):
        for w in range(indptr[cgrp], indptr[cgrp + 1]):
            _, ploc, qs, qe, ks, ke, koff, _ = (int(x) for x in info[w])
            qn = qe - qs
            if qn <= 0:
                continue
            if qs < 0 or qe > rows:
                raise Fault(f"work {w}: q rows [{qs}, {qe}) outside the {rows} q rows")
            if ke > ks and (ks < 0 or ke > len(idx)):
                raise Fault(f"work {w}: kv range [{ks}, {ke}) outside the {len(idx)} index entries")
            lim = [max(ks, ke - max(0, (qn - 1 - i) - koff) if v["causal"] else ke) for i in range(qn)]
            end = lim[-1] if ke > ks else ks
            slots = idx[ks:end].astype(np.int64)
            if len(slots) and (slots.min() < 0 or (slots.max() + 1) * D > kvflat.size):
                raise Fault(f"work {w}: reads a slot past the KV buffer of {kvflat.size} elements")
            keys = kvflat[(slots[:, None] * D + np.arange(D)[None, :])] if len(slots) else np.zeros((0, D))
            o, l = attend(q[qs:qe], keys, V, c.scale, [x - ks for x in lim])
            if ploc < 0:
                out[qs:qe], lse[qs:qe] = o, l
            else:
                if ploc + qn > nparts:
                    raise Fault(f"work {w}: partial rows [{ploc}, {ploc + qn}) outside {nparts}")
                pout[ploc:ploc + qn], plse[ploc:ploc + qn] = o, l
    for t in range(len(rindptr) - 1):
        s0, s1 = int(rindptr[t]), int(rindptr[t + 1])
        if s1 - s0 <= 1 or t >= len(fmap) or fmap[t][0] < 0:
            continue
        q0, q1 = int(fmap[t][0]), int(fmap[t][1])
        parts = [(pout[p:p + q1 - q0], plse[p:p + q1 - q0]) for p in (int(x) for x in pmap[s0:s1])]
        out[q0:q1], lse[q0:q1] = merge(parts)
    return out, lse


def keep_padding_contract(c, out, lse):
    """mlactl's work list covers no padding row; the stack's kernel writes them when the
    manifest's padding_rows.contract says so (docs/executor-protocol.md § Layout and padding
    rows): 0 and LSE -inf, what a kernel writes for a row that sees nothing (docs/design.md §5)."""
    pad = c.m.get("padding_rows", {})
    if pad.get("contract", "untouched") == "untouched" or not pad.get("rows"):
        return out, lse
    if "row_padding" not in c.m["metadata"]["arrays"]:
        raise SystemExit(f"{NAME}: padding_rows.contract {pad['contract']} on a layout without metadata row_padding")
    rows = c.meta("row_padding") != 0
    out[rows], lse[rows] = 0.0, -np.inf
    return out, lse


def triton_rows(c):
    """What TRITON_MLA hands its kernel: per flattened row its block-table row, seq_len; page size; splits."""
    a = c.m["metadata"]
    return dict(block_table=c.meta("block_table").astype(np.int64), seq_lens=c.meta("seq_lens").astype(np.int64),
                row_request=c.meta("row_request"), row_padding=c.meta("row_padding"),
                page=int(a["values"]["page_size"]), splits=int(a["values"]["num_kv_splits"]))


def run_triton(c, t, split_hook=None):
    """decode_attention_fwd semantics on numpy; split_hook(row, partials) may alter a row's partials (faults)."""
    v = c.view
    H, V = v["heads"], v["v_dim"]
    q = c.q()
    kv = c.kv()  # [num_blocks, page, D]
    nb, page, D = kv.shape
    rows = q.shape[0]
    out = np.full((rows, H, V), np.nan)
    lse = np.full((rows, H), np.nan)
    row_parts = {}
    for r in range(rows):
        n = int(t["seq_lens"][r])
        chunk = -(-n // t["splits"]) if n > 0 else 0
        parts = []
        for i in range(t["splits"]):
            s, e = i * chunk, min((i + 1) * chunk, n)
            if s >= e:
                continue
            pos = np.arange(s, e)
            blocks = t["block_table"][r][pos // page]
            if blocks.min() < -nb or blocks.max() >= nb:
                raise Fault(f"row {r}: block id outside the {nb} blocks of the cache")
            keys = kv[blocks, pos % page]  # a block id of -1 wraps to the last block, as a raw pointer would read before the cache
            parts.append((i, attend(q[r:r + 1], keys, V, c.scale)))
        row_parts[r] = parts
    if split_hook:
        split_hook(row_parts)
    for r, parts in row_parts.items():
        if not parts:
            out[r], lse[r] = 0.0, -np.inf  # vLLM: a row of length 0 gets 0 and -inf
        else:
            o, l = merge([p for _, p in parts])
            out[r], lse[r] = o[0], l[0]
    return out, lse


def write_result(d, out, lse, status="ok", message="", name=NAME, p_rounding=None, timing_ms=None):
    """p_rounding: "bf16"/"fp16" when the kernel's P·V takes P rounded once to that type;
    timing_ms: the timed calls when the manifest asked (docs/executor-protocol.md)."""
    if out is not None:
        np.save(os.path.join(d, "out.npy"), out.astype(np.float32))
    if lse is not None:
        np.save(os.path.join(d, "lse.npy"), lse.astype(np.float32))
    r = {"protocol": PROTOCOL, "executor": name, "status": status, "message": message}
    if p_rounding:
        r["p_rounding"] = p_rounding
    if timing_ms is not None:
        r["timing_ms"] = [float(t) for t in timing_ms]
    with open(os.path.join(d, "result.json"), "w") as f:
        json.dump(r, f)


def unsupported(d, why, name=NAME):
    write_result(d, None, None, "unsupported", why, name)


def main(argv, executor=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=["worklist", "triton"], default="worklist")
    ap.add_argument("case_dir")
    a = ap.parse_args(argv)
    c = Case(a.case_dir)
    if a.mode == "triton" and c.route != "triton_mla":
        return unsupported(a.case_dir, "--mode triton runs route triton_mla only")
    try:
        # padding rows as the stack's contract has them in both modes: the work list covers none,
        # and TRITON_MLA's metadata gives them block ids -1, which no reference should read
        out, lse = keep_padding_contract(c, *(run_worklist(c) if a.mode == "worklist" else run_triton(c, triton_rows(c))))
    except Fault as e:
        sys.stderr.write(f"{NAME}: device fault: {e}\n")
        return 3
    write_result(a.case_dir, out, lse)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
