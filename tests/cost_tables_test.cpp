// Edge (re-distribution) costs, core/docs/cost-model.md section 3: the formula itself,
// tensor configurations derived through each op's maps (FC, Transpose,
// Ravel/Unravel, multi-output Unstack), and the pair matrices the search uses.
// Machine: F = 1 TFLOP/s, B = 8 GB/s, so r = 1000 and edge_cost = 2000 * words.
#include "cost/cost_tables.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cost/configurations.hpp"
#include "model/cost_model.hpp"
#include "pase/graph.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;

namespace {

Graph build(std::vector<std::pair<std::string, Shape>> inputs, std::vector<LayerSpec> layers,
            int64_t cutoff = 1) {
  GraphSpec s;
  s.cutoff = cutoff;
  s.inputs = std::move(inputs);
  s.layers = std::move(layers);
  Result<Graph> g = build_graph(std::move(s));
  if (!g) FAIL(g.error().to_string());
  return std::move(g).value();
}

double words(const Shape& shape, std::vector<int64_t> s, std::vector<int64_t> t) {
  return ops::redistribution_words(shape, s.data(), t.data());
}

double edge(const Graph& g, int index, const Config& src, const Config& dst,
            const Cluster& cluster = kR1000) {
  return edge_cost(g, g.edges[index], src.data(), dst.data(), ops::make_machine(cluster));
}

// Checks pair_matrix() for every pair of adjacent vertices of `g` with at
// least `min_edges` edges against edge_cost() summed entry by entry, in both
// orientations.
void check_pair_matrices(const Graph& g, const Cluster& cluster, size_t min_edges) {
  auto configs = enumerate_all(g, cluster.devices, {});
  REQUIRE(configs.ok());
  ops::Machine m = ops::make_machine(cluster);
  int checked = 0;
  for (const PairEdges& pe : group_edges(g)) {
    if (pe.edges.size() < min_edges) continue;
    ++checked;
    const ConfigSet& ca = (*configs)[pe.a];
    const ConfigSet& cb = (*configs)[pe.b];
    PairMatrix ab = pair_matrix(g, *configs, pe.edges, pe.a, pe.b, m);
    PairMatrix ba = pair_matrix(g, *configs, pe.edges, pe.b, pe.a, m);
    REQUIRE(ab.size() == ca.size() * cb.size());
    REQUIRE(ba.size() == ab.size());
    for (size_t i = 0; i < ca.size(); ++i)
      for (size_t j = 0; j < cb.size(); ++j) {
        double want = 0;
        for (int id : pe.edges) {
          const Edge& e = g.edges[id];
          const int64_t* src = e.src == pe.a ? ca.at(i) : cb.at(j);
          const int64_t* dst = e.dst == pe.a ? ca.at(i) : cb.at(j);
          want += edge_cost(g, e, src, dst, m);
        }
        REQUIRE(ab[i * cb.size() + j] == near(want));
        REQUIRE(ba[j * ca.size() + i] == near(want));
      }
  }
  CHECK(checked > 0);
}

}  // namespace

// ---- The formula --------------------------------------------------------------------

TEST_CASE("edges: identical tensor configurations move nothing") {
  CHECK(words({8, 8}, {1, 1}, {1, 1}) == 0);
  CHECK(words({8, 8}, {2, 2}, {2, 2}) == 0);
  CHECK(words({192}, {16}, {16}) == 0);
}

TEST_CASE("edges: a target on more devices than the source has nothing in place") {
  // (8, 8) from (2, 1) to (2, 2): every target block lies inside a source
  // block, but P_tgt = 4 > P_src = 2 so have = 0 and need = 4*4 = 16.
  CHECK(words({8, 8}, {2, 1}, {2, 2}) == near(16));
  // (6, 10) from (3, 1) to (2, 5): need = 3*2 = 6; P_tgt = 10 > 3: have = 0.
  CHECK(words({6, 10}, {3, 1}, {2, 5}) == near(6));
  // From unsplit to 4 ways: need = 2*8 = 16.
  CHECK(words({8, 8}, {1, 1}, {4, 1}) == near(16));
}

TEST_CASE("edges: a target on fewer or as many devices keeps the overlap") {
  // (8, 8) from (2, 2) to (2, 1): need = 4*8 = 32, have = min(4,4)*min(4,8) = 16.
  CHECK(words({8, 8}, {2, 2}, {2, 1}) == near(16));
  // From (4, 1) to (1, 1): need = 64, have = min(2,8)*min(8,8) = 16.
  CHECK(words({8, 8}, {4, 1}, {1, 1}) == near(48));
  // Same device count, other layout: (2, 1) to (1, 2): need = 8*4 = 32,
  // have = min(4,8)*min(8,4) = 16.
  CHECK(words({8, 8}, {2, 1}, {1, 2}) == near(16));
  // Splits of 3 and 2 on (6, 10): (3, 2) to (2, 1) on 6 > 2 devices:
  // need = 3*10 = 30, have = min(2,3)*min(5,10) = 10.
  CHECK(words({6, 10}, {3, 2}, {2, 1}) == near(20));
}

// ---- Tensor configurations through the ops ------------------------------------------

TEST_CASE("edges: FC to FC maps the producer's (m, n) onto the consumer's (m, k)") {
  LayerSpec a = layer("a", "FC", {"x"});
  a.units = 16;
  LayerSpec b = layer("b", "FC", {"a"});
  b.units = 4;
  Graph g = build({{"x", {8, 16}}}, {a, b});
  REQUIRE(g.edges.size() == 1);
  // a = (2, 1, 4): output (8, 16) split (2, 1) -- the K split of a does not
  // matter; b = (1, 1, 2): input split (1, 2).
  // need = 8*8 = 64, have = min(4,8)*min(16,8) = 32: words 32, cost 2*32*1000.
  CHECK(edge(g, 0, {2, 1, 4}, {1, 1, 2}) == near(64000));
  // Default machine: r = 5000.
  CHECK(edge(g, 0, {2, 1, 4}, {1, 1, 2}, Cluster{}) == near(320000));
  // a splits units 2 ways, b splits K 2 ways: the same layout, free.
  CHECK(edge(g, 0, {1, 2, 1}, {1, 4, 2}) == 0);
  // b on more devices: (2, 1) to (2, 2): have = 0, need = 4*8 = 32.
  CHECK(edge(g, 0, {2, 1, 1}, {2, 1, 2}) == near(64000));
}

TEST_CASE("edges: Transpose permutes its output configuration") {
  LayerSpec pre = layer("pre", "Elementwise", {"x", "x"});
  LayerSpec t = layer("t", "Transpose", {"pre"});
  t.perm = {1, 0};
  LayerSpec fc = layer("fc", "FC", {"t"});
  fc.units = 4;
  Graph g = build({{"x", {4, 6}}}, {pre, t, fc});
  REQUIRE(g.edges.size() == 2);
  // t = (2, 1) on (4, 6): output (6, 4) split (1, 2). fc dom (6, 4, 4) with
  // input map (0, 2): fc = (1, 1, 2) reads (1, 2): free.
  CHECK(edge(g, 1, {2, 1}, {1, 1, 2}) == 0);
  // fc = (2, 1, 1) reads (2, 1): need = 3*4 = 12, have = min(6,3)*min(2,4) = 6.
  CHECK(edge(g, 1, {2, 1}, {2, 1, 1}) == near(12000));
  // pre -> t is the identity map: (2, 1) to (2, 1) free.
  CHECK(edge(g, 0, {2, 1}, {2, 1}) == 0);
}

TEST_CASE("edges: Ravel and Unravel exchange the product of their splits") {
  LayerSpec pre = layer("pre", "Elementwise", {"x", "x"});
  LayerSpec r = layer("flat", "Reshape", {"pre"});
  r.shape = {8, 24};
  LayerSpec fc = layer("fc", "FC", {"flat"});
  fc.units = 4;
  Graph g = build({{"x", {8, 4, 6}}}, {pre, r, fc});
  REQUIRE(g.vertices.size() == 4);
  REQUIRE(g.edges.size() == 3);
  // Edge 1: Ravel -> Unravel on the 1-D tensor (192).
  // Ravel (8, 2, 1) -> (16); Unravel (8, 2) -> (16): free.
  CHECK(edge(g, 1, {8, 2, 1}, {8, 2}) == 0);
  // Ravel (8, 2, 1) -> (16); Unravel (4, 1) -> (4): need 48, have min(12, 48) = 12.
  CHECK(edge(g, 1, {8, 2, 1}, {4, 1}) == near(72000));
  // Ravel (2, 1, 1) -> (2); Unravel (1, 4) -> (4): more devices, need 48.
  CHECK(edge(g, 1, {2, 1, 1}, {1, 4}) == near(96000));
  // Edge 0: pre (8, 1, 1) -> Ravel (8, 2, 1) on (8, 4, 6): 16 > 8 devices, need 1*2*6 = 12.
  CHECK(edge(g, 0, {8, 1, 1}, {8, 2, 1}) == near(24000));
  // Edge 2: Unravel (8, 2) -> fc (8, 1, 2) reading (8, 2): free.
  CHECK(edge(g, 2, {8, 2}, {8, 1, 2}) == 0);
}

TEST_CASE("edges: each output of an Unstack is its own edge and one producer in two slots is two") {
  LayerSpec u = layer("u", "Unstack", {"x"});
  LayerSpec a = layer("a", "Elementwise", {"u:0", "u:1"});
  LayerSpec b = layer("b", "Elementwise", {"u:2", "u:2"});
  Graph g = build({{"x", {3, 4, 6}}}, {u, a, b});
  REQUIRE(g.edges.size() == 4);
  CHECK((g.edges[0].src == 0 && g.edges[0].src_output == 0 && g.edges[0].dst == 1 &&
         g.edges[0].dst_slot == 0));
  CHECK((g.edges[1].src == 0 && g.edges[1].src_output == 1 && g.edges[1].dst == 1 &&
         g.edges[1].dst_slot == 1));
  CHECK((g.edges[2].src == 0 && g.edges[2].src_output == 2 && g.edges[2].dst == 2 &&
         g.edges[2].dst_slot == 0));
  CHECK((g.edges[3].src == 0 && g.edges[3].src_output == 2 && g.edges[3].dst == 2 &&
         g.edges[3].dst_slot == 1));

  // u = (1, 2, 1): every output (4, 6) split (2, 1). a = (1, 2): need 4*3 = 12,
  // have min(2,4)*min(6,3) = 6: 6 words, 12000 per edge. b = (2, 1): free.
  Result<Plan> p = evaluate(g, kR1000, {{1, 2, 1}, {1, 2}, {2, 1}});
  REQUIRE(p.ok());
  REQUIRE(p->edge_costs.size() == 4);
  CHECK(p->edge_costs[0] == near(12000));
  CHECK(p->edge_costs[1] == near(12000));
  CHECK(p->edge_costs[2] == 0);
  CHECK(p->edge_costs[3] == 0);
  CHECK(p->redistribution == near(24000));
  // Layers: a = 4*3 = 12, b = 2*6 = 12, u = 0.
  CHECK(p->cost == near(24024));

  // b = (1, 2) too: both of b's slots pay.
  p = evaluate(g, kR1000, {{1, 2, 1}, {1, 2}, {1, 2}});
  REQUIRE(p.ok());
  CHECK(p->edge_costs[2] == near(12000));
  CHECK(p->edge_costs[3] == near(12000));
  CHECK(p->redistribution == near(48000));

  std::vector<PairEdges> pairs = group_edges(g);
  REQUIRE(pairs.size() == 2);
  CHECK((pairs[0].a == 0 && pairs[0].b == 1 && pairs[0].edges == std::vector<int>{0, 1}));
  CHECK((pairs[1].a == 0 && pairs[1].b == 2 && pairs[1].edges == std::vector<int>{2, 3}));
}

TEST_CASE("edges: Stack and Concat inputs read the layer configuration around the axis") {
  LayerSpec pa = layer("pa", "Elementwise", {"x", "x"});
  LayerSpec st = layer("st", "Stack", {"pa", "pa"});
  st.axis = 1;
  LayerSpec cat = layer("cat", "Concat", {"pa", "pa"});
  cat.axis = 0;
  Graph g = build({{"x", {4, 6}}}, {pa, st, cat});
  REQUIRE(g.edges.size() == 4);
  // st dom (4, 1, 6): st = (2, 1, 3) reads (2, 3) in both slots.
  CHECK(edge(g, 0, {2, 3}, {2, 1, 3}) == 0);
  // pa = (1, 1) to (2, 3): 6 > 1 devices, need 2*2 = 4 words each.
  CHECK(edge(g, 0, {1, 1}, {2, 1, 3}) == near(8000));
  CHECK(edge(g, 1, {1, 1}, {2, 1, 3}) == near(8000));
  // cat dom (1, 6): cat = (1, 2) reads (1, 2); pa = (2, 1): need 4*3 = 12, have 2*3 = 6.
  CHECK(edge(g, 2, {2, 1}, {1, 2}) == near(12000));
}

// ---- Pair matrices -----------------------------------------------------------------------

TEST_CASE("edges: pair matrices equal the summed edge costs on a small graph") {
  LayerSpec u = layer("u", "Unstack", {"x"});
  LayerSpec a = layer("a", "Elementwise", {"u:0", "u:1"});
  LayerSpec b = layer("b", "Elementwise", {"u:2", "a"});
  LayerSpec c = layer("c", "Concat", {"a", "b", "a"});
  c.axis = 1;
  Graph g = build({{"x", {3, 4, 6}}}, {u, a, b, c});
  check_pair_matrices(g, Cluster{.devices = 6}, 1);
}

TEST_CASE("edges: pair matrices equal the summed edge costs on AlexNet") {
  Result<Graph> g = build_model("alexnet");
  REQUIRE(g.ok());
  check_pair_matrices(*g, Cluster{.devices = 8}, 1);
}

TEST_CASE("edges: Transformer pairs joined by several edges sum them") {
  Result<Graph> g = build_model("transformer", 8);
  REQUIRE(g.ok());
  check_pair_matrices(*g, Cluster{.devices = 4}, 2);
}

// PairMatrices gives pair_matrix()'s numbers, bit for bit, for every pair of
// adjacent vertices in both orientations, with subsets of rows and columns;
// the repeated layers of the Transformer share their matrices, and a budget
// of 0 keeps none.
namespace {

void check_kept_matrices(const Cluster& cluster, double budget) {
  Result<Graph> g = build_model("transformer", 8);
  REQUIRE(g.ok());
  auto configs = enumerate_all(*g, cluster.devices, {});
  REQUIRE(configs.ok());
  const ops::Machine m = ops::make_machine(cluster);
  EdgePrices prices(*g, *configs, EndView::of(m), kEdgePriceBudget);
  PairMatrices kept(*g, *configs, m, prices, budget);
  int compared = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (const PairEdges& pe : group_edges(*g))
      for (auto [outer, inner] : {std::pair(pe.a, pe.b), std::pair(pe.b, pe.a)}) {
        // Every other configuration as rows, every third as columns.
        std::vector<int> rows, cols;
        for (size_t i = 0; i < (*configs)[outer].size(); i += 2)
          rows.push_back(static_cast<int>(i));
        for (size_t j = 0; j < (*configs)[inner].size(); j += 3)
          cols.push_back(static_cast<int>(j));
        for (bool subsets : {false, true}) {
          const std::vector<int>* r = subsets ? &rows : nullptr;
          const std::vector<int>* c = subsets ? &cols : nullptr;
          std::shared_ptr<const PairMatrix> got = kept.get(pe.edges, outer, inner, r, c, 2);
          PairMatrix want = pair_matrix(*g, *configs, pe.edges, outer, inner, m, r, nullptr, c);
          REQUIRE(got->size() == want.size());
          for (size_t k = 0; k < want.size(); ++k) REQUIRE((*got)[k] == want[k]);
          ++compared;
        }
      }
  CHECK(compared > 100);
  if (budget > 0) {
    CHECK(kept.bytes() > 0);
    CHECK(kept.bytes() <= budget);
    // The second pass finds every matrix, and the six encoder layers share theirs in the first.
    CHECK(kept.hits() > static_cast<uint64_t>(compared / 2));
  } else {
    CHECK(kept.bytes() == 0);
    CHECK(kept.hits() == 0);
  }
}

}  // namespace

TEST_CASE("edges: kept pair matrices are pair_matrix()'s, shared by equal signatures") {
  SUBCASE("flat") { check_kept_matrices(Cluster{.devices = 8}, kPairMatrixBudget); }
  SUBCASE("nodes") {
    check_kept_matrices(Cluster{.devices = 8, .gpus_per_node = 4, .intra_node_gbps = 100},
                        kPairMatrixBudget);
  }
  SUBCASE("nothing kept") { check_kept_matrices(Cluster{.devices = 8}, 0); }
}

// EdgePrices::bind(): prices kept from one graph serve another's edges of
// the same signatures (configuration sets compared by content, not by the
// graph's vertex ids), as a pipeline's stage plans on one machine share
// them; every matrix is pair_matrix()'s without kept prices, bit for bit.
namespace {

void check_bound_prices(const Cluster& cluster) {
  const ops::Machine m = ops::make_machine(cluster);
  EdgePrices prices(EndView::of(m), kEdgePriceBudget);
  uint64_t hits_before_second = 0;
  int graph = 0;
  // The same network twice (equal signatures: the second finds them kept),
  // then with other configuration sets of the same shapes (a cutoff of 1:
  // more splits, so sets that the first graph's ids would confuse), then at
  // another batch (other shapes).
  for (auto [batch, cutoff] :
       {std::pair(8, 4), std::pair(8, 4), std::pair(8, 1), std::pair(16, 4)}) {
    Result<Graph> g = build_model("transformer", batch);
    REQUIRE(g.ok());
    g->cutoff = cutoff;
    auto configs = enumerate_all(*g, cluster.devices, {});
    REQUIRE(configs.ok());
    prices.bind(*g, *configs);
    for (const PairEdges& pe : group_edges(*g))
      for (auto [outer, inner] : {std::pair(pe.a, pe.b), std::pair(pe.b, pe.a)}) {
        PairMatrix got = pair_matrix(*g, *configs, pe.edges, outer, inner, m, nullptr, &prices);
        PairMatrix want = pair_matrix(*g, *configs, pe.edges, outer, inner, m);
        REQUIRE(got.size() == want.size());
        for (size_t k = 0; k < want.size(); ++k) REQUIRE(got[k] == want[k]);
      }
    if (++graph == 1) hits_before_second = prices.hits();
    if (graph == 2) CHECK(prices.hits() > 2 * hits_before_second);
  }
}

}  // namespace

TEST_CASE("edges: prices bound to another graph are its own prices") {
  SUBCASE("flat, paper") { check_bound_prices(Cluster{.devices = 8}); }
  SUBCASE("nodes, practice") {
    Cluster c = practice_h100(8);
    c.gpus_per_node = 4;
    check_bound_prices(c);
  }
}
