// Windowed ops on (b, c, h, w) images: Conv and Pool
// (core/docs/graph-format.md; cost: core/docs/cost-model.md sections 4 and 5).
#include <array>

#include "op_table.hpp"

namespace pase {
namespace {

using json_detail::Json;
using json_detail::ObjectReader;
using Pair = std::array<int64_t, 2>;

// ---- Attributes shared by Conv and Pool ----

// Stride and pad: one number for both, or [h, w].
Result<Pair> to_pair(const Json& value, const std::string& where, int64_t min) {
  const std::string_view what = min > 0 ? "a positive integer or a list [h, w] of two"
                                        : "a non-negative integer or a list [h, w] of two";
  if (value.is_array()) {
    if (value.size() != 2) return json_detail::type_error(what, value, where);
    Pair pair{};
    for (size_t i = 0; i < 2; ++i) {
      Result<int64_t> n =
          json_detail::to_int_at_least(value[i], json_detail::index_path(where, i), min,
                                       min > 0 ? "a positive integer" : "a non-negative integer");
      if (!n) return n.error();
      pair[i] = *n;
    }
    return pair;
  }
  if (!value.is_number()) return json_detail::type_error(what, value, where);
  Result<int64_t> n = json_detail::to_int_at_least(value, where, min, what);
  if (!n) return n.error();
  return Pair{*n, *n};
}

Result<Pair> to_stride(const Json& value, const std::string& where) {
  return to_pair(value, where, 1);
}
Result<Pair> to_pad(const Json& value, const std::string& where) {
  return to_pair(value, where, 0);
}

// A shape of a fixed rank (Conv filter, Pool window).
Result<Shape> to_shape_of_rank(const Json& value, const std::string& where, size_t rank,
                               std::string_view layout) {
  Result<Shape> shape = json_detail::to_shape(value, where);
  if (shape && shape->size() != rank) {
    return Error{"must be a list of " + std::to_string(rank) + " positive integers " +
                     std::string(layout) + " (got " + std::to_string(shape->size()) + ")",
                 where};
  }
  return shape;
}

void read_stride_pad(ObjectReader& r, LayerSpec& l) {
  r.read("stride", l.stride, to_stride);
  r.read("pad", l.pad, to_pad);
}

// A stride or pad as the document writes it: one number when both agree;
// nothing at the default.
void write_stride_pad(const LayerSpec& l, Json& j) {
  auto pair = [](const Pair& p) { return p[0] == p[1] ? Json(p[0]) : Json::array({p[0], p[1]}); };
  if (l.stride != Pair{1, 1}) j["stride"] = pair(l.stride);
  if (l.pad != Pair{0, 0}) j["pad"] = pair(l.pad);
}

// Output size of a windowed op along one axis, or nullopt when the window is
// larger than the padded input.
std::optional<int64_t> window_out(int64_t size, int64_t win, int64_t stride, int64_t pad) {
  int64_t span = size - win + 2 * pad;
  if (span < 0) return std::nullopt;
  return span / stride + 1;
}

Error check_stride_pad(const Lowering& lo) {
  const LayerSpec& l = lo.layer();
  for (int i = 0; i < 2; ++i) {
    if (l.stride[i] <= 0) return lo.err("must be a positive integer", "stride");
    if (l.pad[i] < 0) return lo.err("must be a non-negative integer", "pad");
  }
  return {};
}

// ---- Conv ----

void read_conv(ObjectReader& r, LayerSpec& l) {
  r.require("filter", l.filter, [](const Json& v, const std::string& w) {
    return to_shape_of_rank(v, w, 4, "[n, c, r, s]");
  });
  read_stride_pad(r, l);
  r.read("pw", l.pw, json_detail::to_non_negative_int);
}

void write_conv(const LayerSpec& l, Json& j) {
  j["filter"] = l.filter;
  write_stride_pad(l, j);
  if (l.pw != 0) j["pw"] = l.pw;
}

Error lower_conv(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (Error e = lo.want_inputs(1, 1); !e.message.empty()) return e;
  const Shape& x = lo.inputs()[0].shape;
  if (x.size() != 4)
    return lo.err("Conv input must be (b, c, h, w), got " + shape_str(x), "inputs[0]");
  if (l.filter.size() != 4) return lo.err("must be [n, c, r, s]", "filter");
  for (int64_t f : l.filter)
    if (f <= 0) return lo.err("sizes must be positive integers", "filter");
  if (l.filter[1] != x[1])
    return lo.err(
        "channel " + std::to_string(l.filter[1]) + " does not match input " + std::to_string(x[1]),
        "filter");
  if (Error e = check_stride_pad(lo); !e.message.empty()) return e;
  auto ho = window_out(x[2], l.filter[2], l.stride[0], l.pad[0]);
  auto wo = window_out(x[3], l.filter[3], l.stride[1], l.pad[1]);
  if (!ho || !wo)
    return lo.err(
        "filter " + shape_str(l.filter) + " is larger than the padded input " + shape_str(x),
        "filter");
  VertexPlan p;
  p.op = "Conv";
  p.dims = {"b", "c", "h", "w", "r", "s", "n"};
  p.kinds = {DimKind::kBatch,     DimKind::kReduction, DimKind::kSpatial, DimKind::kSpatial,
             DimKind::kReduction, DimKind::kReduction, DimKind::kHidden};
  p.dom = {x[0], x[1], *ho, *wo, l.filter[2], l.filter[3], l.filter[0]};
  if (Error e = lo.check_dom(p.dom); !e.message.empty()) return e;
  p.inputs.push_back(lo.port(0, identity_map(4)));
  p.outputs.push_back(OutPort{{x[0], l.filter[0], *ho, *wo}, {{0}, {6}, {2}, {3}}});
  VertexModel& m = p.model;
  m.cost = ops::gemm_cost;
  m.pinned.assign(7, false);
  m.pinned[2] = m.pinned[3] = true;  // no halo exchange is modelled
  m.batch_dim = 0;
  m.gemm.m = {0, 2, 3};
  m.gemm.n = {6};
  m.gemm.k = {1, 4, 5};
  m.gemm.pw = l.pw;
  lo.publish(lo.emit(std::move(p)), false);
  return {};
}

// ---- Pool ----

void read_pool(ObjectReader& r, LayerSpec& l) {
  r.require("window", l.window, [](const Json& v, const std::string& w) {
    return to_shape_of_rank(v, w, 2, "[r, s]");
  });
  read_stride_pad(r, l);
}

void write_pool(const LayerSpec& l, Json& j) {
  j["window"] = l.window;
  write_stride_pad(l, j);
}

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
  out.total = out.compute + mc.words(ghost);
  out.comm = out.total - out.compute;
  return out;
}

Error lower_pool(Lowering& lo) {
  const LayerSpec& l = lo.layer();
  if (Error e = lo.want_inputs(1, 1); !e.message.empty()) return e;
  const Shape& x = lo.inputs()[0].shape;
  if (x.size() != 4)
    return lo.err("Pool input must be (b, c, h, w), got " + shape_str(x), "inputs[0]");
  if (l.window.size() != 2 || l.window[0] <= 0 || l.window[1] <= 0)
    return lo.err("must be [r, s] with positive sizes", "window");
  if (Error e = check_stride_pad(lo); !e.message.empty()) return e;
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
  return {};
}

}  // namespace

void register_conv(OpTable& table) {
  table.add({"Conv", 4, {"filter", "stride", "pad", "pw"}, read_conv, write_conv, lower_conv});
  table.add({"Pool", 5, {"window", "stride", "pad"}, read_pool, write_pool, lower_pool});
}

}  // namespace pase
