# The SGLang stack through the real binary (docs/stacks/sglang.md): the stack as a batch
# field and a flag, fields of one stack refused under the other naming the field, SGLang's
# routes and refusals, the cross-stack schedule, and the SGLang fixtures and defect pairs.
mlactl_cli_test(sglang-route-default RC 0 ARGS route --stack sglang --arch sm90 --heads 16 --context 100,2000
                STDOUT "route: +flash_attn_mla.*backend: +fa3.*is_hopper_with_cuda_12_3 +true")
mlactl_cli_test(sglang-route-rocm-default RC 0 ARGS route --stack sglang --arch gfx942 --heads 24 --context 100
                STDOUT "route: +triton_mla.*get_num_kv_heads\\(tp\\) +24 +not 16 or 128 on ROCm: triton")
mlactl_cli_test(sglang-backend-by-stack RC 0 ARGS route --stack sglang --arch sm90 --heads 16 --context 100 --attention-backend flashinfer
                STDOUT "route: +flashinfer_mla")
mlactl_cli_test(sglang-backend-vllm-name RC 3 ARGS route --stack sglang --arch sm90 --heads 16 --context 100 --attention-backend FLASHMLA
                STDERR "/sglang/attention_backend: must be one of fa3, flashmla, flashinfer, triton, aiter")
mlactl_cli_test(sglang-vllm-field RC 3 ARGS validate --stack sglang --arch sm90 --heads 16 --context 100 --set decode.mtp_qlen=2
                STDERR "/decode/mtp_qlen: is vLLM's uniform decode query length K; only vllm on gfx950/gfx942 and vllm on sm90 reads it \\(this batch is sglang on sm90\\)")
mlactl_cli_test(sglang-section-under-vllm RC 3 ARGS validate --heads 16 --context 100 --set sglang.forward_mode=decode
                STDERR "/sglang: is the sglang stack's section; this batch is vllm on gfx950 \\(set platform.stack\\)")
mlactl_cli_test(sglang-verify-qlen RC 3 ARGS validate --stack sglang --arch sm90 --heads 16 --context 100,20 --qlen 2 --set sglang.forward_mode=target_verify --set sglang.num_draft_tokens=3
                STDERR "/requests/0/query_len: is 2; target_verify runs 3 draft tokens per request")
mlactl_cli_test(sglang-decode-qlen RC 3 ARGS validate --stack sglang --arch sm90 --heads 16 --context 100 --qlen 2
                STDERR "/requests/0/query_len: is 2; a decode step schedules one token per request")
mlactl_cli_test(sglang-schedule-across RC 0 ARGS schedule --heads 16 --context 100,5000 --stack vllm,sglang@sm90
                STDOUT "vllm +gfx950 +256 +asm_persistent.*sglang@sm90 +sm90 +132 +flash_attn_mla +fa3")
mlactl_cli_test(sglang-run-flashinfer RC 0 ARGS run fixtures/sglang-flashinfer-decode-split.json --backend cpu STDOUT "PASSED.*route: +flashinfer_mla")
mlactl_cli_test(sglang-windows-tree RC 0 ARGS windows fixtures/sglang-fa3-tree-verify.json
                STDOUT "4 +0 +4 +404 +\\[0, 401\\) \\+ \\[402, 403\\) \\+ \\[404, 405\\) +403 +tree")
mlactl_cli_test(sglang-run-stale-qo RC 4 ARGS run fixtures/sglang-eagle-stale-qo-indptr.json --backend cpu
                STDOUT "FAILED.*q rows outside the q tensor of 6 rows")
mlactl_cli_test(sglang-run-padded-output RC 1 ARGS run fixtures/sglang-aiter-draft-extend-padded-output.json --backend cpu
                STDOUT "INCORRECT.*caller returns o\\[q_mask\\].*3 rows hold another token's output, 2 were never written \\(sglang #19902\\).*position audit: ok")
mlactl_cli_test(defects-fixed-by-other-project RC 0 ARGS defects sglang-aiter-draft-extend-padded-output STDOUT "fixed by: +sglang #19902")
foreach(id sglang-flashmla-kv-heads-from-config sglang-flashinfer-tree-mask-dropped flashinfer-causal-negative-kv-end sglang-eagle-stale-qo-indptr
           sglang-flashmla-draft-extend-graph-state sglang-aiter-draft-extend-padded-output)
  mlactl_cli_test(check-${id} RC 0 ARGS check fixtures/${id}.json fixtures/${id}-fixed.json --backend cpu STDOUT "2 passed, 0 failed")
endforeach()
