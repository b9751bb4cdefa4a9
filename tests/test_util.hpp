// Helpers shared by the doctest files: building layers by hand, comparing
// costs, printing a failed Result in assertion messages, and reading the
// golden files.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cost/configurations.hpp"
#include "model/cost_model.hpp"
#include "pase/graph.hpp"
#include "pase/import.hpp"
#include "pase/llm.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "pase/presets.hpp"
#include "pase/result.hpp"

namespace pase::testing {

// `devices` H100s of the h100 preset under the practice cost model.
// A small Llama (hidden 256, 4 heads, MLP 512, vocabulary 1024) of
// `layers` decoder blocks at `batch` x `seq`, built.
inline Graph small_llama(int layers, int64_t batch, int64_t seq) {
  ImportOptions options;
  options.batch = batch;
  options.seq = seq;
  Result<GraphSpec> spec =
      import_llm_config(R"({"model_type": "llama", "hidden_size": 256, "num_hidden_layers": )" +
                            std::to_string(layers) + R"(,
          "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 512,
          "vocab_size": 1024, "max_position_embeddings": 1024})",
                        options);
  REQUIRE(spec.ok());
  Result<Graph> g = build_graph(std::move(*spec));
  REQUIRE(g.ok());
  return std::move(*g);
}

// Nodes of `per_node` devices at 100 GB/s inside and 10 GB/s between,
// with an optional cap: the pipeline tests' machine.
inline Cluster nodes(int64_t devices, int64_t per_node, double memory_gib = 0) {
  Cluster c{.devices = devices, .bandwidth_gbps = 10};
  c.gpus_per_node = per_node;
  c.intra_node_gbps = 100;
  c.memory_gib = memory_gib;
  return c;
}

inline Cluster practice_h100(int64_t devices) {
  Cluster c = apply_preset(Cluster{.devices = devices}, *find_preset("h100"));
  c.cost_model = CostModel::kPractice;
  return c;
}

// A layer of `op` named `name` whose operands are the named tensors `inputs`.
inline LayerSpec layer(std::string name, std::string op, std::vector<std::string> inputs) {
  LayerSpec l;
  l.name = std::move(name);
  l.op = std::move(op);
  for (std::string& in : inputs) l.inputs.push_back(Operand{std::move(in), {}});
  return l;
}

// Whether `part` occurs in `text`.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A weight operand of `shape` (no edge).
inline Operand weight(Shape shape) { return Operand{"", std::move(shape)}; }

// A GraphSpec named "test" with these graph inputs and layers.
inline GraphSpec spec_with(std::vector<std::pair<std::string, Shape>> inputs,
                           std::vector<LayerSpec> layers, int64_t cutoff = 4) {
  GraphSpec s;
  s.name = "test";
  s.cutoff = cutoff;
  s.inputs = std::move(inputs);
  s.layers = std::move(layers);
  return s;
}

// The error text of a failed result, for assertion messages (which doctest
// may build even when the assertion passes, so it must not touch error()).
template <class T>
std::string why(const Result<T>& r) {
  return r.ok() ? std::string() : r.error().to_string();
}

// Equal to 1e-9 relative: the agreement the cost model asks of implementations.
inline bool close(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

// Equal to `rel` relative to the larger magnitude, or to `rel` absolute
// below 1: the agreement of two computations of the same sum in another
// order (1e-12 by default).
inline bool close_to(double a, double b, double rel = 1e-12) {
  return std::fabs(a - b) <= rel * std::max({1.0, std::fabs(a), std::fabs(b)});
}

// The number of strategies of `g` on `devices`: the product of each vertex's
// configuration count (a double: it overflows every integer type).
inline double combinations(const Graph& g, int64_t devices, const EnumOptions& options = {}) {
  Result<std::vector<ConfigSet>> sets = enumerate_all(g, devices, options);
  REQUIRE(sets.ok());
  double n = 1;
  for (const ConfigSet& s : *sets) n *= static_cast<double>(s.size());
  return n;
}

// The built-in network `name` (models.md) at `batch` (0: its own).
inline Graph model(const char* name, int64_t batch = 0) {
  Result<Graph> g = build_model(name, batch);
  REQUIRE_MESSAGE(g.ok(), why(g));
  return std::move(g).value();
}

// The ONNX fixtures (tests/data/onnx/, tests/onnx/README.md).
inline const std::string kOnnxDir = std::string(PASE_TEST_DATA_DIR) + "/onnx/";

// A graph document with `layers` (a JSON array text) over input x: [8, 16].
inline std::string graph_doc(const std::string& layers, const std::string& extra = "") {
  return R"({"format": "pase-graph/1", "inputs": {"x": [8, 16]}, "layers": )" + layers + extra +
         "}";
}

// The error of loading the graph document `text`; fails the test when it loads.
inline Error load_error(const std::string& text) {
  Result<Graph> g = load_graph(text);
  REQUIRE_FALSE(g.ok());
  return g.error();
}

// The error of building `spec`; fails the test when it builds.
inline Error build_error(const GraphSpec& spec) {
  Result<Graph> g = build_graph(spec);
  REQUIRE_FALSE(g.ok());
  return g.error();
}

// The graph of `spec`; fails the test when it does not build.
inline Graph build_ok(const GraphSpec& spec) {
  Result<Graph> g = build_graph(spec);
  if (!g) FAIL(g.error().to_string());
  return std::move(g).value();
}

// A cluster with r = (1 * 1000) / (8 / 8) = 1000 FLOPs per word, so that
// allreduce(w, P) = 1000 * (w / P) * 2 * (P - 1) in hand-worked costs.
inline constexpr Cluster kR1000{.devices = 16, .tflops = 1.0, .bandwidth_gbps = 8.0};

// A graph of one layer on graph inputs; its vertex `index` (the layer's first
// vertex unless the layer is a Reshape).
inline Graph one_layer(std::vector<std::pair<std::string, Shape>> inputs, LayerSpec l) {
  GraphSpec s;
  s.cutoff = 1;
  s.inputs = std::move(inputs);
  s.layers.push_back(std::move(l));
  Result<Graph> g = build_graph(std::move(s));
  if (!g) FAIL(g.error().to_string());
  return std::move(g).value();
}

// The cost of vertex `vertex` at `c` through the private formula, checked
// against the public evaluate() of a strategy that sets every other vertex to 1s.
inline LayerCost cost_at(const Graph& g, const Config& c, const Cluster& cluster = kR1000,
                         int vertex = 0) {
  ops::Machine m = ops::make_machine(cluster);
  LayerCost lc = ops::layer_cost(g, g.vertices[vertex], c.data(), m);
  Strategy s;
  for (const Vertex& v : g.vertices) s.push_back(Config(v.dom.size(), 1));
  s[vertex] = c;
  Result<Plan> p = evaluate(g, cluster, s);
  REQUIRE_MESSAGE(p.ok(), why(p));
  CHECK(p->layers[vertex].total == doctest::Approx(lc.total).epsilon(1e-12));
  return lc;
}

inline doctest::Approx near(double x) { return doctest::Approx(x).epsilon(1e-12); }

// The whole text of the file at `path`; fails the test when it cannot be read.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The golden file tests/data/golden/`file`, parsed.
inline nlohmann::json read_golden(const std::string& file) {
  return nlohmann::json::parse(read_text(std::string(PASE_TEST_DATA_DIR) + "/golden/" + file));
}

// The cluster of a case of fc3_cluster_pipeline.json: its "cluster" object,
// with the training settings of its "training" object (a field left out keeps
// the default of Training).
inline Cluster golden_cluster(const nlohmann::json& golden_case) {
  Cluster c;
  const nlohmann::json& j = golden_case["cluster"];
  c.devices = j["devices"];
  c.tflops = j["tflops"];
  c.bandwidth_gbps = j["bandwidth_gbps"];
  c.gpus_per_node = j.value("gpus_per_node", int64_t{0});
  c.intra_node_gbps = j.value("intra_node_gbps", 0.0);
  const nlohmann::json& t = golden_case["training"];
  c.training.zero = t.value("zero", c.training.zero);
  c.training.param_bytes = t.value("param_bytes", c.training.param_bytes);
  c.training.grad_bytes = t.value("grad_bytes", c.training.grad_bytes);
  c.training.optimizer_bytes = t.value("optimizer_bytes", c.training.optimizer_bytes);
  c.training.activation_bytes = t.value("activation_bytes", c.training.activation_bytes);
  return c;
}

// Every order plan() offers; each must give the same optimum.
inline constexpr Order kOrders[] = {Order::kGenSeq, Order::kBfs, Order::kMinTable};

}  // namespace pase::testing
