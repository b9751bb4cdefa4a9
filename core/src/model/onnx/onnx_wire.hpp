// The wire-format layer under read_model() (onnx_proto.hpp): a walker that
// visits the fields of a message in a ByteSource by reading only each field's
// header, and the decoders of the messages the reader keeps (nodes, value
// infos, tensors), in memory with protozero or field by field through a walker.
//
// Failures are thrown (Failure, Malformed) and turned into an Error by
// read_model(), which also catches protozero's own exceptions: nothing throws
// out of read_model().
#pragma once

#include <cstdint>
#include <protozero/data_view.hpp>
#include <protozero/exception.hpp>
#include <protozero/types.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "model/onnx/onnx_proto.hpp"
#include "pase/import.hpp"
#include "pase/result.hpp"

namespace pase::onnx::wire {

// Limits that keep a hostile file from exhausting memory: a length prefix or a
// count beyond them is an error, never an allocation.
inline constexpr uint64_t kMaxNodeBytes = uint64_t{1} << 20;      // larger: walked field by field
inline constexpr uint64_t kMaxTensorBytes = uint64_t{64} << 10;   // larger: walked field by field
inline constexpr uint64_t kMaxMessageBytes = uint64_t{16} << 20;  // any message read whole
inline constexpr uint64_t kMaxStringBytes = uint64_t{1} << 20;    // a name, a string attribute
inline constexpr size_t kMaxItems = 1'000'000;    // nodes, initializers, inputs, ...
inline constexpr size_t kMaxAttributes = 10'000;  // of one node
inline constexpr size_t kMaxRank = 64;            // dims of a tensor or a shape
// The decoded structure (Model) at most: a file of tiny fields (an empty
// attribute takes 2 bytes, its struct ~200) cannot make it grow past this.
inline constexpr uint64_t kMaxModelBytes = uint64_t{1} << 30;

// A final error, thrown where the place is known and returned by read_model().
struct Failure {
  Error error;
};

// A message that breaks the ONNX schema (a tensor whose values do not match
// its dims, too many dims); the caller adds which message and where.
struct Malformed {
  std::string detail;
};

// The field names of one message type, for error messages.
using FieldNames = const char* (*)(uint32_t tag);

// One field of a message in the source, from its header.
struct Field {
  uint32_t tag = 0;
  protozero::pbf_wire_type type = protozero::pbf_wire_type::unknown;
  uint64_t start = 0;   // the byte where the field's header starts
  uint64_t offset = 0;  // where the payload starts (length-delimited), else where the field ends
  uint64_t length = 0;  // the payload's length (length-delimited), else 0
  uint64_t value = 0;   // the value (varint, fixed32, fixed64)
  const char* name = "";

  uint32_t key() const { return protozero::tag_and_type(tag, type); }
  uint64_t end() const { return offset + length; }
};

// The fields of a message spanning bytes [begin, end) of a source, one small
// read per field header (a field's payload is read only on request). A field
// that runs past the end of the file is a truncation error; past the end of
// its message, a wire format error.
class Walker {
 public:
  Walker(ByteSource& source, uint64_t begin, uint64_t end, std::string label, FieldNames names)
      : source_(source), pos_(begin), end_(end), label_(std::move(label)), names_(names) {}

  // The next field, false after the last one. Throws Failure.
  bool next(Field& field);

  // The payload of a length-delimited field, read whole; Failure when it is
  // longer than `limit` bytes.
  std::string read(const Field& field, uint64_t limit = kMaxMessageBytes);
  // A walker over the fields of a length-delimited field (a nested message).
  Walker nested(const Field& field, std::string label, FieldNames names) const;

  // "graph.initializer", the name of a field for error messages.
  std::string path(const Field& field) const;
  const std::string& label() const { return label_; }

  // Decodes `field` (read whole, at most `limit` bytes) with `decode`, which
  // takes the bytes as a protozero::data_view; protozero's exceptions and
  // Malformed become a Failure naming the field and its byte.
  template <class Decode>
  auto decode(const Field& field, Decode decode, uint64_t limit = kMaxMessageBytes) {
    const std::string bytes = read(field, limit);
    try {
      return decode(protozero::data_view(bytes.data(), bytes.size()));
    } catch (const protozero::exception& e) {
      throw Failure{malformed(field, describe(e))};
    } catch (const Malformed& m) {
      throw Failure{malformed(field, m.detail)};
    }
  }
  // Runs `read` (which walks `field` with a nested walker), turning
  // protozero's exceptions and Malformed into a Failure naming the field.
  template <class Read>
  auto guard(const Field& field, Read read) {
    try {
      return read();
    } catch (const protozero::exception& e) {
      throw Failure{malformed(field, describe(e))};
    } catch (const Malformed& m) {
      throw Failure{malformed(field, m.detail)};
    }
  }

  // "not an ONNX model: <path> at byte N: <detail>".
  Error malformed(const Field& field, const std::string& detail) const;
  // protozero's exception as words.
  static std::string describe(const protozero::exception& e);

 private:
  ByteSource& source_;
  uint64_t pos_;
  uint64_t end_;
  std::string label_;
  FieldNames names_;
};

// Field names of the messages walked field by field.
const char* model_field(uint32_t tag);
const char* graph_field(uint32_t tag);
const char* node_field(uint32_t tag);
const char* attribute_field(uint32_t tag);
const char* tensor_field(uint32_t tag);

// In-memory decoders (protozero); they throw protozero::exception and
// Malformed, which Walker::decode() turns into a Failure.
OpsetImport decode_opset(protozero::data_view bytes);
ValueInfo decode_value_info(protozero::data_view bytes);
Node decode_node(protozero::data_view bytes);
Attribute decode_attribute(protozero::data_view bytes);
Tensor decode_tensor(protozero::data_view bytes);

// Field-by-field decoders for the large messages: the payloads they skip are
// never read. They throw Failure and Malformed.
Node read_node(Walker& walker);
Tensor read_tensor(Walker& walker);

}  // namespace pase::onnx::wire
