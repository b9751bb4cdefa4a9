// TensorProto: name, type and dims always; the values only when the tensor
// has at most kMaxConstantElements elements (onnx_proto.hpp). Two ways in:
// decode_tensor() for a tensor in memory (an attribute of a node, a small
// initializer), read_tensor() for one in the file, whose value fields are
// located but read only when the tensor turns out to be small.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <protozero/pbf_reader.hpp>
#include <protozero/varint.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "model/onnx/onnx_wire.hpp"

namespace pase::onnx::wire {
namespace {

using protozero::pbf_wire_type;

// A varint takes at most 10 bytes: the most bytes `count` values can take in
// any value field.
constexpr uint64_t kMaxValueBytes = 10;

// One value field of a TensorProto: packed data (length-delimited) or a single
// value of an unpacked repeated field.
struct ValuePart {
  uint32_t tag = 0;
  bool packed = false;
  std::string_view bytes;
  uint64_t bits = 0;
};

// The value fields of a tensor, kept until its dims and type are known: the
// fields may come in any order.
struct ValueParts {
  std::vector<ValuePart> parts;
  bool too_many = false;  // more fields than a small tensor has values

  void add(const ValuePart& part) {
    if (parts.size() > static_cast<size_t>(kMaxConstantElements)) {
      too_many = true;
    } else {
      parts.push_back(part);
    }
  }
};

bool is_value_field(uint32_t tag) {
  return tag == 4 || tag == 5 || tag == 7 || tag == 9 || tag == 10 || tag == 11;
}

// Whether a value field may have this wire type: packed data, or one value of
// the field's type (float_data fixed32, double_data fixed64, the others varint).
bool fits(uint32_t tag, pbf_wire_type type) {
  if (type == pbf_wire_type::length_delimited) return true;
  if (tag == 4) return type == pbf_wire_type::fixed32;
  if (tag == 10) return type == pbf_wire_type::fixed64;
  return tag != 9 && type == pbf_wire_type::varint;
}

Malformed too_many_dims() {
  return Malformed{"a tensor with more than " + std::to_string(kMaxRank) + " dims"};
}

void add_dim(Tensor& tensor, uint64_t dim) {
  if (tensor.dims.size() >= kMaxRank) throw too_many_dims();
  tensor.dims.push_back(static_cast<int64_t>(dim));
}

void add_packed_dims(Tensor& tensor, std::string_view bytes) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  while (p != end) add_dim(tensor, protozero::decode_varint(&p, end));
}

// prod(dims), or kMaxConstantElements + 1 for any larger count.
int64_t element_count(const Tensor& tensor) {
  int64_t count = 1;
  for (const int64_t dim : tensor.dims) {
    if (dim < 0) {
      throw Malformed{"tensor '" + tensor.name + "' has a negative dimension " +
                      std::to_string(dim)};
    }
  }
  for (const int64_t dim : tensor.dims) {
    if (dim == 0) return 0;
    // count <= kMaxConstantElements here, so the product cannot overflow.
    count = dim > kMaxConstantElements ? kMaxConstantElements + 1
                                       : std::min(count * dim, kMaxConstantElements + 1);
  }
  return count;
}

bool wants_values(const Tensor& tensor, int64_t count) {
  return !tensor.external && count <= kMaxConstantElements &&
         (is_floating(tensor.data_type) || is_integral(tensor.data_type));
}

// The bytes of one element in raw_data.
size_t element_size(int32_t data_type) {
  switch (data_type) {
    case kUint8:
    case kInt8:
    case kBool:
      return 1;
    case kUint16:
    case kInt16:
    case kFloat16:
    case kBfloat16:
      return 2;
    case kInt32:
    case kUint32:
    case kFloat:
      return 4;
    default:
      return 8;  // int64, uint64, double
  }
}

// The typed field that holds values of `data_type` besides raw_data.
uint32_t typed_field(int32_t data_type) {
  switch (data_type) {
    case kFloat:
      return 4;
    case kDouble:
      return 10;
    case kInt64:
      return 7;
    case kUint32:
    case kUint64:
      return 11;
    default:
      return 5;  // int32_data: the narrower integers, bool, float16 and bfloat16 bits
  }
}

double from_float16(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);  // subnormal
  } else if (exponent == 31) {
    value = mantissa ? std::numeric_limits<double>::quiet_NaN()
                     : std::numeric_limits<double>::infinity();
  } else {
    value = std::ldexp(mantissa | 0x400, exponent - 25);
  }
  return (h & 0x8000) ? -value : value;
}

template <class To, class From>
To bit_cast_to(From bits) {
  To value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Appends one element given by its bits (raw_data little endian, or the value
// of a typed field) to the tensor's values.
void add_value(Tensor& tensor, uint64_t bits) {
  switch (tensor.data_type) {
    case kFloat:
      tensor.floats.push_back(bit_cast_to<float>(static_cast<uint32_t>(bits)));
      break;
    case kDouble:
      tensor.floats.push_back(bit_cast_to<double>(bits));
      break;
    case kFloat16:
      tensor.floats.push_back(from_float16(static_cast<uint16_t>(bits)));
      break;
    case kBfloat16:
      tensor.floats.push_back(bit_cast_to<float>(static_cast<uint32_t>(bits & 0xffff) << 16));
      break;
    case kBool:
      tensor.ints.push_back((bits & 0xff) != 0 ? 1 : 0);
      break;
    case kUint8:
      tensor.ints.push_back(static_cast<uint8_t>(bits));
      break;
    case kInt8:
      tensor.ints.push_back(static_cast<int8_t>(bits));
      break;
    case kUint16:
      tensor.ints.push_back(static_cast<uint16_t>(bits));
      break;
    case kInt16:
      tensor.ints.push_back(static_cast<int16_t>(bits));
      break;
    case kInt32:
      tensor.ints.push_back(static_cast<int32_t>(bits));
      break;
    case kUint32:
      tensor.ints.push_back(static_cast<uint32_t>(bits));
      break;
    default:  // int64, uint64 (wrapping above 2^63 - 1)
      tensor.ints.push_back(static_cast<int64_t>(bits));
      break;
  }
}

std::string mismatch(const Tensor& tensor, int64_t count) {
  return "the values of tensor '" + tensor.name + "' do not match its " + std::to_string(count) +
         " elements";
}

// Decodes the values of a small tensor from its value fields.
void decode_values(Tensor& tensor, const ValueParts& values) {
  const int64_t count = element_count(tensor);
  if (!wants_values(tensor, count)) return;
  if (values.too_many) throw Malformed{mismatch(tensor, count)};
  const uint32_t typed = typed_field(tensor.data_type);
  const size_t limit = static_cast<size_t>(count);
  auto add = [&](uint64_t bits) {
    if (tensor.ints.size() + tensor.floats.size() >= limit) {
      throw Malformed{mismatch(tensor, count)};
    }
    add_value(tensor, bits);
  };
  for (const ValuePart& part : values.parts) {
    if (part.tag != 9 && part.tag != typed) {
      throw Malformed{"tensor '" + tensor.name + "' of data_type " +
                      std::to_string(tensor.data_type) + " has its values in " +
                      tensor_field(part.tag)};
    }
    if (!part.packed) {
      add(part.bits);
      continue;
    }
    const char* p = part.bytes.data();
    const char* const end = p + part.bytes.size();
    // raw_data: little-endian elements; float_data, double_data: fixed32 and
    // fixed64; the integer fields: varints.
    const size_t width = part.tag == 9    ? element_size(tensor.data_type)
                         : part.tag == 4  ? 4
                         : part.tag == 10 ? 8
                                          : 0;
    if (width == 0) {
      while (p != end) add(protozero::decode_varint(&p, end));
      continue;
    }
    if (part.bytes.size() % width != 0) throw Malformed{mismatch(tensor, count)};
    for (; p != end; p += width) {
      uint64_t bits = 0;
      for (size_t i = width; i-- > 0;) bits = (bits << 8) | static_cast<unsigned char>(p[i]);
      add(bits);
    }
  }
  if (tensor.ints.size() + tensor.floats.size() != limit) {
    // No value field at all: the data is missing (has_values stays false)
    // unless there is nothing to hold.
    if (values.parts.empty() && count > 0) return;
    throw Malformed{mismatch(tensor, count)};
  }
  tensor.has_values = true;
}

}  // namespace

Tensor decode_tensor(protozero::data_view bytes) {
  Tensor tensor;
  ValueParts values;
  protozero::pbf_reader message(bytes);
  while (message.next()) {
    const uint32_t tag = message.tag();
    const pbf_wire_type type = message.wire_type();
    const bool varint = type == pbf_wire_type::varint;
    const bool delimited = type == pbf_wire_type::length_delimited;
    if (tag == 1 && varint) {
      add_dim(tensor, message.get_uint64());
    } else if (tag == 1 && delimited) {
      const protozero::data_view view = message.get_view();
      add_packed_dims(tensor, std::string_view(view.data(), view.size()));
    } else if (tag == 2 && varint) {
      tensor.data_type = message.get_int32();
    } else if (tag == 8 && delimited) {
      tensor.name = std::string(message.get_view());
    } else if (tag == 14 && varint) {
      tensor.external = message.get_int32() == 1;
    } else if (is_value_field(tag) && fits(tag, type)) {
      ValuePart part{tag, delimited, {}, 0};
      if (delimited) {
        const protozero::data_view view = message.get_view();
        part.bytes = std::string_view(view.data(), view.size());
      } else if (varint) {
        part.bits = message.get_uint64();
      } else if (type == pbf_wire_type::fixed32) {
        part.bits = message.get_fixed32();
      } else {
        part.bits = message.get_fixed64();
      }
      values.add(part);
    } else {
      message.skip();
    }
  }
  decode_values(tensor, values);
  return tensor;
}

Tensor read_tensor(Walker& walker) {
  Tensor tensor;
  std::vector<Field> value_fields;
  bool too_many = false;
  Field field;
  while (walker.next(field)) {
    const bool varint = field.type == pbf_wire_type::varint;
    const bool delimited = field.type == pbf_wire_type::length_delimited;
    if (field.tag == 1 && varint) {
      add_dim(tensor, field.value);
    } else if (field.tag == 1 && delimited) {
      if (field.length > kMaxRank * kMaxValueBytes) throw too_many_dims();
      add_packed_dims(tensor, walker.read(field));
    } else if (field.tag == 2 && varint) {
      tensor.data_type = static_cast<int32_t>(field.value);
    } else if (field.tag == 8 && delimited) {
      tensor.name = walker.read(field, kMaxStringBytes);
    } else if (field.tag == 14 && varint) {
      tensor.external = field.value == 1;
    } else if (is_value_field(field.tag) && fits(field.tag, field.type)) {
      // Only located: most of these are the weights.
      if (value_fields.size() > static_cast<size_t>(kMaxConstantElements)) {
        too_many = true;
      } else {
        value_fields.push_back(field);
      }
    }
  }
  ValueParts values;
  values.too_many = too_many;
  const int64_t count = element_count(tensor);
  std::vector<std::string> storage;  // the bytes `values` points into
  if (wants_values(tensor, count) && !too_many) {
    storage.reserve(value_fields.size());  // no reallocation: the views stay valid
    for (const Field& f : value_fields) {
      if (f.type != pbf_wire_type::length_delimited) {
        values.add(ValuePart{f.tag, false, {}, f.value});
        continue;
      }
      if (f.length > static_cast<uint64_t>(count) * kMaxValueBytes) {
        throw Malformed{mismatch(tensor, count)};
      }
      storage.push_back(walker.read(f));
      values.add(ValuePart{f.tag, true, storage.back(), 0});
    }
  }
  decode_values(tensor, values);
  return tensor;
}

}  // namespace pase::onnx::wire
