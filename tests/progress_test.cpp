// One progress per request (pase/plan.hpp, Progress; core/src/search/progress.hpp):
// over plans of many searches (under a memory cap, with the recomputation
// chosen, with a pipeline) the fraction the caller sees never goes back,
// ends at 1 and names its phase; the parts' shares; progress changes no
// plan; and the CLI's log of it, a line per phase.
#include "search/progress.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "pase/graph.hpp"
#include "pase/llm.hpp"
#include "pase/models.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/presets.hpp"
#include "test_util.hpp"

using namespace pase;

namespace {

// GPT-2 at batch `batch` on `devices` H100 with `memory_gib` per GPU, the
// practice model choosing the recomputation: several searches under the cap.
Cluster capped_h100(int64_t devices, double memory_gib) {
  Cluster c = apply_preset(Cluster{.devices = devices}, *find_preset("h100"));
  c.cost_model = CostModel::kPractice;
  c.training.recompute = Recompute::kAuto;
  c.memory_gib = memory_gib;
  return c;
}

// The reports a request made: never lower than the one before, within
// [0, 1], each with a phase, the last at 1 with no time left.
void check_forward(const std::vector<Progress>& seen) {
  REQUIRE(seen.size() > 2);
  for (size_t i = 0; i < seen.size(); ++i) {
    CAPTURE(i);
    CAPTURE(seen[i].phase);
    CHECK(seen[i].fraction >= 0);
    CHECK(seen[i].fraction <= 1);
    if (i > 0) CHECK(seen[i].fraction >= seen[i - 1].fraction);
    if (i > 0) CHECK(seen[i].elapsed_s >= seen[i - 1].elapsed_s);
    CHECK_FALSE(seen[i].phase.empty());
    CHECK(seen[i].seconds_left >= -1);
  }
  CHECK(seen.back().fraction == 1);
  CHECK(seen.back().seconds_left == 0);
}

std::set<std::string> phases(const std::vector<Progress>& seen) {
  std::set<std::string> out;
  for (const Progress& p : seen) out.insert(p.phase);
  return out;
}

}  // namespace

TEST_CASE("progress: a plan of many searches moves only forward and names each search") {
  Result<Graph> g = build_model("gpt2", 32);
  REQUIRE(g.ok());
  std::vector<Progress> seen;
  PlanOptions options;
  options.threads = 1;
  options.on_progress = [&](const Progress& p) { seen.push_back(p); };
  const Cluster cluster = capped_h100(8, 8);
  Result<Plan> p = plan(*g, cluster, options);
  REQUIRE_MESSAGE(p.ok(), p.error().message);
  REQUIRE(p->search.searches >= 4);  // else the test shows nothing
  check_forward(seen);
  // Each search its phase: the one without the cap, then those under it.
  const std::set<std::string> named = phases(seen);
  CHECK(named.size() >= 3);
  bool without = false, under = false;
  for (const std::string& phase : named) {
    without = without || phase.find("searching without the cap") != std::string::npos;
    under = under || phase.find("search 2 under the memory cap") != std::string::npos;
  }
  CHECK(without);
  CHECK(under);
  // Progress changes no search: the same plan without a callback.
  PlanOptions quiet;
  quiet.threads = 1;
  Result<Plan> q = plan(*g, cluster, quiet);
  REQUIRE(q.ok());
  CHECK(q->cost == p->cost);
  CHECK(q->strategy == p->strategy);
  CHECK(q->search.searches == p->search.searches);
}

TEST_CASE("progress: the recomputations tried share one bar") {
  // Over the cap without recomputation: the search tries the choices one
  // after another, each with its searches; before, each search ran its own
  // 0 to 1 (the page's bar read 14%, 12%, 97%, 100%, 3%, ...).
  Result<Graph> g = build_model("gpt2", 64);
  REQUIRE(g.ok());
  std::vector<Progress> seen;
  PlanOptions options;
  options.on_progress = [&](const Progress& p) { seen.push_back(p); };
  Result<Plan> p = plan(*g, capped_h100(16, 6), options);
  REQUIRE_MESSAGE(p.ok(), p.error().message);
  REQUIRE(p->search.searches >= 10);
  check_forward(seen);
  bool choices = false;
  for (const std::string& phase : phases(seen))
    choices = choices || phase.rfind("full recomputation", 0) == 0;
  CHECK(choices);
  // Not every search at the very end: the bar moved with the work.
  int below_half = 0;
  for (const Progress& r : seen) below_half += r.fraction < 0.5 ? 1 : 0;
  CHECK(below_half > 2);
}

TEST_CASE("progress: a pipeline under a cap moves during the plan without a pipeline") {
  // The plan without a pipeline under the cap runs its Lagrangian loop after
  // its search without the cap; the bar stood at one half meanwhile (and
  // the recomputations each ran from 0 again).
  Result<Graph> g = build_model("gpt2", 32);
  REQUIRE(g.ok());
  std::vector<Progress> seen;
  PlanOptions options;
  options.threads = 1;
  options.on_progress = [&](const Progress& p) { seen.push_back(p); };
  Result<PipelinePlan> p = plan_pipeline(
      *g, capped_h100(8, 8), PipelineOptions{.stages = kAuto, .microbatches = kAuto}, options);
  REQUIRE_MESSAGE(p.ok(), p.error().message);
  check_forward(seen);
  std::set<double> lead;  // the fractions shown during the plan without a pipeline
  bool plans = false;
  for (const Progress& r : seen) {
    if (r.phase.find("the plan without a pipeline: search") != std::string::npos)
      lead.insert(r.fraction);
    plans = plans || r.phase.find("pipeline: stage plans") != std::string::npos;
  }
  CHECK(lead.size() >= 2);
  CHECK(plans);
}

TEST_CASE("progress: parts of unknown count rise and never reach the end") {
  double before = 0;
  for (int i = 0; i < 200; ++i) {
    const auto [lo, hi] = open_part(i, kSearchesAhead);
    CHECK(lo == doctest::Approx(before));
    CHECK(hi > lo);
    CHECK(hi < 1);
    before = hi;
  }
  // A part's 0..1 fills its share, under its phase.
  std::vector<Progress> seen;
  PlanOptions options;
  options.on_progress = [&](const Progress& p) { seen.push_back(p); };
  const PlanOptions part = progress_part(options, 0.25, 0.5, "search 2 under the memory cap");
  Progress p;
  p.fraction = 0.5;
  part.on_progress(p);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].fraction == doctest::Approx(0.375));
  CHECK(seen[0].phase == "search 2 under the memory cap");
}

TEST_CASE("progress: the caller's fraction never goes back, whatever the parts report") {
  std::vector<Progress> seen;
  PlanOptions options;
  options.on_progress = [&](const Progress& p) { seen.push_back(p); };
  RequestProgress request(options);
  for (double f : {0.14, 0.12, 0.97, 0.5, 0.03, 0.06, 0.0, 0.42}) {
    Progress p;
    p.fraction = f;
    p.phase = "search " + std::to_string(seen.size());
    request.options().on_progress(p);
  }
  request.finish();
  REQUIRE(seen.size() == 9);
  for (size_t i = 1; i < seen.size(); ++i) CHECK(seen[i].fraction >= seen[i - 1].fraction);
  CHECK(seen[2].fraction == 0.97);
  CHECK(seen[7].fraction == 0.97);
  CHECK(seen.back().fraction == 1);
  // No callback, nothing to call.
  RequestProgress none(PlanOptions{});
  CHECK_FALSE(none.options().on_progress);
  none.finish();
}

TEST_CASE(
    "progress: the CLI logs a line per phase at most, a dozen in all, its percentages never "
    "lower") {
  // Llama 3 8B on two nodes of H100 under 80 GiB: about a hundred searches
  // over some 20 recomputations, a few seconds on one thread. Before, with
  // standard error a file, each search printed its own lines from 0%
  // ("planning: search N under the memory cap: 1/452 vertices (0%)").
  // ZeRO 0 and one micro-batch, set by hand: the per-layer plan is searched
  // as asked, not from the best layout (core/docs/layouts.md, "Both answers").
  const pase::testing::Run run = pase::testing::run_cli(
      {"plan", "--model", "llama3-8b", "--procs", "16", "--preset", "h100", "--memory", "80",
       "--threads", "1", "--zero", "0", "--microbatches", "1"});
  REQUIRE_MESSAGE(run.exit == 0, run.err);
  const size_t at = run.out.find(" searches of ");
  REQUIRE(at != std::string::npos);
  const int searches = std::stoi(run.out.substr(run.out.rfind(' ', at - 1) + 1));
  CHECK(searches >= 20);
  std::istringstream lines(run.err);
  std::string line;
  std::set<std::string> seen_phases;
  int count = 0, percent = -1;
  while (std::getline(lines, line)) {
    CAPTURE(line);
    REQUIRE(line.rfind("planning: ", 0) == 0);
    CHECK(line.find('\r') == std::string::npos);  // not a terminal's redrawn line
    const size_t sign = line.find("%, ");
    REQUIRE(sign != std::string::npos);
    const int p = std::stoi(line.substr(10, sign - 10));
    CHECK(p >= percent);
    percent = p;
    // The phase, up to the time left.
    const size_t left = line.rfind(", ");
    REQUIRE(left > sign);
    CHECK(seen_phases.insert(line.substr(sign + 3, left - sign - 3)).second);
    CHECK(line.substr(left).find(" left") != std::string::npos);
    ++count;
  }
  CHECK(count >= 2);
  CHECK(count <= searches);
  // A line 10 points after the one before (30 s never pass here): a dozen
  // at most, not one per search.
  CHECK(count <= 11);
}

TEST_CASE("progress: a long search says so before it starts, and only then") {
  // The pace the note assumes: a minute's worth of configurations and
  // searches is not yet long, a little more is.
  const double searches = 30;
  const auto at = [&](double seconds) {
    return static_cast<uint64_t>(seconds / (searches * kSecondsPerConfiguration));
  };
  CHECK(long_search_note(at(kLongSearchSeconds * 0.99), searches, "for x").empty());
  const std::string note = long_search_note(at(kLongSearchSeconds * 3), searches, "for x");
  CHECK(note.rfind("a long search: about 30 searches of ", 0) == 0);
  CHECK(note.find("for x, some 3 min on one core") != std::string::npos);

  // Llama 3 8B's width at 256 decoder layers on 64 H100 under 80 GiB, the
  // recomputation chosen: minutes of searches. The note comes with the
  // first report, before any search (the request is cancelled there).
  Result<LlmConfig> config = parse_llm_config(R"({"model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
    "num_hidden_layers": 256, "max_position_embeddings": 8192, "vocab_size": 128256})");
  REQUIRE(config.ok());
  Result<GraphSpec> spec = llm_spec(*config, "deep", 32, 8192);
  REQUIRE(spec.ok());
  Result<Graph> g = build_graph(*spec);
  REQUIRE(g.ok());
  Cluster c = capped_h100(64, 80);
  c.gpus_per_node = 8;
  std::atomic<bool> cancel{false};
  std::vector<Progress> seen;
  PlanOptions options;
  options.threads = 1;
  options.cancel = &cancel;
  options.on_progress = [&](const Progress& p) {
    seen.push_back(p);
    if (!p.note.empty()) cancel = true;
  };
  Result<Plan> p = plan(*g, c, options);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().message == "cancelled");
  REQUIRE_FALSE(seen.empty());
  CAPTURE(seen.front().note);
  CHECK(seen.front().note.find("a long search: ") == 0);
  CHECK(seen.front().note.find("the recomputation of 256 decoder blocks") != std::string::npos);
  CHECK(seen.front().vertices_done == 0);
}
