// The search of plan() and of a pipeline's stages (weighted_plan.hpp): the
// search space of a graph, the exact search with its memory cap, and the
// choice of the bounded search (bounded_search.cpp) when the tables do not fit.
#include "search/weighted_plan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "cost/configurations.hpp"
#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "pase/plan.hpp"
#include "search/dynamic_program.hpp"
#include "search/ordering.hpp"
#include "search/progress.hpp"
#include "util/text.hpp"

namespace pase {

Result<SearchSpace> prepare_space(const Graph& graph, const Cluster& cluster,
                                  const PlanOptions& options) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  auto configs = enumerate_all(graph, cluster.devices, options.enumeration, options.max_memory);
  if (!configs) return configs.error();
  SearchSpace p;
  p.configs = std::move(configs).value();
  std::vector<size_t> counts;
  for (const ConfigSet& c : p.configs) counts.push_back(c.size());
  p.ord = make_ordering(graph, options.order, counts);
  p.order = options.order;
  finish_space(graph, cluster, p);
  return p;
}

void finish_space(const Graph& graph, const Cluster& cluster, SearchSpace& p) {
  uint64_t configurations = 0;
  for (const ConfigSet& c : p.configs) configurations += c.size();
  p.classes = table_classes(graph, p.configs, p.ord, EndView::of(ops::make_machine(cluster)));
  p.est = estimate_dp(p.ord, p.configs, &p.classes);
  p.est.configurations = configurations;
  p.est.order = p.order;
}

bool bounded_instead(const SearchStats& exact, const PlanOptions& options) {
  return options.search == SearchMode::kBounded ||
         (options.search == SearchMode::kAuto && exact.peak_bytes > table_limit(options));
}

double table_limit(const PlanOptions& options) {
  // Without a limit, still refuse what no machine could hold (the tables are
  // indexed by 64-bit offsets and allocated as one block each).
  return options.max_memory ? static_cast<double>(options.max_memory) : 0x1p62;
}

Result<Plan> plan_weighted(const Graph& graph, const Cluster& cluster, const PlanOptions& options,
                           const StageWeights& weights, EdgePrices* shared) {
  auto start = std::chrono::steady_clock::now();
  auto prep = prepare_space(graph, cluster, options);
  if (!prep) return prep.error();
  if (bounded_instead(prep->est, options))
    return plan_bounded(graph, cluster, options, weights, std::move(*prep), start);
  return SpaceSearch(graph, cluster, options, weights, *prep, shared).plan(std::nullopt, start);
}

namespace {

// `m` with the weights of a search of cost_weight * value() + memory_weight *
// bytes().
ops::Machine weighed(ops::Machine m, const StageWeights& weights, double cost_weight,
                     double memory_weight) {
  m.cost_weight = cost_weight;
  m.memory_weight = memory_weight;
  m.microbatches = weights.microbatches + weights.tie;
  m.activation_copies = weights.activation_copies;
  m.sync_weight = weights.sync_weight;
  return m;
}

}  // namespace

ops::Machine weighted_machine(const Cluster& cluster, const StageWeights& weights,
                              double cost_weight, double memory_weight) {
  return weighed(ops::make_machine(cluster), weights, cost_weight, memory_weight);
}

SpaceSearch::SpaceSearch(const Graph& graph, const Cluster& cluster, const PlanOptions& options,
                         const StageWeights& weights, const SearchSpace& space, EdgePrices* shared,
                         SearchCache* cache)
    : graph_(graph),
      cluster_(cluster),
      options_(options),
      weights_(weights),
      space_(space),
      machine_(ops::make_machine(cluster)),
      prices_(shared),
      cache_(cache) {
  const EndView view = EndView::of(machine_);
  if (prices_ == nullptr || prices_->view() != view) {
    own_prices_ = std::make_unique<EdgePrices>(graph, space.configs, view, kEdgePriceBudget);
    prices_ = own_prices_.get();
  } else {
    prices_->bind(graph, space.configs);
  }
  if (cache_ == nullptr) {
    own_cache_ = std::make_unique<SearchCache>();
    cache_ = own_cache_.get();
  }
}

SpaceSearch::SpaceSearch(const SpaceSearch& base, const Cluster& cluster,
                         const PlanOptions& options)
    : graph_(base.graph_),
      cluster_(cluster),
      options_(options),
      weights_(base.weights_),
      space_(base.space_),
      machine_(ops::make_machine(cluster)),
      prices_(base.prices_),
      cache_(base.cache_) {}

SpaceSearch SpaceSearch::on(const Cluster& cluster, const PlanOptions& options) const {
  return SpaceSearch(*this, cluster, options);
}

Result<WeightedSearch> SpaceSearch::once(double cost_weight, double memory_weight) {
  return once(cost_weight, memory_weight, options_);
}

Result<WeightedSearch> SpaceSearch::once(double cost_weight, double memory_weight,
                                         const PlanOptions& part) {
  ++searches_;
  const ops::Machine m = weighed(machine_, weights_, cost_weight, memory_weight);
  auto dp = run_dp(graph_, space_.configs, space_.ord, space_.classes, m, space_.est, part, {},
                   prices_, cache_);
  if (!dp) return dp.error();
  Strategy s(graph_.vertices.size());
  for (size_t v = 0; v < s.size(); ++v) {
    const ConfigSet& set = space_.configs[v];
    const int64_t* c = set.at(dp->choice[v]);
    s[v].assign(c, c + set.dims);
  }
  auto result = evaluate(graph_, cluster_, s);
  if (!result) return result.error();
  return WeightedSearch{std::move(*result), dp->cost};
}

Result<Plan> SpaceSearch::plan(std::optional<WeightedSearch> first,
                               std::chrono::steady_clock::time_point start) {
  const SearchStats& est = space_.est;
  const double limit = table_limit(options_);
  if (est.peak_bytes > limit) {
    char entries[32];
    std::snprintf(entries, sizeof entries, "%.3g", est.largest_table);
    return Error{"the " + std::string(order_name(options_.order)) + " order needs " +
                     bytes_text(est.peak_bytes) + " of tables (largest dependent set " +
                     std::to_string(est.max_dependent_set) + ", largest table " + entries +
                     " entries), more than the limit of " + bytes_text(limit) +
                     "; raise the memory limit (max_memory), use fewer devices, another order, "
                     "or the bounded search (search \"auto\" or \"bounded\")",
                 "max_memory"};
  }
  Result<Plan> p = under_cap(std::move(first));
  if (!p) return p.error();
  const int searches = p->search.searches;
  p->search = est;
  p->search.time_s = seconds_since(start);
  p->search.searches = searches;
  p->search.threads = std::max(1, options_.threads);
  return p;
}

double SpaceSearch::least_working() {
  if (!cache_->least_working) cache_->least_working = least_working_bytes(graph_, cluster_, space_);
  return *cache_->least_working;
}

LeastMemory least_memory_strategy(const Graph& graph, const Cluster& cluster,
                                  const SearchSpace& space, const StageWeights& weights) {
  const ops::Machine m = ops::make_machine(cluster);
  LeastMemory out;
  out.strategy.resize(graph.vertices.size());
  for (size_t v = 0; v < graph.vertices.size(); ++v) {
    const ConfigSet& set = space.configs[v];
    size_t least = 0;
    double least_bytes = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < set.size(); ++i) {
      const double bytes =
          weights.bytes(ops::vertex_memory(graph, graph.vertices[v], set.at(i), m));
      if (bytes < least_bytes) {
        least_bytes = bytes;
        least = i;
      }
    }
    out.strategy[v].assign(set.at(least), set.at(least) + set.dims);
    out.bytes += least_bytes;
  }
  return out;
}

double least_working_bytes(const Graph& graph, const Cluster& cluster, const SearchSpace& space) {
  const ops::Machine m = ops::make_machine(cluster);
  double out = 0;
  for (size_t v = 0; v < graph.vertices.size(); ++v) {
    const ConfigSet& set = space.configs[v];
    double least = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < set.size(); ++i)
      least = std::min(least, ops::working_bytes(graph, graph.vertices[v], set.at(i), m));
    if (set.size() > 0) out = std::max(out, least);
  }
  return out;
}

Result<Plan> SpaceSearch::under_cap(std::optional<WeightedSearch> first,
                                    std::optional<WarmStart> warm) {
  dual_ = DualPoint{};
  return loop(std::move(first), std::move(warm), true);
}

// `again`: whether a plan over the cap with its working buffers may be
// searched again under a lower cap (once: that search may not).
Result<Plan> SpaceSearch::loop(std::optional<WeightedSearch> first_search,
                               std::optional<WarmStart> warm, bool again) {
  int searches = 0;
  // Progress: without a cap the one search is all of it; under the cap the
  // searches are parts of a sequence whose length the loop finds
  // (OpenParts), numbered from the first, given or not.
  const bool given = first_search.has_value();
  OpenParts parts(options_, kSearchesAhead);
  auto search = [&](double cost_weight, double memory_weight) -> Result<WeightedSearch> {
    ++searches;
    const PlanOptions o = cluster_.memory_gib <= 0 ? options_
                          : searches == 1 && !given
                              ? parts.next("searching without the cap")
                              : parts.next("search " + std::to_string(searches + (given ? 1 : 0)) +
                                           " under the memory cap");
    return once(cost_weight, memory_weight, o);
  };
  auto finish = [&](Plan p) {
    p.search.searches = searches;
    return p;
  };

  // What the searches minimise and keep under the cap: the plan's cost and
  // memory, or a pipeline stage's (StageWeights).
  auto value = [&](const Plan& p) { return weights_.value(p); };
  auto bytes = [&](const Plan& p) { return weights_.bytes(p.memory); };

  Result<WeightedSearch> first =
      first_search ? Result<WeightedSearch>(std::move(*first_search)) : search(1, 0);
  if (!first) return first.error();
  // Kept for the search again under a lower cap, below.
  std::optional<WeightedSearch> free;
  if (again && cluster_.memory_gib > 0) free = *first;
  Plan best = std::move(first->plan);
  best.lower_bound = value(best);
  if (cluster_.memory_gib <= 0) return finish(std::move(best));

  // Under a cap C: every search of cost + lambda * memory gives the bound
  // DP(lambda) - lambda * C, and a search for the lambda that maximises it
  // finds fitting plans (core/docs/cluster.md, "Planning under a memory cap").
  const double cap = cluster_.capacity_bytes();
  double bound = value(best);
  // The cap the loop keeps to: unless the plan without the cap fits with
  // its working buffers, the cap less the least working buffers any
  // strategy holds (least_working_bytes(): the practice model's largest
  // layer's, which the search does not see), when the plan of least memory
  // fits under it; else the cap itself (as before: such a plan fits with
  // no strategy, and says by how much). The search again below (`again`
  // false) has its plan's working buffers taken off its cap already.
  const bool practice = cluster_.cost_model == CostModel::kPractice;
  // The plan of least memory: under the practice model read off each
  // vertex's least (least_memory_strategy()); under the paper's, the
  // search that weighs memory alone (its ties broken as the goldens were
  // made).
  auto read_off = [&]() -> Result<WeightedSearch> {
    LeastMemory l = least_memory_strategy(graph_, cluster_, space_, weights_);
    Result<Plan> p = evaluate(graph_, cluster_, l.strategy);
    if (!p) return p.error();
    return WeightedSearch{std::move(*p), l.bytes};
  };
  std::optional<WeightedSearch> least;
  double loop_cap = cap;
  if (practice && again && bytes(best) + best.memory.working > cap) {
    Result<WeightedSearch> r = read_off();
    if (!r) return r.error();
    least = std::move(*r);
    const double lower = cap - least_working();
    if (bytes(least->plan) <= lower) loop_cap = lower;
  }
  auto fits = [&](const Plan& p) { return bytes(p) <= loop_cap; };
  // The paper's model searches to the dual's maximum (within rounding);
  // the practice model, whose step times are fitted to within percents,
  // stops once the bound can rise, or the plan that fits fall to it, by
  // no more than kPracticeDualTolerance (core/docs/practice-model.md,
  // "Recomputation"). `optimal` keeps the strict test below.
  const double tolerance = practice ? kPracticeDualTolerance : 1e-12;
  if (!fits(best)) {
    if (!least) {
      Result<WeightedSearch> r = practice ? read_off() : search(0, 1);
      if (!r) return r.error();
      least = std::move(*r);
    }
    if (!fits(least->plan)) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "no strategy fits in %.4g GiB per device: the least memory any strategy "
                    "reaches is %.4g GiB",
                    cluster_.memory_gib, bytes(least->plan) / 0x1p30);
      std::string message = text;
      // Under the practice model the cap is less than the GPU's memory: say by what.
      if (practice) {
        std::snprintf(text, sizeof text,
                      " (the plan may use %.4g GiB of it: %.4g GiB are the framework's reserve "
                      "and %.4g GiB the headroom)",
                      cap / 0x1p30, cluster_.reserve_gib(), cluster_.headroom_gib());
        message += text;
      }
      return Error{message, "cluster.memory_gib"};
    }
    // The dual g(lambda) = DP(lambda) - lambda * C is concave and piecewise
    // linear; its maximum sits where a plan that does not fit (lo) and one
    // that fits (hi) cost the same objective. Search at that breakpoint: when
    // nothing beats the two there, lambda maximises g (both are optimal at
    // it, one with memory above C, one at or below) and the bound is final;
    // otherwise the better plan replaces the endpoint on its side. Every plan
    // found is a candidate; the first hi is the least-memory plan.
    Plan lo = std::move(best);
    Plan hi = std::move(least->plan);
    Plan fitting = hi;
    // Whether the bound is a search's under the cap (lambda > 0).
    bool capped_bound = false;
    // A search made before (WarmStart): its bound, and its plan in place
    // of the end on its side.
    if (warm && warm->lambda > 0) {
      const double b = warm->search.objective - warm->lambda * loop_cap;
      if (b > bound) {
        bound = b;
        capped_bound = true;
        dual_ = DualPoint{warm->lambda, warm->search.objective};
      }
      Plan& w = warm->search.plan;
      if (fits(w)) {
        if (value(w) < value(fitting)) fitting = w;
        if (value(w) < value(hi)) hi = std::move(w);
      } else if (bytes(w) < bytes(lo)) {
        lo = std::move(w);
      }
    }
    const bool warm_enough = capped_bound && value(fitting) <= bound * (1 + tolerance);
    for (int i = 0; i < 100 && !warm_enough; ++i) {
      const double lo_mem = bytes(lo), hi_mem = bytes(hi);
      const double lambda = (value(hi) - value(lo)) / (lo_mem - hi_mem);
      if (!(lambda >= 0) || !std::isfinite(lambda)) break;
      // Each plan p bounds g from above by value(p) + lambda * (bytes(p) - C),
      // so g's maximum is at most where the lines of lo and hi cross: the
      // search there finds at most at_ends. The practice model leaves it out
      // once it needs an objective within the tolerance of at_ends to raise
      // the bound (the test below, made before the search), when the bound
      // is a search's under the cap: while it is the plan without the cap's
      // (weight 0), that plan may be just over the cap, and the search there
      // finds one that fits near it (else the loop would end on a plan that
      // fits far above the bound: the least memory's, or the first one
      // found).
      const double at_ends = std::min(value(lo) + lambda * lo_mem, value(hi) + lambda * hi_mem);
      if (practice && capped_bound && bound + lambda * loop_cap >= at_ends * (1 - tolerance)) break;
      Result<WeightedSearch> r = search(1, lambda);
      if (!r) return r.error();
      if (r->objective - lambda * loop_cap > bound) {
        bound = r->objective - lambda * loop_cap;
        capped_bound = true;
        dual_ = DualPoint{lambda, r->objective};
      }
      if (fits(r->plan) && value(r->plan) < value(fitting)) fitting = r->plan;
      if (value(fitting) <= bound * (1 + tolerance)) break;
      if (r->objective >= at_ends * (1 - tolerance)) break;
      (fits(r->plan) ? hi : lo) = std::move(r->plan);
    }
    best = std::move(fitting);
  }
  best.capacity_bytes = cap;
  // It fits as the search sees memory; with the practice model's working
  // buffers (the largest layer's, which the search does not see; core/docs/
  // practice-model.md, "Memory") it may not. Then the loop runs once more
  // under the cap less those buffers, from the same plan without the cap,
  // and its plan stands if it fits with its own.
  const double working = best.memory.working;
  best.fits = bytes(best) + working <= cap;
  if (again && !best.fits && working > 0 && working < cap) {
    Cluster lower = cluster_;
    lower.memory_gib -= working / 0x1p30;
    SpaceSearch below = on(lower, parts.next("under the cap less the working buffers"));
    Result<Plan> retried = below.loop(std::move(free), std::nullopt, false);
    searches_ += below.searches();
    if (!retried && retried.error().where != "cluster.memory_gib") return retried.error();
    if (retried) searches += retried->search.searches;
    if (retried && bytes(*retried) + retried->memory.working <= cap) {
      retried->capacity_bytes = cap;
      retried->fits = true;
      // Its bound holds under the lower cap only; the one of the full cap
      // holds for it too.
      retried->lower_bound = std::min(bound, value(*retried));
      retried->optimal = value(*retried) <= bound * (1 + 1e-12);
      return finish(std::move(*retried));
    }
  }
  best.lower_bound = std::min(bound, value(best));
  best.optimal = value(best) <= bound * (1 + 1e-12);
  return finish(std::move(best));
}

}  // namespace pase
