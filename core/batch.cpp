// The batch's own methods and the JSON document reader every batch file goes through
// (docs/design.md §2); the field-by-field parser is core/batch_parse.cpp.
#include "core/batch.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "core/budget.hpp"
#include "core/json_fields.hpp"
#include "core/vllm_common.hpp"

namespace mlactl {

using nlohmann::json;
using json_fields::child;

namespace {
constexpr size_t kMaxJsonDepth = 64;  // a batch document needs 5 levels; expect/captured a few more
}  // namespace


const char* to_string(AttentionBackend a) {
  switch (a) {
    case AttentionBackend::flash_attn_mla: return "FLASH_ATTN_MLA";
    case AttentionBackend::flashmla: return "FLASHMLA";
    case AttentionBackend::flashinfer_mla: return "FLASHINFER_MLA";
    case AttentionBackend::triton_mla: return "TRITON_MLA";
    case AttentionBackend::flashmla_sparse: return "FLASHMLA_SPARSE";
    case AttentionBackend::cutlass_mla: return "CUTLASS_MLA";
  }
  return "?";
}

std::optional<AttentionBackend> attention_backend_from_string(const std::string& s) {
  for (AttentionBackend a : {AttentionBackend::flash_attn_mla, AttentionBackend::flashmla, AttentionBackend::flashinfer_mla,
                             AttentionBackend::triton_mla, AttentionBackend::flashmla_sparse, AttentionBackend::cutlass_mla})
    if (s == to_string(a)) return a;
  return std::nullopt;
}

// vLLM's uniform-MTP padding decides how many rows (and R1 KV entries) a padding slot
// gets (core/vllm_common.hpp); the placement, the oracle and the builder all ask here.
int64_t Batch::rows_per_padding_request() const {
  if (padding_shape) return padding_shape->query_len;
  std::vector<int64_t> qo;
  qo.reserve(requests.size());
  for (const auto& r : requests) qo.push_back(r.query_len);
  return vllm::uniform_padded_mtp_qo_len(qo, max_query_len(), decode.num_decode_tokens);
}

int64_t Batch::max_seq_len() const {
  int64_t m = 0;
  for (const auto& r : requests) m = std::max(m, r.seq_len());
  return m;
}
int64_t Batch::max_query_len() const {
  int64_t m = 0;
  for (const auto& r : requests) m = std::max(m, r.query_len);
  return m;
}
int64_t Batch::total_query_tokens() const {
  int64_t s = 0;
  for (const auto& r : requests) s += r.query_len;
  return s;
}
int Batch::num_padding() const {
  int n = 0;
  for (const auto& r : requests) n += r.padding ? 1 : 0;
  return n;
}
int64_t Batch::kv_cache_bytes() const {
  return kv_cache.num_blocks * (int64_t)kv_cache.block_size * head_dim() * dtype_bytes(kv_cache.dtype);
}

std::string vllm_kv_cache_dtype(const Batch& b) {
  if (b.kv_cache.dtype_auto) return "auto";
  switch (b.kv_cache.dtype) {
    case DType::bf16: return "bfloat16";
    case DType::fp16: return "float16";
    case DType::fp8: return "fp8";
  }
  return "auto";
}

namespace {

// The batch parser's DOM builder: nlohmann's SAX interface, with the depth bound and the
// duplicate-key check done as the tree is built. Why not json::parse with a callback:
// nlohmann's callback DOM parser scans the parent container for a discarded value after
// every object or array it closes (json_sax_dom_callback_parser::end_object/end_array), so
// an array of N request objects cost O(N^2): 10^5 requests took 21 s, 10^6 more than a
// minute. Here every event is O(1) (a key check is O(log keys)), so parsing is linear.
// And copying a parsed value is recursive: a 10 MB file of nested brackets under
// /captured overflowed the stack in parse_batch, hence the depth bound while parsing.
class DomBuilder : public nlohmann::json_sax<json> {
 public:
  explicit DomBuilder(const std::string& source) : source_(source) {}
  json root;

  bool null() override { return add(json(nullptr)); }
  bool boolean(bool v) override { return add(json(v)); }
  bool number_integer(number_integer_t v) override { return add(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return add(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return add(json(v)); }
  bool string(string_t& v) override { return add(json(std::move(v))); }
  bool binary(binary_t& v) override { return add(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object(), true); }
  bool start_array(std::size_t) override { return open(json::array(), false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    if (f.ref->contains(k)) {
      f.key = std::move(k);
      throw invalid_input(pointer(stack_.size()), "duplicate key (each key may appear once)");
    }
    f.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (e.id == 406) {
      // a number beyond double's range (1e309): the value being parsed is the next element
      // of the innermost container
      std::string at;
      if (!stack_.empty()) {
        if (!stack_.back().object) ++stack_.back().index;
        at = pointer(stack_.size());
      }
      throw Error(kExitInvalidInput, at.empty() ? "/" : at, strip(e.what()) + " (not a finite number)");
    }
    throw Error(kExitInvalidInput, "", source_ + ": malformed JSON: " + strip(e.what()));
  }

 private:
  struct Frame {
    json* ref = nullptr;
    bool object = false;
    int64_t index = -1;  // arrays: the element last added
    std::string key;     // objects: the current key
  };
  static std::string strip(const std::string& what) {
    // nlohmann's message carries the line and column; strip its "[json.exception...] " prefix
    const auto p = what.find("] ");
    return p == std::string::npos ? what : what.substr(p + 2);
  }
  std::string pointer(size_t levels) const {
    std::string ptr;
    for (size_t i = 0; i < levels && i < stack_.size(); ++i)
      ptr = stack_[i].object ? child(ptr, stack_[i].key) : child(ptr, (size_t)stack_[i].index);
    return ptr;
  }
  json* place(json&& v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& f = stack_.back();
    if (f.object) {
      json& slot = (*f.ref)[f.key];
      slot = std::move(v);
      return &slot;
    }
    auto& arr = f.ref->get_ref<json::array_t&>();
    arr.push_back(std::move(v));
    ++f.index;
    return &arr.back();
  }
  bool add(json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(json&& v, bool object) {
    if (stack_.size() >= kMaxJsonDepth) {
      if (!stack_.empty() && !stack_.back().object) ++stack_.back().index;
      std::string at = pointer(8);
      if (stack_.size() > 8) at += "/...";
      throw Error(kExitInvalidInput, "", source_ + ": malformed JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (at " +
                                             (at.empty() ? "/" : at) + ")");
    }
    json* ref = place(std::move(v));
    stack_.push_back(Frame{ref, object, -1, {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  const std::string& source_;
  std::vector<Frame> stack_;
};

}  // namespace

json parse_json_document(const std::string& text, const std::string& source) {
  DomBuilder dom(source);
  json::sax_parse(text, &dom);
  return std::move(dom.root);
}


int64_t max_document_bytes() { return memory_budget() / kDomBytesPerTextByte; }

std::string read_regular_file(const std::string& path, int64_t max_bytes, const std::function<std::string(int64_t)>& too_large) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw Error(kExitInvalidInput, "", path + ": cannot be opened (" + std::strerror(errno) + ")");
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(kExitInvalidInput, "", path + ": cannot be read (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) throw Error(kExitInvalidInput, "", path + ": is a directory, not a file");
  if (!S_ISREG(st.st_mode))
    throw Error(kExitInvalidInput, "", path + ": is not a regular file (a FIFO, a device or a socket); mlactl reads only regular files");
  if ((int64_t)st.st_size > max_bytes) throw Error(kExitInvalidInput, "", path + ": " + too_large((int64_t)st.st_size));
  // regular: reads do not block; the size may still grow while reading, so stop past max_bytes
  std::string text;
  std::vector<char> buf(1 << 16);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(kExitInvalidInput, "", path + ": cannot be read (" + std::strerror(errno) + ")");
    if (n == 0) break;
    text.append(buf.data(), (size_t)n);
    if ((int64_t)text.size() > max_bytes) throw Error(kExitInvalidInput, "", path + ": " + too_large((int64_t)text.size()));
  }
  return text;
}

json load_json_document(const std::string& path) {
  // Bounded before read (docs/design.md §9): `validate /dev/zero` read without end; a FIFO
  // blocked (issue 39). The text and its DOM must fit the budget, so the file may be at most
  // budget / the DOM's measured bytes per text byte.
  {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw Error(kExitInvalidInput, "", path + ": cannot open batch file");
    if (std::filesystem::is_directory(path, ec)) throw Error(kExitInvalidInput, "", path + ": is a directory, not a batch file");
  }
  const int64_t limit = max_document_bytes();
  const std::string text = read_regular_file(path, limit, [&](int64_t) {
    return "the file is larger than " + format_bytes(limit) + ", the most a memory budget of " + format_bytes(memory_budget()) +
           " parses (its JSON tree takes about " + std::to_string(kDomBytesPerTextByte) +
           " bytes per byte of text; raise it with --max-memory if the machine has the memory)";
  });
  return parse_json_document(text, path);
}


void apply_set(json& doc, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(kExitUsage, "", "--set expects key.path=value, got \"" + assignment + "\"");
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  json value;
  try {
    value = json::parse(text);
  } catch (const json::parse_error&) {
    value = text;  // a bare word is a string: --set platform.arch=gfx942
  } catch (const json::out_of_range&) {
    // 1e999: a number no double holds (nlohmann's 406) is bad input naming its field, as a
    // batch file's would be (issue 39); it was an uncaught exception
    std::string pointer;
    for (char c : path) pointer += c == '.' ? '/' : c;
    throw invalid_input("/" + pointer, "is " + text + ", a number out of the range of a double (--set)");
  }
  // a rule set's name reads as a number (2026.08): platform.aiter takes names only
  if (path == "platform.aiter" && value.is_number()) value = text;
  json* cur = &doc;
  std::stringstream ss(path);
  std::string part;
  std::vector<std::string> parts;
  while (std::getline(ss, part, '.')) parts.push_back(part);
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& k = parts[i];
    if (k.empty()) throw Error(kExitUsage, "", "--set: empty path component in \"" + path + "\"");
    const bool last = i + 1 == parts.size();
    if (cur->is_array()) {
      char* end = nullptr;
      long idx = std::strtol(k.c_str(), &end, 10);
      if (*end != 0 || idx < 0 || (size_t)idx >= cur->size())
        throw Error(kExitUsage, "", "--set: \"" + k + "\" is not an index of the array at " + path);
      cur = &(*cur)[(size_t)idx];
    } else {
      if (cur->is_null()) *cur = json::object();
      if (!cur->is_object()) throw Error(kExitUsage, "", "--set: cannot descend into a non-object at \"" + k + "\" of " + path);
      cur = &(*cur)[k];
    }
    if (last) *cur = value;
  }
}

}  // namespace mlactl
