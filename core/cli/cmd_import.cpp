// pase import: an ONNX model as the pase-graph/1 document it translates to
// (import.hpp, core/docs/import.md), to read, edit or plan later.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "flags.hpp"
#include "inputs.hpp"
#include "pase/graph.hpp"
#include "pase/import.hpp"
#include "pase/result.hpp"
#include "report.hpp"

namespace pase_cli {

std::string import_usage() {
  return "usage: pase import FILE [--dim NAME=SIZE ...] [--batch B] [--output FILE]\n\n"
         "Translates an ONNX model (e.g. from torch.onnx.export) to a pase-graph/1\n"
         "document, written to standard output by default. Only the model's structure is\n"
         "read; the weights are skipped, so a file of any size imports quickly. Planning\n"
         "the document gives the result of planning the model ('pase plan --graph FILE'\n"
         "reads the model directly too).\n\n"
         "  FILE                the ONNX model ('-': standard input)\n"
         "  --dim NAME=SIZE     size of a named (dynamic) dimension of the model's inputs;\n"
         "                      repeatable\n"
         "  --batch B           the leading (batch) dimension of the first input, named or\n"
         "                      fixed in the file (default: the file's)\n"
         "  --output FILE       write to FILE instead of standard output\n";
}

int run_import(const Args& args) {
  Flags flags;
  std::vector<std::string> files;
  const std::vector<FlagSpec> specs = {
      {"--dim", true, true}, {"--batch", true}, {"--output", true}};
  if (auto message = parse_flags(args, specs, flags, &files)) {
    return usage_error("import", *message);
  }
  if (files.empty()) return usage_error("import", "missing the ONNX model FILE");
  if (files.size() > 1) return usage_error("import", "unexpected argument '" + files[1] + "'");

  pase::ImportOptions options;
  if (auto failure = dims_from_flags(flags, options.dims)) return failure->report("import");
  if (std::optional<std::string> batch = flags.get("--batch")) {
    std::optional<int64_t> n = parse_int(*batch);
    if (!n) return usage_error("import", "--batch: '" + *batch + "' is not an integer");
    if (*n <= 0) {
      return input_error(
          pase::Error{"must be a positive integer, not " + std::to_string(*n), "batch"});
    }
    options.batch = *n;
  }

  const std::string& path = files.front();
  pase::Result<pase::GraphSpec> spec = import_file(path, options);
  if (!spec) return input_error(spec.error());
  // The document is checked as loading it will check it: a translation the
  // planner refuses is reported here, not when the file is planned.
  pase::Result<pase::Graph> graph = pase::build_graph(*spec);
  if (!graph) return input_error(in_file(path, graph.error()));

  const std::string text = pase::write_graph(*spec);
  return write_output(flags.get("--output"), text);
}

}  // namespace pase_cli
