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
#include <optional>
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

// Switches of the search's shortcuts, for the tests that check each changes
// nothing (tests/layout_search_test.cpp); the search proper keeps both on.
struct SearchSwitches {
  bool bounds = true;         // off: every layout is priced
  bool share_configs = true;  // off: layout_strategy() at every micro-batch (twins())
};

// search_layouts() with the shortcuts as `switches` set them.
Result<LayoutSearch> search_layouts(const LayoutModel& model, const Cluster& cluster,
                                    const LayoutSearchOptions& options,
                                    const SearchSwitches& switches);

class LayoutPricer {
 public:
  // `cluster` under the practice model; `gbs` the global batch.
  LayoutPricer(const LayoutModel& model, const Cluster& cluster, int64_t gbs,
               bool share_configs = true);
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
  // The errors price() gives for `layout`'s degrees, batch and stages,
  // without pricing it (the two-block model at its micro-batch is built).
  std::optional<Error> check(const Layout& layout);
  // The two-block model of `layout`'s degrees at its micro-batch, for the
  // compute bounds below (its errors, as context()'s).
  Result<const Reduced*> parts(const Layout& layout);
  // The layout's price from its context, for a layout that price() would
  // accept (its stages, vpp and recompute_blocks valid), or a lower bound of
  // its step time: kRecompute under any recomputation (at the context's
  // ZeRO stage and shard degree); kAnyZero, from a ZeRO 0 context, under
  // any recomputation, ZeRO stage and shard degree.
  enum class Bound { kNone, kRecompute, kAnyZero };
  PricedLayout compose(const Context& context, const Layout& layout, Bound bound) const;
  // Lower bounds of the step time from the compute alone, which no ZeRO
  // stage, shard degree or placement changes: of every layout of the
  // degrees and micro-batch (M / pp times the compute of the whole model),
  // and of every layout of the stage shape (pp_first, pp_last, vpp) under
  // any ZeRO stage and recomputation (each stage's A_s at least its
  // compute). Both are built before any placement is priced.
  double compute_bound(const Reduced& reduced, const Layout& layout) const;
  double shape_compute_bound(const Reduced& reduced, const Layout& layout) const;

 private:
  Result<const Reduced*> reduced(const Layout& l, int64_t micro_batch);
  Result<const Reduced*> make_reduced(const Layout& l, int64_t micro_batch);
  const Placement& placement(const Reduced& r, const Layout& l, int64_t q, int64_t first_device);
  struct EdgeSums;  // the edges' costs of a placement, which no ZeRO stage changes
  const EdgeSums& edge_sums(const Reduced& r, int64_t q, int64_t first_device);
  // The model at two micro-batches, as layout_strategy() reads it.
  struct Twins;
  const Twins& twins(const Graph& a, const Graph& b);
  // The two-block model of `l`'s degrees at one sequence per data-parallel
  // rank, when its configurations are the ones layout_strategy() gives at
  // `micro_batch` on `graph`; else none.
  const Reduced* same_configs(const Layout& l, int64_t micro_batch, const Graph& graph);

  LayoutModel model_;
  Cluster cluster_;
  int64_t gbs_ = 0;
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<const Graph>> graphs_;
  std::map<std::vector<int64_t>, std::unique_ptr<Reduced>> reduced_;
  std::map<std::vector<int64_t>, Error> refused_;
  std::map<std::tuple<const Reduced*, int64_t, int64_t, int64_t>, std::unique_ptr<Placement>>
      placements_;
  std::map<std::pair<const Reduced*, int64_t>, std::unique_ptr<EdgeSums>> edge_sums_;
  std::map<std::vector<int64_t>, std::unique_ptr<Context>> contexts_;
  std::map<std::pair<const Graph*, const Graph*>, std::unique_ptr<Twins>> twins_;
  ops::Machine whole_;  // the whole cluster's, for the sends between stages
  bool share_configs_ = true;
};

}  // namespace pase::layout_detail
