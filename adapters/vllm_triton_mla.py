#!/usr/bin/env python3
"""vLLM's Triton MLA decode kernel under mlactl (docs/executor-protocol.md), route triton_mla.

Calls vllm.v1.attention.ops.triton_decode_attention.decode_attention_fwd with exactly what
TRITON_MLA hands it, from the case's metadata: q [rows, H, 576] (one flattened row per
query token), the paged cache [num_blocks, page, 1, 576] (V = its first 512 dims),
req_to_token = the per-row block table, b_seq_len = seq_lens, num_kv_splits, page size.
Output o in bf16 as vLLM allocates it, LSE in float32.

The import: the user's vLLM when it is installed; else the copy of that one file in the
git-ignored folder peer/ (vllm/v1/attention/ops/triton_decode_attention.py at vllm-project/vllm
@5c1551b07a6547b852d347a5e9ae51e4296872d5 with the two shims scripts/bench_vs_triton.py
describes) — never committed.

fp8 KV: the kernel at that commit takes no k_scale, so the fp8 codes (KV and q) are decoded
to bf16 at scale 1 (exact: e4m3's 3 mantissa bits fit bf16's 7) and the per-tensor scales go
where they are linear: q_scale · kv_scale into sm_scale, kv_scale onto the output (the LSE
needs none). Decoding value · scale into bf16 instead rounded every KV entry.
P: the grouped kernel (heads > 1, every MLA call) takes P·V as tl.dot(p.to(v.dtype), v)
(line 391 at 5c1551b0): result.json says p_rounding = the KV type, and mlactl allows that
rounding's bound (docs/executor-protocol.md).

Usage:
  one case per process:  --executor "python3 adapters/vllm_triton_mla.py"
  many cases, one torch import: python3 adapters/vllm_triton_mla.py --serve /tmp/tmla.sock &
                          --executor "python3 adapters/via_socket.py /tmp/tmla.sock"
Where it has been run: see docs/executor-protocol.md (the H200 grid, scripts/executor_grid.py).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import need_numpy  # noqa: E402,F401  (one line and exit 4 when this python3 has no numpy)
import numpy as np  # noqa: E402
import numpy_ref as ref  # noqa: E402
import serving  # noqa: E402

NAME = "vllm-triton-mla"
PEER = os.path.join(os.path.dirname(HERE), "peer")


def load_kernel():
    try:
        import packaging.version  # noqa: F401  (the vLLM file compares triton versions with it)
    except ImportError:  # a bare torch install: a minimal stand-in
        import types
        pv = types.ModuleType("packaging.version")
        pv.parse = lambda s: tuple(int(x) for x in s.split("+")[0].split(".")[:3] if x.isdigit())
        pk = types.ModuleType("packaging")
        pk.version = pv
        sys.modules["packaging"], sys.modules["packaging.version"] = pk, pv
    try:
        from vllm.v1.attention.ops import triton_decode_attention as tda  # the user's vLLM
        return tda
    except Exception:
        sys.path.insert(0, PEER)
        from vllm.v1.attention.ops import triton_decode_attention as tda
        return tda


class Runner:
    def __init__(self):
        import inspect
        import torch
        self.torch = torch
        self.tda = load_kernel()
        self.is_mla_arg = "is_mla" in inspect.signature(self.tda.decode_attention_fwd).parameters

    def to_device(self, raw, encoding):
        """Storage bits -> the kernel's tensor; fp8 codes decoded to bf16 at scale 1 (exact)."""
        torch = self.torch
        t = torch.from_numpy(np.ascontiguousarray(raw)).cuda()
        if encoding == "bf16":
            return t.view(torch.bfloat16)
        if encoding == "fp16":
            return t.view(torch.float16)
        f8 = torch.float8_e4m3fn if encoding == "fp8_e4m3fn" else torch.float8_e4m3fnuz
        return t.view(f8).to(torch.bfloat16)

    def run(self, d):
        torch = self.torch
        c = ref.Case(d)
        if c.route != "triton_mla":
            return ref.unsupported(d, "this adapter runs route triton_mla (use --kernel triton_mla)", NAME)
        if c.view["head_dim"] != 576:
            return ref.unsupported(d, "the Triton MLA decode kernel reads 576-wide latent rows", NAME)
        qe, ke = c.m["inputs"]["q"], c.m["inputs"]["kv_cache"]
        q = self.to_device(c.array(qe), qe["encoding"])
        kv = self.to_device(c.array(ke), ke["encoding"])
        q_scale = float(qe["scale"]) if qe["encoding"].startswith("fp8") else 1.0
        kv_scale = float(ke["scale"]) if ke["encoding"].startswith("fp8") else 1.0
        if kv.dtype != q.dtype:
            kv = kv.to(q.dtype)
        nb, page, D = kv.shape
        kv = kv.view(nb, page, 1, D)
        V = c.view["v_dim"]
        vals = c.m["metadata"]["values"]
        splits, page_size = int(vals["num_kv_splits"]), int(vals["page_size"])
        bt = torch.from_numpy(c.meta("block_table")).cuda()
        seq = torch.from_numpy(c.meta("seq_lens")).cuda()
        rows, H = q.shape[0], q.shape[1]
        o = torch.full((rows, H, V), float("nan"), device="cuda", dtype=q.dtype)
        lse = torch.full((rows, H), float("nan"), device="cuda", dtype=torch.float32)
        logits = torch.empty(rows, H, splits, V + 1, device="cuda", dtype=torch.float32)
        kw = {"is_mla": True} if self.is_mla_arg else {}
        bench = c.m.get("bench")
        kvs = serving.kv_copies(torch, kv, bench)

        def one(i):  # one decode_attention_fwd on KV copy i (stage 1 and the split merge)
            k = kvs[i % len(kvs)]
            self.tda.decode_attention_fwd(q, k, k[..., :V], o, lse, bt, seq, logits, splits, float(c.scale) * q_scale * kv_scale,
                                          page_size, **kw)
        timing = serving.time_calls(torch, one, bench) if bench else None
        if bench:  # the output checked is a fresh call's
            o.fill_(float("nan"))
            lse.fill_(float("nan"))
        one(0)
        torch.cuda.synchronize()
        p_type = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(kv.dtype) if H > 1 else None
        ref.write_result(d, o.float().cpu().numpy() * kv_scale, lse.cpu().numpy(), name=NAME, p_rounding=p_type, timing_ms=timing)


def main(argv):
    if len(argv) == 2 and argv[0] == "--serve":
        return serving.serve(argv[1], Runner().run, NAME)
    if len(argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    Runner().run(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
