// Recomputation chosen by the search, for plan() (core/docs/
// practice-model.md, "Recomputation").
#pragma once

#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "search/dynamic_program.hpp"
#include "search/weighted_plan.hpp"

namespace pase {

// plan() with Recompute::kAuto: the least cost that fits of none, selective
// on every block, full on every block, and full on the first k blocks with
// selective on the others, for the k it searches (the fewest that fit, the
// most short of every block, the neighbours of the best; Plan::training
// says which), within
// kPracticeDualTolerance: a choice whose lower bound comes within it of the
// best plan that fits so far is left out unsearched. Without
// a cap, under the paper model or without decoder blocks, nothing is
// recomputed: recomputation only adds time.
Result<Plan> plan_recompute(const Graph& graph, const Cluster& cluster, const PlanOptions& options);

// How much more a search of `space` at memory weight `lambda`
// (SpaceSearch::once(1, lambda) with StageWeights{}) weighs any strategy
// under `to`'s recomputation than under `from`'s, at least (the clusters
// alike but for it): each vertex's least difference over its
// configurations, summed. The edges weigh alike under both, and the
// recomputation reaches a vertex's time and memory only through
// ops::recomputed(), so the vertices it leaves alike add 0. Then
// DP_to(lambda) >= DP_from(lambda) + this, a bound of `to`'s dual without
// its search. The costs come from (and stay in) `cache`.
double least_recompute_difference(const Graph& graph, const SearchSpace& space, const Cluster& from,
                                  const Cluster& to, double lambda, SearchCache& cache,
                                  int threads = 1);

}  // namespace pase
