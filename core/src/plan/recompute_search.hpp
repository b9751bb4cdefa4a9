// Recomputation chosen by the search, for plan() (core/docs/
// practice-model.md, "Recomputation").
#pragma once

#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"

namespace pase {

// plan() with Recompute::kAuto: the least cost that fits of none, selective
// on every block, full on every block, and full on the fewest first blocks
// that fit with selective on the others (Plan::training says which). Without
// a cap, under the paper model or without decoder blocks, nothing is
// recomputed: recomputation only adds time.
Result<Plan> plan_recompute(const Graph& graph, const Cluster& cluster, const PlanOptions& options);

}  // namespace pase
