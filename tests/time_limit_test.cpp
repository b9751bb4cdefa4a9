// A search stopped before its end (core/docs/pipeline.md, "A time limit"):
// by a cancel at any point of a pipeline search, or by a time limit, it
// keeps the best pipeline found, and the lower bound it reports is never
// above the optimum that the search run to its end finds; the answers of
// a language model keep the best layout and say how far the answer may be
// from the best; the request's field and the CLI's flag name bad values.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

using testing::nodes;

// The search of `g` on `c`, cancelled at its k-th progress report.
struct Stopped {
  Result<PipelinePlan> plan = Error{"not run", ""};
  PipelineBound bound;
};
Stopped cancelled_at(const Graph& g, const Cluster& c, PipelineOptions po, int k,
                     double incumbent) {
  Stopped out;
  std::atomic<bool> cancel{false};
  int reports = 0;
  PlanOptions o;
  o.cancel = &cancel;
  o.on_progress = [&](const Progress&) {
    if (++reports >= k) cancel = true;
  };
  po.incumbent_cost = incumbent;
  po.bound_out = &out.bound;
  out.plan = plan_pipeline(g, c, po, o);
  return out;
}

}  // namespace

TEST_CASE(
    "time limit: a pipeline search cancelled anywhere keeps its best and a bound below the "
    "optimum") {
  struct Case {
    const char* model;
    Cluster cluster;
  };
  const std::vector<Case> cases = {
      {"transformer", nodes(16, 4)}, {"transformer", nodes(8, 4, 0.3)}, {"rnnlm", nodes(8, 4)}};
  for (const Case& c : cases) {
    CAPTURE(c.model);
    CAPTURE(c.cluster.memory_gib);
    Result<Graph> g = build_model(c.model);
    REQUIRE(g.ok());
    const PipelineOptions po{.stages = kAuto, .microbatches = kAuto};
    // The search run to its end, and how many reports it makes.
    int reports = 0;
    PlanOptions counting;
    counting.on_progress = [&](const Progress&) { ++reports; };
    Result<PipelinePlan> full = plan_pipeline(*g, c.cluster, po, counting);
    REQUIRE_MESSAGE(full.ok(), testing::why(full));
    const double best = full->plan.cost;
    CHECK(full->pipeline.stopped.empty());
    REQUIRE(reports > 4);
    int stops = 0;
    for (int k : {1, 2, 3, reports / 4, reports / 2, 3 * reports / 4, reports - 1}) {
      CAPTURE(k);
      // Without an incumbent, and with one just above the optimum.
      for (double incumbent : {std::numeric_limits<double>::infinity(), best * 1.01}) {
        const Stopped s = cancelled_at(*g, c.cluster, po, k, incumbent);
        if (s.bound.stopped.empty()) {
          // Done before the next poll: the search's own answer.
          REQUIRE(s.plan.ok());
          CHECK(s.plan->plan.cost == doctest::Approx(best).epsilon(1e-12));
          continue;
        }
        ++stops;
        CHECK(s.bound.stopped == "cancelled");
        CHECK(s.bound.lower_bound <= best * (1 + 1e-9));
        if (s.plan) {
          // The best found: a pipeline that evaluates to its cost.
          CHECK(s.plan->pipeline.stopped == "cancelled");
          CHECK_FALSE(s.plan->plan.optimal);
          CHECK(s.plan->plan.cost >= best * (1 - 1e-9));
          CHECK(s.plan->plan.lower_bound <= best * (1 + 1e-9));
          CHECK(s.plan->plan.lower_bound <= s.plan->plan.cost);
          Result<PipelinePlan> again =
              evaluate_pipeline(*g, c.cluster,
                                PipelineStrategy{s.plan->plan.strategy, s.plan->pipeline.stage_of,
                                                 s.plan->pipeline.microbatches});
          REQUIRE(again.ok());
          CHECK(again->plan.cost == doctest::Approx(s.plan->plan.cost).epsilon(1e-9));
        } else if (incumbent < std::numeric_limits<double>::infinity()) {
          CHECK(s.plan.error().where == "pipeline.incumbent_cost");
          CHECK(s.bound.lower_bound <= incumbent);
        } else {
          CHECK(s.plan.error().message == "cancelled");
        }
      }
    }
    // Most cancels land inside the search.
    CHECK(stops >= 6);
  }
}

TEST_CASE("time limit: a limit already reached answers at once with the floors' bound") {
  Result<Graph> g = build_model("transformer");
  REQUIRE(g.ok());
  const Cluster c = nodes(16, 4);
  PipelineOptions po{.stages = kAuto, .microbatches = kAuto};
  Result<PipelinePlan> full = plan_pipeline(*g, c, po);
  REQUIRE(full.ok());
  PlanOptions o;
  o.time_limit_s = 1e-9;
  PipelineBound bound;
  po.bound_out = &bound;
  Result<PipelinePlan> none = plan_pipeline(*g, c, po, o);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().where == "time_limit_s");
  CHECK(bound.stopped == "time limit");
  CHECK(bound.lower_bound > 0);
  CHECK(bound.lower_bound <= full->plan.cost);
  // With an incumbent: it stands, with the same bound.
  po.incumbent_cost = full->plan.cost * 2;
  Result<PipelinePlan> kept = plan_pipeline(*g, c, po, o);
  REQUIRE_FALSE(kept.ok());
  CHECK(kept.error().where == "pipeline.incumbent_cost");
  CHECK(bound.lower_bound <= full->plan.cost);
}

TEST_CASE("time limit: the answers keep the best layout and say the gap") {
  Result<Graph> g = build_model("llama3-8b", 16, 1024);
  REQUIRE(g.ok());
  Cluster c = apply_preset(Cluster{}, *find_preset("h100"));
  c.devices = 8;
  c.gpus_per_node = 4;
  c.cost_model = CostModel::kPractice;
  c.training.recompute = Recompute::kAuto;
  PlanOptions o;
  o.time_limit_s = 1e-9;
  Result<PlanAnswers> a = plan_answers(*g, c, AnswerOptions{}, o);
  REQUIRE_MESSAGE(a.ok(), testing::why(a));
  REQUIRE(!a->layouts.ranked.empty());
  CHECK(a->layout_wins);
  CHECK(a->stopped == "time limit");
  CHECK(a->stopped_in.find("the per-layer plan at ZeRO ") == 0);
  REQUIRE(a->gap >= 0);
  CHECK(a->gap <= 1);
  CHECK(a->lower_bound_s > 0);
  CHECK(a->lower_bound_s <= a->per_layer.plan.step_time_s);
  // The search to its end is at least the bound, and its gap is 0.
  Result<PlanAnswers> full = plan_answers(*g, c, AnswerOptions{});
  REQUIRE(full.ok());
  CHECK(full->stopped.empty());
  CHECK(full->gap == doctest::Approx(0).epsilon(1e-9));
  CHECK(a->lower_bound_s <= full->per_layer.plan.step_time_s * (1 + 1e-9));

  // The same through a request, and in the CLI's text.
  const nlohmann::json r = nlohmann::json::parse(plan_json(
      R"({"model": "llama3-8b", "batch": 16, "seq": 1024, "preset": "h100",
          "cluster": {"devices": 8, "gpus_per_node": 4}, "time_limit_s": 1e-9})"));
  REQUIRE_MESSAGE(r.contains("per_layer"), r.dump());
  CHECK(r["per_layer"]["stopped"] == "time limit");
  CHECK(r["per_layer"]["gap"].get<double>() >= 0);
  CHECK(r["per_layer"]["lower_bound_s"].get<double>() > 0);
  const testing::Run cli = testing::run_cli({"plan", "--model", "llama3-8b", "--batch", "16",
                                             "--seq", "1024", "--preset", "h100", "--procs", "8",
                                             "--gpus-per-node", "4", "--time-limit", "0.000001"});
  CHECK(cli.exit == 0);
  CHECK(cli.out.find("stopped at the time limit") != std::string::npos);
  CHECK(cli.out.find("slower than the best possible") != std::string::npos);
}

TEST_CASE("time limit: bad values name the field and the flag") {
  for (const char* value : {"0", "-1", "\"30\"", "1e12"}) {
    CAPTURE(value);
    const nlohmann::json r = nlohmann::json::parse(
        plan_json(std::string(R"({"model": "transformer", "time_limit_s": )") + value + "}"));
    REQUIRE(r.contains("error"));
    CHECK(r["error"]["where"] == "time_limit_s");
  }
  for (const char* value : {"0", "-3", "soon", "1e12"}) {
    CAPTURE(value);
    const testing::Run cli =
        testing::run_cli({"plan", "--model", "transformer", "--time-limit", value});
    CHECK(cli.exit == 2);
    CHECK(cli.err.find("--time-limit") != std::string::npos);
  }
}
