// Reference results of the PaSE authors' prototype (tests/data/golden, described
// in tests/data/golden/README.md): optimal AlexNet and RNNLM plans at
// 8 devices, their per-layer and per-edge costs, data parallelism, and fifteen
// random strategies over all five networks. Costs must agree to 1e-9
// relative; a tie may change a configuration, never the cost, so differing
// configurations are only reported.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_tables.hpp"
#include "pase/graph.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;
using nlohmann::json;

namespace {

doctest::Approx rel(double x) { return doctest::Approx(x).epsilon(1e-9); }

// The cluster of a prototype golden file (procs, flops_tflops, bandwidth_gbps).
Cluster prototype_cluster(const json& golden) {
  return Cluster{.devices = golden["procs"].get<int64_t>(),
                 .tflops = golden["flops_tflops"].get<double>(),
                 .bandwidth_gbps = golden["bandwidth_gbps"].get<double>()};
}

Graph golden_graph(const json& golden) {
  Result<Graph> g = build_model(golden["model"].get<std::string>(), golden["batch"].get<int64_t>());
  REQUIRE_MESSAGE(g.ok(), why(g));
  return std::move(g).value();
}

Strategy golden_strategy(const json& golden) {
  Strategy s;
  for (const json& v : golden["vertices"]) s.push_back(v["optimal_config"].get<Config>());
  return s;
}

std::string show(const Config& c) {
  std::string out = "(";
  for (size_t i = 0; i < c.size(); ++i) out += (i ? ", " : "") + std::to_string(c[i]);
  return out + ")";
}

// Vertex types and iteration spaces of the golden file.
void check_vertices(const Graph& g, const json& golden) {
  REQUIRE(g.vertices.size() == golden["vertices"].size());
  for (const json& v : golden["vertices"]) {
    int id = v["id"].get<int>();
    CAPTURE(id);
    CHECK(g.vertices[id].op == v["type"].get<std::string>());
    CHECK(g.vertices[id].dom == v["dom"].get<Shape>());
  }
}

// The golden optimal strategy evaluated here: each layer cost, each edge cost
// (summed per vertex pair, as the golden file lists pairs) and the total.
void check_golden_strategy(const Graph& g, const json& golden) {
  Result<Plan> p = evaluate(g, prototype_cluster(golden), golden_strategy(golden));
  REQUIRE_MESSAGE(p.ok(), why(p));
  for (const json& v : golden["vertices"]) {
    int id = v["id"].get<int>();
    CAPTURE(id);
    CHECK(p->layers[id].total == rel(v["layer_cost"].get<double>()));
  }
  std::map<std::pair<int, int>, double> pair_cost;
  for (size_t i = 0; i < g.edges.size(); ++i)
    pair_cost[{g.edges[i].src, g.edges[i].dst}] += p->edge_costs[i];
  REQUIRE(pair_cost.size() == golden["edges"].size());
  for (const json& e : golden["edges"]) {
    std::pair<int, int> key{e["src"].get<int>(), e["dst"].get<int>()};
    CAPTURE(key.first);
    CAPTURE(key.second);
    REQUIRE(pair_cost.count(key) == 1);
    CHECK(pair_cost[key] == rel(e["cost"].get<double>()));
  }
  CHECK(p->cost == rel(golden["optimal_cost"].get<double>()));
}

// plan() at the golden cluster: the optimal cost; configurations that differ
// from the golden ones are reported as information (ties).
void check_optimal_plan(const Graph& g, const json& golden) {
  for (Order order : {Order::kGenSeq, Order::kBfs, Order::kMinTable}) {
    CAPTURE(order_name(order));
    PlanOptions options;
    options.order = order;
    Result<Plan> p = plan(g, prototype_cluster(golden), options);
    REQUIRE_MESSAGE(p.ok(), why(p));
    CHECK(p->cost == rel(golden["optimal_cost"].get<double>()));
    if (order != Order::kGenSeq) continue;
    for (const json& v : golden["vertices"]) {
      int id = v["id"].get<int>();
      Config want = v["optimal_config"].get<Config>();
      if (p->strategy[id] != want)
        MESSAGE("tie: vertex " << id << " (" << g.vertices[id].name << ") planned "
                               << show(p->strategy[id]) << ", golden " << show(want));
    }
  }
}

}  // namespace

TEST_CASE("golden: the five networks have the vertex and edge counts of core/docs/models.md") {
  struct Count {
    const char* name;
    size_t vertices, edges, pairs;
  };
  const Count counts[] = {{"alexnet", 14, 13, 13},
                          {"resnet101", 245, 277, 277},
                          {"inception3", 219, 253, 253},
                          {"rnnlm", 4, 3, 3},
                          {"transformer", 204, 280, 256}};
  // The paper's five come first; the language models (llm_test.cpp) follow.
  REQUIRE(list_models().size() >= 5);
  for (size_t i = 0; i < 5; ++i) {
    CHECK_FALSE(list_models()[i].llm);
    const Count& c = counts[i];
    CAPTURE(c.name);
    CHECK(list_models()[i].name == c.name);
    Result<Graph> g = build_model(c.name);
    REQUIRE(g.ok());
    CHECK(g->vertices.size() == c.vertices);
    CHECK(g->edges.size() == c.edges);
    CHECK(group_edges(*g).size() == c.pairs);
    CHECK(g->cutoff ==
          (std::string(c.name) == "rnnlm" || std::string(c.name) == "transformer" ? 1 : 4));
  }
}

TEST_CASE("golden: unknown models and bad batches are errors") {
  Result<Graph> g = build_model("lenet");
  REQUIRE_FALSE(g.ok());
  CHECK(g.error().message.find("alexnet") != std::string::npos);
  CHECK_FALSE(build_model("alexnet", -1).ok());
}

TEST_CASE("golden: default batches are 128 for the CNNs and 64 for the sequence models") {
  for (const ModelInfo& m : list_models()) {
    if (m.llm) continue;
    CAPTURE(m.name);
    CHECK(m.default_seq == (m.name == "rnnlm" || m.name == "transformer" ? 256 : 0));
    CHECK(m.default_batch == (m.name == "rnnlm" || m.name == "transformer" ? 64 : 128));
    Result<Graph> a = build_model(m.name);
    Result<Graph> b = build_model(m.name, m.default_batch);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(a->vertices.size() == b->vertices.size());
    for (size_t i = 0; i < a->vertices.size(); ++i) CHECK(a->vertices[i].dom == b->vertices[i].dom);
  }
}

TEST_CASE("golden: AlexNet vertices have the golden types and iteration spaces") {
  json golden = read_golden("alexnet_p8.json");
  check_vertices(golden_graph(golden), golden);
}

TEST_CASE("golden: AlexNet golden strategy costs layer by layer and edge by edge") {
  json golden = read_golden("alexnet_p8.json");
  check_golden_strategy(golden_graph(golden), golden);
}

TEST_CASE("golden: AlexNet at 8 devices reaches the optimal cost") {
  json golden = read_golden("alexnet_p8.json");
  check_optimal_plan(golden_graph(golden), golden);
}

TEST_CASE("golden: AlexNet data parallelism splits every batch dimension 8 ways") {
  json golden = read_golden("alexnet_p8.json");
  Graph g = golden_graph(golden);
  Strategy s;
  for (const Vertex& v : g.vertices) {
    REQUIRE(v.dims[0] == "b");
    Config c(v.dom.size(), 1);
    c[0] = 8;
    s.push_back(c);
  }
  Result<Plan> p = evaluate(g, prototype_cluster(golden), s);
  REQUIRE(p.ok());
  CHECK(p->cost == rel(golden["data_parallel_cost"].get<double>()));
}

TEST_CASE("golden: RNNLM vertices have the golden types and iteration spaces") {
  json golden = read_golden("rnnlm_p8.json");
  check_vertices(golden_graph(golden), golden);
}

TEST_CASE("golden: RNNLM golden strategy costs layer by layer and edge by edge") {
  json golden = read_golden("rnnlm_p8.json");
  check_golden_strategy(golden_graph(golden), golden);
}

TEST_CASE("golden: RNNLM at 8 devices reaches the optimal cost") {
  json golden = read_golden("rnnlm_p8.json");
  check_optimal_plan(golden_graph(golden), golden);
}

TEST_CASE("golden: fifteen random strategies over the five networks") {
  json golden = read_golden("random_strategies_p8.json");
  REQUIRE(golden["cases"].size() == 15);
  std::map<std::string, int> per_model;
  for (const json& c : golden["cases"]) {
    std::string model = c["model"].get<std::string>();
    CAPTURE(model);
    CAPTURE(per_model[model]);
    ++per_model[model];
    Result<Graph> g = build_model(model);
    REQUIRE(g.ok());
    Strategy s = c["strategy"].get<Strategy>();
    Result<Plan> p = evaluate(*g, Cluster{.devices = c["procs"].get<int64_t>()}, s);
    REQUIRE_MESSAGE(p.ok(), why(p));
    CHECK(p->cost == rel(c["cost"].get<double>()));
    // The parts add up to the total.
    CHECK(p->compute + p->comm + p->redistribution == rel(p->cost));
  }
  CHECK(per_model.size() == 5);
}

TEST_CASE("golden: the plan is no worse than any golden random strategy") {
  json golden = read_golden("random_strategies_p8.json");
  std::map<std::string, double> best;
  for (const json& c : golden["cases"]) {
    std::string model = c["model"].get<std::string>();
    if (!best.count(model)) {
      Result<Graph> g = build_model(model);
      REQUIRE(g.ok());
      Result<Plan> p = plan(*g, Cluster{.devices = 8});
      REQUIRE_MESSAGE(p.ok(), why(p));
      best[model] = p->cost;
    }
    CAPTURE(model);
    CHECK(best[model] <= c["cost"].get<double>());
  }
}
