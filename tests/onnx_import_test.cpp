// The ONNX importer's translation (core/docs/import.md) on models built in
// code: fusion, folding of shape sub-graphs, the decomposed LayerNorm,
// slices, padding, embeddings, parameter counting and the errors.
#include "model/onnx/onnx_import.hpp"

#include <doctest/doctest.h>

#include "onnx_model_builder.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::onnx;
using pase::testing::contains;
using namespace onnx_test;
using pase::testing::why;

namespace {

GraphSpec imported(const Model& m, const ImportOptions& options = {}) {
  Result<GraphSpec> spec = translate(m, options);
  REQUIRE_MESSAGE(spec.ok(), why(spec));
  Result<Graph> g = build_graph(*spec);
  REQUIRE_MESSAGE(g.ok(), why(g));
  return *spec;
}

Error import_error(const Model& m, const ImportOptions& options = {}) {
  Result<GraphSpec> spec = translate(m, options);
  REQUIRE_FALSE(spec.ok());
  return spec.error();
}

const LayerSpec& only_layer(const GraphSpec& s, const std::string& op) {
  auto it = std::find_if(s.layers.begin(), s.layers.end(),
                         [&](const LayerSpec& l) { return l.op == op; });
  REQUIRE(it != s.layers.end());
  return *it;
}

}  // namespace

TEST_CASE("onnx: Conv with a bias and a ReLU is one Conv layer with two point-wise ops") {
  Builder b;
  b.input("x", {2, 3, 8, 8}).weight("w", {4, 3, 3, 3}).weight("bias", {4});
  b.node("Conv", {"x", "w", "bias"}, {"c"}, "/conv/Conv").attributes = {
      ints_attr("pads", {1, 1, 1, 1})};
  b.node("Relu", {"c"}, {"y"});
  GraphSpec s = imported(b.m);
  REQUIRE(s.layers.size() == 1);
  const LayerSpec& conv = s.layers[0];
  CHECK(conv.name == "conv/Conv");
  CHECK(conv.filter == Shape{4, 3, 3, 3});
  CHECK(conv.pad == std::array<int64_t, 2>{1, 1});
  CHECK(conv.pw == 2);
  CHECK(s.parameters == 4 * 3 * 3 * 3 + 4);
  CHECK(s.inputs == std::vector<std::pair<std::string, Shape>>{{"x", {2, 3, 8, 8}}});
}

TEST_CASE("onnx: a tensor read twice is not fused, two activations make an Elementwise") {
  Builder b;
  b.input("x", {4, 16}).weight("w", {16, 16});
  b.node("MatMul", {"x", "w"}, {"h"}, "fc");
  b.node("Relu", {"h"}, {"r"}, "relu");
  b.node("Add", {"h", "r"}, {"y"}, "res");
  GraphSpec s = imported(b.m);
  REQUIRE(s.layers.size() == 3);
  CHECK(s.layers[0].op == "FC");
  CHECK(s.layers[0].pw == 0);
  CHECK(s.layers[1].op == "Activation");
  CHECK(s.layers[2].op == "Elementwise");
  CHECK(s.parameters == 256);
}

TEST_CASE("onnx: weights given as graph inputs (export_params=False) count as parameters") {
  Builder b;
  b.input("x", {1, 3, 8, 8}).input("conv.weight", {8, 3, 1, 1}).input("unused", {5});
  b.node("Conv", {"x", "conv.weight"}, {"y"});
  GraphSpec s = imported(b.m);
  CHECK(s.inputs.size() == 1);
  CHECK(s.parameters == 24);
}

TEST_CASE("onnx: the decomposed LayerNorm with its affine step is one Norm") {
  Builder b;
  b.input("x", {2, 5, 8}).weight("gamma", {8}).weight("beta", {8});
  b.scalar("two", 2.0).scalar("eps", 1e-5);
  b.node("ReduceMean", {"x"}, {"m"}, "/ln/ReduceMean").attributes = {ints_attr("axes", {-1})};
  b.node("Sub", {"x", "m"}, {"d"});
  b.node("Pow", {"d", "two"}, {"p"});
  b.node("ReduceMean", {"p"}, {"v"}).attributes = {ints_attr("axes", {-1})};
  b.node("Add", {"v", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"sd"});
  b.node("Div", {"d", "sd"}, {"n"});
  b.node("Mul", {"n", "gamma"}, {"g"});
  b.node("Add", {"g", "beta"}, {"y"});
  b.node("Relu", {"y"}, {"z"});
  GraphSpec s = imported(b.m);
  REQUIRE(s.layers.size() == 2);
  CHECK(s.layers[0].op == "Norm");
  CHECK(s.layers[0].name == "ln/LayerNorm");
  CHECK(s.layers[0].axis == -1);
  CHECK(s.layers[1].op == "Activation");
  CHECK(s.parameters == 16);
}

TEST_CASE("onnx: a Reshape target computed from Shape, Gather, Unsqueeze and Concat is folded") {
  Builder b;
  b.input("x", {2, 16, 64}).ints("zero", {0}).ints("tail", {4, 16});
  b.node("Shape", {"x"}, {"s"});
  Tensor idx;
  idx.data_type = kInt64;
  idx.has_values = true;
  idx.ints = {1};
  b.node("Constant", {}, {"i"}).attributes = {tensor_attr("value", idx)};  // a scalar index
  b.node("Gather", {"s", "i"}, {"len"}).attributes = {int_attr("axis", 0)};
  b.node("Unsqueeze", {"len", "zero"}, {"len1"});
  b.node("Gather", {"s", "zero"}, {"batch"});
  b.node("Concat", {"batch", "len1", "tail"}, {"target"}).attributes = {int_attr("axis", 0)};
  b.node("Reshape", {"x", "target"}, {"y"}, "split_heads");
  GraphSpec s = imported(b.m);
  REQUIRE(s.layers.size() == 1);
  CHECK(s.layers[0].op == "Reshape");
  CHECK(s.layers[0].shape == Shape{2, 16, 4, 16});
}

TEST_CASE("onnx: equal slices of one tensor become one Split, attention is an Einsum") {
  Builder b;
  b.input("x", {2, 4, 16, 24}).ints("s0", {0}).ints("s1", {8}).ints("s2", {16}).ints("end", {24});
  b.ints("ax", {3});
  b.node("Slice", {"x", "s0", "s1", "ax"}, {"q"}, "q");
  b.node("Slice", {"x", "s1", "s2", "ax"}, {"k"}, "k");
  b.node("Transpose", {"k"}, {"kt"}, "kt").attributes = {ints_attr("perm", {0, 1, 3, 2})};
  b.node("MatMul", {"q", "kt"}, {"a"}, "scores");
  GraphSpec s = imported(b.m);
  const LayerSpec& split = only_layer(s, "Split");
  CHECK(split.num == 3);
  CHECK(split.axis == 3);
  const LayerSpec& scores = only_layer(s, "Einsum");
  CHECK(scores.equation == "bhsk,bhkn->bhsn");
  CHECK(scores.inputs[0].name == split.name + ":0");
  CHECK(s.parameters == 0);
}

TEST_CASE("onnx: a zero Pad before a Conv becomes the Conv's padding") {
  Builder b;
  b.input("x", {1, 3, 8, 8}).weight("w", {4, 3, 3, 3}).ints("pads", {0, 0, 1, 1, 0, 0, 1, 1});
  b.node("Pad", {"x", "pads"}, {"p"});
  b.node("Conv", {"p", "w"}, {"y"});
  GraphSpec s = imported(b.m);
  REQUIRE(s.layers.size() == 1);
  CHECK(s.layers[0].pad == std::array<int64_t, 2>{1, 1});
}

TEST_CASE("onnx: Gather of a weight by token ids is an Embedding") {
  Builder b;
  b.input("ids", {2, 7}, kInt64).weight("table", {100, 32});
  b.node("Gather", {"table", "ids"}, {"e"}, "embed");
  b.node("Relu", {"e"}, {"r"});
  GraphSpec s = imported(b.m);
  const LayerSpec& e = only_layer(s, "Embedding");
  CHECK(e.vocab == 100);
  CHECK(e.dim == 32);
  CHECK(s.parameters == 3200);
}

TEST_CASE("onnx: dynamic dimensions take their sizes from the options") {
  Builder b;
  b.dims_input("x", std::vector<Dim>{Dim{-1, "batch"}, Dim{16, ""}}).weight("w", {16, 4});
  b.node("MatMul", {"x", "w"}, {"y"});
  Error e = import_error(b.m);
  CHECK(e.where == "dims.batch");
  CHECK(contains(e.message, "'batch'"));
  ImportOptions options;
  options.dims = {{"batch", 32}};
  CHECK(imported(b.m, options).inputs[0].second == Shape{32, 16});
  ImportOptions unknown;
  unknown.dims = {{"batch", 2}, {"sequence", 4}};
  Error named = import_error(b.m, unknown);
  CHECK(named.where == "dims.sequence");
  CHECK(contains(named.message, "no dynamic dimension 'sequence' (it has: batch)"));
  ImportOptions by_batch;
  by_batch.batch = 8;
  CHECK(imported(b.m, by_batch).inputs[0].second == Shape{8, 16});
}

TEST_CASE("onnx: errors name the node, the op and what is supported") {
  SUBCASE("unsupported op") {
    Builder b;
    b.input("x", {2, 4});
    b.node("NonMaxSuppression", {"x"}, {"y"}, "nms");
    Error e = import_error(b.m);
    CHECK(e.where == "nodes[0] (NonMaxSuppression 'nms')");
    CHECK(contains(e.message, "not supported"));
    CHECK(contains(e.message, "Conv"));
    CHECK(contains(e.message, "MatMul"));
  }
  SUBCASE("opset too old") {
    Builder b(9);
    b.input("x", {2, 4});
    Error e = import_error(b.m);
    CHECK(e.where == "opset");
    CHECK(contains(e.message, "too old"));
  }
  SUBCASE("a shape that cannot be inferred") {
    Builder b;
    b.input("x", {2, 4}).input("y", {8}, kInt64);
    b.node("Reshape", {"x", "y"}, {"r"}, "reshape");
    Error e = import_error(b.m);
    CHECK(contains(e.where, "reshape"));
    CHECK(contains(e.message, "cannot infer the shape of 'r'"));
  }
  SUBCASE("an undefined input") {
    Builder b;
    b.input("x", {2, 4});
    b.node("Relu", {"nowhere"}, {"r"});
    CHECK(contains(import_error(b.m).message, "topological order"));
  }
  SUBCASE("unequal slices") {
    Builder b;
    b.input("x", {2, 10}).ints("s", {0}).ints("e", {3}).ints("ax", {1});
    b.node("Slice", {"x", "s", "e", "ax"}, {"y"});
    CHECK(contains(import_error(b.m).message, "equal parts"));
  }
}
