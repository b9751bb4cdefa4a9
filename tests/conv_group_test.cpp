// Grouped and depthwise convolutions: the Conv attribute `group`
// (core/src/model/ops/conv.cpp; core/docs/cost-model.md section 5, "Extension:
// grouped convolutions"). With group 1 a Conv is exactly the paper's.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "model/cost_model.hpp"
#include "pase/graph.hpp"
#include "pase/plan.hpp"
#include "plan/testing.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;

namespace {

// A Conv on "img" with `filter`, pad 1 and `group`.
LayerSpec conv(const std::string& name, const std::string& input, Shape filter, int64_t group) {
  LayerSpec l = layer(name, "Conv", {input});
  l.filter = std::move(filter);
  l.pad = {1, 1};
  l.group = group;
  return l;
}

// img (4, 4, 8, 8) -> conv1 (group 2, 8 channels) -> dw (depthwise, group 8) -> pool (2x2).
GraphSpec grouped_chain() {
  LayerSpec c1 = conv("conv1", "img", {8, 2, 3, 3}, 2);
  c1.pw = 1;
  LayerSpec dw = conv("dw", "conv1", {8, 1, 3, 3}, 8);
  LayerSpec pool = layer("pool", "Pool", {"dw"});
  pool.window = {2, 2};
  pool.stride = {2, 2};
  return spec_with({{"img", {4, 4, 8, 8}}}, {c1, dw, pool}, 1);
}

const std::vector<DimKind> kGroupedKinds = {
    DimKind::kBatch,   DimKind::kHidden,    DimKind::kReduction, DimKind::kSpatial,
    DimKind::kSpatial, DimKind::kReduction, DimKind::kReduction, DimKind::kHidden};

// A document of one Conv with `filter` and these extra fields on img: [4, 4, 8, 8].
std::string conv_doc(const std::string& fields, const std::string& filter = "[8, 2, 3, 3]") {
  return R"({"format": "pase-graph/1", "inputs": {"img": [4, 4, 8, 8]}, "layers": [)"
         R"({"name": "conv", "op": "Conv", "inputs": ["img"], "filter": )" +
         filter + fields + "}]}";
}

}  // namespace

TEST_CASE("conv group: group 2 adds a group dimension g mapped with c and n") {
  Graph g = build_ok(grouped_chain());
  REQUIRE(g.vertices.size() == 3);
  const Vertex& v = g.vertices[0];
  CHECK(v.op == "Conv");
  CHECK(v.dims == std::vector<std::string>{"b", "g", "c", "h", "w", "r", "s", "n"});
  // (b, group, C / group, h_o, w_o, r, s, N / group); h_o = (8 - 3 + 2) / 1 + 1 = 8.
  CHECK(v.dom == Shape{4, 2, 2, 8, 8, 3, 3, 4});
  CHECK(v.kinds == kGroupedKinds);
  CHECK(v.inputs[0].shape == Shape{4, 4, 8, 8});
  CHECK(v.outputs[0].shape == Shape{4, 8, 8, 8});
  const VertexModel& m = model_of(g, v.id);
  CHECK(m.in_maps[0] == TensorMap{{0}, {1, 2}, {3}, {4}});
  CHECK(m.out_maps[0] == TensorMap{{0}, {1, 7}, {3}, {4}});
  CHECK(m.pinned == std::vector<bool>{false, false, false, true, true, false, false, false});
  CHECK(m.batch_dim == 0);
  CHECK(m.gemm.batch == std::vector<int>{1});
  CHECK(m.gemm.m == std::vector<int>{0, 3, 4});
  CHECK(m.gemm.n == std::vector<int>{7});
  CHECK(m.gemm.k == std::vector<int>{2, 5, 6});
  CHECK(m.gemm.pw == 1);
  CHECK(m.gemm.n_scale == 1);
  CHECK(m.gemm.k_scale == 1);
}

TEST_CASE("conv group: depthwise (group = C = N) has c = n = 1") {
  Graph g = build_ok(grouped_chain());
  const Vertex& v = g.vertices[1];
  CHECK(v.name == "dw");
  CHECK(v.dims == std::vector<std::string>{"b", "g", "c", "h", "w", "r", "s", "n"});
  CHECK(v.dom == Shape{4, 8, 1, 8, 8, 3, 3, 1});
  CHECK(v.kinds == kGroupedKinds);
  CHECK(v.inputs[0].producer == 0);
  CHECK(v.outputs[0].shape == Shape{4, 8, 8, 8});
  const VertexModel& m = model_of(g, v.id);
  CHECK(m.in_maps[0] == TensorMap{{0}, {1, 2}, {3}, {4}});
  CHECK(m.out_maps[0] == TensorMap{{0}, {1, 7}, {3}, {4}});
  CHECK(m.pinned == std::vector<bool>{false, false, false, true, true, false, false, false});
  CHECK(m.gemm.batch == std::vector<int>{1});
  CHECK(m.gemm.m == std::vector<int>{0, 3, 4});
  CHECK(m.gemm.n == std::vector<int>{7});
  CHECK(m.gemm.k == std::vector<int>{2, 5, 6});
  CHECK(m.gemm.pw == 0);
  // The only splits of c and n are 1; the enumeration offers g.
  Result<std::vector<Config>> cs = enumerate_configs(g, v.id, Cluster{.devices = 8});
  REQUIRE_MESSAGE(cs.ok(), why(cs));
  bool splits_g = false;
  for (const Config& c : *cs) {
    CHECK(c[2] == 1);
    CHECK(c[7] == 1);
    splits_g = splits_g || c[1] > 1;
  }
  CHECK(splits_g);
  CHECK(g.edges.size() == 2);
}

TEST_CASE("conv group: the channel split on an edge is c_g * c_c (input) and c_g * c_n (output)") {
  Graph g = build_ok(grouped_chain());
  const Cluster cluster{.devices = 4};
  auto edge_cost = [&](Config conv1, Config dw) {
    Strategy s = {std::move(conv1), std::move(dw), Config(4, 1)};
    Result<Plan> p = evaluate(g, cluster, s);
    REQUIRE_MESSAGE(p.ok(), why(p));
    return p->edge_costs[0];  // conv1 -> dw
  };
  // conv1 splits g 2 ways, dw splits g 2 ways: the channels agree, nothing moves.
  CHECK(edge_cost({1, 2, 1, 1, 1, 1, 1, 1}, {1, 2, 1, 1, 1, 1, 1, 1}) == 0);
  // conv1's output channels split 2 (by n) -> dw's input channels split 2 (by g):
  // the edge formula sees only the split of each tensor dimension.
  CHECK(edge_cost({1, 1, 1, 1, 1, 1, 1, 2}, {1, 2, 1, 1, 1, 1, 1, 1}) == 0);
  // Channels split 2 -> 1 on a (4, 8, 8, 8) tensor of 2048 elements:
  // need = 2048, have = 1024, edge = 5000 * 2 * 1024.
  CHECK(edge_cost({1, 2, 1, 1, 1, 1, 1, 1}, Config(8, 1)) == near(10'240'000));
}

TEST_CASE("conv group: errors name the field") {
  GraphSpec base = spec_with({{"img", {4, 4, 8, 8}}}, {conv("conv", "img", {8, 2, 3, 3}, 2)});
  auto error_of = [&](auto&& change) {
    GraphSpec s = base;
    change(s.layers[0]);
    return build_error(s);
  };
  SUBCASE("group not dividing the input channels") {
    Error e = error_of([](LayerSpec& l) { l.group = 3; });
    CHECK(e.where == "layers[0].group");
    CHECK(e.message == "group 3 does not divide the input's 4 channels");
  }
  SUBCASE("group not dividing the output channels") {
    Error e = error_of([](LayerSpec& l) {
      l.filter = {6, 1, 3, 3};
      l.group = 4;
    });
    CHECK(e.where == "layers[0].group");
    CHECK(e.message == "group 4 does not divide the filter's 6 output channels");
  }
  SUBCASE("filter channels are not C / group") {
    Error e = error_of([](LayerSpec& l) { l.filter = {8, 4, 3, 3}; });
    CHECK(e.where == "layers[0].filter");
    CHECK(e.message == "channel 4 does not match input 4 / group 2 = 2");
  }
  SUBCASE("group 1: the message of a plain Conv") {
    Error e = error_of([](LayerSpec& l) { l.group = 1; });
    CHECK(e.where == "layers[0].filter");
    CHECK(e.message == "channel 2 does not match input 4");
  }
  SUBCASE("group 0 or negative, built in code") {
    for (int64_t group : {0, -2}) {
      CAPTURE(group);
      Error e = error_of([group](LayerSpec& l) { l.group = group; });
      CHECK(e.where == "layers[0].group");
      CHECK(e.message == "must be a positive integer");
    }
  }
  SUBCASE("group 0 or negative in a document") {
    for (const char* group : {"0", "-2"}) {
      CAPTURE(group);
      Error e = load_error(conv_doc(R"(, "group": )" + std::string(group)));
      CHECK(e.where == "layers[0].group");
      CHECK(contains(e.message, "must be a positive integer"));
    }
  }
  SUBCASE("group on another op") {
    Error e = load_error(
        graph_doc(R"([{"name": "fc", "op": "FC", "inputs": ["x"], "units": 4, "group": 2}])"));
    CHECK(e.where == "layers[0].group");
    CHECK(e.message == "unknown field 'group' for op FC");
  }
  CHECK(load_graph(conv_doc(R"(, "group": 2)")).ok());
}

TEST_CASE("conv group: cost is the GEMM of section 4 with the group as batch dimension") {
  LayerSpec l = conv("conv", "img", {8, 2, 3, 3}, 2);
  l.pw = 1;
  Graph g = one_layer({{"img", {2, 4, 4, 4}}}, l);
  // dom = (b, g, c, h, w, r, s, n) = (2, 2, 2, 4, 4, 3, 3, 4); h_o = (4 - 3 + 2) / 1 + 1 = 4.
  REQUIRE(g.vertices[0].dom == Shape{2, 2, 2, 4, 4, 3, 3, 4});
  SUBCASE("groups split across devices") {
    // c = (2, 2, 1, 1, 1, 1, 1, 2): bpp = 2/2 = 1; M = b*h*w = 32 split 2 -> m = 16;
    // N = n = 4 split 2 -> n = 2; K = c*r*s = 18 split 1 -> k = 18.
    // comp = 3*16*2*18 + 3*1*16*2 = 1728 + 96 = 1824
    // comm = allreduce(m*n = 32, 1) + allreduce(m*k = 288, 2) + allreduce(n*k = 36, 2)
    //      = 0 + 1000*144*2*1 + 1000*18*2*1 = 288000 + 36000 = 324000
    // total = 1 * (1824 + 324000) = 325824
    LayerCost lc = cost_at(g, {2, 2, 1, 1, 1, 1, 1, 2});
    CHECK(lc.total == near(325824));
    CHECK(lc.compute == near(1824));
    CHECK(lc.comm == near(324000));
  }
  SUBCASE("both groups on every device") {
    // c = (2, 1, 2, 1, 1, 1, 1, 2): bpp = 2/1 = 2; m = 32/2 = 16; n = 4/2 = 2;
    // K = 18 split 2 -> k = 9.
    // comp = 3*16*2*9 + 3*1*16*2 = 864 + 96 = 960
    // comm = allreduce(32, 2) + allreduce(144, 2) + allreduce(18, 2)
    //      = 1000*16*2 + 1000*72*2 + 1000*9*2 = 32000 + 144000 + 18000 = 194000
    // total = 2 * (960 + 194000) = 389920
    LayerCost lc = cost_at(g, {2, 1, 2, 1, 1, 1, 1, 2});
    CHECK(lc.total == near(389920));
    CHECK(lc.compute == near(1920));
    CHECK(lc.comm == near(388000));
  }
  SUBCASE("one device: the dense Conv's FLOPs divided by the group") {
    // bpp = 2, m = 32, n = 4, k = 18: 2 * (3*32*4*18 + 3*1*32*4) = 2 * (6912 + 384) = 14592.
    // A dense Conv of the same input and 8 outputs (n = 8, k = 36) has 3*32*8*36 = 27648
    // GEMM FLOPs, twice the grouped 2 * 6912; the pw term, 3*32*8 = 768, is the same.
    CHECK(cost_at(g, Config(8, 1)).total == near(14592));
  }
}

TEST_CASE("conv group: group 1 is the plain Conv, vertex for vertex") {
  const std::string fields = R"(, "pad": 1, "stride": [2, 1], "pw": 2)";
  Result<Graph> a = load_graph(conv_doc(fields, "[8, 4, 3, 3]"));
  Result<Graph> b = load_graph(conv_doc(fields + R"(, "group": 1)", "[8, 4, 3, 3]"));
  REQUIRE_MESSAGE(a.ok(), why(a));
  REQUIRE_MESSAGE(b.ok(), why(b));
  const Vertex& va = a->vertices[0];
  const Vertex& vb = b->vertices[0];
  CHECK(va.dims == std::vector<std::string>{"b", "c", "h", "w", "r", "s", "n"});
  CHECK(vb.dims == va.dims);
  CHECK(vb.kinds == va.kinds);
  CHECK(vb.dom == va.dom);
  CHECK(vb.dom == Shape{4, 4, 4, 8, 3, 3, 8});
  CHECK(vb.outputs[0].shape == va.outputs[0].shape);
  const VertexModel& ma = model_of(*a, 0);
  const VertexModel& mb = model_of(*b, 0);
  CHECK(mb.in_maps == ma.in_maps);
  CHECK(mb.in_maps[0] == TensorMap{{0}, {1}, {2}, {3}});
  CHECK(mb.out_maps == ma.out_maps);
  CHECK(mb.out_maps[0] == TensorMap{{0}, {6}, {2}, {3}});
  CHECK(mb.pinned == ma.pinned);
  CHECK(mb.batch_dim == ma.batch_dim);
  CHECK(mb.gemm.batch.empty());
  CHECK(mb.gemm.m == ma.gemm.m);
  CHECK(mb.gemm.n == ma.gemm.n);
  CHECK(mb.gemm.k == ma.gemm.k);
  CHECK(mb.gemm.pw == ma.gemm.pw);
  for (const Config& c :
       {Config{1, 1, 1, 1, 1, 1, 1}, Config{2, 2, 1, 1, 1, 1, 2}, Config{4, 1, 1, 1, 3, 1, 1},
        Config{1, 4, 1, 1, 1, 3, 1}, Config{1, 2, 1, 1, 1, 1, 8}}) {
    CAPTURE(c);
    LayerCost ca = cost_at(*a, c);
    LayerCost cb = cost_at(*b, c);
    CHECK(cb.total == ca.total);
    CHECK(cb.compute == ca.compute);
    CHECK(cb.comm == ca.comm);
  }
}

TEST_CASE("conv group: survives write_graph and load_graph, group 1 is left out") {
  for (int64_t group : {1, 2}) {
    CAPTURE(group);
    GraphSpec s =
        spec_with({{"img", {4, 4, 8, 8}}}, {conv("conv", "img", {8, 4 / group, 3, 3}, group)});
    const std::string text = write_graph(s);
    CHECK(contains(text, R"("group")") == (group != 1));
    CHECK(contains(text, R"("group": 2)") == (group == 2));
    Result<GraphSpec> again = parse_graph_spec(text);
    REQUIRE_MESSAGE(again.ok(), why(again));
    CHECK(again->layers[0].group == group);
    CHECK(again->layers[0].filter == s.layers[0].filter);
    CHECK(write_graph(*again) == text);
    Result<Graph> g = build_graph(*again);
    REQUIRE_MESSAGE(g.ok(), why(g));
    CHECK(g->vertices[0].dom == build_ok(s).vertices[0].dom);
  }
}

TEST_CASE("conv group: plan() finds the optimum of exhaustive search") {
  Graph g = build_ok(grouped_chain());
  for (int64_t devices : {2, 4}) {
    CAPTURE(devices);
    Cluster cluster{.devices = devices};
    Result<Plan> best = exhaustive_search(g, cluster, 10'000'000);
    REQUIRE_MESSAGE(best.ok(), why(best));
    for (Order order : kOrders) {
      PlanOptions options;
      options.order = order;
      Result<Plan> p = plan(g, cluster, options);
      REQUIRE_MESSAGE(p.ok(), why(p));
      CHECK(close(p->cost, best->cost));
    }
  }
}
