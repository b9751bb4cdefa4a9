// Expert strategies of the PaSE paper's comparison (Elango, IPDPS 2021,
// section V): OWT for the CNNs (Krizhevsky, "One weird trick for
// parallelizing convolutional neural networks", 2014), the GNMT placement of
// LSTM layers for RNNLM (Wu et al. 2016) and the Mesh-TensorFlow layout for
// the Transformer (Shazeer et al. 2018). The exact rules are in compare.hpp.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "baselines/baselines.hpp"
#include "cost/configurations.hpp"
#include "model/cost_model.hpp"
#include "pase/compare.hpp"
#include "pase/models.hpp"
#include "util/text.hpp"

namespace pase {
namespace {

int dim_position(const Vertex& v, std::string_view name) {
  for (size_t d = 0; d < v.dims.size(); ++d)
    if (v.dims[d] == name) return static_cast<int>(d);
  return -1;
}

// Same vertex and edge counts, and the same op and dimension names vertex by
// vertex: everything but the sizes, so the batch may differ.
bool same_structure(const Graph& a, const Graph& b) {
  if (a.vertices.size() != b.vertices.size() || a.edges.size() != b.edges.size()) return false;
  for (size_t i = 0; i < a.vertices.size(); ++i)
    if (a.vertices[i].op != b.vertices[i].op || a.vertices[i].dims != b.vertices[i].dims)
      return false;
  for (size_t i = 0; i < a.edges.size(); ++i)
    if (a.edges[i].src != b.edges[i].src || a.edges[i].dst != b.edges[i].dst) return false;
  return true;
}

// Vertices whose split of a dimension fell short of the wanted one because
// the size is not divisible: "3 vertices split their batch dimension fewer
// than 16 ways (the size is not divisible)".
std::string short_note(int count, std::string_view what, int64_t wanted) {
  return std::to_string(count) + (count == 1 ? " vertex splits its " : " vertices split their ") +
         std::string(what) + " fewer than " + std::to_string(wanted) +
         " ways (the size is not divisible)";
}

Strategy owt(const Graph& graph, int64_t devices, int& short_fc) {
  Strategy s = baselines::data_parallel_strategy(graph, devices);
  for (const Vertex& v : graph.vertices) {
    if (v.op != "FC") continue;
    const int n = dim_position(v, "n");
    Config c(v.dom.size(), 1);
    c[n] = baselines::largest_divisor_at_most(v.dom[n], devices);
    if (c[n] != devices) ++short_fc;
    s[v.id] = std::move(c);
  }
  return s;
}

Strategy gnmt(const Graph& graph, int64_t devices, std::string& layout) {
  Strategy s = baselines::data_parallel_strategy(graph, devices);
  const std::vector<int> batch = batch_dimensions(graph);
  for (const Vertex& v : graph.vertices) {
    if (v.op != "LSTM") continue;
    const int l = dim_position(v, "l");
    const int b = batch[v.id];
    Config c(v.dom.size(), 1);
    c[l] = baselines::largest_divisor_at_most(v.dom[l], devices);
    c[b] = baselines::largest_divisor_at_most(v.dom[b], devices / c[l]);
    layout = "the " + std::to_string(v.dom[l]) + " LSTM layers on " + std::to_string(c[l]) +
             " device groups, batch split " + std::to_string(c[b]) + " ways within each";
    s[v.id] = std::move(c);
  }
  return s;
}

// The model-axis dimension of a Transformer vertex (compare.hpp): heads,
// feed-forward or vocabulary, followed along first inputs; -1 if none.
std::vector<int> model_dimensions(const Graph& graph) {
  return baselines::follow_dimension(graph, [](const Vertex& v) -> int {
    if (v.op == "Embedding") return dim_position(v, "v");
    if (v.op != "Einsum") return -1;
    for (std::string_view letter : {"h", "f", "v"})
      if (int p = dim_position(v, letter); p >= 0) return p;
    return -1;
  });
}

Strategy mesh(const Graph& graph, const std::vector<int>& batch, const std::vector<int>& model,
              int64_t rows, int64_t cols, int& short_batch, int& short_model) {
  Strategy s(graph.vertices.size());
  for (const Vertex& v : graph.vertices) {
    Config c(v.dom.size(), 1);
    const int b = batch[v.id], m = model[v.id];
    if (!v.dom.empty() && !model_of(graph, v.id).pinned[b]) {
      c[b] = baselines::largest_divisor_at_most(v.dom[b], rows);
      if (c[b] != rows) ++short_batch;
    }
    if (m >= 0 && m != b && !model_of(graph, v.id).pinned[m]) {
      c[m] = baselines::largest_divisor_at_most(v.dom[m], cols);
      if (c[m] != cols) ++short_model;
    }
    s[v.id] = std::move(c);
  }
  return s;
}

}  // namespace

const char* expert_kind_name(ExpertKind kind) {
  switch (kind) {
    case ExpertKind::kNone:
      return "none";
    case ExpertKind::kOwt:
      return "owt";
    case ExpertKind::kGnmt:
      return "gnmt";
    case ExpertKind::kMeshTensorFlow:
      return "mesh_tensorflow";
  }
  return "?";
}

ExpertKind expert_kind(const Graph& graph) {
  static const std::pair<std::string_view, ExpertKind> kKinds[] = {
      {"alexnet", ExpertKind::kOwt},
      {"resnet101", ExpertKind::kOwt},
      {"inception3", ExpertKind::kOwt},
      {"rnnlm", ExpertKind::kGnmt},
      {"transformer", ExpertKind::kMeshTensorFlow},
  };
  for (const auto& [name, kind] : kKinds) {
    if (graph.name != name) continue;
    Result<Graph> builtin = build_model(name);
    return builtin && same_structure(graph, *builtin) ? kind : ExpertKind::kNone;
  }
  return ExpertKind::kNone;
}

Result<StrategyReport> expert_strategy(const Graph& graph, const Cluster& cluster,
                                       const CompareOptions& options) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  const ExpertKind kind = expert_kind(graph);
  if (kind == ExpertKind::kNone) {
    return Error{"no expert strategy for custom graph " + quoted_text(graph.name) +
                     " (only the built-in networks have one)",
                 "graph"};
  }
  auto configs =
      enumerate_all(graph, cluster.devices, options.plan.enumeration, options.plan.max_memory);
  if (!configs) return configs.error();
  const int64_t p = cluster.devices;
  std::vector<std::string> notes;
  Strategy strategy;
  std::string description;
  switch (kind) {
    case ExpertKind::kOwt: {
      int short_fc = 0;
      strategy = owt(graph, p, short_fc);
      description =
          "OWT (Krizhevsky 2014): convolutions and all other layers data parallel, "
          "fully-connected layers split on their output units";
      if (short_fc > 0) notes.push_back(short_note(short_fc, "output units", p));
      break;
    }
    case ExpertKind::kGnmt: {
      std::string layout;
      strategy = gnmt(graph, p, layout);
      description = "GNMT-style: " + layout + "; all other layers data parallel";
      break;
    }
    case ExpertKind::kMeshTensorFlow: {
      const std::vector<int> batch = batch_dimensions(graph);
      const std::vector<int> model = model_dimensions(graph);
      double best = std::numeric_limits<double>::infinity();
      int64_t best_cols = 1;
      int best_short_batch = 0, best_short_model = 0;
      for (int64_t cols = 1; cols <= p; ++cols) {
        if (p % cols != 0) continue;
        int short_batch = 0, short_model = 0;
        Strategy s = mesh(graph, batch, model, p / cols, cols, short_batch, short_model);
        Result<Plan> priced = evaluate(graph, cluster, s);
        if (!priced) return priced.error();
        if (priced->cost < best) {
          best = priced->cost;
          best_cols = cols;
          best_short_batch = short_batch;
          best_short_model = short_model;
          strategy = std::move(s);
        }
      }
      const int64_t rows = p / best_cols;
      description = "Mesh-TensorFlow, mesh " + std::to_string(rows) + " x " +
                    std::to_string(best_cols) +
                    " (batch x model; the cheapest of all meshes r x c = " + std::to_string(p) +
                    "): batch on the first axis; heads, feed-forward and vocabulary on the second";
      if (best_short_batch > 0)
        notes.push_back(short_note(best_short_batch, "batch dimension", rows));
      if (best_short_model > 0)
        notes.push_back(short_note(best_short_model, "model dimension", best_cols));
      break;
    }
    case ExpertKind::kNone:
      break;
  }
  return baselines::make_report(graph, cluster, *configs, "expert", std::move(description),
                                strategy, std::move(notes));
}

}  // namespace pase
