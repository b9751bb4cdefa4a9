// The engines' start-up rules (core/src/export/engine_rules.hpp;
// core/docs/export.md, "The engines' start-up rules"): for each rule, a
// layout that breaks exactly that rule is refused with its id, and the
// nearest accepted layout passes every rule of the engine.
//   ./tests/pase_tests -tc="engine rules*"
#include "export/engine_rules.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "pase/layout.hpp"
#include "pase/llm.hpp"
#include "pase/models.hpp"
#include "test_util.hpp"

using namespace pase;

namespace {

constexpr ExportTarget kMg = ExportTarget::kMegatron;
constexpr ExportTarget kTt = ExportTarget::kTorchtitan;

LlmConfig rules_config(const char* model) {
  const LlmConfig* c = llm_config(model);
  REQUIRE(c != nullptr);
  return *c;
}

Layout rules_layout(const std::string& text) {
  Result<Layout> l = parse_layout(text);
  REQUIRE_MESSAGE(l.ok(), testing::why(l));
  return *l;
}

std::vector<std::string> rule_ids(const std::vector<EngineRefusal>& refusals) {
  std::vector<std::string> ids;
  for (const EngineRefusal& r : refusals) ids.push_back(r.rule);
  return ids;
}

struct RulesCase {
  ExportTarget target;
  LlmConfig config;
  int64_t seq;
  int64_t devices;
  int64_t gpus_per_node = 8;
};

std::vector<std::string> rules_broken(const RulesCase& c, const Layout& l) {
  return rule_ids(engine_refusals(c.target, c.config, c.seq, l, c.devices, c.gpus_per_node));
}

// `text` breaks exactly `rule`, with a message and the engine's file; the
// nearest accepted layout (returned) breaks none and differs from it.
Layout refused_then_mended(const RulesCase& c, const std::string& text, const std::string& rule) {
  CAPTURE(text);
  CAPTURE(export_target_name(c.target));
  const Layout l = rules_layout(text);
  const std::vector<EngineRefusal> refusals =
      engine_refusals(c.target, c.config, c.seq, l, c.devices, c.gpus_per_node);
  CHECK(rule_ids(refusals) == std::vector<std::string>{rule});
  for (const EngineRefusal& r : refusals) {
    CHECK(!r.message.empty());
    CHECK(!r.source.empty());
  }
  const std::optional<Layout> near =
      nearest_accepted_layout(c.target, c.config, c.seq, l, c.devices, c.gpus_per_node);
  REQUIRE(near.has_value());
  CAPTURE(layout_text(*near));
  CHECK(rules_broken(c, *near).empty());
  CHECK(layout_text(*near) != layout_text(l));
  return *near;
}

void accepted(const RulesCase& c, const std::string& text) {
  CAPTURE(text);
  CAPTURE(export_target_name(c.target));
  const Layout l = rules_layout(text);
  CHECK(rules_broken(c, l).empty());
  const std::optional<Layout> near =
      nearest_accepted_layout(c.target, c.config, c.seq, l, c.devices, c.gpus_per_node);
  REQUIRE(near.has_value());
  CHECK(layout_text(*near) == layout_text(l));
}

}  // namespace

TEST_CASE("engine rules: degrees below 1 are refused, with no nearest layout") {
  for (ExportTarget t : {kMg, kTt}) {
    const RulesCase c{t, rules_config("gpt2"), 1024, 1};
    Layout l = rules_layout("tp=1 gbs=4");
    l.mbs = 0;
    CHECK(rules_broken(c, l) == std::vector<std::string>{"degrees"});
    CHECK_FALSE(nearest_accepted_layout(t, c.config, c.seq, l, c.devices, 8).has_value());
  }
}

TEST_CASE("engine rules: nodes: torchrun runs whole nodes") {
  for (ExportTarget t : {kMg, kTt}) {
    const RulesCase c{t, rules_config("gpt2"), 1024, 12, 8};
    const Layout l = rules_layout("tp=1 dp=12 zero=3 gbs=12");
    CHECK(rules_broken(c, l) == std::vector<std::string>{"nodes"});
    CHECK_FALSE(nearest_accepted_layout(t, c.config, c.seq, l, 12, 8).has_value());
    // Fewer GPUs than a node: one node in part.
    CHECK(rules_broken(RulesCase{t, c.config, 1024, 6, 8}, rules_layout("dp=6 zero=3 gbs=6"))
              .empty());
  }
}

TEST_CASE("engine rules: world-size: the product of the degrees is the device count") {
  for (ExportTarget t : {kMg, kTt}) {
    const RulesCase c{t, rules_config("llama3-8b"), 256, 16};
    const Layout near = refused_then_mended(c, "tp=2 dp=4 sp=on zero=3 gbs=32", "world-size");
    CHECK(near.dp == 8);
  }
}

TEST_CASE("engine rules: heads: query and key-value heads divide among tp") {
  // GPT-2's 12 heads do not split 8 ways: tp 4, the factor of 2 to dp.
  for (ExportTarget t : {kMg, kTt}) {
    const Layout near =
        refused_then_mended({t, rules_config("gpt2"), 1024, 8}, "tp=8 sp=on zero=3 gbs=8", "heads");
    CHECK(near.tp == 4);
    CHECK(near.dp == 2);
  }
  // Llama 3 8B's 8 key-value heads on tp 16: Megatron-LM replicates each
  // over 2 ranks; torchtitan's tensor parallelism needs whole heads.
  const std::string text = "tp=16 sp=on zero=3 gbs=16";
  accepted({kMg, rules_config("llama3-8b"), 256, 16}, text);
  const Layout near = refused_then_mended({kTt, rules_config("llama3-8b"), 256, 16}, text, "heads");
  CHECK(near.tp == 8);
}

TEST_CASE("engine rules: mlp-width: Megatron-LM's parallel layers divide the MLP width") {
  LlmConfig odd = rules_config("gpt2");
  odd.intermediate_size = 3070;  // even, not a multiple of 4
  const Layout near = refused_then_mended({kMg, odd, 1024, 4}, "tp=4 sp=on gbs=4", "mlp-width");
  CHECK(near.tp == 2);
  // torchtitan's DTensor splits it unevenly.
  accepted({kTt, odd, 1024, 4}, "tp=4 sp=on zero=3 gbs=4");
}

TEST_CASE("engine rules: pipeline-layers: Megatron-LM's stages divide the blocks") {
  const RulesCase c{kMg, rules_config("llama3-8b"), 256, 3};
  const Layout near = refused_then_mended(c, "pp=3 gbs=6", "pipeline-layers");
  // 32 blocks on 3 stages: 11, 11 and 10 with the last stage's given.
  CHECK(near.pp == 3);
  CHECK(near.pp_first + near.pp_last > 0);
  Result<std::vector<int64_t>> stages = stage_blocks(near, 32);
  REQUIRE(stages.ok());
  CHECK(*std::max_element(stages->begin(), stages->end()) == 11);
  // With the first and last stage given, the rest divide the middle stages.
  const RulesCase c4{kMg, c.config, 256, 4};
  accepted(c4, "pp=4 pp_first=10 pp_last=10 gbs=8");
  refused_then_mended(c4, "pp=4 pp_first=9 pp_last=10 gbs=8", "pipeline-layers");
  // torchtitan places any split (module_fqns_per_model_part).
  accepted({kTt, c.config, 256, 3}, "pp=3 zero=3 gbs=6");
}

TEST_CASE("engine rules: virtual-stages: interleaving needs a pipeline and chunks that divide") {
  for (ExportTarget t : {kMg, kTt}) {
    const Layout near =
        refused_then_mended({t, rules_config("gpt2"), 1024, 1}, "vpp=2 gbs=4", "virtual-stages");
    CHECK(near.vpp == 1);
  }
  // 12 blocks in pp 2 x vpp 4 chunks: Megatron-LM's need pp x vpp to divide them.
  const Layout near = refused_then_mended({kMg, rules_config("gpt2"), 1024, 2}, "pp=2 vpp=4 gbs=4",
                                          "virtual-stages");
  CHECK(near.vpp == 3);
}

TEST_CASE("engine rules: interleave-microbatches: the engines' interleaved schedules") {
  // 3 micro-batches on 2 stages: Megatron-LM needs a multiple of pp; PyTorch's
  // schedule runs max(1, 3 / 2) = 1 round of 3.
  const LlmConfig gpt2 = rules_config("gpt2");
  const Layout near =
      refused_then_mended({kMg, gpt2, 1024, 2}, "pp=2 vpp=2 gbs=3", "interleave-microbatches");
  CHECK(near.vpp == 1);
  accepted({kTt, gpt2, 1024, 2}, "pp=2 vpp=2 zero=3 gbs=3");
  // 5 on 2: 2 rounds, which 5 is not a multiple of.
  for (ExportTarget t : {kMg, kTt})
    refused_then_mended({t, gpt2, 1024, 2}, "pp=2 vpp=2 zero=3 gbs=5", "interleave-microbatches");
  // 3 on 2 with mbs 2 and gbs 6: mbs 1 gives 6 micro-batches.
  const Layout smaller = refused_then_mended({kMg, gpt2, 1024, 2}, "pp=2 vpp=2 mbs=2 gbs=6",
                                             "interleave-microbatches");
  CHECK(smaller.mbs == 1);
  CHECK(smaller.vpp == 2);
}

TEST_CASE("engine rules: sequence-parallel: as each engine runs it") {
  // With tp 1 neither has sequence parallelism.
  for (ExportTarget t : {kMg, kTt}) {
    const Layout near = refused_then_mended({t, rules_config("gpt2"), 1024, 2},
                                            "dp=2 sp=on zero=3 gbs=4", "sequence-parallel");
    CHECK_FALSE(near.sp);
  }
  // torchtitan's tensor parallelism always runs the norms sequence-parallel.
  const Layout on = refused_then_mended({kTt, rules_config("llama3-8b"), 256, 8},
                                        "tp=8 zero=3 gbs=8", "sequence-parallel");
  CHECK(on.sp);
  accepted({kMg, rules_config("llama3-8b"), 256, 8}, "tp=8 gbs=8");
  // Megatron-LM: expert and tensor parallelism together need it.
  const Layout moe = refused_then_mended({kMg, rules_config("mixtral-8x7b"), 256, 8},
                                         "tp=2 dp=4 ep=2 zero=1 gbs=8", "sequence-parallel");
  CHECK(moe.sp);
}

TEST_CASE("engine rules: batch: the global batch is a multiple of mbs x dp") {
  for (ExportTarget t : {kMg, kTt}) {
    const RulesCase c{t, rules_config("llama3-8b"), 256, 16};
    const Layout near = refused_then_mended(c, "tp=8 dp=2 sp=on zero=3 mbs=4 gbs=4", "batch");
    CHECK(near.mbs == 2);
    // No micro-batch mends a global batch that dp does not divide.
    const Layout odd = rules_layout("tp=8 dp=2 sp=on zero=3 mbs=1 gbs=3");
    CHECK(rules_broken(c, odd) == std::vector<std::string>{"batch"});
    CHECK_FALSE(nearest_accepted_layout(t, c.config, 256, odd, 16, 8).has_value());
  }
}

TEST_CASE("engine rules: sequence-length: context and sequence parallelism split the sequence") {
  const LlmConfig llama = rules_config("llama3-8b");
  // Megatron-LM: a multiple of 2 x cp (the load-balanced causal split).
  const Layout cp = refused_then_mended({kMg, llama, 254, 2}, "cp=2 gbs=2", "sequence-length");
  CHECK(cp.cp == 1);
  CHECK(cp.dp == 2);
  // Megatron-LM: sequence parallelism splits each rank's sequence tp ways.
  const Layout sp =
      refused_then_mended({kMg, llama, 254, 4}, "tp=4 sp=on gbs=4", "sequence-length");
  CHECK(sp.tp == 2);
  // torchtitan: a multiple of tp x 2 x cp, even with tp and cp at 1.
  const Layout tt =
      refused_then_mended({kTt, llama, 254, 2}, "tp=2 sp=on zero=3 gbs=2", "sequence-length");
  CHECK(tt.tp == 1);
  const Layout odd = rules_layout("dp=2 gbs=2");
  CHECK(rules_broken({kTt, llama, 255, 2}, odd) == std::vector<std::string>{"sequence-length"});
  CHECK_FALSE(nearest_accepted_layout(kTt, llama, 255, odd, 2, 8).has_value());
  accepted({kMg, llama, 255, 2}, "dp=2 gbs=2");
}

TEST_CASE("engine rules: expert-parallel: experts and the ranks they are carved from") {
  const LlmConfig mixtral = rules_config("mixtral-8x7b");
  for (ExportTarget t : {kMg, kTt}) {
    // 8 experts do not split 3 ways.
    const Layout e3 =
        refused_then_mended({t, mixtral, 256, 6}, "dp=6 ep=3 zero=3 gbs=6", "expert-parallel");
    CHECK(e3.ep == 1);
    // A dense model has no experts to split.
    refused_then_mended({t, rules_config("llama3-8b"), 256, 2}, "dp=2 ep=2 zero=3 gbs=2",
                        "expert-parallel");
  }
  // Megatron-LM: ep x etp divides tp x dp x cp (4 here).
  const Layout mg = refused_then_mended({kMg, mixtral, 256, 4}, "tp=2 dp=2 ep=4 sp=on etp=2 gbs=4",
                                        "expert-parallel");
  CHECK(mg.ep == 2);
  // torchtitan: ep x etp divides dp_shard x cp x tp, 2 with HSDP over 2
  // ranks (Megatron-LM's hybrid sharding refuses it as "hsdp").
  const Layout tt = refused_then_mended({kTt, mixtral, 256, 4}, "dp=4 ep=4 zero=3 dp_shard=2 gbs=4",
                                        "expert-parallel");
  CHECK(tt.ep == 2);
  CHECK(tt.dp_shard == 2);
}

TEST_CASE("engine rules: expert-tensor: torchtitan's etp is 1 or tp") {
  const LlmConfig mixtral = rules_config("mixtral-8x7b");
  const std::string text = "tp=4 dp=2 ep=2 etp=2 sp=on zero=3 gbs=8";
  const Layout near = refused_then_mended({kTt, mixtral, 256, 8}, text, "expert-tensor");
  CHECK((near.etp == 0 || near.etp == 1 || near.etp == 4));
  accepted({kMg, mixtral, 256, 8}, text);
}

TEST_CASE("engine rules: ddp: torchtitan's DDP runs no other parallel dimension") {
  const RulesCase tt{kTt, rules_config("llama3-8b"), 256, 8};
  const std::string text = "tp=2 dp=4 sp=on zero=0 gbs=8";
  const Layout near = refused_then_mended(tt, text, "ddp");
  // HSDP over the fewest ranks: 2 shards, 2 copies.
  CHECK(near.zero == 3);
  CHECK(near.dp_shard == 2);
  CHECK(near.tp == 2);
  accepted({kMg, tt.config, 256, 8}, text);
  // DDP alone, or model parallelism with no data parallelism, starts.
  accepted(tt, "dp=8 zero=0 gbs=8");
  accepted(tt, "tp=8 sp=on zero=0 gbs=8");
}

TEST_CASE("engine rules: zero-stage: torchtitan has no ZeRO-1, Megatron-LM runs 0 to 3") {
  const LlmConfig llama = rules_config("llama3-8b");
  const Layout near = refused_then_mended({kTt, llama, 256, 8}, "dp=8 zero=1 gbs=8", "zero-stage");
  CHECK(near.zero == 2);
  for (int zero = 0; zero <= 3; ++zero) {
    accepted({kMg, llama, 256, 8}, "dp=8 zero=" + std::to_string(zero) + " gbs=8");
    if (zero != 1) accepted({kTt, llama, 256, 8}, "dp=8 zero=" + std::to_string(zero) + " gbs=8");
  }
}

TEST_CASE("engine rules: hsdp: the weight copies divide the data-parallel ranks") {
  const LlmConfig mixtral = rules_config("mixtral-8x7b");
  // Megatron-LM: 4 copies (dp 8 / dp_shard 2) do not divide 1 expert data-parallel rank.
  const Layout near =
      refused_then_mended({kMg, mixtral, 256, 8}, "dp=8 ep=8 zero=3 dp_shard=2 gbs=8", "hsdp");
  CHECK(near.dp_shard == 0);
  // The same rule as torchtitan's for the experts, by another name.
  const Layout four =
      refused_then_mended({kMg, mixtral, 256, 4}, "dp=4 ep=4 zero=3 dp_shard=2 gbs=4", "hsdp");
  CHECK(four.ep == 4);
  // dp_shard 3 does not divide dp 4, for either engine (a Layout in code:
  // parse_layout() takes it, layout_strategy() refuses it).
  for (ExportTarget t : {kMg, kTt}) {
    const Layout hs = refused_then_mended({t, rules_config("llama3-8b"), 256, 4},
                                          "dp=4 zero=3 dp_shard=3 gbs=4", "hsdp");
    CHECK(hs.dp_shard == 0);
  }
}

TEST_CASE("engine rules: not refused: recompute_blocks under torchtitan, an unpadded vocabulary") {
  // torchtitan takes one mode for every block: the export emits full.
  const LlmConfig llama = rules_config("llama3-8b");
  accepted({kTt, llama, 256, 8}, "dp=8 zero=3 recompute=full recompute_blocks=4 gbs=8");
  accepted({kMg, llama, 256, 8}, "dp=8 zero=1 recompute=full recompute_blocks=4 gbs=8");
  // GPT-2's 50,257 tokens on tp 2: Megatron-LM pads, torchtitan splits unevenly.
  accepted({kMg, rules_config("gpt2"), 1024, 2}, "tp=2 sp=on gbs=2");
  accepted({kTt, rules_config("gpt2"), 1024, 2}, "tp=2 sp=on zero=3 gbs=2");
}

TEST_CASE("engine rules: every nearest layout passes every rule, and builds") {
  // Layouts over the degrees of 8 and 16 devices, many of them broken: the
  // nearest accepted one passes every rule of its engine and is a layout
  // the planner evaluates.
  size_t mended = 0, broken = 0;
  for (const char* model : {"gpt2", "llama3-8b", "mixtral-8x7b"}) {
    const LlmConfig config = rules_config(model);
    const std::vector<int64_t> degrees = {1, 2, 4, 8};
    for (ExportTarget t : {kMg, kTt})
      for (int64_t devices : {8, 16})
        for (int64_t tp : degrees)
          for (int64_t pp : degrees)
            for (int64_t cp : {1, 2})
              for (int64_t zero : {0, 1, 3}) {
                if (devices % (tp * pp * cp) != 0) continue;
                Layout l;
                l.tp = tp;
                l.pp = pp;
                l.cp = cp;
                l.dp = devices / (tp * pp * cp);
                l.ep = config.num_experts > 0 && l.dp * cp % 4 == 0 ? 4 : 1;
                l.zero = zero;
                l.sp = tp % 2 == 0 && zero == 1;
                l.vpp = pp > 1 && zero == 3 ? 2 : 1;
                l.mbs = 2;
                l.gbs = 24;
                CAPTURE(model);
                CAPTURE(layout_text(l));
                const std::vector<EngineRefusal> refusals =
                    engine_refusals(t, config, 1024, l, devices, 8);
                const std::optional<Layout> near =
                    nearest_accepted_layout(t, config, 1024, l, devices, 8);
                if (refusals.empty()) {
                  REQUIRE(near.has_value());
                  CHECK(layout_text(*near) == layout_text(l));
                  continue;
                }
                ++broken;
                if (!near) continue;
                ++mended;
                CAPTURE(layout_text(*near));
                CHECK(engine_refusals(t, config, 1024, *near, devices, 8).empty());
                CHECK(near->tp * near->pp * near->dp * near->cp == devices);
              }
  }
  CHECK(broken > 100);
  CHECK(mended * 2 >= broken);
}

TEST_CASE("engine rules: the nearest layouts are layouts the planner evaluates") {
  struct Case {
    ExportTarget target;
    const char* model;
    int64_t seq, devices;
    const char* text;
  };
  const Case cases[] = {
      {kTt, "llama3-8b", 256, 8, "tp=2 dp=4 sp=on zero=0 gbs=8"},
      {kMg, "llama3-8b", 256, 3, "pp=3 gbs=6"},
      {kTt, "llama3-8b", 256, 16, "tp=16 sp=on zero=3 gbs=16"},
      {kMg, "mixtral-8x7b", 256, 8, "tp=2 dp=4 ep=2 zero=1 gbs=8"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const LlmConfig config = rules_config(c.model);
    const std::optional<Layout> near =
        nearest_accepted_layout(c.target, config, c.seq, rules_layout(c.text), c.devices, 8);
    REQUIRE(near.has_value());
    CAPTURE(layout_text(*near));
    Result<Graph> g = build_model(c.model, near->gbs, c.seq);
    REQUIRE_MESSAGE(g.ok(), testing::why(g));
    Result<LayoutStrategy> s = layout_strategy(*g, testing::practice_h100(c.devices), *near);
    CHECK_MESSAGE(s.ok(), testing::why(s));
  }
}
