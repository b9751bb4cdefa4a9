// evaluate() of pase/plan.hpp: the cost and memory of a given strategy,
// checked against the graph and the cluster. The costs' stage, below the
// searches (search/, pipeline/) that price their plans with it and the
// entry points (plan/) that offer it.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "pase/plan.hpp"
#include "util/text.hpp"

namespace pase {

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

}  // namespace pase
