// Vertex cost vectors for the search (cost_tables.hpp): each configuration's
// cost, weighted for a pipeline stage or a memory cap, and the parts they are
// weighed from, kept across the searches of one space (VertexCostCache).
#include <cstdint>
#include <utility>
#include <vector>

#include "cost/cost_tables.hpp"
#include "kernels/parallel.hpp"

namespace pase {

namespace {

// Whether the search's weights read a vertex's memory (Machine).
bool weighs_memory(const ops::Machine& m) { return m.cost_weight != 1 || m.memory_weight != 0; }

}  // namespace

VertexCostParts vertex_cost_parts(const Graph& g, int vertex, const ConfigSet& set,
                                  const ops::Machine& m, bool memory, int threads) {
  VertexCostParts p;
  p.total.resize(set.size());
  p.weight_sync.resize(set.size());
  if (memory) {
    p.bytes.resize(set.size());
    p.fixed_bytes.resize(set.size());
    p.activations.resize(set.size());
  }
  const Vertex& v = g.vertices[vertex];
  auto fill = [&](int64_t lo, int64_t hi) {
    for (size_t i = static_cast<size_t>(lo); i < static_cast<size_t>(hi); ++i) {
      const LayerCost cost = ops::layer_cost(g, v, set.at(i), m);
      p.total[i] = cost.total;
      p.weight_sync[i] = cost.weight_sync;
      if (!memory) continue;
      const MemoryBytes b = ops::vertex_memory(g, v, set.at(i), m);
      p.bytes[i] = b.total();
      p.fixed_bytes[i] = b.params + b.grads + b.optimizer;
      p.activations[i] = b.activations;
    }
  };
  // A configuration costs microseconds (a collective walks its group).
  detail::parallel_ranges(set.size() >= 1024 ? threads : 1, static_cast<int64_t>(set.size()), fill);
  return p;
}

std::vector<double> weigh_vertex_cost(const VertexCostParts& p, const ops::Machine& m) {
  std::vector<double> out(p.total.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = p.total[i];
    // A pipeline stage counts the cost once per micro-batch, but the
    // weight gradient's reduction once (Machine::microbatches), or not at
    // all (Machine::sync_weight).
    if (m.microbatches != 1 || m.sync_weight != 1)
      out[i] = m.microbatches * (p.total[i] - p.weight_sync[i]) + m.sync_weight * p.weight_sync[i];
    // Planning under a memory cap weighs the two (Machine); the plain
    // search keeps the cost as it is.
    if (weighs_memory(m)) {
      const double bytes = m.activation_copies == 1
                               ? p.bytes[i]
                               : p.fixed_bytes[i] + m.activation_copies * p.activations[i];
      out[i] = m.cost_weight * out[i] + m.memory_weight * bytes;
    }
  }
  return out;
}

std::vector<double> vertex_cost_vector(const Graph& g, int vertex, const ConfigSet& set,
                                       const ops::Machine& m, int threads) {
  return weigh_vertex_cost(vertex_cost_parts(g, vertex, set, m, weighs_memory(m), threads), m);
}

std::vector<double> VertexCostCache::costs(const Graph& g, int vertex, const ConfigSet& set,
                                           const ops::Machine& m, int threads) {
  const std::pair<int, bool> key{vertex, ops::recomputed(g, vertex, m.training)};
  VertexCostParts& parts = kept_[key];
  // Made on first use, with the memory once the weights read it.
  const bool memory = weighs_memory(m);
  if (parts.total.empty() || (memory && parts.bytes.empty()))
    parts = vertex_cost_parts(g, vertex, set, m, memory, threads);
  return weigh_vertex_cost(parts, m);
}

}  // namespace pase
