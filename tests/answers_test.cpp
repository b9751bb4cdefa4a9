// A language model's two answers (pase/answers.hpp; core/docs/layouts.md,
// "Both answers"): the best layout first, then the per-layer plan that
// starts from it and never loses to it, nor to ZeRO or micro-batches set by
// hand; and the incumbent of the pipeline search that makes it so.
#include "pase/answers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "pase/json_api.hpp"
#include "pase/layout.hpp"
#include "pase/models.hpp"
#include "pase/presets.hpp"
#include "test_util.hpp"

using namespace pase;

namespace {

Graph model_graph(const char* name, int64_t batch, int64_t seq) {
  Result<Graph> g = build_model(name, batch, seq);
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  return std::move(*g);
}

Cluster h100(int64_t devices) {
  Cluster c = apply_preset(Cluster{}, *find_preset("h100"));
  c.devices = devices;
  c.cost_model = CostModel::kPractice;
  c.training.recompute = Recompute::kAuto;
  return c;
}

// The per-layer plan with the training knobs set by hand, as a user types
// them: the cluster's ZeRO stage and the pipeline's micro-batches.
double by_hand(const Graph& g, Cluster c, int64_t zero, int64_t microbatches) {
  c.training.zero = zero;
  Result<PipelinePlan> p =
      plan_pipeline(g, c, PipelineOptions{.stages = 1, .microbatches = microbatches});
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  return p->plan.step_time_s;
}

}  // namespace

TEST_CASE("answers: the per-layer plan never loses to the best layout nor to knobs set by hand") {
  // Llama 3 8B's blocks at a short sequence, on 2 nodes of 4 (the issue's
  // case, smaller).
  const Graph g = model_graph("llama3-8b", 16, 1024);
  Cluster c = h100(8);
  c.gpus_per_node = 4;
  Result<PlanAnswers> a = plan_answers(g, c, AnswerOptions{});
  REQUIRE_MESSAGE(a.ok(), testing::why(a));
  REQUIRE(!a->layouts.ranked.empty());
  const double layout_s = a->layouts.ranked.front().step_time_s;
  const double mine = a->per_layer.plan.step_time_s;
  CHECK(mine <= layout_s * (1 + 1e-12));
  CHECK(a->per_layer.plan.fits);
  for (int64_t zero : {0, 1, 2, 3}) CHECK(mine <= by_hand(g, c, zero, 1) * (1 + 1e-12));
  CHECK(mine <= by_hand(g, c, 0, kAuto) * (1 + 1e-12));
  if (a->layout_wins) {
    CHECK(a->gain_s == 0);
    CHECK(mine == doctest::Approx(layout_s).epsilon(1e-12));
  } else {
    CHECK(a->gain_s == doctest::Approx(layout_s - mine).epsilon(1e-12));
    CHECK(a->gain_fraction == doctest::Approx(a->gain_s / layout_s).epsilon(1e-12));
    CHECK(a->graph.vertices.size() == g.vertices.size());
  }
}

TEST_CASE("answers: a layout the per-layer search cannot reach is the per-layer answer") {
  // GPT-2 on 8 H100: the best layout runs an interleaved pipeline, which the
  // per-layer search without stages never reaches.
  const Graph g = model_graph("gpt2", 16, 1024);
  Result<PlanAnswers> a = plan_answers(g, h100(8), AnswerOptions{});
  REQUIRE_MESSAGE(a.ok(), testing::why(a));
  REQUIRE(!a->layouts.ranked.empty());
  const RankedLayout& best = a->layouts.ranked.front();
  REQUIRE(best.layout.pp > 1);
  CHECK(a->layout_wins);
  CHECK(a->gain_s == 0);
  CHECK(a->differs_at.empty());
  // Its own plan, as `pase eval --layout` prices it.
  CHECK(a->per_layer.plan.step_time_s == doctest::Approx(best.step_time_s).epsilon(1e-9));
  CHECK(a->per_layer.pipeline.stages == best.layout.pp);
  CHECK(a->per_layer.pipeline.virtual_stages == best.layout.vpp);
  // Each engine's export is the fastest ranked layout it starts: torchtitan
  // refuses this one (DDP beside a pipeline), and the note says which it is.
  REQUIRE_FALSE(best.torchtitan.accepted());
  Result<Exported> toml = export_answers(ExportTarget::kTorchtitan, *a);
  REQUIRE_MESSAGE(toml.ok(), testing::why(toml));
  REQUIRE(toml->layout.has_value());
  const auto started = std::find_if(a->layouts.ranked.begin(), a->layouts.ranked.end(),
                                    [](const RankedLayout& r) { return r.torchtitan.accepted(); });
  REQUIRE(started != a->layouts.ranked.end());
  CHECK(layout_text(*toml->layout) == layout_text(started->layout));
  REQUIRE(!toml->notes.empty());
  CHECK(testing::contains(toml->notes.front(), "torchtitan refuses the best layout (ddp: "));
  Result<Exported> script = export_answers(ExportTarget::kMegatron, *a);
  REQUIRE_MESSAGE(script.ok(), testing::why(script));
  CHECK(layout_text(*script->layout) == layout_text(best.layout));
}

TEST_CASE("answers: the per-layer plan says where it differs from the layout") {
  const Graph g = model_graph("llama3-8b", 16, 1024);
  Cluster c = h100(8);
  AnswerOptions o;
  o.zero_auto = false;  // ZeRO 0, as the cluster says
  Result<PlanAnswers> a = plan_answers(g, c, o);
  REQUIRE_MESSAGE(a.ok(), testing::why(a));
  REQUIRE(!a->layouts.ranked.empty());
  const Layout& best = a->layouts.ranked.front().layout;
  REQUIRE(best.zero != 0);
  // ZeRO 0, set by hand, is honoured: the layout is no incumbent of it.
  CHECK(a->cluster.training.zero == 0);
  CHECK_FALSE(a->layout_wins);
  CHECK(a->set_by_hand == std::vector<std::string>{"the ZeRO stage"});
  REQUIRE(!a->differs_at.empty());
  CHECK(testing::contains(a->differs_at.front(), "ZeRO 0 (the layout: "));
  CHECK(a->gain_s ==
        doctest::Approx(a->layouts.ranked.front().step_time_s - a->per_layer.plan.step_time_s)
            .epsilon(1e-12));
}

TEST_CASE("answers: one micro-batch set by hand is plan()'s per-layer plan, as before") {
  const Graph g = model_graph("llama3-8b", 16, 1024);
  Cluster c = h100(8);
  c.memory_gib = 24;  // a cap under which blocks are recomputed
  c.training.zero = 1;
  AnswerOptions o;
  o.zero_auto = false;
  o.pipeline = PipelineOptions{.stages = 1, .microbatches = 1};
  Result<PlanAnswers> a = plan_answers(g, c, o);
  REQUIRE_MESSAGE(a.ok(), testing::why(a));
  Result<Plan> alone = plan(g, c);
  REQUIRE_MESSAGE(alone.ok(), testing::why(alone));
  if (!a->layout_wins) {
    CHECK(a->per_layer.plan.step_time_s == doctest::Approx(alone->step_time_s).epsilon(1e-12));
    REQUIRE(a->per_layer.plan.training.has_value());
    CHECK(a->per_layer.plan.training->recompute_blocks == alone->training->recompute_blocks);
  } else {
    CHECK(a->per_layer.plan.step_time_s <= alone->step_time_s);
  }
}

TEST_CASE("answers: the pipeline search starts from an incumbent and beats it or says so") {
  const Graph g = model_graph("gpt2", 8, 256);
  const Cluster c = h100(4);
  const PipelineOptions auto_m{.stages = 1, .microbatches = kAuto};
  Result<PipelinePlan> free = plan_pipeline(g, c, auto_m);
  REQUIRE_MESSAGE(free.ok(), testing::why(free));
  // An incumbent above the optimum: the same plan.
  PipelineOptions above = auto_m;
  above.incumbent_cost = free->plan.cost * 1.5;
  Result<PipelinePlan> same = plan_pipeline(g, c, above);
  REQUIRE_MESSAGE(same.ok(), testing::why(same));
  CHECK(same->plan.cost == doctest::Approx(free->plan.cost).epsilon(1e-12));
  CHECK(same->pipeline.microbatches == free->pipeline.microbatches);
  // At or below it: nothing is cheaper, and the error says so.
  for (double share : {1.0, 0.5}) {
    PipelineOptions below = auto_m;
    below.incumbent_cost = free->plan.cost * share;
    Result<PipelinePlan> none = plan_pipeline(g, c, below);
    REQUIRE(!none.ok());
    CHECK(none.error().where == "pipeline.incumbent_cost");
  }
  PipelineOptions bad = auto_m;
  bad.incumbent_cost = 0;
  Result<PipelinePlan> refused = plan_pipeline(g, c, bad);
  REQUIRE(!refused.ok());
  CHECK(refused.error().where == "pipeline.incumbent_cost");
}

TEST_CASE("answers: pase plan and plan_json give the best layout first, then the per-layer plan") {
  using testing::contains;
  testing::Run r = testing::run_cli({"plan", "--model", "llama3-8b", "--procs", "8", "--preset",
                                     "h100", "--batch", "16", "--seq", "1024", "--tokens", "1T"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  const size_t best = r.out.find("best layout ");
  const size_t per_layer = r.out.find("per-layer plan   what JAX/GSPMD runs");
  REQUIRE(best != std::string::npos);
  REQUIRE(per_layer != std::string::npos);
  CHECK(best < per_layer);
  CHECK(per_layer < r.out.find("summary "));
  CHECK(contains(r.out, "days to train"));
  CHECK(contains(r.out, "what the engines run: "));

  const std::string doc_text = plan_json(
      R"({"model": "llama3-8b", "batch": 16, "seq": 1024, "preset": "h100",
          "cluster": {"devices": 8}, "tokens": 1e12, "emit": ["megatron", "jax"]})");
  const nlohmann::json doc = nlohmann::json::parse(doc_text);
  REQUIRE_MESSAGE(doc.contains("best_layout"), doc_text);
  const nlohmann::json& layout = doc["best_layout"];
  const nlohmann::json& mine = doc["per_layer"];
  CHECK(layout["rank"] == 1);
  CHECK(mine["runs_on"] == "JAX/GSPMD");
  CHECK(mine["zero_searched"] == true);
  CHECK(mine["step_time_s"].get<double>() <= layout["step_time_s"].get<double>() * (1 + 1e-12));
  CHECK(mine["step_time_s"].get<double>() == doc["step_time_s"].get<double>());
  CHECK(mine["days"].get<double>() > 0);
  CHECK(doc["layouts"]["priced"].get<int64_t>() > 0);
  // Megatron-LM's launch script is the best layout's; JAX runs the per-layer plan.
  REQUIRE(doc["exports"].size() == 2);
  CHECK(doc["exports"][0]["layout"] == layout["layout"]);
  CHECK(contains(doc["exports"][0]["text"].get<std::string>(), "torchrun"));
  CHECK(doc["exports"][1]["to"] == "jax");

  // ZeRO stated: not searched. The paper's model, and a network that is not
  // a language model: no layouts, the plan as before.
  const nlohmann::json fixed =
      nlohmann::json::parse(plan_json(R"({"model": "gpt2", "batch": 8, "seq": 256, "preset": "h100",
                    "cluster": {"devices": 4}, "training": {"zero": 1}})"));
  CHECK(fixed["per_layer"]["zero_searched"] == false);
  CHECK(fixed["training"]["zero"] == 1);
  // The recomputation set by hand is the per-layer plan's, whatever the
  // best layout's.
  const nlohmann::json full =
      nlohmann::json::parse(plan_json(R"({"model": "gpt2", "batch": 8, "seq": 256, "preset": "h100",
                    "cluster": {"devices": 4}, "training": {"recompute": "full"}})"));
  CHECK(full["training"]["recompute"] == "full");
  CHECK(full["step"]["recompute_s"].get<double>() > 0);
  const nlohmann::json paper =
      nlohmann::json::parse(plan_json(R"({"model": "gpt2", "batch": 8, "seq": 256})"));
  CHECK(!paper.contains("best_layout"));
  const nlohmann::json cnn = nlohmann::json::parse(plan_json(
      R"({"model": "alexnet", "batch": 32, "preset": "h100", "cluster": {"devices": 4}})"));
  REQUIRE_MESSAGE(!cnn.contains("error"), cnn.dump());
  CHECK(!cnn.contains("best_layout"));
  // A bad budget names its field.
  const nlohmann::json bad =
      nlohmann::json::parse(plan_json(R"({"model": "gpt2", "preset": "h100", "tokens": -1})"));
  CHECK(bad["error"]["where"] == "tokens");
}
