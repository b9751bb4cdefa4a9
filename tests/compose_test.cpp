// The composition of repeated blocks (core/docs/pipeline.md, "Composing
// the repeated blocks"): every range's plan from the composition has the
// value of the range's own search, and the pipeline search finds the same
// step time with it and without it (PipelineOptions::compose).
#include <doctest/doctest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/llm.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pipeline/pipeline_compose.hpp"
#include "pipeline/pipeline_model.hpp"
#include "pipeline/pipeline_searcher.hpp"
#include "search/weighted_plan.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::pipeline_detail;
using json = nlohmann::json;

namespace {

// A Llama of six small blocks: its embedding is a segment of its own, so
// the head piece holds the first block too.
Graph small_llama() {
  ImportOptions options;
  options.batch = 8;
  options.seq = 64;
  Result<GraphSpec> spec = import_llm_config(
      R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 6,
          "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
          "vocab_size": 256, "max_position_embeddings": 256})",
      options);
  REQUIRE_MESSAGE(spec.ok(), testing::why(spec));
  Result<Graph> g = build_graph(std::move(*spec));
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  return *g;
}

// Every range of two segments or more of g's micro-batch graph of M
// micro-batches on half of cluster's devices: the composed plan against
// the range's own search.
void check_ranges(const Graph& g, const Cluster& cluster, int64_t microbatches, int heads) {
  const PipelineOptions po{};
  const PlanOptions options{};
  Searcher searcher{g, cluster, po, options};
  Result<Graph> micro = micro_batch_graph(g, microbatches);
  REQUIRE(micro.ok());
  const Micro mg = prepare_micro(searcher, *micro);
  CHECK(head_segments(mg) == heads);
  const int nb = static_cast<int>(mg.bounds.size());
  Cluster free = cluster;
  free.devices = cluster.devices / 2;
  const double m = static_cast<double>(microbatches);
  const StageWeights weights{m, 1, 1e-13 * m, 1};
  Result<Composition> c = Composition::make(mg, free, options, weights);
  REQUIRE_MESSAGE(c.ok(), testing::why(c));
  CHECK(c->searches() == 2 * static_cast<int>(c->streams()) + 2);
  int ranges = 0;
  for (int i = 0; i < nb; ++i)
    for (int j = i + 2; j < nb; ++j) {
      std::optional<Composition::Range> r = c->range(i, j);
      if (i == 0 && j == nb - 1) {
        CHECK(!r);
        continue;
      }
      REQUIRE(r);
      CAPTURE(i);
      CAPTURE(j);
      const Graph sub = stage_graph(mg.graph, mg.bounds[i], mg.bounds[j]);
      // The composed strategy priced as the range prices it.
      Result<Plan> composed = evaluate(sub, free, r->configs);
      REQUIRE(composed.ok());
      Result<Plan> searched = plan_weighted(sub, free, options, weights);
      REQUIRE(searched.ok());
      const double b = weights.value(*searched) + weights.tie * searched->cost;
      CHECK(weights.value(*composed) + weights.tie * composed->cost ==
            doctest::Approx(b).epsilon(1e-9));
      CHECK(r->value == doctest::Approx(b).epsilon(1e-9));
      ++ranges;
    }
  // Every range of two segments or more but the whole graph.
  CHECK(ranges == nb * (nb - 1) / 2 - (nb - 1) - 1);
}

}  // namespace

TEST_CASE("compose: every range's composed plan has its own search's value") {
  Result<Graph> gpt2 = build_model("gpt2");
  REQUIRE(gpt2.ok());
  // The embeddings, 12 blocks (the first one's stream add is the
  // embeddings') and the loss.
  check_ranges(*gpt2, Cluster{.devices = 4}, 4, 1);
  check_ranges(*gpt2, testing::nodes(8, 4), 2, 1);
  const Graph llama = small_llama();
  check_ranges(llama, testing::nodes(8, 4), 2, 2);
  check_ranges(llama, testing::practice_h100(8), 4, 2);
}

TEST_CASE("compose: the pipeline search finds the same with the composition and without") {
  Result<Graph> gpt2 = build_model("gpt2");
  REQUIRE(gpt2.ok());
  const Graph llama = small_llama();
  struct Case {
    const Graph* g;
    Cluster cluster;
    int64_t stages, microbatches;
  };
  for (const Case& c : std::vector<Case>{{&*gpt2, testing::nodes(8, 4), 2, 4},
                                         {&*gpt2, testing::nodes(8, 4), 4, kAuto},
                                         {&*gpt2, Cluster{.devices = 8}, kAuto, 8},
                                         {&llama, testing::practice_h100(8), kAuto, kAuto},
                                         // Under a cap: the composed plans that do not fit are
                                         // searched under it.
                                         {&llama, testing::nodes(8, 4, 0.002), 2, 4}}) {
    CAPTURE(c.stages);
    CAPTURE(c.microbatches);
    const Graph* g = c.g;
    const Cluster& cluster = c.cluster;
    PipelineOptions with{.stages = c.stages, .microbatches = c.microbatches};
    with.compose = Compose::kOn;
    PipelineOptions without = with;
    without.compose = Compose::kOff;
    Result<PipelinePlan> a = plan_pipeline(*g, cluster, with);
    Result<PipelinePlan> b = plan_pipeline(*g, cluster, without);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->plan.cost == doctest::Approx(b->plan.cost).epsilon(1e-9));
    CHECK(a->pipeline.stages == b->pipeline.stages);
    CHECK(a->pipeline.microbatches == b->pipeline.microbatches);
    CHECK(a->plan.optimal == b->plan.optimal);
  }
}

TEST_CASE("compose: the request's and the CLI's setting, and their bad values") {
  json request = {{"model", "gpt2"},
                  {"cluster", {{"devices", 8}}},
                  {"pipeline", {{"stages", 2}, {"microbatches", 4}, {"compose", "on"}}}};
  const json on = json::parse(plan_json(request.dump()));
  REQUIRE_MESSAGE(!on.contains("error"), on.dump());
  request["pipeline"]["compose"] = "off";
  const json off = json::parse(plan_json(request.dump()));
  REQUIRE_MESSAGE(!off.contains("error"), off.dump());
  CHECK(on["cost"].get<double>() == doctest::Approx(off["cost"].get<double>()).epsilon(1e-9));
  request["pipeline"]["compose"] = true;
  CHECK(json::parse(plan_json(request.dump()))["error"]["where"] == "pipeline.compose");

  const testing::Run ok = testing::run_cli(
      {"plan", "--model", "gpt2", "--procs", "8", "--stages", "2", "--compose", "on"});
  CHECK_MESSAGE(ok.exit == 0, ok.err);
  const testing::Run bad = testing::run_cli({"plan", "--model", "gpt2", "--compose", "maybe"});
  CHECK(bad.exit != 0);
  CHECK(testing::contains(bad.err, "--compose: 'maybe' is not auto, on or off"));
}
