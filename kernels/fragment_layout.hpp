// Lane -> element index maps of the two matrix-core tiles the tensor-core
// stage 1 is written against (kernels/fragment.hpp), for both vendors. Plain
// constexpr arithmetic with no GPU include, so tests/unit/test_fragment.cpp can
// emulate one wave's MMA from exactly the maps the kernel uses.
//
// Conventions: A is M x K row-major (a tile of 16 (row, head) pairs by 16 k),
// B is K x N, C/D is M x N fp32. "Row slot" s of a lane: the s-th distinct C row
// the lane holds; a slot has c_elems_per_row consecutive columns, and element e
// of the C fragment is (slot e / c_elems_per_row, column e % c_elems_per_row).
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define MLACTL_FRAG_HD __host__ __device__
#else
#define MLACTL_FRAG_HD
#endif

namespace mla {
namespace frag {

struct RowCol {
  int row, col;
};

// NVIDIA: mma.sync.aligned.m16n8k16 .f32.{bf16,f16} (sm_80+), operands loaded
// with ldmatrix.x4. PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
// point type" (groupID = lane / 4, threadID_in_group = lane % 4) and "ldmatrix"
// (matrix i of an .x4 takes its 8 row addresses from lanes 8i..8i+7; lane l
// receives row l / 4, elements 2(l % 4), +1 of each matrix, or with .trans the
// transposed element pair).
namespace nv {
constexpr int kLanes = 32;        // a warp
constexpr int kTileN = 8;         // n of one MMA (16 x 8 C tile)
constexpr int kCRowSlots = 2;     // c0,c1: row groupID; c2,c3: row groupID + 8
constexpr int kCElemsPerRow = 2;  // columns 2·threadID_in_group, +1
constexpr int kRowLanes = 4;      // lanes holding one C row: a quad of consecutive lanes

MLACTL_FRAG_HD constexpr int c_row(int lane, int slot) { return lane / 4 + 8 * slot; }
MLACTL_FRAG_HD constexpr int c_col(int lane, int j) { return 2 * (lane % 4) + j; }

// ldmatrix.x4 row addresses. A (16 x 16, row-major [m][k]): matrices
// (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15)
// are registers a0..a3 of the m16n8k16 A fragment.
MLACTL_FRAG_HD constexpr RowCol ldm_a_address(int lane) { return {lane % 8 + 8 * ((lane / 8) % 2), 8 * (lane / 16)}; }
// B stored [n][k] (K tile rows = tokens): one n8 tile, k 0-31; matrix i is k
// 8i..8i+7, so registers (b0, b1) are the k-step 0-15 and (b2, b3) the k-step 16-31.
MLACTL_FRAG_HD constexpr RowCol ldm_b_nk_address(int lane) { return {lane % 8, 8 * (lane / 8)}; }
// B stored [k][n] (V tile rows = tokens), .trans: one k-step of 16, two n8
// tiles; registers (b0, b1) are n 0-7 and (b2, b3) n 8-15. Returns (k, n).
MLACTL_FRAG_HD constexpr RowCol ldm_b_kn_address(int lane) { return {lane % 8 + 8 * ((lane / 8) % 2), 8 * (lane / 16)}; }
}  // namespace nv

// AMD CDNA2/CDNA3 (gfx90a, gfx94x): v_mfma_f32_16x16x16bf16_1k /
// v_mfma_f32_16x16x16f16 (gfx94x spells them v_mfma_f32_16x16x16_bf16 / _f16),
// wave64, one block. AMD CDNA3 ISA "Matrix fused multiply-add" operand layouts
// (as the AMD matrix instruction calculator prints them for this instruction):
// lane l holds A row l % 16, k 4(l / 16)..+3; B column l % 16, k 4(l / 16)..+3;
// C/D column l % 16, rows 4(l / 16)..+3 (register i: row 4(l / 16) + i).
namespace amd {
constexpr int kLanes = 64;        // a wave
constexpr int kTileN = 16;        // n of one MFMA (16 x 16 C tile)
constexpr int kCRowSlots = 4;     // four rows, one column each
constexpr int kCElemsPerRow = 1;
constexpr int kRowLanes = 16;     // lanes holding one C row: 16 consecutive lanes

MLACTL_FRAG_HD constexpr int c_row(int lane, int slot) { return 4 * (lane / 16) + slot; }
MLACTL_FRAG_HD constexpr int c_col(int lane, int j) { return lane % 16 + j; }

// A (row-major [m][k]) and B stored [n][k]: the lane's 4 consecutive k of its
// row (A) or column (B), one 8-byte read. Returns (row or n, first k).
MLACTL_FRAG_HD constexpr RowCol a_address(int lane) { return {lane % 16, 4 * (lane / 16)}; }
MLACTL_FRAG_HD constexpr RowCol b_nk_address(int lane) { return {lane % 16, 4 * (lane / 16)}; }
// B stored [k][n]: the lane's column at k rows first_k..first_k+3 (four 2-byte
// reads, one stride apart). Returns (first k, n).
MLACTL_FRAG_HD constexpr RowCol b_kn_address(int lane) { return {4 * (lane / 16), lane % 16}; }
}  // namespace amd

}  // namespace frag
}  // namespace mla
