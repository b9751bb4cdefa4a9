// Lower bounds of a pipeline stage's work and memory (pipeline_model.hpp,
// Floors; core/docs/pipeline.md, "What the planner chooses"): the search
// skips the ranges and the (S, M) pairs they prove cannot win.
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "cost/configurations.hpp"
#include "model/cost_model.hpp"
#include "pipeline/pipeline_model.hpp"
#include "pipeline/pipeline_searcher.hpp"

namespace pase::pipeline_detail {

const VertexFloor& Floors::of(const Graph& g, int v, int print, int64_t q, int64_t align,
                              int64_t microbatches) {
  auto key = std::make_tuple(print, q, align, microbatches);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  VertexFloor f;
  Result<ConfigSet> set = enumerate_vertex(g, v, q, options_);
  // A vertex that cannot be enumerated fails its stage's search instead;
  // its floor is 0, which bounds anything.
  if (set && set->size() > 0) {
    Cluster cs = cluster_;
    cs.devices = q;
    cs.first_device = align;
    const ops::Machine m = ops::make_machine(cs);
    const Vertex& vertex = g.vertices[v];
    const double M = static_cast<double>(microbatches);
    std::vector<std::array<double, 3>> all;
    all.reserve(set->size());
    for (size_t i = 0; i < set->size(); ++i) {
      const LayerCost c = ops::layer_cost(g, vertex, set->at(i), m);
      const MemoryBytes b = ops::vertex_memory(g, vertex, set->at(i), m);
      const double F = c.total - c.weight_sync;
      const double weight = b.params + b.grads + b.optimizer;
      const double value = M * F + c.weight_sync;
      all.push_back({value, weight, b.activations});
      if (i == 0) {
        f = VertexFloor{F, value, weight, b.activations, {}};
      } else {
        f.F = std::min(f.F, F);
        f.value = std::min(f.value, value);
        f.weight_bytes = std::min(f.weight_bytes, weight);
        f.activation_bytes = std::min(f.activation_bytes, b.activations);
      }
    }
    // The front: by value, then bytes; each kept unless one kept before
    // (of no more value) holds no more of either.
    std::sort(all.begin(), all.end());
    for (const std::array<double, 3>& a : all) {
      bool beaten = false;
      for (const std::array<double, 3>& kept : f.front)
        if (kept[1] <= a[1] && kept[2] <= a[2]) {
          beaten = true;
          break;
        }
      if (!beaten) f.front.push_back(a);
    }
  }
  return cache_.emplace(key, f).first->second;
}

VertexSums vertex_sums(Searcher& searcher, const Micro& mg, int64_t stages, int64_t microbatches) {
  const int n = static_cast<int>(mg.graph.vertices.size());
  const int64_t q = searcher.cluster.devices / stages;
  VertexSums out;
  for (int64_t s = 0; s < stages; ++s)
    out.by_alignment.emplace(stage_alignment(searcher.cluster, s, q), std::vector<VertexFloor>{});
  out.least.assign(n + 1, 0);
  for (auto& [align, sum] : out.by_alignment) {
    sum.assign(n + 1, VertexFloor{});
    for (int v = 0; v < n; ++v) {
      const VertexFloor& f = searcher.floors.of(mg.graph, v, mg.print[v], q, align, microbatches);
      sum[v + 1] = VertexFloor{sum[v].F + f.F,
                               sum[v].value + f.value,
                               sum[v].weight_bytes + f.weight_bytes,
                               sum[v].activation_bytes + f.activation_bytes,
                               {}};
    }
  }
  for (int v = 0; v < n; ++v) {
    double f = kInf;
    for (const auto& [align, sum] : out.by_alignment) f = std::min(f, sum[v + 1].F - sum[v].F);
    out.least[v + 1] = out.least[v] + f;
  }
  return out;
}

double vertex_floor_of_pair(Searcher& searcher, const Micro& mg, int64_t stages,
                            int64_t microbatches) {
  const double M = static_cast<double>(microbatches);
  return vertex_sums(searcher, mg, stages, microbatches).least.back() *
         (1 + (M - 1) / static_cast<double>(stages));
}

}  // namespace pase::pipeline_detail
