// pase plan: flags -> Graph, Cluster and PlanOptions -> plan() -> the plan as
// a table or the plan-result document, with progress on standard error.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string>

#include "answers_text.hpp"
#include "commands.hpp"
#include "flags.hpp"
#include "inputs.hpp"
#include "pase/answers.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "plan_text.hpp"
#include "report.hpp"

namespace pase_cli {

namespace {

// Prints the request's progress (pase::Progress: one fraction that never goes
// back, its phase and the time left) on stderr for plans that run longer
// than a second: "planning: 42%, search 3 under the memory cap, about 12 s
// left". On a terminal the line is redrawn in place, at most twice a
// second, and erased at the end. Elsewhere (a log) a line is written when a
// phase of the request begins (its first part, before ": ", e.g. "full
// recomputation of the first 12 blocks"), if the bar moved 10 points or 30
// seconds passed since the line before: a log of a plan of a hundred
// searches reads a dozen lines, one per phase at most.
class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(isatty(fileno(stderr)) != 0) {}

  void operator()(const pase::Progress& p) {
    if (p.fraction >= 1) {
      finish();
      return;
    }
    // A note on the whole request (a long search ahead): once, at once.
    if (!p.note.empty() && !noted_) {
      if (printed_ && tty_) {
        std::fputs("\r\033[K", stderr);
        printed_ = false;
      }
      std::fprintf(stderr, "pase: note: %s\n", p.note.c_str());
      std::fflush(stderr);
      noted_ = true;
    }
    const Clock::time_point now = Clock::now();
    if (now - start_ < std::chrono::seconds(1)) return;
    if (tty_ ? printed_ && now - last_ < std::chrono::milliseconds(500) : !log_now(p, now)) return;
    std::string line = "planning: " + std::to_string(static_cast<int>(100 * p.fraction)) + "%";
    if (!p.phase.empty()) line += ", " + p.phase;
    if (p.gap >= 0) line += ", gap " + percent(p.gap, 1);
    if (p.seconds_left >= 0) line += ", " + duration_text(p.seconds_left) + " left";
    std::fprintf(stderr, "%s%s%s", tty_ ? "\r\033[K" : "", line.c_str(), tty_ ? "" : "\n");
    std::fflush(stderr);
    printed_ = true;
    last_ = now;
    last_fraction_ = p.fraction;
  }

  // Erases the redrawn line; also called when the plan stops early (error).
  void finish() {
    if (printed_ && tty_) std::fputs("\r\033[K", stderr);
    printed_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;

  // "about 8 s", "about 3 min", "under a second": whole units, as a rough
  // estimate reads.
  static std::string duration_text(double seconds) {
    if (seconds < 1) return "under a second";
    if (seconds < 90) return "about " + std::to_string(static_cast<int>(seconds + 0.5)) + " s";
    if (seconds < 5400)
      return "about " + std::to_string(static_cast<int>(seconds / 60 + 0.5)) + " min";
    return "about " + std::to_string(static_cast<int>(seconds / 3600 + 0.5)) + " h";
  }

  // Whether a log gets a line for `p`: the first report of a phase not
  // logged yet, 10 points or 30 s after the line before.
  bool log_now(const pase::Progress& p, Clock::time_point now) {
    const std::string phase = p.phase.substr(0, p.phase.find(": "));
    if (printed_ && p.fraction < last_fraction_ + 0.1 && now - last_ < std::chrono::seconds(30))
      return false;
    return logged_.insert(phase).second;
  }

  bool tty_;
  bool printed_ = false;          // a line stands on the terminal, or one was logged
  bool noted_ = false;            // the request's note is printed
  double last_fraction_ = 0;      // the bar at the last line
  std::set<std::string> logged_;  // the phases with a line in the log
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_;
};

// The two answers, as text or JSON, or an export (finish_planning()).
int finish_answers(const Flags& flags, const Args& args, const pase::PlanAnswers& a,
                   bool zero_searched, bool json) {
  const PlanSource source = a.layout_wins ? PlanSource::kEvaluated : PlanSource::kSearched;
  const std::string out =
      json ? pase::plan_answers_to_json(a, zero_searched)
           : answers_text(a) +
                 plan_text(a.per_layer.graph, a.cluster, a.per_layer.plan, source,
                           &a.per_layer.pipeline) +
                 (a.layout_wins ? std::string() : search_text(a.per_layer.plan.search));
  return finish_planning(flags, args,
                         pase::PlanView{&a.graph, &a.per_layer.graph, &a.cluster, &a.per_layer.plan,
                                        &a.per_layer.pipeline},
                         out, json, &a);
}

}  // namespace

std::string plan_usage() {
  return "usage: pase plan (--model NAME | --graph FILE [--dim NAME=SIZE ...])\n"
         "                 [--batch B] [--seq S] [options]\n\n"
         "Finds the per-layer parallelization of least cost (the PaSE search). For a\n"
         "language model under the practice model (a preset), first the best layout\n"
         "Megatron-LM and torchtitan run ('pase layouts'), then the per-layer plan\n"
         "starting from it, with ZeRO (unless --zero) and the micro-batches (unless\n"
         "--microbatches or --stages) searched too.\n\n" +
         std::string(kGraphHelp) + std::string(kClusterHelp) + std::string(kMemoryHelp) +
         std::string(kHeadroomHelp) + std::string(kTrainingHelp) +
         "  --order ORDER       vertex order: genseq (default), bfs, mintable\n"
         "  --max-memory SIZE   limit for the search tables, the planner's own memory\n"
         "                      (default 4GiB; 0: none); bytes or e.g. 512M, 4GiB, 2GB\n"
         "  --search MODE       auto (default: exact when its tables fit --max-memory,\n"
         "                      else bounded), exact (refuse instead), or bounded\n"
         "                      (rounds of the exact search over parts of the graph,\n"
         "                      with a proven lower bound and the gap to it)\n" +
         std::string(kThreadsHelp) + std::string(kTimeLimitHelp) + std::string(kPipelineHelp) +
         "  --compose WHEN      auto (default), on or off: a language model's stage\n"
         "                      plans from the composition of its repeated blocks\n"
         "                      (auto: where it is estimated cheaper than a search\n"
         "                      per range; the same plans either way)\n" +
         "  --tokens T          a training budget (15T, 300B, 2e12): the days to train\n"
         "  --gpu-hour-price USD\n"
         "                      with --tokens, the cost (default: the preset's price)\n"
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
                                           {"--time-limit", true},
                                           {"--max-gap", true},
                                           {"--format", true},
                                           {"--stages", true},
                                           {"--microbatches", true},
                                           {"--schedule", true},
                                           {"--compose", true},
                                           {"--emit", true},
                                           {"--tokens", true},
                                           {"--gpu-hour-price", true},
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
  if (auto message = time_limit_from_flags(flags, options.time_limit_s))
    return usage_error("plan", *message);
  if (auto message = max_gap_from_flags(flags, options.max_gap))
    return usage_error("plan", *message);
  std::optional<pase::PipelineOptions> pipeline;
  if (auto message = pipeline_from_flags(flags, pipeline)) return usage_error("plan", *message);
  pase::Compose compose = pase::Compose::kAuto;
  if (std::optional<std::string> c = flags.get("--compose")) {
    if (*c == "on") {
      compose = pase::Compose::kOn;
    } else if (*c == "off") {
      compose = pase::Compose::kOff;
    } else if (*c != "auto") {
      return usage_error("plan", "--compose: '" + *c + "' is not auto, on or off");
    }
    if (pipeline) pipeline->compose = compose;
  }
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
  ProgressPrinter progress;
  options.on_progress = [&progress](const pase::Progress& p) { progress(p); };
  // A language model under the practice model: the best layout first, then
  // the per-layer plan that starts from it (core/docs/layouts.md, "Both
  // answers").
  if (pase::has_layout_answers(*graph, cluster)) {
    pase::AnswerOptions a;
    if (pipeline) a.pipeline = *pipeline;
    a.pipeline.compose = compose;
    a.zero_auto = !flags.has("--zero");
    if (source.vocab_padding > 0) a.vocab_multiple = source.vocab_padding;
    if (auto message = budget_from_flags(flags, a.layouts.tokens, a.layouts.gpu_hour_price))
      return usage_error("plan", *message);
    pase::Result<pase::PlanAnswers> answers = pase::plan_answers(*graph, cluster, a, options);
    progress.finish();
    if (!answers) return input_error(with_memory_hint(answers.error(), cluster));
    return finish_answers(flags, args, *answers, a.zero_auto, json);
  }
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
