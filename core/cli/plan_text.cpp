// The text form of a plan (plan_text.hpp).
#include "plan_text.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format.hpp"
#include "pase/json_api.hpp"
#include "pase/layout.hpp"
#include "pase/llm.hpp"
#include "pase/summary.hpp"
#include "util/text.hpp"

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

namespace {

// Labels padded to one width so that the numbers line up.
std::string line(std::string_view label, const std::string& value) {
  return pad_right(std::string(label), 17) + value + "\n";
}

}  // namespace

std::string capacity_text(const pase::Cluster& cluster, const pase::Plan& plan) {
  if (!(plan.capacity_bytes > 0)) return "";
  // The GPU's memory and, when the reserve or the headroom take part of it
  // (the practice model), the part the plan may use.
  std::string capacity = format("%g", cluster.memory_gib) + " GiB";
  if (plan.capacity_bytes < cluster.memory_gib * 0x1p30)
    capacity += ", " + format("%g", plan.capacity_bytes / 0x1p30) + " GiB of it for the plan";
  if (plan.fits) return capacity + ": fits";
  return capacity + ": does not fit (" +
         pase::bytes_text(plan.memory.total() - plan.capacity_bytes) + " over)";
}

std::string memory_text(const pase::Cluster& cluster, const pase::Plan& plan, PlanSource source) {
  const pase::MemoryBytes& m = plan.memory;
  const double total = m.total();
  std::string out =
      line("memory", pase::bytes_text(total) + " per device (" +
                         training_text(plan.training ? *plan.training : cluster.training) + ")");
  const std::pair<std::string_view, double> parts[] = {{"  parameters", m.params},
                                                       {"  gradients", m.grads},
                                                       {"  optimizer", m.optimizer},
                                                       {"  activations", m.activations}};
  for (const auto& [label, bytes] : parts) {
    out += line(label, pad_right(pase::bytes_text(bytes), 10) + "  " + percent(bytes, total));
  }
  if (cluster.cost_model == pase::CostModel::kPractice) {
    out += line("  working",
                pad_right(pase::bytes_text(m.working), 10) + "  " + percent(m.working, total));
    out += line("  reserved", pase::bytes_text(cluster.device.reserved_gib * 0x1p30) +
                                  " (framework and allocator, outside the total)");
    if (plan.capacity_bytes > 0)
      out += line("  headroom", pase::bytes_text(cluster.headroom_gib() * 0x1p30) + " (" +
                                    format("%g", 100 * cluster.headroom) +
                                    "% of the memory kept free, outside the total)");
  }
  if (!(plan.capacity_bytes > 0)) return out;
  out += line("  capacity", capacity_text(cluster, plan));
  if (source == PlanSource::kSearched) {
    const std::string bound = format("%.6e", plan.lower_bound);
    out += line("lower bound",
                plan.optimal ? bound + ": the plan is proven optimal among the strategies that fit"
                : plan.lower_bound <= 0
                    ? std::string("none known: the plan is not proven optimal")
                    : bound +
                          ": not proven optimal; every strategy that fits costs at least "
                          "this, the plan " +
                          percent(plan.cost - plan.lower_bound, plan.lower_bound) + " more");
  }
  return out;
}

std::string bounded_text(const pase::Plan& plan, bool pipeline) {
  const pase::SearchStats& s = plan.search;
  std::string out =
      line("search",
           "bounded: " + std::to_string(s.rounds) + " round" + (s.rounds == 1 ? "" : "s") +
               " of the exact search" + (pipeline ? " in the stage plans" : "") +
               ", each holding up to " + std::to_string(s.fixed_vertices) +
               " vertices at one configuration" +
               (s.exact_peak_bytes > 0 ? " (the exact search would need " +
                                             pase::bytes_text(s.exact_peak_bytes) + " of tables)"
                                       : std::string()));
  // Under a cap the memory section gives the bound.
  if (plan.capacity_bytes > 0) return out;
  const std::string bound = format("%.6e", plan.lower_bound);
  out += line("lower bound",
              plan.optimal ? bound + ": the plan is proven optimal"
              : plan.lower_bound <= 0
                  ? std::string("none known: the plan is not proven optimal")
                  : bound + ": not proven optimal; every strategy costs at least this, the plan " +
                        percent(plan.cost - plan.lower_bound, plan.lower_bound) + " more (gap)");
  return out;
}

std::string summary_text(const pase::Graph& graph, const pase::Plan& plan,
                         const pase::PipelineInfo* pipeline) {
  const std::vector<pase::LayerGroup> groups = pase::summarize(graph, plan);
  size_t op_width = 2, label_width = 5;
  for (const pase::LayerGroup& g : groups) {
    op_width = std::max(op_width, g.op.size());
    label_width = std::max(label_width, g.label.size());
  }
  const std::string piped = pipeline ? pase::pipeline_label(*pipeline) + "; " : "";
  std::string out = line("summary", piped + std::to_string(groups.size()) + " group" +
                                        (groups.size() == 1 ? "" : "s") + " of layers split alike");
  out += pad_left("cost", 7) + "  " + pad_left("memory", 6) + "  " + pad_left("devices", 7) + "  " +
         pad_left("layers", 6) + "  " + pad_right("op", op_width) + "  " +
         pad_right("split", label_width) + "  names\n";
  // The shares in whole tenths of a percent; a group that rounds to 0.0%
  // but costs something says "<0.1%".
  const auto share = [](double part) {
    return part > 0 && part < 0.0005 ? std::string("<0.1%") : format("%.1f%%", 100 * part);
  };
  for (const pase::LayerGroup& g : groups) {
    // The first two names, and how many more: enough to recognise the group.
    std::string names;
    for (size_t k = 0; k < g.vertices.size() && k < 2; ++k) {
      const size_t id = static_cast<size_t>(g.vertices[k]);
      if (!names.empty()) names += ", ";
      names += id < graph.vertices.size() ? graph.vertices[id].name : std::to_string(id);
    }
    if (g.vertices.size() > 2) names += ", +" + std::to_string(g.vertices.size() - 2) + " more";
    out += pad_left(share(g.cost_share), 7) + "  " + pad_left(share(g.memory_share), 6) + "  " +
           pad_left(std::to_string(g.devices), 7) + "  " +
           pad_left(std::to_string(g.vertices.size()), 6) + "  " + pad_right(g.op, op_width) +
           "  " + pad_right(g.label, label_width) + "  " + names + "\n";
  }
  return out;
}

namespace {

// The stage table of a plan with a pipeline.
std::string stages_text(const pase::Graph& graph, const pase::Cluster& cluster,
                        const pase::Plan& plan, const pase::PipelineInfo& p) {
  std::string out =
      line("pipeline", pase::pipeline_label(p) + ", micro-batch " + std::to_string(p.micro_batch));
  out += pad_left("stage", 5) + "  " + pad_left("layers", 6) + "  " + pad_right("devices", 11) +
         "  " + pad_left("A", 10) + "  " + pad_left("W", 10) + "  " + pad_left("X", 10) + "  " +
         pad_left("time", 9) + "  " + pad_left("memory", 10) + "  first layer\n";
  for (size_t s = 0; s < p.stage.size(); ++s) {
    const pase::PipelineStage& st = p.stage[s];
    const std::string devices =
        std::to_string(st.first_device) + "-" + std::to_string(st.first_device + st.devices - 1);
    const std::string first = st.first_vertex < static_cast<int>(graph.vertices.size())
                                  ? graph.vertices[st.first_vertex].name
                                  : "";
    out += pad_left(std::to_string(s), 5) + "  " +
           pad_left(std::to_string(st.last_vertex - st.first_vertex), 6) + "  " +
           pad_right(devices, 11) + "  " + pad_left(format("%.4g", st.A), 10) + "  " +
           pad_left(format("%.4g", st.W), 10) + "  " + pad_left(format("%.4g", st.X), 10) + "  " +
           pad_left(seconds_text(st.time_s), 9) + "  " +
           pad_left(pase::bytes_text(st.memory.total()), 10) + (st.fits ? "  " : "! ") + first +
           "\n";
  }
  if (p.no_pipeline_cost > 0) {
    const double t = p.no_pipeline_cost / (cluster.tflops * 1e12);
    // Close calls in per cent, so that a gain never reads "1.00x".
    const double ratio = p.no_pipeline_cost / plan.cost;
    const std::string gain = ratio >= 1.01   ? format("%.2f", ratio) + "x as fast"
                             : ratio > 1     ? format("%.2g", 100 * (ratio - 1)) + "% faster"
                             : ratio == 1    ? "the same plan"
                             : ratio >= 0.99 ? format("%.2g", 100 * (1 - ratio)) + "% slower"
                                             : format("%.2f", ratio) + "x as fast";
    out += line("no pipeline", format("%.6e", p.no_pipeline_cost) + " (" + seconds_text(t) +
                                   "): the best plan without a pipeline; this one is " + gain);
  }
  return out;
}

}  // namespace

std::string plan_text(const pase::Graph& graph, const pase::Cluster& cluster,
                      const pase::Plan& plan, PlanSource source,
                      const pase::PipelineInfo* pipeline) {
  std::string out = graph.name + ": " + graph_text(graph) + " on " + cluster_text(cluster) + "\n";
  if (std::optional<pase::VocabPadding> padding = pase::vocab_padding(graph))
    out += pase::vocab_padding_text(*padding) + "\n";
  out += "\n";
  if (pipeline != nullptr) out += stages_text(graph, cluster, plan, *pipeline) + "\n";
  out += summary_text(graph, plan, pipeline) + "\n";
  size_t name_width = 5, op_width = 2;
  for (const pase::Vertex& v : graph.vertices) {
    name_width = std::max(name_width, v.name.size());
    op_width = std::max(op_width, v.op.size());
  }
  out += pad_left("id", 5) + "  " + pad_right("layer", name_width) + "  " +
         pad_right("op", op_width) + "  " + pad_right("cost", 10) + "  " + pad_left("memory", 10) +
         "  configuration\n";
  for (size_t i = 0; i < graph.vertices.size(); ++i) {
    const pase::Vertex& v = graph.vertices[i];
    const double cost = i < plan.layers.size() ? plan.layers[i].total : 0;
    const double memory = i < plan.vertex_memory.size() ? plan.vertex_memory[i] : 0;
    const pase::Config config = i < plan.strategy.size() ? plan.strategy[i] : pase::Config{};
    out += pad_left(std::to_string(v.id), 5) + "  " + pad_right(v.name, name_width) + "  " +
           pad_right(v.op, op_width) + "  " + pad_right(format("%.3e", cost), 10) + "  " +
           pad_left(pase::bytes_text(memory), 10) + "  " + config_text(v, config) + "\n";
  }
  out += "\n";
  out += line("cost",
              format("%.6e", plan.cost) + " FLOP-equivalents (exactly " + exact(plan.cost) + ")");
  // With a pipeline the parts are one micro-batch's work summed over the
  // stages, not parts of T: their shares are of their own sum.
  const double whole =
      pipeline != nullptr ? plan.compute + plan.comm + plan.redistribution : plan.cost;
  if (pipeline != nullptr)
    out += line("  by kind", "one micro-batch's work over all stages (not parts of T):");
  out += line("  compute", format("%.6e", plan.compute) + "  " + percent(plan.compute, whole));
  out += line("  communication", format("%.6e", plan.comm) + "  " + percent(plan.comm, whole));
  out += line("  redistribution",
              format("%.6e", plan.redistribution) + "  " + percent(plan.redistribution, whole));
  if (cluster.cost_model == pase::CostModel::kPractice) {
    out += line("step time", seconds_text(plan.step_time_s) + " (practice cost model)");
    const pase::StepBreakdown b = pase::step_breakdown(plan, pipeline, cluster.tflops);
    out += line("  compute", pad_right(seconds_text(b.compute_s), 10) + "  " +
                                 percent(b.compute_s, plan.step_time_s));
    out += line("  recomputation", pad_right(seconds_text(b.recompute_s), 10) + "  " +
                                       percent(b.recompute_s, plan.step_time_s));
    out += line("  communication", pad_right(seconds_text(b.communication_s), 10) + "  " +
                                       percent(b.communication_s, plan.step_time_s) + " (exposed)");
    out += line("  bubble", pad_right(seconds_text(b.bubble_s), 10) + "  " +
                                percent(b.bubble_s, plan.step_time_s));
    const pase::Training& trained = plan.training ? *plan.training : cluster.training;
    out += line("recomputation",
                recompute_text(trained) +
                    (plan.training && cluster.training.recompute == pase::Recompute::kAuto
                         ? " (chosen by the search)"
                         : ""));
    const int64_t micro = pipeline != nullptr ? pipeline->microbatches : 1;
    if (std::optional<pase::Throughput> t =
            pase::throughput(graph, cluster, plan.step_time_s, micro))
      out += line("throughput", format("%.4g", t->tokens_per_s) + " tokens/s, MFU " +
                                    format("%.1f", 100 * t->mfu) + "% (" +
                                    format("%.4g", t->model_flops) + " model FLOPs per step)");
  } else {
    out += line("step time",
                seconds_text(plan.step_time_s) + " (predicted: peak compute, no overlap)");
  }
  if (source == PlanSource::kSearched && plan.search.bounded)
    out += bounded_text(plan, pipeline != nullptr);
  return out + memory_text(cluster, plan, source);
}

std::string search_text(const pase::SearchStats& s) {
  const std::string runs =
      s.searches > 1 ? " in " + std::to_string(s.searches) + " searches of" : "";
  return pad_right("search", 17) + std::string(pase::order_name(s.order)) + " order, " +
         seconds_text(s.time_s) + " on " + std::to_string(s.threads) +
         (s.threads == 1 ? " thread" : " threads") + ", largest dependent set " +
         std::to_string(s.max_dependent_set) + ", " + grouped(s.configurations) +
         " configurations\n" + pad_right("", 17) + grouped(s.table_entries) +
         " table entries (largest " + grouped(s.largest_table) + ")," + runs + " " +
         grouped(s.pairs) + " pairs, tables " + pase::bytes_text(s.peak_bytes) + "\n";
}

}  // namespace pase_cli
