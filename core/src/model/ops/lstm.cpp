// LSTM: `layers` stacked layers over a (b, s, u) sequence
// (core/docs/graph-format.md; cost: core/docs/cost-model.md sections 4 and 5).
#include <cstdint>
#include <limits>

#include "model/op_table.hpp"

namespace pase {
namespace {

using T = Attr::Type;

// The GEMM of the four gates, plus the cell re-layout: the (b, u) state moves
// from (c_b, c_n) to (c_b, c_k) at every layer and step (full L and s).
LayerCost lstm_cost(const Vertex& v, const VertexModel& model, const int64_t* c,
                    const ops::Machine& mc) {
  LayerCost out = ops::gemm_cost(v, model, c, mc);
  Shape state{v.dom[2], v.dom[3]};
  int64_t from[2] = {c[2], c[3]}, to[2] = {c[2], c[4]};
  double x = ops::redistribution_words(state, from, to);
  // The re-layout is among the devices of the n and k blocks (core/docs/cluster.md).
  out.total += static_cast<double>(v.dom[0]) * static_cast<double>(v.dom[1]) *
               mc.words_over(x, c, v.dom.size(), {3, 4});
  out.comm = out.total - out.compute;
  return out;
}

std::optional<Error> lower_lstm(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(1, 1)) return e;
  const Shape& x = lo.inputs()[0].shape;
  if (x.size() != 3)
    return lo.err("LSTM input must be (b, s, u), got " + shape_str(x), "inputs[0]");
  if (l.units <= 0) return lo.err("must be a positive integer", "units");
  if (l.units != x[2])
    return lo.err("units " + std::to_string(l.units) + " does not match input features " +
                      std::to_string(x[2]),
                  "units");
  if (l.layers <= 0) return lo.err("must be a positive integer", "layers");
  VertexPlan p;
  p.op = "LSTM";
  p.dims = {"l", "s", "b", "n", "k"};
  p.kinds = {DimKind::kLayers, DimKind::kSequence, DimKind::kBatch, DimKind::kHidden,
             DimKind::kReduction};
  p.dom = {l.layers, x[1], x[0], x[2], x[2]};
  if (auto e = lo.check_dom(p.dom)) return e;
  p.inputs.push_back(lo.port(0, {{2}, {1}, {4}}));
  p.outputs.push_back(OutPort{{x[0], x[1], x[2]}, {{2}, {1}, {3}}});
  VertexModel& m = p.model;
  m.cost = lstm_cost;
  m.pinned.assign(5, false);
  m.pinned[1] = true;  // the sequence is processed in order
  m.batch_dim = 2;
  m.gemm.batch = {0};
  m.gemm.m = {1, 2};
  m.gemm.n = {3};
  m.gemm.k = {4};
  m.gemm.pw = 3;
  m.gemm.n_scale = 4;  // the four gates
  m.gemm.k_scale = 2;  // input and recurrent state
  // L * 2u * 4u (core/docs/graph-format.md, "Parameters"); dom bounds L * u * u
  // below 2^62, not eight times it, so a count past the limit saturates.
  m.weight_elements = element_count({l.layers, 2 * l.units, 4 * l.units})
                          .value_or(std::numeric_limits<int64_t>::max());
  m.weight_dims = {0, 4, 3};  // (L, k, n)
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

}  // namespace

void register_lstm(OpTable& table) {
  table.add({"LSTM",
             17,
             {required("units", T::kPositiveInt, &LayerSpec::units),
              required("layers", T::kPositiveInt, &LayerSpec::layers)},
             lower_lstm});
}

}  // namespace pase
