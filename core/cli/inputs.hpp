// What the subcommands read: files (or standard input), and the graph,
// cluster and output format that the flags ask for. Values that do not parse
// are usage errors (exit 2); values that parse but make no sense are input
// errors (exit 1), both returned as a Failure (report.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "flags.hpp"
#include "pase/graph.hpp"
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

// Which graph the flags ask for; checked for usage before anything is loaded.
struct GraphSource {
  std::string model;
  int64_t batch = 0;  // 0: the model's default
  std::string path;
};

// --model / --batch / --graph (kGraphFlags) into `source`.
std::optional<Failure> graph_source_from_flags(const Flags& flags, GraphSource& source);

// --procs / --flops / --bandwidth (kClusterFlags) into `cluster`. Values that
// do not parse are usage errors; values that parse but make no machine
// (--procs 0, --flops -1) are input errors found by check_cluster().
std::optional<Failure> cluster_from_flags(const Flags& flags, pase::Cluster& cluster);

// --format: "text" (the default) or "json".
std::optional<Failure> format_from_flags(const Flags& flags, bool& json);

// The graph of `source`: a built-in model, or a file whose errors are
// reported under the file name. A document without a name is named after the
// file.
pase::Result<pase::Graph> load_source(const GraphSource& source);

}  // namespace pase_cli
