// The practice model's step: interleaved pipelines, the step's parts, ZeRO's
// traffic, the working buffers and the framework's reserve, and the fit of
// the rates to published runs (core/docs/practice-model.md).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "cli_run.hpp"
#include "model/cost_model.hpp"
#include "pase/import.hpp"
#include "pase/json_api.hpp"
#include "pase/layout.hpp"
#include "pase/llm.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "pase/presets.hpp"
#include "search/weighted_plan.hpp"
#include "test_util.hpp"

using json = nlohmann::json;
using namespace pase;
using pase::testing::contains;

namespace {

Cluster practice_preset(const char* id, int64_t devices) {
  Cluster c = apply_preset(Cluster{.devices = devices}, *find_preset(id));
  c.cost_model = CostModel::kPractice;
  return c;
}

PipelinePlan priced(const Graph& g, const Cluster& c, const char* layout) {
  Result<Layout> l = parse_layout(layout);
  REQUIRE(l.ok());
  Result<LayoutStrategy> s = layout_strategy(g, c, *l);
  REQUIRE_MESSAGE(s.ok(), testing::why(s));
  Result<PipelinePlan> p = evaluate_pipeline(g, s->cluster, s->strategy);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  return std::move(p).value();
}

double parts_sum(const StepBreakdown& b) {
  return b.compute_s + b.recompute_s + b.communication_s + b.bubble_s;
}

}  // namespace

TEST_CASE("practice: interleaved 1F1B divides the bubble and keeps more on the first stage") {
  Result<Graph> g = build_model("llama3-8b", 16, 256);
  REQUIRE(g.ok());
  const Cluster c = practice_preset("h100", 16);
  const PipelinePlan plain = priced(*g, c, "tp=4 pp=2 dp=2 mbs=2 gbs=16");
  const PipelinePlan inter = priced(*g, c, "tp=4 pp=2 dp=2 mbs=2 gbs=16 vpp=2");
  CHECK(inter.pipeline.virtual_stages == 2);
  CHECK(contains(pipeline_label(inter.pipeline), "interleaved 1F1B, 2 virtual stages"));
  const StepBreakdown b1 = step_breakdown(plain.plan, &plain.pipeline, c.tflops);
  const StepBreakdown b2 = step_breakdown(inter.plan, &inter.pipeline, c.tflops);
  CHECK(b2.bubble_s < 0.6 * b1.bubble_s);
  CHECK(inter.plan.step_time_s < plain.plan.step_time_s);
  // Stage 0 of 2 with 4 micro-batches: 1F1B keeps 2; interleaved with 2
  // chunks 2 (2 - 1) + (2 - 1) 2 + 1 = 5 chunks, ceil(5 / 2) = 3.
  CHECK(plain.pipeline.stage[0].activation_copies == 2);
  CHECK(inter.pipeline.stage[0].activation_copies == 3);
  CHECK(inter.plan.memory.activations > plain.plan.memory.activations);
  // Each micro-batch crosses the stage boundary twice.
  CHECK(inter.pipeline.stage[0].A - inter.pipeline.stage[0].F ==
        doctest::Approx(2 * (plain.pipeline.stage[0].A - plain.pipeline.stage[0].F)));

  // A strategy's virtual stages are checked: micro-batches a multiple of the
  // stages, and 1F1B.
  Result<Layout> l = parse_layout("tp=4 pp=2 dp=2 mbs=2 gbs=16 vpp=2");
  Result<LayoutStrategy> s = layout_strategy(*g, c, *l);
  REQUIRE(s.ok());
  PipelineStrategy odd = s->strategy;
  odd.schedule = Schedule::kGPipe;
  Result<PipelinePlan> refused = evaluate_pipeline(*g, s->cluster, odd);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().where == "strategy.virtual_stages");
  Layout one = *l;
  one.pp = 1;
  one.dp = 4;
  one.mbs = 1;
  Result<LayoutStrategy> no_pipe = layout_strategy(*g, c, one);
  REQUIRE_FALSE(no_pipe.ok());
  CHECK(no_pipe.error().where == "layout.vpp");
}

TEST_CASE("practice: the step's parts sum to the step time") {
  Result<Graph> g = build_model("llama3-8b", 16, 256);
  REQUIRE(g.ok());
  const Cluster c = practice_preset("h100", 16);
  for (const char* layout : {"tp=4 pp=2 dp=2 mbs=2 gbs=16 recompute=full",
                             "tp=4 pp=1 dp=4 mbs=2 gbs=16", "tp=8 pp=2 dp=1 mbs=1 gbs=16 vpp=4"}) {
    CAPTURE(layout);
    const PipelinePlan p = priced(*g, c, layout);
    const StepBreakdown b = step_breakdown(p.plan, &p.pipeline, c.tflops);
    CHECK(parts_sum(b) == doctest::Approx(p.plan.step_time_s).epsilon(1e-9));
    CHECK(b.compute_s > 0);
    CHECK(b.communication_s > 0);
    CHECK((b.recompute_s > 0) == contains(layout, "recompute=full"));
    CHECK((b.bubble_s > 0) == (p.pipeline.stages > 1));
  }
  // In the JSON: "step" and each vertex's recomputation and seconds, under
  // the practice model only.
  json r = json::parse(plan_json(R"({"model": "gpt2", "batch": 8, "preset": "h100",
      "cost_model": "practice", "cluster": {"devices": 8}, "training": {"recompute": "full"}})"));
  REQUIRE_MESSAGE(!r.contains("error"), r.dump());
  const json& step = r["step"];
  CHECK(step["compute_s"].get<double>() + step["recompute_s"].get<double>() +
            step["communication_s"].get<double>() + step["bubble_s"].get<double>() ==
        doctest::Approx(r["step_time_s"].get<double>()));
  CHECK(step["recompute_s"].get<double>() > 0);
  CHECK(r["vertices"][5].contains("recompute"));
  CHECK(r["vertices"][5]["time_s"].get<double>() > 0);
  json paper = json::parse(plan_json(R"({"model": "gpt2", "batch": 8, "preset": "h100",
      "cost_model": "paper", "cluster": {"devices": 8}})"));
  CHECK_FALSE(paper.contains("step"));
  CHECK_FALSE(paper["vertices"][5].contains("recompute"));
  CHECK_FALSE(paper["memory"].contains("working"));
  // The CLI prints the parts under the step time.
  pase::testing::Run run =
      pase::testing::run_cli({"plan", "--model", "gpt2", "--batch", "8", "--procs", "8", "--preset",
                              "h100", "--cost-model", "practice", "--recompute", "full"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(contains(run.out, "  recomputation"));
  CHECK(contains(run.out, "  bubble"));
  CHECK(contains(run.out, "  working"));
}

TEST_CASE("practice: ZeRO reduce-scatters and gathers, ZeRO-3 gathers every micro-batch") {
  GraphSpec spec = testing::spec_with({{"x", {4096, 4096}}}, {});
  LayerSpec fc = testing::layer("fc", "FC", {"x"});
  fc.units = 4096;
  spec.layers = {fc};
  Result<Graph> g = build_graph(spec);
  REQUIRE(g.ok());
  Cluster c = practice_preset("h100", 8);
  c.device.overlap = 0;  // nothing hidden, no latency: the bytes alone
  c.device.latency_intra_us = c.device.latency_inter_us = 0;
  const Config dp = {8, 1, 1};  // the batch split 8 ways, the weight replicated
  const auto cost = [&](int64_t zero) {
    Cluster z = c;
    z.training.zero = zero;
    const ops::Machine m = ops::make_machine(z);
    return ops::layer_cost(*g, g->vertices[0], dp.data(), m);
  };
  const LayerCost z0 = cost(0), z1 = cost(1), z3 = cost(3);
  REQUIRE(z0.weight_sync > 0);
  // Reduce-scatter of 2-byte gradients and all-gather of 2-byte weights: the
  // all-reduce's bytes.
  CHECK(z1.weight_sync == doctest::Approx(z0.weight_sync));
  // ZeRO-3: the reduce-scatter once per step; the weight gathered for the
  // forward and the backward of every micro-batch, counted in its comm.
  CHECK(z3.weight_sync == doctest::Approx(0.5 * z0.weight_sync));
  CHECK(z3.comm - z3.weight_sync == doctest::Approx(z0.comm - z0.weight_sync + z0.weight_sync));
  // Its working buffers hold the gathered weight and the next one's.
  Cluster w = c;
  w.training.zero = 3;
  const double work3 = ops::working_bytes(*g, g->vertices[0], dp.data(), ops::make_machine(w));
  const double work0 = ops::working_bytes(*g, g->vertices[0], dp.data(), ops::make_machine(c));
  CHECK(work3 - work0 == doctest::Approx(2.0 * 2 * 4096 * 4096));
}

TEST_CASE("practice: memory counts the working buffers and the framework's reserve") {
  Cluster c = practice_preset("a100-80gb", 8);
  CHECK(c.device.reserved_gib > 0);
  // Less the default headroom too (the next case).
  CHECK(c.capacity_bytes() ==
        doctest::Approx((80 - c.device.reserved_gib - c.headroom * 80) * 0x1p30));
  Cluster paper = c;
  paper.cost_model = CostModel::kPaper;
  CHECK(paper.capacity_bytes() == doctest::Approx(80 * 0x1p30));
  Result<Graph> g = build_model("gpt2", 8, 256);
  REQUIRE(g.ok());
  Result<Plan> p = plan(*g, c);
  REQUIRE(p.ok());
  CHECK(p->memory.working > 0);
  CHECK(p->memory.total() >
        p->memory.params + p->memory.grads + p->memory.optimizer + p->memory.activations);
  Result<Plan> q = plan(*g, paper);
  REQUIRE(q.ok());
  CHECK(q->memory.working == 0);
  json r = json::parse(plan_json(R"({"model": "gpt2", "batch": 8, "preset": "a100-80gb",
      "cost_model": "practice", "cluster": {"devices": 8, "device": {"reserved_gib": 90}}})"));
  CHECK(r["error"]["where"] == "cluster.device.reserved_gib");
  r = json::parse(plan_json(R"({"model": "gpt2", "batch": 8, "preset": "a100-80gb",
      "cost_model": "practice", "cluster": {"devices": 8, "device": {"link_efficiency": 0}}})"));
  CHECK(r["error"]["where"] == "cluster.device.link_efficiency");
}

TEST_CASE("practice: the memory cap is the GPU's memory less the reserve and the headroom") {
  Cluster c = practice_preset("h100", 8);
  // The default margin is a tenth of the GPU's memory: 80 - 3 - 8 GiB.
  CHECK(c.headroom == 0.1);
  CHECK(c.headroom_gib() == doctest::Approx(8.0));
  CHECK(c.capacity_bytes() == doctest::Approx((80 - c.device.reserved_gib - 8) * 0x1p30));
  // --headroom 0 is the cap of before, to the bit.
  Cluster none = c;
  none.headroom = 0;
  CHECK(none.capacity_bytes() == (80 - none.device.reserved_gib) * 0x1p30);
  // The paper model caps at the memory, whatever the headroom.
  Cluster paper = c;
  paper.cost_model = CostModel::kPaper;
  paper.headroom = 0.5;
  CHECK(paper.capacity_bytes() == 80 * 0x1p30);
  CHECK(paper.headroom_gib() == 0);

  // A bad headroom is refused naming the field, in either model.
  for (double bad : {-0.1, 1.0, 1.5, std::nan("")}) {
    CAPTURE(bad);
    for (CostModel model : {CostModel::kPractice, CostModel::kPaper}) {
      Cluster b = c;
      b.cost_model = model;
      b.headroom = bad;
      std::optional<Error> e = check_cluster(b);
      REQUIRE(e.has_value());
      CHECK(e->where == "cluster.headroom");
      CHECK(contains(e->message, "must be a fraction of the memory"));
    }
  }
  // One that leaves nothing with the reserve: 3 + 0.97 * 80 > 80.
  Cluster full = c;
  full.headroom = 0.97;
  std::optional<Error> e = check_cluster(full);
  REQUIRE(e.has_value());
  CHECK(e->where == "cluster.headroom");
  CHECK(contains(e->message, "leave nothing of the 80 GiB"));
  // In JSON: the cluster's "headroom", a number.
  const auto error_at = [](const std::string& headroom) {
    json r = json::parse(plan_json(R"({"model": "gpt2", "batch": 8, "seq": 256, "preset": "h100",
        "cluster": {"devices": 8, "headroom": )" +
                                   headroom + "}}"));
    return r.contains("error") ? r["error"]["where"].get<std::string>() + ": " +
                                     r["error"]["message"].get<std::string>()
                               : std::string();
  };
  CHECK(contains(error_at("-0.5"), "cluster.headroom: must be a fraction"));
  CHECK(contains(error_at("1"), "cluster.headroom: must be a fraction"));
  CHECK(error_at(R"("ten")").rfind("cluster.headroom: ", 0) == 0);
  CHECK(error_at("null").rfind("cluster.headroom: ", 0) == 0);
  CHECK(error_at("0.2").empty());
}

TEST_CASE("practice: a plan that fits only without a margin is planned again under the headroom") {
  Result<Graph> g = build_model("gpt2", 8, 256);
  REQUIRE(g.ok());
  Cluster c = practice_preset("a100-80gb", 8);
  c.training.recompute = Recompute::kNone;
  c.memory_gib = 0;
  Result<Plan> free = plan(*g, c);
  REQUIRE(free.ok());
  // A GPU whose memory less the reserve holds the plan without a cap with
  // 2% to spare: with no headroom that plan stands, as before the headroom.
  c.memory_gib = free->memory.total() * 1.02 / 0x1p30 + c.device.reserved_gib;
  Cluster bare = c;
  bare.headroom = 0;
  Result<Plan> tight = plan(*g, bare);
  REQUIRE_MESSAGE(tight.ok(), testing::why(tight));
  CHECK(tight->cost == free->cost);
  CHECK(tight->memory.total() == free->memory.total());
  CHECK(tight->fits);
  CHECK(tight->capacity_bytes == (c.memory_gib - c.device.reserved_gib) * 0x1p30);
  // Under the default headroom it no longer fits: the search finds a dearer
  // plan within the smaller cap.
  REQUIRE(c.headroom == 0.1);
  Result<Plan> margin = plan(*g, c);
  REQUIRE_MESSAGE(margin.ok(), testing::why(margin));
  CHECK(margin->capacity_bytes ==
        doctest::Approx(tight->capacity_bytes - 0.1 * c.memory_gib * 0x1p30));
  CHECK(free->memory.total() > margin->capacity_bytes);
  CHECK(margin->fits);
  CHECK(margin->memory.total() <= margin->capacity_bytes);
  CHECK(margin->cost > free->cost);
  // And a margin that leaves too little for any strategy is refused with
  // the least memory reachable and what the cap is made of.
  Cluster wide = c;
  wide.headroom = 0.3;
  Result<Plan> none = plan(*g, wide);
  REQUIRE(!none.ok());
  CHECK(none.error().where == "cluster.memory_gib");
  CHECK(contains(none.error().message, "GiB are the framework's reserve and "));

  // The result carries the card's parts: the GPU's memory, the reserve and
  // the headroom, which the capacity is the memory less.
  json doc = json::parse(plan_to_json(*g, c, *margin));
  const json& m = doc["memory"];
  CHECK(m["device_bytes"].get<double>() == c.memory_gib * 0x1p30);
  CHECK(m["reserved_bytes"].get<double>() == c.device.reserved_gib * 0x1p30);
  CHECK(m["headroom_bytes"].get<double>() == doctest::Approx(0.1 * c.memory_gib * 0x1p30));
  CHECK(m["capacity_bytes"].get<double>() ==
        doctest::Approx(m["device_bytes"].get<double>() - m["reserved_bytes"].get<double>() -
                        m["headroom_bytes"].get<double>()));
  CHECK(m["params"].get<double>() + m["grads"].get<double>() + m["optimizer"].get<double>() +
            m["activations"].get<double>() + m["working"].get<double>() ==
        doctest::Approx(m["per_device_bytes"].get<double>()));
  CHECK(doc["cluster"]["headroom"] == 0.1);
}

TEST_CASE("practice: the headroom leaves the paper model's plans as they were") {
  // The paper model has no reserve and no headroom: its cap is the memory.
  Result<Graph> g = build_model("alexnet");
  REQUIRE(g.ok());
  Cluster c{.devices = 8, .memory_gib = 0.25};
  Cluster margin = c;
  margin.headroom = 0.5;
  Result<Plan> a = plan(*g, c), b = plan(*g, margin);
  REQUIRE_MESSAGE(a.ok(), testing::why(a));
  REQUIRE(b.ok());
  CHECK(a->capacity_bytes == 0.25 * 0x1p30);
  CHECK(b->capacity_bytes == a->capacity_bytes);
  CHECK(b->cost == a->cost);
  CHECK(b->strategy == a->strategy);
  CHECK(b->memory.total() == a->memory.total());
  json doc = json::parse(plan_to_json(*g, margin, *b));
  CHECK(!doc["memory"].contains("headroom_bytes"));
  CHECK(!doc["cluster"].contains("headroom"));
  CHECK(doc["memory"]["device_bytes"] == doc["memory"]["capacity_bytes"]);
}

TEST_CASE("practice: bench --fit recovers the rate that priced the runs") {
  // Three small runs "measured" as the model prices them with products at
  // 50% of the peak; the fit (one parameter for three runs) finds it again.
  json doc = {{"format", "published-runs/1"}, {"runs", json::array()}};
  const int layers[] = {2, 4, 6};
  for (int i = 0; i < 3; ++i) {
    json run = {{"id", "T" + std::to_string(i)},
                {"config",
                 {{"model_type", "llama"},
                  {"hidden_size", 512},
                  {"num_hidden_layers", layers[i]},
                  {"num_attention_heads", 8},
                  {"num_key_value_heads", 8},
                  {"intermediate_size", 1024 * (i + 1)},
                  {"vocab_size", 1024},
                  {"max_position_embeddings", 1024}}},
                {"seq", 256},
                {"global_batch", 8},
                {"micro_batch", 1},
                {"cluster", {{"preset", "a100-80gb"}, {"gpus_per_node", 8}, {"devices", 8}}},
                {"layout", {{"tp", 2}, {"pp", 1}, {"dp", 4}, {"sp", false}}}};
    ImportOptions options;
    options.batch = 8;
    options.seq = 256;
    Result<GraphSpec> spec = import_llm_config(run["config"].dump(), options);
    REQUIRE(spec.ok());
    Result<Graph> g = build_graph(std::move(*spec));
    REQUIRE(g.ok());
    Cluster c = practice_preset("a100-80gb", 8);
    c.memory_gib = 0;
    c.device.matmul_efficiency = 0.5;
    const PipelinePlan p = priced(*g, c, "tp=2 dp=4 mbs=1 gbs=8");
    run["measured"] = {{"iteration_s", p.plan.step_time_s}};
    doc["runs"].push_back(run);
  }
  const std::string file = (pase::testing::scratch() / "fit-runs.json").string();
  std::ofstream(file) << doc.dump();
  pase::testing::Run run =
      pase::testing::run_cli({"bench", "--published", file, "--fit", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  json out = json::parse(run.out);
  REQUIRE(out["fit"].size() == 1);
  CHECK(out["fit"][0]["kind"] == "a100-40gb");
  CHECK(out["fit"][0]["fitted"]["matmul_efficiency"].get<double>() ==
        doctest::Approx(0.5).epsilon(0.01));
  CHECK(out["max_abs_error"].get<double>() < 0.01);
  run = pase::testing::run_cli({"bench", "--fit"});
  CHECK(run.exit != 0);
  CHECK(contains(run.err, "--published FILE"));

  // --plan: the planner on each run's cluster and batch (the best layout,
  // then the per-layer plan), beside the published layout, at least as fast
  // under the model, proven within its gap.
  run = pase::testing::run_cli({"bench", "--published", file, "--plan", "60"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  for (int i = 0; i < 3; ++i) {
    const std::string id = "T" + std::to_string(i);
    const size_t at = run.out.find("\n" + id + " ");
    REQUIRE_MESSAGE(at != std::string::npos, run.out);
    std::istringstream row(run.out.substr(at + 1, run.out.find('\n', at + 1) - at - 1));
    std::string name, published_unit, layout_unit, planned_unit, gain, planning_unit, gap;
    int devices = 0;
    double published = 0, layout = 0, planned = 0, planning = 0;
    row >> name >> devices >> published >> published_unit >> layout >> layout_unit >> planned >>
        planned_unit >> gain >> planning >> planning_unit >> gap;
    CAPTURE(run.out);
    CHECK(devices == 8);
    CHECK(planned > 0);
    CHECK(planned <= published * (1 + 1e-9));
    CHECK(planned <= layout * (1 + 1e-9));
    CHECK(gain.front() == '+');
    CHECK(planning < 60);
    CHECK(gap == "0.00%");
  }
  run = pase::testing::run_cli({"bench", "--published", file, "--plan", "soon"});
  CHECK(run.exit != 0);
}

TEST_CASE("practice: recomputation is searched per decoder block under the memory cap") {
  const Graph g = pase::testing::small_llama(8, 4, 1024);
  // One device: the strategy is fixed, the memory is the recomputation's.
  Cluster c = practice_preset("h100", 1);
  // No reserve and no headroom: the cap is the memory.
  c.device.reserved_gib = 0;
  c.headroom = 0;
  c.memory_gib = 0;
  const Strategy ones = [&] {
    Strategy s;
    for (const Vertex& v : g.vertices) s.push_back(Config(v.dom.size(), 1));
    return s;
  }();
  const auto memory = [&](Recompute mode, int64_t blocks, Recompute rest) {
    Cluster m = c;
    m.training.recompute = mode;
    m.training.recompute_blocks = blocks;
    m.training.recompute_rest = rest;
    Result<Plan> p = evaluate(g, m, ones);
    REQUIRE(p.ok());
    return p->memory.total();
  };
  const double none = memory(Recompute::kNone, -1, Recompute::kNone);
  const double selective = memory(Recompute::kSelective, -1, Recompute::kSelective);
  const double full = memory(Recompute::kFull, -1, Recompute::kFull);
  REQUIRE(full < selective);
  REQUIRE(selective <= none);
  // A cap that only full recomputation of some blocks meets.
  c.memory_gib = (full + 0.4 * (selective - full)) / 0x1p30;
  c.training.recompute = Recompute::kAuto;
  Result<Plan> p = plan(g, c);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  REQUIRE(p->training.has_value());
  CHECK(p->fits);
  CHECK(p->training->recompute == Recompute::kFull);
  CHECK(p->training->recompute_rest == Recompute::kSelective);
  const int64_t k = p->training->recompute_blocks;
  CHECK(k >= 1);
  CHECK(k < 8);
  // The fewest blocks: one fewer does not fit.
  CHECK(memory(Recompute::kFull, k - 1, Recompute::kSelective) > c.capacity_bytes());
  CHECK(memory(Recompute::kFull, k, Recompute::kSelective) <= c.capacity_bytes());
  // Less recomputed than all in full: faster than it.
  Cluster all = c;
  all.training.recompute = Recompute::kFull;
  Result<Plan> everything = plan(g, all);
  REQUIRE(everything.ok());
  CHECK(p->cost < everything->cost);
  // A cap that only full recomputation of every block meets: full is
  // searched last, once its bound leaves it a chance, and chosen.
  const double all_but_last = memory(Recompute::kFull, 7, Recompute::kSelective);
  REQUIRE(full < all_but_last);
  Cluster tight = c;
  tight.memory_gib = (full + 0.5 * (all_but_last - full)) / 0x1p30;
  Result<Plan> only_full = plan(g, tight);
  REQUIRE_MESSAGE(only_full.ok(), testing::why(only_full));
  CHECK(only_full->fits);
  CHECK(only_full->training->recompute == Recompute::kFull);
  CHECK(only_full->training->recompute_blocks == -1);
  CHECK(only_full->cost == doctest::Approx(everything->cost).epsilon(1e-12));

  // Without a cap nothing is recomputed; the paper model refuses "auto".
  Cluster free = c;
  free.memory_gib = 0;
  Result<Plan> unbound = plan(g, free);
  REQUIRE(unbound.ok());
  CHECK(unbound->training->recompute == Recompute::kNone);
  Cluster paper = c;
  paper.cost_model = CostModel::kPaper;
  REQUIRE_FALSE(plan(g, paper).ok());
  CHECK(plan(g, paper).error().where == "training.recompute");

  // Requests search it unless they state it, and say so.
  json r = json::parse(plan_json(R"({"model": "gpt2", "batch": 8, "preset": "h100",
      "cost_model": "practice", "cluster": {"devices": 8}})"));
  REQUIRE_MESSAGE(!r.contains("error"), r.dump());
  CHECK(r["training"]["recompute_searched"] == true);
  json stated = json::parse(plan_json(R"({"model": "gpt2", "batch": 8, "preset": "h100",
      "cost_model": "practice", "cluster": {"devices": 8}, "training": {"recompute": "none"}})"));
  CHECK_FALSE(stated["training"].contains("recompute_searched"));
  json bad = json::parse(plan_json(R"({"model": "gpt2", "batch": 8, "preset": "h100",
      "cost_model": "practice", "training": {"recompute": "auto", "recompute_rest": "auto"}})"));
  CHECK(bad["error"]["where"] == "training.recompute_rest");
  pase::testing::Run run =
      pase::testing::run_cli({"plan", "--model", "gpt2", "--batch", "8", "--procs", "8", "--preset",
                              "h100", "--cost-model", "practice"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(contains(run.out, "recomputation    none (chosen by the search)"));
}

TEST_CASE(
    "practice: a tensor on every device moves only what a finer split lacks and its gradient "
    "back") {
  Result<Graph> g = build_model("llama3-8b", 16, 256);
  REQUIRE(g.ok());
  Cluster c = practice_preset("h100", 16);
  Result<Layout> l = parse_layout("tp=4 dp=4 sp=on mbs=4 gbs=16");
  REQUIRE(l.ok());
  Result<LayoutStrategy> s = layout_strategy(*g, c, *l);
  REQUIRE_MESSAGE(s.ok(), testing::why(s));
  REQUIRE(s->strategy.microbatches == 1);
  int o = -1, add = -1;
  for (const Vertex& v : g->vertices) {
    if (v.name == "layer0_o") o = v.id;
    if (v.name == "layer0_attn_add") add = v.id;
  }
  size_t edge = g->edges.size();
  for (size_t i = 0; i < g->edges.size(); ++i)
    if (g->edges[i].src == o && g->edges[i].dst == add) edge = i;
  REQUIRE(edge < g->edges.size());
  // The output projection's all-reduced result is on all 4 of its GPUs: the
  // sequence-split add takes its quarter where it is. The way back, the
  // add's gradient, split 4 ways along the sequence, is all-gathered inside
  // the node for the projection, which needs all of it: 3/4 of its block of
  // 4 x 256 x 4096 (batch 16 over 4 data-parallel groups). The paper model
  // moves the forward quarter to the devices beyond the projection's split.
  Result<Plan> practice = evaluate(*g, s->cluster, s->strategy.configs);
  REQUIRE(practice.ok());
  const ops::Machine m = ops::make_machine(s->cluster);
  CHECK(practice->edge_costs[edge] == doctest::Approx(0.75 * 4 * 256 * 4096 * m.r1));
  Cluster paper = s->cluster;
  paper.cost_model = CostModel::kPaper;
  paper.training.recompute = Recompute::kNone;
  Result<Plan> before = evaluate(*g, paper, s->strategy.configs);
  REQUIRE(before.ok());
  CHECK(before->edge_costs[edge] > 0);
}

// The recomputation search's bisection for the fewest blocks in full reads
// the least memory without a search: each vertex at its least is the
// optimum of a search that weighs memory alone (least_memory_strategy(),
// search/weighted_plan.hpp).
TEST_CASE(
    "practice: the least memory without a search is the memory-only search's (plain and stage "
    "weights)") {
  const Graph g = testing::model("gpt2");
  Cluster c = practice_preset("h100", 16);
  c.gpus_per_node = 4;
  c.training.zero = 1;
  Result<SearchSpace> space = prepare_space(g, c, PlanOptions{});
  REQUIRE(space.ok());
  EdgePrices prices(g, space->configs, EndView::of(ops::make_machine(c)), kEdgePriceBudget);
  double previous = 0;
  for (int64_t k : {0, 3, 6, 12}) {
    CAPTURE(k);
    Cluster mixed = c;
    mixed.training.recompute = Recompute::kFull;
    mixed.training.recompute_blocks = k;
    mixed.training.recompute_rest = Recompute::kSelective;
    Result<WeightedSearch> searched =
        SpaceSearch(g, mixed, PlanOptions{}, StageWeights{}, *space, &prices).once(0, 1);
    REQUIRE(searched.ok());
    const double want = StageWeights{}.bytes(searched->plan.memory);
    const double got = least_memory_strategy(g, mixed, *space, StageWeights{}).bytes;
    CHECK(got == doctest::Approx(want).epsilon(1e-12));
    // More blocks in full keep less.
    if (k > 0) CHECK(got < previous);
    previous = got;
  }
  // A pipeline stage's weights (activations of 3 micro-batches kept): the
  // strategy read off (what the search under a cap starts from under the
  // practice model) keeps what that stage's memory-only search keeps.
  StageWeights stage;
  stage.activation_copies = 3;
  Result<WeightedSearch> searched =
      SpaceSearch(g, c, PlanOptions{}, stage, *space, &prices).once(0, 1);
  REQUIRE(searched.ok());
  const LeastMemory least = least_memory_strategy(g, c, *space, stage);
  Result<Plan> evaluated = evaluate(g, c, least.strategy);
  REQUIRE(evaluated.ok());
  CHECK(least.bytes == doctest::Approx(stage.bytes(searched->plan.memory)).epsilon(1e-12));
  CHECK(stage.bytes(evaluated->memory) == doctest::Approx(least.bytes).epsilon(1e-12));
}
