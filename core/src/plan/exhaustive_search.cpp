// The exhaustive search of the tests and fuzzers (testing.hpp): every
// combination of the vertices' configurations, priced as the dynamic program
// prices them. Built into pase_testing, which only tests/ links
// (core/CMakeLists.txt), never into the library or the module.
#include <cmath>
#include <optional>
#include <vector>

#include "cost/configurations.hpp"
#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "plan/testing.hpp"

namespace pase {

Result<Plan> exhaustive_search(const Graph& graph, const Cluster& cluster,
                               uint64_t max_combinations) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  auto configs = enumerate_all(graph, cluster.devices, {});
  if (!configs) return configs.error();
  size_t n = graph.vertices.size();
  double combos = 1;
  for (const ConfigSet& c : *configs) combos *= static_cast<double>(c.size());
  if (combos > static_cast<double>(max_combinations))
    return Error{"too many combinations for exhaustive search", "graph"};
  ops::Machine m = ops::make_machine(cluster);
  std::vector<std::vector<double>> vc(n), mem(n);
  for (size_t v = 0; v < n; ++v) {
    vc[v] = vertex_cost_vector(graph, static_cast<int>(v), (*configs)[v], m);
    for (size_t i = 0; i < (*configs)[v].size(); ++i)
      mem[v].push_back(
          ops::vertex_memory(graph, graph.vertices[v], (*configs)[v].at(i), m).total());
  }
  // Under a memory cap only the strategies that fit count.
  const double cap = cluster.memory_gib > 0 ? cluster.capacity_bytes() : INFINITY;
  std::vector<PairEdges> pairs = group_edges(graph);
  std::vector<PairMatrix> mat;
  for (const PairEdges& pe : pairs)
    mat.push_back(pair_matrix(graph, *configs, pe.edges, pe.a, pe.b, m));
  std::vector<int> cur(n, 0), best_choice(n, 0);
  double best = INFINITY;
  while (true) {
    double cost = 0;
    for (size_t v = 0; v < n; ++v) cost += vc[v][cur[v]];
    for (size_t k = 0; k < pairs.size(); ++k)
      cost += mat[k][cur[pairs[k].a] * (*configs)[pairs[k].b].size() + cur[pairs[k].b]];
    double bytes = 0;
    for (size_t v = 0; v < n; ++v) bytes += mem[v][cur[v]];
    if (cost < best && bytes <= cap) {
      best = cost;
      best_choice = cur;
    }
    size_t v = 0;
    while (v < n && ++cur[v] == static_cast<int>((*configs)[v].size())) cur[v++] = 0;
    if (v == n) break;
  }
  if (best == INFINITY) return Error{"no strategy fits", "cluster.memory_gib"};
  Strategy s(n);
  for (size_t v = 0; v < n; ++v) {
    const int64_t* c = (*configs)[v].at(best_choice[v]);
    s[v].assign(c, c + (*configs)[v].dims);
  }
  return evaluate(graph, cluster, s);
}

}  // namespace pase
