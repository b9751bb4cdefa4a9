// The CLI's pipeline flags (core/docs/pipeline.md, "Asking for one" and
// "Reading the result") on RNNLM, 4 vertices: `pase plan --stages S
// --microbatches M --schedule 1f1b|gpipe` prints the stage table before the
// layer summary and table, with the label in the summary line; --format json
// has a "pipeline" object whose T is "cost"; "auto" finds its S and M and
// prints the plan without a pipeline beside it; `pase eval --strategy` with a
// saved pipeline plan or a pipeline strategy gives the plan's step time;
// `pase compare` adds a pipeline row; bad values exit 1 (an invalid field)
// or 2 (a flag that does not parse) with a message naming the problem.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli_run.hpp"
#include "test_util.hpp"

using json = nlohmann::json;
using pase::testing::contains;

namespace {

using CliOutput = pase::testing::Run;

// build/pase with `args`.
CliOutput pase_cli(const std::vector<std::string>& args) { return pase::testing::run_cli(args); }

// The --format json output of a run that must succeed.
json pase_json(std::vector<std::string> args) {
  args.insert(args.end(), {"--format", "json"});
  const CliOutput o = pase_cli(args);
  REQUIRE_MESSAGE(o.exit == 0, o.err);
  json doc = json::parse(o.out, nullptr, false);
  REQUIRE(doc.is_object());
  return doc;
}

// A file of the scratch folder holding `text`; its path.
std::string write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path path = pase::testing::scratch() / name;
  std::ofstream(path) << text;
  return path.string();
}

const std::vector<std::string> kRnnlm4 = {"--model", "rnnlm", "--procs", "4"};
const std::vector<std::string> kRnnlm8 = {"--model", "rnnlm", "--procs", "8"};

std::vector<std::string> with(const std::string& command, std::vector<std::string> more,
                              const std::vector<std::string>& base = kRnnlm4) {
  std::vector<std::string> args = {command};
  args.insert(args.end(), base.begin(), base.end());
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// T = sum A + (M - 1) max A + max W over the result's stages (pipeline.md 4).
double step_of(const json& result) {
  const json& p = result["pipeline"];
  double sum = 0, max_a = 0, max_w = 0;
  for (const json& s : p["stage"]) {
    sum += s["A"].get<double>();
    max_a = std::max(max_a, s["A"].get<double>());
    max_w = std::max(max_w, s["W"].get<double>());
  }
  return sum + (p["microbatches"].get<double>() - 1) * max_a + max_w;
}

}  // namespace

TEST_CASE("cli pipeline: plan --stages 2 --microbatches 4 prints the stages before the layers") {
  const CliOutput o = pase_cli(with("plan", {"--stages", "2", "--microbatches", "4"}));
  REQUIRE_MESSAGE((o.exit == 0 && o.err.empty()), o.err);
  const std::string& t = o.out;
  CHECK(contains(t, "\npipeline         pipeline x2 (4 micro-batches, 1F1B), micro-batch 16\n"));
  const size_t stages = t.find("\nstage  layers  devices");
  const size_t summary = t.find("\nsummary          pipeline x2 (4 micro-batches, 1F1B); ");
  const size_t layers = t.find("\n   id  layer");
  REQUIRE(stages != std::string::npos);
  REQUIRE(summary != std::string::npos);
  REQUIRE(layers != std::string::npos);
  CHECK(stages < summary);
  CHECK(summary < layers);
  // One row per stage, stage s on devices 2s and 2s + 1.
  const std::string table = t.substr(stages, summary - stages);
  for (const auto& [row, devices] :
       {std::pair{"\n    0 ", " 0-1 "}, std::pair{"\n    1 ", " 2-3 "}}) {
    const size_t at = table.find(row);
    REQUIRE(at != std::string::npos);
    CHECK(contains(table.substr(at, table.find('\n', at + 1) - at), devices));
  }
  // Without the flags: no stage table, and the summary has no label.
  const CliOutput plain = pase_cli(with("plan", {}));
  REQUIRE(plain.exit == 0);
  CHECK_FALSE(contains(plain.out, "\nstage  layers"));
  CHECK_FALSE(contains(plain.out, "pipeline"));
  CHECK(contains(plain.out, "\nsummary          4 groups of layers split alike\n"));
}

TEST_CASE("cli pipeline: --format json, 1F1B against GPipe") {
  const json one = pase_json(with("plan", {"--stages", "2", "--microbatches", "4"}));
  const json gp =
      pase_json(with("plan", {"--stages", "2", "--microbatches", "4", "--schedule", "gpipe"}));
  for (const json* r : {&one, &gp}) {
    const json& p = (*r)["pipeline"];
    CHECK(p["stages"] == 2);
    CHECK(p["microbatches"] == 4);
    CHECK(p["micro_batch"] == 16);
    CHECK(p["stage"].size() == 2);
    CHECK(p["stage_of"].size() == (*r)["vertices"].size());
    // "cost" is the pipeline's T; the step time is T at 10 TFLOP/s.
    CHECK((*r)["cost"].get<double>() == doctest::Approx(step_of(*r)).epsilon(1e-12));
    CHECK((*r)["step_time_s"].get<double>() ==
          doctest::Approx((*r)["cost"].get<double>() / 10e12).epsilon(1e-12));
    double largest = 0;
    for (const json& s : p["stage"]) largest = std::max(largest, s["memory_bytes"].get<double>());
    CHECK((*r)["memory"]["per_device_bytes"].get<double>() == largest);
  }
  CHECK(one["pipeline"]["schedule"] == "1f1b");
  CHECK(one["pipeline"]["label"] == "pipeline x2 (4 micro-batches, 1F1B)");
  CHECK(gp["pipeline"]["schedule"] == "gpipe");
  CHECK(gp["pipeline"]["label"] == "pipeline x2 (4 micro-batches, GPipe)");
  // k_s: 1F1B min(S - s, M) = 2, 1; GPipe M = 4, 4. Without a cap the
  // schedule changes the memory, not the step time.
  CHECK(one["pipeline"]["stage"][0]["activation_copies"] == 2);
  CHECK(one["pipeline"]["stage"][1]["activation_copies"] == 1);
  CHECK(gp["pipeline"]["stage"][0]["activation_copies"] == 4);
  CHECK(gp["pipeline"]["stage"][1]["activation_copies"] == 4);
  CHECK(gp["cost"] == one["cost"]);
  CHECK(gp["memory"]["per_device_bytes"].get<double>() >
        one["memory"]["per_device_bytes"].get<double>());

  const CliOutput text =
      pase_cli(with("plan", {"--stages", "2", "--microbatches", "4", "--schedule", "gpipe"}));
  REQUIRE(text.exit == 0);
  CHECK(contains(text.out,
                 "\npipeline         pipeline x2 (4 micro-batches, GPipe), micro-batch 16\n"));
  CHECK(contains(text.out, "\nsummary          pipeline x2 (4 micro-batches, GPipe); "));
}

TEST_CASE("cli pipeline: --stages auto --microbatches auto, beside the plan without a pipeline") {
  const std::vector<std::string> flags = {"--stages", "auto", "--microbatches", "auto"};
  const json autod = pase_json(with("plan", flags, kRnnlm8));
  const json plain = pase_json(with("plan", {}, kRnnlm8));
  const json& p = autod["pipeline"];
  const int64_t S = p["stages"], M = p["microbatches"];
  CHECK(8 % S == 0);
  CHECK(64 % M == 0);
  // The search tried S = M = 1: its cost is the plain plan's, and the result
  // is no worse.
  CHECK(p["no_pipeline_cost"].get<double>() == plain["cost"].get<double>());
  CHECK(autod["cost"].get<double>() <= plain["cost"].get<double>());
  CHECK(autod["cost"].get<double>() == doctest::Approx(step_of(autod)).epsilon(1e-12));

  const CliOutput text = pase_cli(with("plan", flags, kRnnlm8));
  REQUIRE(text.exit == 0);
  CHECK(
      contains(text.out, "\npipeline         " + p["label"].get<std::string>() + ", micro-batch "));
  const size_t line = text.out.find("\nno pipeline      ");
  REQUIRE(line != std::string::npos);
  const std::string rest = text.out.substr(line, text.out.find('\n', line + 1) - line);
  CHECK(contains(rest, ": the best plan without a pipeline; this one is "));
  // The gain: "N.NNx as fast", or in per cent when it is under 1%, so that
  // it never reads "1.00x".
  const double ratio = plain["cost"].get<double>() / autod["cost"].get<double>();
  CHECK(contains(rest, ratio >= 1.01 ? "x as fast" : ratio > 1 ? "% faster" : "the same plan"));
}

TEST_CASE("cli pipeline: eval of a saved pipeline plan and of a pipeline strategy") {
  const CliOutput saved = pase_cli(with(
      "plan", {"--stages", "2", "--microbatches", "4", "--schedule", "gpipe", "--format", "json"}));
  REQUIRE(saved.exit == 0);
  const json planned = json::parse(saved.out);
  const std::string plan_file = write_temp("plan.json", saved.out);
  const json evaluated = pase_json(with("eval", {"--strategy", plan_file}));
  CHECK(evaluated["cost"] == planned["cost"]);
  CHECK(evaluated["memory"]["per_device_bytes"] == planned["memory"]["per_device_bytes"]);
  CHECK(evaluated["pipeline"]["stage_of"] == planned["pipeline"]["stage_of"]);
  CHECK(evaluated["pipeline"]["schedule"] == "gpipe");

  // The same as {"configs", "stage_of", "microbatches", "schedule"}.
  json strategy = {{"configs", json::array()},
                   {"stage_of", planned["pipeline"]["stage_of"]},
                   {"microbatches", 4},
                   {"schedule", "gpipe"}};
  for (const json& v : planned["vertices"]) strategy["configs"].push_back(v["config"]);
  const std::string strategy_file = write_temp("strategy.json", strategy.dump());
  const json again = pase_json(with("eval", {"--strategy", strategy_file}));
  CHECK(again["cost"] == planned["cost"]);
  CHECK(again["memory"]["per_device_bytes"] == planned["memory"]["per_device_bytes"]);

  const CliOutput text = pase_cli(with("eval", {"--strategy", strategy_file}));
  REQUIRE(text.exit == 0);
  CHECK(contains(text.out, "\nsummary          pipeline x2 (4 micro-batches, GPipe); "));
  CHECK(contains(text.out, "\nstrategy         " + strategy_file + "\n"));

  // A pipeline strategy whose M does not divide the batch names the field.
  strategy["microbatches"] = 3;
  const std::string bad_file = write_temp("bad.json", strategy.dump());
  const CliOutput bad = pase_cli(with("eval", {"--strategy", bad_file}));
  CHECK(bad.exit == 1);
  CHECK(bad.out.empty());
  CHECK(contains(bad.err, "strategy.microbatches: 3 micro-batches do not divide the batch 64"));
}

TEST_CASE("cli pipeline: compare --stages 2 --microbatches 2 adds a pipeline row") {
  const std::vector<std::string> flags = {"--stages",          "2", "--microbatches", "2",
                                          "--mcmc-iterations", "0"};
  const CliOutput text = pase_cli(with("compare", flags));
  REQUIRE_MESSAGE(text.exit == 0, text.err);
  CHECK(contains(text.out, "\npipeline    "));
  CHECK(contains(text.out,
                 "\npipeline       pipeline x2 (2 micro-batches, 1F1B) over 2 devices a stage, "
                 "micro-batch 32\n"));
  const json compared = pase_json(with("compare", flags));
  const json planned = pase_json(with("plan", {"--stages", "2", "--microbatches", "2"}));
  const json plain = pase_json(with("plan", {}));
  // The pipeline row is the pipeline plan; "pase" stays the plan without one.
  CHECK(compared["strategies"]["pipeline"]["cost"] == planned["cost"]);
  CHECK(compared["strategies"]["pase"]["cost"] == plain["cost"]);
}

TEST_CASE("cli pipeline: bad stages, micro-batches and schedules exit 1 or 2 naming the problem") {
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string message;
  };
  const Case cases[] = {
      {with("plan", {"--stages", "3"}, kRnnlm8), 1,
       "pase: error: pipeline.stages: 3 stages do not divide the 8 devices"},
      {with("compare", {"--stages", "3"}, kRnnlm8), 1,
       "pase: error: pipeline.stages: 3 stages do not divide the 8 devices"},
      {with("plan", {"--microbatches", "3"}, kRnnlm8), 1,
       "pase: error: pipeline.microbatches: 3 micro-batches do not divide the batch 64 of graph "
       "input 'tokens'"},
      {with("plan", {"--stages", "8"}, kRnnlm8), 1,
       "pase: error: pipeline.stages: 8 stages, but the graph may be cut at only 3 positions"},
      {with("plan", {"--schedule", "foo"}, kRnnlm8), 2,
       "pase: --schedule: 'foo' is not a schedule (1f1b or gpipe)\nTry 'pase plan --help'"},
      {with("plan", {"--stages", "0"}, kRnnlm8), 2,
       "pase: --stages: '0' is not a positive whole number or auto\nTry 'pase plan --help'"},
      {with("plan", {"--microbatches", "0"}, kRnnlm8), 2,
       "pase: --microbatches: '0' is not a positive whole number or auto"},
  };
  for (const Case& c : cases) {
    std::string line;
    for (const std::string& a : c.args) line += a + " ";
    CAPTURE(line);
    const CliOutput o = pase_cli(c.args);
    CHECK(o.exit == c.status);
    CHECK(o.out.empty());
    CHECK_MESSAGE(o.err.rfind(c.message, 0) == 0, o.err);
  }
}

TEST_CASE("cli pipeline: auto under a cap keeps out a pair over it with its working buffers") {
  // Run M1 of the published runs (GPT 1.7B on 32 A100s, batch 512): the
  // search's memory fits without recomputation, but not with the working
  // buffers of the largest layer; before they were kept out, the pair
  // S = M = 1 without recomputation won, did not fit, and the plan fell to
  // full recomputation, 3.354 s a step against 2.609 s with 2 micro-batches.
  const json runs = json::parse(
      pase::testing::read_text(std::string(PASE_EXAMPLES_DIR) + "/../published-runs.json"));
  json config;
  for (const json& run : runs["runs"])
    if (run["id"] == "M1") config = run["config"];
  REQUIRE(config.is_object());
  const std::string file = write_temp("m1_config.json", config.dump());
  const std::vector<std::string> base = {"--graph", file,      "--batch", "512",      "--seq",
                                         "2048",    "--procs", "32",      "--preset", "a100-80gb"};
  const json any = pase_json(with("plan", {"--stages", "auto", "--microbatches", "auto"}, base));
  CHECK(any["memory"]["fits"] == true);
  const json two = pase_json(with("plan", {"--stages", "1", "--microbatches", "2"}, base));
  REQUIRE(two["memory"]["fits"] == true);
  CHECK(any["cost"].get<double>() <= two["cost"].get<double>() * (1 + 1e-9));
  const json none = pase_json(with("plan", {}, base));
  CHECK(none["memory"]["fits"] == true);
}
