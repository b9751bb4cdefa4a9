// The importer's state while it walks an ONNX graph (core/docs/import.md):
// what it knows of every tensor (a Value), the layers made so far, and the
// table of node handlers, one per op type.
//
// Every tensor is one of three kinds:
//   - an activation: computed from the data inputs at training time; it is a
//     pase tensor (a graph input, a layer output "name" or "name:k");
//   - a weight: derived from parameters (initializers, or graph inputs that
//     hold weights) by layout-only nodes; it becomes a `{"shape"}` operand or
//     a layer's own weight, and the parameters it derives from are counted
//     when a layer uses it;
//   - a constant: known at import time (Constant nodes, shapes and what is
//     computed from them); its values are kept when it is small.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/onnx/onnx_proto.hpp"
#include "pase/graph.hpp"
#include "pase/result.hpp"
#include "util/json_util.hpp"

namespace pase::onnx {

enum class Kind { kActivation, kWeight, kConstant };

struct Value {
  Kind kind = Kind::kConstant;
  Shape shape;
  int32_t type = kFloat;
  // Constants with at most kMaxConstantElements elements (and weights whose
  // values the file had): integral types in `ints`, floating in `floats`.
  bool has_values = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  // Activations: the pase tensor, and the layer that made it (-1 for a graph
  // input or one output of a multi-output layer), whose `pw` may absorb the
  // point-wise nodes that follow.
  std::string operand;
  int layer = -1;
  // A zero Pad waiting for the Conv or Pool that consumes it: the padding
  // of the spatial dimensions [h_begin, w_begin, h_end, w_end] of `operand`.
  std::optional<std::array<int64_t, 4>> pending_pad;
  // Weights: the parameters it derives from (indices into Importer::params_).
  std::vector<int> roots;

  bool is_activation() const { return kind == Kind::kActivation; }
  bool is_float() const { return is_floating(type); }
  // Element i as a double / integer, whichever list holds the values.
  double number(size_t i) const { return is_float() ? floats[i] : static_cast<double>(ints[i]); }
};

class Importer;

// A handler translates one node: sets the Values of its outputs, adds layers.
using Handler = std::optional<Error> (*)(Importer& im, const Node& node);

// The handlers by op type: onnx_fold.cpp registers the constant and shape
// ops, onnx_layout.cpp and onnx_parts.cpp the layout ops, onnx_ops.cpp and
// onnx_norm.cpp those that compute.
const std::map<std::string, Handler, std::less<>>& handlers();
void add_fold_handlers(std::map<std::string, Handler, std::less<>>& table);
void add_layout_handlers(std::map<std::string, Handler, std::less<>>& table);
void add_layer_handlers(std::map<std::string, Handler, std::less<>>& table);
void add_norm_handlers(std::map<std::string, Handler, std::less<>>& table);
void add_part_handlers(std::map<std::string, Handler, std::less<>>& table);

// "Conv, Gemm, MatMul, ..." for the unsupported-op error.
std::string supported_ops();

class Importer {
 public:
  Importer(const Model& model, GraphSpec& spec) : model_(model), spec_(spec) {}

  const Model& model() const { return model_; }
  int64_t opset() const { return model_.opset; }

  // The Value of input `i` of `node`; error if the input is missing (when
  // required) or not yet defined.
  Result<const Value*> input(const Node& node, size_t i) const;
  bool has_input(const Node& node, size_t i) const {
    return i < node.inputs.size() && !node.inputs[i].empty();
  }
  // An input that must be an activation (not a pending Pad unless `pad_ok`).
  Result<const Value*> activation(const Node& node, size_t i, bool pad_ok = false) const;
  // An activation (not a pending Pad), a weight or a constant.
  Result<const Value*> operand(const Node& node, size_t i) const {
    Result<const Value*> v = input(node, i);
    if (v && (*v)->is_activation()) return activation(node, i);
    return v;
  }
  // An input whose values must be known (a constant): its integers.
  Result<std::vector<int64_t>> ints(const Node& node, size_t i) const;

  void set(const Node& node, size_t output, Value value);
  void set_tensor(const std::string& tensor, Value value) { values_[tensor] = std::move(value); }
  const Value* find(const std::string& tensor) const;

  // Adds a layer reading `inputs` (pase operands) and returns the Value of
  // its (first) output, of shape `shape`. Its name derives from the node's.
  Value add_layer(const Node& node, LayerSpec layer, const Shape& shape);
  std::vector<LayerSpec>& layers() { return spec_.layers; }
  // The name a layer made for `node` gets: the node's name without its
  // leading '/', or "<op>_<index>"; unique, no ':'.
  std::string layer_name(const Node& node);
  // `base` (':' replaced), made unique with a suffix "_2", "_3", ...
  std::string unique_name(std::string base);

  // The weight parameters of `value` count toward the model's parameters.
  void use_weight(const Value& value);
  // The operand of a layer that reads `value`: the pase tensor of an
  // activation, else a `{"shape"}` operand (whose parameters then count).
  Operand layer_operand(const Value& value) {
    if (value.is_activation()) return Operand{value.operand, {}};
    use_weight(value);
    return Operand{"", value.shape};
  }

  // How many nodes read `tensor` (Shape nodes, which read only its shape,
  // excepted), and which.
  int consumers(const std::string& tensor) const;
  const std::vector<int>& consumer_nodes(const std::string& tensor) const;
  // Marks node `index` as translated by a pattern (it is skipped later).
  void consume(int index) { skip_.insert(index); }
  int node_index(const Node& node) const { return static_cast<int>(&node - model_.nodes.data()); }

  // A one-input point-wise node (Relu, Add of a constant, ...): fused into
  // the layer that produced `x` (input `input` of the node) when that layer
  // has a `pw` and `x` has no other reader, else a new Activation layer.
  // `op` describes it for the layer's meta entry (add_pointwise()).
  Value pointwise(const Node& node, size_t input, const Value& x, json_detail::Json op);

  // What layer `layer` runs as ONNX defines it: its entry of the graph's
  // meta.onnx_layers (core/docs/import.md, "What the layers run"), an
  // object made on first use.
  json_detail::Json& semantics(int layer) { return semantics_[layer]; }
  // One more point-wise operation of `layer`, after those before it. A null
  // `op` is one the entry cannot describe: the layer's list is then left out.
  void add_pointwise(int layer, json_detail::Json op);
  // meta.onnx_layers: the entries by layer name, in layer order.
  json_detail::Json layer_semantics() const;

  // `x` under another name (Identity, a Reshape to the same shape): the same
  // pase tensor, fusable only while `node` is its one reader.
  Value alias(const Node& node, const Value& x) const {
    Value v = x;
    if (v.is_activation() && consumers(node.inputs[0]) > 1) v.layer = -1;
    return v;
  }
  // A Reshape layer of activation `x` to `shape` (an alias when the shape is
  // unchanged); for a constant or weight, the same values in the new shape.
  Value reshaped(const Node& node, const Value& x, const Shape& shape);

  // The Split / Unstack layers made for slices, by source and cut.
  std::map<std::string, std::string>& parts() { return parts_; }

  // Error at the node: "nodes[12] (Conv '/conv1/Conv')".
  Error err(const Node& node, const std::string& message) const;
  std::string where(const Node& node) const;

  // The whole walk: inputs, nodes, parameters.
  std::optional<Error> run(const ImportOptions& options);

 private:
  std::optional<Error> bind_inputs(const ImportOptions& options);
  void count_consumers();

  const Model& model_;
  GraphSpec& spec_;
  std::map<std::string, Value, std::less<>> values_;
  std::map<std::string, std::vector<int>, std::less<>> consumers_;
  std::set<int> skip_;
  std::set<std::string> names_;
  std::map<std::string, std::string> parts_;
  std::map<int, json_detail::Json> semantics_;
  std::set<int> unnamed_pointwise_;  // layers with a point-wise op no entry describes
  struct Param {
    std::string name;
    int64_t elements = 0;
    bool used = false;
  };
  std::vector<Param> params_;
};

// The whole import, import_onnx() without its guard against running out of memory.
Result<GraphSpec> import_model(ByteSource& source, const ImportOptions& options);
// The dynamic dimensions of the model's data inputs (onnx_dynamic_dims()).
std::vector<DynamicDim> dynamic_dims(const Model& model);
// The translation of a model already read (what import_model() does after
// read_model()).
Result<GraphSpec> translate(const Model& model, const ImportOptions& options);

// ---- Constants (onnx_fold.cpp) ----

// A constant of `shape` holding `ints` (type int64) or `floats` (float).
Value int_constant(Shape shape, std::vector<int64_t> ints);
Value float_constant(Shape shape, std::vector<double> floats);
// A constant or weight of `shape` whose values are not known: a weight (with
// the parameters of `from`) when any of `from` is one, else a constant.
Value opaque(const Shape& shape, int32_t type, const std::vector<const Value*>& from);
// Element-wise `f` over the broadcast of `a` and `b`, when both have values
// and the result is small; else an opaque value of the broadcast shape.
// nullopt when the shapes do not broadcast.
std::optional<Value> fold_binary(const Value& a, const Value& b, double (*f)(double, double),
                                 bool to_int);
// For every position of a tensor of shape `out`, in row-major order, the
// flat index `at(position)` of the element it takes from its source (the
// reordering of a Transpose, Slice or broadcast).
std::vector<int64_t> source_indices(const Shape& out,
                                    const std::function<int64_t(const std::vector<int64_t>&)>& at);
// The flat index into a tensor of shape `from` (broadcast to `to`) of every
// element of `to`, in order.
std::vector<int64_t> broadcast_index(const Shape& from, const Shape& to);
// `x`'s values reordered by `index` (for Gather, Slice, Transpose, Expand):
// out[i] = x[index[i]], with shape `shape`.
Value gather_values(const Value& x, const Shape& shape, const std::vector<int64_t>& index);

// The meta entry of a point-wise operand (core/docs/import.md, "What the
// layers run"): a weight, {"weight": shape}; a constant with known values,
// {"constant": v} (one element) or {"constant": [...], "shape": shape};
// null for a constant whose values are not known. `shape`, when given, is
// the shape recorded instead of the value's (a Conv's bias [c] as [c, 1, 1]).
json_detail::Json operand_entry(const Value& v, const Shape& shape = {});

// Broadcast of two shapes (numpy rules), or nullopt when they do not broadcast.
std::optional<Shape> broadcast(const Shape& a, const Shape& b);
// Product of a shape's sizes (1 for a scalar); nullopt on overflow.
std::optional<int64_t> elements(const Shape& s);
// Integer, float, int list and string attributes (with a default).
int64_t attr_int(const Node& node, std::string_view name, int64_t fallback);
double attr_float(const Node& node, std::string_view name, double fallback);
std::optional<std::vector<int64_t>> attr_ints(const Node& node, std::string_view name);
std::string attr_string(const Node& node, std::string_view name, std::string_view fallback);

}  // namespace pase::onnx
