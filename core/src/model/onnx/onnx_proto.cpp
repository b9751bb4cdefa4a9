// The byte sources of import.hpp and read_model(): the walk
// of ModelProto and GraphProto (onnx_proto.hpp, core/docs/import.md "Reading
// the file"). The walk reads each field's header and then either the field
// whole (nodes, inputs, outputs, opsets, names) or nothing more (weights,
// doc strings, functions, metadata), so the bytes read depend on the graph's
// structure, not on the file's size.
#include "model/onnx/onnx_proto.hpp"

#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <protozero/exception.hpp>
#include <protozero/varint.hpp>
#include <string>
#include <utility>
#include <vector>

#include "model/onnx/onnx_wire.hpp"

namespace pase {

// ---- Byte sources ------------------------------------------------------------------------

bool MemorySource::read(uint64_t offset, size_t length, std::string& out) {
  if (offset > bytes_.size() || length > bytes_.size() - offset) return false;
  out.append(bytes_.data() + offset, length);
  return true;
}

FileSource::~FileSource() {
  if (file_) std::fclose(file_);
}

std::optional<Error> FileSource::open(const std::string& path) {
  if (file_) std::fclose(file_);
  file_ = nullptr;
  size_ = 0;
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return Error{"cannot open '" + path + "': " + std::strerror(errno), ""};
  // The size, then one byte: a directory opens on some systems but cannot be read.
  off_t end = -1;
  char first = 0;
  if (fseeko(file, 0, SEEK_END) == 0) end = ftello(file);
  if (end < 0 ||
      (end > 0 && (fseeko(file, 0, SEEK_SET) != 0 || std::fread(&first, 1, 1, file) != 1))) {
    const int error = errno;
    std::fclose(file);
    return Error{"cannot read '" + path + "': " + std::strerror(error), ""};
  }
  file_ = file;
  size_ = static_cast<uint64_t>(end);
  return std::nullopt;
}

bool FileSource::read(uint64_t offset, size_t length, std::string& out) {
  if (!file_ || offset > size_ || length > size_ - offset) return false;
  if (length == 0) return true;
  if (offset > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) return false;
  if (fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0) return false;
  const size_t old_size = out.size();
  out.resize(old_size + length);
  if (std::fread(out.data() + old_size, 1, length, file_) != length) {
    out.resize(old_size);
    return false;
  }
  return true;
}

namespace onnx {

bool is_floating(int32_t data_type) {
  return data_type == kFloat16 || data_type == kBfloat16 || data_type == kFloat ||
         data_type == kDouble;
}

bool is_integral(int32_t data_type) {
  switch (data_type) {
    case kUint8:
    case kInt8:
    case kUint16:
    case kInt16:
    case kInt32:
    case kInt64:
    case kBool:
    case kUint32:
    case kUint64:
      return true;
    default:
      return false;
  }
}

const Attribute* Node::attribute(std::string_view attr_name) const {
  for (const Attribute& a : attributes) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

// ---- read_model ------------------------------------------------------------------------------

namespace {

using protozero::pbf_wire_type;
using wire::Failure;
using wire::Field;
using wire::Walker;

// What the decoded structure takes in memory, roughly, so that a file of
// tiny fields cannot make it grow without bound (kMaxModelBytes).
class Budget {
 public:
  template <class T>
  void charge(const T& item) {
    used_ += footprint(item);
    if (used_ > wire::kMaxModelBytes) {
      throw Failure{Error{"the model's structure takes more than " +
                              std::to_string(wire::kMaxModelBytes >> 20) +
                              " MiB of memory, more than the reader takes",
                          ""}};
    }
  }

 private:
  static uint64_t footprint(const std::string& s) { return sizeof(std::string) + s.size(); }
  static uint64_t footprint(const Tensor& t) {
    return sizeof(Tensor) + t.name.size() + 8 * (t.dims.size() + t.ints.size() + t.floats.size());
  }
  static uint64_t footprint(const ValueInfo& info) {
    uint64_t bytes = sizeof(ValueInfo) + info.name.size();
    for (const Dim& d : info.dims) bytes += sizeof(Dim) + d.param.size();
    return bytes;
  }
  static uint64_t footprint(const OpsetImport& opset) {
    return sizeof(OpsetImport) + opset.domain.size();
  }
  static uint64_t footprint(const Node& node) {
    uint64_t bytes = sizeof(Node) + node.name.size() + node.op_type.size() + node.domain.size();
    for (const std::string& s : node.inputs) bytes += footprint(s);
    for (const std::string& s : node.outputs) bytes += footprint(s);
    for (const Attribute& a : node.attributes) {
      bytes +=
          sizeof(Attribute) + a.name.size() + a.s.size() + 8 * (a.ints.size() + a.floats.size());
      if (a.t) bytes += footprint(*a.t);
    }
    return bytes;
  }

  uint64_t used_ = 0;
};

// Appends `item` to `items` (a list of the model named `what`) within the
// count and memory limits.
template <class T>
void add(std::vector<T>& items, T item, const char* what, Budget& budget) {
  if (items.size() >= wire::kMaxItems) {
    throw Failure{Error{"the model has more than " + std::to_string(wire::kMaxItems) + " " + what +
                            ", more than the reader takes",
                        ""}};
  }
  budget.charge(item);
  items.push_back(std::move(item));
}

void read_graph(Walker& graph, Model& model, Budget& budget) {
  Field field;
  while (graph.next(field)) {
    if (field.type != pbf_wire_type::length_delimited) continue;
    switch (field.tag) {
      case 1:
        if (field.length <= wire::kMaxNodeBytes) {
          add(model.nodes, graph.decode(field, wire::decode_node), "nodes", budget);
        } else {
          // A node holding a large tensor (a Constant): walked like an initializer.
          Walker node = graph.nested(field, graph.path(field), wire::node_field);
          add(model.nodes, graph.guard(field, [&] { return wire::read_node(node); }), "nodes",
              budget);
        }
        break;
      case 2:
        model.graph_name = graph.read(field, wire::kMaxStringBytes);
        break;
      case 5:
        if (field.length <= wire::kMaxTensorBytes) {
          add(model.initializers, graph.decode(field, wire::decode_tensor), "initializers", budget);
        } else {
          Walker tensor = graph.nested(field, graph.path(field), wire::tensor_field);
          add(model.initializers, graph.guard(field, [&] { return wire::read_tensor(tensor); }),
              "initializers", budget);
        }
        break;
      case 11:
        add(model.inputs, graph.decode(field, wire::decode_value_info), "graph inputs", budget);
        break;
      case 12:
        add(model.outputs, graph.decode(field, wire::decode_value_info), "graph outputs", budget);
        break;
      case 13:
        add(model.value_info, graph.decode(field, wire::decode_value_info), "value_info entries",
            budget);
        break;
      default:
        break;  // doc_string, sparse_initializer, quantization_annotation: skipped
    }
  }
}

Model read(ByteSource& source) {
  const uint64_t size = source.size();
  Model model;
  Budget budget;
  bool has_graph = false;
  Walker walker(source, 0, size, "model", wire::model_field);
  Field field;
  while (walker.next(field)) {
    switch (field.key()) {
      case protozero::tag_and_type(1, pbf_wire_type::varint):
        model.ir_version = static_cast<int64_t>(field.value);
        break;
      case protozero::tag_and_type(2, pbf_wire_type::length_delimited):
        model.producer_name = walker.read(field, wire::kMaxStringBytes);
        break;
      case protozero::tag_and_type(3, pbf_wire_type::length_delimited):
        model.producer_version = walker.read(field, wire::kMaxStringBytes);
        break;
      case protozero::tag_and_type(7, pbf_wire_type::length_delimited): {
        // A repeated graph field merges into one, as protobuf would.
        has_graph = true;
        Walker graph = walker.nested(field, "graph", wire::graph_field);
        read_graph(graph, model, budget);
        break;
      }
      case protozero::tag_and_type(8, pbf_wire_type::length_delimited):
        add(model.opsets, walker.decode(field, wire::decode_opset), "opset imports", budget);
        break;
      default:
        break;  // domain, doc_string, metadata, training_info, functions: skipped
    }
  }
  if (!has_graph) throw Failure{Error{"not an ONNX model: the file has no graph", ""}};
  for (const OpsetImport& opset : model.opsets) {
    if (opset.domain.empty() || opset.domain == "ai.onnx") {
      model.opset = opset.version;
      break;
    }
  }
  return model;
}

}  // namespace

Result<Model> read_model(ByteSource& source) {
  // What the file is, before the walk: a file that is no model is refused
  // as a value, never through an exception (onnx_sniff.cpp says why).
  std::string prefix;
  const uint64_t prefix_size = std::min<uint64_t>(kSniffBytes, source.size());
  if (!source.read(0, static_cast<size_t>(prefix_size), prefix) || prefix.size() != prefix_size) {
    return Error{"cannot read the first bytes of the file", ""};
  }
  if (sniff_file(prefix) != FileContent::kOnnx) return not_a_model_error(prefix);
  // The walkers turn protozero's exceptions into a Failure that names the
  // place; the other handlers are the last resort.
  try {
    return read(source);
  } catch (const Failure& failure) {
    return failure.error;
  } catch (const wire::Malformed& malformed) {
    return Error{"not an ONNX model: " + malformed.detail, ""};
  } catch (const protozero::exception& e) {
    return Error{"not an ONNX model: " + Walker::describe(e), ""};
  } catch (const std::bad_alloc&) {
    return Error{"out of memory while reading the model", ""};
  } catch (...) {
    // The threaded WebAssembly module matches no typed handler above
    // (onnx_sniff.cpp says why): its page still says what is wrong, if not
    // where.
    return Error{"not an ONNX model: its protobuf is truncated or malformed", ""};
  }
}

}  // namespace onnx
}  // namespace pase
