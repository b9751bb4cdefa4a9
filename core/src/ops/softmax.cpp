// Softmax and SoftmaxCrossEntropy (core/docs/graph-format.md; cost:
// core/docs/cost-model.md section 5).
#include "op_table.hpp"

namespace pase {
namespace {

using T = Attr::Type;

// ---- Softmax along one axis (-1 by default) ----

LayerCost softmax_cost(const Vertex& v, const VertexModel& model, const int64_t* c,
                       const ops::Machine& mc) {
  int a = model.axis;
  double e = ops::per_device_points(v, c), o = 1;
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

Error lower_softmax(Lowering& lo) { return lower_along_axis(lo, "Softmax", softmax_cost); }

// ---- SoftmaxCrossEntropy: the loss over the last (class) dimension ----

LayerCost sce_cost(const Vertex& v, const VertexModel&, const int64_t* c, const ops::Machine& mc) {
  size_t last = v.dom.size() - 1;
  double e = ops::per_device_points(v, c), bt = 1;
  for (size_t i = 0; i < last; ++i) bt *= static_cast<double>(v.dom[i]) / static_cast<double>(c[i]);
  LayerCost out;
  out.compute = 4 * e + 2 * bt;
  out.total = 4 * e + 2 * bt + (c[last] > 1 ? mc.words(2 * bt) : 0);
  out.comm = out.total - out.compute;
  return out;
}

Error lower_sce(Lowering& lo) {
  if (Error e = lo.want_inputs(1, 1); !e.message.empty()) return e;
  const Shape& s = lo.inputs()[0].shape;
  VertexPlan p = same_shape_plan(lo, "SoftmaxCrossEntropy");
  // The per-example loss: the input without its class dimension.
  p.outputs[0] = OutPort{Shape(s.begin(), s.end() - 1), identity_map(s.size() - 1)};
  if (p.outputs[0].shape.empty()) p.outputs[0] = OutPort{{1}, {{}}};
  p.model.cost = sce_cost;
  lo.publish(lo.emit(std::move(p)), false);
  return {};
}

}  // namespace

void register_softmax(OpTable& table) {
  table.add({"Softmax", 9, {optional("axis", T::kInt, &LayerSpec::axis, -1)}, lower_softmax});
  table.add({"SoftmaxCrossEntropy", 10, {}, lower_sce});
}

}  // namespace pase
