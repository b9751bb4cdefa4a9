// Files and the flags that name the graph, the cluster and the format
// (inputs.hpp).
#include "inputs.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "pase/import.hpp"
#include "pase/llm.hpp"
#include "pase/models.hpp"
#include "pase/presets.hpp"
#include "report.hpp"

namespace pase_cli {

namespace {

// The first bytes of `path`; nullopt when it cannot be read (the loading
// that follows says why).
std::optional<std::string> file_prefix(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string prefix(pase::kSniffBytes, '\0');
  in.read(prefix.data(), static_cast<std::streamsize>(prefix.size()));
  prefix.resize(static_cast<size_t>(in.gcount()));
  return prefix;
}

// The core's content detection (import.hpp, sniff_file()) on a file's first
// bytes. A JSON text that is a string or a number ('"pase-graph/1"') stays
// JSON, so its error is the JSON one ("the document must be a JSON object").
bool looks_like_onnx(std::string_view text) {
  return pase::sniff_file(text) == pase::FileContent::kOnnx;
}

// Neither JSON (nor an empty file, which the JSON parser reports) nor ONNX:
// an image, an archive, a checkpoint, plain text. not_a_model_error() says
// which, rather than a JSON syntax error.
bool is_no_model(std::string_view text) {
  const pase::FileContent content = pase::sniff_file(text);
  return content != pase::FileContent::kJson && content != pase::FileContent::kOnnx &&
         content != pase::FileContent::kEmpty;
}

// import_onnx() of `source` (the file `path`), its errors under the file's name.
pase::Result<pase::GraphSpec> import_from(pase::ByteSource& source, const std::string& path,
                                          const pase::ImportOptions& options) {
  pase::Result<pase::GraphSpec> spec = pase::import_onnx(source, options);
  if (!spec) return in_file(path, spec.error());
  return spec;
}

// A model on standard input is read whole, so it has the documents' limit.
pase::Result<pase::GraphSpec> import_text(const std::string& text, const std::string& path,
                                          const pase::ImportOptions& options) {
  if (text.size() > pase::kMaxDocumentBytes) {
    return pase::Error{"an ONNX model on standard input may have at most " +
                           std::to_string(pase::kMaxDocumentBytes >> 20) +
                           " MiB; give its file name instead",
                       display_name(path)};
  }
  pase::MemorySource source(text);
  return import_from(source, path, options);
}

pase::ImportOptions import_options(const GraphSource& source) {
  pase::ImportOptions options;
  options.dims = source.dims;
  options.batch = source.batch;
  options.seq = source.seq;
  options.vocab_multiple = source.vocab_multiple();
  return options;
}

// What a graph file holds (inputs.hpp).
enum class Kind { kOnnx, kConfig, kDocument };

Kind text_kind(std::string_view text) {
  if (looks_like_onnx(text)) return Kind::kOnnx;
  if (pase::looks_like_llm_config(text)) return Kind::kConfig;
  return Kind::kDocument;
}

// The kind of the file `path` (not standard input); nullopt when it cannot
// be read or is no model at all (the loading that follows says why). Only
// an ONNX model is not read whole.
std::optional<Kind> file_kind(const std::string& path) {
  std::optional<std::string> prefix = file_prefix(path);
  if (!prefix || is_no_model(*prefix)) return std::nullopt;
  if (looks_like_onnx(*prefix)) return Kind::kOnnx;
  pase::Result<std::string> text = read_file(path);
  if (!text) return std::nullopt;
  return text_kind(*text);
}

// import_llm_config() of the config `text` of the file `path`, named by
// config_graph_name() unless options.name says; errors under the file name.
pase::Result<pase::GraphSpec> import_config(const std::string& text, const std::string& path,
                                            pase::ImportOptions options) {
  if (options.name.empty()) options.name = config_graph_name(path);
  pase::Result<pase::GraphSpec> spec = pase::import_llm_config(text, options);
  if (!spec) return in_file(path, spec.error());
  return spec;
}

// The document, model or config of `source.path`, told apart by content.
pase::Result<pase::GraphSpec> load_spec(const GraphSource& source) {
  const std::string& path = source.path;
  if (path != "-") {
    // A model is read by offset, never whole: only its first bytes here.
    std::optional<std::string> prefix = file_prefix(path);
    if (prefix && looks_like_onnx(*prefix)) return import_file(path, import_options(source));
  }
  pase::Result<std::string> text = read_file(path);
  if (!text) return text.error();
  if (looks_like_onnx(*text)) return import_text(*text, path, import_options(source));
  if (is_no_model(*text)) return in_file(path, pase::not_a_model_error(*text));
  if (text_kind(*text) == Kind::kConfig) return import_config(*text, path, import_options(source));
  // Files were checked by graph_source_from_flags(); standard input only now.
  if (source.batch > 0 || source.seq > 0 || !source.dims.empty() || source.vocab_padding > 0) {
    return pase::Error{
        "--batch, --seq, --dim and --vocab-padding apply only to --model, an ONNX model or a "
        "Hugging Face config, not to a pase-graph/1 document",
        display_name(path)};
  }
  pase::Result<pase::GraphSpec> spec = pase::parse_graph_spec(*text);
  if (!spec) return in_file(path, spec.error());
  // A document without a name is reported under its file name.
  if (spec->name.empty()) spec->name = std::filesystem::path(path).stem().string();
  return spec;
}

}  // namespace

int64_t GraphSource::vocab_multiple() const {
  // 1 keeps the exact vocabulary, with a layout too.
  if (vocab_padding == 1) return 1;
  return (vocab_padding > 0 ? vocab_padding : pase::kLlmVocabMultiple) * vocab_tp;
}

std::string display_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

pase::Error in_file(const std::string& path, pase::Error error) {
  const std::string name = display_name(path);
  error.where = error.where.empty() ? name : name + ": " + error.where;
  return error;
}

pase::Result<std::string> read_file(const std::string& path) {
  std::string text;
  const size_t limit = pase::kMaxDocumentBytes + 1;
  if (path == "-") {
    char buffer[1 << 16];
    size_t n = 0;
    while (text.size() < limit && (n = std::fread(buffer, 1, sizeof buffer, stdin)) > 0) {
      text.append(buffer, n);
    }
    if (std::ferror(stdin)) return pase::Error{"cannot read", display_name(path)};
    return text;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return pase::Error{"is a directory", path};
  std::ifstream in(path, std::ios::binary);
  if (!in) return pase::Error{std::string("cannot open: ") + std::strerror(errno), path};
  char buffer[1 << 16];
  while (text.size() < limit && in) {
    in.read(buffer, sizeof buffer);
    text.append(buffer, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return pase::Error{"cannot read", path};
  return text;
}

bool write_file(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  return static_cast<bool>(out);
}

int write_output(const std::optional<std::string>& path, std::string_view text) {
  if (path) {
    if (!write_file(*path, text)) {
      return input_error(pase::Error{std::string("cannot write: ") + std::strerror(errno), *path});
    }
  } else if (!write_stdout(text)) {
    return input_error(pase::Error{"cannot write the output", ""});
  }
  return kExitOk;
}

std::optional<Failure> dims_from_flags(const Flags& flags,
                                       std::vector<std::pair<std::string, int64_t>>& dims) {
  for (const std::string& item : flags.all("--dim")) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Failure::bad_usage("--dim: '" + item + "' is not NAME=SIZE");
    }
    const std::string name = item.substr(0, eq), size = item.substr(eq + 1);
    std::optional<int64_t> n = parse_int(size);
    if (!n) return Failure::bad_usage("--dim: '" + size + "' (of " + name + ") is not an integer");
    for (const auto& given : dims) {
      if (given.first == name) return Failure::bad_usage("--dim: " + name + " is given twice");
    }
    if (*n <= 0) {
      return Failure::bad_input(
          pase::Error{"must be a positive integer, not " + std::to_string(*n), "dims." + name});
    }
    dims.emplace_back(name, *n);
  }
  return std::nullopt;
}

std::optional<Failure> positive_from_flag(const Flags& flags, std::string_view name,
                                          const std::string& where, int64_t& value) {
  std::optional<std::string> text = flags.get(name);
  if (!text) return std::nullopt;
  std::optional<int64_t> n = parse_int(*text);
  if (!n) return Failure::bad_usage(std::string(name) + ": '" + *text + "' is not an integer");
  if (*n <= 0) {
    return Failure::bad_input(
        pase::Error{"must be a positive integer, not " + std::to_string(*n), where});
  }
  value = *n;
  return std::nullopt;
}

std::optional<Failure> graph_source_from_flags(const Flags& flags, GraphSource& source) {
  const bool model = flags.has("--model");
  const bool graph = flags.has("--graph");
  if (model == graph) {
    return Failure::bad_usage(model ? "give either --model or --graph, not both"
                                    : "missing --model NAME or --graph FILE");
  }
  if (model) source.model = *flags.get("--model");
  if (graph) source.path = *flags.get("--graph");
  // --batch, --seq and --dim size a model or a config; a document has its
  // sizes. A file that cannot be read passes here: loading it says why.
  std::optional<Kind> kind;
  if (graph && source.path != "-" &&
      (flags.has("--batch") || flags.has("--seq") || flags.has("--dim") ||
       flags.has("--vocab-padding"))) {
    kind = file_kind(source.path);
  }
  const bool document = kind == Kind::kDocument;
  if (flags.has("--dim")) {
    if (model || document) return Failure::bad_usage("--dim applies only to an ONNX --graph");
    if (kind == Kind::kConfig) {
      return Failure::bad_usage(
          "--dim applies only to an ONNX --graph; a Hugging Face config takes --batch and --seq");
    }
  }
  if (auto failure = dims_from_flags(flags, source.dims)) return failure;
  if (document && flags.has("--batch")) {
    return Failure::bad_usage(
        "--batch applies only to --model, an ONNX model or a Hugging Face config, not to a "
        "pase-graph/1 document");
  }
  if (auto failure = positive_from_flag(flags, "--batch", "batch", source.batch)) return failure;
  if (document && flags.has("--seq")) {
    return Failure::bad_usage(
        "--seq applies only to --model or a Hugging Face config, not to a pase-graph/1 document");
  }
  if (auto failure = positive_from_flag(flags, "--seq", "seq", source.seq)) return failure;
  // Only a language model's vocabulary is padded: the engines run an ONNX
  // model or a document as it is (core/docs/llm.md, "Vocabulary padding").
  if (flags.has("--vocab-padding") && kind.has_value() && *kind != Kind::kConfig) {
    return Failure::bad_usage(
        "--vocab-padding applies only to --model or a Hugging Face config, not to an ONNX "
        "model or a pase-graph/1 document");
  }
  if (auto failure =
          positive_from_flag(flags, "--vocab-padding", "vocab_padding", source.vocab_padding))
    return failure;
  if (source.vocab_padding > pase::kLlmMaxVocabMultiple) {
    return Failure::bad_input(pase::Error{"must be at most " +
                                              std::to_string(pase::kLlmMaxVocabMultiple) +
                                              ", not " + std::to_string(source.vocab_padding),
                                          "vocab_padding"});
  }
  return std::nullopt;
}

std::optional<Failure> cluster_from_flags(const Flags& flags, pase::Cluster& cluster) {
  // Every value is parsed before anything is checked, so that a value that
  // does not parse is a usage error whatever else is wrong; then the preset
  // fills the cluster and the values given override it.
  const std::pair<std::string_view, int64_t*> integers[] = {
      {"--procs", &cluster.devices},
      {"--gpus-per-node", &cluster.gpus_per_node},
      {"--zero", &cluster.training.zero},
      {"--param-bytes", &cluster.training.param_bytes},
      {"--grad-bytes", &cluster.training.grad_bytes},
      {"--optimizer-bytes", &cluster.training.optimizer_bytes},
      {"--activation-bytes", &cluster.training.activation_bytes}};
  const std::pair<std::string_view, double*> numbers[] = {
      {"--flops", &cluster.tflops},
      {"--bandwidth", &cluster.bandwidth_gbps},
      {"--intra-bandwidth", &cluster.intra_node_gbps},
      {"--memory", &cluster.memory_gib},
      {"--headroom", &cluster.headroom},
      {"--memory-bandwidth", &cluster.device.memory_gbps}};
  std::vector<std::pair<int64_t*, int64_t>> given_integers;
  std::vector<std::pair<double*, double>> given_numbers;
  for (const auto& [name, out] : integers) {
    if (std::optional<std::string> text = flags.get(name)) {
      std::optional<int64_t> n = parse_int(*text);
      if (!n) return Failure::bad_usage(std::string(name) + ": '" + *text + "' is not an integer");
      given_integers.emplace_back(out, *n);
    }
  }
  for (const auto& [name, out] : numbers) {
    if (std::optional<std::string> text = flags.get(name)) {
      std::optional<double> d = parse_double(*text);
      if (!d) return Failure::bad_usage(std::string(name) + ": '" + *text + "' is not a number");
      given_numbers.emplace_back(out, *d);
    }
  }
  if (std::optional<std::string> id = flags.get("--preset")) {
    const pase::GpuPreset* preset = pase::find_preset(*id);
    if (preset == nullptr) {
      return Failure::bad_input(
          pase::Error{"unknown preset '" + *id + "'; known: " + pase::preset_ids(), "preset"});
    }
    cluster = pase::apply_preset(cluster, *preset);
  }
  for (const auto& [out, value] : given_integers) *out = value;
  for (const auto& [out, value] : given_numbers) *out = value;
  if (std::optional<std::string> name = flags.get("--cost-model")) {
    pase::Result<pase::CostModel> model = pase::parse_cost_model(*name);
    if (!model) return Failure::bad_usage("--cost-model: " + model.error().message);
    cluster.cost_model = *model;
  } else if (flags.has("--preset") || cluster.gpus_per_node > 0) {
    // The practice model is the default for a GPU or nodes
    // (core/docs/practice-model.md).
    cluster.cost_model = pase::CostModel::kPractice;
  }
  if (std::optional<std::string> name = flags.get("--recompute")) {
    pase::Result<pase::Recompute> recompute = pase::parse_recompute(*name);
    if (!recompute) return Failure::bad_usage("--recompute: " + recompute.error().message);
    cluster.training.recompute = *recompute;
  } else if (cluster.cost_model == pase::CostModel::kPractice) {
    // The practice model searches it (core/docs/practice-model.md).
    cluster.training.recompute = pase::Recompute::kAuto;
  }
  if (std::optional<pase::Error> error = pase::check_cluster(cluster)) {
    return Failure::bad_input(std::move(*error));
  }
  return std::nullopt;
}

pase::Error with_memory_hint(pase::Error error, const pase::Cluster& cluster) {
  if (error.where != "cluster.memory_gib" || !(cluster.memory_gib > 0)) return error;
  error.message += cluster.training.zero < 3
                       ? "; more devices (--procs) or a higher ZeRO stage (--zero) can lower it"
                       : "; more devices (--procs) can lower it";
  return error;
}

std::optional<Failure> format_from_flags(const Flags& flags, bool& json) {
  std::string format = flags.get("--format").value_or("text");
  if (format != "text" && format != "json") {
    return Failure::bad_usage("--format: '" + format + "' is not one of text, json");
  }
  json = format == "json";
  return std::nullopt;
}

bool is_config_file(const std::string& path) {
  return path != "-" && file_kind(path) == Kind::kConfig;
}

std::string config_graph_name(const std::string& path) {
  if (path == "-") return "";
  const std::filesystem::path file(path);
  if (file.filename() != "config.json") return file.stem().string();
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(file, ec);
  if (ec) absolute = file;
  return absolute.lexically_normal().parent_path().filename().string();
}

pase::Result<pase::GraphSpec> import_file(const std::string& path, pase::ImportOptions options) {
  // The whole text of standard input, or of a file that starts as JSON (a
  // config); an ONNX file is read by offset.
  bool whole = path == "-";
  if (!whole) {
    std::optional<std::string> prefix = file_prefix(path);
    whole = prefix && !looks_like_onnx(*prefix) && pase::starts_like_json_object(*prefix);
  }
  std::optional<std::string> text;
  if (whole) {
    pase::Result<std::string> read = read_file(path);
    if (!read) return read.error();
    text = std::move(*read);
  }
  if (text && !looks_like_onnx(*text) && pase::starts_like_json_object(*text)) {
    if (!pase::looks_like_llm_config(*text) && pase::parse_graph_spec(*text)) {
      return pase::Error{"already a pase-graph/1 document: plan it with --graph",
                         display_name(path)};
    }
    return import_config(*text, path, std::move(options));
  }
  if (options.name.empty() && path != "-") {
    options.name = std::filesystem::path(path).stem().string();
  }
  if (text) return import_text(*text, path, options);
  pase::FileSource file;
  if (std::optional<pase::Error> error = file.open(path)) return *error;  // names the file
  return import_from(file, path, options);
}

pase::Result<pase::Graph> load_source(const GraphSource& source) {
  if (!source.model.empty())
    return pase::build_model(source.model, source.batch, source.seq, source.vocab_multiple());
  pase::Result<pase::GraphSpec> spec = load_spec(source);
  if (!spec) return spec.error();
  pase::Result<pase::Graph> graph = pase::build_graph(*spec);
  if (!graph) return in_file(source.path, graph.error());
  return graph;
}

namespace {

// "15T", "300B", "2e12": a count of tokens.
std::optional<double> parse_tokens(std::string text) {
  double scale = 1;
  if (!text.empty()) {
    const char unit = text.back();
    scale = unit == 'T' ? 1e12 : unit == 'B' ? 1e9 : unit == 'M' ? 1e6 : unit == 'K' ? 1e3 : 1;
    if (scale != 1) text.pop_back();
  }
  std::optional<double> n = parse_double(text);
  if (!n || *n < 0) return std::nullopt;
  return *n * scale;
}

}  // namespace

std::optional<std::string> budget_from_flags(const Flags& flags, double& tokens,
                                             double& gpu_hour_price) {
  if (std::optional<std::string> t = flags.get("--tokens")) {
    std::optional<double> n = parse_tokens(*t);
    if (!n) return "--tokens: '" + *t + "' is not a count such as 15T";
    tokens = *n;
  }
  if (std::optional<std::string> preset = flags.get("--preset"))
    if (const pase::GpuPreset* p = pase::find_preset(*preset)) gpu_hour_price = p->gpu_hour_usd;
  if (std::optional<std::string> price = flags.get("--gpu-hour-price")) {
    std::optional<double> n = parse_double(*price);
    if (!n || *n < 0) return "--gpu-hour-price: '" + *price + "' is not a price in USD";
    gpu_hour_price = *n;
  }
  return std::nullopt;
}

}  // namespace pase_cli
