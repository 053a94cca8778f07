// The position probe's planning and verdicts (core/probe.hpp; docs/executor-protocol.md § The
// position probe): the blind spots of issue 37 item 4 at the unit level. The CLI tests with
// planted faults are in tests/cli/cases_executor.cmake.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <set>

#include "core/probe.hpp"
#include "core/semantics.hpp"
#include "tests/unit/numerics_helpers.hpp"

using namespace mlactl;
using mlactl::testing::BatchShape;
using mlactl::testing::make_batch;

namespace {

// An output as a kernel that reads exactly the oracle's windows gives it, in the code
// dimensions only (what evaluate_probe reads); `control_scale` multiplies the controls' logits
// (a kernel with the wrong softmax scale).
std::vector<float> ideal_output(const ProbeSpec& spec, int64_t rows, int H, int V, double control_scale = 1.0) {
  std::vector<float> out((size_t)(rows * H * V), 0.0f);
  for (const ProbeTarget& t : spec.targets) {
    float* o = out.data() + (size_t)((t.row * H + t.head) * V);
    if (t.edge == ProbeEdge::control) {
      const double l1 = spec.logit * control_scale, l2 = spec.logit2 * control_scale;
      const double s = std::exp(l1) + std::exp(l2) + double(t.window_len - 2);
      o[t.code] = float(spec.code_value * std::exp(l1) / s);
      o[t.code2] = float(spec.code_value * std::exp(l2) / s);
    } else {
      o[t.code] = t.inside ? spec.code_value : 0.0f;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("probe: every window edge and a control on both head groups", "[probe]") {
  BatchShape s;
  s.context_query = {{3000, 2}, {40, 2}};
  s.block_size = 16;
  s.spare_blocks = 1;
  const Batch b = make_batch(s);
  const auto rows = oracle_windows(b);
  const ProbeSpec spec = plan_probe(b, rows, nullptr);
  REQUIRE(spec.head_groups == 2);
  // (row, group) -> edge classes probed there
  std::map<std::pair<int64_t, int>, std::set<ProbeEdge>> seen;
  for (const ProbeTarget& t : spec.targets) seen[{t.row, t.head / 8}].insert(t.edge);
  for (const RowWindow& w : rows)
    for (int g = 0; g < 2; ++g) {
      const auto& e = seen[{w.row, g}];
      CHECK(e.count(ProbeEdge::last_allowed) == 1);
      CHECK(e.count(ProbeEdge::first_allowed) == 1);
      CHECK(e.count(ProbeEdge::control) == 1);
      // causal rows but a request's last have a first forbidden position; the last gets the slot past the end
      if (w.token == 0) CHECK(e.count(ProbeEdge::first_forbidden) == 1);
      else CHECK(e.size() >= 3);
    }
}

TEST_CASE("probe: the slot past a request's end is named as the placement has it", "[probe]") {
  BatchShape s;
  s.context_query = {{31, 1}, {19, 1}, {31, 1}};  // lengths 32, 20, 32 on pages of 16
  s.block_size = 16;
  s.spare_blocks = 1;
  s.shuffled = false;  // blocks 0-1, 2-3, 4-5, spare 6
  const Batch b = make_batch(s);
  const auto rows = oracle_windows(b);
  const ProbeSpec spec = plan_probe(b, rows, nullptr);
  std::map<int, std::pair<ProbeEdge, int64_t>> past;  // request -> (edge, slot)
  for (const ProbeTarget& t : spec.targets)
    if (t.edge == ProbeEdge::past_end_page_slot || t.edge == ProbeEdge::past_end_next_page || t.edge == ProbeEdge::past_end_other_key) {
      CHECK_FALSE(t.inside);
      past[t.request] = {t.edge, t.slot};
    }
  REQUIRE(past.size() == 3);
  CHECK(past[0] == std::make_pair(ProbeEdge::past_end_other_key, int64_t{32}));  // request 1's first key
  CHECK(past[1] == std::make_pair(ProbeEdge::past_end_page_slot, int64_t{52}));   // page 3, slot 4 of 16
  CHECK(past[2] == std::make_pair(ProbeEdge::past_end_next_page, int64_t{96}));   // the spare page
}

TEST_CASE("probe: controls first: a wrong scale is global and names no edge, a missed edge is named", "[probe]") {
  BatchShape s;
  s.context_query = {{200, 4}, {37, 4}};
  const Batch b = make_batch(s);
  const auto rows = oracle_windows(b);
  ProbeSpec spec = plan_probe(b, rows, nullptr);
  Inputs in = generate_inputs(b, rows);
  apply_probe_inputs(b, rows, spec, in);
  const int H = b.model.num_heads, V = b.model.kv_lora_rank;
  REQUIRE(spec.logit2 < spec.logit - 2);

  const ProbeReport clean = evaluate_probe(spec, ideal_output(spec, (int64_t)rows.size(), H, V), nullptr, H, V);
  CHECK(clean.ok);
  CHECK(clean.controls == 32);  // 8 rows x 2 head groups, each group's items twice over its 8 heads
  CHECK(clean.controls_off == 0);

  // 1/sqrt(576) instead of 1/sqrt(192): every control is off, no edge is listed
  const ProbeReport scale = evaluate_probe(spec, ideal_output(spec, (int64_t)rows.size(), H, V, std::sqrt(192.0 / 576.0)), nullptr, H, V);
  CHECK_FALSE(scale.ok);
  CHECK(scale.global_fault);
  CHECK(scale.controls_off == 32);
  CHECK(scale.findings == 0);
  CHECK(scale.listed.empty());

  // one head misses its last allowed position: that row and head, not a global fault
  std::vector<float> out = ideal_output(spec, (int64_t)rows.size(), H, V);
  const ProbeTarget* victim = nullptr;
  for (const ProbeTarget& t : spec.targets)
    if (t.row == 5 && t.edge == ProbeEdge::last_allowed && t.head >= 8) {
      victim = &t;
      break;
    }
  REQUIRE(victim);
  out[(size_t)((victim->row * H + victim->head) * V + victim->code)] = 0.0f;
  const ProbeReport missed = evaluate_probe(spec, out, nullptr, H, V);
  CHECK_FALSE(missed.global_fault);
  CHECK(missed.findings == 1);
  CHECK(missed.bad_row_ids == std::vector<int64_t>{5});
  CHECK(missed.bad_head_ids == std::vector<int64_t>{victim->head});
  REQUIRE(missed.listed.size() == 1);
  CHECK(missed.listed[0].kind == ProbeFindingKind::missed);
}
