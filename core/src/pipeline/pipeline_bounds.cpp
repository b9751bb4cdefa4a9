// Lower bounds of a pipeline stage's work and memory (pipeline_model.hpp,
// Floors; core/docs/pipeline.md, "What the planner chooses"): the search
// skips the ranges and the (S, M) pairs they prove cannot win.
#include <algorithm>
#include <cstdint>
#include <tuple>

#include "cost/configurations.hpp"
#include "model/cost_model.hpp"
#include "pipeline/pipeline_model.hpp"

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
    for (size_t i = 0; i < set->size(); ++i) {
      const LayerCost c = ops::layer_cost(g, vertex, set->at(i), m);
      const MemoryBytes b = ops::vertex_memory(g, vertex, set->at(i), m);
      const double F = c.total - c.weight_sync;
      const double weight = b.params + b.grads + b.optimizer;
      const double value = M * F + c.weight_sync;
      if (i == 0) {
        f = VertexFloor{F, value, weight, b.activations};
      } else {
        f.F = std::min(f.F, F);
        f.value = std::min(f.value, value);
        f.weight_bytes = std::min(f.weight_bytes, weight);
        f.activation_bytes = std::min(f.activation_bytes, b.activations);
      }
    }
  }
  return cache_.emplace(key, f).first->second;
}

}  // namespace pase::pipeline_detail
