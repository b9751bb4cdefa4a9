// Expert parallelism in a layout (core/docs/practice-model.md, "Evaluating a
// layout"): ep carved out of dp x cp as Megatron-LM carves it, the experts'
// weights split ep ways, the all-to-all priced, and ep refused where it
// cannot apply.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "pase/json_api.hpp"
#include "pase/layout.hpp"
#include "pase/llm.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "test_util.hpp"

using namespace pase;
using pase::testing::contains;

namespace {

struct EpLaidOut {
  Graph graph;
  LayoutStrategy laid;
  PipelinePlan priced;
};

// Mixtral-8x7B at sequence 128, batch `gbs`, on `devices` H100s under
// `layout`, evaluated.
EpLaidOut ep_evaluate(int64_t devices, int64_t gbs, const std::string& layout) {
  CAPTURE(layout);
  Result<Graph> g = build_model("mixtral-8x7b", gbs, 128);
  REQUIRE(g.ok());
  Result<Layout> l = parse_layout(layout);
  REQUIRE(l.ok());
  Result<LayoutStrategy> s = layout_strategy(*g, testing::practice_h100(devices), *l);
  REQUIRE_MESSAGE(s.ok(), testing::why(s));
  Result<PipelinePlan> p = evaluate_pipeline(*g, s->cluster, s->strategy);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  return EpLaidOut{std::move(*g), std::move(*s), std::move(*p)};
}

// The split of dimension `dim` of vertex `name` in the priced graph.
int64_t ep_split(const EpLaidOut& x, const std::string& name, const std::string& dim) {
  for (const Vertex& v : x.priced.graph.vertices) {
    if (v.name != name) continue;
    for (size_t i = 0; i < v.dims.size(); ++i)
      if (v.dims[i] == dim) return x.laid.strategy.configs[v.id][i];
    FAIL(name << " has no dimension " << dim);
  }
  FAIL("no vertex " << name);
  return 0;
}

// The priced re-distribution of the edge from `src` to `dst`.
double ep_edge(const EpLaidOut& x, const std::string& src, const std::string& dst) {
  const Graph& g = x.priced.graph;
  for (size_t e = 0; e < g.edges.size(); ++e)
    if (g.vertices[g.edges[e].src].name == src && g.vertices[g.edges[e].dst].name == dst)
      return x.priced.plan.edge_costs.at(e);
  FAIL("no edge " << src << " -> " << dst);
  return 0;
}

// No vertex on more devices than a stage has.
void ep_check_stage(const EpLaidOut& x, int64_t per_stage) {
  for (const Config& c : x.laid.strategy.configs) {
    int64_t used = 1;
    for (int64_t s : c) used *= s;
    CHECK(used <= per_stage);
  }
}

}  // namespace

TEST_CASE("expert parallel: ep of 2, 4 and 8 without context parallelism") {
  // 16 devices: tp=2 x dp=8, no pipeline, one micro-batch of 8 sequences.
  // The experts' weights: 32 layers of gate, up and down, 8 x 4096 x 14336
  // each, tp=2 ways, at the parameters' bytes.
  const double experts = 32.0 * 3 * 8 * 4096 * 14336 / 2;
  double params_ep1 = 0, param_bytes = 0, memory = 1e300;
  for (int64_t ep : {1, 2, 4, 8}) {
    CAPTURE(ep);
    const EpLaidOut x =
        ep_evaluate(16, 8, "tp=2 pp=1 dp=8 ep=" + std::to_string(ep) + " sp=on mbs=1 gbs=8");
    ep_check_stage(x, 16);
    // The experts' products: experts ep ways, the batch what dp has left,
    // the MLP width tp ways.
    for (const char* name : {"layer0_gate", "layer0_up", "layer0_down"}) {
      CAPTURE(name);
      CHECK(ep_split(x, name, "x") == ep);
      CHECK(ep_split(x, name, "b") == 8 / ep);
      CHECK(ep_split(x, name, "t") == 1);
      CHECK(ep_split(x, name, "f") == 2);
    }
    // The router and the layers that meet the tokens split as the tokens.
    for (const char* name :
         {"layer0_router", "layer0_slots", "layer0_dispatch", "layer0_combine"}) {
      CAPTURE(name);
      CHECK(ep_split(x, name, "b") == 8);
      CHECK(ep_split(x, name, "x") == 1);
    }
    // The tokens reach their experts by an all-to-all within the ep group
    // (a re-distribution from the tokens' split to the experts'), and come
    // back the same way.
    CHECK((ep_edge(x, "layer0_dispatch", "layer0_gate") > 0) == (ep > 1));
    CHECK((ep_edge(x, "layer0_down", "layer0_combine") > 0) == (ep > 1));
    CHECK(x.priced.plan.step_time_s > 0);
    // On one stage of 16 H100s only the 8 ways fit.
    if (ep == 8) CHECK(x.priced.plan.fits);
    CHECK(x.priced.plan.memory.total() < memory);
    memory = x.priced.plan.memory.total();
    // Memory per device falls by the experts' weights split ep ways; the
    // other weights stay.
    param_bytes = static_cast<double>(x.laid.cluster.training.param_bytes);
    if (ep == 1) params_ep1 = x.priced.plan.memory.params;
    CHECK(testing::close_to(params_ep1 - x.priced.plan.memory.params,
                            param_bytes * experts * (1 - 1.0 / static_cast<double>(ep)), 1e-9));
  }
  CHECK(param_bytes > 0);
}

TEST_CASE("expert parallel: ep carved from cp first, then from dp") {
  struct Case {
    const char* layout;
    int64_t cp, batch, slots;  // cp; the experts' products' splits of b and t
  };
  // 16 devices, tp=2, no pipeline: dp x cp = 8.
  for (const Case& c : {Case{"tp=2 pp=1 dp=4 cp=2 ep=2 sp=on mbs=2 gbs=8", 2, 4, 1},
                        Case{"tp=2 pp=1 dp=4 cp=2 ep=4 sp=on mbs=2 gbs=8", 2, 2, 1},
                        Case{"tp=2 pp=1 dp=4 cp=2 ep=8 sp=on mbs=2 gbs=8", 2, 1, 1},
                        Case{"tp=2 pp=1 dp=2 cp=4 ep=2 sp=on mbs=4 gbs=8", 4, 2, 2},
                        Case{"tp=2 pp=1 dp=2 cp=4 ep=8 sp=on mbs=4 gbs=8", 4, 1, 1}}) {
    const EpLaidOut x = ep_evaluate(16, 8, c.layout);
    ep_check_stage(x, 16);
    CHECK(ep_split(x, "layer0_gate", "x") * ep_split(x, "layer0_gate", "b") *
              ep_split(x, "layer0_gate", "t") ==
          8);
    CHECK(ep_split(x, "layer0_gate", "b") == c.batch);
    CHECK(ep_split(x, "layer0_gate", "t") == c.slots);
    // The tokens' side keeps its sequence split.
    CHECK(ep_split(x, "layer0_slots", "l") == c.cp);
    CHECK(ep_split(x, "layer0_slots", "x") == 1);
    CHECK(x.priced.plan.step_time_s > 0);
  }
}

TEST_CASE("expert parallel: the issue's Mixtral layout evaluates, ep on a dense model is refused") {
  using pase::testing::run_cli;
  pase::testing::Run run = run_cli({"eval", "--model", "mixtral-8x7b", "--batch", "64", "--seq",
                                    "2048", "--procs", "64", "--preset", "h100", "--gpus-per-node",
                                    "8", "--layout", "tp=2 pp=4 dp=8 ep=8 sp=on mbs=1 gbs=64"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(contains(run.out, "layout           tp=2 pp=4 dp=8 cp=1 ep=8 sp=on"));
  CHECK(contains(run.out, "expert parallel x8"));

  // llama3-8b has no experts: ep=2 would be ignored.
  run = run_cli({"eval", "--model", "llama3-8b", "--seq", "128", "--procs", "16", "--preset",
                 "h100", "--layout", "tp=2 pp=1 dp=8 ep=2 mbs=1 gbs=8"});
  CHECK(run.exit != 0);
  CHECK(contains(run.err, "layout.ep: 'llama3-8b' has no experts: ep must be 1"));
  const nlohmann::json r = nlohmann::json::parse(evaluate_json(
      R"({"model": "llama3-8b", "seq": 128, "preset": "h100", "cluster": {"devices": 16},
          "cost_model": "practice", "layout": "tp=2 pp=1 dp=8 ep=2 mbs=1 gbs=8"})"));
  CHECK(r["error"]["where"] == "layout.ep");
  // ep=1 on it stays as before.
  run = run_cli({"eval", "--model", "llama3-8b", "--seq", "128", "--procs", "16", "--preset",
                 "h100", "--layout", "tp=2 pp=1 dp=8 ep=1 mbs=1 gbs=8"});
  CHECK_MESSAGE(run.exit == 0, run.err);
}

TEST_CASE("expert parallel: an ep that does not divide dp x cp or the experts is refused") {
  Result<Graph> g = build_model("mixtral-8x7b", 8, 128);
  REQUIRE(g.ok());
  const auto refused = [&](int64_t devices, const std::string& text) {
    CAPTURE(text);
    Result<Layout> l = parse_layout(text);
    REQUIRE(l.ok());
    Result<LayoutStrategy> s = layout_strategy(*g, testing::practice_h100(devices), *l);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().where == "layout.ep");
    return s.error().message;
  };
  // dp x cp = 4 on 8 devices.
  CHECK(contains(refused(8, "tp=2 pp=1 dp=4 ep=8 mbs=2 gbs=8"), "must divide dp x cp (4)"));
  CHECK(contains(refused(8, "tp=1 pp=1 dp=4 cp=2 ep=16 mbs=2 gbs=8"), "must divide dp x cp (8)"));
  // 3 divides dp = 6 but not the 8 experts.
  Result<Graph> g6 = build_model("mixtral-8x7b", 6, 128);
  REQUIRE(g6.ok());
  Result<LayoutStrategy> s =
      layout_strategy(*g6, testing::practice_h100(12), *parse_layout("tp=2 dp=6 ep=3 gbs=6"));
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().where == "layout.ep");
  CHECK(contains(s.error().message, "dimension x (8)"));
}

TEST_CASE("expert parallel: a mixture of experts' MFU counts its active parameters") {
  // Mixtral 8x7B routes each token to 2 of 8 experts: 12.9 of its 46.7
  // billion weights are active. Before, all counted: MFU 97.3% on 64 H100.
  const testing::Run run =
      testing::run_cli({"eval", "--model", "mixtral-8x7b", "--batch", "64", "--seq", "2048",
                        "--procs", "64", "--preset", "h100", "--gpus-per-node", "8", "--layout",
                        "tp=2 pp=4 dp=8 ep=8 sp=on mbs=1 gbs=64", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  const nlohmann::json doc = nlohmann::json::parse(run.out);
  const LlmConfig c = *llm_config("mixtral-8x7b");
  const double experts_weights =
      static_cast<double>(c.num_layers) * static_cast<double>(c.num_experts) * 3 *
      static_cast<double>(c.hidden_size) * static_cast<double>(c.intermediate_size);
  const double active = static_cast<double>(llm_parameters(c)) -
                        experts_weights * (1 - static_cast<double>(c.experts_per_token) /
                                                   static_cast<double>(c.num_experts));
  CHECK(active / 1e9 == doctest::Approx(12.88).epsilon(0.01));
  const double tokens = 64.0 * 2048;
  const nlohmann::json& t = doc["throughput"];
  // 6 per active weight and token, plus the attention's (12 x layers x
  // width x sequence per token).
  const double attention =
      12.0 * static_cast<double>(c.num_layers) * static_cast<double>(c.hidden_size) * 2048 * tokens;
  CHECK(t["model_flops"].get<double>() == doctest::Approx(6 * active * tokens + attention));
  CHECK(t["mfu"].get<double>() < 0.5);
}
