// Recomputation chosen by the search (Recompute::kAuto; core/docs/
// practice-model.md, "Recomputation"), for plan().
#include "plan/recompute_search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "search/progress.hpp"
#include "search/weighted_plan.hpp"

namespace pase {

namespace {

// The first and the last decoder block of the graph (-1 when it has none).
std::pair<int, int> block_range(const Graph& graph) {
  int first = -1, last = -1;
  for (size_t v = 0; v < graph.vertices.size(); ++v) {
    const int b = model_of(graph, static_cast<int>(v)).block;
    if (b < 0) continue;
    first = first < 0 ? b : std::min(first, b);
    last = std::max(last, b);
  }
  return {first, last};
}

// The choice of a training, for progress: "no recomputation", "selective
// recomputation", "full recomputation", "full recomputation of the first 4
// blocks" (the others selective); `first` is the first decoder block.
std::string choice_phase(const Training& t, int first) {
  switch (t.recompute) {
    case Recompute::kNone:
      return "no recomputation";
    case Recompute::kSelective:
      return "selective recomputation";
    default:
      break;
  }
  if (t.recompute_blocks < 0) return "full recomputation";
  const int64_t k = t.recompute_blocks - first;
  return "full recomputation of the first " + std::to_string(k) + (k == 1 ? " block" : " blocks");
}

// Whether two trainings make the same recomputation choice.
bool same_choice(const Training& a, const Training& b) {
  return a.recompute == b.recompute && a.recompute_blocks == b.recompute_blocks &&
         a.recompute_rest == b.recompute_rest;
}

}  // namespace

double least_recompute_difference(const Graph& graph, const SearchSpace& space, const Cluster& from,
                                  const Cluster& to, double lambda, SearchCache& cache,
                                  int threads) {
  ops::Machine a = ops::make_machine(from), b = ops::make_machine(to);
  a.memory_weight = b.memory_weight = lambda;
  double sum = 0;
  for (size_t v = 0; v < graph.vertices.size(); ++v) {
    const int id = static_cast<int>(v);
    if (ops::recomputed(graph, id, from.training) == ops::recomputed(graph, id, to.training))
      continue;
    const ConfigSet& set = space.configs[v];
    const std::vector<double> x = cache.vertex_costs.costs(graph, id, set, a, threads);
    const std::vector<double> y = cache.vertex_costs.costs(graph, id, set, b, threads);
    double least = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < x.size(); ++i) least = std::min(least, y[i] - x[i]);
    sum += least;
  }
  return sum;
}

// The candidates: none, selective on every block, full on every block, and
// full on the first k blocks with selective on the others, for the fewest
// k that fit, the most short of every block and the neighbours of the best.
// Every candidate searches one space with one set of edge prices. None is
// searched first, without the cap and then under it; each other choice's
// search without the cap comes only when a lower bound leaves it a chance
// (none's cost plus least_recompute_difference() at weight 0, the dual at
// the latest memory weight without a search, then that dual searched). A
// choice is searched under the cap only when a lower bound of its plans
// that fit (that cost, or the dual at the latest memory weight) is below
// the best plan that fits so far.
// The fewest first blocks in full that fit are found by bisection (memory
// falls as blocks are added): on the least memory first, then under the
// cap. A choice whose dual was searched starts its loop under the cap from
// that search (WarmStart).
Result<Plan> plan_recompute(const Graph& graph, const Cluster& cluster,
                            const PlanOptions& options) {
  // Named, not bound: lambdas capture them (clang 14 cannot capture a
  // structured binding).
  const std::pair<int, int> range = block_range(graph);
  const int first = range.first, last = range.second;
  const int64_t blocks = first < 0 ? 0 : last - first + 1;
  const auto start = std::chrono::steady_clock::now();
  int searches = 0;
  auto training = [&](Recompute mode, int64_t k, Recompute rest) {
    Cluster c = cluster;
    c.training.recompute = mode;
    c.training.recompute_blocks = k < 0 ? -1 : first + k;
    c.training.recompute_rest = rest;
    return c;
  };
  const auto finish = [&](Plan p) {
    p.search.searches = searches;
    p.search.time_s = seconds_since(start);
    return p;
  };
  const Cluster none = training(Recompute::kNone, -1, Recompute::kNone);
  Result<SearchSpace> space = prepare_space(graph, cluster, options);
  const bool practice_cap =
      blocks > 0 && cluster.memory_gib > 0 && cluster.cost_model == CostModel::kPractice;
  if (!space || !practice_cap || bounded_instead(space->est, options) ||
      space->est.peak_bytes > table_limit(options)) {
    // Nothing to choose, or a space that plan_weighted() searches (or
    // refuses) its own way: each choice planned in turn, a third of the
    // progress each when there is a choice.
    Result<Plan> p = plan_weighted(
        graph, none,
        practice_cap ? progress_part(options, 0, 1.0 / 3, choice_phase(none.training, first))
                     : options,
        StageWeights{});
    if (p) p->training = none.training;
    if (!p || !practice_cap) return p;
    if (p->fits) return p;
    std::optional<Plan> best;
    for (Recompute mode : {Recompute::kSelective, Recompute::kFull}) {
      const Cluster c = training(mode, -1, mode);
      const double part = mode == Recompute::kSelective ? 1 : 2;
      Result<Plan> q = plan_weighted(
          graph, c,
          progress_part(options, part / 3, (part + 1) / 3, choice_phase(c.training, first)),
          StageWeights{});
      if (!q && q.error().where != "cluster.memory_gib") return q;
      if (q) q->training = c.training;
      if (q && q->fits && (!best || q->cost < best->cost)) best = std::move(*q);
      if (!best && mode == Recompute::kFull) return q;
    }
    return *best;
  }
  EdgePrices prices(graph, space->configs, EndView::of(ops::make_machine(cluster)),
                    kEdgePriceBudget);
  const double cap = cluster.capacity_bytes();
  const StageWeights plain;
  // What every choice's searches share (the vertices' costs, the pair
  // matrices).
  SearchCache cache;
  // Progress: every search here and every choice's loop under the cap is a
  // part of a sequence whose length the bounds decide (OpenParts), read as
  // about three parts (the search without the cap, the dual, the loop) for
  // each of 3 + log2(blocks) choices.
  const double expected_searches = 3 * (3 + std::ceil(std::log2(static_cast<double>(blocks))));
  OpenParts parts(options, expected_searches);
  if (options.on_progress) {
    Progress note;
    note.note = long_search_note(space->est.configurations, expected_searches,
                                 "to choose the recomputation of " + std::to_string(blocks) +
                                     " decoder blocks under the memory cap (a stated "
                                     "recomputation searches fewer times)");
    if (!note.note.empty()) options.on_progress(note);
  }
  auto once = [&](const Cluster& c, double cost_weight, double memory_weight) {
    ++searches;
    const std::string phase =
        choice_phase(c.training, first) +
        (memory_weight == 0 ? ": searching without the cap" : ": its bound under the memory cap");
    return search_once(graph, c, parts.next(phase), plain, *space, prices, cost_weight,
                       memory_weight, &cache);
  };
  // The memory weight of the latest search under the cap that gave its
  // bound: the weight for the next choices' dual bounds; and the choices
  // searched at it, with their objectives.
  double lambda = 0;
  struct AtLambda {
    Cluster cluster;
    double objective = 0;
  };
  std::vector<AtLambda> at_lambda;
  // Under the cap, from the search without it.
  // The latest choice's dual searched at the weight of the latest loop
  // (hopeless_searched()): its loop under the cap starts from it.
  std::optional<std::pair<Training, WarmStart>> warm;
  auto capped = [&](const Cluster& c, WeightedSearch free) -> Result<Plan> {
    DualPoint dual;
    std::optional<WarmStart> from;
    if (warm && same_choice(warm->first, c.training)) from = std::move(warm->second);
    warm.reset();
    Result<Plan> p = search_space(graph, c, parts.next(choice_phase(c.training, first)), plain,
                                  *space, &prices, std::move(free), &dual, &cache, std::move(from));
    if (dual.lambda > 0) {
      lambda = dual.lambda;
      at_lambda.assign(1, AtLambda{c, dual.objective});
    }
    if (p) {
      searches += p->search.searches;
      p->training = c.training;
      p->search = space->est;
      p->search.threads = std::max(1, options.threads);
    }
    return p;
  };
  // The best plan that fits; else what the most recomputed choice tried
  // gave (its error, or its plan over the cap).
  std::optional<Plan> best;
  Result<Plan> unfit = Error{"no recomputation tried", "training.recompute"};
  // Whether a choice can be left out: a lower bound of its plans that fit
  // not below the best plan that fits by more than the Lagrangian loop's
  // tolerance (kPracticeDualTolerance: the loop itself stops that near).
  // The bounds: its cost without the cap; the dual at the latest weight,
  // first from each choice searched there and least_recompute_difference()
  // (unless the caller tried that already), then searched (one search).
  const double within = 1 - kPracticeDualTolerance;
  // A plan that fits holds its working buffers besides the memory the
  // search sees, and every strategy's are at least least_working_bytes()
  // (the same for every choice: recomputation does not change them), so
  // its memory as the search sees it is at most the cap less that: the
  // dual's bound DP(lambda) - lambda * C holds with C that much lower.
  const double seen_cap = cap - least_working_bytes(graph, cluster, *space, cache);
  // The dual's bound without a search.
  auto hopeless_unsearched = [&](const Cluster& c) {
    if (!best || lambda <= 0) return false;
    for (const AtLambda& p : at_lambda) {
      const double floor = p.objective +
                           least_recompute_difference(graph, *space, p.cluster, c, lambda, cache,
                                                      std::max(1, options.threads)) -
                           lambda * seen_cap;
      if (floor >= best->cost * within) return true;
    }
    return false;
  };
  // The dual at the latest weight, searched (one search).
  auto hopeless_searched = [&](const Cluster& c) -> Result<bool> {
    Result<WeightedSearch> at = once(c, 1, lambda);
    if (!at) return at.error();
    at_lambda.push_back(AtLambda{c, at->objective});
    const bool hopeless = at->objective - lambda * seen_cap >= best->cost * within;
    if (!hopeless) warm.emplace(c.training, WarmStart{lambda, std::move(*at)});
    return hopeless;
  };
  // A choice's search without the cap, unless a bound rules the choice out
  // first: `floor` (a lower bound of that search's objective), the dual
  // without a search, the dual searched, then that search's cost (the dual
  // before it: near the Lagrangian's balance it rules out more, and the
  // search without the cap is wanted only for a choice that stays). None:
  // ruled out.
  auto hopeful_free = [&](const Cluster& c, double floor) -> Result<std::optional<WeightedSearch>> {
    if (best && (floor >= best->cost * within || hopeless_unsearched(c)))
      return std::optional<WeightedSearch>{};
    if (best && lambda > 0) {
      Result<bool> h = hopeless_searched(c);
      if (!h) return h.error();
      if (*h) return std::optional<WeightedSearch>{};
    }
    Result<WeightedSearch> free = once(c, 1, 0);
    if (!free) return free.error();
    if (best && free->plan.cost >= best->cost * within) return std::optional<WeightedSearch>{};
    return std::optional<WeightedSearch>(std::move(*free));
  };
  auto consider = [&](Result<Plan> p, bool full) -> std::optional<Error> {
    if (!p && p.error().where != "cluster.memory_gib") return p.error();
    if (p && p->fits) {
      if (!best || p->cost < best->cost) best = std::move(*p);
    } else if (full || !unfit) {
      unfit = std::move(p);
    }
    return std::nullopt;
  };

  // Without recomputation: done when its least cost fits.
  Result<WeightedSearch> free_none = once(none, 1, 0);
  if (!free_none) return free_none.error();
  if (free_none->plan.memory.total() <= cap) {
    Result<Plan> p = capped(none, std::move(*free_none));
    return p ? Result<Plan>(finish(std::move(*p))) : p;
  }
  // Selective's search without the cap waits for none's under it: the
  // dual at none's memory weight usually leaves selective out with no
  // search without the cap. Until then its least cost without the cap is
  // bounded by none's plus, per recomputed vertex, the least its cost grows
  // from none to selective (least_recompute_difference() at weight 0).
  const int threads = std::max(1, options.threads);
  const Cluster selective = training(Recompute::kSelective, -1, Recompute::kSelective);
  const double none_objective = free_none->objective;
  // Lower bounds of selective's least objective (and cost) without the
  // cap: the bound above, or that search's own once made.
  double selective_objective =
      none_objective +
      least_recompute_difference(graph, *space, none, selective, 0, cache, threads);
  if (std::optional<Error> e = consider(capped(none, std::move(*free_none)), false)) return *e;
  {
    Result<std::optional<WeightedSearch>> free = hopeful_free(selective, selective_objective);
    if (!free) return free.error();
    if (*free) {
      selective_objective = (*free)->objective;
      if (std::optional<Error> e = consider(capped(selective, std::move(**free)), false)) return *e;
    }
  }
  // Full on every block last. Its least cost without the cap is at least
  // none's and selective's (as far as it is known) plus the least each
  // vertex's cost grows from them to full (least_recompute_difference() at
  // memory weight 0), read only once there is a best plan to hold it
  // against.
  const Cluster full = training(Recompute::kFull, -1, Recompute::kFull);
  const double full_floor =
      best ? std::max(none_objective +
                          least_recompute_difference(graph, *space, none, full, 0, cache, threads),
                      selective_objective + least_recompute_difference(graph, *space, selective,
                                                                       full, 0, cache, threads))
           : 0;
  bool full_unfit = false;  // full on every block searched, and over the cap
  {
    Result<std::optional<WeightedSearch>> free = hopeful_free(full, full_floor);
    if (!free) return free.error();
    if (*free) {
      Result<Plan> p = capped(full, std::move(**free));
      full_unfit = !(p && p->fits);
      if (std::optional<Error> e = consider(std::move(p), true)) return *e;
    }
  }
  // Full on the first blocks, selective on the rest: over the cap when full
  // on all is. The least memory a strategy reaches, without the working
  // buffers that the search does not see, gives the fewest blocks that may
  // fit (k0, by bisection, each vertex at its least: no search); the others
  // are searched under the cap, by bisection too. Full on a block can cost
  // less than selective on it (the longer backward hides more of the
  // weight gradients' reduction), so the family is left out only when
  // selective's least cost without the cap plus least_recompute_difference()
  // to each k from k0 up cannot beat the best.
  if (blocks > 1 && !full_unfit) {
    auto mixed = [&](int64_t k) { return training(Recompute::kFull, k, Recompute::kSelective); };
    int64_t lo = 0, hi = blocks;  // hi fits (all in full); lo: selective alone
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      (least_memory_strategy(graph, mixed(mid), *space, plain).bytes <= cap ? hi : lo) = mid;
    }
    // Each k's lower bound of its cost without the cap, from k0 up; their
    // least bounds the family's (none when k0 is every block: that is full
    // on every block, above).
    std::vector<double> floor_of(static_cast<size_t>(blocks), 0);
    double floor = std::numeric_limits<double>::infinity();
    for (int64_t k = hi; best && k < blocks; ++k) {
      floor_of[k] = selective_objective + least_recompute_difference(graph, *space, selective,
                                                                     mixed(k), 0, cache, threads);
      floor = std::min(floor, floor_of[k]);
    }
    if (hi < blocks && !(best && floor >= best->cost * within)) {
      std::vector<char> searched(static_cast<size_t>(blocks), 0);
      int64_t best_k = -1;  // the k of the best plan, when the family gave it
      // Searches k under the cap (from its search without the cap);
      // whether its plan fits.
      auto try_k = [&](int64_t k, WeightedSearch free) -> Result<bool> {
        Result<Plan> p = capped(mixed(k), std::move(free));
        if (!p && p.error().where != "cluster.memory_gib") return p.error();
        // Every plan that fits is a candidate, not only the fewest k's: a
        // Lagrangian plan's distance from its bound differs from k to k.
        const bool fits = p && p->fits;
        if (fits && (!best || p->cost < best->cost)) {
          best = std::move(*p);
          best_k = k;
        }
        return fits;
      };
      // k at both ends: k0 (its bounds, its dual without a search, then
      // searched, then its search without the cap: hopeful_free()) and the
      // most blocks in full short of all. From k0, the fewest k that fit,
      // by bisection under the cap.
      const int64_t k0 = hi;
      searched[k0] = 1;
      Result<std::optional<WeightedSearch>> at_k0 = hopeful_free(mixed(k0), floor_of[k0]);
      if (!at_k0) return at_k0.error();
      const bool k0_hopeful = at_k0->has_value();
      if (k0_hopeful) {
        std::optional<WeightedSearch> free = std::move(*at_k0);
        for (hi = blocks; hi - lo > 1;) {
          const int64_t mid = free ? k0 : (lo + hi) / 2;
          Result<WeightedSearch> f =
              free ? Result<WeightedSearch>(std::move(*free)) : once(mixed(mid), 1, 0);
          free.reset();
          searched[mid] = 1;
          if (!f) return f.error();
          Result<bool> fits = try_k(mid, std::move(*f));
          if (!fits) return fits.error();
          (*fits ? hi : lo) = mid;
        }
      }
      const int64_t top = blocks - 1;
      if (!searched[top]) {
        searched[top] = 1;
        Result<std::optional<WeightedSearch>> f = hopeful_free(mixed(top), floor_of[top]);
        if (!f) return f.error();
        if (*f) {
          Result<bool> fits = try_k(top, std::move(**f));
          if (!fits) return fits.error();
        }
      }
      // Then the neighbours of the best k (or of the fewest that fit), as
      // long as one beats it: a k's plan is not the fewest's plus a trend
      // (its distance from its bound differs from k to k), and more blocks
      // in full can cost less. Each is searched unless its bounds rule it
      // out (hopeful_free(): its loop starts from the dual searched there).
      int64_t around = best_k >= 0 ? best_k : k0_hopeful ? hi : -1;
      while (around >= 0) {
        const int64_t from = around;
        for (int64_t k : {from + 1, from - 1}) {
          if (k <= lo || k >= blocks || searched[k]) continue;
          searched[k] = 1;
          Result<std::optional<WeightedSearch>> f = hopeful_free(mixed(k), floor_of[k]);
          if (!f) return f.error();
          if (!*f) continue;
          Result<bool> fits = try_k(k, std::move(**f));
          if (!fits) return fits.error();
          if (best_k == k) {
            around = k;
            break;
          }
        }
        if (around == from) break;
      }
    }
  }
  if (best) return finish(std::move(*best));
  if (!unfit) return unfit.error();
  return finish(std::move(*unfit));
}

}  // namespace pase
