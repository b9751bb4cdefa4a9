// The field walker of onnx_wire.hpp and the field names of the messages it
// walks (onnx.proto).
#include "model/onnx/onnx_wire.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <protozero/varint.hpp>
#include <string>
#include <typeinfo>

namespace pase::onnx::wire {
namespace {

// A field header is a tag and, for length-delimited fields, a length: two
// varints of at most 10 bytes each. Reading this much at a field's start is
// all the walker reads of a field it skips.
constexpr uint64_t kHeaderWindow = 20;

// Field numbers are 29 bits; 19000 to 19999 are reserved by protobuf.
constexpr uint64_t kMaxTag = (uint64_t{1} << 29) - 1;

Error read_error(uint64_t offset, uint64_t length) {
  return Error{"cannot read bytes " + std::to_string(offset) + " to " +
                   std::to_string(offset + length) + " of the file",
               ""};
}

struct FieldName {
  uint32_t tag;
  const char* name;
};

template <size_t N>
const char* find_name(const FieldName (&names)[N], uint32_t tag) {
  for (const FieldName& n : names) {
    if (n.tag == tag) return n.name;
  }
  return nullptr;
}

uint64_t little_endian(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(p[i]);
  return value;
}

}  // namespace

bool Walker::next(Field& field) {
  if (pos_ >= end_) return false;
  const uint64_t window = std::min(kHeaderWindow, end_ - pos_);
  std::string header;
  if (!source_.read(pos_, static_cast<size_t>(window), header) || header.size() != window) {
    throw Failure{read_error(pos_, window)};
  }
  field = Field{};
  field.start = pos_;
  const char* const begin = header.data();
  const char* p = begin;
  const char* const stop = begin + header.size();
  try {
    const uint64_t key = protozero::decode_varint(&p, stop);
    const uint64_t tag = key >> 3U;
    if (tag == 0 || tag > kMaxTag || (tag >= 19000 && tag <= 19999)) {
      throw Failure{Error{"not an ONNX model: " + label_ + " at byte " + std::to_string(pos_) +
                              ": an invalid field number (" + std::to_string(tag) + ")",
                          ""}};
    }
    field.tag = static_cast<uint32_t>(tag);
    field.name = names_ ? names_(field.tag) : nullptr;
    field.type = static_cast<protozero::pbf_wire_type>(key & 7U);
    switch (field.type) {
      case protozero::pbf_wire_type::varint:
        field.value = protozero::decode_varint(&p, stop);
        break;
      case protozero::pbf_wire_type::fixed64:
      case protozero::pbf_wire_type::fixed32: {
        const int bytes = field.type == protozero::pbf_wire_type::fixed64 ? 8 : 4;
        if (stop - p < bytes) throw protozero::end_of_buffer_exception{};
        field.value = little_endian(p, bytes);
        p += bytes;
        break;
      }
      case protozero::pbf_wire_type::length_delimited:
        field.length = protozero::decode_varint(&p, stop);
        break;
      default:
        throw protozero::unknown_pbf_wire_type_exception{};
    }
  } catch (const protozero::end_of_buffer_exception&) {
    // The header itself is cut short by the end of the message.
    if (end_ == source_.size()) {
      throw Failure{Error{"the file is truncated: it ends at byte " + std::to_string(end_) +
                              " inside the header of a field of " + label_ +
                              " that starts at byte " + std::to_string(pos_),
                          ""}};
    }
    throw Failure{Error{"not an ONNX model: " + label_ + " at byte " + std::to_string(pos_) +
                            ": a field header runs past the end of the message",
                        ""}};
  } catch (const protozero::exception& e) {
    throw Failure{Error{
        "not an ONNX model: " + label_ + " at byte " + std::to_string(pos_) + ": " + describe(e),
        ""}};
  }
  field.offset = pos_ + static_cast<uint64_t>(p - begin);
  if (field.length > end_ - field.offset) {
    const std::string needs = path(field) + " at byte " + std::to_string(field.start) + " needs " +
                              std::to_string(field.length) + " bytes";
    if (end_ == source_.size()) {
      throw Failure{Error{
          "the file is truncated: " + needs + " but the file ends at byte " + std::to_string(end_),
          ""}};
    }
    throw Failure{Error{"not an ONNX model: " + needs + " but its message " + label_ +
                            " ends at byte " + std::to_string(end_),
                        ""}};
  }
  pos_ = field.end();
  return true;
}

std::string Walker::read(const Field& field, uint64_t limit) {
  if (field.length > limit || field.length > std::numeric_limits<size_t>::max()) {
    throw Failure{Error{path(field) + " at byte " + std::to_string(field.start) + " is " +
                            std::to_string(field.length) + " bytes long, more than the limit of " +
                            std::to_string(limit) + " bytes",
                        ""}};
  }
  std::string bytes;
  if (!source_.read(field.offset, static_cast<size_t>(field.length), bytes) ||
      bytes.size() != field.length) {
    throw Failure{read_error(field.offset, field.length)};
  }
  return bytes;
}

Walker Walker::nested(const Field& field, std::string label, FieldNames names) const {
  return Walker(source_, field.offset, field.end(), std::move(label), names);
}

std::string Walker::path(const Field& field) const {
  if (field.name && *field.name) return label_ + "." + field.name;
  return label_ + ".field " + std::to_string(field.tag);
}

Error Walker::malformed(const Field& field, const std::string& detail) const {
  return Error{"not an ONNX model: " + path(field) + " at byte " + std::to_string(field.start) +
                   ": " + detail,
               ""};
}

std::string Walker::describe(const protozero::exception& e) {
  if (typeid(e) == typeid(protozero::end_of_buffer_exception)) {
    return "a value runs past the end of its message";
  }
  if (typeid(e) == typeid(protozero::varint_too_long_exception)) {
    return "a varint longer than 10 bytes";
  }
  if (typeid(e) == typeid(protozero::unknown_pbf_wire_type_exception)) {
    return "a field of an unknown wire type";
  }
  if (typeid(e) == typeid(protozero::invalid_tag_exception)) return "an invalid field number";
  if (typeid(e) == typeid(protozero::invalid_length_exception)) {
    return "a packed field of an invalid length";
  }
  return e.what();
}

const char* model_field(uint32_t tag) {
  static constexpr FieldName kNames[] = {
      {1, "ir_version"},     {2, "producer_name"}, {3, "producer_version"},
      {4, "domain"},         {5, "model_version"}, {6, "doc_string"},
      {7, "graph"},          {8, "opset_import"},  {14, "metadata_props"},
      {20, "training_info"}, {25, "functions"}};
  return find_name(kNames, tag);
}

const char* graph_field(uint32_t tag) {
  static constexpr FieldName kNames[] = {{1, "node"},
                                         {2, "name"},
                                         {5, "initializer"},
                                         {10, "doc_string"},
                                         {11, "input"},
                                         {12, "output"},
                                         {13, "value_info"},
                                         {14, "quantization_annotation"},
                                         {15, "sparse_initializer"}};
  return find_name(kNames, tag);
}

const char* node_field(uint32_t tag) {
  static constexpr FieldName kNames[] = {{1, "input"},   {2, "output"},    {3, "name"},
                                         {4, "op_type"}, {5, "attribute"}, {6, "doc_string"},
                                         {7, "domain"}};
  return find_name(kNames, tag);
}

const char* attribute_field(uint32_t tag) {
  static constexpr FieldName kNames[] = {{1, "name"},   {2, "f"},    {3, "i"},
                                         {4, "s"},      {5, "t"},    {6, "g"},
                                         {7, "floats"}, {8, "ints"}, {20, "type"}};
  return find_name(kNames, tag);
}

const char* tensor_field(uint32_t tag) {
  static constexpr FieldName kNames[] = {
      {1, "dims"},          {2, "data_type"},    {4, "float_data"},  {5, "int32_data"},
      {6, "string_data"},   {7, "int64_data"},   {8, "name"},        {9, "raw_data"},
      {10, "double_data"},  {11, "uint64_data"}, {12, "doc_string"}, {13, "external_data"},
      {14, "data_location"}};
  return find_name(kNames, tag);
}

}  // namespace pase::onnx::wire
