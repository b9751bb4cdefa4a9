// The public planning entry points (pase/plan.hpp): plan() and estimate() over
// the search of search/weighted_plan.hpp, evaluate() of a given strategy, the
// configurations of one vertex.
#include "pase/plan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <thread>

#include "cost/configurations.hpp"
#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "plan/recompute_search.hpp"
#include "search/progress.hpp"
#include "search/weighted_plan.hpp"
#include "util/text.hpp"

namespace pase {

const char* order_name(Order order) {
  switch (order) {
    case Order::kGenSeq:
      return "genseq";
    case Order::kBfs:
      return "bfs";
    case Order::kMinTable:
      return "mintable";
  }
  return "?";
}

const char* search_mode_name(SearchMode mode) {
  switch (mode) {
    case SearchMode::kAuto:
      return "auto";
    case SearchMode::kExact:
      return "exact";
    case SearchMode::kBounded:
      return "bounded";
  }
  return "?";
}

Result<std::vector<Config>> enumerate_configs(const Graph& graph, int vertex,
                                              const Cluster& cluster, const EnumOptions& options) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  if (vertex < 0 || vertex >= static_cast<int>(graph.vertices.size()))
    return Error{"no vertex " + std::to_string(vertex), "vertex"};
  auto set = enumerate_vertex(graph, vertex, cluster.devices, options);
  if (!set) return Error{vertex_label(graph.vertices[vertex]) + " " + set.error().message, ""};
  std::vector<Config> out;
  for (size_t i = 0; i < set->size(); ++i) out.emplace_back(set->at(i), set->at(i) + set->dims);
  return out;
}

Result<Plan> evaluate(const Graph& graph, const Cluster& cluster, const Strategy& strategy) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  size_t n = graph.vertices.size();
  if (strategy.size() != n)
    return Error{"has " + std::to_string(strategy.size()) + " configurations but the graph has " +
                     std::to_string(n) + " vertices",
                 "strategy"};
  for (size_t i = 0; i < n; ++i) {
    const Vertex& v = graph.vertices[i];
    const Config& c = strategy[i];
    std::string where = "strategy[" + std::to_string(i) + "]";
    if (c.size() != v.dom.size())
      return Error{"has " + std::to_string(c.size()) + " splits but " + vertex_label(v) + " has " +
                       std::to_string(v.dom.size()) + " dimensions",
                   where};
    int64_t prod = 1;
    for (size_t k = 0; k < c.size(); ++k) {
      std::string w = where + "[" + std::to_string(k) + "]";
      if (c[k] < 1 || v.dom[k] % c[k] != 0)
        return Error{"split " + std::to_string(c[k]) + " does not divide size " +
                         std::to_string(v.dom[k]) + " of dimension " + v.dims[k] + " of " +
                         vertex_label(v),
                     w};
      if (model_of(graph, v.id).pinned[k] && c[k] != 1)
        return Error{
            "dimension " + v.dims[k] + " of " + vertex_label(v) + " is pinned and must be 1", w};
      if (__builtin_mul_overflow(prod, c[k], &prod) || prod > cluster.devices)
        return Error{"the splits of " + vertex_label(v) + " use more than the " +
                         std::to_string(cluster.devices) + " devices",
                     where};
    }
  }
  ops::Machine m = ops::make_machine(cluster);
  Plan p;
  p.strategy = strategy;
  p.layers.resize(n);
  for (size_t i = 0; i < n; ++i) {
    p.layers[i] = ops::layer_cost(graph, graph.vertices[i], strategy[i].data(), m);
    p.cost += p.layers[i].total;
    p.compute += p.layers[i].compute;
    p.comm += p.layers[i].comm;
  }
  p.vertex_memory.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const MemoryBytes b = ops::vertex_memory(graph, graph.vertices[i], strategy[i].data(), m);
    p.memory.params += b.params;
    p.memory.grads += b.grads;
    p.memory.optimizer += b.optimizer;
    p.memory.activations += b.activations;
    p.memory.working = std::max(
        p.memory.working, ops::working_bytes(graph, graph.vertices[i], strategy[i].data(), m));
    p.vertex_memory[i] = b.total();
  }
  p.edge_costs.resize(graph.edges.size());
  for (size_t i = 0; i < graph.edges.size(); ++i) {
    const Edge& e = graph.edges[i];
    p.edge_costs[i] = edge_cost(graph, e, strategy[e.src].data(), strategy[e.dst].data(), m);
    p.cost += p.edge_costs[i];
    p.redistribution += p.edge_costs[i];
  }
  p.step_time_s = p.cost / (cluster.tflops * 1e12);
  p.lower_bound = p.cost;
  if (cluster.memory_gib > 0) {
    p.capacity_bytes = cluster.capacity_bytes();
    p.fits = p.memory.total() <= p.capacity_bytes;
    p.optimal = false;  // a given strategy proves nothing
  }
  return p;
}

Result<SearchStats> estimate(const Graph& graph, const Cluster& cluster,
                             const PlanOptions& options) {
  auto start = std::chrono::steady_clock::now();
  auto prep = prepare_space(graph, cluster, options);
  if (!prep) return prep.error();
  SearchStats s = prep->est;
  if (bounded_instead(s, options)) describe_bounded(s, options);
  s.time_s = seconds_since(start);
  return s;
}

int default_threads() {
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
  return 1;
#else
  unsigned n = std::thread::hardware_concurrency();
  int threads = n == 0 ? 1 : static_cast<int>(n);
#ifdef PASE_MAX_THREADS
  // The threaded WebAssembly module runs its helpers only on the workers it
  // started with (wasm/CMakeLists.txt): at most PASE_MAX_THREADS - 1 of them.
  threads = std::min(threads, PASE_MAX_THREADS);
#endif
  return threads;
#endif
}

Result<Plan> plan(const Graph& graph, const Cluster& cluster, const PlanOptions& options) {
  // The caller's progress: one for the request, whatever searches it runs.
  RequestProgress progress(options);
  Result<Plan> out = [&]() -> Result<Plan> {
    if (cluster.training.recompute != Recompute::kAuto)
      return plan_weighted(graph, cluster, progress.options(), StageWeights{});
    if (std::optional<Error> e = check_cluster(cluster)) return *e;
    return plan_recompute(graph, cluster, progress.options());
  }();
  if (out) progress.finish();
  return out;
}

}  // namespace pase
