// What the searches of one space share (SearchCache, VertexCostCache) and
// the recomputation search's bound without a search
// (least_recompute_difference()).
#include <doctest/doctest.h>

#include <utility>
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

// The space of the small Llama on 8 H100 (practice model) with its edge
// prices and a cache, for the Lagrangian loop's tests. Not copied: the
// prices are bound to the space's configurations.
SearchSpace prepared(const Graph& g, const Cluster& c) {
  Result<SearchSpace> space = prepare_space(g, c, PlanOptions{});
  REQUIRE(space.ok());
  return std::move(*space);
}
struct SpacedLlama {
  Graph graph = small_llama();
  Cluster cluster = testing::practice_h100(8);
  SearchSpace space = prepared(graph, cluster);
  EdgePrices prices{graph, space.configs, EndView::of(ops::make_machine(cluster)),
                    kEdgePriceBudget};
  SearchCache cache;
};

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
        SpaceSearch(g, at, PlanOptions{}, StageWeights{}, *space, &prices, &cache).once(1, lambda);
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

TEST_CASE("practice loop under a cap: its bound is within the tolerance of the dual's maximum") {
  SpacedLlama spaced;
  auto& [g, c, space, prices, cache] = spaced;
  // (The lambda names the fixture's members: clang 14 cannot capture a
  // structured binding.)
  auto search = [&spaced](double lambda) {
    Result<WeightedSearch> r =
        SpaceSearch(spaced.graph, spaced.cluster, PlanOptions{}, StageWeights{}, spaced.space,
                    &spaced.prices, &spaced.cache)
            .once(1, lambda);
    REQUIRE(r.ok());
    return *r;
  };
  const StageWeights plain;
  const double free_bytes = plain.bytes(search(0).plan.memory);
  const double least = least_memory_strategy(g, c, space, StageWeights{}).bytes;
  REQUIRE(least < free_bytes);
  int searched_loops = 0;
  for (double share : {0.2, 0.5, 0.8}) {
    CAPTURE(share);
    const double cap = least + share * (free_bytes - least);
    c.memory_gib = cap / 0x1p30 + c.device.reserved_gib;
    c.headroom = 0;  // the cap itself: no margin
    REQUIRE(c.capacity_bytes() == doctest::Approx(cap));
    SpaceSearch loop(g, c, PlanOptions{}, StageWeights{}, space, &prices, &cache);
    Result<Plan> p = loop.under_cap();
    REQUIRE(p.ok());
    const DualPoint dual = loop.dual();
    // It fits as the search sees memory (without the working buffers).
    CHECK(plain.bytes(p->memory) <= c.capacity_bytes());
    searched_loops += dual.lambda > 0;
    // The dual g(lambda) = DP(lambda) - lambda * C on a grid of weights
    // about the loop's: nowhere above the loop's bound by more than the
    // tolerance (of the objective, as the loop measures it).
    const double centre = dual.lambda > 0 ? dual.lambda : 1;
    for (double f = 1.0 / 256; f <= 256; f *= 1.25) {
      const double lambda = centre * f;
      const WeightedSearch at = search(lambda);
      CAPTURE(lambda);
      CHECK(at.objective - lambda * c.capacity_bytes() <=
            p->lower_bound + kPracticeDualTolerance * at.objective);
    }
  }
  CHECK(searched_loops > 0);
}

// A loop started from a search at the weight of another loop's bound
// (WarmStart, plan_recompute()'s dual of the next choice) ends in no more
// searches than from the two ends, its own included (here 3 and 4 instead
// of 5 and 6, and 5 for 5), and its plan still fits and holds the bound the
// loop from the ends proved.
TEST_CASE("practice loop under a cap: a warm start ends in fewer searches") {
  SpacedLlama spaced;
  auto& [g, c, space, prices, cache] = spaced;
  const StageWeights plain;
  Result<WeightedSearch> free =
      SpaceSearch(g, c, PlanOptions{}, plain, space, &prices, &cache).once(1, 0);
  REQUIRE(free.ok());
  const double free_bytes = plain.bytes(free->plan.memory);
  const double least = least_memory_strategy(g, c, space, plain).bytes;
  int fewer = 0;
  for (double share : {0.2, 0.5, 0.8}) {
    CAPTURE(share);
    c.memory_gib = (least + share * (free_bytes - least)) / 0x1p30 + c.device.reserved_gib;
    c.headroom = 0;  // the cap itself: no margin
    SpaceSearch search(g, c, PlanOptions{}, plain, space, &prices, &cache);
    Result<Plan> ends = search.under_cap(*free);
    REQUIRE(ends.ok());
    const DualPoint dual = search.dual();
    REQUIRE(dual.lambda > 0);
    Result<WeightedSearch> at = search.once(1, dual.lambda);
    REQUIRE(at.ok());
    Result<Plan> warm = search.under_cap(*free, WarmStart{dual.lambda, *at});
    REQUIRE(warm.ok());
    CAPTURE(ends->search.searches);
    CAPTURE(warm->search.searches);
    // The warm start's own search counts too (under_cap() counts
    // neither it nor the search without the cap).
    CHECK(warm->search.searches + 1 <= ends->search.searches);
    fewer += warm->search.searches + 1 < ends->search.searches;
    CHECK(warm->fits == ends->fits);
    if (warm->fits) CHECK(warm->cost >= ends->lower_bound * (1 - 1e-12));
    CHECK(warm->lower_bound >= ends->lower_bound * (1 - kPracticeDualTolerance));
  }
  CHECK(fewer > 0);
}

TEST_CASE("practice plan under a cap: the working buffers kept out when a plan fits with them") {
  const Graph g = small_llama();
  Cluster c = testing::practice_h100(8);
  c.training.recompute = Recompute::kNone;
  Result<Plan> free = plan(g, c);
  REQUIRE(free.ok());
  const StageWeights plain;
  const double free_bytes = plain.bytes(free->memory);
  Result<SearchSpace> space = prepare_space(g, c, PlanOptions{});
  REQUIRE(space.ok());
  const double least = least_memory_strategy(g, c, *space, plain).bytes;
  auto at = [&](double cap) {
    Cluster capped = c;
    capped.memory_gib = cap / 0x1p30 + c.device.reserved_gib;
    capped.headroom = 0;  // the cap itself: no margin
    return plan(g, capped);
  };
  int fitting = 0;
  for (int step = 1; step < 16; ++step) {
    const double cap = least + step / 16.0 * (free_bytes - least);
    CAPTURE(cap);
    Result<Plan> p = at(cap);
    REQUIRE(p.ok());
    // What it says of its fit is what it holds.
    CHECK(p->fits == (p->memory.total() <= cap * (1 + 1e-12)));
    // A plan under a lower cap that fits this one with its working
    // buffers shows that one fits: the plan found must.
    for (double share : {0.02, 0.05, 0.1}) {
      Result<Plan> lower = at(cap - share * (free_bytes - least));
      if (!lower || lower->memory.total() > cap) continue;
      CHECK(p->fits);
      break;
    }
    fitting += p->fits;
  }
  CHECK(fitting > 0);
}

// On the small Llama, no choice planned alone beats the recomputation
// search's plan by more than the Lagrangian loop's tolerance: none,
// selective and full, and full on each number of first blocks with
// selective on the others (k = 1 to 3). The k above the fewest that fit
// are searched from both ends of the family and around the best (at caps
// of 7.9e7 and 9.6e7 bytes, k = 3 and k = 2 beat full on every block, which
// a search of the fewest k alone returned). Under
// caps between selective's memory without the cap and none's, full on the
// first block costs less than selective on all (the longer backward hides
// more of the weight gradients' reduction), and none's plan under the cap
// costs little more than without it (a test before the loop's search once
// ended the loop with the least memory's plan there: 8 times the cost).
TEST_CASE("recompute auto under a cap: no choice planned alone beats its plan") {
  const Graph g = small_llama();
  const Cluster c = testing::practice_h100(8);
  auto choice = [&](Recompute mode, int64_t k, Recompute rest, double cap) {
    Cluster at = with_recompute(c, mode, k, rest);
    at.memory_gib = cap > 0 ? cap / 0x1p30 + c.device.reserved_gib : 0;
    at.headroom = 0;  // the cap itself: no margin
    return plan(g, at);
  };
  Result<Plan> free = choice(Recompute::kNone, -1, Recompute::kNone, 0);
  Result<Plan> selective = choice(Recompute::kSelective, -1, Recompute::kSelective, 0);
  REQUIRE(free.ok());
  REQUIRE(selective.ok());
  const StageWeights plain;
  const double top = plain.bytes(free->memory);
  const double below = plain.bytes(selective->memory);
  REQUIRE(below < top);
  Result<SearchSpace> space = prepare_space(g, c, PlanOptions{});
  REQUIRE(space.ok());
  const double least =
      least_memory_strategy(g, with_recompute(c, Recompute::kFull, -1, Recompute::kFull), *space,
                            plain)
          .bytes;
  std::vector<double> caps;
  for (int step = 1; step < 10; ++step) caps.push_back(least + step / 10.0 * (top - least));
  for (double share : {0.1, 0.5, 0.9}) caps.push_back(below + share * (top - below));
  int compared = 0;
  for (double cap : caps) {
    CAPTURE(cap);
    Cluster capped = c;
    capped.memory_gib = cap / 0x1p30 + c.device.reserved_gib;
    capped.headroom = 0;  // the cap itself: no margin
    capped.training.recompute = Recompute::kAuto;
    Result<Plan> chosen = plan(g, capped);
    REQUIRE_MESSAGE(chosen.ok(), testing::why(chosen));
    std::vector<Result<Plan>> alone;
    for (Recompute mode : {Recompute::kNone, Recompute::kSelective, Recompute::kFull})
      alone.push_back(choice(mode, -1, mode, cap));
    for (int64_t k = 1; k < 4; ++k)
      alone.push_back(choice(Recompute::kFull, k, Recompute::kSelective, cap));
    for (size_t i = 0; i < alone.size(); ++i) {
      CAPTURE(i);
      if (!alone[i] || !alone[i]->fits) continue;
      ++compared;
      CHECK(chosen->fits);
      CHECK(chosen->cost <= alone[i]->cost / (1 - kPracticeDualTolerance));
    }
    if (cap > below) {
      REQUIRE(alone[0].ok());
      CHECK(alone[0]->cost <= free->cost * 1.25);
    }
  }
  CHECK(compared > 20);
}

// The floor the Lagrangian loop keeps the cap's room for: no strategy holds
// less working buffers, and each vertex at its least holds exactly that.
TEST_CASE("practice plan under a cap: the least working buffers bound every strategy's") {
  const Graph g = small_llama();
  Cluster c = testing::practice_h100(8);
  c.training.zero = 3;  // the gathered weights count too
  Result<SearchSpace> space = prepare_space(g, c, PlanOptions{});
  REQUIRE(space.ok());
  const double floor = least_working_bytes(g, c, *space);
  REQUIRE(floor > 0);
  const ops::Machine m = ops::make_machine(c);
  Strategy least(g.vertices.size());
  uint64_t seed = 12345;
  std::vector<Strategy> random(20, Strategy(g.vertices.size()));
  for (size_t v = 0; v < g.vertices.size(); ++v) {
    const ConfigSet& set = space->configs[v];
    size_t best = 0;
    for (size_t i = 1; i < set.size(); ++i)
      if (ops::working_bytes(g, g.vertices[v], set.at(i), m) <
          ops::working_bytes(g, g.vertices[v], set.at(best), m))
        best = i;
    least[v].assign(set.at(best), set.at(best) + set.dims);
    for (Strategy& s : random) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      const size_t i = (seed >> 33) % set.size();
      s[v].assign(set.at(i), set.at(i) + set.dims);
    }
  }
  Result<Plan> at_least = evaluate(g, c, least);
  REQUIRE(at_least.ok());
  CHECK(at_least->memory.working == floor);
  for (const Strategy& s : random) {
    Result<Plan> p = evaluate(g, c, s);
    REQUIRE(p.ok());
    CHECK(p->memory.working >= floor);
  }
  // The paper's model holds none.
  Cluster paper = c;
  paper.cost_model = CostModel::kPaper;
  paper.training.recompute = Recompute::kNone;
  Result<SearchSpace> paper_space = prepare_space(g, paper, PlanOptions{});
  REQUIRE(paper_space.ok());
  CHECK(least_working_bytes(g, paper, *paper_space) == 0);
}
