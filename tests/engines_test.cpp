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

TEST_CASE("engines: llama3-8b with tp pp sp ZeRO-3 and full recomputation") {
  engines_check_layout("llama3-8b",
                       engines_lay_out("llama3-8b", 256, 16,
                                       "tp=4 pp=2 dp=2 sp=on zero=3 recompute=full mbs=2 gbs=16"));
}

TEST_CASE("engines: gpt2 on an interleaved pipeline with selective recomputation") {
  engines_check_layout(
      "gpt2", engines_lay_out("gpt2", 256, 8,
                              "tp=1 pp=2 dp=4 zero=3 recompute=selective mbs=1 gbs=16 vpp=2"));
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
  for (const char* text : {"tp=2 pp=1 dp=4 cp=2 sp=on zero=3 mbs=1 gbs=16",
                           "tp=8 pp=2 dp=1 sp=on zero=3 mbs=1 gbs=8 vpp=2",
                           "tp=4 pp=4 dp=1 sp=on zero=2 recompute=selective mbs=2 gbs=8"}) {
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
      engines_lay_out("llama3-8b", 256, 16, "tp=2 pp=1 dp=4 cp=2 sp=on zero=3 mbs=1 gbs=16");
  const Exported t = engines_export(ExportTarget::kTorchtitan, x.view());
  CHECK(contains(t.text, "local_batch_size = 1\nglobal_batch_size = 16\n"));
  CHECK(contains(t.text, "context_parallel_degree = 2\n"));
  CHECK(contains(t.text, "data_parallel_replicate_degree = 1\ndata_parallel_shard_degree = 4\n"));
  const Exported m = engines_export(ExportTarget::kMegatron, x.view());
  CHECK(contains(m.text, "--context-parallel-size 2 \\\n"));
  CHECK_FALSE(contains(m.text, "--use-distributed-optimizer"));
}

// The lines of a launch script's arguments: "  --flag \\\n" each.
std::string engines_flags(std::initializer_list<const char*> flags) {
  std::string out;
  for (const char* f : flags) out += std::string("  ") + f + " \\\n";
  return out;
}

Graph engines_model(const char* name, int64_t batch, int64_t seq) {
  Result<Graph> g = build_model(name, batch, seq);
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  return std::move(g).value();
}

bool engines_noted(const Exported& e, const std::string& part) {
  for (const std::string& n : e.notes)
    if (contains(n, part)) return true;
  return false;
}

TEST_CASE("engines: a config.json model's shape is read back from its graph") {
  struct Case {
    const char* model;
    int64_t devices;
    const char* layout;
    std::string flags;  // the model's arguments, in order
  };
  const std::vector<Case> cases = {
      // The longest sequence, the RoPE base and the epsilon come from the
      // graph's record, not from the planned sequence.
      {"llama3-8b", 16, "tp=4 pp=2 dp=2 sp=on mbs=2 gbs=16",
       engines_flags({"--num-layers 32", "--hidden-size 4096", "--ffn-hidden-size 14336",
                      "--num-attention-heads 32", "--group-query-attention", "--num-query-groups 8",
                      "--seq-length 256", "--max-position-embeddings 8192",
                      "--position-embedding-type rope", "--rotary-base 500000",
                      "--normalization RMSNorm", "--norm-epsilon 1e-05", "--swiglu",
                      "--disable-bias-linear", "--untie-embeddings-and-output-weights"})},
      {"gpt2", 8, "tp=1 pp=2 dp=4 mbs=1 gbs=16",
       engines_flags({"--num-layers 12", "--hidden-size 768", "--ffn-hidden-size 3072",
                      "--num-attention-heads 12", "--seq-length 256",
                      "--max-position-embeddings 1024",
                      "--position-embedding-type learned_absolute", "--normalization LayerNorm",
                      "--norm-epsilon 1e-05", "--make-vocab-size-divisible-by 128",
                      "--tensor-model-parallel-size 1"})},
      {"mixtral-8x7b", 16, "tp=2 pp=2 dp=2 cp=2 ep=2 sp=on mbs=2 gbs=8",
       engines_flags({"--max-position-embeddings 32768", "--position-embedding-type rope",
                      "--rotary-base 1000000", "--normalization RMSNorm", "--norm-epsilon 1e-05",
                      "--swiglu", "--disable-bias-linear", "--untie-embeddings-and-output-weights",
                      "--make-vocab-size-divisible-by 128"}) +
           engines_flags({"--num-experts 8", "--moe-router-topk 2",
                          "--expert-model-parallel-size 2", "--expert-tensor-parallel-size 2",
                          "--tensor-model-parallel-size 2", "--sequence-parallel"})},
  };
  for (const Case& c : cases) {
    CAPTURE(c.model);
    const EnginesLaidOut x = engines_lay_out(c.model, 256, c.devices, c.layout, nullptr, true);
    const Exported e = engines_export(ExportTarget::kMegatron, x.view());
    CHECK(e.uniform);
    CHECK_MESSAGE(contains(e.text, c.flags), e.text);
    CHECK_FALSE(engines_noted(e, "--max-position-embeddings is the planned sequence"));
  }
}

TEST_CASE("engines: Megatron-LM's export is a launch script for the cluster's nodes") {
  const EnginesLaidOut x =
      engines_lay_out("llama3-8b", 256, 16, "tp=4 pp=2 dp=2 sp=on zero=1 mbs=2 gbs=16");
  const Exported e = engines_export(ExportTarget::kMegatron, x.view());
  CHECK(e.text.rfind("#!/bin/bash\n", 0) == 0);
  // 16 H100 are 2 nodes of 8.
  CHECK(contains(e.text,
                 "\ntorchrun --nnodes 2 --nproc-per-node 8 --node-rank \"${NODE_RANK:-0}\" "
                 "--master-addr \"${MASTER_ADDR:-localhost}\" --master-port "
                 "\"${MASTER_PORT:-6000}\" \\\n  pretrain_gpt.py \\\n  --num-layers 32 \\\n"));
  CHECK(e.text.size() > 7);
  CHECK(e.text.substr(e.text.size() - 7) == "  \"$@\"\n");
  // The layout's arguments after the model's.
  CHECK(e.text.find("--tensor-model-parallel-size") > e.text.find("--num-layers"));
  // A flat cluster is one node of every device.
  Cluster flat = x.cluster;
  flat.gpus_per_node = 0;
  flat.intra_node_gbps = 0;
  Result<Exported> f = export_layout(ExportTarget::kMegatron, x.graph, flat, x.layout);
  REQUIRE_MESSAGE(f.ok(), testing::why(f));
  CHECK(contains(f->text, "torchrun --nnodes 1 --nproc-per-node 16 "));
}

// Qwen2-7B's config.json: 28 blocks, RoPE base 1e6, epsilon 1e-6, biases on
// q, k and v, 131,072 positions; its graph at batch `gbs` and sequence 256.
Graph engines_qwen2(int64_t gbs) {
  Result<LlmConfig> c = parse_llm_config(
      testing::read_text(std::string(PASE_EXAMPLES_DIR) + "/../hf/Qwen2-7B/config.json"));
  REQUIRE_MESSAGE(c.ok(), testing::why(c));
  Result<GraphSpec> spec = llm_spec(*c, "Qwen2-7B", gbs, 256);
  REQUIRE_MESSAGE(spec.ok(), testing::why(spec));
  Result<Graph> g = build_graph(*spec);
  REQUIRE_MESSAGE(g.ok(), testing::why(g));
  return std::move(g).value();
}

Exported engines_layout(ExportTarget target, const Graph& g, const Cluster& c, const char* text) {
  Result<Layout> l = parse_layout(text);
  REQUIRE_MESSAGE(l.ok(), testing::why(l));
  Result<Exported> e = export_layout(target, g, c, *l);
  REQUIRE_MESSAGE(e.ok(), testing::why(e));
  return std::move(e).value();
}

// The step time of `text` on `g` as layout_strategy() and evaluate_pipeline() price it.
double engines_priced(const Graph& g, const Cluster& c, const char* text) {
  Result<Layout> l = parse_layout(text);
  REQUIRE(l.ok());
  Result<LayoutStrategy> s = layout_strategy(g, c, *l);
  REQUIRE_MESSAGE(s.ok(), testing::why(s));
  Result<PipelinePlan> p = evaluate_pipeline(g, s->cluster, s->strategy);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  return p->plan.step_time_s;
}

TEST_CASE("engines: Qwen2's RoPE base, epsilon, longest sequence and biases") {
  const Graph g = engines_qwen2(8);
  const Cluster c = pase::testing::practice_h100(8);
  const Exported e =
      engines_layout(ExportTarget::kMegatron, g, c, "tp=4 pp=1 dp=2 sp=on mbs=1 gbs=8");
  for (const char* flag :
       {"--num-attention-heads 28", "--num-query-groups 4", "--max-position-embeddings 131072",
        "--rotary-base 1000000", "--norm-epsilon 1e-06", "--add-qkv-bias", "--disable-bias-linear",
        "--untie-embeddings-and-output-weights"}) {
    CAPTURE(flag);
    CHECK(contains(e.text, std::string("  ") + flag + " \\\n"));
  }
  CHECK(e.uniform);
  CHECK(e.plan_step_time_s == engines_priced(g, c, "tp=4 pp=1 dp=2 sp=on mbs=1 gbs=8"));
  // Not one of torchtitan's models: no [model], and a note says so.
  const Exported t =
      engines_layout(ExportTarget::kTorchtitan, g, c, "tp=4 pp=1 dp=2 sp=on zero=3 mbs=1 gbs=8");
  CHECK_FALSE(contains(t.text, "[model]\n"));
  CHECK(engines_noted(t, "none of torchtitan's"));
}

TEST_CASE("engines: torchtitan runs full where the plan recomputes some blocks fully") {
  // Qwen2-7B planned with full recomputation on its first 13 blocks and
  // selective on the other 15: torchtitan has one mode for every block, so
  // full (never a lighter one), priced so.
  const Graph g = engines_qwen2(8);
  const Cluster c = pase::testing::practice_h100(8);
  Result<LayoutStrategy> s =
      layout_strategy(g, c, *parse_layout("tp=4 pp=1 dp=2 sp=on zero=3 mbs=1 gbs=8"));
  REQUIRE(s.ok());
  s->cluster.training.recompute = Recompute::kFull;
  s->cluster.training.recompute_blocks = 13;
  s->cluster.training.recompute_rest = Recompute::kSelective;
  Result<PipelinePlan> p = evaluate_pipeline(g, s->cluster, s->strategy);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  const PlanView view{&g, &p->graph, &s->cluster, &p->plan, &p->pipeline};
  const Exported t = engines_export(ExportTarget::kTorchtitan, view);
  CHECK(contains(t.text, "[activation_checkpoint]\nmode = \"full\"\n"));
  CHECK(t.uniform);
  REQUIRE(t.layout.has_value());
  CHECK(t.layout->recompute == Recompute::kFull);
  CHECK(t.layout->recompute_blocks == 0);
  CHECK(t.plan_step_time_s == p->plan.step_time_s);
  const double full =
      engines_priced(g, c, "tp=4 pp=1 dp=2 sp=on zero=3 recompute=full mbs=1 gbs=8");
  CHECK(t.layout_step_time_s == full);
  CHECK(full >= p->plan.step_time_s);
  CHECK(engines_noted(t, "full on blocks 0-12, selective on blocks 13-27"));
  CHECK(contains(t.text,
                 "# recomputation: the plan's (full on blocks 0-12, selective on blocks "
                 "13-27) is not one torchtitan runs; this file runs full on every block"));
  // Megatron-LM's block method cannot keep the selective blocks' either:
  // its heavier form is full on every block too.
  const Exported m = engines_export(ExportTarget::kMegatron, view);
  CHECK(
      contains(m.text, engines_flags({"--recompute-granularity full", "--recompute-method uniform",
                                      "--recompute-num-layers 1"})));
  CHECK(m.layout_step_time_s == full);
  // A layout's full recomputation of the first 5 blocks of each stage:
  // Megatron-LM's block method exactly, torchtitan's full on all of them.
  const char* blocks = "tp=4 pp=2 dp=1 sp=on zero=3 recompute=full recompute_blocks=5 mbs=1 gbs=8";
  const Exported mb = engines_layout(ExportTarget::kMegatron, g, c, blocks);
  CHECK(contains(mb.text, engines_flags({"--recompute-granularity full", "--recompute-method block",
                                         "--recompute-num-layers 5"})));
  CHECK(mb.layout_step_time_s == mb.plan_step_time_s);
  CHECK(layout_text(*mb.layout) == layout_text(*parse_layout(blocks)));
  CHECK_FALSE(contains(mb.text, "# recomputation:"));
  const Exported tb = engines_layout(ExportTarget::kTorchtitan, g, c, blocks);
  CHECK(contains(tb.text, "mode = \"full\"\n"));
  CHECK(tb.plan_step_time_s == engines_priced(g, c, blocks));
  CHECK(tb.layout_step_time_s ==
        engines_priced(g, c, "tp=4 pp=2 dp=1 sp=on zero=3 recompute=full mbs=1 gbs=8"));
  CHECK(contains(tb.text,
                 "# recomputation: the layout's (full on blocks 0-4, none on blocks "
                 "5-13, full on blocks 14-18, none on blocks 19-27)"));
}

TEST_CASE("engines: full recomputation of the first blocks is Megatron-LM's block method") {
  Training t = pase::testing::practice_h100(16).training;
  t.recompute = Recompute::kFull;
  t.recompute_blocks = 12;
  t.recompute_rest = Recompute::kNone;
  t.zero = 3;  // FSDP, which both engines run with tensor parallelism
  // Full on the model's first 12 blocks, on one stage: exactly the block
  // method with 12.
  const EnginesLaidOut one =
      engines_lay_out("llama3-8b", 256, 16, "tp=4 dp=4 sp=on zero=3 mbs=1 gbs=16", &t);
  const Exported exact = engines_export(ExportTarget::kMegatron, one.view());
  CHECK(contains(exact.text,
                 engines_flags({"--recompute-granularity full", "--recompute-method block",
                                "--recompute-num-layers 12"})));
  CHECK(exact.layout_step_time_s == exact.plan_step_time_s);
  // On 2 stages the block method counts each stage's: 12 on both (the first
  // stage's 12, and as many on the second), heavier than the plan, priced.
  const EnginesLaidOut two =
      engines_lay_out("llama3-8b", 256, 16, "tp=4 pp=2 dp=2 sp=on zero=3 mbs=2 gbs=16", &t);
  const Exported m = engines_export(ExportTarget::kMegatron, two.view());
  CHECK(m.uniform);
  CHECK(contains(m.text, engines_flags({"--recompute-granularity full", "--recompute-method block",
                                        "--recompute-num-layers 12"})));
  REQUIRE(m.layout.has_value());
  CHECK(m.layout->recompute_blocks == 12);
  CHECK(m.layout_step_time_s == engines_priced(two.graph, two.cluster,
                                               "tp=4 pp=2 dp=2 sp=on zero=3 recompute=full "
                                               "recompute_blocks=12 mbs=2 gbs=16"));
  CHECK(engines_noted(m, "full on blocks 0-11, none on blocks 12-31"));
  // torchtitan: full on every block.
  const Exported tt = engines_export(ExportTarget::kTorchtitan, two.view());
  CHECK(contains(tt.text, "mode = \"full\"\n"));
  // A mix of selective and none is selective on every block, in both.
  t.recompute = Recompute::kSelective;
  const EnginesLaidOut mix =
      engines_lay_out("llama3-8b", 256, 16, "tp=4 pp=2 dp=2 sp=on zero=3 mbs=2 gbs=16", &t);
  CHECK(contains(engines_export(ExportTarget::kMegatron, mix.view()).text,
                 "  --recompute-activations \\\n"));
  CHECK(contains(engines_export(ExportTarget::kTorchtitan, mix.view()).text,
                 "mode = \"selective\"\n"));
}

TEST_CASE("engines: ZeRO stages and hybrid sharding in both engines") {
  const Graph g = engines_model("llama3-8b", 16, 256);
  const Cluster c = pase::testing::practice_h100(16);
  struct Case {
    const char* layout;
    const char* torchtitan;  // the data-parallel keys; null: refused (rule zero-stage)
    std::vector<const char*> megatron;
  };
  const std::vector<Case> cases = {
      {"tp=1 dp=16 zero=0 mbs=1 gbs=16",
       "data_parallel_replicate_degree = 16\ndata_parallel_shard_degree = 1\n"
       "tensor_parallel_degree",
       {}},
      {"tp=2 dp=8 sp=on zero=1 mbs=1 gbs=16", nullptr, {"--use-distributed-optimizer"}},
      {"tp=2 dp=8 sp=on zero=2 mbs=1 gbs=16",
       "data_parallel_replicate_degree = 1\ndata_parallel_shard_degree = 8\n"
       "fsdp_reshard_after_forward = \"never\"\n",
       {"--use-megatron-fsdp", "--data-parallel-sharding-strategy optim_grads",
        "--ckpt-format fsdp_dtensor"}},
      {"tp=2 dp=8 sp=on zero=3 dp_shard=4 mbs=1 gbs=16",
       "data_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 4\n"
       "fsdp_reshard_after_forward = \"default\"\n",
       {"--use-megatron-fsdp", "--data-parallel-sharding-strategy optim_grads_params",
        "--ckpt-format fsdp_dtensor", "--num-distributed-optimizer-instances 2"}},
  };
  for (const Case& k : cases) {
    CAPTURE(k.layout);
    if (k.torchtitan != nullptr) {
      const Exported t = engines_layout(ExportTarget::kTorchtitan, g, c, k.layout);
      CHECK_MESSAGE(contains(t.text, std::string("[parallelism]\n") + k.torchtitan), t.text);
    } else {
      Result<Exported> t = export_layout(ExportTarget::kTorchtitan, g, c, *parse_layout(k.layout));
      REQUIRE_FALSE(t.ok());
      CHECK(t.error().where == "emit");
      CHECK(contains(t.error().message, "rule zero-stage"));
      CHECK(contains(t.error().message, "nearest layout it accepts: "));
    }
    const Exported m = engines_layout(ExportTarget::kMegatron, g, c, k.layout);
    for (const char* flag : k.megatron) CHECK(contains(m.text, std::string("  ") + flag + " \\\n"));
    CHECK(contains(m.text, "--use-distributed-optimizer") == (k.megatron.size() == 1));
    CHECK(contains(m.text, "--use-megatron-fsdp") == (k.megatron.size() > 1));
  }
}

TEST_CASE(
    "engines: a layout the engine refuses is not emitted, and the nearest it accepts is named") {
  // torchtitan's DDP with tensor parallelism; Megatron-LM's 12 heads on tp 8.
  const Graph llama = engines_model("llama3-8b", 16, 256);
  const Cluster c = pase::testing::practice_h100(16);
  struct Case {
    ExportTarget target;
    const Graph* graph;
    const char* layout;
    const char* rule;
  };
  const Graph gpt2 = engines_model("gpt2", 16, 256);
  for (const Case& k :
       {Case{ExportTarget::kTorchtitan, &llama, "tp=2 dp=8 sp=on mbs=1 gbs=16", "rule ddp"},
        Case{ExportTarget::kMegatron, &gpt2, "tp=8 dp=2 sp=on mbs=1 gbs=16", "rule heads"}}) {
    CAPTURE(k.layout);
    Result<Exported> e = export_layout(k.target, *k.graph, c, *parse_layout(k.layout));
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().where == "emit");
    CHECK(contains(e.error().message, k.rule));
    const std::string nearest = "the nearest layout it accepts: ";
    const size_t at = e.error().message.find(nearest);
    REQUIRE(at != std::string::npos);
    // The layout named is one the engine takes.
    Result<Layout> l = parse_layout(e.error().message.substr(at + nearest.size()));
    REQUIRE_MESSAGE(l.ok(), testing::why(l));
    Result<Exported> again = export_layout(k.target, *k.graph, c, *l);
    CHECK_MESSAGE(again.ok(), testing::why(again));
  }
}

TEST_CASE("engines: stages of unequal blocks") {
  const Graph g = engines_model("llama3-8b", 8, 256);
  const Cluster c = pase::testing::practice_h100(16);
  const char* text = "tp=4 pp=4 dp=1 sp=on mbs=1 gbs=8 pp_first=6 pp_last=6";
  const Exported m = engines_layout(ExportTarget::kMegatron, g, c, text);
  CHECK(contains(m.text, engines_flags({"--pipeline-model-parallel-size 4",
                                        "--decoder-first-pipeline-num-layers 6",
                                        "--decoder-last-pipeline-num-layers 6"})));
  // torchtitan: each stage's modules by name, the embedding first, the
  // norm and head last.
  const Exported t = engines_layout(ExportTarget::kTorchtitan, g, c, text);
  std::string parts = "module_fqns_per_model_part = [[\"tok_embeddings\"";
  for (int b = 0; b < 32; ++b) {
    const bool starts = b == 6 || b == 16 || b == 26;
    parts += std::string(starts ? "], [" : ", ") + "\"layers." + std::to_string(b) + "\"";
  }
  CHECK_MESSAGE(contains(t.text, parts + ", \"norm\", \"output\"]]\n"), t.text);
  CHECK_FALSE(contains(t.text, "pipeline_parallel_layers_per_stage"));
  CHECK(contains(t.text, "[model]\nname = \"llama3\"\nflavor = \"8B\"\n"));
}

TEST_CASE("engines: export_layout's errors name the field") {
  const Graph g = engines_model("llama3-8b", 8, 256);
  const Cluster c = pase::testing::practice_h100(8);
  Result<Exported> jax = export_layout(ExportTarget::kJax, g, c, *parse_layout("tp=8 gbs=8"));
  REQUIRE_FALSE(jax.ok());
  CHECK(jax.error().where == "emit");
  Result<Exported> odd = export_layout(ExportTarget::kMegatron, g, c, *parse_layout("tp=3 gbs=8"));
  REQUIRE_FALSE(odd.ok());
  CHECK(odd.error().where.rfind("layout.", 0) == 0);
  const Graph cnn = testing::model("alexnet");
  Result<Exported> e = export_layout(ExportTarget::kTorchtitan, cnn, c, *parse_layout("dp=8"));
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().where == "emit");
  CHECK(contains(e.error().message, "language model"));
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
  // torchtitan's nearest is among the layouts it accepts (not DDP with
  // another parallel dimension): emitted, not refused.
  const Exported t = engines_export(ExportTarget::kTorchtitan, view);
  CHECK_FALSE(t.uniform);
  REQUIRE(t.layout.has_value());
  CHECK((t.layout->zero > 0 || t.layout->dp == 1 || t.layout->dp == 8));
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
