// Recomputation chosen by the search, for plan() (core/docs/
// practice-model.md, "Recomputation").
#pragma once

#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "search/weighted_plan.hpp"

namespace pase {

// plan() with Recompute::kAuto: the least cost that fits of none, selective
// on every block, full on every block, and full on the fewest first blocks
// that fit with selective on the others (Plan::training says which). Without
// a cap, under the paper model or without decoder blocks, nothing is
// recomputed: recomputation only adds time.
Result<Plan> plan_recompute(const Graph& graph, const Cluster& cluster, const PlanOptions& options);

// The least memory any strategy of `space` reaches under `cluster`, as the
// search sees it (StageWeights::bytes with one copy of the activations).
// That memory is a sum over the vertices, so this is each vertex at its
// least: the optimum of a search that weighs memory alone, without the
// search.
double least_memory(const Graph& graph, const Cluster& cluster, const SearchSpace& space);

}  // namespace pase
