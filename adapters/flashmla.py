#!/usr/bin/env python3
"""FlashMLA (deepseek-ai/FlashMLA, module flash_mla) under mlactl (docs/executor-protocol.md).

NEVER RUN: written from FlashMLA's public README signatures
  tile_scheduler_metadata, num_splits = get_mla_metadata(cache_seqlens, s_q * h_q // h_kv, h_kv)
  o, lse = flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, dv,
                                  tile_scheduler_metadata, num_splits, causal=True)
with q [batch, s_q, h_q, 576] bf16, k_cache [num_blocks, 64, 1, 576], block_table int32,
o [batch, s_q, h_q, 512], lse [batch, h_q, s_q] float32. It has not been run on any machine
(no flash_mla build was available); expect to adjust it on first use.

Route: triton_mla's metadata (one flattened row per query token with its causal seq_len), fed
as a batch of s_q = 1 rows, so FlashMLA's own causal alignment is not exercised; page size 64
only (FlashMLA's block size). Other routes or page sizes answer "unsupported".
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy_ref as ref  # noqa: E402

NAME = "flashmla"


def main(argv):
    d = argv[-1]
    c = ref.Case(d)
    vals = c.m["metadata"]["values"]
    if c.route != "triton_mla" or int(vals["page_size"]) != 64:
        return ref.unsupported(d, "runs the triton_mla row metadata at page size 64 (--kernel triton_mla, block_size 64)", NAME)
    import torch
    from flash_mla import flash_mla_with_kvcache, get_mla_metadata
    qe, ke = c.m["inputs"]["q"], c.m["inputs"]["kv_cache"]
    if qe["encoding"] != "bf16" or ke["encoding"] != "bf16":
        return ref.unsupported(d, "bf16 q and KV only in this adapter", NAME)
    q = torch.from_numpy(c.array(qe)).cuda().view(torch.bfloat16)        # [rows, H, 576]
    kv = torch.from_numpy(c.array(ke)).cuda().view(torch.bfloat16)       # [nb, 64, 576]
    nb, page, D = kv.shape
    rows, H, _ = q.shape
    V = c.view["v_dim"]
    seq = torch.from_numpy(c.meta("seq_lens")).cuda()
    bt = torch.from_numpy(c.meta("block_table")).cuda()
    meta, splits = get_mla_metadata(seq, 1 * H // 1, 1)
    o, lse = flash_mla_with_kvcache(q.view(rows, 1, H, D), kv.view(nb, page, 1, D), bt, seq, V, meta, splits, causal=True)
    ref.write_result(d, o.view(rows, H, V).float().cpu().numpy(), lse.view(rows, H).float().cpu().numpy(), name=NAME)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
