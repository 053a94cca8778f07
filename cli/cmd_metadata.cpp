// `mlactl metadata`: what vLLM's R1 `_build_decode` builds for the batch.
#include <chrono>

#include "cli/app.hpp"
#include "cli/common.hpp"
#include "core/decode_metadata.hpp"
#include "core/routed.hpp"
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

namespace {
// The route, for the head-padding line only: a batch the router cannot take still
// prints its metadata (the line then names the builder's map alone).
RouteDecision routed_decision(const Batch& b) {
  try {
    return route_batch(b).decision;
  } catch (const Error&) {
    RouteDecision rd;
    rd.route = Route::refused;
    return rd;
  }
}
}  // namespace

// The CSV carries every field of the JSON (docs/design.md §6): the arrays have different
// lengths (per request, per KV token, per query row, per head), so one record per value,
// `field,index,value`, under the JSON's names (a nested member as `object.member`, a
// row of a stack's table as `name[row]`; a scalar's index empty). Written as it is
// walked, as the JSON is.
void write_metadata_csv(std::ostream& os, const Batch& b, const DecodeMetadata& md, bool with_flatten) {
  std::string text;
  auto quoted = [](const std::string& v) {
    if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
    std::string q = "\"";
    for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  auto flush = [&]() {
    os << text;
    text.clear();
  };
  auto scalar = [&](const std::string& field, const std::string& value) { text += field + ",," + quoted(value) + "\n"; };
  auto array = [&](const std::string& field, const auto& values) {
    for (size_t i = 0; i < values.size(); ++i) {
      text += field + "," + std::to_string(i) + "," + std::to_string(values[i]) + "\n";
      if (text.size() > (1 << 16)) flush();
    }
  };
  const auto& hp = md.heads;
  text += "field,index,value\n";
  scalar("case", b.name);
  scalar("builder", md.builder);
  scalar("num_requests", std::to_string(md.num_requests));
  scalar("max_qo_len", std::to_string(md.max_qo_len));
  scalar("uniform_padded_mtp_qo_len", std::to_string(md.uniform_pad));
  scalar("uni_seqlen_qo", std::to_string(md.uni_seqlen ? md.max_qo_len : -1));
  array("qo_indptr", md.qo_indptr);
  array("seq_lens", md.seq_k);
  array("paged_kv_indptr", md.paged_kv_indptr);
  array("paged_kv_indices", md.paged_kv_indices);
  array("paged_kv_last_page_len", md.paged_kv_last_page_len);
  scalar("min_kv_seq_len.r1", std::to_string(md.min_kv_seq_len_r1));
  scalar("min_kv_seq_len.r0", std::to_string(md.min_kv_seq_len_r0));
  if (with_flatten) {
    array("r0_verify_flatten.indptr", md.flat_indptr);
    array("r0_verify_flatten.indices", md.flat_indices);
  }
  scalar("head_padding.num_heads", std::to_string(hp.num_heads));
  scalar("head_padding.padded_heads", std::to_string(hp.padded_heads));
  scalar("head_padding.method", hp.method);
  array("head_padding.source", hp.source);
  array("head_padding.unpad", hp.unpad);
  for (size_t i = 0; i < md.notes.size(); ++i) text += "notes," + std::to_string(i) + "," + quoted(md.notes[i]) + "\n";
  for (const auto& a : md.stack_arrays) {
    if (a.scalar && a.values.size() == 1) scalar(a.name, std::to_string(a.values.front()));
    else if (a.row_width <= 0) array(a.name, a.values);
    else
      for (size_t r = 0; (r + 1) * a.row_width <= a.values.size(); ++r)
        array(a.name + "[" + std::to_string(r) + "]",
              std::vector<int64_t>(a.values.begin() + (std::ptrdiff_t)(r * a.row_width), a.values.begin() + (std::ptrdiff_t)((r + 1) * a.row_width)));
  }
  flush();
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
      write_metadata_csv(os, b, md, want_flatten);
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
        {"head padding", head_padding_text(hp, routed_decision(b))},  // worded as `route` words it
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
