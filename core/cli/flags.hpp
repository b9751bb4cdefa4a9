// Flag parsing of the pase subcommands: `--name value`, `--name=value` and
// switches, numbers, sizes and lists, and the flag groups several commands
// share.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pase/pipeline.hpp"

namespace pase_cli {

using Args = std::vector<std::string_view>;

struct FlagSpec {
  std::string_view name;  // "--procs"
  bool takes_value;
  bool repeatable = false;  // may be given several times ("--dim a=1 --dim b=2")
};

// The flags given to a subcommand, by name; switches map to "".
class Flags {
 public:
  bool has(std::string_view name) const;
  // The value (the last one of a repeatable flag).
  std::optional<std::string> get(std::string_view name) const;
  // Every value of a repeatable flag, in command-line order.
  std::vector<std::string> all(std::string_view name) const;
  // Sets the one value of `name`; add() appends one more.
  void set(std::string_view name, std::string value);
  void add(std::string_view name, std::string value);

 private:
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
};

// Parses `--name value`, `--name=value` and switches. Returns an error message
// for anything not in `specs`, a missing value or a repeated flag that is not
// repeatable. Other arguments are errors too, unless `positional` collects
// them (a file name; "-" for standard input).
std::optional<std::string> parse_flags(const Args& args, const std::vector<FlagSpec>& specs,
                                       Flags& flags,
                                       std::vector<std::string>* positional = nullptr);

// The whole text as a number (std::from_chars), or nullopt.
std::optional<int64_t> parse_int(std::string_view text);
std::optional<double> parse_double(std::string_view text);

// A byte count: plain bytes, or a number with K/M/G/T (powers of 1024, also
// written KiB/MiB/GiB/TiB) or KB/MB/GB/TB (powers of 1000). "0" means no limit.
// Nullopt for anything else or a count of 2^64 bytes or more.
std::optional<uint64_t> parse_size(std::string_view text);

// "4,8,16" -> {"4", "8", "16"}; empty items are kept (and rejected by parsers).
std::vector<std::string> split_list(std::string_view text);

// ---- Shared flag groups ------------------------------------------------------------

// --model NAME, --batch B, --seq S, --graph FILE, --dim NAME=SIZE,
// --vocab-padding M (inputs.hpp: graph_source_from_flags()).
extern const std::vector<FlagSpec> kGraphFlags;
// --procs P, --preset NAME, --flops TF, --bandwidth GBS, --gpus-per-node G,
// --intra-bandwidth GBS, --memory GIB, --headroom F and the training's --zero Z,
// --param-bytes N, --grad-bytes N, --optimizer-bytes N, --activation-bytes N
// (inputs.hpp: cluster_from_flags()).
extern const std::vector<FlagSpec> kClusterFlags;

// --threads N: the dynamic program's threads (PlanOptions::threads), of
// plan, compare and bench. threads_from_flags() sets `threads` to N, or to
// every core (pase::default_threads()) when the flag is absent; returns an
// error message for anything but a whole number from 1 to kMaxThreads.
constexpr int kMaxThreads = 256;
std::optional<std::string> threads_from_flags(const Flags& flags, int& threads);
constexpr std::string_view kThreadsHelp =
    "  --threads N         threads for the search (default: every core); the plan\n"
    "                      does not depend on it\n";

// --time-limit S: the seconds the plan may run (PlanOptions::time_limit_s;
// core/docs/pipeline.md, "A time limit"), of plan; an error message for
// anything but a number of seconds above 0 and at most a year.
std::optional<std::string> time_limit_from_flags(const Flags& flags, double& seconds);
// --max-gap G: the proven gap a plan may stop at, a fraction (0.01) or a
// percentage (1%); PlanOptions::max_gap.
std::optional<std::string> max_gap_from_flags(const Flags& flags, double& gap);
constexpr std::string_view kTimeLimitHelp =
    "  --time-limit S      stop the search after S seconds with the best plan found\n"
    "                      and its proven gap (the best layout stands until a\n"
    "                      per-layer plan beats it)\n"
    "  --max-gap G         accept a plan proven at most G slower than the best\n"
    "                      possible (0.01 or 1%; default 0): the stage counts and\n"
    "                      ZeRO stages whose lower bounds are that close go\n"
    "                      unsearched\n";

// --stages S|auto --microbatches M|auto --schedule 1f1b|gpipe
// (core/docs/pipeline.md), of plan and compare: `pipeline` is set when any of
// them is given (the absent ones: 1, 1, 1f1b); an error message for a bad
// value.
std::optional<std::string> pipeline_from_flags(const Flags& flags,
                                               std::optional<pase::PipelineOptions>& pipeline);
constexpr std::string_view kPipelineHelp =
    "  --stages S          pipeline stages: S divides the devices, or auto\n"
    "  --microbatches M    micro-batches per step: M divides the batch, or auto\n"
    "                      (1 to 64)\n"
    "  --schedule NAME     1f1b (default) or gpipe: how many micro-batches of\n"
    "                      activations a stage holds\n";

// Their lines in the usage texts of plan and eval.
constexpr std::string_view kGraphHelp =
    "  --model NAME        a built-in network (see 'pase models')\n"
    "  --graph FILE        a pase-graph/1 document, an ONNX model or a Hugging Face\n"
    "                      config.json, told apart by content ('-': standard input)\n"
    "  --batch B           batch size of --model, an ONNX model or a config (default:\n"
    "                      the model's)\n"
    "  --seq S             sequence length of --model or a config (default: the\n"
    "                      model's; none for the CNNs)\n"
    "  --dim NAME=SIZE     size of a named (dynamic) dimension of an ONNX --graph;\n"
    "                      repeatable\n"
    "  --vocab-padding M   a language model's vocabulary (--model or a config) is\n"
    "                      padded to a multiple of M (x tp with --layout), as\n"
    "                      Megatron-LM's --make-vocab-size-divisible-by (default\n"
    "                      128; 1: the exact vocabulary, with --layout too)\n";
// The cluster's lines but --memory, which each command words itself
// (kMemoryHelp: plan and compare), then the training's (kTrainingHelp).
constexpr std::string_view kClusterHelp =
    "  --procs P           number of devices (default 8)\n"
    "  --preset NAME       a GPU's TFLOP/s, bandwidths, node size and memory (see\n"
    "                      'pase presets'); the flags below override it\n"
    "  --flops TF          peak TFLOP/s of one device (default 10)\n"
    "  --bandwidth GBS     link bandwidth in GB/s (default 16); with nodes, the\n"
    "                      bandwidth between nodes\n"
    "  --gpus-per-node G   devices per node, with --intra-bandwidth (default: one\n"
    "                      flat network)\n"
    "  --intra-bandwidth GBS\n"
    "                      bandwidth inside a node in GB/s\n"
    "  --cost-model M      paper (the PaSE paper's model; the default on a flat\n"
    "                      network) or practice (seconds as training runs spend them;\n"
    "                      the default with --preset or --gpus-per-node; needs a\n"
    "                      preset or --memory-bandwidth; core/docs/practice-model.md)\n"
    "  --memory-bandwidth GBS\n"
    "                      memory bandwidth of one device in GB/s (practice model)\n";
constexpr std::string_view kMemoryHelp =
    "  --memory GIB        memory of one device in GiB: the plan is the cheapest\n"
    "                      strategy found that fits (default: no limit; 0: none)\n";
// --headroom's line, after --memory's in plan and eval (compare, whose
// columns are wider, words its own).
constexpr std::string_view kHeadroomHelp =
    "  --headroom F        with --memory, the share of it a plan leaves free under\n"
    "                      the practice model, besides the framework's 3 GiB\n"
    "                      (default 0.1: 10%, the margin runs launch with; 0: none)\n";
constexpr std::string_view kTrainingHelp =
    "  --zero Z            ZeRO stage, 0 to 3 (default 0)\n"
    "  --param-bytes N     bytes per weight element (default 2); likewise\n"
    "                      --grad-bytes (2), --optimizer-bytes (12) and\n"
    "                      --activation-bytes (2, per saved activation element)\n"
    "  --recompute R       activation recomputation of the decoder blocks (practice\n"
    "                      model): auto (the default: chosen per block under the\n"
    "                      memory cap), none, selective (attention) or full\n";

// The groups one after the other.
std::vector<FlagSpec> join(std::initializer_list<std::vector<FlagSpec>> groups);

// parse_flags() for a command that plans a graph on a cluster: the graph and
// cluster flags plus the command's own `extra` ones.
std::optional<std::string> parse_planning_flags(const Args& args, std::vector<FlagSpec> extra,
                                                Flags& flags);

}  // namespace pase_cli
