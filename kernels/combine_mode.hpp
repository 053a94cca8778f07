// How the split-KV partials become the output: plain C++, no GPU include, so the
// executor, the CLI and host tests can name the modes in any build.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "kernels/enum_from_name.hpp"

namespace mla {

// separate  stage 1 writes fp32 partials, then ONE reduce launch combines them
//           (kernels/reduce.hip); every stage-1 kernel, every vendor.
// separate_early  the same launches, but every block of the transposed wgmma
//           stage 1 issues griddepcontrol.launch_dependents as it starts (PTX ISA:
//           the dependent grid may then be scheduled once every CTA has issued it
//           or exited), so the reduce blocks are placed on SMs as stage-1 blocks
//           retire instead of after the last one; they still wait in
//           griddepcontrol.wait for all of stage 1's writes. Same bits as
//           separate; with other kernels it falls back to separate.
// fused     the last stage-1 workgroup to finish a reduce tile's splits combines
//           that tile itself (a counter per tile, no inter-workgroup waiting) and
//           no reduce is launched; the transposed wgmma kernel only
//           (kernels/stage1_wgmma.cuh), on plans plan_fused_combine accepts
//           (kernels/fused_combine.hpp). Elsewhere it falls back to separate and
//           the executor says why.
// spread    fused's counters, but every workgroup that wrote a split of a tile
//           combines a share of it: after its last work it waits for the tile's
//           last split, then takes the parts (pairs, or pair column quarters)
//           i, i + n, i + 2n, ... of a tile of n splits where its work is split i.
//           Same bits as separate, no reduce launch, the combine spread over the
//           SMs that held the splits (fused puts a whole tile on one). Waiting on
//           other workgroups needs them all resident: plans with more workgroups
//           than the device has multiprocessors fall back to separate, as do the
//           plans fused refuses.
enum class CombineMode : int32_t { separate = 0, fused = 1, separate_early = 2, spread = 3 };

inline constexpr CombineMode kCombineModes[] = {CombineMode::separate, CombineMode::fused, CombineMode::separate_early,
                                                CombineMode::spread};

inline constexpr const char* kCombineModeNames[] = {"separate", "fused", "separate_early", "spread"};  // in kCombineModes' order
inline const char* to_string(CombineMode v) { return enum_name(kCombineModes, kCombineModeNames, v); }

// Whether stage 1 combines the split tiles itself, with no reduce launch (fused, spread).
inline constexpr bool combines_in_stage1(CombineMode v) { return v == CombineMode::fused || v == CombineMode::spread; }

// The mode a name (as to_string prints it) stands for; nullopt for other names.
inline std::optional<CombineMode> combine_mode_from_name(const std::string& name) {
  return enum_from_name(kCombineModes, name);
}

}  // namespace mla
