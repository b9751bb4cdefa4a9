// Elementwise: two inputs of one shape, `pw` point-wise ops per element
// (core/docs/graph-format.md; cost: core/docs/cost-model.md section 5).
#include "model/op_table.hpp"

namespace pase {
namespace {

using T = Attr::Type;

std::optional<Error> lower_elementwise(Lowering& lo) {
  if (auto e = lo.want_inputs(2, 2)) return e;
  const std::vector<Slot>& in = lo.inputs();
  if (in[0].shape != in[1].shape)
    return lo.err(
        "input shapes " + shape_str(in[0].shape) + " and " + shape_str(in[1].shape) + " differ",
        "inputs");
  VertexPlan p = same_shape_plan(lo, "Elementwise");
  p.inputs.push_back(lo.port(1, identity_map(in[1].shape.size())));
  p.model.cost = ops::pointwise_cost;
  p.model.pw = lo.layer().pw;
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

}  // namespace

void register_elementwise(OpTable& table) {
  table.add(
      {"Elementwise", 6, {optional("pw", T::kNonNegativeInt, &LayerSpec::pw)}, lower_elementwise});
}

}  // namespace pase
