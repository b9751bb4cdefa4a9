// Elementwise and the data-movement ops (Ravel, Unravel, Transpose, Concat,
// Split, Stack, Unstack), plus the shared helpers and the dispatch on the op.
#include <algorithm>

#include "ops/op_cost.hpp"

namespace pase::ops {

Machine make_machine(const Cluster& cluster) {
  Machine m;
  m.devices = cluster.devices;
  m.tflops = cluster.tflops;
  m.r = (cluster.tflops * 1000) / (cluster.bandwidth_gbps / 8);
  return m;
}

double per_device_points(const Vertex& v, const int64_t* c) {
  double e = 1;
  for (size_t i = 0; i < v.dom.size(); ++i)
    e *= static_cast<double>(v.dom[i]) / static_cast<double>(c[i]);
  return e;
}

void tensor_config(const TensorMap& map, const int64_t* c, int64_t* out) {
  for (size_t i = 0; i < map.size(); ++i) {
    int64_t s = 1;
    for (int pos : map[i]) s *= c[pos];
    out[i] = s;
  }
}

double redistribution_words(const Shape& shape, const int64_t* s, const int64_t* t) {
  double need = 1, have = 1;
  int64_t p_src = 1, p_tgt = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    double src_pp = static_cast<double>(shape[i]) / static_cast<double>(s[i]);
    double tgt_pp = static_cast<double>(shape[i]) / static_cast<double>(t[i]);
    need *= tgt_pp;
    have *= std::min(src_pp, tgt_pp);
    p_src *= s[i];
    p_tgt *= t[i];
  }
  if (p_tgt > p_src) have = 0;
  return std::max(need - have, 0.0);
}

LayerCost shape_op_cost(const Vertex& v, const int64_t* c, const Machine&) {
  LayerCost out;
  if (v.op == Op::kElementwise) {
    out.compute = (1 + static_cast<double>(v.pw)) * per_device_points(v, c);
    out.total = out.compute;
  }
  return out;  // pure data movement: the edges carry its cost
}

LayerCost layer_cost(const Vertex& v, const int64_t* c, const Machine& m) {
  switch (v.op) {
    case Op::kFC:
    case Op::kEinsum:
    case Op::kEmbedding:
    case Op::kConv:
    case Op::kLSTM:
      return gemm_cost(v, c, m);
    case Op::kPool:
      return pool_cost(v, c, m);
    case Op::kNorm:
      return norm_cost(v, c, m);
    case Op::kReduceMean:
      return reduce_mean_cost(v, c, m);
    case Op::kSoftmax:
      return softmax_cost(v, c, m);
    case Op::kSoftmaxCrossEntropy:
      return sce_cost(v, c, m);
    default:
      return shape_op_cost(v, c, m);
  }
}

}  // namespace pase::ops
