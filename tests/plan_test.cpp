// The public planning API (plan.hpp): cluster checks, evaluate() errors that
// name the strategy entry, the memory guard, cancellation, progress, the
// exhaustive search's refusal, and the consistency of a Plan's parts.
#include "pase/plan.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "cost/configurations.hpp"
#include "pase/compare.hpp"
#include "pase/graph.hpp"
#include "pase/models.hpp"
#include "plan/testing.hpp"
#include "search/dynamic_program.hpp"
#include "search/ordering.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;

namespace {

// Every vertex split 1 ways in every dimension.
Strategy unsplit(const Graph& g) {
  Strategy s;
  for (const Vertex& v : g.vertices) s.push_back(Config(v.dom.size(), 1));
  return s;
}

Error evaluate_error(const Graph& g, const Strategy& s, const Cluster& c = Cluster{}) {
  Result<Plan> p = evaluate(g, c, s);
  REQUIRE_FALSE(p.ok());
  return p.error();
}

// Bytes as "<value with one decimal> <binary unit>", the way the limit message
// is specified ("needs 7.2 GiB of tables").
std::string binary_size(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

}  // namespace

// ---- Cluster ------------------------------------------------------------------------------

TEST_CASE("plan: check_cluster names the bad field") {
  CHECK_FALSE(check_cluster(Cluster{}).has_value());
  CHECK_FALSE(check_cluster(Cluster{.devices = 1}).has_value());
  CHECK_FALSE(check_cluster(Cluster{.devices = 7}).has_value());  // any integer, not only 2^k
  CHECK_FALSE(check_cluster(Cluster{.devices = kMaxDevices}).has_value());
  CHECK(check_cluster(Cluster{.devices = 0})->where == "cluster.devices");
  CHECK(check_cluster(Cluster{.devices = -3})->where == "cluster.devices");
  CHECK(check_cluster(Cluster{.devices = kMaxDevices + 1})->where == "cluster.devices");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(check_cluster(Cluster{.tflops = 0})->where == "cluster.tflops");
  CHECK(check_cluster(Cluster{.tflops = -1})->where == "cluster.tflops");
  CHECK(check_cluster(Cluster{.tflops = nan})->where == "cluster.tflops");
  CHECK(check_cluster(Cluster{.tflops = inf})->where == "cluster.tflops");
  CHECK(check_cluster(Cluster{.bandwidth_gbps = 0})->where == "cluster.bandwidth_gbps");
  CHECK(check_cluster(Cluster{.bandwidth_gbps = nan})->where == "cluster.bandwidth_gbps");
  CHECK(check_cluster(Cluster{.bandwidth_gbps = inf})->where == "cluster.bandwidth_gbps");
}

TEST_CASE("plan: every entry point rejects a bad cluster") {
  Graph g = model("alexnet");
  Cluster bad{.devices = 0};
  CHECK(plan(g, bad).error().where == "cluster.devices");
  CHECK(evaluate(g, bad, unsplit(g)).error().where == "cluster.devices");
  CHECK(exhaustive_search(g, bad).error().where == "cluster.devices");
  CHECK(enumerate_configs(g, 0, bad).error().where == "cluster.devices");
}

// ---- evaluate() errors ---------------------------------------------------------------------

TEST_CASE("plan: evaluate rejects a strategy of the wrong length") {
  Graph g = model("alexnet");
  Strategy s = unsplit(g);
  s.pop_back();
  Error e = evaluate_error(g, s);
  CHECK(e.where == "strategy");
  CHECK(contains(e.message, "13"));
  CHECK(contains(e.message, "14"));
  CHECK(evaluate_error(g, {}).where == "strategy");
}

TEST_CASE("plan: evaluate rejects a configuration with the wrong number of splits") {
  Graph g = model("alexnet");
  Strategy s = unsplit(g);
  s[3].push_back(1);
  Error e = evaluate_error(g, s);
  CHECK(e.where == "strategy[3]");
  CHECK(contains(e.message, "Pool"));
}

TEST_CASE("plan: evaluate rejects a split that does not divide its dimension") {
  Graph g = model("alexnet");
  Strategy s = unsplit(g);
  s[10][1] = 3;  // FC units 4096
  Error e = evaluate_error(g, s);
  CHECK(e.where == "strategy[10][1]");
  CHECK(contains(e.message, "4096"));
  s = unsplit(g);
  s[10][0] = 0;
  CHECK(evaluate_error(g, s).where == "strategy[10][0]");
  s[10][0] = -2;
  CHECK(evaluate_error(g, s).where == "strategy[10][0]");
}

TEST_CASE("plan: evaluate rejects a split of a pinned dimension") {
  Graph g = model("alexnet");
  Strategy s = unsplit(g);
  s[0][2] = 5;  // Conv h_o = 55: divides, but h is pinned
  Error e = evaluate_error(g, s);
  CHECK(e.where == "strategy[0][2]");
  CHECK(contains(e.message, "pinned"));
}

TEST_CASE("plan: evaluate rejects a configuration using too many devices") {
  Graph g = model("alexnet");
  Strategy s = unsplit(g);
  s[10] = {4, 4, 1};  // 16 > 8
  Error e = evaluate_error(g, s);
  CHECK(e.where == "strategy[10]");
  CHECK(contains(e.message, "8"));
  // The same strategy fits 16 devices.
  CHECK(evaluate(g, Cluster{.devices = 16}, s).ok());
}

TEST_CASE("plan: evaluate accepts configurations the enumeration would not yield") {
  Graph g = model("alexnet");
  Strategy s = unsplit(g);
  s[8] = {1, 2, 1, 1};  // Ravel: not contiguous
  s[7] = {1, 1, 2, 1};  // Pool h = 6: 6 / 2 = 3 is below the cutoff 4
  for (int v : {7, 8}) {
    std::vector<Config> listed = *enumerate_configs(g, v, Cluster{});
    CHECK(std::find(listed.begin(), listed.end(), s[v]) == listed.end());
  }
  Result<Plan> p = evaluate(g, Cluster{}, s);
  REQUIRE_MESSAGE(p.ok(), why(p));
  CHECK(p->strategy == s);
}

// ---- A plan's parts ---------------------------------------------------------------------------

TEST_CASE("plan: a plan's parts add up to its cost") {
  Graph g = model("inception3");
  Cluster cluster{.devices = 8, .tflops = 4.0, .bandwidth_gbps = 32.0};
  Result<Plan> p = plan(g, cluster);
  REQUIRE_MESSAGE(p.ok(), why(p));
  REQUIRE(p->strategy.size() == g.vertices.size());
  REQUIRE(p->layers.size() == g.vertices.size());
  REQUIRE(p->edge_costs.size() == g.edges.size());
  double layers = 0, edges = 0, compute = 0, comm = 0;
  for (const LayerCost& l : p->layers) {
    layers += l.total;
    compute += l.compute;
    comm += l.comm;
    CHECK(l.compute + l.comm == doctest::Approx(l.total).epsilon(1e-12));
  }
  for (double e : p->edge_costs) edges += e;
  CHECK(p->cost == doctest::Approx(layers + edges).epsilon(1e-12));
  CHECK(p->compute == doctest::Approx(compute).epsilon(1e-12));
  CHECK(p->comm == doctest::Approx(comm).epsilon(1e-12));
  CHECK(p->redistribution == doctest::Approx(edges).epsilon(1e-12));
  CHECK(p->step_time_s == doctest::Approx(p->cost / 4e12).epsilon(1e-12));
  // The plan re-evaluates to itself.
  Result<Plan> again = evaluate(g, cluster, p->strategy);
  REQUIRE(again.ok());
  CHECK(again->cost == p->cost);
  // Search statistics.
  CHECK(p->search.order == Order::kGenSeq);
  CHECK(p->search.max_dependent_set >= 1);
  CHECK(p->search.table_entries >= g.vertices.size());
  CHECK(p->search.largest_table <= p->search.table_entries);
  CHECK(p->search.pairs >= p->search.table_entries);
  CHECK(p->search.peak_bytes > 0);
  CHECK(p->search.time_s >= 0);
  uint64_t configurations = 0;
  for (const Vertex& v : g.vertices) configurations += enumerate_configs(g, v.id, cluster)->size();
  CHECK(p->search.configurations == configurations);
}

TEST_CASE("plan: one device leaves every dimension unsplit") {
  Graph g = model("resnet101");
  Result<Plan> p = plan(g, Cluster{.devices = 1});
  REQUIRE(p.ok());
  CHECK(p->strategy == unsplit(g));
  CHECK(p->redistribution == 0);
  CHECK(p->comm == 0);
}

// Determinism across runs and builds: stored_plans_test.cpp compares plan()
// with plans stored in tests/data/stored_plans.json.

TEST_CASE("plan: order names") {
  CHECK(std::string(order_name(Order::kGenSeq)) == "genseq");
  CHECK(std::string(order_name(Order::kBfs)) == "bfs");
  CHECK(std::string(order_name(Order::kMinTable)) == "mintable");
}

// ---- Guards -------------------------------------------------------------------------------------

TEST_CASE("plan: the memory guard refuses and names the size it needs") {
  Graph g = model("resnet101");
  Cluster cluster{.devices = 16};
  PlanOptions options;
  options.order = Order::kBfs;          // dependent sets of 7 on ResNet-101
  options.search = SearchMode::kExact;  // auto would run the bounded search
  // The predicted need, computed from the private estimate of the tables on
  // equivalence classes (at 8 devices they fit in 3.3 GiB since the classes;
  // on raw configurations they needed 28 GiB).
  Result<std::vector<ConfigSet>> sets = enumerate_all(g, 16, {});
  REQUIRE(sets.ok());
  std::vector<size_t> counts;
  for (const ConfigSet& s : *sets) counts.push_back(s.size());
  const Ordering ord = make_ordering(g, Order::kBfs, counts);
  const TableClasses classes = table_classes(g, *sets, ord, EndView{});
  SearchStats est = estimate_dp(ord, *sets, &classes);
  REQUIRE(est.peak_bytes > static_cast<double>(options.max_memory));

  Result<Plan> p = plan(g, cluster, options);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().where == "max_memory");
  CHECK_MESSAGE(contains(p.error().message, binary_size(est.peak_bytes)), p.error().message);
  CHECK(contains(p.error().message, "4.0 GiB"));
  CHECK(contains(p.error().message, "bfs"));

  // A tiny limit refuses even AlexNet, and 0 means no limit.
  Graph alexnet = model("alexnet");
  PlanOptions tiny;
  tiny.max_memory = 100;
  Result<Plan> refused = plan(alexnet, cluster, tiny);
  REQUIRE_FALSE(refused.ok());
  CHECK(contains(refused.error().message, "100 B"));
  tiny.max_memory = 0;
  CHECK(plan(alexnet, cluster, tiny).ok());
}

TEST_CASE("plan: the memory guard states astronomically large needs with a unit") {
  // BFS on the Transformer at 32 devices needs about 1e81 table entries.
  Graph g = model("transformer");
  PlanOptions options;
  options.order = Order::kBfs;
  options.search = SearchMode::kExact;
  Result<Plan> p = plan(g, Cluster{.devices = 32}, options);
  REQUIRE_FALSE(p.ok());
  const std::string& m = p.error().message;
  size_t needs = m.find("needs ");
  size_t of = m.find(" of tables");
  REQUIRE(needs != std::string::npos);
  REQUIRE(of != std::string::npos);
  std::string size = m.substr(needs + 6, of - needs - 6);
  CHECK_MESSAGE(size.size() < 40, "the needed size reads '" << size << "'");
  CHECK_MESSAGE((size.find("B") != std::string::npos), "the needed size reads '" << size << "'");
}

TEST_CASE("plan: a set cancel flag returns cancelled") {
  Graph g = model("resnet101");  // more than 2^20 pairs at 16 devices
  std::atomic<bool> cancel{true};
  PlanOptions options;
  options.cancel = &cancel;
  Result<Plan> p = plan(g, Cluster{.devices = 16}, options);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().message == "cancelled");
  // A clear flag changes nothing.
  cancel = false;
  Result<Plan> q = plan(g, Cluster{.devices = 16}, options);
  REQUIRE_MESSAGE(q.ok(), why(q));
  CHECK(q->cost == plan(g, Cluster{.devices = 16})->cost);
}

TEST_CASE("plan: cancelling from the progress callback stops the search") {
  Graph g = model("transformer");
  std::atomic<bool> cancel{false};
  int calls = 0;
  PlanOptions options;
  options.cancel = &cancel;
  options.on_progress = [&](const Progress& pr) {
    ++calls;
    if (pr.fraction > 0.2) cancel = true;
  };
  Result<Plan> p = plan(g, Cluster{.devices = 16}, options);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().message == "cancelled");
  CHECK(calls > 0);
}

TEST_CASE("plan: progress rises to fraction 1") {
  for (const char* name : {"alexnet", "transformer"}) {
    CAPTURE(name);
    Graph g = model(name);
    std::vector<Progress> seen;
    PlanOptions options;
    options.on_progress = [&](const Progress& pr) { seen.push_back(pr); };
    Result<Plan> p = plan(g, Cluster{.devices = 16}, options);
    REQUIRE(p.ok());
    REQUIRE_FALSE(seen.empty());
    CHECK(seen.size() <= 250);  // "at most about a hundred times"
    for (size_t i = 1; i < seen.size(); ++i) {
      CHECK(seen[i].fraction >= seen[i - 1].fraction);
      CHECK(seen[i].vertices_done >= seen[i - 1].vertices_done);
    }
    CHECK(seen.back().fraction == 1.0);
    CHECK(seen.back().vertices_done == static_cast<int>(g.vertices.size()));
    CHECK(seen.back().vertices_total == static_cast<int>(g.vertices.size()));
    for (const Progress& pr : seen) {
      CHECK(pr.fraction >= 0);
      CHECK(pr.fraction <= 1);
    }
  }
}

TEST_CASE("plan: exhaustive search refuses too many combinations") {
  Graph g = model("alexnet");
  Result<Plan> p = exhaustive_search(g, Cluster{.devices = 8});
  REQUIRE_FALSE(p.ok());
  CHECK(contains(p.error().message, "combinations"));
  Graph small = model("rnnlm");  // 36 * 30 * 36 * 21 = 816480 combinations
  CHECK_FALSE(exhaustive_search(small, Cluster{.devices = 8}, 816479).ok());
  Result<Plan> e = exhaustive_search(small, Cluster{.devices = 8}, 816480);
  REQUIRE_MESSAGE(e.ok(), why(e));
  CHECK(e->cost == doctest::Approx(plan(small, Cluster{.devices = 8})->cost).epsilon(1e-9));
}

TEST_CASE("plan: a Graph not made by build_graph() is refused, not priced") {
  Result<Graph> built = build_model("alexnet");
  REQUIRE(built.ok());
  Graph by_hand = *built;
  by_hand.model = nullptr;
  Result<Plan> p = plan(by_hand, Cluster{});
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().where == "graph");
  CHECK(evaluate(by_hand, Cluster{}, {}).error().where == "graph");
  CHECK(batch_dimensions(by_hand) == std::vector<int>(by_hand.vertices.size(), 0));
}
