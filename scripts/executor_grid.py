#!/usr/bin/env python3
"""A real kernel under mlactl's oracle, over a grid; planner CU count 132 (an H100's or H200's SMs).

--adapter vllm-triton (default; issue 17's mix): vLLM's Triton MLA decode, route triton_mla:
  heads 16/128, q_len 1, flattened MTP (2, 4 causal) and a 4-token non-causal block, bf16 and
  fp8 KV, page sizes 1/16/64, contexts up to 65,536; every case with `--probe windows` (which
  compares random inputs too).
--adapter flashmla (issue 37): FlashMLA's dense decode (adapters/flashmla.py), bf16, page 64:
  the FLASHMLA route (per-request q, s_q 1-4 causal) and TRITON_MLA's rows (s_q 1), heads
  16/128 and counts its 64-row tiles do not divide (1, 3, 12, 20, 96, 127), lengths at page
  and tile edges (0, 1, 63, 64, 65), many tiny requests beside one of 65,536, past 65,536,
  CUDA-graph padding slots; every case with `--probe windows` (which compares random inputs
  too).

One adapter process serves every case (--serve): torch is imported and each kernel built or
compiled once. Stops starting cases at --budget seconds.
Usage: python3 scripts/executor_grid.py --mlactl build/mlactl [--adapter A] [--budget 360] [--json OUT]
Exit 0 when no case that ran failed (passed, or answered unsupported / refused by the
modelled stack), 1 otherwise, 77 without torch/CUDA.
"""
import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def flashmla_cases():
    ctx_sets = {
        "edges": lambda q: [0, 1, 63, 64, 65],
        "tiny+huge": lambda q: [1, 2, 3, 5, 8, 13, 21, 34, 55, 65536 - q],
        "mid": lambda q: [2100, 513, 127, 129],
        "64k": lambda q: [65536 - q],
        "past64k": lambda q: [70001, 64],
        "padded": lambda q: [300, 700],
        "tile-edges": lambda q: [127, 128, 129, 191, 192],
        "mixed": lambda q: [0, 5000, 1, 64],
        # many requests of unequal length: FlashMLA's scheduler splits some across SMs
        "many": lambda q: [(i * 397) % 3001 + 1 for i in range(16)],
        "skew": lambda q: [32768, 1, 1, 1, 1, 1, 1, 1],
        "odd": lambda q: [7, 77, 777, 7777],
        "padded-long": lambda q: [9000, 3],
    }
    heads_list = [16, 128, 1, 2, 3, 8, 12, 20, 32, 64, 96, 127]
    # --probe windows also runs the random-input comparison (core/probe.cpp): both verdicts per case
    routes = [("flashmla", q, True) for q in (1, 2, 3, 4, 6, 8)] + [("triton_mla", 1, True)]
    for (route, q, probe), heads, (cn, ctx) in itertools.product(routes, heads_list, ctx_sets.items()):
        args = ["--arch", "sm90", "--heads", str(heads), "--qlen", str(q), "--context", ",".join(str(c) for c in ctx(q)),
                "--block-size", "64", "--kernel", route, "--num-cu", "132", "--seed", str(len(cn) * 7 + heads + q)]
        if cn.startswith("padded"):
            args += ["--padding", "2"]
        if probe:
            args += ["--probe", "windows"]
        yield f"{route}-h{heads}-q{q}-{cn}{'' if probe else '-random'}", args


def cases():
    ctx_sets = {
        "mixed-short": lambda q: [0, 1, 37, 300],
        "mid": lambda q: [2100, 513, 64],
        "8k": lambda q: [8200 - q, 4000],
        "64k": lambda q: [65536 - q],
        "64k+short": lambda q: [65536 - q - 1000, 999],
        "edges": lambda q: [1, 15, 16, 17, 63, 64, 65],
        "many": lambda q: [(i * 397) % 3001 + 1 for i in range(16)],
        "odd": lambda q: [7, 77, 777, 7777],
        "skew": lambda q: [32768, 1, 1, 1, 1, 1, 1, 1],
    }
    qs = [("q1", 1, False), ("mtp2", 2, False), ("mtp3", 3, False), ("mtp4", 4, False), ("block4-noncausal", 4, True)]
    for (qn, q, nc), heads, kv, page, (cn, ctx) in itertools.product(qs, [16, 128, 8, 64], ["bf16", "fp8"], [1, 16, 64], ctx_sets.items()):
        args = ["--heads", str(heads), "--qlen", str(q), "--context", ",".join(str(c) for c in ctx(q)), "--block-size", str(page),
                "--kernel", "triton_mla", "--num-cu", "132", "--seed", str(len(cn) + heads + page)]
        if nc:
            args.append("--non-causal")
        if kv == "fp8":
            args += ["--kv-dtype", "fp8"]
        yield f"h{heads}-{qn}-{kv}-p{page}-{cn}", args + ["--probe", "windows"]


# name: (adapter and its arguments, cases, socket); flashmla-numpy runs the FlashMLA grid on
# adapters/flashmla.py's numpy model of the kernel (no GPU: the grid and the adapter's conversions)
ADAPTERS = {"vllm-triton": (["vllm_triton_mla.py"], cases, "/tmp/mlactl-tmla.sock"),
            "flashmla": (["flashmla.py"], flashmla_cases, "/tmp/mlactl-flashmla.sock"),
            "flashmla-numpy": (["flashmla.py", "--backend", "numpy"], flashmla_cases, "/tmp/mlactl-flashmla-numpy.sock")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlactl", default=os.path.join(ROOT, "build", "mlactl"))
    ap.add_argument("--budget", type=float, default=360)
    ap.add_argument("--json")
    ap.add_argument("--adapter", choices=sorted(ADAPTERS), default="vllm-triton")
    ap.add_argument("--only", help="run the cases whose name contains this")
    ap.add_argument("--shard", default="0/1", help="K/N: run every N-th case from the K-th (N processes share a GPU)")
    a = ap.parse_args()
    t0 = time.time()
    script, case_list, sock = ADAPTERS[a.adapter]
    shard, shards = (int(x) for x in a.shard.split("/"))
    sock += f".{shard}"
    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "adapters", script[0]), *script[1:], "--serve", sock],
                              stderr=subprocess.PIPE, text=True)
    for _ in range(600):
        if os.path.exists(sock) or server.poll() is not None:
            break
        time.sleep(0.1)
    if not os.path.exists(sock):
        sys.stderr.write("the adapter did not start:\n" + (server.stderr.read() if server.poll() is not None else "") + "\n")
        return 77
    executor = f"{sys.executable} {os.path.join(ROOT, 'adapters', 'via_socket.py')} {sock}"
    results, counts = [], {}
    all_cases = [c for i, c in enumerate(case_list()) if i % shards == shard]
    # a SIGTERM (timeout(1) past the budget) ends the loop, not the run: the cases done are kept
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    for name, args in all_cases:
        if time.time() - t0 > a.budget or stop:
            break
        if a.only and a.only not in name:
            continue
        cmd = [a.mlactl, "--format", "json", "run", *args, "--executor", executor, "--executor-timeout", "120"]
        c0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True)
        try:
            j = json.loads(p.stdout)
        except Exception:
            j = {"status": "no-json", "message": p.stderr[-500:]}
        pr = j.get("position_probe", {})
        r = {"case": name, "rc": p.returncode, "status": j.get("status"), "reason": j.get("reason"), "message": j.get("message", ""),
             "probe_findings": pr.get("findings"), "heads_probed": pr.get("heads_probed"),
             "max_abs_err": j.get("compare", {}).get("max_abs_err"), "lse_max_abs_err": j.get("compare", {}).get("lse", {}).get("max_abs_err"),
             "seconds": round(time.time() - c0, 2),
             "repro": "mlactl run " + " ".join(args) + f" --executor 'python3 adapters/{' '.join(script)}'"}
        results.append(r)
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        if r["status"] not in ("passed", "skipped", "refused"):
            sys.stderr.write(f"{name}: {r['status']} {r['reason']} {r['message'][:300]}\n")
    try:
        subprocess.run([sys.executable, os.path.join(ROOT, "adapters", "via_socket.py"), sock, "QUIT"], timeout=10)
    except Exception:
        server.kill()
    summary = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cases_planned": len(all_cases), "cases_run": len(results),
               "counts": counts, "probe_findings": sum(r["probe_findings"] or 0 for r in results),
               "heads_probed": sum(r["heads_probed"] or 0 for r in results), "seconds": round(time.time() - t0, 1), "results": results}
    print(json.dumps({k: v for k, v in summary.items() if k != "results"}, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)
    failed = sum(n for st, n in counts.items() if st not in ("passed", "skipped", "refused"))
    return 0 if results and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
