// The JSON entry points (json_api.hpp, core/docs/formats.md): clusters, orders, strategies, plan
// requests, plan results, error documents, validate_json() and the exception guard shared by
// every entry point. Errors must name the field.
#include "pase/json_api.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "api/entry.hpp"
#include "model/cost_model.hpp"
#include "pase/compare.hpp"
#include "pase/graph.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "test_util.hpp"
#include "util/json_util.hpp"

using namespace pase;
using namespace pase::testing;
using nlohmann::json;

namespace {

// The entry points that search, each called as the module calls it.
std::string plan_json_entry(std::string_view request) { return plan_json(request); }
std::string estimate_json_entry(std::string_view request) { return estimate_json(request); }
std::string compare_json_entry(std::string_view request) { return compare_json(request); }

Error request_error(const std::string& text) {
  Result<PlanRequest> r = parse_plan_request(text);
  REQUIRE_FALSE(r.ok());
  return r.error();
}

}  // namespace

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
  CHECK(doc["parameters"].is_number_integer());
  CHECK(doc["parameters"] == g->parameters);
  CHECK(g->parameters == 62466080);
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

TEST_CASE(
    "json: a layout or a strategy is evaluated; a plan, estimate or compare request refuses it") {
  // Before, a plan request's layout was dropped but for its zero and
  // recompute, and the search planned something else.
  const std::string base =
      R"({"model": "gpt2", "batch": 8, "seq": 64, "preset": "h100", "cluster": {"devices": 4}})";
  const std::string with_layout =
      base.substr(0, base.size() - 1) +
      R"(, "layout": "tp=2 pp=1 dp=2 zero=1 recompute=full mbs=4 gbs=8"})";
  const std::string with_strategy = R"({"model": "rnnlm", "strategy": [[1, 1, 1, 8]]})";
  for (const auto& entry : {plan_json_entry, estimate_json_entry, compare_json_entry}) {
    json refused = json::parse(entry(with_layout));
    REQUIRE(refused.contains("error"));
    CHECK(refused["error"]["where"] == "layout");
    CHECK(refused["error"]["message"] ==
          "a layout is evaluated, not planned: send it in an evaluate request");
    refused = json::parse(entry(with_strategy));
    REQUIRE(refused.contains("error"));
    CHECK(refused["error"]["where"] == "strategy");
  }
  // evaluate_json() prices the layout itself: its tp and dp, its zero.
  json evaluated = json::parse(evaluate_json(with_layout));
  REQUIRE_MESSAGE(!evaluated.contains("error"), evaluated.dump());
  CHECK(evaluated["training"]["zero"] == 1);
  CHECK(evaluated["training"]["recompute"] == "full");
  bool split_heads = false;
  for (const json& v : evaluated["vertices"])
    if (v["name"] == "layer0_q") split_heads = v["config"] == json({2, 2, 1, 1, 1});  // b h l k e
  CHECK(split_heads);
  // Without a layout the request plans.
  CHECK_FALSE(json::parse(plan_json(base)).contains("error"));
}

TEST_CASE("json: estimate_json gives the search's size without searching, or an error document") {
  json bad = json::parse(estimate_json(R"({"model": "rnnlm", "cluster": {"devices": 0}})"));
  CHECK(bad["error"]["where"] == "cluster.devices");
  CHECK(json::parse(estimate_json("{")).contains("error"));
  CHECK(json::parse(estimate_json(R"({"model": "nope"})"))["error"]["where"] == "model");

  // The same pairs as the plan's search, with the request's limit and cap.
  const char* request =
      R"({"model": "transformer", "cluster": {"devices": 16, "memory_gib": 40}, "max_memory": 1073741824})";
  json est = json::parse(estimate_json(request));
  REQUIRE_FALSE(est.contains("error"));
  json planned = json::parse(plan_json(request));
  REQUIRE_FALSE(planned.contains("error"));
  CHECK(est["graph"] == "transformer");
  CHECK(est["vertices"] == 204);
  CHECK(est["devices"] == 16);
  CHECK(est["memory_capped"] == true);
  CHECK(est["max_memory"] == 1073741824);
  CHECK(est["search"]["pairs"].get<double>() == planned["search"]["pairs"].get<double>());
  CHECK(est["search"]["peak_bytes"].get<double>() == planned["search"]["peak_bytes"].get<double>());
  CHECK(est["search"]["configurations"] == planned["search"]["configurations"]);
  CHECK(est["search"]["order"] == "genseq");

  // A pipeline: one search over the whole graph for sure when S = M = 1 is
  // among the pairs (searched first) or the only pair has one stage; none
  // when every pair has several stages.
  CHECK_FALSE(est.contains("pipeline"));
  auto whole = [](const char* pipeline) {
    json e = json::parse(
        estimate_json(std::string(R"({"model": "transformer", "pipeline": )") + pipeline + "}"));
    REQUIRE_FALSE(e.contains("error"));
    return e["pipeline"]["whole_graph_searches"].get<int>();
  };
  CHECK(whole(R"({"stages": "auto", "microbatches": "auto"})") == 1);
  CHECK(whole(R"({"stages": "auto", "microbatches": "auto", "max_microbatches": 8})") == 1);
  CHECK(whole(R"({"stages": 1, "microbatches": 4})") == 1);
  CHECK(whole(R"({"stages": 1, "microbatches": "auto"})") == 1);
  CHECK(whole(R"({"stages": "auto", "microbatches": 4})") == 0);
  CHECK(whole(R"({"stages": 2, "microbatches": "auto"})") == 0);
  json piped = json::parse(estimate_json(
      R"({"model": "transformer", "pipeline": {"stages": "auto", "microbatches": 8}})"));
  CHECK(piped["pipeline"]["stages"] == "auto");
  CHECK(piped["pipeline"]["microbatches"] == 8);

  // A search over the table limit is estimated, not refused: with search
  // "exact" the plan refuses it; under "auto" (the default) the estimate says
  // the plan will run the bounded search, within its budget.
  const std::string exact = R"({"model": "transformer", "order": "bfs", "search": "exact"})";
  json bfs = json::parse(estimate_json(exact));
  REQUIRE_FALSE(bfs.contains("error"));
  CHECK(bfs["memory_capped"] == false);
  CHECK(bfs["search"]["method"] == "exact");
  CHECK(bfs["search"]["peak_bytes"].get<double>() > bfs["max_memory"].get<double>());
  CHECK(json::parse(plan_json(exact))["error"]["where"] == "max_memory");
  json bounded = json::parse(estimate_json(R"({"model": "transformer", "order": "bfs"})"));
  CHECK(bounded["search"]["method"] == "bounded");
  CHECK(bounded["search"]["peak_bytes"].get<double>() <= bounded["max_memory"].get<double>());
  CHECK(bounded["search"]["exact_peak_bytes"] == bfs["search"]["peak_bytes"]);
}

TEST_CASE("json: models_to_json lists the networks with their sizes") {
  json list = json::parse(models_to_json());
  REQUIRE(list.size() == list_models().size());
  REQUIRE(list.size() == 10);
  CHECK(list[0]["name"] == "alexnet");
  CHECK(list[0]["vertices"] == 14);
  CHECK(list[0]["edges"] == 13);
  CHECK(list[4]["name"] == "transformer");
  CHECK(list[4]["vertices"] == 204);
  CHECK(list[4]["edges"] == 280);
  CHECK(list[3]["cutoff"] == 1);
  CHECK(list[3]["default_batch"] == 64);
  CHECK(list[3]["default_seq"] == 256);
  CHECK(list[0]["default_seq"].is_null());
  CHECK(list[0]["llm"] == false);
  CHECK(list[6]["name"] == "llama3-8b");
  CHECK(list[6]["llm"] == true);
  CHECK(list[6]["parameters"] == 8030261248);
  CHECK(list[6]["default_seq"] == 8192);
  CHECK(list[6]["default_batch"] == 32);
  // AlexNet's 5 filters and 3 FC weights (1024 classes).
  CHECK(list[0]["parameters"] ==
        34848 + 614400 + 884736 + 1327104 + 884736 + 37748736 + 16777216 + 4194304);
  for (const json& m : list) {
    CAPTURE(m["name"]);
    CHECK(m["parameters"] == build_model(m["name"].get<std::string>())->parameters);
  }
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
                    {"edges", g->edges.size()},
                    {"parameters", 16 * 32}});
  CHECK(g->vertices.size() == 6);

  // Without a name; and an exported network is the network.
  const std::string nameless =
      graph_doc(R"([{"name": "fc", "op": "FC", "inputs": ["x"], "units": 4}])");
  CHECK(json::parse(validate_json(nameless)) == json{{"ok", true},
                                                     {"name", ""},
                                                     {"layers", 1},
                                                     {"vertices", 1},
                                                     {"edges", 0},
                                                     {"parameters", 16 * 4}});
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
