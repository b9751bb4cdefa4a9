// The pipeline model's parts that the search shares (core/docs/pipeline.md):
// a stage's part of a graph, its activation copies, the price of sending a
// tensor to a later stage, and a whole plan from a partition. pipeline.cpp
// defines them; pipeline_search.cpp searches with them.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

#include "model/cost_model.hpp"
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
int64_t copies_of(Schedule schedule, int64_t stages, int64_t s, int64_t microbatches,
                  int64_t virtual_stages = 1);

// Sending the outputs of a stage on (X_s): an edge from stage s to a later
// stage t costs rate * 2 * |T| / q, at the rate inside a node when every
// device of both stages is on one node.
struct Sender {
  const Graph& g;
  const ops::Machine& m;
  int64_t q;
  double edge(const Edge& e, int64_t s, int64_t t) const;
  // Whether every device of stages s .. t is on one node.
  bool near(int64_t s, int64_t t) const;
  // The edge at `rate`: rate * 2 * |T| / q.
  double price(const Edge& e, double rate) const;
};

// Positions a stage may start or end at: 0, n, and between: any position of
// a graph of at most 64 vertices; else the positions crossed by the fewest
// distinct tensors, and of a language model's (decoder blocks alike) those
// between its blocks (pipeline_ranges.cpp).
std::vector<int> allowed_boundaries(const Graph& g);

// Everything a vertex's prices depend on, as numbers: two ranges whose
// vertices and internal edges print alike plan alike.
std::vector<int64_t> vertex_print(const Vertex& v, const VertexModel& m);

// A whole pipeline plan of the micro-batch graph from its partition and
// configurations: every stage evaluated on its devices, X, T, memory.
Result<PipelinePlan> assemble(const Graph& micro, const Cluster& cluster,
                              const std::vector<int>& stage_of, const Strategy& configs,
                              int64_t microbatches, Schedule schedule, int64_t virtual_stages = 1);

}  // namespace pase::pipeline_detail

namespace pase::pipeline_detail {

// The least a vertex can cost a stage, over all its configurations on q
// devices whose first one sits `align` devices into a node, for M
// micro-batches: its cost without weight_sync (one micro-batch), the least
// M * F + W (a stage's value, StageWeights: the weight gradients reduced
// once a step), the bytes of its weight (parameters, gradients, optimizer
// state) and of its saved activations, each minimised on its own. Sums of
// them over a range bound its stage plan's F, M * F + W and memory from
// below, whatever the plan: the plan's configurations pay each vertex at
// least its least, and the edges between them nothing below zero
// (pipeline_bounds.cpp; core/docs/pipeline.md, "Pruning").
struct VertexFloor {
  double F = 0, value = 0, weight_bytes = 0, activation_bytes = 0;
  // The vertex's configurations that no other beats in value, weight bytes
  // and activation bytes at once (the others are never the least of any
  // value + lambda * (weight + k * activations), lambda, k >= 0), as
  // {value, weight bytes, activation bytes}: the Lagrangian floors under
  // the cap (PairSearch::weighed_floor()). Empty in sums.
  std::vector<std::array<double, 3>> front;
};

// Floors by (vertex print, q, align, M), each computed once: vertices that
// print alike have the same configurations and prices.
class Floors {
 public:
  Floors(const Cluster& cluster, const EnumOptions& options)
      : cluster_(cluster), options_(options) {}
  const VertexFloor& of(const Graph& g, int v, int print, int64_t q, int64_t align,
                        int64_t microbatches);

 private:
  const Cluster& cluster_;
  EnumOptions options_;
  std::map<std::tuple<int, int64_t, int64_t, int64_t>, VertexFloor> cache_;
};

}  // namespace pase::pipeline_detail
