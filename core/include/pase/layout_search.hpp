// The layout search: every uniform layout that Megatron-LM and torchtitan
// run for a language model on a cluster, priced by the practice model's
// evaluation of a layout and ranked (core/docs/layouts.md).
//
// USAGE
//   LayoutModel model{*llm_config("llama3-8b"), "llama3-8b", 8192};
//   LayoutSearchOptions o{.gbs = 32};
//   Result<LayoutSearch> s = search_layouts(model, cluster, o);
//   s->ranked[0].layout;  // the fastest layout that fits
//
// THE SPACE (core/docs/layouts.md, "The space"). Every factorisation
// tp x pp x dp x cp of the device count; sp off, and on with tp > 1; for a
// mixture of experts ep over the divisors of gcd(dp x cp, experts) and etp
// over the divisors of tp; mbs over the divisors of gbs / dp (gradient
// accumulation: gbs / (mbs x dp) micro-batches); stages as even as they go,
// or a first stage, a last stage or both holding fewer blocks than the
// others (pp_first, pp_last); vpp over the divisors of blocks / pp with
// micro-batches a multiple of pp; zero 0 to 3, with zero=3 every shard
// degree of dp (HSDP); recompute none, selective, full, and full on k
// blocks of each stage. Degrees that do not divide what they split, and
// layouts that neither engine starts, are refused.
//
// THE PRICE. Each layout's step time, its parts and its memory are those
// `pase eval --layout` gives (evaluate_pipeline() of layout_strategy()),
// composed from one decoder block, the embedding and the head priced once
// per placement and shared by every layout that places them alike (equal
// to within 1e-9 relative). The search is exact over the space: a layout is
// left unpriced only when a lower bound of its step is above the last
// ranked layout's (and the given one's). Ties keep the order of the
// enumeration.
//
// ERRORS at "gbs" (not positive, or no layout divides it), "model" (not a
// language model), and the cluster's (check_inputs(); the practice model).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pase/cluster.hpp"
#include "pase/layout.hpp"
#include "pase/llm.hpp"
#include "pase/pipeline.hpp"
#include "pase/result.hpp"

namespace pase {

// The model a layout search lays out: a language model's config, its name,
// the sequence length and the vocabulary's padding (kLlmVocabMultiple x tp
// per layout, as Megatron-LM pads it; 1: the exact vocabulary).
struct LayoutModel {
  LlmConfig config;
  std::string name;
  int64_t seq = 0;
  int64_t vocab_multiple = kLlmVocabMultiple;
};

struct LayoutSearchOptions {
  int64_t gbs = 0;  // the global batch in sequences
  size_t top = 10;  // ranked layouts returned
  size_t over = 3;  // the fastest layouts that do not fit, returned beside
  // A training budget in tokens, and the price of one GPU-hour: each ranked
  // layout's days and cost (0: not asked).
  double tokens = 0;
  double gpu_hour_price = 0;
  // A layout to place in the ranking (its rank, and why it loses).
  std::optional<Layout> given;
  // Called with the fraction done, now and then; false cancels.
  std::function<bool(double)> on_progress;
};

// Whether an engine starts a layout: the first of its start-up rules that
// the layout breaks (core/docs/export.md, "The engines' start-up rules"), or
// none.
struct EngineVerdict {
  std::string rule;     // empty: the engine accepts the layout
  std::string message;  // what the engine says
  std::string source;   // the engine's file that enforces the rule
  bool accepted() const { return rule.empty(); }
};

struct RankedLayout {
  Layout layout;
  int64_t rank = 0;  // 1: the fastest that fits; among the layouts that do not fit, 0
  double step_time_s = 0;
  StepBreakdown parts;
  MemoryBytes memory;         // the largest stage's, per device
  double capacity_bytes = 0;  // the plan's cap (0: none)
  bool fits = true;
  double tokens_per_s = 0, mfu = 0;
  double days = 0, cost = 0;  // with a token budget (and a price)
  // Why it loses to the first: "23.1% slower: +0.41 s exposed communication, ...".
  std::string versus_best;
  EngineVerdict megatron, torchtitan;
};

struct LayoutSearch {
  std::vector<RankedLayout> ranked;  // the fastest that fit, fastest first
  // The fastest that do not fit, faster than the best that fits, with how
  // much over.
  std::vector<RankedLayout> over;
  std::optional<RankedLayout> given;
  int64_t priced = 0;     // layouts priced
  int64_t ruled_out = 0;  // of those, over the memory cap
  // Layouts never priced: a lower bound of their step time (core/docs/
  // layouts.md, "Bounds") is above the last ranked layout's.
  int64_t bounded = 0;
  // Degree combinations that do not divide (each counted once, whatever
  // its other settings), and layouts that neither engine starts.
  int64_t refused = 0;
  // Why, with counts: {"layout.gbs: 12 is not a multiple of mbs x dp = 8", 3}
  // (the first message of each field), {"no engine starts it: ...", 40}.
  std::vector<std::pair<std::string, int64_t>> refused_why;
  double seconds = 0;
};

Result<LayoutSearch> search_layouts(const LayoutModel& model, const Cluster& cluster,
                                    const LayoutSearchOptions& options);

// The model of a language model's graph (a built-in model's, a config's or
// a document's: decoder blocks named layer<N>_...), read back from its
// weights' shapes (core/docs/llm.md), with the vocabulary padded to
// `vocab_multiple` x tp per layout (1: exact). Its batch is the search's
// global batch (`gbs`). Errors at "model" for another graph.
Result<LayoutModel> layout_model_of(const Graph& graph, int64_t vocab_multiple, int64_t* gbs);

// The model's graph at the layout's global batch with the vocabulary padded
// to vocab_multiple x tp: the graph layout_strategy() and export_layout()
// take for `layout`.
Result<Graph> layout_graph(const LayoutModel& model, const Layout& layout);

}  // namespace pase
