// Issue #35 item 3, "say which kernel ran", on the CLI side: the record of what ran
// (cli/kernel_ran.hpp) as `run` prints it (text and JSON), as `check` carries it (its
// JSON members, JUnit properties, the record across a --timeout child's pipe), as
// `mlactl schema` describes it, and `check`'s expect.stage1 (cli/expect_stage1.hpp).
// GPU results are fabricated: a hand-made ExecResult with stage1 and reduce filled in,
// as the GPU executor's launch sites fill them.
#include <catch2/catch.hpp>

#include <sstream>

#include "cli/expect_stage1.hpp"
#include "cli/kernel_ran.hpp"
#include "cli/output_schema.hpp"
#include "cli/pipeline.hpp"

using namespace mlactl;
using namespace mlactl::cli;
using ojson = nlohmann::ordered_json;

namespace {

// What the row-major wgmma launch and the few-splits reduce would report.
ExecResult fake_gpu_result() {
  ExecResult r;
  mla::Stage1Ran s;
  s.kernel = mla::Stage1Kernel::wgmma;
  s.schedule = mla::Stage1Schedule::wgmma_rows;
  s.precision = mla::Stage1Precision::p_split;
  s.instance = "wgmma_rows<bf16, 576, p-split>";
  s.grid_blocks = 264;
  s.block_threads = 384;
  s.smem_bytes = 231456;
  r.stage1 = s;
  mla::ReduceRan d;
  d.kind = mla::ReduceKind::few_splits;
  d.instance = "mla_reduce_few_kernel<4>";
  d.grid_blocks = 12;
  d.block_threads = 256;
  r.reduce = d;
  return r;
}

// A passed run as run_pipeline leaves it, executed by `kind` with result `r`.
RunOutcome outcome(ExecutorKind kind, const std::string& executor, const ExecResult& r) {
  RunOutcome o;
  o.status = RunStatus::passed;
  o.executor = executor;
  o.ran = kernel_ran(kind, r);
  return o;
}

std::string printed(const RunOutcome& o) {
  Batch b;
  b.name = "fake";
  std::ostringstream os;
  print_outcome(os, b, o, /*color=*/false, /*verbose=*/0);
  return os.str();
}

std::string invalid_message(const nlohmann::json& want) {
  try {
    validate_stage1_expectation(want, "/expect/stage1");
  } catch (const Error& e) {
    CHECK(e.exit_code() == kExitInvalidInput);
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("kernel ran: run's report names the GPU executor's stage-1 kernel and reduce", "[kernel_ran]") {
  const std::string text = printed(outcome(ExecutorKind::gpu, "gpu:Fake H100", fake_gpu_result()));
  CHECK_THAT(text, Catch::Contains("executor: gpu:Fake H100\n"
                                   "stage 1:  wgmma rows-64 p-split  wgmma_rows<bf16, 576, p-split>  grid 264 x 384 threads, 231456 B shared\n"
                                   "reduce:   few-splits mla_reduce_few_kernel<4>  grid 12 x 256 threads\n"));
  // no split tile: no reduce launch
  ExecResult r = fake_gpu_result();
  r.reduce = mla::ReduceRan{};
  CHECK_THAT(printed(outcome(ExecutorKind::gpu, "gpu:Fake H100", r)), Catch::Contains("\nreduce:   none (no split tiles)\n"));
  // a GPU executor that reported nothing (a run that failed before its launch) says so
  CHECK_THAT(printed(outcome(ExecutorKind::gpu, "gpu:Fake H100", ExecResult{})),
             Catch::Contains("\nstage 1:  none reported by the GPU executor\nreduce:   none reported by the GPU executor\n"));
}

TEST_CASE("kernel ran: the CPU and external executors report no kernel, and run's report says so", "[kernel_ran]") {
  // even a result that carried launches: only the GPU executor's are kept
  const RunOutcome cpu = outcome(ExecutorKind::cpu, "cpu", fake_gpu_result());
  CHECK(!cpu.ran.stage1);
  CHECK(!cpu.ran.reduce);
  const std::string text = printed(cpu);
  CHECK_THAT(text, Catch::Contains("executor: cpu\nstage 1:  cpu executor (fp32 contract)\n"));
  CHECK_THAT(text, !Catch::Contains("reduce:"));
  CHECK_THAT(printed(outcome(ExecutorKind::external, "external:mykernel", ExecResult{})),
             Catch::Contains("executor: external:mykernel\nstage 1:  external executor (--executor; it reports no kernel)\n"));
  // no executor made (refused, skipped): no line
  RunOutcome none;
  none.status = RunStatus::refused;
  CHECK_THAT(printed(none), !Catch::Contains("stage 1"));
  CHECK(kernel_ran_lines(KernelRan{}).empty());
}

TEST_CASE("kernel ran: run's JSON has stage1 and reduce objects beside executor, null for the CPU executor", "[kernel_ran]") {
  const ojson j = outcome_json(outcome(ExecutorKind::gpu, "gpu:Fake H100", fake_gpu_result()));
  CHECK(j.at("stage1") == ojson::parse(R"({"kernel": "wgmma", "schedule": "rows-64", "precision": "p-split",
      "instance": "wgmma_rows<bf16, 576, p-split>", "grid_blocks": 264, "block_threads": 384, "smem_bytes": 231456})"));
  CHECK(j.at("reduce") == ojson::parse(R"({"kind": "few-splits", "instance": "mla_reduce_few_kernel<4>", "grid_blocks": 12, "block_threads": 256})"));
  // in that order, right after "executor"
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  const auto at = std::find(keys.begin(), keys.end(), "executor");
  REQUIRE(keys.end() - at >= 3);
  CHECK(at[1] == "stage1");
  CHECK(at[2] == "reduce");

  const ojson c = outcome_json(outcome(ExecutorKind::cpu, "cpu", ExecResult{}));
  CHECK(c.at("executor") == "cpu");
  CHECK(c.at("stage1").is_null());
  CHECK(c.at("reduce").is_null());
  // no executor: no "executor", no "stage1", no "reduce"
  const ojson n = outcome_json(RunOutcome{});
  CHECK(!n.contains("executor"));
  CHECK(!n.contains("stage1"));
  CHECK(!n.contains("reduce"));
}

TEST_CASE("kernel ran: the members printed are the schema's stage1_ran and reduce_ran", "[kernel_ran]") {
  const std::optional<ojson> schema = output_json_schema("run");
  REQUIRE(schema);
  const ojson& defs = schema->at("$defs");
  const KernelRan k = kernel_ran(ExecutorKind::gpu, fake_gpu_result());
  auto members_match = [](const ojson& def, const ojson& inst) {
    const ojson& props = def.at("properties");
    CHECK(props.size() == inst.size());
    for (auto it = inst.begin(); it != inst.end(); ++it) {
      INFO(it.key());
      REQUIRE(props.contains(it.key()));
      if (props[it.key()].contains("enum")) {
        const auto& e = props[it.key()]["enum"];
        CHECK(std::find(e.begin(), e.end(), it.value()) != e.end());
      }
    }
    CHECK(def.at("required").size() == inst.size());
  };
  members_match(defs.at("stage1_ran"), stage1_json(*k.stage1));
  members_match(defs.at("reduce_ran"), reduce_json(*k.reduce));
  // never "automatic": a kernel that ran is a family
  const auto& kernels = defs.at("stage1_ran").at("properties").at("kernel").at("enum");
  CHECK(std::find(kernels.begin(), kernels.end(), "automatic") == kernels.end());
  // check's case records carry the same members, optional
  const ojson& cc = defs.at("check_case");
  for (const char* m : {"executor", "stage1", "reduce", "not_checked"}) CHECK(cc.at("properties").contains(m));
  const auto& req = cc.at("required");
  CHECK(std::find(req.begin(), req.end(), "stage1") == req.end());
  CHECK(std::find(req.begin(), req.end(), "not_checked") != req.end());
}

TEST_CASE("kernel ran: the record survives check's child pipe, and JUnit gets it as properties", "[kernel_ran]") {
  for (const KernelRan& k : {kernel_ran(ExecutorKind::gpu, fake_gpu_result()), kernel_ran(ExecutorKind::cpu, ExecResult{}),
                             kernel_ran(ExecutorKind::external, ExecResult{}), KernelRan{}}) {
    const KernelRan back = kernel_ran_from_json(nlohmann::json::parse(kernel_ran_json(k).dump()));
    CHECK(back.executor == k.executor);
    CHECK(kernel_ran_json(back) == kernel_ran_json(k));
  }
  ojson bad = kernel_ran_json(kernel_ran(ExecutorKind::gpu, fake_gpu_result()));
  bad["stage1"]["schedule"] = "rows-65";
  CHECK_THROWS_WITH(kernel_ran_from_json(nlohmann::json::parse(bad.dump())), "unknown stage-1 schedule \"rows-65\"");

  using P = std::vector<std::pair<std::string, std::string>>;
  CHECK(kernel_ran_properties(kernel_ran(ExecutorKind::gpu, fake_gpu_result())) ==
        P{{"stage1.kernel", "wgmma"},
          {"stage1.schedule", "rows-64"},
          {"stage1.precision", "p-split"},
          {"stage1.instance", "wgmma_rows<bf16, 576, p-split>"},
          {"stage1.grid_blocks", "264"},
          {"stage1.block_threads", "384"},
          {"stage1.smem_bytes", "231456"},
          {"reduce.kind", "few-splits"},
          {"reduce.instance", "mla_reduce_few_kernel<4>"},
          {"reduce.grid_blocks", "12"},
          {"reduce.block_threads", "256"}});
  CHECK(kernel_ran_properties(kernel_ran(ExecutorKind::cpu, ExecResult{})).empty());
  CHECK(stage1_label(*kernel_ran(ExecutorKind::gpu, fake_gpu_result()).stage1) == "wgmma rows-64 p-split");
}

TEST_CASE("expect.stage1: bad values are errors naming the field", "[kernel_ran][expect]") {
  using nlohmann::json;
  CHECK(invalid_message(json::parse(R"({"kernel": "wgmm"})")) ==
        "/expect/stage1/kernel: unknown kernel \"wgmm\": must be one of wgmma, mma, cuda_core");
  CHECK(invalid_message(json::parse(R"({"kernel": "automatic"})")) ==
        "/expect/stage1/kernel: unknown kernel \"automatic\": must be one of wgmma, mma, cuda_core (automatic is what a caller asks, "
        "never what ran)");
  CHECK(invalid_message(json::parse(R"({"kernel": "wgmma", "schedule": "rows64"})")) ==
        "/expect/stage1/schedule: unknown schedule \"rows64\": must be one of rows-64, transposed-64, mma-m16, cuda-core");
  CHECK(invalid_message(json::parse(R"({"precision": "p_split"})")) ==
        "/expect/stage1/precision: unknown precision \"p_split\": must be one of fp32, p-split, p-once, qk-e4m3, qk-e4m3+pv-e4m3, "
        "k-registers, k-registers+pv-e4m3");
  CHECK(invalid_message(json::parse(R"({"precision": 1})")) == "/expect/stage1/precision: must be a string, got number");
  CHECK(invalid_message(json::parse(R"({"kernal": "wgmma"})")) ==
        "/expect/stage1/kernal: unknown key (expect.stage1 takes kernel, schedule, precision)");
  CHECK(invalid_message(json::parse(R"({})")) == "/expect/stage1: names no field: give any of kernel, schedule, precision");
  CHECK(invalid_message(json::parse(R"("wgmma")")) ==
        "/expect/stage1: must be an object with any of kernel, schedule, precision, got string");
  // every name the launch sites report is accepted, any subset of the fields
  CHECK(invalid_message(json::parse(R"({"kernel": "cuda_core", "schedule": "cuda-core", "precision": "fp32"})")) == "(accepted)");
  CHECK(invalid_message(json::parse(R"({"precision": "k-registers+pv-e4m3"})")) == "(accepted)");
  CHECK(stage1_expect_values("schedule").size() == std::size(mla::kStage1ScheduleNames));
  CHECK(stage1_expect_values("precision").size() == std::size(mla::kStage1PrecisionNames));
}

TEST_CASE("expect.stage1: matched, mismatched (naming field, expected and actual), not checked without a GPU kernel", "[kernel_ran][expect]") {
  using V = Stage1ExpectResult::Verdict;
  const KernelRan gpu = kernel_ran(ExecutorKind::gpu, fake_gpu_result());
  const auto want = nlohmann::json::parse(R"({"kernel": "wgmma", "schedule": "rows-64", "precision": "p-split"})");

  Stage1ExpectResult r = check_stage1_expectation(want, gpu);
  CHECK(r.verdict == V::matched);
  CHECK(r.messages == std::vector<std::string>{"stage1=wgmma rows-64 p-split"});
  r = check_stage1_expectation(nlohmann::json::parse(R"({"precision": "p-split"})"), gpu);
  CHECK(r.verdict == V::matched);
  CHECK(r.messages == std::vector<std::string>{"stage1=p-split"});

  // the kernel reports another schedule and precision: one failure per field
  r = check_stage1_expectation(nlohmann::json::parse(R"({"kernel": "wgmma", "schedule": "transposed-64", "precision": "p-once"})"), gpu);
  CHECK(r.verdict == V::mismatched);
  const std::string ran = " (ran wgmma rows-64 p-split  wgmma_rows<bf16, 576, p-split>  grid 264 x 384 threads, 231456 B shared)";
  CHECK(r.messages == std::vector<std::string>{"stage1.schedule: expected transposed-64, got rows-64" + ran,
                                               "stage1.precision: expected p-once, got p-split" + ran});
  r = check_stage1_expectation(nlohmann::json::parse(R"({"kernel": "mma"})"), gpu);
  CHECK(r.verdict == V::mismatched);
  CHECK(r.messages == std::vector<std::string>{"stage1.kernel: expected mma, got wgmma" + ran});

  // a GPU executor that reported no kernel fails the expectation
  r = check_stage1_expectation(want, kernel_ran(ExecutorKind::gpu, ExecResult{}));
  CHECK(r.verdict == V::mismatched);
  CHECK(r.messages == std::vector<std::string>{"stage1: the GPU executor reported no stage-1 kernel"});

  // no GPU kernel ran: not applicable, reported as not checked (neither passed nor failed)
  r = check_stage1_expectation(want, kernel_ran(ExecutorKind::cpu, fake_gpu_result()));
  CHECK(r.verdict == V::not_checked);
  CHECK(r.messages == std::vector<std::string>{"stage1 not checked: the cpu executor ran (the fp32 contract, no GPU kernel)"});
  r = check_stage1_expectation(want, kernel_ran(ExecutorKind::external, ExecResult{}));
  CHECK(r.verdict == V::not_checked);
  CHECK(r.messages == std::vector<std::string>{"stage1 not checked: an external executor ran (--executor; it reports no kernel)"});
  r = check_stage1_expectation(want, KernelRan{});
  CHECK(r.verdict == V::not_checked);
  CHECK(r.messages == std::vector<std::string>{"stage1 not checked: no executor ran (the run was refused or skipped)"});
}
