// Megatron-LM arguments and torchtitan's TOML (pase/export.hpp,
// core/src/export/engines.cpp): layouts evaluated as `pase eval --layout`
// does are found again and emitted exactly as the golden files of
// tests/data/engines/ say; a plan that is not uniform names its differing
// layers and the nearest layout's step time; a CNN is refused.
//
// The golden files are written, not compared, when PASE_UPDATE_GOLDEN=1:
//   PASE_UPDATE_GOLDEN=1 ./tests/pase_tests -tc="engines*"
// then review their diff before committing.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "pase/export.hpp"
#include "pase/graph.hpp"
#include "pase/layout.hpp"
#include "pase/llm.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/presets.hpp"
#include "test_util.hpp"

using namespace pase;
using pase::testing::contains;

namespace {

// A layout's strategy evaluated on the model at the layout's global batch,
// as `pase eval --layout` does, with the graph and cluster it was priced on.
struct EnginesLaidOut {
  Layout layout;
  Graph graph;
  Cluster cluster;
  PipelinePlan piped;
  PlanView view() const {
    return PlanView{&graph, &piped.graph, &cluster, &piped.plan, &piped.pipeline};
  }
};

// `model`: a built-in model, or with `config` the graph llm_spec() makes of
// that model's config under another name, as a config.json's would be.
EnginesLaidOut engines_lay_out(const char* model, int64_t seq, int64_t devices,
                               const std::string& text, const Training* training = nullptr,
                               bool config = false) {
  Result<Layout> l = parse_layout(text);
  REQUIRE_MESSAGE(l.ok(), testing::why(l));
  Result<Graph> g = build_model(model, l->gbs, seq);
  if (config) {
    Result<GraphSpec> spec = llm_spec(*llm_config(model), "from-config", l->gbs, seq);
    REQUIRE_MESSAGE(spec.ok(), testing::why(spec));
    g = build_graph(*spec);
  }
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  Result<LayoutStrategy> s = layout_strategy(*g, pase::testing::practice_h100(devices), *l);
  REQUIRE_MESSAGE(s.ok(), testing::why(s));
  if (training != nullptr) s->cluster.training = *training;
  Result<PipelinePlan> p = evaluate_pipeline(*g, s->cluster, s->strategy);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  return EnginesLaidOut{*l, std::move(g).value(), s->cluster, std::move(p).value()};
}

Exported engines_export(ExportTarget target, const PlanView& view) {
  Result<Exported> e = export_plan(target, view);
  REQUIRE_MESSAGE(e.ok(), testing::why(e));
  return std::move(e).value();
}

bool engines_update() {
  const char* flag = std::getenv("PASE_UPDATE_GOLDEN");
  return flag != nullptr && std::string(flag) == "1";
}

// The text against tests/data/engines/`name`.txt (written instead with
// PASE_UPDATE_GOLDEN=1).
void engines_golden(const std::string& name, const std::string& text) {
  const std::string path = std::string(PASE_TEST_DATA_DIR) + "/engines/" + name + ".txt";
  if (engines_update()) {
    std::ofstream file(path, std::ios::binary);
    file << text;
    file.close();
    REQUIRE_MESSAGE(file.good(), "cannot write " << path);
    MESSAGE("PASE_UPDATE_GOLDEN=1: wrote " << path);
    return;
  }
  const std::string golden = testing::read_text(path);
  CHECK_MESSAGE(golden == text, "the export differs from " << path << "; it is now:\n" << text);
}

// Both emitters on a layout: found again, uniform, and as the golden files.
void engines_check_layout(const std::string& name, const EnginesLaidOut& x) {
  for (ExportTarget target : {ExportTarget::kMegatron, ExportTarget::kTorchtitan}) {
    const Exported e = engines_export(target, x.view());
    CAPTURE(export_target_name(target));
    CHECK(e.target == target);
    CHECK(e.uniform);
    CHECK(e.differences.empty());
    REQUIRE(e.layout.has_value());
    CHECK(layout_text(*e.layout) == layout_text(x.layout));
    CHECK(e.plan_step_time_s == x.piped.plan.step_time_s);
    CHECK(e.layout_step_time_s == x.piped.plan.step_time_s);
    const bool megatron = target == ExportTarget::kMegatron;
    CHECK(e.file_name == (megatron ? "megatron_args.sh" : "torchtitan.toml"));
    engines_golden(name + (megatron ? "_megatron" : "_torchtitan"), e.text);
  }
}

}  // namespace

TEST_CASE("engines: llama3-8b with tp pp sp ZeRO-1 and full recomputation") {
  engines_check_layout("llama3-8b",
                       engines_lay_out("llama3-8b", 256, 16,
                                       "tp=4 pp=2 dp=2 sp=on zero=1 recompute=full mbs=2 gbs=16"));
}

TEST_CASE("engines: gpt2 on an interleaved pipeline with selective recomputation") {
  engines_check_layout(
      "gpt2", engines_lay_out("gpt2", 256, 8,
                              "tp=1 pp=2 dp=4 zero=0 recompute=selective mbs=1 gbs=16 vpp=2"));
}

TEST_CASE("engines: mixtral-8x7b with context and expert parallelism and ZeRO-3") {
  engines_check_layout(
      "mixtral-8x7b",
      engines_lay_out("mixtral-8x7b", 128, 16,
                      "tp=2 pp=2 dp=2 cp=2 ep=2 sp=on zero=3 recompute=selective mbs=2 gbs=8"));
}

TEST_CASE("engines: expert parallelism above cp is found again") {
  // ep carved out of dp x cp (core/docs/practice-model.md, "Evaluating a
  // layout"): ep=4 and 8 with cp=1, ep=4 with cp=2.
  for (const char* text :
       {"tp=2 pp=2 dp=4 ep=4 sp=on mbs=1 gbs=8", "tp=1 pp=2 dp=8 ep=8 mbs=1 gbs=8",
        "tp=2 pp=2 dp=2 cp=2 ep=4 sp=on mbs=2 gbs=8"}) {
    CAPTURE(text);
    const EnginesLaidOut x = engines_lay_out("mixtral-8x7b", 128, 16, text);
    const Exported m = engines_export(ExportTarget::kMegatron, x.view());
    CHECK(m.uniform);
    REQUIRE(m.layout.has_value());
    CHECK(layout_text(*m.layout) == layout_text(x.layout));
    CHECK(
        contains(m.text, "--expert-model-parallel-size " + std::to_string(x.layout.ep) + " \\\n"));
  }
}

TEST_CASE("engines: context parallelism and gradient accumulation are found again") {
  for (const char* text :
       {"tp=2 pp=1 dp=4 cp=2 mbs=1 gbs=16", "tp=8 pp=2 dp=1 sp=on zero=3 mbs=1 gbs=8 vpp=2",
        "tp=4 pp=4 dp=1 sp=off zero=2 recompute=selective mbs=2 gbs=8"}) {
    CAPTURE(text);
    const EnginesLaidOut x = engines_lay_out("llama3-8b", 256, 16, text);
    const Exported m = engines_export(ExportTarget::kMegatron, x.view());
    CHECK(m.uniform);
    REQUIRE(m.layout.has_value());
    CHECK(layout_text(*m.layout) == layout_text(x.layout));
    const Exported t = engines_export(ExportTarget::kTorchtitan, x.view());
    CHECK(t.uniform);
    CHECK(layout_text(*t.layout) == layout_text(x.layout));
  }
  // Gradient accumulation without a pipeline: torchtitan's local batch is
  // the micro-batch, and the global batch is four of them per rank.
  const EnginesLaidOut x =
      engines_lay_out("llama3-8b", 256, 16, "tp=2 pp=1 dp=4 cp=2 mbs=1 gbs=16");
  const Exported t = engines_export(ExportTarget::kTorchtitan, x.view());
  CHECK(contains(t.text, "local_batch_size = 1\nglobal_batch_size = 16\n"));
  CHECK(contains(t.text, "context_parallel_degree = 2\n"));
  CHECK(contains(t.text, "data_parallel_replicate_degree = 4\ndata_parallel_shard_degree = 1\n"));
  const Exported m = engines_export(ExportTarget::kMegatron, x.view());
  CHECK(contains(m.text, "--context-parallel-size 2 \\\n"));
  CHECK_FALSE(contains(m.text, "--use-distributed-optimizer"));
}

TEST_CASE("engines: a config.json model's shape is read back from its graph") {
  struct Case {
    const char* model;
    int64_t devices;
    const char* layout;
    std::string flags;  // the model's arguments, in order
  };
  const std::vector<Case> cases = {
      {"llama3-8b", 16, "tp=4 pp=2 dp=2 sp=on mbs=2 gbs=16",
       "--num-layers 32 \\\n--hidden-size 4096 \\\n--ffn-hidden-size 14336 \\\n"
       "--num-attention-heads 32 \\\n--group-query-attention \\\n--num-query-groups 8 \\\n"
       "--max-position-embeddings 256 \\\n--position-embedding-type rope \\\n"
       "--normalization RMSNorm \\\n--swiglu \\\n--untie-embeddings-and-output-weights \\\n"
       "--disable-bias-linear \\\n"},
      {"gpt2", 8, "tp=1 pp=2 dp=4 mbs=1 gbs=16",
       "--num-layers 12 \\\n--hidden-size 768 \\\n--ffn-hidden-size 3072 \\\n"
       "--num-attention-heads 12 \\\n--max-position-embeddings 1024 \\\n"
       "--position-embedding-type learned_absolute \\\n--normalization LayerNorm \\\n"
       "--make-vocab-size-divisible-by 128 \\\n--bf16\n"},
      {"mixtral-8x7b", 16, "tp=2 pp=2 dp=2 cp=2 ep=2 sp=on mbs=2 gbs=8",
       "--disable-bias-linear \\\n--num-experts 8 \\\n--moe-router-topk 2 \\\n"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.model);
    const EnginesLaidOut x = engines_lay_out(c.model, 256, c.devices, c.layout, nullptr, true);
    const Exported e = engines_export(ExportTarget::kMegatron, x.view());
    CHECK(e.uniform);
    CHECK_MESSAGE(contains(e.text, c.flags), e.text);
  }
}

TEST_CASE("engines: full recomputation of the first blocks is Megatron-LM's block method") {
  Training t = pase::testing::practice_h100(16).training;
  t.recompute = Recompute::kFull;
  t.recompute_blocks = 12;
  t.recompute_rest = Recompute::kSelective;
  const EnginesLaidOut x =
      engines_lay_out("llama3-8b", 256, 16, "tp=4 pp=2 dp=2 sp=on mbs=2 gbs=16", &t);
  const Exported m = engines_export(ExportTarget::kMegatron, x.view());
  CHECK(m.uniform);
  // 12 of the model's 32 blocks: 6 on each of the 2 stages.
  CHECK(contains(m.text,
                 "--recompute-granularity full \\\n--recompute-method block \\\n"
                 "--recompute-num-layers 6 \\\n"));
  bool noted = false;
  for (const std::string& n : m.notes) noted = noted || contains(n, "full on blocks 0-11");
  CHECK(noted);
  // torchtitan takes one mode: selective, that of 20 of the 32 blocks.
  const Exported tt = engines_export(ExportTarget::kTorchtitan, x.view());
  CHECK(contains(tt.text, "mode = \"selective\"\n"));
  noted = false;
  for (const std::string& n : tt.notes) noted = noted || contains(n, "one mode for every block");
  CHECK(noted);
}

TEST_CASE("engines: a plan that is not uniform names its layers and the nearest layout") {
  const Graph g = testing::model("gpt2", 8);
  const Cluster c = pase::testing::practice_h100(8);
  Result<Plan> p = plan(g, c);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  const PlanView view{&g, &g, &c, &*p, nullptr};
  const Exported e = engines_export(ExportTarget::kMegatron, view);
  CHECK_FALSE(e.uniform);
  REQUIRE_FALSE(e.differences.empty());
  // The differing vertices of every block are one line: "layer0_q .. layer11_q: ...".
  bool every_block = false;
  for (const std::string& d : e.differences)
    every_block = every_block || (d.rfind("layer0_", 0) == 0 && contains(d, " .. layer11_"));
  CHECK(every_block);
  REQUIRE(e.layout.has_value());
  CHECK(e.layout->pp == 1);
  CHECK(e.plan_step_time_s == p->step_time_s);
  CHECK(e.layout_step_time_s > 0);
  CHECK(contains(e.text, "# the plan is not uniform"));
  CHECK(contains(e.text, "#   the plan differs at " + e.differences[0] + "\n"));
  CHECK(contains(e.text, "--tensor-model-parallel-size " + std::to_string(e.layout->tp)));
  // The layout's step time is its own strategy's, with the plan's training.
  Result<LayoutStrategy> s = layout_strategy(g, c, *e.layout);
  REQUIRE(s.ok());
  s->cluster.training = p->training ? *p->training : c.training;
  Result<PipelinePlan> priced = evaluate_pipeline(g, s->cluster, s->strategy);
  REQUIRE(priced.ok());
  CHECK(e.layout_step_time_s == priced->plan.step_time_s);
  const Exported t = engines_export(ExportTarget::kTorchtitan, view);
  CHECK_FALSE(t.uniform);
  CHECK(t.differences == e.differences);
  CHECK(layout_text(*t.layout) == layout_text(*e.layout));
}

TEST_CASE("engines: one block split otherwise is the only difference") {
  EnginesLaidOut x = engines_lay_out("llama3-8b", 256, 16, "tp=4 pp=2 dp=2 sp=on mbs=2 gbs=16");
  // Block 5's q split over the micro-batch of 4 alone, not over its heads.
  for (const Vertex& v : x.piped.graph.vertices) {
    if (v.name != "layer5_q") continue;
    Config& config = x.piped.plan.strategy[v.id];
    for (size_t i = 0; i < v.dims.size(); ++i) config[i] = v.dims[i] == "b" ? 4 : 1;
  }
  const Exported e = engines_export(ExportTarget::kMegatron, x.view());
  CHECK_FALSE(e.uniform);
  REQUIRE(e.differences.size() == 1);
  CHECK(e.differences[0] ==
        "layer5_q: batch (b) split 4 ways, the layout splits it 2 ways; heads (h) not split, the "
        "layout splits it 4 ways");
  CHECK(layout_text(*e.layout) == layout_text(x.layout));
}

TEST_CASE("engines: a CNN's graph is not a language model's") {
  const Graph g = testing::model("alexnet");
  const Cluster c{.devices = 4};
  Strategy ones;
  for (const Vertex& v : g.vertices) ones.push_back(Config(v.dom.size(), 1));
  Result<Plan> p = evaluate(g, c, ones);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  const PlanView view{&g, &g, &c, &*p, nullptr};
  for (ExportTarget target : {ExportTarget::kMegatron, ExportTarget::kTorchtitan}) {
    Result<Exported> e = export_plan(target, view);
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().where == "emit");
    CHECK(contains(e.error().message, "alexnet"));
    CHECK(contains(e.error().message, "language model"));
  }
}
