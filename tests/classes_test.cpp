// Tables indexed by equivalence classes (dynamic_program.hpp, core/docs/
// performance.md "Equivalence classes") against the engine on raw
// configurations (run_dp_reference): the same optimum to the bit and the same
// strategy on the bench grid, on random graphs, flat and on nodes, and under
// the memory weights of a capped plan, whatever the threads and with or
// without the threshold search; the classes themselves are exact.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cost/configurations.hpp"
#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "pase/graph.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "plan/testing.hpp"
#include "random_graphs.hpp"
#include "search/dynamic_program.hpp"
#include "search/ordering.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;

namespace {

struct Search {
  std::vector<ConfigSet> configs;
  Ordering ord;
  TableClasses classes;
  ops::Machine machine;
};

Search prepare(const Graph& g, const Cluster& cluster, Order order) {
  Result<std::vector<ConfigSet>> sets = enumerate_all(g, cluster.devices, {});
  REQUIRE(sets.ok());
  Search s;
  s.configs = std::move(sets).value();
  std::vector<size_t> counts;
  for (const ConfigSet& c : s.configs) counts.push_back(c.size());
  s.ord = make_ordering(g, order, counts);
  s.machine = ops::make_machine(cluster);
  s.classes = table_classes(g, s.configs, s.ord, EndView::of(s.machine));
  return s;
}

// run_dp equals run_dp_reference: the same cost, bit for bit, and the same
// configuration of every vertex. Returns the estimate on classes.
SearchStats check_same(const Graph& g, const Search& s, double cost_weight = 1,
                       double memory_weight = 0) {
  ops::Machine m = s.machine;
  m.cost_weight = cost_weight;
  m.memory_weight = memory_weight;
  const SearchStats est = estimate_dp(s.ord, s.configs, &s.classes);
  const SearchStats raw = estimate_dp(s.ord, s.configs);
  // Every step run (repeated blocks are compared in repeated_steps_test.cpp).
  DpTuning every_step;
  every_step.repeat = false;
  Result<DpResult> fast = run_dp(g, s.configs, s.ord, s.classes, m, est, PlanOptions{}, every_step);
  Result<DpResult> ref = run_dp_reference(g, s.configs, s.ord, m, raw, PlanOptions{});
  REQUIRE(fast.ok());
  REQUIRE(ref.ok());
  CHECK_MESSAGE(fast->cost == ref->cost, "classes " << fast->cost << " reference " << ref->cost);
  CHECK(fast->choice == ref->choice);
  // Neither the threads nor the threshold search nor the dense rows change
  // anything: every pair searched (dense rows in blocks), then the threshold
  // search on every step that has a dependent set (with two sorted entries
  // kept per row, so that rows run past them), then both mixed, each on one
  // and on three threads splitting every step.
  DpTuning every_pair = every_step;
  every_pair.threshold = false;
  DpTuning everywhere = every_step;
  everywhere.threshold_min_configs = 1;
  everywhere.threshold_min_rows = 1;
  everywhere.row_keep = 2;
  everywhere.dense_per_walked = 0;  // never the dense rows
  // The threshold search where it is chosen, dense rows (in blocks of
  // three outer states) wherever the walks allow it.
  DpTuning mixed = everywhere;
  mixed.dense_per_walked = 1e9;
  mixed.dense_block = 3;
  // The same with probes that walk whole blocks and two row terms never
  // summed into one.
  DpTuning mixed_plain = mixed;
  mixed_plain.probe_one_run = false;
  mixed_plain.fuse_integer_rows = false;
  for (const DpTuning& base : {every_pair, everywhere, mixed, mixed_plain})
    for (int threads : {1, 3}) {
      DpTuning tuning = base;
      tuning.parallel_pairs = 0;
      PlanOptions options;
      options.threads = threads;
      Result<DpResult> other = run_dp(g, s.configs, s.ord, s.classes, m, est, options, tuning);
      REQUIRE(other.ok());
      CAPTURE(threads);
      CAPTURE(tuning.threshold);
      CHECK(other->cost == ref->cost);
      CHECK(other->choice == ref->choice);
    }
  // Without groups (the table's own order, rows over the configurations):
  // the same again.
  const TableClasses no_groups = table_classes(g, s.configs, s.ord, EndView::of(m), false);
  Result<DpResult> plain =
      run_dp(g, s.configs, s.ord, no_groups, m, estimate_dp(s.ord, s.configs, &no_groups),
             PlanOptions{}, every_step);
  REQUIRE(plain.ok());
  CHECK(plain->cost == ref->cost);
  CHECK(plain->choice == ref->choice);
  // The reference's sizes are the raw ones, and classes never add entries.
  CHECK(est.raw_pairs == raw.pairs);
  CHECK(est.raw_peak_bytes == raw.peak_bytes);
  CHECK(est.pairs <= raw.pairs);
  CHECK(est.table_entries <= raw.table_entries);
  return est;
}

// The networks of `pase bench`'s default grid.
std::vector<std::string> paper_models() {
  std::vector<std::string> out;
  for (const ModelInfo& m : list_models())
    if (!m.llm) out.push_back(m.name);
  return out;
}

// The vertices processed up to step i that are joined to v(i) through
// processed vertices: the part of the graph that T_i covers.
std::vector<char> covered(const Graph& g, const Ordering& ord, size_t i) {
  const Adjacency adj = make_adjacency(g);
  std::vector<char> in(g.vertices.size(), 0);
  std::vector<int> stack = {ord.steps[i].vertex};
  in[stack[0]] = 1;
  while (!stack.empty()) {
    int x = stack.back();
    stack.pop_back();
    for (int y : adj[x])
      if (!in[y] && ord.position[y] <= static_cast<int>(i)) {
        in[y] = 1;
        stack.push_back(y);
      }
  }
  return in;
}

}  // namespace

// ---- The classes ---------------------------------------------------------------------------

namespace {

// For every step i and u in D(i), two configurations of u in one class must
// price every edge between u and a vertex covered by T_i alike, against
// every configuration of that vertex; and class 0 holds configuration 0,
// each class numbered by its least configuration. Random graphs on 4 or 8
// devices, flat or on nodes of 2, of the paper model or (`practice`) the
// practice model, which prices an edge both ways.
void check_classes_price_alike(bool practice) {
  RandomGraphs gen(4242);
  std::mt19937 rng(3);
  int tested = 0, merged = 0;
  for (int attempt = 0; tested < 40 && attempt < 400; ++attempt) {
    Result<Graph> g = build_graph(gen.next(3 + static_cast<int>(rng() % 6)));
    REQUIRE_MESSAGE(g.ok(), why(g));
    const int64_t devices = rng() % 2 ? 4 : 8;
    Cluster cluster = practice ? practice_h100(devices) : Cluster{.devices = devices};
    cluster.gpus_per_node = 0;
    if (rng() % 2) {
      cluster.gpus_per_node = 2;
      cluster.intra_node_gbps = 100;
    }
    CAPTURE(attempt);
    Search s = prepare(*g, cluster, Order::kGenSeq);
    for (size_t i = 0; i < s.ord.steps.size(); ++i) {
      const Step& st = s.ord.steps[i];
      const DepClasses& dc = s.classes.steps[i];
      const std::vector<char> in = covered(*g, s.ord, i);
      for (size_t k = 0; k < st.dep.size(); ++k) {
        const int u = st.dep[k];
        const std::vector<int>& of = dc.of[k];
        REQUIRE(of.size() == s.configs[u].size());
        int next = 0;
        for (size_t c = 0; c < of.size(); ++c) {
          REQUIRE(of[c] <= next);  // numbered by least configuration
          if (of[c] == next) {
            CHECK(dc.first[k][next] == static_cast<int>(c));
            ++next;
          }
        }
        CHECK(next == dc.count[k]);
        if (dc.count[k] < static_cast<int>(of.size())) ++merged;
        for (const Edge& e : g->edges) {
          const int x = e.src == u ? e.dst : e.dst == u ? e.src : -1;
          if (x < 0 || x == u || !in[x]) continue;
          for (size_t c = 0; c < of.size(); ++c) {
            const int rep = dc.first[k][of[c]];
            for (size_t cx = 0; cx < s.configs[x].size(); ++cx) {
              const int64_t* cu = s.configs[u].at(c);
              const int64_t* cr = s.configs[u].at(rep);
              const int64_t* xx = s.configs[x].at(cx);
              const double a = e.src == u ? edge_cost(*g, e, cu, xx, s.machine)
                                          : edge_cost(*g, e, xx, cu, s.machine);
              const double b = e.src == u ? edge_cost(*g, e, cr, xx, s.machine)
                                          : edge_cost(*g, e, xx, cr, s.machine);
              REQUIRE(a == b);
            }
          }
        }
      }
    }
    ++tested;
  }
  CHECK(tested == 40);
  CHECK(merged > 20);  // the classes do merge configurations
}

}  // namespace

TEST_CASE("classes: configurations of one class cost the same on every edge to the covered part") {
  check_classes_price_alike(false);
}

TEST_CASE("classes: under the practice model too, which prices an edge both ways") {
  check_classes_price_alike(true);
}

TEST_CASE(
    "classes: the Transformer's search shrinks by a quarter at 64 devices, by half with groups") {
  // Flat, 64 devices (core/docs/performance.md, "Equivalence classes" and
  // "Groups"): the largest tables keep every configuration (their vertices
  // show their whole iteration space on their edges), the others shrink; the
  // groups then fold the configurations that a step's innermost terms read
  // alike.
  Result<Graph> g = build_model("transformer");
  REQUIRE(g.ok());
  Result<SearchStats> est = estimate(*g, Cluster{.devices = 64});
  REQUIRE(est.ok());
  CHECK(est->raw_pairs == 1538342680.0);
  CHECK(est->pairs == 731705713.0);
  Search s = prepare(*g, Cluster{.devices = 64}, Order::kGenSeq);
  const TableClasses no_groups = table_classes(*g, s.configs, s.ord, EndView::of(s.machine), false);
  CHECK(estimate_dp(s.ord, s.configs, &no_groups).pairs == 1150109524.0);
  CHECK(est->largest_table == 592704.0);  // 84^3, as on raw configurations
  CHECK(est->table_entries == 5528265.0);
  CHECK(est->peak_bytes < est->raw_peak_bytes);
}

TEST_CASE("classes: the memory guard counts the tables that are allocated, on classes") {
  // A limit between the two predictions: the raw tables would be refused,
  // the class tables run.
  Result<Graph> g = build_model("transformer");
  REQUIRE(g.ok());
  const Cluster cluster{.devices = 32};
  Result<SearchStats> est = estimate(*g, cluster);
  REQUIRE(est.ok());
  REQUIRE(est->peak_bytes < est->raw_peak_bytes);
  PlanOptions options;
  options.max_memory = static_cast<uint64_t>((est->peak_bytes + est->raw_peak_bytes) / 2);
  Result<Plan> p = plan(*g, cluster, options);
  REQUIRE_MESSAGE(p.ok(), why(p));
  CHECK(p->search.peak_bytes == est->peak_bytes);
  options.max_memory = static_cast<uint64_t>(est->peak_bytes * 0.9);
  options.search = SearchMode::kExact;  // auto would run the bounded search
  Result<Plan> refused = plan(*g, cluster, options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().where == "max_memory");
}

TEST_CASE("classes: a producer planned after its consumers is told apart by its placement") {
  // x -> FC a -> (Softmax b, Norm c, Softmax d): GenerateSeq takes the
  // consumers first, so a is a dependent vertex seen as the producer of its
  // edges. On nodes, configurations of a with one output split but other
  // splits of its reduction dimension place their blocks on other devices of
  // node 0, and the hierarchical edge prices them apart (core/docs/cluster.md):
  // the classes must keep them apart where a flat machine merges them.
  LayerSpec a = layer("a", "FC", {"x"});
  a.units = 32;
  LayerSpec b = layer("b", "Softmax", {"a"});
  LayerSpec c = layer("c", "Norm", {"a"});
  LayerSpec d = layer("d", "Softmax", {"a"});
  d.axis = 0;
  Result<Graph> g = build_graph(spec_with({{"x", {16, 64}}}, {a, b, c, d}, 1));
  REQUIRE_MESSAGE(g.ok(), why(g));
  for (int64_t per_node : {2, 4}) {
    CAPTURE(per_node);
    Cluster flat{.devices = 8, .bandwidth_gbps = 1.0};
    Cluster nodes = flat;
    nodes.gpus_per_node = per_node;
    nodes.intra_node_gbps = 100.0;
    Search sf = prepare(*g, flat, Order::kGenSeq);
    Search sn = prepare(*g, nodes, Order::kGenSeq);
    REQUIRE(sn.ord.steps[0].vertex != 0);  // a consumer first
    REQUIRE(sn.ord.steps[0].dep == std::vector<int>{0});
    CHECK(sf.classes.steps[0].count[0] < sn.classes.steps[0].count[0]);
    CHECK(sn.classes.steps[0].count[0] < static_cast<int>(sn.configs[0].size()));
    check_same(*g, sf);
    check_same(*g, sn);
    Result<Plan> p = plan(*g, nodes);
    Result<Plan> best = exhaustive_search(*g, nodes);
    REQUIRE(p.ok());
    REQUIRE(best.ok());
    CHECK(close(p->cost, best->cost));
  }
}

// ---- Against the reference engine ----------------------------------------------------------

TEST_CASE("classes: the bench grid plans as on raw configurations, flat") {
  for (const std::string& name : paper_models()) {
    Result<Graph> g = build_model(name);
    REQUIRE(g.ok());
    for (int64_t devices : {4, 8, 16, 32, 64}) {
      CAPTURE(name);
      CAPTURE(devices);
      check_same(*g, prepare(*g, Cluster{.devices = devices}, Order::kGenSeq));
    }
  }
}

TEST_CASE("classes: the bench grid plans as on raw configurations, on nodes of 8") {
  // pase bench --gpus-per-node 8 --intra-bandwidth 160 --bandwidth 16: the
  // producer's placement, not only its split, tells configurations apart.
  for (const std::string& name : paper_models()) {
    Result<Graph> g = build_model(name);
    REQUIRE(g.ok());
    for (int64_t devices : {4, 8, 16, 32, 64}) {
      CAPTURE(name);
      CAPTURE(devices);
      Cluster cluster{.devices = devices, .bandwidth_gbps = 16};
      cluster.gpus_per_node = 8;
      cluster.intra_node_gbps = 160;
      check_same(*g, prepare(*g, cluster, Order::kGenSeq));
    }
  }
}

TEST_CASE("classes: repeated layers share pair matrices and sorted rows, to the same plan") {
  // The Transformer's twelve layers and GPT-2's twelve blocks, flat and on
  // nodes, with the threshold search on every step: the later layers find
  // their matrices and rows made by the first, and the plan is the
  // reference's.
  for (std::string name : {"transformer", "gpt2"}) {
    Result<Graph> g = build_model(name, 4, 16);
    REQUIRE(g.ok());
    for (int64_t per_node : {0, 4}) {
      CAPTURE(name);
      CAPTURE(per_node);
      Cluster cluster{.devices = 8};
      if (per_node) {
        cluster.gpus_per_node = per_node;
        cluster.intra_node_gbps = 160;
      }
      const Search s = prepare(*g, cluster, Order::kGenSeq);
      const SearchStats est = estimate_dp(s.ord, s.configs, &s.classes);
      Result<DpResult> ref =
          run_dp_reference(*g, s.configs, s.ord, s.machine, estimate_dp(s.ord, s.configs), {});
      REQUIRE(ref.ok());
      DpTuning everywhere;
      everywhere.threshold_min_configs = 1;
      everywhere.threshold_min_rows = 1;
      everywhere.row_keep = 2;
      everywhere.repeat = false;  // every layer run
      for (int threads : {1, 2}) {
        PlanOptions options;
        options.threads = threads;
        Result<DpResult> fast =
            run_dp(*g, s.configs, s.ord, s.classes, s.machine, est, options, everywhere);
        REQUIRE(fast.ok());
        CHECK(fast->shared_matrices > 100);
        CHECK(fast->shared_rows > 50);
        CHECK(fast->cost == ref->cost);
        CHECK(fast->choice == ref->choice);
      }
    }
  }
}

TEST_CASE("classes: two row terms of integers are summed once, to the same plan") {
  // The paper's flat machine prices in whole FLOP-equivalents: the
  // Transformer's dense rows of two terms are fused, and the plan is the
  // reference's with and without.
  Result<Graph> g = build_model("transformer");
  REQUIRE(g.ok());
  const Search s = prepare(*g, Cluster{.devices = 16}, Order::kGenSeq);
  const SearchStats est = estimate_dp(s.ord, s.configs, &s.classes);
  Result<DpResult> ref =
      run_dp_reference(*g, s.configs, s.ord, s.machine, estimate_dp(s.ord, s.configs), {});
  REQUIRE(ref.ok());
  DpTuning dense;
  dense.dense_per_walked = 1e9;  // summed wherever the probes allow
  for (bool fuse : {true, false}) {
    CAPTURE(fuse);
    dense.fuse_integer_rows = fuse;
    Result<DpResult> fast = run_dp(*g, s.configs, s.ord, s.classes, s.machine, est, {}, dense);
    REQUIRE(fast.ok());
    CHECK((fast->fused_steps > 0) == fuse);
    CHECK(fast->cost == ref->cost);
    CHECK(fast->choice == ref->choice);
  }
}

TEST_CASE("classes: the other orders plan as on raw configurations") {
  // Minimum table size on every network at 16 devices; breadth-first where
  // its tables fit (AlexNet and RNNLM are chains, ResNet-101 at 4 devices).
  for (const std::string& name : paper_models()) {
    Result<Graph> g = build_model(name);
    REQUIRE(g.ok());
    CAPTURE(name);
    check_same(*g, prepare(*g, Cluster{.devices = 16}, Order::kMinTable));
  }
  for (const char* name : {"alexnet", "rnnlm", "resnet101"}) {
    Result<Graph> g = build_model(name);
    REQUIRE(g.ok());
    CAPTURE(name);
    check_same(*g, prepare(*g, Cluster{.devices = 4}, Order::kBfs));
  }
}

TEST_CASE("classes: random graphs plan as on raw configurations, flat and on nodes") {
  RandomGraphs gen(8080);
  std::mt19937 rng(11);
  int tested = 0, reduced = 0, hierarchical = 0;
  for (int attempt = 0; tested < 150 && attempt < 3000; ++attempt) {
    Result<Graph> g = build_graph(gen.next(3 + static_cast<int>(rng() % 10)));
    REQUIRE_MESSAGE(g.ok(), why(g));
    const int64_t devices_choice[] = {2, 3, 4, 6, 8, 12, 16};
    Cluster cluster{.devices = devices_choice[rng() % 7]};
    if (rng() % 2) cluster.bandwidth_gbps = 1.0;
    if (rng() % 2) {
      const int64_t per_node_choice[] = {1, 2, 3, 4};
      cluster.gpus_per_node = per_node_choice[rng() % 4];
      cluster.intra_node_gbps = rng() % 2 ? 10.0 : 100.0;
      ++hierarchical;
    }
    CAPTURE(attempt);
    CAPTURE(cluster.devices);
    CAPTURE(cluster.gpus_per_node);
    for (Order order : kOrders) {
      CAPTURE(order_name(order));
      Search s = prepare(*g, cluster, order);
      if (estimate_dp(s.ord, s.configs).peak_bytes > 64e6) continue;  // breadth-first, too big
      SearchStats est = check_same(*g, s);
      if (est.pairs < est.raw_pairs) ++reduced;
    }
    ++tested;
  }
  CHECK(tested == 150);
  CHECK(hierarchical > 50);
  CHECK(reduced > 100);
}

TEST_CASE("classes: searches under a memory weight plan as on raw configurations") {
  // A plan under Cluster::memory_gib runs the program on cost_weight * cost +
  // memory_weight * memory (weighted_plan.cpp): the least memory (0, 1) and weights
  // at the scale where both parts matter.
  RandomGraphs gen(1357);
  std::mt19937 rng(21);
  int tested = 0;
  for (int attempt = 0; tested < 60 && attempt < 1000; ++attempt) {
    Result<Graph> g = build_graph(gen.next(3 + static_cast<int>(rng() % 8)));
    REQUIRE_MESSAGE(g.ok(), why(g));
    Cluster cluster{.devices = rng() % 2 ? 4 : 8, .bandwidth_gbps = 1.0};
    if (rng() % 2) {
      cluster.gpus_per_node = 2;
      cluster.intra_node_gbps = 10.0;
    }
    Result<Plan> free = plan(*g, cluster);
    REQUIRE(free.ok());
    const double scale = free->cost / std::max(1.0, free->memory.total());
    CAPTURE(attempt);
    Search s = prepare(*g, cluster, Order::kGenSeq);
    check_same(*g, s, 0, 1);
    for (double lambda : {0.01, 0.3, 1.0, 5.0, 100.0}) check_same(*g, s, 1, lambda * scale);
    ++tested;
  }
  CHECK(tested == 60);
}

TEST_CASE("classes: capped plans of the paper's networks plan as on raw configurations") {
  // The weights a capped plan of each network at 16 devices searches with,
  // on nodes of 8 (memory per device depends on the splits, not the nodes).
  for (const std::string& name : paper_models()) {
    Result<Graph> g = build_model(name);
    REQUIRE(g.ok());
    Cluster cluster{.devices = 16, .bandwidth_gbps = 16};
    cluster.gpus_per_node = 8;
    cluster.intra_node_gbps = 160;
    Result<Plan> free = plan(*g, cluster);
    REQUIRE(free.ok());
    const double scale = free->cost / free->memory.total();
    CAPTURE(name);
    Search s = prepare(*g, cluster, Order::kGenSeq);
    check_same(*g, s, 0, 1);
    for (double lambda : {0.1, 1.0, 10.0}) check_same(*g, s, 1, lambda * scale);
  }
}

TEST_CASE("classes: plan() is exhaustive search on small graphs of several classes") {
  // End to end through plan(): small graphs whose tables merge
  // configurations still find the exhaustive optimum.
  RandomGraphs gen(9090);
  std::mt19937 rng(8);
  int tested = 0;
  for (int attempt = 0; tested < 40 && attempt < 2000; ++attempt) {
    Result<Graph> g = build_graph(gen.next(3 + static_cast<int>(rng() % 6)));
    REQUIRE_MESSAGE(g.ok(), why(g));
    Cluster cluster{.devices = rng() % 2 ? 4 : 6, .bandwidth_gbps = 1.0};
    if (combinations(*g, cluster.devices) > 200000) continue;
    Result<SearchStats> est = estimate(*g, cluster);
    REQUIRE(est.ok());
    if (!(est->pairs < est->raw_pairs)) continue;
    CAPTURE(attempt);
    Result<Plan> p = plan(*g, cluster);
    Result<Plan> best = exhaustive_search(*g, cluster);
    REQUIRE(p.ok());
    REQUIRE(best.ok());
    CHECK(close(p->cost, best->cost));
    ++tested;
  }
  CHECK(tested == 40);
}
