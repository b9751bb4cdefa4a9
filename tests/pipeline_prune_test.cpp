// The pipeline search's pruning (core/docs/pipeline.md, "Pruning"): with it
// and without it (PipelineOptions::prune = false, every range planned) the
// search finds the same step time, stage count and micro-batch count, on
// built-in networks, flat and on nodes, with and without a memory cap, for
// "auto" and for fixed pairs; and pruning does skip stage plans. (It may
// plan a few more on a small search: the parts between boundaries that its
// bounds take their values from.) The bounds themselves: a part's least F
// against brute force, and every pair's floor against its T.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "pase/graph.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pipeline/pipeline_searcher.hpp"
#include "test_util.hpp"

using namespace pase;

namespace {

struct PruneCase {
  std::string model;
  Cluster cluster;
  int64_t stages, microbatches;
};

using testing::nodes;

}  // namespace

TEST_CASE("pipeline: pruning finds what planning every range finds") {
  const std::vector<PruneCase> cases = {
      {"alexnet", Cluster{.devices = 8}, kAuto, kAuto},
      {"rnnlm", nodes(8, 4), kAuto, kAuto},
      {"transformer", nodes(16, 4), kAuto, 8},
      {"transformer", nodes(16, 4), 4, kAuto},
      {"inception3", nodes(8, 2), 2, 4},
      // A cap that the plans without a pipeline do not meet at every
      // micro-batch count: the memory floors and the capped stage plans.
      {"transformer", nodes(8, 4, 0.25), kAuto, kAuto},
      {"transformer", nodes(8, 4, 0.5), 2, 8},
      {"transformer", nodes(8, 4, 0.4), 2, 8},
      {"transformer", nodes(8, 4, 0.3), 2, 8},
      {"transformer", nodes(8, 4, 0.3), 4, 8},
      {"transformer", nodes(8, 4, 0.2), 4, 16},
      {"transformer", nodes(8, 4, 0.2), 2, 16},
  };
  for (const PruneCase& c : cases) {
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

TEST_CASE("pipeline: a range's least F is the least over all its strategies") {
  // FC3: every range of its vertices, on 2 to 8 devices of nodes of 4, at
  // the start of a node and halfway into one, for one and two micro-batches.
  Result<Graph> g = load_graph(testing::read_golden("fc3_cluster_pipeline.json")["graph"].dump());
  REQUIRE(g.ok());
  const Cluster cluster = nodes(8, 4);
  const PipelineOptions po{};
  const PlanOptions options{};
  pipeline_detail::Searcher searcher{*g, cluster, po, options};
  int ranges = 0;
  for (int64_t m : {int64_t{1}, int64_t{2}}) {
    Result<Graph> micro = micro_batch_graph(*g, m);
    REQUIRE(micro.ok());
    const pipeline_detail::Micro mg = pipeline_detail::prepare_micro(searcher, *micro);
    const int nb = static_cast<int>(mg.bounds.size());
    for (int64_t q : {int64_t{2}, int64_t{4}, int64_t{8}})
      for (int64_t align : {int64_t{0}, int64_t{2}}) {
        if (align + q > 4 && align > 0) continue;  // a stage starts inside a node only when small
        for (int i = 0; i < nb; ++i)
          for (int j = i + 1; j < nb; ++j) {
            CAPTURE(m);
            CAPTURE(q);
            CAPTURE(align);
            CAPTURE(i);
            CAPTURE(j);
            const int a = mg.bounds[i], b = mg.bounds[j];
            Result<double> least = searcher.least_f(mg.graph, mg.sig[i][j], a, b, align, q, m);
            REQUIRE(least.ok());
            Cluster cs = cluster;
            cs.devices = q;
            cs.first_device = align;
            const Graph sub = pipeline_detail::stage_graph(mg.graph, a, b);
            std::vector<std::vector<Config>> choices;
            for (const Vertex& v : sub.vertices) {
              Result<std::vector<Config>> c = enumerate_configs(sub, v.id, cs);
              REQUIRE(c.ok());
              choices.push_back(*c);
            }
            double brute = INFINITY;
            std::vector<size_t> at(sub.vertices.size(), 0);
            for (;;) {
              Strategy st;
              for (size_t v = 0; v < at.size(); ++v) st.push_back(choices[v][at[v]]);
              Result<Plan> p = evaluate(sub, cs, st);
              REQUIRE(p.ok());
              brute = std::min(brute, p->cost - StageWeights::weight_sync(*p));
              size_t v = 0;
              while (v < at.size() && ++at[v] == choices[v].size()) at[v++] = 0;
              if (v == at.size()) break;
            }
            CHECK(*least == doctest::Approx(brute).epsilon(1e-12));
            ++ranges;
          }
      }
  }
  CHECK(ranges > 20);
}

TEST_CASE("pipeline: a pair's floor from its layers holds under the practice model") {
  // The layers' least M * F + W (the weight gradients' reduction exposed
  // beside the backward) summed, on H100 nodes with and without the cap:
  // never above the pair's T planned on its own, every range planned.
  const Graph g = testing::small_llama(4, 16, 256);
  int pairs = 0, above = 0;
  for (double memory : {0.0, 80.0}) {
    Cluster cluster = testing::practice_h100(16);
    cluster.memory_gib = memory;
    const PipelineOptions po{.stages = kAuto, .microbatches = kAuto};
    const PlanOptions options{};
    pipeline_detail::Searcher searcher{g, cluster, po, options};
    for (int64_t m : {1, 4}) {
      Result<Graph> micro = micro_batch_graph(g, m);
      REQUIRE(micro.ok());
      const pipeline_detail::Micro mg = pipeline_detail::prepare_micro(searcher, *micro);
      for (int64_t s : {1, 2, 4}) {
        CAPTURE(memory);
        CAPTURE(s);
        CAPTURE(m);
        Result<pipeline_detail::Partition> layers = pipeline_detail::best_partition(
            searcher, mg, s, m, INFINITY, pipeline_detail::Depth::kVertexFloor);
        REQUIRE(layers.ok());
        CHECK(searcher.searches == 0);
        PipelineOptions one{.stages = s, .microbatches = m, .prune = false};
        Result<PipelinePlan> p = plan_pipeline(g, cluster, one);
        REQUIRE(p.ok());
        ++pairs;
        CHECK_MESSAGE(layers->floor <= p->plan.cost * (1 + 1e-9),
                      layers->floor << " > " << p->plan.cost);
        if (layers->floor >= 0.5 * p->plan.cost) ++above;
      }
    }
  }
  // Not a trivial floor: most reach half their T.
  MESSAGE(pairs << " pairs, " << above << " with a floor of at least half their T");
  CHECK(pairs == 12);
  CHECK(above * 2 > pairs);
}

TEST_CASE("pipeline: every pair's floor is at most its T") {
  // Every stage count that is a power of two, and the micro-batch counts up
  // to `microbatches` (the Transformer's are slow to plan without pruning).
  const std::vector<PruneCase> cases = {
      {"alexnet", Cluster{.devices = 8}, kAuto, 64},
      {"rnnlm", nodes(8, 4), kAuto, 64},
      {"transformer", nodes(16, 4), kAuto, 2},
      {"transformer", nodes(8, 4, 0.25), kAuto, 4},
  };
  int pairs = 0, above = 0, layer_near = 0;
  for (const PruneCase& c : cases) {
    Result<Graph> g = build_model(c.model);
    REQUIRE(g.ok());
    const PipelineOptions po{.stages = kAuto, .microbatches = kAuto};
    const PlanOptions options{};
    pipeline_detail::Searcher searcher{*g, c.cluster, po, options};
    for (int64_t m : auto_microbatch_counts(*g, c.microbatches)) {
      Result<Graph> micro = micro_batch_graph(*g, m);
      if (!micro) continue;
      const pipeline_detail::Micro mg = pipeline_detail::prepare_micro(searcher, *micro);
      for (int64_t s = 1; s <= c.cluster.devices && s < static_cast<int64_t>(mg.bounds.size());
           s *= 2) {
        CAPTURE(c.model);
        CAPTURE(c.cluster.memory_gib);
        CAPTURE(s);
        CAPTURE(m);
        // The floor from the layers alone searches nothing, and the parts'
        // plans only raise it.
        const int64_t searches = searcher.searches;
        Result<pipeline_detail::Partition> layers = pipeline_detail::best_partition(
            searcher, mg, s, m, INFINITY, pipeline_detail::Depth::kVertexFloor);
        REQUIRE(layers.ok());
        CHECK(searcher.searches == searches);
        CHECK(layers->T == INFINITY);
        // The parts' plans of least value first, then of least F as well:
        // each step only raises the floor.
        Result<pipeline_detail::Partition> values = pipeline_detail::best_partition(
            searcher, mg, s, m, INFINITY, pipeline_detail::Depth::kValueFloor);
        REQUIRE(values.ok());
        CHECK(values->T == INFINITY);
        CHECK(layers->floor <= values->floor * (1 + 1e-12));
        Result<pipeline_detail::Partition> floor = pipeline_detail::best_partition(
            searcher, mg, s, m, INFINITY, pipeline_detail::Depth::kFloor);
        REQUIRE(floor.ok());
        CHECK(floor->T == INFINITY);
        CHECK(values->floor <= floor->floor * (1 + 1e-12));
        if (layers->floor >= 0.9 * floor->floor) ++layer_near;
        // The pair alone, every range planned.
        PipelineOptions one{.stages = s, .microbatches = m, .prune = false};
        Result<PipelinePlan> p = plan_pipeline(*g, c.cluster, one);
        ++pairs;
        if (!p) {
          CHECK(p.error().where == "cluster.memory_gib");
          continue;
        }
        CHECK_MESSAGE(floor->floor <= p->plan.cost * (1 + 1e-9),
                      floor->floor << " > " << p->plan.cost);
        // The floor is not a trivial one: it reaches a fair share of T.
        if (floor->floor >= 0.5 * p->plan.cost) ++above;
      }
    }
  }
  MESSAGE(pairs << " pairs, " << above << " with a floor of at least half their T, " << layer_near
                << " whose floor from the layers is within 10% of the parts'");
  CHECK(pairs > 40);
  CHECK(above * 2 > pairs);
}

TEST_CASE("pipeline: the parts' objectives at a memory weight bound a range's plan under the cap") {
  // The floor of a candidate under the cap (best_partition()): a plan of a
  // range that fits has M * F + W >= (sum over its parts of their least
  // M * F + W + lambda * memory) - lambda * cap, at every weight lambda.
  Result<Graph> g = build_model("transformer");
  REQUIRE(g.ok());
  const Cluster cluster = nodes(8, 4, 0.3);
  const PipelineOptions po{};
  const PlanOptions options{};
  pipeline_detail::Searcher searcher{*g, cluster, po, options};
  const int64_t m = 8, q = 4;
  Result<Graph> micro = micro_batch_graph(*g, m);
  REQUIRE(micro.ok());
  const pipeline_detail::Micro mg = pipeline_detail::prepare_micro(searcher, *micro);
  const int nb = static_cast<int>(mg.bounds.size());
  const double cap = cluster.capacity_bytes();
  int capped = 0, checked = 0;
  for (int64_t k : {int64_t{1}, int64_t{2}})
    for (int i : {0, 1, nb / 2})
      for (int j = i + 1; j < nb; ++j) {
        CAPTURE(k);
        CAPTURE(i);
        CAPTURE(j);
        Result<const pipeline_detail::StagePlan*> sp =
            searcher.stage_plan(mg.graph, mg.sig[i][j], mg.bounds[i], mg.bounds[j], 0, q, m, k);
        REQUIRE(sp.ok());
        if (!(*sp)->fits) continue;
        const double value = static_cast<double>(m) * (*sp)->F + (*sp)->W;
        std::vector<double> weights = {1e-9, 1e-6, 1e-3};
        if ((*sp)->dual.lambda > 0) {
          ++capped;
          weights.push_back((*sp)->dual.lambda);
        }
        for (double lambda : weights) {
          double sum = 0;
          for (int t = i; t < j; ++t) {
            Result<double> o = searcher.part_objective(mg.graph, mg.sig[t][t + 1], mg.bounds[t],
                                                       mg.bounds[t + 1], 0, q, m, k, lambda);
            REQUIRE(o.ok());
            sum += *o;
          }
          ++checked;
          const double floor = sum - lambda * cap;
          CHECK_MESSAGE(floor <= value * (1 + 1e-9), floor << " > " << value);
        }
      }
  MESSAGE(checked << " bounds, " << capped << " ranges planned under the cap");
  CHECK(capped > 5);
}

TEST_CASE("pipeline auto under a cap: it fits whenever a pair fits with its working buffers") {
  const Graph g = testing::small_llama(4, 8, 512);
  Cluster c = testing::practice_h100(8);
  c.training.recompute = Recompute::kNone;
  Result<Plan> free = plan(g, c);
  REQUIRE(free.ok());
  const double top = free->memory.total();
  int compared = 0;
  for (double share : {0.3, 0.45, 0.6, 0.75, 0.9}) {
    CAPTURE(share);
    c.memory_gib = share * top / 0x1p30 + c.device.reserved_gib;
    c.headroom = 0;  // the cap itself: no margin
    double best = INFINITY;
    for (int64_t s : {1, 2, 4})
      for (int64_t m : {1, 2, 4}) {
        Result<PipelinePlan> p = plan_pipeline(g, c, PipelineOptions{s, m});
        if (p && p->plan.fits) best = std::min(best, p->plan.cost);
      }
    if (!std::isfinite(best)) continue;
    ++compared;
    PipelineOptions any{kAuto, kAuto};
    any.max_microbatches = 4;
    Result<PipelinePlan> a = plan_pipeline(g, c, any);
    REQUIRE(a.ok());
    CHECK(a->plan.fits);
    CHECK(a->plan.cost <= best * (1 + 1e-9));
  }
  CHECK(compared > 0);
}

TEST_CASE("pipeline: a pair's floor under the cap weighs its layers' memory") {
  // ZeRO 0 on 16 H100: the weights are whole on each device of a stage
  // unless split, so under a cap between the least memory and the
  // free plan's the cheapest configurations do not fit. The floor from the
  // layers under the cap (the Lagrangian of value + lambda * bytes, no
  // search) is then above the one without it, and still at most the pair's
  // T planned alone under the cap.
  const Graph g = testing::small_llama(4, 16, 256);
  Cluster free = testing::practice_h100(16);
  free.training.zero = 0;
  free.training.recompute = Recompute::kNone;
  free.memory_gib = 0;
  const PipelineOptions po{.stages = kAuto, .microbatches = kAuto};
  const PlanOptions options{};
  pipeline_detail::Searcher unbounded{g, free, po, options};
  int pairs = 0, raised = 0;
  for (int64_t m : {1, 4}) {
    Result<Graph> micro = micro_batch_graph(g, m);
    REQUIRE(micro.ok());
    const pipeline_detail::Micro mg = pipeline_detail::prepare_micro(unbounded, *micro);
    for (int64_t s : {1, 2}) {
      Result<pipeline_detail::Partition> without = pipeline_detail::best_partition(
          unbounded, mg, s, m, INFINITY, pipeline_detail::Depth::kVertexFloor);
      REQUIRE(without.ok());
      PipelineOptions one{.stages = s, .microbatches = m, .prune = false};
      Result<PipelinePlan> at_free = plan_pipeline(g, free, one);
      REQUIRE(at_free.ok());
      const double bytes = at_free->plan.memory.total();
      for (double share : {0.5, 0.7, 0.9}) {
        Cluster capped = free;
        capped.headroom = 0;
        capped.memory_gib = capped.device.reserved_gib + share * bytes / 0x1p30;
        CAPTURE(s);
        CAPTURE(m);
        CAPTURE(share);
        pipeline_detail::Searcher searcher{g, capped, po, options};
        const pipeline_detail::Micro cm = pipeline_detail::prepare_micro(searcher, *micro);
        Result<pipeline_detail::Partition> layers = pipeline_detail::best_partition(
            searcher, cm, s, m, INFINITY, pipeline_detail::Depth::kVertexFloor);
        REQUIRE(layers.ok());
        CHECK(searcher.searches == 0);
        CHECK(layers->floor >= without->floor * (1 - 1e-12));
        Result<PipelinePlan> p = plan_pipeline(g, capped, one);
        if (!p) {
          CHECK(p.error().where == "cluster.memory_gib");
          continue;
        }
        ++pairs;
        CHECK_MESSAGE(layers->floor <= p->plan.cost * (1 + 1e-9),
                      layers->floor << " > " << p->plan.cost);
        if (layers->floor > without->floor * 1.01) ++raised;
      }
    }
  }
  MESSAGE(pairs << " pairs planned under a cap, " << raised << " with a floor raised by the cap");
  CHECK(pairs > 0);
  CHECK(raised > 0);
}
