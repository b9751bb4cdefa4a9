// The two answers of a plan of a language model (core/docs/layouts.md,
// "Both answers"): first the best layout that Megatron-LM and torchtitan
// run, then the per-layer plan (what JAX/GSPMD runs), with what it gains.
//
// USAGE
//   Result<PlanAnswers> a = plan_answers(graph, cluster, AnswerOptions{});
//   a->layouts.ranked[0];   // the best layout
//   a->per_layer;           // the per-layer plan, never slower than it
//   a->gain_s;              // 0 when the per-layer plan is the layout's own
//
// THE METHOD. The layout search (layout_search.hpp) runs first. Its best
// layout's step is the incumbent of the per-layer search: plan_pipeline()
// with PipelineOptions::incumbent_cost, so that what cannot beat it goes
// unsearched, once per ZeRO stage 0 to 3 (AnswerOptions::zero_auto) but
// those priced like a higher stage (zero_alike(): that stage's fastest plan
// is at least as fast, so an equal step is the higher stage's), in the
// order of the stages' floors (the least first; ties from 0 to 3), each
// stage's search starting from the best step found so far (a later stage's
// plan replaces it only when faster, so an equal step keeps the stage
// searched first), with the
// micro-batches "auto" by default. When no per-layer plan beats the
// layout, the per-layer answer is the layout's own strategy (evaluated as
// `pase eval --layout` evaluates it): it gains nothing, and says so. A
// recomputation, ZeRO stage or pipeline that the request sets and the
// layout does not share is honoured instead (PlanAnswers::set_by_hand):
// the per-layer search then runs without the incumbent.
//
// ERRORS: layout_model_of()'s at "model" for a graph that is not a
// language model's, the layout search's, and plan_pipeline()'s (but
// "pipeline.incumbent_cost", which means the layout wins). No layout that
// fits is not an error: the per-layer plan is then searched alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pase/cluster.hpp"
#include "pase/export.hpp"
#include "pase/graph.hpp"
#include "pase/layout_search.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"

namespace pase {

struct AnswerOptions {
  // The per-layer search's pipeline: by default none, with the
  // micro-batches (gradient accumulation) searched.
  PipelineOptions pipeline{.stages = 1, .microbatches = kAuto};
  // Search ZeRO 0 to 3 for the per-layer plan (false: the cluster's stage).
  bool zero_auto = true;
  // The layout search's options; its gbs is the graph's batch.
  LayoutSearchOptions layouts;
  int64_t vocab_multiple = kLlmVocabMultiple;  // layout_model_of()'s
};

struct PlanAnswers {
  LayoutModel model;     // the language model of the graph (layout_model_of())
  LayoutSearch layouts;  // ranked.front(): the best layout, when one fits
  // The per-layer answer: over `graph` (the request's graph, or the best
  // layout's own when it wins), with the training it is priced with (the
  // ZeRO stage chosen; PipelinePlan::plan.training: the recomputation).
  Graph graph;
  Cluster cluster;
  PipelinePlan per_layer;
  bool layout_wins = false;  // no per-layer plan beats the best layout
  // What the request sets by hand (its recomputation, ZeRO stage or
  // pipeline) that the best layout sets otherwise: "the recomputation",
  // "the ZeRO stage", "the pipeline", or "mesh splits only" (the request's
  // EnumOptions::mesh_only: a plan the JAX program runs whole). The
  // per-layer search honours it and
  // does not start from the layout, so it may be slower (gain_s < 0).
  std::vector<std::string> set_by_hand;
  // Over the best layout (0 without one, or when the layout wins).
  double gain_s = 0, gain_fraction = 0;
  // Where the per-layer plan differs from the best layout: its ZeRO stage,
  // its micro-batches and pipeline, and the layers split otherwise, those
  // of the decoder blocks once for all the blocks alike ("attention: in 32
  // of 32 blocks, tensor parallel x4 (heads) ... (the layout: ...)"). Empty
  // when it wins.
  std::vector<std::string> differs_at;
  // With a token budget (AnswerOptions::layouts.tokens): the per-layer
  // plan's days to train and, with a price, its cost (as a ranked layout's).
  double days = 0, cost = 0;
  // What the per-layer search proved (core/docs/pipeline.md, "A time
  // limit"): a lower bound of the step of every per-layer plan it searched
  // and of the best layout (seconds), and the proven gap of the per-layer
  // answer, (its step - that bound) / its step: 0 when it is proven the
  // best, -1 when no bound is known (a stage plan of the bounded search).
  double lower_bound_s = 0, gap = 0;
  // "time limit" or "cancelled" when the search stopped before its end
  // (PlanOptions::time_limit_s, cancel), with where: the per-layer answer
  // is then the best found so far; "" otherwise.
  std::string stopped, stopped_in;
};

// Progress: the layout search the first tenth, each ZeRO stage's per-layer
// search a share of the rest.
Result<PlanAnswers> plan_answers(const Graph& graph, const Cluster& cluster,
                                 const AnswerOptions& answers, const PlanOptions& options = {});

// The answers' export: a JAX program of the per-layer plan; Megatron-LM's
// launch script and torchtitan's TOML of the fastest ranked layout that the
// engine starts (export_layout(); a note says so when it is not the best),
// or of the per-layer plan (export_plan(): its nearest layout, or the rule
// that refuses it) when no ranked layout is one the engine starts.
Result<Exported> export_answers(ExportTarget target, const PlanAnswers& answers);

// Whether `graph` is a language model's that plan_answers() answers for on
// `cluster` (the practice model).
bool has_layout_answers(const Graph& graph, const Cluster& cluster);

}  // namespace pase
