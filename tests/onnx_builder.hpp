// Building ONNX ModelProto bytes in tests, with protozero's writer and the
// field numbers of onnx.proto: tensors, attributes, nodes, value infos and a
// sample model (onnx_proto_test.cpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <protozero/pbf_writer.hpp>
#include <string>
#include <vector>

#include "model/onnx/onnx_proto.hpp"

namespace pase::onnx::builder {

template <class T>
std::string little_endian(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;  // the test machines are little endian, as ONNX's raw_data is
}

// TensorProto with raw_data (empty: no data).
inline std::string tensor(const std::string& name, int32_t data_type,
                          const std::vector<int64_t>& dims, const std::string& raw) {
  std::string out;
  protozero::pbf_writer w(out);
  w.add_packed_int64(1, dims.begin(), dims.end());
  w.add_int32(2, data_type);
  w.add_string(8, name);
  if (!raw.empty()) w.add_bytes(9, raw);
  return out;
}

inline std::string attribute_int(const std::string& name, int64_t value) {
  std::string out;
  protozero::pbf_writer w(out);
  w.add_string(1, name);
  w.add_int64(3, value);
  w.add_int32(20, kAttrInt);
  return out;
}

inline std::string attribute_float(const std::string& name, float value) {
  std::string out;
  protozero::pbf_writer w(out);
  w.add_string(1, name);
  w.add_float(2, value);
  w.add_int32(20, kAttrFloat);
  return out;
}

inline std::string attribute_string(const std::string& name, const std::string& value) {
  std::string out;
  protozero::pbf_writer w(out);
  w.add_string(1, name);
  w.add_bytes(4, value);
  w.add_int32(20, kAttrString);
  return out;
}

// ints unpacked (as onnx.proto declares them) or packed.
inline std::string attribute_ints(const std::string& name, const std::vector<int64_t>& values,
                                  bool packed) {
  std::string out;
  protozero::pbf_writer w(out);
  w.add_string(1, name);
  if (packed) {
    w.add_packed_int64(8, values.begin(), values.end());
  } else {
    for (const int64_t v : values) w.add_int64(8, v);
  }
  w.add_int32(20, kAttrInts);
  return out;
}

inline std::string attribute_floats(const std::string& name, const std::vector<float>& values) {
  std::string out;
  protozero::pbf_writer w(out);
  w.add_string(1, name);
  for (const float v : values) w.add_float(7, v);
  w.add_int32(20, kAttrFloats);
  return out;
}

inline std::string attribute_tensor(const std::string& name, const std::string& tensor_bytes) {
  std::string out;
  protozero::pbf_writer w(out);
  w.add_string(1, name);
  w.add_message(5, tensor_bytes);
  w.add_int32(20, kAttrTensor);
  return out;
}

inline std::string node(const std::string& op_type, const std::string& name,
                        const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs,
                        const std::vector<std::string>& attributes = {}) {
  std::string out;
  protozero::pbf_writer w(out);
  for (const std::string& i : inputs) w.add_string(1, i);
  for (const std::string& o : outputs) w.add_string(2, o);
  w.add_string(3, name);
  w.add_string(4, op_type);
  for (const std::string& a : attributes) w.add_message(5, a);
  return out;
}

// ValueInfoProto of a tensor; a dim of "" is unknown, a number its size, any
// other string a dim_param.
inline std::string value_info(const std::string& name, int32_t elem_type,
                              const std::vector<std::string>& dims) {
  std::string shape;
  {
    protozero::pbf_writer s(shape);
    for (const std::string& d : dims) {
      protozero::pbf_writer dim(s, 1);
      if (d.empty()) {
        dim.add_string(3, "neither");  // denotation: the dim is neither known nor named
        continue;
      }
      if (d.find_first_not_of("0123456789") == std::string::npos) {
        dim.add_int64(1, std::stoll(d));
      } else {
        dim.add_string(2, d);
      }
    }
  }
  std::string type;
  {
    protozero::pbf_writer t(type);
    protozero::pbf_writer tensor_type(t, 1);
    tensor_type.add_int32(1, elem_type);
    tensor_type.add_message(2, shape);
  }
  std::string out;
  protozero::pbf_writer w(out);
  w.add_string(1, name);
  w.add_message(2, type);
  return out;
}

inline std::string opset(const std::string& domain, int64_t version) {
  std::string out;
  protozero::pbf_writer w(out);
  w.add_string(1, domain);
  w.add_int64(2, version);
  return out;
}

// The parts of a ModelProto, in the order torch.onnx.export writes them: the
// head (ir_version, producer), the graph field, the opset_import fields.
struct ModelBytes {
  std::string head, graph, tail;
  std::string bytes() const { return head + graph + tail; }
};

inline constexpr int64_t kBigRows = 1000, kBigCols = 1000;

inline ModelBytes sample_model(bool with_big_tensor) {
  std::string graph;
  {
    protozero::pbf_writer g(graph);
    g.add_message(1, node("Conv", "conv1", {"x", "w", ""}, {"y"},
                          {attribute_ints("kernel_shape", {3, 3}, false),
                           attribute_ints("pads", {1, 1, 1, 1}, true), attribute_int("group", 1),
                           attribute_string("auto_pad", "NOTSET")}));
    g.add_message(1, node("LeakyRelu", "act", {"y"}, {"z"},
                          {attribute_float("alpha", 0.5F), attribute_floats("scales", {1, 2})}));
    g.add_message(1, node("Constant", "shape_const", {}, {"shape"},
                          {attribute_tensor(
                              "value", tensor("", kInt64, {2}, little_endian<int64_t>({1, -1})))}));
    g.add_message(1, node("Reshape", "flat", {"z", "shape"}, {"out"}));
    g.add_string(2, "sample");
    g.add_message(5, tensor("steps", kInt64, {3}, little_endian<int64_t>({2, 3, -1})));
    if (with_big_tensor) {
      const std::vector<float> weights(static_cast<size_t>(kBigRows * kBigCols), 0.25F);
      g.add_message(5, tensor("w", kFloat, {kBigRows, kBigCols}, little_endian(weights)));
    }
    g.add_string(10, "a doc string the reader skips");
    g.add_message(11, value_info("x", kFloat, {"batch", "3", "224", ""}));
    g.add_message(12, value_info("out", kFloat, {"batch", "1000"}));
    g.add_message(13, value_info("y", kFloat, {}));
  }
  ModelBytes model;
  {
    protozero::pbf_writer m(model.head);
    m.add_int64(1, 8);
    m.add_string(2, "pase-test");
    m.add_string(3, "1.0");
  }
  {
    protozero::pbf_writer m(model.graph);
    m.add_message(7, graph);
  }
  {
    protozero::pbf_writer m(model.tail);
    m.add_message(8, opset("com.microsoft", 1));
    m.add_message(8, opset("", 17));
  }
  return model;
}

// A model whose graph holds only `graph_fields` (GraphProto bytes).
inline std::string model_with_graph(const std::string& graph_fields) {
  std::string out;
  protozero::pbf_writer m(out);
  m.add_int64(1, 8);
  m.add_message(7, graph_fields);
  m.add_message(8, opset("", 17));
  return out;
}

// A graph with the one initializer `tensor_bytes`.
inline std::string graph_with_initializer(const std::string& tensor_bytes) {
  std::string graph;
  protozero::pbf_writer g(graph);
  g.add_message(5, tensor_bytes);
  return graph;
}

}  // namespace pase::onnx::builder
