#include "cli/external_executor.hpp"
#include "cli/interrupt.hpp"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "cli/npy.hpp"
#include "cli/output.hpp"
#include "core/dtype.hpp"
#include "core/pipeline.hpp"
#include "core/planners/row_plan.hpp"

namespace mlactl::cli {

namespace fs = std::filesystem;

namespace {

std::string encoding_name(DType d, Fp8Flavor f) {
  if (d == DType::fp8) return f == Fp8Flavor::e4m3fn ? "fp8_e4m3fn" : "fp8_e4m3fnuz";
  return to_string(d);
}
std::string storage_descr(DType d) { return d == DType::fp8 ? "|u1" : "<u2"; }

// One array entry of the manifest, written next to it.
nlohmann::ordered_json put_array(const std::string& dir, const std::string& name, const std::string& descr,
                                 const std::vector<int64_t>& shape, const void* data, size_t nbytes) {
  const std::string file = name + ".npy";
  write_npy(dir + "/" + file, descr, shape, data, nbytes);
  const int item = npy_item_size(descr);
  std::vector<int64_t> strides(shape.size());
  int64_t s = item;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return {{"file", file}, {"dtype", descr}, {"shape", shape}, {"strides", strides}};
}
nlohmann::ordered_json put_i32(const std::string& dir, const std::string& name, const std::vector<int32_t>& v,
                               std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {(int64_t)v.size()};
  return put_array(dir, name, "<i4", shape, v.data(), v.size() * 4);
}

// The last max_chars of the executor's log, read from the end: a gigabyte of stderr costs
// nothing (issue 39); only a regular file is read (mlactl created it, O_EXCL).
std::string tail_of(const std::string& path, size_t max_chars = 1500) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "";
  struct stat st {};
  std::string s;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const off_t want = (off_t)max_chars + 64;  // a little more, for the trailing blanks trimmed below
    const off_t from = st.st_size > want ? st.st_size - want : 0;
    s.resize((size_t)(st.st_size - from));
    const ssize_t n = ::pread(fd, s.data(), s.size(), from);
    s.resize(n > 0 ? (size_t)n : 0);
    if (from > 0) s = "..." + s;
  }
  ::close(fd);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.size() > max_chars) s = "..." + s.substr(s.size() - max_chars);
  return s;
}

std::string make_temp_root() {
  const char* t = std::getenv("TMPDIR");
  std::string templ = std::string(t && *t ? t : "/tmp") + "/mlactl-exec-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::runtime_error("cannot create a temporary directory under " + templ + ": " + std::strerror(errno));
  return buf.data();
}

struct ChildStatus {
  bool timed_out = false;
  bool spawn_failed = false;
  int exit_status = 0;
  int signal = 0;
  std::string spawn_error;
};

// /bin/sh -c 'CMD "$1"' mlactl-executor <case>: the command as the user typed it, the
// case directory as its last argument. Its own process group, so a timeout kills what it
// started too.
ChildStatus run_command(const std::string& command, const std::string& case_dir, const std::string& out_path,
                        const std::string& err_path, double timeout_s) {
  ChildStatus st;
  const std::string script = command + " \"$1\"";
  become_subreaper();  // what it starts stays findable after it exits (cli/interrupt.hpp)
  const pid_t pid = ::fork();
  if (pid < 0) {
    st.spawn_failed = true;
    st.spawn_error = std::string("fork failed: ") + std::strerror(errno);
    return st;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    const int in = ::open("/dev/null", O_RDONLY);
    // created new, never through a symlink someone left there (issue 39)
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
    if (in >= 0) ::dup2(in, 0);
    if (out >= 0) ::dup2(out, 1);
    if (err >= 0) ::dup2(err, 2);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), "mlactl-executor", case_dir.c_str(), (char*)nullptr);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  // SIGINT/SIGTERM end the group with mlactl (cli/interrupt.hpp; issue 39)
  const ProcessGroupGuard group(pid);
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (el > timeout_s) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      end_descendants();  // setsid'd ones too (issue 39)
      st.timed_out = true;
      return st;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(el < 1 ? 2 : 20));
  }
  ::kill(-pid, SIGKILL);  // whatever it left running in its group
  end_descendants();      // and outside it (setsid): every process it started ends with it (issue 39)
  if (WIFEXITED(status)) st.exit_status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) st.signal = WTERMSIG(status);
  return st;
}

}  // namespace

std::string ExternalExecutor::all_nan_error() const {
  std::string msg = "external executor `" + spec_.command +
                    "`: out.npy holds only NaN: the executor reads poisoned (unused) slots, or wrote nothing (mlactl's CPU executor writes finite values on the "
                    "same work list)";
  if (!stderr_tail_.empty()) msg += "; its stderr ends:\n" + stderr_tail_;
  return msg;
}

std::string ExternalExecutor::name() const { return reported_name_.empty() ? "external" : "external:" + reported_name_; }

ExecResult ExternalExecutor::run(const ExecArgs& a) {
  ExecResult res;
  const Batch& b = *case_.batch;
  const RoutePlan& plan = *case_.plan;
  const Inputs& in = *case_.inputs;
  const KernelView& v = a.view;
  const WorkList& wl = *a.work;
  const std::string who = "external executor `" + spec_.command + "`";
  wrote_lse_ = all_nan_ = false;
  unsupported_.reset();
  auto fail = [&](const std::string& msg) {
    res.ok = false;
    res.error = who + ": " + msg;
    return res;
  };

  std::string root;
  try {
    if (spec_.keep_dir.empty()) root = make_temp_root();
    else {
      fs::create_directories(spec_.keep_dir);
      root = spec_.keep_dir;
    }
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  const std::string dir = root + "/case";
  const std::string out_log = root + "/executor.stdout", err_log = root + "/executor.stderr";
  // A temporary root goes when the case ends; under --executor-keep DIR, what mlactl made
  // there (DIR/case and the two logs: never DIR, nor anything it did not make) stays,
  // unless a signal stopped the case (issue 39: an interrupted case is no record)
  struct Cleanup {
    std::string root, dir, out_log, err_log;
    bool keep;
    bool made = false;  // DIR/case and the logs are mlactl's (set after the checks below)
    ~Cleanup() {
      std::error_code ec;
      if (!keep) fs::remove_all(root, ec);
      else if (made && interrupt_count() > 0)
        for (const std::string* p : {&dir, &out_log, &err_log}) fs::remove_all(*p, ec);
    }
  } cleanup{root, dir, out_log, err_log, !spec_.keep_dir.empty()};
  TempPathGuard interrupted_cleanup(spec_.keep_dir.empty() ? root : std::string(), true);  // a signal removes it too (cli/interrupt.hpp)
  std::optional<TempPathGuard> kept_case, kept_out, kept_err;  // --executor-keep: registered once known to be mlactl's

  // ---- the case directory (docs/executor-protocol.md)
  // --executor-keep DIR: never delete or write into what mlactl did not create (issue 39).
  // A DIR/case an earlier mlactl case made (its marker file, a real folder) is replaced, as
  // are its regular log files; anything else there is refused.
  const std::string marker = dir + "/.mlactl-case";
  if (!spec_.keep_dir.empty()) {
    std::error_code ec;
    const auto st = fs::symlink_status(dir, ec);
    const bool exists = !ec && st.type() != fs::file_type::not_found;
    const bool ours = exists && st.type() == fs::file_type::directory && fs::symlink_status(marker, ec).type() == fs::file_type::regular;
    if (exists && !ours)
      return fail("--executor-keep: " + dir + " already exists and mlactl did not create it; it is not overwritten or deleted (remove it, or keep under another folder)");
    for (const std::string& log : {root + "/executor.stdout", root + "/executor.stderr"}) {
      const auto ls = fs::symlink_status(log, ec);
      if (ec || ls.type() == fs::file_type::not_found) continue;
      if (!ours || ls.type() != fs::file_type::regular)
        return fail("--executor-keep: " + log + " already exists and mlactl did not create it; it is not overwritten");
      fs::remove(log, ec);
    }
    // from here DIR/case and the logs are mlactl's (made below): a signal removes them
    cleanup.made = true;
    kept_case.emplace(dir, true);
    kept_out.emplace(out_log);
    kept_err.emplace(err_log);
  }
  try {
    std::error_code ec;
    fs::remove_all(dir, ec);  // a temporary root's, or an earlier case's (checked above)
    if (!fs::create_directory(dir)) throw std::runtime_error(dir + ": exists");
    std::ofstream(marker) << "made by mlactl --executor-keep; mlactl replaces this folder\n";
    nlohmann::ordered_json m;
    m["protocol"] = kExecutorProtocolVersion;
    m["tool"] = {{"name", "mlactl"}, {"version", MLACTL_VERSION}};
    m["case"] = b.name;
    m["stack"] = to_string(case_.routed->stack->id());
    m["route"] = to_string(plan.route);
    m["model"] = {{"num_heads", b.model.num_heads}, {"kv_lora_rank", b.model.kv_lora_rank}, {"qk_rope_head_dim", b.model.qk_rope_head_dim},
                  {"head_dim", in.head_dim}, {"v_dim", in.v_dim}, {"softmax_scale", b.model.softmax_scale},
                  {"out_dtype", to_string(b.model.dtype)}, {"causal", b.decode.causal}};
    m["view"] = {{"heads", v.heads}, {"fold_ratio", v.fold_ratio}, {"q_layout", to_string(v.q_layout)},
                 {"q_tokens_per_tile", v.q_tokens_per_tile}, {"causal", v.causal}, {"head_dim", v.head_dim}, {"v_dim", v.v_dim},
                 {"page_size", v.page_size}, {"q_dtype", to_string(v.q_dtype)}, {"kv_dtype", to_string(v.kv_dtype)}};
    // q exactly as the routed kernel takes it (padding, fold, flattened rows: core/layout.hpp)
    const int64_t q_elems = a.num_q_rows * v.heads * v.head_dim;
    auto qj = put_array(dir, "q", storage_descr(v.q_dtype), {a.num_q_rows, v.heads, v.head_dim}, a.q, size_t(q_elems * dtype_bytes(v.q_dtype)));
    qj["encoding"] = encoding_name(v.q_dtype, a.fp8_flavor);
    qj["scale"] = v.q_dtype == DType::fp8 ? a.q_scale : 1.0f;
    // the KV cache as vLLM allocates it for MLA: [num_blocks, block_size, head_dim], one latent row per slot
    const int64_t Kb = std::max(1, in.block_size);
    const int64_t nblocks = a.num_slots / Kb;
    const DType kvd = in.kv.dtype;
    auto kj = put_array(dir, "kv_cache", storage_descr(kvd), {nblocks, Kb, (int64_t)a.kv_row_stride}, a.kv,
                        size_t(a.num_slots * a.kv_row_stride * dtype_bytes(kvd)));
    kj["encoding"] = encoding_name(kvd, a.fp8_flavor);
    kj["scale"] = kvd == DType::fp8 ? a.kv_scale : 1.0f;
    kj["unused_slots"] = "NaN";
    m["inputs"] = {{"q", qj}, {"kv_cache", kj}};

    // mlactl's work list for this route (docs/design.md §4.3): what a contract executor runs
    nlohmann::ordered_json w;
    w["planner"] = wl.planner;
    w["num_workgroups"] = wl.num_workgroups;
    w["num_partial_rows"] = wl.num_partial_rows;
    w["kv_indices"] = put_i32(dir, "kv_indices", plan.kv_indices);
    w["work_indptr"] = put_i32(dir, "work_indptr", wl.work_indptr);
    std::vector<int32_t> info;
    for (const auto& wi : wl.work_info)
      for (int32_t x : wi.as_array()) info.push_back(x);
    w["work_info"] = put_i32(dir, "work_info", info, {(int64_t)wl.work_info.size(), 8});
    w["reduce_indptr"] = put_i32(dir, "reduce_indptr", wl.reduce_indptr);
    std::vector<int32_t> fm;
    for (const auto& p : wl.reduce_final_map) {
      fm.push_back(p[0]);
      fm.push_back(p[1]);
    }
    w["reduce_final_map"] = put_i32(dir, "reduce_final_map", fm, {(int64_t)wl.reduce_final_map.size(), 2});
    w["reduce_partial_map"] = put_i32(dir, "reduce_partial_map", wl.reduce_partial_map);
    m["worklist"] = w;

    // the routed stack's metadata, under the route's name: one entry per route kind, so a
    // second stack adds its own arrays beside these (docs/executor-protocol.md §metadata)
    const DecodeMetadata& md = case_.routed->metadata;
    nlohmann::ordered_json meta;
    meta["kind"] = to_string(plan.route);
    nlohmann::ordered_json arrays;
    auto add = [&](const char* name, const std::vector<int32_t>& x) {
      if (!x.empty()) arrays[name] = put_i32(dir, std::string("meta_") + name, x);
    };
    add("qo_indptr", md.qo_indptr);
    add("paged_kv_indptr", md.paged_kv_indptr);
    add("paged_kv_indices", md.paged_kv_indices);
    add("paged_kv_last_page_len", md.paged_kv_last_page_len);
    add("flat_indptr", md.flat_indptr);
    add("flat_indices", md.flat_indices);
    nlohmann::ordered_json values = {{"max_qo_len", md.max_qo_len}, {"uni_seqlen_qo", md.uni_seqlen},
                                     {"min_kv_seq_len", md.min_kv_seq_len_r1}, {"page_size", Kb}};
    if (v.q_layout == QLayout::flattened_rows || v.q_layout == QLayout::per_token_sparse) {
      // one kernel q row per (request, token): its request, token, length and block-table row
      const int64_t rows = a.num_q_rows;
      std::vector<int32_t> req(rows, -1), tok(rows, 0), pad(rows, 0), lens(rows, 0), bt((size_t)(rows * in.block_table_width), -1);
      int64_t max_len = 0;
      for (int64_t r = 0; r < rows && r < (int64_t)in.rows.size(); ++r) {
        req[r] = in.rows[r].request;
        tok[r] = (int32_t)in.rows[r].token;
        pad[r] = in.rows[r].padding ? 1 : 0;
        if (r + 1 < (int64_t)plan.row_indptr.size()) lens[r] = plan.row_indptr[r + 1] - plan.row_indptr[r];
        max_len = std::max<int64_t>(max_len, lens[r]);
        for (int64_t j = 0; j < in.block_table_width; ++j) {
          const int32_t blk = in.padded_block_table[(size_t)(req[r] * in.block_table_width + j)];
          bt[(size_t)(r * in.block_table_width + j)] = blk == kBlockTablePoison ? -1 : blk;
        }
      }
      arrays["row_request"] = put_i32(dir, "meta_row_request", req);
      arrays["row_token"] = put_i32(dir, "meta_row_token", tok);
      arrays["row_padding"] = put_i32(dir, "meta_row_padding", pad);
      arrays["row_indptr"] = put_i32(dir, "meta_row_indptr", plan.row_indptr);
      if (plan.route == Route::triton_mla) {
        // vLLM TRITON_MLA's decode_attention_fwd arguments (docs/stacks/vllm-rocm-aiter.md §V4):
        // req_to_token (the request's block table per flattened row), b_seq_len, page size, splits
        arrays["block_table"] = put_i32(dir, "meta_block_table", bt, {rows, in.block_table_width});
        arrays["seq_lens"] = put_i32(dir, "meta_seq_lens", lens);
        values["num_kv_splits"] = triton_num_kv_splits(max_len, b.platform.num_cu);
      }
    }
    if (plan.route == Route::flashmla && v.q_layout == QLayout::per_request) {
      // flash_mla_with_kvcache's arguments as the FLASHMLA backends pass them (docs/stacks/
      // vllm-cuda.md §C6, docs/stacks/sglang.md §S5): q [requests, s_q, heads, 576], the
      // request's block table of kv_cache pages, cache_seqlens; -1 past a request's blocks
      const int64_t R = (int64_t)md.seq_k.size(), W = in.block_table_width;
      std::vector<int32_t> bt((size_t)(R * W), -1), lens((size_t)R, 0), pads((size_t)R, 0);
      for (int64_t r = 0; r < R; ++r) {
        lens[(size_t)r] = (int32_t)md.seq_k[(size_t)r];
        pads[(size_t)r] = r < (int64_t)b.requests.size() && b.requests[(size_t)r].padding ? 1 : 0;
        for (int64_t j = 0; j < W && (size_t)(r * W + j) < in.padded_block_table.size(); ++j) {
          const int32_t blk = in.padded_block_table[(size_t)(r * W + j)];
          bt[(size_t)(r * W + j)] = blk == kBlockTablePoison ? -1 : blk;
        }
      }
      arrays["block_table"] = put_i32(dir, "meta_block_table", bt, {R, W});
      arrays["cache_seqlens"] = put_i32(dir, "meta_cache_seqlens", lens);
      arrays["request_padding"] = put_i32(dir, "meta_request_padding", pads);  // padding slots have no q rows
      values["s_q"] = plan.uniform_qlen;
    }
    // the stack's own arrays under their upstream names (vllm-cuda FlashMLA: num_sm_parts,
    // tile_scheduler_metadata, num_splits; core/stack_arrays.hpp): a stack that has them gets them
    for (const StackArray& sa : plan.stack_arrays) {
      if (sa.scalar && sa.values.size() == 1) {
        values[sa.name] = sa.values.front();
        continue;
      }
      std::vector<int64_t> shape = {(int64_t)sa.values.size()};
      if (sa.row_width > 0) shape = {(int64_t)sa.values.size() / sa.row_width, (int64_t)sa.row_width};
      arrays[sa.name] = put_array(dir, "meta_" + sa.name, "<i8", shape, sa.values.data(), size_t(shape[0] * (sa.row_width > 0 ? sa.row_width : 1)) * 8);
    }
    meta["arrays"] = arrays;
    meta["values"] = values;
    m["metadata"] = meta;
    // what the stack's kernel leaves in padding rows (core/pipeline.hpp PadRowContract): an
    // executor that runs mlactl's work list (no work covers them) writes them as the kernel would
    int64_t pad_rows = 0;
    for (const QueryRowInfo& r : in.rows) pad_rows += r.padding ? 1 : 0;
    m["padding_rows"] = {{"rows", pad_rows}, {"contract", to_string(pad_row_contract(case_.routed->stack->id(), plan.route))}};
    m["outputs"] = {{"out", {{"file", "out.npy"}, {"dtype", "<f4"}, {"shape", {a.num_q_rows, v.heads, v.v_dim}}, {"required", true}}},
                    {"lse", {{"file", "lse.npy"}, {"dtype", "<f4"}, {"shape", {a.num_q_rows, v.heads}}, {"required", false}}},
                    {"result", {{"file", "result.json"}, {"required", false}}}};
    if (spec_.bench)
      m["bench"] = {{"warmup", spec_.bench->warmup}, {"iters", spec_.bench->iters}, {"kv_copies", spec_.bench->kv_copies}};
    write_file_atomic(dir + "/manifest.json", json_text(m) + "\n");
  } catch (const std::exception& e) {
    return fail(std::string("cannot write the case directory ") + dir + ": " + e.what());
  }

  // ---- run it
  const auto t0 = std::chrono::steady_clock::now();
  const ChildStatus st = run_command(spec_.command, dir, out_log, err_log, spec_.timeout_s);
  res.stage1_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const std::string tail = tail_of(err_log);
  auto with_tail = [&](std::string msg) {
    if (!tail.empty()) msg += "; its stderr ends:\n" + tail;
    return msg;
  };
  if (st.spawn_failed) return fail(st.spawn_error);
  if (st.timed_out) return fail(with_tail("timed out after " + fmt_double(spec_.timeout_s) + " s (--executor-timeout) and was killed"));
  if (st.signal) return fail(with_tail("was killed by signal " + std::to_string(st.signal) + " (" + strsignal(st.signal) + ")"));
  // sh reports a child killed by signal N as status 128 + N
  if (st.exit_status > 128 && st.exit_status < 128 + 65)
    return fail(with_tail("was killed by signal " + std::to_string(st.exit_status - 128) + " (" + strsignal(st.exit_status - 128) +
                          "; exit status " + std::to_string(st.exit_status) + " from the shell)"));
  if (st.exit_status != 0) return fail(with_tail("exited with status " + std::to_string(st.exit_status)));

  // ---- result.json (optional): its name, or that it does not run this route
  const std::string result_path = dir + "/result.json";
  if (fs::exists(result_path)) {
    nlohmann::json r;
    std::string text;
    try {
      // a regular file of at most 1 MiB (issue 39: a FIFO there blocked, a huge one was read whole)
      text = read_regular_file(result_path, 1 << 20, [](int64_t n) { return "is " + std::to_string(n) + " bytes, over the 1 MiB a result.json may have"; });
    } catch (const std::exception& e) {
      return fail(with_tail(std::string("result.json cannot be used: ") + e.what()));
    }
    try {
      r = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
      return fail(with_tail("result.json is not valid JSON: " + std::string(e.what())));
    }
    if (!r.is_object()) return fail("result.json is not a JSON object");
    if (r.contains("executor") && r["executor"].is_string()) reported_name_ = r["executor"].get<std::string>();
    // "p_rounding": the executor's P·V takes P rounded once to this type (FlashMLA, vLLM's
    // Triton kernel); the comparison then allows that rounding's bound (core/compare.hpp)
    if (r.contains("p_rounding")) {
      const auto& pr = r["p_rounding"];
      if (pr == "bf16") p_rounding_ = DType::bf16;
      else if (pr == "fp16") p_rounding_ = DType::fp16;
      else if (!pr.is_null())
        return fail("result.json: p_rounding must be \"bf16\", \"fp16\" or null (P rounded once before P·V), got " + pr.dump());
    }
    if (r.contains("status") && r["status"] == "unsupported") {
      std::string why = r.contains("message") && r["message"].is_string() ? r["message"].get<std::string>() : "";
      unsupported_ = (reported_name_.empty() ? who : "executor '" + reported_name_ + "'") + " does not run route " +
                     to_string(plan.route) + (why.empty() ? "" : ": " + why);
      return res;
    }
    if (spec_.bench) {
      const auto& t = r.contains("timing_ms") ? r["timing_ms"] : nlohmann::json();
      if (!t.is_array() || (int)t.size() != spec_.bench->iters)
        return fail("result.json: timing_ms must be a list of the " + std::to_string(spec_.bench->iters) +
                    " timed calls' milliseconds (the manifest's bench section; docs/executor-protocol.md, Timing)");
      for (const auto& x : t) {
        if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() < 0)
          return fail("result.json: timing_ms holds " + x.dump() + ", not a duration in milliseconds");
        timing_ms_.push_back(x.get<float>());
      }
    }
  } else if (spec_.bench) {
    return fail(with_tail("wrote no result.json with timing_ms (the manifest asked for timings: docs/executor-protocol.md, Timing)"));
  }

  // ---- out.npy, lse.npy
  const int64_t rows = a.num_q_rows, H = v.heads, V = v.v_dim;
  auto read_f32 = [&](const std::string& file, const std::vector<int64_t>& shape, NpyArray& arr) -> std::string {
    const std::string path = dir + "/" + file;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    try {
      arr = read_npy(path, n * 8 + 4096);
    } catch (const std::exception& e) {
      return file + " " + e.what();
    }
    if (arr.descr != "<f4")
      return file + ": dtype '" + arr.descr + "', expected '<f4' (float32; the protocol takes float32 and rounds to " +
             to_string(b.model.dtype) + " itself)";
    if (arr.shape != shape) return file + ": shape " + npy_shape_string(arr.shape) + ", expected " + npy_shape_string(shape);
    return {};
  };
  NpyArray out;
  if (!fs::exists(dir + "/out.npy"))
    return fail(with_tail("wrote no out.npy (expected float32 " + npy_shape_string({rows, H, V}) + " in the case directory)"));
  if (std::string e = read_f32("out.npy", {rows, H, V}, out); !e.empty()) return fail(with_tail(e));
  const float* o = reinterpret_cast<const float*>(out.data.data());
  bool any_value = false;
  for (int64_t i = 0; i < rows * H * V && !any_value; ++i) any_value = !std::isnan(o[i]);
  all_nan_ = !any_value && rows * H * V > 0;
  if (all_nan_) stderr_tail_ = tail;
  for (int64_t i = 0; i < rows * H * V; ++i)
    a.out[i] = b.model.dtype == DType::fp16 ? float_to_fp16_bits(o[i]) : float_to_bf16_bits(o[i]);
  if (fs::exists(dir + "/lse.npy")) {
    NpyArray lse;
    if (std::string e = read_f32("lse.npy", {rows, H}, lse); !e.empty()) return fail(with_tail(e));
    std::memcpy(a.lse, lse.data.data(), size_t(rows * H) * 4);
    wrote_lse_ = true;
  }
  return res;
}

}  // namespace mlactl::cli
