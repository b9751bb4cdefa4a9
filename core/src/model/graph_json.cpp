// pase-graph/1 documents (core/docs/graph-format.md): parse_graph_spec(),
// load_graph() and write_graph() of graph.hpp. The layer fields common to all
// ops (name, op, inputs) are read here; each op reads and writes its own
// attributes through the op table (op_table.hpp).
//
// Only syntax, field names and types are checked here; names, shapes and
// cycles are build_graph()'s business.
#include "model/graph_json.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/op_table.hpp"
#include "pase/graph.hpp"
#include "util/json_util.hpp"

namespace pase {
namespace json_detail {
namespace {

constexpr std::string_view kFormat = "pase-graph/1";

// ---- Reading a graph --------------------------------------------------------------

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
  const OpTable& table = op_table();
  const OpDef* def = table.find(op_text);
  if (def == nullptr) {
    return Error{"unknown op " + quoted_text(op_text) + "; known: " + table.names(),
                 reader.path("op")};
  }
  reader.check_keys([def, &table](std::string_view key) -> std::string {
    if (key == "name" || key == "op" || key == "inputs") return {};
    for (const Attr& a : def->attributes)
      if (a.name == key) return {};
    if (!table.is_attribute(key)) return ObjectReader::unknown_field(key);
    // Another op's attribute: most likely a copy-paste slip, say so.
    return "unknown field " + quoted_text(key) + " for op " + std::string(def->name);
  });

  LayerSpec layer;
  layer.op = def->name;
  reader.require("name", layer.name, to_non_empty_string);
  reader.require("inputs", layer.inputs, to_operands);
  read_attributes(*def, reader, layer);
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

Json layer_to_json(const LayerSpec& layer) {
  Json j = Json::object();
  j["name"] = layer.name;
  j["op"] = layer.op;
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
  // An op that is not in the table (a spec built in code) keeps only these
  // fields, and loading the text back names the unknown op.
  if (const OpDef* def = op_table().find(layer.op)) write_attributes(*def, layer, j);
  return j;
}

}  // namespace

Result<GraphSpec> graph_spec_from_json(const Json& value, const std::string& where) {
  if (!value.is_object()) {
    if (where.empty()) return Error{"the document must be a JSON object", ""};
    return type_error("a pase-graph/1 object", value, where);
  }
  ObjectReader reader(value, where);
  reader.allow_only({"format", "name", "cutoff", "parameters", "inputs", "layers", "meta"});
  std::string format;
  if (reader.read("format", format, to_string) && format != kFormat) {
    reader.fail(Error{
        "unsupported format " + quoted_text(format) + "; expected '" + std::string(kFormat) + "'",
        reader.path("format")});
  }
  GraphSpec spec;
  reader.read("name", spec.name, to_string);
  reader.read("cutoff", spec.cutoff, to_positive_int);
  reader.read("parameters", spec.parameters, to_non_negative_int);
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
  // Key order follows core/docs/graph-format.md, so written files read like it.
  Json j = Json::object();
  j["format"] = kFormat;
  if (!spec.name.empty()) j["name"] = spec.name;
  j["cutoff"] = spec.cutoff;
  // Absent (-1) unless the document or an importer gave it: build_graph()
  // then counts the layers' weights itself.
  if (spec.parameters >= 0) j["parameters"] = spec.parameters;
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

Result<Graph> load_graph(std::string_view json_text, std::string_view default_name) {
  Result<GraphSpec> spec = parse_graph_spec(json_text);
  if (!spec) return spec.error();
  if (spec->name.empty()) spec->name = default_name;
  return build_graph(*spec);
}

std::string write_graph(const GraphSpec& spec) {
  return json_detail::dump_pretty(json_detail::graph_spec_to_json(spec)) + "\n";
}

}  // namespace pase
