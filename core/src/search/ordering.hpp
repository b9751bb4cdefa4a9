// Vertex orderings for the dynamic program and their dependent sets.
//
// For a sequence v(1..n), the dependent set D(i) is the set of vertices not in
// v(1..i) that are adjacent to the connected component containing v(i) of the
// subgraph induced by v(1..i) (PaSE paper, section IV). The dynamic program's
// table after step i is indexed by the configurations of D(i).
#pragma once

#include <vector>

#include "pase/graph.hpp"
#include "pase/plan.hpp"

namespace pase {

// Undirected neighbours of every vertex, sorted, without duplicates.
using Adjacency = std::vector<std::vector<int>>;
Adjacency make_adjacency(const Graph& g);

struct Step {
  int vertex = 0;
  // D(i), sorted by position in the sequence, latest first: the vertex that
  // will consume this step's table (the earliest processed) comes last.
  std::vector<int> dep;
  std::vector<int> consumed;       // earlier steps whose tables this step merges
  std::vector<int> new_neighbors;  // unprocessed neighbours of the vertex
};

struct Ordering {
  Order order = Order::kGenSeq;
  std::vector<Step> steps;    // in processing order
  std::vector<int> position;  // position[v] = index of v's step
};

// GenerateSeq (paper Fig. 3): repeatedly process the vertex whose dependent
// set would be smallest; ties by lowest id. With `weights` (configuration
// counts), "smallest" is the product of the weights of the set (the table
// size) instead of its cardinality. O(n log n + sum of set sizes * degree).
std::vector<int> genseq_sequence(const Adjacency& adj, const std::vector<double>* weights);

// Breadth-first from vertex 0, neighbours in id order; restarts at the lowest
// unvisited vertex for disconnected graphs.
std::vector<int> bfs_sequence(const Adjacency& adj);

// Dependent sets of `sequence` by their definition (union-find over the
// processed components), with the table hand-over between steps.
Ordering make_steps(const Adjacency& adj, const std::vector<int>& sequence, Order order);

// The ordering `order` for graph `g` whose vertices have `config_counts`;
// with `last`, that vertex moved to the end (run_dp's open_last).
Ordering make_ordering(const Graph& g, Order order, const std::vector<size_t>& config_counts,
                       int last = -1);

}  // namespace pase
