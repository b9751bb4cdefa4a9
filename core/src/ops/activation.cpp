// Activation: a one-input element-wise function (ReLU, GELU, SiLU, tanh, ...)
// of `pw` point-wise operations per element
// (core/docs/graph-format.md; cost: core/docs/cost-model.md section 5).
#include "op_table.hpp"

namespace pase {
namespace {

// Each device applies the function to its part of the input: no
// communication, (1 + pw) operations per element it holds.
LayerCost activation_cost(const Vertex& v, const VertexModel& model, const int64_t* c,
                          const ops::Machine&) {
  LayerCost out;
  out.compute = (1 + static_cast<double>(model.pw)) * ops::per_device_points(v, c);
  out.total = out.compute;
  return out;
}

Error lower_activation(Lowering& lo) {
  if (Error e = lo.want_inputs(1, 1); !e.message.empty()) return e;
  VertexPlan p = same_shape_plan(lo, "Activation");
  p.model.cost = activation_cost;
  p.model.pw = lo.layer().pw;
  lo.publish(lo.emit(std::move(p)), false);
  return {};
}

}  // namespace

void register_activation(OpTable& table) {
  table.add({"Activation",
             18,
             {optional("pw", Attr::Type::kNonNegativeInt, &LayerSpec::pw)},
             lower_activation});
}

}  // namespace pase
