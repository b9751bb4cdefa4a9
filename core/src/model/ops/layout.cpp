// The data-movement ops: Reshape (lowered to the vertices Ravel and Unravel),
// Transpose, Concat, Split, Stack and Unstack. None computes; the edges into
// and out of them carry the cost of moving data (core/docs/cost-model.md
// sections 3 and 5).
#include "model/op_table.hpp"

namespace pase {
namespace {

using T = Attr::Type;

// ---- Reshape: Ravel to one dimension, then Unravel to the target ----

std::optional<Error> lower_reshape(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(1, 1)) return e;
  const Shape& s = lo.inputs()[0].shape;
  if (auto e = check_shape(l.shape, lo.where("shape"))) return *e;
  int64_t n_in = *element_count(s), n_out = *element_count(l.shape);
  if (n_in != n_out)
    return lo.err("shape " + shape_str(l.shape) + " has " + std::to_string(n_out) +
                      " elements but the input " + shape_str(s) + " has " + std::to_string(n_in),
                  "shape");
  // Every dimension of each side is in the one flat dimension between them.
  auto all = [](size_t rank) {
    TensorMap m(1);
    for (size_t i = 0; i < rank; ++i) m[0].push_back(static_cast<int>(i));
    return m;
  };
  VertexPlan r = same_shape_plan(lo, "Ravel");
  r.name = l.name + "/ravel";
  r.outputs[0] = OutPort{{n_in}, all(s.size())};
  r.model.cost = ops::no_cost;
  r.model.contiguous_only = true;
  const int ravel = lo.emit(std::move(r));
  VertexPlan u;
  u.op = "Unravel";
  u.dims = generic_dims(l.shape.size());
  u.dom = l.shape;
  u.inputs.push_back(Port{Slot{ravel, 0, {n_in}}, all(l.shape.size())});
  u.outputs.push_back(OutPort{l.shape, identity_map(l.shape.size())});
  u.model.cost = ops::no_cost;
  u.model.contiguous_only = true;
  lo.publish(lo.emit(std::move(u)), false);
  return std::nullopt;
}

// ---- Transpose ----

std::optional<Error> lower_transpose(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(1, 1)) return e;
  const Shape& s = lo.inputs()[0].shape;
  std::vector<bool> seen(s.size(), false);
  if (l.perm.size() != s.size())
    return lo.err(
        "must list " + std::to_string(s.size()) + " axes, got " + std::to_string(l.perm.size()),
        "perm");
  for (int64_t p : l.perm) {
    if (p < 0 || p >= static_cast<int64_t>(s.size()) || seen[p])
      return lo.err(
          shape_str(l.perm) + " is not a permutation of 0.." + std::to_string(s.size() - 1),
          "perm");
    seen[p] = true;
  }
  VertexPlan p = same_shape_plan(lo, "Transpose");
  p.model.cost = ops::no_cost;
  OutPort& out = p.outputs[0];
  out = OutPort{};
  for (int64_t a : l.perm) {
    out.shape.push_back(s[a]);
    out.map.push_back({static_cast<int>(a)});
  }
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

// ---- Concat, Split, Stack, Unstack: an axis ----

std::optional<Error> lower_concat(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(2, SIZE_MAX)) return e;
  const std::vector<Slot>& in = lo.inputs();
  const Shape& s = in[0].shape;
  Result<int> axis = checked_axis(lo, l.axis, s);
  if (!axis) return axis.error();
  int64_t total = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    const Shape& t = in[k].shape;
    std::string f = "inputs[" + std::to_string(k) + "]";
    if (t.size() != s.size())
      return lo.err("rank " + std::to_string(t.size()) + " differs from the first input's " +
                        std::to_string(s.size()),
                    f);
    for (size_t i = 0; i < s.size(); ++i)
      if (static_cast<int>(i) != *axis && t[i] != s[i])
        return lo.err("size " + std::to_string(t[i]) + " at dimension " + std::to_string(i) +
                          " differs from the first input's " + std::to_string(s[i]),
                      f);
    if (__builtin_add_overflow(total, t[*axis], &total))
      return lo.err("concatenated size overflows", "axis");
  }
  Shape out = s;
  out[*axis] = total;
  if (!element_count(out)) return lo.err("the output has too many elements", "inputs");
  VertexPlan p = same_shape_plan(lo, "Concat");
  p.model.cost = ops::no_cost;
  p.dom[*axis] = 1;
  for (size_t k = 1; k < in.size(); ++k) p.inputs.push_back(lo.port(k, identity_map(s.size())));
  p.outputs[0].shape = out;
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

std::optional<Error> lower_split(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(1, 1)) return e;
  const Shape& s = lo.inputs()[0].shape;
  Result<int> axis = checked_axis(lo, l.axis, s);
  if (!axis) return axis.error();
  if (l.num <= 0 || l.num > kMaxOutputs)
    return lo.err("must be an integer from 1 to " + std::to_string(kMaxOutputs), "num");
  if (s[*axis] % l.num != 0)
    return lo.err(std::to_string(l.num) + " does not divide size " + std::to_string(s[*axis]) +
                      " of axis " + std::to_string(*axis),
                  "num");
  VertexPlan p = same_shape_plan(lo, "Split");
  p.model.cost = ops::no_cost;
  p.dom[*axis] = 1;
  p.outputs[0].shape[*axis] = s[*axis] / l.num;
  p.outputs.resize(static_cast<size_t>(l.num), p.outputs[0]);
  lo.publish(lo.emit(std::move(p)), true);
  return std::nullopt;
}

std::optional<Error> lower_stack(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(2, SIZE_MAX)) return e;
  const std::vector<Slot>& in = lo.inputs();
  const Shape& s = in[0].shape;
  for (size_t k = 1; k < in.size(); ++k)
    if (in[k].shape != s)
      return lo.err(
          "shape " + shape_str(in[k].shape) + " differs from the first input's " + shape_str(s),
          "inputs[" + std::to_string(k) + "]");
  auto axis = norm_axis(l.axis, s.size() + 1);
  if (!axis)
    return lo.err(
        "axis " + std::to_string(l.axis) + " is out of range for stacking " + shape_str(s), "axis");
  if (s.size() + 1 > kMaxRank)
    return lo.err("the output would have " + std::to_string(s.size() + 1) +
                      " dimensions; a tensor has at most " + std::to_string(kMaxRank),
                  "inputs");
  Shape out = s;
  out.insert(out.begin() + *axis, static_cast<int64_t>(in.size()));
  if (!element_count(out)) return lo.err("the output has too many elements", "inputs");
  VertexPlan p;
  p.op = "Stack";
  p.model.cost = ops::no_cost;
  p.dom = s;
  p.dom.insert(p.dom.begin() + *axis, 1);
  p.dims = generic_dims(p.dom.size(), *axis);
  // Input dimension j is output dimension j, or j + 1 past the new axis.
  TensorMap map;
  for (size_t j = 0; j < s.size(); ++j)
    map.push_back({static_cast<int>(j < static_cast<size_t>(*axis) ? j : j + 1)});
  for (size_t k = 0; k < in.size(); ++k) p.inputs.push_back(lo.port(k, map));
  p.outputs.push_back(OutPort{out, identity_map(p.dom.size())});
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

std::optional<Error> lower_unstack(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(1, 1)) return e;
  const Shape& s = lo.inputs()[0].shape;
  Result<int> axis = checked_axis(lo, l.axis, s);
  if (!axis) return axis.error();
  if (s.size() < 2) return lo.err("Unstack needs an input of rank 2 or more", "inputs[0]");
  if (s[*axis] > kMaxOutputs)
    return lo.err("would make " + std::to_string(s[*axis]) + " outputs; the limit is " +
                      std::to_string(kMaxOutputs),
                  "axis");
  VertexPlan p = same_shape_plan(lo, "Unstack");
  p.model.cost = ops::no_cost;
  p.dims = generic_dims(s.size(), *axis);
  p.dom[*axis] = 1;
  OutPort out;
  for (size_t i = 0; i < s.size(); ++i)
    if (static_cast<int>(i) != *axis) {
      out.shape.push_back(s[i]);
      out.map.push_back({static_cast<int>(i)});
    }
  p.outputs.assign(static_cast<size_t>(s[*axis]), out);
  lo.publish(lo.emit(std::move(p)), true);
  return std::nullopt;
}

}  // namespace

void register_layout(OpTable& table) {
  const Attr axis = required("axis", T::kInt, &LayerSpec::axis);
  const Attr axis_or_0 = optional("axis", T::kInt, &LayerSpec::axis, 0);
  table.add({"Reshape", 11, {required("shape", T::kShape, &LayerSpec::shape)}, lower_reshape});
  table.add({"Transpose", 12, {required("perm", T::kIntList, &LayerSpec::perm)}, lower_transpose});
  table.add({"Concat", 13, {axis}, lower_concat});
  table.add({"Split", 14, {required("num", T::kPositiveInt, &LayerSpec::num), axis}, lower_split});
  table.add({"Stack", 15, {axis_or_0}, lower_stack});
  table.add({"Unstack", 16, {axis_or_0}, lower_unstack});
}

}  // namespace pase
