// pase: the command-line front end of the planner.
//
//   pase plan (--model NAME [--batch B] | --graph FILE) [cluster flags] ...
//   pase eval (--model NAME [--batch B] | --graph FILE) --strategy FILE ...
//   pase export --model NAME [--batch B] [--output FILE]
//   pase models [--format text|json]
//
// Flags become the same Graph / Cluster / PlanOptions the library and the
// WebAssembly module use; every step goes through the public API and the
// output is either the plan-result document (--format json) or a table.
//
// Exit status: 0 success, 1 bad input (unreadable file, invalid graph or
// cluster, plan refused), 2 usage error (unknown flag, missing or malformed
// value).
//
// Subcommands are entries of kCommands; a new one (bench, compare) is a
// function `int run_x(const Args&)` in its own file plus one table entry.

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "cli_util.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/models.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "pase/version.hpp"

// Subcommands in their own files.
namespace pase_cli {
int run_compare(const Args& args);  // compare.cpp
std::string compare_usage();
int run_bench(const Args& args);  // bench.cpp
std::string bench_usage();
}  // namespace pase_cli

namespace {

using namespace pase_cli;

// ---- Progress ---------------------------------------------------------------------------

// Prints "planning: 120/245 vertices (48%)" on stderr for plans that run
// longer than a second, at most twice a second. On a terminal the line is
// redrawn in place and erased at the end; elsewhere (a log) each report is a line.
class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(isatty(fileno(stderr)) != 0) {}

  void operator()(const pase::Progress& p) {
    if (p.fraction >= 1) {
      finish();
      return;
    }
    const Clock::time_point now = Clock::now();
    if (now - start_ < std::chrono::seconds(1)) return;
    if (printed_ && now - last_ < std::chrono::milliseconds(500)) return;
    std::fprintf(stderr, "%splanning: %d/%d vertices (%.0f%%)%s", tty_ ? "\r\033[K" : "",
                 p.vertices_done, p.vertices_total, 100 * p.fraction, tty_ ? "" : "\n");
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
  bool printed_ = false;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_;
};

// ---- Subcommands ----------------------------------------------------------------------------

int run_plan(const Args& args) {
  Flags flags;
  const auto specs = join({kGraphFlags,
                           kClusterFlags,
                           {{"--order", true},
                            {"--max-memory", true},
                            {"--pow2-only", false},
                            {"--all-devices", false},
                            {"--format", true}}});
  if (auto message = parse_flags(args, specs, flags)) return usage_error("plan", *message);

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
  options.enumeration.pow2_only = flags.has("--pow2-only");
  options.enumeration.all_devices = flags.has("--all-devices");
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
  pase::Result<pase::Plan> plan = pase::plan(*graph, cluster, options);
  progress.finish();
  if (!plan) return input_error(plan.error());

  const std::string out = json ? pase::plan_to_json(*graph, cluster, *plan)
                               : plan_text(*graph, cluster, *plan) + search_text(plan->search);
  if (!write_stdout(out)) return input_error(pase::Error{"cannot write the output", ""});
  return kExitOk;
}

int run_eval(const Args& args) {
  Flags flags;
  const auto specs = join({kGraphFlags, kClusterFlags, {{"--strategy", true}, {"--format", true}}});
  if (auto message = parse_flags(args, specs, flags)) return usage_error("eval", *message);
  bool json = false;
  GraphSource source;
  pase::Cluster cluster;
  if (auto failure = format_from_flags(flags, json)) return failure->report("eval");
  if (auto failure = graph_source_from_flags(flags, source)) return failure->report("eval");
  std::optional<std::string> strategy_path = flags.get("--strategy");
  if (!strategy_path) return usage_error("eval", "missing --strategy FILE");
  if (source.path == "-" && *strategy_path == "-") {
    return usage_error("eval", "--graph and --strategy cannot both read standard input");
  }
  if (auto failure = cluster_from_flags(flags, cluster)) return failure->report("eval");

  pase::Result<pase::Graph> graph = load_source(source);
  if (!graph) return input_error(graph.error());
  pase::Result<std::string> text = read_file(*strategy_path);
  if (!text) return input_error(text.error());
  pase::Result<pase::Strategy> strategy = pase::parse_strategy(*text);
  if (!strategy) return input_error(in_file(*strategy_path, strategy.error()));
  pase::Result<pase::Plan> result = pase::evaluate(*graph, cluster, *strategy);
  if (!result) return input_error(in_file(*strategy_path, result.error()));

  const std::string out = json ? pase::plan_to_json(*graph, cluster, *result)
                               : plan_text(*graph, cluster, *result) + pad_right("strategy", 17) +
                                     display_name(*strategy_path) + "\n";
  if (!write_stdout(out)) return input_error(pase::Error{"cannot write the output", ""});
  return kExitOk;
}

int run_export(const Args& args) {
  Flags flags;
  const std::vector<FlagSpec> specs = {{"--model", true}, {"--batch", true}, {"--output", true}};
  if (auto message = parse_flags(args, specs, flags)) return usage_error("export", *message);
  if (!flags.has("--model")) return usage_error("export", "missing --model NAME");
  GraphSource source;
  if (auto failure = graph_source_from_flags(flags, source)) return failure->report("export");

  pase::Result<pase::GraphSpec> spec = pase::model_spec(source.model, source.batch);
  if (!spec) return input_error(spec.error());
  const std::string text = pase::write_graph(*spec);
  if (std::optional<std::string> output = flags.get("--output")) {
    if (!write_file(*output, text)) {
      return input_error(
          pase::Error{std::string("cannot write: ") + std::strerror(errno), *output});
    }
  } else if (!write_stdout(text)) {
    return input_error(pase::Error{"cannot write the output", ""});
  }
  return kExitOk;
}

int run_models(const Args& args) {
  Flags flags;
  if (auto message = parse_flags(args, {{"--format", true}}, flags)) {
    return usage_error("models", *message);
  }
  bool json = false;
  if (auto failure = format_from_flags(flags, json)) return failure->report("models");
  if (json) return write_stdout(pase::models_to_json()) ? kExitOk : kExitError;

  std::string out = pad_right("name", 12) + pad_left("vertices", 9) + pad_left("edges", 7) +
                    pad_left("batch", 7) + pad_left("cutoff", 8) + "  description\n";
  for (const pase::ModelInfo& info : pase::list_models()) {
    pase::Result<pase::Graph> graph = pase::build_model(info.name);
    const std::string vertices = graph ? std::to_string(graph->vertices.size()) : "?";
    const std::string edges = graph ? std::to_string(graph->edges.size()) : "?";
    out += pad_right(info.name, 12) + pad_left(vertices, 9) + pad_left(edges, 7) +
           pad_left(std::to_string(info.default_batch), 7) +
           pad_left(std::to_string(info.cutoff), 8) + "  " + info.description + "\n";
  }
  return write_stdout(out) ? kExitOk : kExitError;
}

// ---- Dispatch ---------------------------------------------------------------------------------

constexpr std::string_view kGraphHelp =
    "  --model NAME        a built-in network (see 'pase models')\n"
    "  --batch B           batch size of --model (default: the model's)\n"
    "  --graph FILE        a pase-graph/1 document ('-': standard input)\n";
constexpr std::string_view kClusterHelp =
    "  --procs P           number of devices (default 8)\n"
    "  --flops TF          peak TFLOP/s of one device (default 10)\n"
    "  --bandwidth GBS     link bandwidth in GB/s (default 16)\n";

struct Command {
  std::string_view name;
  std::string_view summary;
  std::string usage;  // the text of 'pase <name> --help'
  int (*run)(const Args&);
};

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"plan", "find the parallelization strategy of least cost",
       "usage: pase plan (--model NAME [--batch B] | --graph FILE) [options]\n\n"
       "Finds the per-layer parallelization of least cost (the PaSE search).\n\n" +
           std::string(kGraphHelp) + std::string(kClusterHelp) +
           "  --order ORDER       vertex order: genseq (default), bfs, mintable\n"
           "  --max-memory SIZE   limit for the search tables (default 4GiB; 0: none);\n"
           "                      bytes or e.g. 512M, 4GiB, 2GB\n"
           "  --pow2-only         only power-of-two splits\n"
           "  --all-devices       only configurations that use every device\n"
           "  --format FORMAT     text (default) or json (the plan-result document)\n",
       run_plan},
      {"eval", "the cost of a given strategy",
       "usage: pase eval (--model NAME [--batch B] | --graph FILE) --strategy FILE [options]\n\n"
       "Evaluates a strategy: a JSON list of configurations in vertex order, or a\n"
       "plan-result document (as written by 'pase plan --format json').\n\n" +
           std::string(kGraphHelp) + std::string(kClusterHelp) +
           "  --strategy FILE     the strategy ('-': standard input)\n"
           "  --format FORMAT     text (default) or json\n",
       run_eval},
      {"export", "write a built-in network as a pase-graph/1 document",
       "usage: pase export --model NAME [--batch B] [--output FILE]\n\n"
       "Writes the network as a pase-graph/1 document (standard output by default);\n"
       "planning the file gives exactly the built-in result.\n\n"
       "  --model NAME        a built-in network (see 'pase models')\n"
       "  --batch B           batch size (default: the model's)\n"
       "  --output FILE       write to FILE instead of standard output\n",
       run_export},
      {"models", "list the built-in networks",
       "usage: pase models [--format text|json]\n\n"
       "Lists the built-in networks with their vertex and edge counts.\n",
       run_models},
      {"compare", "compare the plan with data parallelism, expert strategies and MCMC",
       pase_cli::compare_usage(), pase_cli::run_compare},
      {"bench", "time the search over a grid of networks and device counts",
       pase_cli::bench_usage(), pase_cli::run_bench},
  };
  return kCommands;
}

std::string general_usage() {
  std::string text =
      "usage: pase <command> [options]\n\n"
      "PaSE Planner: parallelization strategies for DNN training.\n\ncommands:\n";
  for (const Command& c : commands()) {
    text += "  " + pad_right(std::string(c.name), 10) + std::string(c.summary) + "\n";
  }
  text +=
      "\n  pase <command> --help   options of a command\n"
      "  pase --version          the version\n";
  return text;
}

const Command* find_command(std::string_view name) {
  for (const Command& c : commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

int run(int argc, char** argv) {
  Args args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(general_usage().c_str(), stderr);
    return kExitUsage;
  }
  const std::string_view first = args[0];
  if (first == "--help" || first == "-h" || (first == "help" && args.size() == 1)) {
    return write_stdout(general_usage()) ? kExitOk : kExitError;
  }
  if (first == "--version") {
    return write_stdout(std::string("pase ") + pase::version() + "\n") ? kExitOk : kExitError;
  }
  if (first == "help") {
    const Command* command = find_command(args[1]);
    if (command == nullptr) {
      return usage_error("", "unknown command '" + std::string(args[1]) + "'");
    }
    return write_stdout(command->usage) ? kExitOk : kExitError;
  }
  const Command* command = find_command(first);
  if (command == nullptr) {
    return usage_error("", first.substr(0, 1) == "-"
                               ? "unknown option '" + std::string(first) + "'"
                               : "unknown command '" + std::string(first) + "'");
  }
  const Args rest(args.begin() + 1, args.end());
  // --help anywhere wins over other mistakes on the line.
  if (std::find_if(rest.begin(), rest.end(),
                   [](std::string_view a) { return a == "--help" || a == "-h"; }) != rest.end()) {
    return write_stdout(command->usage) ? kExitOk : kExitError;
  }
  return command->run(rest);
}

}  // namespace

int main(int argc, char** argv) {
  // The library reports bad input as values; this only catches what cannot
  // be, such as running out of memory in a huge search.
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fputs("pase: error: out of memory\n", stderr);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pase: error: internal error: %s\n", e.what());
  } catch (...) {
    std::fputs("pase: error: internal error\n", stderr);
  }
  return kExitError;
}
