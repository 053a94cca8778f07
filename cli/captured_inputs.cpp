#include "cli/captured_inputs.hpp"

#include <algorithm>
#include <filesystem>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "cli/npy.hpp"
#include "cli/output.hpp"
#include "core/budget.hpp"
#include "core/dtype.hpp"

namespace mlactl::cli {

namespace {

// the encoding names of docs/executor-protocol.md
std::string encoding_of(const EncodedTensor& t) {
  if (t.dtype != DType::fp8) return to_string(t.dtype);
  return std::string("fp8_") + to_string(t.fp8_flavor);
}
const char* descr_of(const EncodedTensor& t) { return t.dtype == DType::fp8 ? "|u1" : "<u2"; }

struct TensorEntry {
  std::string file, encoding;
  double scale = 1.0;
  std::string block_ids;
};

TensorEntry entry(const nlohmann::json& j, const std::string& name, const std::string& where, bool with_ids) {
  if (!j.contains(name) || !j[name].is_object()) throw invalid_input(where + "/" + name, "missing (an object with file, encoding, scale)");
  const auto& o = j[name];
  TensorEntry e;
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string k = it.key(), p = where + "/" + name + "/" + k;
    if (k == "file" || k == "encoding" || (with_ids && k == "block_ids")) {
      if (!it->is_string() || it->get<std::string>().empty()) throw invalid_input(p, "must be a non-empty string");
      (k == "file" ? e.file : k == "encoding" ? e.encoding : e.block_ids) = it->get<std::string>();
    } else if (k == "scale") {
      // the kernels and the reference take it as fp32: 1e39 became inf, and an all-NaN
      // reference was blamed on the executor (issue 39)
      if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() <= 0 ||
          it->get<double>() > (double)std::numeric_limits<float>::max() || it->get<double>() < (double)std::numeric_limits<float>::min())
        throw invalid_input(p, "must be a number > 0 that fp32 holds (1.2e-38 to 3.4e38)");
      e.scale = it->get<double>();
    } else {
      throw invalid_input(p, "unknown field");
    }
  }
  if (e.file.empty()) throw invalid_input(where + "/" + name + "/file", "missing");
  if (e.encoding.empty()) throw invalid_input(where + "/" + name + "/encoding", "missing");
  if (with_ids && e.block_ids.empty()) throw invalid_input(where + "/" + name + "/block_ids", "missing");
  // names stay inside DIR: a capture directory is a bug report, maybe a hostile one
  for (const std::string* f : {&e.file, &e.block_ids})
    if (f->find('/') != std::string::npos || *f == "." || *f == "..")
      throw invalid_input(where + "/" + name, "\"" + *f + "\" is not a file name inside the inputs folder");
  return e;
}

// `max_data_bytes`: what the batch's shape for the array holds; the file may add a header
// (≤ 64 KiB: numpy writes 128 bytes). Checked by size before it is read, within the budget
// (issue 39: each array could be as large as the whole budget).
NpyArray read_array(const std::string& dir, const std::string& file, int64_t max_data_bytes) {
  const std::string path = dir + "/" + file;
  try {
    return read_npy(path, std::min(memory_budget(), max_data_bytes + (int64_t(64) << 10)));
  } catch (const NpyError& e) {
    throw invalid_input(path, e.what());
  } catch (const std::runtime_error& e) {
    throw invalid_input(path, e.what());
  }
}

void require_shape(const NpyArray& a, const std::string& path, const std::string& descr, const std::vector<int64_t>& want, const std::string& what) {
  if (a.descr != descr) throw invalid_input(path, "dtype " + a.descr + ", this batch's " + what + " is " + descr);
  if (a.shape != want) throw invalid_input(path, "shape " + npy_shape_string(a.shape) + ", this batch needs " + npy_shape_string(want) + " (" + what + ")");
}

}  // namespace

Inputs load_captured_inputs(const std::string& dir, const Batch& b, const std::vector<RowWindow>& rows) {
  Inputs in = allocate_inputs(b, rows);
  const std::string manifest = dir + "/inputs.json";
  {
    std::error_code ec;
    if (!std::filesystem::exists(manifest, ec))
      throw invalid_input(manifest, "cannot be read (run --inputs DIR wants DIR/inputs.json, written by scripts/capture_vllm_batch.py)");
  }
  // a regular file, its size checked before it is read (issue 39)
  const std::string text = read_regular_file(manifest, 1 << 20, [](int64_t) { return std::string("is over 1 MiB: not an inputs manifest"); });
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw invalid_input(manifest, std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw invalid_input(manifest, "must be an object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "protocol" && it.key() != "q" && it.key() != "kv_blocks") throw invalid_input(manifest + ": /" + it.key(), "unknown field");
  if (!j.contains("protocol") || j["protocol"] != 1) throw invalid_input(manifest + ": /protocol", "must be 1");
  const TensorEntry qe = entry(j, "q", manifest + ": ", false), ke = entry(j, "kv_blocks", manifest + ": ", true);

  // q: the batch's rows (padding rows included), raw heads, the q row width
  if (qe.encoding != encoding_of(in.q))
    throw invalid_input(manifest + ": /q/encoding", "\"" + qe.encoding + "\", this batch's q is " + encoding_of(in.q));
  if (in.q.dtype != DType::fp8 && qe.scale != 1.0) throw invalid_input(manifest + ": /q/scale", "must be 1 for a " + qe.encoding + " q");
  const NpyArray q = read_array(dir, qe.file, (int64_t)in.q.bytes.size());
  require_shape(q, dir + "/" + qe.file, descr_of(in.q), {in.num_rows, in.num_heads, in.head_dim}, "q [rows, heads, head_dim]");
  if (q.data.size() != in.q.bytes.size()) throw invalid_input(dir + "/" + qe.file, "holds " + std::to_string(q.data.size()) + " bytes, q needs " + std::to_string(in.q.bytes.size()));

  // KV: the batch's scale is the one the stack passes; a capture that disagrees is wrong
  if (ke.encoding != encoding_of(in.kv))
    throw invalid_input(manifest + ": /kv_blocks/encoding", "\"" + ke.encoding + "\", this batch's KV cache is " + encoding_of(in.kv));
  if (std::fabs(ke.scale - double(in.kv.scale)) > 1e-7 * std::fabs(double(in.kv.scale)))
    throw invalid_input(manifest + ": /kv_blocks/scale", "is " + fmt_double(ke.scale, 9) + ", the batch's kv_cache.scale is " + fmt_double(in.kv.scale, 9));  // 1e-05, not 0.000010
  const NpyArray ids = read_array(dir, ke.block_ids, b.kv_cache.num_blocks * 8);  // each block at most once, <i8
  if ((ids.descr != "<i4" && ids.descr != "<i8") || ids.shape.size() != 1)
    throw invalid_input(dir + "/" + ke.block_ids, "must be a 1-D <i4 or <i8 array of block ids, got " + ids.descr + " " + npy_shape_string(ids.shape));
  const int64_t n = ids.shape[0];
  std::unordered_map<int64_t, int64_t> index_of;
  const int64_t num_blocks = b.kv_cache.num_blocks;
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = 0;
    if (ids.descr == "<i4") {
      int32_t v;
      std::memcpy(&v, ids.data.data() + 4 * i, 4);
      id = v;
    } else {
      std::memcpy(&id, ids.data.data() + 8 * i, 8);
    }
    const std::string p = dir + "/" + ke.block_ids + "[" + std::to_string(i) + "]";
    if (id < 0 || id >= num_blocks) throw invalid_input(p, "block id " + std::to_string(id) + " is outside the cache's " + std::to_string(num_blocks) + " blocks");
    if (!index_of.emplace(id, i).second) throw invalid_input(p, "block id " + std::to_string(id) + " appears twice");
  }

  // the ids are distinct block ids of the cache, so the blocks' size is bounded by the cache's
  const NpyArray kv = read_array(dir, ke.file, n * in.block_size * in.head_dim * dtype_bytes(in.kv.dtype));
  require_shape(kv, dir + "/" + ke.file, descr_of(in.kv), {n, in.block_size, in.head_dim}, "KV blocks [blocks, block_size, head_dim]");
  std::memcpy(in.q.bytes.data(), q.data.data(), q.data.size());
  in.q.scale = float(qe.scale);
  place_kv_blocks(b, index_of, kv.data.data(), dir + "/" + ke.block_ids, in);
  return in;
}

}  // namespace mlactl::cli
