// Normalizations and reductions (core/docs/import.md, "Ops"):
// BatchNormalization, LayerNormalization and the decomposed LayerNorm that
// exporters write before opset 17, ReduceMean, Softmax and LogSoftmax.
#include "model/onnx/onnx_import.hpp"
#include "model/op_table.hpp"

namespace pase::onnx {
namespace {

using Table = std::map<std::string, Handler, std::less<>>;
using json_detail::Json;

Value norm_layer(Importer& im, const Node& node, const Value& x, int64_t axis, std::string name) {
  LayerSpec l;
  l.op = "Norm";
  l.name = std::move(name);
  l.inputs.push_back(Operand{x.operand, {}});
  l.axis = axis;
  return im.add_layer(node, std::move(l), x.shape);
}

// A Norm's meta entry (core/docs/import.md, "What the layers run"): batch
// statistics over every axis but `axis` (the channels), or a layer's over
// `axis` and the axes after it; epsilon; and whether a learned scale and
// bias follow (over the channels, or the normalised axes).
Json norm_entry(const char* kind, double epsilon, int64_t axis, bool scale, bool bias) {
  return Json{
      {"norm", kind}, {"epsilon", epsilon}, {"axis", axis}, {"scale", scale}, {"bias", bias}};
}

std::optional<Error> batch_norm(Importer& im, const Node& node) {
  Result<const Value*> x = im.activation(node, 0);
  if (!x) return x.error();
  for (size_t i = 1; i <= 2; ++i)  // scale and shift; the running statistics are not parameters
    if (im.has_input(node, i)) {
      Result<const Value*> p = im.input(node, i);
      if (!p) return p.error();
      im.use_weight(**p);
    }
  Value out = norm_layer(im, node, **x, 0, "");
  if ((*x)->shape.size() >= 2)  // (N, C, ...): the channels are axis 1
    im.semantics(out.layer) = norm_entry("batch", attr_float(node, "epsilon", 1e-5), 1,
                                         im.has_input(node, 1), im.has_input(node, 2));
  im.set(node, 0, out);
  return std::nullopt;
}

// The affine step after a normalization: Mul by a weight, then Add a weight,
// each taken into the Norm when it is the only reader. Returns which were
// taken, {scale, bias}; `exact` turns false when one is not a vector over
// the last axis (the meta entry's scale and bias are).
std::array<bool, 2> absorb_affine(Importer& im, const std::string& tensor, Value out, bool& exact) {
  std::array<bool, 2> taken{false, false};
  std::string current = tensor;
  for (const char* op : {"Mul", "Add"}) {
    const std::vector<int>& readers = im.consumer_nodes(current);
    if (readers.size() != 1) break;
    const Node& next = im.model().nodes[readers[0]];
    if (next.op_type != op || next.inputs.size() != 2) break;
    const std::string& other = next.inputs[0] == current ? next.inputs[1] : next.inputs[0];
    const Value* w = im.find(other);
    if (!w || w->is_activation() || broadcast(out.shape, w->shape) != out.shape) break;
    im.use_weight(*w);
    im.consume(readers[0]);
    current = next.outputs[0];
    taken[op[0] == 'A' ? 1 : 0] = true;
    Shape s = w->shape;
    while (!s.empty() && s.front() == 1) s.erase(s.begin());
    exact = exact && s == Shape{out.shape.back()};
  }
  im.set_tensor(current, std::move(out));
  return taken;
}

std::optional<Error> layer_norm(Importer& im, const Node& node) {
  Result<const Value*> x = im.activation(node, 0);
  if (!x) return x.error();
  std::optional<int> axis = norm_axis(attr_int(node, "axis", -1), (*x)->shape.size());
  if (!axis || *axis != static_cast<int>((*x)->shape.size()) - 1)
    return im.err(node, "a LayerNormalization over other than the last axis is not supported");
  for (size_t i = 1; i <= 2; ++i)
    if (im.has_input(node, i)) {
      Result<const Value*> p = im.input(node, i);
      if (!p) return p.error();
      im.use_weight(**p);
    }
  Value out = norm_layer(im, node, **x, -1, "");
  im.semantics(out.layer) = norm_entry("layer", attr_float(node, "epsilon", 1e-5), *axis,
                                       im.has_input(node, 1), im.has_input(node, 2));
  im.set(node, 0, out);
  return std::nullopt;
}

Result<std::vector<int64_t>> reduce_axes(Importer& im, const Node& node) {
  if (im.opset() >= 18 && im.has_input(node, 1)) return im.ints(node, 1);
  return attr_ints(node, "axes").value_or(std::vector<int64_t>{});
}

// The one reader of `tensor` if it is a `op` node, else nullptr.
const Node* only_reader(Importer& im, const std::string& tensor, std::string_view op) {
  const std::vector<int>& readers = im.consumer_nodes(tensor);
  if (readers.size() != 1) return nullptr;
  const Node& n = im.model().nodes[readers[0]];
  return n.op_type == op ? &n : nullptr;
}

bool constant_is(const Importer& im, const std::string& tensor, double value) {
  const Value* v = im.find(tensor);
  return v && v->has_values && !v->is_activation() && elements(v->shape) == 1 &&
         v->number(0) == value;
}

// The LayerNorm that exporters write as
//   m = ReduceMean(x); d = x - m; v = ReduceMean(d ^ 2); y = d / Sqrt(v + eps)
// over the last axis: true when `node` (the first ReduceMean) starts it, and
// then one Norm stands for all of it.
bool decomposed_layer_norm(Importer& im, const Node& node, const Value& x,
                           const std::vector<int64_t>& axes) {
  int64_t last = static_cast<int64_t>(x.shape.size()) - 1;
  if (axes.size() != 1 || (axes[0] != -1 && axes[0] != last)) return false;
  const Node* sub = only_reader(im, node.outputs[0], "Sub");
  if (!sub || sub->inputs[0] != node.inputs[0] || sub->inputs[1] != node.outputs[0]) return false;
  const std::vector<int>& d_readers = im.consumer_nodes(sub->outputs[0]);
  if (d_readers.size() != 2) return false;
  const Node* pow = nullptr;
  const Node* div = nullptr;
  for (int r : d_readers) {
    const Node& n = im.model().nodes[r];
    if (n.op_type == "Pow" && n.inputs[0] == sub->outputs[0] && constant_is(im, n.inputs[1], 2))
      pow = &n;
    if (n.op_type == "Div" && n.inputs[0] == sub->outputs[0]) div = &n;
  }
  if (!pow || !div) return false;
  const Node* mean2 = only_reader(im, pow->outputs[0], "ReduceMean");
  if (!mean2) return false;
  Result<std::vector<int64_t>> axes2 = reduce_axes(im, *mean2);
  if (!axes2 || *axes2 != axes) return false;
  const Node* add = only_reader(im, mean2->outputs[0], "Add");
  if (!add) return false;
  const Node* sqrt = only_reader(im, add->outputs[0], "Sqrt");
  if (!sqrt || div->inputs[1] != sqrt->outputs[0] || im.consumers(sqrt->outputs[0]) != 1)
    return false;
  const Value* eps = im.find(add->inputs[1] == mean2->outputs[0] ? add->inputs[0] : add->inputs[1]);
  if (!eps || eps->is_activation()) return false;
  for (const Node* n : {sub, pow, mean2, add, sqrt, div}) im.consume(im.node_index(*n));
  std::string scope = node.name;
  size_t slash = scope.rfind('/');
  scope = slash == std::string::npos ? "" : scope.substr(0, slash);
  while (!scope.empty() && scope.front() == '/') scope.erase(scope.begin());
  std::string name = im.unique_name(scope.empty() ? "LayerNorm" : scope + "/LayerNorm");
  Value out = norm_layer(im, node, x, -1, name);
  const int layer = out.layer;
  bool exact = eps->has_values && elements(eps->shape) == 1;
  const std::array<bool, 2> affine = absorb_affine(im, div->outputs[0], std::move(out), exact);
  if (exact) im.semantics(layer) = norm_entry("layer", eps->number(0), last, affine[0], affine[1]);
  return true;
}

std::optional<Error> reduce_mean(Importer& im, const Node& node) {
  Result<const Value*> x = im.operand(node, 0);
  if (!x) return x.error();
  Result<std::vector<int64_t>> axes = reduce_axes(im, node);
  if (!axes) return axes.error();
  const Shape& s = (*x)->shape;
  bool keepdims = attr_int(node, "keepdims", 1) != 0;
  std::vector<bool> reduced(s.size(), axes->empty());
  for (int64_t a : *axes) {
    std::optional<int> axis = norm_axis(a, s.size());
    if (!axis)
      return im.err(node, "axis " + std::to_string(a) + " is out of range for " + shape_str(s));
    reduced[*axis] = true;
  }
  Shape out;
  for (size_t i = 0; i < s.size(); ++i)
    if (!reduced[i])
      out.push_back(s[i]);
    else if (keepdims)
      out.push_back(1);
  if (!(*x)->is_activation()) {
    im.set(node, 0, opaque(out, (*x)->type, {*x}));
    return std::nullopt;
  }
  if (decomposed_layer_norm(im, node, **x, *axes)) return std::nullopt;
  LayerSpec l;
  l.op = "ReduceMean";
  l.inputs.push_back(Operand{(*x)->operand, {}});
  for (size_t i = 0; i < s.size(); ++i)
    if (reduced[i]) l.axes.push_back(static_cast<int64_t>(i));
  l.has_axes = true;
  l.keepdims = keepdims;
  if (out.empty()) out.push_back(1);
  im.set(node, 0, im.add_layer(node, std::move(l), out));
  return std::nullopt;
}

std::optional<Error> softmax(Importer& im, const Node& node) {
  Result<const Value*> x = im.activation(node, 0);
  if (!x) return x.error();
  const Shape& s = (*x)->shape;
  int64_t fallback = im.opset() >= 13 ? -1 : 1;
  std::optional<int> axis = norm_axis(attr_int(node, "axis", fallback), s.size());
  if (!axis) return im.err(node, "axis is out of range for " + shape_str(s));
  if (im.opset() < 13) {  // softmax over the axis and all after it, flattened
    Shape tail(s.begin() + *axis + 1, s.end());
    if (elements(tail) != 1)
      return im.err(node, "a Softmax over several axes (opset < 13) is not supported");
  }
  LayerSpec l;
  l.op = "Softmax";
  l.inputs.push_back(Operand{(*x)->operand, {}});
  l.axis = *axis;
  Value out = im.add_layer(node, std::move(l), s);
  if (node.op_type == "LogSoftmax") im.semantics(out.layer)["softmax"] = "log";
  im.set(node, 0, out);
  return std::nullopt;
}

}  // namespace

void add_norm_handlers(Table& table) {
  table["BatchNormalization"] = batch_norm;
  table["LayerNormalization"] = layer_norm;
  table["ReduceMean"] = reduce_mean;
  table["Softmax"] = softmax;
  table["LogSoftmax"] = softmax;
}

}  // namespace pase::onnx
