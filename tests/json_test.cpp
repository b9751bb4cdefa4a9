// The JSON interchange formats (core/docs/graph-format.md, core/docs/formats.md): pase-graph/1
// documents, plan requests, clusters, strategies, plan results and error documents. Errors must
// name the field; writing a graph and reading it back must give the same graph and the same plan.
#include <doctest/doctest.h>

#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cost_model.hpp"
#include "json_util.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::testing;
using nlohmann::json;

namespace {

// A graph document with `layers` (a JSON array text) over input x: [8, 16].
std::string graph_doc(const std::string& layers, const std::string& extra = "") {
  return R"({"format": "pase-graph/1", "inputs": {"x": [8, 16]}, "layers": )" + layers + extra +
         "}";
}

Error spec_error(const std::string& text) {
  Result<GraphSpec> s = parse_graph_spec(text);
  REQUIRE_FALSE(s.ok());
  return s.error();
}

Error load_error(const std::string& text) {
  Result<Graph> g = load_graph(text);
  REQUIRE_FALSE(g.ok());
  return g.error();
}

Error request_error(const std::string& text) {
  Result<PlanRequest> r = parse_plan_request(text);
  REQUIRE_FALSE(r.ok());
  return r.error();
}

// Two graphs agree vertex by vertex and edge by edge.
void check_same_graph(const Graph& a, const Graph& b) {
  REQUIRE(a.vertices.size() == b.vertices.size());
  REQUIRE(a.edges.size() == b.edges.size());
  CHECK(a.name == b.name);
  CHECK(a.cutoff == b.cutoff);
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

// ---- Clusters, orders, strategies ----------------------------------------------------------

TEST_CASE("json: parse_cluster keeps defaults and names bad fields") {
  Result<Cluster> c = parse_cluster(R"({"devices": 12})");
  REQUIRE(c.ok());
  CHECK(c->devices == 12);
  CHECK(c->tflops == 10.0);
  CHECK(c->bandwidth_gbps == 16.0);
  c = parse_cluster(R"({"devices": 4, "tflops": 2.5, "bandwidth_gbps": 100})");
  REQUIRE(c.ok());
  CHECK(c->tflops == 2.5);
  CHECK(c->bandwidth_gbps == 100.0);
  CHECK(parse_cluster(R"({"devices": 0})").error().where == "cluster.devices");
  CHECK(parse_cluster(R"({"devices": 2.5})").error().where == "cluster.devices");
  CHECK(parse_cluster(R"({"devices": 65537})").error().where == "cluster.devices");
  CHECK(parse_cluster(R"({"tflops": 0})").error().where == "cluster.tflops");
  CHECK(parse_cluster(R"({"bandwidth_gbps": -1})").error().where == "cluster.bandwidth_gbps");
  CHECK(parse_cluster(R"({"gpus": 8})").error().where == "cluster.gpus");
  CHECK(parse_cluster(R"({"devices": 0})", "machine").error().where == "machine.devices");
  CHECK_FALSE(parse_cluster("[8]").ok());
}

TEST_CASE("json: parse_order knows genseq, bfs and mintable") {
  CHECK(*parse_order("genseq") == Order::kGenSeq);
  CHECK(*parse_order("bfs") == Order::kBfs);
  CHECK(*parse_order("mintable") == Order::kMinTable);
  Result<Order> bad = parse_order("dfs");
  REQUIRE_FALSE(bad.ok());
  CHECK(contains(bad.error().message, "genseq"));
}

TEST_CASE("json: parse_strategy reads a list of configurations") {
  Result<Strategy> s = parse_strategy("[[8, 1], [1, 2, 4]]");
  REQUIRE(s.ok());
  CHECK(*s == Strategy{{8, 1}, {1, 2, 4}});
  CHECK(parse_strategy("[[8, 1], [1, 0]]").error().where == "strategy[1][1]");
  CHECK(parse_strategy("[[8, 1], 3]").error().where == "strategy[1]");
  CHECK(parse_strategy("[[8, 1.5]]").error().where == "strategy[0][1]");
  CHECK(parse_strategy("7").error().where == "strategy");
  CHECK_FALSE(parse_strategy("[[8, 1]").ok());
}

TEST_CASE("json: parse_strategy reads the configurations of a plan result") {
  Result<Graph> g = build_model("alexnet");
  REQUIRE(g.ok());
  Result<Plan> p = plan(*g, Cluster{});
  REQUIRE(p.ok());
  Result<Strategy> s = parse_strategy(plan_to_json(*g, Cluster{}, *p));
  REQUIRE_MESSAGE(s.ok(), why(s));
  CHECK(*s == p->strategy);
  CHECK(parse_strategy(R"({"cost": 1})").error().where == "strategy.vertices");
  CHECK(parse_strategy(R"({"vertices": [{"id": 0}]})").error().where ==
        "strategy.vertices[0].config");
}

// ---- Plan requests ------------------------------------------------------------------------------

TEST_CASE("json: a plan request with a built-in model") {
  Result<PlanRequest> r = parse_plan_request(
      R"({"model": "alexnet", "batch": 64, "cluster": {"devices": 16}, "order": "bfs",
          "max_memory": 1000000, "pow2_only": true, "all_devices": true})");
  REQUIRE_MESSAGE(r.ok(), why(r));
  CHECK(r->graph.vertices.size() == 14);
  CHECK(r->graph.vertices[0].dom[0] == 64);
  CHECK(r->cluster.devices == 16);
  CHECK(r->options.order == Order::kBfs);
  CHECK(r->options.max_memory == 1000000);
  CHECK(r->options.enumeration.pow2_only);
  CHECK(r->options.enumeration.all_devices);
  CHECK_FALSE(r->strategy.has_value());
}

TEST_CASE("json: a plan request with a graph and a strategy") {
  std::string text = R"({"graph": )" +
                     graph_doc(R"([{"name": "a", "op": "FC", "inputs": ["x"], "units": 4}])") +
                     R"(, "strategy": [[2, 1, 1]]})";
  Result<PlanRequest> r = parse_plan_request(text);
  REQUIRE_MESSAGE(r.ok(), why(r));
  CHECK(r->graph.vertices.size() == 1);
  CHECK(r->cluster.devices == Cluster{}.devices);
  CHECK(r->options.order == Order::kGenSeq);
  REQUIRE(r->strategy.has_value());
  CHECK(*r->strategy == Strategy{{2, 1, 1}});
}

TEST_CASE("json: plan request errors name the field") {
  const std::string fc = graph_doc(R"([{"name": "a", "op": "FC", "inputs": ["x"], "units": 4}])");
  CHECK(request_error(R"({"cluster": {"devices": 8}})").where == "graph");
  CHECK(request_error(R"({"model": "alexnet", "graph": )" + fc + "}").where == "model");
  CHECK(request_error(R"({"model": "lenet"})").where == "model");
  CHECK(request_error(R"({"model": "alexnet", "batch": 0})").where == "batch");
  CHECK(request_error(R"({"graph": )" + fc + R"(, "batch": 8})").where == "batch");
  CHECK(request_error(R"({"model": "alexnet", "cluster": {"devices": 0}})").where ==
        "cluster.devices");
  CHECK(request_error(R"({"model": "alexnet", "cluster": {"tflops": "fast"}})").where ==
        "cluster.tflops");
  CHECK(request_error(R"({"model": "alexnet", "order": "dfs"})").where == "order");
  CHECK(request_error(R"({"model": "alexnet", "max_memory": -1})").where == "max_memory");
  CHECK(request_error(R"({"model": "alexnet", "strategy": [[0]]})").where == "strategy[0][0]");
  CHECK(request_error(R"({"model": "alexnet", "devices": 8})").where == "devices");
  CHECK(request_error(R"({"graph": )" +
                      graph_doc(R"([{"name": "a", "op": "FC", "inputs": ["x"], "units": 0}])") +
                      "}")
            .where == "graph.layers[0].units");
  CHECK(request_error(R"({"graph": )" +
                      graph_doc(R"([{"name": "a", "op": "FC", "inputs": ["q"], "units": 4}])") +
                      "}")
            .where == "graph.layers[0].inputs[0]");
  CHECK_FALSE(parse_plan_request("[]").ok());
  CHECK_FALSE(parse_plan_request("{").ok());
}

// ---- Result documents -------------------------------------------------------------------------

TEST_CASE("json: plan_to_json carries the fields of core/docs/formats.md") {
  Result<Graph> g = build_model("alexnet");
  REQUIRE(g.ok());
  Cluster cluster{.devices = 8, .tflops = 5.0, .bandwidth_gbps = 20.0};
  Result<Plan> p = plan(*g, cluster);
  REQUIRE(p.ok());
  json doc = json::parse(plan_to_json(*g, cluster, *p));
  CHECK(doc["graph"] == "alexnet");
  CHECK(doc["cluster"]["devices"] == 8);
  CHECK(doc["cluster"]["tflops"] == 5.0);
  CHECK(doc["cluster"]["bandwidth_gbps"] == 20.0);
  CHECK(doc["cost"].get<double>() == p->cost);
  CHECK(doc["step_time_s"].get<double>() == doctest::Approx(p->cost / 5e12).epsilon(1e-12));
  REQUIRE(doc["vertices"].size() == g->vertices.size());
  for (size_t i = 0; i < g->vertices.size(); ++i) {
    const json& v = doc["vertices"][i];
    CAPTURE(i);
    CHECK(v["id"] == i);
    CHECK(v["name"] == g->vertices[i].name);
    CHECK(v["op"] == g->vertices[i].op);
    REQUIRE(v["kinds"].size() == g->vertices[i].dims.size());
    CHECK(v["kinds"][model_of(*g, static_cast<int>(i)).batch_dim] == "batch");
    CHECK(v["dims"].get<std::vector<std::string>>() == g->vertices[i].dims);
    CHECK(v["sizes"].get<Shape>() == g->vertices[i].dom);
    CHECK(v["config"].get<Config>() == p->strategy[i]);
    CHECK(v["cost"].get<double>() == p->layers[i].total);
  }
  CHECK(doc["vertices"][0]["dims"] == json::array({"b", "c", "h", "w", "r", "s", "n"}));
  CHECK(doc["vertices"][8]["op"] == "Ravel");
  CHECK(doc["vertices"][9]["op"] == "Unravel");
  CHECK(doc["search"]["order"] == "genseq");
  CHECK(doc["search"]["max_dependent_set"] == p->search.max_dependent_set);
  CHECK(doc["search"]["table_entries"] == p->search.table_entries);
  CHECK(doc["search"].contains("time_s"));
}

TEST_CASE("json: error_to_json has message and where") {
  json doc = json::parse(error_to_json(Error{"must be positive", "layers[3].units"}));
  CHECK(doc["error"]["message"] == "must be positive");
  CHECK(doc["error"]["where"] == "layers[3].units");
}

TEST_CASE("json: plan_json and evaluate_json answer with a result or an error document") {
  std::vector<double> fractions;
  json result =
      json::parse(plan_json(R"({"model": "rnnlm", "cluster": {"devices": 8}})",
                            [&](const Progress& pr) { fractions.push_back(pr.fraction); }));
  REQUIRE_FALSE(result.contains("error"));
  Result<Graph> g = build_model("rnnlm");
  REQUIRE(g.ok());
  CHECK(result["cost"].get<double>() == plan(*g, Cluster{})->cost);
  REQUIRE_FALSE(fractions.empty());
  CHECK(fractions.back() == 1.0);

  json bad = json::parse(plan_json(R"({"model": "rnnlm", "cluster": {"devices": -1}})"));
  CHECK(bad["error"]["where"] == "cluster.devices");
  CHECK(json::parse(plan_json("not json")).contains("error"));

  json eval = json::parse(evaluate_json(
      R"({"model": "rnnlm", "strategy": [[1, 1, 1, 8], [2, 1, 4, 1, 1], [2, 1, 4, 1], [2, 1, 4]]})"));
  REQUIRE_FALSE(eval.contains("error"));
  CHECK(eval["cost"].get<double>() ==
        evaluate(*g, Cluster{}, {{1, 1, 1, 8}, {2, 1, 4, 1, 1}, {2, 1, 4, 1}, {2, 1, 4}})->cost);
  json missing = json::parse(evaluate_json(R"({"model": "rnnlm"})"));
  CHECK(missing["error"]["where"] == "strategy");
  json wrong = json::parse(evaluate_json(R"({"model": "rnnlm", "strategy": [[1, 1, 1, 8]]})"));
  CHECK(wrong["error"]["where"] == "strategy");
}

TEST_CASE("json: models_to_json lists the five networks with their sizes") {
  json list = json::parse(models_to_json());
  REQUIRE(list.size() == 5);
  CHECK(list[0]["name"] == "alexnet");
  CHECK(list[0]["vertices"] == 14);
  CHECK(list[0]["edges"] == 13);
  CHECK(list[4]["name"] == "transformer");
  CHECK(list[4]["vertices"] == 204);
  CHECK(list[4]["edges"] == 280);
  CHECK(list[3]["cutoff"] == 1);
  CHECK(list[3]["default_batch"] == 64);
}

// ---- validate_json: the page's check of an uploaded file -----------------------------------

TEST_CASE("json: validate_json errors are those of load_graph, relative to the document") {
  // The syntax, the document, a field and a shape error: `where` is never
  // under "graph", as it is inside a plan request.
  for (const std::string& text :
       {std::string(""), std::string("{\n  \"layers\": [\n}"), std::string("[]"),
        std::string(R"({"format": "pase-graph/1", "cutoff": 4, "cutoff": 2, "layers": []})"),
        graph_doc("[]", R"(, "layerz": 1)"),
        graph_doc(R"([{"name": "fc", "op": "FC", "inputs": ["y"], "units": 4}])"),
        graph_doc(R"([{"name": "fc", "op": "FC", "inputs": ["x"], "units": 2.5}])")}) {
    CAPTURE(text);
    json doc = json::parse(validate_json(text));
    REQUIRE(doc.contains("error"));
    CHECK(doc.size() == 1);
    const Error expected = load_error(text);
    CHECK(doc["error"]["where"] == expected.where);
    CHECK(doc["error"]["message"] == expected.message);
  }
  CHECK(json::parse(validate_json(graph_doc("[]", R"(, "layerz": 1)")))["error"]["where"] ==
        "layerz");
  CHECK(json::parse(validate_json(graph_doc(
            R"([{"name": "fc", "op": "FC", "inputs": ["x"], "units": 2.5}])")))["error"]["where"] ==
        "layers[0].units");
}

TEST_CASE("json: validate_json summarises a valid graph") {
  // A Reshape layer is two vertices (Ravel, Unravel); "sum" reads fc1 again.
  const std::string text = graph_doc(
      R"([{"name": "fc1", "op": "FC", "inputs": ["x"], "units": 32},
          {"name": "r", "op": "Reshape", "inputs": ["fc1"], "shape": [8, 4, 8]},
          {"name": "back", "op": "Reshape", "inputs": ["r"], "shape": [8, 32]},
          {"name": "sum", "op": "Elementwise", "inputs": ["back", "fc1"]}])",
      R"(, "name": "tiny")");
  json doc = json::parse(validate_json(text));
  REQUIRE_MESSAGE(!doc.contains("error"), doc.dump());
  Result<Graph> g = load_graph(text);
  REQUIRE(g.ok());
  CHECK(doc == json{{"ok", true},
                    {"name", "tiny"},
                    {"layers", 4},
                    {"vertices", g->vertices.size()},
                    {"edges", g->edges.size()}});
  CHECK(g->vertices.size() == 6);

  // Without a name; and an exported network is the network.
  const std::string nameless =
      graph_doc(R"([{"name": "fc", "op": "FC", "inputs": ["x"], "units": 4}])");
  CHECK(json::parse(validate_json(nameless)) ==
        json{{"ok", true}, {"name", ""}, {"layers", 1}, {"vertices", 1}, {"edges", 0}});
  json alexnet = json::parse(validate_json(export_model_json("alexnet", 0)));
  CHECK(alexnet["name"] == "alexnet");
  CHECK(alexnet["vertices"] == 14);
  CHECK(alexnet["edges"] == 13);
}

// ---- The exception guard of every entry point --------------------------------------------

TEST_CASE("json: guarded() turns what escapes into an error document") {
  using pase::json_detail::guarded;
  auto where_and_message = [](const std::string& text) {
    json doc = json::parse(text);
    REQUIRE(doc.contains("error"));
    CHECK(doc["error"]["where"] == "");
    return doc["error"]["message"].get<std::string>();
  };
  CHECK(where_and_message(guarded([]() -> std::string { throw std::bad_alloc(); })) ==
        "out of memory");
  CHECK(contains(
      where_and_message(guarded([]() -> std::string { throw std::length_error("vector"); })),
      "out of memory"));
  CHECK(where_and_message(guarded([]() -> std::string { throw std::runtime_error("boom"); })) ==
        "internal error: boom");
  CHECK(where_and_message(guarded([]() -> std::string { throw 42; })) == "internal error");
  CHECK(guarded([] { return std::string("{}"); }) == "{}");
}
