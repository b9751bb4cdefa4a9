// pase bench --published (core/docs/practice-model.md, "Checked against
// published runs"): every run of examples/published-runs.json priced with
// its error, and the best layout of its space beside its published one
// (core/docs/layouts.md), at most as slow by the same model.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.hpp"
#include "pase/layout.hpp"
#include "pase/layout_search.hpp"
#include "pase/llm.hpp"
#include "pase/pipeline.hpp"
#include "pase/presets.hpp"
#include "test_util.hpp"

using json = nlohmann::json;
using namespace pase;
using pase::testing::contains;

TEST_CASE(
    "practice: bench --published prints every run with its error, and the best layout of its "
    "space, at most as slow") {
  using pase::testing::run_cli;
  const std::string file = std::string(PASE_EXAMPLES_DIR) + "/../published-runs.json";
  pase::testing::Run run = run_cli({"bench", "--published", file, "--format", "json"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  json out = json::parse(run.out);
  json doc = json::parse(testing::read_text(file));
  REQUIRE(out["runs"].size() == doc["runs"].size());
  const auto near = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::abs(b); };
  for (size_t i = 0; i < out["runs"].size(); ++i) {
    const json& r = out["runs"][i];
    const json& d = doc["runs"][i];
    CAPTURE(r.dump());
    CHECK(r["id"] == d["id"]);
    CHECK(r["predicted_s"].get<double>() > 0);
    CHECK(r["error"].get<double>() ==
          doctest::Approx(r["predicted_s"].get<double>() / r["measured_s"].get<double>() - 1));
    // The layout search of the run (core/docs/layouts.md): the published
    // layout placed among every layout of its space, the best beside it, at
    // most as slow by the same model (the search is exact over the space).
    REQUIRE(r["best_layout"].is_object());
    const double published = r["published_step_s"].get<double>();
    const double best = r["best_layout"]["step_time_s"].get<double>();
    CHECK(best <= published * (1 + 1e-9));
    CHECK(r["gain_s"].get<double>() == doctest::Approx(published - best));
    CHECK(r["gain_fraction"].get<double>() == doctest::Approx(published / best - 1));
    CHECK(r["fastest_step_s"].get<double>() <= best);
    CHECK(r["search_missed"] == false);
    CHECK(r["layouts_priced"].get<int64_t>() > 0);
    CHECK(r["published_fits"] ==
          (r["memory_gib"].get<double>() <= r["capacity_gib"].get<double>()));
    if (r["published_fits"] == true) {
      CHECK(r["published_rank"].get<int64_t>() >= 1);
    } else {
      CHECK(r["published_rank"].get<int64_t>() == 0);
    }
    CHECK(r["published_in_space"] == !r.contains("outside_space"));
    // The search prices the published layout as the bench does where the
    // vocabulary pads alike (to 128 x tp there, to 128 here).
    const int64_t vocab = d["config"]["vocab_size"].get<int64_t>(),
                  tp = d["layout"]["tp"].get<int64_t>();
    if (padded_vocab(vocab, kLlmVocabMultiple) == padded_vocab(vocab, kLlmVocabMultiple * tp))
      CHECK(near(published, r["predicted_s"].get<double>()));
    // The best is a layout that `pase eval --layout` prices the same and that fits.
    Result<LlmConfig> config = parse_llm_config(d["config"].dump());
    REQUIRE(config.ok());
    Result<Layout> l = parse_layout(r["best_layout"]["layout"].get<std::string>());
    REQUIRE(l.ok());
    Result<Graph> g =
        layout_graph(LayoutModel{*config, "run", d["seq"].get<int64_t>(), kLlmVocabMultiple}, *l);
    REQUIRE(g.ok());
    Cluster c = apply_preset(Cluster{}, *find_preset(d["cluster"]["preset"].get<std::string>()));
    c.devices = d["cluster"]["devices"].get<int64_t>();
    c.gpus_per_node = d["cluster"]["gpus_per_node"].get<int64_t>();
    c.cost_model = CostModel::kPractice;
    c.headroom = 0;
    Result<LayoutStrategy> s = layout_strategy(*g, c, *l);
    REQUIRE_MESSAGE(s.ok(), testing::why(s));
    Result<PipelinePlan> p = evaluate_pipeline(*g, s->cluster, s->strategy);
    REQUIRE_MESSAGE(p.ok(), testing::why(p));
    CHECK(near(p->plan.step_time_s, best));
    CHECK(p->plan.fits);
  }
  // L1's layout is one neither engine starts, and it says so.
  CHECK(out["runs"][8]["id"] == "L1");
  CHECK(contains(out["runs"][8].value("outside_space", ""), "no engine starts it"));
  run = run_cli({"bench", "--published", file, "--procs", "8"});
  CHECK(run.exit != 0);
  run = run_cli({"bench", "--published", std::string(PASE_EXAMPLES_DIR) + "/attention_block.json"});
  CHECK(run.exit != 0);
  CHECK(contains(run.err, "published-runs/1"));
}
