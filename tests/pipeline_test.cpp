// Pipeline stages and micro-batches (core/docs/pipeline.md): the golden step
// times and stage memory, S = M = 1 against the plan without a pipeline, the
// partition against brute force, "auto", hand-computed chains, and errors.
#include "pase/pipeline.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/layout.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "pase/presets.hpp"
#include "pipeline/pipeline_model.hpp"
#include "test_util.hpp"

using json = nlohmann::json;
using namespace pase;
using pase::testing::close_to;
using pase::testing::golden_cluster;
using pase::testing::read_golden;

namespace {}  // namespace

TEST_CASE("pipeline: the golden step times and stage memory of the FC3 network") {
  const json golden = read_golden("fc3_cluster_pipeline.json");
  Result<Graph> g = load_graph(golden["graph"].dump());
  REQUIRE(g.ok());
  REQUIRE(golden["pipeline"].size() == 2);
  for (const json& c : golden["pipeline"]) {
    CAPTURE(c.dump());
    PipelineStrategy s;
    for (const json& config : c["strategy"]["configs"]) s.configs.push_back(config.get<Config>());
    s.stage_of = c["strategy"]["stage_of"].get<std::vector<int>>();
    s.microbatches = c["strategy"]["microbatches"];
    s.schedule = c["strategy"]["schedule"] == "gpipe" ? Schedule::kGPipe : Schedule::k1F1B;
    Result<PipelinePlan> p = evaluate_pipeline(*g, golden_cluster(c), s);
    REQUIRE_MESSAGE(p.ok(), testing::why(p));
    CHECK(close_to(p->plan.cost, c["cost"].get<double>(), 1e-9));
    CHECK(close_to(p->plan.memory.total(), c["memory_per_device_bytes"].get<double>(), 1e-9));
  }
}

namespace {

// The spec's two levels by brute force (core/docs/pipeline.md, "What the
// planner chooses"): every partition of the vertex order into `stages`
// ranges; in each, the stage plan of least M * A + W that fits (ties within
// 1e-12 to the smaller A), every combination of its vertices'
// configurations tried; then the least T. Returns inf when nothing fits.
double brute_force_T(const Graph& g, const Cluster& cluster, int64_t stages, int64_t microbatches,
                     Schedule schedule) {
  Result<Graph> micro = micro_batch_graph(g, microbatches);
  REQUIRE(micro.ok());
  const int n = static_cast<int>(micro->vertices.size());
  const int64_t q = cluster.devices / stages;
  const double M = static_cast<double>(microbatches);
  const double cap = cluster.memory_gib > 0 ? cluster.capacity_bytes() : INFINITY;
  const ops::Machine machine = ops::make_machine(cluster);
  const pipeline_detail::Sender sender{*micro, machine, q};
  // Stage plans by (s, first, last): A (inf: none fits) and W.
  std::map<std::tuple<int64_t, int, int>, std::pair<double, double>> memo;
  auto stage = [&](int64_t s, int a, int b) -> std::pair<double, double> {
    auto key = std::make_tuple(s, a, b);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    Cluster cs = cluster;
    cs.devices = q;
    cs.first_device = s * q;
    cs.memory_gib = 0;
    const Graph sub = pipeline_detail::stage_graph(*micro, a, b);
    std::vector<std::vector<Config>> options;
    for (const Vertex& v : sub.vertices) {
      Result<std::vector<Config>> c = enumerate_configs(sub, v.id, cs);
      REQUIRE(c.ok());
      options.push_back(*c);
    }
    const double k =
        static_cast<double>(pipeline_detail::copies_of(schedule, stages, s, microbatches));
    double x = 0;
    if (s + 1 < stages)
      for (const Edge& e : micro->edges)
        if (e.src >= a && e.src < b && e.dst >= b) x += sender.edge(e, s, s + 1);
    double best_value = INFINITY, best_a = INFINITY, best_w = 0;
    std::vector<size_t> at(sub.vertices.size(), 0);
    for (;;) {
      Strategy st;
      for (size_t v = 0; v < at.size(); ++v) st.push_back(options[v][at[v]]);
      Result<Plan> p = evaluate(sub, cs, st);
      REQUIRE(p.ok());
      double w = 0;
      for (const LayerCost& l : p->layers) w += l.weight_sync;
      const double a_s = p->cost - w + x;
      const double bytes =
          p->memory.params + p->memory.grads + p->memory.optimizer + k * p->memory.activations;
      const double value = M * (p->cost - w) + w;
      if (bytes <= cap) {
        const bool tie = std::fabs(value - best_value) <= 1e-12 * std::fabs(best_value);
        if ((!tie && value < best_value) || (tie && a_s < best_a)) {
          best_value = std::min(value, best_value);
          best_a = a_s;
          best_w = w;
        }
      }
      size_t v = 0;
      while (v < at.size() && ++at[v] == options[v].size()) at[v++] = 0;
      if (v == at.size()) break;
    }
    return memo[key] = {best_a, best_w};
  };
  double best = INFINITY;
  // Every increasing sequence of stages - 1 cut positions in 1..n-1.
  std::vector<int> cuts(static_cast<size_t>(stages - 1));
  std::function<void(int, int)> walk = [&](int index, int from) {
    if (index == static_cast<int>(cuts.size())) {
      double sum = 0, max_a = 0, max_w = 0;
      int a = 0;
      for (int64_t s = 0; s < stages; ++s) {
        const int b = s + 1 < stages ? cuts[s] : n;
        auto [A, W] = stage(s, a, b);
        if (A == INFINITY) return;
        sum += A;
        max_a = std::max(max_a, A);
        max_w = std::max(max_w, W);
        a = b;
      }
      best = std::min(best, sum + (M - 1) * max_a + max_w);
      return;
    }
    for (int c = from; c < n; ++c) {
      cuts[index] = c;
      walk(index + 1, c + 1);
    }
  };
  walk(0, 1);
  return best;
}

}  // namespace

TEST_CASE("pipeline: the partition against brute force on small graphs") {
  const json golden = read_golden("fc3_cluster_pipeline.json");
  Result<Graph> fc3 = load_graph(golden["graph"].dump());
  REQUIRE(fc3.ok());
  struct Case {
    int64_t devices, per_node;
    double memory_gib;
  };
  int gaps = 0;
  // Two-level clusters at 4 and 8 devices: stages sharing a node (q < G)
  // on the chain, stages on nodes of their own, and a memory cap that binds.
  for (const Case& c :
       {Case{4, 2, 0}, Case{4, 4, 0}, Case{8, 4, 0}, Case{8, 2, 0.006}, Case{4, 2, 0.012}}) {
    Cluster cluster{.devices = c.devices, .bandwidth_gbps = 10};
    cluster.gpus_per_node = c.per_node;
    cluster.intra_node_gbps = 100;
    cluster.memory_gib = c.memory_gib;
    for (int64_t stages : {int64_t{1}, int64_t{2}, int64_t{4}})
      for (int64_t m : {int64_t{1}, int64_t{2}, int64_t{4}})
        for (Schedule schedule : {Schedule::k1F1B, Schedule::kGPipe}) {
          if (c.devices % stages != 0) continue;
          CAPTURE(c.devices);
          CAPTURE(c.per_node);
          CAPTURE(stages);
          CAPTURE(m);
          PipelineOptions po{.stages = stages, .microbatches = m, .schedule = schedule};
          if (stages > static_cast<int64_t>(fc3->vertices.size())) {
            Result<PipelinePlan> p = plan_pipeline(*fc3, cluster, po);
            REQUIRE_FALSE(p.ok());
            CHECK(p.error().where == "pipeline.stages");
            continue;
          }
          const double expected = brute_force_T(*fc3, cluster, stages, m, schedule);
          Result<PipelinePlan> p = plan_pipeline(*fc3, cluster, po);
          if (expected == INFINITY) {
            REQUIRE_FALSE(p.ok());
            CHECK(p.error().where == "cluster.memory_gib");
            continue;
          }
          REQUIRE_MESSAGE(p.ok(), testing::why(p));
          // Under a cap a stage plan is the Lagrangian search's
          // (core/docs/cluster.md), exact when it proves itself optimal.
          if (p->plan.optimal) {
            CHECK_MESSAGE(close_to(p->plan.cost, expected, 1e-9),
                          p->plan.cost << " vs " << expected);
          } else {
            CHECK(p->plan.cost >= expected * (1 - 1e-9));
            ++gaps;
          }
        }
  }
  // The tight cap leaves the Lagrangian search a gap in its stage plans.
  MESSAGE("capped cases with a gap (checked as upper bounds): " << gaps);
}

TEST_CASE("pipeline: one stage and one micro-batch is the plan without a pipeline") {
  for (const ModelInfo& info : list_models()) {
    if (info.llm) continue;  // the LLMs' plans take minutes; covered in the CLI tests
    CAPTURE(info.name);
    Result<Graph> g = build_model(info.name);
    REQUIRE(g.ok());
    const Cluster cluster{.devices = 8};
    Result<Plan> plain = plan(*g, cluster);
    REQUIRE(plain.ok());
    Result<PipelinePlan> piped = plan_pipeline(*g, cluster, PipelineOptions{});
    REQUIRE_MESSAGE(piped.ok(), testing::why(piped));
    CHECK(piped->plan.cost == plain->cost);
    CHECK(piped->plan.strategy == plain->strategy);
    CHECK(piped->plan.memory.total() == plain->memory.total());
    CHECK(piped->pipeline.stage.size() == 1);
  }
}

TEST_CASE("pipeline: auto is never worse than one stage, and errors name their field") {
  // The FC3 network with a fourth layer, so that ranges recur at several
  // stage counts (on other device counts).
  json doc = read_golden("fc3_cluster_pipeline.json")["graph"];
  doc["layers"].push_back(json{{"name", "fc4"}, {"op", "FC"}, {"inputs", {"fc3"}}, {"units", 128}});
  Result<Graph> g = load_graph(doc.dump());
  REQUIRE(g.ok());
  Cluster cluster{.devices = 8, .bandwidth_gbps = 10};
  cluster.gpus_per_node = 4;
  cluster.intra_node_gbps = 100;
  Result<PipelinePlan> one =
      plan_pipeline(*g, cluster, PipelineOptions{.stages = 1, .microbatches = kAuto});
  Result<PipelinePlan> best =
      plan_pipeline(*g, cluster, PipelineOptions{.stages = kAuto, .microbatches = kAuto});
  REQUIRE(one.ok());
  REQUIRE(best.ok());
  CHECK(best->plan.cost <= one->plan.cost);
  // "auto" is the least over every S and M tried one by one, ties to fewer
  // stages, then fewer micro-batches.
  double least = INFINITY;
  int64_t least_s = 0, least_m = 0;
  for (int64_t s : {1, 2, 4, 8})
    for (int64_t m : {1, 2, 4, 8, 16, 32}) {
      Result<PipelinePlan> p =
          plan_pipeline(*g, cluster, PipelineOptions{.stages = s, .microbatches = m});
      if (!p) {
        CHECK(p.error().where == "pipeline.stages");  // more stages than layers
        continue;
      }
      if (p->plan.cost < least * (1 - 1e-12)) {
        least = p->plan.cost;
        least_s = s;
        least_m = m;
      }
    }
  CHECK(best->plan.cost == doctest::Approx(least).epsilon(1e-12));
  CHECK(best->pipeline.stages == least_s);
  CHECK(best->pipeline.microbatches == least_m);

  Result<PipelinePlan> bad_s = plan_pipeline(*g, cluster, PipelineOptions{.stages = 3});
  REQUIRE_FALSE(bad_s.ok());
  CHECK(bad_s.error().where == "pipeline.stages");
  CHECK(bad_s.error().message.find("do not divide the 8 devices") != std::string::npos);
  Result<PipelinePlan> bad_m = plan_pipeline(*g, cluster, PipelineOptions{.microbatches = 5});
  REQUIRE_FALSE(bad_m.ok());
  CHECK(bad_m.error().where == "pipeline.microbatches");
  CHECK(bad_m.error().message.find("do not divide the batch 32") != std::string::npos);

  PipelineStrategy s{.configs = {{1, 2, 1}, {2, 1, 1}, {1, 1, 2}, {1, 1, 1}},
                     .stage_of = {0, 2, 2, 2}};
  Result<PipelinePlan> gap = evaluate_pipeline(*g, cluster, s);
  REQUIRE_FALSE(gap.ok());
  CHECK(gap.error().where == "strategy.stage_of[1]");
  s.stage_of = {0, 1, 1, 1};
  s.configs[2] = {1, 1, 8};
  Result<PipelinePlan> too_wide = evaluate_pipeline(*g, cluster, s);
  REQUIRE_FALSE(too_wide.ok());
  CHECK(too_wide.error().where.rfind("strategy.configs[2]", 0) == 0);
}

TEST_CASE("pipeline: virtual stages are at most the blocks of the smallest stage") {
  // GPT-2's 12 blocks on 2 stages: at most 6 chunks each.
  Result<Graph> g = build_model("gpt2", 12);
  REQUIRE(g.ok());
  const Cluster cluster{.devices = 2};
  Result<LayoutStrategy> laid = layout_strategy(*g, cluster, *parse_layout("pp=2 vpp=6 gbs=12"));
  REQUIRE(laid.ok());
  PipelineStrategy s = laid->strategy;
  CHECK(evaluate_pipeline(*g, cluster, s).ok());
  for (int64_t v : {int64_t{7}, int64_t{1000000}, int64_t{4611686018427387904}}) {
    CAPTURE(v);
    s.virtual_stages = v;
    Result<PipelinePlan> p = evaluate_pipeline(*g, cluster, s);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().where == "strategy.virtual_stages");
    CHECK_MESSAGE(p.error().message.find("at most 6, the decoder blocks") != std::string::npos,
                  p.error().message);
  }
  // The same strategy in a request.
  json strategy = {{"configs", s.configs},
                   {"stage_of", s.stage_of},
                   {"microbatches", s.microbatches},
                   {"virtual_stages", int64_t{4611686018427387904}}};
  json r = json::parse(evaluate_json(
      json{{"model", "gpt2"}, {"batch", 12}, {"cluster", {{"devices", 2}}}, {"strategy", strategy}}
          .dump()));
  REQUIRE(r.contains("error"));
  CHECK(r["error"]["where"] == "strategy.virtual_stages");
  // A graph without blocks: a stage's vertices bound it.
  Result<Graph> fc = load_graph(read_golden("fc3_cluster_pipeline.json")["graph"].dump());
  REQUIRE(fc.ok());
  const Cluster two{.devices = 2, .bandwidth_gbps = 10};
  PipelineStrategy f{.configs = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
                     .stage_of = {0, 0, 1},
                     .microbatches = 2,
                     .virtual_stages = 2};
  Result<PipelinePlan> p = evaluate_pipeline(*fc, two, f);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().where == "strategy.virtual_stages");
  CHECK(p.error().message.find("at most 1, the vertices") != std::string::npos);
}

TEST_CASE("pipeline: requests, results and saved plans in JSON") {
  const json graph = read_golden("fc3_cluster_pipeline.json")["graph"];
  const json cluster = {{"devices", 4},
                        {"tflops", 10},
                        {"bandwidth_gbps", 10},
                        {"gpus_per_node", 2},
                        {"intra_node_gbps", 100}};
  json request = {{"graph", graph},
                  {"cluster", cluster},
                  {"cost_model", "paper"},
                  {"pipeline", {{"stages", 2}, {"microbatches", "auto"}, {"schedule", "gpipe"}}}};
  const json planned = json::parse(plan_json(request.dump()));
  REQUIRE_MESSAGE(!planned.contains("error"), planned.dump());
  const json& p = planned["pipeline"];
  CHECK(p["stages"] == 2);
  CHECK(p["schedule"] == "gpipe");
  CHECK(p["stage"].size() == 2);
  CHECK(p["stage_of"].size() == 3);
  CHECK(p["label"].get<std::string>().rfind("pipeline x2 (", 0) == 0);
  // The step time is T; the memory is the largest stage's.
  const double T = planned["cost"];
  double sum_a = 0, max_a = 0, max_w = 0, max_mem = 0;
  for (const json& st : p["stage"]) {
    sum_a += st["A"].get<double>();
    max_a = std::max(max_a, st["A"].get<double>());
    max_w = std::max(max_w, st["W"].get<double>());
    max_mem = std::max(max_mem, st["memory_bytes"].get<double>());
  }
  CHECK(close_to(T, sum_a + (p["microbatches"].get<double>() - 1) * max_a + max_w));
  CHECK(planned["memory"]["per_device_bytes"].get<double>() == max_mem);
  CHECK(close_to(planned["step_time_s"], T / 10e12));

  // The saved result evaluates to the same step time.
  json again = {
      {"graph", graph}, {"cluster", cluster}, {"cost_model", "paper"}, {"strategy", planned}};
  const json evaluated = json::parse(evaluate_json(again.dump()));
  REQUIRE_MESSAGE(!evaluated.contains("error"), evaluated.dump());
  CHECK(close_to(evaluated["cost"], T));
  CHECK(evaluated["pipeline"]["stage_of"] == p["stage_of"]);

  // Bad fields are named.
  request["pipeline"] = {{"stages", 0}};
  CHECK(json::parse(plan_json(request.dump()))["error"]["where"] == "pipeline.stages");
  request["pipeline"] = {{"schedule", "zigzag"}};
  CHECK(json::parse(plan_json(request.dump()))["error"]["where"] == "pipeline.schedule");
  request["pipeline"] = {{"stages", 3}};
  CHECK(json::parse(plan_json(request.dump()))["error"]["where"] == "pipeline.stages");
  request["pipeline"] = {{"microbatches", 3}};
  CHECK(json::parse(plan_json(request.dump()))["error"]["where"] == "pipeline.microbatches");
  json bad = {
      {"graph", graph},
      {"cluster", cluster},
      {"cost_model", "paper"},
      {"strategy", {{"configs", {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}}}, {"stage_of", {1, 1, 1}}}}};
  CHECK(json::parse(evaluate_json(bad.dump()))["error"]["where"] == "strategy.stage_of[0]");
}

TEST_CASE("pipeline: progress rises to 1, half of it over the plan without a pipeline") {
  Result<Graph> g = build_model("transformer");
  REQUIRE(g.ok());
  std::vector<Progress> seen;
  PlanOptions options;
  options.on_progress = [&](const Progress& p) { seen.push_back(p); };
  Result<PipelinePlan> p = plan_pipeline(
      *g, Cluster{.devices = 16}, PipelineOptions{.stages = kAuto, .microbatches = kAuto}, options);
  REQUIRE(p.ok());
  REQUIRE(seen.size() > 2);
  CHECK(seen.back().fraction == 1);
  bool first_half = false, second_half = false;
  for (size_t i = 0; i < seen.size(); ++i) {
    CAPTURE(i);
    CHECK(seen[i].fraction >= 0);
    CHECK(seen[i].fraction <= 1);
    if (i > 0) CHECK(seen[i].fraction >= seen[i - 1].fraction);
    first_half = first_half || (seen[i].fraction > 0 && seen[i].fraction < 0.5);
    second_half = second_half || (seen[i].fraction > 0.5 && seen[i].fraction < 1);
    // The first stage plan, S = M = 1, is the first half of the bar (the
    // last report, the end, counts nothing).
    if (i + 1 < seen.size() && seen[i].vertices_done == 0) CHECK(seen[i].fraction <= 0.5);
    if (i + 1 < seen.size() && seen[i].vertices_done > 0) CHECK(seen[i].fraction >= 0.5);
    // Stage plans: never more done than counted.
    CHECK(seen[i].vertices_done <= seen[i].vertices_total);
  }
  CHECK(first_half);
  CHECK(second_half);
}

TEST_CASE("pipeline: a language model's stages start between decoder blocks, a ResNet's anywhere") {
  // Among the positions the fewest tensors cross: GPT-2's 12 blocks give
  // 0, one cut before each block and after the last, and the end; without
  // the rule the residual stream inside each block (after the attention's
  // add) is crossed by as few.
  Result<Graph> gpt2 = build_model("gpt2");
  REQUIRE(gpt2.ok());
  const std::vector<int> cuts = pipeline_detail::allowed_boundaries(*gpt2);
  const int n = static_cast<int>(gpt2->vertices.size());
  REQUIRE(cuts.size() >= 2);
  CHECK(cuts.front() == 0);
  CHECK(cuts.back() == n);
  int blocks_started = 0;
  for (size_t i = 1; i + 1 < cuts.size(); ++i) {
    const Vertex& before = gpt2->vertices[cuts[i] - 1];
    const Vertex& after = gpt2->vertices[cuts[i]];
    CAPTURE(before.name);
    CAPTURE(after.name);
    const bool block_starts =
        after.name.rfind("layer", 0) == 0 && after.name.find("_attn_norm") != std::string::npos;
    CHECK((block_starts || before.name.rfind("layer11_", 0) == 0));
    blocks_started += block_starts ? 1 : 0;
  }
  CHECK(blocks_started >= 11);
  CHECK(cuts.size() <= 15);
  // ResNet-101's stages (named layer1_ to layer4_) are not alike: its cuts
  // fall between bottlenecks inside them too.
  Result<Graph> resnet = build_model("resnet101");
  REQUIRE(resnet.ok());
  int inside = 0;
  const std::vector<int> resnet_cuts = pipeline_detail::allowed_boundaries(*resnet);
  for (size_t i = 1; i + 1 < resnet_cuts.size(); ++i) {
    const Vertex& before = resnet->vertices[resnet_cuts[i] - 1];
    const Vertex& after = resnet->vertices[resnet_cuts[i]];
    inside += before.name.rfind("layer3_", 0) == 0 && after.name.rfind("layer3_", 0) == 0 ? 1 : 0;
  }
  CHECK(inside >= 20);
}

TEST_CASE("pipeline: a plan without a pipeline ruled out by its floor takes none of the bar") {
  // GPT-2 at batch 256 x 1024 on 8 A100 with 2 GiB besides the framework's
  // reserve: the activations of the whole batch are over the cap by their
  // floor, so the plan without a pipeline is ruled out with no stage plan
  // searched, and the bar counts the other pairs' stage plans from 0
  // (before, it stood at one half from the first report on).
  Result<Graph> g = build_model("gpt2", 256, 1024);
  REQUIRE(g.ok());
  Cluster cluster = apply_preset(Cluster{.devices = 8}, *find_preset("a100-80gb"));
  cluster.cost_model = CostModel::kPractice;
  cluster.training.recompute = Recompute::kNone;
  cluster.memory_gib = 5;
  std::vector<Progress> seen;
  PlanOptions options;
  options.on_progress = [&](const Progress& p) { seen.push_back(p); };
  Result<PipelinePlan> p =
      plan_pipeline(*g, cluster, PipelineOptions{.stages = kAuto, .microbatches = kAuto}, options);
  REQUIRE(p.ok());
  CHECK(p->plan.fits);
  CHECK(p->pipeline.no_pipeline_cost == 0);  // no plan without a pipeline fits
  REQUIRE(seen.size() > 2);
  CHECK(seen.front().fraction < 0.01);
  CHECK(seen.back().fraction == 1);
  for (size_t i = 1; i < seen.size(); ++i) CHECK(seen[i].fraction >= seen[i - 1].fraction);
}
