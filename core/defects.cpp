// The defect catalog. Sources: the fixing pull requests' write-ups and the
// timeline in docs/stacks/vllm-rocm-aiter.md §V0 (which names the PR of each seed):
//   000 -> #50476 (regression from #50000)   001 -> #55966 (rebase of #53001)
//   002 -> #55239 (issue #53943)             003 -> #50578 (with #51647 later)
//   004 -> #46997 (#46952 was the head-padding workaround)
#include "core/defects.hpp"
#include "core/suggest.hpp"

namespace mlactl {

const std::vector<DefectInfo>& defect_catalog() {
  static const std::vector<DefectInfo> catalog = {
      {
          "verify-window-broadcast",
          "000",
          "#50476",
          "#50000 (Gluon small-head decode and the verify flatten, merged the same day)",
          "builder",
          "core/stacks/vllm_rocm_aiter/builder.cpp (R0 verify flatten)",
          "R0 flatten gives every verify row the whole request length",
          "`windows` flags rows past their causal end; `run` fails the position audit naming those rows",
          "With fewer than 16 heads per rank, vLLM's R0 backend flattened a multi-token verify block into one "
          "row per token and called AITER's Gluon kernel with a per-row index pointer. The first version built "
          "that pointer from seq_lens, which already include the block being verified, so every row got the "
          "whole request: verify token t could attend to the draft tokens after it, the very tokens it is "
          "supposed to check. Nothing raised; the output looked plausible and acceptance went up, so the bug "
          "read as a throughput win. The fix (#50476) gives row r*q+t exactly seq_len - (q-1) + t entries, a "
          "prefix of the request's slots, clamped to 0 for cudagraph padding rows, and takes min_kv_seq_len "
          "from those rows. Affected: small-head verify on Gluon (e.g. DeepSeek 8 heads/rank at TP16, Kimi 12 "
          "heads/rank at TP8).",
          {"seed000-verify-causal"},
      },
      {
          "causal-flag-dropped",
          "001",
          "#55966",
          "the causal-only AITER MLA decode before #55966 (is_causal=True hard-wired in get_mla_metadata_v1)",
          "planner",
          "core/stacks/vllm_rocm_aiter/plan.cpp, core/stacks/vllm_rocm_aiter/kernel_windows.cpp (planner and kernel causal flag)",
          "non-causal block planned and executed as causal (`is_causal` hard-wired)",
          "`run` fails: draft tokens miss later block tokens",
          "A DSpark draft block (DeepSeek V4.1's speculative drafter) is non-causal: every token of the block "
          "sees the whole block. AITER's persistent schedule is what carries the mask, and vLLM called "
          "get_mla_metadata_v1 with is_causal=True hard-wired, so the schedule and the kernel applied the "
          "causal staircase anyway: draft token t did not see block tokens t+1.. that it should see. #55966 "
          "records the block's causality in the per-ubatch builder, passes it to get_mla_metadata_v1 and to "
          "mla_decode_fwd(causal=...), and keeps the persistent schedule for non-causal blocks. mlactl shows "
          "the staircase in `windows` and a position-audit failure in `run`.",
          {"noncausal-draft-block"},
      },
      {
          "noncausal-probe-silent",
          "001",
          "#55966",
          "the first revision of #55966's capability probe (return False instead of raising)",
          "router",
          "core/stacks/vllm_rocm_aiter/router.cpp (mla_decode_supports_non_causal)",
          "an AITER without `causal=` silently falls back to TRITON_MLA instead of failing closed",
          "`route` answers `triton_mla` with the finding \"silent fallback\" instead of `refused`",
          "Non-causal decode needs an AITER whose mla_decode_fwd takes causal= (and, since the review, "
          "gfx950's msk0 kernels). The probe first returned False on an old AITER, so backend selection "
          "quietly skipped ROCM_AITER_MLA and served the draft from TRITON_MLA: correct numbers, a much slower "
          "path, and only a log line nobody reads. The review of #55966 made it fail closed: an AITER without "
          "causal= raises a RuntimeError that says AITER MLA decode is causal-only, so the deployment stops "
          "until AITER is upgraded or the draft is pinned to TRITON_MLA on purpose. mlactl's `route` answers "
          "triton_mla with the finding \"silent fallback\" when the defect is on, and `refused` (\"causal-only\") "
          "when it is off.",
          {},
      },
      {
          "sparse-route-legacy",
          "002",
          "#55239",
          "the pre-#55239 _use_rocm_sparse_triton (issue #53943)",
          "router",
          "core/stacks/vllm_rocm_aiter/router.cpp (_use_rocm_sparse_triton)",
          "pre-fix predicate (plain_decode and max_query_len == 1)",
          "MTP rows routed to `aiter_sparse` on rope-free geometry; `run` incorrect",
          "ROCm's sparse MLA backend picks between a ragged Triton kernel and AITER's sparse MLA. AITER cannot "
          "run the rope-free BF16 geometry (head_size == kv_lora_rank == 512, GLM-5.3): it reads 576-wide KV "
          "rows. The old predicate sent only plain one-token decode (num_decode_tokens == num_decodes and "
          "max_query_len == 1) to Triton, so MTP verification rows (several tokens per request) fell through "
          "to AITER and read KV with the wrong stride: GSM8K went to 0% with MTP on, with no error. #55239 "
          "keys the choice on geometry alone: not fp8, head_size == kv_lora_rank, and any prefill or decode "
          "rows. mlactl routes the MTP batch to aiter_sparse with the defect on, runs it with a 576 stride over "
          "a 512-wide cache, and the comparison fails.",
          {"seed002-sparse-route-mtp-legacy", "seed002-sparse-route-mtp"},
      },
      {
          "pad-repeat-noop",
          "003",
          "#50578",
          "get_mla_padded_q before #50578 (repeat_interleave(16 // n) for every head count)",
          "padding",
          "core/stacks/vllm_rocm_aiter/head_padding.cpp, core/stacks/vllm_rocm_aiter/router.cpp (head padding and the pre-#50578 small-head routing)",
          "non-divisor heads use repeat_interleave(16 // n): no padding for 12",
          "gfx950: the route stays on Gluon (`bench` shows seed 003's slowdown); gfx942: `refused` (\"mla_gluon "
          "requires gfx950\"); forced onto ASM: `refused`, head count != 16",
          "AITER's ASM MLA decode runs 16 heads per q row, so fewer heads must be padded to 16. The old padding "
          "was repeat_interleave(16 // n), exact for divisors of 16 (1, 2, 4, 8) but a no-op for 12 heads "
          "(16 // 12 == 1): Kimi-K3 at TP8 could not use the ASM decode and stayed on the Gluon kernel, which "
          "parallelises only over heads, so one workgroup walks the whole KV and latency grows linearly with "
          "context (2.3x slower TPOT at 32K). On gfx942 there is no Gluon build at all, so the same batch "
          "asserts \"mla_gluon requires gfx950\". #50578 pads non-divisors by tile-and-slice "
          "(q.repeat(...)[:, :16], made contiguous; unpad takes o[:, :n]) and routes them to the padded ASM "
          "decode.",
          {"seed003-pad-repeat-noop-gfx950", "seed003-h12-gfx950-asm", "seed003-h12-gfx942-verify"},
      },
      {
          "pad-append-only",
          "003",
          "#50578",
          "an early revision of #50578 (append the heads once)",
          "padding",
          "core/stacks/vllm_rocm_aiter/head_padding.cpp, core/stacks/vllm_rocm_aiter/router.cpp (head padding)",
          "early padding appended heads once (6 -> 12, not 16)",
          "ASM route: `refused`, head count != 16",
          "An early revision of #50578 padded by appending the query heads once instead of tiling them. That "
          "reaches 16 only when n >= 8; at TP16 Kimi-K3 has 6 heads per rank and got 12, which the ASM "
          "decode (16 heads per q row) cannot take. The review (the worry about TP > 8) led to tile-and-slice "
          "padding, exact for every n in 1..15, with a round-trip test over all of them. mlactl refuses the "
          "6-head batch on the ASM route with the head count it would have been given.",
          {},
      },
      {
          "gluon-arch-ungated",
          "003",
          "#50578",
          "use_gluon_decode and the DSpark verify branch before #50578's _gluon_mla_decode_supported()",
          "router",
          "core/stacks/vllm_rocm_aiter/router.cpp (_gluon_mla_decode_supported)",
          "Gluon chosen on gfx942",
          "`refused`: \"mla_gluon requires gfx950\"",
          "AITER's Gluon small-head kernel needs about 160 KiB of LDS; gfx942 (MI300/MI325, CDNA3) has 64 KiB, "
          "so there is no Gluon build there and selecting it asserts \"mla_gluon requires gfx950\". Before "
          "#50578 the small-head routing had no architecture gate: divisor head counts (8 heads/rank, "
          "DeepSeek at TP16) took Gluon on gfx942 and the server did not start, and the DSpark multi-token "
          "verify branch called mla_gluon directly, so speculative decoding asserted on gfx942 too. #50578 "
          "adds _gluon_mla_decode_supported() (on_gfx950) to both call sites; on gfx942 every small head "
          "count takes the padded ASM decode.",
          {"seed003-gluon-arch-ungated-verify", "seed003-h12-gfx942-verify", "seed003-h8-gfx942-asm"},
      },
      {
          "metadata-dtype-omitted",
          "004",
          "#46997",
          "AiterMLAMetadataBuilder._build_decode before #46997 (#46952 padded 32 heads to 64 as a workaround)",
          "planner",
          "core/stacks/vllm_rocm_aiter/router.cpp, core/stacks/vllm_rocm_aiter/plan.cpp (get_mla_metadata_v1 without dtype_q/dtype_kv)",
          "planner plans as bf16/bf16 while the kernel runs the real dtypes",
          "fold mismatch between planner and kernel views; `run` fails",
          "get_mla_metadata_v1 decides the head->batch fold and the q tiling from dtype_q and dtype_kv; left "
          "out, they default to bf16/bf16, while mla_decode_fwd and the kernel fold on the real tensors. vLLM "
          "passed the dtypes to get_mla_metadata_info_v1 but not to get_mla_metadata_v1, so on gfx950 with an "
          "fp8 KV cache and 32 heads per rank (the a16w8 era: bf16 q) the schedule was planned unfolded and "
          "run folded: wrong split/reduce metadata and GSM8K from 0.93 to about 0, with no error. #46997 "
          "stores the dtypes at init and passes them. The same mismatch hits gfx942 fp8 with 128 heads "
          "(planned folded x8, run native) and the other shapes of docs/stacks/vllm-rocm-aiter.md §A6. mlactl "
          "reports the fold mismatch, the broken invariants under the kernel's view, and a failed run.",
          {"seed004-gfx942-fp8-h128-omitted", "seed004-gfx942-fp8-h128", "seed004-gfx950-fp8-h32-fp8q-omitted"},
      },
      {
          "metadata-sized-qlen1",
          "-",
          "#45227",
          "AiterMLAMetadataBuilder.__init__ before #45227 (get_mla_metadata_info_v1(max_num_reqs, 1, ...))",
          "planner",
          "core/stacks/vllm_rocm_aiter/plan.cpp (the get_mla_metadata_info_v1 buffer sizes)",
          "persistent buffers sized for q_len 1 while get_mla_metadata_v1 plans the MTP q_len",
          "`schedule`: invariants broken (the work list outgrows get_mla_metadata_info_v1's buffers)",
          "vLLM allocates the persistent MLA buffers once, at builder init, from get_mla_metadata_info_v1, then "
          "fills them every step with get_mla_metadata_v1. Before #45227 the init passed max_seqlen_qo = 1 "
          "(the decode q_len) even with MTP speculative decoding on, so an MTP verify step of q_len > 1, "
          "whose q tiles and partial rows grow with q_len, was planned into buffers sized for one token: the "
          "planner writes past work_info_set / reduce_partial_map. #45227 (merged 2026-06-11) passes the MTP "
          "q_len (and the real dtypes). mlactl sizes the buffers with q_len 1 under the switch and reports the "
          "overflow as broken invariants.",
          {},
      },
      // vLLM CUDA stack (docs/stacks/vllm-cuda.md §C11): no seed investigation, "-"
      {
          "flashmla-qlen-planned-as-one",
          "-",
          "#27368",
          "FlashMLAMetadataBuilder._build_decode calling get_mla_metadata with num_heads tokens per KV head (q_len 1) for MTP decode",
          "planner",
          "core/stacks/vllm_cuda/plan.cpp, core/stacks/vllm_cuda/builder.cpp (get_mla_metadata's num_q_tokens_per_head_k)",
          "get_mla_metadata told q_len 1 while the kernel runs q_len > 1: num_sm_parts from the wrong token count",
          "`schedule` shows num_sm_parts and split_kernel_ctas of the q_len-1 plan (128 heads, q_len 2: 66 parts x 4 q tiles = 264 CTAs, 2 waves on 132 SMs); `run` still passes",
          "FlashMLA sizes its split-KV grid from the schedule: num_sm_parts = SMs / ceil(q rows per KV head / 64), and the "
          "kernel runs tile_scheduler_metadata.size(0) parts times the q tiles of the call. vLLM's FlashMLA builder passed "
          "num_heads as the token count, as if every decode had one query token, so with multi-token decode (MTP, "
          "speculative verify) the schedule had the parts of a q_len-1 batch: with 128 heads and q_len 2 it planned 66 parts "
          "where 33 fill the 132 SMs, and the kernel ran 66 x 4 = 264 CTAs, two waves, each part with half the KV it should "
          "have had. The output stays right (the partial buffers follow the schedule's size), so nothing fails; the step is "
          "slower (the PR reports up to ~10x on some shapes). #27368 passes max_query_len * num_heads. mlactl shows the "
          "part count and the CTA count of both plans.",
          {},
      },
      {
          "flashmla-stale-schedule",
          "-",
          "#35175",
          "the FlashMLA fp8 decode path under full cudagraph: fresh get_mla_metadata_dense_fp8 output not copied into the captured buffers (issue #33638)",
          "planner",
          "core/stacks/vllm_cuda/plan.cpp (the schedule the kernel executes)",
          "the kernel executes a schedule planned for other seq_lens (the previous decode step's) against this step's seq_lens",
          "`schedule`: invariants broken (KV uncovered where a request crossed a 64-token block since the schedule was planned); `run` fails the position audit naming the never-read positions",
          "Under full cudagraph the replayed kernel reads tile_scheduler_metadata and num_splits from buffers captured "
          "with the graph; the builder must copy each step's fresh schedule into them. On the fp8 path vLLM built the "
          "fresh schedule but kept handing the kernel the captured one, so every replay walked a schedule planned for "
          "other sequence lengths. The kernel takes each part's last block from the schedule, so whenever a request "
          "grew past a 64-token block boundary since, its newest block was never read; elsewhere splits and the "
          "combine disagree. Users saw output degrade after some tens of tokens. #35175 copies the fresh metadata "
          "into the persistent buffers. mlactl models the stale schedule as the one planned for the previous decode "
          "step (every seq_len q_len shorter) and shows the uncovered KV.",
          {},
      },
      {
          "flashmla-fp8-zero-pad",
          "-",
          "#35969",
          "the model runner's default cudagraph padding (seq_lens 0, block_table -1) reaching FlashMLA's fp8 decode (issue #33664)",
          "padding",
          "core/stacks/vllm_cuda/builder.cpp (pad_values), core/stacks/vllm_cuda/plan.cpp (the fp8 kernel's first block read)",
          "FlashMLA fp8 padding slots get seq_len 0 / block id -1 instead of 1 / 0",
          "`route` finding naming block_table[r][-1]; `schedule` notes each padding segment's read (block, slot); `run` stops with the out-of-cache read (exit 4) where that block id is -1",
          "Under full cudagraph vLLM pads the unused batch slots with seq_len 0 and block id -1, which most kernels never "
          "touch. FlashMLA's fp8 decode kernel starts each request at its last block, n_block = ceil(seq_len / 64) - 1, and "
          "reads that block's table entry and 64 K rows before its loop: at seq_len 0 it reads block_table[r][-1] (the last "
          "column of the row before) and, where that is a padding row's -1, a negative KV offset. Servers with "
          "--kv-cache-dtype fp8 crashed with an illegal memory access once the fp8 schedule was copied into the graph's "
          "buffers (#35175 made the replay run the fresh metadata). #35969 clamps the fp8 builder's seq_lens to >= 1 and "
          "block ids to >= 0. mlactl pads with 0 / -1 when the defect is on and turns each padding segment's read into a "
          "work over the 64 slots the kernel touches, so the executor meets the negative slot.",
          {},
      },
      {
          "flashmla-no-work-marker",
          "-",
          "FlashMLA #3",
          "upstream FlashMLA's get_mla_metadata (no-work parts marked begin_req = batch size, combine skipping == 1) with vLLM padding after the metadata build (vLLM PR #21691; padding moved before it in #28579)",
          "planner",
          "core/stacks/vllm_cuda/schedule_arrays.cpp (metadata batch, marker), core/stacks/vllm_cuda/plan.cpp (notes)",
          "get_mla_metadata over the requests before the cudagraph padding, no-work parts marked begin_req = that count, num_splits padded with its last value",
          "`schedule`: tile rows with begin_req = n (not -1) that the kernel run over all slots does not skip, num_splits' padded tail, the combine running for 0-split padding slots; `run` passes (real rows are unaffected)",
          "When vLLM still padded the batch for the cudagraph after building the attention metadata, FlashMLA's schedule "
          "was computed for the n real requests while the captured kernel ran over all B slots. Upstream FlashMLA marks SM "
          "parts with no work by begin_req = n, which the kernel only skips when n >= params.b; here n < B, so those parts "
          "go on (copying a padding slot's q) instead of returning. And padding num_splits to B + 1 entries needs one split "
          "per padding slot, since upstream's combine skips only num_splits == 1. vLLM's fork (PR #3, used by vLLM PR #21691, "
          "which fixed an illegal memory access under full cudagraph with wide EP) writes -1 for no-work parts, returns "
          "for begin_req < 0 and skips num_splits <= 1, so the buffer tail can simply repeat the last value. mlactl "
          "shows the upstream rows and tail; the kernel code read walks nothing for such a part, so the record's crash "
          "needs more than the marker (a stale num_splits tail, which `captured` validation names).",
          {},
      },
      {
          "triton-causal-per-request",
          "-",
          "#51065",
          "TRITON_MLA's forward_mqa expanding block_table/seq_lens per token only on the non-causal path, with the reorder threshold raised by a non-causal draft route (issue #51848)",
          "planner",
          "core/stacks/vllm_cuda/router.cpp (the raised threshold), core/stacks/vllm_cuda/plan.cpp (the unexpanded rows)",
          "a causal multi-token batch on TRITON_MLA reaches the decode kernel with one block_table/seq_lens row per request",
          "`route` finding naming the row/table mismatch; `schedule`: invariants broken (rows read other requests' KV); `run` stops at the reads past the tables (exit 4)",
          "TRITON_MLA decodes one token per row. A DSpark draft (non-causal) route raised its group's reorder threshold past "
          "1, so a causal speculative-verify block of q tokens per request was sent to the decode path, and forward_mqa "
          "expanded block_table and seq_lens to one row per token only when the block was non-causal. decode_attention_fwd "
          "runs one program per q row and loads seq_lens[row] and block_table[row]: row i read request i's KV, and rows "
          "past the number of requests read past both tensors (Triton: an illegal memory access, issue #51848 on sm_86). "
          "#51065 fixes the causal path; mlactl's fixed stack sends the causal multi-token batch to the prefill path as "
          "SINGLE_ONLY says (exit 5, not modelled), and the defect shows the unexpanded rows.",
          {},
      },
      {
          "sglang-flashmla-kv-heads-from-config",
          "-",
          "sglang #5272",
          "SGLang's flashmla backend asking get_mla_metadata for the model config's KV heads (issue sglang #5154)",
          "planner",
          "core/stacks/sglang/plan.cpp, core/stacks/sglang/builder.cpp (get_mla_metadata's num_heads_k)",
          "get_mla_metadata(seq_lens, Q_LEN * H // 16, 16): num_sm_parts from 16 KV heads where FlashMLA's MLA has one",
          "`schedule` shows 8 SM parts on 132 SMs (16 heads, decode) with the note naming num_heads_k = 16; `run` still passes",
          "FlashMLA sizes its split-KV grid from the schedule: num_sm_parts = SMs / num_heads_k / ceil(q rows per KV head / 64). "
          "SGLang's flashmla backend read the KV-head count from the model config (16 on its test model) and passed "
          "Q_LEN * num_q_heads // num_kv_heads tokens per KV head with num_heads_k = 16, while the MLA kernel has a single latent "
          "KV head. On 132 SMs that plans 8 parts where 132 fill the GPU: every request's KV is walked by at most 8 "
          "CTAs, so the decode step is slower; the schedule still covers every row, so nothing fails. PR #5272 passes "
          "(seq_lens, num_q_heads, 1). Whether the kernel of that time wrote every row under the 16-head schedule is not "
          "confirmed (docs/stacks/sglang.md §S16).",
          {},
      },
      {
          "sglang-flashinfer-tree-mask-dropped",
          "-",
          "#4425 refusal",
          "SGLang's flashinfer MLA backend under EAGLE with topk > 1 (issue sglang #4425)",
          "router",
          "core/stacks/sglang/router.cpp (the topk refusal), core/stacks/sglang/plan.cpp (MLAPlan with the causal flag)",
          "a topk > 1 tree verify runs on FlashInfer MLA: the custom mask is built and dropped, the plan is causal",
          "`run`: incorrect (position audit): a draft whose tree is not a chain reads the drafts between it and its parent; `schedule`: invariants broken",
          "EAGLE with topk > 1 verifies a tree of drafts: draft i may attend the prefix, its ancestors and itself. SGLang's "
          "verify input builds that custom mask, but the FlashInfer MLA backend planned BatchMLAPagedAttentionWrapper with "
          "causal=True and never passed the mask, so draft i attended every draft before it, siblings and cousins included: "
          "silently wrong output for every row whose tree is not a chain. The maintainers' answer was to refuse the "
          "combination (\"Currently Flashinfer MLA only supports topk=1 for speculative decoding\"); the -fixed fixture "
          "expects that refusal.",
          {},
      },
      {
          "flashinfer-causal-negative-kv-end",
          "-",
          "flashinfer 480d1ae0",
          "FlashInfer's packed_causal_kv_end without its clamp at 0 (flashinfer PR #1533, issue #1395), as SGLang's flashinfer MLA backend plans with it",
          "planner",
          "core/stacks/sglang/plan.cpp (MLAPlan's input), core/stacks/sglang/planners/flashinfer_mla.cpp (packed_causal_kv_end)",
          "a causal q tile of a request with more q tokens than keys gets a negative KV end: no work, and a lower total that shrinks kv_len_limit",
          "`schedule`/`run`: refused with FlashInfer's \"Internal Error: merge_cta_counter should be less than or equal to num_sm\" where the smaller chunks need more merge CTAs than SMs; elsewhere the tiles' rows are never written",
          "MLAPlan sizes its KV chunks from the total effective KV of all causal q tiles. For a request with more q tokens than "
          "keys, a non-last tile's causal end kv_len - qo_len + ceil((t+1) * tile / H) is negative: before flashinfer #1533 "
          "nothing clamped it, so the tile's chunk loop never ran (its rows left as torch.empty) and the negative length "
          "lowered the total, hence kv_len_limit, hence cut every other request into more chunks. In SGLang the shape occurs in "
          "draft_extend under a CUDA graph: a padding slot gets q_len = steps + 1 over seq_len 1 (docs/stacks/sglang.md §S11); "
          "with 128 heads its tiles hold one token each. With enough chunks the merge CTAs outnumber the SMs and the planner "
          "raises its internal error, a crash of the replay. The fix clamps the end at 0: a zero-length work writes the rows empty.",
          {},
      },
      {
          "sglang-eagle-stale-qo-indptr",
          "-",
          "sglang #15601",
          "SGLang's draft_extend under EAGLE running FlashInfer MLA with forward metadata not refreshed since target_verify (with flashinfer #2236)",
          "planner",
          "core/stacks/sglang/plan.cpp (MLAPlan's qo_indptr and kv_len in draft_extend)",
          "draft_extend planned with the verify step's qo_indptr (arange * D) and KV (prefix + D) while q holds the accepted tokens",
          "`schedule`: invariants broken (works address q rows past the accepted tokens, rows read other requests' KV); `run` stops at the q rows outside the q tensor (exit 4: upstream's illegal memory access)",
          "BatchMLAPagedAttentionWrapper.run reads the q rows its plan names. Under EAGLE the draft_extend step must re-plan "
          "with its own qo_indptr (the cumulative accepted tokens, ragged) and post-accept KV lengths; when forward_metadata "
          "was not refreshed the wrapper ran the plan of the target_verify step before it: D q rows per request and the "
          "verify step's KV lengths. With fewer accepted tokens than drafts the plan addresses q rows past the end of q "
          "(an illegal memory access), and every request after the first reads the q rows and KV of the wrong request. "
          "sglang #15601 refreshes the metadata (flashinfer #2236 adds a check that q's rows match the plan).",
          {},
      },
      {
          "sglang-flashmla-draft-extend-graph-state",
          "-",
          "sglang #28028",
          "SGLang's flashmla backend falling back to FlashInfer MLA for draft_extend under a CUDA graph without the parent's graph state (open PR sglang #28028)",
          "router",
          "core/stacks/sglang/router.cpp (the draft_extend fallback under a CUDA graph)",
          "the draft_extend fallback's CUDA-graph state is FlashMLA's, not FlashInfer MLA's",
          "`route` refused (RuntimeError: CUDA graph capture of draft_extend fails ...); fixed: the fallback routes to flashinfer_mla and runs",
          "FlashMLABackend hands draft_extend to its parent, FlashInferMLABackend. Under a CUDA graph the parent's replay "
          "expects its own buffers: a flat cuda_graph_kv_indices of max_bs * max_context_len token slots and the qo_indptr, "
          "kv_indptr and kv_lens buffers. FlashMLABackend.init_cuda_graph_state allocates only its 2-D block table "
          "[max_bs, (max_context_len + 64) // 64] under the name cuda_graph_kv_indices and never calls the parent's, so the "
          "draft-extend graph cannot be captured (sglang lists it among its known capture failures). PR #28028 allocates "
          "both. mlactl models the failure where it shows, at capture; whether a replay would then read block ids as token "
          "slots is not modelled (docs/stacks/sglang.md §S15.3, §S16).",
          {},
      },
      {
          "sglang-aiter-draft-extend-padded-output",
          "-",
          "sglang #19902",
          "SGLang's aiter backend returning o[q_mask] from an eager draft_extend whose output mla_decode_fwd writes packed (PR sglang #19902)",
          "padding",
          "core/stacks/sglang/plan.cpp (caller_reads_padded_rows), core/pipeline.cpp (the caller's rows gathered after the kernel)",
          "after the kernel the caller returns the rows at padded positions b * max_q_len + j instead of the packed rows 0 .. qo_indptr[-1]",
          "`run`: incorrect (non-finite: the rows past qo_indptr[-1] were never written; the others hold another token's output), the message naming the caller's gather; `schedule` notes it; the position audit passes (the kernel read the right KV)",
          "In eager draft_extend (no CUDA graph) SGLang's aiter backend pads q to max_q_len rows per request with "
          "pad_sequence_with_mask, allocates o the same size and calls mla_decode_fwd with the ragged qo_indptr of the "
          "accepted tokens. The kernel writes its output packed, rows 0 .. qo_indptr[-1], but the backend returned o[q_mask]: "
          "the rows at padded positions b * max_q_len + j. When requests accepted different numbers of tokens, every request "
          "after the first gets rows computed for other tokens, and the rows past qo_indptr[-1] were never written (torch.empty). "
          "PR #19902 returns o[:qo_indptr[-1]]. Only the draft model's output is wrong, so acceptance drops rather than the "
          "target's answers: a silent slowdown. mlactl runs the kernel as the stack does and applies the caller's gather to "
          "its output; the KV reads themselves are right.",
          {},
      },
  };
  return catalog;
}

const DefectInfo* find_defect(const std::string& id) {
  for (const auto& d : defect_catalog())
    if (d.id == id) return &d;
  return nullptr;
}

std::string defect_suggestion(const std::string& id) {
  std::vector<std::string> ids;
  for (const auto& d : defect_catalog()) ids.push_back(d.id);
  const auto near = nearest_name(id, ids);
  return near ? "; did you mean \"" + *near + "\"?" : "";
}

std::string defect_id_list() {
  std::string s;
  for (const auto& d : defect_catalog()) s += (s.empty() ? "" : ", ") + d.id;
  return s;
}

}  // namespace mlactl
