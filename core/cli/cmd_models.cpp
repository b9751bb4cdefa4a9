// pase models: the built-in networks with their sizes, as a table or JSON.
#include <algorithm>
#include <cstdint>
#include <string>

#include "commands.hpp"
#include "flags.hpp"
#include "format.hpp"
#include "inputs.hpp"
#include "pase/graph.hpp"
#include "pase/json_api.hpp"
#include "pase/models.hpp"
#include "pase/result.hpp"
#include "report.hpp"

namespace pase_cli {

std::string models_usage() {
  return "usage: pase models [--format text|json]\n\n"
         "Lists the built-in networks with their vertex, edge and parameter counts.\n";
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
                    pad_left("parameters", 13) + pad_left("batch", 7) + pad_left("cutoff", 8) +
                    "  description\n";
  for (const pase::ModelInfo& info : pase::list_models()) {
    pase::Result<pase::Graph> graph = pase::build_model(info.name);
    const std::string vertices = graph ? std::to_string(graph->vertices.size()) : "?";
    const std::string edges = graph ? std::to_string(graph->edges.size()) : "?";
    const std::string parameters =
        graph ? grouped(static_cast<uint64_t>(std::max<int64_t>(graph->parameters, 0))) : "?";
    out += pad_right(info.name, 12) + pad_left(vertices, 9) + pad_left(edges, 7) +
           pad_left(parameters, 13) + pad_left(std::to_string(info.default_batch), 7) +
           pad_left(std::to_string(info.cutoff), 8) + "  " + info.description + "\n";
  }
  return write_stdout(out) ? kExitOk : kExitError;
}

}  // namespace pase_cli
