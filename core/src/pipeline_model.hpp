// The pipeline model's parts that the search shares (core/docs/pipeline.md):
// a stage's part of a graph, its activation copies, the price of sending a
// tensor to a later stage, and a whole plan from a partition. pipeline.cpp
// defines them; pipeline_search.cpp searches with them.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "cost_model.hpp"
#include "pase/graph.hpp"
#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"

namespace pase::pipeline_detail {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// The batch every graph input agrees on: the gcd of their first dimensions
// (M must divide each of them).
int64_t common_batch(const GraphSpec& spec);

// The vertices [first, last) of `g` as a graph of their own: edges from
// outside the range become graph inputs (no edge), edges leaving it are
// dropped. The vertex models are copied from `g`'s, so the part prices
// exactly as its vertices do in `g`.
Graph stage_graph(const Graph& g, int first, int last);

// k_s: the micro-batches whose activations stage s holds at once.
int64_t copies_of(Schedule schedule, int64_t stages, int64_t s, int64_t microbatches);

// Sending the outputs of a stage on (X_s): an edge from stage s to a later
// stage t costs rate * 2 * |T| / q, at the rate inside a node when every
// device of both stages is on one node.
struct Sender {
  const Graph& g;
  const ops::Machine& m;
  int64_t q;
  double edge(const Edge& e, int64_t s, int64_t t) const;
};

// Positions a stage may start or end at: 0, n, and between: any position of
// a graph of at most 64 vertices; else the positions crossed by the fewest
// distinct tensors (pipeline_ranges.cpp).
std::vector<int> allowed_boundaries(const Graph& g);

// Everything a vertex's prices depend on, as numbers: two ranges whose
// vertices and internal edges print alike plan alike.
std::vector<int64_t> vertex_print(const Vertex& v, const VertexModel& m);

// A whole pipeline plan of the micro-batch graph from its partition and
// configurations: every stage evaluated on its devices, X, T, memory.
Result<PipelinePlan> assemble(const Graph& micro, const Cluster& cluster,
                              const std::vector<int>& stage_of, const Strategy& configs,
                              int64_t microbatches, Schedule schedule);

}  // namespace pase::pipeline_detail
