// Cost tables: each vertex's cost per configuration and, for each pair of
// adjacent vertices, the re-distribution cost of all tensor edges between them
// per pair of configurations. Computed once per plan; a pair matrix is built
// when the dynamic program first needs it and dropped after.
#pragma once

#include <vector>

#include "configurations.hpp"
#include "cost_model.hpp"
#include "pase/graph.hpp"

namespace pase {

// Vertex `v` at every configuration of `set`, in enumeration order.
std::vector<double> vertex_cost_vector(const Graph& g, int vertex, const ConfigSet& set,
                                       const ops::Machine& m);

// Cost of one tensor edge between the layer configurations of its ends.
double edge_cost(const Graph& g, const Edge& e, const int64_t* c_src, const int64_t* c_dst,
                 const ops::Machine& m);

// The tensor edges between two vertices, whichever way they point.
struct PairEdges {
  int a = 0, b = 0;        // a < b
  std::vector<int> edges;  // indices into Graph::edges, ascending
};

// One entry per adjacent pair, sorted by (a, b).
std::vector<PairEdges> group_edges(const Graph& g);

// Row-major matrix [configs(outer)][configs(inner)] of the summed cost of
// `edge_ids` (all between `outer` and `inner`). Tensor configurations are
// de-duplicated first, so the formula runs once per distinct pair. With
// `outer_rows`, only those configurations of `outer`, in that order, are rows.
std::vector<double> pair_matrix(const Graph& g, const std::vector<ConfigSet>& configs,
                                const std::vector<int>& edge_ids, int outer, int inner,
                                const ops::Machine& m,
                                const std::vector<int>* outer_rows = nullptr);

// What edge `e`'s cost sees of one of its ends, per configuration of that end
// (`producer`: e.src, else e.dst): equal ids, equal cost against every
// configuration of the other end. The consumer is seen through its tensor
// configuration; the producer through its tensor configuration on a flat
// machine and through its placement on node 0 on a machine of nodes
// (`gpus_per_node` > 0, core/docs/cluster.md). Ids are numbered in order of
// first appearance. Time O(|set| * tensor rank), times gpus_per_node for a
// hierarchical producer.
std::vector<int> edge_end_ids(const Graph& g, const ConfigSet& set, const Edge& e, bool producer,
                              int64_t gpus_per_node);

}  // namespace pase
