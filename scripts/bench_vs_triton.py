#!/usr/bin/env python3
"""mlactl bench vs vLLM's Triton MLA decode kernel, side by side (docs/design.md §8).

Runs on a CUDA machine with PyTorch and Triton. The peer is vLLM's
vllm/v1/attention/ops/triton_decode_attention.py at commit
5c1551b07a6547b852d347a5e9ae51e4296872d5, kept in the git-ignored folder peer/
(never committed) with two tiny local shims (peer/vllm/platforms,
peer/vllm/triton_utils) so that it imports without vLLM.

For each docs/design.md §8 shape (M1, M2, M3, C1, S1, F1, F2; the peer where Triton supports it) this
  * builds bf16 q and a paged KV cache (page --block-size, default 16, blocks shuffled as vLLM hands
    them out) and times the TRITON_MLA call (stage 1 + stage-2 reduce) with CUDA
    events: warm-up, then the median of >= 20 runs, rotating KV copies so L2
    (50-60 MB) never holds the KV (>= 256 MiB of copies in all);
    num_kv_splits = min(next_pow2(max(1, max_seq_len // 512)), 2 * SMs)
    (the TRITON_MLA split rule); a flattened row per query token for q_len > 1;
  * runs `mlactl bench --format json` on the same shape;
  * prints one table: shape, mlactl µs, Triton µs, speed-up, % of roofline.

Usage: python3 scripts/bench_vs_triton.py [--mlactl build-bench/mlactl] [--iters 30]
       [--shapes M1,M2,M3,C1,S1,F1,F2] [--json OUT.json] [--stage1 automatic|wgmma|mma|cuda_core]
       [--num-cu N]   (mlactl's planner CU count; default: the device's SM count)
Exit 0 when everything that could run ran; 77 when torch/triton or a GPU is
missing (the peer could not run; mlactl numbers are still printed if possible).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEER = os.path.join(ROOT, "peer")

# name, batch, seq_len (KV tokens incl. the q tokens), heads, q_len, kv dtype, mlactl extra args
SHAPES = {
    "M1": dict(b=128, s=8192, h=16, q=1, kv="bf16"),
    "M2": dict(b=32, s=8192, h=16, q=4, kv="bf16"),
    "M3": dict(b=8, s=65536, h=16, q=1, kv="bf16"),
    "C1": dict(b=128, s=4096, h=128, q=1, kv="bf16"),
    "S1": dict(b=1, s=32768, h=12, q=1, kv="bf16", compare="gluon_decode,asm_persistent"),
    "F1": dict(b=128, s=8192, h=16, q=1, kv="fp8"),
    # F2: vLLM CUDA's FLASHMLA route with an fp8 cache (fwd_kvcache_mla_fp8: q quantized to fp8 too);
    # FlashMLA takes only 64-token pages (get_supported_kernel_block_sizes), whatever --block-size says
    "F2": dict(b=128, s=8192, h=16, q=1, kv="fp8", arch="sm90", block=64),
}
FLASHMLA_US = {"M1": 310.5, "M2": 98.2, "M3": 170.0, "C1": 248.7, "S1": 49.9}
TARGET = {"M1": "≥ 3.6 TB/s", "M2": "≥ 3.0 TB/s", "M3": "≥ 3.0 TB/s", "C1": "≥ 300 TFLOP/s",
          "S1": "≤ 25 µs, ≥ 2× gluon", "F1": "≥ 3.6 TB/s", "F2": "≤ 170 µs"}


def next_pow2(x):
    return 1 << (max(1, int(x)) - 1).bit_length()


def run_mlactl(mlactl, name, sh, iters, block_size, stage1="automatic", num_cu=0):
    ctx = sh["s"] - sh["q"]
    cmd = [mlactl, "--format", "json", "bench", "--heads", str(sh["h"]), "--qlen", str(sh["q"]),
           "--context", str(ctx), "--batch-size", str(sh["b"]), "--iters", str(iters), "--seed", "1",
           "--block-size", str(sh.get("block", block_size)), "--stage1", stage1]
    if "arch" in sh:
        cmd += ["--arch", sh["arch"]]
    if num_cu > 0:
        cmd += ["--num-cu", str(num_cu)]
    if sh["q"] > 1:
        cmd += ["--mtp-qlen", str(sh["q"])]
    if sh["kv"] == "fp8":
        cmd += ["--kv-dtype", "fp8"]
    if "compare" in sh:
        cmd += ["--compare", sh["compare"]]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(f"[{name}] mlactl exit {p.returncode} in {time.time() - t0:.1f} s: {' '.join(cmd)}\n")
    if p.stderr.strip():
        sys.stderr.write(p.stderr)
    try:
        return cmd, p.returncode, json.loads(p.stdout)
    except Exception:
        return cmd, p.returncode, None


class Peer:
    def __init__(self):
        sys.path.insert(0, PEER)
        import torch  # noqa: F401
        import triton  # noqa: F401
        from vllm.v1.attention.ops import triton_decode_attention as tda
        self.torch = torch
        self.tda = tda
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count

    def time_shape(self, sh, iters, warmup=5, page=16):
        torch = self.torch
        dev = "cuda"
        if sh["kv"] != "bf16":
            return None, "the peer at this commit has no fp8 KV path (no k_scale)"
        if "arch" in sh:
            return None, "a vLLM CUDA FLASHMLA shape: FlashMLA's fp8 kernel is the peer, not Triton"
        B, S, H, Q = sh["b"], sh["s"], sh["h"], sh["q"]
        D, DV = 576, 512
        g = torch.Generator(device=dev)
        g.manual_seed(1)
        blocks_per_req = (S + page - 1) // page
        nblocks = B * blocks_per_req
        kv_bytes = nblocks * page * D * 2
        copies = max(2, math.ceil((256 << 20) / kv_bytes))
        kvs = [(torch.rand(nblocks, page, 1, D, device=dev, generator=g, dtype=torch.float32) * 2 - 1).to(torch.bfloat16)
               for _ in range(copies)]
        perm = torch.randperm(nblocks, device=dev, generator=g).to(torch.int32)
        block_table = perm.view(B, blocks_per_req)
        # TRITON_MLA flattens q_len > 1: one row per query token, causal seq_len ctx + t + 1
        rows = B * Q
        bt = block_table.repeat_interleave(Q, dim=0).contiguous()
        seq = torch.tensor([S - Q + t + 1 for _ in range(B) for t in range(Q)], device=dev, dtype=torch.int32)
        q = ((torch.rand(rows, H, D, device=dev, generator=g) * 2 - 1) * 3).to(torch.bfloat16)
        o = torch.zeros(rows, H, DV, device=dev, dtype=torch.bfloat16)
        lse = torch.zeros(rows, H, device=dev, dtype=torch.bfloat16)
        splits = min(next_pow2(max(1, S // 512)), 2 * self.sms)
        logits = torch.empty(rows, H, splits, DV + 1, device=dev, dtype=torch.float32)
        scale = 1.0 / math.sqrt(192.0)

        def call(i):
            kv = kvs[i % copies]
            self.tda.decode_attention_fwd_grouped(q, kv, kv[..., :DV], o, lse, bt, seq, logits, splits, scale, page)

        for i in range(warmup):
            call(i)
        torch.cuda.synchronize()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
        for i in range(iters):
            ev[i][0].record()
            call(warmup + i)
            ev[i][1].record()
        torch.cuda.synchronize()
        ts = sorted(a.elapsed_time(b) * 1e3 for a, b in ev)
        # spot check against an fp32 reference on a few rows (first KV copy)
        call(0)
        torch.cuda.synchronize()
        err = self.check(q, kvs[0], bt, seq, o, scale, page, D, DV)
        del kvs, logits
        torch.cuda.empty_cache()
        med = ts[len(ts) // 2] if len(ts) % 2 else 0.5 * (ts[len(ts) // 2 - 1] + ts[len(ts) // 2])
        return dict(median_us=med, min_us=ts[0], max_us=ts[-1], splits=splits, kv_copies=copies, max_abs_err=err), None

    def check(self, q, kv, bt, seq, o, scale, page, D, DV):
        torch = self.torch
        worst = 0.0
        for r in sorted({0, q.shape[0] - 1}):
            n = int(seq[r])
            pos = torch.arange(n, device=q.device)
            slots = bt[r, pos // page].long() * page + pos % page
            k = kv.view(-1, D)[slots].float()
            s = (q[r].float() @ k.T) * scale
            p = torch.softmax(s, dim=-1)
            ref = p @ k[:, :DV]
            worst = max(worst, (ref - o[r].float()).abs().max().item())
        return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlactl", default=os.path.join(ROOT, "build-bench", "mlactl"))
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--shapes", default="M1,M2,M3,C1,S1,F1,F2")
    ap.add_argument("--json", default="")
    ap.add_argument("--block-size", type=int, default=16,
                    help="KV page size for both sides (mlactl kv_cache.block_size, Triton PAGE_SIZE; shuffled pages)")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--stage1", default="automatic", choices=["automatic", "wgmma", "mma", "cuda_core"],
                    help="mlactl's stage-1 kernel (mlactl bench --stage1)")
    ap.add_argument("--num-cu", type=int, default=-1,
                    help="mlactl planner's CU count (platform.num_cu): -1 (default) the device's SM count as PyTorch "
                         "reports it (AITER plans for the CUs of the device it runs on); 0 the batch default (256, gfx950)")
    a = ap.parse_args()
    names = [s for s in a.shapes.split(",") if s]

    peer, peer_why = None, ""
    if not a.no_peer:
        try:
            peer = Peer()
        except Exception as e:  # torch / triton / GPU missing
            peer_why = f"Triton peer could not run: {type(e).__name__}: {e}"
            sys.stderr.write(peer_why + "\n")

    num_cu = a.num_cu
    if num_cu < 0:
        try:
            import torch
            num_cu = torch.cuda.get_device_properties(0).multi_processor_count
        except Exception:
            num_cu = 0
    out = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "peer": "vllm triton_decode_attention @ 5c1551b0",
           "peer_ran": peer is not None, "peer_error": peer_why, "num_cu": num_cu, "shapes": {}}
    for n in names:
        sh = SHAPES[n]
        cmd, rc, mj = run_mlactl(a.mlactl, n, sh, a.iters, a.block_size, a.stage1, num_cu)
        entry = {"shape": sh, "mlactl_cmd": " ".join(cmd), "mlactl_exit": rc, "mlactl": mj}
        if peer is not None:
            try:
                res, why = peer.time_shape(sh, a.iters, page=a.block_size)
                entry["triton"] = res
                entry["triton_skip"] = why
            except Exception as e:
                entry["triton"] = None
                entry["triton_skip"] = f"{type(e).__name__}: {e}"
                sys.stderr.write(f"[{n}] triton failed: {entry['triton_skip']}\n")
        out["shapes"][n] = entry

    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)

    # the table
    hdr = ["shape", "b,s_k,h,q,KV", "route", "mlactl µs", "kernel µs", "Triton µs", "speed-up", "TB/s", "TFLOP/s",
           "% roofline", "FlashMLA µs", "target"]
    lines = []
    copy_gbps = None
    for n in names:
        e = out["shapes"][n]
        sh = e["shape"]
        desc = f"{sh['b']},{sh['s']},{sh['h']},{sh['q']},{sh['kv']}"
        if "arch" in sh:
            desc += f" {sh['arch']} page {sh['block']}"
        mj = e.get("mlactl")
        tri = e.get("triton")
        tri_us = f"{tri['median_us']:.1f}" if tri else ("n/a" if peer is not None else "not run")
        if not mj or not mj.get("results"):
            lines.append([n, desc, "-", f"exit {e['mlactl_exit']}", "", tri_us, "", "", "", "", str(FLASHMLA_US.get(n, "")), TARGET[n]])
            continue
        copy_gbps = mj["device"]["copy_roofline_gbps"]
        for r in mj["results"]:
            if r["status"] not in ("ok", "nonfinite"):
                lines.append([n, desc, r["route"]["route"], r["status"], "", tri_us, "", "", "", "", "", TARGET[n]])
                continue
            us = r["kernels_us"]["median"]
            bound_bw = n != "C1"
            pct = r["pct_copy_roofline"] if bound_bw else r["pct_peak_tflops"]
            spd = f"{tri['median_us'] / us:.2f}x" if tri else ""
            lines.append([n, desc, r["route"]["route"], f"{us:.1f}", f"{r['kernel_us']['median']:.1f}", tri_us, spd,
                          f"{r['gbps'] / 1e3:.2f}", f"{r['tflops']:.1f}",
                          f"{pct:.1f}% {'copy' if bound_bw else 'peak'}", str(FLASHMLA_US.get(n, "")), TARGET[n]])
    w = [max(len(str(x)) for x in col) for col in zip(hdr, *lines)]
    print()
    print(f"date {out['date_utc']}; KV page {a.block_size} (shuffled pages) on both sides; mlactl planner num_cu "
          + (str(num_cu) if num_cu > 0 else "256 (batch default)")
          + (f"; copy roofline {copy_gbps:.0f} GB/s" if copy_gbps else ""))
    if peer is None:
        print(peer_why or "Triton peer not run (--no-peer)")
    print("  ".join(h.ljust(w[i]) for i, h in enumerate(hdr)))
    for l in lines:
        print("  ".join(str(x).rjust(w[i]) if i >= 3 else str(x).ljust(w[i]) for i, x in enumerate(l)))
    print("mlactl µs = stage 1 + reduce (median); kernel µs = stage 1 alone; Triton µs = stage 1 + stage 2 (median);"
          " speed-up = Triton / mlactl; % roofline: TB/s over the measured copy, C1 TFLOP/s over 989 dense bf16.")
    return 0 if peer is not None else 77


if __name__ == "__main__":
    sys.exit(main())
