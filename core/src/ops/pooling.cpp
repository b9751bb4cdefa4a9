// Pooling: the window's halo rows and columns are exchanged when the spatial
// dimensions are split (cost-model.md section 5, Pool).
#include "ops/op_cost.hpp"

namespace pase::ops {

LayerCost pool_cost(const Vertex& v, const int64_t* c, const Machine& mc) {
  const Shape& in = v.inputs[0].shape;
  double ipp[4];
  for (int i = 0; i < 4; ++i) ipp[i] = static_cast<double>(in[i]) / static_cast<double>(c[i]);
  double hh = ipp[2] + (c[2] > 1 ? static_cast<double>(v.window[0]) : 0);
  double ww = ipp[3] + (c[3] > 1 ? static_cast<double>(v.window[1]) : 0);
  double ghost = (hh * ww - ipp[2] * ipp[3]) * ipp[0] * ipp[1];
  LayerCost out;
  out.compute = per_device_points(v, c);
  out.total = out.compute + mc.words(ghost);
  out.comm = out.total - out.compute;
  return out;
}

}  // namespace pase::ops
