// Softmax and SoftmaxCrossEntropy (core/docs/graph-format.md; cost:
// core/docs/cost-model.md section 5).
#include "op_table.hpp"

namespace pase {
namespace {

using json_detail::Json;
using json_detail::ObjectReader;

// ---- Softmax along one axis (-1 by default) ----

void read_softmax(ObjectReader& r, LayerSpec& l) {
  l.axis = -1;  // the format's default, not LayerSpec's
  r.read("axis", l.axis, json_detail::to_int);
}

void write_softmax(const LayerSpec& l, Json& j) {
  if (l.axis != -1) j["axis"] = l.axis;
}

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

Error lower_softmax(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (Error e = lo.want_inputs(1, 1); !e.message.empty()) return e;
  const Shape& s = lo.inputs()[0].shape;
  auto axis = norm_axis(l.axis, s.size());
  if (!axis)
    return lo.err("axis " + std::to_string(l.axis) + " is out of range for shape " + shape_str(s),
                  "axis");
  VertexPlan p = same_shape_plan(lo, "Softmax");
  p.model.cost = softmax_cost;
  p.model.axis = *axis;
  lo.publish(lo.emit(std::move(p)), false);
  return {};
}

// ---- SoftmaxCrossEntropy: the loss over the last (class) dimension ----

void read_nothing(ObjectReader&, LayerSpec&) {}
void write_nothing(const LayerSpec&, Json&) {}

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
  table.add({"Softmax", 9, {"axis"}, read_softmax, write_softmax, lower_softmax});
  table.add({"SoftmaxCrossEntropy", 10, {}, read_nothing, write_nothing, lower_sce});
}

}  // namespace pase
