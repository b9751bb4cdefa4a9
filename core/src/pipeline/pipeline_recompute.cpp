// plan_pipeline() of pipeline.hpp: the recomputation chosen over the
// searches of one recomputation each (plan_pipeline_fixed(),
// pipeline_search.cpp), or their floors alone (PipelineOptions::floors_only).
#include <algorithm>
#include <optional>
#include <string>

#include "pase/pipeline.hpp"
#include "pipeline/pipeline_searcher.hpp"
#include "search/progress.hpp"
#include "search/stop.hpp"

namespace pase {

using pipeline_detail::plan_pipeline_fixed;

namespace {

// Recomputation chosen by the search with a pipeline (core/docs/
// practice-model.md, "Recomputation"): none, then selective, then full on
// every block, the first whose pipeline fits; without a cap, none.
Result<PipelinePlan> plan_pipeline_choosing(const Graph& graph, const Cluster& cluster,
                                            const PipelineOptions& pipeline,
                                            const PlanOptions& options);

}  // namespace

Result<PipelinePlan> plan_pipeline(const Graph& graph, const Cluster& cluster,
                                   const PipelineOptions& pipeline, const PlanOptions& options) {
  // The caller's progress: one for the request, whatever searches it runs.
  RequestProgress progress(options);
  Result<PipelinePlan> out = plan_pipeline_choosing(graph, cluster, pipeline, progress.options());
  if (out) progress.finish();
  return out;
}

namespace {

Result<PipelinePlan> plan_pipeline_choosing(const Graph& graph, const Cluster& cluster,
                                            const PipelineOptions& pipeline,
                                            const PlanOptions& options) {
  if (cluster.training.recompute != Recompute::kAuto)
    return plan_pipeline_fixed(graph, cluster, pipeline, options);
  if (std::optional<Error> e = check_cluster(cluster)) return *e;
  Result<PipelinePlan> out = Error{"no recomputation tried", "training.recompute"};
  // Progress: a third for each recomputation when more than none may be
  // tried (the loop's last test below).
  const bool choosing = cluster.memory_gib > 0 && cluster.cost_model == CostModel::kPractice;
  static constexpr const char* kPhases[] = {"no recomputation", "selective recomputation",
                                            "full recomputation"};
  int part = 0;
  PipelineBound bound;
  PipelineOptions po = pipeline;
  po.bound_out = &bound;
  bool stopped_bound = false;
  if (pipeline.floors_only) {
    // Each recomputation's floors that the search may try.
    PipelineBound floors;
    int mode_index = 0;
    for (Recompute mode : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      Cluster c = cluster;
      c.training.recompute = mode;
      c.training.recompute_blocks = -1;
      c.training.recompute_rest = mode;
      const PlanOptions o = choosing ? progress_part(options, mode_index / 3.0,
                                                     (mode_index + 1) / 3.0, kPhases[mode_index])
                                     : options;
      PipelineBound one;
      po.bound_out = &one;
      Result<PipelinePlan> r = plan_pipeline_fixed(graph, c, po, o);
      if (!r && r.error().where != "pipeline.floors_only") return r.error();
      floors.recompute_floors[mode_index] = one.floor;
      floors.floor = std::min(floors.floor, one.floor);
      floors.lower_bound =
          mode_index == 0 ? one.lower_bound : std::min(floors.lower_bound, one.lower_bound);
      ++mode_index;
      if (!choosing) break;
    }
    if (pipeline.bound_out != nullptr) *pipeline.bound_out = floors;
    return Error{"the floors alone were asked for (no search)", "pipeline.floors_only"};
  }
  for (Recompute mode : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    Cluster c = cluster;
    c.training.recompute = mode;
    c.training.recompute_blocks = -1;
    c.training.recompute_rest = mode;
    const PlanOptions o =
        choosing ? progress_part(options, part / 3.0, (part + 1) / 3.0, kPhases[part]) : options;
    ++part;
    if (stopped_bound) {
      // After a stop: this recomputation's floors alone, those made before
      // the search if any, else its own (its search stops at its first
      // stage plan), for the bound.
      if (pipeline.known_floors != nullptr) {
        const double known = pipeline.known_floors->recompute_floors[part - 1];
        bound.lower_bound = std::min(bound.lower_bound, known);
        if (out) out->plan.lower_bound = std::min(out->plan.lower_bound, known);
        continue;
      }
      PipelineBound floors;
      PipelineOptions fo = po;
      fo.bound_out = &floors;
      (void)plan_pipeline_fixed(graph, c, fo, o);
      bound.lower_bound = std::min(bound.lower_bound, floors.lower_bound);
      if (out) out->plan.lower_bound = std::min(out->plan.lower_bound, floors.lower_bound);
      continue;
    }
    out = plan_pipeline_fixed(graph, c, po, o);
    if (out) out->plan.training = c.training;
    if (!bound.stopped.empty()) {
      // Stopped: unless this one's plan fits (then it is the answer's
      // recomputation), the recomputations not tried bound the answer with
      // their pairs' floors, computed before any search (a floor of one
      // recomputation is not one of another: a recomputed layer's F grows,
      // but its exposed weight_sync may shrink).
      const bool last = mode == Recompute::kFull || cluster.memory_gib <= 0 ||
                        cluster.cost_model != CostModel::kPractice;
      if (last || (out && out->plan.fits)) break;
      stopped_bound = true;
      continue;
    }
    if (out && out->plan.fits) break;
    // Under an incumbent, a recomputation that beats nothing leaves the
    // next one its chance (it may fit a faster split).
    if (!out && out.error().where != "cluster.memory_gib" &&
        out.error().where != "pipeline.incumbent_cost")
      break;
    if (cluster.memory_gib <= 0 || cluster.cost_model != CostModel::kPractice) break;
  }
  if (pipeline.bound_out != nullptr) *pipeline.bound_out = bound;
  return out;
}

}  // namespace

}  // namespace pase
