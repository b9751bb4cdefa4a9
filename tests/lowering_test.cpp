// The lowering of every op to vertices (dom, dims, pinned dimensions, tensor
// shapes and maps, GEMM views, edges) and each op's shape errors, which name
// the layer and the field.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "model/cost_model.hpp"
#include "pase/graph.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;

TEST_CASE("graph: FC lowers to (x..., units, K) with the units dimension dropped on input") {
  LayerSpec fc = layer("fc", "FC", {"x"});
  fc.units = 16;
  fc.pw = 1;
  Graph g = build_ok(spec_with({{"x", {4, 6, 8}}}, {fc}));
  REQUIRE(g.vertices.size() == 1);
  const Vertex& v = g.vertices[0];
  CHECK(v.op == "FC");
  CHECK(v.name == "fc");
  CHECK(v.dom == Shape{4, 6, 16, 8});
  CHECK(v.dims.size() == 4);
  CHECK(model_of(g, v.id).pinned == std::vector<bool>(4, false));
  REQUIRE(v.inputs.size() == 1);
  CHECK(v.inputs[0].producer == -1);
  CHECK(v.inputs[0].shape == Shape{4, 6, 8});
  CHECK(model_of(g, v.id).in_maps[0] == TensorMap{{0}, {1}, {3}});
  REQUIRE(v.outputs.size() == 1);
  CHECK(v.outputs[0].shape == Shape{4, 6, 16});
  CHECK(model_of(g, v.id).out_maps[0] == TensorMap{{0}, {1}, {2}});
  CHECK(model_of(g, v.id).gemm.m == std::vector<int>{0, 1});
  CHECK(model_of(g, v.id).gemm.n == std::vector<int>{2});
  CHECK(model_of(g, v.id).gemm.k == std::vector<int>{3});
  CHECK(model_of(g, v.id).gemm.batch.empty());
  CHECK(model_of(g, v.id).gemm.pw == 1);
  CHECK(g.edges.empty());
}

TEST_CASE("graph: FC errors name units and the input") {
  LayerSpec fc = layer("fc", "FC", {"x"});
  SUBCASE("units 0") {
    Error e = build_error(spec_with({{"x", {4, 8}}}, {fc}));
    CHECK(e.where == "layers[0].units");
  }
  SUBCASE("a 1-D input") {
    fc.units = 4;
    Error e = build_error(spec_with({{"x", {8}}}, {fc}));
    CHECK(e.where == "layers[0].inputs[0]");
  }
}

TEST_CASE("graph: Einsum dom is the output letters then the reduction letters in input-1 order") {
  // "akb,bkc->ac": a only in input 1 (m), c only in input 2 (n), k and b
  // reduced; input 1 names k before b.
  LayerSpec ein = layer("e", "Einsum", {"x"});
  ein.equation = "akb,bkc->ac";
  ein.inputs.push_back(weight({3, 5, 7}));
  Graph g = build_ok(spec_with({{"x", {2, 5, 3}}}, {ein}));
  const Vertex& v = g.vertices[0];
  CHECK(v.dims == std::vector<std::string>{"a", "c", "k", "b"});
  CHECK(v.dom == Shape{2, 7, 5, 3});
  CHECK(model_of(g, v.id).in_maps[0] == TensorMap{{0}, {2}, {3}});
  CHECK(model_of(g, v.id).in_maps[1] == TensorMap{{3}, {2}, {1}});
  CHECK(v.inputs[1].producer == -1);
  CHECK(v.outputs[0].shape == Shape{2, 7});
  CHECK(model_of(g, v.id).out_maps[0] == TensorMap{{0}, {1}});
  CHECK(model_of(g, v.id).gemm.batch.empty());
  CHECK(model_of(g, v.id).gemm.m == std::vector<int>{0});
  CHECK(model_of(g, v.id).gemm.n == std::vector<int>{1});
  CHECK(model_of(g, v.id).gemm.k == std::vector<int>{2, 3});
}

TEST_CASE("graph: Einsum batch letters and two layer operands give two edges") {
  LayerSpec a = layer("a", "Elementwise", {"x", "x"});
  LayerSpec b = layer("b", "Elementwise", {"y", "y"});
  LayerSpec ein = layer("e", "Einsum", {"a", "b"});
  ein.equation = "bhlk,bhmk->bhlm";
  Graph g = build_ok(spec_with({{"x", {2, 4, 6, 8}}, {"y", {2, 4, 5, 8}}}, {a, b, ein}));
  const Vertex& v = g.vertices[2];
  CHECK(v.dims == std::vector<std::string>{"b", "h", "l", "m", "k"});
  CHECK(v.dom == Shape{2, 4, 6, 5, 8});
  CHECK(model_of(g, v.id).gemm.batch == std::vector<int>{0, 1});
  CHECK(model_of(g, v.id).gemm.m == std::vector<int>{2});
  CHECK(model_of(g, v.id).gemm.n == std::vector<int>{3});
  CHECK(model_of(g, v.id).gemm.k == std::vector<int>{4});
  REQUIRE(g.edges.size() == 2);
  CHECK(g.edges[0].src == 0);
  CHECK(g.edges[0].dst_slot == 0);
  CHECK(g.edges[1].src == 1);
  CHECK(g.edges[1].dst_slot == 1);
}

TEST_CASE("graph: Einsum errors name the equation or the operand") {
  LayerSpec ein = layer("e", "Einsum", {"x"});
  ein.inputs.push_back(weight({8, 16}));
  auto where_of = [&](const std::string& equation, Shape x = {4, 8}) {
    ein.equation = equation;
    return build_error(spec_with({{"x", x}}, {ein})).where;
  };
  CHECK(where_of("bk,kn") == "layers[0].equation");                // no arrow
  CHECK(where_of("bk->bn") == "layers[0].equation");               // one input
  CHECK(where_of("bk,kn->bq") == "layers[0].equation");            // letter in no input
  CHECK(where_of("bk,kn->b") == "layers[0].equation");             // no n letter
  CHECK(where_of("bb,kn->bn") == "layers[0].equation");            // repeated letter
  CHECK(where_of("b1,1n->bn") == "layers[0].equation");            // not a letter
  CHECK(where_of("bk,kn->bn", {4, 9}) == "layers[0].equation");    // k is 9 and 8
  CHECK(where_of("bkz,kn->bn", {4, 8}) == "layers[0].inputs[0]");  // rank mismatch
}

TEST_CASE("graph: Embedding is (b, s, dim, vocab) and takes token ids only from a graph input") {
  LayerSpec emb = layer("emb", "Embedding", {"tokens"});
  emb.vocab = 100;
  emb.dim = 16;
  SUBCASE("lowering") {
    Graph g = build_ok(spec_with({{"tokens", {4, 8}}}, {emb}));
    const Vertex& v = g.vertices[0];
    CHECK(v.dom == Shape{4, 8, 16, 100});
    CHECK(v.outputs[0].shape == Shape{4, 8, 16});
    CHECK(model_of(g, v.id).gemm.m == std::vector<int>{0, 1});
    CHECK(model_of(g, v.id).gemm.n == std::vector<int>{2});
    CHECK(model_of(g, v.id).gemm.k == std::vector<int>{3});
    CHECK(g.edges.empty());
  }
  SUBCASE("vocab 0") {
    emb.vocab = 0;
    CHECK(build_error(spec_with({{"tokens", {4, 8}}}, {emb})).where == "layers[0].vocab");
  }
  SUBCASE("dim 0") {
    emb.dim = 0;
    CHECK(build_error(spec_with({{"tokens", {4, 8}}}, {emb})).where == "layers[0].dim");
  }
  SUBCASE("rank 3 tokens") {
    CHECK(build_error(spec_with({{"tokens", {4, 8, 2}}}, {emb})).where == "layers[0].inputs[0]");
  }
  SUBCASE("tokens from a layer") {
    LayerSpec t = layer("t", "Elementwise", {"tokens", "tokens"});
    emb.inputs = {Operand{"t", {}}};
    CHECK(build_error(spec_with({{"tokens", {4, 8}}}, {t, emb})).where == "layers[1].inputs[0]");
  }
}

TEST_CASE("graph: Conv output size uses floor((h - r + 2 pad) / stride) + 1 and pins h and w") {
  LayerSpec conv = layer("conv", "Conv", {"img"});
  conv.filter = {6, 2, 3, 3};
  conv.stride = {2, 1};
  conv.pad = {0, 1};
  // h_o = floor((9 - 3 + 0) / 2) + 1 = 4;  w_o = floor((8 - 3 + 2) / 1) + 1 = 8.
  Graph g = build_ok(spec_with({{"img", {4, 2, 9, 8}}}, {conv}));
  const Vertex& v = g.vertices[0];
  CHECK(v.dims == std::vector<std::string>{"b", "c", "h", "w", "r", "s", "n"});
  CHECK(v.dom == Shape{4, 2, 4, 8, 3, 3, 6});
  CHECK(model_of(g, v.id).pinned ==
        std::vector<bool>{false, false, true, true, false, false, false});
  CHECK(model_of(g, v.id).in_maps[0] == TensorMap{{0}, {1}, {2}, {3}});
  CHECK(v.outputs[0].shape == Shape{4, 6, 4, 8});
  CHECK(model_of(g, v.id).out_maps[0] == TensorMap{{0}, {6}, {2}, {3}});
  CHECK(model_of(g, v.id).gemm.m == std::vector<int>{0, 2, 3});
  CHECK(model_of(g, v.id).gemm.n == std::vector<int>{6});
  CHECK(model_of(g, v.id).gemm.k == std::vector<int>{1, 4, 5});
}

TEST_CASE("graph: Conv errors name filter, stride and pad") {
  LayerSpec conv = layer("conv", "Conv", {"img"});
  conv.filter = {6, 2, 3, 3};
  GraphSpec base = spec_with({{"img", {4, 2, 8, 8}}}, {conv});
  auto where_of = [&](auto&& change) {
    GraphSpec s = base;
    change(s.layers[0]);
    return build_error(s).where;
  };
  CHECK(where_of([](LayerSpec& l) { l.filter = {6, 3, 3, 3}; }) == "layers[0].filter");  // channels
  CHECK(where_of([](LayerSpec& l) { l.filter = {6, 2, 3}; }) == "layers[0].filter");     // rank
  CHECK(where_of([](LayerSpec& l) { l.filter = {6, 2, 9, 3}; }) == "layers[0].filter");  // too big
  CHECK(where_of([](LayerSpec& l) { l.filter = {0, 2, 3, 3}; }) == "layers[0].filter");
  CHECK(where_of([](LayerSpec& l) { l.stride = {0, 1}; }) == "layers[0].stride");
  CHECK(where_of([](LayerSpec& l) { l.pad = {0, -1}; }) == "layers[0].pad");
  CHECK(where_of([](LayerSpec& l) { l.inputs = {Operand{"flat", {}}}; }) == "layers[0].inputs[0]");
  Error e = build_error([&] {
    GraphSpec s = base;
    s.layers[0].filter = {6, 3, 3, 3};
    return s;
  }());
  CHECK(contains(e.message, "3"));
  CHECK(contains(e.message, "2"));
}

TEST_CASE("graph: a Conv on a 3-D input is an error at the input") {
  LayerSpec conv = layer("conv", "Conv", {"img"});
  conv.filter = {6, 2, 3, 3};
  CHECK(build_error(spec_with({{"img", {2, 8, 8}}}, {conv})).where == "layers[0].inputs[0]");
}

TEST_CASE("graph: Pool dom is (b, c, h_o, w_o) with nothing pinned") {
  LayerSpec pool = layer("pool", "Pool", {"img"});
  pool.window = {3, 3};
  pool.stride = {2, 2};
  pool.pad = {1, 0};
  // h_o = floor((9 - 3 + 2) / 2) + 1 = 5;  w_o = floor((9 - 3) / 2) + 1 = 4.
  Graph g = build_ok(spec_with({{"img", {4, 2, 9, 9}}}, {pool}));
  const Vertex& v = g.vertices[0];
  CHECK(v.dom == Shape{4, 2, 5, 4});
  CHECK(model_of(g, v.id).pinned == std::vector<bool>(4, false));
  CHECK(v.inputs[0].shape == Shape{4, 2, 9, 9});
  CHECK(v.outputs[0].shape == Shape{4, 2, 5, 4});
  CHECK(model_of(g, v.id).window == std::array<int64_t, 2>{3, 3});
  SUBCASE("window errors") {
    GraphSpec s = spec_with({{"img", {4, 2, 9, 9}}}, {pool});
    s.layers[0].window = {3};
    CHECK(build_error(s).where == "layers[0].window");
    s.layers[0].window = {12, 3};  // 9 + 2 * 1 < 12
    CHECK(build_error(s).where == "layers[0].window");
  }
}

TEST_CASE("graph: Elementwise needs two inputs of one shape") {
  LayerSpec add = layer("add", "Elementwise", {"x", "y"});
  add.pw = 2;
  SUBCASE("lowering") {
    Graph g = build_ok(spec_with({{"x", {4, 8}}, {"y", {4, 8}}}, {add}));
    CHECK(g.vertices[0].dom == Shape{4, 8});
    CHECK(model_of(g, g.vertices[0].id).pw == 2);
  }
  SUBCASE("different shapes") {
    Error e = build_error(spec_with({{"x", {4, 8}}, {"y", {8, 4}}}, {add}));
    CHECK(e.where == "layers[0].inputs");
  }
  SUBCASE("one input") {
    add.inputs.pop_back();
    Error e = build_error(spec_with({{"x", {4, 8}}, {"y", {8, 4}}}, {add}));
    CHECK(e.where == "layers[0].inputs");
  }
}

TEST_CASE("graph: Norm and Softmax normalize a negative axis and reject one out of range") {
  for (std::string op : {"Norm", "Softmax"}) {
    CAPTURE(op);
    LayerSpec n = layer("n", op, {"x"});
    n.axis = -1;
    Graph g = build_ok(spec_with({{"x", {4, 6, 8}}}, {n}));
    CHECK(model_of(g, g.vertices[0].id).axis == 2);
    CHECK(g.vertices[0].dom == Shape{4, 6, 8});
    n.axis = 3;
    CHECK(build_error(spec_with({{"x", {4, 6, 8}}}, {n})).where == "layers[0].axis");
    n.axis = -4;
    CHECK(build_error(spec_with({{"x", {4, 6, 8}}}, {n})).where == "layers[0].axis");
  }
}

TEST_CASE("graph: ReduceMean output drops or keeps the reduced axes") {
  LayerSpec r = layer("r", "ReduceMean", {"x"});
  r.axes = {1, -1};
  r.has_axes = true;
  SUBCASE("without keepdims") {
    Graph g = build_ok(spec_with({{"x", {4, 6, 8}}}, {r}));
    const Vertex& v = g.vertices[0];
    CHECK(v.dom == Shape{4, 6, 8});
    CHECK(model_of(g, v.id).axes == std::vector<int>{1, 2});
    CHECK(v.outputs[0].shape == Shape{4});
    CHECK(model_of(g, v.id).out_maps[0] == TensorMap{{0}});
  }
  SUBCASE("with keepdims") {
    r.keepdims = true;
    Graph g = build_ok(spec_with({{"x", {4, 6, 8}}}, {r}));
    CHECK(g.vertices[0].outputs[0].shape == Shape{4, 1, 1});
    CHECK(model_of(g, g.vertices[0].id).out_maps[0] == TensorMap{{0}, {}, {}});
  }
  SUBCASE("all axes by default leave a single 1") {
    r.axes.clear();
    r.has_axes = false;
    Graph g = build_ok(spec_with({{"x", {4, 6, 8}}}, {r}));
    CHECK(model_of(g, g.vertices[0].id).axes == std::vector<int>{0, 1, 2});
    CHECK(g.vertices[0].outputs[0].shape == Shape{1});
    CHECK(model_of(g, g.vertices[0].id).out_maps[0] == TensorMap{{}});
  }
  SUBCASE("an axis twice") {
    r.axes = {1, -2};
    CHECK(build_error(spec_with({{"x", {4, 6, 8}}}, {r})).where == "layers[0].axes");
  }
  SUBCASE("an axis out of range") {
    r.axes = {3};
    CHECK(build_error(spec_with({{"x", {4, 6, 8}}}, {r})).where == "layers[0].axes");
  }
}

TEST_CASE("graph: SoftmaxCrossEntropy keeps the input shape as dom") {
  Graph g = build_ok(spec_with({{"x", {4, 6, 10}}}, {layer("loss", "SoftmaxCrossEntropy", {"x"})}));
  CHECK(g.vertices[0].dom == Shape{4, 6, 10});
  CHECK(g.vertices[0].op == "SoftmaxCrossEntropy");
}

TEST_CASE("graph: Reshape becomes Ravel then Unravel joined by one edge") {
  LayerSpec pre = layer("pre", "Elementwise", {"x", "x"});
  LayerSpec r = layer("flat", "Reshape", {"pre"});
  r.shape = {4, 48};
  LayerSpec fc = layer("fc", "FC", {"flat"});
  fc.units = 8;
  Graph g = build_ok(spec_with({{"x", {4, 6, 8}}}, {pre, r, fc}));
  REQUIRE(g.vertices.size() == 4);
  const Vertex& ravel = g.vertices[1];
  const Vertex& unravel = g.vertices[2];
  CHECK(ravel.op == "Ravel");
  CHECK(unravel.op == "Unravel");
  CHECK(ravel.name == "flat/ravel");
  CHECK(unravel.name == "flat");
  CHECK(ravel.layer == 1);
  CHECK(unravel.layer == 1);
  CHECK(g.vertices[3].layer == 2);
  CHECK(ravel.dom == Shape{4, 6, 8});
  CHECK(unravel.dom == Shape{4, 48});
  CHECK(ravel.outputs[0].shape == Shape{192});
  CHECK(model_of(g, ravel.id).out_maps[0] == TensorMap{{0, 1, 2}});
  CHECK(unravel.inputs[0].shape == Shape{192});
  CHECK(model_of(g, unravel.id).in_maps[0] == TensorMap{{0, 1}});
  CHECK(unravel.outputs[0].shape == Shape{4, 48});
  REQUIRE(g.edges.size() == 3);
  CHECK((g.edges[0].src == 0 && g.edges[0].dst == 1));
  CHECK((g.edges[1].src == 1 && g.edges[1].dst == 2));
  CHECK((g.edges[2].src == 2 && g.edges[2].dst == 3));
  CHECK(ravel.op == "Ravel");
  CHECK(unravel.op == "Unravel");
}

TEST_CASE("graph: Reshape to a different element count is an error at shape") {
  LayerSpec r = layer("flat", "Reshape", {"x"});
  r.shape = {4, 47};
  Error e = build_error(spec_with({{"x", {4, 6, 8}}}, {r}));
  CHECK(e.where == "layers[0].shape");
  CHECK(contains(e.message, "188"));
  CHECK(contains(e.message, "192"));
}

TEST_CASE("graph: Transpose permutes the output and checks perm") {
  LayerSpec t = layer("t", "Transpose", {"x"});
  t.perm = {2, 0, 1};
  Graph g = build_ok(spec_with({{"x", {4, 6, 8}}}, {t}));
  CHECK(g.vertices[0].dom == Shape{4, 6, 8});
  CHECK(g.vertices[0].outputs[0].shape == Shape{8, 4, 6});
  CHECK(model_of(g, g.vertices[0].id).out_maps[0] == TensorMap{{2}, {0}, {1}});
  t.perm = {0, 0, 1};
  CHECK(build_error(spec_with({{"x", {4, 6, 8}}}, {t})).where == "layers[0].perm");
  t.perm = {0, 1};
  CHECK(build_error(spec_with({{"x", {4, 6, 8}}}, {t})).where == "layers[0].perm");
}

TEST_CASE("graph: Concat dom has 1 at the axis and the output sums the axis") {
  LayerSpec a = layer("a", "Elementwise", {"x", "x"});
  LayerSpec b = layer("b", "Elementwise", {"y", "y"});
  LayerSpec c = layer("c", "Concat", {"a", "b", "a"});
  c.axis = 1;
  Graph g = build_ok(spec_with({{"x", {4, 6}}, {"y", {4, 10}}}, {a, b, c}));
  const Vertex& v = g.vertices[2];
  CHECK(v.dom == Shape{4, 1});
  CHECK(v.outputs[0].shape == Shape{4, 22});
  CHECK(v.inputs[1].shape == Shape{4, 10});
  // Three slots, two of them fed by "a": three edges.
  REQUIRE(g.edges.size() == 3);
  CHECK(g.edges[0].src == 0);
  CHECK(g.edges[1].src == 1);
  CHECK(g.edges[2].src == 0);
  CHECK(g.edges[2].dst_slot == 2);
}

TEST_CASE("graph: Concat errors name the offending input") {
  LayerSpec c = layer("c", "Concat", {"x", "y"});
  c.axis = 1;
  CHECK(build_error(spec_with({{"x", {4, 6}}, {"y", {5, 6}}}, {c})).where == "layers[0].inputs[1]");
  CHECK(build_error(spec_with({{"x", {4, 6}}, {"y", {4, 6, 1}}}, {c})).where ==
        "layers[0].inputs[1]");
  c.axis = 2;
  CHECK(build_error(spec_with({{"x", {4, 6}}, {"y", {4, 6}}}, {c})).where == "layers[0].axis");
  c.axis = 0;
  c.inputs.pop_back();
  CHECK(build_error(spec_with({{"x", {4, 6}}, {"y", {4, 6}}}, {c})).where == "layers[0].inputs");
}

TEST_CASE("graph: Split makes num outputs named name:k") {
  LayerSpec s = layer("s", "Split", {"x"});
  s.num = 3;
  s.axis = -1;
  LayerSpec use = layer("use", "Elementwise", {"s:2", "s:0"});
  Graph g = build_ok(spec_with({{"x", {4, 6}}}, {s, use}));
  CHECK(g.vertices[0].dom == Shape{4, 1});
  REQUIRE(g.vertices[0].outputs.size() == 3);
  CHECK(g.vertices[0].outputs[2].shape == Shape{4, 2});
  REQUIRE(g.edges.size() == 2);
  CHECK(g.edges[0].src_output == 2);
  CHECK(g.edges[1].src_output == 0);
  s.num = 4;
  CHECK(build_error(spec_with({{"x", {4, 6}}}, {s})).where == "layers[0].num");
  s.num = 0;
  CHECK(build_error(spec_with({{"x", {4, 6}}}, {s})).where == "layers[0].num");
}

TEST_CASE("graph: Stack inserts a dimension and maps inputs around it") {
  LayerSpec s = layer("s", "Stack", {"x", "y", "x"});
  s.axis = 1;
  Graph g = build_ok(spec_with({{"x", {4, 6}}, {"y", {4, 6}}}, {s}));
  const Vertex& v = g.vertices[0];
  CHECK(v.dom == Shape{4, 1, 6});
  CHECK(v.outputs[0].shape == Shape{4, 3, 6});
  CHECK(model_of(g, v.id).in_maps[0] == TensorMap{{0}, {2}});
  s.inputs[1] = Operand{"z", {}};
  CHECK(build_error(spec_with({{"x", {4, 6}}, {"z", {4, 7}}}, {s})).where == "layers[0].inputs[1]");
}

TEST_CASE("graph: Unstack has one output per slice of the axis") {
  LayerSpec u = layer("u", "Unstack", {"x"});
  u.axis = 0;
  Graph g = build_ok(spec_with({{"x", {3, 4, 6}}}, {u}));
  const Vertex& v = g.vertices[0];
  CHECK(v.dom == Shape{1, 4, 6});
  REQUIRE(v.outputs.size() == 3);
  for (size_t k = 0; k < v.outputs.size(); ++k) {
    CHECK(v.outputs[k].shape == Shape{4, 6});
    CHECK(model_of(g, v.id).out_maps[k] == TensorMap{{1}, {2}});
  }
  CHECK(build_error(spec_with({{"x", {3}}}, {u})).where == "layers[0].inputs[0]");
}

TEST_CASE("graph: LSTM is (L, s, b, u, u) with the sequence pinned") {
  LayerSpec pre = layer("pre", "Elementwise", {"x", "x"});
  LayerSpec l = layer("lstm", "LSTM", {"pre"});
  l.units = 8;
  l.layers = 2;
  Graph g = build_ok(spec_with({{"x", {4, 3, 8}}}, {pre, l}));
  const Vertex& v = g.vertices[1];
  CHECK(v.dom == Shape{2, 3, 4, 8, 8});
  CHECK(model_of(g, v.id).pinned == std::vector<bool>{false, true, false, false, false});
  CHECK(model_of(g, v.id).in_maps[0] == TensorMap{{2}, {1}, {4}});
  CHECK(v.outputs[0].shape == Shape{4, 3, 8});
  CHECK(model_of(g, v.id).out_maps[0] == TensorMap{{2}, {1}, {3}});
  CHECK(model_of(g, v.id).gemm.batch == std::vector<int>{0});
  CHECK(model_of(g, v.id).gemm.pw == 3);
  CHECK(model_of(g, v.id).gemm.n_scale == 4);
  CHECK(model_of(g, v.id).gemm.k_scale == 2);
  SUBCASE("errors") {
    GraphSpec s = spec_with({{"x", {4, 3, 8}}}, {pre, l});
    s.layers[1].units = 16;
    CHECK(build_error(s).where == "layers[1].units");
    s.layers[1].units = 8;
    s.layers[1].layers = 0;
    CHECK(build_error(s).where == "layers[1].layers");
  }
}
