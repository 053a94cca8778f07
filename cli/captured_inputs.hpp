// `run --inputs DIR`: q and the used KV blocks a capture wrote (scripts/capture_vllm_batch.py,
// docs/design.md §2 "Captured tensors") replace the tensors mlactl generates from data.seed.
// The reference and every executor then see the real step's numbers; everything else (the
// batch, the plan, the oracle windows) still comes from the batch file.
//
// DIR holds inputs.json and the .npy files it names, in the encodings of the external
// executor protocol (docs/executor-protocol.md: storage bits, bf16/fp16 as <u2, fp8 as |u1):
//   {"protocol": 1,
//    "q":         {"file": "q.npy", "encoding": "bf16", "scale": 1.0},      [rows, heads, head_dim]
//    "kv_blocks": {"file": "kv_blocks.npy", "encoding": "bf16", "scale": 1.0,
//                  "block_ids": "kv_block_ids.npy"}}                       [n, block_size, head_dim], ids [n]
// Only the blocks the batch's block table uses need to be there; every KV slot no request
// uses keeps the NaN poison, so a stray read still shows.
#pragma once
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/inputs.hpp"

namespace mlactl::cli {

// b's inputs (`rows` its oracle_windows) with q and the used KV slots from the capture in
// dir, the rest as generate_inputs lays them out (core/inputs.hpp allocate_inputs). Throws
// Error(kExitInvalidInput) naming the file and field: a missing file, a shape, dtype or
// encoding that is not this batch's, a block id out of range or repeated, a block the batch
// reads that the capture lacks, a scale that disagrees with the batch.
Inputs load_captured_inputs(const std::string& dir, const Batch& b, const std::vector<RowWindow>& rows);

}  // namespace mlactl::cli
