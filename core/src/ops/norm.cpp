// Normalization (BatchNorm / LayerNorm) and ReduceMean: reductions across the
// devices that split the reduced dimensions (cost-model.md section 5).
#include "ops/op_cost.hpp"

namespace pase::ops {

LayerCost norm_cost(const Vertex& v, const int64_t* c, const Machine& mc) {
  int a = v.axis;
  double e = per_device_points(v, c);
  double dpp_axis = static_cast<double>(v.dom[a]) / static_cast<double>(c[a]);
  int64_t others = 1;
  for (size_t i = 0; i < v.dom.size(); ++i)
    if (static_cast<int>(i) != a) others *= c[i];
  LayerCost out;
  out.compute = 16 * e;
  out.total = 16 * e + 4 * mc.allreduce(e / dpp_axis, static_cast<double>(c[a])) +
              4 * mc.allreduce(dpp_axis, static_cast<double>(others));
  out.comm = out.total - out.compute;
  return out;
}

LayerCost reduce_mean_cost(const Vertex& v, const int64_t* c, const Machine& mc) {
  int64_t p = 1;
  for (int a : v.axes) p *= c[a];
  LayerCost out;
  out.total = mc.allreduce(per_device_points(v, c), static_cast<double>(p));
  out.comm = out.total;
  return out;
}

}  // namespace pase::ops
