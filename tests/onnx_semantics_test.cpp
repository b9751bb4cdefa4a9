// What an imported model's layers run as ONNX defines them: the importer's
// meta.onnx_layers (core/docs/import.md, "What the layers run") on models
// built in code and on the fixtures, its way into the JAX program's plan
// (core/docs/export.md, "The graph"), and the refusal of a malformed entry.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "export_util.hpp"
#include "model/onnx/onnx_import.hpp"
#include "onnx_model_builder.hpp"
#include "pase/export.hpp"
#include "pase/import.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::onnx;
using nlohmann::json;
using pase::testing::contains;
using pase::testing::why;
using namespace onnx_test;

namespace {

// The graph's meta.onnx_layers.
json layers_meta(const GraphSpec& spec) {
  const json meta = json::parse(spec.meta_json);
  CHECK(meta["source"] == "onnx");
  return meta.value("onnx_layers", json::object());
}

GraphSpec imported(const Model& m) {
  Result<GraphSpec> spec = translate(m, {});
  REQUIRE_MESSAGE(spec.ok(), why(spec));
  Result<Graph> g = build_graph(*spec);
  REQUIRE_MESSAGE(g.ok(), why(g));
  return *spec;
}

GraphSpec fixture(const std::string& file, int64_t batch = 8) {
  FileSource source;
  REQUIRE_FALSE(source.open(std::string(PASE_TEST_DATA_DIR) + "/onnx/" + file));
  ImportOptions options;
  options.batch = batch;
  Result<GraphSpec> spec = import_onnx(source, options);
  REQUIRE_MESSAGE(spec.ok(), why(spec));
  return *spec;
}

}  // namespace

TEST_CASE("onnx semantics: each layer's entry says what it runs as ONNX defines it") {
  Builder b;
  b.input("x", {2, 3, 8, 8}).weight("w", {4, 3, 3, 3}).weight("bias", {4});
  b.weight("gamma", {4}).weight("beta", {4}).weight("mean", {4}).weight("var", {4});
  b.weight("fc_w", {4, 5}).weight("fc_b", {5}).weight("shift", {4, 1, 1});
  b.constant("lo", {}, {0.0}).constant("hi", {}, {6.0}).constant("half", {}, {0.5});
  b.node("Conv", {"x", "w", "bias"}, {"c"}, "conv").attributes = {ints_attr("pads", {1, 1, 1, 1})};
  b.node("Relu", {"c"}, {"r"}, "relu");
  b.node("BatchNormalization", {"r", "gamma", "beta", "mean", "var"}, {"n"}, "bn").attributes = {
      float_attr("epsilon", 1e-3)};
  b.node("LeakyRelu", {"n"}, {"l"}, "leaky").attributes = {float_attr("alpha", 0.25)};
  b.node("Sub", {"shift", "l"}, {"s"}, "sub");
  b.node("MaxPool", {"s"}, {"p"}, "max").attributes = {ints_attr("kernel_shape", {2, 2}),
                                                       ints_attr("strides", {2, 2})};
  b.node("AveragePool", {"p"}, {"a"}, "avg").attributes = {ints_attr("kernel_shape", {3, 3}),
                                                           ints_attr("pads", {1, 1, 1, 1}),
                                                           int_attr("count_include_pad", 1)};
  b.node("Clip", {"a", "lo", "hi"}, {"k"}, "relu6");
  b.node("Mul", {"k", "half"}, {"h"}, "half");
  b.node("GlobalAveragePool", {"h"}, {"g"}, "gap");
  b.node("Flatten", {"g"}, {"f"}, "flat");
  b.node("Gemm", {"f", "fc_w", "fc_b"}, {"y"}, "fc").attributes = {float_attr("alpha", 2.0),
                                                                   float_attr("beta", 0.5)};
  b.node("LogSoftmax", {"y"}, {"z"}, "logp").attributes = {int_attr("axis", 1)};
  const GraphSpec spec = imported(b.m);
  const json e = layers_meta(spec);
  // Conv's bias as a [c, 1, 1] operand, then the ReLU fused after it.
  CHECK(e["conv"] ==
        json::parse(R"({"pointwise": [{"op": "Add", "weight": [4, 1, 1]}, {"op": "Relu"}]})"));
  const json& bn = e["bn"];
  CHECK(bn["norm"] == "batch");
  CHECK(bn["epsilon"].get<double>() == doctest::Approx(1e-3));
  CHECK(bn["axis"] == 1);
  CHECK(bn["scale"] == true);
  CHECK(bn["bias"] == true);
  // An Activation (the Norm has no pw): the LeakyRelu, then the Sub of a
  // weight with the activation second.
  REQUIRE(e["leaky"]["pointwise"].size() == 2);
  CHECK(e["leaky"]["pointwise"][0]["op"] == "LeakyRelu");
  CHECK(e["leaky"]["pointwise"][0]["alpha"].get<double>() == doctest::Approx(0.25));
  CHECK(e["leaky"]["pointwise"][1] ==
        json::parse(R"({"op": "Sub", "weight": [4, 1, 1], "swapped": true})"));
  CHECK(e["max"] == json::parse(R"({"pool": "max", "pads": [0, 0, 0, 0]})"));
  CHECK(e["avg"] ==
        json::parse(R"({"pool": "average", "count_include_pad": true, "pads": [1, 1, 1, 1]})"));
  CHECK(e["relu6"] == json::parse(R"({"pointwise": [{"op": "Clip", "min": 0.0, "max": 6.0},
                                                     {"op": "Mul", "constant": 0.5}]})"));
  CHECK(e["gap"] == json::parse(R"({"pool": "average", "global": true})"));
  CHECK(e["fc"] == json::parse(R"({"alpha": 2.0, "beta": 0.5,
                                    "pointwise": [{"op": "Add", "weight": [5]}]})"));
  CHECK(e["logp"] == json::parse(R"({"softmax": "log"})"));
  // Only the layers that have something to say.
  CHECK(e.size() == 9);
  CHECK_FALSE(e.contains("flat"));
}

TEST_CASE("onnx semantics: LayerNormalization, the decomposed LayerNorm, two activations") {
  Builder b;
  b.input("x", {2, 5, 8}).weight("gamma", {8}).weight("beta", {8});
  b.constant("two", {}, {2.0}).constant("eps", {}, {1e-6});
  b.node("LayerNormalization", {"x", "gamma"}, {"ln"}, "ln").attributes = {
      float_attr("epsilon", 1e-4)};
  b.node("ReduceMean", {"ln"}, {"m"}, "/dec/ReduceMean").attributes = {ints_attr("axes", {-1})};
  b.node("Sub", {"ln", "m"}, {"d"}, "");
  b.node("Pow", {"d", "two"}, {"p"}, "");
  b.node("ReduceMean", {"p"}, {"v"}, "").attributes = {ints_attr("axes", {-1})};
  b.node("Add", {"v", "eps"}, {"ve"}, "");
  b.node("Sqrt", {"ve"}, {"sd"}, "");
  b.node("Div", {"d", "sd"}, {"n"}, "");
  b.node("Mul", {"n", "gamma"}, {"g"}, "");
  b.node("Mul", {"g", "x"}, {"y"}, "product");
  const json e = layers_meta(imported(b.m));
  CHECK(e["ln"]["norm"] == "layer");
  CHECK(e["ln"]["epsilon"].get<double>() == doctest::Approx(1e-4));
  CHECK(e["ln"]["axis"] == 2);
  CHECK(e["ln"]["scale"] == true);
  CHECK(e["ln"]["bias"] == false);
  const json& dec = e["dec/LayerNorm"];
  CHECK(dec["norm"] == "layer");
  CHECK(dec["epsilon"].get<double>() == doctest::Approx(1e-6));
  CHECK(dec["scale"] == true);
  CHECK(dec["bias"] == false);
  CHECK(e["product"] == json::parse(R"({"elementwise": "Mul"})"));
}

TEST_CASE("onnx semantics: a point-wise operand of unknown values leaves the layer's list out") {
  Builder b;
  b.input("x", {4, 16}).weight("w", {16, 16});
  b.constant("big", {4, 16}, {});  // its values are not in the file
  b.node("MatMul", {"x", "w"}, {"h"}, "fc");
  b.node("Relu", {"h"}, {"r"}, "relu");
  b.node("Add", {"r", "big"}, {"y"}, "add");
  const GraphSpec spec = imported(b.m);
  REQUIRE(spec.layers.size() == 1);
  CHECK(spec.layers[0].pw == 2);
  CHECK_FALSE(layers_meta(spec).contains("fc"));
}

TEST_CASE("onnx semantics: the fixtures record their pools, norms and point-wise ops") {
  // tiny_cnn: BatchNorm folded into the convolutions' biases, then ReLU.
  json e = layers_meta(fixture("tiny_cnn.onnx"));
  int convs = 0, max_pools = 0, global = 0;
  for (const auto& [name, entry] : e.items()) {
    CAPTURE(name);
    if (entry.contains("pointwise") && entry["pointwise"].size() == 2) {
      ++convs;
      CHECK(entry["pointwise"][0]["op"] == "Add");
      CHECK(entry["pointwise"][1] == json{{"op", "Relu"}});
    }
    max_pools += entry.value("pool", "") == "max" ? 1 : 0;
    global += entry.value("global", false) ? 1 : 0;
  }
  CHECK(convs == 2);
  CHECK(max_pools == 1);
  CHECK(global == 1);
  // MobileNet-v2: ReLU6 exported as Clip(0, 6), fused into the convolutions.
  e = layers_meta(fixture("mobilenet_v2.onnx"));
  int clips = 0;
  for (const auto& [name, entry] : e.items())
    for (const json& p : entry.value("pointwise", json::array()))
      if (p["op"] == "Clip") {
        ++clips;
        CHECK(p["min"] == 0.0);
        CHECK(p["max"] == 6.0);
      }
  CHECK(clips == 35);
  // DenseNet-121: the BatchNorms after a concatenation stay BatchNorms.
  e = layers_meta(fixture("densenet121.onnx"));
  int batch = 0, average = 0;
  for (const auto& [name, entry] : e.items()) {
    batch += entry.value("norm", "") == "batch" ? 1 : 0;
    average += entry.value("pool", "") == "average" && !entry.contains("global") ? 1 : 0;
  }
  CHECK(batch == 62);
  CHECK(average == 3);
}

TEST_CASE("onnx semantics: the JAX program carries each layer's entry") {
  // At a batch of 16, which --reduce makes 8.
  const GraphSpec spec = fixture("tiny_cnn.onnx", 16);
  Result<Graph> g = build_graph(spec);
  REQUIRE_MESSAGE(g.ok(), why(g));
  const Cluster c{.devices = 8};
  Result<Plan> p = plan(*g, c);
  REQUIRE_MESSAGE(p.ok(), why(p));
  const Exported out = testing::export_ok(ExportTarget::kJax, PlanView{&*g, &*g, &c, &*p, nullptr});
  CHECK(contains(out.text, "def onnx_pool("));
  const json data = testing::export_embedded(out.text);
  const json meta = layers_meta(spec);
  for (const char* variant : {"full", "reduced"}) {
    CAPTURE(variant);
    REQUIRE(data["variants"][variant].is_object());
    int with = 0;
    for (const json& l : data["variants"][variant]["layers"]) {
      const std::string name = l["name"];
      CAPTURE(name);
      CHECK(l.contains("onnx") == meta.contains(name));
      if (l.contains("onnx")) {
        CHECK(l["onnx"] == meta[name]);
        ++with;
      }
    }
    CHECK(with == static_cast<int>(meta.size()));
  }
}

TEST_CASE("onnx semantics: a hand-written graph's entries round-trip and are checked") {
  const std::string graph = R"({"format": "pase-graph/1", "name": "g",
    "inputs": {"x": [8, 4, 8, 8]},
    "layers": [
      {"name": "conv", "op": "Conv", "inputs": ["x"], "filter": [4, 4, 3, 3], "pad": [1, 1], "pw": 1},
      {"name": "bn", "op": "Norm", "inputs": ["conv"], "axis": 0},
      {"name": "pool", "op": "Pool", "inputs": ["bn"], "window": [2, 2], "stride": [2, 2]}],
    "meta": {"onnx_layers": )";
  const auto emit = [&](const std::string& entries) -> Result<Exported> {
    Result<Graph> g = load_graph(graph + entries + "}}");
    REQUIRE_MESSAGE(g.ok(), why(g));
    const Cluster c{.devices = 2};
    Result<Plan> p = plan(*g, c);
    REQUIRE_MESSAGE(p.ok(), why(p));
    return export_plan(ExportTarget::kJax, PlanView{&*g, &*g, &c, &*p, nullptr});
  };
  const std::string good =
      R"({"conv": {"pointwise": [{"op": "HardSigmoid", "alpha": 0.1}]},
          "bn": {"norm": "batch", "epsilon": 0.001, "axis": 1, "scale": true, "bias": true},
          "pool": {"pool": "max"}})";
  // Kept verbatim: written back as read.
  Result<GraphSpec> spec = parse_graph_spec(graph + good + "}}");
  REQUIRE_MESSAGE(spec.ok(), why(spec));
  Result<GraphSpec> again = parse_graph_spec(write_graph(*spec));
  REQUIRE_MESSAGE(again.ok(), why(again));
  CHECK(json::parse(again->meta_json)["onnx_layers"] == json::parse(good));
  Result<Exported> ok = emit(good);
  REQUIRE_MESSAGE(ok.ok(), why(ok));
  CHECK(testing::export_embedded(ok->text)["variants"]["full"]["layers"][1]["onnx"]["norm"] ==
        "batch");

  const auto refused = [&](const std::string& entries, const std::string& where,
                           const std::string& says) {
    CAPTURE(entries);
    Result<Exported> e = emit(entries);
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().where == where);
    CHECK_MESSAGE(contains(e.error().message, says), e.error().message);
  };
  refused(R"({"nope": {"pool": "max"}})", "meta.onnx_layers.nope", "names no layer");
  refused(R"({"conv": {"pointwise": [{"op": "Relu"}, {"op": "Relu"}]}})",
          "meta.onnx_layers.conv.pointwise", "the layer's 1 point-wise");
  refused(R"({"conv": {"pointwise": [{"op": "Swish"}]}})", "meta.onnx_layers.conv.pointwise[0].op",
          "not a point-wise op");
  refused(R"({"conv": {"pointwise": [{"op": "Add", "weight": [3, 1, 1]}]}})",
          "meta.onnx_layers.conv.pointwise[0].weight", "broadcasts");
  refused(R"({"bn": {"norm": "group", "axis": 1}})", "meta.onnx_layers.bn.norm", "one of");
  refused(R"({"bn": {"norm": "batch", "axis": 4}})", "meta.onnx_layers.bn.axis", "an axis");
  refused(R"({"pool": {"pool": "max", "pads": [1, 1, 1, 1]}})", "meta.onnx_layers.pool.pads",
          "another output");
  refused(R"({"pool": {"pool": "max", "typo": 1}})", "meta.onnx_layers.pool.typo", "not a field");
}
