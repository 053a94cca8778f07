// SGLang's Triton decode split heuristic (docs/stacks/sglang.md §S13), read in
// sgl-project/sglang at 888a8794ef3d689c4cb9417639d3fcfcee23f0be:
//   python/sglang/srt/layers/attention/triton_backend.py
//     lines 37-47     _MLA_DECODE_MIN_BLOCK_KV, _mla_decode_kv_splits_cap
//     lines 145-188   __init__: static_kv_splits, max_kv_splits (MLA cap, then the tile)
//     lines 230-280   get_num_kv_splits (static / deterministic / heuristic dispatch)
//     lines 1397-1445 get_num_kv_splits_triton (the heuristic, one Triton program)
//   python/sglang/srt/layers/attention/triton_ops/decode_attention.py
//     lines 97-101, 324-328, 563-571: a split's KV range (stage 1 plain / grouped, stage 2)
//   python/sglang/srt/utils/common.py line 2656: next_power_of_2
#include "core/stacks/sglang/planners/triton_splits.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/planners/planner_util.hpp"
#include "core/types.hpp"

namespace mlactl::sglang {

namespace triton_splits_detail {

// tl.cdiv / triton.cdiv on non-negative ints: (a + b - 1) // b. The callers guarantee b >= 1.
inline int64_t tl_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

[[noreturn]] inline void refuse(const std::string& msg) { throw invalid_input("", "sglang triton splits: " + msg); }

}  // namespace triton_splits_detail

float sglang_triton_log2f(float x) { return static_cast<float>(std::log2(static_cast<double>(x))); }

int sglang_triton_max_kv_splits(int base, int sm_count, int64_t max_context_len) {
  using triton_splits_detail::tl_cdiv;
  if (sm_count <= 0) return base;
  const int64_t sm_cap = planner_util::next_pow2(sm_count);
  // next_power_of_2(0) is 1 (a context of 0 tokens: cdiv 0)
  const int64_t ctx_cap = planner_util::next_pow2(tl_cdiv(std::max<int64_t>(0, max_context_len), kSglangTritonMinBlockKv));
  return static_cast<int>(std::max<int64_t>(base, std::min(sm_cap, ctx_cap)));
}

int sglang_triton_backend_max_kv_splits(int base, bool use_mla, int sm_count, int64_t max_context_len,
                                        int64_t split_tile_size) {
  int m = base;
  if (use_mla) m = sglang_triton_max_kv_splits(base, sm_count, max_context_len);
  // `(self.max_context_len + self.split_tile_size - 1) // self.split_tile_size`
  if (split_tile_size > 0) m = static_cast<int>(triton_splits_detail::tl_cdiv(max_context_len, split_tile_size));
  return m;
}

std::vector<int32_t> sglang_triton_num_kv_splits(const SglangTritonSplitsInput& in) {
  using triton_splits_detail::refuse;
  using triton_splits_detail::tl_cdiv;
  const int64_t num_seq = static_cast<int64_t>(in.seq_lens.size());
  if (num_seq < 1) refuse("seq_lens is empty: get_num_kv_splits needs at least one request");
  if (in.num_group < 1) refuse("num_group is " + std::to_string(in.num_group) + ", must be >= 1 (tokens per request)");
  if (in.num_head < 1 || in.num_kv_head < 1)
    refuse("num_head and num_kv_head must be >= 1 (got " + std::to_string(in.num_head) + ", " + std::to_string(in.num_kv_head) + ")");
  if (in.max_kv_splits < 1) refuse("max_kv_splits is " + std::to_string(in.max_kv_splits) + ", must be >= 1");
  for (int64_t b = 0; b < num_seq; ++b) {
    const int64_t s = in.seq_lens[b];
    if (s < 0 || s > kSglangTritonMaxSeqLen)
      refuse("seq_lens[" + std::to_string(b) + "] is " + std::to_string(s) + ", must be in [0, " +
             std::to_string(kSglangTritonMaxSeqLen) + "] (int32 seq_lens of a CUDA-graph replay wrap above it)");
  }
  const int64_t num_token = num_seq * in.num_group;
  std::vector<int32_t> out(static_cast<size_t>(num_token));

  // `(self.static_kv_splits or self.device_core_count <= 0) and not self.enable_deterministic`:
  // num_kv_splits.fill_(self.max_kv_splits)
  if ((in.static_kv_splits || in.device_core_count <= 0) && !in.enable_deterministic) {
    std::fill(out.begin(), out.end(), in.max_kv_splits);
    return out;
  }
  // deterministic (split_tile_size is never None then): seq_lens.repeat_interleave(num_group),
  // `(expanded_seq_lens + tile - 1) // tile`, not clamped to max_kv_splits
  if (in.enable_deterministic) {
    if (in.split_tile_size < 1)
      refuse("split_tile_size is " + std::to_string(in.split_tile_size) +
             ": the deterministic path divides by it (SGLANG_TRITON_DECODE_SPLIT_TILE_SIZE, default 256)");
    for (int64_t b = 0; b < num_seq; ++b)
      for (int g = 0; g < in.num_group; ++g)
        out[static_cast<size_t>(b * in.num_group + g)] = static_cast<int32_t>(tl_cdiv(in.seq_lens[b], in.split_tile_size));
    return out;
  }

  // get_num_kv_splits_triton, one program over all requests.
  //   max_seq_len = tl.max(seq_lens); min_seq_len = tl.min(seq_lens)  (masked lanes neutral)
  int64_t max_len = in.seq_lens[0], min_len = in.seq_lens[0];
  for (int64_t s : in.seq_lens) {
    max_len = std::max(max_len, s);
    min_len = std::min(min_len, s);
  }
  //   if max_seq_len * 8 < min_seq_len * 10: min_seq_len = max_seq_len
  if (max_len * 8 < min_len * 10) min_len = max_len;
  // A zero seq_len leaves min_seq_len 0 (0 * 10 is never above max_len * 8), and the next line
  // computes tl.cdiv(max_seq_len, 0) = (max_seq_len - 1) // 0: an integer division by zero.
  // Triton lowers it to a plain GPU integer divide, whose result for a zero divisor PTX leaves
  // unspecified (no trap): the split counts that follow would be garbage. So mlactl refuses the
  // batch instead of guessing. (SGLang's CUDA-graph padding fills seq_lens with 1, never 0.)
  if (min_len == 0) {
    int64_t b0 = 0;
    while (in.seq_lens[b0] != 0) ++b0;
    refuse("seq_lens[" + std::to_string(b0) +
           "] is 0: get_num_kv_splits_triton would compute cdiv(max_len, min_len) with min_len 0, an integer "
           "division by zero whose result on the GPU is undefined; give every request at least one KV token");
  }
  //   max_kv_splits_1 = tl.minimum(tl.cdiv(max_seq_len, min_seq_len), max_kv_splits)
  //   kv_chunk_size_1 = tl.cdiv(max_seq_len, max_kv_splits_1)
  const int64_t splits1 = std::min<int64_t>(tl_cdiv(max_len, min_len), in.max_kv_splits);
  const int64_t chunk1 = tl_cdiv(max_len, splits1);
  //   ext_seq_len = tl.cast(max_seq_len, tl.float32) / 64.0
  //   ext_device_core_count = tl.cast(device_core_count * tl.maximum(tl.log2(ext_seq_len), 1.0), tl.int32)
  // fp32 throughout: int64 -> fp32 round to nearest, / 64 exact, an fp32 log2, the int32 core
  // count converted to fp32 and multiplied in fp32, then truncated toward zero. The fp32 log2
  // is the correctly rounded one (log2 in double, rounded once to float), not the C library's
  // log2f: glibc's is within 1 ulp but not correctly rounded (it differs on 666 of the
  // lengths 1 .. 2^22), and other libms differ elsewhere; see sglang_triton_log2f.
  const float ext_seq_len = static_cast<float>(max_len) / 64.0f;
  const float lg = sglang_triton_log2f(ext_seq_len);
  const float scale = lg > 1.0f ? lg : 1.0f;
  const float ext_f = static_cast<float>(in.device_core_count) * scale;
  const int64_t ext_cores = static_cast<int32_t>(ext_f);
  //   block_h, num_kv_group = 16, num_head // num_kv_head
  //   token_grid = num_seq * num_group * num_head                       if num_kv_group == 1
  //              = num_seq * num_group * tl.cdiv(num_head, min(16, num_kv_group))  otherwise
  const int64_t kv_group = in.num_head / in.num_kv_head;
  if (kv_group < 1)
    refuse("num_head " + std::to_string(in.num_head) + " < num_kv_head " + std::to_string(in.num_kv_head) +
           ": num_head // num_kv_head is 0 and the heuristic computes cdiv(num_head, min(16, 0))");
  const int64_t token_grid = kv_group == 1 ? num_seq * in.num_group * in.num_head
                                           : num_seq * in.num_group * tl_cdiv(in.num_head, std::min<int64_t>(16, kv_group));
  //   max_kv_splits_2 = tl.minimum(tl.cdiv(ext_device_core_count, token_grid), max_kv_splits)
  //   kv_chunk_size_2 = tl.cdiv(max_seq_len, max_kv_splits_2)
  const int64_t splits2 = std::min<int64_t>(tl_cdiv(ext_cores, token_grid), in.max_kv_splits);
  const int64_t chunk2 = tl_cdiv(max_len, splits2);
  //   num_kv_splits = tl.maximum(tl.cdiv(seq_lens, kv_chunk_size_1), tl.cdiv(seq_lens, kv_chunk_size_2))
  //   stored at num_kv_splits_ptr + i + offs_seq * num_group for i in range(num_group)
  for (int64_t b = 0; b < num_seq; ++b) {
    const int64_t s = in.seq_lens[b];
    const int32_t v = static_cast<int32_t>(std::max(tl_cdiv(s, chunk1), tl_cdiv(s, chunk2)));
    for (int g = 0; g < in.num_group; ++g) out[static_cast<size_t>(b * in.num_group + g)] = v;
  }
  return out;
}

int64_t sglang_triton_kv_len_per_split(int64_t seq_len, int32_t num_kv_splits) {
  using triton_splits_detail::refuse;
  using triton_splits_detail::tl_cdiv;
  // kv_splits = tl.load(num_kv_splits + cur_batch): a 0 here is tl.cdiv(seq_len, 0), an integer
  // division by zero the GPU answers with an unspecified value (the deterministic path writes 0
  // for a 0-token request); refused rather than guessed.
  if (num_kv_splits < 1)
    refuse("num_kv_splits is " + std::to_string(num_kv_splits) +
           ": the decode kernel computes cdiv(seq_len, num_kv_splits), an integer division by zero (undefined on the GPU) when 0");
  if (seq_len < 0) refuse("seq_len is " + std::to_string(seq_len) + ", must be >= 0");
  //   kv_len_per_split = tl.cdiv(tl.cdiv(cur_batch_seq_len, kv_splits), MIN_BLOCK_KV) * MIN_BLOCK_KV
  return tl_cdiv(tl_cdiv(seq_len, num_kv_splits), kSglangTritonMinBlockKv) * kSglangTritonMinBlockKv;
}

SglangTritonKvRange sglang_triton_split_kv_range(int64_t seq_len, int32_t num_kv_splits, int64_t split_id) {
  if (split_id < 0) triton_splits_detail::refuse("split_id is " + std::to_string(split_id) + ", must be >= 0");
  const int64_t per = sglang_triton_kv_len_per_split(seq_len, num_kv_splits);
  //   split_kv_start = kv_len_per_split * split_kv_id
  //   split_kv_end = tl.minimum(split_kv_start + kv_len_per_split, cur_batch_seq_len)
  SglangTritonKvRange r;
  r.start = per * split_id;
  r.end = std::min(r.start + per, seq_len);
  return r;
}

std::vector<SglangTritonKvRange> sglang_triton_split_kv_ranges(int64_t seq_len, int32_t num_kv_splits, int max_kv_splits) {
  if (max_kv_splits < 1) triton_splits_detail::refuse("max_kv_splits is " + std::to_string(max_kv_splits) + ", must be >= 1");
  std::vector<SglangTritonKvRange> out;
  out.reserve(static_cast<size_t>(max_kv_splits));
  for (int s = 0; s < max_kv_splits; ++s) out.push_back(sglang_triton_split_kv_range(seq_len, num_kv_splits, s));
  return out;
}

}  // namespace mlactl::sglang
