// Constant folding (core/docs/import.md, "Shapes"): the nodes that compute
// only from shapes and constants (Constant, Shape, ConstantOfShape, Range,
// Equal, Where, Cast, ...) and the helpers the other handlers use when their
// inputs are constants. Exporters write a Reshape's target as such a
// sub-graph; folding it is how the importer knows every shape without the
// file's value_info.
#include <cmath>

#include "model/onnx/onnx_import.hpp"
#include "model/op_table.hpp"

namespace pase::onnx {

Value int_constant(Shape shape, std::vector<int64_t> ints) {
  Value v;
  v.kind = Kind::kConstant;
  v.type = kInt64;
  v.shape = std::move(shape);
  v.has_values = true;
  v.ints = std::move(ints);
  return v;
}

Value float_constant(Shape shape, std::vector<double> floats) {
  Value v;
  v.kind = Kind::kConstant;
  v.type = kFloat;
  v.shape = std::move(shape);
  v.has_values = true;
  v.floats = std::move(floats);
  return v;
}

Value opaque(const Shape& shape, int32_t type, const std::vector<const Value*>& from) {
  Value v;
  v.kind = Kind::kConstant;
  v.type = type;
  v.shape = shape;
  for (const Value* f : from)
    if (f->kind == Kind::kWeight) {
      v.kind = Kind::kWeight;
      v.roots.insert(v.roots.end(), f->roots.begin(), f->roots.end());
    }
  return v;
}

// The flat index into a tensor of shape `from` (broadcast to `to`) of every
// element of `to`, in order.
std::vector<int64_t> source_indices(const Shape& out,
                                    const std::function<int64_t(const std::vector<int64_t>&)>& at) {
  std::vector<int64_t> index;
  std::vector<int64_t> pos(out.size(), 0);
  for (int64_t n = elements(out).value_or(0); n > 0; --n) {
    index.push_back(at(pos));
    for (size_t d = out.size(); d-- > 0;) {
      if (++pos[d] < out[d]) break;
      pos[d] = 0;
    }
  }
  return index;
}

std::vector<int64_t> broadcast_index(const Shape& from, const Shape& to) {
  size_t offset = to.size() - from.size();
  return source_indices(to, [&](const std::vector<int64_t>& pos) {
    int64_t flat = 0;
    for (size_t d = 0; d < from.size(); ++d)
      flat = flat * from[d] + (from[d] == 1 ? 0 : pos[d + offset]);
    return flat;
  });
}

namespace {

bool small(const Shape& s) {
  std::optional<int64_t> n = elements(s);
  return n && *n <= kMaxConstantElements;
}

}  // namespace

std::optional<Value> fold_binary(const Value& a, const Value& b, double (*f)(double, double),
                                 bool to_int) {
  std::optional<Shape> shape = broadcast(a.shape, b.shape);
  if (!shape) return std::nullopt;
  bool is_float = a.is_float() || b.is_float();
  if (!a.has_values || !b.has_values || !small(*shape))
    return opaque(*shape, to_int ? kBool : a.type, {&a, &b});
  std::vector<int64_t> ia = broadcast_index(a.shape, *shape), ib = broadcast_index(b.shape, *shape);
  Value out = is_float && !to_int ? float_constant(*shape, {}) : int_constant(*shape, {});
  if (to_int) out.type = kBool;
  for (size_t i = 0; i < ia.size(); ++i) {
    double r = f(a.number(static_cast<size_t>(ia[i])), b.number(static_cast<size_t>(ib[i])));
    if (out.is_float())
      out.floats.push_back(r);
    else
      out.ints.push_back(static_cast<int64_t>(r));
  }
  return out;
}

Value gather_values(const Value& x, const Shape& shape, const std::vector<int64_t>& index) {
  if (!x.has_values || !small(shape)) return opaque(shape, x.type, {&x});
  Value out = x;
  out.shape = shape;
  out.ints.clear();
  out.floats.clear();
  for (int64_t i : index) {
    if (x.is_float())
      out.floats.push_back(x.floats[static_cast<size_t>(i)]);
    else
      out.ints.push_back(x.ints[static_cast<size_t>(i)]);
  }
  return out;
}

namespace {

using Table = std::map<std::string, Handler, std::less<>>;

Value from_tensor(const Tensor& t) {
  Value v;
  v.kind = Kind::kConstant;
  v.type = t.data_type;
  v.shape = t.dims;
  v.has_values = t.has_values;
  v.ints = t.ints;
  v.floats = t.floats;
  return v;
}

std::optional<Error> constant(Importer& im, const Node& node) {
  Value v;
  if (const Attribute* a = node.attribute("value"); a && a->t) {
    v = from_tensor(*a->t);
  } else if (const Attribute* a = node.attribute("value_int")) {
    v = int_constant({}, {a->i});
  } else if (const Attribute* a = node.attribute("value_ints")) {
    v = int_constant({static_cast<int64_t>(a->ints.size())}, a->ints);
  } else if (const Attribute* a = node.attribute("value_float")) {
    v = float_constant({}, {a->f});
  } else if (const Attribute* a = node.attribute("value_floats")) {
    v = float_constant({static_cast<int64_t>(a->floats.size())}, a->floats);
  } else {
    return im.err(node, "a Constant needs a value, value_int(s) or value_float(s) attribute");
  }
  im.set(node, 0, std::move(v));
  return std::nullopt;
}

std::optional<Error> shape_of(Importer& im, const Node& node) {
  Result<const Value*> x = im.input(node, 0);
  if (!x) return x.error();
  const Shape& s = (*x)->shape;
  int64_t rank = static_cast<int64_t>(s.size());
  int64_t start = attr_int(node, "start", 0), end = attr_int(node, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  im.set(node, 0,
         int_constant({end - start}, std::vector<int64_t>(s.begin() + start, s.begin() + end)));
  return std::nullopt;
}

std::optional<Error> size_of(Importer& im, const Node& node) {
  Result<const Value*> x = im.input(node, 0);
  if (!x) return x.error();
  im.set(node, 0, int_constant({}, {elements((*x)->shape).value_or(0)}));
  return std::nullopt;
}

std::optional<Error> constant_of_shape(Importer& im, const Node& node) {
  Result<std::vector<int64_t>> shape = im.ints(node, 0);
  if (!shape) return shape.error();
  for (int64_t d : *shape)
    if (d < 0) return im.err(node, "a negative size in the shape " + shape_str(*shape));
  Value fill = float_constant({1}, {0.0});
  if (const Attribute* a = node.attribute("value"); a && a->t && a->t->has_values)
    fill = from_tensor(*a->t);
  if (!elements(*shape)) return im.err(node, "the shape " + shape_str(*shape) + " is too large");
  size_t n = static_cast<size_t>(*elements(*shape));
  Value v = fill;
  v.shape = *shape;
  if (!small(*shape)) {
    v = opaque(*shape, fill.type, {});
  } else if (v.is_float()) {
    v.floats.assign(n, fill.floats.empty() ? 0.0 : fill.floats[0]);
  } else {
    v.ints.assign(n, fill.ints.empty() ? 0 : fill.ints[0]);
  }
  im.set(node, 0, std::move(v));
  return std::nullopt;
}

std::optional<Error> range(Importer& im, const Node& node) {
  const Value* in[3];
  for (size_t i = 0; i < 3; ++i) {
    Result<const Value*> v = im.input(node, i);
    if (!v) return v.error();
    if (!(*v)->has_values || (*v)->shape.size() > 1 || elements((*v)->shape) != 1)
      return im.err(node, "Range needs constant scalar start, limit and delta");
    in[i] = *v;
  }
  double start = in[0]->number(0), limit = in[1]->number(0), delta = in[2]->number(0);
  if (delta == 0) return im.err(node, "Range's delta is 0");
  double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (count > static_cast<double>(kMaxConstantElements))
    return im.err(node, "Range makes " + std::to_string(static_cast<int64_t>(count)) +
                            " elements; at most " + std::to_string(kMaxConstantElements) +
                            " are folded");
  size_t n = static_cast<size_t>(count);
  Value out = in[0]->is_float() ? float_constant({static_cast<int64_t>(n)}, {})
                                : int_constant({static_cast<int64_t>(n)}, {});
  out.type = in[0]->type;
  for (size_t i = 0; i < n; ++i) {
    double x = start + static_cast<double>(i) * delta;
    if (out.is_float())
      out.floats.push_back(x);
    else
      out.ints.push_back(static_cast<int64_t>(x));
  }
  im.set(node, 0, std::move(out));
  return std::nullopt;
}

std::optional<Error> equal(Importer& im, const Node& node) {
  Result<const Value*> a = im.input(node, 0), b = im.input(node, 1);
  if (!a) return a.error();
  if (!b) return b.error();
  if ((*a)->is_activation() || (*b)->is_activation())
    return im.err(node, "Equal of activations (a data-dependent mask) is not supported");
  std::optional<Value> v = fold_binary(
      **a, **b, [](double x, double y) { return x == y ? 1.0 : 0.0; }, true);
  if (!v)
    return im.err(node, "shapes " + shape_str((*a)->shape) + " and " + shape_str((*b)->shape) +
                            " do not broadcast");
  im.set(node, 0, std::move(*v));
  return std::nullopt;
}

std::optional<Error> where(Importer& im, const Node& node) {
  const Value* in[3];
  for (size_t i = 0; i < 3; ++i) {
    Result<const Value*> v = im.input(node, i);
    if (!v) return v.error();
    if ((*v)->is_activation())
      return im.err(node, "Where on activations (a data-dependent selection) is not supported");
    in[i] = *v;
  }
  std::optional<Shape> s = broadcast(in[0]->shape, in[1]->shape);
  if (s) s = broadcast(*s, in[2]->shape);
  if (!s) return im.err(node, "the shapes of Where's inputs do not broadcast");
  Value out = opaque(*s, in[1]->type, {in[1], in[2]});
  if (in[0]->has_values && in[1]->has_values && in[2]->has_values && small(*s) &&
      out.kind == Kind::kConstant) {
    std::vector<int64_t> ic = broadcast_index(in[0]->shape, *s),
                         ix = broadcast_index(in[1]->shape, *s),
                         iy = broadcast_index(in[2]->shape, *s);
    out.has_values = true;
    for (size_t i = 0; i < ic.size(); ++i) {
      const Value* pick = in[0]->number(static_cast<size_t>(ic[i])) != 0 ? in[1] : in[2];
      size_t at = static_cast<size_t>(pick == in[1] ? ix[i] : iy[i]);
      if (out.is_float())
        out.floats.push_back(pick->number(at));
      else
        out.ints.push_back(pick->ints[at]);
    }
  }
  im.set(node, 0, std::move(out));
  return std::nullopt;
}

// Cast, Identity, Dropout (inference): the value passes through; a Cast of a
// constant converts its values.
std::optional<Error> pass_through(Importer& im, const Node& node) {
  Result<const Value*> x = im.input(node, 0);
  if (!x) return x.error();
  Value v = im.alias(node, **x);
  if (node.op_type == "Cast") {
    int32_t to = static_cast<int32_t>(attr_int(node, "to", v.type));
    if (v.has_values && v.is_float() != is_floating(to)) {
      if (is_floating(to)) {
        for (int64_t i : v.ints) v.floats.push_back(static_cast<double>(i));
        v.ints.clear();
      } else {
        for (double f : v.floats) v.ints.push_back(static_cast<int64_t>(f));
        v.floats.clear();
      }
    }
    v.type = to;
  }
  im.set(node, 0, std::move(v));
  return std::nullopt;
}

}  // namespace

void add_fold_handlers(Table& table) {
  table["Constant"] = constant;
  table["Shape"] = shape_of;
  table["Size"] = size_of;
  table["ConstantOfShape"] = constant_of_shape;
  table["Range"] = range;
  table["Equal"] = equal;
  table["Where"] = where;
  table["Cast"] = pass_through;
  table["Identity"] = pass_through;
  table["Dropout"] = pass_through;
}

}  // namespace pase::onnx
