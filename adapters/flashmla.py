#!/usr/bin/env python3
"""FlashMLA (deepseek-ai/FlashMLA, module flash_mla) under mlactl (docs/executor-protocol.md).

Calls flash_mla_with_kvcache as the FLASHMLA backends of vLLM and SGLang call it, with the
case's own softmax scale (FlashMLA's default is 1/sqrt(576), not the model's):
  route flashmla:   q [requests, s_q, heads, 576] (the route's per-request q, uniform s_q),
                    the requests' block tables of 64-token pages, cache_seqlens, causal for
                    s_q > 1 (FlashMLA aligns the q block to the end of the KV), FlashMLA's
                    own scheduler (get_mla_metadata);
  route triton_mla: every flattened row as a request of s_q 1 with its own seq_len and block
                    table (FlashMLA run on TRITON_MLA's row metadata).
Out [b, s_q, h, 512] and LSE [b, h, s_q] (natural log) are written as the protocol's
[rows, heads, 512] and [rows, heads]; a row with no key gets LSE -inf (the protocol's
empty sum). Pages must be FlashMLA's 64 tokens; bf16 q and KV (FlashMLA @9241ae3's dense
decode has no fp8 cache, vLLM's fork does: "unsupported" with that reason). Anything it
cannot run is answered "unsupported", never run half-right.

Where flash_mla comes from: the user's install, else peer/flashmla/src (git-ignored), built
by `bash scripts/build_flashmla.sh FLASHMLA_DIR`. `--backend numpy` replaces the kernel by a
numpy model of flash_mla_with_kvcache's contract (paging, the causal alignment, the default
scale, the LSE layout, P rounded to bf16 before P·V) so CI runs every conversion of this file
without a GPU. result.json says p_rounding "bf16": mlactl allows that rounding's bound.

Usage:
  --executor "python3 adapters/flashmla.py"              (one case per process)
  python3 adapters/flashmla.py --serve SOCK &  and  --executor "python3 adapters/via_socket.py SOCK"
  --executor "python3 adapters/flashmla.py --backend numpy"   (no GPU; the conversions only)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import need_numpy  # noqa: E402,F401  (one line, not a traceback, where numpy is missing)
import numpy as np  # noqa: E402
import numpy_ref as ref  # noqa: E402
import serving  # noqa: E402

NAME = "flashmla"
PAGE = 64  # FlashMLA's page_block_size for the dense decode
PEER = os.path.join(os.path.dirname(HERE), "peer", "flashmla", "src")


class Unsupported(Exception):
    pass


class Call:
    """flash_mla_with_kvcache's arguments for one case, as numpy arrays, and the way back."""

    def __init__(self, c):
        if c.route not in ("flashmla", "triton_mla"):
            raise Unsupported(f"runs routes flashmla and triton_mla (this case's route is {c.route})")
        qe, ke = c.m["inputs"]["q"], c.m["inputs"]["kv_cache"]
        for what, e in (("q", qe), ("KV cache", ke)):
            if e["encoding"] != "bf16":
                raise Unsupported(f"{what} is {e['encoding']}: FlashMLA's dense decode at 9241ae3 takes bf16 q and KV "
                                  "(an fp8 cache is vLLM's FlashMLA fork; fp16 is compiled out by scripts/build_flashmla.sh)")
        if c.view["head_dim"] != 576 or c.view["v_dim"] != 512:
            raise Unsupported(f"FlashMLA reads 576-wide latent rows with head_dim_v 512 (view {c.view['head_dim']}/{c.view['v_dim']})")
        q = c.array(qe)                      # [rows, H, 576] uint16 (bf16 bits)
        kv = c.array(ke)                     # [num_blocks, block_size, 576]
        if kv.shape[1] != PAGE:
            raise Unsupported(f"FlashMLA's pages are {PAGE} tokens; this cache's block size is {kv.shape[1]} (use --block-size 64)")
        rows, H, _ = q.shape
        self.rows, self.heads = rows, H
        self.kv = kv
        self.scale = c.scale
        if c.route == "flashmla":
            if c.view["q_layout"] != "per_request":
                raise Unsupported(f"route flashmla with q_layout {c.view['q_layout']} (expected per_request)")
            bt, lens = c.meta("block_table"), c.meta("cache_seqlens")
            b = lens.shape[0]
            s_q = int(c.m["metadata"]["values"]["s_q"])
            # CUDA-graph padding slots (request_padding) may have q rows or none (the view's
            # layout says which); where they have none the kernel gets zeros for them
            self.real = c.meta("request_padding") == 0
            if rows == b * s_q:
                self.real = np.ones(b, bool)
            elif int(self.real.sum()) * s_q != rows:
                raise Unsupported(f"q has {rows} rows, neither requests x s_q = {b} x {s_q} nor real requests x s_q = {int(self.real.sum())} x {s_q}")
            self.q = np.zeros((b, s_q, H, 576), q.dtype)
            self.q[self.real] = q.reshape(-1, s_q, H, 576)
            self.causal = bool(c.view["causal"]) and s_q > 1
        else:
            bt, lens = c.meta("block_table"), c.meta("seq_lens")
            b, s_q = rows, 1
            self.real = np.ones(rows, bool)
            self.q = q.reshape(rows, 1, H, 576)
            self.causal = False
        # vLLM's block tables are zero-filled past a request's blocks; the manifest marks them -1
        self.block_table = np.where(bt < 0, 0, bt).astype(np.int32)
        self.cache_seqlens = lens.astype(np.int32)
        self.b, self.s_q = b, s_q
        # keys each (request, q token) sees: FlashMLA aligns the q block to the KV's end
        t = np.arange(s_q)[None, :]
        self.visible = self.cache_seqlens[:, None] - ((s_q - 1 - t) if self.causal else 0)

    def to_protocol(self, out, lse):
        """out [b, s_q, h, 512], lse [b, h, s_q] (FlashMLA's layouts) -> [rows, h, 512], [rows, h]
        of the real requests' rows."""
        out = np.asarray(out, np.float32)[self.real].reshape(-1, self.heads, 512)
        lse = np.transpose(np.asarray(lse, np.float32), (0, 2, 1))[self.real].reshape(-1, self.heads).copy()
        lse[(self.visible[self.real] <= 0).reshape(-1)] = -np.inf
        return out, lse


def to_bf16(x):
    """float -> the nearest bf16 value (round to nearest even), as float64."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32).astype(np.float64)


def numpy_flash_mla(call, softmax_scale=None):
    """flash_mla_with_kvcache's contract in numpy (the --backend numpy model): paging through
    block_table, causal alignment to the KV's end, the default scale 1/sqrt(576), P rounded
    to bf16 before P·V with the row sum taken before the rounding (splitkv_mla.cuh@9241ae3)."""
    kv = ref.decode(call.kv, "bf16", 1.0)
    q = ref.decode(call.q, "bf16", 1.0)
    scale = softmax_scale if softmax_scale is not None else 576 ** -0.5
    out = np.zeros((call.b, call.s_q, call.heads, 512))
    lse = np.full((call.b, call.heads, call.s_q), np.inf)
    for r in range(call.b):
        n = int(call.cache_seqlens[r])
        if n <= 0:
            continue
        slots = np.arange(n)
        keys = kv[call.block_table[r][slots // PAGE], slots % PAGE]
        s = scale * np.einsum("thd,nd->thn", q[r], keys)
        vis = (np.arange(n)[None, :] < np.maximum(call.visible[r], 0)[:, None])[:, None, :]
        with np.errstate(invalid="ignore", over="ignore"):
            m = np.max(np.where(vis, s, -np.inf), axis=-1, keepdims=True)
            p = np.where(vis, np.exp(s - np.where(np.isfinite(m), m, 0.0)), 0.0)
            l = p.sum(-1)
            acc = np.einsum("thn,nv->thv", to_bf16(p), keys[:, :512])
            empty = l == 0
            out[r] = np.where(empty[..., None], 0.0, acc / np.where(empty, 1.0, l)[..., None])
            lse[r] = np.where(empty, np.inf, m[..., 0] + np.log(np.where(empty, 1.0, l))).T
    return out, lse


class Runner:
    def __init__(self, backend):
        self.backend = backend
        if backend == "torch":
            import torch
            try:
                import flash_mla
            except ImportError:
                sys.path.insert(0, PEER)
                import flash_mla
            self.torch, self.fm = torch, flash_mla

    def kernel(self, call, bench=None):
        """(out, lse, timing_ms): timing_ms when the manifest has a bench section (serving.time_calls)."""
        if self.backend == "numpy":
            if bench:
                raise Unsupported("--backend numpy is a model of the kernel, not the kernel: nothing to time")
            return (*numpy_flash_mla(call, call.scale), None)
        torch, fm = self.torch, self.fm
        dev = lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda()
        q = dev(call.q).view(torch.bfloat16)
        ks = serving.kv_copies(torch, dev(call.kv).view(torch.bfloat16).view(call.kv.shape[0], PAGE, 1, 576), bench)
        bt, lens = dev(call.block_table), dev(call.cache_seqlens)
        if hasattr(fm.flash_mla_interface, "FlashMLASchedMeta"):  # 9241ae3: scheduled inside the first call
            meta, splits = fm.get_mla_metadata()
        else:  # the older API (vLLM's fork): get_mla_metadata(cache_seqlens, s_q * h_q // h_kv, h_kv)
            meta, splits = fm.get_mla_metadata(lens, call.s_q * call.heads, 1)
        result = {}

        def one(i):  # one call on KV copy i (the schedule is reused, as a model's layers reuse it)
            result["o"], result["lse"] = fm.flash_mla_with_kvcache(q, ks[i % len(ks)], bt, lens, 512, meta, splits,
                                                                 softmax_scale=call.scale, causal=call.causal)
        timing = serving.time_calls(torch, one, bench) if bench else None
        one(0)
        torch.cuda.synchronize()
        return result["o"].float().cpu().numpy(), result["lse"].float().cpu().numpy(), timing

    def run(self, d):
        c = ref.Case(d)
        bench = c.m.get("bench")
        try:
            call = Call(c)
            o, lse, timing = self.kernel(call, bench)
        except Unsupported as e:
            return ref.unsupported(d, str(e), NAME)
        out, lse = call.to_protocol(o, lse)
        # FlashMLA rounds P to the input type before P·V (csrc/sm90/decode/dense/splitkv_mla.cuh
        # @9241ae3, rPb = (InputT)rP0), and so does the numpy model
        ref.write_result(d, out, lse, name=NAME, p_rounding="bf16", timing_ms=timing)


def main(argv):
    backend = "torch"
    if len(argv) >= 2 and argv[0] == "--backend":
        backend, argv = argv[1], argv[2:]
        if backend not in ("torch", "numpy"):
            sys.stderr.write(f"{NAME}: --backend torch|numpy, not {backend}\n")
            return 2
    if len(argv) == 2 and argv[0] == "--serve":
        return serving.serve(argv[1], Runner(backend).run, NAME)
    if len(argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    Runner(backend).run(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
