#!/usr/bin/env python3
"""vLLM's Triton MLA decode kernel under mlactl's oracle, over a grid (issue 17's mix):
heads 16/128, q_len 1, flattened MTP (2, 4 causal) and a 4-token non-causal block, bf16 and fp8
KV, page sizes 1/16/64, contexts up to 65,536; every case with `--probe windows`, route
triton_mla, planner CU count 132 (an H200's SMs).

One adapter process serves every case (adapters/vllm_triton_mla.py --serve): torch is imported
and each kernel specialisation compiled once. Stops starting cases at --budget seconds.
Usage: python3 scripts/executor_grid.py --mlactl build/mlactl [--budget 360] [--json OUT]
Exit 0 when every case that ran passed, 1 otherwise, 77 without torch/CUDA.
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def cases():
    ctx_sets = {
        "mixed-short": lambda q: [0, 1, 37, 300],
        "mid": lambda q: [2100, 513, 64],
        "8k": lambda q: [8200 - q, 4000],
        "64k": lambda q: [65536 - q],
        "64k+short": lambda q: [65536 - q - 1000, 999],
    }
    qs = [("q1", 1, False), ("mtp2", 2, False), ("mtp4", 4, False), ("block4-noncausal", 4, True)]
    for (qn, q, nc), heads, kv, page, (cn, ctx) in itertools.product(qs, [16, 128], ["bf16", "fp8"], [1, 16, 64], ctx_sets.items()):
        args = ["--heads", str(heads), "--qlen", str(q), "--context", ",".join(str(c) for c in ctx(q)), "--block-size", str(page),
                "--kernel", "triton_mla", "--num-cu", "132", "--seed", str(len(cn) + heads + page)]
        if nc:
            args.append("--non-causal")
        if kv == "fp8":
            args += ["--kv-dtype", "fp8"]
        yield f"h{heads}-{qn}-{kv}-p{page}-{cn}", args


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlactl", default=os.path.join(ROOT, "build", "mlactl"))
    ap.add_argument("--budget", type=float, default=360)
    ap.add_argument("--json")
    a = ap.parse_args()
    t0 = time.time()
    sock = "/tmp/mlactl-tmla.sock"
    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "adapters", "vllm_triton_mla.py"), "--serve", sock],
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
    all_cases = list(cases())
    for name, args in all_cases:
        if time.time() - t0 > a.budget:
            break
        cmd = [a.mlactl, "--format", "json", "run", *args, "--probe", "windows", "--executor", executor, "--executor-timeout", "120"]
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
             "repro": "mlactl run " + " ".join(args) + " --probe windows --executor 'python3 adapters/vllm_triton_mla.py'"}
        results.append(r)
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        if r["status"] != "passed":
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
    return 0 if counts.get("passed", 0) == len(results) and results else 1


if __name__ == "__main__":
    sys.exit(main())
