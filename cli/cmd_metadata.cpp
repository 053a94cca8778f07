// `mlactl metadata`: what vLLM's R1 `_build_decode` builds for the batch.
#include <chrono>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "core/decode_metadata.hpp"
#include "core/stacks/registry.hpp"

namespace mlactl::cli {

// Member by member: paged_kv_indices has one entry per KV token of the batch (67M for
// 16,384 requests of 4096), written element by element, never as a DOM.
void write_metadata_members(JsonWriter& w, const DecodeMetadata& md, bool with_flatten) {
  const auto& hp = md.heads;
  w.field("builder", md.builder);
  w.field("num_requests", md.num_requests);
  w.field("max_qo_len", md.max_qo_len);
  w.field("uniform_padded_mtp_qo_len", md.uniform_pad);
  w.field("uni_seqlen_qo", md.uni_seqlen ? md.max_qo_len : -1);
  w.key("qo_indptr").int_array(md.qo_indptr);
  w.key("seq_lens").int_array(md.seq_k);
  w.key("paged_kv_indptr").int_array(md.paged_kv_indptr);
  w.key("paged_kv_indices").int_array(md.paged_kv_indices);
  w.key("paged_kv_last_page_len").int_array(md.paged_kv_last_page_len);
  w.key("min_kv_seq_len").begin_object().field("r1", md.min_kv_seq_len_r1).field("r0", md.min_kv_seq_len_r0).end_object();
  if (with_flatten) {
    w.key("r0_verify_flatten").begin_object();
    w.key("indptr").int_array(md.flat_indptr);
    w.key("indices").int_array(md.flat_indices);
    w.end_object();
  }
  w.key("head_padding").begin_object();
  w.field("num_heads", hp.num_heads).field("padded_heads", hp.padded_heads).field("method", hp.method);
  w.key("source").int_array(hp.source);
  w.key("unpad").int_array(hp.unpad);
  w.end_object();
  w.key("notes").value(nlohmann::ordered_json(md.notes));
  for (const auto& a : md.stack_arrays) w.key(a.name), write_stack_array(w, a);
}

nlohmann::ordered_json metadata_json(const Batch& b, const DecodeMetadata& md, bool with_flatten) {
  (void)b;
  return json_from_writer([&](JsonWriter& w) {
    w.begin_object();
    write_metadata_members(w, md, with_flatten);
    w.end_object();
  });
}

void setup_metadata(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<BatchOptions>();
  auto flatten = std::make_shared<std::string>("auto");
  auto* sub = app.add_subcommand("metadata", "print the decode metadata vLLM builds (index pointers, token slots, min_kv_seq_len, head padding)");
  add_batch_options(sub, *opts);
  sub->add_option("--flatten", *flatten, "R0 small-head verify flatten: auto (heads < 16 and q_len > 1), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  sub->callback([opts, flatten, &ctx]() {
    Batch b = load_batch(*opts);
    const auto t0 = std::chrono::steady_clock::now();
    const bool want_flatten = *flatten == "on" || (*flatten == "auto" && b.model.num_heads < 16 && b.max_query_len() > 1);
    DecodeMetadata md = stack_for(b).build_metadata(b, want_flatten);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ctx.global.verbose) *ctx.err << "metadata: built in " << fmt_double(ms, 3) << " ms\n";
    auto& os = *ctx.out;
    const auto& hp = md.heads;
    if (ctx.global.fmt() == Format::json) {
      JsonWriter w(os, json_compact());
      w.begin_object().members(json_envelope("metadata")).field("case", b.name);
      write_metadata_members(w, md, want_flatten);
      w.end_object().finish();
      return;
    }
    if (ctx.global.fmt() == Format::csv) {
      Table t;
      // one record per request: the per-request entries of the JSON's arrays (an indptr
      // as its [begin, end) pair), under the JSON's names
      t.header = {"request", "qo_indptr_begin", "qo_indptr_end", "seq_lens", "paged_kv_indptr_begin", "paged_kv_indptr_end", "paged_kv_last_page_len"};
      for (int64_t r = 0; r < md.num_requests; ++r)
        t.add({std::to_string(r), std::to_string(md.qo_indptr[r]), std::to_string(md.qo_indptr[r + 1]), std::to_string(md.seq_k[r]),
               std::to_string(md.paged_kv_indptr[r]), std::to_string(md.paged_kv_indptr[r + 1]), std::to_string(md.paged_kv_last_page_len[r])});
      t.print(os, Format::csv);
      return;
    }
    std::vector<std::pair<std::string, std::string>> kv = {
        {"case", b.name.empty() ? "(unnamed)" : terminal_safe(b.name)},
        {"builder", md.builder == "vllm R1 _build_decode" ? "vLLM R1 _build_decode (page size 1 for AITER; Kb = " + std::to_string(b.kv_cache.block_size) + ")"
                                                          : md.builder + " (Kb = " + std::to_string(b.kv_cache.block_size) + ")"},
        {"max_qo_len", std::to_string(md.max_qo_len) + (md.uniform_pad ? " (uniform-MTP padded)" : "")},
        {"uni_seqlen_qo", std::to_string(md.uni_seqlen ? md.max_qo_len : -1)},
        {"qo_indptr", join_ints(md.qo_indptr)},
        {"paged_kv_indptr", join_ints(md.paged_kv_indptr)},
        {"paged_kv_indices", join_ints(md.paged_kv_indices, 24)},
        {"paged_kv_last_page_len", join_ints(md.paged_kv_last_page_len)},
        {"min_kv_seq_len (R1)", std::to_string(md.min_kv_seq_len_r1) + "  (minimum per-request length, active requests)"},
        {"min_kv_seq_len (R0)", std::to_string(md.min_kv_seq_len_r0) + "  (minimum causal flatten row length)"},
        {"head padding", std::to_string(hp.num_heads) + " -> " + std::to_string(hp.padded_heads) + " (" + hp.method + ")"},
    };
    if (hp.padded_heads != hp.num_heads) {
      std::vector<int32_t> src(hp.source.begin(), hp.source.end());
      kv.push_back({"padded head sources", join_ints(src, 128)});
    }
    if (want_flatten) {
      kv.push_back({"R0 flatten indptr", join_ints(md.flat_indptr, 48)});
    }
    for (const auto& a : md.stack_arrays) {
      if (a.row_width > 0) continue;  // rows: printed below
      std::vector<int32_t> v(a.values.begin(), a.values.end());
      kv.push_back({a.name, a.scalar && v.size() == 1 ? std::to_string(v[0]) : join_ints(v, 48)});
    }
    for (const auto& n : md.notes) kv.push_back({"note", n});
    print_kv(os, kv);
    for (const auto& a : md.stack_arrays) {
      if (a.row_width <= 0) continue;
      os << "\n" << a.name << " (rows of " << a.row_width << "):\n";
      for (size_t i = 0; i + a.row_width <= a.values.size(); i += a.row_width) {
        std::vector<int32_t> row(a.values.begin() + i, a.values.begin() + i + a.row_width);
        os << "  " << i / a.row_width << ": " << join_ints(row) << "\n";
      }
    }
  });
}

}  // namespace mlactl::cli
