// SGLang's Triton decode split heuristic (docs/stacks/sglang.md §S13), read in
// sgl-project/sglang at 888a8794 (python/sglang/srt/layers/attention/triton_backend.py:
// _mla_decode_kv_splits_cap, TritonAttnBackend.__init__'s max_kv_splits, get_num_kv_splits,
// get_num_kv_splits_triton; triton_ops/decode_attention.py: how a split's KV range is cut).
// Plain values in, so a captured call can be replayed; fp32/int32 arithmetic as the Triton
// kernel runs it.
#pragma once
#include <cstdint>
#include <vector>

namespace mlactl::sglang {

// _MLA_DECODE_MIN_BLOCK_KV (triton_backend.py line 37) and _MIN_BLOCK_KV
// (decode_attention.py line 35): both 32. A split's KV length is a multiple of it.
constexpr int kSglangTritonMinBlockKv = 32;
// ServerArgs.triton_attention_num_kv_splits: 8, set to 16 on HIP (_handle_amd_specifics).
constexpr int kSglangTritonBaseKvSplits = 8;
constexpr int kSglangTritonBaseKvSplitsHip = 16;
// SGLANG_TRITON_DECODE_SPLIT_TILE_SIZE's default, read when deterministic inference is on.
constexpr int kSglangTritonDeterministicTile = 256;
// Largest seq_len accepted: the CUDA-graph replay hands get_num_kv_splits_triton int32
// seq_lens, whose `min_len * 10` wraps above INT32_MAX / 10; below it int32 and int64 agree.
constexpr int64_t kSglangTritonMaxSeqLen = 214748364;  // INT32_MAX / 10

// The fp32 log2 of get_num_kv_splits_triton's `tl.log2(ext_seq_len)`, modelled as the
// correctly rounded float log2 (double log2 rounded once), so the result does not hang on the
// host libm's log2f (glibc's is 1 ulp off on 666 of the lengths 1 .. 2^22). Whether the GPU's
// tl.log2 agrees at those points is unconfirmed (docs/stacks/sglang.md §S13).
float sglang_triton_log2f(float x);

// _mla_decode_kv_splits_cap(base, sm_count, max_context_len): base when sm_count <= 0, else
// max(base, min(next_pow2(sm_count), next_pow2(cdiv(max_context_len, 32)))).
// next_power_of_2 is sglang.srt.utils' (1 for n <= 0).
int sglang_triton_max_kv_splits(int base, int sm_count, int64_t max_context_len);

// TritonAttnBackend.__init__'s self.max_kv_splits: `base` (triton_attention_num_kv_splits),
// capped as above when the model is MLA, then replaced by cdiv(max_context_len,
// split_tile_size) when a tile is set (triton_attention_split_tile_size, or
// SGLANG_TRITON_DECODE_SPLIT_TILE_SIZE = 256 whenever deterministic inference is on).
// split_tile_size <= 0 means None.
int sglang_triton_backend_max_kv_splits(int base, bool use_mla, int sm_count, int64_t max_context_len,
                                        int64_t split_tile_size);

struct SglangTritonSplitsInput {
  // forward_batch.seq_lens: one KV length per request (num_seq = seq_lens.size() >= 1).
  std::vector<int64_t> seq_lens;
  // tokens per request: num_kv_splits.shape[0] / num_seq (topk in EAGLE draft decode, 1 in
  // plain decode). num_kv_splits gets num_seq * num_group entries, token b*num_group + g.
  int num_group = 1;
  // q heads per attention-TP rank: num_attention_heads / attn_tp_size.
  int num_head = 16;
  // model_config.get_num_kv_heads(attn_tp_size) = max(1, num_key_value_heads / attn_tp_size):
  // the config's count, not the MLA cache's one head, so a DeepSeek config gives num_head
  // (group 1) though the decode kernel itself runs the grouped (MLA) path.
  int num_kv_head = 16;
  // the backend's max_kv_splits, resolved (sglang_triton_backend_max_kv_splits).
  int max_kv_splits = kSglangTritonBaseKvSplits;
  // get_device_core_count(gpu_id): multiProcessorCount (132 on H100 SXM / H200); <= 0 means
  // unknown, which fills max_kv_splits (unless deterministic).
  int device_core_count = 132;
  // SGLANG_TRITON_DECODE_ATTN_STATIC_KV_SPLITS: fill max_kv_splits (ignored when deterministic:
  // __init__ forces it false).
  bool static_kv_splits = false;
  // --enable-deterministic-inference: every token gets cdiv(seq_len, split_tile_size).
  bool enable_deterministic = false;
  // the tile of the deterministic path (SGLANG_TRITON_DECODE_SPLIT_TILE_SIZE, default 256);
  // read only when enable_deterministic, and must then be >= 1.
  int64_t split_tile_size = kSglangTritonDeterministicTile;
};

// get_num_kv_splits: the int32 num_kv_splits [num_seq * num_group] the decode kernels read.
// Refuses (mlactl::Error, exit 3) what upstream would divide by zero or overflow on: an empty
// batch, num_group / num_head / num_kv_head < 1, num_head < num_kv_head (group 0:
// cdiv(num_head, min(16, 0))), max_kv_splits < 1, a negative or too long seq_len, and on the
// heuristic path a zero seq_len (see the .cpp: cdiv(max_len, 0)).
std::vector<int32_t> sglang_triton_num_kv_splits(const SglangTritonSplitsInput& in);

// The KV range of split s of one token, as the stage-1 kernels cut it
// (decode_attention.py _fwd_grouped_kernel_stage1 lines 324-328, the MLA/GQA kernel, and
// the same lines 97-101 of _fwd_kernel_stage1; _fwd_kernel_stage2 lines 563-571 merges the
// same ranges): kv_len_per_split = cdiv(cdiv(seq_len, num_kv_splits), 32) * 32,
// start = kv_len_per_split * s, end = min(start + kv_len_per_split, seq_len).
// The raw values: end may be below start, and then the program writes nothing
// (`if split_kv_end > split_kv_start`), nor does stage 2 read it.
struct SglangTritonKvRange {
  int64_t start = 0;
  int64_t end = 0;
  bool empty() const { return end <= start; }
};

// cdiv(cdiv(seq_len, num_kv_splits), 32) * 32. Refuses num_kv_splits < 1 (the kernel's
// cdiv(seq_len, 0) is an integer division by zero) and seq_len < 0.
int64_t sglang_triton_kv_len_per_split(int64_t seq_len, int32_t num_kv_splits);
SglangTritonKvRange sglang_triton_split_kv_range(int64_t seq_len, int32_t num_kv_splits, int64_t split_id);
// All max_kv_splits programs of a token (the grid's third axis is MAX_KV_SPLITS); splits
// >= num_kv_splits are always empty, and so can be a tail below it (seq 40, 3 splits: per
// split 32, split 2 starts at 64). Never an empty split before a non-empty one.
std::vector<SglangTritonKvRange> sglang_triton_split_kv_ranges(int64_t seq_len, int32_t num_kv_splits, int max_kv_splits);

}  // namespace mlactl::sglang
