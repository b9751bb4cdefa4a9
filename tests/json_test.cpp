// pase-graph/1 documents (core/docs/graph-format.md): syntax, fields, defaults and round
// trips. Errors must name the field; writing a graph and reading it back must give the same
// graph and the same plan. The other JSON documents: json_api_test.cpp.
#include <doctest/doctest.h>

#include <chrono>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/cost_model.hpp"
#include "pase/graph.hpp"
#include "pase/import.hpp"
#include "pase/json_api.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"
#include "util/json_util.hpp"

using namespace pase;
using namespace pase::testing;
using nlohmann::json;

namespace {

Error spec_error(const std::string& text) {
  Result<GraphSpec> s = parse_graph_spec(text);
  REQUIRE_FALSE(s.ok());
  return s.error();
}

// Two graphs agree vertex by vertex and edge by edge.
void check_same_graph(const Graph& a, const Graph& b) {
  REQUIRE(a.vertices.size() == b.vertices.size());
  REQUIRE(a.edges.size() == b.edges.size());
  CHECK(a.name == b.name);
  CHECK(a.cutoff == b.cutoff);
  CHECK(a.parameters == b.parameters);
  for (size_t i = 0; i < a.vertices.size(); ++i) {
    CAPTURE(i);
    CHECK(a.vertices[i].name == b.vertices[i].name);
    CHECK(a.vertices[i].op == b.vertices[i].op);
    CHECK(a.vertices[i].dims == b.vertices[i].dims);
    CHECK(a.vertices[i].dom == b.vertices[i].dom);
    CHECK(a.vertices[i].kinds == b.vertices[i].kinds);
    CHECK(model_of(a, static_cast<int>(i)).pinned == model_of(b, static_cast<int>(i)).pinned);
  }
  for (size_t i = 0; i < a.edges.size(); ++i) {
    CHECK(a.edges[i].src == b.edges[i].src);
    CHECK(a.edges[i].src_output == b.edges[i].src_output);
    CHECK(a.edges[i].dst == b.edges[i].dst);
    CHECK(a.edges[i].dst_slot == b.edges[i].dst_slot);
  }
}

}  // namespace

// ---- Graph documents: syntax ---------------------------------------------------------------

TEST_CASE("json: empty text and syntax errors are errors with a position") {
  CHECK_FALSE(parse_graph_spec("").ok());
  Error e = spec_error("{\n  \"layers\": [\n}");
  CHECK(contains(e.message, "line"));
  CHECK_FALSE(parse_graph_spec("{} trailing").ok());
}

TEST_CASE("json: a document that is not an object is an error") {
  CHECK_FALSE(parse_graph_spec("[]").ok());
  CHECK_FALSE(parse_graph_spec("42").ok());
  CHECK_FALSE(parse_graph_spec("null").ok());
}

TEST_CASE("json: nesting deeper than the limit is refused") {
  std::string deep = std::string(kMaxJsonDepth + 10, '[') + std::string(kMaxJsonDepth + 10, ']');
  CHECK_FALSE(parse_graph_spec(deep).ok());
  std::string text = graph_doc("[]", R"(, "meta": )" + deep);
  CHECK_FALSE(parse_graph_spec(text).ok());
}

TEST_CASE("json: duplicate keys are refused") {
  std::string text = R"({"format": "pase-graph/1", "cutoff": 4, "cutoff": 2, "layers": []})";
  CHECK_FALSE(parse_graph_spec(text).ok());
}

TEST_CASE("json: a 200,000-key object keeps its order, and a key repeated anywhere is refused") {
  // The keys in an order no sorted map would keep: 199999, 0, 199998, 1, ...
  constexpr int kKeys = 200000;
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "k" + text.
  const auto key = [](int n) {
    std::string k = "k";
    k += std::to_string(n);
    return k;
  };
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys / 2; ++i) {
    keys.push_back(key(kKeys - 1 - i));
    keys.push_back(key(i));
  }
  const auto object = [&](const std::string& extra) {
    std::string text = "{";
    for (size_t i = 0; i < keys.size(); ++i) {
      text += '"';
      text += keys[i];
      text += "\": ";
      text += i == 7 ? std::string(R"({"a": [1, {"b": 2}]})") : std::to_string(i);
      text += ", ";
    }
    text += extra;
    text += '}';
    return text;
  };
  Result<json_detail::Json> doc = json_detail::parse_document(object(R"("last": true)"));
  REQUIRE_MESSAGE(doc.ok(), doc.error().to_string());
  REQUIRE(doc->size() == kKeys + 1);
  size_t i = 0;
  for (auto it = doc->begin(); it != doc->end() && i < keys.size(); ++it, ++i) {
    if (it.key() != keys[i] || (i != 7 && it.value() != i)) FAIL("key " << i << " is " << it.key());
  }
  CHECK((*doc)["k4"] == 9);
  CHECK((*doc)[keys[7]]["a"][1]["b"] == 2);
  CHECK(doc->back() == true);
  // A repeat of the first key after all the others (found by the hash table
  // of a large object), and one in a small nested object.
  Result<json_detail::Json> repeated = json_detail::parse_document(object(R"("k199999": 0)"));
  REQUIRE_FALSE(repeated.ok());
  CHECK(repeated.error().message == "duplicate field 'k199999'");
  CHECK(repeated.error().where == "k199999");
  repeated = json_detail::parse_document(R"({"x": [0, {"y": {"z": 1, "z": 2}}]})");
  REQUIRE_FALSE(repeated.ok());
  CHECK(repeated.error().where == "x[1].y.z");
}

TEST_CASE(
    "json: a config with 400,000 extra fields and a strategy with 400,000 keys read at once") {
  // Not a timing of the parser (pase bench --json does that) but a bound that
  // only a parser linear in the text meets: one that searched the keys
  // before each new one took 47 s for 100,000 fields, minutes for these.
  constexpr int kFields = 400000;
  std::string extra;
  for (int i = 0; i < kFields; ++i) {
    extra += ", \"extra_";
    extra += std::to_string(i);
    extra += "\": ";
    extra += std::to_string(i);
  }
  const std::string config =
      read_text(std::string(PASE_SOURCE_DIR) + "/examples/hf/tiny-llama/config.json");
  const size_t close = config.rfind('}');
  REQUIRE(close != std::string::npos);
  const std::string big_config = config.substr(0, close) + extra + "}";
  const std::string strategy =
      R"({"vertices": [{"config": [2, 1]}, {"config": [1, 4]}])" + extra + "}";

  const auto start = std::chrono::steady_clock::now();
  MemorySource source(big_config);  // as the module's importModel reads a dropped file
  json imported = json::parse(import_model_json(source, "{}"));
  Result<Strategy> read = parse_strategy(strategy);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_MESSAGE(!imported.contains("error"), imported.dump());
  CHECK(imported["config"]["hidden_size"] == 64);
  REQUIRE_MESSAGE(read.ok(), read.error().to_string());
  CHECK(*read == Strategy{{2, 1}, {1, 4}});
  CHECK_MESSAGE(seconds < 20, seconds << " s");
}

// ---- Graph documents: fields ------------------------------------------------------------------

TEST_CASE("json: unknown, missing and mistyped top-level fields are named") {
  CHECK(spec_error(R"({"format": "pase-graph/1", "layerz": []})").where == "layerz");
  Error missing = spec_error(R"({"format": "pase-graph/1", "inputs": {}})");
  CHECK(missing.where == "layers");
  CHECK(contains(missing.message, "missing"));
  CHECK(spec_error(R"({"format": "pase-graph/2", "layers": []})").where == "format");
  CHECK(spec_error(graph_doc("[]", R"(, "cutoff": 0)")).where == "cutoff");
  CHECK(spec_error(graph_doc("[]", R"(, "cutoff": 2.5)")).where == "cutoff");
  CHECK(spec_error(graph_doc("[]", R"(, "name": 7)")).where == "name");
  CHECK(spec_error(graph_doc("[]", R"(, "meta": [])")).where == "meta");
  CHECK(spec_error(graph_doc("{}")).where == "layers");
  CHECK(spec_error(R"({"inputs": {"x": [8, 0]}, "layers": []})").where == "inputs.x[1]");
  CHECK(spec_error(R"({"inputs": {"x": 8}, "layers": []})").where == "inputs.x");
  CHECK(spec_error(R"({"inputs": [], "layers": []})").where == "inputs");
}

TEST_CASE("json: parameters is an optional non-negative integer, written only when given") {
  const std::string fc = R"([{"name": "fc", "op": "FC", "inputs": ["x"], "units": 4}])";
  // Absent: the layers' weights are counted (16 x 4), and nothing is written.
  Result<GraphSpec> spec = parse_graph_spec(graph_doc(fc));
  REQUIRE(spec.ok());
  CHECK(spec->parameters == -1);
  CHECK_FALSE(json::parse(write_graph(*spec)).contains("parameters"));
  CHECK(load_graph(graph_doc(fc))->parameters == 64);
  // Given: it overrides the count, and survives a round trip.
  for (int64_t n : {int64_t{0}, int64_t{25557032}, std::numeric_limits<int64_t>::max()}) {
    CAPTURE(n);
    const std::string text = graph_doc(fc, R"(, "parameters": )" + std::to_string(n));
    spec = parse_graph_spec(text);
    REQUIRE_MESSAGE(spec.ok(), why(spec));
    CHECK(spec->parameters == n);
    CHECK(load_graph(text)->parameters == n);
    const std::string written = write_graph(*spec);
    CHECK(json::parse(written)["parameters"] == n);
    CHECK(parse_graph_spec(written)->parameters == n);
  }
  for (const char* bad : {"-1", "-5", "2.5", "1e3", "\"12\"", "null", "true", "[3]"}) {
    CAPTURE(bad);
    Error e = spec_error(graph_doc(fc, std::string(R"(, "parameters": )") + bad));
    CHECK(e.where == "parameters");
  }
}

TEST_CASE("json: layer field errors name the layer and the field") {
  auto where = [](const std::string& layer) {
    return spec_error(graph_doc("[" + layer + "]")).where;
  };
  CHECK(where(R"({"name": "a", "op": "Dense", "inputs": ["x"]})") == "layers[0].op");
  CHECK(where(R"({"name": "a", "inputs": ["x"], "units": 4})") == "layers[0].op");
  CHECK(where(R"({"op": "FC", "inputs": ["x"], "units": 4})") == "layers[0].name");
  CHECK(where(R"({"name": "", "op": "FC", "inputs": ["x"], "units": 4})") == "layers[0].name");
  CHECK(where(R"({"name": "a", "op": "FC", "units": 4})") == "layers[0].inputs");
  CHECK(where(R"({"name": "a", "op": "FC", "inputs": "x", "units": 4})") == "layers[0].inputs");
  CHECK(where(R"({"name": "a", "op": "FC", "inputs": [3], "units": 4})") == "layers[0].inputs[0]");
  CHECK(where(R"({"name": "a", "op": "FC", "inputs": ["x"]})") == "layers[0].units");
  CHECK(where(R"({"name": "a", "op": "FC", "inputs": ["x"], "units": "4"})") == "layers[0].units");
  CHECK(where(R"({"name": "a", "op": "FC", "inputs": ["x"], "units": 4.0})") == "layers[0].units");
  CHECK(where(R"({"name": "a", "op": "FC", "inputs": ["x"], "units": -4})") == "layers[0].units");
  CHECK(where(R"({"name": "a", "op": "FC", "inputs": ["x"], "units": 4, "pw": -1})") ==
        "layers[0].pw");
  CHECK(where(R"({"name": "a", "op": "FC", "inputs": ["x"], "units": 4, "unit": 4})") ==
        "layers[0].unit");
  // An attribute of another op is called out as such.
  Error e = spec_error(graph_doc(R"([{"name": "a", "op": "Norm", "inputs": ["x"], "units": 4}])"));
  CHECK(e.where == "layers[0].units");
  CHECK(contains(e.message, "Norm"));
  CHECK(where(R"({"name": "a", "op": "Conv", "inputs": ["x"], "filter": [1, 2, 3]})") ==
        "layers[0].filter");
  CHECK(
      where(
          R"({"name": "a", "op": "Conv", "inputs": ["x"], "filter": [1, 1, 1, 1], "stride": [1, 2, 3]})") ==
      "layers[0].stride");
  CHECK(
      where(
          R"({"name": "a", "op": "Conv", "inputs": ["x"], "filter": [1, 1, 1, 1], "stride": 0})") ==
      "layers[0].stride");
  CHECK(
      where(R"({"name": "a", "op": "Pool", "inputs": ["x"], "window": [2, 2], "pad": [0, -1]})") ==
      "layers[0].pad[1]");
  CHECK(where(R"({"name": "a", "op": "Pool", "inputs": ["x"]})") == "layers[0].window");
  CHECK(
      where(
          R"({"name": "a", "op": "Einsum", "inputs": ["x", {"shap": [16, 4]}], "equation": "bk,kn->bn"})") ==
      "layers[0].inputs[1].shap");
  CHECK(where(R"({"name": "a", "op": "ReduceMean", "inputs": ["x"], "keepdims": 1})") ==
        "layers[0].keepdims");
  CHECK(where(R"({"name": "a", "op": "Split", "inputs": ["x"], "num": 2})") == "layers[0].axis");
  CHECK(where(R"({"name": "a", "op": "Concat", "inputs": ["x", "x"]})") == "layers[0].axis");
  CHECK(where(R"({"name": "a", "op": "LSTM", "inputs": ["x"], "units": 16})") ==
        "layers[0].layers");
  CHECK(where(R"({"name": "a", "op": "Ravel", "inputs": ["x"]})") == "layers[0].op");
  CHECK(where(R"("fc")") == "layers[0]");
}

TEST_CASE("json: an unknown op lists the known ones") {
  Error e = spec_error(graph_doc(R"([{"name": "a", "op": "Dense", "inputs": ["x"]}])"));
  CHECK(contains(e.message, "Dense"));
  CHECK(contains(e.message, "FC"));
  CHECK(contains(e.message, "LSTM"));
}

TEST_CASE("json: load_graph reports shape errors at the layer field") {
  Error e = load_error(graph_doc(
      R"([{"name": "a", "op": "FC", "inputs": ["x"], "units": 4},
          {"name": "b", "op": "Einsum", "inputs": ["a", {"shape": [5, 2]}], "equation": "bk,kn->bn"}])"));
  CHECK(e.where == "layers[1].equation");
  e = load_error(graph_doc(R"([{"name": "a", "op": "FC", "inputs": ["y"], "units": 4}])"));
  CHECK(e.where == "layers[0].inputs[0]");
  CHECK(contains(e.message, "'y'"));
}

TEST_CASE("json: defaults of the format are applied") {
  Result<GraphSpec> s = parse_graph_spec(R"({"inputs": {"img": [2, 3, 8, 8]}, "layers": [
      {"name": "c", "op": "Conv", "inputs": ["img"], "filter": [4, 3, 3, 3], "stride": 2, "pad": [1, 0]},
      {"name": "n", "op": "Norm", "inputs": ["c"]},
      {"name": "s", "op": "Softmax", "inputs": ["n"]},
      {"name": "u", "op": "Unstack", "inputs": ["s"]},
      {"name": "r", "op": "ReduceMean", "inputs": ["u:0"]}]})");
  REQUIRE_MESSAGE(s.ok(), why(s));
  CHECK(s->cutoff == 4);
  CHECK(s->name.empty());
  const auto& l = s->layers;
  CHECK(l[0].stride == std::array<int64_t, 2>{2, 2});
  CHECK(l[0].pad == std::array<int64_t, 2>{1, 0});
  CHECK(l[0].pw == 0);
  CHECK(l[1].axis == -1);
  CHECK(l[2].axis == -1);
  CHECK(l[3].axis == 0);
  CHECK_FALSE(l[4].has_axes);
  CHECK_FALSE(l[4].keepdims);
  Result<Graph> g = build_graph(*s);
  REQUIRE_MESSAGE(g.ok(), why(g));
  CHECK(g->vertices[0].dom == Shape{2, 3, 4, 3, 3, 3, 4});  // h: (8-3+2)/2+1, w: (8-3)/2+1
}

TEST_CASE("json: meta is free-form and kept") {
  std::string text = graph_doc(R"([{"name": "a", "op": "FC", "inputs": ["x"], "units": 4}])",
                               R"(, "meta": {"anything": [1, {"goes": true}], "n": 2})");
  Result<GraphSpec> s = parse_graph_spec(text);
  REQUIRE_MESSAGE(s.ok(), why(s));
  json meta = json::parse(s->meta_json);
  CHECK(meta["anything"][1]["goes"] == true);
  Result<GraphSpec> again = parse_graph_spec(write_graph(*s));
  REQUIRE(again.ok());
  CHECK(json::parse(again->meta_json) == meta);
}

// ---- Graph documents: round trips --------------------------------------------------------

TEST_CASE("json: every network survives write_graph and load_graph with the same plan") {
  for (const ModelInfo& info : list_models()) {
    CAPTURE(info.name);
    Result<GraphSpec> spec = model_spec(info.name);
    REQUIRE(spec.ok());
    std::string text = write_graph(*spec);
    CHECK(json::parse(text)["format"] == "pase-graph/1");
    Result<Graph> loaded = load_graph(text);
    REQUIRE_MESSAGE(loaded.ok(), why(loaded));
    Result<Graph> built = build_model(info.name);
    REQUIRE(built.ok());
    check_same_graph(*built, *loaded);
    // Writing the loaded document again gives the same text.
    CHECK(write_graph(*parse_graph_spec(text)) == text);
    Result<Plan> a = plan(*built, Cluster{.devices = 8});
    Result<Plan> b = plan(*loaded, Cluster{.devices = 8});
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->cost == b->cost);
    CHECK(a->strategy == b->strategy);
  }
}

TEST_CASE("json: export_model_json writes the network document") {
  std::string text = export_model_json("rnnlm", 32);
  Result<Graph> g = load_graph(text);
  REQUIRE_MESSAGE(g.ok(), why(g));
  Result<Graph> built = build_model("rnnlm", 32);
  REQUIRE(built.ok());
  check_same_graph(*built, *g);
  json error = json::parse(export_model_json("nope", 0));
  CHECK(error["error"]["where"] == "model");
}

TEST_CASE("json: export_model_json refuses a batch that is not a whole number") {
  // The module passes JavaScript numbers straight through.
  for (double batch : {-1.0, 1.5, 1e300, std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN()}) {
    CAPTURE(batch);
    json doc = json::parse(export_model_json("alexnet", batch));
    CHECK(doc["error"]["where"] == "batch");
    CHECK(contains(doc["error"]["message"].get<std::string>(), "whole number"));
  }
  json doc = json::parse(export_model_json("alexnet", 0));
  CHECK(doc["inputs"]["image"][0] == 128);  // 0: the network's default batch
}

TEST_CASE("json: every op attribute survives a round trip") {
  std::string text = R"({"format": "pase-graph/1", "name": "all-ops", "cutoff": 2,
    "inputs": {"img": [4, 3, 12, 12], "tok": [4, 6], "pos": [4, 6, 8]},
    "layers": [
      {"name": "conv", "op": "Conv", "inputs": ["img"], "filter": [8, 3, 3, 3], "stride": [2, 1], "pad": 1, "pw": 1},
      {"name": "pool", "op": "Pool", "inputs": ["conv"], "window": [2, 2], "stride": 2, "pad": [0, 1]},
      {"name": "bn", "op": "Norm", "inputs": ["pool"], "axis": 0},
      {"name": "gap", "op": "ReduceMean", "inputs": ["bn"], "axes": [2, 3], "keepdims": true},
      {"name": "flat", "op": "Reshape", "inputs": ["gap"], "shape": [4, 8]},
      {"name": "emb", "op": "Embedding", "inputs": ["tok"], "vocab": 50, "dim": 8},
      {"name": "add", "op": "Elementwise", "inputs": ["emb", "pos"], "pw": 1},
      {"name": "lstm", "op": "LSTM", "inputs": ["add"], "units": 8, "layers": 2},
      {"name": "proj", "op": "Einsum", "inputs": ["lstm", {"shape": [8, 8]}], "equation": "bse,ef->bsf", "pw": 2},
      {"name": "tr", "op": "Transpose", "inputs": ["proj"], "perm": [1, 0, 2]},
      {"name": "parts", "op": "Unstack", "inputs": ["tr"]},
      {"name": "st", "op": "Stack", "inputs": ["parts:0", "parts:1"], "axis": 1},
      {"name": "halves", "op": "Split", "inputs": ["flat"], "num": 2, "axis": 1},
      {"name": "cat", "op": "Concat", "inputs": ["halves:1", "halves:0"], "axis": -1},
      {"name": "fc", "op": "FC", "inputs": ["cat"], "units": 6},
      {"name": "sm", "op": "Softmax", "inputs": ["fc"], "axis": 0},
      {"name": "loss", "op": "SoftmaxCrossEntropy", "inputs": ["sm"]}
    ], "meta": {"k": 1}})";
  Result<Graph> g = load_graph(text);
  REQUIRE_MESSAGE(g.ok(), why(g));
  std::string written = write_graph(*parse_graph_spec(text));
  Result<Graph> again = load_graph(written);
  REQUIRE_MESSAGE(again.ok(), why(again));
  check_same_graph(*g, *again);
  CHECK(write_graph(*parse_graph_spec(written)) == written);
  // The written document equals the input as JSON, except that defaults may
  // be left out: compare the attributes that were given.
  json in = json::parse(text), out = json::parse(written);
  CHECK(out["cutoff"] == 2);
  CHECK(out["name"] == "all-ops");
  CHECK(out["inputs"] == in["inputs"]);
  for (size_t i = 0; i < in["layers"].size(); ++i)
    for (const auto& item : in["layers"][i].items()) {
      const std::string key = item.key();
      CAPTURE(i);
      CAPTURE(key);
      CHECK(out["layers"][i][key] == item.value());
    }
  CHECK(plan(*g, Cluster{.devices = 4})->cost == plan(*again, Cluster{.devices = 4})->cost);
}
