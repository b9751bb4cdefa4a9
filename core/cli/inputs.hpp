// What the subcommands read: files (or standard input), and the graph,
// cluster and output format that the flags ask for. A graph file is a
// pase-graph/1 document or an ONNX model, told apart by its first bytes
// (looks_like_onnx() of import.hpp), whatever its name. Values that do not parse
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
  std::string path;
  std::vector<std::pair<std::string, int64_t>> dims;  // --dim NAME=SIZE, ONNX only
};

// --model / --batch / --graph / --dim (kGraphFlags) into `source`. --batch
// and --dim with a --graph that is a pase-graph/1 document are usage errors
// (found by reading the file's first bytes; standard input is checked when
// it is read).
std::optional<Failure> graph_source_from_flags(const Flags& flags, GraphSource& source);

// The repeatable --dim NAME=SIZE into `dims`: "NAME=SIZE" with an integer
// SIZE, each name once, else a usage error naming --dim; a SIZE below 1 is
// an input error at "dims.NAME".
std::optional<Failure> dims_from_flags(const Flags& flags,
                                       std::vector<std::pair<std::string, int64_t>>& dims);

// --procs / --flops / --bandwidth (kClusterFlags) into `cluster`. Values that
// do not parse are usage errors; values that parse but make no machine
// (--procs 0, --flops -1) are input errors found by check_cluster().
std::optional<Failure> cluster_from_flags(const Flags& flags, pase::Cluster& cluster);

// --format: "text" (the default) or "json".
std::optional<Failure> format_from_flags(const Flags& flags, bool& json);

// An ONNX model ("-": standard input, up to kMaxDocumentBytes) imported with
// `options` (import.hpp); errors are reported under the file name. An empty
// options.name is the file's stem. A --dim that names no dynamic dimension
// of the model is an error at "dims.NAME".
pase::Result<pase::GraphSpec> import_file(const std::string& path, pase::ImportOptions options);

// The graph of `source`: a built-in model, or a file (a pase-graph/1
// document or an ONNX model) whose errors are reported under the file name.
// A document without a name, and an ONNX model, are named after the file.
pase::Result<pase::Graph> load_source(const GraphSource& source);

}  // namespace pase_cli
