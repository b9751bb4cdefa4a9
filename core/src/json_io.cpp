// pase-graph/1 documents: parse_graph_spec(), load_graph() and write_graph() of graph.hpp,
// plus the exception-free JSON parser and the pretty printer shared with
// json_api.cpp (declared in json_util.hpp).
//
// Only syntax, field names and types are checked here; names, shapes and
// cycles are build_graph()'s business.

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "json_util.hpp"
#include "pase/graph.hpp"

namespace pase {
namespace json_detail {
namespace {

constexpr std::string_view kFormat = "pase-graph/1";
constexpr size_t kLineWidth = 100;

// ---- Parsing without exceptions -------------------------------------------------

// nlohmann's parser keeps its own stack, but destroying and printing a value
// recurse, so the depth is bounded before anything is parsed. Brackets inside
// strings do not count.
std::optional<Error> check_depth(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return Error{
            "the document is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels", ""};
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;  // an unbalanced bracket is left to the parser to report
    }
  }
  return std::nullopt;
}

// nlohmann quotes the token it stopped in ("last read: '...'", "number
// overflow parsing '...'"); an unterminated string or a huge number would put
// megabytes of the document into the message. Each quoted part longer than
// kMaxToken characters keeps only its end, where the parser stopped.
std::string shorten_tokens(const std::string& message) {
  constexpr size_t kMaxToken = 40;
  std::string out;
  size_t pos = 0;
  while (pos < message.size()) {
    const size_t open = message.find('\'', pos);
    const size_t close = open == std::string::npos ? open : message.find('\'', open + 1);
    if (close == std::string::npos) break;
    out.append(message, pos, open + 1 - pos);
    const size_t length = close - open - 1;
    if (length > kMaxToken) {
      out += "...";
      out.append(message, close - (kMaxToken - 3), kMaxToken - 3);
    } else {
      out.append(message, open + 1, length);
    }
    out += '\'';
    pos = close + 1;
  }
  if (pos < message.size()) out.append(message, pos, std::string::npos);
  return out;
}

// The DOM builder of nlohmann with three additions: it never throws, it keeps
// the parse error (the plain non-throwing parse() only says "discarded"), and
// it rejects duplicate keys, which nlohmann would silently merge (a repeated
// "units" must not be ignored any more than a misspelt one).
//
// sax_parse() dispatches on the static type, so hiding the base members is
// enough; they are not virtual.
class DomParser : public nlohmann::detail::json_sax_dom_parser<Json> {
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;

 public:
  DomParser(Json& root, std::string_view text)
      : Base(root, /*allow_exceptions=*/false), text_(text) {}

  const std::optional<Error>& error() const { return error_; }

  bool null() {
    note_value();
    return Base::null();
  }
  bool boolean(bool value) {
    note_value();
    return Base::boolean(value);
  }
  bool number_integer(number_integer_t value) {
    note_value();
    return Base::number_integer(value);
  }
  bool number_unsigned(number_unsigned_t value) {
    note_value();
    return Base::number_unsigned(value);
  }
  bool number_float(number_float_t value, const string_t& text) {
    note_value();
    return Base::number_float(value, text);
  }
  bool string(string_t& value) {
    note_value();
    return Base::string(value);
  }
  bool binary(binary_t& value) {
    note_value();
    return Base::binary(value);
  }
  bool start_object(std::size_t size) {
    frames_.push_back(Frame{false, 0, child_path(), {}, {}});
    return Base::start_object(size);
  }
  bool key(string_t& name) {
    Frame& frame = frames_.back();
    if (!frame.keys.insert(name).second) {
      error_ = Error{"duplicate field '" + name + "'", field_path(frame.path, name)};
      return false;
    }
    frame.key = name;
    return Base::key(name);
  }
  bool end_object() {
    frames_.pop_back();
    return Base::end_object();
  }
  bool start_array(std::size_t size) {
    frames_.push_back(Frame{true, 0, child_path(), {}, {}});
    return Base::start_array(size);
  }
  bool end_array() {
    frames_.pop_back();
    return Base::end_array();
  }

  template <class Exception>
  bool parse_error(std::size_t position, const std::string& last_token, const Exception& ex) {
    // what() is "[json.exception.parse_error.101] parse error at line 3, column
    // 5: ..."; the bracketed id means nothing to a user.
    std::string message = ex.what();
    if (!message.empty() && message.front() == '[') {
      const size_t end = message.find("] ");
      if (end != std::string::npos) message.erase(0, end + 2);
    }
    // Syntax errors carry "parse error at line L, column C"; others (a number
    // overflowing a double) only a byte offset, turned into the same form.
    if (message.rfind("parse error", 0) != 0) message = position_text(position) + ": " + message;
    error_ = Error{shorten_tokens(message), ""};
    return Base::parse_error(position, last_token, ex);
  }

 private:
  // One open container, to name the place of a duplicate key.
  struct Frame {
    bool is_array = false;
    size_t count = 0;  // arrays: entries so far
    std::string path;
    std::string key;  // objects: the current key
    std::unordered_set<std::string> keys;
  };

  std::string position_text(std::size_t position) const {
    const std::string_view before = text_.substr(0, std::min(position, text_.size()));
    const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
    const size_t line_start = before.rfind('\n');
    const size_t column =
        line_start == std::string_view::npos ? before.size() : before.size() - line_start - 1;
    return "parse error at line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  void note_value() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().count;
  }
  // The path of the value that starts now (and counts it in its array).
  std::string child_path() {
    if (frames_.empty()) return "";
    Frame& frame = frames_.back();
    if (frame.is_array) return index_path(frame.path, frame.count++);
    return field_path(frame.path, frame.key);
  }

  std::string_view text_;
  std::vector<Frame> frames_;
  std::optional<Error> error_;
};

// ---- Pretty printing --------------------------------------------------------------

// Appends the one-line form of `value` ({"a": 1, "b": [2, 3]}); stops early and
// returns false once `out` grows past `limit`, so trying a huge subtree is cheap.
bool append_inline(const Json& value, std::string& out, size_t limit) {
  if (value.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += dump_compact(Json(it.key()));
      out += ": ";
      if (out.size() > limit || !append_inline(it.value(), out, limit)) return false;
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    bool first = true;
    for (const Json& item : value) {
      if (!first) out += ", ";
      first = false;
      if (out.size() > limit || !append_inline(item, out, limit)) return false;
    }
    out += ']';
  } else {
    out += dump_compact(value);
  }
  return out.size() <= limit;
}

void append_pretty(const Json& value, std::string& out, size_t indent, bool expand) {
  if (!value.is_structured() || value.empty()) {
    out += dump_compact(value);
    return;
  }
  if (!expand) {
    const size_t line_start = out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1;
    const size_t column = out.size() - line_start;
    // One column is kept for the comma that may follow.
    if (column + 1 < kLineWidth) {
      std::string line;
      if (append_inline(value, line, kLineWidth - column - 1)) {
        out += line;
        return;
      }
    }
  }
  const bool object = value.is_object();
  out += object ? '{' : '[';
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!first) out += ',';
    first = false;
    out += '\n';
    out.append(indent + 2, ' ');
    if (object) {
      out += dump_compact(Json(it.key()));
      out += ": ";
    }
    append_pretty(it.value(), out, indent + 2, false);
  }
  out += '\n';
  out.append(indent, ' ');
  out += object ? '}' : ']';
}

// ---- Ops and their attributes -------------------------------------------------------

// Attributes of the per-op table of graph-format.md, as bits.
enum Attr : uint32_t {
  kUnits = 1u << 0,
  kPw = 1u << 1,
  kEquation = 1u << 2,
  kVocab = 1u << 3,
  kDim = 1u << 4,
  kFilter = 1u << 5,
  kStride = 1u << 6,
  kPad = 1u << 7,
  kWindow = 1u << 8,
  kAxis = 1u << 9,
  kAxes = 1u << 10,
  kKeepdims = 1u << 11,
  kShapeAttr = 1u << 12,
  kPerm = 1u << 13,
  kNum = 1u << 14,
  kLayers = 1u << 15,
};

// Names by bit position.
constexpr std::array<std::string_view, 16> kAttrNames = {
    "units",  "pw",   "equation", "vocab",    "dim",   "filter", "stride", "pad",
    "window", "axis", "axes",     "keepdims", "shape", "perm",   "num",    "layers"};

struct OpInfo {
  Op op;
  std::string_view name;
  uint32_t attrs;
};

// The ops a document may use, in the order of graph-format.md (which is also
// the order of the "known: ..." list). Ravel and Unravel are vertex kinds only.
constexpr std::array<OpInfo, 17> kDocumentOps = {{
    {Op::kFC, "FC", kUnits | kPw},
    {Op::kEinsum, "Einsum", kEquation | kPw},
    {Op::kEmbedding, "Embedding", kVocab | kDim},
    {Op::kConv, "Conv", kFilter | kStride | kPad | kPw},
    {Op::kPool, "Pool", kWindow | kStride | kPad},
    {Op::kElementwise, "Elementwise", kPw},
    {Op::kNorm, "Norm", kAxis},
    {Op::kReduceMean, "ReduceMean", kAxes | kKeepdims},
    {Op::kSoftmax, "Softmax", kAxis},
    {Op::kSoftmaxCrossEntropy, "SoftmaxCrossEntropy", 0},
    {Op::kReshape, "Reshape", kShapeAttr},
    {Op::kTranspose, "Transpose", kPerm},
    {Op::kConcat, "Concat", kAxis},
    {Op::kSplit, "Split", kNum | kAxis},
    {Op::kStack, "Stack", kAxis},
    {Op::kUnstack, "Unstack", kAxis},
    {Op::kLSTM, "LSTM", kUnits | kLayers},
}};

const OpInfo* find_op(std::string_view name) {
  for (const OpInfo& info : kDocumentOps) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

const OpInfo* find_op(Op op) {
  for (const OpInfo& info : kDocumentOps) {
    if (info.op == op) return &info;
  }
  return nullptr;
}

std::string known_ops() {
  std::string list;
  for (const OpInfo& info : kDocumentOps) {
    if (!list.empty()) list += ", ";
    list += info.name;
  }
  return list;
}

// The bit of an attribute name, or 0 when no op has it.
uint32_t attr_bit(std::string_view key) {
  for (size_t i = 0; i < kAttrNames.size(); ++i) {
    if (kAttrNames[i] == key) return 1u << i;
  }
  return 0;
}

// The format's default axis of an op (Norm and Softmax count from the end).
int64_t default_axis(Op op) { return op == Op::kNorm || op == Op::kSoftmax ? -1 : 0; }

// ---- Reading a graph --------------------------------------------------------------

// Conv/Pool stride and pad: one number for both, or [h, w].
Result<std::array<int64_t, 2>> to_pair(const Json& value, const std::string& where, int64_t min) {
  const std::string_view what = min > 0 ? "a positive integer or a list [h, w] of two"
                                        : "a non-negative integer or a list [h, w] of two";
  if (value.is_array()) {
    if (value.size() != 2) return type_error(what, value, where);
    std::array<int64_t, 2> pair{};
    for (size_t i = 0; i < 2; ++i) {
      Result<int64_t> n =
          to_int_at_least(value[i], index_path(where, i), min,
                          min > 0 ? "a positive integer" : "a non-negative integer");
      if (!n) return n.error();
      pair[i] = *n;
    }
    return pair;
  }
  if (!value.is_number()) return type_error(what, value, where);
  Result<int64_t> n = to_int_at_least(value, where, min, what);
  if (!n) return n.error();
  return std::array<int64_t, 2>{*n, *n};
}

Result<std::array<int64_t, 2>> to_stride(const Json& value, const std::string& where) {
  return to_pair(value, where, 1);
}
Result<std::array<int64_t, 2>> to_pad(const Json& value, const std::string& where) {
  return to_pair(value, where, 0);
}

// A shape of a fixed rank (Conv filter, Pool window).
Result<Shape> to_shape_of_rank(const Json& value, const std::string& where, size_t rank,
                               std::string_view layout) {
  Result<Shape> shape = to_shape(value, where);
  if (shape && shape->size() != rank) {
    return Error{"must be a list of " + std::to_string(rank) + " positive integers " +
                     std::string(layout) + " (got " + std::to_string(shape->size()) + ")",
                 where};
  }
  return shape;
}

// A layer input: a tensor name, or {"shape": [..]} for a weight.
Result<Operand> to_operand(const Json& value, const std::string& where) {
  if (value.is_string()) {
    Result<std::string> name = to_non_empty_string(value, where);
    if (!name) return name.error();
    return Operand{std::move(*name), {}};
  }
  if (value.is_object()) {
    ObjectReader reader(value, where);
    reader.allow_only({"shape"});
    Operand operand;
    reader.require("shape", operand.weight_shape, to_shape);
    if (!reader.ok()) return reader.error();
    return operand;
  }
  return type_error("a tensor name or a weight {\"shape\": [..]}", value, where);
}

Result<std::vector<Operand>> to_operands(const Json& value, const std::string& where) {
  return to_list<Operand>(value, where, "a list of inputs", to_operand);
}

Result<LayerSpec> to_layer(const Json& value, const std::string& where) {
  if (!value.is_object()) return type_error("an object", value, where);
  ObjectReader reader(value, where);
  std::string op_text;
  // The op decides which fields are allowed, so it is read first.
  if (!reader.require("op", op_text, to_string)) return reader.error();
  const OpInfo* info = find_op(op_text);
  if (info == nullptr) {
    return Error{"unknown op '" + op_text + "'; known: " + known_ops(), reader.path("op")};
  }
  reader.check_keys([info](std::string_view key) -> std::string {
    if (key == "name" || key == "op" || key == "inputs") return {};
    const uint32_t bit = attr_bit(key);
    if (bit == 0) return ObjectReader::unknown_field(key);
    if ((info->attrs & bit) != 0) return {};
    // Another op's attribute: most likely a copy-paste slip, say so.
    return "unknown field '" + std::string(key) + "' for op " + std::string(info->name);
  });

  LayerSpec layer;
  layer.op = info->op;
  // LayerSpec's member default (0) is not the format's default for Norm and
  // Softmax (-1); set it before an optional "axis" may overwrite it.
  layer.axis = default_axis(info->op);
  reader.require("name", layer.name, to_non_empty_string);
  reader.require("inputs", layer.inputs, to_operands);
  switch (info->op) {
    case Op::kFC:
      reader.require("units", layer.units, to_positive_int);
      reader.read("pw", layer.pw, to_non_negative_int);
      break;
    case Op::kEinsum:
      reader.require("equation", layer.equation, to_non_empty_string);
      reader.read("pw", layer.pw, to_non_negative_int);
      break;
    case Op::kEmbedding:
      reader.require("vocab", layer.vocab, to_positive_int);
      reader.require("dim", layer.dim, to_positive_int);
      break;
    case Op::kConv:
      reader.require("filter", layer.filter, [](const Json& v, const std::string& w) {
        return to_shape_of_rank(v, w, 4, "[n, c, r, s]");
      });
      reader.read("stride", layer.stride, to_stride);
      reader.read("pad", layer.pad, to_pad);
      reader.read("pw", layer.pw, to_non_negative_int);
      break;
    case Op::kPool:
      reader.require("window", layer.window, [](const Json& v, const std::string& w) {
        return to_shape_of_rank(v, w, 2, "[r, s]");
      });
      reader.read("stride", layer.stride, to_stride);
      reader.read("pad", layer.pad, to_pad);
      break;
    case Op::kElementwise:
      reader.read("pw", layer.pw, to_non_negative_int);
      break;
    case Op::kNorm:
    case Op::kSoftmax:
    case Op::kStack:
    case Op::kUnstack:
      reader.read("axis", layer.axis, to_int);
      break;
    case Op::kReduceMean:
      layer.has_axes = reader.read("axes", layer.axes, to_int_list);
      reader.read("keepdims", layer.keepdims, to_bool);
      break;
    case Op::kSoftmaxCrossEntropy:
      break;
    case Op::kReshape:
      reader.require("shape", layer.shape, to_shape);
      break;
    case Op::kTranspose:
      reader.require("perm", layer.perm, to_int_list);
      break;
    case Op::kConcat:
      reader.require("axis", layer.axis, to_int);
      break;
    case Op::kSplit:
      reader.require("num", layer.num, to_positive_int);
      reader.require("axis", layer.axis, to_int);
      break;
    case Op::kLSTM:
      reader.require("units", layer.units, to_positive_int);
      reader.require("layers", layer.layers, to_positive_int);
      break;
    case Op::kRavel:
    case Op::kUnravel:
      break;  // not in kDocumentOps
  }
  if (!reader.ok()) return reader.error();
  return layer;
}

Result<std::vector<LayerSpec>> to_layers(const Json& value, const std::string& where) {
  if (value.is_array() && value.size() > static_cast<size_t>(kMaxLayers)) {
    return Error{"has " + std::to_string(value.size()) + " layers, more than the limit of " +
                     std::to_string(kMaxLayers),
                 where};
  }
  return to_list<LayerSpec>(value, where, "a list of layers", to_layer);
}

using InputList = std::vector<std::pair<std::string, Shape>>;

Result<InputList> to_inputs(const Json& value, const std::string& where) {
  if (!value.is_object()) return type_error("an object of input shapes", value, where);
  InputList inputs;
  inputs.reserve(value.size());
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it.key().empty()) return Error{"an input name must not be empty", where};
    Result<Shape> shape = to_shape(it.value(), field_path(where, it.key()));
    if (!shape) return shape.error();
    inputs.emplace_back(it.key(), std::move(*shape));
  }
  return inputs;
}

// ---- Writing a graph ----------------------------------------------------------------

// A stride or pad as the document writes it: one number when both agree.
Json pair_to_json(const std::array<int64_t, 2>& pair) {
  if (pair[0] == pair[1]) return pair[0];
  return Json::array({pair[0], pair[1]});
}

Json layer_to_json(const LayerSpec& layer) {
  Json j = Json::object();
  j["name"] = layer.name;
  const OpInfo* info = find_op(layer.op);
  // Ravel/Unravel cannot be read back; written under their report name anyway
  // so that nothing is lost silently.
  j["op"] = info != nullptr ? std::string(info->name) : std::string(op_name(layer.op));
  Json inputs = Json::array();
  for (const Operand& operand : layer.inputs) {
    if (operand.is_weight()) {
      inputs.push_back(Json{{"shape", operand.weight_shape}});
    } else {
      inputs.push_back(operand.name);
    }
  }
  j["inputs"] = std::move(inputs);

  // Required attributes always, optional ones only when not at their default.
  switch (layer.op) {
    case Op::kFC:
      j["units"] = layer.units;
      if (layer.pw != 0) j["pw"] = layer.pw;
      break;
    case Op::kEinsum:
      j["equation"] = layer.equation;
      if (layer.pw != 0) j["pw"] = layer.pw;
      break;
    case Op::kEmbedding:
      j["vocab"] = layer.vocab;
      j["dim"] = layer.dim;
      break;
    case Op::kConv:
      j["filter"] = layer.filter;
      if (layer.stride != std::array<int64_t, 2>{1, 1}) j["stride"] = pair_to_json(layer.stride);
      if (layer.pad != std::array<int64_t, 2>{0, 0}) j["pad"] = pair_to_json(layer.pad);
      if (layer.pw != 0) j["pw"] = layer.pw;
      break;
    case Op::kPool:
      j["window"] = layer.window;
      if (layer.stride != std::array<int64_t, 2>{1, 1}) j["stride"] = pair_to_json(layer.stride);
      if (layer.pad != std::array<int64_t, 2>{0, 0}) j["pad"] = pair_to_json(layer.pad);
      break;
    case Op::kElementwise:
      if (layer.pw != 0) j["pw"] = layer.pw;
      break;
    case Op::kNorm:
    case Op::kSoftmax:
    case Op::kStack:
    case Op::kUnstack:
      if (layer.axis != default_axis(layer.op)) j["axis"] = layer.axis;
      break;
    case Op::kReduceMean:
      if (layer.has_axes) j["axes"] = layer.axes;
      if (layer.keepdims) j["keepdims"] = true;
      break;
    case Op::kSoftmaxCrossEntropy:
      break;
    case Op::kReshape:
      j["shape"] = layer.shape;
      break;
    case Op::kTranspose:
      j["perm"] = layer.perm;
      break;
    case Op::kConcat:
      j["axis"] = layer.axis;
      break;
    case Op::kSplit:
      j["num"] = layer.num;
      j["axis"] = layer.axis;
      break;
    case Op::kLSTM:
      j["units"] = layer.units;
      j["layers"] = layer.layers;
      break;
    case Op::kRavel:
    case Op::kUnravel:
      break;
  }
  return j;
}

}  // namespace

// ---- Shared entry points (json_util.hpp) ----------------------------------------------

Result<Json> parse_document(std::string_view text) {
  if (text.size() > kMaxDocumentBytes) {
    return Error{"the document is larger than the limit of " +
                     std::to_string(kMaxDocumentBytes >> 20) + " MiB",
                 ""};
  }
  if (std::optional<Error> error = check_depth(text)) return *error;
  Json root;
  DomParser parser(root, text);
  if (!Json::sax_parse(text.begin(), text.end(), &parser)) {
    if (parser.error()) return *parser.error();
    return Error{"invalid JSON", ""};  // not expected: every failure records an error
  }
  return root;
}

std::string dump_pretty(const Json& value) {
  std::string out;
  append_pretty(value, out, 0, /*expand=*/value.is_structured());
  return out;
}

Result<GraphSpec> graph_spec_from_json(const Json& value, const std::string& where) {
  if (!value.is_object()) {
    if (where.empty()) return Error{"the document must be a JSON object", ""};
    return type_error("a pase-graph/1 object", value, where);
  }
  ObjectReader reader(value, where);
  reader.allow_only({"format", "name", "cutoff", "inputs", "layers", "meta"});
  std::string format;
  if (reader.read("format", format, to_string) && format != kFormat) {
    reader.fail(
        Error{"unsupported format '" + format + "'; expected '" + std::string(kFormat) + "'",
              reader.path("format")});
  }
  GraphSpec spec;
  reader.read("name", spec.name, to_string);
  reader.read("cutoff", spec.cutoff, to_positive_int);
  reader.read("inputs", spec.inputs, to_inputs);
  reader.require("layers", spec.layers, to_layers);
  // "meta" is free-form but kept as text, so it must at least be an object:
  // write_graph() puts it back as one.
  if (const Json* meta = reader.find("meta"); meta != nullptr && reader.ok()) {
    if (meta->is_object()) {
      spec.meta_json = dump_compact(*meta);
    } else {
      reader.fail(type_error("an object", *meta, reader.path("meta")));
    }
  }
  if (!reader.ok()) return reader.error();
  return spec;
}

Json graph_spec_to_json(const GraphSpec& spec) {
  // Key order follows graph-format.md, so written files read like the spec.
  Json j = Json::object();
  j["format"] = kFormat;
  if (!spec.name.empty()) j["name"] = spec.name;
  j["cutoff"] = spec.cutoff;
  Json inputs = Json::object();
  for (const auto& [name, shape] : spec.inputs) inputs[name] = shape;
  j["inputs"] = std::move(inputs);
  Json layers = Json::array();
  for (const LayerSpec& layer : spec.layers) layers.push_back(layer_to_json(layer));
  j["layers"] = std::move(layers);
  // meta_json is normally the compact text parse_graph_spec() kept; text set
  // in code that is not a JSON object cannot be written as "meta" and is left out.
  if (spec.meta_json.empty()) {
    j["meta"] = Json::object();
  } else if (Result<Json> meta = parse_document(spec.meta_json); meta && meta->is_object()) {
    j["meta"] = std::move(*meta);
  }
  return j;
}

}  // namespace json_detail

Result<GraphSpec> parse_graph_spec(std::string_view json_text) {
  Result<json_detail::Json> document = json_detail::parse_document(json_text);
  if (!document) return document.error();
  return json_detail::graph_spec_from_json(*document, "");
}

Result<Graph> load_graph(std::string_view json_text) {
  Result<GraphSpec> spec = parse_graph_spec(json_text);
  if (!spec) return spec.error();
  return build_graph(std::move(*spec));
}

std::string write_graph(const GraphSpec& spec) {
  return json_detail::dump_pretty(json_detail::graph_spec_to_json(spec)) + "\n";
}

}  // namespace pase
