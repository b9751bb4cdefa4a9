// The recomputation search's bound without a search
// (least_recompute_difference(), recompute_search.hpp; core/docs/
// practice-model.md, "Recomputation").
#include <algorithm>
#include <limits>
#include <vector>

#include "model/cost_model.hpp"
#include "plan/recompute_search.hpp"

namespace pase {

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

}  // namespace pase
