// plan_pipeline() of pipeline.hpp: the stage plans and the partition
// (core/docs/pipeline.md, "What the planner chooses").
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cost_model.hpp"
#include "pase/pipeline.hpp"
#include "pipeline_model.hpp"
#include "pipeline_searcher.hpp"
#include "weighted_plan.hpp"

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

// For progress: the stage plans (without a cap) that the pairs (S, M) not
// yet searched may need, by cache key without k, with how many of their
// ranges need each. Every key counts once in Searcher::total until it is
// searched, or its last range is passed without a search.
using NeedKey = std::tuple<int64_t, int64_t, int, int64_t>;
using Pending = std::map<NeedKey, int>;

template <typename F>
void for_ranges(const Cluster& cluster, const Micro& mg, int64_t stages, int64_t microbatches,
                F&& f) {
  const int nb = static_cast<int>(mg.bounds.size());
  const int64_t q = cluster.devices / stages;
  for (int64_t s = 0; s < stages; ++s)
    for (int i = 0; i < nb; ++i)
      for (int j = i + 1; j < nb; ++j)
        if (range_ok(stages, nb, s, i, j))
          f(NeedKey{q, microbatches, mg.sig[i][j],
                    cluster.gpus_per_node > 0 ? (s * q) % cluster.gpus_per_node : 0});
}

void need(Pending& pending, const Cluster& cluster, const Micro& mg, int64_t stages,
          int64_t microbatches) {
  for_ranges(cluster, mg, stages, microbatches, [&](const NeedKey& key) { ++pending[key]; });
}

// After the pair (S, M): the keys it needed that no later pair needs and
// were never searched leave the count.
void release(Searcher& searcher, Pending& pending, const Micro& mg, int64_t stages,
             int64_t microbatches) {
  for_ranges(searcher.cluster, mg, stages, microbatches, [&](const NeedKey& key) {
    auto it = pending.find(key);
    if (it == pending.end() || --it->second > 0) return;
    pending.erase(it);
    if (searcher.plans.count(std::tuple_cat(key, std::make_tuple(int64_t{0}))) == 0)
      searcher.total -= 1;
  });
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

Result<PipelinePlan> plan_pipeline(const Graph& graph, const Cluster& cluster,
                                   const PipelineOptions& pipeline, const PlanOptions& options) {
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
    micros.emplace(m, prepare_micro(searcher, std::move(*micro)));
  }
  // Progress: the stage plans without a cap that the pairs may need, each
  // searched once (those under a cap come on top, as they are found).
  Pending pending;
  for (int64_t s : stage_counts)
    for (const auto& [m, micro] : micros) need(pending, cluster, micro, s, m);
  searcher.total = std::max<double>(1, static_cast<double>(pending.size()));
  double no_pipeline = 0;
  struct Best {
    double T = kInf;
    int64_t stages = 0, microbatches = 0;
    Partition part;
  } best;
  for (int64_t s : stage_counts)
    for (const auto& [m, micro] : micros) {
      const std::vector<int>& bounds = micro.bounds;
      if (s > static_cast<int64_t>(bounds.size()) - 1) {
        if (pipeline.stages != kAuto)
          return Error{std::to_string(s) + " stages, but the graph may be cut at only " +
                           std::to_string(bounds.size() - 2) + " positions (" +
                           std::to_string(bounds.size() - 1) + " stages at most)",
                       "pipeline.stages"};
        continue;
      }
      Result<Partition> part = best_partition(searcher, micro, s, m, best.T);
      if (!part) return part.error();
      release(searcher, pending, micro, s, m);
      if (s == 1 && m == 1 && part->T < kInf) no_pipeline = part->T;
      // Ties (1e-12 relative) go to fewer stages, then fewer micro-batches:
      // the order of these loops.
      if (part->T < kInf && (best.T == kInf || part->T < best.T * (1 - 1e-12))) {
        best.T = part->T;
        best.stages = s;
        best.microbatches = m;
        best.part = std::move(*part);
      }
    }
  if (best.T == kInf) {
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
  if (cluster.memory_gib > 0) plan.optimal = best.part.optimal;
  // T is a bound over every pipeline only when it is proven least; else no
  // bound is known but the trivial one.
  plan.lower_bound = plan.optimal ? plan.cost : 0;
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

}  // namespace pase
