// ONNX models built in code, as the importer reads them (onnx::Model, not
// bytes: onnx_builder.hpp writes those), for the importer's tests (onnx_import_test.cpp,
// onnx_semantics_test.cpp): attributes and a Builder of graph inputs,
// initializers, constants and nodes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/onnx/onnx_import.hpp"

namespace onnx_test {

using namespace pase::onnx;

// An attribute of `type` named `name`; the makers below set its value.
inline Attribute attr_of(std::string name, AttributeType type) {
  Attribute a;
  a.name = std::move(name);
  a.type = type;
  return a;
}

inline Attribute int_attr(std::string name, int64_t v) {
  Attribute a = attr_of(std::move(name), kAttrInt);
  a.i = v;
  return a;
}

inline Attribute float_attr(std::string name, double v) {
  Attribute a = attr_of(std::move(name), kAttrFloat);
  a.f = v;
  return a;
}

inline Attribute ints_attr(std::string name, std::vector<int64_t> v) {
  Attribute a = attr_of(std::move(name), kAttrInts);
  a.ints = std::move(v);
  return a;
}

inline Attribute tensor_attr(std::string name, Tensor t) {
  Attribute a = attr_of(std::move(name), kAttrTensor);
  a.t = std::move(t);
  return a;
}

// A model under construction: graph inputs, initializers and nodes.
struct Builder {
  Model m;
  explicit Builder(int64_t opset = 13) {
    m.opset = opset;
    m.ir_version = 7;
    m.graph_name = "test";
  }
  Builder& dims_input(const std::string& name, std::vector<Dim> dims, int32_t type = kFloat) {
    ValueInfo v;
    v.name = name;
    v.elem_type = type;
    v.has_shape = true;
    v.dims = std::move(dims);
    m.inputs.push_back(v);
    return *this;
  }
  Builder& input(const std::string& name, const std::vector<int64_t>& dims, int32_t type = kFloat) {
    std::vector<Dim> d;
    for (int64_t x : dims) d.push_back(Dim{x, ""});
    return dims_input(name, d, type);
  }
  Builder& weight(const std::string& name, std::vector<int64_t> dims) {
    Tensor t;
    t.name = name;
    t.data_type = kFloat;
    t.dims = std::move(dims);
    m.initializers.push_back(t);
    return *this;
  }
  Builder& ints(const std::string& name, std::vector<int64_t> values) {
    Tensor t;
    t.name = name;
    t.data_type = kInt64;
    t.dims = {static_cast<int64_t>(values.size())};
    t.has_values = true;
    t.ints = std::move(values);
    m.initializers.push_back(t);
    return *this;
  }
  // A Constant of `dims`, with `values` or (none given) without known values.
  Builder& constant(const std::string& name, std::vector<int64_t> dims,
                    std::vector<double> values) {
    Node n;
    n.op_type = "Constant";
    n.outputs = {name};
    Tensor t;
    t.data_type = kFloat;
    t.dims = std::move(dims);
    t.has_values = !values.empty();
    t.floats = std::move(values);
    n.attributes.push_back(tensor_attr("value", std::move(t)));
    m.nodes.push_back(n);
    return *this;
  }
  // A float scalar Constant.
  Builder& scalar(const std::string& name, double value) { return constant(name, {}, {value}); }
  Node& node(std::string op, std::vector<std::string> in, std::vector<std::string> out,
             std::string name = "") {
    Node n;
    n.op_type = std::move(op);
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    n.name = std::move(name);
    m.nodes.push_back(n);
    return m.nodes.back();
  }
};

}  // namespace onnx_test
