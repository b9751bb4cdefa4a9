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
// on the last; pp_first and pp_last set the first and last stage's), with
// gbs / (mbs * dp) micro-batches; vpp > 1 runs the interleaved 1F1B
// schedule over those stages (pipeline.hpp). zero, dp_shard and recompute
// (with recompute_blocks per stage) go to the training.
//
// ERRORS name the field: "layout" (a malformed item), "layout.tp" (a degree
// that does not divide what it splits, or tp x pp x dp x cp not the device
// count), "layout.pp" (the blocks do not divide into the stages),
// "layout.gbs" (not a multiple of mbs x dp, or not the graph's batch),
// "layout.ep" (not dividing dp x cp or the experts, or above 1 on a model
// without experts), "layout.vpp" (virtual stages without a pipeline, more
// than a stage's blocks, blocks that do not divide into pp x vpp chunks,
// micro-batches not a multiple of pp; pp_first or pp_last with it),
// "layout.etp" (not dividing tp, or set without experts),
// "layout.pp_first" / "layout.pp_last" (without a pipeline),
// "layout.recompute_blocks" (without recompute=full, or more than a
// stage's blocks), "layout.dp_shard" (not dividing dp, or below dp without
// zero=3). parse_layout() refuses a degree, or
// tp x pp x dp x cp, above kMaxDevices (at "layout.<degree>", "layout.tp"),
// and an unknown item at "layout"; values are echoed cut to 40 characters,
// control characters escaped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  // The experts' tensor degree (Megatron-LM's --expert-tensor-parallel-size):
  // the experts' products split their MLP width etp ways and their tokens
  // tp / etp ways more; a divisor of tp. 0: tp.
  int64_t etp = 0;
  // Decoder blocks on the first and on the last pipeline stage (Megatron-LM's
  // --decoder-first-pipeline-num-layers and --decoder-last-...); the other
  // stages share the rest as evenly as it goes. 0: every stage alike.
  int64_t pp_first = 0, pp_last = 0;
  // With recompute=full: only the first k decoder blocks of each stage (of
  // each virtual stage with vpp) are recomputed, the others not, as
  // Megatron-LM's --recompute-method block --recompute-num-layers k. 0: all.
  int64_t recompute_blocks = 0;
  // With zero=3: the data-parallel ranks that one copy of the weights is
  // sharded over (torchtitan's data_parallel_shard_degree); dp / dp_shard
  // copies (HSDP). 0: dp, every rank (FSDP).
  int64_t dp_shard = 0;
};

// The decoder blocks of each of the layout's pp stages, first to last, for
// `blocks` blocks: pp_first and pp_last where given, the others as evenly as
// they go (126 on 16: 7 and 8). Errors at "layout.pp" when the blocks do not
// fill the stages, one block or more each.
Result<std::vector<int64_t>> stage_blocks(const Layout& layout, int64_t blocks);

// "tp=8 pp=8 dp=16 cp=1 ep=1 sp=on zero=1 recompute=selective mbs=1 gbs=1536
// vpp=1" (and etp, pp_first, pp_last, recompute_blocks, dp_shard): items
// separated by spaces or commas, any subset, each at most once.
Result<Layout> parse_layout(std::string_view text);

// "tp=8 pp=8 dp=16 cp=1 ep=1 sp=on zero=1 recompute=selective mbs=1 gbs=1536 vpp=1"
// (gbs left out when it is 0, the graph's batch; etp, pp_first, pp_last,
// recompute_blocks and dp_shard only when set): parse_layout() reads it back.
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
