// Activation (core/src/model/ops/activation.cpp): a one-input element-wise op of
// cost (1 + pw) * prod(dpp), core/docs/cost-model.md section 5.
#include <doctest/doctest.h>

#include <string>

#include "model/cost_model.hpp"
#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "plan/testing.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;

namespace {

// x -> fc (units 8) -> act -> out (units 4).
GraphSpec mlp(int64_t pw) {
  LayerSpec fc = layer("fc", "FC", {"x"});
  fc.units = 8;
  LayerSpec act = layer("act", "Activation", {"fc"});
  act.pw = pw;
  LayerSpec out = layer("out", "FC", {"act"});
  out.units = 4;
  return spec_with({{"x", {16, 6, 12}}}, {fc, act, out}, 1);
}

}  // namespace

TEST_CASE("activation: lowers to the input's shape, maps identically, batch first") {
  Graph g = build_ok(mlp(2));
  REQUIRE(g.vertices.size() == 3);
  const Vertex& v = g.vertices[1];
  CHECK(v.op == "Activation");
  CHECK(v.name == "act");
  CHECK(v.dom == Shape{16, 6, 8});
  CHECK(v.dims == std::vector<std::string>{"b", "d1", "d2"});
  CHECK(v.kinds == std::vector<DimKind>{DimKind::kBatch, DimKind::kOther, DimKind::kOther});
  REQUIRE(v.inputs.size() == 1);
  CHECK(v.inputs[0].producer == 0);
  CHECK(v.outputs[0].shape == Shape{16, 6, 8});
  const VertexModel& m = model_of(g, v.id);
  CHECK(m.in_maps[0] == TensorMap{{0}, {1}, {2}});
  CHECK(m.out_maps[0] == TensorMap{{0}, {1}, {2}});
  CHECK(m.pinned == std::vector<bool>(3, false));
  CHECK(m.batch_dim == 0);
  CHECK(g.edges.size() == 2);
}

TEST_CASE("activation: errors name the field") {
  LayerSpec two = layer("act", "Activation", {"x", "x"});
  Error e = build_error(spec_with({{"x", {4, 8}}}, {two}));
  CHECK(e.where == "layers[0].inputs");
  CHECK(e.message == "Activation takes 1 input, got 2");
  CHECK(load_error(graph_doc(R"([{"name": "a", "op": "Activation", "inputs": ["x"], "pw": -1}])"))
            .where == "layers[0].pw");
  Error other =
      load_error(graph_doc(R"([{"name": "a", "op": "Activation", "inputs": ["x"], "units": 3}])"));
  CHECK(other.where == "layers[0].units");
  CHECK(other.message == "unknown field 'units' for op Activation");
}

TEST_CASE("activation: cost is (1 + pw) * prod(dpp), all compute") {
  LayerSpec act = layer("act", "Activation", {"x"});
  act.pw = 2;
  Graph g = one_layer({{"x", {4, 6, 8}}}, act);
  // dpp = (4/2, 6/1, 8/4) = (2, 6, 2): 24 points, 3 operations each.
  LayerCost lc = cost_at(g, {2, 1, 4});
  CHECK(lc.total == near(72));
  CHECK(lc.compute == near(72));
  CHECK(lc.comm == near(0));
  act.pw = 0;
  CHECK(cost_at(one_layer({{"x", {4, 6, 8}}}, act), {1, 1, 1}).total == near(4 * 6 * 8));
}

TEST_CASE("activation: survives write_graph and load_graph, pw 0 is left out") {
  for (int64_t pw : {0, 3}) {
    CAPTURE(pw);
    const std::string text = write_graph(mlp(pw));
    CHECK(contains(text, R"("op": "Activation")"));
    CHECK(contains(text, R"("pw": 3)") == (pw == 3));
    Result<GraphSpec> again = parse_graph_spec(text);
    REQUIRE_MESSAGE(again.ok(), why(again));
    CHECK(again->layers[1].op == "Activation");
    CHECK(again->layers[1].pw == pw);
    CHECK(write_graph(*again) == text);
  }
}

TEST_CASE("activation: plan() finds the optimum of exhaustive search") {
  Graph g = build_ok(mlp(1));
  for (int64_t devices : {2, 4}) {
    CAPTURE(devices);
    Cluster cluster{.devices = devices};
    Result<Plan> best = exhaustive_search(g, cluster, 10'000'000);
    REQUIRE_MESSAGE(best.ok(), why(best));
    Result<Plan> p = plan(g, cluster);
    REQUIRE_MESSAGE(p.ok(), why(p));
    CHECK(close(p->cost, best->cost));
  }
}
