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

namespace {

// plan_recompute() when there is nothing to choose (no cap, the paper's
// model, no decoder blocks), or a space that plan_weighted() searches (or
// refuses) its own way: none, and when it does not fit and there is a
// choice, selective and full on every block, each planned in turn, a third
// of the progress each.
Result<Plan> plan_each_choice(const Graph& graph, const Cluster& cluster,
                              const PlanOptions& options, bool choose, int first) {
  auto training = [&](Recompute mode) {
    Cluster c = cluster;
    c.training.recompute = mode;
    c.training.recompute_blocks = -1;
    c.training.recompute_rest = mode;
    return c;
  };
  const Cluster none = training(Recompute::kNone);
  Result<Plan> p = plan_weighted(
      graph, none,
      choose ? progress_part(options, 0, 1.0 / 3, choice_phase(none.training, first)) : options,
      StageWeights{});
  if (p) p->training = none.training;
  if (!p || !choose) return p;
  if (p->fits) return p;
  std::optional<Plan> best;
  for (Recompute mode : {Recompute::kSelective, Recompute::kFull}) {
    const Cluster c = training(mode);
    const double part = mode == Recompute::kSelective ? 1 : 2;
    Result<Plan> q = plan_weighted(
        graph, c, progress_part(options, part / 3, (part + 1) / 3, choice_phase(c.training, first)),
        StageWeights{});
    if (!q && q.error().where != "cluster.memory_gib") return q;
    if (q) q->training = c.training;
    if (q && q->fits && (!best || q->cost < best->cost)) best = std::move(*q);
    if (!best && mode == Recompute::kFull) return q;
  }
  return *best;
}

// The search of the choices under the practice model's cap, one phase a
// bullet of core/docs/practice-model.md, "Recomputation":
//   1. try_none(): none, without the cap (the answer when it fits) and
//      under it;
//   2. try_selective(): selective on every block, unless its bounds rule it
//      out;
//   3. try_full(): full on every block, the same way;
//   4. try_mixed(): full on the first k blocks and selective on the others:
//      the fewest k that fit by bisection, the most short of every block,
//      and the neighbours of the best k.
// Every choice searches one space with one set of edge prices and one
// cache (base_). A choice is searched under the cap only when a lower bound
// of its plans that fit (its cost without the cap, or the dual at the
// latest memory weight, first without a search, then searched) is below the
// best plan that fits so far (free_unless_ruled_out()); a choice whose dual
// was searched starts its loop under the cap from that search (WarmStart).
class RecomputeSearch {
 public:
  RecomputeSearch(const Graph& graph, const Cluster& cluster, const PlanOptions& options,
                  const SearchSpace& space, int first, int64_t blocks,
                  std::chrono::steady_clock::time_point start)
      : graph_(graph),
        cluster_(cluster),
        options_(options),
        space_(space),
        first_(first),
        blocks_(blocks),
        start_(start),
        base_(graph, cluster, options, StageWeights{}, space),
        // Every search here and every choice's loop under the cap is a part
        // of a sequence whose length the bounds decide, read as about three
        // parts (the search without the cap, the dual, the loop) for each
        // of 3 + log2(blocks) choices.
        expected_searches_(3 * (3 + std::ceil(std::log2(static_cast<double>(blocks))))),
        parts_(options_, expected_searches_),
        cap_(cluster.capacity_bytes()),
        // A plan that fits holds its working buffers besides the memory the
        // search sees, and every strategy's are at least the least working
        // buffers (the same for every choice: recomputation does not change
        // them), so its memory as the search sees it is at most the cap
        // less them: the dual's bound DP(lambda) - lambda * C holds with C
        // that much lower.
        seen_cap_(cap_ - base_.least_working()),
        threads_(std::max(1, options.threads)) {}

  Result<Plan> run() {
    note_long_search();
    Result<bool> done = try_none();
    if (!done) return done.error();
    if (!*done) {
      if (std::optional<Error> e = try_selective()) return *e;
      if (std::optional<Error> e = try_full()) return *e;
      if (std::optional<Error> e = try_mixed()) return *e;
    }
    return answer();
  }

 private:
  // A choice: full (or `mode`) on the first k blocks, `rest` on the others
  // (k < 0: every block).
  Cluster choice(Recompute mode, int64_t k, Recompute rest) const {
    Cluster c = cluster_;
    c.training.recompute = mode;
    c.training.recompute_blocks = k < 0 ? -1 : first_ + k;
    c.training.recompute_rest = rest;
    return c;
  }
  Cluster mixed(int64_t k) const { return choice(Recompute::kFull, k, Recompute::kSelective); }

  void note_long_search() {
    if (!options_.on_progress) return;
    Progress note;
    note.note = long_search_note(space_.est.configurations, expected_searches_,
                                 "to choose the recomputation of " + std::to_string(blocks_) +
                                     " decoder blocks under the memory cap (a stated "
                                     "recomputation searches fewer times)");
    if (!note.note.empty()) options_.on_progress(note);
  }

  // One search of choice c.
  Result<WeightedSearch> once(const Cluster& c, double cost_weight, double memory_weight) {
    ++searches_;
    const std::string phase =
        choice_phase(c.training, first_) +
        (memory_weight == 0 ? ": searching without the cap" : ": its bound under the memory cap");
    return base_.on(c, parts_.next(phase)).once(cost_weight, memory_weight);
  }

  // Choice c under the cap, from its search without it (and from the dual
  // searched for it, when that left it a chance).
  Result<Plan> capped(const Cluster& c, WeightedSearch free) {
    std::optional<WarmStart> from;
    if (warm_ && same_choice(warm_->first, c.training)) from = std::move(warm_->second);
    warm_.reset();
    SpaceSearch search = base_.on(c, parts_.next(choice_phase(c.training, first_)));
    Result<Plan> p = search.under_cap(std::move(free), std::move(from));
    if (search.dual().lambda > 0) {
      lambda_ = search.dual().lambda;
      at_lambda_.assign(1, AtLambda{c, search.dual().objective});
    }
    if (p) {
      searches_ += p->search.searches;
      p->training = c.training;
      p->search = space_.est;
      p->search.threads = threads_;
    }
    return p;
  }

  // Whether a lower bound rules a choice out: not below the best plan that
  // fits by more than the Lagrangian loop's tolerance
  // (kPracticeDualTolerance: the loop itself stops that near).
  bool beaten_by(double floor) const {
    return best_ && floor >= best_->cost * (1 - kPracticeDualTolerance);
  }

  // The dual at the latest weight, without a search: from each choice
  // searched there and least_recompute_difference().
  bool ruled_out_unsearched(const Cluster& c) {
    if (!best_ || lambda_ <= 0) return false;
    for (const AtLambda& p : at_lambda_) {
      const double floor = p.objective +
                           least_recompute_difference(graph_, space_, p.cluster, c, lambda_,
                                                      base_.cache(), threads_) -
                           lambda_ * seen_cap_;
      if (beaten_by(floor)) return true;
    }
    return false;
  }

  // The dual at the latest weight, searched (one search); when it leaves
  // the choice a chance, its loop under the cap starts from it.
  Result<bool> ruled_out_searched(const Cluster& c) {
    Result<WeightedSearch> at = once(c, 1, lambda_);
    if (!at) return at.error();
    at_lambda_.push_back(AtLambda{c, at->objective});
    const bool out = beaten_by(at->objective - lambda_ * seen_cap_);
    if (!out) warm_.emplace(c.training, WarmStart{lambda_, std::move(*at)});
    return out;
  }

  // A choice's search without the cap, unless a bound rules the choice out
  // first: `floor` (a lower bound of that search's objective), the dual
  // without a search, the dual searched, then that search's cost (the dual
  // before it: near the Lagrangian's balance it rules out more, and the
  // search without the cap is wanted only for a choice that stays). None:
  // ruled out.
  Result<std::optional<WeightedSearch>> free_unless_ruled_out(const Cluster& c, double floor) {
    if (beaten_by(floor) || ruled_out_unsearched(c)) return std::optional<WeightedSearch>{};
    if (best_ && lambda_ > 0) {
      Result<bool> out = ruled_out_searched(c);
      if (!out) return out.error();
      if (*out) return std::optional<WeightedSearch>{};
    }
    Result<WeightedSearch> free = once(c, 1, 0);
    if (!free) return free.error();
    if (beaten_by(free->plan.cost)) return std::optional<WeightedSearch>{};
    return std::optional<WeightedSearch>(std::move(*free));
  }

  // A choice's plan under the cap: the best when it fits and beats it; else
  // kept as what the most recomputed choice tried gave (`full`), or the
  // first such.
  std::optional<Error> consider(Result<Plan> p, bool full) {
    if (!p && p.error().where != "cluster.memory_gib") return p.error();
    if (p && p->fits) {
      if (!best_ || p->cost < best_->cost) best_ = std::move(*p);
    } else if (full || !unfit_) {
      unfit_ = std::move(p);
    }
    return std::nullopt;
  }

  double difference(const Cluster& from, const Cluster& to) {
    return least_recompute_difference(graph_, space_, from, to, 0, base_.cache(), threads_);
  }

  // 1. Without recomputation: done (true) when its least cost fits.
  Result<bool> try_none() {
    const Cluster none = choice(Recompute::kNone, -1, Recompute::kNone);
    Result<WeightedSearch> free = once(none, 1, 0);
    if (!free) return free.error();
    if (free->plan.memory.total() <= cap_) {
      Result<Plan> p = capped(none, std::move(*free));
      if (!p) return p.error();
      best_ = std::move(*p);
      return true;
    }
    none_objective_ = free->objective;
    if (std::optional<Error> e = consider(capped(none, std::move(*free)), false)) return *e;
    return false;
  }

  // 2. Selective on every block. Its search without the cap waits for
  // none's under it: the dual at none's memory weight usually leaves
  // selective out with no search without the cap. Until then its least
  // cost without the cap is bounded by none's plus, per recomputed vertex,
  // the least its cost grows from none to selective
  // (least_recompute_difference() at weight 0).
  std::optional<Error> try_selective() {
    const Cluster none = choice(Recompute::kNone, -1, Recompute::kNone);
    const Cluster selective = choice(Recompute::kSelective, -1, Recompute::kSelective);
    selective_objective_ = none_objective_ + difference(none, selective);
    Result<std::optional<WeightedSearch>> free =
        free_unless_ruled_out(selective, selective_objective_);
    if (!free) return free.error();
    if (!*free) return std::nullopt;
    selective_objective_ = (*free)->objective;
    return consider(capped(selective, std::move(**free)), false);
  }

  // 3. Full on every block. Its least cost without the cap is at least
  // none's and selective's (as far as it is known) plus the least each
  // vertex's cost grows from them to full (least_recompute_difference() at
  // memory weight 0), read only once there is a best plan to hold it
  // against.
  std::optional<Error> try_full() {
    const Cluster none = choice(Recompute::kNone, -1, Recompute::kNone);
    const Cluster selective = choice(Recompute::kSelective, -1, Recompute::kSelective);
    const Cluster full = choice(Recompute::kFull, -1, Recompute::kFull);
    const double floor = best_ ? std::max(none_objective_ + difference(none, full),
                                          selective_objective_ + difference(selective, full))
                               : 0;
    Result<std::optional<WeightedSearch>> free = free_unless_ruled_out(full, floor);
    if (!free) return free.error();
    if (!*free) return std::nullopt;
    Result<Plan> p = capped(full, std::move(**free));
    full_unfit_ = !(p && p->fits);
    return consider(std::move(p), true);
  }

  // Choice mixed(k) under the cap (from its search without the cap);
  // whether its plan fits. Every plan that fits is a candidate, not only
  // the fewest k's: a Lagrangian plan's distance from its bound differs
  // from k to k.
  Result<bool> try_k(int64_t k, WeightedSearch free) {
    Result<Plan> p = capped(mixed(k), std::move(free));
    if (!p && p.error().where != "cluster.memory_gib") return p.error();
    const bool fits = p && p->fits;
    if (fits && (!best_ || p->cost < best_->cost)) {
      best_ = std::move(*p);
      best_k_ = k;
    }
    return fits;
  }

  // mixed(k) unless its bounds rule it out (free_unless_ruled_out()).
  std::optional<Error> try_k_unless_ruled_out(int64_t k, double floor) {
    searched_[k] = 1;
    Result<std::optional<WeightedSearch>> free = free_unless_ruled_out(mixed(k), floor);
    if (!free) return free.error();
    if (!*free) return std::nullopt;
    Result<bool> fits = try_k(k, std::move(**free));
    if (!fits) return fits.error();
    return std::nullopt;
  }

  // 4. Full on the first blocks, selective on the rest: over the cap when
  // full on all is. The least memory a strategy reaches, without the
  // working buffers that the search does not see, gives the fewest blocks
  // that may fit (k0, by bisection, each vertex at its least: no search);
  // the others are searched under the cap, by bisection too. Full on a
  // block can cost less than selective on it (the longer backward hides
  // more of the weight gradients' reduction), so the family is left out
  // only when selective's least cost without the cap plus
  // least_recompute_difference() to each k from k0 up cannot beat the best.
  std::optional<Error> try_mixed() {
    if (blocks_ <= 1 || full_unfit_) return std::nullopt;
    const Cluster selective = choice(Recompute::kSelective, -1, Recompute::kSelective);
    int64_t lo = 0, hi = blocks_;  // hi fits (all in full); lo: selective alone
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      (least_memory_strategy(graph_, mixed(mid), space_, StageWeights{}).bytes <= cap_ ? hi : lo) =
          mid;
    }
    // Each k's lower bound of its cost without the cap, from k0 up; their
    // least bounds the family's (none when k0 is every block: that is full
    // on every block, above).
    std::vector<double> floor_of(static_cast<size_t>(blocks_), 0);
    double floor = std::numeric_limits<double>::infinity();
    for (int64_t k = hi; best_ && k < blocks_; ++k) {
      floor_of[k] = selective_objective_ + difference(selective, mixed(k));
      floor = std::min(floor, floor_of[k]);
    }
    if (hi >= blocks_ || beaten_by(floor)) return std::nullopt;
    searched_.assign(static_cast<size_t>(blocks_), 0);
    // k at both ends: k0 (its bounds, its dual without a search, then
    // searched, then its search without the cap) and the most blocks in
    // full short of all. From k0, the fewest k that fit, by bisection under
    // the cap.
    const int64_t k0 = hi;
    searched_[k0] = 1;
    Result<std::optional<WeightedSearch>> at_k0 = free_unless_ruled_out(mixed(k0), floor_of[k0]);
    if (!at_k0) return at_k0.error();
    const bool k0_hopeful = at_k0->has_value();
    if (k0_hopeful) {
      std::optional<WeightedSearch> free = std::move(*at_k0);
      for (hi = blocks_; hi - lo > 1;) {
        const int64_t mid = free ? k0 : (lo + hi) / 2;
        Result<WeightedSearch> f =
            free ? Result<WeightedSearch>(std::move(*free)) : once(mixed(mid), 1, 0);
        free.reset();
        searched_[mid] = 1;
        if (!f) return f.error();
        Result<bool> fits = try_k(mid, std::move(*f));
        if (!fits) return fits.error();
        (*fits ? hi : lo) = mid;
      }
    }
    const int64_t top = blocks_ - 1;
    if (!searched_[top])
      if (std::optional<Error> e = try_k_unless_ruled_out(top, floor_of[top])) return e;
    // Then the neighbours of the best k (or of the fewest that fit), as
    // long as one beats it: a k's plan is not the fewest's plus a trend
    // (its distance from its bound differs from k to k), and more blocks
    // in full can cost less. Each is searched unless its bounds rule it
    // out.
    int64_t around = best_k_ >= 0 ? best_k_ : k0_hopeful ? hi : -1;
    while (around >= 0) {
      const int64_t from = around;
      for (int64_t k : {from + 1, from - 1}) {
        if (k <= lo || k >= blocks_ || searched_[k]) continue;
        if (std::optional<Error> e = try_k_unless_ruled_out(k, floor_of[k])) return e;
        if (best_k_ == k) {
          around = k;
          break;
        }
      }
      if (around == from) break;
    }
    return std::nullopt;
  }

  // The best plan that fits; else what the most recomputed choice tried
  // gave (its error, or its plan over the cap).
  Result<Plan> answer() {
    Result<Plan> out = best_ ? Result<Plan>(std::move(*best_)) : std::move(unfit_);
    if (!out) return out;
    out->search.searches = searches_;
    out->search.time_s = seconds_since(start_);
    return out;
  }

  const Graph& graph_;
  const Cluster& cluster_;
  const PlanOptions& options_;
  const SearchSpace& space_;
  const int first_;
  const int64_t blocks_;
  const std::chrono::steady_clock::time_point start_;
  SpaceSearch base_;
  const double expected_searches_;
  OpenParts parts_;
  const double cap_, seen_cap_;
  const int threads_;
  int searches_ = 0;
  // The memory weight of the latest search under the cap that gave its
  // bound (the weight of the next choices' dual bounds), and the choices
  // searched at it with their objectives.
  double lambda_ = 0;
  struct AtLambda {
    Cluster cluster;
    double objective = 0;
  };
  std::vector<AtLambda> at_lambda_;
  // The latest choice's dual searched at lambda_ (ruled_out_searched()):
  // its loop under the cap starts from it.
  std::optional<std::pair<Training, WarmStart>> warm_;
  std::optional<Plan> best_;
  Result<Plan> unfit_ = Error{"no recomputation tried", "training.recompute"};
  // Lower bounds of none's and selective's least objective (and cost)
  // without the cap: their searches', or bounds without them.
  double none_objective_ = 0, selective_objective_ = 0;
  bool full_unfit_ = false;  // full on every block searched, and over the cap
  int64_t best_k_ = -1;      // the k of the best plan, when the mixed choices gave it
  std::vector<char> searched_;
};

}  // namespace

Result<Plan> plan_recompute(const Graph& graph, const Cluster& cluster,
                            const PlanOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::pair<int, int> range = block_range(graph);
  const int first = range.first;
  const int64_t blocks = first < 0 ? 0 : range.second - first + 1;
  Result<SearchSpace> space = prepare_space(graph, cluster, options);
  const bool practice_cap =
      blocks > 0 && cluster.memory_gib > 0 && cluster.cost_model == CostModel::kPractice;
  if (!space || !practice_cap || bounded_instead(space->est, options) ||
      space->est.peak_bytes > table_limit(options))
    return plan_each_choice(graph, cluster, options, practice_cap, first);
  return RecomputeSearch(graph, cluster, options, *space, first, blocks, start).run();
}

}  // namespace pase
