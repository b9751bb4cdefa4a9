// The structure of an ONNX ModelProto as the importer needs it, read with
// protozero from a ByteSource (core/docs/import.md, "Reading the file").
//
// Only the structure is kept: nodes with their attributes, the graph's inputs,
// outputs and value_info, and for every initializer its name, type and dims.
// Tensor values (initializers, Constant nodes' `value`) are decoded only when
// the tensor has at most kMaxConstantElements elements: shape constants, eps,
// exponents. Larger payloads (the weights) are skipped by offset and never
// read from the source.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pase/import.hpp"
#include "pase/result.hpp"

namespace pase::onnx {

// TensorProto.DataType values.
enum DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBfloat16 = 16,
};

bool is_floating(int32_t data_type);  // float16, bfloat16, float, double
bool is_integral(int32_t data_type);  // the (u)intN types and bool

inline constexpr int64_t kMaxConstantElements = 4096;

// A TensorProto without its payload, or with its values when it is small.
struct Tensor {
  std::string name;
  int32_t data_type = kUndefined;
  std::vector<int64_t> dims;
  // Set when the tensor has at most kMaxConstantElements elements and its data
  // is in the file: integral and bool types in `ints`, floating types in
  // `floats` (one of the two is filled, element count = prod(dims)).
  bool has_values = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  bool external = false;  // data_location EXTERNAL (the values are elsewhere)
};

// One dimension of a ValueInfo's shape: a size, a named dynamic size, or
// unknown (neither).
struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string param;   // dim_param, when the size is symbolic
};

struct ValueInfo {
  std::string name;
  int32_t elem_type = kUndefined;  // 0 when the type is not a tensor type
  bool has_shape = false;
  std::vector<Dim> dims;
};

// AttributeProto.AttributeType values.
enum AttributeType : int32_t {
  kAttrUndefined = 0,
  kAttrFloat = 1,
  kAttrInt = 2,
  kAttrString = 3,
  kAttrTensor = 4,
  kAttrGraph = 5,
  kAttrFloats = 6,
  kAttrInts = 7,
  kAttrStrings = 8,
  kAttrTensors = 9,
  kAttrGraphs = 10,
  kAttrSparseTensor = 11,
  kAttrTypeProtos = 14,
};

struct Attribute {
  std::string name;
  int32_t type = kAttrUndefined;
  double f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::optional<Tensor> t;  // type kAttrTensor
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;                // "" or "ai.onnx" for the standard ops
  std::vector<std::string> inputs;   // "" for an omitted optional input
  std::vector<std::string> outputs;  // "" for an omitted optional output
  std::vector<Attribute> attributes;

  const Attribute* attribute(std::string_view attr_name) const;
};

struct OpsetImport {
  std::string domain;  // "" is the default domain (ai.onnx)
  int64_t version = 0;
};

struct Model {
  int64_t ir_version = 0;
  std::string producer_name, producer_version;
  std::vector<OpsetImport> opsets;
  int64_t opset = 0;  // the version of the default domain ("" or "ai.onnx")
  std::string graph_name;
  std::vector<Node> nodes;  // in file order
  std::vector<Tensor> initializers;
  std::vector<ValueInfo> inputs, outputs, value_info;
};

// Reads the ModelProto of `source`. Errors (where is empty): not an ONNX
// model (bad wire format, no graph), truncated (a field runs past the end of
// the file), a read failure of the source.
Result<Model> read_model(ByteSource& source);

}  // namespace pase::onnx
