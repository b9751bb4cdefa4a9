// pase models: the built-in networks with their sizes, as a table or JSON.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

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
         "Lists the built-in networks with their vertex, edge and parameter counts and\n"
         "their default batch size and sequence length ('-': none).\n";
}

int run_models(const Args& args) {
  Flags flags;
  if (auto message = parse_flags(args, {{"--format", true}}, flags)) {
    return usage_error("models", *message);
  }
  bool json = false;
  if (auto failure = format_from_flags(flags, json)) return failure->report("models");
  if (json) return write_stdout(pase::models_to_json()) ? kExitOk : kExitError;

  // The cells first, then each column as wide as its widest cell: the
  // language models' parameter counts are far longer than the CNNs'.
  const std::vector<std::string> header = {"name",  "vertices", "edges", "parameters",
                                           "batch", "seq",      "cutoff"};
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> descriptions;
  for (const pase::ModelInfo& info : pase::list_models()) {
    pase::Result<pase::Graph> graph = pase::build_model(info.name);
    const std::string parameters =
        graph ? grouped(static_cast<uint64_t>(std::max<int64_t>(graph->parameters, 0))) : "?";
    rows.push_back({info.name, graph ? std::to_string(graph->vertices.size()) : "?",
                    graph ? std::to_string(graph->edges.size()) : "?", parameters,
                    std::to_string(info.default_batch),
                    info.default_seq > 0 ? std::to_string(info.default_seq) : "-",
                    std::to_string(info.cutoff)});
    descriptions.push_back(info.description);
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  // The name left-aligned, the numbers right-aligned two spaces apart.
  auto line = [&](const std::vector<std::string>& cells, const std::string& description) {
    std::string text = pad_right(cells[0], width[0]);
    for (size_t c = 1; c < cells.size(); ++c) text += pad_left(cells[c], width[c] + 2);
    return text + "  " + description + "\n";
  };
  std::string out = line(header, "description");
  for (size_t r = 0; r < rows.size(); ++r) out += line(rows[r], descriptions[r]);
  return write_stdout(out) ? kExitOk : kExitError;
}

}  // namespace pase_cli
