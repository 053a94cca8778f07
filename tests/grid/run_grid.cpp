// Randomized run grid (issue: `mlactl run` on the CPU and the GPU): seeded batches
// over heads 1..128, q_len 1..8, causal both, contexts incl. 0 and page-boundary
// lengths, block sizes 1/16/64, bf16/fp16/fp8, both arches, every route (natural and
// forced), each through the one pipeline; every case must pass or be refused by the
// modelled stack. With --backend gpu every case the GPU executed must report the
// stage-1 kernel that ran (ExecResult::stage1; a run without one fails: "no stage-1
// kernel reported"), and the summary counts the runs by kernel, schedule and precision
// and by reduce. Exit 0 all good, 1 any failure, 77 no GPU for --backend gpu.
//   run_grid --backend cpu|gpu [--cases N] [--seed S] [--cross-check] [--stack vllm-rocm-aiter|vllm-cuda|sglang] [-v]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "core/batch_parse.hpp"
#include "cli/kernel_ran.hpp"
#include "cli/pipeline.hpp"
#include "core/stacks/vllm_rocm_aiter/aiter_rules.hpp"
#include "core/rng.hpp"

using namespace mlactl;
using nlohmann::json;

namespace {

const char* kRoutes[] = {"", "gluon_decode", "gluon_verify", "asm_persistent", "asm_nonpersistent", "triton_mla", "sparse_triton", "aiter_sparse"};

// Stack behaviours mlactl reports as findings about AITER/vLLM, not as its own failures
// (planner notes: docs/stacks/vllm-rocm-aiter.md §A10, the tile-count causal trim, and
// the sparse builder's omitted dtypes).
bool aiter_finding(const cli::RunOutcome& o) {
  if (o.finding_in_stack) return true;  // core/stack_findings.hpp, named by the run itself
  if (!o.plan) return false;
  for (const auto& n : o.plan->notes)
    if (n.find("causal trim counts tiles") != std::string::npos || n.find("fold trim") != std::string::npos ||
        n.find("negative-length") != std::string::npos ||
        // SGLang's aiter: planned with is_causal False, run causal (docs/stacks/sglang.md §S8)
        n.find("planned non-causal (is_causal False)") != std::string::npos ||
        // vLLM's sparse builder never passes dtype_q/dtype_kv (docs/stacks/vllm-rocm-aiter.md §V1 (e)); where
        // fp8 folds differently from bf16 the plan and the kernel disagree (docs/stacks/vllm-rocm-aiter.md §A6, ATOM #883)
        n.find("planner and kernel disagree on the head fold") != std::string::npos)
      return true;
  return false;
}

json random_batch(Rng& rng, int index, std::string* kernel) {
  json d = {{"schema", 1}, {"name", "grid-" + std::to_string(index)}};
  const int head_choices[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 15, 16, 24, 32, 48, 64, 128};
  const int heads = head_choices[rng.below(sizeof head_choices / sizeof head_choices[0])];
  const int qlen = 1 + (int)rng.below(rng.below(3) == 0 ? 8 : 4);
  const bool causal = rng.below(4) != 0;
  const int block_choices[] = {1, 1, 16, 64};
  const int block = block_choices[rng.below(4)];
  const char* arch = rng.below(2) ? "gfx950" : "gfx942";
  const int kvsel = (int)rng.below(6);
  const char* model_dtype = kvsel == 1 ? "fp16" : "bf16";
  const char* kv_dtype = kvsel <= 1 ? "auto" : kvsel == 2 ? "bf16" : kvsel == 3 ? "fp16" : "fp8";
  if (std::strcmp(kv_dtype, "fp16") == 0) model_dtype = "fp16";
  if (std::strcmp(kv_dtype, "bf16") == 0) model_dtype = "bf16";
  const int nreq = 1 + (int)rng.below(6);
  d["platform"] = {{"arch", arch}, {"num_cu", (int)(4 + rng.below(60))}};
  d["model"] = {{"num_heads", heads}, {"dtype", model_dtype}};
  d["kv_cache"] = {{"dtype", kv_dtype}, {"block_size", block}, {"layout", rng.below(2) ? "shuffled" : "sequential"}};
  if (std::strcmp(kv_dtype, "fp8") == 0) d["kv_cache"]["scale"] = 0.5 + rng.uniform01();
  d["decode"] = {{"causal", causal}, {"mtp_qlen", qlen}};
  if (rng.below(4) == 0) d["decode"]["small_head_mode"] = rng.below(2) ? "asm" : "gluon";
  json reqs = json::array();
  for (int r = 0; r < nreq; ++r) {
    int64_t c;
    switch (rng.below(5)) {
      case 0: c = 0; break;
      case 1: c = 16 * (int64_t)(1 + rng.below(40)) - (int64_t)rng.below(3); break;  // page boundaries
      case 2: c = 64 * (int64_t)(1 + rng.below(12)) + 1; break;
      default: c = (int64_t)rng.below(1500);
    }
    reqs.push_back({{"context_len", std::max<int64_t>(0, c)}, {"query_len", qlen}});
  }
  const bool padding = qlen > 1 && rng.below(4) == 0;
  if (padding) reqs.push_back({{"padding", true}});
  d["requests"] = reqs;
  d["data"] = {{"seed", (int)rng.below(1000)}};
  const int route_pick = (int)rng.below(12);
  *kernel = route_pick < 5 ? "" : kRoutes[1 + (route_pick - 5) % 5];  // natural route, or a forced dense route
  if (rng.below(6) == 0) {
    // sparse batch: rope or rope-free geometry, random top-k indices
    // rope-free geometry only on the routes that read it with its own stride: fp8
    // rope-free goes to AITER's 576-stride sparse kernel, seed 002's defect (own fixtures)
    const bool rope_free = rng.below(2) == 0;
    d["sparse"] = {{"topk", (int)(1 + rng.below(96))}, {"geometry", rope_free ? "rope_free" : "rope"}, {"indices", "random"}};
    if (rope_free && d["kv_cache"]["dtype"] == "fp8") d["kv_cache"] = {{"dtype", "auto"}, {"block_size", block}};
    d["requests"] = json::array();
    for (int r = 0; r < nreq; ++r) d["requests"].push_back({{"context_len", (int)rng.below(300)}, {"query_len", qlen}});
    d["decode"].erase("small_head_mode");
    *kernel = rng.below(2) ? "" : "sparse_triton";
  }
  return d;
}

// A context length for the Hopper grids: 0, a seq_len at a 64-token block edge, short,
// 65,536 (while the batch's total stays small) or a few thousand; `total` sums them.
int64_t hopper_context(Rng& rng, int qlen, int64_t& total) {
  int64_t c;
  switch (rng.below(6)) {
    case 0: c = 0; break;
    case 1: c = 64 * (int64_t)(1 + rng.below(40)) - qlen - 1 + (int64_t)rng.below(3); break;  // seq_len at a block edge
    case 2: c = (int64_t)rng.below(64); break;
    case 3: c = total < 70000 && rng.below(4) == 0 ? 65536 - qlen : (int64_t)rng.below(9000); break;
    default: c = (int64_t)rng.below(3000);
  }
  c = std::max<int64_t>(0, c);
  total += c;
  return c;
}

// --stack vllm-cuda: sm90 batches (docs/stacks/vllm-cuda.md): heads 16/32/64/128 (and a few
// others), q_len 1-4 uniform, bf16 or fp8 (q and KV e4m3), padding slots, lengths 0-65,536
// around the 64-token blocks, FLASHMLA natural (fp8) or forced (bf16), TRITON_MLA at q_len 1.
// Causal only: vLLM's CUDA decode is always causal (a non-causal batch is a modelled finding).
json random_cuda_batch(Rng& rng, int index) {
  json d = {{"schema", 1}, {"name", "grid-cuda-" + std::to_string(index)}};
  const int head_choices[] = {16, 32, 64, 128, 16, 32, 64, 128, 1, 8, 12, 24, 48};
  const int heads = head_choices[rng.below(sizeof head_choices / sizeof head_choices[0])];
  const bool triton = rng.below(5) == 0;
  const int qlen = triton ? 1 : 1 + (int)rng.below(4);
  const bool fp8 = rng.below(2) == 0;
  d["platform"] = {{"arch", "sm90"}};
  if (rng.below(4) == 0) d["platform"]["num_cu"] = (int)(1 + rng.below(160));
  d["model"] = {{"num_heads", heads}, {"dtype", rng.below(4) == 0 ? "fp16" : "bf16"}};
  d["kv_cache"] = {{"dtype", fp8 ? "fp8" : "auto"}, {"layout", rng.below(2) ? "shuffled" : "sequential"}};
  if (fp8) d["kv_cache"]["scale"] = 0.25 + rng.uniform01();
  d["decode"] = json::object();
  if (triton) {
    d["decode"]["attention_backend"] = "TRITON_MLA";
    if (fp8) d["decode"]["q_dtype"] = "model";
  } else if (!fp8) {
    // the natural bf16 route is FLASH_ATTN_MLA (FA3's scheduler), eager or under full
    // cudagraph (vLLM's max_num_splits); FLASHMLA forced the other half
    if (rng.below(2) == 0) d["decode"]["attention_backend"] = "FLASHMLA";
    else if (rng.below(2) == 0) d["decode"]["max_num_splits"] = 32;
  }
  const int nreq = 1 + (int)rng.below(6);
  json reqs = json::array();
  int64_t total = 0;
  for (int r = 0; r < nreq; ++r) reqs.push_back({{"context_len", hopper_context(rng, qlen, total)}, {"query_len", qlen}});
  for (int p = (int)rng.below(3); p > 0 && rng.below(2) == 0; --p) reqs.push_back({{"padding", true}});
  d["requests"] = reqs;
  d["data"] = {{"seed", (int)rng.below(1000)}};
  return d;
}

// --stack sglang: SGLang batches on sm90 (docs/stacks/sglang.md): every Hopper backend
// (fa3, flashmla, flashinfer, triton) named or by default, decode / target_verify /
// draft_extend (ragged accept lengths), heads 16-128 (and a few others), CUDA-graph
// padding slots, lengths 0-65,536 around the 64-token blocks, bf16 or fp16, fp8 where the
// backend takes it (flashmla; the others' refusals counted as such).
json random_sglang_batch(Rng& rng, int index) {
  json d = {{"schema", 1}, {"name", "grid-sglang-" + std::to_string(index)}};
  const int head_choices[] = {16, 32, 64, 128, 16, 32, 64, 128, 8, 12, 24, 48};
  const int heads = head_choices[rng.below(sizeof head_choices / sizeof head_choices[0])];
  const char* backends[] = {"", "fa3", "flashmla", "flashinfer", "triton"};
  const char* backend = backends[rng.below(5)];
  const char* modes[] = {"decode", "decode", "target_verify", "draft_extend"};
  const std::string mode = modes[rng.below(4)];
  const int drafts = 2 + (int)rng.below(4);
  const bool fp8 = rng.below(4) == 0;
  // a quarter on ROCm: aiter (named, or SGLang's default for 16 or 128 heads) or triton
  const bool rocm = rng.below(4) == 0;
  d["platform"] = {{"stack", "sglang"}, {"arch", rocm ? (rng.below(2) ? "gfx942" : "gfx950") : "sm90"}};
  if (rng.below(4) == 0) d["platform"]["num_cu"] = (int)(1 + rng.below(rocm ? 304 : 160));
  if (rocm) backend = rng.below(2) ? "aiter" : "";
  d["model"] = {{"num_heads", heads}, {"dtype", rng.below(4) == 0 ? "fp16" : "bf16"}};
  d["kv_cache"] = {{"dtype", fp8 ? "fp8" : "auto"}, {"layout", rng.below(2) ? "shuffled" : "sequential"}};
  if (fp8) d["kv_cache"]["scale"] = 0.25 + rng.uniform01();
  d["sglang"] = {{"forward_mode", mode}};
  if (*backend) d["sglang"]["attention_backend"] = backend;
  if (mode != "decode") d["sglang"]["num_draft_tokens"] = drafts;
  // a third of the verify steps verify a tree (topk 2 or 3): fa3's two passes, Triton's mask,
  // the other backends' refusals
  const bool tree = mode == "target_verify" && rng.below(3) == 0;
  if (tree) d["sglang"]["speculative_topk"] = 2 + (int)rng.below(2);
  const int nreq = 1 + (int)rng.below(6);
  json reqs = json::array();
  int64_t total = 0;
  for (int r = 0; r < nreq; ++r) {
    const int q = mode == "decode" ? 1 : mode == "target_verify" ? drafts : 1 + (int)rng.below(drafts);
    reqs.push_back({{"context_len", hopper_context(rng, q, total)}, {"query_len", q}});
  }
  for (int p = (int)rng.below(3); p > 0 && rng.below(2) == 0; --p) reqs.push_back({{"padding", true}});
  if (tree) {
    json trees = json::array();
    for (const auto& r : reqs) {
      if (r.contains("padding")) {
        trees.push_back(nullptr);
        continue;
      }
      json parents = json::array({-1});  // token 0 the root, every parent before its child
      for (int i = 1; i < drafts; ++i) parents.push_back((int)rng.below((uint64_t)i));
      trees.push_back({{"parents", parents}});
    }
    d["sglang"]["draft_trees"] = trees;
  }
  d["requests"] = reqs;
  d["data"] = {{"seed", (int)rng.below(1000)}};
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "cpu";
  int cases = 120;
  uint64_t seed = 2026;
  bool verbose = false, cross = false;
  std::string stack = "vllm-rocm-aiter";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc) backend = argv[++i];
    else if (a == "--cases" && i + 1 < argc) cases = std::atoi(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--cross-check") cross = true;
    else if (a == "--stack" && i + 1 < argc) stack = argv[++i];
    else if (a == "-v") verbose = true;
    else {
      std::fprintf(stderr, "usage: run_grid --backend cpu|gpu [--cases N] [--seed S] [--cross-check] [--stack vllm-rocm-aiter|vllm-cuda|sglang] [-v]\n");
      return 2;
    }
  }
  std::string why;
  if (backend == "gpu" && !cli::make_executor(cli::Backend::gpu, 0, &why)) {
    std::printf("run_grid: skipped: %s\n", why.c_str());
    return 77;
  }
  Rng rng(seed, 99);
  std::map<std::string, int> passed_by_route, refused_by_route, findings_by_route;
  std::map<std::string, int> runs_by_stage1, runs_by_reduce;  // --backend gpu: what the launch sites reported
  int failures = 0, passed = 0, refused = 0, findings = 0, invalid = 0;
  for (int i = 0; i < cases; ++i) {
    std::string kernel;
    json doc = stack == "vllm-cuda" ? random_cuda_batch(rng, i) : stack == "sglang" ? random_sglang_batch(rng, i) : random_batch(rng, i, &kernel);
    Batch b;
    try {
      b = parse_batch(doc);
    } catch (const Error& e) {
      ++invalid;  // a combination the schema rejects (e.g. fp8 q without fp8 KV): not a run
      if (verbose) std::printf("invalid  %s: %s\n", doc["name"].get<std::string>().c_str(), e.what());
      continue;
    }
    cli::RunOptions ro;
    ro.backend = backend == "gpu" ? cli::Backend::gpu : cli::Backend::cpu;
    if (!kernel.empty()) ro.kernel = route_from_string(kernel);
    ro.cross_check = cross;
    cli::RunOutcome o;
    try {
      o = cli::run_pipeline(b, ro);
    } catch (const Error& e) {
      if (e.exit_code() == kExitRefused || e.exit_code() == kExitUsage) {
        o.status = cli::RunStatus::refused;
        o.message = e.what();
      } else {
        o.status = cli::RunStatus::failed;
        o.message = e.what();
      }
    }
    const std::string route = o.plan ? to_string(o.plan->route) : to_string(o.route.route);
    std::string status = to_string(o.status);
    if (status == "incorrect" && aiter_finding(o)) status = "aiter_finding";
    // a GPU run that executed (its output was compared) names its stage-1 kernel
    if (backend == "gpu" && o.compare) {
      if (!o.ran.stage1) {
        status = "FAILED";
        o.message = "no stage-1 kernel reported (executor " + o.executor + ")";
      } else {
        ++runs_by_stage1[cli::stage1_label(*o.ran.stage1)];
        ++runs_by_reduce[o.ran.reduce ? mla::to_string(o.ran.reduce->kind) : "not reported"];
      }
    }
    if (status == "passed") ++passed, ++passed_by_route[route];
    else if (status == "refused") ++refused, ++refused_by_route[kernel.empty() ? "natural" : kernel];
    else if (status == "aiter_finding") ++findings, ++findings_by_route[route];
    else ++failures;
    if (verbose || (status != "passed" && status != "refused" && status != "aiter_finding"))
      std::printf("%-13s %s route=%s kernel=%s: %s\n    %s\n", status.c_str(), doc["name"].get<std::string>().c_str(), route.c_str(),
                  kernel.empty() ? "(natural)" : kernel.c_str(), o.message.c_str(), doc.dump().c_str());
  }
  std::printf("run_grid (%s): %d cases: %d passed, %d refused by the modelled stack, %d AITER findings, %d schema-rejected, %d FAILED\n",
              backend.c_str(), cases, passed, refused, findings, invalid, failures);
  std::printf("passed by route:");
  for (const auto& [r, n] : passed_by_route) std::printf(" %s=%d", r.c_str(), n);
  std::printf("\n");
  if (backend == "gpu") {
    // every GPU run by what its launch sites reported (kernel schedule precision)
    std::printf("stage-1 kernels (kernel schedule precision: runs):\n");
    for (const auto& [k, n] : runs_by_stage1) std::printf("  %-40s %d\n", k.c_str(), n);
    std::printf("reduce:");
    for (const auto& [k, n] : runs_by_reduce) std::printf(" %s=%d", k.c_str(), n);
    std::printf("\n");
  }
  return failures ? 1 : 0;
}
