// Softmax and SoftmaxCrossEntropy (cost-model.md section 5).
#include "ops/op_cost.hpp"

namespace pase::ops {

LayerCost softmax_cost(const Vertex& v, const int64_t* c, const Machine& mc) {
  int a = v.axis;
  double e = per_device_points(v, c), o = 1;
  for (size_t i = 0; i < v.dom.size(); ++i)
    if (static_cast<int>(i) != a) o *= static_cast<double>(v.dom[i]) / static_cast<double>(c[i]);
  double p = static_cast<double>(c[a]), d = static_cast<double>(v.dom[a]);
  LayerCost out;
  out.compute = 4 * e + e * d;
  // Forward partial sums, backward gather of rows, backward reduction: the
  // allreduce(o, P) term appears twice on purpose.
  out.total = 4 * e + e * d + mc.allreduce(o, p) + mc.allreduce(o * d, p) + mc.allreduce(o, p);
  out.comm = out.total - out.compute;
  return out;
}

LayerCost sce_cost(const Vertex& v, const int64_t* c, const Machine& mc) {
  size_t last = v.dom.size() - 1;
  double e = per_device_points(v, c), bt = 1;
  for (size_t i = 0; i < last; ++i) bt *= static_cast<double>(v.dom[i]) / static_cast<double>(c[i]);
  LayerCost out;
  out.compute = 4 * e + 2 * bt;
  out.total = 4 * e + 2 * bt + (c[last] > 1 ? mc.words(2 * bt) : 0);
  out.comm = out.total - out.compute;
  return out;
}

}  // namespace pase::ops
