// Clusters of nodes (core/docs/cluster.md, sections 1-4): the hierarchical
// costs against the golden values, the limits the model names (one node, one
// device per node, equal bandwidths), hand-computed collectives and edges,
// and the cluster's fields in JSON.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cost/configurations.hpp"
#include "cost/cost_tables.hpp"
#include "model/cost_model.hpp"
#include "pase/json_api.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using json = nlohmann::json;
using namespace pase;
using pase::testing::close_to;
using pase::testing::golden_cluster;
using pase::testing::read_golden;

namespace {

Strategy strategy_of(const json& j) {
  Strategy s;
  for (const json& c : j) s.push_back(c.get<Config>());
  return s;
}

// A random configuration of every vertex among its enumerated ones.
Strategy random_strategy(const Graph& g, const Cluster& cluster, std::mt19937& rng,
                         bool pow2 = false) {
  EnumOptions options;
  options.pow2_only = pow2;
  Strategy s;
  for (const Vertex& v : g.vertices) {
    Result<std::vector<Config>> configs = enumerate_configs(g, v.id, cluster, options);
    REQUIRE(configs.ok());
    s.push_back((*configs)[rng() % configs->size()]);
  }
  return s;
}

// x (8, 8) -> fc1 (units 8) -> fc2 (units 8): the edge fc1 -> fc2 carries
// (8, 8); FC configurations are (x, units, K).
Result<Graph> two_fcs() {
  GraphSpec spec = testing::spec_with({{"x", {8, 8}}}, {});
  LayerSpec fc1 = testing::layer("fc1", "FC", {"x"});
  fc1.units = 8;
  LayerSpec fc2 = testing::layer("fc2", "FC", {"fc1"});
  fc2.units = 8;
  spec.layers = {fc1, fc2};
  return build_graph(spec);
}

double cost(const Graph& g, const Cluster& c, const Strategy& s) {
  Result<Plan> p = evaluate(g, c, s);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  return p->cost;
}

}  // namespace

TEST_CASE("cluster: the golden costs and memory of the FC3 network on nodes") {
  const json golden = read_golden("fc3_cluster_pipeline.json");
  Result<Graph> g = load_graph(golden["graph"].dump());
  REQUIRE(g.ok());
  REQUIRE(golden["cluster_memory"].size() == 3);
  for (const json& c : golden["cluster_memory"]) {
    CAPTURE(c["cluster"].dump());
    CAPTURE(c["training"].dump());
    Result<Plan> p = evaluate(*g, golden_cluster(c), strategy_of(c["strategy"]));
    REQUIRE_MESSAGE(p.ok(), testing::why(p));
    CHECK(close_to(p->cost, c["cost"].get<double>(), 1e-9));
    CHECK(close_to(p->memory.total(), c["memory_per_device_bytes"].get<double>(), 1e-9));
  }
}

// The two limits of core/docs/cluster.md ("Limits"), exactly: nodes of one
// device are the flat model at the bandwidth between nodes, and one node at
// least as large as the cluster is the flat model at the bandwidth inside it.
// Every built-in network at a reduced batch (so that the language models
// plan in a moment), random strategies evaluated, every edge by itself, and
// the searched plans (cost and strategy).
struct Limit {
  const char* what;
  int64_t per_node;  // 0: the cluster's size
  double flat_gbps;
};

void check_limit(const Limit& limit) {
  CAPTURE(limit.what);
  std::mt19937 rng(11);
  for (const ModelInfo& info : list_models()) {
    CAPTURE(info.name);
    Result<Graph> g = info.llm ? build_model(info.name, 4, 32) : build_model(info.name, 16);
    REQUIRE_MESSAGE(g.ok(), testing::why(g));
    for (int64_t p : {4, 8}) {
      CAPTURE(p);
      Cluster nodes{.devices = p, .bandwidth_gbps = 3.0};
      nodes.gpus_per_node = limit.per_node > 0 ? limit.per_node : p * (1 + p / 8);
      nodes.intra_node_gbps = 40.0;
      const Cluster flat{.devices = p, .bandwidth_gbps = limit.flat_gbps};
      const ops::Machine m_nodes = ops::make_machine(nodes), m_flat = ops::make_machine(flat);
      for (int i = 0; i < 8; ++i) {
        const Strategy s = random_strategy(*g, flat, rng);
        for (const Vertex& v : g->vertices)
          CHECK(ops::layer_cost(*g, v, s[v.id].data(), m_nodes).total ==
                ops::layer_cost(*g, v, s[v.id].data(), m_flat).total);
        for (const Edge& e : g->edges)
          CHECK(edge_cost(*g, e, s[e.src].data(), s[e.dst].data(), m_nodes) ==
                edge_cost(*g, e, s[e.src].data(), s[e.dst].data(), m_flat));
        CHECK(cost(*g, nodes, s) == cost(*g, flat, s));
      }
      Result<Plan> a = plan(*g, nodes), b = plan(*g, flat);
      REQUIRE_MESSAGE(a.ok(), testing::why(a));
      REQUIRE_MESSAGE(b.ok(), testing::why(b));
      CHECK(a->cost == b->cost);
      CHECK(a->strategy == b->strategy);
    }
  }
}

TEST_CASE("cluster: one node is the flat model at the intra-node bandwidth, exactly") {
  check_limit({"one node", 0, 40.0});
}

TEST_CASE("cluster: one device per node is the flat model at the inter-node bandwidth, exactly") {
  // Including the edges whose consumer splits a tensor more than its
  // producer (need = own, x > 0): their words go to the consumer's other
  // devices, on other nodes (core/docs/cluster.md, "Re-distribution").
  check_limit({"one device per node", 1, 3.0});
}

TEST_CASE("cluster: an edge whose consumer splits more, on and off one node") {
  // x (8, 8) -> fc1 (units 8) -> fc2 (units 8); FC configurations are
  // (x, units, K). The producer unsplit, the consumer split 4 ways along its
  // rows: device 0 holds its whole box (need = own = 16), the flat model
  // moves x = 16 words (have = 0), to devices 1..3.
  Result<Graph> g = two_fcs();
  REQUIRE(g.ok());
  const Edge& e = g->edges[0];
  const int64_t src[] = {1, 1, 1}, dst[] = {4, 1, 1};
  const ops::Machine flat =
      ops::make_machine(Cluster{.devices = 8, .tflops = 1, .bandwidth_gbps = 8});
  CHECK(edge_cost(*g, e, src, dst, flat) == flat.words(2 * 16.0));
  for (int64_t per_node : {1, 2, 4, 8}) {
    CAPTURE(per_node);
    Cluster c{.devices = 8, .tflops = 1, .bandwidth_gbps = 8};
    c.gpus_per_node = per_node;
    c.intra_node_gbps = 80;
    const ops::Machine m = ops::make_machine(c);
    // Devices 0..3 on one node when G >= 4: inside (r1 = 100); else between
    // nodes (r2 = 1000).
    const double rate = per_node >= 4 ? 100.0 : 1000.0;
    CHECK(edge_cost(*g, e, src, dst, m) == 2 * 16.0 * rate);
    // A pipeline stage that starts at device 2 with nodes of 4: its first
    // four devices, 2..5, span two nodes.
    if (per_node == 4) {
      Cluster staged = c;
      staged.first_device = 2;
      CHECK(edge_cost(*g, e, src, dst, ops::make_machine(staged)) == 2 * 16.0 * 1000.0);
    }
  }
}

TEST_CASE("cluster: equal bandwidths are the flat model when groups spread evenly") {
  // Splits that are powers of two on nodes of 2 or 4 spread every group
  // evenly over the nodes it touches.
  std::mt19937 rng(13);
  for (const char* name : {"alexnet", "transformer", "rnnlm"}) {
    CAPTURE(name);
    Result<Graph> g = build_model(name, 16);
    REQUIRE(g.ok());
    for (int64_t per_node : {2, 4}) {
      Cluster nodes{.devices = 8, .bandwidth_gbps = 7.0};
      nodes.gpus_per_node = per_node;
      nodes.intra_node_gbps = 7.0;
      const Cluster flat{.devices = 8, .bandwidth_gbps = 7.0};
      for (int i = 0; i < 20; ++i) {
        Strategy s = random_strategy(*g, flat, rng, true);
        CHECK_MESSAGE(close_to(cost(*g, nodes, s), cost(*g, flat, s)),
                      cost(*g, nodes, s) << " vs " << cost(*g, flat, s));
      }
    }
  }
}

TEST_CASE("cluster: a hierarchical all-reduce by hand") {
  ops::Machine m = ops::make_machine(Cluster{
      .devices = 8, .tflops = 1, .bandwidth_gbps = 8, .gpus_per_node = 2, .intra_node_gbps = 80});
  CHECK(m.r == 1000);
  CHECK(m.r1 == 100);
  // A vertex (a, b, c) at (2, 2, 2): device = 4a + 2b + c, nodes of 2.
  const int64_t c[] = {2, 2, 2};
  // Over the last dimension: devices {0, 1}, one node.
  CHECK(m.allreduce_over(12, 2, c, 3, {2}) == 100.0 * (12.0 / 2) * 2 * 1);
  // Over the first: {0, 4}, two nodes of one: all between nodes.
  CHECK(m.allreduce_over(12, 2, c, 3, {0}) == 1000.0 * (12.0 / 2) * 2 * 1);
  // Over all three: 8 devices on 4 nodes of 2: reduce-scatter inside (L = 2),
  // all-reduce of a half between the 4 nodes, all-gather inside.
  CHECK(close_to(m.allreduce_over(12, 8, c, 3, {0, 1, 2}),
                 100.0 * (12.0 / 2) * 2 * 1 + 1000.0 * (12.0 / 8) * 2 * 3));
  // Over the first two: {0, 2, 4, 6}, four nodes of one.
  CHECK(close_to(m.allreduce_over(12, 4, c, 3, {0, 1}), 1000.0 * (12.0 / 4) * 2 * 3));
  // words: one node or not.
  CHECK(m.words_over(5, c, 3, {2}) == 500);
  CHECK(m.words_over(5, c, 3, {1}) == 5000);
  // Without nodes: the flat formulas.
  ops::Machine flat = ops::make_machine(Cluster{.devices = 8, .tflops = 1, .bandwidth_gbps = 8});
  CHECK(flat.allreduce_over(12, 8, c, 3, {0, 1, 2}) == flat.allreduce(12, 8));
  CHECK(flat.words_over(5, c, 3, {0}) == flat.words(5));
}

TEST_CASE(
    "cluster: a group's nodes and most members on one node, small and large, as counted by hand") {
  // Machine::group_span() walks small groups on the stack and remembers
  // large ones: both against every member listed here.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const size_t n = 1 + rng() % 5;
    std::vector<int64_t> c(n);
    for (int64_t& k : c) k = int64_t{1} << (rng() % 4);
    int64_t devices = 1;
    for (int64_t k : c) devices *= k;
    std::vector<int> group;
    for (size_t k = 0; k < n; ++k)
      if (rng() % 2) group.push_back(static_cast<int>(k));
    const int64_t per_node = int64_t{1} << (rng() % 4);
    ops::Machine m = ops::make_machine(Cluster{.devices = std::max<int64_t>(devices, per_node),
                                               .tflops = 1,
                                               .bandwidth_gbps = 8,
                                               .gpus_per_node = per_node,
                                               .intra_node_gbps = 80});
    m.first_device =
        per_node * static_cast<int64_t>(rng() % 3) + static_cast<int64_t>(rng()) % per_node;
    // Every device of the group of device first_device: the positions of
    // `group` take every value, the others 0.
    std::map<int64_t, int64_t> on_node;
    std::vector<int64_t> index(n, 0);
    for (;;) {
      int64_t device = 0;
      for (size_t k = 0; k < n; ++k) device = device * c[k] + index[k];
      ++on_node[(m.first_device + device) / per_node];
      size_t j = 0;
      for (; j < group.size(); ++j) {
        const auto g = static_cast<size_t>(group[j]);
        if (++index[g] < c[g]) break;
        index[g] = 0;
      }
      if (j == group.size()) break;
    }
    int64_t most = 0;
    for (const auto& [node, members] : on_node) most = std::max(most, members);
    int64_t got_nodes = 0, got_most = 0;
    m.group_span(c.data(), n, group, got_nodes, got_most);
    CHECK(got_nodes == static_cast<int64_t>(on_node.size()));
    CHECK(got_most == most);
  }
}

TEST_CASE("cluster: a re-distribution edge by hand") {
  // x (8, 8) -> fc1 (units 8) -> fc2 (units 8). The edge fc1 -> fc2 carries
  // (8, 8); FC configurations are (x, units, K).
  Result<Graph> g = two_fcs();
  REQUIRE(g.ok());
  Cluster cluster{
      .devices = 4, .tflops = 1, .bandwidth_gbps = 8, .gpus_per_node = 2, .intra_node_gbps = 80};
  const ops::Machine m = ops::make_machine(cluster);
  const Edge& e = g->edges[0];
  // Producer split 4 ways along rows (devices 0..3 hold row blocks 0..3;
  // node 0 holds blocks 0 and 1); the consumer wants the whole tensor on
  // every device (rows unsplit, K unsplit): need 64, own 16, near 16, far 32.
  const int64_t src[] = {4, 1, 1}, dst[] = {1, 4, 1};
  const double x = 64 - 16;  // flat words: need - have
  const double phi = 32.0 / 48.0;
  CHECK(close_to(edge_cost(*g, e, src, dst, m), 2 * x * (100 * (1 - phi) + 1000 * phi)));
  // Split along the units on the producer (devices 0..3 hold column blocks):
  // the same amounts, so the same cost.
  const int64_t src_cols[] = {1, 4, 1};
  CHECK(close_to(edge_cost(*g, e, src_cols, dst, m), 2 * x * (100 * (1 - phi) + 1000 * phi)));
  // The producer split 2 ways along rows, both devices on node 0, and the
  // consumer 2 ways along its K (the columns of its input): need 32 (all
  // rows, half the columns), own 16, near 16 (device 1's rows): all inside.
  const int64_t src2[] = {2, 1, 1}, dst2[] = {1, 1, 2};
  CHECK(close_to(edge_cost(*g, e, src2, dst2, m), 2 * (32.0 - 16) * 100));
  // Without nodes: the flat edge.
  const ops::Machine flat =
      ops::make_machine(Cluster{.devices = 4, .tflops = 1, .bandwidth_gbps = 8});
  CHECK(edge_cost(*g, e, src, dst, flat) == flat.words(2 * x));
}

TEST_CASE("cluster: the nodes' fields in JSON, with errors that name them") {
  json request = {
      {"model", "alexnet"},
      {"cluster",
       {{"devices", 16}, {"bandwidth_gbps", 5}, {"gpus_per_node", 8}, {"intra_node_gbps", 50}}},
      {"cost_model", "paper"}};
  json result = json::parse(plan_json(request.dump()));
  REQUIRE_MESSAGE(!result.contains("error"), result.dump());
  CHECK(result["cluster"]["gpus_per_node"] == 8);
  CHECK(result["cluster"]["intra_node_gbps"] == 50.0);
  // A flat cluster's result is as before: no node fields.
  json flat = json::parse(plan_json(R"({"model": "alexnet", "cluster": {"devices": 16}})"));
  CHECK_FALSE(flat["cluster"].contains("gpus_per_node"));
  for (const auto& entry : std::vector<std::pair<std::string, std::string>>{
           {R"({"gpus_per_node": 8})", "cluster.intra_node_gbps"},
           {R"({"intra_node_gbps": 8})", "cluster.gpus_per_node"},
           {R"({"gpus_per_node": 0, "intra_node_gbps": 8})", "cluster.gpus_per_node"},
           {R"({"gpus_per_node": 2, "intra_node_gbps": -1})", "cluster.intra_node_gbps"},
           {R"({"memory_gib": 0})", "cluster.memory_gib"},
       }) {
    // Named, not a structured binding: CAPTURE reads them in a lambda.
    const auto& cluster = entry.first;
    const auto& where = entry.second;
    CAPTURE(cluster);
    json bad = json::parse(plan_json(R"({"model": "alexnet", "cluster": )" + cluster + "}"));
    CHECK(bad["error"]["where"] == where);
  }
  Cluster c{.devices = 8};
  c.gpus_per_node = 4;
  CHECK(check_cluster(c)->where == "cluster.intra_node_gbps");
}

// ---- Memory per device (core/docs/cluster.md) ------------------------------------------------

namespace {

// Device 0's memory of vertex `id` of `g` at `config` for each ZeRO stage,
// against a weight of `e` elements per device held by `replicas` devices and
// `saved` activation elements (bytes: 2 + 2 + 12 per parameter, 2 per
// activation).
void check_memory(const Graph& g, int id, const Config& config, double e, double replicas,
                  double saved) {
  for (int64_t zero = 0; zero <= 3; ++zero) {
    CAPTURE(zero);
    Cluster cluster{.devices = 16};
    cluster.training.zero = zero;
    const MemoryBytes b =
        ops::vertex_memory(g, g.vertices[id], config.data(), ops::make_machine(cluster));
    CHECK(b.params == doctest::Approx(2 * e / (zero >= 3 ? replicas : 1)));
    CHECK(b.grads == doctest::Approx(2 * e / (zero >= 2 ? replicas : 1)));
    CHECK(b.optimizer == doctest::Approx(12 * e / (zero >= 1 ? replicas : 1)));
    CHECK(b.activations == doctest::Approx(2 * saved));
  }
}

}  // namespace

TEST_CASE("cluster: memory by hand for each op family and ZeRO stage") {
  GraphSpec spec = testing::spec_with({{"x", {4, 6}}, {"img", {4, 3, 8, 8}}, {"tok", {4, 5}}}, {});
  LayerSpec fc = testing::layer("fc", "FC", {"x"});
  fc.units = 8;
  LayerSpec conv = testing::layer("conv", "Conv", {"img"});
  conv.filter = {16, 3, 3, 3};
  LayerSpec embed = testing::layer("embed", "Embedding", {"tok"});
  embed.vocab = 10;
  embed.dim = 6;
  LayerSpec lstm = testing::layer("lstm", "LSTM", {"embed"});
  lstm.units = 6;
  lstm.layers = 2;
  LayerSpec einsum = testing::layer("proj", "Einsum", {"lstm"});
  einsum.inputs.push_back(testing::weight({6, 4}));
  einsum.equation = "bse,ef->bsf";
  LayerSpec scores = testing::layer("scores", "Einsum", {"proj", "proj"});
  scores.equation = "bsf,btf->bst";
  LayerSpec transpose = testing::layer("t", "Transpose", {"scores"});
  transpose.perm = {0, 2, 1};
  LayerSpec norm = testing::layer("norm", "Norm", {"t"});
  norm.axis = -1;
  spec.layers = {fc, conv, embed, lstm, einsum, scores, transpose, norm};
  Result<Graph> g = build_graph(spec);
  REQUIRE_MESSAGE(g.ok(), testing::why(g));

  // FC (b, n, k) at (2, 2, 1): W (8, 6) split 2 ways, on 4 devices: 2
  // replicas; output (4, 8) split (2, 2).
  check_memory(*g, 0, {2, 2, 1}, 48.0 / 2, 2, 32.0 / 4);
  // Conv (b, c, h, w, r, s, n) at (2, 1, 1, 1, 1, 1, 4): filter 16*3*3*3
  // split 4 ways, 2 replicas; output (4, 16, 6, 6) split (2, 4).
  check_memory(*g, 1, {2, 1, 1, 1, 1, 1, 4}, 432.0 / 4, 2, 4.0 * 16 * 36 / 8);
  // Embedding (b, s, d, v) at (1, 1, 2, 2): the table 10 x 6 split 4 ways,
  // 1 replica; output (4, 5, 6) split along d.
  check_memory(*g, 2, {1, 1, 2, 2}, 60.0 / 4, 1, 120.0 / 2);
  // LSTM (l, s, b, n, k) at (2, 1, 2, 1, 1): 2 * 12 * 24 weights split along
  // l, 2 replicas (the batch); output (4, 5, 6) split along b.
  check_memory(*g, 3, {2, 1, 2, 1, 1}, 576.0 / 2, 2, 120.0 / 2);
  // Einsum with a weight (b, s, f, e) at (4, 1, 1, 2): W (6, 4) split along e,
  // 4 replicas; output (4, 5, 4) split along b.
  check_memory(*g, 4, {4, 1, 1, 2}, 24.0 / 2, 4, 80.0 / 4);
  // Einsum of two activations (b, s, t, f): no weight; output (4, 5, 5).
  check_memory(*g, 5, {2, 1, 1, 1}, 0, 1, 100.0 / 2);
  // A Transpose is a view: nothing.
  check_memory(*g, 6, {2, 1, 1}, 0, 1, 0);
  // Norm keeps its output.
  check_memory(*g, 7, {1, 1, 1}, 0, 1, 100.0);
}

TEST_CASE("cluster: ZeRO stage 3 adds half the weight gradient's all-reduce") {
  GraphSpec spec = testing::spec_with({{"x", {8, 6}}}, {});
  LayerSpec fc = testing::layer("fc", "FC", {"x"});
  fc.units = 8;
  spec.layers = {fc};
  Result<Graph> g = build_graph(spec);
  REQUIRE(g.ok());
  Cluster cluster{.devices = 4, .tflops = 1, .bandwidth_gbps = 8};
  const Config c{4, 1, 1};  // data parallel: the weight gradient all-reduced 4 ways
  const ops::Machine m = ops::make_machine(cluster);
  const double grad = m.allreduce(8.0 * 6, 4);
  const double zero0 = ops::layer_cost(*g, g->vertices[0], c.data(), m).total;
  for (int64_t zero : {1, 2}) {
    cluster.training.zero = zero;
    CHECK(ops::layer_cost(*g, g->vertices[0], c.data(), ops::make_machine(cluster)).total == zero0);
  }
  cluster.training.zero = 3;
  CHECK(ops::layer_cost(*g, g->vertices[0], c.data(), ops::make_machine(cluster)).total ==
        doctest::Approx(zero0 + 0.5 * grad));
}

TEST_CASE("cluster: tightening the memory cap never lowers the cost on the built-in networks") {
  for (const char* name : {"alexnet", "rnnlm", "transformer", "resnet101"}) {
    CAPTURE(name);
    Result<Graph> g = build_model(name);
    REQUIRE(g.ok());
    Cluster cluster{.devices = 8};
    Result<Plan> free = plan(*g, cluster);
    REQUIRE(free.ok());
    double previous = free->cost;
    int capped = 0;
    for (double share : {1.0, 0.9, 0.75, 0.6, 0.45, 0.3}) {
      CAPTURE(share);
      cluster.memory_gib = free->memory.total() * share / 0x1p30;
      Result<Plan> p = plan(*g, cluster);
      if (!p) {
        // Once nothing fits, a tighter cap fits nothing either.
        CHECK(p.error().where == "cluster.memory_gib");
        break;
      }
      CHECK(p->memory.total() <= p->capacity_bytes);
      CHECK(p->lower_bound <= p->cost);
      CHECK(p->cost >= previous * (1 - 1e-12));
      previous = p->cost;
      ++capped;
    }
    CHECK(capped >= 2);
  }
}

TEST_CASE("cluster: plan results carry memory, training and the cap's bound") {
  json r = json::parse(plan_json(R"({"model": "alexnet", "cluster": {"devices": 8}})"));
  REQUIRE_MESSAGE(!r.contains("error"), r.dump());
  const json& m = r["memory"];
  CHECK(m["per_device_bytes"].get<double>() ==
        doctest::Approx(m["params"].get<double>() + m["grads"].get<double>() +
                        m["optimizer"].get<double>() + m["activations"].get<double>()));
  CHECK(m["capacity_bytes"].is_null());
  CHECK(m["fits"] == true);
  CHECK(m["lower_bound"].is_null());
  double summed = 0;
  for (const json& v : r["vertices"]) summed += v["memory_bytes"].get<double>();
  CHECK(summed == doctest::Approx(m["per_device_bytes"].get<double>()));
  CHECK(r["training"] == json{{"param_bytes", 2},
                              {"grad_bytes", 2},
                              {"optimizer_bytes", 12},
                              {"activation_bytes", 2},
                              {"zero", 0}});

  // ZeRO 3 shards the weights' three kinds over their replicas: less memory.
  json z = json::parse(
      plan_json(R"({"model": "alexnet", "cluster": {"devices": 8}, "training": {"zero": 3}})"));
  REQUIRE_MESSAGE(!z.contains("error"), z.dump());
  CHECK(z["memory"]["per_device_bytes"].get<double>() < m["per_device_bytes"].get<double>());

  // Under a cap: the capacity, the bound, whether it is proven optimal.
  const double half = m["per_device_bytes"].get<double>() * 0.85 / 0x1p30;  // binds
  json capped = json::parse(plan_json(
      json{{"model", "alexnet"}, {"cluster", {{"devices", 8}, {"memory_gib", half}}}}.dump()));
  REQUIRE_MESSAGE(!capped.contains("error"), capped.dump());
  CHECK(capped["memory"]["capacity_bytes"].get<double>() == doctest::Approx(half * 0x1p30));
  CHECK(capped["memory"]["per_device_bytes"].get<double>() <= half * 0x1p30);
  CHECK(capped["memory"]["lower_bound"].get<double>() <= capped["cost"].get<double>());
  CHECK(capped["memory"]["optimal"].is_boolean());
  CHECK(capped["cost"].get<double>() >= r["cost"].get<double>());

  // Nothing fits: the least memory reachable.
  json none = json::parse(
      plan_json(R"({"model": "alexnet", "cluster": {"devices": 8, "memory_gib": 0.001}})"));
  CHECK(none["error"]["where"] == "cluster.memory_gib");
  CHECK(testing::contains(none["error"]["message"], "the least memory any strategy reaches is"));
}

TEST_CASE("cluster: training settings and presets in requests, with errors that name them") {
  for (const auto& entry : std::vector<std::pair<std::string, std::string>>{
           {R"({"zero": 4})", "training.zero"},
           {R"({"param_bytes": -1})", "training.param_bytes"},
           {R"({"grad_bytes": 1.5})", "training.grad_bytes"},
           {R"({"optimiser_bytes": 4})", "training.optimiser_bytes"},
           {R"([])", "training"},
       }) {
    // Named, not a structured binding: CAPTURE reads them in a lambda.
    const auto& training = entry.first;
    const auto& where = entry.second;
    CAPTURE(training);
    json bad = json::parse(plan_json(R"({"model": "alexnet", "training": )" + training + "}"));
    CHECK(bad["error"]["where"] == where);
  }
  // A preset fills the cluster; explicit fields win.
  json h100 = json::parse(plan_json(
      R"({"model": "alexnet", "preset": "h100", "cluster": {"devices": 16}, "cost_model": "paper"})"));
  REQUIRE_MESSAGE(!h100.contains("error"), h100.dump());
  CHECK(h100["cluster"] == json{{"devices", 16},
                                {"tflops", 989.0},
                                {"bandwidth_gbps", 50.0},
                                {"gpus_per_node", 8},
                                {"intra_node_gbps", 450.0},
                                {"memory_gib", 80.0}});
  // Without a cost model, a preset (or nodes) plans with the practice model.
  json practiced = json::parse(
      plan_json(R"({"model": "alexnet", "preset": "h100", "cluster": {"devices": 16}})"));
  REQUIRE_MESSAGE(!practiced.contains("error"), practiced.dump());
  CHECK(practiced["cluster"]["cost_model"] == "practice");
  CHECK(practiced["cluster"]["memory_gbps"] == 3350.0);
  json nodes = json::parse(plan_json(
      R"({"model": "alexnet", "cluster": {"devices": 16, "gpus_per_node": 8, "intra_node_gbps": 50}})"));
  CHECK(nodes["error"]["where"] == "cluster.memory_gbps");
  CHECK(testing::contains(nodes["error"]["message"], "the default with nodes"));
  json edited = json::parse(plan_json(
      R"({"model": "alexnet", "preset": "a100-80gb", "cluster": {"devices": 8, "memory_gib": 40, "gpus_per_node": 4}})"));
  REQUIRE_MESSAGE(!edited.contains("error"), edited.dump());
  CHECK(edited["cluster"]["memory_gib"] == 40.0);
  CHECK(edited["cluster"]["gpus_per_node"] == 4);
  CHECK(edited["cluster"]["intra_node_gbps"] == 300.0);
  json unknown = json::parse(plan_json(R"({"model": "alexnet", "preset": "h800"})"));
  CHECK(unknown["error"]["where"] == "preset");
  CHECK(testing::contains(unknown["error"]["message"], "v100, a100-40gb, a100-80gb, h100"));
  // The list the page and the module show.
  json presets = json::parse(presets_to_json());
  REQUIRE(presets.size() == 9);
  CHECK(presets[3]["id"] == "h100");
  CHECK(presets[3]["tflops"] == 989.0);
  CHECK(presets[8]["id"] == "rtx4090");
}
