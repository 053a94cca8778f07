// The batch file (schema 1), docs/design.md §2: a decode step as a serving stack sees it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/types.hpp"

namespace mlactl {

enum class KvLayout { sequential, shuffled };
enum class SmallHeadMode { auto_mode, gluon, asm_mode };  // VLLM_ROCM_AITER_MLA_ASM_PADDING
enum class SparseGeometry { rope, rope_free };
// vLLM's CUDA attention backend names (--attention-backend / decode.attention_backend),
// docs/stacks/vllm-cuda.md §C1.
enum class AttentionBackend { flash_attn_mla, flashmla, flashinfer_mla, triton_mla, flashmla_sparse, cutlass_mla };
const char* to_string(AttentionBackend a);  // vLLM's spelling: "FLASH_ATTN_MLA", ...
std::optional<AttentionBackend> attention_backend_from_string(const std::string& s);

inline const char* to_string(SmallHeadMode m) {
  return m == SmallHeadMode::auto_mode ? "auto" : m == SmallHeadMode::gluon ? "gluon" : "asm";
}
inline const char* to_string(KvLayout l) { return l == KvLayout::sequential ? "sequential" : "shuffled"; }

struct Request {
  int64_t context_len = 0;  // c: KV committed before this step
  int64_t query_len = 0;    // q: tokens scheduled this step
  bool padding = false;     // cudagraph padding slot (seq_len 0, query_len 0)
  // tree verify (topk > 1): parents[i] of query token i, -1 for the root (token 0), each
  // parent before its child (core/draft_tree.hpp); empty: the tokens are a causal chain
  std::vector<int32_t> draft_parents;
  int64_t seq_len() const { return context_len + query_len; }
};

struct SparseSpec {
  int64_t topk = 0;
  SparseGeometry geometry = SparseGeometry::rope;
  bool random_indices = true;
  // Explicit indices: one list per query token (requests in order), KV positions of
  // that request, -1 entries already dropped.
  std::vector<std::vector<int64_t>> indices;
};

// A stack's own section of the batch (`/sglang`), parsed by that stack (core/stack.hpp
// parse_section) into its own type; the batch holds it without knowing the stack.
struct StackSection {
  virtual ~StackSection() = default;
};

struct Batch {
  int schema = 1;
  std::string name;
  std::string description;

  struct Platform {
    ServingStack stack = ServingStack::vllm;
    Arch arch = Arch::gfx950;
    int num_cu = 256;
    AiterRules aiter = AiterRules::r2026_08_pr4899;  // the newest rule set read (fixtures pin theirs)
    VllmRules vllm = VllmRules::r1;
    bool aiter_has_causal_arg = true;
  } platform;

  struct Model {
    int num_heads = 16;
    int kv_lora_rank = 512;
    int qk_rope_head_dim = 64;
    DType dtype = DType::bf16;
    double softmax_scale = 0;  // resolved: 1/sqrt(192) by default
    int head_size() const { return kv_lora_rank + qk_rope_head_dim; }
  } model;

  struct KvCache {
    DType dtype = DType::bf16;   // resolved ("auto" = model dtype)
    bool dtype_auto = true;      // the user wrote "auto" (vLLM's is_quantized("auto") is false)
    double scale = 1.0;
    int block_size = 1;          // vLLM kernel block size Kb
    KvLayout layout = KvLayout::shuffled;
    bool explicit_block_table = false;
    // Always materialised after parsing: one list of block ids per request, each
    // holding ceil(seq_len / Kb) entries (more when given explicitly).
    std::vector<std::vector<int32_t>> block_table;  // int32 as in vLLM
    int64_t num_blocks = 0;      // blocks allocated per layer (resolved)
  } kv_cache;

  struct Decode {
    bool causal = true;
    SmallHeadMode small_head_mode = SmallHeadMode::auto_mode;
    int64_t mtp_qlen = 1;          // K, resolved (default max query_len, at least 1)
    DType q_dtype = DType::bf16;   // resolved: fp8 when the KV cache is fp8 (R1), else the model dtype
    bool q_dtype_is_model = true;  // "model" was chosen (explicitly or by default)
    int64_t num_decode_tokens = 0; // resolved (default Σ query_len + K·#padding)
    int64_t max_num_seqs = 0;      // resolved (default number of requests)
    // sm90 only: the backend forced by vLLM's --attention-backend (unset = vLLM's priority list)
    std::optional<AttentionBackend> attention_backend;
    // sm90 FLASH_ATTN_MLA: the num_splits vLLM passes to FA3's get_scheduler_metadata and the
    // kernel (max_num_splits: flash_attn_max_num_splits_for_cuda_graph under full cudagraph,
    // 0 eager = FA3's heuristic), docs/stacks/vllm-cuda.md §C5
    int64_t max_num_splits = 0;
  } decode;

  std::vector<Request> requests;
  // A padding slot's shape when its stack decides it (SGLang pads with the backend's fill
  // value and the forward mode's query length, docs/stacks/sglang.md §S11); vLLM's uniform
  // MTP padding otherwise (rows_per_padding_request).
  struct PaddingShape {
    int64_t query_len = 1;
    int64_t kv_len = 1;
  };
  std::optional<PaddingShape> padding_shape;
  std::optional<SparseSpec> sparse;
  uint64_t seed = 0;
  std::vector<std::string> inject;
  nlohmann::json captured;  // null when absent; validated by the captured-metadata module
  nlohmann::json expect;    // null when absent
  // The batch's stack section as parsed by its stack (null when the stack has none or the
  // batch omits it), and as written (batch_to_json writes it back).
  std::shared_ptr<const StackSection> stack_section;
  nlohmann::json stack_section_doc;

  bool has_defect(const std::string& id) const {
    for (const auto& d : inject)
      if (d == id) return true;
    return false;
  }
  Fp8Flavor fp8_flavor() const { return fp8_flavor_for(platform.arch); }
  int head_dim() const {  // q / KV row width: 576, or 512 for rope-free sparse
    return (sparse && sparse->geometry == SparseGeometry::rope_free) ? model.kv_lora_rank : model.head_size();
  }
  int64_t max_seq_len() const;
  int64_t max_query_len() const;
  int64_t total_query_tokens() const;
  int num_padding() const;
  // query rows each padding request gets (vLLM's uniform-MTP padding; 0 when it does not apply)
  int64_t rows_per_padding_request() const;
  // KV entries a padding slot's table covers (its rows, under vLLM's padding)
  int64_t padding_kv_len() const { return padding_shape ? padding_shape->kv_len : rows_per_padding_request(); }
  // bytes of one KV token row and of the per-layer cache (Gluon's 2 GiB bound)
  int64_t kv_cache_bytes() const;
};

// At most this many requests (docs/design.md §2): every array stays within int32.
constexpr int64_t kMaxBatchRequests = 1 << 22;

// Strict JSON text -> document: malformed JSON, nesting deeper than 64 levels and
// duplicate keys throw mlactl::Error (exit 3). Every batch file goes through this.
nlohmann::json parse_json_document(const std::string& text, const std::string& source);
// Peak bytes of a parsed document per byte of its text (nlohmann::json DOM + the text),
// measured on a 10^6-request batch: 8.7 (docs/bench_notes.md "Reliability (issue 15)"), rounded up.
constexpr int64_t kDomBytesPerTextByte = 10;
// The largest batch file the memory budget admits: budget / kDomBytesPerTextByte.
int64_t max_document_bytes();
// Reads a whole file that mlactl is given (a batch, inputs.json, result.json): opened without
// blocking (a FIFO with no writer would hang open) and refused unless it is a regular file,
// its size checked against max_bytes before anything is read (issue 39). Errors are exit 3
// naming the path; `too_large` words the size error (given the file's size).
std::string read_regular_file(const std::string& path, int64_t max_bytes, const std::function<std::string(int64_t)>& too_large);
// Reads a file and parses it as above; larger than max_document_bytes() is exit 3; a missing file is exit 3 ("cannot open batch file").
nlohmann::json load_json_document(const std::string& path);

// Apply "key.path=value" (value parsed as JSON when it parses, else as a string)
// to a raw document before parse_batch. Array elements: "requests.2.query_len=3".
void apply_set(nlohmann::json& doc, const std::string& assignment);


// Serialise a parsed batch back to a canonical schema-1 document (explicit block table).
nlohmann::ordered_json batch_to_json(const Batch& b);

// vLLM's cache_dtype spelling of kv_cache.dtype ("auto", "bfloat16", "float16", "fp8"),
// as both modelled stacks (core/stacks/vllm_rocm_aiter, core/stacks/vllm_cuda) pass it
// on; "auto" when the user wrote it (vLLM's is_quantized("auto") is false).
std::string vllm_kv_cache_dtype(const Batch& b);

}  // namespace mlactl
