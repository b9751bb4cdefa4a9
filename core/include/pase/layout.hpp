// A practitioner's configuration of a language model, in the degrees that
// Megatron-LM and torchtitan take, as a strategy of the planner
// (core/docs/practice-model.md, "Evaluating a layout").
//
// USAGE
//   Result<Layout> l = parse_layout("tp=8 pp=8 dp=16 sp=on zero=1 recompute=full mbs=1 gbs=1536");
//   Result<LayoutStrategy> s = layout_strategy(graph, cluster, *l);
//   Result<PipelinePlan> p = evaluate_pipeline(graph, s->cluster, s->strategy);
//
// THE STRATEGY. On the graph of a decoder-only model (core/docs/llm.md) at the
// global batch: the batch split dp ways; every sequence split cp ways, and tp
// more ways outside the tensor-parallel layers with sequence parallelism;
// the heads of q, k, v, the attention and o split tp ways (key-value heads
// as far as there are, then the query heads of each), the MLP width and the
// vocabulary (embedding, head, loss) tp ways, the experts ep ways out of
// dp x cp as Megatron-LM carves them (the experts' products keep dp x cp / ep
// of the tokens' split; the router, dispatch and combine split as the
// tokens); the other ops split as their first input. pp stages of decoder
// blocks, as even as they go (the embedding on the first, the head and loss
// on the last), with gbs / (mbs * dp) micro-batches; vpp > 1 runs the
// interleaved 1F1B schedule over those stages (pipeline.hpp). zero and
// recompute go to the training.
//
// ERRORS name the field: "layout" (a malformed item), "layout.tp" (a degree
// that does not divide what it splits, or tp x pp x dp x cp not the device
// count), "layout.pp" (the blocks do not divide into the stages),
// "layout.gbs" (not a multiple of mbs x dp, or not the graph's batch),
// "layout.ep" (not dividing dp x cp or the experts, or above 1 on a model
// without experts), "layout.vpp" (virtual stages without a pipeline, more
// than a stage's blocks, blocks that do not divide into pp x vpp chunks,
// micro-batches not a multiple of pp). parse_layout() refuses a degree, or
// tp x pp x dp x cp, above kMaxDevices (at "layout.<degree>", "layout.tp"),
// and an unknown item at "layout"; values are echoed cut to 40 characters,
// control characters escaped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "pase/cluster.hpp"
#include "pase/graph.hpp"
#include "pase/pipeline.hpp"
#include "pase/result.hpp"

namespace pase {

struct Layout {
  int64_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
  bool sp = false;
  int64_t zero = 0;
  Recompute recompute = Recompute::kNone;
  int64_t mbs = 1;  // micro-batch per data-parallel rank
  int64_t gbs = 0;  // global batch; 0: the graph's batch
  int64_t vpp = 1;  // virtual stages per device
};

// "tp=8 pp=8 dp=16 cp=1 ep=1 sp=on zero=1 recompute=selective mbs=1 gbs=1536
// vpp=1": items separated by spaces or commas, any subset, each at most once.
Result<Layout> parse_layout(std::string_view text);

// "tp=8 pp=8 dp=16 cp=1 ep=1 sp=on zero=1 recompute=selective mbs=1 gbs=1536 vpp=1"
// (gbs left out when it is 0, the graph's batch): parse_layout() reads it back.
std::string layout_text(const Layout& layout);

struct LayoutStrategy {
  Cluster cluster;            // with the layout's ZeRO stage and recomputation
  PipelineStrategy strategy;  // over the micro-batch graph
};

// The strategy `layout` means on `graph` (a decoder-only model's graph at
// the global batch) and `cluster`.
Result<LayoutStrategy> layout_strategy(const Graph& graph, const Cluster& cluster,
                                       const Layout& layout);

// The largest batch (a layout's global batch) at which the model of `graph`
// still builds: the graph builder refuses an iteration space of 2^62 points
// or more, and each vertex's grows linearly with its batch dimension (as in
// every language model of core/docs/llm.md). `graph` is the model built at
// any batch; INT64_MAX when no vertex has a batch dimension.
int64_t largest_batch(const Graph& graph);

// An error at "layout.gbs" when `gbs` is above largest_batch(graph): what the
// CLI and the JSON API report when the model does not build at the layout's
// global batch (they build it at batch 1 to tell).
std::optional<Error> check_global_batch(const Graph& graph, int64_t gbs);

// A training step's throughput as Megatron-LM and PaLM count it: the model's
// FLOPs per step are 6 per parameter and token (of a mixture of experts,
// per active parameter: k of its E experts' weights) plus the attention's
// (12 x layers x width x sequence per token, every key counted), over the
// peak of every device for the step time. For a graph with tokens (a
// language model's): nullopt otherwise. `microbatches` scales a micro-batch
// graph to the step.
struct Throughput {
  double tokens = 0;       // per step
  double model_flops = 0;  // per step
  double tokens_per_s = 0;
  double mfu = 0;  // model_flops / (tflops * 1e12 * devices * step_time_s)
};
std::optional<Throughput> throughput(const Graph& graph, const Cluster& cluster, double step_time_s,
                                     int64_t microbatches = 1);

}  // namespace pase
