// The bounded search (core/docs/bounded-search.md): a plan for a graph whose
// exact dynamic program cannot fit its tables, with a proven lower bound.
//
// Each round holds some vertices at one configuration each and runs the
// exact program (SpaceSearch::under_cap()) over the others. A vertex held at one
// configuration is a factor 1 in every table, and processing the free
// vertices first (GenerateSeq over the graph without the held ones) keeps
// the held ones from joining the free parts into one component: a dense
// block whose concatenations are held becomes a set of short chains. Which
// vertices are held is chosen greedily, step by step, from the largest step
// of the order until the round fits its budget (BoundedOptions); each round
// prefers the vertices held least often so far, so that every vertex is free
// in some round. Every round's space holds the best strategy so far (the
// held vertices keep their configuration of it), so the cost never rises.
//
// The bound: the exact optimum of the graph without its longest edges (as
// few as let the program fit a round's budget), since edges cost at least
// 0; under a cap, that graph's Lagrangian bound. Its strategy also starts
// the rounds. A per-vertex relaxation (relax()) gives a second bound.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cost/configurations.hpp"
#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "search/dynamic_program.hpp"
#include "search/ordering.hpp"
#include "search/progress.hpp"
#include "search/stop.hpp"
#include "search/weighted_plan.hpp"

namespace pase {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Pair matrices larger than this are left out of the relaxation (the bound
// then counts those edges as 0, which keeps it a bound).
constexpr double kRelaxationEntries = double{1 << 22};

// The search's objective without a memory term: what StageWeights::value()
// measures, as vertex cost vectors and pair matrices price it.
ops::Machine objective_machine(const Cluster& cluster, const StageWeights& weights) {
  ops::Machine m = ops::make_machine(cluster);
  m.microbatches = weights.microbatches;
  m.activation_copies = weights.activation_copies;
  m.sync_weight = weights.sync_weight;
  return m;
}

// Each vertex on its own, with its edges relaxed: `bound` is a lower bound on
// value() of every strategy, and `star[v][c]` what configuration c of v costs
// with each neighbour at its cheapest configuration against it (the first
// round's configuration of a held vertex is the least of these).
struct Relaxation {
  double bound = 0;
  std::vector<std::vector<double>> star;
};

// The bound: the cost of a strategy is the sum over vertices v of v's cost
// plus the edges to its neighbours of higher id, at their configurations;
// each term is at least its least value over v's configuration with every
// such neighbour free to take its cheapest configuration for that edge.
Relaxation relax(const Graph& g, const std::vector<ConfigSet>& configs, const ops::Machine& m,
                 const PlanOptions& options) {
  const size_t n = g.vertices.size();
  const int threads = std::max(1, options.threads);
  std::vector<std::vector<double>> vc(n);
  for (size_t v = 0; v < n; ++v)
    vc[v] = vertex_cost_vector(g, static_cast<int>(v), configs[v], m, threads);
  std::vector<std::vector<double>> own = vc;
  Relaxation r;
  r.star = vc;
  EdgePrices prices(g, configs, EndView::of(m), kEdgePriceBudget);
  for (const PairEdges& pe : group_edges(g)) {
    const size_t na = configs[pe.a].size(), nb = configs[pe.b].size();
    if (static_cast<double>(na) * static_cast<double>(nb) > kRelaxationEntries) continue;
    const PairMatrix mat =
        pair_matrix(g, configs, pe.edges, pe.a, pe.b, m, nullptr, &prices, nullptr, threads);
    std::vector<double> col_best(nb, kInfinity);
    for (size_t i = 0; i < na; ++i) {
      const double* row = mat.data() + i * nb;
      double least = kInfinity, least_star = kInfinity;
      for (size_t j = 0; j < nb; ++j) {
        least = std::min(least, row[j]);
        least_star = std::min(least_star, row[j] + vc[pe.b][j]);
        col_best[j] = std::min(col_best[j], row[j] + vc[pe.a][i]);
      }
      own[pe.a][i] += least;
      r.star[pe.a][i] += least_star;
    }
    for (size_t j = 0; j < nb; ++j) r.star[pe.b][j] += col_best[j];
  }
  for (size_t v = 0; v < n; ++v) r.bound += *std::min_element(own[v].begin(), own[v].end());
  return r;
}

// The order of a round: GenerateSeq (by table size) over the free vertices
// with the held ones removed, then the held ones.
std::vector<int> round_sequence(const Adjacency& adj, const std::vector<char>& held,
                                const std::vector<double>& counts) {
  const size_t n = adj.size();
  Adjacency free_adj(n);
  for (size_t v = 0; v < n; ++v) {
    if (held[v]) continue;
    for (int w : adj[v])
      if (!held[w]) free_adj[v].push_back(w);
  }
  std::vector<int> seq;
  seq.reserve(n);
  for (int v : genseq_sequence(free_adj, &counts))
    if (!held[v]) seq.push_back(v);
  for (size_t v = 0; v < n; ++v)
    if (held[v]) seq.push_back(static_cast<int>(v));
  return seq;
}

// A step's raw table entries and pairs under `counts` (held vertices count
// 1), capped far below overflow.
struct StepSize {
  double entries = 1, pairs = 1;
};
StepSize step_size(const Step& s, const std::vector<double>& counts,
                   const std::vector<char>& held) {
  StepSize z;
  for (int u : s.dep)
    if (!held[u]) z.entries = std::min(z.entries * counts[u], 1e300);
  z.pairs = std::min(z.entries * (held[s.vertex] ? 1.0 : counts[s.vertex]), 1e300);
  return z;
}

// Chooses the vertices a round holds: from none, while the round's raw
// tables (8 bytes an entry and 2 of arg-min) or pairs exceed the budget, the
// free vertex of the largest step that was held least often so far, then
// that adds the most pairs over all steps. Returns the round's order.
Ordering choose_held(const Adjacency& adj, const std::vector<double>& counts,
                     const std::vector<int>& times_held, const BoundedOptions& budget,
                     std::vector<char>& held) {
  const size_t n = adj.size();
  held.assign(n, 0);
  while (true) {
    Ordering ord = make_steps(adj, round_sequence(adj, held, counts), Order::kGenSeq);
    double entries = 0, pairs = 0, worst = 0;
    int worst_step = -1;
    std::vector<StepSize> sizes(ord.steps.size());
    for (size_t i = 0; i < ord.steps.size(); ++i) {
      sizes[i] = step_size(ord.steps[i], counts, held);
      entries += sizes[i].entries;
      pairs += sizes[i].pairs;
      if (sizes[i].pairs > worst) {
        worst = sizes[i].pairs;
        worst_step = static_cast<int>(i);
      }
    }
    if (entries * 10 <= budget.round_table_bytes && pairs <= budget.round_pairs) return ord;
    // What each vertex adds: the pairs of every step it is a factor of.
    std::vector<double> weight(n, 0);
    for (size_t i = 0; i < ord.steps.size(); ++i) {
      const Step& s = ord.steps[i];
      weight[s.vertex] += sizes[i].pairs;
      for (int u : s.dep) weight[u] += sizes[i].pairs;
    }
    const Step& w = ord.steps[worst_step];
    int pick = -1;
    auto better = [&](int u) {
      if (held[u] || counts[u] <= 1) return false;
      if (pick < 0) return true;
      if (times_held[u] != times_held[pick]) return times_held[u] < times_held[pick];
      return weight[u] * std::log(counts[u]) > weight[pick] * std::log(counts[pick]);
    };
    if (better(w.vertex)) pick = w.vertex;
    for (int u : w.dep)
      if (better(u)) pick = u;
    if (pick < 0) {
      // The largest step has nothing left to hold (every factor is 1): hold
      // the vertex that adds the most anywhere.
      for (size_t u = 0; u < n; ++u)
        if (better(static_cast<int>(u))) pick = static_cast<int>(u);
      if (pick < 0) return ord;  // everything is held
    }
    held[pick] = 1;
  }
}

// The graph without the edges order[0..k): the relaxation whose optimum
// bounds the whole graph's from below (edges cost at least 0).
Graph without_edges(const Graph& g, const std::vector<int>& order, size_t k) {
  std::vector<char> drop(g.edges.size(), 0);
  for (size_t i = 0; i < k; ++i) drop[order[i]] = 1;
  Graph h = g;
  h.edges.clear();
  for (size_t i = 0; i < g.edges.size(); ++i)
    if (!drop[i]) h.edges.push_back(g.edges[i]);
  return h;
}

// The order GenerateSeq (by table size) gives `g`, when its raw tables and
// pairs fit the budget.
std::optional<Ordering> fitting_order(const Graph& g, const std::vector<double>& counts,
                                      const BoundedOptions& budget) {
  const Adjacency adj = make_adjacency(g);
  Ordering ord = make_steps(adj, genseq_sequence(adj, &counts), Order::kGenSeq);
  const std::vector<char> none(adj.size(), 0);
  double entries = 0, pairs = 0;
  for (const Step& s : ord.steps) {
    const StepSize z = step_size(s, counts, none);
    entries += z.entries;
    pairs += z.pairs;
  }
  if (entries * 10 <= budget.round_table_bytes && pairs <= budget.round_pairs) return ord;
  return std::nullopt;
}

// The relaxation by dropped edges: the fewest of the longest edges (by the
// distance of their ends' ids, which follow the layers' order) whose removal
// lets the exact search fit a round's budget, found by bisection. Empty when
// even the graph without edges does not fit.
struct Dropped {
  Graph graph;
  Ordering ord;
  size_t count = 0;
};
std::optional<Dropped> drop_long_edges(const Graph& g, const std::vector<double>& counts,
                                       const BoundedOptions& budget) {
  std::vector<int> order(g.edges.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  auto span = [&](int i) { return std::abs(g.edges[i].src - g.edges[i].dst); };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return span(a) > span(b); });
  size_t lo = 0, hi = order.size();  // hi fits (if anything does), lo - 1 does not
  std::optional<Ordering> at_hi = fitting_order(without_edges(g, order, hi), counts, budget);
  if (!at_hi) return std::nullopt;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    std::optional<Ordering> o = fitting_order(without_edges(g, order, mid), counts, budget);
    if (o) {
      hi = mid;
      at_hi = std::move(o);
    } else {
      lo = mid + 1;
    }
  }
  return Dropped{without_edges(g, order, hi), std::move(*at_hi), hi};
}

}  // namespace

void describe_bounded(SearchStats& s, const PlanOptions& options) {
  // What the bounded search needs at most: each round's budget.
  const BoundedOptions& b = options.bounded;
  s.bounded = true;
  s.exact_peak_bytes = s.peak_bytes;
  s.rounds = b.max_rounds;
  s.peak_bytes = std::min(s.peak_bytes, b.round_table_bytes);
  s.pairs = std::min(s.pairs, b.round_pairs * b.max_rounds);
  s.raw_pairs = std::min(s.raw_pairs, b.round_pairs * b.max_rounds);
  s.raw_peak_bytes = std::min(s.raw_peak_bytes, b.round_table_bytes);
}

Result<Plan> plan_bounded(const Graph& graph, const Cluster& cluster, const PlanOptions& options,
                          const StageWeights& weights, SearchSpace exact,
                          std::chrono::steady_clock::time_point start) {
  const size_t n = graph.vertices.size();
  const BoundedOptions& budget = options.bounded;
  const int max_rounds = std::max(1, budget.max_rounds);
  const ops::Machine m = objective_machine(cluster, weights);
  const Relaxation relaxed = relax(graph, exact.configs, m, options);
  const Adjacency adj = make_adjacency(graph);
  std::vector<double> counts(n);
  for (size_t v = 0; v < n; ++v) counts[v] = static_cast<double>(exact.configs[v].size());

  const int segments = max_rounds + 1;  // progress: the relaxation, then the rounds
  auto progress_of = [&](int segment) {
    return progress_part(options, static_cast<double>(segment) / segments,
                         static_cast<double>(segment + 1) / segments,
                         segment == 0 ? "bounded search: the relaxation"
                                      : "bounded search: round " + std::to_string(segment));
  };
  auto value = [&](const Plan& p) { return weights.value(p); };

  // The first round's configuration of a held vertex: its least star cost,
  // or its configuration in the optimum of the graph without its longest
  // edges when that strategy costs less.
  Strategy current(n);
  for (size_t v = 0; v < n; ++v) {
    const std::vector<double>& s = relaxed.star[v];
    const size_t i = static_cast<size_t>(std::min_element(s.begin(), s.end()) - s.begin());
    const ConfigSet& set = exact.configs[v];
    current[v].assign(set.at(i), set.at(i) + set.dims);
  }
  double bound = relaxed.bound;
  int searches = 0;
  if (std::optional<Dropped> d = drop_long_edges(graph, counts, budget)) {
    // Its optimum (without ties) is at most the whole graph's; under a cap
    // the Lagrangian bound of its capped search is at most its capped
    // optimum, so at most the whole graph's. It has the same vertices, so
    // the same memory: when nothing fits it, nothing fits the whole graph.
    // The margin covers the rounding between the program's sum and
    // evaluate()'s.
    SearchSpace space;
    space.order = options.order;
    space.configs = exact.configs;
    space.ord = std::move(d->ord);
    finish_space(d->graph, cluster, space);
    StageWeights plain = weights;
    plain.tie = 0;
    Result<Plan> r = SpaceSearch(d->graph, cluster, progress_of(0), plain, space).under_cap();
    if (!r) return r.error();
    searches += r->search.searches;
    bound = std::max(bound, r->lower_bound * (1 - 1e-12));
    Result<Plan> whole = evaluate(graph, cluster, r->strategy);
    Result<Plan> star = evaluate(graph, cluster, current);
    if (!whole) return whole.error();
    if (!star) return star.error();
    // Under a cap its strategy fits (the star's may not).
    if (cluster.memory_gib > 0)
      current = r->strategy;
    else if (value(*whole) < value(*star))
      current = r->strategy;
  }

  std::optional<Plan> best;
  std::optional<Error> last_error;
  SearchStats stats;
  stats.order = options.order;
  stats.configurations = exact.est.configurations;
  stats.bounded = true;
  stats.exact_peak_bytes = exact.est.peak_bytes;
  std::vector<int> times_held(n, 0);
  int quiet = 0;
  bool whole = false;  // a round held nothing: it was the exact search
  for (int round = 0; round < max_rounds && quiet < 2 && !whole; ++round) {
    if (stop_requested(options)) return stop_error(options);
    std::vector<char> held;
    SearchSpace space;
    space.order = options.order;
    space.ord = choose_held(adj, counts, times_held, budget, held);
    space.configs.resize(n);
    int held_count = 0;
    for (size_t v = 0; v < n; ++v) {
      if (held[v]) {
        ++times_held[v];
        ++held_count;
        space.configs[v].dims = exact.configs[v].dims;
        space.configs[v].data = current[v];
      } else {
        space.configs[v] = exact.configs[v];
      }
    }
    whole = held_count == 0;
    finish_space(graph, cluster, space);
    Result<Plan> r =
        SpaceSearch(graph, cluster, progress_of(round + 1), weights, space).under_cap();
    ++stats.rounds;
    stats.fixed_vertices = std::max(stats.fixed_vertices, held_count);
    stats.pairs += space.est.pairs;
    stats.raw_pairs += space.est.raw_pairs;
    stats.table_entries += space.est.table_entries;
    stats.largest_table = std::max(stats.largest_table, space.est.largest_table);
    stats.peak_bytes = std::max(stats.peak_bytes, space.est.peak_bytes);
    stats.raw_peak_bytes = std::max(stats.raw_peak_bytes, space.est.raw_peak_bytes);
    stats.max_dependent_set = std::max(stats.max_dependent_set, space.est.max_dependent_set);
    if (!r) {
      // Under a cap a round's space may hold no strategy that fits; another
      // round's may. Anything else ends the plan.
      if (r.error().where != "cluster.memory_gib") return r.error();
      last_error = r.error();
      ++quiet;
      continue;
    }
    searches += r->search.searches;
    if (!best || value(*r) < value(*best)) {
      quiet = value(*r) < (best ? value(*best) : kInfinity) * (1 - 1e-12) ? 0 : quiet + 1;
      best = std::move(*r);
      current = best->strategy;
    } else {
      ++quiet;
    }
  }
  if (!best) {
    Error e = *last_error;
    e.message = "the bounded search found no strategy that fits: " + e.message;
    return e;
  }
  Plan p = std::move(*best);
  if (!whole) {
    // A round that held nothing proved its own bound; otherwise the
    // larger of the two relaxations' is the one known.
    p.lower_bound = std::min(bound, value(p));
    p.optimal = value(p) <= bound * (1 + 1e-12);
  }
  p.search = stats;
  p.search.searches = searches;
  p.search.threads = std::max(1, options.threads);
  p.search.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.on_progress) {
    Progress done;
    done.fraction = 1;
    options.on_progress(done);
  }
  return p;
}

}  // namespace pase
