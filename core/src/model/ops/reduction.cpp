// The ops that reduce along axes: Norm (BatchNorm / LayerNorm), ReduceMean,
// Softmax and SoftmaxCrossEntropy. Splitting a reduced axis costs an
// all-reduce across the devices that split it (core/docs/graph-format.md;
// cost: core/docs/cost-model.md section 5).
#include "model/op_table.hpp"

namespace pase {
namespace {

using T = Attr::Type;

// ---- Norm: normalizes along one axis (-1 by default) ----

LayerCost norm_cost(const Vertex& v, const VertexModel& model, const int64_t* c,
                    const ops::Machine& mc) {
  int a = model.axis;
  double e = ops::per_device_points(v, c);
  double dpp_axis = static_cast<double>(v.dom[a]) / static_cast<double>(c[a]);
  int64_t others = 1;
  std::vector<int> rest;  // every dimension but the axis
  for (size_t i = 0; i < v.dom.size(); ++i)
    if (static_cast<int>(i) != a) {
      others *= c[i];
      rest.push_back(static_cast<int>(i));
    }
  const size_t n = v.dom.size();
  LayerCost out;
  out.compute = 16 * e;
  out.total = 16 * e + 4 * mc.allreduce_over(e / dpp_axis, static_cast<double>(c[a]), c, n, {a}) +
              4 * mc.allreduce_over(dpp_axis, static_cast<double>(others), c, n, rest);
  out.comm = out.total - out.compute;
  return out;
}

std::optional<Error> lower_norm(Lowering& lo) { return lower_along_axis(lo, "Norm", norm_cost); }

// ---- ReduceMean: mean over `axes` (all by default) ----

LayerCost reduce_mean_cost(const Vertex& v, const VertexModel& model, const int64_t* c,
                           const ops::Machine& mc) {
  int64_t p = 1;
  for (int a : model.axes) p *= c[a];
  LayerCost out;
  out.total = mc.allreduce_over(ops::per_device_points(v, c), static_cast<double>(p), c,
                                v.dom.size(), model.axes);
  out.comm = out.total;
  return out;
}

std::optional<Error> lower_reduce_mean(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(1, 1)) return e;
  const Shape& s = lo.inputs()[0].shape;
  std::vector<bool> reduced(s.size(), !l.has_axes);
  for (int64_t a : l.axes) {
    Result<int> axis = checked_axis(lo, a, s, "axes");
    if (!axis) return axis.error();
    if (reduced[*axis]) return lo.err("axis " + std::to_string(a) + " is named twice", "axes");
    reduced[*axis] = true;
  }
  VertexPlan p = same_shape_plan(lo, "ReduceMean");
  OutPort& out = p.outputs[0];
  out = OutPort{};
  for (size_t i = 0; i < s.size(); ++i) {
    if (reduced[i]) {
      p.model.axes.push_back(static_cast<int>(i));
      if (l.keepdims) {
        out.shape.push_back(1);
        out.map.push_back({});
      }
    } else {
      out.shape.push_back(s[i]);
      out.map.push_back({static_cast<int>(i)});
    }
  }
  if (out.shape.empty()) out = OutPort{{1}, {{}}};
  p.model.cost = reduce_mean_cost;
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

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
  const size_t n = v.dom.size();
  const std::vector<int> axis{a};
  out.total = 4 * e + e * d + mc.allreduce_over(o, p, c, n, axis) +
              mc.allreduce_over(o * d, p, c, n, axis) + mc.allreduce_over(o, p, c, n, axis);
  out.comm = out.total - out.compute;
  return out;
}

std::optional<Error> lower_softmax(Lowering& lo) {
  return lower_along_axis(lo, "Softmax", softmax_cost);
}

// ---- SoftmaxCrossEntropy: the loss over the last (class) dimension ----

LayerCost sce_cost(const Vertex& v, const VertexModel&, const int64_t* c, const ops::Machine& mc) {
  size_t last = v.dom.size() - 1;
  double e = ops::per_device_points(v, c), bt = 1;
  for (size_t i = 0; i < last; ++i) bt *= static_cast<double>(v.dom[i]) / static_cast<double>(c[i]);
  LayerCost out;
  out.compute = 4 * e + 2 * bt;
  out.total = 4 * e + 2 * bt +
              (c[last] > 1 ? mc.words_over(2 * bt, c, v.dom.size(), {static_cast<int>(last)}) : 0);
  out.comm = out.total - out.compute;
  return out;
}

std::optional<Error> lower_sce(Lowering& lo) {
  if (auto e = lo.want_inputs(1, 1)) return e;
  const Shape& s = lo.inputs()[0].shape;
  VertexPlan p = same_shape_plan(lo, "SoftmaxCrossEntropy");
  // The per-example loss: the input without its class dimension.
  p.outputs[0] = OutPort{Shape(s.begin(), s.end() - 1), identity_map(s.size() - 1)};
  if (p.outputs[0].shape.empty()) p.outputs[0] = OutPort{{1}, {{}}};
  p.model.cost = sce_cost;
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

}  // namespace

void register_reduction(OpTable& table) {
  table.add({"Norm", 7, {optional("axis", T::kInt, &LayerSpec::axis, -1)}, lower_norm});
  Attr axes = optional("axes", T::kIntList, &LayerSpec::axes);
  axes.present = &LayerSpec::has_axes;  // absent: every axis
  table.add({"ReduceMean",
             8,
             {axes, optional("keepdims", T::kBool, &LayerSpec::keepdims)},
             lower_reduce_mean});
  table.add({"Softmax", 9, {optional("axis", T::kInt, &LayerSpec::axis, -1)}, lower_softmax});
  table.add({"SoftmaxCrossEntropy", 10, {}, lower_sce});
}

}  // namespace pase
