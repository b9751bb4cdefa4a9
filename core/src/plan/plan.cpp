// The public planning entry points: validate, enumerate, order, search, report.
#include "pase/plan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include "cost/configurations.hpp"
#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "plan/testing.hpp"
#include "search/dynamic_program.hpp"
#include "search/ordering.hpp"
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
  const std::pair<int64_t, const char*> bytes[] = {
      {c.training.param_bytes, "training.param_bytes"},
      {c.training.grad_bytes, "training.grad_bytes"},
      {c.training.optimizer_bytes, "training.optimizer_bytes"},
      {c.training.activation_bytes, "training.activation_bytes"}};
  for (const auto& [value, where] : bytes)
    if (value < 0) return Error{"must be a non-negative integer", where};
  if (c.first_device < 0) return Error{"must be non-negative", "cluster.first_device"};
  if (c.training.zero < 0 || c.training.zero > 3)
    return Error{"must be 0, 1, 2 or 3, got " + std::to_string(c.training.zero), "training.zero"};
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
  p.vertex_memory.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const MemoryBytes b = ops::vertex_memory(graph, graph.vertices[i], strategy[i].data(), m);
    p.memory.params += b.params;
    p.memory.grads += b.grads;
    p.memory.optimizer += b.optimizer;
    p.memory.activations += b.activations;
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

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result<SearchSpace> prepare_space(const Graph& graph, const Cluster& cluster,
                                  const PlanOptions& options) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  auto configs = enumerate_all(graph, cluster.devices, options.enumeration, options.max_memory);
  if (!configs) return configs.error();
  SearchSpace p;
  p.configs = std::move(configs).value();
  std::vector<size_t> counts;
  for (const ConfigSet& c : p.configs) counts.push_back(c.size());
  p.ord = make_ordering(graph, options.order, counts);
  p.order = options.order;
  finish_space(graph, cluster, p);
  return p;
}

void finish_space(const Graph& graph, const Cluster& cluster, SearchSpace& p) {
  uint64_t configurations = 0;
  for (const ConfigSet& c : p.configs) configurations += c.size();
  p.classes = table_classes(graph, p.configs, p.ord, ops::make_machine(cluster).near_devices());
  p.est = estimate_dp(p.ord, p.configs, &p.classes);
  p.est.configurations = configurations;
  p.est.order = p.order;
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
  return plan_weighted(graph, cluster, options, StageWeights{});
}

bool bounded_instead(const SearchStats& exact, const PlanOptions& options) {
  return options.search == SearchMode::kBounded ||
         (options.search == SearchMode::kAuto && exact.peak_bytes > table_limit(options));
}

double table_limit(const PlanOptions& options) {
  // Without a limit, still refuse what no machine could hold (the tables are
  // indexed by 64-bit offsets and allocated as one block each).
  return options.max_memory ? static_cast<double>(options.max_memory) : 0x1p62;
}

Result<Plan> plan_weighted(const Graph& graph, const Cluster& cluster, const PlanOptions& options,
                           const StageWeights& weights) {
  auto start = std::chrono::steady_clock::now();
  auto prep = prepare_space(graph, cluster, options);
  if (!prep) return prep.error();
  const SearchStats& est = prep->est;
  if (bounded_instead(est, options))
    return plan_bounded(graph, cluster, options, weights, std::move(*prep), start);
  const double limit = table_limit(options);
  if (est.peak_bytes > limit) {
    char entries[32];
    std::snprintf(entries, sizeof entries, "%.3g", est.largest_table);
    return Error{"the " + std::string(order_name(options.order)) + " order needs " +
                     bytes_text(est.peak_bytes) + " of tables (largest dependent set " +
                     std::to_string(est.max_dependent_set) + ", largest table " + entries +
                     " entries), more than the limit of " + bytes_text(limit) +
                     "; raise the memory limit (max_memory), use fewer devices, another order, "
                     "or the bounded search (search \"auto\" or \"bounded\")",
                 "max_memory"};
  }
  Result<Plan> p = search_space(graph, cluster, options, weights, *prep, nullptr);
  if (!p) return p.error();
  const int searches = p->search.searches;
  p->search = est;
  p->search.time_s = seconds_since(start);
  p->search.searches = searches;
  p->search.threads = std::max(1, options.threads);
  return p;
}

Result<Plan> search_space(const Graph& graph, const Cluster& cluster, const PlanOptions& options,
                          const StageWeights& weights, const SearchSpace& space,
                          EdgePrices* shared_prices) {
  const ops::Machine machine = ops::make_machine(cluster);
  // One search with the objective cost_weight * cost + memory_weight * memory:
  // its strategy evaluated, and the objective's optimum.
  struct Searched {
    Plan plan;
    double objective = 0;
  };
  int searches = 0;
  // Edge prices for every search of this plan (they do not depend on the
  // weights).
  std::optional<EdgePrices> own_prices;
  EdgePrices* prices = shared_prices;
  if (prices == nullptr)
    prices = &own_prices.emplace(graph, space.configs, machine.near_devices(), kEdgePriceBudget);
  auto search = [&](double cost_weight, double memory_weight) -> Result<Searched> {
    ++searches;
    ops::Machine m = machine;
    m.cost_weight = cost_weight;
    m.memory_weight = memory_weight;
    m.microbatches = weights.microbatches + weights.tie;
    m.activation_copies = weights.activation_copies;
    m.sync_weight = weights.sync_weight;
    auto dp =
        run_dp(graph, space.configs, space.ord, space.classes, m, space.est, options, {}, prices);
    if (!dp) return dp.error();
    Strategy s(graph.vertices.size());
    for (size_t v = 0; v < s.size(); ++v) {
      const ConfigSet& set = space.configs[v];
      const int64_t* c = set.at(dp->choice[v]);
      s[v].assign(c, c + set.dims);
    }
    auto result = evaluate(graph, cluster, s);
    if (!result) return result.error();
    return Searched{std::move(*result), dp->cost};
  };
  auto finish = [&](Plan p) {
    p.search.searches = searches;
    return p;
  };

  // What the searches minimise and keep under the cap: the plan's cost and
  // memory, or a pipeline stage's (StageWeights).
  auto value = [&](const Plan& p) { return weights.value(p); };
  auto bytes = [&](const Plan& p) { return weights.bytes(p.memory); };

  Result<Searched> first = search(1, 0);
  if (!first) return first.error();
  Plan best = std::move(first->plan);
  best.lower_bound = value(best);
  if (cluster.memory_gib <= 0) return finish(std::move(best));

  // Under a cap C: every search of cost + lambda * memory gives the bound
  // DP(lambda) - lambda * C, and a search for the lambda that maximises it
  // finds fitting plans (core/docs/cluster.md, "Planning under a memory cap").
  const double cap = cluster.capacity_bytes();
  double bound = value(best);
  auto fits = [&](const Plan& p) { return bytes(p) <= cap; };
  if (!fits(best)) {
    Result<Searched> least = search(0, 1);
    if (!least) return least.error();
    if (!fits(least->plan)) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "no strategy fits in %.4g GiB per device: the least memory any strategy "
                    "reaches is %.4g GiB",
                    cluster.memory_gib, bytes(least->plan) / 0x1p30);
      return Error{text, "cluster.memory_gib"};
    }
    // The dual g(lambda) = DP(lambda) - lambda * C is concave and piecewise
    // linear; its maximum sits where a plan that does not fit (lo) and one
    // that fits (hi) cost the same objective. Search at that breakpoint: when
    // nothing beats the two there, lambda maximises g (both are optimal at
    // it, one with memory above C, one at or below) and the bound is final;
    // otherwise the better plan replaces the endpoint on its side. Every plan
    // found is a candidate; the first hi is the least-memory plan.
    Plan lo = std::move(best);
    Plan hi = std::move(least->plan);
    Plan fitting = hi;
    for (int i = 0; i < 100; ++i) {
      const double lo_mem = bytes(lo), hi_mem = bytes(hi);
      const double lambda = (value(hi) - value(lo)) / (lo_mem - hi_mem);
      if (!(lambda >= 0) || !std::isfinite(lambda)) break;
      Result<Searched> r = search(1, lambda);
      if (!r) return r.error();
      bound = std::max(bound, r->objective - lambda * cap);
      const double at_ends = std::min(value(lo) + lambda * lo_mem, value(hi) + lambda * hi_mem);
      if (fits(r->plan) && value(r->plan) < value(fitting)) fitting = r->plan;
      if (value(fitting) <= bound * (1 + 1e-12)) break;
      if (r->objective >= at_ends * (1 - 1e-12)) break;
      (fits(r->plan) ? hi : lo) = std::move(r->plan);
    }
    best = std::move(fitting);
  }
  best.capacity_bytes = cap;
  best.fits = true;
  best.lower_bound = std::min(bound, value(best));
  best.optimal = value(best) <= bound * (1 + 1e-12);
  return finish(std::move(best));
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
