// The public planning entry points (pase/plan.hpp): plan() and estimate() over
// the search of search/weighted_plan.hpp, the configurations of one vertex,
// the default thread count. evaluate() of a given strategy, which the
// searches below call too, is the costs' (cost/evaluate.cpp); the names of
// the orders and search modes are the ordering's (search/ordering.cpp).
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
