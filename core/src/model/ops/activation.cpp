// Activation: a one-input element-wise function (ReLU, GELU, SiLU, tanh, ...)
// of `pw` point-wise operations per element
// (core/docs/graph-format.md; cost: core/docs/cost-model.md section 5).
#include "model/op_table.hpp"

namespace pase {
namespace {

std::optional<Error> lower_activation(Lowering& lo) {
  if (auto e = lo.want_inputs(1, 1)) return e;
  VertexPlan p = same_shape_plan(lo, "Activation");
  p.model.cost = ops::pointwise_cost;
  p.model.pw = lo.layer().pw;
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

}  // namespace

void register_activation(OpTable& table) {
  table.add({"Activation",
             18,
             {optional("pw", Attr::Type::kNonNegativeInt, &LayerSpec::pw)},
             lower_activation});
}

}  // namespace pase
