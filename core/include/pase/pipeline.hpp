// Pipeline stages and micro-batches on top of the per-layer plans
// (core/docs/pipeline.md).
//
// USAGE
//   PipelineOptions po{.stages = 0, .microbatches = 0};   // 0: "auto"
//   Result<PipelinePlan> p = plan_pipeline(graph, cluster, po);
//   Result<PipelinePlan> e = evaluate_pipeline(graph, cluster, strategy);
//
// THE MODEL. Stages are contiguous ranges of the vertex order; stage s runs
// on devices s*q .. (s+1)*q - 1 (q = devices / S) and plans its layers over
// them. Every stage runs the micro-batch graph (the graph inputs' first
// dimension divided by M). A stage costs A_s = F_s + X_s per micro-batch
// (its layers but their weight-gradient reductions, its internal edges, and
// sending its outputs on) and W_s once per step (the weight-gradient
// reductions). The step costs
//   T = sum_s A_s + (M - 1) * max_s A_s + max_s W_s,
// and a stage holds the activations of k_s micro-batches (GPipe: M; 1F1B:
// min(S - s, M)). Interleaved 1F1B with v virtual stages (evaluation only):
//   T = M * max_s A_s + (sum_s A_s - max_s A_s) / v + max_s W_s,
// each stage's sends X_s counted v times in A_s, and k_s =
// min(M, ceil((2 (S - s - 1) + (v - 1) S + 1) / v)).
//
// THE SEARCH. For given S and M every candidate stage (a range of layers at a
// position) takes the plan of least M * A_s + W_s that fits the memory cap
// (the dynamic program of plan.hpp, with its weights); then the partition
// into stages minimises T exactly over those stage plans. Stage plans are
// shared between ranges that hold the same layers (an LLM's repeated blocks)
// at positions that see the nodes alike. With "auto" (0), S ranges over the
// divisors of the device count and M over the divisors of the batch up to
// max_microbatches; the least T wins, ties to fewer stages, then fewer
// micro-batches.
//
// BOUNDARIES. A graph of at most 64 vertices may be cut anywhere; a larger
// one only where the fewest tensors cross (the boundaries between repeated
// blocks). The result is exact over the boundaries allowed.
//
// PROGRESS. PlanOptions::on_progress sees one fraction for the request that
// never goes back (Progress), and fraction 1 once at the end;
// vertices_done / vertices_total count stage plans, not vertices. The stage
// plans' share counts those searched of every range the pairs left may
// need (and the plans under the cap, as they are needed); it drops as
// pruning passes ranges by. When the search plans S = M = 1 first (several
// pairs, pruning on), that whole-graph plan fills the first half ("pipeline:
// the plan without a pipeline", each search under the cap its share), the
// pairs' lower bounds a tenth of the rest, and the stage plans the others.
// With recompute kAuto under a cap, each recomputation tried is a third.
//
// RECOMPUTATION. With Training::recompute kAuto, the search above runs with
// none, then selective, then full recomputation of every block, and keeps
// the first whose pipeline fits (Plan::training says which).
//
// ERRORS
//   "pipeline.stages": S does not divide the device count, or is more than
//   the boundaries allow; "pipeline.microbatches": M does not divide the
//   batch of every graph input, or the micro-batch graph does not build (a
//   Reshape that names the batch); "cluster.memory_gib": no partition fits;
//   "pipeline.incumbent_cost": no pipeline tried is cheaper than the
//   incumbent (with recompute kAuto: under no recomputation tried);
//   "time_limit_s" (or "cancelled"): stopped before any pipeline was found
//   and with no incumbent; the errors of plan() (memory limit of the
//   tables).
//
// A TIME LIMIT. PlanOptions::time_limit_s (and cancel) stop the search
// where it is: it returns the best pipeline found so far, not optimal, with
// Plan::lower_bound the least of its T and the floors of the pairs it had
// not finished, and PipelineInfo::stopped set (core/docs/pipeline.md, "A
// time limit").
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"

namespace pase {

enum class Schedule : uint8_t { k1F1B, kGPipe };
const char* schedule_name(Schedule schedule);  // "1f1b", "gpipe"

inline constexpr int64_t kAuto = 0;

// What a pipeline search proved, and how it ended, whatever it returns (a
// plan, or the error that nothing beats the incumbent).
struct PipelineBound {
  // A lower bound of T over every pipeline of the pairs (S, M) tried: at
  // the search's end the least T (the incumbent's when nothing beats it;
  // with a gap accepted, PlanOptions::max_gap, at most that and the floors
  // of what it left unsearched);
  // after a stop, the least of the best T found and the floors of the pairs
  // not done (core/docs/pipeline.md, "A time limit"). 0: none known.
  double lower_bound = 0;
  // "time limit" or "cancelled" when the search stopped before its end
  // (PlanOptions::time_limit_s, PlanOptions::cancel); "" otherwise.
  std::string stopped;
  std::string phase;  // the progress's phase it stopped in
  // With PipelineOptions::floors_only: the least floor of the pairs of each
  // recomputation tried (none, selective, full; infinity where none was
  // tried or no pair fits), and `floor` the least of them. A lower bound of
  // T over every pipeline of those recomputations, whatever the incumbent.
  double recompute_floors[3] = {std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::infinity()};
  double floor = std::numeric_limits<double>::infinity();
};

enum class Compose { kAuto, kOn, kOff };

struct PipelineOptions {
  int64_t stages = 1;        // S, or kAuto
  int64_t microbatches = 1;  // M, or kAuto
  Schedule schedule = Schedule::k1F1B;
  int64_t max_microbatches = 64;  // the largest M that "auto" tries
  // Skip the ranges and (S, M) pairs that lower bounds prove cannot win
  // (core/docs/pipeline.md, "Pruning"); the result is the same either way.
  // false: plan every range, the reference the tests compare with.
  bool prune = true;
  // The stage plans without a cap of a language model's ranges of more than
  // one segment from the composition of its repeated blocks (core/docs/
  // pipeline.md, "Composing the repeated blocks") instead of a search per
  // range: kAuto where it is estimated the cheaper, kOn wherever the graph
  // composes, kOff never. The same plans up to rounding and ties.
  Compose compose = Compose::kAuto;
  // A step cost to beat (FLOP-equivalents, the T of another strategy: the
  // best layout's, core/docs/layouts.md, "Both answers"): the search starts
  // from it, so that pairs and ranges whose lower bound is above it go
  // unsearched, and returns an error at "pipeline.incumbent_cost" when no
  // pipeline it tries is cheaper. Infinity: none.
  double incumbent_cost = std::numeric_limits<double>::infinity();
  // Out, may be null: what the search proved (PipelineBound).
  PipelineBound* bound_out = nullptr;
  // Only the pairs' floors from their layers (core/docs/pipeline.md, "A
  // time limit"): no search; bound_out gets them, and the search returns
  // the error at "pipeline.floors_only". The answers compute every ZeRO
  // stage's before they search any, so that a stop has its bound at hand.
  bool floors_only = false;
  // In, may be null: the floors of this search's recomputations, made
  // before with floors_only. After a stop, the recomputations not tried
  // take these instead of computing their own.
  const PipelineBound* known_floors = nullptr;
};

// A strategy with a pipeline: a configuration and a stage per vertex of the
// micro-batch graph (stage_of non-decreasing from 0, every stage present).
struct PipelineStrategy {
  Strategy configs;
  std::vector<int> stage_of;
  int64_t microbatches = 1;
  Schedule schedule = Schedule::k1F1B;
  // Interleaved 1F1B: each device runs `virtual_stages` chunks of its stage
  // (Megatron-LM's virtual pipeline). 1: plain 1F1B or GPipe.
  int64_t virtual_stages = 1;
};

// One stage of a pipeline plan: costs in FLOP-equivalents of the micro-batch
// graph, memory of its device 0 with k_s micro-batches of activations.
struct PipelineStage {
  int first_vertex = 0, last_vertex = 0;  // the range [first, last)
  int64_t first_device = 0, devices = 0;  // global device ids [first, first + devices)
  double F = 0, W = 0, X = 0, A = 0;
  int64_t activation_copies = 1;  // k_s
  MemoryBytes memory;
  bool fits = true;   // memory.total() <= the cap (true without one)
  double time_s = 0;  // A_s / (tflops * 1e12): one micro-batch through the stage
};

struct PipelineInfo {
  int64_t stages = 1, microbatches = 1;
  Schedule schedule = Schedule::k1F1B;
  int64_t virtual_stages = 1;  // interleaved 1F1B's chunks per device
  int64_t micro_batch = 0;     // the batch of the micro-batch graph
  std::vector<int> stage_of;   // per vertex
  std::vector<PipelineStage> stage;
  int allowed_boundaries = 0;  // positions a stage may start at (search only)
  int stage_plans = 0;         // distinct stage plans searched (search only)
  // The least cost without a pipeline (S = M = 1), when the search tried it
  // ("auto" does); 0 otherwise.
  double no_pipeline_cost = 0;
  // "time limit" or "cancelled" when the search stopped before its end and
  // this is the best pipeline it had found (Plan::lower_bound: what it
  // proved); "" otherwise.
  std::string stopped;
};

// "pipeline x4 (8 micro-batches, 1F1B)": the practitioner's words for it.
std::string pipeline_label(const PipelineInfo& pipeline);

// A plan with a pipeline. `plan` is over `graph`, the micro-batch graph:
// strategy, per-vertex costs (each at its stage's devices), per-edge costs
// (an edge between stages: its share of X), memory per vertex with its
// stage's k_s; cost = T, step_time_s = T / (tflops * 1e12), memory = the
// largest stage's; under a cap, `optimal` when every stage plan met its
// bound (T is then the least over the boundaries allowed).
struct PipelinePlan {
  Graph graph;
  Plan plan;
  PipelineInfo pipeline;
};

// A step's time by part, in seconds (core/docs/practice-model.md, "The
// step's parts"); the parts sum to the plan's step time. Without a pipeline:
// the layers' compute less recomputation, the recomputation, the layers'
// communication with the re-distributions (what the practice model leaves
// exposed), and no bubble. With one: M times the parts of one micro-batch
// through the stage of largest A_s (its sends to the next stage are
// communication), the once-per-step weight reductions as communication, and
// the rest of T, (sum_s A_s - max_s A_s) / v, as the bubble.
struct StepBreakdown {
  double compute_s = 0, recompute_s = 0, communication_s = 0, bubble_s = 0;
};
// `plan` with its pipeline (nullptr: none), on devices of `tflops`.
StepBreakdown step_breakdown(const Plan& plan, const PipelineInfo* pipeline, double tflops);

// The micro-batch graph: the graph lowered again with the first dimension of
// every input divided by `microbatches` (the graph itself for 1).
Result<Graph> micro_batch_graph(const Graph& graph, int64_t microbatches);

Result<PipelinePlan> plan_pipeline(const Graph& graph, const Cluster& cluster,
                                   const PipelineOptions& pipeline,
                                   const PlanOptions& options = {});

// The micro-batch counts that "auto" tries for `graph`: the divisors of its
// batch up to `max_microbatches` (1 when it has none).
std::vector<int64_t> auto_microbatch_counts(const Graph& graph, int64_t max_microbatches);

// The step time and memory of a given pipeline strategy. Errors name the
// field: "strategy.stage_of[4]", "strategy.configs[2][1]",
// "strategy.microbatches".
Result<PipelinePlan> evaluate_pipeline(const Graph& graph, const Cluster& cluster,
                                       const PipelineStrategy& strategy);

}  // namespace pase
