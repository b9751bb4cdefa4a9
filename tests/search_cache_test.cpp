// What the searches of one space share (SearchCache, VertexCostCache) and
// the recomputation search's bound without a search
// (least_recompute_difference()).
#include <doctest/doctest.h>

#include <vector>

#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "pase/import.hpp"
#include "pase/llm.hpp"
#include "pase/plan.hpp"
#include "plan/recompute_search.hpp"
#include "search/dynamic_program.hpp"
#include "search/weighted_plan.hpp"
#include "test_util.hpp"

using namespace pase;

namespace {

// A small Llama of 4 decoder blocks (the recomputation reaches them).
Graph small_llama() { return testing::small_llama(4, 8, 512); }

Cluster with_recompute(Cluster c, Recompute mode, int64_t blocks, Recompute rest) {
  c.training.recompute = mode;
  c.training.recompute_blocks = blocks;
  c.training.recompute_rest = rest;
  return c;
}

}  // namespace

TEST_CASE("search cache: kept vertex costs are vertex_cost_vector's under every weight") {
  const Graph g = small_llama();
  const Cluster c = testing::practice_h100(8);
  Result<SearchSpace> space = prepare_space(g, c, PlanOptions{});
  REQUIRE(space.ok());
  // Plain first (the parts made without the memory), then weights that read
  // the memory, a stage's weights, and another recomputation: were the
  // parts kept by vertex alone, the last would read the first's.
  std::vector<ops::Machine> machines;
  machines.push_back(ops::make_machine(c));
  ops::Machine capped = machines.back();
  capped.memory_weight = 1e3;
  machines.push_back(capped);
  ops::Machine stage = capped;
  stage.microbatches = 4;
  stage.activation_copies = 3;
  stage.sync_weight = 0.5;
  stage.cost_weight = 2;
  machines.push_back(stage);
  ops::Machine full =
      ops::make_machine(with_recompute(c, Recompute::kFull, 2, Recompute::kSelective));
  full.memory_weight = 1e3;
  machines.push_back(full);
  machines.push_back(capped);
  VertexCostCache cache;
  int differ = 0;
  for (const ops::Machine& m : machines)
    for (size_t v = 0; v < g.vertices.size(); ++v) {
      const int id = static_cast<int>(v);
      const std::vector<double> kept = cache.costs(g, id, space->configs[v], m);
      const std::vector<double> made = vertex_cost_vector(g, id, space->configs[v], m);
      CHECK(kept == made);
      if (m.training.recompute == Recompute::kFull &&
          made != vertex_cost_vector(g, id, space->configs[v], capped))
        ++differ;
    }
  // The recomputation changed some vertices' costs: the check above saw it.
  CHECK(differ > 0);
}

TEST_CASE("search cache: searches sharing one plan alike and find the matrices made before") {
  const Graph g = small_llama();
  const Cluster c = testing::practice_h100(8);
  Result<SearchSpace> space = prepare_space(g, c, PlanOptions{});
  REQUIRE(space.ok());
  const ops::Machine m = ops::make_machine(c);
  EdgePrices prices(g, space->configs, EndView::of(m), kEdgePriceBudget);
  SearchCache cache;
  std::vector<DpResult> shared, alone;
  for (double memory_weight : {0.0, 5e2, 5e2}) {
    ops::Machine w = m;
    w.memory_weight = memory_weight;
    Result<DpResult> a = run_dp(g, space->configs, space->ord, space->classes, w, space->est,
                                PlanOptions{}, {}, &prices, &cache);
    Result<DpResult> b =
        run_dp(g, space->configs, space->ord, space->classes, w, space->est, PlanOptions{});
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->cost == b->cost);
    CHECK(a->choice == b->choice);
    shared.push_back(std::move(*a));
    alone.push_back(std::move(*b));
  }
  // The later searches find every matrix the first made (one weight of the
  // edges throughout), more than a search alone shares between its blocks.
  CHECK(shared[1].shared_matrices > alone[1].shared_matrices);
  CHECK(shared[2].shared_matrices == shared[1].shared_matrices);
  // Searches with prices of their own (gone after each) make their
  // matrices anew, from their own prices.
  for (int run = 0; run < 2; ++run) {
    Result<DpResult> own = run_dp(g, space->configs, space->ord, space->classes, m, space->est,
                                  PlanOptions{}, {}, nullptr, &cache);
    REQUIRE(own.ok());
    CHECK(own->cost == alone[0].cost);
    CHECK(own->shared_matrices == alone[0].shared_matrices);
  }
}

TEST_CASE("recompute search: the least difference bounds the search under another choice") {
  const Graph g = small_llama();
  const Cluster c = testing::practice_h100(8);
  Result<SearchSpace> space = prepare_space(g, c, PlanOptions{});
  REQUIRE(space.ok());
  EdgePrices prices(g, space->configs, EndView::of(ops::make_machine(c)), kEdgePriceBudget);
  SearchCache cache;
  const Cluster none = with_recompute(c, Recompute::kNone, -1, Recompute::kNone);
  const Cluster selective = with_recompute(c, Recompute::kSelective, -1, Recompute::kSelective);
  const Cluster full = with_recompute(c, Recompute::kFull, -1, Recompute::kFull);
  const Cluster mixed = with_recompute(c, Recompute::kFull, 1, Recompute::kSelective);
  auto search = [&](const Cluster& at, double lambda) {
    Result<WeightedSearch> r =
        search_once(g, at, PlanOptions{}, StageWeights{}, *space, prices, 1, lambda, &cache);
    REQUIRE(r.ok());
    return r->objective;
  };
  for (double lambda : {0.0, 1e2, 1e4, 1e6}) {
    CAPTURE(lambda);
    CHECK(least_recompute_difference(g, *space, none, none, lambda, cache) == 0);
    for (const Cluster* from : {&none, &selective, &full})
      for (const Cluster* to : {&none, &selective, &full, &mixed}) {
        const double bound = search(*from, lambda) +
                             least_recompute_difference(g, *space, *from, *to, lambda, cache);
        const double searched = search(*to, lambda);
        CHECK(bound <= searched * (1 + 1e-12));
      }
  }
  // Without a memory weight, recomputation only adds time: the bound rises.
  CHECK(least_recompute_difference(g, *space, none, full, 0, cache) > 0);
}
