// The text form of a plan (plan_text.hpp).
#include "plan_text.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "format.hpp"
#include "text.hpp"

namespace pase_cli {

std::string config_text(const pase::Vertex& vertex, const pase::Config& config) {
  std::string text;
  for (size_t d = 0; d < vertex.dims.size(); ++d) {
    if (!text.empty()) text += ' ';
    text += vertex.dims[d];
    text += '=';
    text += std::to_string(d < vertex.dom.size() ? vertex.dom[d] : 0);
    if (d < config.size() && config[d] != 1) {
      text += '/';
      text += std::to_string(config[d]);
    }
  }
  return text;
}

std::string graph_text(const pase::Graph& graph) {
  return std::to_string(graph.vertices.size()) + " vertices, " +
         std::to_string(graph.edges.size()) + " edges, " +
         grouped(static_cast<uint64_t>(std::max<int64_t>(graph.parameters, 0))) + " parameters";
}

std::string plan_text(const pase::Graph& graph, const pase::Cluster& cluster,
                      const pase::Plan& plan) {
  std::string out = graph.name + ": " + graph_text(graph) + " on " + cluster_text(cluster) + "\n\n";
  size_t name_width = 5, op_width = 2;
  for (const pase::Vertex& v : graph.vertices) {
    name_width = std::max(name_width, v.name.size());
    op_width = std::max(op_width, v.op.size());
  }
  out += pad_left("id", 5) + "  " + pad_right("layer", name_width) + "  " +
         pad_right("op", op_width) + "  " + pad_right("cost", 10) + "  configuration\n";
  for (size_t i = 0; i < graph.vertices.size(); ++i) {
    const pase::Vertex& v = graph.vertices[i];
    const double cost = i < plan.layers.size() ? plan.layers[i].total : 0;
    const pase::Config config = i < plan.strategy.size() ? plan.strategy[i] : pase::Config{};
    out += pad_left(std::to_string(v.id), 5) + "  " + pad_right(v.name, name_width) + "  " +
           pad_right(v.op, op_width) + "  " + pad_right(format("%.3e", cost), 10) + "  " +
           config_text(v, config) + "\n";
  }
  // Labels padded to one width so that the numbers line up.
  auto line = [](std::string_view label, const std::string& value) {
    return pad_right(std::string(label), 17) + value + "\n";
  };
  out += "\n";
  out += line("cost",
              format("%.6e", plan.cost) + " FLOP-equivalents (exactly " + exact(plan.cost) + ")");
  out += line("  compute", format("%.6e", plan.compute) + "  " + percent(plan.compute, plan.cost));
  out += line("  communication", format("%.6e", plan.comm) + "  " + percent(plan.comm, plan.cost));
  out += line("  redistribution",
              format("%.6e", plan.redistribution) + "  " + percent(plan.redistribution, plan.cost));
  out += line("step time", seconds_text(plan.step_time_s) + " (predicted)");
  return out;
}

std::string search_text(const pase::SearchStats& s) {
  return pad_right("search", 17) + std::string(pase::order_name(s.order)) + " order, " +
         seconds_text(s.time_s) + ", largest dependent set " + std::to_string(s.max_dependent_set) +
         ", " + grouped(s.configurations) + " configurations\n" + pad_right("", 17) +
         grouped(s.table_entries) + " table entries (largest " + grouped(s.largest_table) + "), " +
         grouped(s.pairs) + " pairs, tables " + pase::bytes_text(s.peak_bytes) + "\n";
}

}  // namespace pase_cli
