#!/usr/bin/env python3
"""AITER's MLA decode (ROCm/aiter, aiter.mla.mla_decode_fwd) under mlactl (docs/executor-protocol.md).

NEVER RUN: written from the signature of aiter/mla.py's mla_decode_fwd as modelled in
docs/stacks/vllm-rocm-aiter.md (ROCm/aiter@e4048607):
  mla_decode_fwd(q, kv_buffer, o, qo_indptr, kv_indptr, kv_indices, kv_last_page_lens,
                 max_seqlen_q, sm_scale=..., logit_cap=0.0, num_kv_splits=None,
                 work_meta_data=..., work_indptr=..., work_info_set=..., reduce_indptr=...,
                 reduce_final_map=..., reduce_partial_map=..., q_scale=None, kv_scale=None)
It needs an MI300/MI355 with AITER installed; no such machine was available, so it has
never been run. The persistent routes get mlactl's work list (worklist.*), which models
get_mla_metadata_v1 exactly (docs/design.md §4.4); expect to adjust argument names on first use.

Routes: asm_persistent (work and reduce arrays), asm_nonpersistent; others "unsupported".
q is passed in the user's head layout [tokens, heads, 576] — mla.py folds heads itself — so
this adapter rebuilds it from the view only when the view is not folded.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy_ref as ref  # noqa: E402

NAME = "aiter-mla"


def main(argv):
    d = argv[-1]
    c = ref.Case(d)
    if c.route not in ("asm_persistent", "asm_nonpersistent"):
        return ref.unsupported(d, "runs asm_persistent and asm_nonpersistent", NAME)
    if c.view["fold_ratio"] != 1:
        return ref.unsupported(d, "folded views are not unfolded by this adapter yet", NAME)
    import torch
    from aiter.mla import mla_decode_fwd
    qe, ke = c.m["inputs"]["q"], c.m["inputs"]["kv_cache"]
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8_e4m3fn": torch.float8_e4m3fn,
          "fp8_e4m3fnuz": torch.float8_e4m3fnuz}
    q = torch.from_numpy(c.array(qe)).cuda().view(dt[qe["encoding"]])
    kv = torch.from_numpy(c.array(ke)).cuda().view(dt[ke["encoding"]])
    nb, page, D = kv.shape
    rows, H, _ = q.shape
    V = c.view["v_dim"]
    arr = lambda name: torch.from_numpy(c.meta(name)).cuda()  # noqa: E731
    wl = lambda name: torch.from_numpy(c.work(name)).cuda()  # noqa: E731
    o = torch.full((rows, H, V), float("nan"), device="cuda", dtype=torch.bfloat16)
    kw = {}
    if c.route == "asm_persistent":
        kw = dict(work_indptr=wl("work_indptr"), work_info_set=wl("work_info"), reduce_indptr=wl("reduce_indptr"),
                  reduce_final_map=wl("reduce_final_map"), reduce_partial_map=wl("reduce_partial_map"))
    if qe["encoding"].startswith("fp8"):
        kw["q_scale"] = torch.tensor([qe["scale"]], device="cuda")
    if ke["encoding"].startswith("fp8"):
        kw["kv_scale"] = torch.tensor([ke["scale"]], device="cuda")
    # page size 1 as vLLM calls it (docs/design.md §2): kv_indices are token slots
    _, lse = mla_decode_fwd(q, kv.view(nb * page, 1, 1, D), o, arr("qo_indptr"), arr("paged_kv_indptr"),
                            arr("paged_kv_indices"), arr("paged_kv_last_page_len"),
                            int(c.m["metadata"]["values"]["max_qo_len"]), sm_scale=c.scale, **kw)
    ref.write_result(d, o.float().cpu().numpy(), None if lse is None else lse.view(rows, H).float().cpu().numpy(), name=NAME)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
