// Vertex orderings and dependent sets, checked against their definitions
// (PaSE paper, section IV) computed independently here by breadth-first search:
//   D(i) = the vertices not in v(1..i) adjacent to the connected component
//          containing v(i) of the subgraph induced by v(1..i).
// GenerateSeq (paper Fig. 3) picks at each step a vertex whose would-be
// dependent set is smallest (ties: lowest id); the table of every step is
// consumed by exactly one later step, except the last step of each component.
#include "search/ordering.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "pase/graph.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"

using namespace pase;

namespace {

// A random undirected graph on n vertices: edges (i, j), i < j, each with
// probability `density`; vertices with a high id tend to have more neighbours
// below them, as in a DNN graph written in topological order.
Adjacency random_adjacency(std::mt19937& rng, int n, double density) {
  Adjacency adj(n);
  for (int j = 1; j < n; ++j)
    for (int i = 0; i < j; ++i)
      if ((rng() % 1000) < density * 1000) {
        adj[i].push_back(j);
        adj[j].push_back(i);
      }
  for (auto& a : adj) std::sort(a.begin(), a.end());
  return adj;
}

// The component of `v` in the subgraph induced by `in`, by BFS.
std::vector<int> component(const Adjacency& adj, const std::vector<char>& in, int v) {
  std::vector<char> seen(adj.size(), 0);
  std::vector<int> comp{v};
  seen[v] = 1;
  for (size_t k = 0; k < comp.size(); ++k)
    for (int u : adj[comp[k]])
      if (in[u] && !seen[u]) {
        seen[u] = 1;
        comp.push_back(u);
      }
  return comp;
}

// D for vertex v when exactly the vertices marked in `in` (v among them) are processed.
std::set<int> dependent_set(const Adjacency& adj, const std::vector<char>& in, int v) {
  std::set<int> d;
  for (int c : component(adj, in, v))
    for (int u : adj[c])
      if (!in[u]) d.insert(u);
  return d;
}

int count_components(const Adjacency& adj) {
  std::vector<char> all(adj.size(), 1), done(adj.size(), 0);
  int n = 0;
  for (size_t v = 0; v < adj.size(); ++v) {
    if (done[v]) continue;
    ++n;
    for (int c : component(adj, all, static_cast<int>(v))) done[c] = 1;
  }
  return n;
}

bool is_permutation_of_ids(const std::vector<int>& seq, size_t n) {
  std::vector<int> sorted = seq;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  return sorted == ids;
}

// Checks every step of `ord` (built for `seq`) against the definitions.
void check_steps(const Adjacency& adj, const std::vector<int>& seq, const Ordering& ord) {
  size_t n = adj.size();
  REQUIRE(ord.steps.size() == n);
  REQUIRE(ord.position.size() == n);
  std::vector<char> in(n, 0);
  std::vector<int> consumed_by(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const Step& st = ord.steps[i];
    int v = seq[i];
    CAPTURE(i);
    CAPTURE(v);
    REQUIRE(st.vertex == v);
    CHECK(ord.position[v] == static_cast<int>(i));

    // The tables merged at step i: one per component of v(1..i-1) adjacent to
    // v, the table of that component's latest vertex.
    std::set<int> want_consumed;
    for (int u : adj[v])
      if (in[u]) {
        int latest = -1;
        for (int c : component(adj, in, u)) latest = std::max(latest, ord.position[c]);
        want_consumed.insert(latest);
      }
    CHECK(std::set<int>(st.consumed.begin(), st.consumed.end()) == want_consumed);
    CHECK(st.consumed.size() == want_consumed.size());
    for (int j : st.consumed) {
      CHECK(consumed_by[j] == -1);  // consumed exactly once
      consumed_by[j] = static_cast<int>(i);
    }

    std::vector<int> want_new;
    for (int u : adj[v])
      if (!in[u]) want_new.push_back(u);
    CHECK(st.new_neighbors == want_new);

    in[v] = 1;
    std::set<int> want = dependent_set(adj, in, v);
    CHECK(std::set<int>(st.dep.begin(), st.dep.end()) == want);
    CHECK(st.dep.size() == want.size());
    // Latest processed first: positions strictly decrease.
    for (size_t k = 1; k < st.dep.size(); ++k)
      CHECK(ord.position[st.dep[k - 1]] > ord.position[st.dep[k]]);
  }
  // Every table with a dependent set is consumed by the step of its earliest
  // dependent vertex; tables without one close a component and are never consumed.
  int finals = 0;
  for (size_t j = 0; j < n; ++j) {
    const Step& st = ord.steps[j];
    if (st.dep.empty()) {
      CHECK(consumed_by[j] == -1);
      ++finals;
    } else {
      REQUIRE(consumed_by[j] != -1);
      CHECK(consumed_by[j] > static_cast<int>(j));
      CHECK(ord.steps[consumed_by[j]].vertex == st.dep.back());
    }
  }
  CHECK(finals == count_components(adj));
}

// Checks that `seq` is a GenerateSeq order: each step takes a vertex whose
// would-be dependent set has the least key (cardinality, or the product of
// `weights`), the lowest id among equals.
void check_genseq(const Adjacency& adj, const std::vector<int>& seq,
                  const std::vector<double>* weights) {
  size_t n = adj.size();
  REQUIRE(is_permutation_of_ids(seq, n));
  std::vector<char> in(n, 0);
  for (size_t i = 0; i < n; ++i) {
    double best = 0;
    int best_v = -1;
    for (size_t w = 0; w < n; ++w) {
      if (in[w]) continue;
      in[w] = 1;
      std::set<int> d = dependent_set(adj, in, static_cast<int>(w));
      in[w] = 0;
      double key = static_cast<double>(d.size());
      if (weights) {
        key = 1;
        for (int u : d) key *= (*weights)[u];
      }
      if (best_v < 0 || key < best) {
        best = key;
        best_v = static_cast<int>(w);
      }
    }
    CAPTURE(i);
    REQUIRE(seq[i] == best_v);
    in[seq[i]] = 1;
  }
}

// Breadth-first order written out: from the lowest unvisited vertex,
// neighbours in id order.
std::vector<int> reference_bfs(const Adjacency& adj) {
  std::vector<char> seen(adj.size(), 0);
  std::vector<int> out;
  for (size_t r = 0; r < adj.size(); ++r) {
    if (seen[r]) continue;
    seen[r] = 1;
    out.push_back(static_cast<int>(r));
    for (size_t k = out.size() - 1; k < out.size(); ++k)
      for (int u : adj[out[k]])
        if (!seen[u]) {
          seen[u] = 1;
          out.push_back(u);
        }
  }
  return out;
}

}  // namespace

// ---- Edge cases ---------------------------------------------------------------------

TEST_CASE("ordering: a single vertex has an empty dependent set") {
  Adjacency adj(1);
  std::vector<int> seq = genseq_sequence(adj, nullptr);
  CHECK(seq == std::vector<int>{0});
  Ordering ord = make_steps(adj, seq, Order::kGenSeq);
  REQUIRE(ord.steps.size() == 1);
  CHECK(ord.steps[0].dep.empty());
  CHECK(ord.steps[0].consumed.empty());
}

TEST_CASE("ordering: isolated vertices are taken in id order") {
  Adjacency adj(4);
  CHECK(genseq_sequence(adj, nullptr) == std::vector<int>{0, 1, 2, 3});
  CHECK(bfs_sequence(adj) == std::vector<int>{0, 1, 2, 3});
  check_steps(adj, {2, 0, 3, 1}, make_steps(adj, {2, 0, 3, 1}, Order::kBfs));
}

TEST_CASE("ordering: GenerateSeq breaks ties by the lowest id") {
  // Path 0 - 1 - 2: the ends tie at |D| = 1, then 1 and 2 tie again.
  Adjacency path = {{1}, {0, 2}, {1}};
  CHECK(genseq_sequence(path, nullptr) == std::vector<int>{0, 1, 2});
  // Path 1 - 0 - 2: 1 and 2 tie; after 1, vertex 0 (D = {2}) and 2 (D = {0}) tie.
  Adjacency bent = {{1, 2}, {0}, {0}};
  CHECK(genseq_sequence(bent, nullptr) == std::vector<int>{1, 0, 2});
}

TEST_CASE("ordering: a diamond has one dependent set of two") {
  // 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3.
  Adjacency adj = {{1, 2}, {0, 3}, {0, 3}, {1, 2}};
  std::vector<int> seq = genseq_sequence(adj, nullptr);
  check_genseq(adj, seq, nullptr);
  Ordering ord = make_steps(adj, seq, Order::kGenSeq);
  check_steps(adj, seq, ord);
  size_t largest = 0;
  for (const Step& st : ord.steps) largest = std::max(largest, st.dep.size());
  CHECK(largest == 2);
}

TEST_CASE("ordering: make_adjacency merges parallel edges and ignores direction") {
  GraphSpec s;
  s.cutoff = 1;
  s.inputs = {{"x", {4, 4}}};
  auto add = [&](std::string name, std::string in0, std::string in1) {
    LayerSpec l;
    l.name = std::move(name);
    l.op = "Elementwise";
    l.inputs = {Operand{std::move(in0), {}}, Operand{std::move(in1), {}}};
    s.layers.push_back(std::move(l));
  };
  add("a", "x", "x");
  add("b", "a", "a");
  add("c", "b", "a");
  Result<Graph> g = build_graph(s);
  REQUIRE(g.ok());
  REQUIRE(g->edges.size() == 4);
  Adjacency adj = make_adjacency(*g);
  CHECK(adj == Adjacency{{1, 2}, {0, 2}, {0, 1}});
}

// ---- Random graphs ------------------------------------------------------------------

TEST_CASE("ordering: GenerateSeq dependent sets match the definition on random graphs") {
  std::mt19937 rng(20210517);
  for (int trial = 0; trial < 60; ++trial) {
    int n = 1 + static_cast<int>(rng() % 28);
    double density = (trial % 3 == 0) ? 0.08 : (trial % 3 == 1 ? 0.2 : 0.45);
    Adjacency adj = random_adjacency(rng, n, density);
    CAPTURE(trial);
    std::vector<int> seq = genseq_sequence(adj, nullptr);
    check_genseq(adj, seq, nullptr);
    Ordering ord = make_steps(adj, seq, Order::kGenSeq);
    check_steps(adj, seq, ord);
    CHECK(ord.order == Order::kGenSeq);
  }
}

TEST_CASE("ordering: the table-size variant minimizes the product of configuration counts") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    int n = 1 + static_cast<int>(rng() % 24);
    Adjacency adj = random_adjacency(rng, n, trial % 2 ? 0.15 : 0.35);
    std::vector<double> weights(n);
    for (double& w : weights) w = static_cast<double>(1 + rng() % 40);
    CAPTURE(trial);
    std::vector<int> seq = genseq_sequence(adj, &weights);
    check_genseq(adj, seq, &weights);
    check_steps(adj, seq, make_steps(adj, seq, Order::kMinTable));
  }
}

TEST_CASE("ordering: BFS order and its dependent sets on random graphs") {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 40; ++trial) {
    int n = 1 + static_cast<int>(rng() % 30);
    Adjacency adj = random_adjacency(rng, n, trial % 2 ? 0.1 : 0.3);
    CAPTURE(trial);
    std::vector<int> seq = bfs_sequence(adj);
    CHECK(seq == reference_bfs(adj));
    check_steps(adj, seq, make_steps(adj, seq, Order::kBfs));
  }
}

TEST_CASE("ordering: dependent sets of arbitrary sequences match the definition") {
  std::mt19937 rng(4242);
  for (int trial = 0; trial < 40; ++trial) {
    int n = 1 + static_cast<int>(rng() % 25);
    Adjacency adj = random_adjacency(rng, n, 0.25);
    std::vector<int> seq(n);
    std::iota(seq.begin(), seq.end(), 0);
    std::shuffle(seq.begin(), seq.end(), rng);
    CAPTURE(trial);
    check_steps(adj, seq, make_steps(adj, seq, Order::kGenSeq));
  }
}

// ---- The networks --------------------------------------------------------------------

TEST_CASE("ordering: every network's orders satisfy the definitions") {
  for (const ModelInfo& info : list_models()) {
    CAPTURE(info.name);
    Result<Graph> g = build_model(info.name);
    REQUIRE(g.ok());
    Adjacency adj = make_adjacency(*g);
    std::vector<size_t> counts(g->vertices.size());
    for (const Vertex& v : g->vertices)
      counts[v.id] = enumerate_configs(*g, v.id, Cluster{.devices = 8})->size();
    for (Order order : {Order::kGenSeq, Order::kBfs, Order::kMinTable}) {
      CAPTURE(order_name(order));
      Ordering ord = make_ordering(*g, order, counts);
      std::vector<int> seq;
      for (const Step& st : ord.steps) seq.push_back(st.vertex);
      check_steps(adj, seq, ord);
      if (order == Order::kGenSeq) check_genseq(adj, seq, nullptr);
      if (order == Order::kBfs) CHECK(seq == reference_bfs(adj));
      if (order == Order::kMinTable) {
        std::vector<double> w(counts.begin(), counts.end());
        check_genseq(adj, seq, &w);
      }
    }
  }
}

TEST_CASE("ordering: chains need dependent sets of one") {
  for (const char* name : {"alexnet", "rnnlm"}) {
    CAPTURE(name);
    Result<Graph> g = build_model(name);
    REQUIRE(g.ok());
    std::vector<size_t> counts(g->vertices.size(), 1);
    Ordering ord = make_ordering(*g, Order::kGenSeq, counts);
    size_t largest = 0;
    for (const Step& st : ord.steps) largest = std::max(largest, st.dep.size());
    CHECK(largest == 1);
  }
}
