// The pipeline search's pruning (core/docs/pipeline.md, "Pruning"): with it
// and without it (PipelineOptions::prune = false, every range planned) the
// search finds the same step time, stage count and micro-batch count, on
// built-in networks, flat and on nodes, with and without a memory cap, for
// "auto" and for fixed pairs; and pruning does skip stage plans. (It may
// plan a few more on a small search: the parts between boundaries that its
// bounds take their values from.)
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;

namespace {

struct Case {
  std::string model;
  Cluster cluster;
  int64_t stages, microbatches;
};

Cluster nodes(int64_t devices, int64_t per_node, double memory_gib = 0) {
  Cluster c{.devices = devices, .bandwidth_gbps = 10};
  c.gpus_per_node = per_node;
  c.intra_node_gbps = 100;
  c.memory_gib = memory_gib;
  return c;
}

}  // namespace

TEST_CASE("pipeline: pruning finds what planning every range finds") {
  const std::vector<Case> cases = {
      {"alexnet", Cluster{.devices = 8}, kAuto, kAuto},
      {"rnnlm", nodes(8, 4), kAuto, kAuto},
      {"transformer", nodes(16, 4), kAuto, 8},
      {"transformer", nodes(16, 4), 4, kAuto},
      {"inception3", nodes(8, 2), 2, 4},
      // A cap that the plans without a pipeline do not meet at every
      // micro-batch count: the memory floors and the capped stage plans.
      {"transformer", nodes(8, 4, 0.25), kAuto, kAuto},
  };
  for (const Case& c : cases) {
    CAPTURE(c.model);
    CAPTURE(c.cluster.devices);
    CAPTURE(c.stages);
    CAPTURE(c.microbatches);
    Result<Graph> g = build_model(c.model);
    REQUIRE(g.ok());
    PipelineOptions pruned{.stages = c.stages, .microbatches = c.microbatches};
    PipelineOptions every = pruned;
    every.prune = false;
    Result<PipelinePlan> a = plan_pipeline(*g, c.cluster, pruned);
    Result<PipelinePlan> b = plan_pipeline(*g, c.cluster, every);
    REQUIRE(a.ok() == b.ok());
    if (!a) {
      CHECK(a.error().where == b.error().where);
      continue;
    }
    CHECK(a->plan.cost == doctest::Approx(b->plan.cost).epsilon(1e-12));
    CHECK(a->pipeline.stages == b->pipeline.stages);
    CHECK(a->pipeline.microbatches == b->pipeline.microbatches);
    CHECK(a->plan.optimal == b->plan.optimal);
    CHECK(a->pipeline.no_pipeline_cost == b->pipeline.no_pipeline_cost);
  }
}

TEST_CASE("pipeline: pruning skips most stage plans of the Transformer") {
  Result<Graph> g = build_model("transformer");
  REQUIRE(g.ok());
  PipelineOptions pruned{.stages = kAuto, .microbatches = 8};
  PipelineOptions every = pruned;
  every.prune = false;
  Result<PipelinePlan> a = plan_pipeline(*g, nodes(16, 4), pruned);
  Result<PipelinePlan> b = plan_pipeline(*g, nodes(16, 4), every);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->plan.cost == doctest::Approx(b->plan.cost).epsilon(1e-12));
  CHECK(2 * a->pipeline.stage_plans < b->pipeline.stage_plans);
}
