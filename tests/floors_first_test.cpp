// Floors first (core/docs/pipeline.md, "A time limit"): each
// recomputation's floors, made without a search, bound what its search
// finds; a search stopped with its floors made before has the bound it
// would compute; a gap accepted (PlanOptions::max_gap) is kept and said;
// stages and micro-batches both "auto" leave the best layout's own
// pipeline to the answer.
#include <doctest/doctest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.hpp"
#include "pase/answers.hpp"
#include "pase/json_api.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/presets.hpp"
#include "test_util.hpp"

using namespace pase;

namespace {

Cluster h100(int64_t devices, int64_t per_node) {
  Cluster c = apply_preset(Cluster{}, *find_preset("h100"));
  c.devices = devices;
  c.gpus_per_node = per_node;
  c.cost_model = CostModel::kPractice;
  c.training.recompute = Recompute::kAuto;
  return c;
}

int mode_index(Recompute r) {
  return r == Recompute::kNone ? 0 : r == Recompute::kSelective ? 1 : 2;
}

}  // namespace

TEST_CASE("floors first: each recomputation's floors bound its search, and a stop reuses them") {
  Result<Graph> g = build_model("llama3-8b", 16, 1024);
  REQUIRE(g.ok());
  const Cluster c = h100(8, 4);
  PipelineBound floors;
  PipelineOptions po{.stages = kAuto, .microbatches = kAuto};
  po.floors_only = true;
  po.bound_out = &floors;
  Result<PipelinePlan> none = plan_pipeline(*g, c, po);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().where == "pipeline.floors_only");
  for (double f : floors.recompute_floors) CHECK(f > 0);
  CHECK(floors.floor == std::min({floors.recompute_floors[0], floors.recompute_floors[1],
                                  floors.recompute_floors[2]}));

  // The search to its end: its plan is above its recomputation's floor.
  PipelineOptions full_po{.stages = kAuto, .microbatches = kAuto};
  Result<PipelinePlan> full = plan_pipeline(*g, c, full_po);
  REQUIRE_MESSAGE(full.ok(), testing::why(full));
  REQUIRE(full->plan.training.has_value());
  CHECK(full->plan.cost >=
        floors.recompute_floors[mode_index(full->plan.training->recompute)] * (1 - 1e-12));

  // Stopped at once: the floors made before give the bound it computes.
  PlanOptions o;
  o.time_limit_s = 1e-9;
  PipelineBound computed, reused;
  PipelineOptions stop_po{.stages = kAuto, .microbatches = kAuto};
  stop_po.bound_out = &computed;
  (void)plan_pipeline(*g, c, stop_po, o);
  stop_po.bound_out = &reused;
  stop_po.known_floors = &floors;
  (void)plan_pipeline(*g, c, stop_po, o);
  REQUIRE(computed.stopped == "time limit");
  CHECK(reused.stopped == "time limit");
  CHECK(reused.lower_bound == doctest::Approx(computed.lower_bound).epsilon(1e-12));
  CHECK(reused.lower_bound <= full->plan.cost * (1 + 1e-12));
}

TEST_CASE("floors first: a gap accepted is kept, in the pipeline search and the answers") {
  Result<Graph> g = build_model("transformer");
  REQUIRE(g.ok());
  const Cluster c = testing::nodes(16, 4);
  PipelineOptions po{.stages = kAuto, .microbatches = kAuto};
  Result<PipelinePlan> exact = plan_pipeline(*g, c, po);
  REQUIRE(exact.ok());
  CHECK(exact->plan.optimal);
  for (double gap : {0.01, 0.05, 0.3}) {
    CAPTURE(gap);
    PlanOptions o;
    o.max_gap = gap;
    Result<PipelinePlan> r = plan_pipeline(*g, c, po, o);
    REQUIRE(r.ok());
    // Never below the optimum, a bound never above it, and within the gap.
    CHECK(r->plan.cost >= exact->plan.cost * (1 - 1e-12));
    CHECK(r->plan.lower_bound <= exact->plan.cost * (1 + 1e-12));
    CHECK(r->plan.lower_bound > 0);
    CHECK((r->plan.cost - r->plan.lower_bound) / r->plan.cost <= gap + 1e-12);
    CHECK(r->plan.optimal == (r->plan.lower_bound >= r->plan.cost * (1 - 1e-12)));
  }

  // The answers through a request: the gap proved is at most the one
  // accepted; bad values name the field, and the flag.
  const nlohmann::json r = nlohmann::json::parse(plan_json(
      R"({"model": "llama3-8b", "batch": 16, "seq": 1024, "preset": "h100",
          "cluster": {"devices": 8, "gpus_per_node": 4}, "max_gap": 0.05})"));
  REQUIRE_MESSAGE(r.contains("per_layer"), r.dump());
  CHECK(r["per_layer"]["gap"].get<double>() >= 0);
  CHECK(r["per_layer"]["gap"].get<double>() <= 0.05 + 1e-12);
  for (const char* value : {"-0.1", "1", "\"1%\""}) {
    CAPTURE(value);
    const nlohmann::json bad = nlohmann::json::parse(
        plan_json(std::string(R"({"model": "transformer", "max_gap": )") + value + "}"));
    REQUIRE(bad.contains("error"));
    CHECK(bad["error"]["where"] == "max_gap");
  }
  for (const char* value : {"-1", "1", "100%", "close"}) {
    CAPTURE(value);
    const testing::Run cli =
        testing::run_cli({"plan", "--model", "transformer", "--max-gap", value});
    CHECK(cli.exit == 2);
    CHECK(cli.err.find("--max-gap") != std::string::npos);
  }
  const testing::Run ok = testing::run_cli(
      {"plan", "--model", "transformer", "--procs", "8", "--stages", "auto", "--max-gap", "5%"});
  CHECK(ok.exit == 0);
  // A pipeline set by hand, searched without the layout, within 30%: the
  // text says the gap proved when there is one.
  const nlohmann::json wide = nlohmann::json::parse(plan_json(
      R"({"model": "llama3-8b", "batch": 16, "seq": 1024, "preset": "h100",
          "cluster": {"devices": 8, "gpus_per_node": 4},
          "pipeline": {"stages": 2, "microbatches": 4}, "max_gap": 0.3})"));
  REQUIRE_MESSAGE(wide.contains("per_layer"), wide.dump());
  const double proved = wide["per_layer"]["gap"].get<double>();
  CHECK(proved <= 0.3 + 1e-12);
  const testing::Run text =
      testing::run_cli({"plan", "--model", "llama3-8b", "--batch", "16", "--seq", "1024",
                        "--preset", "h100", "--procs", "8", "--gpus-per-node", "4", "--stages", "2",
                        "--microbatches", "4", "--max-gap", "30%"});
  CHECK(text.exit == 0);
  CHECK((proved > 0) == (text.out.find("within the gap accepted: at most") != std::string::npos));
}

TEST_CASE("floors first: stages and micro-batches auto leave the layout's interleaved pipeline") {
  // Llama 3 8B at 512 x 8192 on 1,024 H100: the best layout interleaves
  // its stages, which a per-layer pipeline does not; "auto" sets nothing
  // by hand, so the per-layer search starts from the layout, proves that
  // nothing beats it, and the answer is the layout.
  Result<Graph> g = build_model("llama3-8b", 512, 8192);
  REQUIRE(g.ok());
  Cluster c = h100(1024, 8);
  AnswerOptions a;
  a.pipeline = PipelineOptions{.stages = kAuto, .microbatches = kAuto};
  Result<PlanAnswers> r = plan_answers(*g, c, a);
  REQUIRE_MESSAGE(r.ok(), testing::why(r));
  REQUIRE(!r->layouts.ranked.empty());
  REQUIRE(r->layouts.ranked.front().layout.vpp > 1);
  CHECK(r->set_by_hand.empty());
  CHECK(r->layout_wins);
  CHECK(r->stopped.empty());
  CHECK(r->gap == doctest::Approx(0).epsilon(1e-12));
}
