// pase bench --goals: the planning-time goals of core/docs/performance.md
// ("Per-layer plans at scale"), each planned as `pase plan` and the page
// answer it (a plan request through plan_json(): the best layout, then the
// per-layer plan from it, ZeRO searched) under its time limit, with the time
// it took and the gap it proved. The published runs' goal is `pase bench
// --published examples/published-runs.json --plan 60`.
#include <chrono>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "format.hpp"
#include "inputs.hpp"
#include "pase/graph.hpp"
#include "pase/import.hpp"
#include "pase/json_api.hpp"
#include "pase/llm.hpp"
#include "report.hpp"
#include "util/json_util.hpp"

namespace pase_cli {
namespace {

using Json = pase::json_detail::Json;

struct Goal {
  const char* name;
  const char* model;  // a built-in model, or the id of a published run's config
  int64_t batch, seq, devices;
  const char* preset;
  bool pipeline;  // stages and micro-batches "auto" (else micro-batches only)
  double limit_s;
};

// The cases and limits of the goals (2 cores, this machine kind).
constexpr Goal kGoals[] = {
    {"GPT-3 175B, 1536 x 2048, 1024 A100, pipeline auto", "gpt3-175b", 1536, 2048, 1024,
     "a100-80gb", true, 30},
    {"Llama 3 8B, 512 x 8192, 1024 H100", "llama3-8b", 512, 8192, 1024, "h100", false, 15},
};

// With --published FILE: the goal of the config of its run L1 (Llama 3
// 405B), whose graph the request carries.
constexpr Goal kPublishedGoal = {
    "Llama 3 405B (L1), 2048 x 8192, 16384 H100", "L1", 2048, 8192, 16384, "h100", false, 60};

// The pase-graph document of run `id`'s config in the published runs'
// file at `path`, at batch x seq.
pase::Result<std::string> published_graph(const std::string& path, const std::string& id,
                                          int64_t batch, int64_t seq) {
  pase::Result<std::string> text = read_file(path);
  if (!text) return text.error();
  pase::Result<Json> doc = pase::json_detail::parse_document(*text);
  if (!doc) return doc.error();
  const Json* runs = doc->is_object() && doc->contains("runs") ? &(*doc)["runs"] : &*doc;
  if (runs->is_array())
    for (const Json& run : *runs)
      if (run.is_object() && run.value("id", std::string()) == id && run.contains("config")) {
        pase::ImportOptions options;
        options.batch = batch;
        options.seq = seq;
        options.name = id;
        pase::Result<pase::GraphSpec> spec = pase::import_llm_config(run["config"].dump(), options);
        if (!spec) return spec.error();
        return pase::write_graph(*spec);
      }
  return pase::Error{"no run '" + id + "' with a config in '" + path + "'", "--published"};
}

std::string step_of(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number()
             ? format("%.4g s", j[key].get<double>())
             : std::string("-");
}

}  // namespace

int run_bench_goals(const std::optional<std::string>& published) {
  if (!write_stdout("goal                                                 limit   planning"
                    "      layout   per-layer      gap  plan\n"))
    return kExitError;
  std::vector<Goal> goals(std::begin(kGoals), std::end(kGoals));
  if (published) goals.push_back(kPublishedGoal);
  for (const Goal& goal : goals) {
    Json request{{"preset", goal.preset},
                 {"cluster", Json{{"devices", goal.devices}}},
                 {"time_limit_s", goal.limit_s}};
    if (published && &goal == &goals.back()) {
      pase::Result<std::string> graph =
          published_graph(*published, goal.model, goal.batch, goal.seq);
      if (!graph) return input_error(graph.error());
      request["graph"] = Json::parse(*graph);
    } else {
      request["model"] = goal.model;
      request["batch"] = goal.batch;
      request["seq"] = goal.seq;
    }
    if (goal.pipeline) request["pipeline"] = Json{{"stages", "auto"}, {"microbatches", "auto"}};
    const auto start = std::chrono::steady_clock::now();
    const std::string text = pase::plan_json(request.dump());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    pase::Result<Json> parsed = pase::json_detail::parse_document(text);
    if (!parsed) return input_error(parsed.error());
    const Json& r = *parsed;
    if (r.contains("error"))
      return input_error(pase::Error{r["error"].value("message", std::string("?")),
                                     r["error"].value("where", std::string())});
    const Json& per_layer = r["per_layer"];
    const Json& gap = per_layer["gap"];
    std::string line =
        pad_right(goal.name, 51) + pad_left(format("%.0f s", goal.limit_s), 7) +
        pad_left(format("%.1f s", seconds), 11) +
        pad_left(step_of(r["best_layout"], "step_time_s"), 12) +
        pad_left(step_of(per_layer, "step_time_s"), 12) +
        pad_left(gap.is_number() ? format("%.2f%%", 100 * gap.get<double>()) : std::string("?"),
                 9) +
        "  " + r["pipeline"].value("label", std::string("-")) +
        (per_layer.value("layout_wins", false) ? " (the best layout's)" : "") +
        (per_layer.contains("stopped_in")
             ? " (stopped in " + per_layer["stopped_in"].get<std::string>() + ")"
             : "") +
        "\n";
    if (!write_stdout(line)) return kExitError;
  }
  return kExitOk;
}

}  // namespace pase_cli
