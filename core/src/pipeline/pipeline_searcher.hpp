// The pipeline search's state and parts (core/docs/pipeline.md, "What the
// planner chooses"): the stage plans, kept by what makes ranges plan alike;
// the micro-batch graphs with their boundaries; the partition of one pair
// (S, M) (pipeline_partition.cpp). plan_pipeline() (pipeline_search.cpp)
// runs them over the pairs.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "pase/pipeline.hpp"
#include "pipeline/pipeline_model.hpp"
#include "search/dynamic_program.hpp"
#include "search/progress.hpp"
#include "search/stop.hpp"
#include "search/weighted_plan.hpp"

namespace pase::pipeline_detail {

// Where stage s of stages on q devices each starts in its node: its first
// device, s * q, modulo the node's devices (0 on a flat machine). Stage
// plans depend on it through the links their collectives cross.
inline int64_t stage_alignment(const Cluster& cluster, int64_t s, int64_t q) {
  return cluster.gpus_per_node > 0 ? (s * q) % cluster.gpus_per_node : 0;
}

// A stage plan: its configurations and costs (one micro-batch), or none fits.
struct StagePlan {
  bool fits = false;
  bool optimal = true;
  Strategy configs;
  double F = 0, W = 0;
  MemoryBytes memory;  // one copy of the activations
  SearchStats search;
  // Under the cap: the memory weight whose search gave the Lagrangian's
  // bound, with its objective (lambda 0: the plan was not searched under
  // the cap).
  DualPoint dual;
};

// For progress: a stage plan without a cap by its cache key without k.
using NeedKey = std::tuple<int64_t, int64_t, int, int64_t>;

struct Micro;
class Composition;  // pipeline_compose.hpp

struct Searcher {
  const Graph& graph;
  const Cluster& cluster;
  const PipelineOptions& pipeline;
  const PlanOptions& options;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  // Stage plans by (q, M, range signature, first device mod node size, k);
  // k is 0 for the plan without a cap, -1 for the least F (least_f()).
  std::map<std::tuple<int64_t, int64_t, int, int64_t, int64_t>, StagePlan> plans{};
  // Vertex prints and range signatures, interned: equal ids, equal prices.
  std::map<std::vector<int64_t>, int> prints{}, signatures{};
  Floors floors{cluster, options.enumeration};
  int64_t searches = 0;
  SearchStats stats{};
  // A stage plan was not proven optimal (the bounded search's): then
  // neither are the pruning bounds made of stage plans, nor the pipeline.
  bool unproven = false;
  // Progress: stage plans searched of those the search may still need.
  double done = 0, total = 1, shown = 0;
  // The keys that the ranges of the pairs not yet done may need, with how
  // many ranges need each. Every key counts once in `total` until it is
  // searched, or its last range is passed (pruned, or its pair done or
  // skipped) without a search.
  std::map<NeedKey, int64_t> pending{};

  // `ranges` ranges that needed `key` are passed.
  void drop(const NeedKey& key, int64_t ranges = 1) {
    auto it = pending.find(key);
    if (it == pending.end() || (it->second -= ranges) > 0) return;
    pending.erase(it);
    if (plans.count(std::tuple_cat(key, std::make_tuple(int64_t{0}))) == 0) total -= 1;
  }

  static int intern(std::map<std::vector<int64_t>, int>& ids, std::vector<int64_t> key) {
    return ids.emplace(std::move(key), static_cast<int>(ids.size())).first->second;
  }

  // Progress runs in three phases, each over its share [from, to) of the
  // bar (plan_pipeline()): the pairs' lower bounds from their layers'
  // floors (kFloors: `floored` of `pairs_to_floor`; no search), the plan
  // without a pipeline (kLead: on a deep network most of the work, before
  // the pairs it lets the bounds skip), then the stage plans (kPlans: those
  // searched of those the search may still need, the parts' plans of the
  // pairs' floors among them).
  enum class Phase { kLead, kFloors, kPlans };
  Phase phase = Phase::kPlans;
  double from = 0, to = 1;
  double floored = 0, pairs_to_floor = 1;

  // The phase's fraction done. In the lead, its stage plan without the cap
  // fills what the first search of a plan under the cap does (open_part()),
  // and the one under the cap, which runs the Lagrangian loop, the rest.
  double phase_fraction(double fraction) const {
    fraction = std::clamp(fraction, 0.0, 1.0);
    switch (phase) {
      case Phase::kLead: {
        if (cluster.memory_gib <= 0) return done >= 1 ? 1.0 : fraction;
        const double first = 1 / (1 + kSearchesAhead);
        return done >= 2 ? 1.0 : done >= 1 ? first + (1 - first) * fraction : first * fraction;
      }
      case Phase::kFloors:
        return std::min(1.0, floored / pairs_to_floor);
      case Phase::kPlans:
        break;
    }
    return std::min(1.0, (done + fraction) / total);
  }

  // `inner`: the progress of the stage plan being searched, if any.
  void report(const Progress& inner = {}) {
    if (!options.on_progress) return;
    shown = std::max(shown, from + (to - from) * phase_fraction(inner.fraction));
    Progress p;
    p.fraction = shown;
    // A pipeline's progress counts stage plans (pipeline.hpp).
    p.vertices_done = static_cast<int>(done);
    p.vertices_total = static_cast<int>(std::max(total, done));
    p.phase = phase_name() +
              (phase == Phase::kLead && !inner.phase.empty() ? ": " + inner.phase : std::string());
    if (best_T < kInf && bound > 0) p.gap = std::max(0.0, (best_T - bound) / best_T);
    options.on_progress(p);
  }

  std::string phase_name() const {
    switch (phase) {
      case Phase::kLead:
        return "pipeline: the plan without a pipeline";
      case Phase::kFloors:
        return "pipeline: lower bounds of the stage and micro-batch counts";
      case Phase::kPlans:
        break;
    }
    return "pipeline: stage plans";
  }

  // Why the search stopped: "cancelled" or "time limit".
  std::string stop_reason() const { return cancel_requested(options) ? "cancelled" : "time limit"; }

  // The best T so far (the incumbent's before one is found) and the lower
  // bound proven so far, for the progress's gap.
  double best_T = kInf, bound = 0;

  // The micro-batch graphs by their graph, for the composition of their
  // ranges, and the compositions made (null: the graph does not compose),
  // by graph, devices, M and first device.
  std::map<const Graph*, const Micro*> micros{};
  std::map<std::tuple<const Graph*, int64_t, int64_t, int64_t>, std::shared_ptr<const Composition>>
      compositions{};
  // Under Compose::kAuto, by the same key: the blocks the ranges searched
  // so far have cost, and what the composition would (composed()).
  std::map<std::tuple<const Graph*, int64_t, int64_t, int64_t>, std::pair<double, double>>
      composition_spent{};

  // The plan without a cap of [a, b) from the composition of the repeated
  // blocks, when the graph composes and the range holds a block to compose
  // (pipeline_compose.cpp); else none, and the range is searched.
  Result<std::optional<StagePlan>> composed(const Graph& micro, int a, int b, const Cluster& free,
                                            int64_t microbatches);

  // A plan of [a, b) without a cap, on q devices `align` devices into a
  // node, for M micro-batches, kept under key k: 0 for the least
  // M * F + W, -1 for the least F alone.
  Result<const StagePlan*> uncapped(const Graph& micro, int sig, int a, int b, int64_t align,
                                    int64_t q, int64_t microbatches, int64_t k) {
    auto key = std::make_tuple(q, microbatches, sig, align, k);
    auto it = plans.find(key);
    if (it == plans.end()) {
      // Progress: a plan no range waits for (a part's least F, or a part
      // planned for a pair's floor) is counted once it is needed.
      if (k != 0 || pending.count(NeedKey{q, microbatches, sig, align}) == 0) total += 1;
      Cluster free = cluster;
      free.devices = q;
      free.first_device = align;
      free.memory_gib = 0;
      std::optional<StagePlan> made;
      if (k == 0) {
        Result<std::optional<StagePlan>> c = composed(micro, a, b, free, microbatches);
        if (!c) return c.error();
        made = std::move(*c);
      }
      if (!made) {
        Result<StagePlan> r = search(micro, sig, a, b, free, microbatches, 1, k == 0 ? 1.0 : 0.0);
        if (!r) return r.error();
        made = std::move(*r);
      }
      it = plans.emplace(key, std::move(*made)).first;
    }
    return &it->second;
  }

  // The plan of [a, b) without a cap: the least M * F + W.
  Result<const StagePlan*> free_plan(const Graph& micro, int sig, int a, int b, int64_t align,
                                     int64_t q, int64_t microbatches) {
    return uncapped(micro, sig, a, b, align, q, microbatches, 0);
  }

  // The least F (one micro-batch, without the weight gradients' reduction)
  // of [a, b) without a cap: the pipeline search's bounds of the A of stages
  // holding the range (core/docs/pipeline.md, "Pruning").
  Result<double> least_f(const Graph& micro, int sig, int a, int b, int64_t align, int64_t q,
                         int64_t microbatches) {
    Result<const StagePlan*> r = uncapped(micro, sig, a, b, align, q, microbatches, -1);
    if (!r) return r.error();
    return (*r)->F;
  }

  // The plan of stage s = [a, b) of `micro` on q devices, for M micro-batches
  // and k copies of the activations. Without a cap k does not matter; under
  // one, the plan without the cap serves every k it fits with.
  Result<const StagePlan*> stage_plan(const Graph& micro, int sig, int a, int b, int64_t s,
                                      int64_t q, int64_t microbatches, int64_t k) {
    const int64_t align = stage_alignment(cluster, s, q);
    Result<const StagePlan*> free = free_plan(micro, sig, a, b, align, q, microbatches);
    if (!free) return free.error();
    const StagePlan* f = *free;
    if (cluster.memory_gib <= 0) return f;
    const StageWeights weights{static_cast<double>(microbatches), static_cast<double>(k)};
    // What the stage holds (assemble()): with k copies of the activations
    // and the working buffers of its largest layer.
    if (weights.bytes(f->memory) + f->memory.working <= cluster.capacity_bytes()) return f;
    Cluster cs = cluster;
    cs.devices = q;
    cs.first_device = align;
    auto capped_key = std::make_tuple(q, microbatches, sig, align, k);
    auto c = plans.find(capped_key);
    if (c == plans.end()) {
      Result<StagePlan> r = search(micro, sig, a, b, cs, microbatches, k);
      if (!r) return r.error();
      c = plans.emplace(capped_key, std::move(*r)).first;
    }
    return &c->second;
  }

  // Edge prices kept across stage plans, by the stage's devices and its
  // first device's place in its node (what the prices depend on besides the
  // graph), the most recently used few.
  struct KeptPrices {
    int64_t devices = 0, align = 0;
    std::unique_ptr<EdgePrices> prices;
  };
  std::vector<KeptPrices> kept_prices{};
  static constexpr size_t kKeptPrices = 4;

  EdgePrices* prices_for(const Cluster& cs) {
    auto it = std::find_if(kept_prices.begin(), kept_prices.end(), [&](const KeptPrices& k) {
      return k.devices == cs.devices && k.align == cs.first_device;
    });
    if (it == kept_prices.end()) {
      if (kept_prices.size() == kKeptPrices) kept_prices.pop_back();
      kept_prices.insert(kept_prices.begin(),
                         KeptPrices{cs.devices, cs.first_device,
                                    std::make_unique<EdgePrices>(EndView::of(ops::make_machine(cs)),
                                                                 kEdgePriceBudget)});
    } else {
      std::rotate(kept_prices.begin(), it, std::next(it));
    }
    return kept_prices.front().prices.get();
  }

  // The space of the latest range searched, with its stage graph, what its
  // searches share and its plan without the cap: the plan under the cap of
  // a range usually follows the one without (stage_plan()), and searches
  // the same space (the cap does not change it), first at the same weights.
  struct KeptSpace {
    std::tuple<int64_t, int64_t, int, int64_t> key;  // devices, M, signature, first device
    Graph sub;
    SearchSpace space;
    std::unique_ptr<SearchCache> cache;
    std::optional<WeightedSearch> first;  // the plan without the cap, when made
  };
  std::optional<KeptSpace> kept_space{};

  // Makes kept_space the space of [a, b) on cs for M micro-batches, unless
  // it is already.
  std::optional<Error> keep_space(const Graph& micro, int sig, int a, int b, const Cluster& cs,
                                  int64_t microbatches) {
    const auto key = std::make_tuple(cs.devices, microbatches, sig, cs.first_device);
    if (kept_space && kept_space->key == key) return std::nullopt;
    kept_space.reset();
    Graph sub = stage_graph(micro, a, b);
    Result<SearchSpace> space = prepare_space(sub, cs, options);
    if (!space) return space.error();
    kept_space.emplace(KeptSpace{key, std::move(sub), std::move(*space),
                                 std::make_unique<SearchCache>(), std::nullopt});
    return std::nullopt;
  }

  // The least M * F + W + lambda * (memory with k copies of the
  // activations) of [a, b), one search without the cap, kept by its key: a
  // lower bound of the same of every range made of such parts (the edges
  // between them cost nothing below zero, and memory is a sum over the
  // layers). 0, which bounds it too, where the space is one for the bounded
  // search.
  std::map<std::tuple<int64_t, int64_t, int, int64_t, int64_t, double>, double> part_objectives{};
  Result<double> part_objective(const Graph& micro, int sig, int a, int b, int64_t align, int64_t q,
                                int64_t microbatches, int64_t k, double lambda) {
    const auto key = std::make_tuple(q, microbatches, sig, align, k, lambda);
    if (auto it = part_objectives.find(key); it != part_objectives.end()) return it->second;
    Cluster cs = cluster;
    cs.devices = q;
    cs.first_device = align;
    if (std::optional<Error> e = keep_space(micro, sig, a, b, cs, microbatches)) return *e;
    double objective = 0;
    KeptSpace& ks = *kept_space;
    if (!bounded_instead(ks.space.est, options) &&
        ks.space.est.peak_bytes <= table_limit(options)) {
      const StageWeights weights{static_cast<double>(microbatches), static_cast<double>(k)};
      PlanOptions o = options;
      o.on_progress = nullptr;  // the pipeline's progress counts stage plans
      ++searches;
      Result<WeightedSearch> r =
          SpaceSearch(ks.sub, cs, o, weights, ks.space, prices_for(cs), ks.cache.get())
              .once(1, lambda);
      if (!r) return r.error();
      objective = r->objective;
    }
    return part_objectives.emplace(key, objective).first->second;
  }

  // A stage plan of [a, b) (signature sig): the least M * F + sync_weight *
  // W under cs's cap (sync_weight 0: the least F).
  Result<StagePlan> search(const Graph& micro, int sig, int a, int b, const Cluster& cs,
                           int64_t microbatches, int64_t k, double sync_weight = 1) {
    const auto start = std::chrono::steady_clock::now();
    PlanOptions o = options;
    o.on_progress = [&](const Progress& p) { report(p); };
    ++searches;
    // A plan under the cap is counted once it is needed (the count holds
    // the plans without it): else the bar would stand at its end while
    // they run.
    if (cs.memory_gib > 0) total += 1;
    // The whole graph at M = 1 (S = M = 1) is plan() itself, ties and all.
    const bool whole = a == 0 && b == static_cast<int>(micro.vertices.size()) && microbatches == 1;
    // The least F alone (sync_weight 0) needs no ties to the smaller A.
    const double m = static_cast<double>(microbatches);
    const double tie = whole || sync_weight != 1 ? 0.0 : 1e-13 * m;
    const StageWeights weights{m, static_cast<double>(k), tie, sync_weight};
    DualPoint dual;
    auto plan_range = [&]() -> Result<Plan> {
      if (std::optional<Error> e = keep_space(micro, sig, a, b, cs, microbatches)) return *e;
      if (bounded_instead(kept_space->space.est, o)) {
        // The bounded search takes the space for its own.
        SearchSpace space = std::move(kept_space->space);
        const Graph sub = std::move(kept_space->sub);
        kept_space.reset();
        return plan_bounded(sub, cs, o, weights, std::move(space), start);
      }
      KeptSpace& ks = *kept_space;
      // Under the cap, the search at (1, 0) is the plan without it: the
      // memory's weight is 0, so k does not matter.
      const bool capped = cs.memory_gib > 0 && sync_weight == 1;
      SpaceSearch range(ks.sub, cs, o, weights, ks.space, prices_for(cs), ks.cache.get());
      Result<Plan> p = range.plan(capped ? ks.first : std::nullopt, start);
      dual = range.dual();
      // (under_cap() reads the first search's plan, not its objective.)
      if (p && cs.memory_gib <= 0 && sync_weight == 1)
        ks.first = WeightedSearch{*p, weights.value(*p)};
      return p;
    };
    const Result<Plan> r = plan_range();
    done += 1;
    report();
    if (!r) {
      if (r.error().where == "cluster.memory_gib") return StagePlan{};  // nothing fits
      return r.error();
    }
    StagePlan sp = take(*r, cs);
    sp.dual = dual;
    return sp;
  }

  // The stage plan of a plan searched (or composed) on cs, counted in the
  // search's statistics.
  StagePlan take(const Plan& plan, const Cluster& cs) {
    const Plan* r = &plan;
    StagePlan sp;
    // Over the cap with the working buffers of its largest layer
    // (under_cap() tried a lower cap): in no pipeline.
    sp.fits = cs.memory_gib <= 0 || r->fits;
    if (!sp.fits) return sp;
    sp.optimal = r->optimal;
    unproven = unproven || (r->search.bounded && !r->optimal);
    sp.configs = r->strategy;
    sp.W = StageWeights::weight_sync(*r);
    sp.F = r->cost - sp.W;
    sp.memory = r->memory;
    sp.search = r->search;
    stats.pairs += r->search.pairs;
    stats.raw_pairs += r->search.raw_pairs;
    stats.table_entries += r->search.table_entries;
    stats.configurations += r->search.configurations;
    stats.peak_bytes = std::max(stats.peak_bytes, r->search.peak_bytes);
    stats.raw_peak_bytes = std::max(stats.raw_peak_bytes, r->search.raw_peak_bytes);
    stats.largest_table = std::max(stats.largest_table, r->search.largest_table);
    stats.max_dependent_set = std::max(stats.max_dependent_set, r->search.max_dependent_set);
    stats.searches += r->search.searches;
    // A stage plan of the bounded search makes the pipeline's not proven
    // optimal (plan_pipeline(): its bound is then 0).
    if (r->search.bounded) {
      stats.bounded = true;
      stats.rounds += r->search.rounds;
      stats.fixed_vertices = std::max(stats.fixed_vertices, r->search.fixed_vertices);
      stats.exact_peak_bytes = std::max(stats.exact_peak_bytes, r->search.exact_peak_bytes);
    }
    return sp;
  }
};

// The best partition of `micro` into `stages` stages for M micro-batches:
// T, the stage of every vertex and the configurations; T = inf when no
// partition fits.
struct Partition {
  double T = kInf;
  // A lower bound of T over every partition of the pair (kInf: none fits),
  // from the bounds alone; best_partition() below Depth::kPartition stops there.
  double floor = 0;
  std::vector<int> stage_of;
  Strategy configs;
  bool optimal = true;
  int boundaries = 0;
  // The search stopped (stop.hpp) before the pair was done: `floor` is
  // what its bounds proved so far, T the partition of balanced floors when
  // it was planned in time (inf otherwise).
  bool stopped = false;
};

// Stage s over bounds[i] .. bounds[j], i < j, leaving room for the stages
// before and after it (nb boundaries).
inline bool range_ok(int64_t stages, int nb, int64_t s, int i, int j) {
  if (i >= j || (s == 0) != (i == 0) || (s == stages - 1) != (j == nb - 1)) return false;
  return i >= s && (nb - 1 - j) >= stages - 1 - s;
}

// A micro-batch graph with its allowed boundaries, its vertices' print ids
// and the signature of the range between any two boundaries.
struct Micro {
  Graph graph;
  std::vector<int> bounds;
  std::vector<int> print;
  std::vector<std::vector<int>> sig;
};

// The micro-batch graph `graph` with its boundaries and signatures.
Micro prepare_micro(Searcher& searcher, Graph graph);

// How far best_partition() goes: the floor of the pair from the vertices'
// floors alone (no search), the floor with the plans of the parts between
// consecutive boundaries that the bounds take their values from (a search
// of each part: kValueFloor their plans of least M * F + W, kFloor those
// and their plans of least F), or the best partition.
enum class Depth { kVertexFloor, kValueFloor, kFloor, kPartition };

// The best partition of `mg` into `stages` stages for M micro-batches that
// can beat `beat` (the best T of the pairs searched before; inf: none).
// Below kPartition the result's floor bounds the pair's T (T stays inf).
Result<Partition> best_partition(Searcher& searcher, const Micro& mg, int64_t stages,
                                 int64_t microbatches, double beat,
                                 Depth depth = Depth::kPartition);

// The pipeline search of one recomputation (the cluster's; not kAuto):
// the pairs (S, M) best first from their floors (pipeline_search.cpp).
Result<PipelinePlan> plan_pipeline_fixed(const Graph& graph, const Cluster& cluster,
                                         const PipelineOptions& pipeline,
                                         const PlanOptions& options);

}  // namespace pase::pipeline_detail
