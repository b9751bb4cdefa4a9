// plan_pipeline() of pipeline.hpp: the stage plans and the partition
// (core/docs/pipeline.md, "What the planner chooses").
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/cost_model.hpp"
#include "pase/pipeline.hpp"
#include "pipeline/pipeline_bounds.hpp"
#include "pipeline/pipeline_model.hpp"
#include "pipeline/pipeline_searcher.hpp"
#include "search/progress.hpp"
#include "search/stop.hpp"
#include "search/weighted_plan.hpp"

namespace pase {

namespace pipeline_detail {

// Signatures are built boundary by boundary: the range [i, j) is the range
// [i, j - 1) and the vertices and entering edges of the part between bounds
// j - 1 and j (positions relative to bounds[i]; the edges are in destination
// order, as build_graph() makes them). Equal signatures give equal stage
// graphs, so equal stage plans. O(boundaries * (vertices + edges)).
Micro prepare_micro(Searcher& searcher, Graph graph) {
  Micro m;
  m.graph = std::move(graph);
  m.bounds = allowed_boundaries(m.graph);
  const int n = static_cast<int>(m.graph.vertices.size());
  const int nb = static_cast<int>(m.bounds.size());
  m.print.resize(n);
  for (int v = 0; v < n; ++v)
    m.print[v] =
        Searcher::intern(searcher.prints, vertex_print(m.graph.vertices[v], model_of(m.graph, v)));
  std::vector<std::vector<const Edge*>> into(n);
  for (const Edge& e : m.graph.edges) into[e.dst].push_back(&e);
  m.sig.assign(nb, std::vector<int>(nb, -1));
  for (int i = 0; i < nb; ++i) {
    const int a = m.bounds[i];
    int previous = -1;
    for (int j = i + 1; j < nb; ++j) {
      std::vector<int64_t> key{previous};
      for (int v = m.bounds[j - 1]; v < m.bounds[j]; ++v) {
        key.push_back(m.print[v]);
        for (const Edge* e : into[v])
          if (e->src >= a) {
            key.push_back(e->src - a);
            key.push_back(e->src_output);
            key.push_back(e->dst_slot);
          }
        key.push_back(-1);
      }
      m.sig[i][j] = previous = Searcher::intern(searcher.signatures, std::move(key));
    }
  }
  return m;
}

}  // namespace pipeline_detail

using namespace pipeline_detail;

namespace {

// f(key, count) once per key the ranges of the pair (S, M) may need, with
// how many ranges (stage, start, end) need it. A range [i, j) is one of the
// stages lo .. hi (range_ok()), so a pair costs O(boundaries^2), not
// O(S * boundaries^2), and the keys are counted in a table of the pair's
// own before they reach the searcher's.
template <typename F>
void for_ranges(const Cluster& cluster, const Micro& mg, int64_t stages, int64_t microbatches,
                F&& f) {
  const int nb = static_cast<int>(mg.bounds.size());
  const int64_t q = cluster.devices / stages;
  const int64_t G = cluster.gpus_per_node;
  const bool aligned = G <= 0 || q % G == 0;  // every stage starts a node
  std::unordered_map<int64_t, int64_t> counts;
  for (int i = 0; i < nb; ++i)
    for (int j = i + 1; j < nb; ++j) {
      int64_t lo = std::max<int64_t>(i == 0 ? 0 : 1, stages - 1 - (nb - 1 - j));
      int64_t hi = std::min<int64_t>(i == 0 ? 0 : stages - 1, i);
      if (j == nb - 1) {
        lo = std::max<int64_t>(lo, stages - 1);
      } else {
        hi = std::min<int64_t>(hi, stages - 2);
      }
      if (lo > hi) continue;
      const int64_t sig = mg.sig[i][j];
      if (aligned) {
        counts[sig * (G + 1)] += hi - lo + 1;
      } else {
        for (int64_t s = lo; s <= hi; ++s)
          counts[sig * (G + 1) + stage_alignment(cluster, s, q)] += 1;
      }
    }
  for (const auto& [packed, count] : counts)
    f(NeedKey{q, microbatches, static_cast<int>(packed / (G + 1)), packed % (G + 1)}, count);
}

void need(Searcher& searcher, const Micro& mg, int64_t stages, int64_t microbatches) {
  for_ranges(searcher.cluster, mg, stages, microbatches,
             [&](const NeedKey& key, int64_t count) { searcher.pending[key] += count; });
}

// A pair skipped whole: the keys it needed leave the count (Searcher::drop).
void release(Searcher& searcher, const Micro& mg, int64_t stages, int64_t microbatches) {
  for_ranges(searcher.cluster, mg, stages, microbatches,
             [&](const NeedKey& key, int64_t count) { searcher.drop(key, count); });
}

}  // namespace

std::vector<int64_t> auto_microbatch_counts(const Graph& graph, int64_t max_microbatches) {
  const int64_t batch = graph.model && graph.model->spec ? common_batch(*graph.model->spec) : 1;
  std::vector<int64_t> counts;
  for (int64_t m = 1; m <= std::min(batch, max_microbatches); ++m)
    if (batch % m == 0) counts.push_back(m);
  if (counts.empty()) counts.push_back(1);
  return counts;
}

namespace pipeline_detail {

Result<PipelinePlan> plan_pipeline_fixed(const Graph& graph, const Cluster& cluster,
                                         const PipelineOptions& pipeline,
                                         const PlanOptions& options) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  if (graph.model->spec == nullptr)
    return Error{"the graph was not made by build_graph(), load_graph() or build_model()", "graph"};
  if (pipeline.stages < 0)
    return Error{"must be a positive integer or \"auto\"", "pipeline.stages"};
  if (pipeline.microbatches < 0)
    return Error{"must be a positive integer or \"auto\"", "pipeline.microbatches"};
  if (pipeline.max_microbatches < 1)
    return Error{"must be a positive integer", "pipeline.max_microbatches"};
  const int64_t p = cluster.devices;
  std::vector<int64_t> stage_counts, micro_counts;
  if (pipeline.stages == kAuto) {
    for (int64_t s = 1; s <= p; ++s)
      if (p % s == 0) stage_counts.push_back(s);
  } else if (p % pipeline.stages != 0) {
    return Error{std::to_string(pipeline.stages) + " stages do not divide the " +
                     std::to_string(p) + " devices (stage s runs on devices s*q .. (s+1)*q - 1)",
                 "pipeline.stages"};
  } else {
    stage_counts.push_back(pipeline.stages);
  }
  if (pipeline.microbatches == kAuto) {
    micro_counts = auto_microbatch_counts(graph, pipeline.max_microbatches);
  } else {
    micro_counts.push_back(pipeline.microbatches);
  }

  Searcher searcher{graph, cluster, pipeline, options};
  std::map<int64_t, Micro> micros;
  for (int64_t m : micro_counts) {
    Result<Graph> micro = micro_batch_graph(graph, m);
    if (!micro) {
      if (pipeline.microbatches != kAuto) return micro.error();
      continue;  // "auto" skips a count the graph cannot be lowered at
    }
    const Micro& made = micros.emplace(m, prepare_micro(searcher, std::move(*micro))).first->second;
    searcher.micros[&made.graph] = &made;
  }
  // Progress: the stage plans without a cap that the pairs may need, each
  // searched once (those under a cap come on top, as they are found).
  for (int64_t s : stage_counts)
    for (const auto& [m, micro] : micros) need(searcher, micro, s, m);
  searcher.total = std::max<double>(1, static_cast<double>(searcher.pending.size()));
  double no_pipeline = 0;
  if (!(pipeline.incumbent_cost > 0))
    return Error{"must be a positive step cost", "pipeline.incumbent_cost"};
  // The search starts from the incumbent: a pair or range whose lower bound
  // is above it is not searched, as above the best T so far.
  struct Best {
    double T = kInf;
    int64_t stages = 0, microbatches = 0;
    Partition part;
  } best;
  best.T = pipeline.incumbent_cost;
  // The pairs the graph can be cut into.
  struct Pair {
    int64_t stages, microbatches;
    double floor = 0;   // a lower bound of its T
    bool done = false;  // searched to its end
  };
  std::vector<Pair> pairs;
  for (int64_t s : stage_counts)
    for (const auto& [m, micro] : micros) {
      if (s > static_cast<int64_t>(micro.bounds.size()) - 1) {
        if (pipeline.stages != kAuto)
          return Error{std::to_string(s) + " stages, but the graph may be cut at only " +
                           std::to_string(micro.bounds.size() - 2) + " positions (" +
                           std::to_string(micro.bounds.size() - 1) + " stages at most)",
                       "pipeline.stages"};
        continue;
      }
      pairs.push_back(Pair{s, m, vertex_floor_of_pair(searcher, micro, s, m)});
    }
  // What the search has proved so far: no pipeline of the pairs tried costs
  // less than the best T found (the incumbent's, before one is) or the
  // floor of a pair not done (core/docs/pipeline.md, "A time limit"); a
  // pair skipped for its floor has a floor above the best T. With a stage
  // plan of the bounded search not proven least, no bound is known.
  std::optional<std::string> stopped;
  auto proven = [&]() {
    if (searcher.unproven) return 0.0;
    double b = best.T;
    // (Under a gap accepted, a pair searched to its end has a floor that
    // may be below its least T: what it passed.)
    for (const Pair& p : pairs)
      if (!p.done || options.max_gap > 0) b = std::min(b, p.floor);
    return b;
  };
  auto note_bound = [&]() {
    searcher.best_T = best.T;
    searcher.bound = proven();
  };
  note_bound();
  // The least T wins; ties (1e-12 relative) go to fewer stages, then fewer
  // micro-batches, whatever the order the pairs are searched in.
  auto take = [&](const Pair& pair, Partition part) {
    if (pair.stages == 1 && pair.microbatches == 1 && part.T < kInf) no_pipeline = part.T;
    if (part.T == kInf) return;
    const bool fewer = std::make_pair(pair.stages, pair.microbatches) <
                       std::make_pair(best.stages, best.microbatches);
    if (best.stages == 0
            ? part.T < best.T
            : part.T < best.T * (1 - 1e-12) || (fewer && part.T <= best.T * (1 + 1e-12))) {
      best.T = part.T;
      best.stages = pair.stages;
      best.microbatches = pair.microbatches;
      best.part = std::move(part);
    }
  };
  auto search_pair = [&](Pair& pair) -> std::optional<Error> {
    const Micro& micro = micros.at(pair.microbatches);
    Result<Partition> part =
        best_partition(searcher, micro, pair.stages, pair.microbatches, best.T);
    if (!part) return part.error();
    pair.floor = std::max(pair.floor, part->floor);
    if (part->stopped) {
      stopped = searcher.stop_reason();
    } else {
      pair.done = true;
    }
    take(pair, std::move(*part));
    note_bound();
    return std::nullopt;
  };
  // With pruning and several pairs: every pair's floor from its vertices'
  // floors first (no search: a stop keeps them, "A time limit"), then,
  // without an incumbent, S = M = 1 (the plan without a pipeline, which the
  // result compares with, and the first bound; with one, it takes its turn
  // by its floor), then best first: the pair of least floor, its floor made with its
  // parts' plans (Depth::kFloor) before it is searched, so that the first
  // pairs searched give the bound that lets the others go unsearched, and a
  // pair whose vertices' floor is above it has none of its parts searched
  // (core/docs/pipeline.md, "Pruning").
  const bool prune = pipeline.prune && pairs.size() > 1;
  if (pipeline.prune || pipeline.floors_only) {
    // A hundredth of the bar for the vertices' floors, counted by pair
    // (all of it when they are all that is asked).
    searcher.phase = Searcher::Phase::kFloors;
    searcher.to = pipeline.floors_only ? 1 : 0.01;
    searcher.pairs_to_floor = static_cast<double>(pairs.size());
    searcher.report();
    for (Pair& pair : pairs) {
      Result<Partition> floor = best_partition(searcher, micros.at(pair.microbatches), pair.stages,
                                               pair.microbatches, best.T, Depth::kVertexFloor);
      if (!floor) return floor.error();
      pair.floor = std::max(pair.floor, floor->floor);
      searcher.floored += 1;
      note_bound();
      searcher.report();
    }
    searcher.from = searcher.to;
  }
  if (pipeline.floors_only) {
    if (pipeline.bound_out != nullptr) {
      double least = kInf;
      for (const Pair& pair : pairs) least = std::min(least, pair.floor);
      pipeline.bound_out->floor = least;
      pipeline.bound_out->lower_bound = proven();
    }
    return Error{"the floors alone were asked for (no search)", "pipeline.floors_only"};
  }
  if (prune) {
    // (A stop before the lead keeps the floors; no space is prepared.)
    if (stop_requested(options)) stopped = searcher.stop_reason();
    if (!stopped && best.T == kInf && pairs.front().stages == 1 &&
        pairs.front().microbatches == 1 &&
        !(options.max_gap > 0 && pairs.front().floor > best.T * (1 - options.max_gap))) {
      // Half the progress bar: on a deep network the one whole-graph search
      // is most of the work (GPT-3 175B on 1,024 GPUs: 84 s of 103), and
      // under a cap it moves with each search of its Lagrangian loop.
      // When its floor rules it out before any search (the memory's floor
      // over the cap: GPT-3 175B at batch 1536), the bar has had nothing
      // of it, and the phases after it take the rest.
      searcher.phase = Searcher::Phase::kLead;
      searcher.to = 0.5;
      const int64_t before = searcher.searches;
      if (std::optional<Error> e = search_pair(pairs.front())) return *e;
      if (searcher.searches > before) searcher.from = searcher.to;
      // (Kept in the bound while it is not done.)
      if (pairs.front().done) pairs.erase(pairs.begin());
    }
  }
  searcher.phase = Searcher::Phase::kPlans;
  searcher.to = 1;
  // A pair whose floor exceeds the best T so far is skipped, and leaves the
  // progress's count as soon as it is known to be skipped.
  // With a gap accepted (PlanOptions::max_gap), so is one whose floor is
  // within it of the best T: it stays in the bound.
  std::vector<char> skipped(pairs.size(), 0), tight(pairs.size(), prune ? 0 : 2);
  const double beyond = options.max_gap > 0 ? 1 - options.max_gap : 1 + 1e-9;
  auto skip_hopeless = [&]() {
    for (size_t k = 0; k < pairs.size(); ++k)
      if (!skipped[k] && !pairs[k].done && pairs[k].floor > best.T * beyond) {
        skipped[k] = 1;
        release(searcher, micros.at(pairs[k].microbatches), pairs[k].stages, pairs[k].microbatches);
      }
  };
  // The pair to go on with: the least floor of those left, ties to the
  // order above (fewer stages, then fewer micro-batches).
  auto next_pair = [&]() {
    size_t at = pairs.size();
    for (size_t k = 0; k < pairs.size(); ++k)
      if (!skipped[k] && !pairs[k].done && (at == pairs.size() || pairs[k].floor < pairs[at].floor))
        at = k;
    return at;
  };
  while (!stopped) {
    if (stop_requested(options)) {
      stopped = searcher.stop_reason();
      break;
    }
    skip_hopeless();
    const size_t k = next_pair();
    if (k == pairs.size()) break;
    Pair& pair = pairs[k];
    if (tight[k] < 2) {
      // The parts' plans of least value first; their plans of least F only
      // if the pair is still the least after them.
      const Depth depth = tight[k]++ == 0 ? Depth::kValueFloor : Depth::kFloor;
      Result<Partition> floor = best_partition(searcher, micros.at(pair.microbatches), pair.stages,
                                               pair.microbatches, best.T, depth);
      if (!floor) return floor.error();
      pair.floor = std::max(pair.floor, floor->floor);
      if (floor->stopped) stopped = searcher.stop_reason();
      note_bound();
      searcher.report();
      continue;
    }
    if (std::optional<Error> e = search_pair(pair)) return *e;
  }
  // At the end, the least T found is proven least of the pairs tried, but
  // for the pairs left within the gap accepted.
  const bool within_gap = options.max_gap > 0 && !searcher.unproven && proven() < best.T;
  const double lower = stopped || within_gap ? proven() : searcher.unproven ? 0.0 : best.T;
  if (pipeline.bound_out != nullptr) {
    pipeline.bound_out->lower_bound = lower;
    pipeline.bound_out->stopped = stopped ? *stopped : std::string();
    pipeline.bound_out->phase = stopped ? searcher.phase_name() : std::string();
  }
  if (best.stages == 0 && stopped && pipeline.incumbent_cost == kInf)
    return stop_error(options, "a pipeline that fits was found (in " + searcher.phase_name() + ")");
  if (best.stages == 0 && pipeline.incumbent_cost < kInf)
    return Error{
        "no pipeline of the stage and micro-batch counts tried is cheaper than the "
        "incumbent",
        "pipeline.incumbent_cost"};
  if (best.stages == 0) {
    if (cluster.memory_gib > 0)
      return Error{"no pipeline of the stage and micro-batch counts tried fits in " +
                       std::to_string(cluster.memory_gib) + " GiB per device",
                   "cluster.memory_gib"};
    return Error{"no micro-batch count divides the batch and lowers the graph",
                 "pipeline.microbatches"};
  }
  Result<PipelinePlan> out =
      assemble(micros.at(best.microbatches).graph, cluster, best.part.stage_of, best.part.configs,
               best.microbatches, pipeline.schedule);
  if (!out) return out.error();
  Plan& plan = out->plan;
  plan.search = searcher.stats;
  plan.search.order = options.order;
  plan.search.threads = std::max(1, options.threads);
  plan.search.time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - searcher.start).count();
  plan.optimal = best.part.optimal && !searcher.unproven && !stopped && !within_gap;
  // T is a bound over every pipeline only when it is proven least; else no
  // bound is known but the trivial one; after a stop, or with pairs left
  // within the gap, what was proved.
  plan.lower_bound = stopped || within_gap ? std::min(lower, plan.cost)
                     : plan.optimal        ? plan.cost
                                           : 0;
  if (stopped) out->pipeline.stopped = *stopped;
  out->pipeline.allowed_boundaries = best.part.boundaries;
  out->pipeline.stage_plans = static_cast<int>(searcher.searches);
  out->pipeline.no_pipeline_cost = no_pipeline;
  if (options.on_progress) {
    Progress done;
    done.fraction = 1;
    options.on_progress(done);
  }
  return out;
}

}  // namespace pipeline_detail

}  // namespace pase
