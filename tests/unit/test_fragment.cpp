// The fragment layer's index maps (kernels/fragment_layout.hpp), both vendors,
// on the host: one wave's loads and MMAs are emulated from the maps exactly as
// tc::stage1_mma_kernel uses them (Q·Kᵀ from an [n][k] tile, P·V from a [k][n]
// tile, C elements read back through c_row / c_col) and compared with a naive
// product. The hardware side of each emulation is written from the vendors'
// documents, independently of the header:
//  * NVIDIA: PTX ISA, "ldmatrix" (matrix i of .x4 takes its row addresses from
//    lanes 8i..8i+7; lane l receives row l/4, elements 2(l%4), +1, or with .trans
//    elements (2(l%4), l/4), (2(l%4)+1, l/4)) and "Matrix Fragments for
//    mma.m16n8k16 with floating point type" (groupID = l/4, tig = l%4).
//  * AMD: CDNA3 ISA / matrix instruction calculator, v_mfma_f32_16x16x16 f16/bf16
//    (wave64): lane l holds A[l%16][4(l/16)+i], B[4(l/16)+i][l%16], and
//    D[4(l/16)+i][l%16] in register i.
#include <catch2/catch.hpp>

#include <array>
#include <vector>

#include "kernels/fragment_layout.hpp"

using namespace mla::frag;

namespace {

// Small integers: every product and sum below is exact in float.
float q_value(int row, int k) { return float((row * 7 + k * 3) % 11 - 5); }
float k_value(int token, int k) { return float((token * 5 + k * 9) % 13 - 6); }
float p_value(int row, int token) { return float((row * 3 + token * 5) % 7 - 3); }
float v_value(int token, int col) { return float((token * 11 + col * 2) % 9 - 4); }

// A shared-memory tile: rows of `stride` 16-bit elements (held as floats here).
struct Tile {
  int stride;
  std::vector<float> v;
  Tile(int rows, int stride_) : stride(stride_), v(size_t(rows) * stride_, -1000.0f) {}
  float& at(int row, int col) { return v[size_t(row) * stride + col]; }
  float at_offset(int offset) const { return v.at(size_t(offset)); }
};

// ---- NVIDIA: ldmatrix and mma.m16n8k16 as the PTX ISA describes them ----------
using NvRegs = std::array<std::array<std::array<float, 2>, 4>, 32>;  // [lane][register][half]

// `address(lane)` is the element offset of the row that lane supplies.
template <typename Address>
NvRegs ldmatrix_x4(const Tile& t, Address address, bool trans) {
  NvRegs r{};
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i)
      for (int h = 0; h < 2; ++h) {
        const int row = trans ? 2 * (lane % 4) + h : lane / 4;
        const int col = trans ? lane / 4 : 2 * (lane % 4) + h;
        r[lane][i][h] = t.at_offset(address(8 * i + row) + col);
      }
  return r;
}

// c[lane][0..3] += A (16x16, regs a) · B (16x8, regs b0 b1) per the fragment figures.
void nv_mma(std::array<std::array<float, 4>, 32>& c, const NvRegs& a, const NvRegs& b, int b_first_reg) {
  float A[16][16], B[16][8];
  int seen_a[16][16] = {}, seen_b[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane / 4, tig = lane % 4;
    for (int e = 0; e < 8; ++e) {  // a0..a7: register e / 2, half e % 2
      const int row = group + ((e / 2) % 2) * 8, k = tig * 2 + (e % 2) + (e >= 4 ? 8 : 0);
      A[row][k] = a[lane][e / 2][e % 2];
      ++seen_a[row][k];
    }
    for (int e = 0; e < 4; ++e) {  // b0..b3
      const int k = tig * 2 + (e % 2) + (e >= 2 ? 8 : 0), n = group;
      B[k][n] = b[lane][b_first_reg + e / 2][e % 2];
      ++seen_b[k][n];
    }
  }
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) REQUIRE(seen_a[i][j] == 1);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) REQUIRE(seen_b[i][j] == 1);
  for (int lane = 0; lane < 32; ++lane)
    for (int e = 0; e < 4; ++e) {  // c0,c1: row groupID; c2,c3: groupID + 8; col 2·tig + e%2
      const int row = lane / 4 + (e >= 2 ? 8 : 0), n = 2 * (lane % 4) + (e % 2);
      float acc = 0.0f;
      for (int k = 0; k < 16; ++k) acc += A[row][k] * B[k][n];
      c[lane][e] += acc;
    }
}

// ---- AMD: v_mfma_f32_16x16x16 as the CDNA3 ISA describes it --------------------
using AmdRegs = std::array<std::array<float, 4>, 64>;  // [lane][element]

void amd_mfma(AmdRegs& c, const AmdRegs& a, const AmdRegs& b) {
  float A[16][16], B[16][16];
  int seen_a[16][16] = {}, seen_b[16][16] = {};
  for (int lane = 0; lane < 64; ++lane)
    for (int i = 0; i < 4; ++i) {
      A[lane % 16][4 * (lane / 16) + i] = a[lane][i];
      ++seen_a[lane % 16][4 * (lane / 16) + i];
      B[4 * (lane / 16) + i][lane % 16] = b[lane][i];
      ++seen_b[4 * (lane / 16) + i][lane % 16];
    }
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) REQUIRE((seen_a[i][j] == 1 && seen_b[i][j] == 1));
  for (int lane = 0; lane < 64; ++lane)
    for (int i = 0; i < 4; ++i) {
      const int row = 4 * (lane / 16) + i, n = lane % 16;
      float acc = 0.0f;
      for (int k = 0; k < 16; ++k) acc += A[row][k] * B[k][n];
      c[lane][i] += acc;
    }
}

// The kernel's loads on AMD (kernels/fragment.hpp): plain reads at the maps' addresses.
// 4 consecutive elements along a row from each lane's address (A, and B in [n][k]).
AmdRegs amd_load_row4(const Tile& t, int base, RowCol (*address)(int)) {
  AmdRegs r{};
  for (int lane = 0; lane < 64; ++lane) {
    const RowCol at = address(lane);
    for (int i = 0; i < 4; ++i) r[lane][i] = t.at_offset(base + at.row * t.stride + at.col + i);
  }
  return r;
}
AmdRegs amd_load_a(const Tile& t, int base) { return amd_load_row4(t, base, amd::a_address); }
// one k-step of load_b_nk_x2 (base + 16: the other)
AmdRegs amd_load_b_nk(const Tile& t, int base) { return amd_load_row4(t, base, amd::b_nk_address); }
AmdRegs amd_load_b_kn(const Tile& t, int base) {  // one n-tile of load_b_kn_x2 (base + 16: the other)
  AmdRegs r{};
  for (int lane = 0; lane < 64; ++lane) {
    const RowCol at = amd::b_kn_address(lane);
    for (int i = 0; i < 4; ++i) r[lane][i] = t.at_offset(base + (at.row + i) * t.stride + at.col);
  }
  return r;
}

// Tiles as the kernel lays them out: q [16][stride], K/V [32 tokens][stride], P [16][40].
constexpr int kKvStride = 72, kQStride = 40, kPStride = 40, kK = 32, kTokens = 32;

Tile make_q() {
  Tile t(16, kQStride);
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < kK; ++k) t.at(r, k) = q_value(r, k);
  return t;
}
Tile make_k() {  // [token][k]: also read as V [token][col] below
  Tile t(kTokens, kKvStride);
  for (int n = 0; n < kTokens; ++n)
    for (int k = 0; k < kKvStride - 8; ++k) t.at(n, k) = k_value(n, k);
  return t;
}
Tile make_v() {
  Tile t(kTokens, kKvStride);
  for (int n = 0; n < kTokens; ++n)
    for (int c = 0; c < kKvStride - 8; ++c) t.at(n, c) = v_value(n, c);
  return t;
}
Tile make_p() {
  Tile t(16, kPStride);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < kTokens; ++n) t.at(r, n) = p_value(r, n);
  return t;
}

float naive_s(int row, int token) {
  float acc = 0.0f;
  for (int k = 0; k < kK; ++k) acc += q_value(row, k) * k_value(token, k);
  return acc;
}
float naive_o(int row, int col) {
  float acc = 0.0f;
  for (int n = 0; n < kTokens; ++n) acc += p_value(row, n) * v_value(n, col);
  return acc;
}

// Every (row, column) of a C tile of `cols` columns is held by exactly one (lane, element).
template <typename Row, typename Col>
void check_c_cover(int lanes, int slots, int per_row, int cols, Row c_row_of, Col c_col_of) {
  std::vector<int> seen(size_t(16) * cols, 0);
  for (int lane = 0; lane < lanes; ++lane)
    for (int s = 0; s < slots; ++s)
      for (int j = 0; j < per_row; ++j) ++seen[size_t(c_row_of(lane, s)) * cols + c_col_of(lane, j)];
  for (int x : seen) REQUIRE(x == 1);
}

// The row max / sum reductions shuffle over `row_lanes` consecutive lanes: those
// must be exactly the lanes holding the same rows.
template <typename Row>
void check_row_groups(int lanes, int slots, int row_lanes, Row c_row_of) {
  for (int lane = 0; lane < lanes; ++lane)
    for (int other = 0; other < lanes; ++other) {
      const bool same_group = lane / row_lanes == other / row_lanes;
      for (int s = 0; s < slots; ++s) CHECK((c_row_of(lane, s) == c_row_of(other, s)) == same_group);
    }
}

}  // namespace

TEST_CASE("fragment maps, NVIDIA mma.m16n8k16: C cover and row groups", "[fragment]") {
  check_c_cover(nv::kLanes, nv::kCRowSlots, nv::kCElemsPerRow, nv::kTileN, nv::c_row, nv::c_col);
  check_row_groups(nv::kLanes, nv::kCRowSlots, nv::kRowLanes, nv::c_row);
  STATIC_REQUIRE(nv::kCRowSlots * nv::kCElemsPerRow == 4);
  STATIC_REQUIRE(nv::c_row(5, 1) == 9);  // lane 5: groupID 1; c2 is row groupID + 8
  STATIC_REQUIRE(nv::c_col(5, 1) == 3);  // threadID_in_group 1: columns 2, 3
}

TEST_CASE("fragment maps, AMD mfma 16x16x16: C cover and row groups", "[fragment]") {
  check_c_cover(amd::kLanes, amd::kCRowSlots, amd::kCElemsPerRow, amd::kTileN, amd::c_row, amd::c_col);
  check_row_groups(amd::kLanes, amd::kCRowSlots, amd::kRowLanes, amd::c_row);
  STATIC_REQUIRE(amd::kCRowSlots * amd::kCElemsPerRow == 4);
  STATIC_REQUIRE(amd::c_row(37, 2) == 10);  // lane 37: rows 8..11, column 5
  STATIC_REQUIRE(amd::c_col(37, 0) == 5);
}

TEST_CASE("fragment maps, NVIDIA: one warp's Q·Kᵀ and P·V match a naive product", "[fragment]") {
  const Tile q = make_q(), kt = make_k(), p = make_p(), v = make_v();
  auto a_offset = [](int lane, int stride) { return nv::ldm_a_address(lane).row * stride + nv::ldm_a_address(lane).col; };

  // S = Q · Kᵀ over k 0..31 for tokens 0..15: two n8 parts, each one
  // load_b_nk_x2 (k 0-15 and 16-31) and two MMAs, as the kernel's k-loop.
  for (int part = 0; part < 2; ++part) {
    std::array<std::array<float, 4>, 32> c{};
    const NvRegs a0 = ldmatrix_x4(q, [&](int l) { return a_offset(l, kQStride); }, false);
    const NvRegs a1 = ldmatrix_x4(q, [&](int l) { return a_offset(l, kQStride) + 16; }, false);
    const NvRegs b = ldmatrix_x4(
        kt, [&](int l) { return (part * nv::kTileN + nv::ldm_b_nk_address(l).row) * kKvStride + nv::ldm_b_nk_address(l).col; },
        false);
    nv_mma(c, a0, b, 0);  // (b0, b1): k 0-15
    nv_mma(c, a1, b, 2);  // (b2, b3): k 16-31
    for (int lane = 0; lane < 32; ++lane)
      for (int e = 0; e < 4; ++e) {
        const int row = nv::c_row(lane, e / nv::kCElemsPerRow);
        const int token = part * nv::kTileN + nv::c_col(lane, e % nv::kCElemsPerRow);
        REQUIRE(c[lane][e] == naive_s(row, token));
      }
  }

  // O = P · V over tokens 0..31 for columns 0..15: two k-steps; one
  // load_b_kn_x2 (.trans) gives the two n8 tiles of a k-step.
  std::array<std::array<float, 4>, 32> o0{}, o1{};
  for (int k0 = 0; k0 < kTokens; k0 += 16) {
    const NvRegs a = ldmatrix_x4(p, [&](int l) { return a_offset(l, kPStride) + k0; }, false);
    const NvRegs b = ldmatrix_x4(
        v, [&](int l) { return (k0 + nv::ldm_b_kn_address(l).row) * kKvStride + nv::ldm_b_kn_address(l).col; }, true);
    nv_mma(o0, a, b, 0);  // (b0, b1): columns 0-7
    nv_mma(o1, a, b, 2);  // (b2, b3): columns 8-15
  }
  for (int lane = 0; lane < 32; ++lane)
    for (int e = 0; e < 4; ++e) {
      const int row = nv::c_row(lane, e / nv::kCElemsPerRow), col = nv::c_col(lane, e % nv::kCElemsPerRow);
      REQUIRE(o0[lane][e] == naive_o(row, col));
      REQUIRE(o1[lane][e] == naive_o(row, nv::kTileN + col));
    }
}

TEST_CASE("fragment maps, AMD: one wave's Q·Kᵀ and P·V match a naive product", "[fragment]") {
  const Tile q = make_q(), kt = make_k(), p = make_p(), v = make_v();

  // S = Q · Kᵀ over k 0..31 for tokens 0..31: two 16-token parts.
  for (int part = 0; part < 2; ++part) {
    AmdRegs c{};
    const int b_base = part * amd::kTileN * kKvStride;
    amd_mfma(c, amd_load_a(q, 0), amd_load_b_nk(kt, b_base));
    amd_mfma(c, amd_load_a(q, 16), amd_load_b_nk(kt, b_base + 16));
    for (int lane = 0; lane < 64; ++lane)
      for (int e = 0; e < 4; ++e) {
        const int row = amd::c_row(lane, e / amd::kCElemsPerRow);
        const int token = part * amd::kTileN + amd::c_col(lane, e % amd::kCElemsPerRow);
        REQUIRE(c[lane][e] == naive_s(row, token));
      }
  }

  // O = P · V over tokens 0..31 for columns 0..31 (two n-tiles of 16).
  AmdRegs o0{}, o1{};
  for (int k0 = 0; k0 < kTokens; k0 += 16) {
    const AmdRegs a = amd_load_a(p, k0);
    amd_mfma(o0, a, amd_load_b_kn(v, k0 * kKvStride));
    amd_mfma(o1, a, amd_load_b_kn(v, k0 * kKvStride + 16));
  }
  for (int lane = 0; lane < 64; ++lane)
    for (int e = 0; e < 4; ++e) {
      const int row = amd::c_row(lane, e / amd::kCElemsPerRow), col = amd::c_col(lane, e % amd::kCElemsPerRow);
      REQUIRE(o0[lane][e] == naive_o(row, col));
      REQUIRE(o1[lane][e] == naive_o(row, amd::kTileN + col));
    }
}
