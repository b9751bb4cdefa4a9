// The data-parallel baseline: every vertex splits only its batch dimension.
// The batch dimension rule is stated in compare.hpp (batch_dimensions).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "baselines/baselines.hpp"
#include "cost/configurations.hpp"
#include "model/cost_model.hpp"
#include "pase/compare.hpp"

namespace pase {

std::vector<int> batch_dimensions(const Graph& graph) {
  // Each op's lowering names its batch position or follows its first input;
  // build_graph() resolves the rule once (cost_model.hpp, follow_dimension).
  std::vector<int> pos(graph.vertices.size(), 0);  // a hand-made Graph: the first dimension
  if (check_inputs(graph, Cluster{})) return pos;
  for (const Vertex& v : graph.vertices) pos[v.id] = model_of(graph, v.id).batch_dim;
  return pos;
}

namespace baselines {

Strategy data_parallel_strategy(const Graph& graph, int64_t devices) {
  const std::vector<int> batch = batch_dimensions(graph);
  Strategy strategy(graph.vertices.size());
  for (const Vertex& v : graph.vertices) {
    Config c(v.dom.size(), 1);
    const int b = batch[v.id];
    if (!v.dom.empty() && !model_of(graph, v.id).pinned[b])
      c[b] = largest_divisor_at_most(v.dom[b], devices);
    strategy[v.id] = std::move(c);
  }
  return strategy;
}

}  // namespace baselines

Result<StrategyReport> data_parallel(const Graph& graph, const Cluster& cluster,
                                     const CompareOptions& options) {
  if (std::optional<Error> e = check_inputs(graph, cluster)) return *e;
  auto configs =
      enumerate_all(graph, cluster.devices, options.plan.enumeration, options.plan.max_memory);
  if (!configs) return configs.error();
  const Strategy strategy = baselines::data_parallel_strategy(graph, cluster.devices);
  const std::vector<int> batch = batch_dimensions(graph);
  // (size, split) -> vertex count, for the "not divisible" marks: those
  // vertices leave devices idle.
  std::map<std::pair<int64_t, int64_t>, int> short_splits;
  for (const Vertex& v : graph.vertices) {
    if (v.dom.empty()) continue;
    const int64_t split = strategy[v.id][batch[v.id]];
    if (split != cluster.devices) ++short_splits[{v.dom[batch[v.id]], split}];
  }
  std::vector<std::string> notes;
  for (const auto& [key, count] : short_splits) {
    notes.push_back(std::to_string(count) + (count == 1 ? " vertex has" : " vertices have") +
                    " a batch dimension of size " + std::to_string(key.first) +
                    ", not divisible by " + std::to_string(cluster.devices) + ": split " +
                    std::to_string(key.second) + " ways (largest divisor at most " +
                    std::to_string(cluster.devices) + ")");
  }
  return baselines::make_report(graph, cluster, *configs, "data_parallel",
                                "data parallelism: every layer splits only its batch dimension "
                                "across " +
                                    std::to_string(cluster.devices) + " devices",
                                strategy, std::move(notes));
}

}  // namespace pase
