// The re-distribution formulas of one tensor edge, for the cost tables
// (cost_tables.cpp) and edge_cost() (core/docs/cluster.md, "Re-distribution
// between layers"; core/docs/practice-model.md, "Communication").
#pragma once

#include <cstdint>
#include <vector>

#include "cost/configurations.hpp"
#include "model/cost_model.hpp"
#include "pase/graph.hpp"

// Named, not anonymous: EdgePrices::Entry (a member of a class with linkage)
// holds Placements.
namespace pase::detail {

// Where a producer's tensor lives, as far as the hierarchical edge needs
// (core/docs/cluster.md, "Re-distribution between layers"): its tensor
// configuration and the cells, other than (0,..,0), that the devices of node
// 0 hold, sorted and distinct.
struct Placement {
  std::vector<int64_t> split;
  std::vector<std::vector<int64_t>> near_cells;
  // Every device of the producer is on device 0's node: nothing is far
  // (phi = 0 exactly, not the rounding of need - own - near).
  bool all_near = false;
  // Derived, for the edge's inner loop: a cell's width per tensor dimension,
  // and each near cell's lower corner (near_cells.size() x dimensions).
  std::vector<double> width, near_lo;
  int64_t devices = 1;  // the product of split
  bool operator<(const Placement& o) const {
    if (all_near != o.all_near) return all_near < o.all_near;
    return split != o.split ? split < o.split : near_cells < o.near_cells;
  }
};

// The placement of a tensor of `shape` written or read through `map` by a
// vertex of `n` dimensions at configuration `c`, on nodes of `per_node`
// devices from device 0 on.
Placement placement(const Shape& shape, const TensorMap& map, const int64_t* c, size_t n,
                    int64_t per_node);

// The distinct placements of a tensor over the configurations of `set`, in
// order of first appearance; `ids[i]`, configuration i's.
std::vector<Placement> distinct_placements(const Shape& shape, const TensorMap& map,
                                           const ConfigSet& set, int64_t per_node,
                                           std::vector<int>& ids);

// The hierarchical edge, from the producer's placement `src` to the
// consumer's tensor configuration `t` (device 0's box `box`; `one_node`:
// the consumer's group on device 0's node): twice the way forward (the
// paper model), or the way forward plus the gradient's way back when `dst`,
// the consumer's placement, is given (the practice model).
double hierarchical_edge(const Shape& shape, const Placement& src, const Placement* dst,
                         const int64_t* t, const double* box, bool one_node, const ops::Machine& m);

// The flat edge between tensor configurations s and t, priced on `m`: twice
// the way forward (the paper model), or both ways, replication-aware (the
// practice model).
double flat_edge(const Shape& shape, const int64_t* s, const int64_t* t, const ops::Machine& m);

// 1 when a layer at configuration `c` (n dimensions) runs on devices that
// all lie on device 0's node (the first `near` devices), else 0.
int64_t group_on_node(const int64_t* c, size_t n, int64_t near);

// Device 0's box of a tensor of `shape` at tensor configuration t.
std::vector<double> box_of(const Shape& shape, const int64_t* t);

}  // namespace pase::detail
