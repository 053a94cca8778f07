// Input generation (docs/design.md §2 data.seed, §5 poisoning): q and the KV cache from a
// Batch, in the exact storage bits a kernel receives, with unused KV slots and
// unused block-table entries poisoned so stray reads show up.
#pragma once
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/batch.hpp"
#include "core/semantics.hpp"
#include "core/types.hpp"

namespace mlactl {

// Storage of `bytes`, and its release (with the same size). Large storage (the KV
// cache) is 2 MiB-aligned and advised onto transparent huge pages where the kernel
// allows it (madvise mode): every KV gather of the reference and the executors then
// walks 2 MiB pages instead of 4 KiB ones (300 K of them for 1.2 GB, each TLB miss a
// two-level walk in a VM), and the first touch faults 512 times less often.
void* allocate_storage(size_t bytes);
void free_storage(void* p, size_t bytes) noexcept;

// std::allocator's interface on allocate_storage, except that value-initialisation
// (resize, the size constructor) leaves the elements unwritten. generate_inputs writes every byte of q and KV in its
// parallel chunks, so the pages are first touched, and zeroed by the kernel, on all
// threads: with std::vector's zero fill one thread faulted in the whole cache first
// (1.2 GB for 256 x 4096 slots; ~1.1 s of page faults on the 2-core VM, docs/bench_notes.md).
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  T* allocate(size_t n) { return static_cast<T*>(allocate_storage(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { free_storage(p, n * sizeof(T)); }
};
// Storage bytes; resize() leaves new bytes unwritten (assign(n, 0) to zero them).
using StorageBytes = std::vector<uint8_t, UninitializedAllocator<uint8_t>>;

// A tensor in a storage dtype: uint16 bits (bf16/fp16) or uint8 codes (fp8).
struct EncodedTensor {
  DType dtype = DType::bf16;
  Fp8Flavor fp8_flavor = Fp8Flavor::e4m3fn;
  float scale = 1.0f;          // per-tensor dequant scale; meaningful for fp8 only (1 otherwise)
  StorageBytes bytes;          // raw storage
  int64_t num_elements() const { return (int64_t)bytes.size() / dtype_bytes(dtype); }
  const void* data() const { return bytes.data(); }
  void* data() { return bytes.data(); }
  // Decoded (and, for fp8, scaled) values: exactly what every executor sees.
  void decode(int64_t first, int64_t count, float* dst) const;
  float decode_one(int64_t index) const;
};

// One row of the user-visible q/output layout (oracle_windows order:
// request-major, token-minor, padding rows included).
struct QueryRowInfo {
  int request = 0;
  int64_t token = 0;
  bool padding = false;
};

// Poison for block-table entries no request uses (a kernel that reads one and
// uses it as a block id lands far outside any cache).
constexpr int32_t kBlockTablePoison = 0x7fff0000;

struct Inputs {
  int64_t num_rows = 0;   // q rows incl. padding rows
  int num_heads = 0;      // raw heads (model.num_heads)
  int head_dim = 576;     // q / KV row width (576, or 512 rope-free)
  int v_dim = 512;        // kv_lora_rank: output width
  float softmax_scale = 0;
  EncodedTensor q;        // [num_rows, num_heads, head_dim]
  EncodedTensor kv;       // [num_slots, head_dim]; unused slots hold the dtype's NaN
  int64_t num_slots = 0;  // num_blocks * block_size
  int block_size = 1;     // Kb
  int64_t used_slots = 0; // slots holding some request's KV
  std::vector<QueryRowInfo> rows;
  // Dense block table [num_requests, block_table_width] for kernels that read one;
  // entries past each request's ceil(seq_len / Kb) are kBlockTablePoison.
  std::vector<int32_t> padded_block_table;
  int64_t block_table_width = 0;
};

// The largest |V| value of the cache's finite entries (the first v_dim of each slot's row,
// decoded and scaled): the scale of a P rounding's effect on the output (core/compare.hpp).
double max_abs_v(const Inputs& in);


// Magnitudes (documented choice): q ~ 3·U(-1,1) (std 1.73), KV ~ U(-1,1) (std 0.58),
// so q·k has std ~ sqrt(576) like AITER's randn tests, and scale·q·k (scale =
// 1/sqrt(192)) has std ~ 1.7: softmax is far from uniform, yet logits stay < ~10.
constexpr float kQAmplitude = 3.0f;
constexpr float kKvAmplitude = 1.0f;

// Token slot of KV position j of request r (docs/design.md §2 kv_cache.block_size):
// block_table[r][j / Kb] * Kb + j % Kb. Data placement is part of the batch
// description, not of the metadata, so the reference uses this and never the builder.
int64_t kv_slot_of(const Batch& b, int request, int64_t position);

// Host bytes generate_inputs would allocate (for a memory budget check, docs/design.md §9).
int64_t estimated_input_bytes(const Batch& b, int64_t num_rows);

// Generates q and KV from data.seed. `rows` are oracle_windows(b) (passed in so
// callers that have them do not recompute). Deterministic for a seed on every
// platform and thread count. When q is fp8 it is generated in the model dtype and
// quantized per tensor (q.scale = amax / fp8 max); fp8 KV stores round(v / scale)
// for v ~ U(-1,1), so scale·decoded is that realistic range.
Inputs generate_inputs(const Batch& b, const std::vector<RowWindow>& rows, int threads = 0);

// The Inputs generate_inputs makes, for values that come from elsewhere (a capture,
// cli/captured_inputs.hpp): q's bytes allocated but unwritten (q.scale 1), KV slots no
// request uses holding the dtype's NaN, as generate_inputs's, and the used ones unwritten
// (place_kv_blocks writes them). Throws as generate_inputs does on a bad block table.
Inputs allocate_inputs(const Batch& b, const std::vector<RowWindow>& rows);

// Writes every KV slot a request reads (kv_slot_of) from `blocks`: some of the cache's
// blocks, each block_size rows of head_dim elements in in.kv's storage encoding, the
// one with block id k at index index_of_block[k]. A block a request reads that is not
// there throws invalid_input(where, ...) naming it, the request and the KV position.
void place_kv_blocks(const Batch& b, const std::unordered_map<int64_t, int64_t>& index_of_block, const void* blocks,
                     const std::string& where, Inputs& in);

// Which code runs the uniform generator's SplitMix64 lanes: one Rng call per value,
// or eight at once on AVX2 / AVX-512 (the same values); the fastest the CPU has.
enum class GeneratorIsa { scalar, avx2, avx512 };
bool generator_isa_available(GeneratorIsa isa);
// Tests run every available path against the scalar Rng; nullopt restores the default.
void set_generator_isa_for_testing(std::optional<GeneratorIsa> isa);
Inputs generate_inputs(const Batch& b);

}  // namespace mlactl
