// build_graph(): validation of GraphSpecs (errors name the layer and the field)
// and the lowering of every op to vertices (dom, dims, pinned dimensions,
// tensor shapes and maps, edges).
#include "pase/graph.hpp"

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "model/cost_model.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;

// ---- Document-level errors ----------------------------------------------------

TEST_CASE("graph: a graph without layers is an error at 'layers'") {
  Error e = build_error(spec_with({{"x", {4, 8}}}, {}));
  CHECK(e.where == "layers");
}

TEST_CASE("graph: cutoff 0 is an error at 'cutoff'") {
  LayerSpec fc = layer("fc", "FC", {"x"});
  fc.units = 4;
  Error e = build_error(spec_with({{"x", {4, 8}}}, {fc}, 0));
  CHECK(e.where == "cutoff");
}

TEST_CASE("graph: bad graph inputs name the input") {
  LayerSpec fc = layer("fc", "FC", {"x"});
  fc.units = 4;
  SUBCASE("non-positive size") {
    Error e = build_error(spec_with({{"x", {4, 0}}}, {fc}));
    CHECK(e.where == "inputs.x");
  }
  SUBCASE("empty shape") {
    Error e = build_error(spec_with({{"x", {}}}, {fc}));
    CHECK(e.where == "inputs.x");
  }
  SUBCASE("duplicate name") {
    Error e = build_error(spec_with({{"x", {4, 8}}, {"x", {4, 8}}}, {fc}));
    CHECK(e.where == "inputs.x");
    CHECK(contains(e.message, "duplicate"));
  }
  SUBCASE("a ':' in the name") {
    Error e = build_error(spec_with({{"x:0", {4, 8}}}, {fc}));
    CHECK(e.where == "inputs.x:0");
  }
  SUBCASE("too many elements") {
    Error e = build_error(spec_with({{"x", {int64_t{1} << 31, int64_t{1} << 31}}}, {fc}));
    CHECK(e.where == "inputs.x");
  }
}

TEST_CASE("graph: name errors point at the layer") {
  LayerSpec a = layer("a", "FC", {"x"});
  a.units = 4;
  SUBCASE("duplicate layer name") {
    LayerSpec b = a;
    b.inputs = {Operand{"a", {}}};
    Error e = build_error(spec_with({{"x", {4, 8}}}, {a, b}));
    CHECK(e.where == "layers[1].name");
    CHECK(contains(e.message, "'a'"));
  }
  SUBCASE("a layer named like a graph input") {
    a.name = std::string("x");  // not a literal: GCC 12 -Wrestrict false positive
    Error e = build_error(spec_with({{"x", {4, 8}}}, {a}));
    CHECK(e.where == "layers[0].name");
  }
  SUBCASE("empty layer name") {
    a.name = "";
    Error e = build_error(spec_with({{"x", {4, 8}}}, {a}));
    CHECK(e.where == "layers[0].name");
  }
  SUBCASE("unknown input") {
    a.inputs = {Operand{"nope", {}}};
    Error e = build_error(spec_with({{"x", {4, 8}}}, {a}));
    CHECK(e.where == "layers[0].inputs[0]");
    CHECK(contains(e.message, "nope"));
  }
  SUBCASE("a layer that uses its own output is a cycle") {
    a.inputs = {Operand{"a", {}}};
    Error e = build_error(spec_with({{"x", {4, 8}}}, {a}));
    CHECK(e.where == "layers[0].inputs[0]");
    CHECK(contains(e.message, "cycle"));
  }
  SUBCASE("a forward reference breaks the topological order") {
    LayerSpec b = layer("b", "FC", {"a"});
    b.units = 4;
    a.inputs = {Operand{"b", {}}};
    Error e = build_error(spec_with({{"x", {4, 8}}}, {a, b}));
    CHECK(e.where == "layers[0].inputs[0]");
    CHECK(contains(e.message, "later layer"));
  }
  SUBCASE("a multi-output layer must be named with an index") {
    LayerSpec s = layer("s", "Split", {"x"});
    s.num = 2;
    s.axis = 1;
    LayerSpec b = layer("b", "FC", {"s"});
    b.units = 4;
    Error e = build_error(spec_with({{"x", {4, 8}}}, {s, b}));
    CHECK(e.where == "layers[1].inputs[0]");
    CHECK(contains(e.message, "s:0"));
  }
  SUBCASE("an output index past the last output") {
    LayerSpec s = layer("s", "Split", {"x"});
    s.num = 2;
    s.axis = 1;
    LayerSpec b = layer("b", "FC", {"s:2"});
    b.units = 4;
    Error e = build_error(spec_with({{"x", {4, 8}}}, {s, b}));
    CHECK(e.where == "layers[1].inputs[0]");
  }
  SUBCASE("Ravel is a vertex kind, not a document op") {
    a.op = "Ravel";
    Error e = build_error(spec_with({{"x", {4, 8}}}, {a}));
    CHECK(e.where == "layers[0].op");
  }
  SUBCASE("negative pw") {
    a.pw = -1;
    Error e = build_error(spec_with({{"x", {4, 8}}}, {a}));
    CHECK(e.where == "layers[0].pw");
  }
  SUBCASE("wrong number of inputs") {
    a.inputs.push_back(Operand{"x", {}});
    Error e = build_error(spec_with({{"x", {4, 8}}}, {a}));
    CHECK(e.where == "layers[0].inputs");
  }
  SUBCASE("a weight operand with a bad shape") {
    LayerSpec ein = layer("e", "Einsum", {"x"});
    ein.equation = "bk,kn->bn";
    ein.inputs.push_back(weight({8, -2}));
    Error e = build_error(spec_with({{"x", {4, 8}}}, {ein}));
    CHECK(e.where == "layers[0].inputs[1]");
  }
}

// ---- Graph-level properties -----------------------------------------------------

TEST_CASE("graph: vertex ids are creation order and edges are ordered by (dst, slot)") {
  LayerSpec a = layer("a", "FC", {"x"});
  a.units = 8;
  LayerSpec b = layer("b", "FC", {"a"});
  b.units = 8;
  LayerSpec c = layer("c", "Elementwise", {"b", "a"});
  LayerSpec d = layer("d", "Elementwise", {"c", "c"});
  Graph g = build_ok(spec_with({{"x", {4, 8}}}, {a, b, c, d}));
  REQUIRE(g.vertices.size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(g.vertices[i].id == i);
  REQUIRE(g.edges.size() == 5);
  for (size_t i = 1; i < g.edges.size(); ++i) {
    CHECK(std::pair(g.edges[i - 1].dst, g.edges[i - 1].dst_slot) <
          std::pair(g.edges[i].dst, g.edges[i].dst_slot));
  }
  // d reads c twice: two edges.
  CHECK(g.edges[3].src == 2);
  CHECK(g.edges[4].src == 2);
  CHECK(g.edges[4].dst_slot == 1);
  CHECK(g.name == "test");
}

// ---- Parameters (core/docs/graph-format.md, "Parameters") ----------------------------------

TEST_CASE("graph: parameters count each layer's weights") {
  LayerSpec fc = layer("fc", "FC", {"x"});  // (8, 16) -> 32 units: W is 32 x 16
  fc.units = 32;
  LayerSpec conv = layer("conv", "Conv", {"img"});  // filter [8, 3, 3, 3]
  conv.filter = {8, 3, 3, 3};
  LayerSpec grouped = layer("grouped", "Conv", {"conv"});  // [8, 8 / 4, 1, 1], 4 groups
  grouped.filter = {8, 2, 1, 1};
  grouped.group = 4;
  LayerSpec emb = layer("emb", "Embedding", {"tok"});  // 50 x 6
  emb.vocab = 50;
  emb.dim = 6;
  LayerSpec proj = layer("proj", "Einsum", {"emb"});  // a weight operand of 6 x 10
  proj.inputs.push_back(weight({6, 10}));
  proj.equation = "bse,ef->bsf";
  LayerSpec attn = layer("attn", "Einsum", {"proj", "proj"});  // two activations: none
  attn.equation = "bsf,btf->bst";
  LayerSpec lstm = layer("lstm", "LSTM", {"emb"});  // L * 2u * 4u = 2 * 12 * 24
  lstm.units = 6;
  lstm.layers = 2;
  LayerSpec bias = layer("bias", "Elementwise", {"fc"});  // any op's weight operand
  bias.inputs.push_back(weight({8, 32}));
  LayerSpec act = layer("act", "Activation", {"bias"});  // no weights
  LayerSpec flat = layer("flat", "Reshape", {"act"});
  flat.shape = {8, 4, 8};
  const GraphSpec spec = spec_with({{"x", {8, 16}}, {"img", {2, 3, 8, 8}}, {"tok", {2, 5}}},
                                   {fc, conv, grouped, emb, proj, attn, lstm, bias, act, flat});
  Graph g = build_ok(spec);
  const std::vector<int64_t> expected = {32 * 16,     8 * 3 * 3 * 3, 8 * 2, 50 * 6, 6 * 10, 0,
                                         2 * 12 * 24, 8 * 32,        0,     0,      0};
  REQUIRE(g.vertices.size() == expected.size());  // the Reshape is two vertices
  int64_t sum = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(g.vertices[i].name);
    CHECK(model_of(g, static_cast<int>(i)).weight_elements == expected[i]);
    sum += expected[i];
  }
  CHECK(g.parameters == sum);
  CHECK(g.parameters == 1936);
}

TEST_CASE("graph: a spec's own parameters override the count, below -1 is an error") {
  LayerSpec fc = layer("fc", "FC", {"x"});
  fc.units = 4;
  GraphSpec spec = spec_with({{"x", {4, 8}}}, {fc});
  CHECK(build_ok(spec).parameters == 32);
  spec.parameters = 0;
  CHECK(build_ok(spec).parameters == 0);
  spec.parameters = 25557032;
  CHECK(build_ok(spec).parameters == 25557032);
  // The weight model still counts its own: only the graph's total is given.
  CHECK(model_of(build_ok(spec), 0).weight_elements == 32);
  spec.parameters = -2;
  CHECK(build_error(spec).where == "parameters");
}
