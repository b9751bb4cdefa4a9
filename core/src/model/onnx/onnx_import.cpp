// import_onnx(): reads the model (onnx_proto.cpp), binds the graph inputs,
// walks the nodes in file order through their handlers (onnx_ops.cpp,
// onnx_fold.cpp) and counts the parameters (core/docs/import.md).
#include "model/onnx/onnx_import.hpp"

#include <algorithm>
#include <exception>
#include <new>

#include "model/op_table.hpp"

namespace pase {
namespace onnx {

// Opset 11 made Pad, Slice and the shape ops take their arguments as inputs;
// older files spell them as attributes.
constexpr int64_t kMinOpset = 11;
constexpr int64_t kMaxOpset = 21;

const std::map<std::string, Handler, std::less<>>& handlers() {
  static const auto* table = [] {
    auto* t = new std::map<std::string, Handler, std::less<>>();
    add_fold_handlers(*t);
    add_layout_handlers(*t);
    add_part_handlers(*t);
    add_layer_handlers(*t);
    add_norm_handlers(*t);
    return t;
  }();
  return *table;
}

std::string supported_ops() {
  std::string out;
  for (const auto& [name, handler] : handlers()) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

std::optional<int64_t> elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

int64_t attr_int(const Node& node, std::string_view name, int64_t fallback) {
  const Attribute* a = node.attribute(name);
  return a ? a->i : fallback;
}

double attr_float(const Node& node, std::string_view name, double fallback) {
  const Attribute* a = node.attribute(name);
  return a ? a->f : fallback;
}

std::optional<std::vector<int64_t>> attr_ints(const Node& node, std::string_view name) {
  const Attribute* a = node.attribute(name);
  if (!a) return std::nullopt;
  return a->ints;
}

std::string attr_string(const Node& node, std::string_view name, std::string_view fallback) {
  const Attribute* a = node.attribute(name);
  return a ? a->s : std::string(fallback);
}

// ---- Importer -------------------------------------------------------------------------

std::string Importer::where(const Node& node) const {
  std::string w = "nodes[" + std::to_string(node_index(node)) + "] (" + node.op_type;
  if (!node.name.empty()) w += " " + pase::quoted(node.name);
  return w + ")";
}

Error Importer::err(const Node& node, const std::string& message) const {
  return Error{message, where(node)};
}

const Value* Importer::find(const std::string& tensor) const {
  auto it = values_.find(tensor);
  return it == values_.end() ? nullptr : &it->second;
}

Result<const Value*> Importer::input(const Node& node, size_t i) const {
  if (!has_input(node, i))
    return err(node, "input " + std::to_string(i) + " is required but missing");
  const Value* v = find(node.inputs[i]);
  if (!v)
    return err(node, "input " + pase::quoted(node.inputs[i]) +
                         " is neither a graph input, an initializer nor the output of an earlier "
                         "node (the nodes must be in topological order)");
  return v;
}

Result<const Value*> Importer::activation(const Node& node, size_t i, bool pad_ok) const {
  Result<const Value*> v = input(node, i);
  if (!v) return v;
  if (!(*v)->is_activation())
    return err(node, "input " + pase::quoted(node.inputs[i]) +
                         " is a weight or constant here; only an activation is supported");
  if ((*v)->pending_pad && !pad_ok)
    return err(node, "input " + pase::quoted(node.inputs[i]) +
                         " comes from a Pad, which is supported only before a Conv or a pool");
  return v;
}

Result<std::vector<int64_t>> Importer::ints(const Node& node, size_t i) const {
  Result<const Value*> v = input(node, i);
  if (!v) return v.error();
  const Value& x = **v;
  if (!x.has_values || x.is_float())
    return err(node, "cannot infer the shape of " +
                         pase::quoted(node.outputs.empty() ? node.name : node.outputs[0]) +
                         ": input " + pase::quoted(node.inputs[i]) +
                         " must be a constant list of integers (computed from shapes and "
                         "constants only)");
  return x.ints;
}

void Importer::set(const Node& node, size_t output, Value value) {
  if (output < node.outputs.size() && !node.outputs[output].empty())
    values_[node.outputs[output]] = std::move(value);
}

std::string Importer::layer_name(const Node& node) {
  std::string base = node.name;
  while (!base.empty() && base.front() == '/') base.erase(base.begin());
  if (base.empty()) base = node.op_type + "_" + std::to_string(node_index(node));
  return unique_name(base);
}

std::string Importer::unique_name(std::string base) {
  std::replace(base.begin(), base.end(), ':', '_');
  std::string name = base;
  for (int k = 2; names_.count(name) || find(name); ++k) name = base + "_" + std::to_string(k);
  names_.insert(name);
  return name;
}

Value Importer::add_layer(const Node& node, LayerSpec layer, const Shape& shape) {
  if (layer.name.empty()) layer.name = layer_name(node);
  Value out;
  out.kind = Kind::kActivation;
  out.shape = shape;
  out.operand = layer.name;
  out.layer = static_cast<int>(spec_.layers.size());
  spec_.layers.push_back(std::move(layer));
  return out;
}

void Importer::use_weight(const Value& value) {
  for (int r : value.roots) params_[r].used = true;
}

int Importer::consumers(const std::string& tensor) const {
  auto it = consumers_.find(tensor);
  return it == consumers_.end() ? 0 : static_cast<int>(it->second.size());
}

const std::vector<int>& Importer::consumer_nodes(const std::string& tensor) const {
  static const std::vector<int> none;
  auto it = consumers_.find(tensor);
  return it == consumers_.end() ? none : it->second;
}

void Importer::count_consumers() {
  for (size_t n = 0; n < model_.nodes.size(); ++n) {
    const Node& node = model_.nodes[n];
    if (node.op_type == "Shape") continue;
    for (const std::string& in : node.inputs)
      if (!in.empty()) {
        std::vector<int>& list = consumers_[in];
        if (list.empty() || list.back() != static_cast<int>(n)) list.push_back(static_cast<int>(n));
      }
  }
}

namespace {

bool has_pw(const std::string& op) {
  return op == "FC" || op == "Einsum" || op == "Conv" || op == "Elementwise" || op == "Activation";
}

}  // namespace

Value Importer::pointwise(const Node& node, size_t input, const Value& x, json_detail::Json op) {
  if (x.layer >= 0 && consumers(node.inputs[input]) <= 1 &&
      spec_.layers[x.layer].name == x.operand && has_pw(spec_.layers[x.layer].op)) {
    ++spec_.layers[x.layer].pw;
    add_pointwise(x.layer, std::move(op));
    return x;
  }
  LayerSpec l;
  l.op = "Activation";
  l.inputs.push_back(Operand{x.operand, {}});
  Value out = add_layer(node, std::move(l), x.shape);
  add_pointwise(out.layer, std::move(op));
  return out;
}

void Importer::add_pointwise(int layer, json_detail::Json op) {
  if (op.is_null()) unnamed_pointwise_.insert(layer);
  if (unnamed_pointwise_.count(layer)) return;
  json_detail::Json& list = semantics(layer)["pointwise"];
  if (!list.is_array()) list = json_detail::Json::array();
  list.push_back(std::move(op));
}

json_detail::Json Importer::layer_semantics() const {
  json_detail::Json out = json_detail::Json::object();
  for (const auto& [layer, entry] : semantics_) {
    json_detail::Json e = entry;
    if (unnamed_pointwise_.count(layer)) e.erase("pointwise");
    if (e.is_object() && !e.empty()) out[spec_.layers[layer].name] = std::move(e);
  }
  return out;
}

json_detail::Json operand_entry(const Value& v, const Shape& shape) {
  const Shape& s = shape.empty() ? v.shape : shape;
  if (v.kind == Kind::kWeight) return json_detail::Json{{"weight", s}};
  if (v.kind != Kind::kConstant || !v.has_values) return nullptr;
  const size_t n = v.is_float() ? v.floats.size() : v.ints.size();
  if (n == 1) return json_detail::Json{{"constant", v.number(0)}};
  json_detail::Json values = json_detail::Json::array();
  for (size_t i = 0; i < n; ++i) values.push_back(v.number(i));
  return json_detail::Json{{"constant", std::move(values)}, {"shape", s}};
}

// Graph inputs are data (activations) or weights. Initializers are weights.
// Of the other graph inputs (an export without its weights has them all as
// inputs), the first is data, and so is any with an integer type, a size
// that the file leaves open, or a reader that takes it as its data operand
// (input 0 of a Conv, Gemm, MatMul, pool, normalization, ReduceMean or
// Softmax); the rest are weights.
std::optional<Error> Importer::bind_inputs(const ImportOptions& options) {
  std::set<std::string, std::less<>> initializer_names;
  for (const Tensor& t : model_.initializers) {
    initializer_names.insert(t.name);
    Value v;
    v.shape = t.dims;
    v.type = t.data_type;
    v.has_values = t.has_values;
    v.ints = t.ints;
    v.floats = t.floats;
    if (is_floating(t.data_type)) {
      v.kind = Kind::kWeight;
      v.roots = {static_cast<int>(params_.size())};
      params_.push_back(Param{t.name, elements(t.dims).value_or(0), false});
    } else {
      v.kind = Kind::kConstant;
    }
    values_[t.name] = std::move(v);
  }
  // Ops whose input 0 is their data operand (a weight is never there in an
  // export): a graph input read there is data.
  static const std::set<std::string, std::less<>> data_first = {"Conv",
                                                                "Gemm",
                                                                "MatMul",
                                                                "MaxPool",
                                                                "AveragePool",
                                                                "GlobalAveragePool",
                                                                "GlobalMaxPool",
                                                                "BatchNormalization",
                                                                "LayerNormalization",
                                                                "ReduceMean",
                                                                "Softmax",
                                                                "LogSoftmax"};
  std::set<std::string, std::less<>> data_readers;
  for (const Node& node : model_.nodes)
    if (!node.inputs.empty() && data_first.count(node.op_type)) data_readers.insert(node.inputs[0]);

  bool first = true;
  for (size_t i = 0; i < model_.inputs.size(); ++i) {
    const ValueInfo& in = model_.inputs[i];
    if (initializer_names.count(in.name)) continue;
    std::string where = "inputs." + in.name;
    if (!in.has_shape)
      return Error{"graph input " + pase::quoted(in.name) + " has no shape", where};
    bool open = false;
    Shape shape;
    for (size_t d = 0; d < in.dims.size(); ++d) {
      const Dim& dim = in.dims[d];
      int64_t size = dim.value;
      if (first && d == 0 && options.batch > 0) {
        size = options.batch;
      } else if (!dim.param.empty()) {
        open = true;
        auto it = std::find_if(options.dims.begin(), options.dims.end(),
                               [&](const auto& p) { return p.first == dim.param; });
        if (it == options.dims.end())
          return Error{"the model's input " + pase::quoted(in.name) +
                           " has the dynamic dimension " + pase::quoted(dim.param) +
                           " (dimension " + std::to_string(d) + "); give its size (--dim " +
                           dim.param + "=N)",
                       "dims." + dim.param};
        size = it->second;
      } else if (size <= 0) {
        open = true;
        return Error{"dimension " + std::to_string(d) + " of graph input " + pase::quoted(in.name) +
                         " has no size in the file; export the model with fixed or named sizes",
                     where};
      }
      if (size <= 0)
        return Error{"dimension " + std::to_string(d) + " of graph input " + pase::quoted(in.name) +
                         " must be positive, got " + std::to_string(size),
                     where};
      shape.push_back(size);
    }
    if (!elements(shape))
      return Error{"graph input " + pase::quoted(in.name) + " is too large", where};
    bool data = first || open || !is_floating(in.elem_type) || data_readers.count(in.name);
    Value v;
    v.shape = shape;
    v.type = in.elem_type;
    if (data) {
      if (in.name.find(':') != std::string::npos || in.name.empty())
        return Error{"graph input names may not be empty or contain ':'", where};
      v.kind = Kind::kActivation;
      v.operand = in.name;
      spec_.inputs.emplace_back(in.name, shape);
      names_.insert(in.name);
    } else {
      v.kind = Kind::kWeight;
      v.roots = {static_cast<int>(params_.size())};
      params_.push_back(Param{in.name, *elements(shape), false});
    }
    values_[in.name] = std::move(v);
    first = false;
  }
  if (spec_.inputs.empty())
    return Error{"the model has no data input (every graph input is an initializer)", "inputs"};
  return std::nullopt;
}

std::optional<Error> Importer::run(const ImportOptions& options) {
  if (model_.opset < kMinOpset)
    return Error{"opset " + std::to_string(model_.opset) +
                     " is too old: the importer reads opset " + std::to_string(kMinOpset) + " to " +
                     std::to_string(kMaxOpset) +
                     " (export again with torch.onnx.export(..., opset_version=13))",
                 "opset"};
  if (model_.opset > kMaxOpset)
    return Error{"opset " + std::to_string(model_.opset) + " is newer than the importer knows (" +
                     std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")",
                 "opset"};
  count_consumers();
  if (auto e = bind_inputs(options)) return e;
  // Constant nodes read nothing: take them first, so that a pattern (the
  // decomposed LayerNorm) can see constants that the file defines later.
  for (const Node& node : model_.nodes)
    if (node.op_type == "Constant" && (node.domain.empty() || node.domain == "ai.onnx")) {
      if (auto e = handlers().at("Constant")(*this, node)) return e;
      skip_.insert(node_index(node));
    }
  for (const Node& node : model_.nodes) {
    if (skip_.count(node_index(node))) continue;
    if (!node.domain.empty() && node.domain != "ai.onnx")
      return err(node, "op " + pase::quoted(node.domain + "." + node.op_type) +
                           " is from a custom domain; supported are the standard ops " +
                           supported_ops());
    auto it = handlers().find(node.op_type);
    if (it == handlers().end())
      return err(node, "op " + pase::quoted(node.op_type) +
                           " is not supported; supported ops: " + supported_ops());
    if (auto e = it->second(*this, node)) return e;
  }
  if (spec_.layers.empty())
    return Error{"the model has no layer to plan (only constants and shapes)", ""};
  int64_t total = 0;
  for (const Param& p : params_)
    if (p.used) total += p.elements;
  spec_.parameters = total;
  return std::nullopt;
}

}  // namespace onnx

Result<std::vector<DynamicDim>> onnx_dynamic_dims(ByteSource& source) {
  Result<onnx::Model> model = onnx::read_model(source);
  if (!model) return model.error();
  return onnx::dynamic_dims(*model);
}

namespace onnx {

Result<GraphSpec> import_model(ByteSource& source, const ImportOptions& options) {
  Result<onnx::Model> model = onnx::read_model(source);
  if (!model) return model.error();
  return translate(*model, options);
}

std::vector<DynamicDim> dynamic_dims(const Model& model) {
  std::set<std::string> initializers;
  for (const Tensor& t : model.initializers) initializers.insert(t.name);
  std::vector<DynamicDim> out;
  for (const ValueInfo& in : model.inputs) {
    if (initializers.count(in.name)) continue;
    for (const Dim& d : in.dims)
      if (!d.param.empty() && std::none_of(out.begin(), out.end(),
                                           [&](const DynamicDim& x) { return x.name == d.param; }))
        out.push_back(DynamicDim{d.param, in.name});
  }
  return out;
}

Result<GraphSpec> translate(const Model& model, const ImportOptions& options) {
  const std::vector<DynamicDim> dynamic = dynamic_dims(model);
  for (const auto& [name, size] : options.dims) {
    std::string known;
    bool found = false;
    for (const DynamicDim& d : dynamic) {
      found = found || d.name == name;
      known += (known.empty() ? "" : ", ") + d.name;
    }
    if (!found)
      return Error{"the model has no dynamic dimension '" + name + "' (" +
                       (known.empty() ? "it has none" : "it has: " + known) + ")",
                   "dims." + name};
    if (size <= 0)
      return Error{"must be a positive integer, got " + std::to_string(size), "dims." + name};
  }
  GraphSpec spec;
  spec.name = !options.name.empty()       ? options.name
              : !model.graph_name.empty() ? model.graph_name
                                          : "onnx-model";
  Importer importer(model, spec);
  if (auto e = importer.run(options)) return *e;
  // The meta: where the graph came from and what its layers run as ONNX
  // defines them (core/docs/import.md, "What the layers run").
  json_detail::Json meta{{"source", "onnx"}, {"opset", model.opset}};
  json_detail::Json layers = importer.layer_semantics();
  if (!layers.empty()) meta["onnx_layers"] = std::move(layers);
  spec.meta_json = json_detail::dump_compact(meta);
  return spec;
}

}  // namespace onnx

Result<GraphSpec> import_onnx(ByteSource& source, const ImportOptions& options) {
  if (options.seq > 0) {
    return Error{
        "an ONNX model takes its sequence length by the name of its dimension "
        "(dims, --dim NAME=SIZE), not as seq",
        "seq"};
  }
  try {
    return onnx::import_model(source, options);
  } catch (const std::bad_alloc&) {
    return Error{"out of memory while importing the model", ""};
  }
}

}  // namespace pase
