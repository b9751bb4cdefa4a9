// Files and the flags that name the graph, the cluster and the format
// (inputs.hpp).
#include "inputs.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "pase/models.hpp"

namespace pase_cli {

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

std::optional<Failure> graph_source_from_flags(const Flags& flags, GraphSource& source) {
  const bool model = flags.has("--model");
  const bool graph = flags.has("--graph");
  if (model == graph) {
    return Failure::bad_usage(model ? "give either --model or --graph, not both"
                                    : "missing --model NAME or --graph FILE");
  }
  if (std::optional<std::string> batch = flags.get("--batch")) {
    if (!model) return Failure::bad_usage("--batch applies only to --model");
    std::optional<int64_t> n = parse_int(*batch);
    if (!n) return Failure::bad_usage("--batch: '" + *batch + "' is not an integer");
    if (*n <= 0) {
      return Failure::bad_input(
          pase::Error{"must be a positive integer, not " + std::to_string(*n), "batch"});
    }
    source.batch = *n;
  }
  if (model) source.model = *flags.get("--model");
  if (graph) source.path = *flags.get("--graph");
  return std::nullopt;
}

std::optional<Failure> cluster_from_flags(const Flags& flags, pase::Cluster& cluster) {
  if (std::optional<std::string> procs = flags.get("--procs")) {
    std::optional<int64_t> n = parse_int(*procs);
    if (!n) return Failure::bad_usage("--procs: '" + *procs + "' is not an integer");
    cluster.devices = *n;
  }
  const std::pair<std::string_view, double*> numbers[] = {{"--flops", &cluster.tflops},
                                                          {"--bandwidth", &cluster.bandwidth_gbps}};
  for (const auto& [name, out] : numbers) {
    if (std::optional<std::string> text = flags.get(name)) {
      std::optional<double> d = parse_double(*text);
      if (!d) {
        return Failure::bad_usage(std::string(name) + ": '" + *text + "' is not a number");
      }
      *out = *d;
    }
  }
  if (std::optional<pase::Error> error = pase::check_cluster(cluster)) {
    return Failure::bad_input(std::move(*error));
  }
  return std::nullopt;
}

std::optional<Failure> format_from_flags(const Flags& flags, bool& json) {
  std::string format = flags.get("--format").value_or("text");
  if (format != "text" && format != "json") {
    return Failure::bad_usage("--format: '" + format + "' is not one of text, json");
  }
  json = format == "json";
  return std::nullopt;
}

pase::Result<pase::Graph> load_source(const GraphSource& source) {
  if (!source.model.empty()) return pase::build_model(source.model, source.batch);
  pase::Result<std::string> text = read_file(source.path);
  if (!text) return text.error();
  // A document without a name is reported under its file name.
  pase::Result<pase::Graph> graph =
      pase::load_graph(*text, std::filesystem::path(source.path).stem().string());
  if (!graph) return in_file(source.path, graph.error());
  return graph;
}

}  // namespace pase_cli
