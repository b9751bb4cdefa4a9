// The public planning entry points: validate, enumerate, order, search, report.
#include "pase/plan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "configurations.hpp"
#include "cost_model.hpp"
#include "cost_tables.hpp"
#include "dynamic_program.hpp"
#include "ordering.hpp"
#include "testing.hpp"
#include "text.hpp"

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

std::optional<Error> check_cluster(const Cluster& c) {
  if (c.devices < 1)
    return Error{"must be at least 1, got " + std::to_string(c.devices), "cluster.devices"};
  if (c.devices > kMaxDevices)
    return Error{
        "must be at most " + std::to_string(kMaxDevices) + ", got " + std::to_string(c.devices),
        "cluster.devices"};
  if (!(c.tflops > 0) || !std::isfinite(c.tflops))
    return Error{"must be a positive number", "cluster.tflops"};
  if (!(c.bandwidth_gbps > 0) || !std::isfinite(c.bandwidth_gbps))
    return Error{"must be a positive number", "cluster.bandwidth_gbps"};
  // Nodes: both fields or neither.
  const bool nodes = c.gpus_per_node != 0, intra = c.intra_node_gbps != 0;
  if (nodes && c.gpus_per_node < 1)
    return Error{"must be a positive integer, got " + std::to_string(c.gpus_per_node),
                 "cluster.gpus_per_node"};
  if (intra && (!(c.intra_node_gbps > 0) || !std::isfinite(c.intra_node_gbps)))
    return Error{"must be a positive number", "cluster.intra_node_gbps"};
  if (nodes != intra)
    return Error{"gpus_per_node and intra_node_gbps come together",
                 nodes ? "cluster.intra_node_gbps" : "cluster.gpus_per_node"};
  if (c.memory_gib != 0 && (!(c.memory_gib > 0) || !std::isfinite(c.memory_gib)))
    return Error{"must be a positive number", "cluster.memory_gib"};
  return std::nullopt;
}

std::optional<Error> check_inputs(const Graph& g, const Cluster& cluster) {
  if (std::optional<Error> e = check_cluster(cluster)) return e;
  if (g.model == nullptr || g.model->vertices.size() != g.vertices.size())
    return Error{"the graph was not made by build_graph(), load_graph() or build_model()", "graph"};
  return std::nullopt;
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
  p.edge_costs.resize(graph.edges.size());
  for (size_t i = 0; i < graph.edges.size(); ++i) {
    const Edge& e = graph.edges[i];
    p.edge_costs[i] = edge_cost(graph, e, strategy[e.src].data(), strategy[e.dst].data(), m);
    p.cost += p.edge_costs[i];
    p.redistribution += p.edge_costs[i];
  }
  p.step_time_s = p.cost / (cluster.tflops * 1e12);
  return p;
}

namespace {

// Everything plan() decides before the search: configurations, order, sizes.
struct Prepared {
  std::vector<ConfigSet> configs;
  Ordering ord;
  SearchStats est;  // sizes only
};

Result<Prepared> prepare(const Graph& graph, const Cluster& cluster, const PlanOptions& options) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  auto configs = enumerate_all(graph, cluster.devices, options.enumeration, options.max_memory);
  if (!configs) return configs.error();
  Prepared p;
  p.configs = std::move(configs).value();
  std::vector<size_t> counts;
  for (const ConfigSet& c : p.configs) {
    counts.push_back(c.size());
    p.est.configurations += c.size();
  }
  p.ord = make_ordering(graph, options.order, counts);
  const uint64_t configurations = p.est.configurations;
  p.est = estimate_dp(p.ord, p.configs);
  p.est.configurations = configurations;
  return p;
}

SearchStats stats_of(const Prepared& p, Order order) {
  SearchStats s = p.est;
  s.order = order;
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result<SearchStats> estimate(const Graph& graph, const Cluster& cluster,
                             const PlanOptions& options) {
  auto start = std::chrono::steady_clock::now();
  auto prep = prepare(graph, cluster, options);
  if (!prep) return prep.error();
  SearchStats s = stats_of(*prep, options.order);
  s.time_s = seconds_since(start);
  return s;
}

Result<Plan> plan(const Graph& graph, const Cluster& cluster, const PlanOptions& options) {
  auto start = std::chrono::steady_clock::now();
  auto prep = prepare(graph, cluster, options);
  if (!prep) return prep.error();
  const SearchStats& est = prep->est;
  // Without a limit, still refuse what no machine could hold (the tables are
  // indexed by 64-bit offsets and allocated as one block each).
  double limit = options.max_memory ? static_cast<double>(options.max_memory) : 0x1p62;
  if (est.peak_bytes > limit) {
    char entries[32];
    std::snprintf(entries, sizeof entries, "%.3g", est.largest_table);
    return Error{"the " + std::string(order_name(options.order)) + " order needs " +
                     bytes_text(est.peak_bytes) + " of tables (largest dependent set " +
                     std::to_string(est.max_dependent_set) + ", largest table " + entries +
                     " entries), more than the limit of " + bytes_text(limit) +
                     "; raise the memory limit (max_memory), use fewer devices or another order",
                 "max_memory"};
  }
  ops::Machine m = ops::make_machine(cluster);
  auto dp = run_dp(graph, prep->configs, prep->ord, m, est, options);
  if (!dp) return dp.error();
  Strategy s(graph.vertices.size());
  for (size_t v = 0; v < s.size(); ++v) {
    const ConfigSet& set = prep->configs[v];
    const int64_t* c = set.at(dp->choice[v]);
    s[v].assign(c, c + set.dims);
  }
  auto result = evaluate(graph, cluster, s);
  if (!result) return result.error();
  result->search = stats_of(*prep, options.order);
  result->search.time_s = seconds_since(start);
  return result;
}

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
  std::vector<std::vector<double>> vc(n);
  for (size_t v = 0; v < n; ++v)
    vc[v] = vertex_cost_vector(graph, static_cast<int>(v), (*configs)[v], m);
  std::vector<PairEdges> pairs = group_edges(graph);
  std::vector<std::vector<double>> mat;
  for (const PairEdges& pe : pairs)
    mat.push_back(pair_matrix(graph, *configs, pe.edges, pe.a, pe.b, m));
  std::vector<int> cur(n, 0), best_choice(n, 0);
  double best = INFINITY;
  while (true) {
    double cost = 0;
    for (size_t v = 0; v < n; ++v) cost += vc[v][cur[v]];
    for (size_t k = 0; k < pairs.size(); ++k)
      cost += mat[k][cur[pairs[k].a] * (*configs)[pairs[k].b].size() + cur[pairs[k].b]];
    if (cost < best) {
      best = cost;
      best_choice = cur;
    }
    size_t v = 0;
    while (v < n && ++cur[v] == static_cast<int>((*configs)[v].size())) cur[v++] = 0;
    if (v == n) break;
  }
  Strategy s(n);
  for (size_t v = 0; v < n; ++v) {
    const int64_t* c = (*configs)[v].at(best_choice[v]);
    s[v].assign(c, c + (*configs)[v].dims);
  }
  return evaluate(graph, cluster, s);
}

}  // namespace pase
