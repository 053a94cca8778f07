# The vllm-cuda stack through the real binary (docs/stacks/vllm-cuda.md): exit codes, error
# texts, the route chain, FlashMLA's arrays, refusals of what is modelled up to routing.
mlactl_cli_test(cuda-route-default RC 0 ARGS route --arch sm90 --heads 16 --context 100,2000
                STDOUT "route: +flash_attn_mla.*backend: +FLASH_ATTN_MLA.*priority 1: FLASH_ATTN_MLA.validate_configuration +\\[\\] \\(valid\\)")
mlactl_cli_test(cuda-route-fp8 RC 0 ARGS route --arch sm90 --heads 16 --context 100 --kv-dtype fp8
                STDOUT "route: +flashmla.*FLASH_ATTN_MLA.validate_configuration +\\['kv_cache_dtype not supported'\\]")
mlactl_cli_test(cuda-route-forced-refused RC 0 ARGS route --arch sm90 --heads 16 --context 100 --kv-dtype bf16 --attention-backend FLASHMLA
                STDOUT "route: +refused.*error: +ValueError: Selected backend AttentionBackendEnum.FLASHMLA is not valid for this configuration. Reason: \\['kv_cache_dtype not supported'\\]")
mlactl_cli_test(cuda-run-forced-refused RC 5 ARGS run --arch sm90 --heads 16 --context 100 --attention-backend CUTLASS_MLA
                STDOUT "REFUSED.*compute capability not supported")
mlactl_cli_test(cuda-backend-off-sm90 RC 3 ARGS validate --heads 16 --context 100 --attention-backend FLASHMLA
                STDERR "/decode/attention_backend: names a vLLM CUDA backend; only vllm on sm90 reads it \\(this batch is vllm on gfx950\\)")
mlactl_cli_test(cuda-heads-any RC 0 ARGS route --arch sm90 --heads 129 --context 100 --kv-dtype fp8 STDOUT "route: +flashmla")
mlactl_cli_test(cuda-schedule-sparse RC 5 ARGS schedule fixtures/cuda-sparse-routing.json STDERR "flashmla_sparse: FLASHMLA_SPARSE's schedule is not modelled yet")
mlactl_cli_test(cuda-run-fa3 RC 0 ARGS run fixtures/cuda-default-fa3.json --backend cpu STDOUT "PASSED.*route: +flash_attn_mla")
mlactl_cli_test(cuda-schedule-fa3-words RC 0 ARGS schedule fixtures/cuda-default-fa3.json
                STDOUT "tile 1: request 1 m block 0 \\(q tokens \\[0, 1\\)\\), split 0 of 71: KV blocks \\[0, 2\\) = tokens \\[0, 128\\)")
mlactl_cli_test(cuda-schedule-fa3-json RC 0 ARGS --format json schedule fixtures/cuda-default-fa3.json
                STDOUT "\"num_splits_dynamic\": \\[\n? *1,\n? *71\n? *\\]")
mlactl_cli_test(cuda-fa3-cudagraph-splits RC 0 ARGS --format json metadata fixtures/cuda-default-fa3.json --set decode.max_num_splits=32
                STDOUT "\"num_splits\": 32,.*\"num_splits_dynamic\": \\[\n? *1,\n? *32\n? *\\]")
mlactl_cli_test(cuda-fa3-max-splits-off-sm90 RC 3 ARGS validate --heads 16 --context 100 --set decode.max_num_splits=8
                STDERR "/decode/max_num_splits: is FA3's num_splits \\(FLASH_ATTN_MLA\\); only vllm on sm90 reads it")
mlactl_cli_test(cuda-fa3-max-splits-range RC 3 ARGS validate --arch sm90 --heads 16 --context 100 --set decode.max_num_splits=257
                STDERR "/decode/max_num_splits")
mlactl_cli_test(cuda-run-fa3-mtp RC 0 ARGS run fixtures/cuda-fa3-varlen-cudagraph.json --backend cpu STDOUT "PASSED.*route: +flash_attn_mla")
# the vllm-cuda defects from the public record (docs/stacks/vllm-cuda.md §C11): each pair
# passes `check`, and the symptom through run / schedule
foreach(id flashmla-fp8-zero-pad flashmla-no-work-marker triton-causal-per-request)
  mlactl_cli_test(check-${id} RC 0 ARGS check fixtures/${id}.json --backend cpu STDOUT "(passed|refused-as-expected) +${id} .*1 passed, 0 failed")
  mlactl_cli_test(check-${id}-fixed RC 0 ARGS check fixtures/${id}-fixed.json --backend cpu STDOUT "(passed|refused-as-expected) +${id}-fixed .*1 passed, 0 failed")
endforeach()
mlactl_cli_test(defect-fp8-zero-pad-run RC 4 ARGS run fixtures/flashmla-fp8-zero-pad.json --backend cpu STDOUT "reads slot -64")
mlactl_cli_test(defect-fp8-zero-pad-schedule RC 0 ARGS schedule fixtures/flashmla-fp8-zero-pad.json
                STDOUT "padding slot 3 \\(seq_len 0\\): the fp8 kernel reads block_table\\[3\\]\\[-1\\] = -1 \\(row 2, column 3\\).*a negative KV offset, an illegal memory access")
mlactl_cli_test(defect-fp8-zero-pad-fixed-run RC 0 ARGS run fixtures/flashmla-fp8-zero-pad-fixed.json --backend cpu STDOUT "PASSED")
mlactl_cli_test(defect-no-work-marker-schedule RC 0 ARGS schedule fixtures/flashmla-no-work-marker.json
                STDOUT "no work and begin_req 3 \\(the metadata's batch size\\), below the kernel's params.b = 5")
mlactl_cli_test(defect-triton-causal-run RC 4 ARGS run fixtures/triton-causal-per-request.json --backend cpu STDOUT "outside the index list")
mlactl_cli_test(defect-triton-causal-route RC 0 ARGS route fixtures/triton-causal-per-request.json
                STDOUT "6 q rows against 3 rows of block_table/seq_lens.*reorder_batch_threshold raised +1 -> 2")
# captured FlashMLA arrays are validated as a plan of the batch before anything runs
mlactl_cli_test(cuda-captured-bad-num-splits RC 3 ARGS run fixtures/cuda-captured-matches.json --set captured.num_splits.2=1
                STDERR "/captured/num_splits/2: is 1, below num_splits\\[1\\] = 2: request 1 would have -1 splits")
mlactl_cli_test(cuda-captured-bad-row RC 3 ARGS schedule fixtures/cuda-captured-matches.json --set captured.tile_scheduler_metadata.3.0=9
                STDERR "/captured/tile_scheduler_metadata/3/0: begin_req 9 of SM part 3")
mlactl_cli_test(cuda-schedule-json RC 0 ARGS --format json schedule fixtures/cuda-flashmla-worked.json
                STDOUT "\"num_sm_parts\": 66,.*\"tile_scheduler_metadata\": \\[.*\\[\n? *0,\n? *2,\n? *0,\n? *4,\n? *1,.*\"num_splits\": \\[\n? *0,\n? *8,\n? *9,\n? *49,\n? *50\n? *\\]")
mlactl_cli_test(cuda-schedule-words RC 0 ARGS schedule fixtures/cuda-flashmla-worked.json
                STDOUT "\\[0,2,0,4,1,0,0,0\\]  SM part 1: request 0 blocks \\[2, 4\\), split 1 of 8")
mlactl_cli_test(cuda-metadata-json RC 0 ARGS --format json metadata fixtures/cuda-flashmla-fp8-mtp.json
                STDOUT "\"builder\": \"vllm MLACommonMetadataBuilder._build_decode \\(CUDA\\)\".*\"seq_lens\": \\[\n? *4002,\n? *65,\n? *2,\n? *1502,\n? *1\n? *\\]")
mlactl_cli_test(cuda-run-flashmla RC 0 ARGS run fixtures/cuda-flashmla-fp8-mtp.json STDOUT "PASSED.*route: +flashmla")
mlactl_cli_test(cuda-run-stale RC 1 ARGS run fixtures/flashmla-stale-schedule.json STDOUT "misses positions 64 of its window \\[0, 65\\)")
mlactl_cli_test(cuda-schedule-stacks RC 0 ARGS schedule fixtures/cuda-flashmla-fp8-mtp.json --stack vllm-rocm-aiter,vllm-cuda
                --set platform.aiter=2026.08
                STDOUT "vllm-rocm-aiter +gfx950 +256 +asm_persistent.*vllm-cuda +sm90 +132 +flashmla +flashmla .*63,2,1,24,1.*splits per request differ on 2 of 5 requests")
mlactl_cli_test(cuda-aiter-planner-on-sm90 RC 2 ARGS schedule fixtures/cuda-flashmla-worked.json --planner aiter
                STDERR "--planner aiter is not a planner of the vllm-cuda stack: flashmla, fa3, triton\n")
mlactl_cli_test(cuda-defects-list RC 0 ARGS defects STDOUT "flashmla-qlen-planned-as-one +- +#27368 +planner.*flashmla-stale-schedule +- +#35175 +planner.*flashmla-fp8-zero-pad +- +#35969 +padding.*flashmla-no-work-marker +- +FlashMLA #3 +planner.*triton-causal-per-request +- +#51065 +planner")
# run executes captured arrays by default (docs/design.md §2 captured); --own-metadata runs
# mlactl's plan and still reports the difference
mlactl_cli_test(cuda-captured-stale-run RC 0 ARGS run fixtures/cuda-captured-stale.json --own-metadata
                STDOUT "captured: +differs: tile_scheduler_metadata\\[1\\]\\[0\\]: mlactl builds 0, captured 1 \\(SM part 1\\)")
mlactl_cli_test(cuda-captured-use RC 0 ARGS run fixtures/cuda-captured-matches.json --use-captured STDOUT "PASSED")
mlactl_cli_test(cuda-captured-default-stale RC 1 ARGS run fixtures/cuda-captured-stale.json STDOUT "INCORRECT.*misses positions 64 of its window \\[0, 65\\)")
mlactl_cli_test(cuda-captured-use-stale RC 1 ARGS run fixtures/cuda-captured-stale.json --use-captured
                STDOUT "INCORRECT.*misses positions 64 of its window \\[0, 65\\)")
mlactl_cli_test(cuda-captured-off-sm90 RC 3 ARGS run fixtures/cuda-captured-matches.json --set platform.arch=gfx950
                STDERR "/captured/tile_scheduler_metadata: is a vLLM CUDA \\(FlashMLA\\) array; only vllm on sm90 reads it")
