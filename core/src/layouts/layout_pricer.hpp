// A layout's price composed from parts priced once (pase/layout_search.hpp,
// core/docs/layouts.md, "How a layout is priced"): the practice model's
// evaluation of layout_strategy() (evaluate_pipeline()) without building
// the whole graph for each layout.
//
// A decoder model's micro-batch graph is its embedding, its blocks and its
// head; every block prices alike at one placement (the devices of its stage,
// as far as the nodes see them: the stage's first device modulo the node
// size). So the pricer builds the model with two blocks at the micro-batch,
// prices each part (its vertices, with the edges inside it) and the edges
// between parts, once for each placement, ZeRO stage and recomputation,
// and sums them per stage as assemble() does (pipeline.cpp): the same
// numbers, summed in another order (equal to about 1e-12 relative).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "model/cost_model.hpp"
#include "pase/cluster.hpp"
#include "pase/graph.hpp"
#include "pase/layout.hpp"
#include "pase/layout_search.hpp"
#include "pase/pipeline.hpp"
#include "pase/result.hpp"

namespace pase::layout_detail {

// What a layout costs a step, as `pase eval --layout` reports it.
struct PricedLayout {
  double step_time_s = 0;
  StepBreakdown parts;
  MemoryBytes memory;  // the largest stage's
  bool fits = true;
};

// The sums over a part of the graph: its vertices' costs and memory, the
// edges inside it.
struct PartSums {
  double total = 0, weight_sync = 0, compute = 0, recompute = 0;
  double params = 0, grads = 0, optimizer = 0, activations = 0, working = 0;
};

class LayoutPricer {
 public:
  // `cluster` under the practice model; `gbs` the global batch.
  LayoutPricer(const LayoutModel& model, const Cluster& cluster, int64_t gbs);
  ~LayoutPricer();
  LayoutPricer(const LayoutPricer&) = delete;
  LayoutPricer& operator=(const LayoutPricer&) = delete;
  // Errors as layout_strategy()'s and evaluate_pipeline()'s, at "layout.*".
  Result<PricedLayout> price(const Layout& layout);
  int64_t blocks() const { return model_.config.num_layers; }

  struct Reduced;    // the two-block model at a micro-batch, its parts
  struct Placement;  // the parts' sums at one placement
  // What every layout of the same degrees, micro-batch, ZeRO stage, shard
  // degree and pp shares: the parts' sums at each stage's placement and the
  // price of sending a block's output to the next stage.
  struct Context {
    const Reduced* reduced = nullptr;
    std::vector<const Placement*> by_stage;  // stage s: by_stage[s % size()]
    double send_near = 0, send_far = 0;
    int64_t q = 0, microbatches = 0;
  };
  // The context of `layout` (its degrees' errors, as price()'s).
  Result<const Context*> context(const Layout& layout);
  // The layout's price from its context, for a layout that price() would
  // accept (its stages, vpp and recompute_blocks valid), or a lower bound of
  // its step time: kRecompute under any recomputation, kCompute under any
  // recomputation and ZeRO stage (its compute alone; any context of the
  // layout's degrees and micro-batch gives it).
  enum class Bound { kNone, kRecompute, kCompute };
  PricedLayout compose(const Context& context, const Layout& layout, Bound bound) const;
  // A lower bound of the step time of every layout of the context's degrees
  // and micro-batch: M / pp times the compute of the whole model.
  double compute_bound(const Context& context, const Layout& layout) const;

 private:
  Result<const Reduced*> reduced(const Layout& l, int64_t micro_batch);
  Result<const Reduced*> make_reduced(const Layout& l, int64_t micro_batch);
  const Placement& placement(const Reduced& r, const Layout& l, int64_t q, int64_t first_device);

  LayoutModel model_;
  Cluster cluster_;
  int64_t gbs_ = 0;
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<const Graph>> graphs_;
  std::map<std::vector<int64_t>, std::unique_ptr<Reduced>> reduced_;
  std::map<std::vector<int64_t>, Error> refused_;
  std::map<std::tuple<const Reduced*, int64_t, int64_t, int64_t>, std::unique_ptr<Placement>>
      placements_;
  std::map<std::vector<int64_t>, std::unique_ptr<Context>> contexts_;
  ops::Machine whole_;  // the whole cluster's, for the sends between stages
};

}  // namespace pase::layout_detail
