// plan() with a pipeline stage's objective (core/docs/pipeline.md, "What the
// planner chooses"): a stage run for M micro-batches does its layers' work
// and its edges M times but reduces its weight gradients once, and holds the
// activations of k micro-batches at once. plan() is plan_weighted() with
// M = k = 1, bit for bit.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "cost/configurations.hpp"
#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "search/dynamic_program.hpp"
#include "search/ordering.hpp"

namespace pase {

// Seconds from `start` to now, for the search statistics.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct StageWeights {
  double microbatches = 1;       // M
  double activation_copies = 1;  // k
  // Ties in value() go to the smaller A (core/docs/pipeline.md): the search
  // minimises value() + tie * A, with tie far below value()'s ties (1e-12
  // relative) and far above its rounding. 0: ties to the configuration
  // enumerated first, as plan().
  double tie = 0;
  // How often the weight gradients are reduced: 1 (once a step), or 0 for a
  // stage's F alone (the pipeline search's bounds: value() is then M * F).
  double sync_weight = 1;

  // The weight-gradient part of a plan's cost: the sum of its layers'
  // weight_sync.
  static double weight_sync(const Plan& p) {
    double w = 0;
    for (const LayerCost& l : p.layers) w += l.weight_sync;
    return w;
  }
  // What the search minimises: M * (cost - W) + sync_weight * W, the plan's
  // cost when M = 1 and sync_weight = 1.
  double value(const Plan& p) const {
    if (microbatches == 1 && sync_weight == 1) return p.cost;
    const double w = weight_sync(p);
    return microbatches * (p.cost - w) + sync_weight * w;
  }
  // Device 0's memory with k copies of the activations.
  // What the search sees of memory: the layers' own, without the practice
  // model's working buffers (the largest layer's, which no sum over the
  // layers can hold; core/docs/practice-model.md, "Memory").
  double bytes(const MemoryBytes& m) const {
    return m.params + m.grads + m.optimizer + activation_copies * m.activations;
  }
};

// plan() minimising StageWeights::value() of a plan, under Cluster::memory_gib
// for StageWeights::bytes(). The Plan is evaluate()'s (its cost and memory
// are one micro-batch's, with one copy of the activations); lower_bound is in
// the units of value(). `shared`: edge prices of this cluster's machine kept
// from plans of other graphs (a pipeline's stages), bound to this one's
// exact search; unused when its view is not this machine's.
Result<Plan> plan_weighted(const Graph& graph, const Cluster& cluster, const PlanOptions& options,
                           const StageWeights& weights, EdgePrices* shared = nullptr);

// What one search runs on: every vertex's configurations, the vertex order
// with its dependent sets, the tables' classes and their sizes.
struct SearchSpace {
  std::vector<ConfigSet> configs;
  Order order = Order::kGenSeq;
  Ordering ord;
  TableClasses classes;
  SearchStats est;  // sizes only
};

// The configurations of every vertex and the ordering options.order of them,
// with classes and sizes (finish_space).
Result<SearchSpace> prepare_space(const Graph& graph, const Cluster& cluster,
                                  const PlanOptions& options);
// The classes and sizes of a space whose configs and ord are set.
void finish_space(const Graph& graph, const Cluster& cluster, SearchSpace& space);

// The tables' limit of options (max_memory, or 2^62 bytes without one), and
// whether a plan of that exact space runs the bounded search instead
// (options.search, or kAuto with tables over the limit).
double table_limit(const PlanOptions& options);
bool bounded_instead(const SearchStats& exact, const PlanOptions& options);
// The fields of SearchStats that say a plan will run the bounded search.
void describe_bounded(SearchStats& stats, const PlanOptions& options);

// One search of a space for cost_weight * value() + memory_weight * bytes():
// its strategy evaluated, and the search's optimum of that objective.
struct WeightedSearch {
  Plan plan;
  double objective = 0;
};

// A search of the Lagrangian loop under a cap (SpaceSearch::under_cap()).
struct DualPoint {
  double lambda = 0;     // the memory weight
  double objective = 0;  // the search's optimum of value() + lambda * bytes()
};

// A search under the cap made before the loop (plan_recompute()'s dual of
// a choice at the weight another choice's loop ended on): the loop starts
// from it, its bound and its plan, the optimum at its weight as the loop's
// ends are, in place of the end on its side (the plan without the cap, or
// that of least memory) when it is nearer.
struct WarmStart {
  double lambda = 0;
  WeightedSearch search;
};

// How near the Lagrangian loop under a cap comes to the dual's maximum
// under the practice model (relative): it stops when the bound can rise,
// or the best plan that fits is above the bound, by no more than this.
constexpr double kPracticeDualTolerance = 1e-3;

// The machine a search of cost_weight * value() + memory_weight * bytes()
// runs the dynamic program on.
ops::Machine weighted_machine(const Cluster& cluster, const StageWeights& weights,
                              double cost_weight, double memory_weight);

// The exact search of one space (prepare_space() of `graph` on `cluster`),
// for StageWeights::value() under Cluster::memory_gib: what stays fixed in
// the constructor, what changes in the calls. The graph, the space and the
// prices and cache given must outlive the object (and the objects on()
// makes of it).
//
//   SpaceSearch search(graph, cluster, options, weights, space);
//   Result<Plan> p = search.under_cap();   // or once(1, lambda), plan(...)
//
// Edge prices: `shared`, kept across spaces of one machine (a pipeline's
// stage graphs), bound to this space when they price this cluster's
// machine; else prices of the object's own. `cache`: what the searches of
// the space share (SearchCache), or null for one of the object's own.
class SpaceSearch {
 public:
  SpaceSearch(const Graph& graph, const Cluster& cluster, const PlanOptions& options,
              const StageWeights& weights, const SearchSpace& space, EdgePrices* shared = nullptr,
              SearchCache* cache = nullptr);
  SpaceSearch(SpaceSearch&&) = default;
  SpaceSearch& operator=(SpaceSearch&&) = delete;

  // The same space, prices and cache on `cluster`, alike but for its
  // recomputation or memory cap, with `options` for its progress (a
  // plan_recompute() choice; the loop's search under a lower cap).
  SpaceSearch on(const Cluster& cluster, const PlanOptions& options) const;

  // One search of cost_weight * value() + memory_weight * bytes(), its
  // strategy evaluated; its progress reported through `part` (by default
  // the object's options).
  Result<WeightedSearch> once(double cost_weight, double memory_weight);
  Result<WeightedSearch> once(double cost_weight, double memory_weight, const PlanOptions& part);

  // plan_weighted()'s search: one search without a cap; under it, the
  // Lagrangian loop (to the dual's maximum under the paper's model, within
  // kPracticeDualTolerance under the practice model, whose plan of least
  // memory is least_memory_strategy()'s, not searched). Under the practice
  // model, when the plan without the cap does not fit with its working
  // buffers, the loop keeps to the cap less least_working() (the cap itself
  // when even the plan of least memory does not fit there); its lower bound
  // holds for the plans that fit with their working buffers. A plan that
  // fits as the search sees memory but not with its own working buffers is
  // searched once more under the cap less them (from the plan without the
  // cap); Plan::fits says whether the plan returned holds them too.
  // `first`: the search at (1, 0) when the caller has made it; `warm`: a
  // search under the cap to start the loop from. The Plan's statistics hold
  // only `searches`, those made here (not `first`).
  Result<Plan> under_cap(std::optional<WeightedSearch> first = std::nullopt,
                         std::optional<WarmStart> warm = std::nullopt);

  // under_cap() for a whole plan: refuses tables over the options' limit
  // ("max_memory"; the caller hands a space for the bounded search to
  // plan_bounded()), and gives the Plan the space's statistics, its time
  // from `start`.
  Result<Plan> plan(std::optional<WeightedSearch> first,
                    std::chrono::steady_clock::time_point start);

  // The memory weight of the latest under_cap()'s lower bound, with its
  // search's objective (lambda 0 when the bound is the plan's without the
  // cap).
  const DualPoint& dual() const { return dual_; }
  // The searches this object made.
  int searches() const { return searches_; }
  // least_working_bytes() of the space, read once into the cache.
  double least_working();
  // What the searches of the space share.
  SearchCache& cache() { return *cache_; }

 private:
  SpaceSearch(const SpaceSearch& base, const Cluster& cluster, const PlanOptions& options);
  Result<Plan> loop(std::optional<WeightedSearch> first, std::optional<WarmStart> warm, bool again);

  const Graph& graph_;
  Cluster cluster_;
  PlanOptions options_;
  StageWeights weights_;
  const SearchSpace& space_;
  ops::Machine machine_;
  std::unique_ptr<EdgePrices> own_prices_;
  std::unique_ptr<SearchCache> own_cache_;
  EdgePrices* prices_;
  SearchCache* cache_;
  DualPoint dual_;
  int searches_ = 0;
};

// Each vertex at its configuration of least StageWeights::bytes() (the first
// of equals): a strategy of the least memory the space reaches, since that
// memory is a sum over the vertices. Also that memory.
struct LeastMemory {
  Strategy strategy;
  double bytes = 0;
};
LeastMemory least_memory_strategy(const Graph& graph, const Cluster& cluster,
                                  const SearchSpace& space, const StageWeights& weights);

// The least, over the strategies of `space`, of the working buffers of the
// largest layer (ops::working_bytes(): the practice model's, 0 under the
// paper's): the largest over the vertices of each one's least. Every plan
// holds at least this much besides the memory the search sees.
double least_working_bytes(const Graph& graph, const Cluster& cluster, const SearchSpace& space);

// The bounded search (core/docs/bounded-search.md) of `exact`, a space too
// large to search exactly: rounds of the exact search over sub-spaces in
// which some vertices keep one configuration each. The Plan has optimal
// false unless its cost meets the bound it proves, and lower_bound that
// bound (in the units of StageWeights::value()).
Result<Plan> plan_bounded(const Graph& graph, const Cluster& cluster, const PlanOptions& options,
                          const StageWeights& weights, SearchSpace exact,
                          std::chrono::steady_clock::time_point start);

}  // namespace pase
