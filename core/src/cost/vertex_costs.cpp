// Vertex cost vectors for the search (cost_tables.hpp): each configuration's
// cost, weighted for a pipeline stage or a memory cap.
#include <cstdint>
#include <vector>

#include "cost/cost_tables.hpp"
#include "kernels/parallel.hpp"

namespace pase {

std::vector<double> vertex_cost_vector(const Graph& g, int vertex, const ConfigSet& set,
                                       const ops::Machine& m, int threads) {
  std::vector<double> out(set.size());
  const Vertex& v = g.vertices[vertex];
  auto fill = [&](int64_t lo, int64_t hi) {
    for (size_t i = static_cast<size_t>(lo); i < static_cast<size_t>(hi); ++i) {
      const LayerCost cost = ops::layer_cost(g, v, set.at(i), m);
      out[i] = cost.total;
      // A pipeline stage counts the cost once per micro-batch, but the
      // weight gradient's reduction once (Machine::microbatches), or not at
      // all (Machine::sync_weight).
      if (m.microbatches != 1 || m.sync_weight != 1)
        out[i] =
            m.microbatches * (cost.total - cost.weight_sync) + m.sync_weight * cost.weight_sync;
      // Planning under a memory cap weighs the two (Machine); the plain
      // search keeps the cost as it is.
      if (m.cost_weight != 1 || m.memory_weight != 0) {
        const MemoryBytes b = ops::vertex_memory(g, v, set.at(i), m);
        const double bytes = m.activation_copies == 1 ? b.total()
                                                      : b.params + b.grads + b.optimizer +
                                                            m.activation_copies * b.activations;
        out[i] = m.cost_weight * out[i] + m.memory_weight * bytes;
      }
    }
  };
  // A configuration costs microseconds (a collective walks its group).
  detail::parallel_ranges(set.size() >= 1024 ? threads : 1, static_cast<int64_t>(set.size()), fill);
  return out;
}

}  // namespace pase
