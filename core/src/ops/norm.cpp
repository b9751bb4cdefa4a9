// Normalization (BatchNorm / LayerNorm as Norm) and ReduceMean: reductions
// across the devices that split the reduced dimensions
// (core/docs/graph-format.md; cost: core/docs/cost-model.md section 5).
#include "op_table.hpp"

namespace pase {
namespace {

using json_detail::Json;
using json_detail::ObjectReader;

// ---- Norm: normalizes along one axis (-1 by default) ----

void read_norm(ObjectReader& r, LayerSpec& l) {
  l.axis = -1;  // the format's default, not LayerSpec's
  r.read("axis", l.axis, json_detail::to_int);
}

void write_norm(const LayerSpec& l, Json& j) {
  if (l.axis != -1) j["axis"] = l.axis;
}

LayerCost norm_cost(const Vertex& v, const VertexModel& model, const int64_t* c,
                    const ops::Machine& mc) {
  int a = model.axis;
  double e = ops::per_device_points(v, c);
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

Error lower_norm(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (Error e = lo.want_inputs(1, 1); !e.message.empty()) return e;
  const Shape& s = lo.inputs()[0].shape;
  auto axis = norm_axis(l.axis, s.size());
  if (!axis)
    return lo.err("axis " + std::to_string(l.axis) + " is out of range for shape " + shape_str(s),
                  "axis");
  VertexPlan p = same_shape_plan(lo, "Norm");
  p.model.cost = norm_cost;
  p.model.axis = *axis;
  lo.publish(lo.emit(std::move(p)), false);
  return {};
}

// ---- ReduceMean: mean over `axes` (all by default) ----

void read_reduce_mean(ObjectReader& r, LayerSpec& l) {
  l.has_axes = r.read("axes", l.axes, json_detail::to_int_list);
  r.read("keepdims", l.keepdims, json_detail::to_bool);
}

void write_reduce_mean(const LayerSpec& l, Json& j) {
  if (l.has_axes) j["axes"] = l.axes;
  if (l.keepdims) j["keepdims"] = true;
}

LayerCost reduce_mean_cost(const Vertex& v, const VertexModel& model, const int64_t* c,
                           const ops::Machine& mc) {
  int64_t p = 1;
  for (int a : model.axes) p *= c[a];
  LayerCost out;
  out.total = mc.allreduce(ops::per_device_points(v, c), static_cast<double>(p));
  out.comm = out.total;
  return out;
}

Error lower_reduce_mean(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (Error e = lo.want_inputs(1, 1); !e.message.empty()) return e;
  const Shape& s = lo.inputs()[0].shape;
  std::vector<bool> reduced(s.size(), !l.has_axes);
  for (int64_t a : l.axes) {
    auto axis = norm_axis(a, s.size());
    if (!axis)
      return lo.err("axis " + std::to_string(a) + " is out of range for shape " + shape_str(s),
                    "axes");
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
  return {};
}

}  // namespace

void register_norm(OpTable& table) {
  table.add({"Norm", 7, {"axis"}, read_norm, write_norm, lower_norm});
  table.add({"ReduceMean",
             8,
             {"axes", "keepdims"},
             read_reduce_mean,
             write_reduce_mean,
             lower_reduce_mean});
}

}  // namespace pase
