// NodeProto, AttributeProto, ValueInfoProto and OperatorSetIdProto: decoded
// in memory with protozero, or, for a node larger than kMaxNodeBytes (a
// Constant holding a large tensor), field by field so that the tensor's
// payload is skipped like an initializer's.
#include <cstdint>
#include <cstring>
#include <protozero/iterators.hpp>
#include <protozero/pbf_reader.hpp>
#include <string>
#include <utility>

#include "model/onnx/onnx_wire.hpp"

namespace pase::onnx::wire {
namespace {

using protozero::pbf_wire_type;
using protozero::tag_and_type;

constexpr uint32_t kVarint(uint32_t tag) { return tag_and_type(tag, pbf_wire_type::varint); }
constexpr uint32_t kBytes(uint32_t tag) {
  return tag_and_type(tag, pbf_wire_type::length_delimited);
}
constexpr uint32_t kFixed32(uint32_t tag) { return tag_and_type(tag, pbf_wire_type::fixed32); }

// TensorShapeProto.Dimension: a size or a name. A negative size (written by
// some converters for "unknown") is kept as unknown.
Dim decode_dim(protozero::data_view bytes) {
  Dim dim;
  protozero::pbf_reader message(bytes);
  while (message.next()) {
    switch (message.tag_and_type()) {
      case kVarint(1):
        dim.value = message.get_int64();
        if (dim.value < 0) dim.value = -1;
        break;
      case kBytes(2):
        dim.param = message.get_string();
        break;
      default:
        message.skip();
    }
  }
  return dim;
}

// TypeProto.Tensor: the element type and the shape.
void decode_tensor_type(protozero::data_view bytes, ValueInfo& info) {
  protozero::pbf_reader message(bytes);
  while (message.next()) {
    switch (message.tag_and_type()) {
      case kVarint(1):
        info.elem_type = message.get_int32();
        break;
      case kBytes(2): {
        info.has_shape = true;
        protozero::pbf_reader shape = message.get_message();
        while (shape.next(1, pbf_wire_type::length_delimited)) {
          if (info.dims.size() >= kMaxRank) {
            throw Malformed{"value '" + info.name + "' has more than " + std::to_string(kMaxRank) +
                            " dims"};
          }
          info.dims.push_back(decode_dim(shape.get_view()));
        }
        break;
      }
      default:
        message.skip();
    }
  }
}

Malformed too_many_attributes() {
  return Malformed{"a node with more than " + std::to_string(kMaxAttributes) + " attributes"};
}

float float_bits(uint64_t bits) {
  const auto narrow = static_cast<uint32_t>(bits);
  float value;
  std::memcpy(&value, &narrow, sizeof value);
  return value;
}

// An attribute larger than kMaxNodeBytes: its tensor is walked, the rest read
// from the fields' headers and small payloads.
Attribute read_attribute(Walker& walker) {
  Attribute attribute;
  Field field;
  while (walker.next(field)) {
    switch (field.key()) {
      case kBytes(1):
        attribute.name = walker.read(field, kMaxStringBytes);
        break;
      case kVarint(20):
        attribute.type = static_cast<int32_t>(field.value);
        break;
      case kFixed32(2):
        attribute.f = float_bits(field.value);
        break;
      case kVarint(3):
        attribute.i = static_cast<int64_t>(field.value);
        break;
      case kBytes(4):
        attribute.s = walker.read(field, kMaxStringBytes);
        break;
      case kBytes(5):
        if (field.length <= kMaxTensorBytes) {
          attribute.t = walker.decode(field, decode_tensor);
        } else {
          Walker tensor = walker.nested(field, walker.path(field), tensor_field);
          attribute.t = walker.guard(field, [&] { return read_tensor(tensor); });
        }
        break;
      case kFixed32(7):
        attribute.floats.push_back(float_bits(field.value));
        break;
      case kVarint(8):
        attribute.ints.push_back(static_cast<int64_t>(field.value));
        break;
      case kBytes(7): {
        const std::string bytes = walker.read(field);
        if (bytes.size() % 4 != 0) throw protozero::invalid_length_exception{};
        using Floats = protozero::const_fixed_iterator<float>;
        for (Floats f(bytes.data()), end(bytes.data() + bytes.size()); f != end; ++f) {
          attribute.floats.push_back(*f);
        }
        break;
      }
      case kBytes(8): {
        const std::string bytes = walker.read(field);
        using Ints = protozero::const_varint_iterator<int64_t>;
        const char* const end = bytes.data() + bytes.size();
        for (Ints i(bytes.data(), end), stop(end, end); i != stop; ++i)
          attribute.ints.push_back(*i);
        break;
      }
      default:
        break;  // graphs, sparse tensors, type protos, doc strings: not used
    }
    if (attribute.floats.size() + attribute.ints.size() > kMaxItems) {
      throw Malformed{"attribute '" + attribute.name + "' has more than " +
                      std::to_string(kMaxItems) + " values"};
    }
  }
  return attribute;
}

}  // namespace

OpsetImport decode_opset(protozero::data_view bytes) {
  OpsetImport opset;
  protozero::pbf_reader message(bytes);
  while (message.next()) {
    switch (message.tag_and_type()) {
      case kBytes(1):
        opset.domain = message.get_string();
        break;
      case kVarint(2):
        opset.version = message.get_int64();
        break;
      default:
        message.skip();
    }
  }
  return opset;
}

ValueInfo decode_value_info(protozero::data_view bytes) {
  ValueInfo info;
  protozero::pbf_reader message(bytes);
  while (message.next()) {
    switch (message.tag_and_type()) {
      case kBytes(1):
        info.name = message.get_string();
        break;
      case kBytes(2): {
        // TypeProto: only tensor_type matters (sequences, maps: elem_type 0).
        protozero::pbf_reader type = message.get_message();
        while (type.next(1, pbf_wire_type::length_delimited)) {
          decode_tensor_type(type.get_view(), info);
        }
        break;
      }
      default:
        message.skip();
    }
  }
  return info;
}

Attribute decode_attribute(protozero::data_view bytes) {
  Attribute attribute;
  protozero::pbf_reader message(bytes);
  while (message.next()) {
    switch (message.tag_and_type()) {
      case kBytes(1):
        attribute.name = message.get_string();
        break;
      case kVarint(20):
        attribute.type = message.get_int32();
        break;
      case kFixed32(2):
        attribute.f = message.get_float();
        break;
      case kVarint(3):
        attribute.i = message.get_int64();
        break;
      case kBytes(4):
        attribute.s = message.get_string();
        break;
      case kBytes(5):
        attribute.t = decode_tensor(message.get_view());
        break;
      case kFixed32(7):
        attribute.floats.push_back(message.get_float());
        break;
      case kBytes(7):
        for (const float f : message.get_packed_float()) attribute.floats.push_back(f);
        break;
      case kVarint(8):
        attribute.ints.push_back(message.get_int64());
        break;
      case kBytes(8):
        for (const int64_t i : message.get_packed_int64()) attribute.ints.push_back(i);
        break;
      default:
        message.skip();  // graphs, sparse tensors, type protos, doc strings: not used
    }
  }
  return attribute;
}

Node decode_node(protozero::data_view bytes) {
  Node node;
  protozero::pbf_reader message(bytes);
  while (message.next()) {
    switch (message.tag_and_type()) {
      case kBytes(1):
        node.inputs.push_back(message.get_string());
        break;
      case kBytes(2):
        node.outputs.push_back(message.get_string());
        break;
      case kBytes(3):
        node.name = message.get_string();
        break;
      case kBytes(4):
        node.op_type = message.get_string();
        break;
      case kBytes(5):
        if (node.attributes.size() >= kMaxAttributes) throw too_many_attributes();
        node.attributes.push_back(decode_attribute(message.get_view()));
        break;
      case kBytes(7):
        node.domain = message.get_string();
        break;
      default:
        message.skip();
    }
  }
  return node;
}

Node read_node(Walker& walker) {
  Node node;
  Field field;
  while (walker.next(field)) {
    if (field.type != pbf_wire_type::length_delimited) continue;
    switch (field.tag) {
      case 1:
        node.inputs.push_back(walker.read(field, kMaxStringBytes));
        break;
      case 2:
        node.outputs.push_back(walker.read(field, kMaxStringBytes));
        break;
      case 3:
        node.name = walker.read(field, kMaxStringBytes);
        break;
      case 4:
        node.op_type = walker.read(field, kMaxStringBytes);
        break;
      case 5:
        if (node.attributes.size() >= kMaxAttributes) throw too_many_attributes();
        if (field.length <= kMaxNodeBytes) {
          node.attributes.push_back(walker.decode(field, decode_attribute));
        } else {
          Walker attribute = walker.nested(field, walker.path(field), attribute_field);
          node.attributes.push_back(walker.guard(field, [&] { return read_attribute(attribute); }));
        }
        break;
      case 7:
        node.domain = walker.read(field, kMaxStringBytes);
        break;
      default:
        break;
    }
    if (node.inputs.size() + node.outputs.size() > kMaxItems) {
      throw Malformed{"a node with more than " + std::to_string(kMaxItems) + " inputs and outputs"};
    }
  }
  return node;
}

}  // namespace pase::onnx::wire
