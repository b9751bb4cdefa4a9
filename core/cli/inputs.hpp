// What the subcommands read: files (or standard input), and the graph,
// cluster and output format that the flags ask for. A graph file is a
// pase-graph/1 document, an ONNX model or a Hugging Face config.json, told
// apart by content whatever its name: ONNX by its first bytes
// (looks_like_onnx() of import.hpp), a config as a JSON object with a string
// "model_type" and no "layers" (looks_like_llm_config() of llm.hpp), a
// document otherwise. Values that do not parse
// are usage errors (exit 2); values that parse but make no sense are input
// errors (exit 1), both returned as a Failure (report.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flags.hpp"
#include "pase/graph.hpp"
#include "pase/import.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "report.hpp"

namespace pase_cli {

// How a file argument is named in messages ("-" is standard input).
std::string display_name(const std::string& path);

// An error found in a file: the file name leads, as in a compiler message.
pase::Error in_file(const std::string& path, pase::Error error);

// Reads a file ("-": standard input) whole. Stops a little past the document
// limit: the parser then reports the size instead of the CLI filling memory.
pase::Result<std::string> read_file(const std::string& path);

// Writes `text` to `path`, replacing it; false on failure (errno says why).
bool write_file(const std::string& path, std::string_view text);

// Writes a command's document to `path` (--output) or standard output: the
// exit status, a failure reported on stderr.
int write_output(const std::optional<std::string>& path, std::string_view text);

// Which graph the flags ask for; checked for usage before anything is loaded.
struct GraphSource {
  std::string model;
  int64_t batch = 0;  // 0: the model's default (an ONNX model: its own leading size)
  int64_t seq = 0;    // 0: the model's default; a built-in or a config only
  std::string path;
  std::vector<std::pair<std::string, int64_t>> dims;  // --dim NAME=SIZE, ONNX only
  // --vocab-padding: a language model's vocabulary padded to a multiple of
  // vocab_padding x vocab_tp (llm.hpp); 0: kLlmVocabMultiple, 1: exact
  // (whatever the tp). vocab_tp is a layout's tp (eval --layout), as
  // Megatron-LM multiplies by it.
  int64_t vocab_padding = 0;
  int64_t vocab_tp = 1;
  // The multiple the graph's vocabulary is padded to.
  int64_t vocab_multiple() const;
};

// --model / --batch / --seq / --graph / --dim / --vocab-padding
// (kGraphFlags) into `source`.
// Usage errors: --batch or --seq with a --graph that is a pase-graph/1
// document, --dim with anything but an ONNX --graph, --vocab-padding with
// anything but --model or a config (the file is read to tell; standard
// input is checked when it is read, an input error then).
// --seq with a model that has no sequence (a CNN, an ONNX model) is the
// core's input error at "seq", found when the graph is loaded.
std::optional<Failure> graph_source_from_flags(const Flags& flags, GraphSource& source);

// A positive integer flag (--batch, --seq) into `value`, left alone when the
// flag is absent: not an integer is a usage error naming the flag, an
// integer below 1 an input error at `where` ("batch", "seq").
std::optional<Failure> positive_from_flag(const Flags& flags, std::string_view name,
                                          const std::string& where, int64_t& value);

// The repeatable --dim NAME=SIZE into `dims`: "NAME=SIZE" with an integer
// SIZE, each name once, else a usage error naming --dim; a SIZE below 1 is
// an input error at "dims.NAME".
std::optional<Failure> dims_from_flags(const Flags& flags,
                                       std::vector<std::pair<std::string, int64_t>>& dims);

// The cluster and training flags (kClusterFlags) into `cluster`: --preset
// fills tflops, both bandwidths, the node size and the memory
// (apply_preset()), and every value given explicitly overrides it. Values
// that do not parse are usage errors; an unknown preset is an input error
// at "preset" listing the known ids; values that parse but make no machine
// (--procs 0, --flops -1, --gpus-per-node without --intra-bandwidth, --zero
// 4) are input errors found by check_cluster(), at its field
// ("cluster.intra_node_gbps", "training.zero").
std::optional<Failure> cluster_from_flags(const Flags& flags, pase::Cluster& cluster);

// plan()'s error when no strategy fits the memory cap (at
// "cluster.memory_gib", naming the least memory reachable) with the flags
// that can lower that: "; more devices (--procs) or a higher ZeRO stage
// (--zero) can lower it". Other errors unchanged.
pase::Error with_memory_hint(pase::Error error, const pase::Cluster& cluster);

// --format: "text" (the default) or "json".
std::optional<Failure> format_from_flags(const Flags& flags, bool& json);

// True when the file `path` (not standard input) is a Hugging Face config.
bool is_config_file(const std::string& path);

// The default name of the graph of a Hugging Face config read from `path`:
// the name of the folder of a file called config.json (Hugging Face's own
// layout: "Meta-Llama-3-8B/config.json"), the stem of another file; empty
// (then the config's model_type) for standard input or a config.json with
// no folder name.
std::string config_graph_name(const std::string& path);

// A model file to import ("-": standard input, up to kMaxDocumentBytes): an
// ONNX model or a Hugging Face config, told apart by content, imported with
// `options` (import.hpp, llm.hpp); errors are reported under the file name.
// An empty options.name is the file's stem (an ONNX model) or
// config_graph_name(). A --dim that names no dynamic dimension of an ONNX
// model is an error at "dims.NAME"; a --seq for one at "seq".
pase::Result<pase::GraphSpec> import_file(const std::string& path, pase::ImportOptions options);

// The graph of `source`: a built-in model, or a file (a pase-graph/1
// document, an ONNX model or a Hugging Face config) whose errors are
// reported under the file name. A document without a name, and an ONNX
// model, are named after the file's stem, a config by config_graph_name().
pase::Result<pase::Graph> load_source(const GraphSource& source);

// --tokens (a count: 15T, 300B, 2e12) and --gpu-hour-price (USD; by
// default the --preset's gpu_hour_usd): a training budget's days and cost
// (pase layouts, pase plan). A usage message for a bad value.
std::optional<std::string> budget_from_flags(const Flags& flags, double& tokens,
                                             double& gpu_hour_price);

}  // namespace pase_cli
