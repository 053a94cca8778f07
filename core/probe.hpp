// The black-box position probe (docs/design.md §5 "position probe"): inputs built so that
// a kernel reading one KV position outside a row's window, or skipping one inside it,
// moves that (row, head)'s output by ~1, far past any tolerance, at the edges where
// kernels go wrong. It needs nothing of the kernel but its output, so it checks
// external executors (docs/executor-protocol.md) the way the position audit checks
// mlactl's own work list, and on mlactl's executors it must agree with the audit.
//
// How: MLA shares one KV head, so q decides what each head looks at. Every probed KV
// position of a request gets its own code dimension k in [0, kProbeCodeDims) of the
// latent (value A there, 0 in every other code dimension; background positions are 0 in
// all of them); head h of a row gets q = B·e_k for the position it probes, 0 elsewhere.
// The probed position then has logit L = scale·A·B ≈ 24 and every other key of the
// request logit 0, so out[row, h, k] / A is ≈ 1 when the position is read and exactly 0
// when it is not (at 65,536 keys, 1 − w < 3e-6). Other dimensions keep seeded random
// values, so the numeric comparison still sees everything else.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/inputs.hpp"
#include "core/plan.hpp"
#include "core/semantics.hpp"

namespace mlactl {

enum class ProbeKind { windows };  // run --probe windows
const char* to_string(ProbeKind k);
std::optional<ProbeKind> probe_kind_from_string(const std::string& s);

// Which edge of a row's window a head probes, in the priority heads are given out.
enum class ProbeEdge {
  last_allowed,          // window end − 1 (causal: c + t; non-causal: s − 1)
  first_forbidden,       // window end, when the request has that position (causal rows but the last)
  first_allowed,         // window begin (0)
  split_first,           // first position of a split after the first (the plan's KV split points)
  split_last,            // last position before a split point
  page_first,            // first position of the last page the window touches
  page_last,             // last position of the page before it
  page_first_forbidden,  // first position of the next page past the window end, when it exists
  sparse_unselected,     // sparse rows: a position below the row's limit that is not in its index set
  // Past the request's KV (rows whose window ends at the request's end, where no
  // first_forbidden position exists): the slot right after the request's last slot, as a
  // kernel reading one entry too many reaches it through the block table (docs/executor-protocol.md
  // § The position probe). Which of the three it is depends on the placement:
  past_end_page_slot,    // the next slot of the request's last page (the page is not full)
  past_end_next_page,    // the first slot of the physically next page (the page is full), no request's KV
  past_end_other_key,    // the first slot of the physically next page, holding another request's key
  past_end_own_key,      // ... holding a key of the same request (shuffled placement): inside, so a
                         // read past the end shows as that key read twice (LSE + ln 2; needs lse.npy)
  // A control head: two interior positions away from every edge, logits L and L2 ≈ L − 3,
  // so its output (weights ≈ 0.95 / 0.05) and LSE depend on the softmax scale, the dtypes
  // and the layout but on no edge of the window: wrong controls mean a global numeric fault.
  control,
};
const char* to_string(ProbeEdge e);

constexpr int kProbeCodeDims = 448;  // latent dims [0, 448) carry codes; [448, 512) and the rope dims keep random values

struct ProbeTarget {
  int64_t row = 0;
  int request = 0;
  int64_t token = 0;
  int head = 0;
  int64_t position = 0;  // KV position of the request
  ProbeEdge edge = ProbeEdge::last_allowed;
  bool inside = true;    // in the row's oracle window: it must be read
  int code = 0;          // latent dimension that identifies the position
  int64_t window_len = 0;  // positions the row sees (oracle): sets the expected LSE
  int64_t slot = 0;        // the KV slot that carries the code (past-end edges: the slot past the request's end)
  // control heads (edge == control) only: the second interior position and its code (q = B2 there)
  int64_t position2 = 0;
  int code2 = 0;
};

struct ProbeSpec {
  std::vector<ProbeTarget> targets;  // one per (non-padding row, raw head)
  double logit = 0;                  // L of a probed position for its head (actual, after rounding)
  double logit2 = 0;                 // L2: a control head's second logit (L2 < L, about L − 3)
  float code_value = 1;              // A: the decoded KV value in a code dimension
  int64_t edges_not_probed = 0;      // edges left out: more edges than heads, or > kProbeCodeDims positions in a request
  int head_groups = 1;               // heads are split in this many groups (halves); each gets the window's edges
};

// How heads are grouped for the edge assignment: halves [0, H/2), [H/2, H) (one group for
// one head). A fault confined to some heads (one tile of a kernel) lands on a group, and every
// window edge is probed in each group, the interior edges alternating between groups row by row.
int probe_head_groups(int num_heads);

// The targets of every non-padding row. `plan` (optional) supplies the split points: the
// positions where a work of the row starts other than its first; with a head→batch fold the
// split points are not mapped and only window and page edges are probed.
ProbeSpec plan_probe(const Batch& b, const std::vector<RowWindow>& rows, const RoutePlan* plan);
// Rewrites q and the used KV slots of `in` (generated by generate_inputs) as described above.
void apply_probe_inputs(const Batch& b, const std::vector<RowWindow>& rows, ProbeSpec& spec, Inputs& in);

enum class ProbeFindingKind {
  read,        // outside the window, read
  missed,      // inside the window, not read
  read_twice,  // inside, read, but the LSE is ≈ ln 2 too high: the position was summed twice
  lse_off,     // the output says the edge is right, the LSE disagrees with the window's length
  control_off, // a control head's weights or LSE are wrong (on few heads: listed as a finding)
};
const char* to_string(ProbeFindingKind k);
struct ProbeFinding {
  ProbeTarget target;
  ProbeFindingKind kind = ProbeFindingKind::read;
  double weight = 0;      // out[row, head, code] / A: ≈ 1 read, ≈ 0 not read (NaN: poison read)
  double lse_diff = 0;    // LSE − expected (0 when no LSE was given)
};
struct ProbeReport {
  bool ok = true;
  int64_t rows_probed = 0, heads_probed = 0, edges_not_probed = 0;
  int64_t findings = 0, bad_rows = 0;
  std::vector<ProbeFinding> listed;  // first max_listed
  std::vector<int64_t> bad_row_ids;  // every oracle row with a finding, ascending
  std::vector<int64_t> bad_head_ids; // every head with a finding, ascending
  // Control heads, checked first: read (not exactly 0, not NaN: those are position evidence)
  // but with weights or LSE off. When at least half of them are off the fault is global
  // (the softmax scale, a dtype, the layout, an ignored fp8 scale): no edge is named, the
  // findings stay empty and `global_fault` says why.
  int64_t controls = 0, controls_off = 0;
  std::vector<int64_t> control_off_heads;  // heads of the off controls, ascending
  bool global_fault = false;
};
// out: user layout [rows, heads, v_dim] (cli's unlayout), as compared with the reference;
// lse [rows, heads] or nullptr (an external executor may not give one). The expected LSE of
// a probe head is exact: ln(e^L + n − 1) when its position is inside a window of n
// positions (every other key has logit 0), ln(n) when outside; a control's is
// ln(e^L + e^L2 + n − 2) and its weights e^L / that sum and e^L2 / that sum.
ProbeReport evaluate_probe(const ProbeSpec& spec, const std::vector<float>& out, const float* lse, int num_heads, int v_dim,
                           int64_t max_listed = 20);

}  // namespace mlactl
