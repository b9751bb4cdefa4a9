// The nodes that compute, but normalize and reduce (onnx_norm.cpp)
// (core/docs/import.md, "Ops"): Conv and the pools, Gemm, MatMul, Einsum,
// the element-wise arithmetic and functions.
#include <algorithm>
#include <cmath>

#include "model/onnx/onnx_import.hpp"
#include "model/op_table.hpp"

namespace pase::onnx {
namespace {

using Table = std::map<std::string, Handler, std::less<>>;
using json_detail::Json;

// A point-wise op's meta entry: {"op": op} with the operand's entry
// (operand_entry()); null when the operand is one no entry describes.
Json named(const std::string& op, const Json& operand) {
  if (operand.is_null()) return nullptr;
  Json e{{"op", op}};
  for (const auto& [key, value] : operand.items()) e[key] = value;
  return e;
}

// ---- Windows: Conv and the pools -------------------------------------------------------

// The symmetric padding of one spatial dimension that gives the output size
// ONNX gives with padding [begin, end], or nullopt when none does.
std::optional<int64_t> symmetric_pad(int64_t size, int64_t window, int64_t stride, int64_t begin,
                                     int64_t end, bool ceil_mode, int64_t& out) {
  int64_t span = size + begin + end - window;
  if (span < 0) return std::nullopt;
  out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  for (int64_t p : {begin, (begin + end) / 2, (begin + end + 1) / 2, end})
    if (size + 2 * p - window >= 0 && (size + 2 * p - window) / stride + 1 == out) return p;
  return std::nullopt;
}

struct Window {
  std::array<int64_t, 2> stride{1, 1}, pad{0, 0};
  Shape out;  // [ho, wo]
  // ONNX's padding [h_begin, w_begin, h_end, w_end]: the node's own (after
  // auto_pad), and the zeros of a Pad before it.
  std::array<int64_t, 4> own{0, 0, 0, 0}, zeros{0, 0, 0, 0};
  // Whether own + zeros differ from the symmetric `pad` in some dimension.
  bool asymmetric = false;
};

// Reads strides, pads, auto_pad, dilations and ceil_mode for a window of
// `kernel` over the NCHW activation `x` (with any pending Pad).
Result<Window> window_of(Importer& im, const Node& node, const Value& x,
                         const std::array<int64_t, 2>& kernel) {
  if (x.shape.size() != 4)
    return im.err(node, "only 2-D windows over NCHW tensors are supported; the input is " +
                            shape_str(x.shape));
  Window w;
  std::vector<int64_t> strides = attr_ints(node, "strides").value_or(std::vector<int64_t>{1, 1});
  std::vector<int64_t> pads = attr_ints(node, "pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
  std::vector<int64_t> dil = attr_ints(node, "dilations").value_or(std::vector<int64_t>{1, 1});
  if (strides.size() != 2 || pads.size() != 4 || dil.size() != 2)
    return im.err(node, "strides, pads or dilations do not match a 2-D window");
  if (dil[0] != 1 || dil[1] != 1)
    return im.err(node, "dilated windows (dilations " + shape_str(dil) + ") are not supported");
  std::string auto_pad = attr_string(node, "auto_pad", "NOTSET");
  bool ceil_mode = attr_int(node, "ceil_mode", 0) != 0;
  // The input as the node sees it, padded by a Pad before it.
  Shape in = x.shape;
  std::array<int64_t, 4> extra = x.pending_pad.value_or(std::array<int64_t, 4>{0, 0, 0, 0});
  for (int d = 0; d < 2; ++d) {
    int64_t size = in[2 + d] - extra[d] - extra[2 + d];  // the unpadded size
    int64_t s = strides[d];
    if (s <= 0) return im.err(node, "strides must be positive");
    int64_t begin = pads[d], end = pads[2 + d];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t total =
          std::max<int64_t>(((in[2 + d] + s - 1) / s - 1) * s + kernel[d] - in[2 + d], 0);
      begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    } else if (auto_pad == "VALID") {
      begin = end = 0;
    } else if (auto_pad != "NOTSET") {
      return im.err(node, "auto_pad " + pase::quoted(auto_pad) + " is not supported");
    }
    w.own[d] = begin;
    w.own[2 + d] = end;
    begin += extra[d];
    end += extra[2 + d];
    int64_t out = 0;
    std::optional<int64_t> p = symmetric_pad(size, kernel[d], s, begin, end, ceil_mode, out);
    if (!p)
      return im.err(node, "padding [" + std::to_string(begin) + ", " + std::to_string(end) +
                              "] of a size-" + std::to_string(size) + " dimension" +
                              (ceil_mode ? " with ceil_mode" : "") +
                              " has no symmetric equivalent, which the format needs");
    w.stride[d] = s;
    w.pad[d] = *p;
    w.asymmetric = w.asymmetric || begin != *p || end != *p;
    w.out.push_back(out);
  }
  w.zeros = extra;
  return w;
}

Json pads_json(const std::array<int64_t, 4>& p) { return Json::array({p[0], p[1], p[2], p[3]}); }

std::optional<Error> conv(Importer& im, const Node& node) {
  Result<const Value*> x = im.activation(node, 0, true);
  if (!x) return x.error();
  Result<const Value*> wv = im.input(node, 1);
  if (!wv) return wv.error();
  const Value& w = **wv;
  if (w.is_activation())
    return im.err(node, "the filter is computed from the data; only a weight is supported");
  if (w.shape.size() != 4)
    return im.err(node, "only 2-D convolutions are supported (filter " + shape_str(w.shape) + ")");
  int64_t group = attr_int(node, "group", 1);
  int64_t c = (*x)->shape.size() == 4 ? (*x)->shape[1] : 0;
  if (group <= 0 || w.shape[1] * group != c)
    return im.err(node, "filter " + shape_str(w.shape) + " with group " + std::to_string(group) +
                            " does not match input " + shape_str((*x)->shape));
  Result<Window> win = window_of(im, node, **x, {w.shape[2], w.shape[3]});
  if (!win) return win.error();
  LayerSpec l;
  l.op = "Conv";
  l.inputs.push_back(Operand{(*x)->operand, {}});
  l.filter = w.shape;
  l.stride = win->stride;
  l.pad = win->pad;
  l.group = group;
  im.use_weight(w);
  Json bias;
  if (im.has_input(node, 2)) {  // the bias: one point-wise add
    Result<const Value*> b = im.input(node, 2);
    if (!b) return b.error();
    im.use_weight(**b);
    l.pw = 1;
    bias = named("Add", operand_entry(**b, {w.shape[0], 1, 1}));
  }
  Value out =
      im.add_layer(node, std::move(l), {(*x)->shape[0], w.shape[0], win->out[0], win->out[1]});
  if (win->asymmetric) {  // ONNX's padding, all of it zeros
    std::array<int64_t, 4> total{};
    for (int i = 0; i < 4; ++i) total[i] = win->own[i] + win->zeros[i];
    im.semantics(out.layer)["pads"] = pads_json(total);
  }
  if (im.has_input(node, 2)) im.add_pointwise(out.layer, std::move(bias));
  im.set(node, 0, out);
  return std::nullopt;
}

std::optional<Error> pool(Importer& im, const Node& node) {
  Result<const Value*> x = im.activation(node, 0, true);
  if (!x) return x.error();
  const Shape& s = (*x)->shape;
  bool global = node.op_type.rfind("Global", 0) == 0;
  std::array<int64_t, 2> kernel{0, 0};
  if (global) {
    if (s.size() != 4) return im.err(node, "only NCHW inputs are supported, got " + shape_str(s));
    kernel = {s[2], s[3]};
  } else {
    std::vector<int64_t> k = attr_ints(node, "kernel_shape").value_or(std::vector<int64_t>{});
    if (k.size() != 2)
      return im.err(node, "only 2-D pools are supported (kernel_shape " + shape_str(k) + ")");
    kernel = {k[0], k[1]};
  }
  Result<Window> win = window_of(im, node, **x, kernel);
  if (!win) return win.error();
  LayerSpec l;
  l.op = "Pool";
  l.inputs.push_back(Operand{(*x)->operand, {}});
  l.window = {kernel[0], kernel[1]};
  l.stride = win->stride;
  l.pad = win->pad;
  Value out = im.add_layer(node, std::move(l), {s[0], s[1], win->out[0], win->out[1]});
  // What it computes (core/docs/import.md, "What the layers run"): the
  // maximum or the mean, the node's own padding (not counted by a maximum,
  // or by a mean without count_include_pad) and the zeros of a Pad before it.
  Json& e = im.semantics(out.layer);
  const bool max = node.op_type == "MaxPool" || node.op_type == "GlobalMaxPool";
  e["pool"] = max ? "max" : "average";
  if (global) e["global"] = true;
  if (!max && !global) e["count_include_pad"] = attr_int(node, "count_include_pad", 0) != 0;
  if (!global) e["pads"] = pads_json(win->own);
  if (win->zeros != std::array<int64_t, 4>{0, 0, 0, 0}) e["zero_pads"] = pads_json(win->zeros);
  im.set(node, 0, out);
  return std::nullopt;
}

// ---- GEMMs: Gemm, MatMul, Einsum -------------------------------------------------------

// A Gemm's alpha (the product's factor) and beta (C's) in its layer's entry,
// when they are not 1.
void gemm_factors(Importer& im, const Node& node, int layer) {
  if (node.op_type != "Gemm") return;
  for (const char* name : {"alpha", "beta"})
    if (const double f = attr_float(node, name, 1.0); f != 1.0) im.semantics(layer)[name] = f;
}

// An Einsum layer (or an opaque weight when no operand is an activation),
// with a bias (Gemm's C: one point-wise op described by `bias`) or not.
std::optional<Error> einsum_layer(Importer& im, const Node& node, const Value& a, const Value& b,
                                  const std::string& ta, const std::string& tb,
                                  const std::string& to, std::optional<Json> bias = std::nullopt) {
  Shape out;
  for (char ch : to) {
    size_t i = ta.find(ch);
    out.push_back(i != std::string::npos ? a.shape[i] : b.shape[tb.find(ch)]);
  }
  for (size_t i = 0; i < ta.size(); ++i) {
    size_t j = tb.find(ta[i]);
    if (j != std::string::npos && a.shape[i] != b.shape[j])
      return im.err(node, "operands " + shape_str(a.shape) + " and " + shape_str(b.shape) +
                              " disagree on a shared dimension");
  }
  if (!a.is_activation() && !b.is_activation()) {
    im.set(node, 0, opaque(out, a.type, {&a, &b}));
    return std::nullopt;
  }
  LayerSpec l;
  l.op = "Einsum";
  l.equation = ta + "," + tb + "->" + to;
  l.pw = bias ? 1 : 0;
  for (const Value* v : {&a, &b}) l.inputs.push_back(im.layer_operand(*v));
  Value y = im.add_layer(node, std::move(l), out);
  gemm_factors(im, node, y.layer);
  if (bias) im.add_pointwise(y.layer, std::move(*bias));
  im.set(node, 0, y);
  return std::nullopt;
}

std::optional<Error> gemm(Importer& im, const Node& node) {
  Result<const Value*> a = im.operand(node, 0), b = im.operand(node, 1);
  if (!a) return a.error();
  if (!b) return b.error();
  if ((*a)->shape.size() != 2 || (*b)->shape.size() != 2)
    return im.err(node, "Gemm needs two matrices, got " + shape_str((*a)->shape) + " and " +
                            shape_str((*b)->shape));
  bool ta = attr_int(node, "transA", 0) != 0, tb = attr_int(node, "transB", 0) != 0;
  std::optional<Json> bias;  // C, added
  if (im.has_input(node, 2)) {
    Result<const Value*> c = im.operand(node, 2);
    if (!c) return c.error();
    if ((*c)->is_activation())
      return im.err(node, "a Gemm bias computed from the data is not supported");
    im.use_weight(**c);
    bias = named("Add", operand_entry(**c));
  }
  const Value& x = **a;
  const Value& w = **b;
  int64_t k = ta ? x.shape[0] : x.shape[1];
  if (k != (tb ? w.shape[1] : w.shape[0]))
    return im.err(
        node, "shapes " + shape_str(x.shape) + " and " + shape_str(w.shape) + " do not multiply");
  if (x.is_activation() && !w.is_activation() && !ta) {
    LayerSpec l;
    l.op = "FC";
    l.inputs.push_back(Operand{x.operand, {}});
    l.units = tb ? w.shape[0] : w.shape[1];
    l.pw = bias ? 1 : 0;
    im.use_weight(w);
    Value y = im.add_layer(node, std::move(l), {x.shape[0], l.units});
    gemm_factors(im, node, y.layer);
    if (bias) im.add_pointwise(y.layer, std::move(*bias));
    im.set(node, 0, y);
    return std::nullopt;
  }
  return einsum_layer(im, node, x, w, ta ? "kb" : "bk", tb ? "nk" : "kn", "bn", std::move(bias));
}

std::optional<Error> matmul(Importer& im, const Node& node) {
  Result<const Value*> a = im.operand(node, 0), b = im.operand(node, 1);
  if (!a) return a.error();
  if (!b) return b.error();
  const Value& x = **a;
  const Value& w = **b;
  if (x.shape.size() < 2 || w.shape.size() < 2)
    return im.err(node, "MatMul of a vector (" + shape_str(x.shape) + " by " + shape_str(w.shape) +
                            ") is not supported");
  if (x.shape.back() != w.shape[w.shape.size() - 2])
    return im.err(
        node, "shapes " + shape_str(x.shape) + " and " + shape_str(w.shape) + " do not multiply");
  if (x.is_activation() && !w.is_activation() && w.shape.size() == 2) {
    LayerSpec l;
    l.op = "FC";
    l.inputs.push_back(Operand{x.operand, {}});
    l.units = w.shape[1];
    im.use_weight(w);
    Shape out = x.shape;
    out.back() = l.units;
    im.set(node, 0, im.add_layer(node, std::move(l), out));
    return std::nullopt;
  }
  // Batch dimensions, aligned from the right: a shared letter where both
  // have one (of equal size), a letter of one operand where only it has one.
  static const std::string kBatchLetters = "bhcdefgijopqruvwxyz";
  size_t ra = x.shape.size() - 2, rb = w.shape.size() - 2, nb = std::max(ra, rb);
  if (nb > kBatchLetters.size()) return im.err(node, "too many batch dimensions");
  std::string ta, tb, to;
  for (size_t i = 0; i < nb; ++i) {
    char letter = kBatchLetters[i];
    bool in_a = i >= nb - ra, in_b = i >= nb - rb;
    int64_t sa = in_a ? x.shape[i - (nb - ra)] : 0, sb = in_b ? w.shape[i - (nb - rb)] : 0;
    if (in_a && in_b && sa != sb)
      return im.err(node, "broadcasting batch dimensions of sizes " + std::to_string(sa) + " and " +
                              std::to_string(sb) + " is not supported");
    if (in_a) ta += letter;
    if (in_b) tb += letter;
    to += letter;
  }
  return einsum_layer(im, node, x, w, ta + "sk", tb + "kn", to + "sn");
}

std::optional<Error> einsum(Importer& im, const Node& node) {
  if (node.inputs.size() != 2) return im.err(node, "only Einsum of two operands is supported");
  Result<const Value*> a = im.operand(node, 0), b = im.operand(node, 1);
  if (!a) return a.error();
  if (!b) return b.error();
  std::string eq;
  for (char ch : attr_string(node, "equation", ""))
    if (ch != ' ') eq += ch;
  if (eq.find("...") != std::string::npos)
    return im.err(node, "an Einsum equation with '...' is not supported");
  size_t comma = eq.find(','), arrow = eq.find("->");
  if (comma == std::string::npos)
    return im.err(node, "equation " + pase::quoted(eq) + " is malformed");
  std::string ta = eq.substr(0, comma);
  std::string tb =
      eq.substr(comma + 1, arrow == std::string::npos ? std::string::npos : arrow - comma - 1);
  std::string to;
  if (arrow != std::string::npos) {
    to = eq.substr(arrow + 2);
  } else {  // implicit output: the letters used once, in alphabetical order
    for (char ch = 'A'; ch <= 'z'; ++ch)
      if (std::count(ta.begin(), ta.end(), ch) + std::count(tb.begin(), tb.end(), ch) == 1)
        to += ch;
  }
  if (ta.size() != (*a)->shape.size() || tb.size() != (*b)->shape.size())
    return im.err(node, "equation " + pase::quoted(eq) + " does not match the operands' ranks");
  for (char ch : to)
    if (ta.find(ch) == std::string::npos && tb.find(ch) == std::string::npos)
      return im.err(node, "equation " + pase::quoted(eq) + " is malformed");
  return einsum_layer(im, node, **a, **b, ta, tb, to);
}

// ---- Element-wise ------------------------------------------------------------------------

std::optional<Error> binary(Importer& im, const Node& node) {
  Result<const Value*> a = im.operand(node, 0), b = im.operand(node, 1);
  if (!a) return a.error();
  if (!b) return b.error();
  const Value& x = **a;
  const Value& y = **b;
  std::optional<Shape> out = broadcast(x.shape, y.shape);
  if (!out)
    return im.err(
        node, "shapes " + shape_str(x.shape) + " and " + shape_str(y.shape) + " do not broadcast");
  if (!x.is_activation() && !y.is_activation()) {
    static const std::map<std::string, double (*)(double, double), std::less<>> fns = {
        {"Add", [](double p, double q) { return p + q; }},
        {"Sub", [](double p, double q) { return p - q; }},
        {"Mul", [](double p, double q) { return p * q; }},
        {"Div", [](double p, double q) { return q == 0 ? 0 : p / q; }},
        {"Pow", [](double p, double q) { return std::pow(p, q); }}};
    bool ints = !x.is_float() && !y.is_float();
    double (*f)(double, double) = fns.at(node.op_type);
    if (ints && node.op_type == "Div")  // integer division truncates
      f = [](double p, double q) { return q == 0 ? 0 : std::trunc(p / q); };
    std::optional<Value> v = fold_binary(x, y, f, false);
    im.set(node, 0, std::move(*v));
    return std::nullopt;
  }
  if (x.is_activation() && y.is_activation()) {
    if (x.shape != y.shape)
      return im.err(node, "broadcasting one activation " + shape_str(x.shape) +
                              " against another " + shape_str(y.shape) + " is not supported");
    LayerSpec l;
    l.op = "Elementwise";
    l.inputs = {Operand{x.operand, {}}, Operand{y.operand, {}}};
    Value out = im.add_layer(node, std::move(l), x.shape);
    im.semantics(out.layer)["elementwise"] = node.op_type;
    im.set(node, 0, out);
    return std::nullopt;
  }
  size_t i = x.is_activation() ? 0 : 1;
  const Value& act = i == 0 ? x : y;
  if (*out != act.shape)
    return im.err(node, "the constant operand would broadcast the activation " +
                            shape_str(act.shape) + " to " + shape_str(*out) +
                            ", which is not supported");
  im.use_weight(i == 0 ? y : x);
  Json op = named(node.op_type, operand_entry(i == 0 ? y : x));
  if (i == 1 && !op.is_null()) op["swapped"] = true;  // the activation second: w - x
  im.set(node, 0, im.pointwise(node, i, act, std::move(op)));
  return std::nullopt;
}

double unary_value(std::string_view op, double x) {
  if (op == "Relu") return std::max(x, 0.0);
  if (op == "Sqrt") return std::sqrt(x);
  if (op == "Neg") return -x;
  if (op == "Exp") return std::exp(x);
  if (op == "Log") return std::log(x);
  if (op == "Abs") return std::fabs(x);
  if (op == "Reciprocal") return x == 0 ? 0 : 1 / x;
  if (op == "Floor") return std::floor(x);
  if (op == "Ceil") return std::ceil(x);
  if (op == "Tanh") return std::tanh(x);
  if (op == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (op == "Erf") return std::erf(x);
  return std::nan("");
}

// The meta entry of a one-input point-wise node: its op with its attributes
// (ONNX's defaults where the node has none), Clip's bounds and PRelu's slope
// from its inputs; null when a bound or the slope is one no entry describes.
Json unary_entry(const Importer& im, const Node& node) {
  const std::string& op = node.op_type;
  static const std::map<std::string, std::vector<std::pair<const char*, double>>, std::less<>>
      kFloats = {
          {"LeakyRelu", {{"alpha", 0.01}}},
          {"Elu", {{"alpha", 1.0}}},
          {"Celu", {{"alpha", 1.0}}},
          {"Selu", {{"alpha", 1.67326319217681884765625}, {"gamma", 1.05070102214813232421875}}},
          {"HardSigmoid", {{"alpha", 0.2}, {"beta", 0.5}}}};
  const auto input = [&](size_t i) {
    return im.has_input(node, i) ? im.find(node.inputs[i]) : nullptr;
  };
  if (op == "PRelu") {
    const Value* slope = input(1);
    return slope ? named(op, operand_entry(*slope)) : Json();
  }
  Json e{{"op", op}};
  if (auto it = kFloats.find(op); it != kFloats.end())
    for (const auto& [name, fallback] : it->second) e[name] = attr_float(node, name, fallback);
  if (op == "Gelu") e["approximate"] = attr_string(node, "approximate", "none");
  for (size_t i = 1; op == "Clip" && i <= 2; ++i) {
    if (!im.has_input(node, i)) continue;  // no bound
    const Value* bound = input(i);
    if (!bound || bound->is_activation() || !bound->has_values || elements(bound->shape) != 1)
      return nullptr;
    e[i == 1 ? "min" : "max"] = bound->number(0);
  }
  return e;
}

// One-input element-wise functions: folded on constants, fused on activations.
std::optional<Error> unary(Importer& im, const Node& node) {
  Result<const Value*> a = im.operand(node, 0);
  if (!a) return a.error();
  const Value& x = **a;
  for (size_t i = 1; i < node.inputs.size(); ++i)  // PRelu's slope; Clip's bounds are constants
    if (const Value* p = im.has_input(node, i) ? im.find(node.inputs[i]) : nullptr)
      im.use_weight(*p);
  if (x.is_activation()) {
    im.set(node, 0, im.pointwise(node, 0, x, unary_entry(im, node)));
    return std::nullopt;
  }
  Value v = x;
  if (x.has_values && x.is_float() && !std::isnan(unary_value(node.op_type, 1.0))) {
    for (double& f : v.floats) f = unary_value(node.op_type, f);
  } else if (x.has_values && !x.is_float() &&
             (node.op_type == "Neg" || node.op_type == "Abs" || node.op_type == "Relu")) {
    for (int64_t& n : v.ints)
      n = static_cast<int64_t>(unary_value(node.op_type, static_cast<double>(n)));
  } else {
    v = opaque(x.shape, x.type, {&x});
  }
  im.set(node, 0, std::move(v));
  return std::nullopt;
}

}  // namespace

void add_layer_handlers(Table& table) {
  table["Conv"] = conv;
  table["MaxPool"] = pool;
  table["AveragePool"] = pool;
  table["GlobalAveragePool"] = pool;
  table["GlobalMaxPool"] = pool;
  table["Gemm"] = gemm;
  table["MatMul"] = matmul;
  table["Einsum"] = einsum;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow"}) table[op] = binary;
  for (const char* op :
       {"Relu",    "LeakyRelu",   "PRelu",     "Elu",      "Selu",     "Celu", "Gelu",
        "Sigmoid", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Tanh", "Erf",
        "Clip",    "Sqrt",        "Neg",       "Exp",      "Log",      "Abs",  "Reciprocal",
        "Floor",   "Ceil",        "Sin",       "Cos",      "Mish"})
    table[op] = unary;
}

}  // namespace pase::onnx
