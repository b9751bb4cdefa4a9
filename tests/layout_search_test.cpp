// The layout search (core/docs/layouts.md): its composed prices are the
// evaluation of each layout (evaluate_pipeline() of layout_strategy()), its
// best is the fastest that fits, and it counts what it priced and refused.
#include "pase/layout_search.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "layouts/layout_pricer.hpp"
#include "pase/json_api.hpp"
#include "pase/layout.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "test_util.hpp"

using namespace pase;

namespace {

// The layout evaluated in full, as `pase eval --layout` does.
struct Evaluated {
  double step_time_s = 0;
  StepBreakdown parts;
  double memory = 0;
  bool fits = true;
};

Evaluated evaluate_in_full(const LayoutModel& m, const Cluster& cluster, const Layout& l) {
  Result<GraphSpec> spec = llm_spec(m.config, m.name, l.gbs, m.seq, m.vocab_multiple * l.tp);
  REQUIRE(spec.ok());
  Result<Graph> g = build_graph(*spec);
  REQUIRE(g.ok());
  Result<LayoutStrategy> s = layout_strategy(*g, cluster, l);
  REQUIRE_MESSAGE(s.ok(), testing::why(s));
  Result<PipelinePlan> p = evaluate_pipeline(*g, s->cluster, s->strategy);
  REQUIRE_MESSAGE(p.ok(), testing::why(p));
  return Evaluated{p->plan.step_time_s, step_breakdown(p->plan, &p->pipeline, cluster.tflops),
                   p->plan.memory.total(), p->plan.fits};
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(b), 1e-30); }

LayoutModel model_of_name(const char* name, int64_t seq) {
  return LayoutModel{*llm_config(name), name, seq, kLlmVocabMultiple};
}

}  // namespace

TEST_CASE("layout search: a composed price is the layout's evaluation") {
  struct Case {
    const char* model;
    int64_t devices, gpus_per_node, seq;
    const char* layout;
  };
  const Case cases[] = {
      {"llama3-8b", 16, 8, 512, "tp=2 pp=1 dp=8 gbs=32"},
      {"llama3-8b", 16, 8, 512, "tp=2 pp=2 dp=4 sp=on zero=1 mbs=2 gbs=32"},
      {"llama3-8b", 16, 8, 512, "tp=4 pp=4 dp=1 recompute=full gbs=16 vpp=2"},
      {"llama3-8b", 16, 8, 512, "tp=1 pp=4 dp=4 recompute=selective gbs=32 pp_first=5 pp_last=5"},
      {"llama3-8b", 12, 8, 512, "tp=1 pp=3 dp=4 gbs=32"},
      {"llama3-8b", 16, 4, 512, "tp=2 pp=4 dp=2 cp=1 zero=3 dp_shard=1 gbs=32"},
      {"llama3-8b", 16, 8, 512,
       "tp=2 pp=2 dp=2 cp=2 zero=2 recompute=full recompute_blocks=3 gbs=8"},
      {"llama3-8b", 16, 8, 512, "tp=2 pp=4 dp=2 recompute=full recompute_blocks=2 vpp=2 gbs=16"},
      {"llama3-8b", 12, 4, 512, "tp=1 pp=3 dp=4 zero=3 gbs=24 mbs=3"},
      {"gpt2", 8, 8, 256, "tp=2 pp=2 dp=2 sp=on zero=3 dp_shard=1 gbs=8"},
      {"mixtral-8x7b", 16, 8, 256, "tp=2 pp=2 dp=4 ep=4 etp=1 sp=on gbs=16"},
      {"mixtral-8x7b", 16, 8, 256, "tp=2 pp=1 dp=4 cp=2 ep=8 zero=1 gbs=8"},
      // Above one sequence per rank, the configurations are those of one
      // sequence's model (the pricer's twins()).
      {"mixtral-8x7b", 16, 8, 256, "tp=2 pp=2 dp=4 ep=4 etp=1 sp=on mbs=2 gbs=16"},
      {"mixtral-8x7b", 16, 8, 256, "tp=2 pp=1 dp=2 cp=4 ep=8 zero=3 mbs=4 gbs=16"},
      {"llama3-8b", 16, 8, 512, "tp=2 pp=1 dp=4 cp=2 sp=on zero=2 mbs=4 gbs=32"},
      {"gpt2", 8, 8, 256, "tp=4 pp=1 dp=2 sp=on mbs=3 gbs=12"},
  };
  for (const Case& c : cases) {
    std::string name = c.model;
    name.append(" ").append(c.layout);
    CAPTURE(name);
    const LayoutModel m = model_of_name(c.model, c.seq);
    Cluster cluster = testing::practice_h100(c.devices);
    cluster.gpus_per_node = c.gpus_per_node;
    Result<Layout> l = parse_layout(c.layout);
    REQUIRE(l.ok());
    layout_detail::LayoutPricer pricer(m, cluster, l->gbs);
    Result<layout_detail::PricedLayout> p = pricer.price(*l);
    REQUIRE_MESSAGE(p.ok(), testing::why(p));
    const Evaluated e = evaluate_in_full(m, cluster, *l);
    CHECK(near(p->step_time_s, e.step_time_s));
    CHECK(near(p->parts.compute_s, e.parts.compute_s));
    CHECK(near(p->parts.recompute_s + 1, e.parts.recompute_s + 1));
    CHECK(near(p->parts.bubble_s + 1, e.parts.bubble_s + 1));
    CHECK(near(p->parts.communication_s + 1, e.parts.communication_s + 1));
    CHECK(near(p->memory.total(), e.memory));
    CHECK(p->fits == e.fits);
  }
}

TEST_CASE("layout search: the best layout is the fastest that fits, ranked with reasons") {
  const LayoutModel m = model_of_name("llama3-8b", 1024);
  Cluster cluster = testing::practice_h100(16);
  LayoutSearchOptions o;
  o.gbs = 32;
  o.tokens = 1e12;
  o.gpu_hour_price = 2;
  o.given = *parse_layout("tp=2 pp=1 dp=8 zero=0 gbs=32");
  Result<LayoutSearch> s = search_layouts(m, cluster, o);
  REQUIRE_MESSAGE(s.ok(), testing::why(s));
  REQUIRE(s->ranked.size() == 10);
  CHECK(s->ruled_out > 0);
  for (size_t i = 1; i < s->ranked.size(); ++i) {
    CHECK(s->ranked[i - 1].step_time_s <= s->ranked[i].step_time_s);
    CHECK(s->ranked[i].rank == static_cast<int64_t>(i) + 1);
    CHECK(s->ranked[i].fits);
    CHECK((testing::contains(s->ranked[i].versus_best, "slower") ||
           s->ranked[i].versus_best == "as fast as the first"));
  }
  const RankedLayout& best = s->ranked.front();
  // Its figures are the evaluation's.
  const Evaluated e = evaluate_in_full(m, cluster, best.layout);
  CHECK(near(best.step_time_s, e.step_time_s));
  CHECK(e.fits);
  CHECK(best.days > 0);
  CHECK(near(best.cost, 2 * best.days * 24 * 16));
  // No layout of the hand-set kinds beats it: FSDP, ZeRO 1, micro-batches.
  for (const char* hand : {"tp=1 pp=1 dp=16 zero=3 gbs=32", "tp=2 pp=1 dp=8 zero=1 gbs=32",
                           "tp=2 pp=1 dp=8 zero=3 recompute=full gbs=32",
                           "tp=2 pp=2 dp=4 zero=1 mbs=1 gbs=32", "tp=8 pp=1 dp=2 sp=on gbs=32"}) {
    CAPTURE(hand);
    const Evaluated h = evaluate_in_full(m, cluster, *parse_layout(hand));
    if (h.fits) CHECK(best.step_time_s <= h.step_time_s * (1 + 1e-12));
  }
  // The given layout: its rank among those that fit, or why it does not.
  REQUIRE(s->given.has_value());
  if (s->given->fits) {
    CHECK(s->given->rank >= 1);
  } else {
    CHECK(testing::contains(s->given->versus_best, "does not fit"));
  }
  // Beside them, only layouts that do not fit and are faster than the first.
  for (const RankedLayout& r : s->over) {
    CHECK_FALSE(r.fits);
    CHECK(r.step_time_s < best.step_time_s);
  }
  CHECK(s->priced + s->bounded > 1000);
}

TEST_CASE("layout search: degrees that do not divide are refused and counted with why") {
  const LayoutModel m = model_of_name("llama3-8b", 1024);
  LayoutSearchOptions o;
  o.gbs = 12;  // dp = 8 and 16 do not divide it
  Result<LayoutSearch> s = search_layouts(m, testing::practice_h100(16), o);
  REQUIRE_MESSAGE(s.ok(), testing::why(s));
  CHECK(s->refused > 0);
  int64_t counted = 0;
  bool batch = false;
  for (const auto& [why, count] : s->refused_why) {
    counted += count;
    batch = batch || why.rfind("layout.gbs:", 0) == 0;
  }
  CHECK(counted == s->refused);
  CHECK(batch);
  for (const RankedLayout& r : s->ranked) CHECK(12 % (r.layout.dp * r.layout.mbs) == 0);
}

TEST_CASE("layout search: bad requests name the field") {
  const LayoutModel m = model_of_name("llama3-8b", 1024);
  LayoutSearchOptions o;
  o.gbs = 0;
  Result<LayoutSearch> s = search_layouts(m, testing::practice_h100(8), o);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().where == "gbs");
  o.gbs = 8;
  Cluster paper;
  s = search_layouts(m, paper, o);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().where == "cluster.cost_model");
  o.given = *parse_layout("tp=3 gbs=8");
  s = search_layouts(m, testing::practice_h100(8), o);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().where.rfind("layout.", 0) == 0);
}

TEST_CASE("layout search: pase layouts prints the ranking, places a Megatron-LM layout, emits") {
  using testing::contains;
  const std::vector<std::string> base = {"layouts", "--model",  "llama3-8b", "--procs",
                                         "16",      "--preset", "h100",      "--batch",
                                         "32",      "--seq",    "1024"};
  // A Megatron-LM argument list, pasted into a file (its values start with --).
  const std::string file = (testing::scratch() / "megatron_args.sh").string();
  {
    std::ofstream out(file);
    out << "torchrun --nproc-per-node 8 pretrain_gpt.py \\\n  --tensor-model-parallel-size 2 "
           "--pipeline-model-parallel-size 1 \\\n  --micro-batch-size 1 --global-batch-size 32\n";
  }
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--tokens", "1T", "--layout", "@" + file});
  testing::Run r = testing::run_cli(args);
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  CHECK(contains(r.out, "layouts priced"));
  CHECK(contains(r.out, "  1  "));
  CHECK(contains(r.out, "your layout:"));
  CHECK(contains(r.out, "tp=2 pp=1 dp=8"));
  args = base;
  args.insert(args.end(), {"--format", "json"});
  r = testing::run_cli(args);
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["ranked"].size() == 10);
  CHECK(doc["ranked"][0]["rank"] == 1);
  CHECK(doc["ranked"][0]["engines"].contains("megatron"));
  args = base;
  args.insert(args.end(), {"--emit", "megatron"});
  r = testing::run_cli(args);
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  CHECK(contains(r.out, "torchrun"));
  args = base;
  args.insert(args.end(), {"--layout", "tp=3"});
  r = testing::run_cli(args);
  CHECK(r.exit == 1);
  CHECK(contains(r.err, "layout"));
}

TEST_CASE("layout search: the JSON request ranks and refuses bad fields by name") {
  const std::string ok = pase::layouts_json(
      R"({"model": "llama3-8b", "batch": 16, "seq": 512, "preset": "h100",
          "cluster": {"devices": 8}, "top": 3, "tokens": 1e12, "emit": "torchtitan"})");
  const nlohmann::json doc = nlohmann::json::parse(ok);
  REQUIRE_MESSAGE(doc.contains("ranked"), ok);
  CHECK(doc["ranked"].size() == 3);
  CHECK(doc["ranked"][0]["days"].get<double>() > 0);
  CHECK(doc["ranked"][0]["cost"].get<double>() > 0);  // the preset's price of a GPU-hour
  REQUIRE(doc["exports"].size() == 1);
  const std::string bad =
      pase::layouts_json(R"({"model": "llama3-8b", "preset": "h100", "top": 0})");
  CHECK(nlohmann::json::parse(bad)["error"]["where"] == "top");
  const std::string paper = pase::layouts_json(R"({"model": "llama3-8b", "batch": 8})");
  CHECK(nlohmann::json::parse(paper)["error"]["where"] == "cluster.cost_model");
}

TEST_CASE("layout search: its bounds and shared configurations change no ranking") {
  // Every shortcut off (every layout priced, layout_strategy() at every
  // micro-batch) ranks the same layouts at the same step times, bit for
  // bit, and covers the same space: a bound that were not a lower bound
  // would drop a layout of the ranking or of those over the cap.
  struct Case {
    const char* model;
    int64_t devices, seq, gbs;
    const char* given;
  };
  const Case cases[] = {
      {"gpt2", 8, 1024, 16, "tp=2 pp=2 dp=2 gbs=16"},
      {"llama3-8b", 8, 8192, 8, nullptr},
      {"llama3-8b", 16, 2048, 32, "tp=2 pp=2 dp=4 zero=1 gbs=32"},
      {"mixtral-8x7b", 16, 4096, 16, nullptr},
  };
  const auto same = [](const std::vector<RankedLayout>& a, const std::vector<RankedLayout>& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CAPTURE(i);
      CHECK(layout_text(a[i].layout) == layout_text(b[i].layout));
      CHECK(a[i].step_time_s == b[i].step_time_s);
      CHECK(a[i].fits == b[i].fits);
    }
  };
  for (const Case& c : cases) {
    CAPTURE(c.model);
    CAPTURE(c.devices);
    const LayoutModel m = model_of_name(c.model, c.seq);
    const Cluster cluster = testing::practice_h100(c.devices);
    LayoutSearchOptions o;
    o.gbs = c.gbs;
    o.top = 20;
    if (c.given != nullptr) o.given = *parse_layout(c.given);
    Result<LayoutSearch> fast = search_layouts(m, cluster, o);
    Result<LayoutSearch> unbounded = layout_detail::search_layouts(
        m, cluster, o, layout_detail::SearchSwitches{.bounds = false});
    Result<LayoutSearch> unshared = layout_detail::search_layouts(
        m, cluster, o, layout_detail::SearchSwitches{.share_configs = false});
    REQUIRE_MESSAGE(fast.ok(), testing::why(fast));
    REQUIRE_MESSAGE(unbounded.ok(), testing::why(unbounded));
    REQUIRE_MESSAGE(unshared.ok(), testing::why(unshared));
    CHECK(fast->bounded > 0);
    CHECK(unbounded->bounded == 0);
    CHECK(fast->priced + fast->bounded + fast->refused == unbounded->priced + unbounded->refused);
    CHECK(!fast->ranked.empty());
    for (const Result<LayoutSearch>* other : {&unbounded, &unshared}) {
      same(fast->ranked, (*other)->ranked);
      same(fast->over, (*other)->over);
      CHECK(fast->given.has_value() == (*other)->given.has_value());
      if (fast->given && (*other)->given) CHECK(fast->given->rank == (*other)->given->rank);
    }
    // Sharing the configurations changes no count either.
    CHECK(fast->priced == unshared->priced);
    CHECK(fast->bounded == unshared->bounded);
    CHECK(fast->ruled_out == unshared->ruled_out);
    CHECK(fast->refused == unshared->refused);
  }
}
