// Configuration enumeration (core/docs/cost-model.md section 2): cutoff, device bound,
// pinned dimensions, the enumeration options and the contiguity filter of
// Ravel / Unravel; counts of the golden AlexNet and RNNLM files; and every
// vertex of the five networks against an independent enumerator.
#include "cost/configurations.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "model/cost_model.hpp"
#include "pase/graph.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;

namespace {

// A graph whose only layer is an Elementwise over two graph inputs of `shape`.
Graph elementwise(const Shape& shape, int64_t cutoff) {
  GraphSpec s;
  s.cutoff = cutoff;
  s.inputs = {{"x", shape}};
  s.layers = {layer("add", "Elementwise", {"x", "x"})};
  Result<Graph> g = build_graph(std::move(s));
  if (!g) FAIL(g.error().to_string());
  return std::move(g).value();
}

std::vector<Config> configs_of(const Graph& g, int vertex, int64_t devices,
                               const EnumOptions& options = {}) {
  Result<std::vector<Config>> r =
      enumerate_configs(g, vertex, Cluster{.devices = devices}, options);
  if (!r) FAIL(r.error().to_string());
  return std::move(r).value();
}

// The enumeration as core/docs/cost-model.md section 2 words it, written independently:
// candidates per dimension, their cartesian product (first dimension
// outermost, ascending), the device bound, then the contiguity filter.
std::vector<Config> reference_configs(const Vertex& v, const std::vector<bool>& pinned,
                                      int64_t cutoff, int64_t devices) {
  std::vector<std::vector<int64_t>> cand;
  for (size_t i = 0; i < v.dom.size(); ++i) {
    int64_t d = pinned[i] ? 1 : v.dom[i];
    std::vector<int64_t> c;
    for (int64_t e = 1; e <= d && e <= devices; ++e)
      if (d % e == 0 && d / e >= cutoff) c.push_back(e);
    if (c.empty()) c.push_back(1);
    cand.push_back(c);
  }
  std::vector<Config> all = {{}};
  for (const auto& c : cand) {
    std::vector<Config> next;
    for (const Config& prefix : all)
      for (int64_t e : c) {
        Config t = prefix;
        t.push_back(e);
        next.push_back(t);
      }
    all = std::move(next);
  }
  std::vector<Config> out;
  for (const Config& c : all) {
    int64_t prod = 1;
    for (int64_t e : c) prod *= e;
    if (prod > devices) continue;
    if (v.op == "Ravel" || v.op == "Unravel") {
      size_t i = 0;
      while (i < c.size() && c[i] == v.dom[i]) ++i;
      bool contiguous = true;
      for (size_t j = i + 1; j < c.size(); ++j) contiguous = contiguous && c[j] == 1;
      if (!contiguous) continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

TEST_CASE("configurations: a dimension without a divisor above the cutoff splits only 1") {
  Graph g = elementwise({8, 3}, 4);
  // 8: divisors e with 8 / e >= 4 are 1 and 2; 3: none, so only 1.
  CHECK(configs_of(g, 0, 8) == std::vector<Config>{{1, 1}, {2, 1}});
  // A single device: only the unsplit configuration.
  CHECK(configs_of(g, 0, 1) == std::vector<Config>{{1, 1}});
}

TEST_CASE("configurations: cutoff 1 allows every divisor within the device count in order") {
  Graph g = elementwise({8, 3}, 1);
  CHECK(configs_of(g, 0, 8) == std::vector<Config>{{1, 1}, {1, 3}, {2, 1}, {2, 3}, {4, 1}, {8, 1}});
}

TEST_CASE("configurations: the graph's cutoff applies") {
  Graph g = elementwise({8}, 2);
  CHECK(configs_of(g, 0, 8) == std::vector<Config>{{1}, {2}, {4}});
}

TEST_CASE("configurations: a device count that is not a power of two") {
  Graph g = elementwise({12, 12}, 1);
  // Splits from {1, 2, 3, 4, 6}, product <= 6.
  std::vector<Config> want = {{1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 6}, {2, 1},
                              {2, 2}, {2, 3}, {3, 1}, {3, 2}, {4, 1}, {6, 1}};
  CHECK(configs_of(g, 0, 6) == want);
}

TEST_CASE("configurations: pow2_only keeps power-of-two splits") {
  Graph g = elementwise({12, 12}, 1);
  CHECK(configs_of(g, 0, 6, EnumOptions{.pow2_only = true}) ==
        std::vector<Config>{{1, 1}, {1, 2}, {1, 4}, {2, 1}, {2, 2}, {4, 1}});
}

TEST_CASE("configurations: all_devices keeps splits whose product is the device count") {
  Graph g = elementwise({12, 12}, 1);
  CHECK(configs_of(g, 0, 6, EnumOptions{.all_devices = true}) ==
        std::vector<Config>{{1, 6}, {2, 3}, {3, 2}, {6, 1}});
  CHECK(configs_of(g, 0, 4, EnumOptions{.pow2_only = true, .all_devices = true}) ==
        std::vector<Config>{{1, 4}, {2, 2}, {4, 1}});
}

TEST_CASE("configurations: all_devices without a fitting configuration is an error") {
  Graph g = elementwise({5, 5}, 1);
  Result<std::vector<Config>> r =
      enumerate_configs(g, 0, Cluster{.devices = 4}, EnumOptions{.all_devices = true});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("4 devices") != std::string::npos);
  PlanOptions options;
  options.enumeration.all_devices = true;
  Result<Plan> p = plan(g, Cluster{.devices = 4}, options);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().where == "layers[0]");
  CHECK(p.error().message.find("add") != std::string::npos);
}

TEST_CASE("configurations: more than kMaxConfigurations is refused") {
  // Eight dimensions of 128 at 65536 devices: far more than 65535 tuples.
  Graph g = elementwise(Shape(8, 128), 1);
  Result<std::vector<Config>> r = enumerate_configs(g, 0, Cluster{.devices = 65536});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("65535") != std::string::npos);
  Result<Plan> p = plan(g, Cluster{.devices = 65536});
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().where == "layers[0]");
}

TEST_CASE("configurations: a bad vertex index or cluster is an error") {
  Graph g = elementwise({8}, 1);
  CHECK_FALSE(enumerate_configs(g, 1, Cluster{}).ok());
  CHECK_FALSE(enumerate_configs(g, -1, Cluster{}).ok());
  CHECK(enumerate_configs(g, 0, Cluster{.devices = 0}).error().where == "cluster.devices");
}

TEST_CASE("configurations: pinned dimensions always split 1") {
  SUBCASE("Conv h and w") {
    GraphSpec s;
    s.inputs = {{"img", {8, 4, 16, 16}}};
    LayerSpec conv = layer("conv", "Conv", {"img"});
    conv.filter = {8, 4, 1, 1};
    s.layers = {conv};
    s.cutoff = 1;
    Result<Graph> g = build_graph(s);
    REQUIRE(g.ok());
    std::vector<Config> cs = configs_of(*g, 0, 16);
    CHECK(cs.size() == reference_configs(g->vertices[0], model_of(*g, 0).pinned, 1, 16).size());
    for (const Config& c : cs) {
      CHECK(c[2] == 1);
      CHECK(c[3] == 1);
    }
    // The cost still uses the true sizes: an unsplit Conv of M = 8*16*16.
    Result<Plan> p = evaluate(*g, Cluster{.devices = 16}, {{1, 1, 1, 1, 1, 1, 1}});
    REQUIRE(p.ok());
    CHECK(p->cost == doctest::Approx(3.0 * 8 * 16 * 16 * 8 * 4).epsilon(1e-12));
  }
  SUBCASE("LSTM sequence") {
    Result<Graph> g = build_model("rnnlm");
    REQUIRE(g.ok());
    REQUIRE(g->vertices[1].op == "LSTM");
    for (const Config& c : configs_of(*g, 1, 8)) CHECK(c[1] == 1);
  }
}

TEST_CASE("configurations: Ravel and Unravel keep only contiguous configurations") {
  GraphSpec s;
  s.cutoff = 1;
  s.inputs = {{"x", {2, 4}}};
  LayerSpec r = layer("r", "Reshape", {"x"});
  r.shape = {4, 2};
  s.layers = {r};
  Result<Graph> g = build_graph(s);
  REQUIRE(g.ok());
  // Ravel over (2, 4): default (1,1) (1,2) (1,4) (2,1) (2,2) (2,4); (1,2) and
  // (1,4) split a later dimension after a partly split one.
  CHECK(configs_of(*g, 0, 8) == std::vector<Config>{{1, 1}, {2, 1}, {2, 2}, {2, 4}});
  // Unravel over (4, 2): (1,1) (1,2) (2,1) (2,2) (4,1) (4,2) minus (1,2) (2,2).
  CHECK(configs_of(*g, 1, 8) == std::vector<Config>{{1, 1}, {2, 1}, {4, 1}, {4, 2}});
  // Other vertices keep the full product.
  Graph e = elementwise({2, 4}, 1);
  CHECK(configs_of(e, 0, 8).size() == 6);
}

TEST_CASE("configurations: AlexNet counts match the golden file") {
  nlohmann::json golden = read_golden("alexnet_p8.json");
  Result<Graph> g = build_model("alexnet");
  REQUIRE(g.ok());
  REQUIRE(g->vertices.size() == golden["vertices"].size());
  uint64_t total = 0;
  for (const auto& v : golden["vertices"]) {
    int id = v["id"].get<int>();
    CAPTURE(id);
    size_t want = v["configurations"].get<size_t>();
    CHECK(configs_of(*g, id, 8).size() == want);
    total += want;
  }
  Result<Plan> p = plan(*g, Cluster{.devices = 8});
  REQUIRE(p.ok());
  CHECK(p->search.configurations == total);
}

TEST_CASE("configurations: RNNLM counts match the golden file") {
  nlohmann::json golden = read_golden("rnnlm_p8.json");
  Result<Graph> g = build_model("rnnlm");
  REQUIRE(g.ok());
  REQUIRE(g->cutoff == 1);
  for (const auto& v : golden["vertices"]) {
    int id = v["id"].get<int>();
    CAPTURE(id);
    CHECK(configs_of(*g, id, 8).size() == v["configurations"].get<size_t>());
  }
}

TEST_CASE("configurations: every vertex of the five networks matches the reference enumerator") {
  for (const ModelInfo& info : list_models()) {
    Result<Graph> g =
        build_model(info.name, info.name == "transformer" || info.name == "rnnlm" ? 0 : 32);
    REQUIRE(g.ok());
    for (int64_t devices : {6, 8}) {
      for (const Vertex& v : g->vertices) {
        CAPTURE(info.name);
        CAPTURE(devices);
        CAPTURE(v.id);
        std::vector<Config> got = configs_of(*g, v.id, devices);
        std::vector<Config> want =
            reference_configs(v, model_of(*g, v.id).pinned, g->cutoff, devices);
        REQUIRE(got == want);
        CHECK(std::is_sorted(got.begin(), got.end()));
      }
    }
  }
}

TEST_CASE("configurations: the private ConfigSet agrees with the public list") {
  Result<Graph> g = build_model("alexnet");
  REQUIRE(g.ok());
  Result<std::vector<ConfigSet>> sets = enumerate_all(*g, 8, {});
  REQUIRE(sets.ok());
  for (const Vertex& v : g->vertices) {
    const ConfigSet& set = (*sets)[v.id];
    std::vector<Config> list = configs_of(*g, v.id, 8);
    REQUIRE(set.size() == list.size());
    CHECK(set.dims == static_cast<int>(v.dom.size()));
    for (size_t i = 0; i < set.size(); ++i)
      CHECK(Config(set.at(i), set.at(i) + set.dims) == list[i]);
  }
}
