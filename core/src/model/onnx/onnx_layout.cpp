// Layout nodes (core/docs/import.md, "Ops"): Reshape, Flatten, Squeeze,
// Unsqueeze, Transpose, Concat, Expand and Pad (Split, Slice and Gather are
// in onnx_parts.cpp). On constants they fold; on weights they change the
// shape and keep the parameters; on activations they become the format's
// layout layers (Reshape, Transpose, Concat).
#include <algorithm>
#include <numeric>

#include "model/onnx/onnx_import.hpp"
#include "model/op_table.hpp"

namespace pase::onnx {

Value Importer::reshaped(const Node& node, const Value& x, const Shape& shape) {
  if (!x.is_activation()) {
    Value v = x.has_values ? x : opaque(shape, x.type, {&x});
    v.shape = shape;
    return v;
  }
  if (shape == x.shape) return alias(node, x);
  LayerSpec l;
  l.op = "Reshape";
  l.inputs.push_back(Operand{x.operand, {}});
  l.shape = shape;
  return add_layer(node, std::move(l), shape);
}

namespace {

using Table = std::map<std::string, Handler, std::less<>>;

std::optional<Error> finish_reshape(Importer& im, const Node& node, const Value& x,
                                    const Shape& shape) {
  if (elements(shape) != elements(x.shape))
    return im.err(node, "cannot reshape " + shape_str(x.shape) + " to " + shape_str(shape) +
                            ": the element counts differ (a size fixed at export may disagree "
                            "with --batch or --dim)");
  im.set(node, 0, im.reshaped(node, x, shape));
  return std::nullopt;
}

std::optional<Error> reshape(Importer& im, const Node& node) {
  Result<const Value*> x = im.input(node, 0);
  if (!x) return x.error();
  if ((*x)->is_activation())
    if (auto a = im.activation(node, 0); !a) return a.error();
  Result<std::vector<int64_t>> target = im.ints(node, 1);
  if (!target) return target.error();
  const Shape& s = (*x)->shape;
  Shape shape = *target;
  bool allow_zero = attr_int(node, "allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      if (i >= s.size())
        return im.err(node,
                      "target " + shape_str(*target) + " copies a size past the input's rank");
      shape[i] = s[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) return im.err(node, "target " + shape_str(*target) + " has two -1 sizes");
      infer = static_cast<int>(i);
    } else if (shape[i] < 0 || __builtin_mul_overflow(known, shape[i], &known)) {
      return im.err(node, "target " + shape_str(*target) + " is not a valid shape");
    }
  }
  std::optional<int64_t> total = elements(s);
  if (infer >= 0) {
    if (known == 0 || !total || *total % known != 0)
      return im.err(node, "cannot reshape " + shape_str(s) + " to " + shape_str(*target));
    shape[static_cast<size_t>(infer)] = *total / known;
  }
  return finish_reshape(im, node, **x, shape);
}

std::optional<Error> flatten(Importer& im, const Node& node) {
  Result<const Value*> x = im.input(node, 0);
  if (!x) return x.error();
  const Shape& s = (*x)->shape;
  int64_t axis = attr_int(node, "axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  if (axis < 0 || axis > static_cast<int64_t>(s.size()))
    return im.err(node, "axis " + std::to_string(axis) + " is out of range for " + shape_str(s));
  Shape head(s.begin(), s.begin() + axis), tail(s.begin() + axis, s.end());
  return finish_reshape(im, node, **x, {elements(head).value_or(0), elements(tail).value_or(0)});
}

// Squeeze and Unsqueeze: the axes are an attribute before opset 13, an input since.
Result<std::vector<int64_t>> axes_of(Importer& im, const Node& node) {
  if (im.opset() < 13 || !im.has_input(node, 1))
    return attr_ints(node, "axes").value_or(std::vector<int64_t>{});
  return im.ints(node, 1);
}

std::optional<Error> squeeze(Importer& im, const Node& node) {
  Result<const Value*> x = im.input(node, 0);
  if (!x) return x.error();
  Result<std::vector<int64_t>> axes = axes_of(im, node);
  if (!axes) return axes.error();
  const Shape& s = (*x)->shape;
  std::vector<bool> drop(s.size(), false);
  for (size_t i = 0; i < s.size(); ++i) drop[i] = axes->empty() && s[i] == 1;
  for (int64_t a : *axes) {
    std::optional<int> axis = norm_axis(a, s.size());
    if (!axis || s[*axis] != 1)
      return im.err(node, "cannot squeeze axis " + std::to_string(a) + " of " + shape_str(s));
    drop[*axis] = true;
  }
  Shape out;
  for (size_t i = 0; i < s.size(); ++i)
    if (!drop[i]) out.push_back(s[i]);
  return finish_reshape(im, node, **x, out);
}

std::optional<Error> unsqueeze(Importer& im, const Node& node) {
  Result<const Value*> x = im.input(node, 0);
  if (!x) return x.error();
  Result<std::vector<int64_t>> axes = axes_of(im, node);
  if (!axes) return axes.error();
  const Shape& s = (*x)->shape;
  size_t rank = s.size() + axes->size();
  std::vector<bool> added(rank, false);
  for (int64_t a : *axes) {
    std::optional<int> axis = norm_axis(a, rank);
    if (!axis || added[*axis])
      return im.err(node, "axis " + std::to_string(a) + " is out of range or repeated");
    added[*axis] = true;
  }
  Shape out;
  size_t next = 0;
  for (size_t i = 0; i < rank; ++i) out.push_back(added[i] ? 1 : s[next++]);
  return finish_reshape(im, node, **x, out);
}

std::optional<Error> transpose(Importer& im, const Node& node) {
  Result<const Value*> x = im.input(node, 0);
  if (!x) return x.error();
  const Shape& s = (*x)->shape;
  std::vector<int64_t> perm(s.size());
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (auto p = attr_ints(node, "perm")) perm = *p;
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted.size() != s.size() || sorted[i] != static_cast<int64_t>(i))
      return im.err(node, "perm " + shape_str(perm) + " is not a permutation of " +
                              std::to_string(s.size()) + " axes");
  Shape out;
  for (int64_t p : perm) out.push_back(s[static_cast<size_t>(p)]);
  const Value& v = **x;
  if (v.is_activation()) {
    if (auto a = im.activation(node, 0); !a) return a.error();
    if (std::is_sorted(perm.begin(), perm.end())) {
      im.set(node, 0, im.alias(node, v));
      return std::nullopt;
    }
    LayerSpec l;
    l.op = "Transpose";
    l.inputs.push_back(Operand{v.operand, {}});
    l.perm = perm;
    im.set(node, 0, im.add_layer(node, std::move(l), out));
    return std::nullopt;
  }
  // out[i0, i1, ...] = x[j] with j the input index of the permuted position.
  std::vector<int64_t> index;
  if (v.has_values && elements(out).value_or(kMaxConstantElements + 1) <= kMaxConstantElements) {
    std::vector<int64_t> stride(s.size(), 1);
    for (size_t d = s.size(); d-- > 1;) stride[d - 1] = stride[d] * s[d];
    index = source_indices(out, [&](const std::vector<int64_t>& pos) {
      int64_t j = 0;
      for (size_t d = 0; d < out.size(); ++d) j += pos[d] * stride[static_cast<size_t>(perm[d])];
      return j;
    });
  }
  im.set(node, 0, gather_values(v, out, index));
  return std::nullopt;
}

std::optional<Error> concat(Importer& im, const Node& node) {
  std::vector<const Value*> in;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    Result<const Value*> v = im.input(node, i);
    if (!v) return v.error();
    if ((*v)->is_activation())
      if (auto a = im.activation(node, i); !a) return a.error();
    in.push_back(*v);
  }
  if (in.empty()) return im.err(node, "Concat needs at least one input");
  const Shape& s = in[0]->shape;
  std::optional<int> axis = norm_axis(attr_int(node, "axis", 0), s.size());
  if (!axis) return im.err(node, "axis is out of range for " + shape_str(s));
  Shape out = s;
  out[*axis] = 0;
  for (const Value* v : in) {
    bool same = v->shape.size() == s.size();
    for (size_t d = 0; same && d < s.size(); ++d)
      same = static_cast<int>(d) == *axis || v->shape[d] == s[d];
    if (!same)
      return im.err(node, "cannot concatenate " + shape_str(v->shape) + " with " + shape_str(s) +
                              " along axis " + std::to_string(*axis));
    out[*axis] += v->shape[*axis];
  }
  bool any_activation =
      std::any_of(in.begin(), in.end(), [](const Value* v) { return v->is_activation(); });
  if (!any_activation) {
    Value v = opaque(out, in[0]->type, in);
    bool all = std::all_of(in.begin(), in.end(), [](const Value* x) { return x->has_values; });
    if (all && v.kind == Kind::kConstant && elements(out) <= kMaxConstantElements) {
      // Blocks of the inputs, interleaved along the axis.
      int64_t outer = 1;
      for (int d = 0; d < *axis; ++d) outer *= s[d];
      v.has_values = true;
      for (int64_t o = 0; o < outer; ++o)
        for (const Value* x : in) {
          int64_t block = elements(x->shape).value_or(0) / std::max<int64_t>(outer, 1);
          for (int64_t k = 0; k < block; ++k) {
            size_t at = static_cast<size_t>(o * block + k);
            if (v.is_float())
              v.floats.push_back(x->number(at));
            else
              v.ints.push_back(x->ints[at]);
          }
        }
    }
    im.set(node, 0, std::move(v));
    return std::nullopt;
  }
  if (in.size() == 1) {
    im.set(node, 0, im.alias(node, *in[0]));
    return std::nullopt;
  }
  LayerSpec l;
  l.op = "Concat";
  l.axis = *axis;
  for (const Value* v : in) l.inputs.push_back(im.layer_operand(*v));
  im.set(node, 0, im.add_layer(node, std::move(l), out));
  return std::nullopt;
}

std::optional<Error> expand(Importer& im, const Node& node) {
  Result<const Value*> x = im.input(node, 0);
  if (!x) return x.error();
  Result<std::vector<int64_t>> target = im.ints(node, 1);
  if (!target) return target.error();
  std::optional<Shape> out = broadcast((*x)->shape, *target);
  if (!out)
    return im.err(node, "cannot expand " + shape_str((*x)->shape) + " to " + shape_str(*target));
  const Value& v = **x;
  if (v.is_activation()) {
    if (*out != v.shape)
      return im.err(node, "expanding an activation (" + shape_str(v.shape) + " to " +
                              shape_str(*out) + ") is not supported");
    im.set(node, 0, im.alias(node, v));
    return std::nullopt;
  }
  std::vector<int64_t> index;
  if (v.has_values && elements(*out) <= kMaxConstantElements)
    index = broadcast_index(v.shape, *out);
  im.set(node, 0, gather_values(v, *out, index));
  return std::nullopt;
}

// A zero Pad of the spatial dimensions of an NCHW activation waits for the
// Conv or pool that reads it, which takes the padding as its own.
std::optional<Error> pad(Importer& im, const Node& node) {
  Result<const Value*> x = im.input(node, 0);
  if (!x) return x.error();
  const Value& v = **x;
  if (attr_string(node, "mode", "constant") != "constant")
    return im.err(node, "only constant (zero) padding is supported");
  Result<std::vector<int64_t>> pads = im.ints(node, 1);
  if (!pads) return pads.error();
  if (im.has_input(node, 2)) {
    Result<const Value*> c = im.input(node, 2);
    if (!c) return c.error();
    if (!(*c)->has_values || ((*c)->has_values && (*c)->number(0) != 0))
      return im.err(node, "only zero padding is supported");
  }
  const Shape& s = v.shape;
  if (pads->size() != 2 * s.size())
    return im.err(node,
                  "pads " + shape_str(*pads) + " do not match rank " + std::to_string(s.size()));
  Shape out = s;
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t b = (*pads)[d], e = (*pads)[d + s.size()];
    if (b < 0 || e < 0) return im.err(node, "negative padding is not supported");
    out[d] += b + e;
    if ((s.size() != 4 || d < 2) && (b != 0 || e != 0))
      return im.err(node, "only the two spatial dimensions of an NCHW tensor may be padded");
  }
  if (!v.is_activation()) {
    im.set(node, 0, opaque(out, v.type, {&v}));
    return std::nullopt;
  }
  if (out == s) {  // nothing padded
    im.set(node, 0, im.alias(node, v));
    return std::nullopt;
  }
  Value p = v;
  p.shape = out;
  p.layer = -1;
  std::array<int64_t, 4> add = {(*pads)[2], (*pads)[3], (*pads)[6], (*pads)[7]};
  if (v.pending_pad)
    for (size_t i = 0; i < 4; ++i) add[i] += (*v.pending_pad)[i];
  p.pending_pad = add;
  im.set(node, 0, std::move(p));
  return std::nullopt;
}

}  // namespace

void add_layout_handlers(Table& table) {
  table["Reshape"] = reshape;
  table["Flatten"] = flatten;
  table["Squeeze"] = squeeze;
  table["Unsqueeze"] = unsqueeze;
  table["Transpose"] = transpose;
  table["Concat"] = concat;
  table["Expand"] = expand;
  table["Pad"] = pad;
}

}  // namespace pase::onnx
