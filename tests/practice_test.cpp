// The practice cost model (core/docs/practice-model.md): its formulas
// against hand-worked values, its fused attention, its place in requests, the
// CLI and the presets, and the paper model untouched beside it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "model/cost_model.hpp"
#include "pase/json_api.hpp"
#include "pase/layout.hpp"
#include "pase/layout_search.hpp"
#include "pase/llm.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/presets.hpp"
#include "test_util.hpp"

using json = nlohmann::json;
using namespace pase;
using pase::testing::close_to;
using pase::testing::contains;
using pase::testing::model;
using pase::testing::practice_h100;

namespace {

// x (4096, 4096) -> FC of 4096 units: one matrix product of 4096 x 4096 x 4096.
Graph one_fc() {
  GraphSpec spec = testing::spec_with({{"x", {4096, 4096}}}, {});
  LayerSpec fc = testing::layer("fc", "FC", {"x"});
  fc.units = 4096;
  spec.layers = {fc};
  Result<Graph> g = build_graph(spec);
  REQUIRE(g.ok());
  return std::move(g).value();
}

}  // namespace

TEST_CASE("practice: a matrix product runs at the saturated fraction of the peak") {
  const Graph g = one_fc();
  const Cluster cluster = practice_h100(1);
  const ops::Machine m = ops::make_machine(cluster);
  const Config one(g.vertices[0].dom.size(), 1);
  const LayerCost cost = ops::layer_cost(g, g.vertices[0], one.data(), m);
  // core/docs/practice-model.md, "A matrix product": 6 m n k FLOPs at
  // 989e12 * 0.72 * (4096 / (4096 + 128))^3; its bytes, 3 * 2 * 3 * 4096^2
  // over 3350e9 * 0.8, take less.
  const double d = 4096, s = d / (d + 128);
  const double seconds = 6 * d * d * d / (989e12 * 0.72 * s * s * s);
  CHECK(seconds == doctest::Approx(6.350e-4).epsilon(1e-3));
  CHECK(close_to(cost.compute, seconds * 989e12, 1e-12));
  CHECK(cost.comm == 0);
  CHECK(cost.total == cost.compute);
  // The paper model: 3 m n k, its own unit.
  Cluster paper = cluster;
  paper.cost_model = CostModel::kPaper;
  const LayerCost p = ops::layer_cost(g, g.vertices[0], one.data(), ops::make_machine(paper));
  CHECK(p.compute == 3 * d * d * d);
}

TEST_CASE("practice: a split product pays its all-reduces by bytes and latency") {
  const Graph g = one_fc();
  const Cluster cluster = practice_h100(8);
  const ops::Machine m = ops::make_machine(cluster);
  // FC configurations are (batch, units, K): split K over the 8 GPUs of one
  // node, so the output's partial sums are all-reduced inside it.
  const Config k8 = {1, 1, 8};
  const LayerCost cost = ops::layer_cost(g, g.vertices[0], k8.data(), m);
  // Ring all-reduce of m n = 4096^2 elements of 2 bytes among 8 at 450 GB/s:
  // 2 (p - 1) / p of them; 2 (p - 1) steps of 6 us.
  const double bytes = 2.0 * 4096 * 4096 * 2 * 7 / 8;
  const double seconds = bytes / 450e9 + 14 * 6e-6;
  CHECK(close_to(cost.comm, seconds * 989e12, 1e-12));
}

TEST_CASE("practice: attention runs fused, keeping no scores, and its context costs nothing") {
  const Graph g = model("gpt2", 8);
  const Cluster cluster = practice_h100(8);
  const ops::Machine m = ops::make_machine(cluster);
  int scores = -1, context = -1;
  for (const Vertex& v : g.vertices) {
    if (v.name == "layer0_scores") scores = v.id;
    if (v.name == "layer0_context") context = v.id;
  }
  REQUIRE(scores >= 0);
  REQUIRE(context >= 0);
  CHECK(ops::attention_scores(g, scores));
  CHECK_FALSE(ops::attention_context(g, scores));
  CHECK(ops::attention_context(g, context));
  // No other vertex is taken for attention.
  int found = 0;
  for (const Vertex& v : g.vertices) found += ops::attention_scores(g, v.id) ? 1 : 0;
  CHECK(found == 12);
  const Vertex& sv = g.vertices[scores];
  const Config one(sv.dom.size(), 1);
  const LayerCost c = ops::layer_cost(g, sv, one.data(), m);
  // Scores (b h l m k) = (8, 12, 1024, 1024, 64) under a causal mask: half
  // of 4 b h l m k forward, 3.5 times that for training, at 0.5 of the peak
  // times 64 / (64 + 128).
  CHECK(model_of(g, scores).causal);
  const double forward = 0.5 * 4.0 * 8 * 12 * 1024 * 1024 * 64;
  CHECK(close_to(c.compute, 3.5 * forward / (0.5 * 64.0 / 192.0), 1e-12));
  const Vertex& cv = g.vertices[context];
  const Config one_c(cv.dom.size(), 1);
  CHECK(ops::layer_cost(g, cv, one_c.data(), m).compute == 0);
  // Memory: one log-sum-exp of 4 bytes per query row, not the 1024 x 1024
  // scores of 2 bytes each.
  CHECK(ops::vertex_memory(g, sv, one.data(), m).activations == 4.0 * 8 * 12 * 1024);
  Cluster paper = cluster;
  paper.cost_model = CostModel::kPaper;
  CHECK(ops::vertex_memory(g, sv, one.data(), ops::make_machine(paper)).activations ==
        2.0 * 8 * 12 * 1024 * 1024);
}

TEST_CASE("practice: plans in seconds, and the paper model is as before") {
  const Graph g = model("gpt2", 8);
  const Result<Plan> paper = plan(g, apply_preset(Cluster{.devices = 8}, *find_preset("h100")));
  const Result<Plan> practice = plan(g, practice_h100(8));
  REQUIRE(paper.ok());
  REQUIRE(practice.ok());
  // GPT-2 at batch 8 x 1024 on 8 H100s: the model's FLOPs (6 per parameter
  // and token) at most at the products' rate, so the step's MFU stays below
  // eta = 0.72; and a step of milliseconds, not seconds.
  const double model_flops = 6.0 * static_cast<double>(g.parameters) * 8 * 1024;
  const double mfu = model_flops / (8 * 989e12 * practice->step_time_s);
  CHECK(mfu < 0.72);
  CHECK(mfu > 0.05);
  CHECK(practice->step_time_s != paper->step_time_s);
  CHECK(practice->step_time_s < 0.05);
}

TEST_CASE("practice: requests name the cost model, and its errors name their field") {
  json r = json::parse(plan_json(
      R"({"model": "gpt2", "batch": 8, "preset": "h100", "cluster": {"devices": 8}, "cost_model": "practice"})"));
  REQUIRE_MESSAGE(!r.contains("error"), r.dump());
  CHECK(r["cluster"]["cost_model"] == "practice");
  CHECK(r["cluster"]["memory_gbps"] == 3350);
  json paper = json::parse(
      plan_json(R"({"model": "gpt2", "batch": 8, "preset": "h100", "cost_model": "paper"})"));
  CHECK_FALSE(paper["cluster"].contains("cost_model"));
  // A preset without a cost model: the practice model.
  json preset = json::parse(
      plan_json(R"({"model": "gpt2", "batch": 8, "preset": "h100", "cluster": {"devices": 8}})"));
  CHECK(preset["cluster"]["cost_model"] == "practice");
  CHECK(preset["cost"].get<double>() == r["cost"].get<double>());
  CHECK(r["cost"].get<double>() != paper["cost"].get<double>());

  json bad = json::parse(plan_json(R"({"model": "gpt2", "cost_model": "roofline"})"));
  CHECK(bad["error"]["where"] == "cost_model");
  CHECK(contains(bad["error"]["message"].get<std::string>(), "known: paper, practice"));
  // No preset and no memory bandwidth: the practice model cannot price.
  bad = json::parse(plan_json(R"({"model": "gpt2", "cost_model": "practice"})"));
  CHECK(bad["error"]["where"] == "cluster.memory_gbps");
  json given = json::parse(plan_json(
      R"({"model": "gpt2", "batch": 8, "cost_model": "practice", "cluster": {"memory_gbps": 900}})"));
  REQUIRE_MESSAGE(!given.contains("error"), given.dump());
  CHECK(given["cluster"]["memory_gbps"] == 900);
}

TEST_CASE("practice: the CLI's --cost-model and --memory-bandwidth") {
  using pase::testing::run_cli;
  pase::testing::Run run = run_cli(
      {"plan", "--model", "gpt2", "--batch", "8", "--preset", "h100", "--cost-model", "practice"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(contains(run.out, "3350 GB/s memory; practice cost model)"));
  run = run_cli({"plan", "--model", "gpt2", "--cost-model", "practice"});
  CHECK(run.exit != 0);
  CHECK(contains(run.err, "cluster.memory_gbps"));
  run =
      run_cli({"plan", "--model", "gpt2", "--cost-model", "practice", "--memory-bandwidth", "900"});
  CHECK(run.exit == 0);
  run = run_cli({"plan", "--model", "gpt2", "--cost-model", "exact"});
  CHECK(run.exit != 0);
  CHECK(contains(run.err, "--cost-model: unknown cost model 'exact'"));
}

TEST_CASE("practice: every preset has its memory bandwidth and a valid profile") {
  for (const GpuPreset& p : gpu_presets()) {
    CAPTURE(p.id);
    CHECK(p.memory_gbps > 0);
    CHECK(p.profile.memory_gbps == p.memory_gbps);
    CHECK(p.fp8_tflops >= 0);
    Cluster c = apply_preset(Cluster{}, p);
    c.cost_model = CostModel::kPractice;
    CHECK_FALSE(check_cluster(c).has_value());
  }
}

// ---- Layouts (pase/layout.hpp) and the published runs ---------------------------------------

TEST_CASE("practice: a layout parses, prints back and names its bad item") {
  Result<Layout> l =
      parse_layout("tp=8 pp=8 dp=16 cp=1 sp=on zero=1 recompute=selective mbs=1 gbs=1536");
  REQUIRE(l.ok());
  CHECK(l->tp == 8);
  CHECK(l->pp == 8);
  CHECK(l->dp == 16);
  CHECK(l->sp);
  CHECK(l->zero == 1);
  CHECK(l->recompute == Recompute::kSelective);
  CHECK(l->gbs == 1536);
  CHECK(layout_text(*l) ==
        "tp=8 pp=8 dp=16 cp=1 ep=1 sp=on zero=1 recompute=selective mbs=1 gbs=1536 vpp=1");
  CHECK(parse_layout(layout_text(*l))->gbs == 1536);
  CHECK(parse_layout("tp=0").error().where == "layout.tp");
  CHECK(parse_layout("tp=8 tp=4").error().where == "layout.tp");
  CHECK(parse_layout("sp=maybe").error().where == "layout.sp");
  CHECK(parse_layout("zero=4").error().where == "layout.zero");
  CHECK(parse_layout("recompute=some").error().where == "layout.recompute");
  CHECK(parse_layout("xp=2").error().where == "layout");
  CHECK(parse_layout("tp8").error().where == "layout");
}

TEST_CASE("practice: a layout's degrees and echoes are bounded, not wrapped or raw") {
  // Each degree, and tp x pp x dp x cp, at most kMaxDevices: no product wraps.
  Result<Layout> l = parse_layout("tp=999999999 dp=999999999 cp=999999999");
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().where == "layout.tp");
  CHECK(contains(l.error().message, "65536 devices"));
  CHECK(parse_layout("pp=999999999").error().where == "layout.pp");
  l = parse_layout("tp=65536 pp=65536 dp=65536 cp=65536");
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().where == "layout.tp");
  CHECK_MESSAGE(contains(l.error().message, "tp x pp x dp x cp = more than 2^63"),
                l.error().message);
  // A Layout set in code is checked by layout_strategy() alike.
  Result<Graph> g = build_model("gpt2", 8);
  REQUIRE(g.ok());
  Layout big;
  big.tp = big.dp = big.cp = 999999999;
  Result<LayoutStrategy> laid = layout_strategy(*g, Cluster{.devices = 8}, big);
  REQUIRE_FALSE(laid.ok());
  CHECK(laid.error().where == "layout.tp");
  // Control characters escaped, long values cut.
  l = parse_layout("tp=8\x1b]0;owned\x07\x1b[2J");
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().where == "layout.tp");
  CHECK_MESSAGE(contains(l.error().message, "'8\\u001b]0;owned\\u0007\\u001b[2J'"),
                l.error().message);
  for (const std::string& text :
       {std::string(131000, 'x'), "tp=8 " + std::string(131000, 'y') + "=1",
        "sp=" + std::string(131000, 'z'), "zero=\x1b" + std::string(100, '1')}) {
    l = parse_layout(text);
    REQUIRE_FALSE(l.ok());
    CHECK(l.error().message.size() < 200);
    CHECK(l.error().where.size() < 20);
    for (char ch : l.error().message) CHECK(static_cast<unsigned char>(ch) >= 0x20);
  }
  // Virtual stages: at most a stage's blocks (gpt2's 12 on 2 stages: 6).
  laid = layout_strategy(*g, Cluster{.devices = 2}, *parse_layout("pp=2 vpp=1000000"));
  REQUIRE_FALSE(laid.ok());
  CHECK(laid.error().where == "layout.vpp");
  CHECK_MESSAGE(contains(laid.error().message, "at most 6 virtual stages"), laid.error().message);
  CHECK(layout_strategy(*g, Cluster{.devices = 2}, *parse_layout("pp=2 vpp=6 gbs=8")).ok());
}

TEST_CASE("practice: a global batch too large for the graph is the layout's error") {
  // The bound is the graph builder's: every iteration space under 2^62
  // points. llama3-8b builds at the largest batch, and not one above it.
  Result<Graph> one = build_model("llama3-8b", 1);
  REQUIRE(one.ok());
  const int64_t most = largest_batch(*one);
  CHECK(most > 1000);
  CHECK(build_model("llama3-8b", most).ok());
  CHECK_FALSE(build_model("llama3-8b", most + 1).ok());
  CHECK_FALSE(check_global_batch(*one, most).has_value());
  REQUIRE(check_global_batch(*one, most + 1).has_value());
  CHECK(check_global_batch(*one, most + 1)->where == "layout.gbs");
  // A CNN has its batch too; a graph without any has no bound.
  CHECK(largest_batch(Graph{}) == std::numeric_limits<int64_t>::max());

  const std::string layout = "tp=8 pp=2 dp=4 mbs=1 gbs=999999999";
  pase::testing::Run run = pase::testing::run_cli(
      {"eval", "--model", "llama3-8b", "--procs", "64", "--preset", "h100", "--layout", layout});
  CHECK(run.exit != 0);
  CHECK_MESSAGE(contains(run.err, "layout.gbs: 999999999 is too large"), run.err);
  // Its vocabulary padded to a multiple of 128 x tp, as the CLI builds it.
  Result<Graph> padded = build_model("llama3-8b", 1, 0, 128 * 8);
  REQUIRE(padded.ok());
  CHECK(contains(run.err, "at most " + std::to_string(largest_batch(*padded))));
  json r = json::parse(evaluate_json(
      R"({"model": "llama3-8b", "preset": "h100", "cluster": {"devices": 64}, "layout": ")" +
      layout + R"("})"));
  REQUIRE(r.contains("error"));
  CHECK(r["error"]["where"] == "layout.gbs");
}

TEST_CASE("practice: a layout is the Megatron strategy on a language model") {
  Result<Graph> g = build_model("llama3-8b", 16, 256);
  REQUIRE(g.ok());
  Cluster c = practice_h100(16);
  Result<Layout> l = parse_layout("tp=4 pp=2 dp=2 sp=on zero=1 recompute=full mbs=2 gbs=16");
  REQUIRE(l.ok());
  Result<LayoutStrategy> s = layout_strategy(*g, c, *l);
  REQUIRE_MESSAGE(s.ok(), testing::why(s));
  CHECK(s->cluster.training.zero == 1);
  CHECK(s->cluster.training.recompute == Recompute::kFull);
  CHECK(s->strategy.microbatches == 4);  // 16 / (2 x 2)
  Result<Graph> micro = micro_batch_graph(*g, 4);
  REQUIRE(micro.ok());
  const auto config_of = [&](const std::string& name) {
    for (const Vertex& v : micro->vertices)
      if (v.name == name) return std::make_pair(v, s->strategy.configs[v.id]);
    FAIL("no vertex " << name);
    return std::make_pair(Vertex{}, Config{});
  };
  const auto split = [&](const std::string& name, const std::string& dim) {
    const auto [v, config] = config_of(name);
    for (size_t i = 0; i < v.dims.size(); ++i)
      if (v.dims[i] == dim) return config[i];
    return int64_t{0};
  };
  // Column- and row-parallel products, the vocabulary, the batch.
  CHECK(split("layer0_q", "b") == 2);
  CHECK(split("layer0_q", "h") == 4);
  CHECK(split("layer0_gate", "f") == 4);
  CHECK(split("layer0_down", "f") == 4);
  CHECK(split("lm_head", "v") == 4);
  CHECK(split("embed", "v") == 4);
  // Sequence parallelism: the norms split the sequence tp ways.
  CHECK(split("layer0_attn_norm", "d1") == 4);
  CHECK(split("layer0_attn_norm", "b") == 2);
  // Stages: 32 blocks, 16 on each; the embedding first, the loss last.
  const auto stage = [&](const std::string& name) {
    return s->strategy.stage_of[config_of(name).first.id];
  };
  CHECK(stage("embed") == 0);
  CHECK(stage("layer15_mlp_add") == 0);
  CHECK(stage("layer16_attn_norm") == 1);
  CHECK(stage("loss") == 1);
  Result<PipelinePlan> p = evaluate_pipeline(*g, s->cluster, s->strategy);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  CHECK(p->pipeline.stages == 2);
  CHECK(p->pipeline.microbatches == 4);
  // Full recomputation keeps less than none, and takes longer.
  Layout none = *l;
  none.recompute = Recompute::kNone;
  Result<LayoutStrategy> s0 = layout_strategy(*g, c, none);
  REQUIRE(s0.ok());
  Result<PipelinePlan> p0 = evaluate_pipeline(*g, s0->cluster, s0->strategy);
  REQUIRE(p0.ok());
  CHECK(p0->plan.memory.activations > 2 * p->plan.memory.activations);
  CHECK(p0->plan.step_time_s < p->plan.step_time_s);

  // Errors name the degree.
  Layout bad = *l;
  bad.tp = 8;
  CHECK(layout_strategy(*g, c, bad).error().where == "layout.tp");  // 8 x 2 x 2 != 16
  bad = *l;
  bad.gbs = 12;
  CHECK(layout_strategy(*g, c, bad).error().where == "layout.gbs");
  bad = *l;
  bad.vpp = 3;  // 32 blocks are not 2 x 3 chunks
  CHECK(layout_strategy(*g, c, bad).error().where == "layout.vpp");
  bad = *l;
  bad.tp = 1;
  bad.dp = 8;
  bad.mbs = 1;
  bad.gbs = 16;
  bad.pp = 2;
  CHECK(layout_strategy(*g, c, bad).ok());
  // GPT-2's exact vocabulary of 50,257 (no padding) does not split 16 ways.
  Result<Graph> gpt2 = build_model("gpt2", 16, 256, 1);
  REQUIRE(gpt2.ok());
  bad.tp = 16;
  bad.dp = 1;
  bad.pp = 1;
  Result<LayoutStrategy> refused = layout_strategy(*gpt2, c, bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().where == "layout.tp");
  CHECK(contains(refused.error().message, "(50257)"));
  CHECK(contains(refused.error().message, "pads the vocabulary to a multiple of 128 x tp"));
}

TEST_CASE("practice: eval --layout and a request's layout") {
  using pase::testing::run_cli;
  pase::testing::Run run = run_cli({"eval", "--model", "llama3-8b", "--seq", "256", "--preset",
                                    "h100", "--procs", "16", "--cost-model", "practice", "--layout",
                                    "tp=4 pp=2 dp=2 sp=on recompute=full mbs=2 gbs=16"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(contains(run.out, "step time"));
  CHECK(contains(run.out, "(practice cost model)"));
  CHECK(contains(run.out, "throughput"));
  CHECK(contains(run.out, "MFU"));
  CHECK(contains(run.out,
                 "layout           tp=4 pp=2 dp=2 cp=1 ep=1 sp=on zero=0 "
                 "recompute=full mbs=2 gbs=16 vpp=1\n"));
  run = run_cli({"eval", "--model", "llama3-8b", "--seq", "256", "--procs", "16", "--layout",
                 "tp=4 pp=2 dp=2 recompute=full gbs=16"});
  CHECK(run.exit != 0);
  CHECK(contains(run.err, "training.recompute"));  // needs the practice model
  // A config.json is built at the layout's global batch too.
  const std::string config = std::string(PASE_SOURCE_DIR) + "/examples/hf/tiny-llama/config.json";
  run = run_cli({"eval", "--graph", config, "--procs", "4", "--preset", "h100", "--layout",
                 "tp=2 dp=2 mbs=2 gbs=12"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(contains(run.out, "gbs=12 vpp=1\n"));

  json r = json::parse(evaluate_json(
      R"({"model": "llama3-8b", "seq": 256, "preset": "h100", "cluster": {"devices": 16},
          "cost_model": "practice", "layout": "tp=4 pp=2 dp=2 sp=on mbs=2 gbs=16"})"));
  REQUIRE_MESSAGE(!r.contains("error"), r.dump());
  CHECK(r["pipeline"]["stages"] == 2);
  CHECK(r["throughput"]["mfu"].get<double>() > 0);
  CHECK(r["throughput"]["tokens"] == 16 * 256);
  // Each vertex names the kernel the model priced, per device: layer0_q
  // (tp=4 splits its heads; 2 micro-batches of 2 x 256 tokens, the batch split
  // 2 ways) a product of 512 tokens x 4096 by 4096 x 1024.
  for (const json& v : r["vertices"]) {
    if (v["name"] == "layer0_q")
      CHECK(v["kernel"] ==
            json{{"class", "matmul"}, {"bpp", 1.0}, {"m", 512.0}, {"n", 1024.0}, {"k", 4096.0}});
    if (v["name"] == "layer0_scores") {
      CHECK(v["kernel"]["class"] == "attention");
      CHECK(v["kernel"]["causal"] == true);
    }
    if (v["name"] == "layer0_context") CHECK(v["kernel"]["class"] == "fused");
    if (v["name"] == "layer0_attn_norm") CHECK(v["kernel"]["class"] == "memory");
  }
  json bad = json::parse(evaluate_json(
      R"({"model": "llama3-8b", "seq": 256, "preset": "h100", "cluster": {"devices": 16},
          "cost_model": "practice", "layout": "tp=3 pp=2 dp=2 gbs=16"})"));
  CHECK(bad["error"]["where"] == "layout.tp");
}

TEST_CASE("practice: a cluster's device rates in requests, checked") {
  json r = json::parse(plan_json(
      R"({"model": "gpt2", "batch": 8, "preset": "h100", "cost_model": "practice",
          "cluster": {"devices": 8, "device": {"matmul_efficiency": 0.5}}})"));
  REQUIRE_MESSAGE(!r.contains("error"), r.dump());
  json base = json::parse(plan_json(
      R"({"model": "gpt2", "batch": 8, "preset": "h100", "cost_model": "practice", "cluster": {"devices": 8}})"));
  CHECK(r["step_time_s"].get<double>() > base["step_time_s"].get<double>());
  json bad = json::parse(plan_json(
      R"({"model": "gpt2", "preset": "h100", "cost_model": "practice",
          "cluster": {"device": {"matmul_efficiency": 1.5}}})"));
  CHECK(bad["error"]["where"] == "cluster.device.matmul_efficiency");
  bad = json::parse(
      plan_json(R"({"model": "gpt2", "preset": "h100", "cluster": {"device": {"speed": 1}}})"));
  CHECK(bad["error"]["where"] == "cluster.device.speed");
}
