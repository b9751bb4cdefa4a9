// The per-layer and per-edge formulas of the PaSE cost model (cost-model.md),
// evaluated for one configuration at a time. Everything is a double, computed
// in the order the specification writes it, so that independent
// implementations agree to about 1e-9 relative.
#pragma once

#include <cstdint>

#include "pase/graph.hpp"
#include "pase/plan.hpp"

namespace pase::ops {

// cost-model.md section 1.
struct Machine {
  int64_t devices = 8;
  double tflops = 10;
  double r = 5000;  // FLOPs per word moved: (F * 1000) / (B / 8)

  double words(double w) const { return r * w; }
  double allreduce(double w, double p) const { return p <= 1 ? 0.0 : r * (w / p) * 2 * (p - 1); }
};

Machine make_machine(const Cluster& cluster);

// prod(dom[i] / c[i]) over all positions, in order.
double per_device_points(const Vertex& v, const int64_t* c);

// The split of each tensor dimension implied by layer configuration `c`.
void tensor_config(const TensorMap& map, const int64_t* c, int64_t* out);

// The edge formula's max(need - have, 0): words that must move for tensor
// `shape` to go from tensor configuration `s` to `t` (section 3).
double redistribution_words(const Shape& shape, const int64_t* s, const int64_t* t);

// Cost of vertex `v` at configuration `c` (one split per dimension).
LayerCost layer_cost(const Vertex& v, const int64_t* c, const Machine& m);

// Families, one file each.
LayerCost gemm_cost(const Vertex& v, const int64_t* c, const Machine& m);         // gemm.cpp
LayerCost pool_cost(const Vertex& v, const int64_t* c, const Machine& m);         // pooling.cpp
LayerCost norm_cost(const Vertex& v, const int64_t* c, const Machine& m);         // norm.cpp
LayerCost reduce_mean_cost(const Vertex& v, const int64_t* c, const Machine& m);  // norm.cpp
LayerCost softmax_cost(const Vertex& v, const int64_t* c, const Machine& m);      // softmax.cpp
LayerCost sce_cost(const Vertex& v, const int64_t* c, const Machine& m);          // softmax.cpp
LayerCost shape_op_cost(const Vertex& v, const int64_t* c, const Machine& m);     // shape_ops.cpp

}  // namespace pase::ops
