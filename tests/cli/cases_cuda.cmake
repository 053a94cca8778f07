# The vllm-cuda stack through the real binary (docs/stacks/vllm-cuda.md): exit codes, error
# texts, the route chain, FlashMLA's arrays, refusals of what is modelled up to routing.
mlactl_cli_test(cuda-route-default RC 0 ARGS route --arch sm90 --heads 16 --context 100,2000
                STDOUT "route: +flash_attn_mla.*vLLM backend: +FLASH_ATTN_MLA.*priority 1: FLASH_ATTN_MLA.validate_configuration +\\[\\] \\(valid\\)")
mlactl_cli_test(cuda-route-fp8 RC 0 ARGS route --arch sm90 --heads 16 --context 100 --kv-dtype fp8
                STDOUT "route: +flashmla.*FLASH_ATTN_MLA.validate_configuration +\\['kv_cache_dtype not supported'\\]")
mlactl_cli_test(cuda-route-forced-refused RC 0 ARGS route --arch sm90 --heads 16 --context 100 --kv-dtype bf16 --attention-backend FLASHMLA
                STDOUT "route: +refused.*error: +ValueError: Selected backend AttentionBackendEnum.FLASHMLA is not valid for this configuration. Reason: \\['kv_cache_dtype not supported'\\]")
mlactl_cli_test(cuda-run-forced-refused RC 5 ARGS run --arch sm90 --heads 16 --context 100 --attention-backend CUTLASS_MLA
                STDOUT "REFUSED.*compute capability not supported")
mlactl_cli_test(cuda-backend-off-sm90 RC 3 ARGS validate --heads 16 --context 100 --attention-backend FLASHMLA
                STDERR "/decode/attention_backend: names a vLLM CUDA backend; it applies to platform.arch \"sm90\" only \\(this batch is gfx950\\)")
mlactl_cli_test(cuda-heads-any RC 0 ARGS route --arch sm90 --heads 129 --context 100 --kv-dtype fp8 STDOUT "route: +flashmla")
mlactl_cli_test(cuda-schedule-sparse RC 5 ARGS schedule fixtures/cuda-sparse-routing.json STDERR "flashmla_sparse: FLASHMLA_SPARSE's schedule is not modelled yet")
mlactl_cli_test(cuda-run-fa3 RC 5 ARGS run fixtures/cuda-default-fa3.json STDOUT "REFUSED.*FA3's scheduler .* is not modelled yet")
mlactl_cli_test(cuda-schedule-json RC 0 ARGS --format json schedule fixtures/cuda-flashmla-worked.json
                STDOUT "\"num_sm_parts\": 66,.*\"tile_scheduler_metadata\": \\[.*\\[\n? *0,\n? *2,\n? *0,\n? *4,\n? *1,.*\"num_splits\": \\[\n? *0,\n? *8,\n? *9,\n? *49,\n? *50\n? *\\]")
mlactl_cli_test(cuda-schedule-words RC 0 ARGS schedule fixtures/cuda-flashmla-worked.json
                STDOUT "\\[0,2,0,4,1,0,0,0\\]  SM part 1: request 0 blocks \\[2, 4\\), split 1 of 8")
mlactl_cli_test(cuda-metadata-json RC 0 ARGS --format json metadata fixtures/cuda-flashmla-fp8-mtp.json
                STDOUT "\"builder\": \"vllm MLACommonMetadataBuilder._build_decode \\(CUDA\\)\".*\"seq_lens\": \\[\n? *4002,\n? *65,\n? *2,\n? *1502,\n? *1\n? *\\]")
mlactl_cli_test(cuda-run-flashmla RC 0 ARGS run fixtures/cuda-flashmla-fp8-mtp.json STDOUT "PASSED.*route: +flashmla")
mlactl_cli_test(cuda-run-stale RC 1 ARGS run fixtures/flashmla-stale-schedule.json STDOUT "misses positions 64 of its window \\[0, 65\\)")
mlactl_cli_test(cuda-schedule-stacks RC 0 ARGS schedule fixtures/cuda-flashmla-fp8-mtp.json --stack vllm-rocm-aiter,vllm-cuda
                STDOUT "vllm-rocm-aiter +gfx950 +256 +asm_persistent.*vllm-cuda +sm90 +132 +flashmla +flashmla .*63,2,1,24,1.*splits per request differ on 2 of 5 requests")
mlactl_cli_test(cuda-aiter-planner-on-sm90 RC 2 ARGS schedule fixtures/cuda-flashmla-worked.json --planner aiter
                STDERR "--planner aiter is not a planner of the vllm-cuda stack")
mlactl_cli_test(cuda-defects-list RC 0 ARGS defects STDOUT "flashmla-qlen-planned-as-one +- +#27368 +planner.*flashmla-stale-schedule +- +#35175 +planner")
mlactl_cli_test(cuda-captured-stale-run RC 0 ARGS run fixtures/cuda-captured-stale.json
                STDOUT "captured: +differs: tile_scheduler_metadata\\[1\\]\\[0\\]: mlactl builds 0, captured 1 \\(SM part 1\\)")
mlactl_cli_test(cuda-captured-use RC 0 ARGS run fixtures/cuda-captured-matches.json --use-captured STDOUT "PASSED")
mlactl_cli_test(cuda-captured-use-stale RC 1 ARGS run fixtures/cuda-captured-stale.json --use-captured
                STDOUT "INCORRECT.*misses positions 64 of its window \\[0, 65\\)")
mlactl_cli_test(cuda-captured-off-sm90 RC 3 ARGS run fixtures/cuda-captured-matches.json --set platform.arch=gfx950
                STDERR "/captured/tile_scheduler_metadata: is a vLLM CUDA \\(FlashMLA\\) array; it applies to platform.arch \"sm90\" only")
