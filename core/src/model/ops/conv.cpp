// Windowed ops on (b, c, h, w) images: Conv and Pool
// (core/docs/graph-format.md; cost: core/docs/cost-model.md sections 4 and 5).
#include <array>

#include "model/op_table.hpp"

namespace pase {
namespace {

using T = Attr::Type;

// Output size of a windowed op along one axis, or nullopt when the window is
// larger than the padded input.
std::optional<int64_t> window_out(int64_t size, int64_t win, int64_t stride, int64_t pad) {
  int64_t span = size - win + 2 * pad;
  if (span < 0) return std::nullopt;
  return span / stride + 1;
}

std::optional<Error> check_stride_pad(const Lowering& lo) {
  const LayerSpec& l = lo.layer();
  for (int i = 0; i < 2; ++i) {
    if (l.stride[i] <= 0) return lo.err("must be a positive integer", "stride");
    if (l.pad[i] < 0) return lo.err("must be a non-negative integer", "pad");
  }
  return std::nullopt;
}

// ---- Conv ----

std::optional<Error> lower_conv(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(1, 1)) return e;
  const Shape& x = lo.inputs()[0].shape;
  if (x.size() != 4)
    return lo.err("Conv input must be (b, c, h, w), got " + shape_str(x), "inputs[0]");
  if (l.filter.size() != 4) return lo.err("must be [n, c, r, s]", "filter");
  for (int64_t f : l.filter)
    if (f <= 0) return lo.err("sizes must be positive integers", "filter");
  // A LayerSpec built in code is not checked by the JSON reader.
  if (l.group <= 0) return lo.err("must be a positive integer", "group");
  const int64_t group = l.group;
  if (x[1] % group != 0)
    return lo.err("group " + std::to_string(group) + " does not divide the input's " +
                      std::to_string(x[1]) + " channels",
                  "group");
  if (l.filter[1] != x[1] / group) {
    std::string want = "input " + std::to_string(x[1]);
    if (group > 1)
      want += " / group " + std::to_string(group) + " = " + std::to_string(x[1] / group);
    return lo.err("channel " + std::to_string(l.filter[1]) + " does not match " + want, "filter");
  }
  if (l.filter[0] % group != 0)
    return lo.err("group " + std::to_string(group) + " does not divide the filter's " +
                      std::to_string(l.filter[0]) + " output channels",
                  "group");
  if (auto e = check_stride_pad(lo)) return e;
  auto ho = window_out(x[2], l.filter[2], l.stride[0], l.pad[0]);
  auto wo = window_out(x[3], l.filter[3], l.stride[1], l.pad[1]);
  if (!ho || !wo)
    return lo.err(
        "filter " + shape_str(l.filter) + " is larger than the padded input " + shape_str(x),
        "filter");
  VertexPlan p;
  p.op = "Conv";
  VertexModel& m = p.model;
  m.cost = ops::gemm_cost;
  m.batch_dim = 0;
  m.gemm.pw = l.pw;
  const Shape out = {x[0], l.filter[0], *ho, *wo};
  if (group == 1) {
    // The paper's Conv (cost-model.md section 5), exactly.
    p.dims = {"b", "c", "h", "w", "r", "s", "n"};
    p.kinds = {DimKind::kBatch,     DimKind::kReduction, DimKind::kSpatial, DimKind::kSpatial,
               DimKind::kReduction, DimKind::kReduction, DimKind::kHidden};
    p.dom = {x[0], x[1], *ho, *wo, l.filter[2], l.filter[3], l.filter[0]};
    p.inputs.push_back(lo.port(0, identity_map(4)));
    p.outputs.push_back(OutPort{out, {{0}, {6}, {2}, {3}}});
    m.pinned.assign(7, false);
    m.pinned[2] = m.pinned[3] = true;  // no halo exchange is modelled
    m.gemm.m = {0, 2, 3};
    m.gemm.n = {6};
    m.gemm.k = {1, 4, 5};
  } else {
    // Grouped: each group is an independent GEMM, so the group is a GEMM
    // batch dimension `g` (core/docs/cost-model.md, "Extension: grouped
    // convolutions"; not in the PaSE paper). The channels of the input and
    // the output are (group, c) and (group, n), group outermost.
    p.dims = {"b", "g", "c", "h", "w", "r", "s", "n"};
    p.kinds = {DimKind::kBatch,   DimKind::kHidden,    DimKind::kReduction, DimKind::kSpatial,
               DimKind::kSpatial, DimKind::kReduction, DimKind::kReduction, DimKind::kHidden};
    p.dom = {x[0], group, x[1] / group, *ho, *wo, l.filter[2], l.filter[3], l.filter[0] / group};
    p.inputs.push_back(lo.port(0, {{0}, {1, 2}, {3}, {4}}));
    p.outputs.push_back(OutPort{out, {{0}, {1, 7}, {3}, {4}}});
    m.pinned.assign(8, false);
    m.pinned[3] = m.pinned[4] = true;  // no halo exchange is modelled
    m.gemm.batch = {1};
    m.gemm.m = {0, 3, 4};
    m.gemm.n = {7};
    m.gemm.k = {2, 5, 6};
  }
  if (auto e = lo.check_dom(p.dom)) return e;
  // The filter [n, c / group, r, s]: a sub-product of dom, so below 2^62.
  m.weight_elements = l.filter[0] * l.filter[1] * l.filter[2] * l.filter[3];
  // The filter spans (n, c, r, s), and the groups of a grouped Conv.
  if (p.dims.size() == 8) {
    m.weight_dims = {1, 2, 5, 6, 7};
  } else {
    m.weight_dims = {1, 4, 5, 6};
  }
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

// ---- Pool ----

// The window's halo rows and columns are exchanged when the spatial
// dimensions are split (core/docs/cost-model.md section 5, Pool).
LayerCost pool_cost(const Vertex& v, const VertexModel& model, const int64_t* c,
                    const ops::Machine& mc) {
  const Shape& in = v.inputs[0].shape;
  double ipp[4];
  for (int i = 0; i < 4; ++i) ipp[i] = static_cast<double>(in[i]) / static_cast<double>(c[i]);
  double hh = ipp[2] + (c[2] > 1 ? static_cast<double>(model.window[0]) : 0);
  double ww = ipp[3] + (c[3] > 1 ? static_cast<double>(model.window[1]) : 0);
  double ghost = (hh * ww - ipp[2] * ipp[3]) * ipp[0] * ipp[1];
  LayerCost out;
  out.compute = ops::per_device_points(v, c);
  out.total = out.compute + mc.words_over(ghost, c, v.dom.size(), {2, 3});  // among the h, w blocks
  out.comm = out.total - out.compute;
  return out;
}

std::optional<Error> lower_pool(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (auto e = lo.want_inputs(1, 1)) return e;
  const Shape& x = lo.inputs()[0].shape;
  if (x.size() != 4)
    return lo.err("Pool input must be (b, c, h, w), got " + shape_str(x), "inputs[0]");
  if (l.window.size() != 2 || l.window[0] <= 0 || l.window[1] <= 0)
    return lo.err("must be [r, s] with positive sizes", "window");
  if (auto e = check_stride_pad(lo)) return e;
  auto ho = window_out(x[2], l.window[0], l.stride[0], l.pad[0]);
  auto wo = window_out(x[3], l.window[1], l.stride[1], l.pad[1]);
  if (!ho || !wo)
    return lo.err(
        "window " + shape_str(l.window) + " is larger than the padded input " + shape_str(x),
        "window");
  VertexPlan p;
  p.op = "Pool";
  p.dims = {"b", "c", "h", "w"};
  p.kinds = {DimKind::kBatch, DimKind::kHidden, DimKind::kSpatial, DimKind::kSpatial};
  p.dom = {x[0], x[1], *ho, *wo};
  p.inputs.push_back(lo.port(0, identity_map(4)));
  p.outputs.push_back(OutPort{p.dom, identity_map(4)});
  p.model.cost = pool_cost;
  p.model.batch_dim = 0;
  p.model.window = {l.window[0], l.window[1]};
  lo.publish(lo.emit(std::move(p)), false);
  return std::nullopt;
}

}  // namespace

void register_conv(OpTable& table) {
  Attr filter = required("filter", T::kShape, &LayerSpec::filter);
  filter.rank = 4;
  filter.layout = "[n, c, r, s]";
  Attr window = required("window", T::kShape, &LayerSpec::window);
  window.rank = 2;
  window.layout = "[r, s]";
  const Attr stride = optional("stride", T::kStride, &LayerSpec::stride, 1);
  const Attr pad = optional("pad", T::kPad, &LayerSpec::pad, 0);
  table.add({"Conv",
             4,
             {filter, stride, pad, optional("pw", T::kNonNegativeInt, &LayerSpec::pw),
              optional("group", T::kPositiveInt, &LayerSpec::group, 1)},
             lower_conv});
  table.add({"Pool", 5, {window, stride, pad}, lower_pool});
}

}  // namespace pase
