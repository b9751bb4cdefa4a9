// plan() with a pipeline stage's objective (core/docs/pipeline.md, "What the
// planner chooses"): a stage run for M micro-batches does its layers' work
// and its edges M times but reduces its weight gradients once, and holds the
// activations of k micro-batches at once. plan() is plan_weighted() with
// M = k = 1, bit for bit.
#pragma once

#include <chrono>
#include <optional>

#include "cost/configurations.hpp"
#include "cost/cost_tables.hpp"
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
// `cache`: kept for the searches of `space` (SearchCache), or null.
Result<WeightedSearch> search_once(const Graph& graph, const Cluster& cluster,
                                   const PlanOptions& options, const StageWeights& weights,
                                   const SearchSpace& space, EdgePrices& prices, double cost_weight,
                                   double memory_weight, SearchCache* cache = nullptr);

// A search of the Lagrangian loop under a cap (search_space()).
struct DualPoint {
  double lambda = 0;     // the memory weight
  double objective = 0;  // the search's optimum of value() + lambda * bytes()
};

// Edge prices for a search of `space` on `cluster`: `shared` bound to the
// graph and space.configs when it prices cluster's machine, else `own`,
// made for them.
EdgePrices& prices_for_space(EdgePrices* shared, const Graph& graph, const Cluster& cluster,
                             const SearchSpace& space, std::optional<EdgePrices>& own);

// plan_weighted() of a space already prepared (prepare_space() of this
// graph and cluster: the memory cap does not change it) and searched
// exactly (not bounded_instead(); the caller hands a bounded one to
// plan_bounded()), for a caller that plans one space more than once (a
// pipeline stage's range without the cap and then under it): `cache`
// shared with its other plans (or null), and `first`, the search at (1, 0)
// when the caller has made it (search_space()). `start`: when the plan
// began, for its time. `dual`: as search_space()'s, or null. Errors: tables
// over options' limit ("max_memory"), and search_space()'s.
Result<Plan> plan_in_space(const Graph& graph, const Cluster& cluster, const PlanOptions& options,
                           const StageWeights& weights, const SearchSpace& space,
                           EdgePrices* shared, SearchCache* cache,
                           std::optional<WeightedSearch> first,
                           std::chrono::steady_clock::time_point start, DualPoint* dual = nullptr);

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
// least_working_bytes(), kept in cache.least_working for the space's other
// searches (a pipeline's stage plans under several caps, plan_recompute()'s
// choices).
double least_working_bytes(const Graph& graph, const Cluster& cluster, const SearchSpace& space,
                           SearchCache& cache);

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

// The exact search of one space: plan_weighted()'s search and, under a cap,
// its Lagrangian loop (to the dual's maximum under the paper's model,
// within kPracticeDualTolerance under the practice model, whose plan of least
// memory is least_memory_strategy()'s, not searched). Under the practice
// model, when the plan without the cap does not fit with its working
// buffers, the loop keeps to the cap less least_working_bytes() (the cap
// itself when even the plan of least memory does not fit there); its
// lower bound holds for the plans that fit with their working buffers. A
// plan that fits as the search sees memory but not with its own working
// buffers is searched once more under the cap less them (from `first`);
// `fits` says whether the plan returned holds them too. The Plan's search stats hold
// only `searches` (not counting `first`). `prices`: edge prices
// made for space.configs, or null.
// `first`: the search at (1, 0) when the caller has made it.
// `dual`: set to the memory weight whose search gave the lower bound, with
// that search's objective, when one under the cap did.
// `cache`: what the searches of `space` share (SearchCache), or null for a
// cache of this call's searches. `warm`: a search under the cap to start
// the loop from (WarmStart), or none.
Result<Plan> search_space(const Graph& graph, const Cluster& cluster, const PlanOptions& options,
                          const StageWeights& weights, const SearchSpace& space, EdgePrices* prices,
                          std::optional<WeightedSearch> first = std::nullopt,
                          DualPoint* dual = nullptr, SearchCache* cache = nullptr,
                          std::optional<WarmStart> warm = std::nullopt);

// The bounded search (core/docs/bounded-search.md) of `exact`, a space too
// large to search exactly: rounds of the exact search over sub-spaces in
// which some vertices keep one configuration each. The Plan has optimal
// false unless its cost meets the bound it proves, and lower_bound that
// bound (in the units of StageWeights::value()).
Result<Plan> plan_bounded(const Graph& graph, const Cluster& cluster, const PlanOptions& options,
                          const StageWeights& weights, SearchSpace exact,
                          std::chrono::steady_clock::time_point start);

}  // namespace pase
