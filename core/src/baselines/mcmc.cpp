// FlexFlow's search (Jia, Zaharia, Aiken, "Beyond Data and Model Parallelism
// for Deep Neural Networks", SysML 2019, section 5): Metropolis-Hastings over
// strategies, one random vertex re-configured per proposal, accepted with
// probability min(1, exp(-beta * delta * n / C_best)). Each proposal is priced as a
// delta over the vertex and its incident edges: O(degree) edge formulas, no
// pair matrices (those would take ~500 MB for the Transformer at 64 devices).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "baselines/baselines.hpp"
#include "cost/configurations.hpp"
#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "pase/compare.hpp"
#include "search/stop.hpp"

namespace pase {
namespace {

// Draws derived from the raw 64-bit output by fixed formulas, so that a seed
// gives the same sequence with every standard library (the distributions of
// <random> are implementation-defined).
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, n), n >= 1, by rejection (no modulo bias).
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x = engine_();
    while (x >= limit) x = engine_();
    return x % n;
  }
  // Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(engine_() >> 11) * 0x1p-53; }

 private:
  std::mt19937_64 engine_;
};

// Maps a strategy into the enumeration, vertex by vertex; `moved` counts the
// vertices whose configuration had to change.
std::vector<int64_t> to_indices(const std::vector<ConfigSet>& configs, const Strategy& s,
                                int& moved) {
  std::vector<int64_t> idx(s.size());
  moved = 0;
  for (size_t v = 0; v < s.size(); ++v) {
    idx[v] = baselines::find_config(configs[v], s[v]);
    if (idx[v] < 0) {
      idx[v] = baselines::nearest_config(configs[v], s[v]);
      ++moved;
    }
  }
  return idx;
}

Strategy to_strategy(const std::vector<ConfigSet>& configs, const std::vector<int64_t>& idx) {
  Strategy s(idx.size());
  for (size_t v = 0; v < idx.size(); ++v) {
    const int64_t* c = configs[v].at(static_cast<size_t>(idx[v]));
    s[v].assign(c, c + configs[v].dims);
  }
  return s;
}

}  // namespace

Result<McmcResult> mcmc_search(const Graph& graph, const Cluster& cluster,
                               const CompareOptions& options) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start_time = Clock::now();
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  if (!(options.mcmc_beta >= 0) || !std::isfinite(options.mcmc_beta))
    return Error{"must be a non-negative number", "mcmc.beta"};
  if (!(options.mcmc_time_limit_s >= 0) || !std::isfinite(options.mcmc_time_limit_s))
    return Error{"must be a non-negative number of seconds", "mcmc.time_limit_s"};
  auto enumerated =
      enumerate_all(graph, cluster.devices, options.plan.enumeration, options.plan.max_memory);
  if (!enumerated) return enumerated.error();
  const std::vector<ConfigSet>& configs = *enumerated;
  const size_t n = graph.vertices.size();

  // The start: data parallelism, or the expert strategy when that is cheaper
  // once both are mapped into the enumeration.
  McmcStats stats;
  stats.seed = options.mcmc_seed;
  stats.beta = options.mcmc_beta;
  stats.start = "data_parallel";
  int moved = 0;
  std::vector<int64_t> cur =
      to_indices(configs, baselines::data_parallel_strategy(graph, cluster.devices), moved);
  Result<Plan> start_plan = evaluate(graph, cluster, to_strategy(configs, cur));
  if (!start_plan) return start_plan.error();
  if (expert_kind(graph) != ExpertKind::kNone) {
    Result<StrategyReport> expert = expert_strategy(graph, cluster, options);
    if (!expert) return expert.error();
    int alt_moved = 0;
    std::vector<int64_t> alt = to_indices(configs, expert->plan.strategy, alt_moved);
    Result<Plan> alt_plan = evaluate(graph, cluster, to_strategy(configs, alt));
    if (!alt_plan) return alt_plan.error();
    if (alt_plan->cost < start_plan->cost) {
      cur = std::move(alt);
      moved = alt_moved;
      start_plan = std::move(alt_plan);
      stats.start = "expert";
    }
  }
  stats.start_cost = start_plan->cost;

  const ops::Machine m = ops::make_machine(cluster);
  std::vector<std::vector<double>> layer(n);
  std::vector<size_t> movable;  // vertices with a choice
  for (size_t v = 0; v < n; ++v) {
    layer[v] = vertex_cost_vector(graph, v, configs[v], m);
    if (configs[v].size() > 1) movable.push_back(v);
  }
  std::vector<std::vector<int>> incident(n);
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    incident[graph.edges[e].src].push_back(static_cast<int>(e));
    incident[graph.edges[e].dst].push_back(static_cast<int>(e));
  }
  std::vector<double> edge(graph.edges.size());
  double cost = 0;
  for (size_t v = 0; v < n; ++v) cost += layer[v][cur[v]];
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    const Edge& ed = graph.edges[e];
    edge[e] =
        edge_cost(graph, ed, configs[ed.src].at(cur[ed.src]), configs[ed.dst].at(cur[ed.dst]), m);
    cost += edge[e];
  }

  Rng rng(options.mcmc_seed);
  std::vector<int64_t> best = cur;
  double best_cost = cost;
  // Temperature per vertex: a move is judged against the best cost per vertex,
  // so one beta suits 10- and 200-vertex graphs alike and the chain cools as
  // the best improves.
  const double per_vertex = 1.0 / static_cast<double>(n);
  std::vector<double> proposed_edge;
  stats.stop = movable.empty() ? "no_moves" : "iterations";
  uint64_t it = 0;
  while (!movable.empty() && it < options.mcmc_iterations) {
    if ((it & 255) == 0 && it > 0) {
      if (stop_requested(options.plan)) return stop_error(options.plan);
      if (options.mcmc_time_limit_s > 0 &&
          std::chrono::duration<double>(Clock::now() - start_time).count() >=
              options.mcmc_time_limit_s) {
        stats.stop = "time";
        break;
      }
    }
    ++it;
    const size_t v = movable[rng.below(movable.size())];
    const size_t count = configs[v].size();
    int64_t k = static_cast<int64_t>(rng.below(count - 1));
    if (k >= cur[v]) ++k;  // a configuration other than the current one
    double delta = layer[v][k] - layer[v][cur[v]];
    proposed_edge.clear();
    for (int e : incident[v]) {
      const Edge& ed = graph.edges[e];
      const int64_t* src =
          ed.src == static_cast<int>(v) ? configs[v].at(k) : configs[ed.src].at(cur[ed.src]);
      const int64_t* dst =
          ed.dst == static_cast<int>(v) ? configs[v].at(k) : configs[ed.dst].at(cur[ed.dst]);
      proposed_edge.push_back(edge_cost(graph, ed, src, dst, m));
      delta += proposed_edge.back() - edge[e];
    }
    // Metropolis: always downhill, uphill with probability exp(-beta delta / scale).
    const double scale = best_cost > 0 ? best_cost * per_vertex : 1;
    const bool accept = delta <= 0 || rng.unit() < std::exp(-options.mcmc_beta * delta / scale);
    if (accept) {
      cur[v] = k;
      for (size_t j = 0; j < incident[v].size(); ++j) edge[incident[v][j]] = proposed_edge[j];
      cost += delta;
      ++stats.accepted;
      // The running total drifts by rounding; a relative margin keeps a
      // return to an earlier strategy from counting as an improvement.
      if (cost < best_cost * (1 - 1e-12)) {
        best = cur;
        best_cost = cost;
        stats.best_iteration = it;
        ++stats.improvements;
      }
    }
    // FlexFlow: stop when the best has not improved for half the search.
    if (options.mcmc_stop_when_stalled && it >= options.mcmc_min_iterations &&
        it - stats.best_iteration > it / 2) {
      stats.stop = "stalled";
      break;
    }
  }
  stats.iterations = it;

  std::vector<std::string> notes;
  notes.push_back("started from " + stats.start + "; " + std::to_string(it) + " proposals, " +
                  std::to_string(stats.accepted) + " accepted, best at proposal " +
                  std::to_string(stats.best_iteration) + ", stopped by " + stats.stop + ", seed " +
                  std::to_string(stats.seed));
  if (moved > 0) {
    notes.push_back("the start was mapped into the enumeration: " + std::to_string(moved) +
                    (moved == 1 ? " vertex" : " vertices") +
                    " moved to the nearest enumerated configuration");
  }
  Result<StrategyReport> report =
      baselines::make_report(graph, cluster, configs, "mcmc",
                             "FlexFlow-style MCMC search over the enumeration (Metropolis, beta " +
                                 baselines::number_text(options.mcmc_beta) + ")",
                             to_strategy(configs, best), std::move(notes));
  if (!report) return report.error();
  stats.time_s = std::chrono::duration<double>(Clock::now() - start_time).count();
  return McmcResult{std::move(*report), std::move(stats)};
}

}  // namespace pase
