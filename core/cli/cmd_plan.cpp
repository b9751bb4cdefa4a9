// pase plan: flags -> Graph, Cluster and PlanOptions -> plan() -> the plan as
// a table or the plan-result document, with progress on standard error.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "commands.hpp"
#include "flags.hpp"
#include "inputs.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "plan_text.hpp"
#include "report.hpp"

namespace pase_cli {

namespace {

// Prints "planning: 120/245 vertices (48%)" on stderr for plans that run
// longer than a second, at most twice a second. On a terminal the line is
// redrawn in place and erased at the end; elsewhere (a log) each report is a line.
// Under a memory cap plan() may run several searches (core/docs/cluster.md,
// "Planning under a memory cap"), each reported from 0 to 1: from the second
// on, the line says which ("planning: search 3 under the memory cap: ...").
class ProgressPrinter {
 public:
  // A pipeline's progress counts stage plans, each a search of its own.
  explicit ProgressPrinter(bool pipeline = false)
      : tty_(isatty(fileno(stderr)) != 0), pipeline_(pipeline) {}

  void operator()(const pase::Progress& p) {
    if (p.fraction >= 1 && pipeline_) {
      finish();
      return;
    }
    if (p.fraction >= 1) {
      ++searches_;
      finish();
      return;
    }
    const Clock::time_point now = Clock::now();
    if (now - start_ < std::chrono::seconds(1)) return;
    if (printed_ && now - last_ < std::chrono::milliseconds(500)) return;
    if (pipeline_) {
      std::fprintf(stderr, "%splanning the pipeline: %d/%d stage plans (%.0f%%)%s",
                   tty_ ? "\r\033[K" : "", p.vertices_done, p.vertices_total, 100 * p.fraction,
                   tty_ ? "" : "\n");
      std::fflush(stderr);
      printed_ = true;
      last_ = now;
      return;
    }
    const std::string search =
        searches_ > 0 ? "search " + std::to_string(searches_ + 1) + " under the memory cap: " : "";
    std::fprintf(stderr, "%splanning: %s%d/%d vertices (%.0f%%)%s", tty_ ? "\r\033[K" : "",
                 search.c_str(), p.vertices_done, p.vertices_total, 100 * p.fraction,
                 tty_ ? "" : "\n");
    std::fflush(stderr);
    printed_ = true;
    last_ = now;
  }

  // Erases the redrawn line; also called when the plan stops early (error).
  void finish() {
    if (printed_ && tty_) std::fputs("\r\033[K", stderr);
    printed_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool tty_;
  bool pipeline_;
  bool printed_ = false;
  int searches_ = 0;  // finished so far
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_;
};

}  // namespace

std::string plan_usage() {
  return "usage: pase plan (--model NAME | --graph FILE [--dim NAME=SIZE ...])\n"
         "                 [--batch B] [--seq S] [options]\n\n"
         "Finds the per-layer parallelization of least cost (the PaSE search).\n\n" +
         std::string(kGraphHelp) + std::string(kClusterHelp) + std::string(kMemoryHelp) +
         std::string(kTrainingHelp) +
         "  --order ORDER       vertex order: genseq (default), bfs, mintable\n"
         "  --max-memory SIZE   limit for the search tables, the planner's own memory\n"
         "                      (default 4GiB; 0: none); bytes or e.g. 512M, 4GiB, 2GB\n"
         "  --search MODE       auto (default: exact when its tables fit --max-memory,\n"
         "                      else bounded), exact (refuse instead), or bounded\n"
         "                      (rounds of the exact search over parts of the graph,\n"
         "                      with a proven lower bound and the gap to it)\n" +
         std::string(kThreadsHelp) + std::string(kPipelineHelp) +
         "  --pow2-only         only power-of-two splits\n"
         "  --all-devices       only configurations that use every device\n"
         "  --mesh-only         only splits whose product divides the devices (what a\n"
         "                      device mesh expresses; on with --emit jax)\n"
         "  --format FORMAT     text (default) or json (the plan-result document)\n" +
         std::string(kEmitHelp);
}

int run_plan(const Args& args) {
  Flags flags;
  if (auto message = parse_planning_flags(args,
                                          {{"--order", true},
                                           {"--max-memory", true},
                                           {"--search", true},
                                           {"--pow2-only", false},
                                           {"--all-devices", false},
                                           {"--mesh-only", false},
                                           {"--threads", true},
                                           {"--format", true},
                                           {"--stages", true},
                                           {"--microbatches", true},
                                           {"--schedule", true},
                                           {"--emit", true},
                                           {"--output", true}},
                                          flags))
    return usage_error("plan", *message);

  if (std::optional<int> bad = check_emit_flag(flags, "plan")) return *bad;
  pase::PlanOptions options;
  if (std::optional<std::string> order = flags.get("--order")) {
    pase::Result<pase::Order> parsed = pase::parse_order(*order);
    if (!parsed) return usage_error("plan", "--order: " + parsed.error().message);
    options.order = *parsed;
  }
  if (std::optional<std::string> size = flags.get("--max-memory")) {
    std::optional<uint64_t> bytes = parse_size(*size);
    if (!bytes) {
      return usage_error("plan", "--max-memory: '" + *size +
                                     "' is not a size (bytes, or a number with K, M, G, T, "
                                     "KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
    }
    options.max_memory = *bytes;
  }
  if (std::optional<std::string> mode = flags.get("--search")) {
    pase::Result<pase::SearchMode> parsed = pase::parse_search_mode(*mode);
    if (!parsed) return usage_error("plan", "--search: " + parsed.error().message);
    options.search = *parsed;
  }
  if (auto message = threads_from_flags(flags, options.threads))
    return usage_error("plan", *message);
  std::optional<pase::PipelineOptions> pipeline;
  if (auto message = pipeline_from_flags(flags, pipeline)) return usage_error("plan", *message);
  options.enumeration.pow2_only = flags.has("--pow2-only");
  options.enumeration.all_devices = flags.has("--all-devices");
  // A JAX program runs on a mesh: its splits must divide the devices.
  const std::optional<std::string> emit = flags.get("--emit");
  options.enumeration.mesh_only = flags.has("--mesh-only") || (emit && *emit == "jax");
  bool json = false;
  GraphSource source;
  pase::Cluster cluster;
  if (auto failure = format_from_flags(flags, json)) return failure->report("plan");
  if (auto failure = graph_source_from_flags(flags, source)) return failure->report("plan");
  if (auto failure = cluster_from_flags(flags, cluster)) return failure->report("plan");

  pase::Result<pase::Graph> graph = load_source(source);
  if (!graph) return input_error(graph.error());
  ProgressPrinter progress(pipeline.has_value());
  options.on_progress = [&progress](const pase::Progress& p) { progress(p); };
  if (pipeline) {
    pase::Result<pase::PipelinePlan> piped =
        pase::plan_pipeline(*graph, cluster, *pipeline, options);
    progress.finish();
    if (!piped) return input_error(with_memory_hint(piped.error(), cluster));
    const std::string out = json ? pase::pipeline_plan_to_json(cluster, *piped)
                                 : plan_text(piped->graph, cluster, piped->plan,
                                             PlanSource::kSearched, &piped->pipeline) +
                                       search_text(piped->plan.search);
    return finish_planning(
        flags, args,
        pase::PlanView{&*graph, &piped->graph, &cluster, &piped->plan, &piped->pipeline}, out,
        json);
  }
  pase::Result<pase::Plan> plan = pase::plan(*graph, cluster, options);
  progress.finish();
  if (!plan) return input_error(with_memory_hint(plan.error(), cluster));

  const std::string out =
      json ? pase::plan_to_json(*graph, cluster, *plan)
           : plan_text(*graph, cluster, *plan, PlanSource::kSearched) + search_text(plan->search);
  return finish_planning(flags, args, pase::PlanView{&*graph, &*graph, &cluster, &*plan, nullptr},
                         out, json);
}

}  // namespace pase_cli
