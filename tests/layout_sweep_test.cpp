// The engines' verdicts on the top layouts (core/docs/layouts.md): for every
// built-in language model on 8, 64 and 1,024 H100s, each of the search's
// top 10 layouts carries engine_refusals()'s verdict, a refusal names its
// rule, and a layout an engine accepts exports to it; `pase bench --layouts`
// prints the sweep.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "export/engine_rules.hpp"
#include "pase/export.hpp"
#include "pase/layout_search.hpp"
#include "pase/models.hpp"
#include "test_util.hpp"

using namespace pase;

namespace {

// The sweep of `pase bench --layouts` on `devices` GPUs: each built-in
// language model at its sequence and a global batch of 4 x devices.
// Returns the count of (layout, engine) verdicts checked.
int64_t check_sweep(int64_t devices) {
  int64_t checked = 0;
  for (const ModelInfo& info : list_models()) {
    if (!info.llm) continue;
    const LayoutModel model{*llm_config(info.name), info.name, info.default_seq, kLlmVocabMultiple};
    const Cluster cluster = testing::practice_h100(devices);
    LayoutSearchOptions o;
    o.gbs = 4 * devices;
    Result<LayoutSearch> s = search_layouts(model, cluster, o);
    CAPTURE(info.name);
    CAPTURE(devices);
    REQUIRE_MESSAGE(s.ok(), testing::why(s));
    CHECK(s->ranked.size() <= 10);
    std::map<int64_t, Graph> graphs;  // by tp: the vocabulary's padding
    for (const RankedLayout& r : s->ranked) {
      CAPTURE(layout_text(r.layout));
      for (ExportTarget t : {ExportTarget::kMegatron, ExportTarget::kTorchtitan}) {
        CAPTURE(export_target_name(t));
        const EngineVerdict& v = t == ExportTarget::kMegatron ? r.megatron : r.torchtitan;
        const std::vector<EngineRefusal> refused = engine_refusals(
            t, model.config, model.seq, r.layout, cluster.devices, cluster.gpus_per_node);
        ++checked;
        REQUIRE(v.accepted() == refused.empty());
        if (!v.accepted()) {
          // A refusal names the first rule broken, what the engine says and where.
          CHECK(v.rule == refused.front().rule);
          CHECK(!v.message.empty());
          CHECK(!v.source.empty());
          continue;
        }
        if (graphs.count(r.layout.tp) == 0) {
          Result<Graph> g = layout_graph(model, r.layout);
          REQUIRE_MESSAGE(g.ok(), testing::why(g));
          graphs.emplace(r.layout.tp, std::move(*g));
        }
        Result<Exported> x = export_layout(t, graphs.at(r.layout.tp), cluster, r.layout);
        REQUIRE_MESSAGE(x.ok(), testing::why(x));
        CHECK(!x->text.empty());
      }
    }
  }
  return checked;
}

}  // namespace

TEST_CASE("layout sweep: the top layouts of every built-in LLM on 8 and 64 H100, checked") {
  // 5 models, 10 layouts each but where nothing fits (the 70B and larger on 8).
  CHECK(check_sweep(8) > 0);
  CHECK(check_sweep(64) == 5 * 10 * 2);
}

TEST_CASE("layout sweep: the top layouts of every built-in LLM on 1,024 H100, checked") {
  CHECK(check_sweep(1024) == 5 * 10 * 2);
}

TEST_CASE("layout sweep: pase bench --layouts prints the verdicts and the checks") {
  using pase::testing::contains;
  using pase::testing::run_cli;
  pase::testing::Run run = run_cli(
      {"bench", "--layouts", "--models", "gpt2,llama3-8b", "--procs", "8", "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  const nlohmann::json out = nlohmann::json::parse(run.out);
  REQUIRE(out["cases"].size() == 2);
  CHECK(out["problems"] == 0);
  CHECK(out["verdicts"] == 2 * 10 * 2);
  int64_t accepted = 0;
  for (const nlohmann::json& c : out["cases"]) {
    CAPTURE(c.dump());
    CHECK(c["devices"] == 8);
    CHECK(c["gbs"] == 32);
    REQUIRE(c["layouts"].size() == 10);
    int64_t both = 0;
    for (const nlohmann::json& l : c["layouts"]) {
      for (const char* engine : {"megatron", "torchtitan"}) {
        const nlohmann::json& v = l[engine];
        CHECK(!v.contains("problem"));
        if (v["accepted"] == true) {
          ++accepted;
        } else {
          CHECK(!v["rule"].get<std::string>().empty());
          CHECK(!v["source"].get<std::string>().empty());
        }
      }
      both += l["megatron"]["accepted"] == true && l["torchtitan"]["accepted"] == true ? 1 : 0;
    }
    CHECK(c["both"] == both);
  }
  CHECK(out["exports"] == accepted);
  run = run_cli({"bench", "--layouts", "--models", "gpt2", "--procs", "8"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  CHECK(contains(run.out, "gpt2              8     32  1024      10"));
  CHECK(contains(run.out, "0 problems"));
  run = run_cli({"bench", "--layouts", "--models", "resnet101", "--procs", "8"});
  CHECK(run.exit == 1);
  CHECK(contains(run.err, "models"));
  run = run_cli({"bench", "--layouts", "--procs", "12"});
  CHECK(run.exit == 2);
  CHECK(contains(run.err, "--procs"));
  run = run_cli({"bench", "--layouts", "--preset", "a100-80gb"});
  CHECK(run.exit == 2);
}
