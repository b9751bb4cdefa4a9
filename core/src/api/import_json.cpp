// import_model_json() of json_api.hpp: import options in, the imported graph
// (or an error document) out. The translation itself is import_onnx()'s
// (core/src/model/onnx/, import.hpp) for an ONNX file and llm_spec()'s (llm.hpp)
// for a Hugging Face config.json, told apart by content; this file reads the
// options, checks the result with build_graph() and writes the document the
// module and the page read (core/docs/formats.md, "Import options and
// result").

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/entry.hpp"
#include "model/graph_json.hpp"
#include "model/llm/llm_json.hpp"
#include "pase/graph.hpp"
#include "pase/import.hpp"
#include "pase/json_api.hpp"
#include "pase/llm.hpp"
#include "util/json_util.hpp"

namespace pase {
namespace {

using json_detail::guarded;
using json_detail::Json;
using json_detail::ObjectReader;
using json_detail::type_error;

// "dims": {"batch": 8, "sequence": 128}: positive integers by name, in the
// order written.
Result<std::vector<std::pair<std::string, int64_t>>> dims_from_json(const Json& value,
                                                                    const std::string& where) {
  if (!value.is_object()) return type_error("an object of positive integers", value, where);
  std::vector<std::pair<std::string, int64_t>> dims;
  dims.reserve(value.size());
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it.key().empty()) return Error{"a dimension name must not be empty", where};
    const std::string dim_where = json_detail::field_path(where, it.key());
    Result<int64_t> size = json_detail::to_positive_int(it.value(), dim_where);
    if (!size) return size.error();
    dims.emplace_back(it.key(), *size);
  }
  return dims;
}

// The options document. Its fields are named as the importer names them
// ("dims.batch", "batch", "name"); the document as a whole is "options".
Result<ImportOptions> parse_import_options(std::string_view text) {
  ImportOptions options;
  // No options at all is the same as {} (the module's one-argument form).
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return options;
  Result<Json> document = json_detail::parse_document(text);
  if (!document) {
    // A syntax error is the document's; a repeated key keeps its own name.
    Error error = document.error();
    if (error.where.empty()) error.where = "options";
    return error;
  }
  if (!document->is_object()) return type_error("a JSON object", *document, "options");
  ObjectReader reader(*document, "");
  reader.allow_only({"dims", "batch", "seq", "name", "vocab_padding"});
  reader.read("dims", options.dims, dims_from_json);
  reader.read("batch", options.batch, json_detail::to_positive_int);
  reader.read("seq", options.seq, json_detail::to_positive_int);
  reader.read("name", options.name, json_detail::to_non_empty_string);
  // A config's vocabulary padded to a multiple of this (llm.hpp); an ONNX
  // model ignores it.
  reader.read("vocab_padding", options.vocab_multiple, json_detail::to_positive_int);
  if (!reader.ok()) return reader.error();
  return options;
}

const int64_t* given_dim(const ImportOptions& options, std::string_view name) {
  for (const auto& [dim, size] : options.dims) {
    if (dim == name) return &size;
  }
  return nullptr;
}

// The importer names a dynamic dimension it has no value for at
// "dims.<name>". When `error` is that, the document also lists every dynamic
// dimension the options leave open, so that a caller can ask for all of them
// at once rather than one per attempt. Any other error is left as it is.
std::string import_error_to_json(const std::vector<DynamicDim>& dynamic,
                                 const ImportOptions& options, const Error& error) {
  constexpr std::string_view kDimsPrefix = "dims.";
  if (error.where.compare(0, kDimsPrefix.size(), kDimsPrefix) != 0) return error_to_json(error);
  const std::string_view named = std::string_view(error.where).substr(kDimsPrefix.size());
  if (given_dim(options, named) != nullptr) return error_to_json(error);
  Json missing = Json::array();
  bool named_is_dynamic = false;
  for (const DynamicDim& dim : dynamic) {
    if (dim.name == named) named_is_dynamic = true;
    // A `batch` option may cover one of these (the first input's leading
    // dimension); which one is the importer's business, so all are listed.
    if (given_dim(options, dim.name) == nullptr) {
      missing.push_back(Json{{"name", dim.name}, {"input", dim.input}});
    }
  }
  if (!named_is_dynamic) return error_to_json(error);
  Json j = Json::object();
  j["error"] = Json{{"message", error.message}, {"where", error.where}};
  j["missing_dims"] = std::move(missing);
  return json_detail::dump_pretty(j) + "\n";
}

// Whether the source starts like a JSON object (a config) rather than a
// binary ONNX file, from its first bytes.
bool starts_like_json(ByteSource& source) {
  std::string prefix;
  const uint64_t n = source.size() < 4096 ? source.size() : 4096;
  return source.read(0, static_cast<size_t>(n), prefix) && starts_like_json_object(prefix);
}

// The hyper-parameters of an imported config, for the page to show.
Json llm_config_to_json(const LlmConfig& c) {
  Json j = Json::object();
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["num_layers"] = c.num_layers;
  j["num_heads"] = c.num_heads;
  j["num_kv_heads"] = c.num_kv_heads;
  j["head_dim"] = c.head_dim;
  j["intermediate_size"] = c.intermediate_size;
  j["max_positions"] = c.max_positions;
  j["num_experts"] = c.num_experts;
  j["experts_per_token"] = c.experts_per_token;
  j["tied_embeddings"] = c.tied_embeddings;
  return j;
}

// The whole source as text, at most kMaxDocumentBytes.
Result<std::string> read_text(ByteSource& source) {
  if (source.size() > kMaxDocumentBytes) {
    return Error{"the document is larger than " + std::to_string(kMaxDocumentBytes >> 20) + " MiB",
                 ""};
  }
  std::string text;
  if (!source.read(0, static_cast<size_t>(source.size()), text)) {
    return Error{"the document could not be read", ""};
  }
  return text;
}

// The result document's common part: the graph, its parameters and layers,
// and each layer's output shapes (those of its last vertex, a Reshape's
// Unravel; one shape per output).
Json import_result(const GraphSpec& spec, const Graph& graph) {
  Json j = Json::object();
  j["graph"] = json_detail::graph_spec_to_json(spec);
  j["parameters"] = spec.parameters >= 0 ? spec.parameters : graph.parameters;
  j["layers"] = spec.layers.size();
  return j;
}

void add_layer_outputs(const GraphSpec& spec, const Graph& graph, Json& j) {
  std::vector<const Vertex*> last(spec.layers.size(), nullptr);
  for (const Vertex& vertex : graph.vertices) {
    if (vertex.layer >= 0 && static_cast<size_t>(vertex.layer) < last.size()) {
      last[vertex.layer] = &vertex;
    }
  }
  Json outputs = Json::array();
  for (const Vertex* vertex : last) {
    Json shapes = Json::array();
    if (vertex != nullptr) {
      for (const Output& output : vertex->outputs) shapes.push_back(output.shape);
    }
    outputs.push_back(std::move(shapes));
  }
  j["layer_outputs"] = std::move(outputs);
}

// A Hugging Face config.json (llm.hpp).
std::string import_config_json(ByteSource& source, const ImportOptions& options) {
  Result<std::string> text = read_text(source);
  if (!text) return error_to_json(text.error());
  Result<Json> document = json_detail::parse_document(*text);
  if (!document) return error_to_json(document.error());
  if (document->is_object() && document->contains("layers")) {
    return error_to_json(Error{
        "this is a pase-graph/1 document, which plans as it is; import takes an ONNX model or "
        "a Hugging Face config.json",
        ""});
  }
  Result<LlmConfig> config = llm_config_from_json(*document);
  if (!config) return error_to_json(config.error());
  Result<GraphSpec> spec = import_llm_config(*config, options);
  if (!spec) return error_to_json(spec.error());
  Result<Graph> graph = build_graph(*spec);
  if (!graph) return error_to_json(json_detail::with_prefix(graph.error(), "graph"));
  Json j = import_result(*spec, *graph);
  j["format"] = "hf-config";
  j["config"] = llm_config_to_json(*config);
  // The sizes used: the options' or the model's defaults.
  const Shape& tokens = spec->inputs.front().second;
  j["batch"] = tokens[0];
  j["seq"] = tokens[1];
  if (std::optional<VocabPadding> padding = vocab_padding(*spec))
    j["vocab_padding"] = Json{{"vocab_size", padding->vocab},
                              {"padded_vocab_size", padding->padded},
                              {"multiple", padding->multiple},
                              {"note", vocab_padding_text(*padding)}};
  j["dynamic_dims"] = Json::array();
  add_layer_outputs(*spec, *graph, j);
  return json_detail::dump_pretty(j) + "\n";
}

}  // namespace

std::string import_model_json(ByteSource& source, std::string_view options_json) {
  return guarded([&] {
    Result<ImportOptions> options = parse_import_options(options_json);
    if (!options) return error_to_json(options.error());
    if (starts_like_json(source)) return import_config_json(source, *options);
    // The dynamic dimensions first: their read also says whether the file is
    // ONNX at all (the same errors as the import's).
    Result<std::vector<DynamicDim>> dynamic = onnx_dynamic_dims(source);
    if (!dynamic) return error_to_json(dynamic.error());
    Result<GraphSpec> spec = import_onnx(source, *options);
    if (!spec) return import_error_to_json(*dynamic, *options, spec.error());
    // The importer only makes layers the op table knows; building the graph
    // checks their shapes too, so what the page shows is a graph it can plan.
    Result<Graph> graph = build_graph(*spec);
    if (!graph) return error_to_json(json_detail::with_prefix(graph.error(), "graph"));

    Json j = import_result(*spec, *graph);
    j["format"] = "onnx";
    // The import succeeded, so every dynamic dimension got its value: from
    // "dims" by name, otherwise from "batch".
    Json dims = Json::array();
    for (const DynamicDim& dim : *dynamic) {
      const int64_t* given = given_dim(*options, dim.name);
      Json value = given != nullptr     ? Json(*given)
                   : options->batch > 0 ? Json(options->batch)
                                        : Json();
      dims.push_back(Json{{"name", dim.name}, {"input", dim.input}, {"value", std::move(value)}});
    }
    j["dynamic_dims"] = std::move(dims);
    add_layer_outputs(*spec, *graph, j);
    return json_detail::dump_pretty(j) + "\n";
  });
}

}  // namespace pase
