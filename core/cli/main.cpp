// pase: the command-line front end of the planner.
//
//   pase plan (--model NAME | --graph FILE [--dim NAME=SIZE]) [--batch B] [--seq S] ...
//   pase eval (--model NAME | --graph FILE ...) [--batch B] [--seq S] --strategy FILE ...
//   pase export --model NAME [--batch B] [--seq S] [--output FILE]
//   pase import FILE [--dim NAME=SIZE ...] [--batch B] [--seq S] [--output FILE]
//   pase models [--format text|json]
//   pase presets [--format text|json]
//   pase compare ...  /  pase bench ...
//
// Flags become the same Graph / Cluster / PlanOptions the library and the
// WebAssembly module use; every step goes through the public API and the
// output is either the plan-result document (--format json) or a table.
//
// Exit status: 0 success, 1 bad input (unreadable file, invalid graph or
// cluster, plan refused), 2 usage error (unknown flag, missing or malformed
// value).
//
// This file only dispatches: each subcommand is a function in its own file
// (commands.hpp) plus one entry of the table below.

#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "flags.hpp"
#include "format.hpp"
#include "pase/version.hpp"
#include "report.hpp"

namespace {

using namespace pase_cli;

struct Command {
  std::string_view name;
  std::string_view summary;
  std::string usage;  // the text of 'pase <name> --help'
  int (*run)(const Args&);
};

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"plan", "find the parallelization strategy of least cost", plan_usage(), run_plan},
      {"eval", "the cost of a given strategy", eval_usage(), run_eval},
      {"layouts", "rank every layout Megatron-LM and torchtitan run, fastest first",
       layouts_usage(), run_layouts},
      {"emit", "write a saved plan as a JAX program, Megatron-LM arguments or torchtitan TOML",
       emit_usage(), run_emit},
      {"export", "write a built-in network as a pase-graph/1 document", export_usage(), run_export},
      {"import", "translate an ONNX model or a config.json to a pase-graph/1 document",
       import_usage(), run_import},
      {"models", "list the built-in networks", models_usage(), run_models},
      {"presets", "list the GPU presets of --preset", presets_usage(), run_presets},
      {"compare", "compare the plan with data parallelism, expert strategies and MCMC",
       compare_usage(), run_compare},
      {"bench", "time the search over a grid of networks and device counts", bench_usage(),
       run_bench},
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
